"""Benchmark: distinction/separation over every QI subset, and minimal sample uniques, on UCI Adult.

Adult (ARX version, 30,162 rows) with the 8 QIs sex, age, race, marital-status, education, native-country,
workclass, occupation: 255 subsets. For reference, ARX's quasi-identifier table takes about 1.6 s on this input.
Compares privdash against the naive pandas approach (one ``groupby`` per subset) in the same run, and checks that
both give the same numbers. Times include encoding the columns.

Run from the repository root::

    python bench/bench_combinations.py [--data-dir ../shared/data] [--repeat 7] [--scale 10]

``--scale`` also times a table made of that many stacked copies of Adult, copy c with 1000*c added to age so that
the copies do not merge (c times the rows and uniques, c times the age categories, same subsets).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from itertools import combinations
from pathlib import Path
from typing import TypeVar

import numpy as np
import pandas as pd

from bench._common import machine

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from privdash.data.tables import read_table  # noqa: E402
from privdash.measure.combinations import combination_risk, minimal_sample_uniques  # noqa: E402

T = TypeVar("T")
QIS = ["sex", "age", "race", "marital-status", "education", "native-country", "workclass", "occupation"]


def naive_pandas(data: pd.DataFrame, qis: list[str], k_threshold: int = 5) -> pd.DataFrame:
    """The obvious implementation: one pandas group-by per subset."""
    n = len(data)
    rows = []
    for size in range(1, len(qis) + 1):
        for subset in combinations(qis, size):
            sizes = data.groupby(list(subset), dropna=False, observed=True, sort=False).size().to_numpy()
            rows.append(
                (
                    subset,
                    size,
                    len(sizes) / n,
                    1 - float(np.dot(sizes, sizes - 1)) / (n * (n - 1)),
                    int(sizes.min()),
                    len(sizes),
                    int((sizes == 1).sum()),
                    int(sizes[sizes < k_threshold].sum()),
                )
            )
    columns = ["quasi_identifiers", "size", "distinction", "separation", "k", "classes", "sample_uniques"]
    return pd.DataFrame(rows, columns=[*columns, "records_below_k"])


def timed(function: Callable[[], T], repeat: int) -> tuple[float, float, T]:
    """Median and best wall time over ``repeat`` runs (after one warm-up), and the last result."""
    result = function()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        result = function()
        times.append(time.perf_counter() - start)
    return statistics.median(times), min(times), result


def check_same(ours: pd.DataFrame, naive: pd.DataFrame, qis: list[str]) -> None:
    position = {name: i for i, name in enumerate(qis)}
    ordered = [tuple(sorted(names, key=lambda name: position[name])) for names in naive["quasi_identifiers"]]
    naive = naive.assign(quasi_identifiers=pd.Series(ordered, index=naive.index, dtype=object))
    merged = ours.merge(naive, on="quasi_identifiers", suffixes=("", "_naive"))
    assert len(merged) == len(ours) == len(naive)
    for column in ("k", "classes", "sample_uniques", "records_below_k"):
        assert (merged[column] == merged[f"{column}_naive"]).all(), column
    for column in ("distinction", "separation"):
        assert np.allclose(merged[column], merged[f"{column}_naive"], rtol=1e-12, atol=0), column


def line(label: str, median: float, best: float) -> str:
    return f"  {label:<56} median {median * 1e3:8.1f} ms  best {best * 1e3:8.1f} ms"


def run(data: pd.DataFrame, label: str, repeat: int, naive: bool) -> None:
    print(f"\n{label}: {len(data):,} rows, {len(QIS)} QIs, {2 ** len(QIS) - 1} subsets")
    median, best, result = timed(lambda: combination_risk(data, QIS), repeat)
    print(line("combination_risk (distinction, separation, k, uniques)", median, best))
    median_m, best_m, msus = timed(lambda: minimal_sample_uniques(data, QIS), repeat)
    print(line("minimal_sample_uniques (MSUs, SUDA scores)", median_m, best_m))
    print(f"    {msus.n_unique:,} records unique on all QIs, {msus.n_msus:,} MSUs")
    if naive:
        median_n, best_n, table = timed(lambda: naive_pandas(data, QIS), max(1, repeat // 3))
        print(line("naive pandas: one groupby per subset", median_n, best_n))
        check_same(result.table, table, QIS)
        print(f"    same numbers; combination_risk is {median_n / median:.1f}x faster")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default_dir = os.environ.get("PRIVDASH_DATA_DIR", str(ROOT.parent / "shared" / "data"))
    parser.add_argument("--data-dir", default=default_dir)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--scale", type=int, default=10)
    args = parser.parse_args()
    print(f"machine: {machine()}")
    adult = read_table(Path(args.data_dir) / "arx_adult" / "adult.csv")
    run(adult, "Adult", args.repeat, naive=True)
    if args.scale > 1:
        copies = [adult.assign(age=adult["age"] + 1000 * copy) for copy in range(args.scale)]
        stacked = pd.concat(copies, ignore_index=True)
        run(stacked, f"Adult x {args.scale}", max(1, args.repeat // 2), naive=False)


if __name__ == "__main__":
    main()
