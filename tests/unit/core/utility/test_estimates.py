"""The steward's estimates before and after a fix, against hand computations and independent implementations
(explicit loops over records, numpy's least squares, textbook formulas)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from privdash.data.tables import read_table
from privdash.errors import ColumnError, ParameterError
from privdash.targets import PrivacyTargets
from privdash.transform.generalization import generalize
from privdash.transform.hierarchy import build_hierarchy
from privdash.utility.estimates import (
    MAX_COEFFICIENTS,
    MAX_TERMS,
    Estimate,
    compare_estimates,
    estimates_table,
    interval_overlap,
    parse_estimate,
    published_numbers,
)

Z95 = 1.959963984540054


def one(original: pd.DataFrame, published: pd.DataFrame, spec: str, **kwargs):
    (comparison,) = compare_estimates(original, published, [spec], **kwargs)
    return comparison


def row(comparison, term: str, group: str | None = None):
    matches = [r for r in comparison.rows if r.term == term and r.group == group]
    assert len(matches) == 1, [(r.term, r.group) for r in comparison.rows]
    return matches[0]


# --- the spec ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("mean:income", Estimate("mean", "income")),
        ("total:income by region", Estimate("total", "income", by=("region",))),
        ("mean: income  BY region, sex", Estimate("mean", "income", by=("region", "sex"))),
        ("share:sex=Female by region", Estimate("share", "sex", by=("region",), category="Female")),
        ("share:sex", Estimate("share", "sex")),
        ("crosstab:sex*race", Estimate("crosstab", "sex", by=("race",))),
        ("coef:income~age+sex", Estimate("coef", "income", predictors=("age", "sex"))),
        (
            "coef:income ~ age + C(roof)",
            Estimate("coef", "income", predictors=("age", "roof"), categorical=("roof",)),
        ),
        ("proportion:sex=F", Estimate("share", "sex", category="F")),
    ],
)
def test_parse_and_round_trip(text: str, expected: Estimate) -> None:
    spec = parse_estimate(text)
    assert spec == expected
    assert parse_estimate(spec.text()) == spec
    assert Estimate.from_dict(spec.to_dict()) == spec


@pytest.mark.parametrize(
    "text",
    ["income", "median:income", "coef:income", "coef:income~income", "crosstab:sex", "mean:", "share:sex by sex"],
)
def test_malformed_specs_are_refused(text: str) -> None:
    with pytest.raises(ParameterError):
        parse_estimate(text)


def test_from_dict_refuses_unknown_keys() -> None:
    with pytest.raises(ParameterError, match="Unknown key"):
        Estimate.from_dict({"kind": "mean", "column": "x", "group": ["y"]})


# --- Karr et al.'s interval overlap --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b", "expected", "signed"),
    [
        ((0, 1), (0, 1), 1.0, 1.0),  # identical
        ((0, 1), (1, 2), 0.0, 0.0),  # touching
        ((0, 1), (2, 3), 0.0, -1.0),  # disjoint: gap of one width
        ((0, 2), (1, 3), 0.5, 0.5),  # half of each
        ((0, 4), (1, 2), 0.625, 0.625),  # nested: 1/2 (1/4 + 1)
        ((0, 1), (3, 5), 0.0, 0.5 * (-2 / 1 + -2 / 2)),
        ((2, 2), (2, 2), 1.0, 1.0),  # equal points
        ((1, 1), (0, 2), 0.5, 0.5),  # a point inside an interval: the formula's limit
        ((3, 3), (0, 2), 0.0, None),
        ((1, 1), (2, 2), 0.0, None),
    ],
)
def test_interval_overlap_hand_examples(a, b, expected, signed) -> None:
    assert interval_overlap(*a, *b) == pytest.approx(expected)
    assert interval_overlap(*b, *a) == pytest.approx(expected)  # symmetric
    result = interval_overlap(*a, *b, signed=True)
    assert (result is None) if signed is None else result == pytest.approx(signed)


def test_interval_overlap_refuses_reversed_bounds() -> None:
    with pytest.raises(ParameterError):
        interval_overlap(1, 0, 0, 1)


# --- weighted estimates and their standard errors ------------------------------------------------------------------


def test_weighted_mean_by_hand() -> None:
    data = pd.DataFrame({"y": [1.0, 2.0, 3.0], "w": [1.0, 1.0, 2.0]})
    result = row(one(data, data, "mean:y", weights="w"), "mean of y").before
    # mean (1 + 2 + 6) / 4; residuals -1.25, -0.25, 0.75 times weights; n/(n-1) = 3/2; divided by (sum w)^2 = 16
    assert result.value == pytest.approx(2.25)
    assert result.se == pytest.approx(math.sqrt(1.5 * (1.25**2 + 0.25**2 + 1.5**2) / 16))
    assert result.low == pytest.approx(2.25 - Z95 * result.se)
    assert result.n == 3


def test_unweighted_mean_is_the_textbook_one() -> None:
    y = np.random.default_rng(1).normal(10, 3, 500)
    data = pd.DataFrame({"y": y})
    result = row(one(data, data, "mean:y"), "mean of y").before
    assert result.value == pytest.approx(y.mean())
    assert result.se == pytest.approx(y.std(ddof=1) / math.sqrt(len(y)))


def test_total_and_domain_estimates_against_record_loops() -> None:
    rng = np.random.default_rng(2)
    n = 300
    data = pd.DataFrame(
        {"y": rng.gamma(2.0, 10.0, n), "g": rng.choice(["a", "b", "c"], n), "w": rng.uniform(0.5, 20, n)}
    )
    y, w, g = data["y"].to_numpy(), data["w"].to_numpy(), data["g"].to_numpy()
    means = one(data, data, "mean:y by g", weights="w")
    totals = one(data, data, "total:y by g", weights="w")
    for group in "abc":
        inside = (g == group).astype(float)
        # Independent: linearized values over every record (zero outside the domain), their variance times n.
        weight = sum(w[i] * inside[i] for i in range(n))
        mean = sum(w[i] * y[i] * inside[i] for i in range(n)) / weight
        z_mean = [w[i] * inside[i] * (y[i] - mean) / weight for i in range(n)]
        z_total = [w[i] * y[i] * inside[i] for i in range(n)]
        se_mean = math.sqrt(n * np.var(z_mean, ddof=1))
        se_total = math.sqrt(n * np.var(z_total, ddof=1))
        got = row(means, "mean of y", f"g = {group}").before
        assert got.records == int(inside.sum()) and got.n == n
        assert got.value == pytest.approx(np.average(y[g == group], weights=w[g == group]))
        assert got.se == pytest.approx(se_mean)
        got = row(totals, "total of y", f"g = {group}").before
        assert got.value == pytest.approx(sum(z_total))
        assert got.se == pytest.approx(se_total)


def test_share_is_the_mean_of_an_indicator() -> None:
    data = pd.DataFrame({"sex": ["F", "M", "F", "F", None], "w": [1.0, 2.0, 3.0, 4.0, 5.0]})
    comparison = one(data, data, "share:sex", weights="w")
    female = row(comparison, "share of sex = F").before
    assert female.value == pytest.approx(8 / 10)
    assert female.n == 4  # the record without a value is left out
    assert female.records == 3
    indicator = np.array([1, 0, 1, 1.0])
    weights = np.array([1, 2, 3, 4.0])
    z = weights * (indicator - 0.8) / 10
    assert female.se == pytest.approx(math.sqrt(4 * np.var(z, ddof=1)))
    assert row(comparison, "share of sex = M").before.value == pytest.approx(0.2)
    assert any("left out before" in note for note in comparison.notes)


def test_crosstab_cells_sum_to_one() -> None:
    rng = np.random.default_rng(3)
    data = pd.DataFrame({"a": rng.choice(["x", "y"], 80), "b": rng.choice([1, 2, 3], 80), "w": rng.uniform(1, 3, 80)})
    comparison = one(data, data, "crosstab:a*b", weights="w")
    assert len(comparison.rows) == 6
    assert sum(r.before.value for r in comparison.rows) == pytest.approx(1.0)
    cell = row(comparison, "a = x, b = 2").before.value
    mask = (data["a"] == "x") & (data["b"] == 2)
    assert cell == pytest.approx(data["w"][mask].sum() / data["w"].sum())


# --- regression ----------------------------------------------------------------------------------------------------


def test_regression_by_hand() -> None:
    data = pd.DataFrame({"y": [1.0, 2.0, 2.0, 4.0], "x": [0.0, 1.0, 2.0, 3.0]})
    comparison = one(data, data, "coef:y~x")
    # slope 4.5 / 5 = 0.9 and intercept 2.25 - 0.9 * 1.5 = 0.9
    assert row(comparison, "coefficient of x").before.value == pytest.approx(0.9)
    assert row(comparison, "coefficient of intercept").before.value == pytest.approx(0.9)


def _sandwich(x: np.ndarray, y: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Weighted least squares and its linearization covariance, written out record by record."""
    n, p = x.shape
    xtwx = sum(w[i] * np.outer(x[i], x[i]) for i in range(n))
    xtwy = sum(w[i] * x[i] * y[i] for i in range(n))
    beta = np.linalg.solve(xtwx, xtwy)
    meat = np.zeros((p, p))
    for i in range(n):
        u = w[i] * (y[i] - x[i] @ beta) * x[i]
        meat += np.outer(u, u)
    bread = np.linalg.inv(xtwx)
    return beta, bread @ (meat * n / (n - 1)) @ bread


