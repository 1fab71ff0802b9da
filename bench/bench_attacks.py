"""Measured attacks on Adult: linkage success against prosecutor risk, before and after the k=5 fix, and timings.

Target (issue: measured attacks): all three attacks on Adult (30,162 rows) under 30 s.

Releases attacked, with seven quasi-identifiers (sex, age, race, marital-status, education, native-country,
workclass) and salary-class as the sensitive attribute, every record a target:

* the unprotected table (RELEASED == ORIGINAL): linkage success must equal the prosecutor average risk;
* the k=5 fix of the least-lossy search with ARX's hierarchies and 2% suppression, attacked with the hierarchies:
  the measured linkage success against the bound 1/k;
* age perturbed with Gaussian noise (standard deviation 2 years), matched to the nearest original age;
* half of Adult published unchanged, the other half as the control set (the method of Giomi et al. 2023).

Usage: ``python -m bench.bench_attacks [--repeat R]``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from bench._common import best_time, data_path, machine
from privdash import attack_release, load_hierarchies, optimal_generalization, read_table
from privdash.attack import AttackReport

QIS = ["sex", "age", "race", "marital-status", "education", "native-country", "workclass"]
SENSITIVE = "salary-class"


def _percent(value: float) -> str:
    return f"{100 * value:.3f}%"


def _risk(risk: tuple[float, float, float] | None) -> str:
    return "-" if risk is None else f"{_percent(risk[0])} [{_percent(risk[1])}, {_percent(risk[2])}]"


def _line(name: str, report: AttackReport, seconds: float) -> str:
    linkage, singling, inference = report.linkage, report.singling_out, report.inference
    assert inference is not None
    return (
        f"| {name} | {_percent(linkage.success_rate)} [{_percent(linkage.targets.ci_low)}, "
        f"{_percent(linkage.targets.ci_high)}] | {_percent(report.predicted['prosecutor_average'])} / "
        f"{_percent(report.predicted['prosecutor_highest'])} | {_percent(linkage.baseline.rate)} "
        f"({linkage.baseline_kind}) | {_risk(linkage.risk)} | "
        f"{_percent(singling.success_rate)} ({_percent(singling.baseline.rate)}) | "
        f"{_percent(inference.success_rate)} ({_percent(inference.baseline.rate)}) | {seconds:.2f} s |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs per case; the best time is reported")
    args = parser.parse_args()
    adult = read_table(data_path("arx_adult", "adult.csv"))
    hierarchies = load_hierarchies(data_path("arx_adult", "hierarchies"), QIS)
    print(machine())
    print(f"Adult: {len(adult):,} rows; quasi-identifiers {', '.join(QIS)}; sensitive {SENSITIVE}\n")

    start = time.perf_counter()
    fix = optimal_generalization(adult, hierarchies, k=5, max_suppression=0.02)
    search_seconds = time.perf_counter() - start
    rng = np.random.default_rng(0)
    noisy = adult.assign(age=adult["age"] + rng.normal(0, 2, len(adult)))
    half = rng.permutation(len(adult))
    training, control = adult.iloc[np.sort(half[::2])], adult.iloc[np.sort(half[1::2])]
    cases = [
        ("unprotected", lambda: attack_release(adult, adult, QIS, sensitive=SENSITIVE)),
        (
            "k=5 fix (ARX hierarchies, 2% suppression)",
            lambda: attack_release(adult, fix.data, QIS, sensitive=SENSITIVE, hierarchies=hierarchies),
        ),
        ("age + N(0, 2) noise", lambda: attack_release(adult, noisy, QIS, sensitive=SENSITIVE)),
        (
            "half published, half control",
            lambda: attack_release(training, training, QIS, sensitive=SENSITIVE, control=control),
        ),
    ]
    print(f"k=5 fix: levels {fix.levels}, {fix.suppressed:,} records suppressed, search {search_seconds:.2f} s\n")
    print(
        "| release | linkage success [95% CI] | prosecutor average / highest | linkage baseline | "
        "linkage risk [95% CI] | "
        "singling out (baseline) | inference (baseline) | time, 3 attacks |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for name, run in cases:
        report = run()
        seconds = best_time(run, repeat=args.repeat)
        print(_line(name, report, seconds))


if __name__ == "__main__":
    main()
