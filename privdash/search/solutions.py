"""The steward's estimates of each solution of a search, side by side.

:func:`~privdash.search.lattice.optimal_generalization` keeps the best few solutions
(:attr:`~privdash.search.lattice.SearchResult.solutions`) and publishes one. The published table of any other
solution is the result's own ``"generalize"`` step with that solution's levels (:func:`solution_step`): the same
hierarchies and the same suppression of the classes that violate the targets, applied by the core's step registry,
so no search is run again and the table is the one ``pick`` would publish. :func:`solution_estimates` computes the
steward's estimates (:func:`~privdash.utility.estimates.compare_estimates`) on the table of each solution,
against the original table, and :class:`SolutionEstimates` sums them up by the interval overlap (its mean and its
lowest over the numbers that are computable on both sides).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from privdash.errors import ParameterError
from privdash.search.lattice import SearchResult
from privdash.transform.steps import Step, TransformResult, apply_step
from privdash.utility.estimates import Estimate, EstimateComparison, compare_estimates

__all__ = [
    "SolutionEstimates",
    "overlap_summary",
    "solution_estimates",
    "solution_step",
    "solution_table",
    "step_with_levels",
]


def step_with_levels(step: Step, levels: Mapping[str, int]) -> Step:
    """A ``"generalize"`` step with the levels of the columns in ``levels`` changed (hierarchies, suppression and
    quasi-identifiers as they were)."""
    if step.kind != "generalize":
        raise ParameterError(f"Only a 'generalize' step has levels to change, not {step.kind!r}.")
    columns = {
        name: {**setting, "level": int(levels.get(name, setting["level"]))}
        for name, setting in step.params["columns"].items()
    }
    return Step("generalize", {**step.params, "columns": columns})


def solution_step(result: SearchResult, number: int) -> Step:
    """The ``"generalize"`` step that publishes solution ``number`` (1: the best) of ``result``: the result's own
    step with that solution's levels. Raises :class:`ParameterError` for a number outside the solutions."""
    if isinstance(number, bool) or not isinstance(number, int) or not 1 <= number <= len(result.solutions):
        raise ParameterError(f"The search kept {len(result.solutions)} solution(s); there is no solution {number!r}.")
    return step_with_levels(result.transform.step, result.solutions[number - 1].levels)


def solution_table(data: pd.DataFrame, result: SearchResult, number: int) -> TransformResult:
    """The published table of solution ``number`` of ``result``, found on ``data`` (a table of records, not an
    engine's aggregate): :func:`solution_step` applied to ``data``."""
    if number == result.pick:
        return result.transform
    return apply_step(data, solution_step(result, number))


@dataclass(frozen=True)
class SolutionEstimates:
    """The estimates of one solution: its number (1: the best), levels, the comparisons of its published table with
    the original, and the overlap summed up (:func:`overlap_summary`)."""

    number: int
    levels: Mapping[str, int]
    comparisons: tuple[EstimateComparison, ...]

    @property
    def mean_overlap(self) -> float | None:
        return overlap_summary(self.comparisons)[0]

    @property
    def lowest_overlap(self) -> float | None:
        return overlap_summary(self.comparisons)[1]

    @property
    def not_computable(self) -> int:
        """Numbers of the estimates that have a value before but none after (e.g. a category merged into a group)."""
        return sum(1 for c in self.comparisons for row in c.rows if row.before is not None and row.after is None)

    def to_dict(self) -> dict[str, Any]:
        return {
            "solution": self.number,
            "levels": dict(self.levels),
            "mean_overlap": self.mean_overlap,
            "lowest_overlap": self.lowest_overlap,
            "not_computable": self.not_computable,
            "estimates": [c.to_dict() for c in self.comparisons],
        }


def overlap_summary(comparisons: Sequence[EstimateComparison]) -> tuple[float | None, float | None]:
    """The mean and the lowest interval overlap over every number of ``comparisons`` that has one (None, None when
    none has)."""
    values = [
        float(row.overlap)
        for comparison in comparisons
        for row in comparison.rows
        if row.overlap is not None and math.isfinite(row.overlap)
    ]
    if not values:
        return None, None
    return sum(values) / len(values), min(values)


def solution_estimates(
    data: pd.DataFrame,
    result: SearchResult,
    estimates: Sequence[Estimate | str | Mapping[str, Any]],
    *,
    weights: str | None = None,
    level: float = 0.95,
) -> tuple[SolutionEstimates, ...]:
    """The estimates on the published table of each solution of ``result`` (found on ``data``), against ``data``,
    best solution first (:func:`~privdash.utility.estimates.compare_estimates` with ``weights`` and
    ``level``)."""
    if not result.solutions:
        raise ParameterError("The search result lists no solutions.")
    out = []
    for number, solution in enumerate(result.solutions, start=1):
        published = solution_table(data, result, number).data
        comparisons = compare_estimates(data, published, estimates, weights=weights, level=level)
        out.append(SolutionEstimates(number, dict(solution.levels), comparisons))
    return tuple(out)