def test_weighted_regression_against_an_independent_fit() -> None:
    rng = np.random.default_rng(4)
    n = 400
    data = pd.DataFrame(
        {
            "age": rng.integers(18, 80, n).astype(float),
            "sex": rng.choice(["F", "M"], n, p=[0.4, 0.6]),
            "region": rng.choice(["N", "S", "E"], n, p=[0.5, 0.3, 0.2]),
            "w": rng.uniform(1, 10, n),
        }
    )
    noise = rng.normal(0, 5000, n) * (1 + data["age"] / 40)  # heteroscedastic: the sandwich matters
    data["income"] = 20000 + 300 * data["age"] + 4000 * (data["sex"] == "F") - 2500 * (data["region"] == "S") + noise
    comparison = one(data, data, "coef:income~age+sex+region", weights="w")
    # Reference categories: the most frequent (M, N), so the dummies are sex = F, region = E, region = S.
    x = np.column_stack(
        [
            np.ones(n),
            data["age"],
            data["sex"] == "F",
            data["region"] == "E",
            data["region"] == "S",
        ]
    ).astype(float)
    beta, cov = _sandwich(x, data["income"].to_numpy(), data["w"].to_numpy())
    lstsq = np.linalg.lstsq(x * np.sqrt(data["w"].to_numpy())[:, None], data["income"] * np.sqrt(data["w"]), None)[0]
    np.testing.assert_allclose(beta, lstsq, rtol=1e-9)
    terms = ["intercept", "age", "sex = F", "region = E", "region = S"]
    assert row(comparison, "coefficient of sex = F").before.records == int((data["sex"] == "F").sum())
    assert row(comparison, "coefficient of age").before.records == n
    assert [r.term for r in comparison.rows] == [f"coefficient of {t}" for t in terms]
    for j, term in enumerate(terms):
        got = row(comparison, f"coefficient of {term}").before
        assert got.value == pytest.approx(beta[j], rel=1e-9)
        assert got.se == pytest.approx(math.sqrt(cov[j, j]), rel=1e-9)
        assert row(comparison, f"coefficient of {term}").overlap == pytest.approx(1.0)


