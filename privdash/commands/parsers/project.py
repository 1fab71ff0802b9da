"""The parser of ``privdash project``."""

from __future__ import annotations

import argparse
from pathlib import Path


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "project",
        help="save, show or check a project file (contract, targets, steps, sign-off, fingerprint)",
        description="A project file (.privdash, JSON) holds a table's fingerprint, its data contract with roles, "
        "types, orders and hierarchies, the targets, the fix (recipe or the dashboard's steps), the report's sign-off "
        "fields and the DP ledger's reference; never the table's values unless --include-table is given. "
        "diagnose, anonymize and report read one with --project.",
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION")
    save = actions.add_parser("save", help="write the project of a table")
    save.add_argument("file", type=Path, help="the table (CSV, Excel, Parquet, SPSS, Stata or SAS)")
    save.add_argument("-o", "--output", type=Path, required=True, help="the project file to write (.privdash)")
    save.add_argument("--sheet", metavar="NAME", help="the sheet of an Excel workbook to read")
    save.add_argument("--contract", type=Path, help="data contract JSON (roles, types, ordinal orders, hierarchies)")
    save.add_argument("--qi", help="quasi-identifier columns, comma-separated (default: the contract's)")
    save.add_argument("--sensitive", help="sensitive columns, comma-separated (default: the contract's)")
    save.add_argument("--targets", help="release targets, e.g. k=5,l=2,t=0.2,max_risk=0.2")
    save.add_argument("--missing", choices=["value", "wildcard", "drop"], default="value", help="missing QI values")
    save.add_argument("--recipe", type=Path, help="a saved JSON recipe (privdash anonymize --save-recipe)")
    save.add_argument("--hierarchies", type=Path, help="folder of ARX hierarchy CSV files of the quasi-identifiers")
    save.add_argument("--identity", help="the population's identity in the privacy-budget ledger")
    save.add_argument("--ledger", type=Path, help="the privacy-budget ledger file (privdash release --ledger)")
    for name in ("name", "role", "decision", "conditions", "date"):
        save.add_argument(
            f"--signoff-{name}",
            help="sign-off decision: approve, conditions or reject" if name == "decision" else f"sign-off {name}",
        )
    save.add_argument(
        "--include-table",
        action="store_true",
        help="keep the table's values inside the project (Parquet); without it the project holds no data value",
    )
    show = actions.add_parser("show", help="print what a project holds")
    show.add_argument("project", type=Path, help="the project file")
    show.add_argument("--json", action="store_true", help="print the project as JSON (without the table's values)")
    check = actions.add_parser("check", help="compare a table with a project's fingerprint (exit 1 if it differs)")
    check.add_argument("project", type=Path, help="the project file")
    check.add_argument("file", type=Path, help="the table")
    check.add_argument("--sheet", metavar="NAME", help="the sheet of an Excel workbook to read")
