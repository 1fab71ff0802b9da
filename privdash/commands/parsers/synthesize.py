"""The parser of ``privdash synthesize``."""

from __future__ import annotations

import argparse
from pathlib import Path

from privdash.constants import SYNTHESIS_METHODS

from ._actions import add_project_argument

HELP = "partially, fully, hybrid or DP synthetic tables, judged by the attacks against held-out control records"


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "synthesize",
        help=HELP,
        description="Make a synthetic version of a table and judge it: partial (the --columns of the records at "
        "risk drawn from a model, everything else kept), full (every value drawn), hybrid (a --share of the "
        "records replaced by synthetic ones) by sequential CART in the manner of synthpop, or dp (MST on OpenDP, "
        "charged to the dataset's budget --ledger like privdash release). A --control-share of the records is "
        "held out of the model; the linkage, singling-out and inference attacks on the release are measured against "
        "them, beside the same attacks on the table itself, with the distance to the closest record and the "
        "--estimate values before and after. k-anonymity does not describe a synthetic table: the verdict reads "
        "the attacks. Definitions: docs/synthesis.md.",
    )
    parser.add_argument("file", help="CSV, Excel, Parquet, SPSS, Stata or SAS table")
    parser.add_argument("--sheet", metavar="NAME", help="the sheet of an Excel workbook to read")
    parser.add_argument(
        "--method", choices=SYNTHESIS_METHODS, help="how the table is made (required unless --recipe gives it)"
    )
    parser.add_argument(
        "--qi", metavar="A,B", help="quasi-identifier columns: the attacks' known columns and the records at risk"
    )
    parser.add_argument("--sensitive", metavar="COL", help="the attribute the inference attack guesses")
    parser.add_argument(
        "--columns",
        metavar="A,B",
        help="partial: the columns whose values are replaced (default: the --qi); full, hybrid, dp: the columns "
        "modelled and released (default: every column but the --entity and the direct identifiers and household ids "
        "privdash suggests, unless they are --qi or --sensitive)",
    )
    parser.add_argument(
        "--rows",
        choices=("at_risk", "all"),
        default="at_risk",
        help="partial: replace the records in classes of fewer than --k records over the --qi (default) or all",
    )
    parser.add_argument("--k", type=int, default=5, metavar="K", help="partial: the at-risk class size (default 5)")
    parser.add_argument(
        "--share", type=float, default=0.5, metavar="S", help="hybrid: the share of records replaced, in (0, 1]"
    )
    parser.add_argument(
        "--min-leaf", type=int, default=5, metavar="N", help="CART: the fewest records in a leaf (default 5)"
    )
    parser.add_argument("--epsilon", type=float, metavar="E", help="dp: the total privacy loss ε of the release")
    parser.add_argument(
        "--delta",
        type=float,
        default=1e-6,
        metavar="D",
        help="dp: the total δ, spent by DP key selection of text columns without --domain (default 1e-6; 0 only "
        "when every text column has a --domain)",
    )
    parser.add_argument(
        "--bounds",
        action="append",
        metavar="COL=LOW:HIGH[,...]",
        help="dp: the declared range of each numeric column (public knowledge; several separated by commas, or "
        "--bounds repeated; every numeric column needs one)",
    )
    parser.add_argument(
        "--bins", type=int, default=20, metavar="N", help="dp: equal-width bins of a numeric column (default 20)"
    )
    parser.add_argument(
        "--domain",
        action="append",
        metavar="COL=VALUES",
        help="dp: the public categories of a text column, comma-separated (repeatable); without it DP key "
        "selection chooses them",
    )
    parser.add_argument("--ledger", type=Path, metavar="PATH", help="dp: the budget ledger (JSON; created if missing)")
    parser.add_argument(
        "--budget",
        metavar="EPS[,DELTA]",
        help="dp: the dataset's total privacy budget, fixed when its account opens (EPS alone: δ = 1e-6)",
    )
    parser.add_argument(
        "--dataset-identity",
        metavar="NAME",
        help="dp with --ledger: the population the records describe, whose budget the release spends",
    )
    parser.add_argument(
        "--distinct-population",
        action="store_true",
        help="confirm that --dataset-identity names other people than a similar table already in the ledger",
    )
    parser.add_argument(
        "--control-share",
        type=float,
        default=0.2,
        metavar="S",
        help="share of the records held out of the model as the attacks' control (default 0.2; the release is "
        "made from the others; 0: every record, and the attacks use their baseline guesses)",
    )
    parser.add_argument(
        "--n-targets", type=int, metavar="N", help="attack N sampled target records (default: every record)"
    )
    parser.add_argument(
        "--seed", type=int, metavar="N", help="seed of the synthesis (default: fresh, printed and recorded)"
    )
    parser.add_argument(
        "--entity",
        metavar="COL",
        help="the person-id column when a person may have several rows: never modelled, control records held out "
        "by person, and for dp each person's rows truncated to --max-rows-per-person",
    )
    parser.add_argument(
        "--max-rows-per-person",
        type=int,
        metavar="C",
        help="dp with --entity: the rows kept per person; every measurement is calibrated at C rows",
    )
    parser.add_argument(
        "--estimate",
        action="append",
        metavar="SPEC",
        help="an estimate the data are published for, before and after (repeatable): 'mean:income by region', "
        "'share:sex=Female', 'crosstab:sex*race', 'coef:income~age+sex'",
    )
    parser.add_argument("--weights", metavar="COLUMN", help="survey-weight column of the estimates")
    parser.add_argument(
        "-o", "--output", type=Path, metavar="FILE", help="write the synthetic table (.csv, .tsv or .parquet)"
    )
    parser.add_argument(
        "--no-escape-formulas",
        dest="escape_formulas",
        action="store_false",
        help="write text cells that start with = + - @ as they are (default: prefix them with ' so that a "
        "spreadsheet shows them as text)",
    )
    parser.add_argument(
        "--recipe-out", type=Path, metavar="FILE", help="save the recipe (the synthesize step with the seed used)"
    )
    parser.add_argument(
        "--report",
        type=Path,
        metavar="FILE",
        help="also write the release report of the table with its Synthetic release section (method and settings, "
        "the seed withheld; attacks against the control records, distance, estimates, verdict): .html or .pdf",
    )
    parser.add_argument(
        "--recipe",
        type=Path,
        metavar="FILE",
        help="re-run the synthesize step of a recipe (its settings and seed; a dp step is charged to --ledger)",
    )
    add_project_argument(parser)
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of tables")