def test_regression_with_equal_weights_is_ordinary_least_squares() -> None:
    rng = np.random.default_rng(5)
    x = rng.normal(0, 1, 200)
    data = pd.DataFrame({"x": x, "y": 3 - 2 * x + rng.normal(0, 1, 200)})
    slope, intercept = np.polyfit(x, data["y"], 1)
    comparison = one(data, data, "coef:y~x")
    assert row(comparison, "coefficient of x").before.value == pytest.approx(slope)
    assert row(comparison, "coefficient of intercept").before.value == pytest.approx(intercept)


def test_collinear_published_predictors_are_not_computable() -> None:
    data = pd.DataFrame({"y": [1.0, 2, 3, 4, 5, 7], "x": [1.0, 2, 3, 4, 5, 6]})
    published = data.assign(x="*")  # fully generalized: no value left
    comparison = one(data, published, "coef:y~x")
    assert all(r.after is None for r in comparison.rows)
    published = data.assign(x=">=1")  # one value for everyone
    comparison = one(data, published, "coef:y~x")
    assert all(r.after is None and "collinear" in (r.note or "") for r in comparison.rows)


# --- after a fix: generalized columns ------------------------------------------------------------------------------


def test_published_numbers_of_intervals_and_codes() -> None:
    values = pd.Series(["30-39", "70-79", ">=80", "<30", "[1.5, 2.5[", "*", None, "-10--1"], name="age")
    numbers, notes, problem = published_numbers(values)
    assert problem is None
    # 30..39 -> 34.5; >=80 beside 70-79 (width 10) -> 80..89 -> 84.5; <30 -> 20..29 -> 24.5; [1.5, 2.5[ -> 2
    np.testing.assert_allclose(numbers, [34.5, 74.5, 84.5, 24.5, 2.0, np.nan, np.nan, -5.5])
    assert len(notes) == 2
    numbers, _notes, problem = published_numbers(pd.Series(["[0, 10)", ">=10"], name="x"))
    np.testing.assert_allclose(numbers, [5, 15])  # continuous: [10, 20)
    numbers, notes, problem = published_numbers(pd.Series(["45", ">= 90", "<= 5"], name="x"))
    assert problem is None
    np.testing.assert_allclose(numbers, [45, 90, 5])  # no interval beside: the threshold
    numbers, _notes, problem = published_numbers(pd.Series(["White", "Black"], name="race"))
    assert problem is not None and np.isnan(numbers).all()


