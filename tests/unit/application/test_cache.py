"""The application's one cache: explicit keys, least recently used out, bounded in entries and in bytes."""

from __future__ import annotations

import pickle
import threading
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pytest

from privdash.application.cache import BoundedCache, approximate_size
from privdash.errors import ParameterError


def test_least_recently_used_entry_goes_first() -> None:
    cache = BoundedCache(2)
    cache.put(("a",), 1)
    cache.put(("b",), 2)
    assert cache.get(("a",)) == 1  # a is now the most recently used
    cache.put(("c",), 3)
    assert ("b",) not in cache and ("a",) in cache and ("c",) in cache and len(cache) == 2
    assert cache.get(("b",), "gone") == "gone"


def test_discard_by_key() -> None:
    cache = BoundedCache(8)
    for name in ("a", "b"):
        for version in (1, 2):
            cache.put(("table", name, version), version)
    assert cache.discard(lambda key: key[1] == "a") == 2
    assert len(cache) == 2 and ("table", "b", 2) in cache


def test_get_or_build_builds_once() -> None:
    cache = BoundedCache(4)
    calls: list[int] = []

    def build() -> int:
        calls.append(1)
        return 42

    assert cache.get_or_build(("x", 1), build) == 42
    assert cache.get_or_build(("x", 1), build) == 42
    assert len(calls) == 1


@dataclass(frozen=True)
class Holder:
    frame: pd.DataFrame
    codes: np.ndarray
    label: str


def test_sizes_count_tables_and_arrays() -> None:
    frame = pd.DataFrame({"a": np.arange(1000, dtype=np.int64)})
    codes = np.zeros(500, dtype=np.int32)
    assert approximate_size(frame) == frame.memory_usage(index=True).sum()
    assert approximate_size(Holder(frame, codes, "x")) == approximate_size(frame) + 2000
    assert approximate_size((frame, [codes])) == approximate_size(frame) + 2000
    assert approximate_size("text") == 0


def test_byte_budget_evicts_and_refuses_oversized_values() -> None:
    block = np.zeros(1000, dtype=np.int8)  # 1,000 bytes
    cache = BoundedCache(10, max_bytes=2500)
    cache.put(("a",), block)
    cache.put(("b",), block.copy())
    cache.put(("c",), block.copy())  # 3,000 bytes: the oldest goes
    assert ("a",) not in cache and len(cache) == 2 and cache.size_bytes == 2000
    big = np.zeros(3000, dtype=np.int8)
    assert cache.get_or_build(("big",), lambda: big) is big  # returned, not kept
    assert ("big",) not in cache and len(cache) == 2


def test_bad_bounds_and_threads() -> None:
    for bad in (0, -1, True, 1.5):
        with pytest.raises(ParameterError):
            BoundedCache(bad)  # type: ignore[arg-type]
    with pytest.raises(ParameterError):
        BoundedCache(2, max_bytes=0)
    cache = BoundedCache(8)
    threads = [threading.Thread(target=lambda i=i: [cache.put((i % 16, j), j) for j in range(200)]) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(cache) == 8


def test_a_pickled_cache_arrives_empty_with_its_bounds() -> None:
    """What a background job process gets: the bounds, not the tables, and a lock nobody holds (even when a thread
    of this process holds the original's)."""
    cache = BoundedCache(3, max_bytes=10_000)
    cache.put(("table",), pd.DataFrame({"a": range(100)}))
    with cache._lock:
        copy = pickle.loads(pickle.dumps(cache))
    assert (copy.max_items, copy.max_bytes, len(copy)) == (3, 10_000, 0)
    copy.put(("x",), 1)  # its lock is free
    assert copy.get(("x",)) == 1 and ("table",) in cache
