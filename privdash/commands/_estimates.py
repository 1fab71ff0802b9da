"""``--estimate`` and ``--weights`` of ``privdash anonymize``: the steward's estimates before and after the fix.

Each ``--estimate`` is the text form of :func:`~privdash.utility.estimates.parse_estimate`
(``mean:income by region``, ``share:sex=Female``, ``crosstab:sex*race``, ``coef:income~age+sex``); the output
gives each number before and after with its 95% interval and Karr et al.'s interval overlap (docs/definitions.md).
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Sequence

import pandas as pd

from privdash.errors import ParameterError, check_columns
from privdash.utility.estimates import (
    ConfidenceInterval,
    Estimate,
    EstimateComparison,
    compare_estimates,
    parse_estimate,
)

from ._common import format_table

__all__ = [
    "check_estimates",
    "estimates_payload",
    "interval_text",
    "overlap_text",
    "print_estimates",
    "run_estimates",
]


def check_estimates(args: argparse.Namespace, data: pd.DataFrame) -> list[Estimate]:
    """The ``--estimate`` specs, read and checked against the input's columns before anything long runs."""
    specs = [parse_estimate(text) for text in args.estimate or []]
    if args.weights is not None and not specs and getattr(args, "targets", None) is None:
        raise ParameterError(
            "--weights weighs the estimates or the --targets: add at least one --estimate or --targets."
        )
    for spec in specs:
        check_columns(data, spec.columns, role="column")
    if args.weights is not None:
        check_columns(data, [args.weights], role="weight column")
    return specs


def run_estimates(
    args: argparse.Namespace, specs: Sequence[Estimate], original: pd.DataFrame, published: pd.DataFrame
) -> tuple[EstimateComparison, ...]:
    """The estimates on the input and on the published table (none without ``--estimate``)."""
    if not specs:
        return ()
    return compare_estimates(original, published, specs, weights=args.weights)


def estimates_payload(comparisons: Sequence[EstimateComparison]) -> list[dict[str, object]]:
    """The ``estimates`` list of ``--json``."""
    return [comparison.to_dict() for comparison in comparisons]


def interval_text(interval: ConfidenceInterval | None) -> str:
    """``value [low, high]`` (6 significant digits), ``-`` when not computable."""
    if interval is None:
        return "-"
    return f"{interval.value:.6g} [{interval.low:.6g}, {interval.high:.6g}]"


def overlap_text(value: float | None) -> str:
    """The interval overlap with 3 decimals, ``-`` when not computable."""
    return "-" if value is None or not math.isfinite(value) else f"{value:.3f}"


def print_estimates(comparisons: Sequence[EstimateComparison]) -> None:
    """Each estimate before and after, with its interval and the overlap, then how "after" was computed."""
    if not comparisons:
        return
    weights = comparisons[0].weights
    level = comparisons[0].level
    print()
    print(
        f"Estimates before and after ({level:.0%} intervals"
        + (f", weighted by {weights}" if weights else ", unweighted")
        + "; overlap of the intervals, Karr et al. 2006: 1 = the same, 0 = disjoint):"
    )
    rows = []
    for comparison in comparisons:
        for row in comparison.rows:
            rows.append(
                [
                    comparison.estimate.text(),
                    row.term + (f" | {row.group}" if row.group else ""),
                    interval_text(row.before),
                    interval_text(row.after),
                    overlap_text(row.overlap),
                    row.note or "",
                ]
            )
    print(format_table(["estimate", "of", "before [CI]", "after [CI]", "overlap", "note"], rows, align="llllrl"))
    notes = list(dict.fromkeys(note for comparison in comparisons for note in comparison.notes))
    for note in notes:
        print(f"  note: {note}")
