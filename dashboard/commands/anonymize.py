"""``privdash anonymize``: the optimal generalization and record suppression meeting k / l / t / risk targets,
or the re-application of a saved recipe to a new file."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import pandas as pd

from dashboard.application.settings import Settings
from dashboard.core.data.tables import read_table_with_info, write_table
from dashboard.core.errors import ParameterError
from dashboard.core.search.lattice import SearchResult, optimal_generalization, suppression_budget
from dashboard.core.transform.hierarchy import load_hierarchies
from dashboard.core.transform.jobs import run_job_file
from dashboard.core.transform.steps import Recipe, TransformResult, apply_recipe
from dashboard.core.utility.metrics import Metric, information_loss

from ._common import format_table, print_json, split_columns


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "anonymize",
        help="generalize quasi-identifiers (optimal levels + record suppression) or re-apply a recipe",
        description="Find the generalization level of each quasi-identifier and the records to suppress that meet "
        "the targets (k, l, t, highest prosecutor risk) with the least information loss, searching the whole "
        "lattice of levels. Records of classes that violate the targets are removed when they number at most "
        "--max-suppression times the records. With --recipe, re-apply a saved recipe to FILE instead. With --config, "
        "run a batch job file: k-member microaggregation of the quasi-identifiers its data contract declares.",
    )
    parser.add_argument("file", type=Path, nargs="?", help="CSV (any delimiter), Excel or Parquet table")
    parser.add_argument(
        "--sheet", metavar="NAME", help="the sheet of an Excel workbook FILE to read (default: the first, with a note)"
    )
    parser.add_argument("--qi", help="quasi-identifier columns, comma-separated")
    parser.add_argument(
        "--hierarchies",
        type=Path,
        help="folder of ARX hierarchy CSV files, one per QI, named '<column>.csv' or '<name>_hierarchy_<column>.csv'",
    )
    parser.add_argument("--k", type=int, default=2, help="smallest class size (default 2)")
    parser.add_argument("--l", type=int, help="distinct l-diversity of each --sensitive column")
    parser.add_argument("--t", type=float, help="t-closeness (earth mover's distance <= t) of each --sensitive column")
    parser.add_argument(
        "--t-distance", choices=["equal", "ordered"], help="t-closeness ground distance (default: by column type)"
    )
    parser.add_argument("--sensitive", help="sensitive columns for --l and --t, comma-separated")
    parser.add_argument("--max-risk", type=float, help="highest prosecutor risk 1/f of any published record")
    parser.add_argument(
        "--max-suppression",
        "--suppression",
        dest="max_suppression",
        type=float,
        default=0.0,
        help="share of records that may be removed, 0..1 (default 0; --suppression is the old spelling)",
    )
    parser.add_argument(
        "--metric",
        default="loss",
        help="information loss to minimize: " + ", ".join(m.value for m in Metric) + " (default loss)",
    )
    parser.add_argument("-o", "--output", type=Path, help="write the anonymized table (.csv, .tsv or .parquet)")
    parser.add_argument("--save-recipe", type=Path, help="write the applied transformation as a JSON recipe")
    parser.add_argument("--recipe", type=Path, help="re-apply a saved JSON recipe to FILE instead of searching")
    parser.add_argument(
        "--config",
        type=Path,
        help="run a batch job: JSON with source.path, target.path, contract and "
        "aggregation_config.minimum_k_anonymity (paths relative to the job file)",
    )
    parser.add_argument(
        "--no-escape-formulas",
        dest="escape_formulas",
        action="store_false",
        help="write text cells that start with = + - @ as they are (default: prefix them with ' so that a "
        "spreadsheet shows them as text instead of running them as formulas)",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    if args.config is not None:
        return _run_job(args)
    if args.file is None:
        raise ParameterError("Give the table to anonymize (FILE), or a batch job with --config job.json.")
    inputs = [args.file]
    for path in (args.output, args.save_recipe):
        _refuse_overwrite(path, inputs + ([args.recipe] if args.recipe else []))
    if args.recipe is not None:
        return _run_recipe(args)
    qis = split_columns(args.qi)
    if not qis:
        raise ParameterError("Give the quasi-identifiers with --qi (comma-separated column names).")
    if args.hierarchies is None:
        raise ParameterError("Give the folder of hierarchy files with --hierarchies DIR.")
    data = _read_input(args)
    hierarchies = load_hierarchies(args.hierarchies, qis)
    started = time.perf_counter()
    result = optimal_generalization(
        data,
        hierarchies,
        quasi_identifiers=qis,
        k=args.k,
        l=args.l,
        t=args.t,
        sensitive=split_columns(args.sensitive),
        t_distance=args.t_distance,
        max_risk=args.max_risk,
        max_suppression=args.max_suppression,
        metric=args.metric,
    )
    seconds = time.perf_counter() - started
    metrics = information_loss(
        data, result.transform.data, hierarchies, quasi_identifiers=qis, kept_rows=result.transform.kept_rows
    )
    if args.output is not None:
        write_table(result.transform.data, args.output, overwrite_protect=inputs, escape_formulas=args.escape_formulas)
    if args.save_recipe is not None:
        Recipe((result.transform.step,)).save(args.save_recipe)
    if args.json:
        payload = result.summary()
        payload["metrics"] = {m.value: metrics.value(m) for m in Metric}
        payload["output"] = str(args.output) if args.output is not None else None
        payload["recipe"] = str(args.save_recipe) if args.save_recipe is not None else None
        print_json(payload)
        return 0
    _print_result(args, data, result, metrics.to_dict(), seconds)
    return 0


#: Options of the search that neither --recipe nor --config takes (argparse destinations).
_SEARCH_OPTIONS = ("qi", "hierarchies", "l", "t", "max_risk", "sensitive")


def _given(args: argparse.Namespace, destinations: tuple[str, ...]) -> list[str]:
    """The options among ``destinations`` that were given, as typed (``FILE`` for the positional argument)."""
    return [
        "FILE" if name == "file" else "--" + name.replace("_", "-")
        for name in destinations
        if getattr(args, name) is not None
    ]


def _read_input(args: argparse.Namespace) -> pd.DataFrame:
    """FILE (the --sheet of a workbook), with the reader's notes on stderr."""
    data, info = read_table_with_info(args.file, sheet=args.sheet)
    for note in info.notes:
        print(f"privdash anonymize: note: {note}", file=sys.stderr)
    return data


