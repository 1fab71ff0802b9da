"""Background jobs under limits, through HTTP against the real app (werkzeug threaded server on 127.0.0.1).

The app is the dashboard's own (``create_app``) with small limits, plus one background callback for the tests
that sleeps or allocates as asked; the Risk page's QI-combination analysis runs as the browser runs it. Every
request is the one dash-renderer sends (see :mod:`tests.integration.dash_http`). After each test every job process
must have ended and been reaped: no zombie children of the server process, an empty job registry.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
from dash import Dash
from werkzeug.serving import make_server

from dashboard.app import create_app
from dashboard.ui.jobs import LimitedJobManager
from privdash.application.cache import disk_cache
from privdash.application.jobs import JobEntry, StopReason
from privdash.application.settings import Settings
from privdash.application.state import ViewState
from tests.integration.dash_http import DashSession, Job, find, payload, texts
from tests.integration.ui.jobtest import add_test_job

SECONDS = 4.0  # wall time of a job
MEMORY_MB = 100  # memory a job may allocate
GRACE = 1.5  # abandoned: no poll for 3 x 0.2 s + this
KILL_GRACE = 5.0  # JobLimits.kill_grace: a job that does not stop by itself is killed this much later


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Dash]]:
    root: Path = tmp_path_factory.mktemp("jobs")
    settings = Settings(
        store_dir=root / "store",
        cache_dir=root / "cache",
        job_seconds=SECONDS,
        job_memory_bytes=MEMORY_MB * 1_000_000,
        jobs_per_server=2,
        job_abandon_seconds=GRACE,
    )
    app = create_app(settings)
    add_test_job(app)
    http = make_server("127.0.0.1", 0, app.server, threaded=True)
    thread = threading.Thread(target=http.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{http.server_port}", app
    http.shutdown()
    thread.join(10)


def manager_of(app: Dash) -> LimitedJobManager:
    manager = app._background_manager
    assert isinstance(manager, LimitedJobManager)
    return manager


def zombies() -> list[psutil.Process]:
    found = []
    for child in psutil.Process().children():
        try:
            if child.status() == psutil.STATUS_ZOMBIE:
                found.append(child)
        except psutil.NoSuchProcess:
            pass
    return found


def alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


@pytest.fixture
def tab(server: tuple[str, Dash]) -> Iterator[Callable[[], DashSession]]:
    """New browser tabs (each its own session) on the Data page; afterwards, no job process is left."""
    base, app = server

    def new() -> DashSession:
        session = DashSession(base)
        session.open("/data")
        return session

    yield new
    manager = manager_of(app)
    deadline = time.monotonic() + 5.0
    while (zombies() or manager.jobs()) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert zombies() == [], "ended job processes were not reaped"
    assert manager.jobs() == {}


def job_body(request: dict[str, Any]) -> dict[str, Any]:
    """The request that starts the test job with ``request``."""
    return payload(("jobtest-out", "children"), [("jobtest-in", "data", request)])


def run(jobs: list[Job], limit: float = 30.0) -> dict[int, float]:
    """Poll ``jobs`` every 0.2 s, as their pages do, until each has its answer (at most ``limit`` seconds); returns
    when each one ended (``time.monotonic``), by position."""
    deadline = time.monotonic() + limit
    ended: dict[int, float] = {}
    while len(ended) < len(jobs):
        assert time.monotonic() < deadline, "a job did not end"
        for index, job in enumerate(jobs):
            if index not in ended and job.poll().done:
                ended[index] = time.monotonic()
        time.sleep(0.2)
    return ended


def statuses(job: Job) -> list[str]:
    return [str(update.get("jobtest-status.children", update.get("combo-status.children"))) for update in job.progress]


def test_a_job_finishes_and_its_process_is_reaped(tab: Callable[[], DashSession]) -> None:
    session = tab()
    job = session.start(job_body({"seconds": 0.3}))
    run([job])
    assert job.response == {"jobtest-out": {"children": "slept 0.3 s"}}
    assert statuses(job)[0] == "working"


def test_a_job_over_its_wall_time_is_stopped_with_a_message(tab: Callable[[], DashSession]) -> None:
    """Stopped when the time is up, or killed a grace period later when it does not come back to Python."""
    polite, deaf = tab(), tab()
    started = time.monotonic()
    jobs = [polite.start(job_body({"seconds": 60})), deaf.start(job_body({"seconds": 60, "deaf": True}))]
    ended = {index: at - started for index, at in run(jobs, SECONDS + KILL_GRACE + 10).items()}
    assert SECONDS - 0.5 < ended[0] < SECONDS + 2.0
    assert SECONDS + KILL_GRACE - 0.5 < ended[1] < SECONDS + KILL_GRACE + 3.0
    for job in jobs:
        assert job.response is not None
        alert = job.response["jobtest-out"]["children"]
        assert alert["props"]["id"] == "job-stopped"
        message = " ".join(texts(alert))
        assert f"stopped after {SECONDS:g} s" in message and "PRIVDASH_JOB_SECONDS" in message
        assert not alive(job.pid)


def test_a_job_over_its_memory_limit_fails_with_a_message(tab: Callable[[], DashSession]) -> None:
    session = tab()
    small, large = session.start(job_body({"allocate_mb": MEMORY_MB / 4})), None
    run([small])
    assert small.response == {"jobtest-out": {"children": f"allocated {int(MEMORY_MB / 4 * 1e6):,} bytes"}}
    large = session.start(job_body({"allocate_mb": MEMORY_MB * 4}))
    run([large])
    assert large.response is not None
    alert = large.response["jobtest-out"]["children"]
    assert alert["props"]["id"] == "job-stopped"
    assert f"more than {MEMORY_MB} MB of memory" in " ".join(texts(alert))
    # The worker that started the job is unharmed: it still answers.
    assert session.open("/risk").status_code == 200


def test_a_second_job_of_the_same_session_waits_its_turn(tab: Callable[[], DashSession]) -> None:
    first, other = tab(), tab()
    one = first.start(job_body({"seconds": 1.5}))
    two = first.start(job_body({"seconds": 0.2}))  # same session (cookie), another tab of it
    three = other.start(job_body({"seconds": 0.2}))  # another session: a place is free
    finished = run([one, two, three])
    assert statuses(two)[0] == "waiting: 1 job ahead of yours"
    assert statuses(two)[-1] == "working" and two.response == {"jobtest-out": {"children": "slept 0.2 s"}}
    assert statuses(three) == ["working"]
    assert finished[2] < finished[0] < finished[1]  # three, then one, then two


def test_the_server_limit_queues_jobs_of_other_sessions(tab: Callable[[], DashSession]) -> None:
    sessions = [tab() for _ in range(3)]
    jobs = [session.start(job_body({"seconds": 1.0})) for session in sessions]
    run(jobs)
    assert [statuses(job)[0] for job in jobs] == ["working", "working", "waiting: 2 jobs ahead of yours"]


def test_a_session_cannot_queue_jobs_without_bound(tab: Callable[[], DashSession]) -> None:
    """Three jobs of a session may run or wait (JobLimits.queue_per_session); a fourth gets a message at once."""
    session = tab()
    # Long enough that the first has not ended when the fourth is submitted, however slow the machine.
    jobs = [session.start(job_body({"seconds": 2.0})) for _ in range(3)]
    extra = session.start(job_body({"seconds": 0.3}))
    assert extra.pid == 0  # no process was started
    run([extra])
    assert extra.response is not None
    alert = extra.response["jobtest-out"]["children"]
    assert alert["props"]["id"] == "job-stopped"
    assert "3 computations of this browser are already running or waiting" in " ".join(texts(alert))
    run(jobs)
    assert [job.response for job in jobs] == [{"jobtest-out": {"children": "slept 2.0 s"}}] * 3


def test_an_abandoned_job_is_stopped(server: tuple[str, Dash], tab: Callable[[], DashSession]) -> None:
    session = tab()
    job = session.start(job_body({"seconds": 60}))
    job.poll()
    started = time.monotonic()
    # The tab is closed: no more polls. The job stops after 3 x 0.2 s + GRACE, well before its wall time.
    while alive(job.pid) and time.monotonic() - started < SECONDS:
        time.sleep(0.1)
    assert not alive(job.pid)
    assert time.monotonic() - started < 3 * 0.2 + GRACE + 1.5
    manager = manager_of(server[1])
    assert manager.registry.ended(job.key) is StopReason.ABANDONED
    assert manager.handle.get(job.key) is None  # nothing kept for nobody


def test_cancel_stops_the_job(tab: Callable[[], DashSession]) -> None:
    session = tab()
    job = session.start(job_body({"seconds": 60}))
    deadline = time.monotonic() + 10
    while not job.progress and time.monotonic() < deadline:
        job.poll()
        time.sleep(0.2)
    assert statuses(job) == ["working"]
    cancel = payload(("jobtest-cancel", "id"), [("jobtest-cancel", "n_clicks", 1)])
    assert session.call(cancel, cancelJob=job.job).status_code in (200, 204)
    assert not alive(job.pid)
    job.poll()
    assert job.status == 204 and job.response is None  # nothing shown for a cancelled job


def test_the_risk_pages_analysis_waits_behind_the_sessions_other_job(tab: Callable[[], DashSession]) -> None:
    """The real QI-combination analysis of the Risk page: queued, with the queue in its status line, then done."""
    session = tab()
    href = ViewState(dataset="demo:people").href("/risk")
    session.open(href)
    path, search = href.split("?", 1)
    page = session.call(
        payload(
            [("_pages_content", "children"), ("_pages_store", "data")],
            [("_pages_location", "pathname", path), ("_pages_location", "search", "?" + search)],
        )
    )
    layout = page.json()["response"]["_pages_content"]["children"]
    state, request = find(layout, "page-state"), find(layout, "combo-request")
    assert state is not None and request is not None
    slow = session.start(job_body({"seconds": 1.0}))
    combo = session.start(
        payload(
            ("combo-results", "children"),
            [("combo-request", "data", request["props"]["data"])],
            [("page-state", "data", state["props"]["data"])],
            changed=[],
        )
    )
    run([slow, combo])
    assert statuses(combo)[0] == "waiting: 1 job ahead of yours"
    # Then it worked (the poll that brings the answer may come before or after its last "Done" status).
    assert statuses(combo)[-1] in ("Done", "Finding the smallest combinations that single out each unique record ...")
    assert combo.response is not None
    assert find(combo.response["combo-results"]["children"], "combination-grid") is not None


def test_a_job_started_while_another_thread_writes_to_a_disk_cache_finishes(
    tab: Callable[[], DashSession], tmp_path: Path
) -> None:
    """SQLite keeps the locks of a process's connections in the process: a job process forked from the worker while
    another thread of it was inside a transaction would find that lock held for ever (its page then said
    "Waiting ..." for ever). Job processes come from the fork server, which has no other thread."""
    folder = tmp_path / "other-cache"
    other = disk_cache(folder)
    inside, release = threading.Event(), threading.Event()

    def write() -> None:
        with other.transact():
            other.set("held", True)
            inside.set()
            release.wait(10)

    writer = threading.Thread(target=write)
    writer.start()
    try:
        assert inside.wait(10)
        job = tab().start(job_body({"write": str(folder)}))  # the job process starts during the transaction
    finally:
        release.set()
        writer.join(10)
    run([job], limit=20)
    assert job.response == {"jobtest-out": {"children": "written"}}
    assert other.get("written") is True


def test_a_job_whose_process_never_reports_is_stopped_with_a_message(server: tuple[str, Dash]) -> None:
    """A job process that hangs before its work (it never reports to the registry) does not leave its page
    waiting for ever: after JobLimits.start_grace it is killed and its result says that it did not start."""
    manager = manager_of(server[1])
    stuck = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        now = time.time()
        submitted = now - manager.limits.start_grace - 1.0
        key = "stuck-job"
        entry = JobEntry(key=key, session="s", submitted=submitted, interval=0.2, last_poll=now, pid=stuck.pid)
        with manager.registry.locked() as entries:
            entries[key] = entry
        manager._sweep(force=True)
        assert stuck.wait(5) == -signal.SIGKILL
        assert manager.registry.ended(key) is StopReason.NOT_STARTED
        assert manager.handle.get(key) == {"privdash_job_stopped": StopReason.NOT_STARTED.value}
        assert key not in manager.jobs()
        manager.clear_cache_entry(key)
    finally:
        stuck.kill()
        stuck.wait()
