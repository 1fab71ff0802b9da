"""Background callbacks under limits: a Dash ``DiskcacheManager`` that queues, limits, watches and reaps its jobs.

How Dash runs a background callback with a ``DiskcacheManager``: the callback's first request calls
:meth:`call_job_fn`, which starts one process per job running the function that :meth:`make_job_fn` built; the
process writes its progress and its result into the diskcache. The browser then polls every ``interval`` ms with the
(signed) result key and process id; each poll calls ``get_progress``, :meth:`get_result` and ``job_running``. The
cancel inputs and a newer run of the same callback call :meth:`terminate_job`.

:class:`LimitedJobManager` hooks there (the rules themselves are in :mod:`privdash.application.jobs`):

* :meth:`call_job_fn` lists the job in a registry kept in the diskcache, the one place every gunicorn worker sees,
  with a digest of its session cookie, its page's polling interval and, once started, its process id. The job's
  process is a fork of the worker's *fork server*, never of the threaded worker itself (see the notes of
  :class:`LimitedJobManager`).
* The job process first waits its turn (one running job per session, ``per_server`` on the server, the rest in
  submission order); meanwhile its progress outputs read ``(0, "waiting: 1 job ahead of yours")`` and it reports
  to the registry every few seconds (a job whose process never reports is stopped after ``start_grace``). Then it
  sets its memory limit (``RLIMIT_AS``) and its wall-time alarm and runs the callback. Running out of memory or
  time ends it with a result that says so, which :meth:`get_result` turns into a message on the page.
* :meth:`get_result` records each poll. A job whose process ended without a result gets a message too.
  :meth:`job_running` answers, within one poll, what :meth:`get_result` saw: Dash asks twice, and a job that
  ended in between lost its result (the page stopped polling with nothing shown).
* :meth:`build_cache_key` gives every job a result key of its own (Dash's depends on the inputs only: two browsers
  with the same inputs shared one key, and the first poll took the other's result).
* Every worker with live job processes runs a supervisor thread that, twice a second, and every poll (at most twice
  a second per worker), stops jobs over their wall time or that nobody polls any more (a closed tab), drops registry
  entries of processes that died, and reaps the worker's ended job processes, so none is left a zombie.

Progress outputs of background callbacks are ``(percent, status text)`` here (see
:func:`dashboard.ui.components.progress_panel`); the waiting message follows that shape.
"""

from __future__ import annotations

import _thread
import atexit
import contextlib
import functools
import hashlib
import inspect
import io
import logging
import os
import secrets
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import dash
import dill
import diskcache
import flask
import psutil

from dashboard.ui.components import error_alert
from privdash.application.jobs import (
    JobEntry,
    JobLimits,
    StopReason,
    admission,
    overdue,
    refusal,
    stop_message,
    waiting_text,
)
from privdash.application.settings import Settings

try:
    import resource
except ImportError:  # Windows: no address-space limit (the wall time and the queue still hold)
    resource = None  # type: ignore[assignment]

__all__ = ["REGISTRY_KEY", "JobRegistry", "JobTimeout", "LimitedJobManager", "run_job", "stopped_view"]

log = logging.getLogger(__name__)

#: The diskcache key of the registry of jobs that have not ended ({result key: JobEntry}).
REGISTRY_KEY = "privdash-jobs"
_END_PREFIX = "privdash-job-end:"
#: A job's result that says why it has none: {_STOPPED: StopReason value}.
_STOPPED = "privdash_job_stopped"
#: Results and end reasons nobody collects are deleted after this many seconds.
_KEEP = 3600.0
_SWEEP_EVERY = 0.5
_WAIT_STEP = 0.25
#: A waiting job's process writes the time into its registry entry at least this often.
_REPORT_EVERY = 5.0
#: A registry entry whose process id is not known yet counts as alive this long (the process is being started).
_STARTING = 10.0
_SIGNALS = ("SIGTERM", "SIGINT", "SIGQUIT", "SIGHUP", "SIGUSR1", "SIGUSR2", "SIGWINCH", "SIGCHLD")


