"""The application's one in-memory cache: explicit keys, a bound on the number of entries, least recently used out.

Every value the dashboard keeps between requests of one worker (parsed tables, diagnoses, per-class tables, fix
runs, postcode reference data) goes through a :class:`BoundedCache`. A key is a tuple that names what the value
depends on, starting with a namespace (``("diagnosis", dataset_id, contract_json, ...)``); it never contains
``id()`` of an object, so a key cannot be reused by an unrelated value after garbage collection.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

from dashboard.core.errors import ParameterError

__all__ = ["BoundedCache"]

T = TypeVar("T")


class BoundedCache:
    """A thread-safe LRU mapping of explicit keys to values, holding at most ``max_items`` entries.

    A value is built outside the lock, so a slow build never blocks readers of other keys; two threads that miss
    the same key at once may both build it, and the later one wins (values are pure functions of their key).
    """

    def __init__(self, max_items: int = 32) -> None:
        if isinstance(max_items, bool) or not isinstance(max_items, int) or max_items < 1:
            raise ParameterError(f"A cache must hold at least one item, got {max_items!r}.")
        self.max_items = max_items
        self._items: OrderedDict[tuple[Hashable, ...], Any] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple[Hashable, ...], default: Any = None) -> Any:
        """The value under ``key`` (marked as recently used), or ``default``."""
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key]
        return default

    def put(self, key: tuple[Hashable, ...], value: Any) -> None:
        """Store ``value`` under ``key``, dropping the least recently used entries beyond the bound."""
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self.max_items:
                self._items.popitem(last=False)

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

    def __contains__(self, key: object) -> bool:
        with self._lock:
            return key in self._items

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
