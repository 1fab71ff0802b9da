"""privdash's Spark engine against Spark's own GROUP BY, on one Parquet dataset in one session.

Generates a Parquet dataset (``--files`` files) of ``--rows`` rows x 8 quasi-identifiers + 1 sensitive attribute
(the table of :mod:`bench.bench_engines`), starts one Spark session on ``--master`` (default ``local[2]``), and
times, best of ``--repeat`` rounds after one warm-up run each (the first query of a JVM pays for class loading and
JIT):

* bare Spark: ``spark.read.parquet(folder).groupBy(qis + [sa]).count().collect()``, and the same fetched with
  ``toArrow()`` instead of ``collect()`` (no Python object per row);
* privdash's counting: ``aggregate_table(folder, qis + [sa], engine="spark")`` (the same GROUP BY, fetched as
  Arrow and typed);
* privdash's diagnosis: ``diagnose(folder, qis, sensitive=[sa], engine="spark")`` (counting, then the class
  summary, the privacy models and the risk measures from the aggregate).

The target is diagnosis <= 1.5 x bare Spark. Run: ``python -m bench.bench_spark --rows 5000000``.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from bench._common import best_time, machine
from bench.bench_engines import QIS, SA, make_table


def write_dataset(folder: Path, rows: int, files: int, levels: tuple[int, ...]) -> int:
    """The benchmark table as ``files`` Parquet files in ``folder``; returns their total size in bytes."""
    table = pa.Table.from_pandas(make_table(rows, levels), preserve_index=False)
    bounds = np.linspace(0, rows, files + 1).astype(int)
    for i in range(files):
        pq.write_table(table.slice(bounds[i], bounds[i + 1] - bounds[i]), folder / f"part-{i}.parquet")
    return sum(path.stat().st_size for path in folder.glob("*.parquet"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=5_000_000, help="rows of the dataset (default 5,000,000)")
    parser.add_argument("--files", type=int, default=4, help="Parquet files the dataset is split into (default 4)")
    parser.add_argument("--master", default="local[2]", help="Spark master (default local[2])")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs of each measurement; the best is kept")
    parser.add_argument(
        "--levels",
        default="3,3,3,3,3,3,3,3",
        help="levels of the eight QIs (default 3 each: 6,561 classes; 2,5,10,9,7,4,3,6 gives 453,600)",
    )
    args = parser.parse_args()

    import pyspark

    from privdash.engines.aggregate import aggregate_table
    from privdash.engines.spark import spark_session
    from privdash.measure.diagnose import diagnose

    print(f"{machine()}, pyspark {pyspark.__version__}, master {args.master}")
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        started = time.perf_counter()
        size = write_dataset(folder, args.rows, args.files, tuple(int(x) for x in args.levels.split(",")))
        print(
            f"dataset: {args.rows:,} rows in {args.files} Parquet files, {size / 1e6:.0f} MB, QI levels {args.levels} "
            f"(written in {time.perf_counter() - started:.1f} s)"
        )
        started = time.perf_counter()
        spark = spark_session(args.master)
        print(f"session started in {time.perf_counter() - started:.1f} s")
        columns = [*QIS, SA]
        results: dict[str, Any] = {}

        def bare() -> None:
            results["bare"] = len(spark.read.parquet(str(folder)).groupBy(*columns).count().collect())

        def bare_arrow() -> None:
            results["bare_arrow"] = spark.read.parquet(str(folder)).groupBy(*columns).count().toArrow().num_rows

        def counting() -> None:
            results["counting"] = len(aggregate_table(str(folder), columns, engine="spark").frame)

        def diagnosis() -> None:
            results["diagnosis"] = diagnose(str(folder), QIS, sensitive=[SA], engine="spark").classes.n_classes

        runs: dict[str, Callable[[], None]] = {
            "bare Spark: read.parquet + groupBy(qis + sa).count().collect()": bare,
            "bare Spark, fetched with toArrow()": bare_arrow,
            "privdash aggregate_table(engine='spark')": counting,
            "privdash diagnose(engine='spark')": diagnosis,
        }
        for run in runs.values():
            run()  # warm-up
        # Round robin: a burst of load on a shared machine slows one run of each, not every run of one.
        times = {label: float("inf") for label in runs}
        for _ in range(args.repeat):
            for label, run in runs.items():
                times[label] = min(times[label], best_time(run, repeat=1))
        spark.stop()
    baseline = times[next(iter(runs))]
    print("| run | time | vs bare Spark |")
    print("|---|---|---|")
    for label, seconds in times.items():
        print(f"| {label} | {seconds:.2f} s | {seconds / baseline:.2f}x |")
    print(
        f"combinations (QIs + SA): {results['bare']:,} bare ({results['bare_arrow']:,} as Arrow), "
        f"{results['counting']:,} privdash; "
        f"equivalence classes: {results['diagnosis']:,}"
    )


if __name__ == "__main__":
    main()
