"""The rules of background jobs: limits, admission, the queue and deadlines."""

from __future__ import annotations

from dataclasses import replace

import pytest

from privdash.application.jobs import (
    JobEntry,
    JobLimits,
    StopReason,
    admission,
    overdue,
    physical_memory,
    refusal,
    stop_message,
    waiting_text,
)
from privdash.application.settings import Settings

LIMITS = JobLimits(seconds=60.0, memory_bytes=500_000_000, per_server=2, per_session=1, abandon_grace=5.0)


def job(key: str, session: str, submitted: float, *, started: float | None = None, interval: float = 0.3) -> JobEntry:
    return JobEntry(
        key=key, session=session, submitted=submitted, interval=interval, last_poll=submitted, started=started
    )


def registry(*entries: JobEntry) -> dict[str, JobEntry]:
    return {entry.key: entry for entry in entries}


def test_a_job_starts_at_once_on_an_idle_server() -> None:
    assert admission(registry(job("a", "s1", 1.0)), "a", LIMITS).start


def test_a_second_job_of_the_same_session_waits_for_the_first() -> None:
    entries = registry(job("a", "s1", 1.0, started=1.0), job("b", "s1", 2.0))
    decision = admission(entries, "b", LIMITS)
    assert (decision.start, decision.ahead, decision.held_by) == (False, 1, "session")
    assert waiting_text(decision.ahead) == "waiting: 1 job ahead of yours"
    # Once the first has ended, the second starts.
    assert admission(registry(entries["b"]), "b", LIMITS).start


def test_the_server_limit_queues_the_rest_in_submission_order() -> None:
    entries = registry(
        job("a", "s1", 1.0, started=1.0),
        job("b", "s2", 2.0, started=2.0),
        job("c", "s3", 3.0),
        job("d", "s4", 4.0),
    )
    first, second = admission(entries, "c", LIMITS), admission(entries, "d", LIMITS)
    assert (first.start, first.ahead, first.held_by) == (False, 2, "server")
    assert (second.start, second.ahead, second.held_by) == (False, 3, "server")
    assert waiting_text(second.ahead) == "waiting: 3 jobs ahead of yours"
    # One place frees: the earlier waiting job takes it, the later one still waits.
    del entries["a"]
    assert admission(entries, "c", LIMITS).start
    assert not admission(entries, "d", LIMITS).start


def test_a_job_held_by_its_session_does_not_hold_back_other_sessions() -> None:
    entries = registry(job("a", "s1", 1.0, started=1.0), job("b", "s1", 2.0), job("c", "s2", 3.0))
    assert admission(entries, "b", LIMITS).held_by == "session"
    assert admission(entries, "c", LIMITS).start


def test_an_earlier_waiting_job_that_would_start_takes_the_last_place() -> None:
    entries = registry(job("a", "s1", 1.0, started=1.0), job("b", "s2", 2.0), job("c", "s3", 3.0))
    assert admission(entries, "b", LIMITS).start
    decision = admission(entries, "c", LIMITS)
    assert (decision.start, decision.held_by, decision.ahead) == (False, "server", 2)


def test_a_running_job_stays_admitted() -> None:
    entries = registry(job("a", "s1", 1.0, started=1.0), job("b", "s1", 2.0, started=3.0))
    assert admission(entries, "b", LIMITS).start


@pytest.mark.parametrize("per_server", [1, 3])
def test_no_more_jobs_run_than_the_limits_allow(per_server: int) -> None:
    """Admitting every job that may start, one at a time, never exceeds either limit."""
    limits = replace(LIMITS, per_server=per_server)
    entries = registry(*(job(f"j{i}", f"s{i % 3}", float(i)) for i in range(9)))
    for _ in range(9):
        for key in sorted(entries):
            if not entries[key].running and admission(entries, key, limits).start:
                entries[key] = replace(entries[key], started=100.0)
    running = [entry for entry in entries.values() if entry.running]
    assert len(running) == min(per_server, 3)
    assert len({entry.session for entry in running}) == len(running)
    # The earliest job of each session started (first come, first served).
    assert {entry.key for entry in running} == {f"j{i}" for i in range(min(per_server, 3))}


def test_overdue_jobs_are_those_past_their_wall_time_or_not_polled() -> None:
    now = 1000.0
    fresh = replace(job("fresh", "s1", 990.0, started=990.0), last_poll=999.9)
    slow = replace(job("slow", "s2", 900.0, started=930.0), last_poll=999.9)  # 70 s > 60 + 5
    late_ok = replace(job("late-ok", "s3", 930.0, started=936.0), last_poll=999.9)  # 64 s: within the grace
    closed = replace(job("closed", "s4", 990.0, started=990.0), last_poll=994.0)  # 6 s > 3 x 0.3 + 5
    waiting = job("waiting", "s5", 985.0)  # never polled for 15 s
    stops = overdue([fresh, slow, late_ok, closed, waiting], now, LIMITS)
    assert [(entry.key, reason) for entry, reason in stops] == [
        ("slow", StopReason.TIME),
        ("closed", StopReason.ABANDONED),
        ("waiting", StopReason.ABANDONED),
    ]
    assert LIMITS.abandon_after(0.3) == pytest.approx(5.9)


