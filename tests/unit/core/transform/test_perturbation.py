from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from privdash.errors import ColumnError, ParameterError
from privdash.transform.perturbation import (
    add_noise,
    invariant_pram_matrix,
    pram,
    rank_swap,
    shuffling,
)
from privdash.transform.steps import Recipe, Step, apply_recipe, apply_step, registered_steps


@pytest.fixture(scope="module")
def numbers() -> pd.DataFrame:
    rng = np.random.default_rng(20)
    n = 20_000
    a = rng.normal(50, 10, n)
    b = 3 * a + rng.normal(0, 20, n)  # correlated with a
    c = rng.exponential(1000, n)
    return pd.DataFrame({"a": a, "b": b, "c": c, "label": rng.choice(["x", "y"], n)})


# --- additive noise ------------------------------------------------------------------------------------------------


def test_uncorrelated_noise_is_normal_with_share_of_each_sd(numbers: pd.DataFrame) -> None:
    share = 0.2
    result = add_noise(numbers, columns=["a", "b", "c"], share=share, seed=7)
    for name in ("a", "b", "c"):
        noise = result.data[name].to_numpy() - numbers[name].to_numpy()
        standardized = noise / (share * numbers[name].std(ddof=1))
        assert stats.kstest(standardized, "norm").pvalue > 0.01, name
    # Independent columns: the noise of a and b is uncorrelated although a and b are.
    noise_a = result.data["a"] - numbers["a"]
    noise_b = result.data["b"] - numbers["b"]
    assert abs(np.corrcoef(noise_a, noise_b)[0, 1]) < 0.03
    assert result.data["label"].equals(numbers["label"])
    assert result.summary["noise_sd"]["a"] == pytest.approx(share * numbers["a"].std(ddof=1))


def test_correlated_noise_has_covariance_share_squared_sigma(numbers: pd.DataFrame) -> None:
    share = 0.3
    columns = ["a", "b", "c"]
    result = add_noise(numbers, columns=columns, share=share, method="correlated", seed=8)
    noise = result.data[columns].to_numpy() - numbers[columns].to_numpy()
    sigma = np.cov(numbers[columns].to_numpy(), rowvar=False)
    # Whitened by the Cholesky factor of share^2 Sigma, the noise must be independent standard normal draws.
    whitened = np.linalg.solve(np.linalg.cholesky(share**2 * sigma), noise.T)
    for row in whitened:  # three tests at 0.001 each: a family-wise level of 0.3%
        assert stats.kstest(row, "norm").pvalue > 0.001
    assert np.corrcoef(noise, rowvar=False)[0, 1] == pytest.approx(
        sigma[0, 1] / np.sqrt(sigma[0, 0] * sigma[1, 1]), abs=0.03
    )
    # Correlations of the published data stay those of the original.
    assert result.data["a"].corr(result.data["b"]) == pytest.approx(numbers["a"].corr(numbers["b"]), abs=0.02)


def test_correlated_noise_accepts_a_singular_covariance() -> None:
    rng = np.random.default_rng(1)
    x = rng.normal(size=500)
    data = pd.DataFrame({"x": x, "twice": 2 * x, "constant": np.full(500, 4.0)})
    result = add_noise(data, columns=["x", "twice", "constant"], share=0.1, method="correlated", seed=2)
    noise = result.data.to_numpy() - data.to_numpy()
    assert np.allclose(noise[:, 1], 2 * noise[:, 0])  # the noise follows the collinearity
    assert np.allclose(noise[:, 2], 0.0)


def test_noise_is_reproducible_from_the_recorded_seed(numbers: pd.DataFrame) -> None:
    first = add_noise(numbers, columns=["a"], share=0.1, seed=3)
    again = apply_step(numbers, Step.from_dict(json.loads(json.dumps(first.step.to_dict()))))
    assert again.data["a"].equals(first.data["a"])
    other = add_noise(numbers, columns=["a"], share=0.1, seed=4)
    assert not other.data["a"].equals(first.data["a"])
    drawn = add_noise(numbers, columns=["a"], share=0.1)
    seed = drawn.step.params["seed"]
    assert isinstance(seed, int) and seed >= 0
    assert add_noise(numbers, columns=["a"], share=0.1, seed=seed).data["a"].equals(drawn.data["a"])
    injected = add_noise(numbers, columns=["a"], share=0.1, seed=np.random.default_rng(3))
    assert injected.data["a"].equals(first.data["a"]) and injected.step.params["seed"] is None


