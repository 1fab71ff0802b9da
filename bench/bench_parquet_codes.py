"""Counting a Parquet file from its dictionary codes against DuckDB's bare GROUP BY, whole processes.

Writes (with DuckDB, deterministically) a Parquet file of ``--rows`` rows x 8 text quasi-identifiers stored
dictionary-encoded, as DuckDB, Spark and pandas store text (``v0``... with 10, 2, 12, 8, 5, 5, 4 and 6 values; 1 in
100 values of ``q0`` missing; ``--levels`` sets other numbers of values), in DuckDB's row groups of 122,880 rows,
and prints the two commands to compare:

* ``privdash diagnose FILE --qi q0,...,q7 --json`` (``engine auto``: counted from the dictionary codes);
* bare DuckDB in a fresh Python process: ``SELECT q0, ..., q7, COUNT(*) FROM 'FILE' GROUP BY ALL`` fetched as a
  DataFrame (the aggregate the diagnosis needs, nothing else).

Time them in turn, A B A B, with peak resident memory (e.g. ``/usr/bin/time -v`` on each). Run:
``python -m bench.bench_parquet_codes --rows 50000000 --path /tmp/codes.parquet``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

QIS = [f"q{i}" for i in range(8)]
LEVELS = (10, 2, 12, 8, 5, 5, 4, 6)

BARE_DUCKDB = (
    "import duckdb; c = duckdb.connect(); c.execute('SET enable_progress_bar = false'); "
    "f = c.sql(\"SELECT {columns}, COUNT(*) AS n FROM read_parquet('{path}') GROUP BY ALL\").df(); print(len(f))"
)


def generate(path: Path, rows: int, levels: tuple[int, ...] = LEVELS) -> float:
    """Write the file; return the seconds taken."""
    import duckdb

    started = time.perf_counter()
    columns = [
        f"'v' || (hash(i * 8 + {j}) % {count})::VARCHAR AS {name}"
        for j, (name, count) in enumerate(zip(QIS, levels, strict=True))
    ]
    columns[0] = f"CASE WHEN hash(i * 8 + 77) % 100 = 0 THEN NULL ELSE {columns[0].removesuffix(' AS q0')} END AS q0"
    connection = duckdb.connect()
    connection.execute(
        f"COPY (SELECT {', '.join(columns)} FROM range({rows}) t(i)) TO '{path}' (FORMAT parquet, COMPRESSION zstd)"
    )
    connection.close()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=50_000_000)
    parser.add_argument("--path", type=Path, default=Path("/tmp/codes.parquet"))
    parser.add_argument(
        "--levels", default=",".join(map(str, LEVELS)), help="the number of values of each of the 8 columns"
    )
    args = parser.parse_args()
    if not args.path.exists():
        levels = tuple(int(count) for count in args.levels.split(","))
        if len(levels) != len(QIS):
            parser.error(f"--levels needs {len(QIS)} numbers")
        seconds = generate(args.path, args.rows, levels)
        print(f"wrote {args.path} ({args.path.stat().st_size / 2**20:.0f} MiB) in {seconds:.1f} s", file=sys.stderr)
    print(f"privdash diagnose {args.path} --qi {','.join(QIS)} --json")
    print(f"{sys.executable} -c {BARE_DUCKDB.format(columns=', '.join(QIS), path=args.path)!r}")


if __name__ == "__main__":
    main()
