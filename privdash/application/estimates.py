"""The steward's estimates on the Fix page and in the report: the text the steward writes, one estimate a line,
read into the core's :class:`~privdash.utility.estimates.Estimate` objects, computed on a fix run's tables
(:func:`~privdash.utility.estimates.compare_estimates`, weighted by the contract's weight column) and
worded for display; and the same estimates on the published table of each solution of the list's last search
(:func:`run_solution_estimates`), for the solutions table. Nothing here imports Dash.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from privdash.application.fixes import FixError, FixRun
from privdash.errors import ParameterError
from privdash.search.solutions import SolutionEstimates, step_with_levels
from privdash.transform.steps import apply_recipe
from privdash.utility.estimates import (
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
    "printable_rows",
    "read_estimates",
    "run_estimates",
    "run_solution_estimates",
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


def run_solution_estimates(
    run: FixRun, estimates: Sequence[Estimate | str], *, key: str | None = None
) -> tuple[SolutionEstimates, ...]:
    """The estimates on the table each solution of the run's last search would publish, best solution first.

    The search is not run again: the table of solution ``n`` is the run's recipe with the search's ``generalize``
    step at that solution's levels (:func:`~privdash.search.solutions.step_with_levels`), the steps before it
    applied once and the steps after it re-applied on each; the published solution's table is the run's own.
    ``key`` is the pseudonymization key of the settings (a list that pseudonymizes re-applies that step). Raises
    :class:`FixError` when the list's last search is not a global one with solutions to compare.
    """
    found = None
    for index, (spec, result) in enumerate(zip(run.specs, run.results, strict=True)):
        summary = result.summary.get("search")
        if spec["kind"] == "search" and isinstance(summary, dict):
            found = (index, result.step, summary)
    if found is None or found[2].get("recoding") == "local" or len(found[2].get("solutions") or []) < 2:
        raise FixError("The step list has no least-lossy search with solutions to compare.")
    index, step, summary = found
    steps = [result.step for result in run.results]
    secrets = {"key": key}
    before = apply_recipe(run.original, steps[:index], secrets=secrets)[0] if index else run.original
    picked = int(summary.get("pick", 1))
    weights = run.base_contract.weight
    out = []
    for number, solution in enumerate(summary["solutions"], start=1):
        levels = {name: int(level) for name, level in solution["levels"].items()}
        if number == picked:
            published = run.data
        else:
            rest = (step_with_levels(step, levels), *steps[index + 1 :])
            published = apply_recipe(before, rest, secrets=secrets)[0]
        comparisons = compare_estimates(run.original, published, estimates, weights=weights)
        out.append(SolutionEstimates(number, levels, comparisons))
    return tuple(out)


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


def printable_rows(comparisons: Sequence[EstimateComparison], threshold: int) -> tuple[list[dict[str, str]], int]:
    """The rows of the comparisons as a report prints them (``estimate``, ``term``, ``before``, ``after``,
    ``overlap``, ``note``), and how many are withheld: a number about fewer than ``threshold`` records (a small
    group, category or cell) is not printed, as no value of a small class is."""
    rows, withheld = [], 0
    for comparison in comparisons:
        for row in comparison.rows:
            sizes = [side.records for side in (row.before, row.after) if side is not None]
            if any(0 < size < threshold for size in sizes):
                withheld += 1
                continue
            rows.append(
                {
                    "estimate": comparison.estimate.text(),
                    "term": row.term + (f" ({row.group})" if row.group else ""),
                    "before": fmt_interval(row.before),
                    "after": fmt_interval(row.after),
                    "overlap": fmt_overlap(row.overlap),
                    "note": row.note or "",
                }
            )
    return rows, withheld
