"""Re-identification risk speed on the compact class summary: attacker models, curves, individual risk, population
counts and population-uniqueness estimates.

Times, after the classes are built (their cost is in ``bench_classes``):

* UCI Adult (30,162 rows, 8 QIs: every column but salary-class): prosecutor / journalist / marketer (one
  :func:`risk_summary`), the records-at-risk curves, sdcMicro's individual risk with synthetic weights, and the
  population-uniqueness estimators for several sampling fractions;
* ARX's research subset of Adult (3,016 rows) against the full Adult as population table
  (:func:`population_counts_from_table`, the journalist model's population side);
* a synthetic table (default 1,000,000 rows) for the same summary, and the slowest population-uniqueness case we
  know (almost every record unique, where Newton-Raphson exhausts its tries).

Usage: ``python -m bench.bench_risk [--rows N] [--repeat R]``.
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd

from bench._common import best_time, data_path, machine
from privdash.data.tables import read_table
from privdash.measure.classes import equivalence_classes
from privdash.measure.population import (
    population_counts_from_size,
    population_counts_from_table,
    population_counts_from_weights,
    population_uniqueness,
    population_uniqueness_from_sizes,
)
from privdash.measure.risk import (
    individual_risk,
    prosecutor_risk,
    records_at_risk_by_k,
    records_at_risk_curve,
    risk_summary,
)


def report(label: str, seconds: float) -> None:
    print(f"  {label:<52} {seconds * 1000:9.2f} ms")


def summary_timings(classes, repeat: int) -> None:
    population = population_counts_from_size(classes, sampling_fraction=0.1)
    report("risk_summary (3 attacker models)", best_time(lambda: risk_summary(classes, population), repeat=repeat))
    prosecutor = prosecutor_risk(classes)
    report(
        "records_at_risk_curve (all breakpoints)", best_time(lambda: records_at_risk_curve(prosecutor), repeat=repeat)
    )
    report("records_at_risk_by_k (k = 1 .. max f + 1)", best_time(lambda: records_at_risk_by_k(classes), repeat=repeat))
    if classes.weight_sums is not None:
        report("individual_risk (weights)", best_time(lambda: individual_risk(classes), repeat=repeat))
        report(
            "population_counts_from_weights",
            best_time(lambda: population_counts_from_weights(classes), repeat=repeat),
        )


def uniqueness_timings(classes, repeat: int) -> None:
    for fraction in (0.01, 0.1, 0.2, 0.5):
        seconds = best_time(lambda f=fraction: population_uniqueness(classes, sampling_fraction=f), repeat=repeat)
        result = population_uniqueness(classes, sampling_fraction=fraction)
        report(
            f"population_uniqueness pi={fraction:<4} -> {result.dankar.model.value:<6} "
            f"{result.population_uniqueness:.4f}",
            seconds,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    print(f"machine: {machine()}")

    adult = read_table(data_path("arx_adult", "adult.csv"))
    qis = [c for c in adult.columns if c != "salary-class"]
    rng = np.random.default_rng(5)
    weighted = adult.assign(w=rng.uniform(5, 15, len(adult)))
    classes = equivalence_classes(weighted, qis, weights="w")
    print(f"adult: {classes.n_records:,} records, {len(qis)} QIs, {classes.n_classes:,} classes")
    summary_timings(classes, args.repeat)
    uniqueness_timings(classes, args.repeat)

    subset = read_table(data_path("arx_adult", "adult_subset.csv"))
    sample = equivalence_classes(subset, qis)
    print(f"adult research subset: {sample.n_records:,} records against the full table as population")
    report(
        "population_counts_from_table (30,162 people)",
        best_time(lambda: population_counts_from_table(sample, adult), repeat=args.repeat),
    )
    summary_timings(sample, args.repeat)

    data = pd.DataFrame(
        {
            "a": rng.integers(0, 90, args.rows),
            "b": rng.integers(0, 2, args.rows),
            "c": rng.integers(0, 3000, args.rows),
            "w": rng.uniform(20, 80, args.rows),
        }
    )
    big = equivalence_classes(data, ["a", "b", "c"], weights="w")
    print(f"synthetic: {big.n_records:,} records, {big.n_classes:,} classes")
    summary_timings(big, args.repeat)
    uniqueness_timings(big, max(1, args.repeat // 2))

    hard = np.concatenate([np.ones(29_000, dtype=np.int64), np.full(500, 2)])
    print("hard case for the solvers: 29,000 uniques and 500 pairs (no estimator converges but Zayatz)")
    for fraction in (0.01, 0.2):
        seconds = best_time(
            lambda f=fraction: population_uniqueness_from_sizes(hard, sampling_fraction=f), repeat=args.repeat
        )
        report(f"population_uniqueness_from_sizes pi={fraction}", seconds)


if __name__ == "__main__":
    main()
