"""What each callback input may hold, taken from the component that declares it.

Every Dash component documents the type of each of its properties: ``value (string; optional)`` for a Mantine
``Select``, ``list of strings`` for a ``MultiSelect``, ``string | number`` for a ``NumberInput``, ``boolean`` for a
``Checkbox``'s ``checked``, ``number`` for ``n_clicks``. :class:`DeclaredInputs` walks the app's layouts once, notes
the component class behind every id (a pattern-matching id by its ``type``), and checks a callback request's values
against those declared types before the callback runs (:func:`dashboard.app.check_callback_request`): a value a
browser never sends (a number for a ``Select``, a list for a text field, infinity, a negative click count, text longer
than a field takes) is refused with a message naming the input. Properties whose declared type is open (a ``Store``'s
``data``: anything JSON) are left to the callback, as is the meaning of well-typed values (a column that is not in
the table).
"""

from __future__ import annotations

import json
import re
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import cache
from typing import Any

from privdash.application.state import MAX_LIST_ITEMS, MAX_NUMBER, MAX_TEXT_CHARS

__all__ = ["MAX_LIST", "MAX_LONG_TEXT", "MAX_TEXT", "DeclaredInputs", "Expected", "declared_type", "value_problem"]

#: The longest text a field other than a text area or a file takes (as long as a text of a view state).
MAX_TEXT = MAX_TEXT_CHARS
#: The longest text of a text area (an order of categories, one a line).
MAX_LONG_TEXT = 1_000_000
#: The most items of a list value (columns picked, rows of an ordering grid: as many as a view state holds).
MAX_LIST = MAX_LIST_ITEMS
#: Components whose text is long by nature: a text area; a file and an address (bounded by the request's size).
_LONG_TEXT = {"Textarea": MAX_LONG_TEXT, "JsonInput": MAX_LONG_TEXT, "Upload": None, "Location": None}


@dataclass(frozen=True)
class Expected:
    """A property's declared type: the scalar kinds it takes, and those of its list form (empty: no list)."""

    scalars: frozenset[str]
    items: frozenset[str]
    max_text: int | None = MAX_TEXT
    whole: bool = False

    def describe(self) -> str:
        if self.whole:
            return "a whole number of at least 0"
        one = {"string": "text", "number": "a number", "boolean": "true or false", "dict": "an object"}
        many = {"string": "text", "number": "numbers", "boolean": "true or false", "dict": "objects"}
        parts = [one[kind] for kind in sorted(self.scalars)]
        if self.items:
            listed = " or ".join(many[kind] for kind in sorted(self.items))
            parts.append(f"a list of at most {MAX_LIST:,} items of {listed}")
        text = " or ".join(parts)
        if self.max_text is not None and "string" in self.scalars | self.items:
            text += f" (at most {self.max_text:,} characters)"
        return text


_SCALARS = {"string": "string", "strings": "string", "number": "number", "numbers": "number"}
_SCALARS |= {"boolean": "boolean", "booleans": "boolean", "dict": "dict", "dicts": "dict"}


@cache
def declared_type(component: type, prop: str) -> Expected | None:
    """The type ``component`` declares for ``prop``, or None when it is open (any JSON) or not documented."""
    match = re.search(rf"^\s*- {re.escape(prop)} \(([^;)]*)", component.__doc__ or "", re.MULTILINE)
    if match is None:
        return None
    text = match.group(1).strip()
    head, listed, tail = text.partition("list of ")
    scalars = [part.strip() for part in head.split("|") if part.strip()]
    items = [part.strip() for part in tail.split("|") if part.strip()] if listed else []
    items = [part.split(" with keys")[0] for part in items]
    scalars = [part.split(" with keys")[0] for part in scalars]
    if not all(part in _SCALARS for part in [*scalars, *items]):
        return None  # "list" alone, a node, a literal set ...: open, left to the callback
    max_text = _LONG_TEXT.get(component.__name__, MAX_TEXT)
    return Expected(
        frozenset(_SCALARS[p] for p in scalars),
        frozenset(_SCALARS[p] for p in items),
        max_text=max_text,
        whole=prop.startswith("n_") and scalars == ["number"] and not items,
    )


