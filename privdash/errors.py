"""Exceptions and input validation shared by the core, the CLI and the dashboard.

Every error that a user can cause (a bad file, an unknown column, an impossible
parameter) is raised as a :class:`PrivdashError` subclass whose message says
what was wrong and how to fix it. The CLI prints the message and exits with a
non-zero status; the dashboard shows it on the page. Anything else escaping the
core is a bug.
"""

from __future__ import annotations

import math
import numbers
import sys
from collections.abc import Iterable, Sequence
from difflib import get_close_matches
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported where used: ``from privdash.errors import ParameterError`` loads no numpy or pandas
    import numpy as np
    import pandas as pd

__all__ = [
    "ColumnError",
    "ContractError",
    "DataReadError",
    "ParameterError",
    "PrivdashError",
    "ReadLimitError",
    "TooManyQuasiIdentifiersError",
    "check_columns",
    "check_counts",
    "check_finite",
    "check_fraction",
    "check_positive_int",
    "check_threshold",
]


class PrivdashError(ValueError):
    """Base class of every error caused by the user's input."""


class DataReadError(PrivdashError):
    """A file could not be read as a table (empty, binary, wrong format, too large ...)."""


class ReadLimitError(DataReadError):
    """A file is over a reading limit (rows, columns, cells, decompressed size or reading time).

    Attributes
    ----------
    limit
        The name of the limit (``max_rows``, ``max_columns``, ``max_cells``, ``max_decompressed_bytes``,
        ``max_seconds``: the fields of :class:`privdash.data.tables.ReadLimits`).
    found
        The value found (``None`` when reading stopped as soon as the limit was passed, before the total was known).
    maximum
        The limit's value.
    setting
        The name of the setting that controls the limit, when the caller gave one.
    """

    def __init__(
        self,
        message: str,
        *,
        limit: str = "",
        found: float | None = None,
        maximum: float | None = None,
        setting: str | None = None,
    ) -> None:
        super().__init__(message)
        self.limit = limit
        self.found = found
        self.maximum = maximum
        self.setting = setting

    def __reduce__(self) -> tuple[object, ...]:
        # Keyword-only attributes survive pickling (results and errors may cross process boundaries).
        return (_rebuild_read_limit_error, (str(self), self.limit, self.found, self.maximum, self.setting))


def _rebuild_read_limit_error(
    message: str, limit: str, found: float | None, maximum: float | None, setting: str | None
) -> ReadLimitError:
    return ReadLimitError(message, limit=limit, found=found, maximum=maximum, setting=setting)


class ColumnError(PrivdashError):
    """A column named by the user does not exist or cannot play the requested role."""


class ContractError(PrivdashError):
    """A data contract (column roles and types) is malformed or disagrees with the data."""


class ParameterError(PrivdashError):
    """A parameter is outside its valid range."""


class TooManyQuasiIdentifiersError(ParameterError):
    """An analysis over all subsets of the quasi-identifiers would be too large."""


def check_columns(
    data: pd.DataFrame, columns: Iterable[str], *, role: str = "column", allow_empty: bool = False
) -> tuple[str, ...]:
    """Return ``columns`` as a tuple after checking that each exists in ``data`` exactly once.

    Raises :class:`ColumnError` naming the missing columns and suggesting close matches.
    """
    names = tuple(columns)
    if not names and not allow_empty:
        raise ColumnError(f"No {role} given: choose at least one.")
    duplicated = sorted({name for name in names if names.count(name) > 1})
    if duplicated:
        raise ColumnError(f"{role.capitalize()} listed more than once: {', '.join(duplicated)}.")
    available = [str(c) for c in data.columns]
    missing = [name for name in names if name not in data.columns]
    if missing:
        hints = []
        for name in missing:
            close = get_close_matches(str(name), available, n=1)
            hints.append(f"'{name}'" + (f" (did you mean '{close[0]}'?)" if close else ""))
        shown = ", ".join(available[:12]) + (" ..." if len(available) > 12 else "")
        raise ColumnError(f"Unknown {role}: {', '.join(hints)}. Available columns: {shown}.")
    return names


