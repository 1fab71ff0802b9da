"""The steward's estimates on the Fix page and in the report: the text the steward writes, one estimate a line,
read into the core's :class:`~dashboard.core.utility.estimates.Estimate` objects, computed on a fix run's tables
(:func:`~dashboard.core.utility.estimates.compare_estimates`, weighted by the contract's weight column) and
worded for display. Nothing here imports Dash.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from dashboard.application.fixes import FixRun
from dashboard.core.errors import ParameterError
from dashboard.core.utility.estimates import (
    ConfidenceInterval,
    Estimate,
    EstimateComparison,
    compare_estimates,
    parse_estimate,
)

__all__ = [
    "EXAMPLES",
    "MAX_ESTIMATES",
    "MAX_TEXT",
    "fmt_estimate",
    "fmt_interval",
    "fmt_overlap",
    "read_estimates",
    "run_estimates",
]

#: Estimates one view may name, and the longest text the page accepts.
MAX_ESTIMATES = 20
MAX_TEXT = 4000
#: The syntax, shown beside the input.
EXAMPLES = (
    "mean:income by region",
    "total:income",
    "share:sex=Female by region",
    "crosstab:sex*race",
    "coef:income~age+sex",
)


def read_estimates(text: str | None) -> tuple[Estimate, ...]:
    """The estimates of ``text``, one a line (blank lines and lines starting with ``#`` are skipped); raises
    :class:`ParameterError` naming the line that cannot be read."""
    if not text:
        return ()
    if len(text) > MAX_TEXT:
        raise ParameterError(f"The estimates are longer than {MAX_TEXT:,} characters.")
    out = []
    for number, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        try:
            out.append(parse_estimate(line))
        except ParameterError as exc:
            raise ParameterError(f"Line {number} ({line!r}): {exc}") from None
    if len(out) > MAX_ESTIMATES:
        raise ParameterError(f"Name at most {MAX_ESTIMATES} estimates, not {len(out)}.")
    return tuple(out)


def run_estimates(run: FixRun, estimates: Sequence[Estimate | str]) -> tuple[EstimateComparison, ...]:
    """The estimates on the run's original and fixed tables, weighted by the contract's weight column."""
    if not estimates:
        return ()
    return compare_estimates(run.original, run.data, estimates, weights=run.base_contract.weight)


def fmt_estimate(value: float) -> str:
    """A value of an estimate: 4 significant digits, thousands separated (``12,345``, ``0.1411``, ``-2.19e-05``)."""
    if not math.isfinite(value):
        return "-"
    if value != 0 and (abs(value) >= 1e15 or abs(value) < 1e-4):
        return f"{value:.3e}"
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    return f"{value:.4g}"


def fmt_interval(interval: ConfidenceInterval | None) -> str:
    """``value [low, high]``, or ``-`` when not computable."""
    if interval is None:
        return "-"
    return f"{fmt_estimate(interval.value)} [{fmt_estimate(interval.low)}, {fmt_estimate(interval.high)}]"


def fmt_overlap(value: float | None) -> str:
    """The interval overlap with 2 decimals (``-`` when not computable)."""
    return "-" if value is None or not math.isfinite(value) else f"{value:.2f}"