def test_mean_of_a_generalized_column_uses_the_midpoints() -> None:
    ages = pd.Series([23, 27, 31, 38, 44, 45, 52, 58, 61, 85], dtype="int64")
    data = pd.DataFrame({"age": ages, "w": np.arange(1.0, 11.0)})
    hierarchy = build_hierarchy({"builder": "intervals", "widths": [10]}, data["age"])
    published = generalize(data, {"age": 1}, {"age": hierarchy}).data
    comparison = one(data, published, "mean:age", weights="w")
    result = row(comparison, "mean of age")
    midpoints = (ages // 10) * 10 + 4.5
    assert result.after.value == pytest.approx(np.average(midpoints, weights=data["w"]))
    assert result.before.value == pytest.approx(np.average(ages, weights=data["w"]))
    assert 0 < result.overlap <= 1
    assert any("midpoint" in note for note in comparison.notes)


def test_text_published_for_a_number_is_not_computable_never_zero() -> None:
    data = pd.DataFrame({"income": [10.0, 20.0, 30.0, 40.0]})
    published = data.assign(income=["low", "low", "high", "high"])
    result = row(one(data, published, "mean:income"), "mean of income")
    assert result.after is None and result.overlap is None
    assert "not computable" in result.note and "'low'" in result.note


def test_merged_categories_are_not_computable_and_new_groups_have_no_before() -> None:
    data = pd.DataFrame({"region": ["N", "N", "S", "E", "E", "E"], "y": [1.0, 2, 3, 4, 5, 6]})
    published = data.assign(region=["N/S", "N/S", "N/S", "E", "E", "E"])
    shares = one(data, published, "share:region")
    assert row(shares, "share of region = N").after is None
    assert "merged" in row(shares, "share of region = N").note
    assert row(shares, "share of region = E").after.value == pytest.approx(0.5)
    assert row(shares, "share of region = N/S").before is None
    means = one(data, published, "mean:y by region")
    assert row(means, "mean of y", "region = S").after is None
    assert row(means, "mean of y", "region = E").overlap == pytest.approx(1.0)
    assert row(means, "mean of y", "region = N/S").after.value == pytest.approx(2.0)


def test_a_category_removed_without_merging_has_share_zero() -> None:
    data = pd.DataFrame({"sex": ["F", "F", "M", "M", "M", "X"]})
    published = data.iloc[:5]  # the only X was suppressed
    comparison = one(data, published, "share:sex")
    result = row(comparison, "share of sex = X")
    assert result.after is not None and result.after.value == 0.0
    assert result.overlap == 0.5  # a zero-width interval at 0, inside the wide one before (1/6 +- 0.33)
    assert "no published record" in result.note
    assert any("1 records are not published" in note for note in comparison.notes)


def test_regression_reference_category_merged_is_not_comparable() -> None:
    data = pd.DataFrame(
        {
            "y": [1.0, 2, 3, 4, 5, 6, 7, 9],
            "c": ["a", "a", "a", "b", "b", "c", "c", "c"],
            "x": [1.0, 0, 2, 1, 3, 2, 5, 4],
        }
    )
    published = data.assign(c=["a/b", "a/b", "a/b", "a/b", "a/b", "c", "c", "c"])
    comparison = one(data, published, "coef:y~x+c")
    assert row(comparison, "coefficient of x").after is not None
    assert row(comparison, "coefficient of intercept").after is None
    assert "reference category" in row(comparison, "coefficient of c = b").note


# --- after a fix: suppression, missing values, weights ---------------------------------------------------------------


def test_suppressed_records_leave_with_their_weights() -> None:
    data = pd.DataFrame({"y": [1.0, 2.0, 3.0, 4.0, 5.0], "w": [10.0, 20.0, 30.0, 40.0, 50.0]})
    published = data.iloc[[0, 1, 3, 4]]
    comparison = one(data, published, "total:y", weights="w")
    result = row(comparison, "total of y")
    assert result.before.value == pytest.approx(550.0)
    assert result.after.value == pytest.approx(550.0 - 90.0)  # the third record's w * y
    assert result.after.n == 4


def test_star_and_blank_cells_count_as_missing_after() -> None:
    data = pd.DataFrame({"sex": ["F", "F", "M", "M"], "y": [1.0, 2.0, 3.0, 5.0]})
    published = data.assign(sex=pd.Series(["F", "*", "M", None], dtype=object))
    result = row(one(data, published, "mean:y by sex"), "mean of y", "sex = M")
    assert result.after.value == pytest.approx(3.0) and result.after.n == 2


def test_weight_column_not_published_makes_estimates_not_computable() -> None:
    data = pd.DataFrame({"y": [1.0, 2.0, 3.0], "w": [1.0, 2.0, 3.0]})
    comparison = one(data, data.drop(columns="w"), "mean:y", weights="w")
    assert comparison.rows[0].after is None
    assert "weight column" in comparison.rows[0].note


def test_specs_that_do_not_fit_the_original_are_refused() -> None:
    data = pd.DataFrame({"sex": ["F", "M"], "y": [1.0, 2.0], "w": [1.0, -1.0]})
    with pytest.raises(ColumnError):
        compare_estimates(data, data, ["mean:sex"])
    with pytest.raises(ColumnError):
        compare_estimates(data, data, ["mean:nope"])
    with pytest.raises(ColumnError):
        compare_estimates(data, data, ["mean:y"], weights="w")
    with pytest.raises(ParameterError):
        compare_estimates(data, data, ["share:sex=X"])
    with pytest.raises(ParameterError):
        compare_estimates(data, data, ["mean:y"], level=1.0)


def test_estimates_with_too_many_numbers_are_refused() -> None:
    data = pd.DataFrame({"id": [f"r{i}" for i in range(MAX_TERMS + 1)], "y": np.arange(MAX_TERMS + 1.0)})
    for spec in ("share:id", "mean:y by id", "crosstab:id*y"):
        with pytest.raises(ParameterError, match="too large"):
            compare_estimates(data, data, [spec])
    with pytest.raises(ParameterError, match="coefficients"):
        compare_estimates(data.head(MAX_COEFFICIENTS + 5), data, ["coef:y~id"])
    small = pd.DataFrame({"g": ["a", "b"] * (MAX_TERMS // 2 + 1), "y": np.arange(MAX_TERMS + 2.0)})
    wide = small.assign(g=[f"g{i}" for i in range(len(small))])  # within the limit before, too many after
    result = one(small, wide, "mean:y by g").rows[0]
    assert result.after is None and "more than" in (result.note or "")


def test_level_changes_the_interval() -> None:
    data = pd.DataFrame({"y": np.arange(20.0)})
    wide = row(one(data, data, "mean:y", level=0.99), "mean of y").before
    narrow = row(one(data, data, "mean:y", level=0.9), "mean of y").before
    assert wide.high - wide.low == pytest.approx((narrow.high - narrow.low) * 2.5758293035489 / 1.6448536269514722)


def test_to_dict_and_table() -> None:
    data = pd.DataFrame({"y": [1.0, 2.0, 4.0], "g": ["a", "a", "b"]})
    comparisons = compare_estimates(data, data.iloc[:2], ["mean:y by g"])
    payload = comparisons[0].to_dict()
    assert payload["estimate"] == "mean:y by g" and payload["records_removed"] == 1
    table = estimates_table(comparisons)
    assert list(table["group"]) == ["g = a", "g = b"]
    assert table["after"].isna().tolist() == [False, True]


# --- a survey with weights -----------------------------------------------------------------------------------------


def test_sdcmicro_testdata_weighted_estimates_after_a_fix(data_dir: Path) -> None:
    data = read_table(data_dir / "sdcmicro_testdata" / "testdata.csv")
    w = data["sampling_weight"].to_numpy(dtype=float)
    hierarchy = build_hierarchy({"builder": "intervals", "widths": [10, 20]}, data["age"])
    fix = generalize(
        data,
        {"age": 1},
        {"age": hierarchy},
        suppress=PrivacyTargets(k=3),
        quasi_identifiers=["age", "sex", "urbrur"],
    )
    comparisons = compare_estimates(
        data,
        fix.data,
        ["mean:income by sex", "share:urbrur", "coef:income~age+C(sex)"],
        weights="sampling_weight",
    )
    means = comparisons[0]
    male = data["sex"] == 1
    assert row(means, "mean of income", "sex = 1").before.value == pytest.approx(
        np.average(data["income"][male], weights=w[male])
    )
    kept = fix.data
    published_male = kept["sex"] == 1
    assert row(means, "mean of income", "sex = 1").after.value == pytest.approx(
        np.average(kept["income"][published_male], weights=kept["sampling_weight"][published_male])
    )
    assert all(r.overlap is not None and 0 <= r.overlap <= 1 for c in comparisons for r in c.rows)
    coef = comparisons[2]
    assert row(coef, "coefficient of age").after.value != row(coef, "coefficient of age").before.value
