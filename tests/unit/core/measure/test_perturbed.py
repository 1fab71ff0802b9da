from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from privdash.errors import ColumnError, ParameterError
from privdash.measure.perturbed import DEFAULT_INTERVAL_K, PerturbationRisk, perturbation_risk
from privdash.transform.perturbation import add_noise, rank_swap

ORIGINAL = pd.DataFrame({"x": [1.0, 2.0, 3.0, 4.0], "y": [10.0, 20.0, 30.0, 40.0]})
PERTURBED = pd.DataFrame({"x": [1.0, 2.2, 4.0, 3.0], "y": [10.0, 20.0, 30.0, 40.0]})


def test_tiny_table_by_hand() -> None:
    """Worked by hand. sd(x) = sqrt(5/3), sd(y) = sqrt(500/3), so x and y standardise to the same z values
    (-1.162, -0.387, 0.387, 1.162). Record 0 is unchanged and record 1 moves 0.2 / sd(x) towards nothing else: both
    link to themselves. Record 2 is published as (4, 30): 1 / sd(x) = 0.775 from its own (3, 30) and 10 / sd(y) =
    0.775 from (4, 40), a tie, so it counts 1/2; record 3, (3, 40), ties the same way. Linkage: (1 + 1 + 1/2 + 1/2) / 4.

    Intervals (k = 0.05): the perturbed x has sd sqrt(1.61) (values 1, 2.2, 4, 3; mean 2.55), half-width 0.0634,
    so only record 0's x is inside; every y is inside. Records with all values inside: 1 of 4; cells: 5 of 8.
    IL1s: x differs by 0, 0.2, 1, 1 and y by nothing: (2.2 / (sqrt(2) sqrt(5/3))) / 8 cells.
    Means: x 2.5 -> 2.55 (relative 0.02), y unchanged; variances: x 5/3 -> 1.61; correlation 1 -> 13 / sqrt(1.61 *
    500/3) (covariance of the perturbed pair: (23.25 + 1.75 + 7.25 + 6.75) / 3 = 13).
    """
    risk = perturbation_risk(ORIGINAL, PERTURBED, ["x", "y"])
    assert risk.records == 4 and risk.columns == ("x", "y")
    assert risk.linkage == pytest.approx(0.75)
    assert risk.linked_records == pytest.approx(3.0)
    assert risk.interval_k == DEFAULT_INTERVAL_K == 0.05
    assert risk.interval_disclosure == pytest.approx(0.25)
    assert risk.interval_disclosure_values == pytest.approx(5 / 8)
    il1s_sum = 2.2 / (math.sqrt(2) * math.sqrt(5 / 3))
    assert risk.il1s_sum == pytest.approx(il1s_sum)
    assert risk.il1s == pytest.approx(il1s_sum / 8)
    assert risk.mean_change == pytest.approx(0.02 / 2)
    assert risk.variance_change == pytest.approx(abs(1.61 - 5 / 3) / (5 / 3) / 2)
    r = 13 / math.sqrt(1.61 * 500 / 3)
    assert risk.correlation_change == pytest.approx(1 - r)
    assert risk.correlation_abs_change == pytest.approx(1 - r)
    assert risk.per_column["y"] == {"il1s": 0.0, "interval_disclosure": 1.0, "mean_change": 0.0, "variance_change": 0.0}
    assert risk.per_column["x"]["interval_disclosure"] == pytest.approx(0.25)
    assert risk.to_dict()["columns"] == ["x", "y"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        risk.linkage = 0.0  # type: ignore[misc]


def test_a_wider_interval_and_an_unchanged_table() -> None:
    # k = 1: half-widths sqrt(1.61) = 1.27 (x) and 12.9 (y) hold every original value.
    assert perturbation_risk(ORIGINAL, PERTURBED, ["x", "y"], interval_k=1).interval_disclosure == 1.0
    same = perturbation_risk(ORIGINAL, ORIGINAL, ["x", "y"])
    assert (same.linkage, same.interval_disclosure, same.il1s, same.mean_change) == (1.0, 1.0, 0.0, 0.0)


def test_identical_original_records_share_the_link() -> None:
    original = pd.DataFrame({"v": [1.0, 1.0, 1.0, 5.0]})
    risk = perturbation_risk(original, original, ["v"])
    assert risk.linkage == pytest.approx((1 / 3 + 1 / 3 + 1 / 3 + 1) / 4)


# --- an independent, straightforward implementation on sdcMicro's testdata -----------------------------------------


def brute_force(original: np.ndarray, perturbed: np.ndarray, k: float) -> dict[str, float]:
    """The definitions written out record by record (module docstring of privdash.measure.perturbed)."""
    n, p = original.shape

    def sd(column: np.ndarray) -> float:
        values = [v for v in column if not math.isnan(v)]
        mean = sum(values) / len(values)
        return math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1))

    means = [np.nanmean(original[:, j]) for j in range(p)]
    sds = [sd(original[:, j]) for j in range(p)]
    sds_perturbed = [sd(perturbed[:, j]) for j in range(p)]

    def z(value: float, j: int) -> float:
        return 0.0 if math.isnan(value) else (value - means[j]) / sds[j]

    zo = np.array([[z(original[i, j], j) for j in range(p)] for i in range(n)])
    zp = np.array([[z(perturbed[i, j], j) for j in range(p)] for i in range(n)])
    linkage = 0.0
    for i in range(n):
        distances = np.sqrt(((zo - zp[i]) ** 2).sum(axis=1))  # to every original record
        nearest = distances.min()
        tied = np.flatnonzero(distances <= nearest * (1 + 1e-9))
        if i in tied:
            linkage += 1 / len(tied)
    at_risk = 0
    inside_cells = cells = 0
    il1s_sum = 0.0
    il1s_cells = 0
    for i in range(n):
        outside_any = False
        for j in range(p):
            x, y = original[i, j], perturbed[i, j]
            if math.isnan(x) or math.isnan(y):
                continue
            inside = y - k * sds_perturbed[j] <= x <= y + k * sds_perturbed[j]
            outside_any |= not inside
            cells += 1
            inside_cells += inside
            il1s_sum += abs(x - y) / (math.sqrt(2) * sds[j])
            il1s_cells += 1
        at_risk += not outside_any
    return {
        "linkage": linkage / n,
        "interval_disclosure": at_risk / n,
        "interval_disclosure_values": inside_cells / cells,
        "il1s": il1s_sum / il1s_cells,
        "il1s_sum": il1s_sum,
    }


