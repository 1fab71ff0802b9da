"""From a file on disk to the class table: privdash's engines against DuckDB, polars and pandas, same files, same run.

Generates a CSV (and the same table as Parquet) of ``--rows`` rows x 8 quasi-identifiers + 1 sensitive attribute,
then times, each in a fresh process (so the peak resident memory is the run's own):

* privdash ``pandas`` engine: ``read_table`` + ``equivalence_classes`` (the whole table in memory);
* privdash ``duckdb`` engine: ``diagnose(path, engine="duckdb")``'s counting (stream, aggregate, type, classes);
* bare DuckDB: ``SELECT qis, sa, COUNT(*) FROM read_csv(...) GROUP BY ALL`` fetched through Arrow as a DataFrame;
* polars: ``scan_csv(...).group_by(qis + sa).len().collect()``;
* pandas: ``read_csv(engine="pyarrow")`` + ``groupby(...).size()``.

Every run builds its keys inside the timed region; each run's imports (its libraries, pandas for all) come before
the clock, so that no run pays another's import. Run: ``python -m bench.bench_engines --rows 5000000``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd

from bench._common import machine

QIS = [f"q{i}" for i in range(8)]
SA = "s"

RUNS = {
    "privdash pandas engine (read_table + classes)": """
        import pyarrow.csv
        from privdash.data.tables import read_table
        from privdash.measure.classes import equivalence_classes
        classes = equivalence_classes(read_table(PATH), QIS, sensitive=[SA])
        result = classes.n_classes
    """,
    "privdash duckdb engine (aggregate + classes)": """
        import duckdb
        from privdash.engines.aggregate import COUNT, aggregate_table
        from privdash.measure.classes import equivalence_classes_from_aggregate
        aggregate = aggregate_table(PATH, QIS + [SA], engine="duckdb")
        classes = equivalence_classes_from_aggregate(aggregate.frame, QIS, count=COUNT, sensitive=[SA])
        result = classes.n_classes
    """,
    "DuckDB read + GROUP BY (bare)": """
        import duckdb
        source = f"read_parquet('{PATH}')" if PATH.endswith(".parquet") else f"read_csv('{PATH}')"
        columns = ", ".join(QIS + [SA])
        fetched = duckdb.sql(f"SELECT {columns}, COUNT(*) AS n FROM {source} GROUP BY ALL").arrow()
        # Through Arrow, the fastest way out of DuckDB (its .df() converts each text: 4x slower on a long result).
        frame = (fetched.read_all() if hasattr(fetched, "read_all") else fetched).to_pandas()
        result = len(frame.groupby(QIS, dropna=False).size())
    """,
    "polars scan + group_by": """
        import polars as pl
        scan = pl.scan_parquet(PATH) if PATH.endswith(".parquet") else pl.scan_csv(PATH)
        frame = scan.group_by(QIS + [SA]).len().collect()
        result = frame.group_by(QIS).len().height
    """,
    "pandas read (pyarrow) + groupby": """
        import pandas as pd
        frame = pd.read_parquet(PATH) if PATH.endswith(".parquet") else pd.read_csv(PATH, engine="pyarrow")
        result = len(frame.groupby(QIS, dropna=False).size())
    """,
}


def make_table(rows: int, levels: tuple[int, ...] = (3,) * 8, seed: int = 7) -> pd.DataFrame:
    """Eight categorical QIs (text and numbers) with the given numbers of levels and a sensitive attribute of 20
    values."""
    rng = np.random.default_rng(seed)
    columns: dict[str, np.ndarray] = {}
    for i, count in enumerate(levels):
        codes = rng.integers(0, count, rows)
        columns[QIS[i]] = codes if i % 2 else np.array([f"v{j}" for j in range(count)])[codes]
    columns[SA] = np.array([f"s{j}" for j in range(20)])[rng.integers(0, 20, rows)]
    return pd.DataFrame(columns)


def _imports(body: str) -> str:
    """The import lines of a run: executed before the clock starts (start-up is not what is measured)."""
    lines = textwrap.dedent(body).splitlines()
    return "\n".join(line for line in lines if line.startswith(("import ", "from ")))


def _work(body: str) -> str:
    lines = textwrap.dedent(body).splitlines()
    return "\n".join(line for line in lines if not line.startswith(("import ", "from "))) + "\n"


def run(name: str, body: str, path: Path, repeat: int = 2) -> dict[str, float]:
    script = (
        textwrap.dedent(
            f"""
        import json, time
        import pandas  # every run hands pandas a result: its import is not measured
        PATH, QIS, SA = {str(path)!r}, {QIS!r}, {SA!r}
        """
        )
        + _imports(body)
        + "\nbaseline = int(open('/proc/self/status').read().split('VmRSS:')[1].split()[0]) * 1024"
        + "\nstart = time.perf_counter()\n"
        + _work(body)
        + textwrap.dedent(
            """
        seconds = time.perf_counter() - start
        # VmHWM is this program's own peak: ru_maxrss would also count the benchmark process it was forked from.
        status = open("/proc/self/status").read()
        peak = int(status.split("VmHWM:")[1].split()[0]) * 1024
        print(json.dumps({"seconds": seconds, "peak": peak, "work": peak - baseline, "classes": int(result)}))
        """
        )
    )
    best: dict[str, float] | None = None
    for _ in range(repeat):
        out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=False)
        if out.returncode != 0:
            raise SystemExit(f"{name} failed:\n{out.stderr[-2000:]}")
        measured = json.loads(out.stdout.strip().splitlines()[-1])
        if best is None or measured["seconds"] < best["seconds"]:
            best = measured
    assert best is not None
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=5_000_000)
    parser.add_argument("--repeat", type=int, default=2, help="runs of each measurement; the best is kept")
    parser.add_argument("--formats", default="csv,parquet", help="the files to read: csv, parquet or both")
    parser.add_argument(
        "--levels",
        default="3,3,3,3,3,3,3,3",
        help="levels of the eight QIs (default 3 each: 6,561 classes; 2,5,10,9,7,4,3,6 gives 453,600)",
    )
    args = parser.parse_args()
    print(machine())
    with tempfile.TemporaryDirectory() as folder:
        table = make_table(args.rows, tuple(int(x) for x in args.levels.split(",")))
        csv, parquet = Path(folder) / "table.csv", Path(folder) / "table.parquet"
        formats = args.formats.split(",")
        if "csv" in formats:
            table.to_csv(csv, index=False)
        if "parquet" in formats:
            table.to_parquet(parquet, index=False)
        del table
        for path in [p for p in (csv, parquet) if p.exists()]:
            size = path.stat().st_size
            print(f"\n{path.suffix[1:]}: {args.rows:,} rows, QI levels {args.levels}, {size / 1e6:.0f} MB")
            print_runs(RUNS, path, args.repeat, "classes")


def print_runs(runs: dict[str, str], path: Path, repeat: int, counted: str) -> None:
    """Time every run on ``path`` and print the table: time, peak, working memory, and the count each run gives
    (``result``: the classes, or the rows read), which must agree."""
    size = path.stat().st_size
    print(f"| run | time | peak RSS | working memory (peak - after imports) | working / file | {counted} |")
    print("|---|---|---|---|---|---|")
    for name, body in runs.items():
        result = run(name, body, path, repeat)
        print(
            f"| {name} | {result['seconds']:.2f} s | {result['peak'] / 1e6:,.0f} MB | "
            f"{result['work'] / 1e6:,.0f} MB | {result['work'] / size:.1f}x | {result['classes']:,} |"
        )


if __name__ == "__main__":
    main()
