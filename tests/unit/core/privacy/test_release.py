"""DP counts, histograms, class-size tables, sums and means: the domain rule, key selection, costs, error bars,
true values kept for the data owner, and clear errors for bad input.

Statistical assertions fail wrongly with negligible probability: each says how small.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

import numpy as np
import pandas as pd
import pytest

from privdash.dp.mechanisms import Mechanism
from privdash.dp.release import (
    DP_ERROR,
    DP_TRUE_VALUE,
    DP_VALUE,
    dp_class_sizes,
    dp_count,
    dp_histogram,
    dp_mean,
    dp_sum,
    read_domain_file,
)
from privdash.errors import ColumnError, ParameterError


@pytest.fixture
def table() -> pd.DataFrame:
    """1,000 common rows, one rare person, and a numeric column with a missing value."""
    rng = np.random.default_rng(7)
    n = 1_000
    return pd.DataFrame(
        {
            "city": ["Leeds"] * 600 + ["York"] * 400 + ["Tiny Hamlet"],
            "sex": rng.choice(["F", "M"], size=n + 1),
            "age": np.append(rng.integers(18, 90, size=n), 200).astype(float),
            "name": [f"p{i}" for i in range(n + 1)],
        }
    ).assign(income=lambda d: d["age"].where(d.index != 5) * 1000)


def test_count_with_error_bar_and_true_value(table: pd.DataFrame) -> None:
    release = dp_count(table, epsilon=1.0, include_true=True)
    assert release.scale == 1.0 and release.sensitivity == 1.0 and release.epsilon == 1.0 and release.delta == 0
    assert release.expected_error == pytest.approx(math.log(20))  # Laplace: P[|Z| > b ln(1/α)] = α
    assert release.true_value == len(table)
    # |noise| > 30 has probability e^-30.
    assert abs(release.value - len(table)) < 30
    assert dp_count(table, epsilon=1.0).true_table is None
    with pytest.raises(dataclasses.FrozenInstanceError):
        release.epsilon = 2  # type: ignore[misc]
    geometric = dp_count(table, epsilon=1.0, mechanism="geometric")
    assert isinstance(geometric.value, float) and geometric.value == round(geometric.value)


def test_noise_is_fresh_on_every_release(table: pd.DataFrame) -> None:
    values = {dp_count(table, epsilon=1.0).value for _ in range(5)}
    assert len(values) == 5  # continuous noise: equal draws have probability 0


def test_a_rare_category_outside_the_domain_never_appears(table: pd.DataFrame) -> None:
    for mechanism, delta in (("laplace", 0.0), ("geometric", 0.0), ("gaussian", 1e-6)):
        release = dp_histogram(
            table, "city", epsilon=50, delta=delta, domain=["Leeds", "York", "Bath"], mechanism=mechanism
        )
        assert release.table["city"].tolist() == ["Leeds", "York", "Bath"]
        assert "Tiny Hamlet" not in release.to_frame().to_string()
        assert release.domain_size == 3 and release.key_selection_threshold is None


def test_histogram_values_and_true_counts(table: pd.DataFrame) -> None:
    release = dp_histogram(table, "city", epsilon=100, domain=["Leeds", "York", "Bath"], include_true=True)
    frame = release.to_frame(include_true=True)
    assert frame[DP_TRUE_VALUE].tolist() == [600, 400, 0]
    # Scale 0.01: an error above 1 has probability e^-100.
    assert np.abs(frame[DP_VALUE] - frame[DP_TRUE_VALUE]).max() < 1
    assert (frame[DP_ERROR] == release.expected_error).all()
    assert DP_TRUE_VALUE not in release.to_frame().columns
    assert "true_value" not in str(release.to_dict())


def test_histogram_without_domain_needs_delta(table: pd.DataFrame) -> None:
    with pytest.raises(ParameterError, match="public domain"):
        dp_histogram(table, "city", epsilon=1.0)
    with pytest.raises(ParameterError, match="laplace or geometric"):
        dp_histogram(table, "city", epsilon=1.0, delta=1e-6, mechanism="gaussian")


def test_key_selection_drops_keys_below_the_threshold(table: pd.DataFrame) -> None:
    release = dp_histogram(table, "city", epsilon=1.0, delta=1e-6, include_true=True)
    assert release.key_selection_threshold is not None and release.delta <= 1e-6 and release.epsilon <= 1.0
    # The one-row key needs noise >= threshold - 1 (>= 13) to pass: probability below 1e-6.
    assert release.key_selection_threshold >= 10
    assert "Tiny Hamlet" not in release.table["city"].tolist()
    # The common keys pass unless the noise is below -380: probability e^-380.
    assert release.table["city"].tolist() == ["Leeds", "York"]
    assert (release.table[DP_VALUE] >= release.key_selection_threshold).all()
    assert release.mechanism is Mechanism.GEOMETRIC
    assert release.to_frame(include_true=True)[DP_TRUE_VALUE].tolist() == [600, 400]
    # The JSON names it key_selection_threshold; "threshold", its old key and attribute, is read for one release.
    payload = release.to_dict()
    assert payload["key_selection_threshold"] == payload["threshold"] == release.key_selection_threshold
    with pytest.warns(DeprecationWarning, match="key_selection_threshold"):
        assert release.threshold == release.key_selection_threshold


def test_key_selection_threshold_grows_as_delta_shrinks(table: pd.DataFrame) -> None:
    loose = dp_histogram(table, "city", epsilon=1.0, delta=1e-3).key_selection_threshold
    tight = dp_histogram(table, "city", epsilon=1.0, delta=1e-9).key_selection_threshold
    assert loose is not None and tight is not None and tight > loose
    # Discrete Laplace tail: P[Z >= t - 1] = r^(t-1)/(1 + r) <= δ with r = e^-ε gives t = 1 + ⌈ln(1/((1 + r)δ))/ε⌉.
    assert tight == 1 + math.ceil(math.log(1 / ((1 + math.exp(-1)) * 1e-9)))


def test_class_size_table_over_declared_domains(table: pd.DataFrame) -> None:
    domains = {"city": ["Leeds", "York"], "sex": ["F", "M", "X"]}
    release = dp_class_sizes(table, ["city", "sex"], epsilon=100, domains=domains, include_true=True)
    frame = release.to_frame(include_true=True)
    assert frame[["city", "sex"]].values.tolist() == [[c, s] for c in domains["city"] for s in domains["sex"]]
    expected = table.groupby(["city", "sex"]).size()
    for row in frame.itertuples():
        assert getattr(row, DP_TRUE_VALUE) == expected.get((row.city, row.sex), 0)
    assert np.abs(frame[DP_VALUE] - frame[DP_TRUE_VALUE]).max() < 1
    with pytest.raises(ParameterError, match="city"):
        dp_class_sizes(table, ["city", "sex"], epsilon=1, domains={"sex": ["F", "M"]})


def test_class_size_table_by_key_selection(table: pd.DataFrame) -> None:
    release = dp_class_sizes(table, ["city", "sex"], epsilon=1.0, delta=1e-6, mechanism="geometric")
    assert set(release.table["city"]) == {"Leeds", "York"}
    assert set(release.table["sex"]) <= {"F", "M"}


def test_domains_match_numbers_as_text() -> None:
    data = pd.DataFrame({"age": [30.0, 30.0, 41.0, np.nan]})
    release = dp_histogram(data, "age", epsilon=100, domain=[30, "41", "(missing)"], include_true=True)
    assert release.to_frame(include_true=True)[DP_TRUE_VALUE].tolist() == [2, 1, 1]


@pytest.mark.parametrize("declared", ["30.0", "30", "3e1", "+30", " 30.00 ", 30.0])
def test_a_declared_number_matches_the_data_by_value(declared: object) -> None:
    for column in ([30, 30, 41], [30.0, 30.0, 41.0], ["30", "30.0", "41"]):
        data = pd.DataFrame({"age": column})
        release = dp_histogram(data, "age", epsilon=100, domain=[declared, "41.0"], include_true=True)
        assert release.table["age"].tolist() == ["30", "41"]
        assert release.to_frame(include_true=True)[DP_TRUE_VALUE].tolist() == [2, 1], (declared, column)


def test_codes_with_leading_zeros_stay_codes() -> None:
    data = pd.DataFrame({"zip": ["007", "007", "7", "0.5"]})
    release = dp_histogram(data, "zip", epsilon=100, domain=["007", "7", "7.0", ".50"], include_true=True)
    assert release.table["zip"].tolist() == ["007", "7", "0.5"]  # 7 and 7.0 are one category
    assert release.to_frame(include_true=True)[DP_TRUE_VALUE].tolist() == [2, 1, 1]


@pytest.mark.parametrize(
    ("call", "named"),
    [
        (lambda t: dp_count(t, epsilon=5e-324), "ε = 4.94066e-324"),
        (lambda t: dp_count(t, epsilon=1e300, mechanism="geometric"), "ε = 1e+300 is too large"),
        (lambda t: dp_count(t, epsilon=1e-300, delta=1e-10, mechanism="gaussian"), "ε = 1e-300"),
        (lambda t: dp_sum(t, "age", (-1e308, 1e308), epsilon=1), "bounds [-1e+308, 1e+308]"),
        (lambda t: dp_mean(t, "age", (-1e308, 1e308), epsilon=1), "bounds [-1e+308, 1e+308]"),
        (lambda t: dp_histogram(t, "city", epsilon=5e-324, delta=0.1), "ε = 4.94066e-324"),
        (lambda t: dp_histogram(t, "city", epsilon=1e300, delta=0.1), "not a finite number"),
    ],
)
def test_parameters_opendp_cannot_compute_with_are_named(
    table: pd.DataFrame, call: Callable[[pd.DataFrame], object], named: str
) -> None:
    with pytest.raises(ParameterError) as caught:
        call(table)
    assert named in str(caught.value)
    assert "Traceback" not in str(caught.value)


def test_sum_clamps_and_drops_missing(table: pd.DataFrame) -> None:
    release = dp_sum(table, "income", (0, 100_000), epsilon=1.0, include_true=True)
    assert release.true_value == table["income"].dropna().clip(0, 100_000).sum()
    assert release.sensitivity == pytest.approx(100_000, rel=1e-6)
    assert release.scale == pytest.approx(100_000, rel=1e-6)
    assert release.bounds == (0.0, 100_000.0)
    geometric = dp_sum(table, "age", (0, 100), epsilon=1.0, mechanism="geometric")
    assert geometric.scale == 100 and geometric.value == round(geometric.value)


def test_mean_composes_two_halves(table: pd.DataFrame) -> None:
    release = dp_mean(table, "age", (0, 100), epsilon=50.0, include_true=True)
    clamped = table["age"].clip(0, 100)
    assert release.true_value == pytest.approx(clamped.mean())
    assert release.epsilon == pytest.approx(50.0, rel=1e-6)
    assert release.scale == pytest.approx(100 / 25, rel=1e-6) and release.count_scale == pytest.approx(1 / 25)
    # Noise scales 4 and 0.04 on a sum of ~54,000 over 1,001 rows: off by more than 0.2 with probability < 1e-9.
    assert abs(release.value - clamped.mean()) < 0.2
    assert 0 < release.expected_error < 0.1
    gaussian = dp_mean(table, "age", (0, 100), epsilon=1.0, delta=1e-6, mechanism="gaussian")
    assert gaussian.epsilon <= 1.0 and gaussian.delta <= 1e-6 and 0 <= gaussian.value <= 100


@pytest.mark.parametrize("bounds", [(5, 5), (10, 0), (0, float("inf")), ("a", 1)])
def test_bad_bounds(table: pd.DataFrame, bounds: tuple[float, float]) -> None:
    with pytest.raises(ParameterError, match=r"[Bb]ounds"):
        dp_sum(table, "age", bounds, epsilon=1)


def test_bad_columns_and_parameters(table: pd.DataFrame) -> None:
    with pytest.raises(ColumnError, match=r"not numeric.*'p0'"):
        dp_mean(table, "name", (0, 1), epsilon=1)
    with pytest.raises(ColumnError, match="incom"):
        dp_sum(table, "incme", (0, 1), epsilon=1)
    with pytest.raises(ParameterError, match="ε"):
        dp_count(table, epsilon=0)
    with pytest.raises(ParameterError, match="δ"):
        dp_histogram(table, "city", epsilon=1, delta=1.0)
    with pytest.raises(ParameterError, match="integer bounds"):
        dp_sum(table, "age", (0.5, 10), epsilon=1, mechanism="geometric")
    with pytest.raises(ColumnError, match="non-integer"):
        dp_sum(table.assign(age=table["age"] + 0.5), "age", (0, 10), epsilon=1, mechanism="geometric")
    with pytest.raises(ParameterError, match="non-empty"):
        dp_histogram(table, "city", epsilon=1, domain=[])
    with pytest.raises(ParameterError, match="one value per category"):
        _ = dp_histogram(table, "city", epsilon=1, domain=["Leeds"]).value


def test_numbers_stored_as_text_are_accepted() -> None:
    data = pd.DataFrame({"x": ["1", "2", None]})
    assert dp_sum(data, "x", (0, 5), epsilon=1, include_true=True).true_value == 3


def test_domain_files(tmp_path) -> None:
    (tmp_path / "cities.txt").write_text("Leeds\n\nYork\n", encoding="utf-8")
    (tmp_path / "qis.json").write_text('{"city": ["Leeds"], "sex": ["F", "M"]}', encoding="utf-8")
    (tmp_path / "bad.json").write_text('{"city": "Leeds"}', encoding="utf-8")
    assert read_domain_file(tmp_path / "cities.txt") == ["Leeds", "York"]
    assert read_domain_file(tmp_path / "qis.json") == {"city": ["Leeds"], "sex": ["F", "M"]}
    with pytest.raises(ValueError, match="list of values"):
        read_domain_file(tmp_path / "bad.json")


def test_large_domains_small_budgets_and_empty_tables() -> None:
    values = [str(i) for i in range(1_001)]
    data = pd.DataFrame({"a": ["1"], "b": ["2"]})
    with pytest.raises(ParameterError, match="1,002,001 cells"):
        dp_class_sizes(data, ["a", "b"], epsilon=1, domains={"a": values, "b": values})
    with pytest.raises(ParameterError, match="larger ε or δ"):
        dp_histogram(data, "a", epsilon=1e-7, delta=1e-300)
    empty = data.iloc[:0]
    assert dp_histogram(empty, "a", epsilon=1, delta=1e-6).table.empty
    columns = dp_class_sizes(empty, ["a", "b"], epsilon=1, delta=1e-6).table.columns
    assert list(columns) == ["a", "b", DP_VALUE, DP_ERROR]
    assert dp_count(empty, epsilon=1, include_true=True).true_value == 0