class JobRegistry:
    """The registry of the jobs that have not ended ({result key: JobEntry}) and the reasons jobs ended, in the
    diskcache that every worker process and job process opens (picklable: a job process may be spawned)."""

    def __init__(self, cache: diskcache.Cache) -> None:
        self.cache = cache

    @contextlib.contextmanager
    def locked(self) -> Iterator[dict[str, JobEntry]]:
        """The registry, locked for this block (all processes), written back when the block changed it."""
        with self.cache.transact(retry=True):
            entries: dict[str, JobEntry] = dict(self.cache.get(REGISTRY_KEY, {}))
            before = dict(entries)
            yield entries
            if entries != before:
                self.cache.set(REGISTRY_KEY, entries)

    def entries(self) -> dict[str, JobEntry]:
        """A copy of the registry."""
        return dict(self.cache.get(REGISTRY_KEY, {}))

    def end(self, key: str, reason: StopReason) -> None:
        """Record why the job ``key`` ended (kept an hour)."""
        self.cache.set(_END_PREFIX + key, reason.value, expire=_KEEP)

    def ended(self, key: str) -> StopReason | None:
        """Why the job ``key`` ended, when a limit, a cancel or abandonment ended it."""
        value = self.cache.get(_END_PREFIX + key)
        return StopReason(value) if value else None


class JobTimeout(BaseException):
    """Raised inside a job process when its wall time is over (a BaseException, so that no ``except Exception``
    in the computation swallows it)."""


def stopped_view(message: str) -> Any:
    """What a background callback's ``children`` output shows for a job that ended without its result."""
    return error_alert(message, title="The computation did not finish", alert_id="job-stopped")


def _alarm(_signum: int, _frame: Any) -> None:
    raise JobTimeout


def _process_start(pid: int) -> float | None:
    """When process ``pid`` started, to tell a later process with the same id apart: on Linux the clock ticks from
    boot to its start (``/proc/<pid>/stat``, which no adjustment of the system clock changes: psutil's creation time
    adds the boot time as the clock now sees it, which moves when the clock is corrected); elsewhere psutil's
    creation time. None when there is no such process."""
    with contextlib.suppress(OSError, IndexError, ValueError):
        return float(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19])
    try:
        return float(psutil.Process(pid).create_time())
    except psutil.Error:
        return None


def _same_process(pid: int, created: float | None) -> bool:
    """Whether ``pid`` is still the process that started at ``created`` (any process with that id when the start is
    unknown)."""
    start = _process_start(pid)
    return start is not None and (created is None or start == created)


