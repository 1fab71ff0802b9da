"""The upload store survives workers killed in the middle of a write.

``gunicorn app:server`` runs with 3 workers on a free port of 127.0.0.1 and a temporary store. Six clients upload
tables in a bounded loop while a watcher looks, through ``/proc``, for a worker that has a file of a temporary
dataset folder open (it is writing a dataset) and kills it with SIGKILL, twice. Asserted afterwards: the server
kept answering (gunicorn replaced the workers) and takes a new upload; every dataset in the store is complete and
readable; the only leftovers are temporary folders, and a sweep (as it runs once they are older than
:data:`~privdash.application.storage.TEMP_GRACE`) leaves nothing but complete datasets.
"""

from __future__ import annotations

import contextlib
import io
import os
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import psutil
import pytest
import requests

from privdash.application.storage import TEMP_GRACE, DatasetStore, is_upload_id
from tests.integration.gunicorn import running_gunicorn

WORKERS = 3
CLIENTS = 6
KILLS = 2
#: The whole upload phase stops after this many seconds, kills or not.
UPLOAD_SECONDS = 40.0


@dataclass
class Server:
    base: str
    process: subprocess.Popen[str]
    store: Path
    log: list[str] = field(default_factory=list)

    def workers(self) -> list[psutil.Process]:
        return psutil.Process(self.process.pid).children()


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    """``gunicorn app:server`` with 3 workers on a free port of 127.0.0.1 and a store in ``tmp_path``."""
    env = {
        **os.environ,
        "PRIVDASH_STORE_DIR": str(tmp_path / "store"),
        "PRIVDASH_CACHE_DIR": str(tmp_path / "cache"),
        "PRIVDASH_SESSION_MAX_DATASETS": "1000",
        # Every client uploads from 127.0.0.1: the per-address limits must not stop the run.
        "PRIVDASH_CLIENT_MAX_DATASETS": "10000",
        "PRIVDASH_CLIENT_UPLOADS_PER_HOUR": "10000",
    }
    with running_gunicorn(env, WORKERS) as server:
        yield Server(server.base, server.process, tmp_path / "store", server.log)


def table_csv(seed: int, rows: int = 60_000) -> bytes:
    """A CSV table of ``rows`` people (about 2 MB): long enough that writing it takes a moment."""
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame(
        {
            "age": rng.integers(18, 90, rows),
            "sex": rng.choice(["F", "M"], rows),
            "postcode": pd.Series(rng.integers(0, 99, rows)).map("AB{:02d}".format) + " 9XY",
            "income": rng.normal(30_000, 9_000, rows).round(2),
            "note": rng.choice(["alpha", "beta", "gamma", "delta"], rows),
        }
    )
    return frame.to_csv(index=False).encode()


def writing_worker(server: Server) -> psutil.Process | None:
    """A worker that has a file of a temporary dataset folder open, i.e. is writing a dataset right now."""
    # A temporary folder at the store's top level: the per-client counters (``clients/``) and stored links write
    # temporary files of their own, whose interruption is not what this test looks at.
    prefix = f"{server.store.resolve()}{os.sep}.tmp-"
    for worker in server.workers():
        with contextlib.suppress(psutil.Error):
            if any(os.path.realpath(item.path).startswith(prefix) for item in worker.open_files()):
                return worker
    return None


def test_workers_killed_mid_write_leave_a_consistent_store(server: Server) -> None:
    bodies = [table_csv(seed) for seed in range(3)]
    stop = threading.Event()
    stored: list[str] = []
    failures: list[str] = []
    lock = threading.Lock()

    def client(number: int) -> None:
        http = requests.Session()  # its own browser session (cookie)
        for attempt in range(200):
            if stop.is_set():
                return
            files = {"file": (f"people-{number}-{attempt}.csv", io.BytesIO(bodies[attempt % len(bodies)]))}
            try:
                response = http.post(server.base + "/api/upload", files=files, timeout=60)
            except requests.ConnectionError:
                continue  # this request's worker was killed: expected
            with lock:
                if response.status_code == 200:
                    stored.append(response.json()["id"])
                elif response.status_code != 502:
                    failures.append(f"{response.status_code}: {response.text[:200]}")

    threads = [threading.Thread(target=client, args=(n,), daemon=True) for n in range(CLIENTS)]
    for thread in threads:
        thread.start()
    killed: list[int] = []
    deadline = time.monotonic() + UPLOAD_SECONDS
    try:
        while len(killed) < KILLS and time.monotonic() < deadline:
            worker = writing_worker(server)
            if worker is None:
                time.sleep(0.002)
                continue
            with contextlib.suppress(psutil.Error):
                os.kill(worker.pid, signal.SIGKILL)
                killed.append(worker.pid)
                time.sleep(1.0)  # let the master replace it before looking again
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=90)
    assert len(killed) == KILLS, "no worker was caught writing a dataset:\n" + "".join(server.log[-20:])
    assert failures == [], "".join(failures) + "server log:\n" + "".join(server.log[-60:])

    # The server kept answering: gunicorn replaced the killed workers, and a new upload is stored.
    http = requests.Session()
    deadline = time.monotonic() + 30
    while len(server.workers()) < WORKERS and time.monotonic() < deadline:
        time.sleep(0.2)
    assert requests.get(server.base + "/api/health", timeout=10).status_code == 200
    response = http.post(server.base + "/api/upload", files={"file": ("after.csv", io.BytesIO(bodies[0]))}, timeout=60)
    assert response.status_code == 200, response.text
    stored.append(response.json()["id"])
    assert stored

    # Every published dataset is complete and readable; what the killed writers left is temporary folders only.
    store = DatasetStore(server.store)
    names = {entry.name for entry in server.store.iterdir()}
    datasets = {name for name in names if is_upload_id(name)}
    assert set(stored) <= datasets
    leftovers = names - datasets - {".lock", "links", "clients"}
    assert leftovers and all(name.startswith(".tmp-") for name in leftovers), sorted(leftovers)
    for dataset_id in datasets:
        frame = store.load(dataset_id)
        assert frame.shape == (60_000, 5) and frame.columns[0] == "age"
        assert sorted(path.name for path in (server.store / dataset_id).iterdir()) == ["data.parquet", "meta.json"]

    # The sweep deletes the leftovers once they are older than the grace period, and nothing else.
    store.sweep(now=time.time() + TEMP_GRACE + 1)
    assert {entry.name for entry in server.store.iterdir()} - {".lock", "links", "clients"} == datasets
    assert requests.get(server.base + "/api/health", timeout=10).status_code == 200