def test_noise_keeps_missing_values_and_zero_share_changes_nothing() -> None:
    data = pd.DataFrame({"v": [1, 2, None, 4, 5], "w": [1, 1, 1, 1, 1]})
    result = add_noise(data, columns=["v", "w"], share=0.5, seed=1)
    assert result.data["v"].isna().tolist() == [False, False, True, False, False]
    assert (result.data["w"] == 1).all()  # sd 0: no noise
    assert result.summary["cells_changed"] == {"v": 4, "w": 0}
    assert add_noise(data, columns=["v"], share=0, seed=1).data["v"].equals(data["v"].astype(float))


@pytest.mark.parametrize(
    ("params", "error", "message"),
    [
        ({"columns": ["a"], "share": -0.1}, ParameterError, r"share must lie in \[0, 100\]"),
        ({"columns": ["a"], "share": float("nan")}, ParameterError, "finite number"),
        ({"columns": ["a"], "share": "0.1"}, ParameterError, "share"),
        ({"columns": ["label"], "share": 0.1}, ColumnError, "'label' holds"),
        ({"columns": ["nope"], "share": 0.1}, ColumnError, "Unknown column"),
        ({"columns": ["a"], "share": 0.1, "method": "correlated2"}, ParameterError, "uncorrelated, correlated"),
        ({"columns": ["a"], "share": 0.1, "seed": -1}, ParameterError, "seed"),
        ({"columns": ["a"], "share": 0.1, "seed": True}, ParameterError, "seed"),
    ],
)
def test_noise_rejects_bad_input(numbers: pd.DataFrame, params: dict, error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        add_noise(numbers.head(50), **params)


# --- rank swapping -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("n", "p"), [(1000, 5), (997, 1), (5000, 0.5), (200, 100), (30, 10)])
def test_rank_swapping_respects_the_largest_rank_distance(n: int, p: float) -> None:
    rng = np.random.default_rng(n)
    values = rng.permutation(n).astype(float) * 1.5  # distinct values: each one's source row is unambiguous
    data = pd.DataFrame({"v": values, "w": rng.normal(size=n)})
    result = rank_swap(data, columns=["v", "w"], p=p, seed=5)
    limit = int(np.floor(p / 100 * n + 1e-9))
    assert result.summary["max_rank_distance"]["v"] == limit
    published = result.data["v"].to_numpy()
    source = {value: row for row, value in enumerate(values)}
    origin = np.array([source[value] for value in published])
    rank = np.argsort(np.argsort(values))
    distance = np.abs(rank[origin] - rank)
    assert distance.max() <= limit
    assert (origin[origin] == np.arange(n)).all()  # pairs exchange values: each value is swapped at most once
    assert sorted(published) == sorted(values)
    if limit >= 1:
        assert (distance > 0).mean() > 0.8  # nearly every value moves (one per odd window may stay)
        assert distance.max() >= min(limit, n - 1) * 0.5
    # Columns are swapped independently.
    assert sorted(result.data["w"]) == sorted(data["w"])
    assert not np.array_equal(result.data["w"].argsort().to_numpy(), result.data["v"].argsort().to_numpy())


def test_rank_swapping_leaves_missing_values_and_keeps_integers() -> None:
    data = pd.DataFrame({"f": [5.0, None, 1.0, 3.0, None, 2.0, 4.0], "i": [7, 1, 3, 2, 6, 5, 4]})
    result = rank_swap(data, columns=["f", "i"], p=100, seed=1)
    assert result.data["f"].isna().tolist() == data["f"].isna().tolist()
    assert sorted(result.data["f"].dropna()) == [1.0, 2.0, 3.0, 4.0, 5.0]
    assert result.data["i"].dtype == data["i"].dtype and sorted(result.data["i"]) == list(range(1, 8))
    assert rank_swap(data, columns=["f", "i"], p=100, seed=1).data.equals(result.data)


@pytest.mark.parametrize("p", [0, -5, 100.5, float("nan"), "5", True])
def test_rank_swapping_rejects_p_outside_0_100(p: object) -> None:
    with pytest.raises(ParameterError, match=r"p must be a (percentage in \(0, 100\]|number|finite number) \("):
        rank_swap(pd.DataFrame({"v": [1.0, 2.0]}), columns=["v"], p=p)  # type: ignore[arg-type]


def test_rank_swapping_rejects_text() -> None:
    with pytest.raises(ColumnError, match="Rank swapping needs numerical columns; 'v'"):
        rank_swap(pd.DataFrame({"v": ["a", "b"]}), columns=["v"], p=10)


# --- PRAM ------------------------------------------------------------------------------------------------------------

MATRIX = {
    "low": {"low": 0.8, "mid": 0.2},
    "mid": {"low": 0.1, "mid": 0.7, "high": 0.2},
    "high": {"high": 1.0},
}


def test_pram_follows_the_given_transition_matrix() -> None:
    rng = np.random.default_rng(3)
    n = 120_000
    column = pd.Series(rng.choice(["low", "mid", "high"], n, p=[0.5, 0.3, 0.2]), name="level")
    data = pd.DataFrame({"level": column, "other": np.arange(n)})
    result = pram(data, columns=["level"], matrix=MATRIX, seed=11)
    observed = pd.crosstab(data["level"], result.data["level"], normalize="index")
    categories = list(MATRIX)
    for original in categories:
        for published in categories:
            expected = MATRIX[original].get(published, 0.0)
            got = observed.loc[original].get(published, 0.0)
            assert got == pytest.approx(expected, abs=0.01), (original, published)
    assert result.data["other"].equals(data["other"])
    assert result.step.params["matrix"]["mid"] == {"low": 0.1, "mid": 0.7, "high": 0.2}
    assert apply_step(data, result.step).data["level"].equals(result.data["level"])


def reference_invariant_matrix(frequencies: np.ndarray, diagonal: np.ndarray, alpha: float) -> np.ndarray:
    """sdcMicro's pramWORK/calcTransitionMatrix, loop for loop."""
    size = len(frequencies)
    p = frequencies / frequencies.sum()
    base = np.empty((size, size))
    for i in range(size):
        for j in range(size):
            base[i, j] = diagonal[i] if i == j else (1 - diagonal[i]) / (size - 1)
    q = np.empty((size, size))
    for k in range(size):
        s = sum(p[j] * base[j, k] for j in range(size))
        for j in range(size):
            q[k, j] = base[j, k] * p[j] / s
    return alpha * base @ q + (1 - alpha) * np.eye(size)


def test_invariant_pram_keeps_the_distribution() -> None:
    rng = np.random.default_rng(4)
    n = 200_000
    shares = np.array([0.55, 0.25, 0.12, 0.05, 0.03])
    data = pd.DataFrame({"c": rng.choice(list("abcde"), n, p=shares)})
    result = pram(data, columns=["c"], pd=0.6, alpha=0.7, seed=21)
    matrix = result.summary["matrices"]["c"]
    categories = sorted(matrix)
    r = np.array([[matrix[i].get(j, 0.0) for j in categories] for i in categories])
    frequencies = data["c"].value_counts().reindex(categories).to_numpy(dtype=float)
    p = frequencies / n
    np.testing.assert_allclose(p @ r, p, atol=1e-12)  # invariant: p R = p
    np.testing.assert_allclose(r.sum(axis=1), 1.0, atol=1e-12)
    diagonal = np.random.default_rng(21).uniform(0.6, 1.0, 5)  # the first draws of the recorded seed
    np.testing.assert_allclose(r, reference_invariant_matrix(frequencies, diagonal, 0.7), atol=1e-12)
    published = result.data["c"].value_counts(normalize=True).reindex(categories).to_numpy()
    np.testing.assert_allclose(published, p, atol=0.005)
    assert 0 < result.summary["cells_changed"]["c"] < n
    assert result.step.params == {"columns": ["c"], "seed": 21, "pd": 0.6, "alpha": 0.7}


def test_pram_keeps_missing_values_and_numeric_codes() -> None:
    data = pd.DataFrame({"code": [1, 2, 2, 1, 3, 3, 1] * 200, "text": (["a", None, "b", "a", "b", None, "a"] * 200)})
    matrix = {"1": {"2": 1.0}, "2": {"3": 1.0}, "3": {"1": 1.0}}
    result = pram(data, columns=["code"], matrix=matrix, seed=1)
    assert result.data["code"].dtype == data["code"].dtype
    assert (result.data["code"] == data["code"] % 3 + 1).all()  # a deterministic cycle
    texts = pram(data, columns=["text"], seed=2).data["text"]
    assert texts.isna().equals(data["text"].isna())
    assert set(texts.dropna()) <= {"a", "b"}


def test_pram_matrix_row_not_summing_to_one() -> None:
    data = pd.DataFrame({"level": ["low", "mid"]})
    bad = {**MATRIX, "mid": {"low": 0.1, "mid": 0.7}}
    with pytest.raises(ParameterError, match=r"Row 'mid' of the PRAM matrix sums to 0\.8, not 1"):
        pram(data, columns=["level"], matrix=bad)


@pytest.mark.parametrize(
    ("matrix", "message"),
    [
        ({"low": {"low": 1.2, "mid": -0.2}, "mid": {"mid": 1.0}}, r"must be a probability in \[0, 1\]"),
        ({"low": {"nowhere": 1.0}, "mid": {"mid": 1.0}}, "has no row of its own"),
        ({"low": {"low": "1"}, "mid": {"mid": 1.0}}, "must be a number"),
        ({}, "non-empty object"),
        ({"low": [1.0]}, "Row 'low' of the PRAM matrix must be an object"),
    ],
)
def test_pram_rejects_malformed_matrices(matrix: dict, message: str) -> None:
    with pytest.raises(ParameterError, match=message):
        pram(pd.DataFrame({"level": ["low", "mid"]}), columns=["level"], matrix=matrix)


def test_pram_rejects_categories_missing_from_the_matrix() -> None:
    data = pd.DataFrame({"level": ["low", "mid", "extreme", "high"]})
    with pytest.raises(ParameterError, match="no row for the value\\(s\\) 'extreme'"):
        pram(data, columns=["level"], matrix=MATRIX)


@pytest.mark.parametrize(("name", "value"), [("pd", 1.5), ("alpha", -0.1)])
def test_pram_rejects_probabilities_outside_0_1(name: str, value: float) -> None:
    with pytest.raises(ParameterError, match=name):
        pram(pd.DataFrame({"c": ["a", "b"]}), columns=["c"], **{name: value})  # type: ignore[arg-type]


# --- shuffling -----------------------------------------------------------------------------------------------------


def test_shuffle_keeps_each_class_multiset_and_moves_values() -> None:
    rng = np.random.default_rng(9)
    n = 5000
    data = pd.DataFrame(
        {
            "sex": rng.choice(["f", "m"], n),
            "region": rng.choice(np.array(["n", "s", None], dtype=object), n),
            "income": rng.integers(0, 100_000, n),
            "illness": rng.choice(["flu", "cold", "none"], n),
            "id": np.arange(n),
        }
    )
    result = shuffling(data, columns=["income", "illness"], quasi_identifiers=["sex", "region"], seed=4)
    out = result.data
    assert out[["sex", "region", "id"]].equals(data[["sex", "region", "id"]])
    keys = ["sex", "region"]

    def multisets(frame: pd.DataFrame) -> dict:
        grouped = frame.groupby(keys, dropna=False)
        return {key: sorted(zip(group["income"], group["illness"], strict=True)) for key, group in grouped}

    assert multisets(out) == multisets(data)  # (income, illness) pairs stay together, in their class
    assert result.summary["classes"] == 6
    assert result.summary["cells_changed"]["income"] > 0.9 * n
    assert apply_step(data, result.step).data.equals(out)


def test_shuffle_rejects_a_quasi_identifier_as_sensitive() -> None:
    data = pd.DataFrame({"a": [1, 2], "b": [3, 4]})
    with pytest.raises(ColumnError, match="also a quasi-identifier"):
        shuffling(data, columns=["a"], quasi_identifiers=["a", "b"])
    with pytest.raises(ColumnError, match="Unknown quasi-identifier"):
        shuffling(data, columns=["a"], quasi_identifiers=["zzz"])


# --- recipes -------------------------------------------------------------------------------------------------------


def test_perturbative_steps_are_registered_and_replayed_from_json(numbers: pd.DataFrame) -> None:
    assert {"add_noise", "rank_swap", "pram", "shuffling"} <= set(registered_steps())
    recipe = Recipe(
        (
            Step("add_noise", {"columns": ["a", "b"], "share": 0.1, "method": "correlated", "seed": 1}),
            Step("rank_swap", {"columns": ["c"], "p": 5, "seed": 2}),
            Step("pram", {"columns": ["label"], "pd": 0.7, "seed": 3}),
            Step("shuffling", {"columns": ["c"], "quasi_identifiers": ["label"], "seed": 4}),
        )
    )
    first, _ = apply_recipe(numbers, recipe)
    second, _ = apply_recipe(numbers, Recipe.from_dict(json.loads(recipe.to_json())))
    pd.testing.assert_frame_equal(first, second)
    assert not first["a"].equals(numbers["a"])
    with pytest.raises(ParameterError, match="Step 'rank_swap'"):
        apply_step(numbers, Step("rank_swap", {"columns": ["c"], "p": 5, "percent": 3}))


def test_invariant_pram_matrix_takes_a_seed_and_reads_the_old_rng_keyword() -> None:
    frequencies = np.array([50.0, 30.0, 20.0])
    seeded = invariant_pram_matrix(frequencies, seed=7)
    assert np.array_equal(seeded, invariant_pram_matrix(frequencies, seed=np.random.default_rng(7)))
    p = frequencies / frequencies.sum()
    assert np.allclose(p @ seeded, p) and np.allclose(seeded.sum(axis=1), 1.0)
    with pytest.warns(DeprecationWarning, match="seed"):
        assert np.array_equal(invariant_pram_matrix(frequencies, rng=np.random.default_rng(7)), seeded)
