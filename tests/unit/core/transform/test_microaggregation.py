from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from privdash.data.contract import DataContract
from privdash.data.tables import read_table
from privdash.errors import ColumnError, ContractError, ParameterError
from privdash.measure.classes import equivalence_classes
from privdash.transform.microaggregation import (
    mdav_clusters,
    microaggregate_with_contract,
    microaggregation,
    types_from_contract,
)
from privdash.transform.steps import Recipe, Step, apply_recipe, apply_step

SIZES = ["XS", "S", "M", "L", "XL"]


def reference_mdav(points: np.ndarray, k: int) -> np.ndarray:
    """MDAV written directly from Domingo-Ferrer & Torra (2005), one record at a time, for comparison."""
    remaining = list(range(len(points)))
    labels = np.full(len(points), -1)
    label = 0

    def sq(a: np.ndarray, b: np.ndarray) -> float:
        return float(sum((float(x) - float(y)) ** 2 for x, y in zip(a, b, strict=True)))

    def farthest(target: np.ndarray) -> int:
        best, best_row = -1.0, -1
        for row in remaining:  # ascending rows: the first maximum is the earliest row
            d = sq(points[row], target)
            if d > best:
                best, best_row = d, row
        return best_row

    def cluster(seed: int) -> None:
        nonlocal label
        others = sorted((sq(points[row], points[seed]), row) for row in remaining if row != seed)
        members = [seed] + [row for _, row in others[: k - 1]]
        for row in members:
            labels[row] = label
            remaining.remove(row)
        label += 1

    while len(remaining) >= 3 * k:
        centroid = points[remaining].mean(axis=0)
        r = farthest(centroid)
        seed_point = points[r]
        cluster(r)
        s = farthest(seed_point)
        cluster(s)
    if len(remaining) >= 2 * k:
        cluster(farthest(points[remaining].mean(axis=0)))
    labels[remaining] = label
    return labels


def field(name: str, kind: str, *, role: str = "is_quasi_id") -> dict:
    """One entry of a contract's field_metadata."""
    return {"field_name": name, "personal_data_config": {role: True}, "statistical_data_type": kind}


def assert_k_anonymous(data: pd.DataFrame, qis: list[str], k: int) -> None:
    for policy in ("value", "wildcard"):
        assert equivalence_classes(data, qis, missing=policy).k >= k


# --- hand-computed cases ----------------------------------------------------------------------------------------


def test_one_dimension_by_hand() -> None:
    # Centroid 11.33: 22 is farthest (10.67 > 10.33), its cluster is {20, 21, 22}; the record farthest from 22 is
    # 1, its cluster {1, 2, 3}; the 3 left (< 2k) form the last cluster.
    data = pd.DataFrame({"x": [10, 1, 21, 2, 11, 22, 3, 12, 20], "other": list("abcdefghi")})
    result = microaggregation(data, quasi_identifiers=["x"], k=3)
    assert result.data["x"].tolist() == [11.0, 2.0, 21.0, 2.0, 11.0, 21.0, 2.0, 11.0, 21.0]
    assert result.data["other"].tolist() == list("abcdefghi")
    assert result.summary["clusters"] == 3
    assert result.summary["k_achieved"] == 3
    assert result.summary["cells_changed"] == {"x": 6}


def test_remainder_between_2k_and_3k_by_hand() -> None:
    # 7 records, k = 3: one cluster around the record farthest from the centroid (100), the other 4 together.
    data = pd.DataFrame({"x": [0, 1, 2, 3, 4, 5, 100]})
    labels = mdav_clusters(data[["x"]].to_numpy(float), 3)
    assert labels.tolist() == [1, 1, 1, 1, 0, 0, 0]
    result = microaggregation(data, quasi_identifiers=["x"], k=3)
    assert result.data["x"].tolist() == [1.5] * 4 + [109 / 3] * 3
    assert result.summary["smallest_cluster"] == 3
    assert result.summary["largest_cluster"] == 4


def test_ties_go_to_the_earliest_row() -> None:
    # Two records at the same distance from the centroid: the earlier one (row 0) seeds the first cluster.
    labels = mdav_clusters(np.array([[-1.0], [1.0], [-1.0], [1.0], [-1.0], [1.0]]), 3)
    assert labels.tolist() == [0, 1, 0, 1, 0, 1]


