"""The parser of ``privdash report``."""

from __future__ import annotations

import argparse
from pathlib import Path

from privdash.constants import DEFAULT_MAX_SUPPRESSION, DEFAULT_POPULATION_THRESHOLD, MODEL_RISK_METHODS, Metric

from ._actions import OldSpelling, add_project_argument


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "report",
        help="the release report of a table (HTML or PDF), optionally after a fix",
        description="Write the release report a privacy officer signs off: the dataset's fingerprint, roles, targets "
        "and verdict, class sizes, records at risk, every privacy model per sensitive attribute, the attacker risks, "
        "the QI combinations that single people out, postcode units, the fix with its before/after risk, information "
        "loss and recipe, the definitions of every number, and a sign-off block. The format follows the extension "
        "of -o (.pdf, .html). Quasi-identifier values of classes smaller than the target k are never printed. The "
        "exit status is 0 when the report is written (the verdict is in the report) and 2 for bad input.",
    )
    parser.add_argument("file", type=Path, help="CSV (any delimiter), Excel, Parquet, SPSS, Stata or SAS table")
    parser.add_argument("-o", "--output", type=Path, required=True, help="the report: report.pdf or report.html")
    parser.add_argument(
        "--sheet", metavar="NAME", help="the sheet of an Excel workbook to read (default: the first, with a note)"
    )
    parser.add_argument("--qi", help="quasi-identifier columns, comma-separated (default: the contract's)")
    parser.add_argument("--sensitive", help="sensitive columns, comma-separated (default: the contract's)")
    parser.add_argument("--contract", type=Path, help="data contract JSON (roles, types, ordinal orders)")
    parser.add_argument("--k", type=int, help="target k (default 2, or the k of --targets)")
    parser.add_argument(
        "--targets",
        help="release targets, e.g. k=5,l=2,t=0.2,max_risk=0.2 (l: distinct l-diversity; risk is an alias of max_risk)",
    )
    parser.add_argument(
        "--max-risk",
        dest="max_risk",
        type=float,
        help="risk threshold of the records-at-risk counts (default: the max_risk of --targets, else 0.2)",
    )
    parser.add_argument(
        "--missing",
        choices=["value", "wildcard", "drop"],
        default=None,
        help="missing QI values: a category of their own (default, or the project's), match anything, or drop the "
        "record",
    )
    parser.add_argument(
        "--population", help="population size N (a number) or a population table FILE with the same QI columns"
    )
    parser.add_argument("--population-count", help="column of the population table holding people per row")
    parser.add_argument("--sampling-fraction", type=float, help="sampling fraction n/N instead of --population N")
    parser.add_argument("--weights", help="sampling-weight column (default: the contract's)")
    parser.add_argument(
        "--household",
        metavar="COL",
        help="household-id column (default: the contract's): the report adds the household risk, the probability "
        "that at least one member of a household is re-identified",
    )
    parser.add_argument(
        "--entity",
        metavar="COL",
        help="person-id column when a person has several rows (default: the contract's is_entity_id column): every "
        "count of the report is then of people, a person's key being all their QI tuples, and --fix least-lossy is "
        "judged on people (whole people suppressed)",
    )
    parser.add_argument(
        "--entity-key",
        choices=["set", "multiset"],
        default="set",
        help="with --entity: a person's key is the set of their distinct QI tuples (default), or the multiset "
        "(each tuple with its number of rows)",
    )
    parser.add_argument(
        "--model-risk",
        metavar="METHODS",
        help="model-based risk of the released table, comma-separated sdcMicro modRisk methods: "
        + ", ".join(MODEL_RISK_METHODS),
    )
    fix = parser.add_argument_group("fix applied before release (at most one)")
    fix.add_argument("--recipe", type=Path, help="re-apply a saved JSON recipe (privdash anonymize --save-recipe)")
    fix.add_argument(
        "--fix",
        choices=["least-lossy"],
        help="the least-lossy generalization and record suppression meeting the targets (as privdash anonymize)",
    )
    fix.add_argument(
        "--hierarchies",
        type=Path,
        help="folder of ARX hierarchy CSV files for --fix, one per QI (default: those of privdash anonymize, the "
        "dashboard's hierarchy for each column's type)",
    )
    fix.add_argument(
        "--max-suppression",
        dest="max_suppression",
        type=float,
        default=DEFAULT_MAX_SUPPRESSION,
        help=f"share of records --fix may remove, 0..1 (default {DEFAULT_MAX_SUPPRESSION:g}, as everywhere)",
    )
    fix.add_argument(
        "--metric",
        default="loss",
        help="information loss --fix minimizes: " + ", ".join(m.value for m in Metric) + " (default loss)",
    )
    fix.add_argument("--save-recipe", type=Path, help="also write the recipe of --fix as JSON")
    fix.add_argument(
        "--estimate",
        action="append",
        metavar="SPEC",
        help="an estimate the data are published for, shown before and after the fix with its 95%% interval and "
        "the interval overlap, weighted by the contract's weight column or --weights (repeatable; the syntax of "
        "privdash anonymize --estimate: 'mean:income by region', 'share:sex=Female', 'coef:income~age+sex')",
    )
    parser.add_argument(
        "--postcode-min-population",
        "--postcode-threshold",
        dest="postcode_min_population",
        type=int,
        default=DEFAULT_POPULATION_THRESHOLD,
        action=OldSpelling,
        old=["--postcode-threshold"],
        help=f"people a postcode unit must hold (default {DEFAULT_POPULATION_THRESHOLD:,}; --postcode-threshold is "
        "the old spelling)",
    )
    add_project_argument(parser)
