"""Optimal generalization search on Adult, against exhaustive evaluation of the lattice.

Target (issue: generalization and search): the optimal search on ``arx_adult`` with QIs sex, age, race,
marital-status, education, native-country, workclass, salary-class, ARX's hierarchies, k = 5, 2% suppression and
the loss metric in under 1 s. The time covers everything after the table and hierarchies are read: encoding and
grouping the rows once, the search, and publishing the table (generalize + suppress + the core's diagnosis).

Also reported: the same search for the other four metrics, the nodes checked against the lattice size, a cold run
(first call in the process), and the exhaustive baseline (every node rolled up from the finest table), whose
optimum must equal the search's.

Usage: ``python -m bench.bench_search [--repeat R]``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from bench._common import best_time, data_path, machine, ratio
from privdash.data.tables import read_table
from privdash.search.lattice import (
    GeneralizationLattice,
    optimal_generalization,
    suppression_limit,
)
from privdash.targets import PrivacyTargets
from privdash.transform.hierarchy import load_hierarchies
from privdash.utility.metrics import Metric

QIS = ["sex", "age", "race", "marital-status", "education", "native-country", "workclass", "salary-class"]
K = 5
SUPPRESSION = 0.02


def exhaustive(data, hierarchies, metric: Metric) -> tuple[float, float]:  # type: ignore[no-untyped-def]
    """Every node rolled up from the finest table (no pruning): the optimum and the time it took."""
    started = time.perf_counter()
    lattice = GeneralizationLattice(data, hierarchies, quasi_identifiers=QIS)
    limit = suppression_limit(SUPPRESSION, len(data))
    best = np.inf
    for node in lattice.nodes():
        table = lattice._rollup(lattice.bottom, tuple(int(v) for v in node))
        bad = table.counts < K
        if table.counts[bad].sum() <= limit:
            best = min(best, lattice._metric(metric, table, bad))
    return float(best), time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description="Optimal generalization search benchmark (Adult)")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    print(f"machine: {machine()}")
    data = read_table(data_path("arx_adult", "adult.csv"))
    hierarchies = load_hierarchies(data_path("arx_adult", "hierarchies"), QIS)
    size = int(np.prod([hierarchies[c].n_levels for c in QIS]))
    print(
        f"data: arx_adult, {len(data):,} rows; QIs: {', '.join(QIS)}; lattice {size:,} nodes; k={K}, "
        f"suppression {SUPPRESSION:.0%}"
    )

    def search(metric: Metric):  # type: ignore[no-untyped-def]
        return optimal_generalization(
            data, hierarchies, quasi_identifiers=QIS, k=K, max_suppression=SUPPRESSION, metric=metric
        )

    started = time.perf_counter()
    search(Metric.LOSS)
    cold = time.perf_counter() - started
    print(f"cold run (loss, first call in the process): {cold:.3f} s")
    print()
    print("| metric | search | nodes checked | levels | suppressed | value | exhaustive | speed-up | target |")
    print("|---|---|---|---|---|---|---|---|---|")
    for metric in Metric:
        seconds = best_time(lambda metric=metric: search(metric), repeat=args.repeat)
        result = search(metric)
        reference, reference_seconds = exhaustive(data, hierarchies, metric)
        assert np.isclose(result.value, reference, rtol=1e-12), (metric, result.value, reference)
        assert result.k >= K and result.suppressed <= suppression_limit(SUPPRESSION, len(data))
        levels = "".join(str(v) for v in result.levels.values())
        target = "< 1 s" if metric == Metric.LOSS else "-"
        print(
            f"| {metric.value} | {seconds:.3f} s | {result.nodes_checked:,} / {result.lattice_size:,} | {levels} | "
            f"{result.suppressed:,} | {result.value:.6g} | {reference_seconds:.2f} s | "
            f"{ratio(reference_seconds, seconds)} | {target} |"
        )
    targets = PrivacyTargets(k=K)
    lattice_seconds = best_time(lambda: GeneralizationLattice(data, hierarchies, quasi_identifiers=QIS), repeat=3)
    lattice = GeneralizationLattice(data, hierarchies, quasi_identifiers=QIS)
    search_seconds = best_time(
        lambda: GeneralizationLattice(data, hierarchies, quasi_identifiers=QIS).search(
            targets=targets, max_suppression=SUPPRESSION, metric=Metric.LOSS
        ),
        repeat=args.repeat,
    )
    print()
    print(
        f"loss breakdown: encode + group once {lattice_seconds:.3f} s, "
        f"+ search {search_seconds - lattice_seconds:.3f} s (finest table {lattice.bottom.n_classes:,} classes)"
    )


if __name__ == "__main__":
    main()
