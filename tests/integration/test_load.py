"""Bounded concurrency: 20 users on gunicorn with 4 workers, 3 rounds each of opening the demo dataset's Risk page.

Each user is a thread with its own cookie jar that does what the browser does on the Risk page (see
:mod:`tests.integration.dash_http`): GET the page, then the callbacks that render it (the page content with the
diagnosis, the address bar and header, the first block of the class table) and the QI-combination analysis, a
background job polled every 0.3 s until its result arrives. Asserted: no error, the 95th percentile of the Risk
render (the page-content callback) under 3 s, every worker's resident memory under a bound during and after the
run, never more background jobs running than the server allows, and no job process left behind.
"""

from __future__ import annotations

import contextlib
import os
import re
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import diskcache
import numpy as np
import psutil
import pytest
import requests

from dashboard.ui.jobs import REGISTRY_KEY, JobRegistry
from privdash.application.state import ViewState
from tests.integration.dash_http import DashSession, find, payload
from tests.integration.gunicorn import running_gunicorn

USERS = 20
ROUNDS = 3
WORKERS = 4
JOBS_PER_SERVER = 2
RENDER_P95_SECONDS = 3.0
# Measured: about 560 MB per worker at peak: 320 MB of imports, the pages rendered once on the demo dataset when
# the worker starts (the Postcodes page's reference geography is most of it) and 8 threads serving at once.
WORKER_RSS_MB = 650.0
HREF = ViewState(dataset="demo:people").href("/risk")


@dataclass
class Server:
    base: str
    master: psutil.Process
    cache_dir: Path
    log: list[str] = field(default_factory=list)

    def workers(self) -> list[psutil.Process]:
        return self.master.children()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, data_dir: Path) -> Iterator[Server]:
    """``gunicorn app:server`` with 4 workers on a free port of 127.0.0.1, settings from the environment."""
    root = tmp_path_factory.mktemp("load")
    env = {
        **os.environ,
        "PRIVDASH_STORE_DIR": str(root / "store"),
        "PRIVDASH_CACHE_DIR": str(root / "cache"),
        "PRIVDASH_DATA_DIR": str(data_dir),
        "PRIVDASH_JOBS_PER_SERVER": str(JOBS_PER_SERVER),
    }
    with running_gunicorn(env, WORKERS) as server:
        deadline = time.monotonic() + 60
        while not _healthy(server.base):
            assert time.monotonic() < deadline, "gunicorn does not answer"
            time.sleep(0.2)
        yield Server(server.base, psutil.Process(server.process.pid), root / "cache", server.log)


def _healthy(base: str) -> bool:
    """Whether the server answers its health check (workers still importing the app may leave it unanswered for a
    while: that is waiting, not failing)."""
    try:
        return requests.get(base + "/api/health", timeout=10).status_code == 200
    except requests.RequestException:
        return False


def rss_mb(process: psutil.Process) -> float:
    """Resident memory of a process (VmRSS of /proc/<pid>/status), in MB; 0 once it has ended."""
    try:
        text = Path(f"/proc/{process.pid}/status").read_text()
    except OSError:
        return 0.0
    found = re.search(r"^VmRSS:\s+(\d+) kB", text, re.M)
    return int(found.group(1)) * 1024 / 1e6 if found else 0.0


class Monitor(threading.Thread):
    """Samples, every 0.2 s until stopped, each worker's RSS and how many background jobs run on the server."""

    def __init__(self, server: Server) -> None:
        super().__init__(daemon=True)
        self.server = server
        self.stop = threading.Event()
        self.peak_rss: dict[int, float] = {}
        self.peak_running = 0
        self.samples = 0

    def run(self) -> None:
        cache = diskcache.Cache(str(self.server.cache_dir))
        try:
            while not self.stop.wait(0.2):
                for worker in self.server.workers():
                    self.peak_rss[worker.pid] = max(self.peak_rss.get(worker.pid, 0.0), rss_mb(worker))
                entries = cache.get(REGISTRY_KEY, {})
                self.peak_running = max(self.peak_running, sum(entry.running for entry in entries.values()))
                self.samples += 1
        finally:
            cache.close()


def job_processes(worker: psutil.Process) -> list[psutil.Process]:
    """A worker's background job processes: the worker's own children are its fork server and multiprocess's
    resource tracker, which live as long as the worker; the jobs are forks of the fork server (and their children)."""
    found = []
    for child in worker.children():
        with contextlib.suppress(psutil.Error):
            found.extend(child.children(recursive=True))
    return found


@dataclass
class Results:
    render: list[float] = field(default_factory=list)
    requests: list[float] = field(default_factory=list)
    jobs: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, kind: str, seconds: float) -> None:
        with self.lock:
            getattr(self, kind).append(seconds)

    def error(self, text: str) -> None:
        with self.lock:
            self.errors.append(text)


def sync_url(state: Any) -> dict[str, Any]:
    """The shell callback that writes the view state into the address bar, the navigation and the header."""
    paths = ["/data", "/risk", "/fix", "/postcodes"]
    nav = [{"path": path, "type": "nav"} for path in paths]
    return {
        "output": '..url.search...{"path":["ALL"],"type":"nav"}.href...{"path":["ALL"],"type":"nav"}.active...'
        '{"path":["ALL"],"type":"nav"}.aria-current...header-dataset.children...header-dataset.color..',
        "outputs": [
            {"id": "url", "property": "search"},
            [{"id": item, "property": "href"} for item in nav],
            [{"id": item, "property": "active"} for item in nav],
            [{"id": item, "property": "aria-current"} for item in nav],
            {"id": "header-dataset", "property": "children"},
            {"id": "header-dataset", "property": "color"},
        ],
        "inputs": [{"id": "page-state", "property": "data", "value": state}],
        "changedPropIds": ["page-state.data"],
        "state": [
            {"id": "url", "property": "pathname", "value": "/risk"},
            {"id": "url", "property": "search", "value": "?" + HREF.split("?", 1)[1]},
            [{"id": item, "property": "id", "value": item} for item in nav],
        ],
    }