def test_a_waiting_job_whose_process_stopped_reporting_is_overdue() -> None:
    """Its process did not start, or hangs before its work: stopped after ``start_grace`` without a report, however
    often its page polls."""
    now = 1000.0
    limits = replace(LIMITS, start_grace=30.0)
    polled = {"last_poll": 999.9, "interval": 0.3}
    never = replace(job("never", "s1", 960.0), **polled)  # submitted 40 s ago, no report
    silent = replace(job("silent", "s2", 900.0), seen=965.0, **polled)  # last report 35 s ago
    queued = replace(job("queued", "s3", 900.0), seen=998.0, **polled)  # waits its turn, reports
    young = replace(job("young", "s4", 980.0), **polled)  # 20 s: within the grace
    running = replace(job("running", "s5", 960.0, started=961.0), **polled)  # started: the wall time counts
    stops = overdue([never, silent, queued, young, running], now, limits)
    assert [(entry.key, reason) for entry, reason in stops] == [
        ("never", StopReason.NOT_STARTED),
        ("silent", StopReason.NOT_STARTED),
    ]
    assert "did not start its work within 30 s" in stop_message(StopReason.NOT_STARTED, limits)


def test_the_queue_is_bounded_per_session_and_per_server() -> None:
    limits = replace(LIMITS, queue_per_session=2, queue_per_server=2)
    mine = [job("a", "s1", 1.0, started=1.0), job("b", "s1", 2.0)]
    assert refusal(mine, "s1", limits) is StopReason.SESSION_QUEUE
    assert refusal(mine[:1], "s1", limits) is None
    assert refusal(mine, "s2", limits) is None
    queued = [mine[0], job("c", "s2", 3.0), job("d", "s3", 4.0)]
    assert refusal(queued, "s4", limits) is StopReason.SERVER_QUEUE
    assert refusal(queued[:2], "s4", limits) is None
    assert stop_message(StopReason.SESSION_QUEUE, limits).startswith("2 computations of this browser")
    assert "busy: 2 computations are waiting" in stop_message(StopReason.SERVER_QUEUE, limits)


def test_messages_say_which_limit_stopped_the_job() -> None:
    assert "after 60 s" in stop_message(StopReason.TIME, LIMITS)
    assert "after 5 minutes" in stop_message(StopReason.TIME, replace(LIMITS, seconds=300.0))
    assert "more than 500 MB of memory" in stop_message(StopReason.MEMORY, LIMITS)
    assert "PRIVDASH_JOB_MEMORY_MB" in stop_message(StopReason.MEMORY, LIMITS)
    assert "without a result" in stop_message(StopReason.LOST, LIMITS)
    assert waiting_text(0) == "waiting: 0 jobs ahead of yours"


def test_limits_from_settings() -> None:
    settings = Settings.from_env(
        {
            "PRIVDASH_JOB_SECONDS": "12.5",
            "PRIVDASH_JOB_MEMORY_MB": "300",
            "PRIVDASH_JOBS_PER_SERVER": "3",
            "PRIVDASH_JOB_ABANDON_SECONDS": "4",
        }
    )
    limits = JobLimits.from_settings(settings)
    assert (limits.seconds, limits.memory_bytes, limits.per_server, limits.per_session) == (12.5, 300_000_000, 3, 1)
    assert limits.abandon_grace == 4.0


def test_default_limits_share_half_the_memory_among_the_jobs_per_core() -> None:
    settings = Settings()
    limits = JobLimits.from_settings(settings)
    assert settings.job_seconds == 300.0 and settings.jobs_per_server >= 1
    total = physical_memory()
    assert total is not None and limits.memory_bytes == total // (2 * settings.jobs_per_server)


@pytest.mark.parametrize(
    ("variable", "value"),
    [("PRIVDASH_JOBS_PER_SERVER", "0"), ("PRIVDASH_JOBS_PER_SERVER", "1.5"), ("PRIVDASH_JOB_SECONDS", "soon")],
)
def test_bad_job_settings_are_refused(variable: str, value: str) -> None:
    from privdash.errors import ParameterError

    with pytest.raises(ParameterError, match=variable):
        Settings.from_env({variable: value})


def test_limits_must_be_positive() -> None:
    with pytest.raises(ValueError, match="positive"):
        JobLimits(seconds=0)
    with pytest.raises(ValueError, match="positive"):
        JobLimits(start_grace=0)
    with pytest.raises(ValueError, match="At least one"):
        JobLimits(per_server=0)
