"""The application's one in-memory cache: explicit keys, bounds on entries and bytes, least recently used out.

Every value the dashboard keeps between requests of one worker (parsed tables, diagnoses, per-class tables, fix
runs, postcode reference data) goes through a :class:`BoundedCache`. A key is a tuple that names what the value
depends on, starting with a namespace (``("diagnosis", dataset_id, contract_json, ...)``); it never contains
``id()`` of an object, so a key cannot be reused by an unrelated value after garbage collection.

Two bounds hold at once: at most ``max_items`` entries, and at most ``max_bytes`` of the tables and arrays they
hold (:func:`approximate_size`: the memory of DataFrames, Series and numpy arrays found in the value, its
dataclass fields, tuples, lists and dicts, two levels deep). A single value larger than ``max_bytes`` is returned
but not kept.
"""

from __future__ import annotations

import dataclasses
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import Any, TypeVar

import diskcache
import numpy as np
import pandas as pd

from privdash.errors import ParameterError

__all__ = ["DISK_LIMIT", "BoundedCache", "approximate_size", "disk_cache"]

#: Largest size of a disk cache, in bytes (diskcache evicts the least recently stored beyond it).
DISK_LIMIT = 2**30

_DISKS: dict[str, diskcache.Cache] = {}
_DISKS_LOCK = threading.Lock()


def disk_cache(folder: Path) -> diskcache.Cache:
    """The process's handle on the disk cache in ``folder``, shared by the web workers and their background jobs
    (one handle per folder: a handle holds SQLite connections, and diskcache is safe to share between threads and
    processes)."""
    with _DISKS_LOCK:
        if str(folder) not in _DISKS:
            folder.mkdir(parents=True, exist_ok=True)
            _DISKS[str(folder)] = diskcache.Cache(str(folder), size_limit=DISK_LIMIT)
        return _DISKS[str(folder)]


T = TypeVar("T")


def approximate_size(value: Any, depth: int = 2) -> int:
    """Bytes held by the tables and arrays in ``value`` (see the module docstring); other objects count 0."""
    if isinstance(value, pd.DataFrame | pd.Series):
        usage = value.memory_usage(index=True, deep=False)
        return int(usage.sum() if isinstance(usage, pd.Series) else usage)
    if isinstance(value, np.ndarray):
        return int(value.nbytes)
    if depth <= 0:
        return 0
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        items: Any = (getattr(value, f.name, None) for f in dataclasses.fields(value))
    elif isinstance(value, dict):
        items = value.values()
    elif isinstance(value, list | tuple):
        items = value
    else:
        return 0
    return sum(approximate_size(item, depth - 1) for item in items)


class BoundedCache:
    """A thread-safe LRU mapping of explicit keys to values, holding at most ``max_items`` entries.

    A value is built outside the lock, so a slow build never blocks readers of other keys; two threads that miss
    the same key at once may both build it, and the later one wins (values are pure functions of their key).
    """

    def __init__(self, max_items: int = 32, max_bytes: int | None = None) -> None:
        if isinstance(max_items, bool) or not isinstance(max_items, int) or max_items < 1:
            raise ParameterError(f"A cache must hold at least one item, got {max_items!r}.")
        if max_bytes is not None and max_bytes < 1:
            raise ParameterError(f"A cache's byte limit must be positive, got {max_bytes!r}.")
        self.max_items = max_items
        self.max_bytes = max_bytes
        self._items: OrderedDict[tuple[Hashable, ...], Any] = OrderedDict()
        self._sizes: dict[tuple[Hashable, ...], int] = {}
        self._lock = threading.Lock()

    def __getstate__(self) -> dict[str, Any]:
        """A cache pickles its bounds only: a copy in another process (a background job) starts empty, instead of
        carrying every table this one holds (and a lock another thread may hold)."""
        return {"max_items": self.max_items, "max_bytes": self.max_bytes}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["max_items"], state["max_bytes"])  # type: ignore[misc]

    @property
    def size_bytes(self) -> int:
        """Approximate bytes held (0 when the cache has no byte limit)."""
        with self._lock:
            return sum(self._sizes.values())

    def get(self, key: tuple[Hashable, ...], default: Any = None) -> Any:
        """The value under ``key`` (marked as recently used), or ``default``."""
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key]
        return default

    def put(self, key: tuple[Hashable, ...], value: Any) -> None:
        """Store ``value`` under ``key``, dropping the least recently used entries beyond the bounds."""
        size = approximate_size(value) if self.max_bytes is not None else 0
        with self._lock:
            if self.max_bytes is not None and size > self.max_bytes:
                self._items.pop(key, None)
                self._sizes.pop(key, None)
                return
            self._items[key] = value
            self._sizes[key] = size
            self._items.move_to_end(key)
            while len(self._items) > self.max_items or (
                self.max_bytes is not None and sum(self._sizes.values()) > self.max_bytes
            ):
                old, _ = self._items.popitem(last=False)
                self._sizes.pop(old, None)

    def get_or_build(self, key: tuple[Hashable, ...], build: Callable[[], T]) -> T:
        """The value under ``key``, built by ``build()`` and stored when absent."""
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                value: T = self._items[key]
                return value
        value = build()
        self.put(key, value)
        return value

    def discard(self, match: Callable[[tuple[Hashable, ...]], bool]) -> int:
        """Drop every entry whose key satisfies ``match`` (e.g. all entries of a deleted dataset); returns how many."""
        with self._lock:
            gone = [key for key in self._items if match(key)]
            for key in gone:
                del self._items[key]
                self._sizes.pop(key, None)
        return len(gone)

    def __contains__(self, key: object) -> bool:
        with self._lock:
            return key in self._items

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._sizes.clear()
