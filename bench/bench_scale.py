"""Beyond memory: the full diagnosis of a Parquet dataset of 100 million to 1 billion rows, against DuckDB's bare
GROUP BY on the same files, same run.

Generates (with DuckDB, deterministically, never through pandas) a folder of Parquet files holding ``--rows`` rows
x 8 quasi-identifiers (integer codes with 10, 2, 12, 8, 5, 5, 4 and 6 values: 1,152,000 possible classes) + 1
sensitive attribute of 10 values, then times, each in a fresh process with its own peak resident memory:

* bare DuckDB: ``SELECT qis, sa, COUNT(*) FROM read_parquet('folder/*.parquet') GROUP BY ALL`` fetched as a
  DataFrame (the aggregate the diagnosis needs, nothing else);
* privdash: ``diagnose('folder/*.parquet', qis, sensitive=[sa], engine="duckdb")``, the whole diagnosis (classes,
  risk, population models, l-diversity, t-closeness, entropy ...) with the same memory limit;
* privdash ``engine="auto"`` on the same folder (which engine it picks).

With ``--in-memory`` the pandas path (``read_table`` of the Parquet file + ``diagnose``) is also timed, to show where
it stops fitting. Run: ``python -m bench.bench_scale --rows 100000000 [--folder /big/disk] [--keep]``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from bench._common import machine

QIS = [f"q{i}" for i in range(8)]
LEVELS = (10, 2, 12, 8, 5, 5, 4, 6)
SA = "s"
SA_VALUES = 10
FILE_ROWS = 50_000_000

RUNS = {
    "DuckDB GROUP BY (bare)": """
        import duckdb
        connection = duckdb.connect(config={"memory_limit": MEMORY})
        columns = ", ".join(QIS + [SA])
        frame = connection.sql(f"SELECT {columns}, COUNT(*) AS n FROM read_parquet('{GLOB}') GROUP BY ALL").df()
        result = len(frame)
    """,
    "privdash diagnose, engine duckdb": """
        from privdash.measure.diagnose import diagnose
        diagnosis = diagnose(GLOB, QIS, sensitive=[SA], engine="duckdb", memory_limit=MEMORY)
        result = diagnosis.classes.n_classes
    """,
    "privdash diagnose, engine auto": """
        from privdash.measure.diagnose import diagnose
        diagnosis = diagnose(GLOB, QIS, sensitive=[SA], memory_limit=MEMORY)
        assert diagnosis.engine == "duckdb", diagnosis.engine
        result = diagnosis.classes.n_classes
    """,
}
IN_MEMORY = """
    import pandas as pd
    from privdash.measure.diagnose import diagnose
    frame = pd.read_parquet(FOLDER)
    diagnosis = diagnose(frame, QIS, sensitive=[SA], engine="pandas")
    result = diagnosis.classes.n_classes
"""


def generate(folder: Path, rows: int) -> float:
    """Write ``rows`` rows as Parquet files of at most :data:`FILE_ROWS` rows; return the seconds taken."""
    import duckdb

    started = time.perf_counter()
    columns = [
        f"(hash(i * 8 + {j}) % {levels})::INTEGER AS {name}"
        for j, (name, levels) in enumerate(zip(QIS, LEVELS, strict=True))
    ]
    columns.append(f"'s' || (hash(i * 8 + 99) % {SA_VALUES})::VARCHAR AS {SA}")
    connection = duckdb.connect()
    for part, start in enumerate(range(0, rows, FILE_ROWS)):
        stop = min(rows, start + FILE_ROWS)
        connection.execute(
            f"COPY (SELECT {', '.join(columns)} FROM range({start}, {stop}) AS t(i)) "
            f"TO '{folder / f'part-{part:03d}.parquet'}' (FORMAT parquet, ROW_GROUP_SIZE 1000000)"
        )
    connection.close()
    return time.perf_counter() - started


def run(name: str, body: str, folder: Path, memory: str) -> dict[str, float]:
    script = (
        "import json, time\n"
        f"FOLDER, GLOB, QIS, SA, MEMORY = {str(folder)!r}, {str(folder / '*.parquet')!r}, {QIS!r}, {SA!r}, "
        f"{memory!r}\n"
        + "\n".join(line for line in textwrap.dedent(body).splitlines() if line.startswith(("import ", "from ")))
        + "\nstart = time.perf_counter()\n"
        + "\n".join(line for line in textwrap.dedent(body).splitlines() if not line.startswith(("import ", "from ")))
        + textwrap.dedent(
            """
            seconds = time.perf_counter() - start
            status = open("/proc/self/status").read()
            peak = int(status.split("VmHWM:")[1].split()[0]) * 1024
            print(json.dumps({"seconds": seconds, "peak": peak, "classes": int(result)}))
            """
        )
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=False)
    if out.returncode != 0:
        return {"failed": out.stderr.strip().splitlines()[-1] if out.stderr.strip() else f"exit {out.returncode}"}
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=100_000_000)
    parser.add_argument("--folder", type=Path, help="where to write the dataset (default: a temporary folder)")
    parser.add_argument("--memory-limit", default="6GB", help="DuckDB's memory limit in every run")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--in-memory", action="store_true", help="also time the pandas path")
    parser.add_argument("--keep", action="store_true", help="keep the generated files")
    args = parser.parse_args()
    print(machine())
    base = Path(tempfile.mkdtemp(dir=args.folder))
    folder = base / "dataset"
    folder.mkdir()
    try:
        seconds = generate(folder, args.rows)
        size = sum(p.stat().st_size for p in folder.glob("*.parquet"))
        print(
            f"\n{args.rows:,} rows in {len(list(folder.glob('*.parquet')))} Parquet files, {size / 1e9:.2f} GB "
            f"(generated in {seconds:.0f} s); memory limit {args.memory_limit}"
        )
        print("| run | time | peak RSS | classes |")
        print("|---|---|---|---|")
        runs = dict(RUNS)
        if args.in_memory:
            runs["privdash diagnose, in memory (pandas)"] = IN_MEMORY
        for name, body in runs.items():
            best: dict[str, float] | None = None
            for _ in range(args.repeat):
                measured = run(name, body, folder, args.memory_limit)
                if "failed" in measured or best is None or measured["seconds"] < best["seconds"]:
                    best = measured
                if "failed" in measured:
                    break
            assert best is not None
            if "failed" in best:
                print(f"| {name} | failed: {best['failed']} | | |")
            else:
                print(f"| {name} | {best['seconds']:.1f} s | {best['peak'] / 2**30:.2f} GiB | {best['classes']:,} |")
    finally:
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)
        else:
            print(f"kept: {folder}")


if __name__ == "__main__":
    main()
