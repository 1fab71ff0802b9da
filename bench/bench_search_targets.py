"""``privdash anonymize`` with l and t against the k-only search on Adult, as whole processes.

Target (issue "Fast on the files people really have"): Adult's 8 QIs (sex, age, race, marital-status, education,
native-country, workclass, occupation) with ARX's hierarchies, 5% suppression: ``--k 5 --l 2 --t 0.2 --sensitive
salary-class`` within 1.5x ``--k 5`` alone, whole process (start, read, search, publishing, printing). The same pair
is also run on the default hierarchies (no ``--hierarchies``: a lattice of 112,000 nodes), the Fix page's case.

The two commands run in turn, A B A B ..., after one warm-up each; each run's CPU time (user + system, the operating
system's accounting of the finished child) and wall time are recorded, and the medians and the median of the
pair-by-pair CPU ratios printed, with the nodes the search checked (read from ``--json``). The machine is shared: quote
the medians and the ratio.

Usage: ``python -m bench.bench_search_targets [--runs N] [--default-hierarchies]``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

from bench._common import data_path, machine

QIS = "sex,age,race,marital-status,education,native-country,workclass,occupation"
TARGETS = ["--l", "2", "--t", "0.2", "--sensitive", "salary-class"]


def command(hierarchies: bool, targets: list[str]) -> list[str]:
    base = [sys.executable, "-m", "privdash", "anonymize", str(data_path("arx_adult", "adult.csv")), "--qi", QIS]
    if hierarchies:
        base += ["--hierarchies", str(data_path("arx_adult", "hierarchies"))]
    return [*base, "--k", "5", *targets, "--json"]


def run(argv: list[str]) -> tuple[float, float, dict]:
    """CPU seconds (user + system of the finished child), wall seconds and the JSON the command printed."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(argv, check=True, capture_output=True, text=True, env={**os.environ, "NO_COLOR": "1"})
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall, json.loads(done.stdout)


def nodes(report: dict) -> str:
    return f"{report['nodes_checked']:,} / {report['lattice_size']:,}"


def pair(label: str, hierarchies: bool, runs: int) -> None:
    a, b = command(hierarchies, TARGETS), command(hierarchies, [])
    run(a), run(b)  # warm-up
    figures: dict[str, list[tuple[float, float]]] = {"a": [], "b": []}
    reports = {}
    for _ in range(runs):
        for key, argv in (("a", a), ("b", b)):
            cpu, wall, reports[key] = run(argv)
            figures[key].append((cpu, wall))
    ratios = [ta[0] / tb[0] for ta, tb in zip(figures["a"], figures["b"], strict=True)]
    for key, name in (("b", "k = 5"), ("a", "k = 5, l = 2, t = 0.2 (salary-class)")):
        cpu = statistics.median(c for c, _ in figures[key])
        wall = statistics.median(w for _, w in figures[key])
        print(f"| {label} | {name} | {cpu:.2f} s | {wall:.2f} s | {nodes(reports[key])} |")
    print(f"| {label} | ratio (median of pairs, CPU) | **{statistics.median(ratios):.2f}x** | | |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--default-hierarchies", action="store_true", help="also the default hierarchies (slow)")
    options = parser.parse_args()
    print(f"machine: {machine()}; load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    print()
    print("| hierarchies | targets | CPU (median) | wall (median) | nodes checked |")
    print("|---|---|---|---|---|")
    pair("ARX's", True, options.runs)
    if options.default_hierarchies:
        pair("default", False, max(1, options.runs // 2))


if __name__ == "__main__":
    main()