def _run_job(args: argparse.Namespace) -> int:
    other = _given(args, ("file", "sheet", *_SEARCH_OPTIONS, "output", "save_recipe", "recipe"))
    if other:
        raise ParameterError(
            f"--config runs the job file as written (source, target, contract, k); drop {', '.join(other)}."
        )
    result = run_job_file(args.config)
    if args.json:
        print_json(result.to_dict())
        return 0
    changed = ", ".join(f"{name} ({result.cells_changed[name]:,} cells)" for name in result.columns_changed) or "none"
    print(
        f"Microaggregated {result.rows:,} rows x {result.columns} columns of {result.source} into "
        f"{result.clusters:,} clusters: k = {result.k_achieved} (asked for {result.k_requested}) on "
        f"{', '.join(result.quasi_identifiers)}."
    )
    print(f"Columns changed: {changed}.")
    print(f"Wrote {result.target}.")
    return 0


def _refuse_overwrite(path: Path | None, inputs: list[Path]) -> None:
    if path is None:
        return
    for source in inputs:
        if path.resolve() == source.resolve():
            raise ParameterError(f"Refusing to overwrite the input file {source}; choose another output path.")


def _run_recipe(args: argparse.Namespace) -> int:
    search_options = _given(args, (*_SEARCH_OPTIONS, "save_recipe"))
    if search_options:
        raise ParameterError(
            f"--recipe re-applies a saved recipe; it cannot be combined with {', '.join(search_options)}."
        )
    recipe = Recipe.load(args.recipe)
    data = _read_input(args)
    # A pseudonymize step gets the key of PRIVDASH_PSEUDONYM_KEY; the recipe holds only its fingerprint.
    published, results = apply_recipe(data, recipe, secrets={"key": Settings.from_env().pseudonym_key})
    if args.output is not None:
        write_table(
            published, args.output, overwrite_protect=[args.file, args.recipe], escape_formulas=args.escape_formulas
        )
    steps = [_step_summary(r) for r in results]
    if args.json:
        print_json(
            {
                "recipe": str(args.recipe),
                "rows_in": len(data),
                "rows_out": len(published),
                "steps": steps,
                "output": str(args.output) if args.output is not None else None,
            }
        )
        return 0
    print(f"Applied {len(results)} step(s) of {args.recipe} to {args.file}: ", end="")
    print(f"{len(data):,} rows in, {len(published):,} out.")
    rows = [[s["kind"], s["rows_in"], s["rows_out"], _short(s["summary"])] for s in steps]
    if rows:
        print(format_table(["step", "rows in", "rows out", "summary"], rows, align="lrrl"))
    if args.output is not None:
        print(f"Wrote {len(published):,} rows to {args.output}.")
    else:
        print("No output written (use -o OUT).")
    return 0


