"""The background callback of the job tests (:mod:`tests.integration.ui.test_jobs`), in a module of its own: a job
process imports the module of its callback, and this one imports only what the app's fork server has loaded."""

from __future__ import annotations

import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from dash import Dash, Input, Output

from privdash.application.cache import disk_cache


def add_test_job(app: Dash) -> None:
    """A background callback that sleeps ``seconds`` (optionally deaf to the wall-time alarm, like a computation
    that does not come back to Python), allocates ``allocate_mb`` or writes into the disk cache in folder ``write``."""

    @app.callback(
        Output("jobtest-out", "children"),
        Input("jobtest-in", "data"),
        background=True,
        progress=[Output("jobtest-progress", "value"), Output("jobtest-status", "children")],
        cancel=[Input("jobtest-cancel", "n_clicks")],
        interval=200,
        prevent_initial_call=True,
    )
    def work(set_progress: Callable[[tuple[int, str]], None], request: dict[str, Any]) -> str:
        set_progress((1, "working"))
        if request.get("write"):  # into another disk cache of the app
            disk_cache(Path(request["write"])).set("written", True)
            return "written"
        if request.get("allocate_mb"):
            block = np.ones(int(request["allocate_mb"] * 1e6), dtype=np.uint8)
            return f"allocated {block.nbytes:,} bytes"
        if request.get("deaf"):
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
        end = time.monotonic() + float(request["seconds"])
        while time.monotonic() < end:
            time.sleep(0.02)
        return f"slept {request['seconds']} s"
