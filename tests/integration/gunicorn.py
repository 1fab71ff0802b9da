"""Start the real production server for a test: ``gunicorn app:server`` on a free port of 127.0.0.1.

Used by the load and fault tests. The server is started from the repository root with the given environment
(settings are read from it, as in production), waits until every worker has booted (at most a minute) and is
stopped when the ``with`` block ends. Only loopback addresses are used. gunicorn reads the repository's
``gunicorn.conf.py`` (the shipped production configuration), as it does in production; ``options`` adds to it.
"""

from __future__ import annotations

import contextlib
import queue
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Gunicorn:
    """A running server: its base URL, the master process, and the lines it logged so far."""

    base: str
    process: subprocess.Popen[str]
    log: list[str]


def _read_lines(stream: Any, lines: queue.Queue[str], log: list[str]) -> None:
    for line in stream:
        log.append(line)
        lines.put(line)


@contextlib.contextmanager
def running_gunicorn(env: Mapping[str, str], workers: int, options: Sequence[str] = ()) -> Iterator[Gunicorn]:
    """``gunicorn app:server -w workers`` on 127.0.0.1, ready when every worker has booted."""
    command = [sys.executable, "-m", "gunicorn", "app:server", "-w", str(workers), "-b", "127.0.0.1:0", *options]
    process = subprocess.Popen(command, cwd=ROOT, env=dict(env), stderr=subprocess.PIPE, text=True)
    assert process.stderr is not None
    lines: queue.Queue[str] = queue.Queue()
    log: list[str] = []
    threading.Thread(target=_read_lines, args=(process.stderr, lines, log), daemon=True).start()
    try:
        base, booted = None, 0
        deadline = time.monotonic() + 60
        while (base is None or booted < workers) and time.monotonic() < deadline:
            with contextlib.suppress(queue.Empty):
                line = lines.get(timeout=0.5)
                found = re.search(r"Listening at: (http://127\.0\.0\.1:\d+)", line)
                base = found.group(1) if found else base
                booted += "Booting worker" in line
        assert base is not None and booted == workers, "gunicorn did not start:\n" + "".join(log)
        yield Gunicorn(base, process, log)
    finally:
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)