def test_ordinal_lower_median_and_nominal_mode_by_hand() -> None:
    # Every (size, colour) group is below k, so all four records are pooled into one cluster of k = 4.
    data = pd.DataFrame({"size": ["S", "XL", "M", "L"], "colour": ["red", "blue", "blue", "red"], "n": [1, 2, 3, 4]})
    result = microaggregation(data, quasi_identifiers=["size", "colour"], k=4, orders={"size": SIZES})
    # Ranks S < M < L < XL: the lower of the two middle values is M. red and blue tie: blue sorts first.
    assert result.data["size"].tolist() == ["M"] * 4
    assert result.data["colour"].tolist() == ["blue"] * 4
    assert result.summary["records_pooled"] == 4
    assert result.step.params["types"] == {"size": "ORDINAL", "colour": "NOMINAL"}


def test_categorical_groups_of_k_keep_their_values() -> None:
    # Group "a" has 6 >= k records: microaggregated inside on x ({1, 2, 3} around the earliest farthest record,
    # then {4, 5, 6}), "a" untouched. Groups "b" and "c" (2 < k records each) are pooled into one cluster: x is
    # their mean and the category their mode (b and c tie: b sorts first).
    data = pd.DataFrame(
        {
            "g": ["a", "a", "b", "a", "c", "a", "b", "c", "a", "a"],
            "x": [1.0, 2.0, 50.0, 3.0, 60.0, 4.0, 51.0, 61.0, 5.0, 6.0],
        }
    )
    result = microaggregation(data, quasi_identifiers=["g", "x"], k=3)
    out = result.data
    assert out["g"].tolist() == ["a", "a", "b", "a", "b", "a", "b", "b", "a", "a"]
    assert out["x"].tolist() == [2.0, 2.0, 55.5, 2.0, 55.5, 5.0, 55.5, 55.5, 5.0, 5.0]
    assert result.summary["groups_kept"] == 1
    assert result.summary["records_pooled"] == 4
    assert result.summary["cells_changed"] == {"g": 2, "x": 10 - 2}
    assert_k_anonymous(out, ["g", "x"], 3)


def test_small_pool_borrows_the_smallest_large_group() -> None:
    # Group "b" (1 record) is below k = 2 alone; the smallest large group ("c", 2 records) joins the pool.
    data = pd.DataFrame({"g": ["a", "a", "a", "b", "c", "c"], "x": [1.0, 2.0, 3.0, 10.0, 11.0, 12.0]})
    result = microaggregation(data, quasi_identifiers=["g", "x"], k=2)
    assert result.summary["records_pooled"] == 3
    assert (result.data["g"][:3] == "a").all()
    assert_k_anonymous(result.data, ["g", "x"], 2)


def test_missing_values() -> None:
    # Group "a" shares a missing x: x stays missing there. The pooled records get cluster values, missing included.
    data = pd.DataFrame(
        {"g": ["a", "a", "a", "b", "c", None], "x": [np.nan, np.nan, np.nan, 5.0, np.nan, 7.0]},
    )
    result = microaggregation(data, quasi_identifiers=["g", "x"], k=3)
    out = result.data
    assert out["x"][:3].isna().all() and (out["g"][:3] == "a").all()
    assert out["x"][3:].tolist() == [6.0, 6.0, 6.0]
    assert out["g"][3:].tolist() == ["b", "b", "b"]
    assert result.summary["cells_imputed"] == 2  # c's x and the missing g
    assert_k_anonymous(out, ["g", "x"], 3)


def test_decimals_round_the_means_and_keep_k() -> None:
    data = pd.DataFrame({"x": [1, 2, 2, 7, 8, 8]})
    result = microaggregation(data, quasi_identifiers=["x"], k=3, decimals=1)
    assert result.data["x"].tolist() == [1.7, 1.7, 1.7, 7.7, 7.7, 7.7]
    assert result.step.params["decimals"] == 1
    assert_k_anonymous(result.data, ["x"], 3)


def test_sse_sst_information_loss() -> None:
    data = pd.DataFrame({"x": [0.0, 0.0, 2.0, 10.0, 10.0, 12.0]})
    result = microaggregation(data, quasi_identifiers=["x"], k=3)
    # Clusters {0, 0, 2} and {10, 10, 12}: SSE = 2 * (2 * (2/3)^2 + (4/3)^2) = 16/3;
    # SST = sum x^2 - n mean^2 = 348 - 6 * (34/6)^2 = 466/3 (the sd cancels in the ratio).
    assert result.summary["sse_sst"] == pytest.approx(16 / 466)


def test_empty_table_is_returned_unchanged() -> None:
    data = pd.DataFrame({"x": pd.Series([], dtype=float)})
    result = microaggregation(data, quasi_identifiers=["x"], k=2)
    assert result.data.empty and result.summary["k_achieved"] == 0


