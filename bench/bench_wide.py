"""CSV files to the class table through the command line, as a user runs it (``privdash diagnose FILE --qi
q0,...,q7``, the default ``auto`` engine unless ``--engine``), against DuckDB reading the file and grouping by the
same 8 columns in a Python process; both whole processes, started in turn (A B A B) by ``farm-bench`` when it is
installed (CPU time, wall time and peak memory of each process; the ratio pair by pair), else timed with
``time.perf_counter`` around ``subprocess.run``.

Two files, written under a temporary folder and deleted after:

* wide (default): 8 QIs ``q0``..``q7`` (text and integer codes of 2 to 10 levels, as
  :func:`bench.bench_engines.make_table`), then ``--width - 8`` columns of integers (0..999) and decimals with two
  digits, in turn. Run: ``python -m bench.bench_wide --rows 200000 --width 400``.
* ``--text-qis``: only the 8 QIs, text of 3 values each (``v0``, ``v1``, ``v2``: 6,561 classes), the CSV of the
  issue's class-table goal; DuckDB reads it ``all_varchar`` as privdash's DuckDB engine does. Run:
  ``python -m bench.bench_wide --text-qis --rows 5000000`` (and ``--rows 20000000``).
"""

from __future__ import annotations

import argparse
import shlex
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


def write_text_qis(path: Path, rows: int, seed: int = 1) -> None:
    """8 text QIs of 3 values each, written by Arrow a block of rows at a time."""
    import pyarrow as pa
    import pyarrow.csv as pa_csv

    rng = np.random.default_rng(seed)
    schema = pa.schema([(f"q{i}", pa.string()) for i in range(8)])
    with pa_csv.CSVWriter(path, schema, write_options=pa_csv.WriteOptions(quoting_style="none")) as writer:
        for start in range(0, rows, 5_000_000):
            n = min(5_000_000, rows - start)
            levels = np.array(["v0", "v1", "v2"])
            writer.write_table(pa.table({f"q{i}": levels[rng.integers(0, 3, n)] for i in range(8)}, schema=schema))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--width", type=int, default=400)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--engine", default=None, help="privdash's --engine (default: none given, auto)")
    parser.add_argument("--text-qis", action="store_true", help="the file of 8 text QIs (see the docstring)")
    args = parser.parse_args()
    print(machine())
    qis = ",".join(f"q{i}" for i in range(8))
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "table.csv"
        if args.text_qis:
            write_text_qis(path, args.rows)
            shape = f"{args.rows:,} rows x 8 text QIs"
        else:
            write_wide_table(path, args.rows, args.width)
            shape = f"{args.rows:,} rows x {args.width} columns"
        print(f"\nCSV: {shape}, {path.stat().st_size / 2**20:.0f} MiB; --qi {qis}")
        first = diagnose_command(path, qis) + ["--json"] + (["--engine", args.engine] if args.engine else [])
        second = duckdb_command(path, qis, text=args.text_qis)
        farm = shutil.which("farm-bench")
        if farm:
            baseline = shlex.join(second)
            subprocess.run(
                [farm, "-n", str(args.repeat), "--warmup", "1", "--timeout", "900", "--vs", baseline, "--", *first],
                check=True,
            )
            return
        privdash_s, duckdb_s, ratio = whole_processes(first, second, args.repeat)
        print(f"privdash {privdash_s:.2f} s, DuckDB {duckdb_s:.2f} s, ratio {ratio:.2f}x (wall, medians)")


if __name__ == "__main__":
    sys.exit(main())
