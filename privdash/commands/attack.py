"""``privdash attack``: measured linkage, singling-out and attribute-inference attacks on a release.

The original table holds the targets; the released table is what was published (privdash's own fix, a perturbed
table or a synthetic one). Each attack's success rate is printed with its 95% interval, its baseline (the control
records of ``--control``, else the baseline guess named) and the risk the models predict. See docs/attacks.md.

Released values that match no original value (labels of a hierarchy not given with ``--hierarchies`` or
``--recipe``) make the command refuse with exit code 2, naming the columns and values: the attacks could not be
measured, and a rate of 0% would say otherwise. ``--allow-unmatched`` declares that such values stand for no one (a
synthetic release's new categories); the output then lists them.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from privdash.attack import AttackReport, AttackResult, UnmatchedValuesError, attack_release
from privdash.commands._common import format_table, print_json, split_columns
from privdash.data.tables import read_table
from privdash.errors import ParameterError
from privdash.transform.hierarchy import Hierarchy, HierarchyError, load_hierarchies
from privdash.transform.steps import Recipe


def _hierarchies(folder: Path, columns: list[str]) -> dict[str, Hierarchy]:
    """The hierarchy files found in ``folder`` for ``columns`` (a column without a file is left out)."""
    if not folder.is_dir():
        raise HierarchyError(f"Hierarchy folder not found: {folder}.")
    found: dict[str, Hierarchy] = {}
    for column in columns:
        try:
            found.update(load_hierarchies(folder, [column]))
        except HierarchyError as error:
            if not str(error).startswith("No hierarchy file"):
                raise
    return found


def run(args: argparse.Namespace) -> int:
    if args.n_targets is not None and args.n_targets <= 0:
        raise ParameterError(f"--n-targets must be a whole number >= 1, got {args.n_targets}.")
    if args.seed < 0:
        raise ParameterError(f"--seed must be a whole number >= 0, got {args.seed}.")
    qis = split_columns(args.qi)
    if not qis:
        raise ParameterError("--qi needs at least one quasi-identifier column.")
    original = read_table(args.original)
    released = read_table(args.released)
    control = read_table(args.control) if args.control is not None else None
    columns = [*qis, *([args.sensitive] if args.sensitive else [])]
    hierarchies = _hierarchies(args.hierarchies, columns) if args.hierarchies is not None else None
    recipe = Recipe.load(args.recipe) if args.recipe is not None else None
    try:
        report = attack_release(
            original,
            released,
            qis,
            sensitive=args.sensitive,
            control=control,
            hierarchies=hierarchies,
            recipe=recipe,
            n_targets=args.n_targets,
            seed=args.seed,
            allow_unmatched=args.allow_unmatched,
        )
    except UnmatchedValuesError as error:
        raise UnmatchedValuesError(
            f"the attacks cannot be measured: released values match no original value in {error.listing}. Give "
            "the hierarchies that made these labels (--hierarchies DIR) or the recipe (--recipe FILE); if they are "
            "new values that stand for no one (a synthetic release), add --allow-unmatched.",
            error.unmatched,
        ) from None
    if args.json:
        for line in unmatched_notes(report):  # the JSON lists them under "unmatched"; the text output prints them
            print(f"privdash attack: note: {line}", file=sys.stderr)
        print_json(report.to_dict())
    else:
        print(render_text(report, Path(args.released).name))
    return 0


def unmatched_notes(report: AttackReport) -> list[str]:
    """One line per column whose released values match no original value and were allowed to stand for no one."""
    return [
        f"{report.matching[column]['unmatched']:,} released value(s) of '{column}' match no original value and "
        f"count as standing for no one (--allow-unmatched): {', '.join(repr(v) for v in examples[:3])}"
        + (" ..." if report.matching[column]["unmatched"] > 3 else "")
        for column, examples in report.unmatched.items()
    ]


def _percent(value: float) -> str:
    return f"{100 * value:.2f}%"


def _row(result: AttackResult | None, name: str, predicted: str) -> list[Any]:
    if result is None:
        return [name, "-", "-", "-", "-", "-"]
    risk = "-" if result.risk is None else f"{_percent(result.risk[0])} [{_percent(result.risk[1])}, "
    risk += "" if result.risk is None else f"{_percent(result.risk[2])}]"
    return [
        name,
        f"{_percent(result.targets.rate)} [{_percent(result.targets.ci_low)}, {_percent(result.targets.ci_high)}]",
        f"{_percent(result.baseline.rate)} ({result.baseline_kind})",
        risk,
        predicted,
        f"{result.targets.n:,}",
    ]


def render_text(report: AttackReport, name: str) -> str:
    """The report as a plain-text table."""
    predicted = report.predicted
    rows = [
        _row(
            report.linkage,
            "linkage",
            f"prosecutor average {_percent(predicted['prosecutor_average'])}, "
            f"highest {_percent(predicted['prosecutor_highest'])}",
        ),
        _row(report.singling_out, "singling out", f"sample uniques {_percent(predicted['sample_unique_share'])}"),
        _row(
            report.inference,
            f"inference ({report.sensitive})" if report.sensitive else "inference",
            f"majority share {_percent(predicted['majority_share'])}" if "majority_share" in predicted else "-",
        ),
    ]
    head = (
        f"{name}: {report.rows_released:,} released rows attacked with {report.rows_original:,} original records"
        + (f" and {report.rows_control:,} control records" if report.rows_control is not None else "")
        + f"; quasi-identifiers {', '.join(report.quasi_identifiers)}; {report.seconds:.2f} s"
    )
    table = format_table(
        ["attack", "success [95% CI]", "baseline", "risk beyond baseline", "predicted", "targets"], rows
    )
    notes = "".join(f"\nNote: {line}." for line in unmatched_notes(report))
    return f"{head}\n\n{table}" + (f"\n{notes}" if notes else "")
