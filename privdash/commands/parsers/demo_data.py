"""The parser of ``privdash demo-data``."""

from __future__ import annotations

import argparse
from pathlib import Path

from ._actions import OldSpelling


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "demo-data",
        help="generate a demo table",
        description="Generate a demo table. 'uniform': independent categorical columns A, B, C, I, J, K, X, Y with "
        "levels a1, a2, a3 ... drawn as numpy.random.seed(SEED) then numpy.random.choice(levels, ROWS) column by "
        "column. 'people': a realistic synthetic customer table with identifiers, quasi-identifiers and sensitive "
        "attributes.",
    )
    parser.add_argument("kind", choices=["uniform", "people"], help="which table to generate")
    parser.add_argument("--rows", type=int, default=None, help="number of rows (uniform: 50000, people: 5000)")
    parser.add_argument("--seed", type=int, default=None, help="random seed (uniform: 0, people: 2024)")
    parser.add_argument("--columns", type=int, default=8, help="uniform: number of columns (default 8)")
    parser.add_argument("--levels", type=int, default=3, help="uniform: levels per column (default 3)")
    parser.add_argument(
        "--missing-share",
        "--missing",
        dest="missing_share",
        type=float,
        default=0.0,
        action=OldSpelling,
        old=["--missing"],
        help="uniform: share of missing cells (default 0; --missing is the old spelling: elsewhere --missing is the "
        "missing-value policy)",
    )
    parser.add_argument(
        "-o", "--output", type=Path, help="output file (.csv, .tsv or .parquet); default: CSV on stdout"
    )
    parser.add_argument("--contract", type=Path, help="people: also write the data contract JSON to this file")
