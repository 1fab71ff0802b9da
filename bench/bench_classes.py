"""Class-size table speed and memory against the naive approaches, in one run.

Targets (issue: diagnostics core):
* 50,000,000 rows x 8 categorical QIs (pandas ``category``): within 1.5x of a bare ``numpy.bincount`` over
  precomputed integer codes (one int64 class code per row, the lower bound for any counting method);
* the same data as string columns (pandas' default Arrow-backed ``str``): at least 3x faster than
  ``df.groupby(qis).size()``;
* peak extra memory under 3x the input frame.

Usage: ``python -m bench.bench_classes [--rows N] [--repeat R]``. The data has the shape of the reference uniform
table (columns A, B, C, I, J, K, X, Y with three levels each), drawn with a vectorised generator here because the
recipe's ``numpy.random.choice`` is slow at 50M rows; the distribution of the values is the same.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp

import numpy as np
import pandas as pd

from bench._common import best_time, machine, peak_memory, ratio
from privdash.measure.classes import class_size_frequencies

QIS = list("ABCIJKXY")


def make_codes(rows: int, seed: int = 7) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {name: rng.integers(0, 3, rows, dtype=np.int8) for name in QIS}


def categorical_frame(codes: dict[str, np.ndarray]) -> pd.DataFrame:
    return pd.DataFrame(
        {
            name: pd.Categorical.from_codes(values, categories=[f"{name.lower()}{i}" for i in (1, 2, 3)])
            for name, values in codes.items()
        }
    )


def string_frame(codes: dict[str, np.ndarray]) -> pd.DataFrame:
    import pyarrow as pa

    columns = {}
    for name, values in codes.items():
        dictionary = pa.array([f"{name.lower()}{i}" for i in (1, 2, 3)], type=pa.large_string())
        array = pa.DictionaryArray.from_arrays(values, dictionary).cast(pa.large_string())
        columns[name] = pd.Series(pd.arrays.ArrowStringArray(array), name=name)
    return pd.DataFrame(columns).astype("str")


def _time_bare_bincount(codes: dict[str, np.ndarray], repeat: int) -> float:
    key = np.zeros(len(codes[QIS[0]]), dtype=np.int64)
    for values in codes.values():
        key = key * 3 + values
    return best_time(lambda: np.bincount(key), repeat=repeat)


def _time_frame(frame: pd.DataFrame, repeat: int, *, observed: bool) -> tuple[pd.DataFrame, float, float]:
    """privdash's class-size table and pandas' groupby on the same frame; checks that they agree."""
    ours = best_time(lambda: class_size_frequencies(frame, QIS), repeat=repeat)
    naive = best_time(lambda: frame.groupby(QIS, observed=observed).size(), repeat=1)
    table = class_size_frequencies(frame, QIS)
    reference = frame.groupby(QIS, observed=observed).size().value_counts().sort_index()
    assert table.set_index("size")["classes"].to_dict() == reference.to_dict(), "results differ from pandas"
    return table, ours, naive


def _memory_probe(kind: str, rows: int, queue: mp.Queue) -> None:
    """Run in a fresh process so that the Arrow pool's peak belongs to this measurement only."""
    codes = make_codes(rows)
    frame = categorical_frame(codes) if kind == "category" else string_frame(codes)
    codes.clear()
    input_bytes = int(frame.memory_usage(deep=True).sum())
    peak = peak_memory(lambda: class_size_frequencies(frame, QIS))
    queue.put((input_bytes, peak.python_bytes, peak.arrow_bytes))


def _memory(kind: str, rows: int) -> tuple[int, int, int]:
    context = mp.get_context("spawn")
    queue: mp.Queue = context.Queue()
    process = context.Process(target=_memory_probe, args=(kind, rows, queue))
    process.start()
    result = queue.get()
    process.join()
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description="Class-size table benchmark")
    parser.add_argument("--rows", type=int, default=50_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"machine: {machine()}")
    print(f"rows: {args.rows:,}, QIs: {len(QIS)} x 3 levels")

    codes = make_codes(args.rows)
    bare = _time_bare_bincount(codes, args.repeat)
    table, ours_category, pandas_category = _time_frame(categorical_frame(codes), args.repeat, observed=True)
    strings, ours_string, pandas_string = _time_frame(string_frame(codes), args.repeat, observed=False)
    assert strings.equals(table), "string and category results differ"
    codes.clear()

    print()
    print("| input | privdash | baseline | baseline time | ratio | target |")
    print("|---|---|---|---|---|---|")
    print(
        f"| category | {ours_category:.3f} s | bare np.bincount over int64 codes | {bare:.3f} s | "
        f"{ratio(ours_category, bare)} of bincount | <= 1.5x |"
    )
    print(
        f"| category | {ours_category:.3f} s | df.groupby(qis, observed=True).size() | {pandas_category:.3f} s | "
        f"{ratio(pandas_category, ours_category)} faster | - |"
    )
    print(
        f"| str (Arrow) | {ours_string:.3f} s | df.groupby(qis).size() | {pandas_string:.3f} s | "
        f"{ratio(pandas_string, ours_string)} faster | >= 3x |"
    )
    print()
    for kind in ("category", "str"):
        input_bytes, python_peak, arrow_peak = _memory(kind, args.rows)
        total = python_peak + arrow_peak
        print(
            f"memory ({kind}): input frame {input_bytes / 1e6:,.0f} MB, peak extra {total / 1e6:,.0f} MB "
            f"(numpy {python_peak / 1e6:,.0f} MB + Arrow {arrow_peak / 1e6:,.0f} MB) = "
            f"{total / input_bytes:.2f}x the input (target < 3x)"
        )


if __name__ == "__main__":
    main()
