"""Work shared between the calling thread and helper threads, for numpy's and Arrow's kernels, which release the
GIL.

:func:`map_beside` is ``[function(item) for item in items]`` with the calling thread taking items itself beside
the helpers, instead of handing every item to a pool and waiting: no thread is idle, and what the calling thread
allocates comes from the C allocator's main arena, which the work before has freed and which is already in memory,
rather than from a new thread's arena faulted in afresh (a million-row typing of numbers: 0.14 -> 0.12 s).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

_T = TypeVar("_T")
_R = TypeVar("_R")


def cores() -> int:
    """The processor cores the process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def map_beside(function: Callable[[_T], _R], items: Iterable[_T], *, threads: int = 2) -> list[_R]:
    """``[function(item) for item in items]``, on the calling thread and ``threads - 1`` helpers (at most one
    thread a core), each taking the next item when done with its last. The first error stops the items not yet
    started and is raised once the running ones end."""
    work = list(items)
    helpers = min(threads, cores(), len(work)) - 1
    if helpers <= 0:
        return [function(item) for item in work]
    results: list[Any] = [None] * len(work)  # each filled by its item's call
    order = iter(range(len(work)))
    lock = threading.Lock()
    failed = threading.Event()

    def take() -> None:
        while not failed.is_set():
            with lock:
                index = next(order, None)
            if index is None:
                return
            try:
                results[index] = function(work[index])
            except BaseException:
                failed.set()
                raise

    with ThreadPoolExecutor(max_workers=helpers) as pool:
        running = [pool.submit(take) for _ in range(helpers)]
        try:
            take()
        finally:
            errors = [error for error in (future.exception() for future in running) if error is not None]
    if errors:
        raise errors[0]
    return results