def open_risk_page(tab: DashSession, results: Results, cache_dir: Path) -> None:
    """One visit of the Risk page of the demo dataset, request by request as the browser sends them."""

    def timed(kind: str, call: Any) -> Any:
        start = time.monotonic()
        response = call()
        results.add(kind, time.monotonic() - start)
        if response.status_code != 200:
            raise AssertionError(f"{kind}: status {response.status_code}: {response.text[:300]}")
        return response

    timed("requests", lambda: tab.open(HREF))
    path, search = HREF.split("?", 1)
    content = payload(
        [("_pages_content", "children"), ("_pages_store", "data")],
        [("_pages_location", "pathname", path), ("_pages_location", "search", "?" + search)],
    )
    layout = timed("render", lambda: tab.call(content)).json()["response"]["_pages_content"]["children"]
    state, request = find(layout, "page-state"), find(layout, "combo-request")
    if find(layout, "headline-cards") is None or state is None or request is None:
        raise AssertionError("the Risk page has no results")
    timed("requests", lambda: tab.call(sync_url(state["props"]["data"])))
    block = {"startRow": 0, "endRow": 100, "sortModel": [{"sort": "asc", "colId": "size"}], "filterModel": {}}
    rows = timed(
        "requests",
        lambda: tab.call(
            payload(
                ("class-grid", "getRowsResponse"),
                [("class-grid", "getRowsRequest", block)],
                [("page-state", "data", state["props"]["data"])],
            )
        ),
    ).json()
    if not rows["response"]["class-grid"]["getRowsResponse"]["rowData"]:
        raise AssertionError("the class table is empty")
    start = time.monotonic()
    job = tab.start(
        payload(
            ("combo-results", "children"),
            [("combo-request", "data", request["props"]["data"])],
            [("page-state", "data", state["props"]["data"])],
            changed=[],
        )
    )
    for _ in range(300):  # at most a minute of polls, 0.2 s apart
        if job.poll().done:
            break
        time.sleep(0.2)
    results.add("jobs", time.monotonic() - start)
    if job.response is None or find(job.response["combo-results"]["children"], "combination-grid") is None:
        with diskcache.Cache(str(cache_dir)) as cache:
            ended = JobRegistry(cache).ended(job.key)
        raise AssertionError(
            f"the QI-combination analysis gave no table (status {job.status}, job {job.job.split('~')[0]}, "
            f"ended: {ended}, progress {job.progress[-3:]}, response {str(job.response)[:300]})"
        )


def user(server: Server, results: Results, start: threading.Barrier) -> None:
    tab = DashSession(server.base, timeout=60)
    start.wait(60)
    for round_ in range(ROUNDS):
        try:
            open_risk_page(tab, results, server.cache_dir)
        except (AssertionError, requests.RequestException, KeyError, ValueError) as exc:
            results.error(f"round {round_ + 1}: {exc}")


def test_twenty_users_on_four_workers(server: Server) -> None:
    results = Results()
    monitor = Monitor(server)
    monitor.start()
    barrier = threading.Barrier(USERS)
    threads = [threading.Thread(target=user, args=(server, results, barrier), daemon=True) for _ in range(USERS)]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(110 - (time.monotonic() - started))
    elapsed = time.monotonic() - started
    time.sleep(1.5)  # the workers' supervisors reap the last job processes
    monitor.stop.set()
    monitor.join(5)
    after = {worker.pid: rss_mb(worker) for worker in server.workers()}
    jobs_left = [job for worker in server.workers() for job in job_processes(worker)]

    render = np.array(results.render)
    p95 = float(np.percentile(render, 95)) if render.size else float("inf")
    report = (
        f"{USERS} users x {ROUNDS} rounds in {elapsed:.1f} s: Risk render p50 {np.median(render):.3f} s, "
        f"p95 {p95:.3f} s, max {render.max(initial=0):.3f} s; other requests p95 "
        f"{np.percentile(results.requests, 95):.3f} s; QI-combination job p95 {np.percentile(results.jobs, 95):.2f} s; "
        f"worker RSS peak {max(monitor.peak_rss.values()):.0f} MB, after {max(after.values()):.0f} MB; "
        f"at most {monitor.peak_running} jobs running ({monitor.samples} samples)"
    )
    print(report)
    assert not any(thread.is_alive() for thread in threads), "users still running after the time limit"
    assert results.errors == [], (results.errors[:5], "".join(server.log)[-3000:])
    assert len(results.render) == USERS * ROUNDS and len(results.jobs) == USERS * ROUNDS
    assert p95 < RENDER_P95_SECONDS, report
    assert len(monitor.peak_rss) >= WORKERS and monitor.samples > 10
    assert max(monitor.peak_rss.values()) < WORKER_RSS_MB, report
    assert max(after.values()) < WORKER_RSS_MB, report
    assert 1 <= monitor.peak_running <= JOBS_PER_SERVER, report
    assert jobs_left == [], "job processes left behind"
    assert "Traceback" not in "".join(server.log)
