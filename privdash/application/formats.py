"""Numbers as the pages show them: counts with thousands separators, reals with a few decimals, shares as percents.

Plain functions over numbers (no Dash), so the application layer words its headlines and messages with them and
the page builders show the same text.
"""

from __future__ import annotations

import math
import re

__all__ = ["fmt_count", "fmt_number", "fmt_share", "in_people"]


def fmt_count(value: float | int | None) -> str:
    """A whole number with thousands separators (``-`` for None)."""
    if value is None:
        return "-"
    return f"{int(value):,}"


def fmt_number(value: float | int | None, digits: int = 3) -> str:
    """A real number with up to ``digits`` significant decimals; ``∞`` and ``-`` for inf / None / NaN."""
    if value is None:
        return "-"
    number = float(value)
    if math.isnan(number):
        return "-"
    if math.isinf(number):
        return "∞" if number > 0 else "-∞"
    if number == int(number) and abs(number) < 1e15:
        return f"{int(number):,}"
    return f"{number:,.{digits}f}".rstrip("0").rstrip(".")


def fmt_share(value: float | None, digits: int = 1) -> str:
    """A fraction in [0, 1] as a percentage."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return f"{100 * float(value):.{digits}f}%"


def in_people(text: str) -> str:
    """A sentence of the core (the verdict, a target's reason) that says "records", said of people: with a person
    id the records the diagnosis counts are people (the report, ``privdash`` and the pages' verdict say it so)."""
    text = re.sub(r"\brecords\b", "people", text)
    text = re.sub(r"\brecord's\b", "person's", text)
    return re.sub(r"\brecord\b", "person", text)