def _step_summary(result: TransformResult) -> dict[str, Any]:
    kept = result.kept_rows
    rows_out = len(result.data)
    rows_in = rows_out if kept is None else int(result.summary.get("rows_in", rows_out))
    return {"kind": result.step.kind, "rows_in": rows_in, "rows_out": rows_out, "summary": dict(result.summary)}


def _short(summary: dict[str, Any]) -> str:
    parts = []
    for key, value in summary.items():
        if isinstance(value, dict):
            value = ", ".join(f"{k}={v}" for k, v in value.items())
        parts.append(f"{key}: {value}")
    return "; ".join(parts)


def _print_result(
    args: argparse.Namespace, data: pd.DataFrame, result: SearchResult, metrics: dict[str, Any], seconds: float
) -> None:
    n = len(data)
    budget = suppression_budget(result.max_suppression, n)
    print(f"{args.file}: {n:,} records; quasi-identifiers {', '.join(result.levels)}")
    print(
        f"Targets: {result.targets.describe()}; suppression limit {result.max_suppression:.2%} ({budget:,} records); "
        f"metric {result.metric.value}"
    )
    print()
    per_column = {row["column"]: row for row in metrics["per_column"]}
    rows = []
    for column, level in result.levels.items():
        example = result.transform.mapping
        shown = "unchanged"
        if example is not None and level > 0:
            sample = example[example["column"] == column].head(2)
            shown = ", ".join(f"{o} -> {p}" for o, p in zip(sample["original"], sample["published"], strict=True))
        rows.append([column, level, per_column[column]["loss"], shown])
    print(format_table(["column", "level", "loss", "examples"], rows, align="lrrl"))
    print()
    suppressed_share = result.suppressed / n if n else 0.0
    print(f"Suppressed records: {result.suppressed:,} ({suppressed_share:.2%})")
    print(f"{result.metric.value}: {result.value:.6g}")
    print(f"Smallest class: {result.k}; classes: {result.classes.n_classes:,}")
    others = ", ".join(f"{m.value} {metrics[m.value]:.6g}" for m in Metric if m != result.metric)
    print(f"Other metrics: {others}")
    print(f"Searched {result.nodes_checked:,} of {result.lattice_size:,} nodes in {seconds:.2f} s")
    if args.output is not None:
        print(f"Wrote {len(result.transform.data):,} rows to {args.output}.")
    if args.save_recipe is not None:
        print(f"Saved the recipe to {args.save_recipe}.")
