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

``--numeric`` times the files numbers are really written in, against pandas and DuckDB:

* a numeric CSV (``--numeric-rows`` rows, 2 categories ``g1``, ``g2`` and 4 floats ``x1``..``x4`` written at 17
  significant digits, as numpy's ``%.17g`` and many exports write them; and the same floats written by pandas,
  in their shortest form): ``read_table`` against ``pandas.read_csv`` in one process, warm, best of ``--repeat``
  (wall), and the median of the CPU-time ratios call by call (steadier on a shared machine);
* the same file through ``privdash diagnose FILE --qi g1,g2,x1`` as a whole process against a process running
  DuckDB's ``read_csv`` + ``GROUP BY ALL`` on it;
* a wide CSV (10,000 columns, one data row): ``privdash diagnose FILE --qi c0`` against DuckDB reading it and
  grouping by ``c0``, both whole processes.

Whole processes are timed with ``time.perf_counter`` around ``subprocess.run``, A B A B, and the medians printed.
Run: ``python -m bench.bench_read --numeric --numeric-rows 1000000``.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from bench._common import machine
from bench.bench_engines import make_table, print_runs

RUNS = {
    "privdash read_table": """
        import pyarrow.csv
        from privdash.data.tables import read_table
        result = len(read_table(PATH))
    """,
    "privdash upload (Services.ingest: read, suggest roles, store as Parquet)": """
        import pyarrow.csv
        import tempfile
        from pathlib import Path
        from privdash.application.services import Services
        from privdash.application.settings import Settings
        folder = Path(tempfile.mkdtemp())
        limits = {"max_upload_bytes": 10**10, "max_rows": 10**9, "max_cells": 10**10, "max_parse_seconds": 600}
        services = Services(Settings(store_dir=folder / "store", cache_dir=folder / "cache", **limits))
        info = services.ingest(Path(PATH).read_bytes(), filename="table.csv", session="bench")
        result = info.rows
    """,
    "privdash reference parser (pandas C, cell by cell)": """
        from privdash.data.tables import read
        read._read_text_arrow = lambda *args: None
        result = len(read.read_table(PATH))
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


def numeric_table(rows: int, seed: int = 0) -> pd.DataFrame:
    """2 categories and 4 normal floats (scale 100), the shape of the numeric exports of the benchmark."""
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame(
        {
            "g1": np.array(list("abcde"))[rng.integers(0, 5, rows)],
            "g2": np.array(list("pqrstuv"))[rng.integers(0, 7, rows)],
        }
    )
    for i in range(1, 5):
        frame[f"x{i}"] = rng.normal(0, 100, rows)
    return frame


def write_17_digits(frame: pd.DataFrame, path: Path) -> None:
    """The floats at 17 significant digits (``%.17g``), the text columns as they are."""
    texts = [
        np.char.mod("%.17g", frame[name].to_numpy())
        if pd.api.types.is_float_dtype(frame[name])
        else frame[name].to_numpy(dtype=object)
        for name in frame.columns
    ]
    with path.open("w") as out:
        out.write(",".join(frame.columns) + "\n")
        out.write("\n".join(",".join(row) for row in zip(*texts, strict=True)) + "\n")


def write_wide(path: Path, width: int = 10_000) -> None:
    """One data row under ``width`` columns: integers, decimals and words in turn."""
    values = [str(i % 97) if i % 3 == 0 else f"{i / 7:.3f}" if i % 3 == 1 else f"t{i % 13}" for i in range(width)]
    path.write_text(",".join(f"c{i}" for i in range(width)) + "\n" + ",".join(values) + "\n")


IN_PROCESS = """
import sys, time
import pandas as pd
import pyarrow.csv
from privdash.data.tables import read_table_with_info
path, repeat = sys.argv[1], int(sys.argv[2])
pd.read_csv(path); read_table_with_info(path)  # warm: first calls, caches
pandas_times, privdash_times, pandas_cpu, privdash_cpu = [], [], [], []
for _ in range(repeat):
    start, cpu = time.perf_counter(), time.process_time(); pd.read_csv(path)
    pandas_times.append(time.perf_counter() - start); pandas_cpu.append(time.process_time() - cpu)
    start, cpu = time.perf_counter(), time.process_time(); frame, info = read_table_with_info(path)
    privdash_times.append(time.perf_counter() - start); privdash_cpu.append(time.process_time() - cpu)
cpu_ratio = sorted(b / a for a, b in zip(pandas_cpu, privdash_cpu))[repeat // 2]
print(min(pandas_times), min(privdash_times), ",".join(frame.dtypes.astype(str)), len(info.notes), cpu_ratio)
"""


def whole_processes(first: list[str], second: list[str], repeat: int) -> tuple[float, float, float]:
    """Medians of the two commands' wall times run A B A B, and the median of the ratios pair by pair."""
    times: tuple[list[float], list[float]] = ([], [])
    for _ in range(repeat):
        for command, found in zip((first, second), times, strict=True):
            start = time.perf_counter()
            subprocess.run(command, check=True, capture_output=True)
            found.append(time.perf_counter() - start)
    ratios = [a / b for a, b in zip(*times, strict=True)]
    return statistics.median(times[0]), statistics.median(times[1]), statistics.median(ratios)


def duckdb_command(path: Path, columns: str, *, text: bool = False) -> list[str]:
    """A Python process running DuckDB's read_csv + GROUP BY of ``columns`` (``text``: every column read as text,
    ``all_varchar``, as privdash's DuckDB engine reads a CSV)."""
    options = ", all_varchar = true" if text else ""
    query = f"select {columns}, count(*) from read_csv('{path}'{options}) group by all"
    return [sys.executable, "-c", f"import duckdb; duckdb.sql({query!r}).fetchall()"]


def diagnose_command(path: Path, qis: str) -> list[str]:
    return [sys.executable, "-c", "import sys; from privdash.cli import main; sys.exit(main(sys.argv[1:]))",
            "diagnose", str(path), "--qi", qis]  # fmt: skip


def numeric(rows: int, repeat: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        frame = numeric_table(rows)
        digits, shortest, wide = Path(folder) / "digits17.csv", Path(folder) / "shortest.csv", Path(folder) / "w.csv"
        write_17_digits(frame, digits)
        frame.to_csv(shortest, index=False)
        write_wide(wide)
        print(f"\nnumeric CSV: {rows:,} rows x (2 categories + 4 floats)")
        print("| file | size | pandas.read_csv | privdash read_table | ratio | CPU ratio | privdash's types | notes |")
        print("|---|---|---|---|---|---|---|---|")
        for label, path in (("17 significant digits", digits), ("shortest form (pandas to_csv)", shortest)):
            out = subprocess.run(
                [sys.executable, "-c", IN_PROCESS, str(path), str(repeat)], capture_output=True, text=True, check=True
            )
            pandas_s, privdash_s, types, notes, cpu_ratio = out.stdout.split()
            print(
                f"| {label} | {path.stat().st_size / 1e6:.0f} MB | {float(pandas_s):.3f} s | "
                f"{float(privdash_s):.3f} s | {float(privdash_s) / float(pandas_s):.1f}x | {float(cpu_ratio):.1f}x | "
                f"{types} | {notes} |"
            )
        print("\nwhole processes, medians of A B A B:")
        print("| run | privdash | DuckDB | ratio (median of pairs) |")
        print("|---|---|---|---|")
        cases = (
            (f"diagnose --qi g1,g2,x1, {rows:,} rows, 17 digits", digits, "g1,g2,x1"),
            (f"wide: 10,000 columns, one row ({wide.stat().st_size / 1e3:.0f} KB), --qi c0", wide, "c0"),
        )
        for label, path, qis in cases:
            privdash_s, duckdb_s, ratio = whole_processes(
                diagnose_command(path, qis), duckdb_command(path, qis), repeat
            )
            print(f"| {label} | {privdash_s:.2f} s | {duckdb_s:.2f} s | {ratio:.1f}x |")
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import privdash.cli"], check=True)
        print(f"\n(importing the command line alone: {time.perf_counter() - start:.2f} s)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=5_000_000)
    parser.add_argument("--repeat", type=int, default=2, help="runs of each measurement; the best is kept")
    parser.add_argument("--levels", default="2,5,10,9,7,4,3,6", help="levels of the eight QIs")
    parser.add_argument("--numeric", action="store_true", help="the numeric and wide files (see the docstring)")
    parser.add_argument("--numeric-rows", type=int, default=1_000_000)
    args = parser.parse_args()
    print(machine())
    if args.numeric:
        numeric(args.numeric_rows, max(args.repeat, 3))
        return
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "table.csv"
        make_table(args.rows, tuple(int(x) for x in args.levels.split(","))).to_csv(path, index=False)
        size = path.stat().st_size
        print(f"\ncsv: {args.rows:,} rows x 9 columns, {size / 1e6:.0f} MB")
        print_runs(RUNS, path, args.repeat, "rows")


if __name__ == "__main__":
    main()
