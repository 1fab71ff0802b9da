"""Speed of the perturbative steps and of the perturbed-data risk measures.

Targets (issue: perturbative masking):
* additive noise (uncorrelated and correlated), rank swapping and PRAM on 1,000,000 rows x 5 attributes: under 2 s
  each;
* shuffling a sensitive attribute within the classes of two quasi-identifiers, 1,000,000 rows: reported;
* record linkage, interval disclosure and IL1s on 100,000 rows x 5 numerical columns: under 10 s.

The numerical table has five columns of different shapes (normal, log-normal, exponential, integer ages, a column
correlated with the first); the categorical one five columns of 4 to 50 categories with skewed frequencies. The
risk is measured on the first 100,000 rows after noise of 10 % of each standard deviation and after rank swapping
with p = 5.

Usage: ``python -m bench.bench_perturbation [--rows N] [--risk-rows N] [--repeat R]``.
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd

from bench._common import best_time, machine
from privdash.measure.perturbed import perturbation_risk
from privdash.transform.perturbation import add_noise, pram, rank_swap, shuffling

NUMERICAL = ["x1", "x2", "x3", "x4", "x5"]
CATEGORICAL = ["c1", "c2", "c3", "c4", "c5"]


def numerical_table(rows: int, seed: int = 3) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    x1 = rng.normal(50, 10, rows)
    return pd.DataFrame(
        {
            "x1": x1,
            "x2": rng.lognormal(10, 1, rows),
            "x3": rng.exponential(1000, rows),
            "x4": rng.integers(0, 100, rows),
            "x5": 2 * x1 + rng.normal(0, 5, rows),
        }
    )


def categorical_table(rows: int, seed: int = 4) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    columns = {}
    for name, size in zip(CATEGORICAL, (4, 8, 12, 20, 50), strict=True):
        weights = 1.0 / np.arange(1, size + 1)
        columns[name] = rng.choice([f"{name}_{i}" for i in range(size)], rows, p=weights / weights.sum())
    return pd.DataFrame(columns)


def main() -> None:
    parser = argparse.ArgumentParser(description="perturbative masking benchmark")
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--risk-rows", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"machine: {machine()}")
    print(f"rows: {args.rows:,}; risk measured on {args.risk_rows:,} rows")
    print()
    numbers = numerical_table(args.rows)
    categories = categorical_table(args.rows)
    mixed = pd.concat([categories[["c1", "c2"]], numbers[["x2"]]], axis=1)
    runs = {
        "additive noise, uncorrelated (share 0.1)": lambda: add_noise(numbers, columns=NUMERICAL, share=0.1, seed=1),
        "additive noise, correlated (share 0.1)": lambda: add_noise(
            numbers, columns=NUMERICAL, share=0.1, method="correlated", seed=1
        ),
        "rank swapping (p = 5)": lambda: rank_swap(numbers, columns=NUMERICAL, p=5, seed=1),
        "invariant PRAM (pd 0.8, alpha 0.5)": lambda: pram(categories, columns=CATEGORICAL, seed=1),
        "shuffle x2 within classes of c1, c2 (32 classes)": lambda: shuffling(
            mixed, columns=["x2"], quasi_identifiers=["c1", "c2"], seed=1
        ),
    }
    print(f"| step ({args.rows:,} rows x 5 attributes) | time | target |")
    print("|---|---|---|")
    for name, run in runs.items():
        seconds = best_time(run, repeat=args.repeat)
        target = "reported" if name.startswith("shuffling") else "< 2 s"
        print(f"| {name} | {seconds:.2f} s | {target} |")
    print()
    original = numbers.head(args.risk_rows)
    print(f"| perturbed data ({args.risk_rows:,} rows x 5 columns) | time | linkage | dRisk | IL1s | target |")
    print("|---|---|---|---|---|---|")
    for name, perturbed in {
        "noise, share 0.1": add_noise(original, columns=NUMERICAL, share=0.1, seed=2).data,
        "rank swapping, p = 5": rank_swap(original, columns=NUMERICAL, p=5, seed=2).data,
    }.items():

        def measure(perturbed: pd.DataFrame = perturbed) -> object:
            return perturbation_risk(original, perturbed, NUMERICAL)

        seconds = best_time(measure, repeat=args.repeat)
        risk = perturbation_risk(original, perturbed, NUMERICAL)
        print(
            f"| {name} | {seconds:.2f} s | {risk.linkage:.2%} | {risk.interval_disclosure:.2%} | {risk.il1s:.4f} | "
            "< 10 s |"
        )


if __name__ == "__main__":
    main()
