"""The parser of ``privdash release``."""

from __future__ import annotations

import argparse
from pathlib import Path

from privdash.dp.mechanisms import Mechanism

from ._actions import add_project_argument

#: The aggregates a release computes.
QUERIES = ("count", "histogram", "sum", "mean")


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "release",
        help="differentially private counts, histograms, class-size tables, sums and means (OpenDP)",
        description="Release an aggregate of a table with differential privacy: noise from OpenDP (Laplace, "
        "geometric or Gaussian) calibrated to ε (and δ), with the 95% error bar of each value. Each person must "
        "contribute exactly one row, or name the person-id column (--entity) and bound each person's rows "
        "(--max-rows-per-person). Histogram categories come from a declared public domain (--domain, "
        "--hierarchies) or, with --delta > 0, from DP key selection (noisy counts above a threshold); never from "
        "the data's own values. With --ledger, the release is charged to the dataset's total --budget (basic "
        "sequential composition) and refused when it would exceed it.",
    )
    parser.add_argument(
        "file", help="CSV, Excel, Parquet, SPSS, Stata or SAS table (one row per person, or see --entity)"
    )
    parser.add_argument("--sheet", metavar="NAME", help="the sheet of an Excel workbook to read")
    parser.add_argument("--query", required=True, choices=QUERIES, help="the aggregate to release")
    parser.add_argument("--epsilon", required=True, type=float, metavar="E", help="privacy loss ε of this release")
    parser.add_argument(
        "--delta", type=float, default=0.0, metavar="D", help="δ of this release (Gaussian, key selection; default 0)"
    )
    parser.add_argument(
        "--mechanism",
        default=Mechanism.LAPLACE.value,
        metavar="{" + ",".join(m.value for m in Mechanism) + "}",
        help="noise: laplace (default), geometric (discrete Laplace, integer values) or gaussian (needs --delta)",
    )
    parser.add_argument("--column", metavar="C", help="the column of a histogram, sum or mean")
    parser.add_argument(
        "--qi", metavar="A,B", help="histogram: the quasi-identifiers of the class-size table (counts per combination)"
    )
    parser.add_argument("--bounds", metavar="L,U", help="sum and mean: values are clamped into [L, U] (required)")
    parser.add_argument(
        "--domain",
        action="append",
        metavar="VALUES|FILE|COL=VALUES",
        help="the public categories of a histogram: comma-separated values or a file (one value per line, a JSON "
        "list, or a JSON object of lists per column); for --qi, COL=VALUES (or COL=FILE) once per quasi-identifier",
    )
    parser.add_argument(
        "--hierarchies",
        type=Path,
        metavar="DIR",
        help="for --qi: a folder of hierarchy files whose leaves are the domains of the QIs without --domain",
    )
    parser.add_argument(
        "--entity",
        metavar="COL",
        help="the person-id column when a person may have several rows: the privacy unit is then the person, "
        "with at most --max-rows-per-person rows each",
    )
    parser.add_argument(
        "--max-rows-per-person",
        metavar="N",
        help="with --entity: the most rows one person may contribute (a whole number >= 1, declared, not taken "
        "from the data); a person's extra rows are dropped at random and the noise grows N times",
    )
    parser.add_argument(
        "--truncation-seed",
        type=int,
        metavar="N",
        help="with --entity: seed of the random choice of the rows kept per person (reproducible; default: fresh)",
    )
    parser.add_argument(
        "--confidence", type=float, default=0.95, help="coverage of the error bars (default 0.95: 95%% intervals)"
    )
    parser.add_argument("--ledger", type=Path, metavar="PATH", help="the budget ledger (JSON; created if missing)")
    parser.add_argument(
        "--budget",
        metavar="EPS[,DELTA]",
        help="the dataset's total privacy budget, fixed when its account opens (EPS alone: δ = 1e-6, as in the "
        "dashboard)",
    )
    parser.add_argument(
        "--dataset-identity",
        metavar="NAME",
        help="with --ledger: the population the records describe (e.g. adult-census-1994), whose budget the "
        "release spends; needed at the first release of a table, recognised afterwards (also in copies)",
    )
    parser.add_argument(
        "--distinct-population",
        action="store_true",
        help="confirm that --dataset-identity names other people than a similar table already in the ledger",
    )
    parser.add_argument(
        "-o", "--output", type=Path, metavar="FILE", help="write the release (.csv, .tsv, .parquet or .json)"
    )
    parser.add_argument(
        "--show-true",
        action="store_true",
        help="also print the true values (for the data owner only; never written to --output)",
    )
    add_project_argument(parser)
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