def check_counts(data: pd.DataFrame, column: str) -> np.ndarray:
    """The record counts of an aggregate (one row per distinct combination, ``column`` records each) as int64;
    raises for a missing column or counts that are not whole numbers >= 0."""
    import numpy as np
    import pandas as pd

    check_columns(data, [column], role="count column")
    values = pd.to_numeric(data[column], errors="coerce")
    if values.isna().any() or (values < 0).any() or (values % 1 != 0).any():
        raise ParameterError(f"The count column '{column}' must hold whole numbers >= 0.")
    return values.to_numpy(dtype=np.int64)


def _shown(value: object) -> str:
    """``repr(value)`` for a message, shortened: a whole number of thousands of digits is described by its length
    (its repr would fill the message, or raise beyond Python's 4,300-digit conversion limit)."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 200:
        return f"a whole number of about {int(value.bit_length() * 0.30103)} digits"
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _is_bool(value: object) -> bool:
    """Whether ``value`` is a Python or a numpy boolean (a numpy one exists only once numpy is imported)."""
    numpy = sys.modules.get("numpy")
    return isinstance(value, bool) or (numpy is not None and isinstance(value, numpy.bool_))


def check_positive_int(value: object, name: str, *, minimum: int = 1) -> int:
    """Return ``value`` as an int, raising :class:`ParameterError` unless it is an integer >= ``minimum``."""
    # numbers.Real takes numpy scalars too; NaN and infinities are refused here rather than by int()'s
    # ValueError / OverflowError.
    whole = isinstance(value, numbers.Integral) or (
        isinstance(value, numbers.Real) and math.isfinite(value) and int(value) == value  # type: ignore[call-overload]
    )
    if _is_bool(value) or not whole:
        raise ParameterError(f"{name} must be a whole number, got {_shown(value)}.")
    if value < minimum:  # type: ignore[operator]
        raise ParameterError(f"{name} must be at least {minimum}, got {_shown(value)}.")
    return int(value)  # type: ignore[call-overload]


def check_finite(value: object, name: str, *, example: str | None = None) -> float:
    """Return ``value`` (a number, or text such as ``"1e-6"``) as a finite float, or raise :class:`ParameterError`
    naming ``name`` (and ``example`` of a valid value, when given)."""
    such_as = f" such as {example}" if example is not None else ""
    if isinstance(value, bool):
        raise ParameterError(f"{name} must be a number{such_as}, got {value!r}.")
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ParameterError(f"{name} must be a number{such_as}, got {value!r}.") from None
    except OverflowError:  # an int beyond the float range, e.g. 10**400
        raise ParameterError(f"{name} must be a finite number, got a number too large for a float.") from None
    if not math.isfinite(number):
        raise ParameterError(f"{name} must be a finite number, got {value!r}.")
    return number


def check_fraction(value: object, name: str, *, inclusive_zero: bool = True, inclusive_one: bool = True) -> float:
    """Return ``value`` as a float in [0, 1] (bounds as requested) or raise :class:`ParameterError`."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ParameterError(f"{name} must be a number between 0 and 1, got {value!r}.")
    number = float(value)
    low_ok = number > 0 or (inclusive_zero and number == 0)
    high_ok = number < 1 or (inclusive_one and number == 1)
    if not (low_ok and high_ok) or number != number:
        bounds = ("[" if inclusive_zero else "(") + "0, 1" + ("]" if inclusive_one else ")")
        raise ParameterError(f"{name} must lie in {bounds}, got {value!r}.")
    return number


def check_threshold(value: object, name: str) -> float:
    """Return a non-negative finite float or raise :class:`ParameterError`."""
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value:
        raise ParameterError(f"{name} must be a number, got {value!r}.")
    if value < 0 or value == float("inf"):
        raise ParameterError(f"{name} must be a finite number >= 0, got {value!r}.")
    return float(value)


def format_values(values: Sequence[object], limit: int = 5) -> str:
    """Render a few values for an error message: ``'a', 'b', 'c' and 4 more``."""
    shown = ", ".join(repr(v) for v in values[:limit])
    return shown + (f" and {len(values) - limit} more" if len(values) > limit else "")