@pytest.fixture(scope="module")
def testdata(data_dir: Path) -> pd.DataFrame:
    table = pd.read_csv(data_dir / "sdcmicro_testdata" / "testdata.csv")
    return table[["age", "expend", "income", "savings"]].head(1500).reset_index(drop=True)


@pytest.mark.parametrize("mask", ["noise", "noise with missing values", "rank swapping"])
def test_matches_the_record_by_record_definitions_on_testdata(testdata: pd.DataFrame, mask: str) -> None:
    columns = list(testdata.columns)
    original = testdata.astype(float)
    if mask == "rank swapping":
        perturbed = rank_swap(original, columns=columns, p=3, seed=5).data
    else:
        perturbed = add_noise(original, columns=columns, share=0.05, seed=6).data
    if mask == "noise with missing values":
        original = original.copy()
        perturbed = perturbed.copy()
        original.loc[[3, 50, 400], "income"] = np.nan
        perturbed.loc[[3, 77], "savings"] = np.nan
    risk = perturbation_risk(original, perturbed, columns, interval_k=0.1)
    expected = brute_force(original.to_numpy(), perturbed.to_numpy(), 0.1)
    assert 0 < expected["linkage"] < 1 and 0 < expected["interval_disclosure"] < 1  # informative cases
    for name, value in expected.items():
        assert getattr(risk, name) == pytest.approx(value, rel=1e-9), name


# --- bad input -----------------------------------------------------------------------------------------------------


def test_bad_input() -> None:
    with pytest.raises(ParameterError, match="the same records in the same order"):
        perturbation_risk(ORIGINAL, PERTURBED.head(3), ["x"])
    with pytest.raises(ColumnError, match="Unknown column of the perturbed table"):
        perturbation_risk(ORIGINAL, PERTURBED[["x"]], ["x", "y"])
    with pytest.raises(ColumnError, match="in the perturbed table 'x' is not numerical"):
        perturbation_risk(ORIGINAL, PERTURBED.assign(x=list("abcd")), ["x", "y"])
    with pytest.raises(ParameterError, match="interval_k"):
        perturbation_risk(ORIGINAL, PERTURBED, ["x"], interval_k=-1)
    with pytest.raises(ParameterError, match="empty"):
        perturbation_risk(ORIGINAL.head(0), PERTURBED.head(0), ["x"])
    assert isinstance(perturbation_risk(ORIGINAL, PERTURBED, ["x"]), PerturbationRisk)


@pytest.mark.parametrize(
    ("original", "perturbed", "table"),
    [
        ([1.0, 2.0, 3.0], [1.0, np.inf, 3.0], "perturbed"),
        ([1.0, -np.inf, 3.0], [1.0, 2.0, 3.0], "original"),
        ([1e200, -1e200, 3.0], [1e200, -1e200, 3.0], "original"),
    ],
)
def test_values_beyond_the_comparable_range_are_refused(original: list, perturbed: list, table: str) -> None:
    # Squared distances of such values overflow: the k-d tree would fail, or every record would tie.
    with pytest.raises(ParameterError, match=f"in the {table} table 'v' holds infinite or larger values"):
        perturbation_risk(pd.DataFrame({"v": original}), pd.DataFrame({"v": perturbed}), ["v"])