def _is_kind(value: Any, kind: str, max_text: int | None) -> bool:
    if kind == "string":
        return isinstance(value, str) and (max_text is None or len(value) <= max_text)
    if kind == "number":  # finite, and within a float's range (as a browser's numbers are)
        return isinstance(value, int | float) and not isinstance(value, bool) and abs(value) <= sys.float_info.max
    if kind == "boolean":
        return isinstance(value, bool)
    return isinstance(value, dict)


def value_problem(expected: Expected, value: Any) -> bool:
    """True when ``value`` is not of the declared type (None, a cleared field, always fits)."""
    if value is None:
        return False
    if expected.whole:
        return not (isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_NUMBER)
    if any(_is_kind(value, kind, expected.max_text) for kind in expected.scalars):
        return False
    if expected.items and isinstance(value, list) and len(value) <= MAX_LIST:
        return not all(any(_is_kind(item, kind, expected.max_text) for kind in expected.items) for item in value)
    return True


def _id_key(component_id: Any) -> str | None:
    """The key of a component id: itself for text, ``{"type": ...}`` for a pattern-matching (dict) id."""
    if isinstance(component_id, str):
        return component_id
    if isinstance(component_id, dict) and isinstance(component_id.get("type"), str):
        return json.dumps({"type": component_id["type"]})
    return None


def _components(node: Any) -> Iterator[Any]:
    """Every component in a layout tree."""
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, list | tuple):
            stack.extend(item)
            continue
        if not hasattr(item, "_prop_names"):
            continue
        yield item
        for prop in item._prop_names:
            child = getattr(item, prop, None)
            if child is not None and (hasattr(child, "_prop_names") or isinstance(child, list | tuple)):
                stack.append(child)


#: Properties of one type on every component.
_COUNTS = {name: Expected(frozenset({"number"}), frozenset(), whole=True) for name in ("n_clicks", "n_intervals")}


class DeclaredInputs:
    """The component classes behind the app's ids, found once by walking its layouts (see the module's text)."""

    def __init__(self, layouts: Callable[[], Iterable[Any]]) -> None:
        self._layouts = layouts
        self._classes: dict[str, type | None] | None = None
        self._lock = threading.Lock()

    def classes(self) -> dict[str, type | None]:
        """Id key -> component class; None for an id that names components of different classes."""
        with self._lock:
            if self._classes is None:
                found: dict[str, type | None] = {}
                for layout in self._layouts():
                    for component in _components(layout):
                        key = _id_key(getattr(component, "id", None))
                        if key is not None:
                            known = found.setdefault(key, type(component))
                            if known is not type(component):
                                found[key] = None
                self._classes = found
            return self._classes

    def problem(self, component_id: Any, prop: str, value: Any) -> str | None:
        """Why ``value`` is not what the component behind ``component_id`` declares for ``prop`` (None when it is,
        or when the component or the property's type is not known)."""
        if prop == "id":  # a browser sends a component's own id
            return None if value == component_id else f"The callback's {_name(component_id)}.id must be its id."
        if value is None:
            return None
        key = _id_key(component_id)
        component = self.classes().get(key) if key is not None else None
        # A click or tick count is a whole number whatever the component (one a callback made is not walked).
        expected = declared_type(component, prop) if component is not None else _COUNTS.get(prop)
        if expected is None or not value_problem(expected, value):
            return None
        return f"The callback's {_name(component_id)}.{prop} must be {expected.describe()}."


def _name(component_id: Any) -> str:
    """A component id as a message shows it."""
    return str(component_id if isinstance(component_id, str) else json.dumps(component_id))[:80]