def _alive(entry: JobEntry, now: float) -> bool:
    """Whether the job's process still runs (not ended, not a zombie, and not a later process with the same id)."""
    if entry.pid is None:
        return now - entry.submitted < _STARTING
    try:
        return _same_process(entry.pid, entry.created) and psutil.Process(entry.pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _kill(pid: int | None, created: float | None) -> None:
    """Kill a job's process and the processes it started (SIGKILL: a computation cannot delay it)."""
    if pid is None or not _same_process(pid, created):
        return  # ended (its process id may have been reused)
    try:
        process = psutil.Process(pid)
        for child in process.children(recursive=True):
            with contextlib.suppress(psutil.Error):
                child.kill()
        process.kill()
    except psutil.Error:
        pass


def _limit_memory(extra: int | None) -> None:
    """Let this process grow its address space by at most ``extra`` bytes (``RLIMIT_AS``): an allocation beyond
    fails with MemoryError instead of taking the machine's memory."""
    if extra is None or resource is None:
        return
    _soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = int(psutil.Process().memory_info().vms) + int(extra)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    try:
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    except (ValueError, OSError) as exc:  # e.g. macOS refuses address-space limits
        log.warning("the memory limit of a background job could not be set: %s", exc)


def _guarded(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` returning the "stopped" result instead of raising MemoryError or :class:`JobTimeout`."""
    if inspect.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def guarded_async(*args: Any, **kwargs: Any) -> Any:
            try:
                return await fn(*args, **kwargs)
            except MemoryError:
                return {_STOPPED: StopReason.MEMORY.value}
            except JobTimeout:
                return {_STOPPED: StopReason.TIME.value}

        return guarded_async

    @functools.wraps(fn)
    def guarded(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except MemoryError:
            return {_STOPPED: StopReason.MEMORY.value}
        except JobTimeout:
            return {_STOPPED: StopReason.TIME.value}

    return guarded


#: Modules the fork server imports once, so that a job process starts with the app's code loaded ("__main__": the
#: server's own script, which a job process would otherwise import again), and the report's renderers (matplotlib,
#: WeasyPrint), which the web workers never import.
_PRELOAD = ("__main__", "dashboard.app", "dashboard.pages", "dashboard.ui.renderers")
_TRIES = 3


@functools.cache
def _context() -> Any:
    """Where job processes come from: a fork server (a process of its own that has imported the app's modules and
    runs no thread; each job is a fork of it) where the system has one, else a fresh interpreter (Windows)."""
    import multiprocess  # Dash's choice: dill pickles what the standard library cannot

    if "forkserver" not in multiprocess.get_all_start_methods():
        return multiprocess.get_context("spawn")
    context = multiprocess.get_context("forkserver")
    context.set_forkserver_preload(list(_PRELOAD))
    return context


def _start_fork_server() -> None:
    """Start this process's fork server (its imports take seconds) rather than with the first job."""
    if _context().get_start_method() != "forkserver":
        return
    from multiprocess import forkserver

    try:
        forkserver.ensure_running()
    except Exception:  # the first job tries again and reports what fails
        log.warning("the fork server of background jobs could not be started", exc_info=True)


def _forget_fork_server() -> None:
    """In a forked child (a gunicorn worker of a preloaded app): the parent's fork server is not a child of this
    process (multiprocess would fail to wait for it); this process starts its own."""
    module = sys.modules.get("multiprocess.forkserver")
    server = getattr(module, "_forkserver", None)
    if server is None or getattr(server, "_forkserver_pid", None) is None:
        return
    with contextlib.suppress(OSError, TypeError):
        os.close(server._forkserver_alive_fd)
    server._forkserver_address = server._forkserver_alive_fd = server._forkserver_pid = None
    server._lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_fork_server)


class _JobPickler(dill.Pickler):
    """dill's pickler, except that a lock arrives unlocked in the job process (whoever held it is a thread of the
    worker, which the job process does not have)."""

    dispatch = type(dill.Pickler.dispatch)(dill.Pickler.dispatch)


def _save_lock(pickler: Any, obj: Any) -> None:
    pickler.save_reduce(_thread.allocate_lock, (), obj=obj)


def _save_rlock(pickler: Any, obj: Any) -> None:
    pickler.save_reduce(threading.RLock, (), obj=obj)


_JobPickler.dispatch[_thread.LockType] = _save_lock
_JobPickler.dispatch[_thread.RLock] = _save_rlock


def _dumps(job: Any) -> bytes:
    """``job`` (the job function and its arguments) pickled for the job process. Caches in it arrive empty
    (:class:`~privdash.application.cache.BoundedCache` pickles its bounds only) and locks unlocked. Another thread
    may change a dict of the app while it is pickled: then it is pickled again."""
    for attempt in range(_TRIES):
        buffer = io.BytesIO()
        try:
            _JobPickler(buffer).dump(job)
        except RuntimeError:  # "dictionary changed size during iteration"
            if attempt == _TRIES - 1:
                raise
            continue
        return buffer.getvalue()
    raise AssertionError("unreachable")


def _exclusive(method: Callable[..., Any]) -> Callable[..., Any]:
    """The method, run while holding its manager's fork lock (see :class:`LimitedJobManager`)."""

    @functools.wraps(method)
    def exclusive(self: LimitedJobManager, *args: Any, **kwargs: Any) -> Any:
        with self._fork_lock:
            return method(self, *args, **kwargs)

    return exclusive


class LimitedJobManager(dash.DiskcacheManager):
    """A ``DiskcacheManager`` whose jobs run under :class:`~privdash.application.jobs.JobLimits` (see the module
    docstring).

    Parameters
    ----------
    cache
        The diskcache shared by all worker processes (results, progress and the job registry).
    limits
        Wall time, memory, jobs per server and per session, abandonment.
    session
        The current request's session token (called while a job is submitted).
    failure_view
        What a ``children`` output shows for a job stopped by a limit (from the message of
        :func:`~privdash.application.jobs.stop_message`).

    Notes
    -----
    A job process is never a fork of the (threaded) worker: a fork copies the state of the libraries the worker's
    other threads are using at that instant. SQLite keeps the locks of all of a process's connections, and its
    memory mutexes, in the process: a job process forked while another thread was inside a transaction on any
    SQLite file (the job cache, the Fix page's disk cache, ...) found that lock held for ever, or blocked on a mutex
    for ever, and its page showed "Waiting ..." until the test gave up. Jobs are forks of a *fork server* instead
    (multiprocess's ``forkserver``: a process of its own that imports the app's modules once and runs nothing
    else), started with the manager. The job function and its arguments travel pickled (:func:`_dumps`): the
    app's in-memory caches arrive empty, locks unlocked; everything else a job reads is on disk. A job whose
    process never reports is stopped after ``JobLimits.start_grace`` with a message. This process's threads still
    use the cache one at a time (the methods marked ``_exclusive`` hold one lock).
    """

    def __init__(
        self,
        cache: diskcache.Cache,
        limits: JobLimits,
        *,
        session: Callable[[], str],
        failure_view: Callable[[str], Any] = stopped_view,
    ) -> None:
        # Set before the base class builds the job functions of the callbacks registered so far.
        self._fork_lock = threading.RLock()
        self.limits = limits
        self.registry = JobRegistry(cache)
        super().__init__(cache)
        self._session = session
        self._failure_view = failure_view
        #: Job processes started by this process, by process id (only this process can reap them).
        self._children: dict[int, Any] = {}
        self._lock = threading.Lock()
        self._supervisor: threading.Thread | None = None
        self._last_sweep = 0.0
        atexit.register(self._kill_children)

    @classmethod
    def from_settings(cls, settings: Settings, *, session: Callable[[], str]) -> LimitedJobManager:
        """The manager of the app: its cache in ``settings.cache_dir``, the limits of the settings."""
        settings.cache_dir.mkdir(parents=True, exist_ok=True)
        threading.Thread(target=_start_fork_server, name="privdash-fork-server", daemon=True).start()
        return cls(diskcache.Cache(str(settings.cache_dir)), JobLimits.from_settings(settings), session=session)

    # --- the registry ------------------------------------------------------------------------------------------

    @_exclusive
    def jobs(self) -> dict[str, JobEntry]:
        """The jobs that have not ended (a copy of the registry)."""
        return self.registry.entries()

    # --- Dash's hooks ------------------------------------------------------------------------------------------

    def build_cache_key(self, fn: Any, args: Any, cache_args_to_ignore: Any, triggered: Any) -> str:
        """A result key of its own for every job: Dash's key depends on the inputs only, so two browsers asking
        for the same result would share one key and the first poll would take the other's result away."""
        base = super().build_cache_key(fn, args, cache_args_to_ignore, triggered)
        return hashlib.sha256(f"{base}:{secrets.token_hex(16)}".encode()).hexdigest()

    def make_job_fn(self, fn: Any, progress: Any, key: Any = None) -> Callable[..., None]:
        """The job process's function: :func:`run_job` around Dash's (whose callback returns the "stopped" result
        on MemoryError or :class:`JobTimeout`)."""
        run = super().make_job_fn(_guarded(fn), progress, key)
        return functools.partial(run_job, self.registry, self.limits, run, bool(progress))

    @_exclusive
    def call_job_fn(self, key: str, job_fn: Any, args: Any, context: Any) -> int:
        """Register the job and start its process (which waits its turn); returns the process id, or 0 for a job
        refused because its session or the server has too many jobs waiting."""
        now = time.time()
        # The registry is a file: it keeps a digest of the session token, never the token.
        session = hashlib.sha256(self._session().encode()).hexdigest()
        entry = JobEntry(
            key=key, session=session, submitted=now, interval=_interval(), last_poll=now, owner=os.getpid()
        )
        self._sweep(force=True)  # free the places of jobs that ended before this one queues
        job = _dumps((job_fn, (key, self._make_progress_key(key), args, context, entry)))
        with self.registry.locked() as entries:
            refused = refusal((other for other in entries.values() if _alive(other, now)), session, self.limits)
            if refused is None:
                entries[key] = entry
        if refused is not None:
            # No process: the first poll finds the message (process id 0 counts as a job that is not running).
            self.handle.set(key, {_STOPPED: refused.value}, expire=_KEEP)
            return 0
        process = _context().Process(target=_start_job, args=(job,), name=f"privdash-job-{key[:8]}")
        process.start()
        pid = int(process.pid)
        with self._lock:
            self._children[pid] = process
        with self.registry.locked() as entries:
            current = entries.get(key)
            if current is not None:
                # The page polls once this request has answered: abandonment counts from now (the first job may
                # have waited seconds for the fork server).
                current = replace(current, last_poll=max(current.last_poll, time.time()))
                if current.pid is None:
                    current = replace(current, pid=pid, created=_process_start(pid))
                entries[key] = current
        self._ensure_supervisor()
        return pid

    @_exclusive
    def get_progress(self, key: str) -> Any:
        return super().get_progress(key)

    @_exclusive
    def get_updated_props(self, key: str) -> Any:
        return super().get_updated_props(key)

    @_exclusive
    def get_or_create_signing_secret(self, generate: Callable[[], bytes]) -> Any:
        return super().get_or_create_signing_secret(generate)

    @_exclusive
    def get_result(self, key: str, job: Any) -> Any:
        """The job's result; its message when a limit stopped it or its process ended without one; else
        ``UNDEFINED`` (still running, or cancelled)."""
        now = time.time()
        with self.registry.locked() as entries:
            if key in entries:
                entries[key] = replace(entries[key], last_poll=now)
        self._sweep()
        result = self.handle.get(key, self.UNDEFINED)
        if result is self.UNDEFINED:
            if job is None:
                return self.UNDEFINED
            if self.job_running(job):
                if flask.has_request_context():
                    flask.g.privdash_running_jobs = {*flask.g.get("privdash_running_jobs", ()), str(job)}
                return self.UNDEFINED
            # The process has ended: its result may have been written just after the first look.
            result = self.handle.get(key, self.UNDEFINED)
        if result is self.UNDEFINED:
            reason = self.registry.ended(key)
            if reason in (StopReason.CANCELLED, StopReason.ABANDONED):
                return self.UNDEFINED
            return self._stopped(reason or StopReason.LOST)
        self.clear_cache_entry(key)
        self.clear_cache_entry(self._make_progress_key(key))
        if isinstance(result, dict) and _STOPPED in result:
            return self._stopped(StopReason(result[_STOPPED]))
        return result

    def job_running(self, job: Any) -> bool:
        """Whether the job's process runs; within one poll, what :meth:`get_result` saw. (Dash asks again right
        after :meth:`get_result`: a job that ended in between, its result just stored, would otherwise end its
        page's polling without the result.)"""
        if flask.has_request_context() and str(job) in flask.g.get("privdash_running_jobs", ()):
            return True
        try:
            return bool(super().job_running(job))
        except psutil.Error:  # ended (and reaped by another thread) between Dash's two looks at it
            return False

    def _stopped(self, reason: StopReason) -> Any:
        """The callback's output for a job that ended for ``reason``: the message in every ``children`` output,
        no update of the others."""
        view = self._failure_view(stop_message(reason, self.limits))
        outputs = dash.callback_context.outputs_list
        if isinstance(outputs, dict):
            return view if outputs.get("property") == "children" else dash.no_update
        return [
            view if isinstance(output, dict) and output.get("property") == "children" else dash.no_update
            for output in outputs
        ]

    @_exclusive
    def terminate_job(self, job: Any) -> None:
        """Stop a job (cancel button, a newer run of its callback, or its result delivered) and reap it."""
        if job is None:
            return
        pid = int(job)
        with self.registry.locked() as entries:
            found = [entry for entry in entries.values() if entry.pid == pid]
            for entry in found:
                del entries[entry.key]
                self.registry.end(entry.key, StopReason.CANCELLED)
        with self._lock:
            own = self._children.get(pid)
        if found:
            _kill(pid, found[0].created)
        elif own is not None and own.is_alive():
            _kill(pid, None)
        self._reap(wait_for=pid)

    # --- supervision -----------------------------------------------------------------------------------------

    @_exclusive
    def _sweep(self, *, force: bool = False) -> None:
        """Stop jobs over their wall time or abandoned, forget jobs whose process died, reap ended children."""
        now = time.time()
        if not force and now - self._last_sweep < _SWEEP_EVERY:
            return
        self._last_sweep = now
        with self.registry.locked() as entries:
            live = {key: entry for key, entry in entries.items() if _alive(entry, now)}
            stops = overdue(live.values(), now, self.limits)
            for entry, reason in stops:
                del live[entry.key]
                self.registry.end(entry.key, reason)
            if live != entries:
                entries.clear()
                entries.update(live)
        for entry, reason in stops:
            _kill(entry.pid, entry.created)
            if reason in (StopReason.TIME, StopReason.NOT_STARTED):
                self.handle.add(entry.key, {_STOPPED: reason.value}, expire=_KEEP)  # the page says why
            else:  # nobody will ask for it
                self.clear_cache_entry(entry.key)
                self.clear_cache_entry(self._make_progress_key(entry.key))
        self._reap()

    def _reap(self, wait_for: int | None = None) -> None:
        """Collect the exit status of this process's ended job processes (an ended process not waited for stays
        a zombie); wait up to a second for ``wait_for``."""
        with self._lock:
            children = list(self._children.items())
        for pid, process in children:
            if pid == wait_for:
                process.join(1.0)
            if not process.is_alive():  # is_alive waits for an ended process without blocking
                with self._lock:
                    self._children.pop(pid, None)
                with contextlib.suppress(ValueError):
                    process.close()

    def _ensure_supervisor(self) -> None:
        with self._lock:
            if self._supervisor is not None:
                return
            self._supervisor = threading.Thread(target=self._supervise, name="privdash-jobs", daemon=True)
            self._supervisor.start()

    def _supervise(self) -> None:
        """Sweep while this process has job processes (the thread ends with the last one)."""
        while True:
            time.sleep(_SWEEP_EVERY)
            self._sweep(force=True)
            with self._lock:
                if not self._children:
                    self._supervisor = None
                    return

    def _kill_children(self) -> None:
        """At exit, stop this process's job processes (instead of waiting for them, as multiprocess would)."""
        with self._lock:
            children = list(self._children.items())
        for pid, process in children:
            _kill(pid, None)
            with contextlib.suppress(AssertionError, ValueError):
                process.join(1.0)


# --- inside the job process ----------------------------------------------------------------------------------


def _start_job(job: bytes) -> None:
    """The job process's entry point: the job function and its arguments, pickled by :func:`_dumps`."""
    function, args = dill.loads(job)
    function(*args)


def run_job(
    registry: JobRegistry,
    limits: JobLimits,
    run: Callable[..., None],
    progress: bool,
    result_key: str,
    progress_key: str,
    args: Any,
    context: Any,
    entry: JobEntry,
) -> None:
    """The job process: wait for a place, set the limits, run the callback (Dash's job function ``run``), leave the
    registry."""
    for name in _SIGNALS:  # the worker's handlers (gunicorn's) must not keep a job alive
        with contextlib.suppress(AttributeError, OSError, ValueError):
            signal.signal(getattr(signal, name), signal.SIG_DFL)
    cache = registry.cache
    try:
        if not _wait_turn(registry, limits, entry, progress_key if progress else None):
            return
        _limit_memory(limits.memory_bytes)
        alarm = hasattr(signal, "setitimer")  # without it (Windows) the supervisor's kill ends the job
        if alarm:
            signal.signal(signal.SIGALRM, _alarm)
            signal.setitimer(signal.ITIMER_REAL, limits.seconds)
        try:
            run(result_key, progress_key, args, context)
        finally:
            if alarm:
                signal.setitimer(signal.ITIMER_REAL, 0)
    except JobTimeout:  # the alarm rang outside the callback (while its result was being stored)
        cache.add(result_key, {_STOPPED: StopReason.TIME.value}, expire=_KEEP)
    except MemoryError:
        cache.add(result_key, {_STOPPED: StopReason.MEMORY.value}, expire=_KEEP)
    finally:
        with registry.locked() as entries:
            entries.pop(result_key, None)
        # A result nobody collects (its tab was closed as it finished) does not stay forever.
        cache.touch(result_key, expire=_KEEP)


def _wait_turn(registry: JobRegistry, limits: JobLimits, entry: JobEntry, progress_key: str | None) -> bool:
    """Wait until the job may start (True), or until it was removed from the registry or nobody polls it any more
    (False). Shows the queue position through the progress outputs."""
    pid = os.getpid()
    shown = None
    begun = time.time()  # its page cannot have polled before the process was there
    while True:
        now = time.time()
        with registry.locked() as entries:
            mine = entries.get(entry.key)
            if mine is None:
                return False  # cancelled, or stopped as abandoned
            if mine.pid is None:
                mine = entries[entry.key] = replace(mine, pid=pid, created=_process_start(pid))
            if mine.seen is None or now - mine.seen >= _REPORT_EVERY:  # alive (see JobLimits.start_grace)
                mine = entries[entry.key] = replace(mine, seen=now)
            if now - max(mine.last_poll, mine.submitted, begun) > limits.abandon_after(mine.interval):
                del entries[entry.key]
                registry.end(entry.key, StopReason.ABANDONED)
                return False
            live = {key: other for key, other in entries.items() if key == entry.key or _alive(other, now)}
            decision = admission(live, entry.key, limits)
            if decision.start:
                entries[entry.key] = replace(mine, started=now)
                return True
        text = waiting_text(decision.ahead)
        if progress_key is not None and text != shown:
            registry.cache.set(progress_key, [0, text])
            shown = text
        time.sleep(_WAIT_STEP)


def _interval() -> float:
    """Seconds between two polls of the background callback of the current request (Dash's default: 1 s)."""
    if not flask.has_request_context():
        return 1.0
    body = flask.request.get_json(silent=True) or {}
    callback = dash.get_app().callback_map.get(str(body.get("output")), {})
    spec = callback.get("background") or {}
    return float(spec.get("interval") or 1000) / 1000.0
