"""The parser of ``privdash diagnose``."""

from __future__ import annotations

import argparse
from pathlib import Path

from privdash.constants import AUTO_DUCKDB_BYTES, AUTO_DUCKDB_CELLS, MODEL_RISK_METHODS, Engine

from ._actions import OldSpelling, Refused, add_project_argument

JSON_NOTES = (
    "In --json output, a model value no threshold can satisfy (e.g. recursive c when a class has fewer than l "
    "distinct values, or enhanced beta when some (q-p)/p exceeds -ln p) is null."
)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "diagnose",
        help="equivalence classes, privacy models and re-identification risk of a table",
        description="Diagnose the disclosure risk of a table: class sizes, k-anonymity, l-diversity, t-closeness, "
        "delta-disclosure, beta-likeness, (alpha,k), prosecutor/journalist/marketer risk. " + JSON_NOTES,
    )
    parser.add_argument(
        "file",
        help="CSV (any delimiter), Excel, Parquet, SPSS, Stata or SAS table; or a glob or folder of Parquet files "
        "(a dataset); or a postgresql://user@host/db URL with --table or --sql (counted in the database)",
    )
    parser.add_argument(
        "--sheet", metavar="NAME", help="the sheet of an Excel workbook to read (default: the first, with a note)"
    )
    parser.add_argument(
        "--table", metavar="NAME", help="with a postgresql:// source: the table or view to diagnose (schema.table)"
    )
    parser.add_argument(
        "--sql",
        "--query",
        dest="sql",
        metavar="SQL",
        action=OldSpelling,
        old=["--query"],
        help="with a postgresql:// source: a SELECT whose rows are the records (run read-only; --query is the old "
        "spelling)",
    )
    parser.add_argument("--qi", help="quasi-identifier columns, comma-separated (default: the contract's)")
    parser.add_argument("--sensitive", help="sensitive columns, comma-separated (default: the contract's)")
    parser.add_argument(
        "--missing",
        choices=["value", "wildcard", "drop"],
        default=None,
        help="missing QI values: a category of their own (default, or the project's), match anything, or drop the "
        "record",
    )
    parser.add_argument(
        "--population",
        help="population size N (a number) or a population table FILE with the same QI columns",
    )
    parser.add_argument("--population-count", help="column of the population table holding people per row")
    parser.add_argument("--sampling-fraction", type=float, help="sampling fraction n/N instead of --population N")
    parser.add_argument("--weights", help="sampling-weight column (default: the contract's)")
    parser.add_argument(
        "--household",
        metavar="COL",
        help="household-id column (default: the contract's): each record's risk is its household's, the "
        "probability that at least one member is re-identified (sdcMicro measure_risk hid=)",
    )
    parser.add_argument(
        "--entity",
        metavar="COL",
        help="person-id column when a person has several rows (default: the contract's is_entity_id column): "
        "classes, k and risks are then counted in people, a person's key being all their QI tuples",
    )
    parser.add_argument(
        "--entity-key",
        choices=["set", "multiset"],
        default="set",
        help="with --entity: a person's key is the set of their distinct QI tuples (default), or the multiset "
        "(each tuple with its number of rows)",
    )
    parser.add_argument("--contract", type=Path, help="data contract JSON (roles, types, ordinal orders)")
    parser.add_argument(
        "--max-risk",
        "--threshold",
        dest="max_risk",
        type=float,
        action=OldSpelling,
        old=["--threshold"],
        help="highest acceptable per-record risk; records above it are at risk (default: the max_risk of "
        "--targets, else 0.2; --threshold is the old spelling)",
    )
    parser.add_argument(
        "--recursive-l", type=int, default=2, help="the l of recursive (c,l)-diversity, a measured model (default 2)"
    )
    parser.add_argument(
        "--l",
        action=Refused,
        message="--l is the distinct l-diversity target everywhere (anonymize --l, --targets l=N); the l of "
        "recursive (c,l)-diversity diagnose measures is now --recursive-l N, and the distinct-l target is checked "
        "with --targets l=N",
    )
    parser.add_argument(
        "--targets",
        help="release targets, e.g. k=5,l=2,t=0.2,max_risk=0.2 (l: distinct l-diversity; risk is an alias of "
        "max_risk); the exit status is 0 when every target is met and 1 when one fails",
    )
    parser.add_argument(
        "--t-distance", choices=["equal", "ordered", "hierarchical"], help="force the t-closeness distance"
    )
    parser.add_argument("--combinations", action="store_true", help="also analyse every subset of the QIs")
    parser.add_argument(
        "--model-risk",
        metavar="METHODS",
        help="also estimate sdcMicro's model-based risk (modRisk, log-linear models of the QI table) with these "
        f"methods, comma-separated: {', '.join(MODEL_RISK_METHODS)}",
    )
    parser.add_argument(
        "--model-interactions",
        metavar="A:B,...",
        help="two-way interactions of QIs in the --model-risk models, e.g. sex:age,sex:region (not with IPF)",
    )
    parser.add_argument(
        "--record-risk",
        type=Path,
        metavar="OUT",
        help="also write every record with its class size, prosecutor risk 1/f, individual risk (sdcMicro's, 1/f "
        "without weights), with --household its household risk, and with --model-risk each method's estimated "
        "P(F=1 | f=1) of the sample uniques (population_unique_<method>) (.parquet, .csv or .tsv); the duckdb engine "
        "streams it, never holding the sizes as a list",
    )
    parser.add_argument(
        "--engine",
        choices=[engine.value for engine in Engine],
        default=Engine.AUTO.value,
        help="where the classes are counted: pandas in memory, duckdb out of core (streams the file; only the "
        "per-class aggregate is kept), spark (on --master), postgresql (in the database), or auto (default: duckdb "
        f"for Parquet datasets, files over {AUTO_DUCKDB_BYTES // 2**20} MiB and Parquet files of over "
        f"{AUTO_DUCKDB_CELLS:,} cells, postgresql for a postgresql:// URL)",
    )
    parser.add_argument("--memory-limit", help="memory DuckDB may use before it spills to disk, e.g. 4GB")
    parser.add_argument("--temp-dir", type=Path, help="folder DuckDB spills to (default: its own)")
    parser.add_argument(
        "--master", metavar="URL", help="Spark master for --engine spark, e.g. local[2] or spark://host:7077"
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of tables")
    add_project_argument(parser)