# --- agreement and invariants -------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(6))
def test_agrees_with_a_direct_implementation(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n, d, k = int(rng.integers(3, 70)), int(rng.integers(1, 4)), int(rng.integers(2, 6))
    n = max(n, k)
    points = rng.integers(0, 5, size=(n, d)).astype(float)  # small integers: many exact ties
    assert mdav_clusters(points, k).tolist() == reference_mdav(points, k).tolist()


@pytest.mark.parametrize(
    ("n", "d", "k", "decimals"), [(4000, 2, 3, 1), (5000, 4, 5, 2), (3500, 3, 17, 0), (6000, 1, 4, 1)]
)
def test_index_gives_the_same_clusters_as_scans(n: int, d: int, k: int, decimals: int) -> None:
    rng = np.random.default_rng(n + d + k)
    points = np.round(rng.normal(size=(n, d)), decimals)  # rounded: duplicates and equal distances
    points[:300] = points[0]
    points[300:320] = 40.0  # far outliers
    scanned = mdav_clusters(points, k, use_index=False)
    indexed = mdav_clusters(points, k, use_index=True)
    assert np.array_equal(scanned, indexed)
    sizes = np.bincount(indexed)
    assert sizes.min() >= k and sizes.max() <= 2 * k - 1


@pytest.mark.parametrize("values", [[0.0, -0.0, 1.0, 2.0], [0.0, 1e-200, -1e-200, 1.0, 5e-324]])
def test_signed_zeros_and_tiny_values(values: list[float]) -> None:
    # -0.0 equals 0.0; 1e-200 differs from 0 but its squared distance underflows to 0 (a tie with 0).
    points = np.random.default_rng(3).choice(values, size=(4000, 2))
    assert np.array_equal(mdav_clusters(points, 3, use_index=False), mdav_clusters(points, 3, use_index=True))


@pytest.mark.parametrize("budget", [0, 64])
@pytest.mark.parametrize("seed", range(3))
def test_every_index_search_path_agrees_with_scans(monkeypatch: pytest.MonkeyPatch, budget: int, seed: int) -> None:
    """Small thresholds force the index, its rebuilds, the pruned and the screened farthest searches."""
    import privdash.transform.microaggregation as module

    monkeypatch.setattr(module, "_INDEX_MIN_POINTS", 40)
    monkeypatch.setattr(module, "_SCAN_POINTS", 16)
    monkeypatch.setattr(module, "_PRUNE_LIMIT", budget)
    rng = np.random.default_rng(seed)
    points = np.vstack([np.round(rng.lognormal(size=(900, 3)), 1), rng.normal(size=(300, 3)) * 30])
    points[::7] = points[0]
    k = 3 + seed
    assert np.array_equal(mdav_clusters(points, k, use_index=False), mdav_clusters(points, k, use_index=True))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    data=st.data(),
    n=st.integers(2, 40),
    k=st.integers(2, 5),
)
def test_result_is_k_anonymous_and_keeps_everything_else(data: st.DataObject, n: int, k: int) -> None:
    k = min(k, n)
    numbers = data.draw(st.lists(st.one_of(st.none(), st.integers(0, 20)), min_size=n, max_size=n))
    sizes = data.draw(st.lists(st.one_of(st.none(), st.sampled_from(SIZES)), min_size=n, max_size=n))
    colours = data.draw(st.lists(st.one_of(st.none(), st.sampled_from(["red", "blue"])), min_size=n, max_size=n))
    frame = pd.DataFrame(
        {
            "x": pd.Series(numbers, dtype="float64"),
            "size": pd.Series(sizes, dtype=object),
            "colour": pd.Series(colours, dtype=object),
            "keep": np.arange(n),
        },
        index=np.arange(n) * 10,
    )
    result = microaggregation(frame, quasi_identifiers=["x", "size", "colour"], k=k, orders={"size": SIZES})
    out = result.data
    assert list(out.index) == list(frame.index)
    assert out["keep"].tolist() == list(range(n))
    assert result.summary["k_achieved"] >= k
    assert_k_anonymous(out, ["x", "size", "colour"], k)
    assert set(out["size"].dropna()) <= set(SIZES)


