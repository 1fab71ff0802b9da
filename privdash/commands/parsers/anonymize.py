"""The parser of ``privdash anonymize``."""

from __future__ import annotations

import argparse
from pathlib import Path

from privdash.constants import (
    AUTO_FIX_DUCKDB_BYTES,
    DEFAULT_MAX_CHECKS,
    DEFAULT_MAX_NODES,
    DEFAULT_MAX_PEOPLE_NODES,
    DEFAULT_MAX_SUPPRESSION,
    FIX_TECHNIQUES,
    RECODING_CHOICES,
    SEARCH_STRATEGIES,
    Engine,
    Metric,
)

from ._actions import OldSpelling, add_project_argument


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "anonymize",
        help="generalize quasi-identifiers (optimal levels + record suppression) or re-apply a recipe",
        description="Find the generalization level of each quasi-identifier and the records to suppress that meet "
        "the targets (k, l, t, highest prosecutor risk) with the least information loss, searching the whole "
        "lattice of levels. Records of classes that violate the targets are removed when they number at most "
        "--max-suppression times the records. With --recipe, re-apply a saved recipe to FILE instead. With --config, "
        "run a batch job file: k-member microaggregation of the quasi-identifiers its data contract declares. With "
        "--step, apply fix techniques in order, as the Fix page's steps.",
    )
    parser.add_argument(
        "file", type=Path, nargs="?", help="CSV (any delimiter), Excel, Parquet, SPSS, Stata or SAS table"
    )
    parser.add_argument(
        "--sheet", metavar="NAME", help="the sheet of an Excel workbook FILE to read (default: the first, with a note)"
    )
    parser.add_argument("--qi", help="quasi-identifier columns, comma-separated")
    parser.add_argument(
        "--hierarchies",
        type=Path,
        help="folder of ARX hierarchy CSV files, one per QI, named '<column>.csv' or '<name>_hierarchy_<column>.csv' "
        "(default: the dashboard's hierarchy for each column's inferred type: intervals of widths chosen for the "
        "column's range with top and bottom codes for numbers, code prefixes for structured codes, categories "
        "grouped by frequency, rarest first, for other text, month / quarter / year for dates, sector / district / "
        "area for postcodes; see docs/definitions.md, Default hierarchies)",
    )
    parser.add_argument("--k", type=int, help="smallest class size (default 2, or the k of --targets, else 1 there)")
    parser.add_argument("--l", type=int, help="distinct l-diversity of each --sensitive column")
    parser.add_argument("--t", type=float, help="t-closeness (earth mover's distance <= t) of each --sensitive column")
    parser.add_argument(
        "--t-distance", choices=["equal", "ordered"], help="t-closeness ground distance (default: by column type)"
    )
    parser.add_argument("--sensitive", help="sensitive columns for --l and --t, comma-separated")
    parser.add_argument("--max-risk", type=float, help="highest prosecutor risk 1/f of any published record")
    parser.add_argument(
        "--targets",
        help="release targets, as privdash diagnose --targets: k, l, t, max_risk and global_risk (ER/n), "
        "average_risk, k_map, delta_presence, population_uniques (population_uniques_estimator=dankar|pitman|zayatz|"
        "snb), household_risk (with --household), e.g. global_risk=0.001; k is 1 unless given. Global risks are "
        "judged on the records published, suppressing the riskiest classes first",
    )
    parser.add_argument(
        "--population-size",
        type=float,
        help="population size N for k_map, delta_presence and population_uniques (F_j = f_j N / n)",
    )
    parser.add_argument(
        "--sampling-fraction", type=float, help="sampling fraction pi = n/N, instead of --population-size"
    )
    parser.add_argument(
        "--household",
        metavar="COL",
        help="household-id column: reports the household risk (the probability that at least one member of a "
        "household is re-identified, sdcMicro measure_risk hid=) of the input and of the published table, and is "
        "the household of the --targets household_risk (a missing id: a household of its own); with --recipe, name "
        "the quasi-identifiers with --qi",
    )
    parser.add_argument(
        "--max-suppression",
        "--suppression",
        dest="max_suppression",
        type=float,
        action=OldSpelling,
        old=["--suppression"],
        default=DEFAULT_MAX_SUPPRESSION,
        help=f"share of records that may be removed, 0..1 (default {DEFAULT_MAX_SUPPRESSION:g}; --suppression is the "
        "old spelling)",
    )
    parser.add_argument(
        "--search",
        choices=list(SEARCH_STRATEGIES),
        help="exact: every node of the lattice (with pruning), refused beyond "
        f"{DEFAULT_MAX_NODES:,} nodes; heuristic: best-first from the least general levels with a limit of checked "
        "nodes (--max-checks), for many quasi-identifiers; auto (default): exact up to the node limit, heuristic "
        "beyond",
    )
    parser.add_argument(
        "--max-checks",
        type=int,
        help=f"nodes the heuristic search checks at most (default {DEFAULT_MAX_CHECKS:,})",
    )
    parser.add_argument(
        "--compare-exact",
        action="store_true",
        help="after a heuristic search, also run the exact one (when the lattice is within its limit) and report how "
        "far the heuristic's loss is from the optimum",
    )
    parser.add_argument(
        "--solutions",
        type=int,
        help="list the best N solutions meeting the targets (levels, loss, records removed, risk; the frontier of "
        "loss against risk and suppression marked; with --estimate, each solution's estimates: value after and "
        "interval overlap); the first is the one applied",
    )
    parser.add_argument(
        "--pick",
        type=int,
        help="apply the N-th best solution instead of the best (see --solutions)",
    )
    parser.add_argument(
        "--metric",
        default="loss",
        help="information loss to minimize: " + ", ".join(m.value for m in Metric) + " (default loss)",
    )
    parser.add_argument(
        "--recoding",
        choices=list(RECODING_CHOICES),
        help="global (default): each quasi-identifier at one level for all records; local: levels may differ between "
        "groups of records (top-down specialization over the hierarchies, starting from the most general levels and "
        "from the global optimum; the published classes meet the targets as published)",
    )
    parser.add_argument("-o", "--output", type=Path, help="write the anonymized table (.csv, .tsv or .parquet)")
    parser.add_argument("--save-recipe", type=Path, help="write the applied transformation as a JSON recipe")
    parser.add_argument("--recipe", type=Path, help="re-apply a saved JSON recipe to FILE instead of searching")
    parser.add_argument(
        "--strict",
        action="store_true",
        help="with --recipe: fail (exit 1, no output written) instead of warning when the recipe removes more "
        "records than the suppression limit it was made with",
    )
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
    parser.add_argument(
        "--engine",
        choices=[Engine.PANDAS.value, Engine.DUCKDB.value, Engine.AUTO.value],
        default=Engine.AUTO.value,
        help="pandas: the table in memory; duckdb: out of core (the search runs on the per-class aggregate, the "
        "fix is streamed in batches to -o, which is then required); auto (default): duckdb for Parquet datasets and "
        f"files over {AUTO_FIX_DUCKDB_BYTES // 2**20} MiB",
    )
    parser.add_argument("--memory-limit", help="memory DuckDB may use before it spills to disk, e.g. 4GB")
    parser.add_argument("--temp-dir", type=Path, help="folder DuckDB spills to (default: its own)")
    parser.add_argument(
        "--batch-rows", type=int, default=1_000_000, help="rows per batch when streaming (default 1,000,000)"
    )
    parser.add_argument(
        "--entity",
        metavar="COL",
        help="person-id column when a person has several rows: the generalization is applied to the rows, the "
        "targets are judged on people (a person's key is all their QI tuples) and suppression removes whole "
        "people; the suppression limit is a share of the people (exact search over lattices of at most "
        f"{DEFAULT_MAX_PEOPLE_NODES:,} nodes, in memory)",
    )
    parser.add_argument(
        "--entity-key",
        choices=["set", "multiset"],
        default="set",
        help="with --entity: a person's key is the set of their distinct QI tuples (default), or the multiset",
    )
    _estimate_arguments(parser)
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    add_project_argument(parser)
    parser.add_argument(
        "--step",
        action="append",
        metavar="'TECHNIQUE NAME=VALUE ...'",
        help="apply a fix technique to FILE instead of searching (repeatable, applied in order), as the Fix page's "
        f"steps: {', '.join(FIX_TECHNIQUES)}; e.g. --step 'record_suppression k=5 max_suppression=5%%'; "
        "--step 'TECHNIQUE help' lists its settings",
    )


def _estimate_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--estimate`` (repeatable) and ``--weights``."""
    parser.add_argument(
        "--estimate",
        action="append",
        metavar="SPEC",
        help="an estimate the data are published for, shown before and after the fix with its 95%% interval and "
        "the interval overlap (repeatable): 'mean:income', 'total:income by region', 'share:sex=Female by region', "
        "'share:sex', 'crosstab:sex*race', 'coef:income~age+sex' (weighted least squares; C(x) dummy-codes x)",
    )
    parser.add_argument(
        "--weights",
        metavar="COLUMN",
        help="survey-weight column of the estimates, and the sampling weights of the --targets global_risk "
        "(weighted individual risk), k_map, delta_presence and population_uniques (default: none)",
    )
