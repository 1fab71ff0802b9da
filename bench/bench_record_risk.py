"""Every record with its class size, written to Parquet: privdash's DuckDB engine against DuckDB's and polars'
window counts, same file, same run.

Generates the table of :mod:`bench.bench_engines` (``--rows`` rows x 8 QIs + 1 sensitive attribute) as Parquet,
then times, each in a fresh process with its own peak resident memory:

* privdash: ``diagnose(path, engine="duckdb")`` (the whole diagnosis, from the aggregate) and then
  ``write_record_sizes`` (every record streamed with its class size and prosecutor risk);
* bare DuckDB: ``COPY (SELECT *, COUNT(*) OVER (PARTITION BY qis) ...) TO 'out.parquet'`` (the sizes only);
* polars: ``scan_parquet(...).with_columns(pl.len().over(qis)).sink_parquet(...)``.

Run: ``python -m bench.bench_record_risk --rows 5000000``.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from bench._common import machine
from bench.bench_engines import QIS, SA, make_table, run

RUNS = {
    "privdash diagnose + write_record_sizes (duckdb engine)": """
        from privdash.engines.streaming import write_record_sizes
        from privdash.measure.diagnose import diagnose
        classes = diagnose(PATH, QIS, sensitive=[SA], engine="duckdb").classes
        written = write_record_sizes(PATH, classes, PATH + ".privdash.parquet")
        result = classes.n_classes
    """,
    "DuckDB COUNT(*) OVER (PARTITION BY qis) to Parquet (bare)": """
        import duckdb
        columns = ", ".join(QIS)
        duckdb.sql(
            f"COPY (SELECT *, COUNT(*) OVER (PARTITION BY {columns}) AS class_size FROM read_parquet('{PATH}')) "
            f"TO '{PATH}.duckdb.parquet' (FORMAT parquet)"
        )
        distinct = f"SELECT DISTINCT {columns} FROM read_parquet('{PATH}')"
        result = duckdb.sql(f"SELECT COUNT(*) FROM ({distinct})").fetchall()[0][0]
    """,
    "polars len().over(qis) sink_parquet": """
        import polars as pl
        sizes = pl.scan_parquet(PATH).with_columns(pl.len().over(QIS).alias("class_size"))
        sizes.sink_parquet(PATH + ".polars.parquet")
        result = pl.scan_parquet(PATH).select(QIS).unique().collect().height
    """,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=5_000_000)
    parser.add_argument("--repeat", type=int, default=2, help="runs of each measurement; the best is kept")
    args = parser.parse_args()
    print(machine())
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "table.parquet"
        make_table(args.rows).to_parquet(path, index=False)
        print(f"{args.rows:,} rows x {len(QIS)} QIs + {SA}, Parquet {path.stat().st_size / 1e6:.0f} MB\n")
        print("| run | time | peak RSS | classes |\n|---|---|---|---|")
        for name, body in RUNS.items():
            measured = run(name, body, path, repeat=args.repeat)
            seconds, peak, classes = measured["seconds"], measured["peak"] / 2**20, measured["classes"]
            print(f"| {name} | {seconds:.2f} s | {peak:,.0f} MB | {classes:,} |")


if __name__ == "__main__":
    main()
