"""One place that turns a raw parameter value into a checked one, in the style of scikit-learn's
``sklearn.utils._param_validation``: a parameter is described by a *constraint* (an object), and
:func:`check_param` either returns the value in its canonical form or raises a :class:`~privdash.errors.ParameterError`
(or the error class the caller names) whose message says what the parameter must be and what was given.

Constraints::

    Interval(int, 1, None, closed="left")     a whole number >= 1 (a float without a fraction is taken: 5.0 -> 5)
    Interval(float, 0, 1, closed="both")      a finite number in [0, 1]
    Interval(float, 0, None, closed="neither") a finite number > 0
    StrOptions({"global", "local"})           one of the texts
    Boolean()                                 true or false
    Text()                                    a text
    Columns(role="quasi_identifier")          a list of distinct column names (of that role, when the caller gives
                                              the table's roles), at least ``min_items`` of them
    Column()                                  one column name
    Mapping()                                 an object (checked further by its owner)

A value may come from a form or a command line as text (``"5"``, ``"0.05"``, ``"true"``): ``check_param(...,
text=True)`` parses it first. ``None`` is accepted only when the caller says so (``optional=True``).

Messages are plain and name the parameter by the label the caller gives (``"The suppression limit"``); they never
hold UI markup, so the CLI and the web app show the same sentence.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Collection, Iterable
from collections.abc import Mapping as MappingABC
from dataclasses import dataclass, field
from typing import Any

from privdash.errors import ParameterError, PrivdashError

__all__ = [
    "Boolean",
    "Column",
    "Columns",
    "Constraint",
    "Interval",
    "Mapping",
    "StrOptions",
    "Text",
    "check_param",
    "parse_text",
]


def _shown(value: Any) -> str:
    """``repr(value)`` for a message, shortened (a long text or a number of many digits)."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 200:
        return f"a whole number of about {int(value.bit_length() * 0.30103)} digits"
    text = repr(value)
    return text if len(text) <= 60 else text[:40] + " ... " + text[-10:]


