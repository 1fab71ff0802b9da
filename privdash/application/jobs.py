"""Rules of the dashboard's background jobs: limits, admission, the queue and deadlines (no web framework).

A *job* is one run of a slow page computation (the Risk page's QI-combination analysis, the Fix page's slow
previews) in a process of its own. Every job of the server is listed in a registry (:class:`JobEntry` values keyed
by the job's result key) that all worker processes share; the functions here decide from that list, and the Dash
layer (:mod:`dashboard.ui.jobs`) keeps the list and starts, stops and reaps the processes.

Definitions
-----------
running
    A job that has been admitted and does its work; a *waiting* job is queued.
admission
    Waiting jobs are considered in submission order (first come, first served). A job may start when fewer than
    ``per_server`` jobs run on the server and fewer than ``per_session`` jobs of its session (browser) run; a job
    that cannot start does not hold back later jobs of other sessions.
jobs ahead
    Of a waiting job: the jobs submitted before it that have not ended (running or waiting), counted among its own
    session's jobs when the session's limit holds it back, else among all jobs of the server.
wall time
    A running job is stopped ``seconds`` after it started (time spent waiting does not count); when it does not stop
    by itself within ``kill_grace`` more seconds, its process is killed.
not started
    A waiting job's process reports to the registry at least every few seconds; a job that has not started and
    whose process has not reported for ``start_grace`` seconds (its process did not start, or hangs before its work)
    is stopped, so that its page says so instead of waiting for ever.
abandoned
    A page asks for its job's result every ``interval`` seconds; a job nobody has asked about for three intervals
    plus ``abandon_grace`` seconds (its tab was closed) is stopped.
memory
    A job may grow its address space by ``memory_bytes`` over what its process had when the work started.
queue bounds
    A session may have ``queue_per_session`` jobs that have not ended (running or waiting), and at most
    ``queue_per_server`` jobs wait on the server; a job beyond either bound is refused at once with a message, so
    that the queue (one waiting process per job) stays bounded.
"""

from __future__ import annotations

import enum
import os
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from privdash.application.settings import Settings

__all__ = [
    "Admission",
    "JobEntry",
    "JobLimits",
    "StopReason",
    "admission",
    "overdue",
    "physical_memory",
    "refusal",
    "stop_message",
    "waiting_text",
]


