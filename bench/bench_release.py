"""Differentially private releases: time of each query through OpenDP (calibration, the pass over the rows, noise).

* UCI Adult (30,162 rows): count, sum and mean of age (Laplace and Gaussian), a histogram of race over a declared
  domain, the class-size table of sex x race x education over declared domains, and DP key selection of
  native-country;
* a synthetic table (default 1,000,000 rows) for count, sum, mean and a 100-category histogram.

Usage: ``python -m bench.bench_release [--rows N] [--repeat R]``.
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd

from bench._common import best_time, data_path, machine
from privdash.data.tables import read_table
from privdash.dp.release import dp_class_sizes, dp_count, dp_histogram, dp_mean, dp_sum


def report(label: str, seconds: float) -> None:
    print(f"  {label:<58} {seconds * 1000:9.2f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(machine())
    adult = read_table(data_path("arx_adult", "adult.csv"))
    print(f"UCI Adult ({len(adult):,} rows)")
    r = args.repeat
    report("count (laplace)", best_time(lambda: dp_count(adult, epsilon=1), repeat=r))
    report("sum of age in [0, 100] (laplace)", best_time(lambda: dp_sum(adult, "age", (0, 100), epsilon=1), repeat=r))
    report(
        "mean of age in [0, 100] (gaussian, δ = 1e-6)",
        best_time(lambda: dp_mean(adult, "age", (0, 100), epsilon=1, delta=1e-6, mechanism="gaussian"), repeat=r),
    )
    races = sorted(adult["race"].unique())
    report(
        "histogram of race (declared domain)",
        best_time(lambda: dp_histogram(adult, "race", epsilon=1, domain=races), repeat=r),
    )
    qis = ["sex", "race", "education"]
    domains = {q: sorted(adult[q].astype(str).unique()) for q in qis}
    cells = int(np.prod([len(v) for v in domains.values()]))
    report(
        f"class-size table sex x race x education ({cells} cells)",
        best_time(lambda: dp_class_sizes(adult, qis, epsilon=1, domains=domains), repeat=r),
    )
    report(
        "key selection of native-country (δ = 1e-6)",
        best_time(lambda: dp_histogram(adult, "native-country", epsilon=1, delta=1e-6), repeat=r),
    )
    rng = np.random.default_rng(0)
    synthetic = pd.DataFrame(
        {"x": rng.normal(50, 20, size=args.rows), "category": rng.integers(0, 100, size=args.rows).astype(str)}
    )
    print(f"Synthetic ({args.rows:,} rows)")
    report("count (laplace)", best_time(lambda: dp_count(synthetic, epsilon=1), repeat=r))
    report("sum of x in [0, 100] (laplace)", best_time(lambda: dp_sum(synthetic, "x", (0, 100), epsilon=1), repeat=r))
    report("mean of x in [0, 100] (laplace)", best_time(lambda: dp_mean(synthetic, "x", (0, 100), epsilon=1), repeat=r))
    domain = [str(i) for i in range(100)]
    report(
        "histogram of 100 categories (declared domain)",
        best_time(lambda: dp_histogram(synthetic, "category", epsilon=1, domain=domain), repeat=r),
    )


if __name__ == "__main__":
    main()
