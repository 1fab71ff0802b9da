"""Privacy-model speed on the compact class summary: every model for one sensitive attribute.

Measures :func:`privdash.measure.models.sensitive_models` (alpha-k, distinct / entropy / recursive l, t-closeness,
delta-disclosure, basic and enhanced beta) after the classes are built, for the equal, ordered and hierarchical
t-closeness distances, on

* UCI Adult (30,162 rows; QIs sex, age, race, marital-status; SA occupation with the ARX hierarchy), and
* a synthetic table (default 2,000,000 rows, about 100,000 classes, an SA with 200 values and a 3-level
  hierarchy), which stresses the dense blocks of the ordered and hierarchical distances.

pyCANON's loops (per class and value) are timed on Adult for reference with ``--pycanon``.

Usage: ``python -m bench.bench_models [--rows N] [--repeat R] [--pycanon]``.
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd

from bench._common import best_time, data_path, machine, peak_memory
from privdash.data.tables import read_table
from privdash.measure.classes import equivalence_classes
from privdash.measure.models import sensitive_models


def synthetic(rows: int, seed: int = 11) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "a": rng.integers(0, 100, rows),
            "b": rng.integers(0, 100, rows),
            "c": rng.integers(0, 10, rows),
            "s": rng.zipf(1.3, rows) % 200,
        }
    )


def run(label: str, classes, name: str, hierarchy, repeat: int) -> None:
    dist = classes.sensitive[name]
    print(f"{label}: {classes.n_records:,} records, {classes.n_classes:,} classes, m = {dist.n_values}")
    for distance in ("equal", "ordered", "hierarchical"):
        if distance == "ordered" and not dist.ordered:
            continue

        def job(distance: str = distance) -> None:
            sensitive_models(classes, name, t_distance=distance, hierarchy=hierarchy)

        seconds = best_time(job, repeat=repeat)
        peak = peak_memory(job)
        print(
            f"  all models, t {distance:>12}: {seconds * 1000:8.1f} ms, peak extra memory {peak.total / 2**20:7.1f} MiB"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--pycanon", action="store_true", help="also time pyCANON on Adult (slow)")
    args = parser.parse_args()
    print(f"machine: {machine()}")

    adult = read_table(data_path("arx_adult", "adult.csv"))
    table = pd.read_csv(
        data_path("arx_adult", "hierarchies", "adult_hierarchy_occupation.csv"), sep=";", header=None, dtype=str
    )
    qis = ["sex", "age", "race", "marital-status"]
    classes = equivalence_classes(adult, qis, sensitive=["occupation"])
    run("adult", classes, "occupation", table, args.repeat)
    if args.pycanon:
        from pycanon import anonymity

        data = adult[[*qis, "occupation"]].reset_index(drop=True)
        seconds = best_time(lambda: anonymity.t_closeness(data, qis, ["occupation"]), repeat=1)
        print(f"  pyCANON t_closeness alone: {seconds * 1000:8.1f} ms")

    data = synthetic(args.rows)
    hierarchy = {v: (f"g{v // 5}", f"h{v // 25}", "*") for v in range(200)}
    classes = equivalence_classes(data, ["a", "b", "c"], sensitive=["s"])
    run("synthetic", classes, "s", hierarchy, args.repeat)


if __name__ == "__main__":
    main()
