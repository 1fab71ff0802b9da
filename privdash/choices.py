"""Closed sets of named options (policies, metrics, strategies ...), parsed from user text in one way.

Every option set of the core is a :class:`Choice`: a ``StrEnum`` whose :meth:`Choice.parse` accepts a member or
its text in any case, with surrounding spaces, ``_`` or ``-`` alike, and optional aliases; anything else raises a
:class:`~privdash.errors.ParameterError` that names the option set, lists the valid values and suggests the
closest one ("did you mean").
"""

from __future__ import annotations

from collections.abc import Mapping
from difflib import get_close_matches
from enum import StrEnum
from typing import Any, ClassVar, Self

from privdash.errors import ParameterError

__all__ = ["Choice"]


def _normal(text: str) -> str:
    return text.strip().casefold().replace("-", "_")


class Choice(StrEnum):
    """A ``StrEnum`` with one parser. Subclasses name themselves: ``class Metric(Choice, label="metric")``."""

    _label: ClassVar[str]
    _aliases: ClassVar[Mapping[str, str]]

    def __init_subclass__(cls, *, label: str = "option", aliases: Mapping[str, str] | None = None, **kw: Any) -> None:
        super().__init_subclass__(**kw)
        cls._label = label
        cls._aliases = {_normal(k): v for k, v in (aliases or {}).items()}

    @classmethod
    def parse(cls, value: str | Self) -> Self:
        """The member named by ``value``; raises :class:`ParameterError` with the valid values."""
        if isinstance(value, cls):
            return value
        text = _normal(str(value))
        text = _normal(cls._aliases.get(text, text))
        for member in cls:
            if _normal(member.value) == text:
                return member
        values = [member.value for member in cls]
        close = get_close_matches(text, [_normal(v) for v in values], n=1)
        hint = f" Did you mean '{values[[_normal(v) for v in values].index(close[0])]}'?" if close else ""
        raise ParameterError(f"Unknown {cls._label} {str(value)!r}; use one of {', '.join(values)}.{hint}")
