"""Synthetic data on Adult: fit and sample of the whole table (30,162 rows, 9 columns) by sequential CART and by
MST, with CPU and wall time, and the evaluation (attacks against control, distance, estimates).

Target (issue 23): fit and sample of Adult under a minute on this machine.

Usage: ``python -m bench.bench_synthesis [--repeat R]``.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

from bench._common import data_path, machine
from privdash import read_table
from privdash.application.synthesis import evaluate_synthetic
from privdash.synthesis import SynthesisSettings, split_control, synthesize

QIS = ["age", "sex", "race", "marital-status", "education", "native-country", "workclass", "occupation"]


def timed(function: Callable[[], Any], repeat: int) -> tuple[float, float, Any]:
    """Best wall and CPU seconds over ``repeat`` runs, and the last result."""
    walls, cpus, result = [], [], None
    for _ in range(repeat):
        wall, cpu = time.perf_counter(), time.process_time()
        result = function()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return min(walls), min(cpus), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs per case; the best time is reported")
    args = parser.parse_args()
    adult = read_table(data_path("arx_adult", "adult.csv"))
    print(machine())
    print(f"Adult: {len(adult):,} rows x {adult.shape[1]} columns\n")
    cases = {
        "full (CART, min leaf 5)": SynthesisSettings("full", seed=1),
        "partial (QIs of the records at risk, k = 5)": SynthesisSettings("partial", seed=1),
        "hybrid (share 0.5)": SynthesisSettings("hybrid", seed=1),
        "dp (MST, ε = 1, δ = 1e-6, age 17:90)": SynthesisSettings("dp", epsilon=1.0, bounds={"age": (17, 90)}, seed=1),
    }
    print("| method | wall | CPU | records with synthetic values |")
    print("|---|---|---|---|")
    for name, settings in cases.items():
        wall, cpu, release = timed(lambda s=settings: synthesize(adult, s, quasi_identifiers=QIS[:4]), args.repeat)
        print(f"| {name} | {wall:.2f} s | {cpu:.2f} s | {release.rows_replaced:,} |")
    training, control = split_control(adult, share=0.2, seed=0)
    release = synthesize(training, SynthesisSettings("full", seed=1))

    def evaluate() -> Any:
        return evaluate_synthetic(
            training,
            release,
            control=control,
            quasi_identifiers=QIS,
            sensitive="salary-class",
            estimates=["mean:age by sex"],
        )

    wall, cpu, evaluation = timed(evaluate, 1)
    print(f"\nevaluation of the full release (every training record a target): wall {wall:.2f} s, CPU {cpu:.2f} s")
    for label, report in (("synthetic", evaluation.attacks), ("original", evaluation.original_attacks)):
        rows = [f"{r.attack} {100 * r.targets.rate:.1f}% vs control {100 * r.baseline.rate:.1f}%"
                + (f", risk {100 * r.risk[0]:.1f}%" if r.risk else "")
                for r in (report.linkage, report.singling_out, report.inference) if r is not None]  # fmt: skip
        print(f"  {label}: " + "; ".join(rows))
    distance = evaluation.distance
    print(
        f"  distance: exact copies {100 * distance.exact_copies:.1f}%, closer to training {distance.closer_to_training}"
    )


if __name__ == "__main__":
    main()
