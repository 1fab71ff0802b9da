"""MDAV microaggregation speed, and the Fix-page previews of the other fixes, at 100,000 rows.

Targets (issue: transformations):
* k-member MDAV on 100,000 rows x 4 numerical QIs: under 10 s;
* each preview on the Fix page (one fix applied to 100,000 rows): under 1 s;
* microaggregation of every QI of the demo person table at 100,000 rows (age, sex, ~72,000 distinct postcodes,
  clothing size, hair colour: numerical, nominal and ordinal QIs, nearly every record pooled): under 5 s (issue 24).

MDAV runs on three 100,000 x 4 tables: standard normal columns (no ties), skewed columns (log-normal,
exponential: far outliers), and the four numerical columns of sdcMicro's ``testdata`` (age, expend, income, savings)
resampled with replacement (real shapes, many repeated rows). The previews use UCI Adult resampled to 100,000 rows.

Usage: ``python -m bench.bench_microaggregation [--rows N] [--k K] [--repeat R]``.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
import pandas as pd

from bench._common import best_time, data_path, machine
from privdash.data.demo import people_contract, people_table
from privdash.data.tables import read_table
from privdash.transform.identifiers import mask_identifiers, pseudonymize
from privdash.transform.microaggregation import microaggregate_with_contract, microaggregation
from privdash.transform.steps import TransformResult
from privdash.transform.suppression import local_suppression, record_suppression, top_bottom_coding

NUMERICAL = ["x1", "x2", "x3", "x4"]


def numerical_tables(rows: int, seed: int = 11) -> dict[str, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    normal = pd.DataFrame(rng.normal(size=(rows, 4)), columns=NUMERICAL)
    skewed = pd.DataFrame(
        {
            "x1": rng.lognormal(10, 1, rows),
            "x2": rng.lognormal(5, 2, rows),
            "x3": rng.normal(size=rows),
            "x4": rng.exponential(size=rows),
        }
    )
    testdata = read_table(data_path("sdcmicro_testdata", "testdata.csv"))
    picks = rng.integers(0, len(testdata), rows)
    survey = testdata[["age", "expend", "income", "savings"]].iloc[picks].reset_index(drop=True)
    survey.columns = NUMERICAL
    return {"normal": normal, "skewed": skewed, "sdcMicro testdata resampled": survey}


def adult_rows(rows: int, seed: int = 5) -> pd.DataFrame:
    adult = read_table(data_path("arx_adult", "adult.csv"))
    picks = np.random.default_rng(seed).integers(0, len(adult), rows)
    table = adult.iloc[picks].reset_index(drop=True)
    table["email"] = [f"person{i}@example.org" for i in range(rows)]
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description="MDAV and fix-preview benchmark")
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--k", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    print(f"machine: {machine()}")
    print(f"rows: {args.rows:,}, k = {args.k}")
    print()
    print("| MDAV input (4 numerical QIs) | distinct rows | time | clusters | SSE/SST | target |")
    print("|---|---|---|---|---|---|")
    for name, table in numerical_tables(args.rows).items():

        def run(table: pd.DataFrame = table) -> TransformResult:
            return microaggregation(table, quasi_identifiers=NUMERICAL, k=args.k)

        seconds = best_time(run, repeat=args.repeat)
        result = run()
        assert result.summary["k_achieved"] >= args.k
        distinct = len(table.drop_duplicates())
        print(
            f"| {name} | {distinct:,} | {seconds:.2f} s | {result.summary['clusters']:,} | "
            f"{result.summary['sse_sst']:.4f} | < 10 s |"
        )

    people = people_table(args.rows)
    contract = people_contract()
    started_wall, started_cpu = time.perf_counter(), time.process_time()
    mixed = microaggregate_with_contract(people, contract, k=5)
    cpu, wall = time.process_time() - started_cpu, time.perf_counter() - started_wall
    assert mixed.summary["k_achieved"] >= 5
    print()
    print("| MDAV over every QI of the demo contract, k = 5 | records pooled | clusters | wall | CPU | target |")
    print("|---|---|---|---|---|---|")
    print(
        f"| people table, {args.rows:,} rows | {mixed.summary['records_pooled']:,} | {mixed.summary['clusters']:,} | "
        f"{wall:.2f} s | {cpu:.2f} s | < 5 s |"
    )

    adult = adult_rows(args.rows)
    qis = ["sex", "age", "race", "marital-status"]
    key = os.environ.get("PRIVDASH_PSEUDONYM_KEY", "benchmark-only-key-0123456789")
    previews = {
        "top coding (95 % quantile)": lambda: top_bottom_coding(adult, column="age", top_quantile=0.95),
        "record suppression (k = 5, 5 %)": lambda: record_suppression(
            adult, quasi_identifiers=qis, k=5, max_suppression=0.05
        ),
        "cell suppression (k = 5, 4 QIs)": lambda: local_suppression(adult, quasi_identifiers=qis, k=5),
        "cell suppression (k = 5, 5 QIs + education)": lambda: local_suppression(
            adult, quasi_identifiers=[*qis, "education"], k=5
        ),
        "microaggregation (k = 5, age + 3 nominal)": lambda: microaggregation(adult, quasi_identifiers=qis, k=5),
        "mask e-mail": lambda: mask_identifiers(adult, columns=["email"], keep_first=2),
        "pseudonymise e-mail": lambda: pseudonymize(adult, columns=["email"], key=key),
    }
    print()
    print(f"| preview on Adult resampled to {args.rows:,} rows | time | target |")
    print("|---|---|---|")
    for name, preview in previews.items():
        print(f"| {name} | {best_time(preview, repeat=max(args.repeat, 2)):.3f} s | < 1 s |")


if __name__ == "__main__":
    main()