@settings(max_examples=40, deadline=None)
@given(points=st.lists(st.tuples(st.integers(-3, 3), st.integers(-3, 3)), min_size=2, max_size=60), k=st.integers(2, 6))
def test_cluster_sizes_between_k_and_2k_minus_1(points: list[tuple[int, int]], k: int) -> None:
    array = np.asarray(points, dtype=float)
    k = min(k, len(array))
    sizes = np.bincount(mdav_clusters(array, k))
    assert sizes.min() >= k
    assert sizes.max() <= max(2 * k - 1, len(array) if len(array) < 2 * k else 0)


# --- real data --------------------------------------------------------------------------------------------------


EDUCATION = [
    "Preschool", "1st-4th", "5th-6th", "7th-8th", "9th", "10th", "11th", "12th", "HS-grad", "Some-college",
    "Assoc-voc", "Assoc-acdm", "Bachelors", "Masters", "Prof-school", "Doctorate",
]  # fmt: skip


@pytest.mark.parametrize("k", [3, 10])
def test_adult_typed_quasi_identifiers(adult: pd.DataFrame, k: int) -> None:
    qis = ["age", "sex", "race", "marital-status", "education"]
    result = microaggregation(adult, quasi_identifiers=qis, k=k, orders={"education": EDUCATION})
    out = result.data
    assert len(out) == len(adult) and list(out.columns) == list(adult.columns)
    assert out["occupation"].equals(adult["occupation"])
    assert_k_anonymous(out, qis, k)
    assert result.summary["k_achieved"] >= k
    # Records in groups of at least k keep their categorical values.
    assert result.summary["records_pooled"] < len(adult) // 10
    assert set(out["education"]) <= set(EDUCATION)


def test_sdcmicro_testdata_with_contract(data_dir: Path) -> None:
    data = read_table(data_dir / "sdcmicro_testdata" / "testdata.csv")
    contract = DataContract.from_dict(
        {
            "field_metadata": [
                field("urbrur", "NOMINAL"),
                field("water", "NOMINAL"),
                field("sex", "NOMINAL"),
                field("age", "NUMERICAL"),
                field("income", "NUMERICAL", role="is_sensitive"),
            ]
        }
    )
    result = microaggregate_with_contract(data, contract, k=5)
    assert_k_anonymous(result.data, ["urbrur", "water", "sex", "age"], 5)
    assert result.data["income"].equals(data["income"])
    assert result.data["urbrur"].dtype == data["urbrur"].dtype  # nominal integers stay integers


def test_tarragona_numerical_only(data_dir: Path) -> None:
    data = read_table(data_dir / "sdcmicro_testdata" / "Tarragona.csv")
    qis = ["FIXED.ASSETS", "CURRENT.ASSETS", "SALES", "LABOR.COSTS"]
    result = microaggregation(data, quasi_identifiers=qis, k=3)
    assert_k_anonymous(result.data, qis, 3)
    means = result.data[qis].to_numpy()
    # Column means are preserved by cluster means.
    assert np.allclose(means.mean(axis=0), data[qis].to_numpy(float).mean(axis=0))
    assert 0 < result.summary["sse_sst"] < 0.2


# --- steps, recipes and errors ----------------------------------------------------------------------------------


def test_step_and_recipe_round_trip(tmp_path: Path) -> None:
    data = pd.DataFrame({"x": [5, 1, 9, 3, 7, 2], "g": ["a", "b", "a", "b", "a", "b"]})
    direct = microaggregation(data, quasi_identifiers=["x", "g"], k=2)
    via_step = apply_step(data, Step("microaggregation", {"quasi_identifiers": ["x", "g"], "k": 2}))
    assert via_step.data.equals(direct.data)
    path = tmp_path / "recipe.json"
    Recipe((direct.step,)).save(path)
    assert json.loads(path.read_text())["steps"][0]["params"]["types"] == {"x": "NUMERICAL", "g": "NOMINAL"}
    replayed, _ = apply_recipe(data, Recipe.load(path))
    assert replayed.equals(direct.data)