def _number(value: Any) -> float | None:
    """``value`` as a float when it is a real number (not true/false), else None; an int beyond the float range is
    infinite."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return None
    try:
        return float(value)
    except OverflowError:
        return math.inf


def _fmt(bound: float) -> str:
    return f"{bound:,}" if float(bound).is_integer() and abs(bound) < 1e15 else f"{bound:g}"


class Constraint:
    """A rule a parameter's value must follow (subclasses below). :meth:`check` returns the canonical value or
    raises ``error`` with ``name`` in the message; :meth:`describe` says in words what is accepted."""

    def check(self, value: Any, name: str, error: type[PrivdashError]) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    def describe(self) -> str:  # pragma: no cover - abstract
        raise NotImplementedError

    def parse(self, text: str) -> Any:
        """The value a text stands for (form fields, command-line settings); the text itself by default."""
        return text


@dataclass(frozen=True)
class Interval(Constraint):
    """A number of type ``kind`` (``int``: whole numbers; ``float``: finite real numbers) between ``left`` and
    ``right`` (None: unbounded), the bounds included as ``closed`` says (``"both"``, ``"left"``, ``"right"``,
    ``"neither"``)."""

    kind: type
    left: float | None
    right: float | None
    closed: str = "both"

    def __post_init__(self) -> None:
        if self.kind not in (int, float):
            raise TypeError("Interval kind must be int or float")
        if self.closed not in ("both", "left", "right", "neither"):
            raise ValueError(f"closed must be both, left, right or neither, got {self.closed!r}")
        if self.left is not None and self.right is not None and self.left > self.right:
            raise ValueError("Interval left bound above its right bound")

    def contains(self, number: float) -> bool:
        low_closed = self.closed in ("both", "left")
        high_closed = self.closed in ("both", "right")
        if self.left is not None and (number < self.left or (number == self.left and not low_closed)):
            return False
        return not (self.right is not None and (number > self.right or (number == self.right and not high_closed)))

    def describe(self) -> str:
        what = "a whole number" if self.kind is int else "a number"
        low_closed = self.closed in ("both", "left")
        high_closed = self.closed in ("both", "right")
        if self.left is not None and self.right is not None:
            if low_closed and high_closed:
                return f"{what} between {_fmt(self.left)} and {_fmt(self.right)}"
            low = ("at least " if low_closed else "above ") + _fmt(self.left)
            high = ("at most " if high_closed else "below ") + _fmt(self.right)
            return f"{what} {low} and {high}"
        if self.left is not None:
            return f"{what} of at least {_fmt(self.left)}" if low_closed else f"{what} above {_fmt(self.left)}"
        if self.right is not None:
            return f"{what} of at most {_fmt(self.right)}" if high_closed else f"{what} below {_fmt(self.right)}"
        return what

    def check(self, value: Any, name: str, error: type[PrivdashError]) -> int | float:
        finite = "a whole number" if self.kind is int else "a finite number"
        if isinstance(value, str):  # a text that is no number, or not a finite one (see parse)
            try:
                infinite = not math.isfinite(float(value))
            except ValueError:
                infinite = False
            raise error(f"{name} must be {finite if infinite else self.describe()}, got {_shown(value)}.")
        if isinstance(value, numbers.Integral) and not isinstance(value, bool) and abs(int(value)) > 2**1023:
            raise error(f"{name} must be {finite}, got a number too large for a float.")
        number = _number(value)
        if number is None:
            raise error(f"{name} must be {self.describe()}, got {_shown(value)}.")
        if not math.isfinite(number):
            raise error(f"{name} must be {finite}, got {_shown(value)}.")
        if self.kind is int and not number.is_integer():
            raise error(f"{name} must be a whole number, got {_shown(value)}.")
        if not self.contains(number):
            raise error(f"{name} must be {self.describe()}, got {_shown(value)}.")
        if self.kind is int:
            return int(value) if isinstance(value, numbers.Integral) else int(number)
        return number

    def parse(self, text: str) -> Any:
        stripped = text.strip().replace(",", "")
        if not stripped:
            return None
        try:
            number = float(stripped)
        except ValueError:
            return text  # refused by check() with the usual message
        if not math.isfinite(number):
            return text  # "nan", "1e999": refused by check(), naming the text
        written_whole = "." not in stripped and "e" not in stripped.lower()
        whole = number.is_integer() and abs(number) < 2**63 and (self.kind is int or written_whole)
        return int(number) if whole else number


@dataclass(frozen=True)
class StrOptions(Constraint):
    """One of ``options`` (texts); ``deprecated`` maps old spellings to the option they now are."""

    options: Collection[str]
    deprecated: MappingABC[str, str] = field(default_factory=dict)

    def describe(self) -> str:
        return "one of " + ", ".join(repr(o) for o in self.options)

    def check(self, value: Any, name: str, error: type[PrivdashError]) -> str:
        if isinstance(value, str) and value in self.deprecated:
            value = self.deprecated[value]
        if not isinstance(value, str) or value not in self.options:
            raise error(f"{name} must be {self.describe()}, got {_shown(value)}.")
        return value

    def parse(self, text: str) -> Any:
        return text.strip()


@dataclass(frozen=True)
class Boolean(Constraint):
    """True or false (``0``/``1`` taken too, and from text ``true``/``false``/``yes``/``no``)."""

    def describe(self) -> str:
        return "true or false"

    def check(self, value: Any, name: str, error: type[PrivdashError]) -> bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, numbers.Integral) and value in (0, 1):
            return bool(value)
        raise error(f"{name} must be {self.describe()}, got {_shown(value)}.")

    def parse(self, text: str) -> Any:
        lowered = text.strip().lower()
        if lowered in ("true", "yes", "on", "1"):
            return True
        if lowered in ("false", "no", "off", "0", ""):
            return False
        return text


@dataclass(frozen=True)
class Text(Constraint):
    """A text (at most ``max_length`` characters)."""

    max_length: int = 1_000

    def describe(self) -> str:
        return "a text"

    def check(self, value: Any, name: str, error: type[PrivdashError]) -> str:
        if not isinstance(value, str):
            raise error(f"{name} must be {self.describe()}, got {_shown(value)}.")
        if len(value) > self.max_length:
            raise error(f"{name} must be at most {self.max_length:,} characters long, got {len(value):,}.")
        return value


@dataclass(frozen=True)
class Column(Constraint):
    """One column name; ``role`` (a :class:`~privdash.data.contract.ColumnRole` value) says which columns a form
    offers first, ``numeric`` that only numerical columns are offered."""

    role: str | None = None
    numeric: bool = False

    def describe(self) -> str:
        return "a column name"

    def check(self, value: Any, name: str, error: type[PrivdashError]) -> str:
        if not isinstance(value, str) or not value:
            raise error(f"{name} must be {self.describe()}, got {_shown(value)}.")
        return value

    def parse(self, text: str) -> Any:
        return text.strip()


@dataclass(frozen=True)
class Columns(Constraint):
    """A list of distinct column names, at least ``min_items`` of them; ``role`` as in :class:`Column`."""

    role: str | None = None
    min_items: int = 1

    def describe(self) -> str:
        return "a list of column names"

    def check(self, value: Any, name: str, error: type[PrivdashError]) -> list[str]:
        if isinstance(value, tuple):
            value = list(value)
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise error(f"{name} must be {self.describe()}, got {_shown(value)}.")
        if len(value) < self.min_items:
            count = "one column" if self.min_items == 1 else f"{self.min_items} columns"
            raise error(f"Choose at least {count} ({name}).")
        repeated = sorted({v for v in value if value.count(v) > 1})
        if repeated:
            raise error(f"{name} lists a column more than once: {', '.join(repeated)}.")
        return list(value)

    def parse(self, text: str) -> Any:
        return [part.strip() for part in text.split(",") if part.strip()]


@dataclass(frozen=True)
class Mapping(Constraint):
    """An object (its keys and values are checked by the parameter's owner)."""

    def describe(self) -> str:
        return "an object"

    def check(self, value: Any, name: str, error: type[PrivdashError]) -> dict[str, Any]:
        if not isinstance(value, MappingABC):
            raise error(f"{name} must be {self.describe()}, got {_shown(value)}.")
        return dict(value)


def parse_text(text: str, constraint: Constraint) -> Any:
    """The value ``text`` stands for under ``constraint`` (``"5"`` -> 5 for a whole number, ``"a,b"`` -> a list of
    columns); a text that does not parse is returned as it is, so :func:`check_param` refuses it with its message."""
    return constraint.parse(text)


def _lowered(name: str) -> str:
    """``The level`` -> ``the level``; ``QI`` and ``k`` stay as they are."""
    return name[:1].lower() + name[1:] if name[1:2].islower() else name


def check_param(
    value: Any,
    constraint: Constraint | Iterable[Constraint],
    name: str,
    *,
    optional: bool = False,
    text: bool = False,
    error: type[PrivdashError] = ParameterError,
) -> Any:
    """``value`` checked against ``constraint`` (or the first of several that accepts it) and in canonical form.

    ``name`` starts the message (``"k"``, ``"The suppression limit"``); ``optional`` lets None (and, with ``text``,
    an empty text) through as None; ``text`` parses a text first (:func:`parse_text`); ``error`` is the class raised
    (a :class:`~privdash.errors.ParameterError` unless the caller has its own, e.g. a link's ``StateError``).
    """
    constraints = [constraint] if isinstance(constraint, Constraint) else list(constraint)
    if text and isinstance(value, str):
        blank = not value.strip() and not isinstance(constraints[0], Text)
        value = None if blank else constraints[0].parse(value)
    if value is None:
        if optional:
            return None
        raise error(f"Give {_lowered(name)}.")
    first: PrivdashError | None = None
    for item in constraints:
        try:
            return item.check(value, name, error)
        except PrivdashError as exc:
            first = first or exc
    assert first is not None
    raise first
