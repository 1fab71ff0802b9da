"""map_beside: the calling thread and helpers share the items; results keep the items' order; the first error
stops the items not yet started and reaches the caller."""

from __future__ import annotations

import threading
import time

import pytest

from privdash._threads import map_beside


def test_results_keep_the_order_of_the_items_and_the_caller_takes_some() -> None:
    caller = threading.get_ident()
    seen: list[int] = []

    def slow_square(x: int) -> int:
        seen.append(threading.get_ident())
        time.sleep(0.002 * (x % 3))  # items end out of order
        return x * x

    assert map_beside(slow_square, range(40)) == [x * x for x in range(40)]
    assert caller in seen
    assert map_beside(slow_square, [], threads=4) == []
    assert map_beside(slow_square, [3], threads=4) == [9]


def test_one_thread_runs_everything_on_the_caller() -> None:
    caller = threading.get_ident()
    assert map_beside(lambda _: threading.get_ident(), range(5), threads=1) == [caller] * 5


@pytest.mark.parametrize("failing", [0, 7, 19])
def test_the_first_error_reaches_the_caller_and_stops_the_rest(failing: int) -> None:
    started: list[int] = []

    def work(x: int) -> int:
        started.append(x)
        if x == failing:
            raise ValueError(f"item {x}")
        time.sleep(0.001)
        return x

    with pytest.raises(ValueError, match=f"item {failing}"):
        map_beside(work, range(20))
    assert failing in started
    assert len(started) <= failing + 3  # at most the items running beside it when it failed, and one more each
