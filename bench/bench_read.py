"""From a CSV file to a DataFrame in memory: privdash's reader against DuckDB, polars and pandas, same file, same run.

What an upload and ``read_table`` do: parse the whole file into a pandas DataFrame with typed columns. Times, each
in a fresh process (imports before the clock):

* privdash ``read_table`` (Arrow's CSV reader, columns settled through their distinct values);
* a dashboard upload: ``Services.ingest`` reads the bytes, suggests the roles and stores the table as Parquet
  (with the reading limits raised to let 5M rows in);
* privdash's reference parser (pandas' C parser, cell by cell), which reads what Arrow cannot;
* DuckDB ``read_csv(...).df()`` (its own type detection);
* polars ``read_csv(...).to_pandas()``;
* pandas ``read_csv(engine="pyarrow")`` and ``read_csv()`` (C parser, type inference).

The baselines infer types their own way (``"02134"`` becomes 2134 in all of them; privdash keeps it text), so they
do less than privdash's reader; they are the speed to reach. The reference parser is timed by routing the reader
past the Arrow path, as it is for files Arrow cannot read. Run: ``python -m bench.bench_read --rows 5000000``.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from bench._common import machine
from bench.bench_engines import make_table, print_runs

RUNS = {
    "privdash read_table": """
        import pyarrow.csv
        from dashboard.core.data.tables import read_table
        result = len(read_table(PATH))
    """,
    "privdash upload (Services.ingest: read, suggest roles, store as Parquet)": """
        import pyarrow.csv
        import tempfile
        from pathlib import Path
        from dashboard.application.services import Services
        from dashboard.application.settings import Settings
        folder = Path(tempfile.mkdtemp())
        limits = {"max_upload_bytes": 10**10, "max_rows": 10**9, "max_cells": 10**10, "max_parse_seconds": 600}
        services = Services(Settings(store_dir=folder / "store", cache_dir=folder / "cache", **limits))
        info = services.ingest(Path(PATH).read_bytes(), filename="table.csv", session="bench")
        result = info.rows
    """,
    "privdash reference parser (pandas C, cell by cell)": """
        from dashboard.core.data import tables
        tables._read_text_arrow = lambda *args: None
        result = len(tables.read_table(PATH))
    """,
    "DuckDB read_csv().df()": """
        import duckdb
        result = len(duckdb.read_csv(PATH).df())
    """,
    "polars read_csv().to_pandas()": """
        import polars as pl
        result = len(pl.read_csv(PATH).to_pandas())
    """,
    "pandas read_csv(engine='pyarrow')": """
        import pandas as pd
        result = len(pd.read_csv(PATH, engine="pyarrow"))
    """,
    "pandas read_csv() (C parser)": """
        import pandas as pd
        result = len(pd.read_csv(PATH))
    """,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=5_000_000)
    parser.add_argument("--repeat", type=int, default=2, help="runs of each measurement; the best is kept")
    parser.add_argument("--levels", default="2,5,10,9,7,4,3,6", help="levels of the eight QIs")
    args = parser.parse_args()
    print(machine())
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "table.csv"
        make_table(args.rows, tuple(int(x) for x in args.levels.split(","))).to_csv(path, index=False)
        size = path.stat().st_size
        print(f"\ncsv: {args.rows:,} rows x 9 columns, {size / 1e6:.0f} MB")
        print_runs(RUNS, path, args.repeat, "rows")


if __name__ == "__main__":
    main()
