"""Wide files: a CSV of 200,000 rows x 400 columns of which a diagnosis needs 8 (the QIs), through the command line
as a user runs it (the default ``auto`` engine), against DuckDB reading the file and grouping by those 8 columns;
both whole processes, started in turn (A B A B) by ``farm-bench`` when it is installed (CPU time, wall time and peak
memory of each process; the ratio pair by pair), else timed with ``time.perf_counter`` around ``subprocess.run``.

The file: 8 QIs ``q0``..``q7`` (text and integer codes of 2 to 10 levels, as :func:`bench.bench_engines.make_table`),
then ``--width - 8`` columns of integers (0..999) and decimals with two digits, in turn, written under a temporary
folder and deleted after. Run: ``python -m bench.bench_wide --rows 200000 --width 400``.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from bench._common import machine
from bench.bench_read import diagnose_command, duckdb_command, whole_processes


def write_wide_table(path: Path, rows: int, width: int, seed: int = 3) -> None:
    """The benchmark's wide CSV (see the module docstring), written by Arrow."""
    import pyarrow as pa
    import pyarrow.csv as pa_csv

    rng = np.random.default_rng(seed)
    columns: dict[str, object] = {}
    for i, levels in enumerate((2, 5, 10, 9, 7, 4, 3, 6)):
        codes = rng.integers(0, levels, rows)
        columns[f"q{i}"] = codes if i % 2 else np.array([f"v{j}" for j in range(levels)])[codes]
    for j in range(width - 8):
        values = rng.integers(0, 1000, rows)
        columns[f"c{j}"] = values if j % 2 else np.round(values / 7, 2)
    pa_csv.write_csv(pa.table(columns), path, pa_csv.WriteOptions(quoting_style="none"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--width", type=int, default=400)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--engine", default=None, help="privdash's --engine (default: none given, auto)")
    args = parser.parse_args()
    print(machine())
    qis = ",".join(f"q{i}" for i in range(8))
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "wide.csv"
        write_wide_table(path, args.rows, args.width)
        size = path.stat().st_size
        print(f"\nwide CSV: {args.rows:,} rows x {args.width} columns, {size / 2**20:.0f} MiB; --qi {qis}")
        first = diagnose_command(path, qis) + (["--engine", args.engine] if args.engine else [])
        second = duckdb_command(path, qis)
        farm = shutil.which("farm-bench")
        if farm:
            baseline = " ".join(second[:2]) + " " + repr(second[2])
            subprocess.run(
                [farm, "-n", str(args.repeat), "--warmup", "1", "--timeout", "900", "--vs", baseline, "--", *first],
                check=True,
            )
            return
        privdash_s, duckdb_s, ratio = whole_processes(first, second, args.repeat)
        print(f"privdash {privdash_s:.2f} s, DuckDB {duckdb_s:.2f} s, ratio {ratio:.2f}x (wall, medians)")


if __name__ == "__main__":
    sys.exit(main())