def test_types_from_contract() -> None:
    contract = DataContract.from_dict(
        {
            "field_metadata": [
                field("pc", "POSTCODE"),
                {**field("size", "ORDINAL"), "ordinal_values": SIZES},
                field("dx", "NOMINAL", role="is_sensitive"),
            ]
        }
    )
    assert types_from_contract(contract) == ({"pc": "NOMINAL", "size": "ORDINAL"}, {"size": SIZES})
    dated = DataContract.from_dict(
        {
            "field_metadata": [
                {"field_name": "d", "personal_data_config": {"is_quasi_id": True}, "statistical_data_type": "DATE"}
            ]
        }
    )
    with pytest.raises(ContractError, match="DATE"):
        types_from_contract(dated)


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"quasi_identifiers": ["x"], "k": 1}, ParameterError, "at least 2"),
        ({"quasi_identifiers": ["x"], "k": 7}, ParameterError, "fewer than k"),
        ({"quasi_identifiers": ["nope"], "k": 2}, ColumnError, "Unknown quasi-identifier"),
        ({"quasi_identifiers": ["x"], "k": 2, "types": {"x": "TEXT"}}, ParameterError, "not one of"),
        ({"quasi_identifiers": ["s"], "k": 2, "types": {"s": "ORDINAL"}}, ParameterError, "needs its order"),
        ({"quasi_identifiers": ["s"], "k": 2, "types": {"s": "NUMERICAL"}}, ColumnError, "non-numbers"),
        ({"quasi_identifiers": ["s"], "k": 2, "orders": {"s": ["a"]}}, ContractError, "outside its declared order"),
        ({"quasi_identifiers": ["x"], "k": 2, "orders": {"s": ["a"]}}, ParameterError, "not quasi-identifiers"),
        ({"quasi_identifiers": ["x"], "k": 2, "decimals": -1}, ParameterError, "decimals"),
    ],
)
def test_errors(kwargs: dict, error: type[Exception], message: str) -> None:
    data = pd.DataFrame({"x": [1, 2, 3, 4, 5, 6], "s": list("abcabc")})
    with pytest.raises(error, match=message):
        microaggregation(data, **kwargs)


def test_infinite_values_are_refused() -> None:
    with pytest.raises(ColumnError, match="infinite"):
        microaggregation(pd.DataFrame({"x": [1.0, np.inf, 2.0]}), quasi_identifiers=["x"], k=2)
    with pytest.raises(ParameterError, match="finite"):
        mdav_clusters(np.array([[1.0], [np.nan]]), 2)


def _mixed_table(seed: int, m: int, dims: int, cardinalities: list[int]) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    num = np.round(rng.normal(size=(dims, m)), 1)  # rounded: repeated coordinates and equal distances
    nom = np.vstack([rng.integers(0, c, m) for c in cardinalities]) if cardinalities else np.zeros((0, m), np.int64)
    nom[rng.random(nom.shape) < 0.1] = -1  # missing
    if m > 40:
        num[:, :20] = num[:, :1]  # a block of identical records
        nom[:, :20] = nom[:, :1]
    return num, nom


@pytest.mark.parametrize("switch", [0, 100])
@pytest.mark.parametrize(
    ("seed", "m", "dims", "cardinalities", "k"),
    [
        (0, 300, 1, [2, 150], 3),
        (1, 400, 2, [3, 400, 5], 5),
        (2, 250, 0, [2, 3, 200], 2),
        (3, 320, 2, [60, 80], 4),
        (4, 90, 1, [1, 90], 3),
        (5, 500, 1, [4, 2], 7),
    ],
)
def test_distinct_point_search_gives_the_same_clusters_as_scans(
    monkeypatch: pytest.MonkeyPatch, switch: int, seed: int, m: int, dims: int, cardinalities: list[int], k: int
) -> None:
    """The mixed-type search over distinct points (every choice of high-cardinality QIs) equals the plain scans."""
    import itertools

    import privdash.transform.microaggregation as module

    monkeypatch.setattr(module, "_INDEX_MIN_POINTS", switch)  # 0: never hand the rest over to the scans
    num, nom = _mixed_table(seed, m, dims, cardinalities)
    cards = [int(c.max()) + 1 if (c >= 0).any() else 0 for c in nom]
    rows = np.arange(m)
    expected = np.full(m, -1)
    module._run_group(num, nom, cards, rows, k, expected, 0, use_index=False)
    for high in itertools.product([False, True], repeat=len(cardinalities)):
        labels = np.full(m, -1)
        module._run_group(num, nom, cards, rows, k, labels, 0, high=list(high))
        assert np.array_equal(labels, expected), high
    assert np.bincount(expected).min() >= k


def test_microaggregation_of_the_demo_is_the_same_with_the_distinct_point_search(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import privdash.transform.microaggregation as module
    from privdash.data.demo import people_contract, people_table

    table = people_table(4000)
    fast = microaggregate_with_contract(table, people_contract(), k=5)
    monkeypatch.setattr(module, "_INDEX_MIN_POINTS", 10**9)  # the plain scans only
    plain = microaggregate_with_contract(table, people_contract(), k=5)
    pd.testing.assert_frame_equal(fast.data, plain.data)
    assert fast.summary == plain.summary