def physical_memory() -> int | None:
    """Bytes of physical memory of this machine, or None where the system does not tell."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, OSError, ValueError):
        return None


@dataclass(frozen=True)
class JobLimits:
    """What one background job may use, and how many run at once.

    Attributes
    ----------
    seconds
        Wall time of a job's work, from its start (waiting in the queue does not count).
    memory_bytes
        Address space a job may add to what its process had when the work started; None for no limit.
    per_server, per_session
        Jobs that may run at once on the server (all worker processes together) and for one session.
    abandon_grace
        A job nobody polled for three polling intervals plus this many seconds is stopped.
    kill_grace
        Seconds a job over its wall time gets to stop by itself before its process is killed.
    start_grace
        A job that has not started and whose process has not reported for this many seconds is stopped.
    queue_per_session, queue_per_server
        Jobs one session may have running or waiting; jobs that may wait on the server.
    """

    seconds: float = 300.0
    memory_bytes: int | None = 4_000_000_000
    per_server: int = 2
    per_session: int = 1
    abandon_grace: float = 10.0
    kill_grace: float = 5.0
    queue_per_session: int = 3
    queue_per_server: int = 32
    start_grace: float = 60.0

    def __post_init__(self) -> None:
        if min(self.seconds, self.abandon_grace, self.kill_grace, self.start_grace) <= 0:
            raise ValueError("The wall time and the grace periods of background jobs must be positive.")
        if min(self.per_server, self.per_session, self.queue_per_session, self.queue_per_server) < 1:
            raise ValueError("At least one background job must be allowed per server and per session.")
        if self.memory_bytes is not None and self.memory_bytes <= 0:
            raise ValueError("The memory limit of background jobs must be positive.")

    @classmethod
    def from_settings(cls, settings: Settings) -> JobLimits:
        """The limits of :class:`Settings`. Without a memory setting a job may use half the machine's physical
        memory shared by the jobs that may run at once (so the jobs together never take more than half of it)."""
        memory: int | None = settings.job_memory_bytes
        if not memory:
            total = physical_memory()
            memory = total // (2 * settings.jobs_per_server) if total else None
        return cls(
            seconds=settings.job_seconds,
            memory_bytes=memory,
            per_server=settings.jobs_per_server,
            abandon_grace=settings.job_abandon_seconds,
        )

    def abandon_after(self, interval: float) -> float:
        """Seconds without a poll after which a job polled every ``interval`` seconds counts as abandoned."""
        return 3 * max(interval, 0.0) + self.abandon_grace


@dataclass(frozen=True)
class JobEntry:
    """One job in the server's registry.

    Attributes
    ----------
    key
        The job's result key (unique per job).
    session
        The session (browser) that asked for it (any string that is equal for the same session, e.g. a digest of
        its token).
    submitted
        When it was asked for (seconds since the epoch); the queue's order.
    interval
        Seconds between two polls of its page.
    last_poll
        When its page last asked for its result (until the first poll: when its process was started, the moment
        the page can begin to poll).
    started
        When it was admitted, or None while it waits.
    pid, created
        Its process id and the process's start time (which tells a reused pid apart), once known.
    owner
        The process id of the worker that started it (the only process that can reap it).
    seen
        When its process last reported while it waited (None until its first report).
    """

    key: str
    session: str
    submitted: float
    interval: float
    last_poll: float
    started: float | None = None
    pid: int | None = None
    created: float | None = None
    owner: int | None = None
    seen: float | None = None

    @property
    def running(self) -> bool:
        return self.started is not None


@dataclass(frozen=True)
class Admission:
    """Whether a job may start now; if not, how many jobs are ahead of it and which limit holds it back."""

    start: bool
    ahead: int = 0
    held_by: str = ""


def _order(entry: JobEntry) -> tuple[float, str]:
    return (entry.submitted, entry.key)


def admission(entries: Mapping[str, JobEntry], key: str, limits: JobLimits) -> Admission:
    """Whether the waiting job ``key`` may start (see the module docstring for the rule and for "jobs ahead").

    ``entries`` are the jobs that have not ended. A job that already runs is admitted; ``key`` must be listed.
    """
    me = entries[key]
    if me.running:
        return Admission(True)
    running = [entry for entry in entries.values() if entry.running]
    slots = limits.per_server - len(running)
    by_session = Counter(entry.session for entry in running)
    waiting = sorted((entry for entry in entries.values() if not entry.running), key=_order)
    earlier: list[JobEntry] = []
    for entry in waiting:
        if entry.key == key:
            break
        earlier.append(entry)
        # An earlier job that would be admitted takes its slot first (first come, first served).
        if slots > 0 and by_session[entry.session] < limits.per_session:
            slots -= 1
            by_session[entry.session] += 1
    if by_session[me.session] >= limits.per_session:
        ahead = sum(entry.session == me.session for entry in running) + sum(e.session == me.session for e in earlier)
        return Admission(False, max(ahead, 1), "session")
    if slots <= 0:
        return Admission(False, max(len(running) + len(earlier), 1), "server")
    return Admission(True)


class StopReason(enum.Enum):
    """Why a job ended without its result (or never started)."""

    TIME = "time"
    MEMORY = "memory"
    ABANDONED = "abandoned"
    CANCELLED = "cancelled"
    LOST = "lost"
    NOT_STARTED = "not-started"
    SESSION_QUEUE = "session-queue"
    SERVER_QUEUE = "server-queue"


def refusal(entries: Iterable[JobEntry], session: str, limits: JobLimits) -> StopReason | None:
    """Why a new job of ``session`` may not join the queue (a bound of the queue is reached), or None.

    ``entries`` are the jobs that have not ended."""
    entries = list(entries)
    if sum(entry.session == session for entry in entries) >= limits.queue_per_session:
        return StopReason.SESSION_QUEUE
    if sum(not entry.running for entry in entries) >= limits.queue_per_server:
        return StopReason.SERVER_QUEUE
    return None


def overdue(entries: Iterable[JobEntry], now: float, limits: JobLimits) -> list[tuple[JobEntry, StopReason]]:
    """The jobs to stop at time ``now``: running past their wall time and the grace to stop by themselves
    (:attr:`StopReason.TIME`), not polled for too long (:attr:`StopReason.ABANDONED`), or not started and not
    reported by their process for ``start_grace`` seconds (:attr:`StopReason.NOT_STARTED`)."""
    stops: list[tuple[JobEntry, StopReason]] = []
    for entry in entries:
        if entry.started is not None and now - entry.started > limits.seconds + limits.kill_grace:
            stops.append((entry, StopReason.TIME))
        elif now - max(entry.last_poll, entry.submitted) > limits.abandon_after(entry.interval):
            stops.append((entry, StopReason.ABANDONED))
        elif entry.started is None and now - max(entry.seen or 0.0, entry.submitted) > limits.start_grace:
            stops.append((entry, StopReason.NOT_STARTED))
    return stops


def _amount(seconds: float) -> str:
    if seconds >= 120 and seconds % 60 == 0:
        return f"{seconds / 60:g} minutes"
    return f"{seconds:g} s"


def stop_message(reason: StopReason, limits: JobLimits) -> str:
    """What the page says about a job that ended for ``reason``."""
    if reason is StopReason.TIME:
        return (
            f"It was stopped after {_amount(limits.seconds)}, the longest a job may run on this server. "
            "Choose fewer columns or a smaller table, or ask the administrator to raise PRIVDASH_JOB_SECONDS."
        )
    if reason is StopReason.MEMORY:
        size = f"{limits.memory_bytes / 1e6:,.0f} MB" if limits.memory_bytes else "the memory available"
        return (
            f"It needed more than {size} of memory, the most a job may use on this server. "
            "Choose fewer columns or a smaller table, or ask the administrator to raise PRIVDASH_JOB_MEMORY_MB."
        )
    if reason is StopReason.CANCELLED:
        return "It was cancelled."
    if reason is StopReason.ABANDONED:
        return "It was stopped because its page was closed."
    if reason is StopReason.SESSION_QUEUE:
        return (
            f"{limits.queue_per_session} computations of this browser are already running or waiting. "
            "Wait until one has finished (or close the other tabs), then try again."
        )
    if reason is StopReason.NOT_STARTED:
        return (
            f"Its process did not start its work within {_amount(limits.start_grace)} (the server may be "
            "overloaded). Try again; if it happens again, tell the administrator."
        )
    if reason is StopReason.SERVER_QUEUE:
        return f"The server is busy: {limits.queue_per_server} computations are waiting. Try again in a minute."
    return "Its process ended without a result (for example, the server ran out of memory). Try again."


def waiting_text(ahead: int) -> str:
    """The status line of a queued job: ``"waiting: 1 job ahead of yours"``."""
    return f"waiting: {ahead} job{'s' if ahead != 1 else ''} ahead of yours"
