"""Full diagnosis speed on Adult against a naive pandas implementation of the same measures, in one run.

Target (issue: diagnostics core): the full diagnosis (class sizes, k, records below k, every privacy model and the
three attacker risks, one sensitive attribute) on Adult (30,162 rows, 8 QIs) under 0.2 s.

The naive approach computes the same numbers the way a pandas user would: ``groupby(qis).size()`` for the
classes, ``groupby(qis)[sa].value_counts()`` for the sensitive distributions, then per-class arithmetic on those
Series. Its values are checked against privdash's. pyCANON's time for the same models is printed when installed.

Usage: ``python -m bench.bench_diagnose [--repeat R]``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from bench._common import best_time, data_path, machine, ratio
from privdash.data.tables import read_table
from privdash.measure.diagnose import diagnose

QIS = ["sex", "age", "race", "marital-status", "education", "native-country", "workclass", "salary-class"]
SENSITIVE = "occupation"


def naive(data: pd.DataFrame, threshold: float = 0.2) -> dict[str, float]:
    """The same headline numbers with plain pandas group-bys (equal-distance t, log2 delta, as privdash)."""
    sizes = data.groupby(QIS).size()
    n = len(data)
    counts = data.groupby(QIS)[SENSITIVE].value_counts()
    q = counts / counts.groupby(level=list(range(len(QIS)))).transform("sum")
    p = data[SENSITIVE].value_counts(normalize=True)
    p_of = p.reindex(q.index.get_level_values(-1)).to_numpy()
    diff = q.to_numpy() - p_of
    present = pd.Series(np.abs(diff) - p_of, index=q.index).groupby(level=list(range(len(QIS)))).sum()
    t = float((0.5 * (1 + present)).max())
    entropy = (-q * np.log(q)).groupby(level=list(range(len(QIS)))).sum()
    ordered = counts.sort_values(ascending=False).groupby(level=list(range(len(QIS))))
    largest = ordered.nth(0).groupby(level=list(range(len(QIS)))).sum()
    tail = counts.groupby(level=list(range(len(QIS)))).sum() - largest
    recursive = (largest / tail.replace(0, np.nan)).max()
    gain = diff / p_of
    return {
        "k": int(sizes.min()),
        "records_below_5": int(sizes[sizes < 5].sum()),
        "prosecutor_average": float(len(sizes) / n),
        "prosecutor_records_at_risk": float(sizes[1 / sizes > threshold].sum() / n),
        "l_distinct": int(data.groupby(QIS)[SENSITIVE].nunique().min()),
        "l_entropy": float(np.exp(entropy).min()),
        "recursive_threshold": float(recursive) if tail.min() > 0 else float("inf"),
        "t_closeness": t,
        "delta_disclosure": float(np.abs(np.log2(q.to_numpy() / p_of)).max()),
        "beta_basic": float(gain[diff > 0].max()),
    }


def ours(data: pd.DataFrame) -> dict[str, float]:
    result = diagnose(data, QIS, sensitive=[SENSITIVE])
    models = result.sensitive_models[SENSITIVE].summary()
    return {
        "k": result.k,
        "records_below_5": result.classes.records_below(5),
        "prosecutor_average": result.risk.prosecutor.average,
        "prosecutor_records_at_risk": result.risk.prosecutor.records_at_risk,
        "l_distinct": models["l_distinct"],
        "l_entropy": models["l_entropy"],
        "recursive_threshold": models["recursive_threshold"],
        "t_closeness": models["t_closeness"],
        "delta_disclosure": models["delta_disclosure"],
        "beta_basic": models["beta_basic"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description="Full diagnosis benchmark on Adult")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--pycanon", action="store_true", help="also time pyCANON on the same models (slow)")
    args = parser.parse_args()
    data = read_table(data_path("arx_adult", "adult.csv"))
    print(f"machine: {machine()}")
    print(f"Adult: {len(data):,} rows, {len(QIS)} QIs, sensitive attribute {SENSITIVE}")
    a, b = ours(data), naive(data)
    for key, value in a.items():
        assert np.isclose(value, b[key], rtol=1e-9, equal_nan=True) or value == b[key], (key, value, b[key])
    ours_time = best_time(lambda: diagnose(data, QIS, sensitive=[SENSITIVE]), repeat=args.repeat)
    naive_time = best_time(lambda: naive(data), repeat=max(2, args.repeat // 2))
    print()
    print("| measure | privdash | naive pandas | speed-up | target |")
    print("|---|---|---|---|---|")
    print(
        f"| full diagnosis, Adult, 8 QIs, 1 SA | {ours_time * 1e3:.1f} ms | {naive_time * 1e3:.1f} ms "
        f"(subset of the measures) | {ratio(naive_time, ours_time)} | < 200 ms |"
    )
    if args.pycanon:
        from pycanon import anonymity

        frame = data.reset_index(drop=True)
        start = time.perf_counter()
        for check in (
            anonymity.k_anonymity,
            lambda d, q: anonymity.l_diversity(d, q, [SENSITIVE]),
            lambda d, q: anonymity.entropy_l_diversity(d, q, [SENSITIVE]),
            lambda d, q: anonymity.t_closeness(d, q, [SENSITIVE]),
            lambda d, q: anonymity.delta_disclosure(d, q, [SENSITIVE]),
            lambda d, q: anonymity.basic_beta_likeness(d, q, [SENSITIVE]),
        ):
            check(frame, QIS)
        print(f"| pyCANON, same models | - | {time.perf_counter() - start:.2f} s | - | - |")


if __name__ == "__main__":
    main()
