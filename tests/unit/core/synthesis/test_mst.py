"""DP synthesis by MST: the budget split sums to the settings' (ε, δ), the table keeps the schema and the strong
dependences, and bad input (no bounds, a budget too small, δ = 0 with undeclared domains) is refused clearly."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from privdash.errors import ColumnError, ParameterError
from privdash.synthesis import SynthesisSettings, synthesize
from privdash.synthesis.mst import budget_split


def _table(rows: int = 3000, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    sex = rng.choice(["f", "m"], rows)
    job = np.where(
        rng.random(rows) < 0.8, np.where(sex == "m", "builder", "nurse"), rng.choice(["clerk", "cook"], rows)
    )
    age = rng.integers(20, 70, rows)
    return pd.DataFrame({"sex": pd.Series(sex, dtype="string"), "job": pd.Series(job, dtype="string"), "age": age})


@pytest.mark.parametrize(
    ("epsilon", "delta", "columns", "undeclared"), [(1.0, 1e-6, 9, 8), (0.3, 0.0, 3, 0), (2.0, 1e-5, 1, 1)]
)
def test_the_budget_split_sums_to_the_settings(epsilon: float, delta: float, columns: int, undeclared: int) -> None:
    split = budget_split(epsilon, delta, columns, undeclared)
    total = split.total()
    assert total.epsilon <= epsilon and math.isclose(total.epsilon, epsilon, rel_tol=1e-12)
    assert total.delta <= delta and math.isclose(total.delta, delta, rel_tol=1e-12, abs_tol=0.0)
    if undeclared:
        assert math.isclose(sum(b.epsilon for b in split.key_selection), epsilon / 4, rel_tol=1e-12)


def test_dp_synthesis_keeps_the_schema_and_the_strong_dependence() -> None:
    table = _table()
    release = synthesize(table, SynthesisSettings("dp", epsilon=3.0, bounds={"age": (18, 80)}, seed=4))
    out = release.table
    assert list(out.columns) == list(table.columns) and (out.dtypes == table.dtypes).all()
    assert abs(len(out) - len(table)) < 100  # the noisy total
    assert release.privacy is not None and (release.privacy.epsilon, release.privacy.delta) == (3.0, 1e-6)
    assert out["age"].between(18, 80).all()
    assert set(out["job"]) <= {"builder", "nurse", "clerk", "cook"}
    share = (out["job"][out["sex"] == "m"] == "builder").mean()
    assert share > 0.7  # the tree links sex and job: without the edge it would be about 0.45
    assert "sex-job" in release.model or "job-sex" in release.model


def test_declared_domains_need_no_delta() -> None:
    table = _table()
    settings = SynthesisSettings(
        "dp",
        epsilon=2.0,
        delta=0.0,
        bounds={"age": (18, 80)},
        domains={"sex": ["f", "m"], "job": ["builder", "nurse", "clerk", "cook", "pilot"]},
        seed=1,
    )
    release = synthesize(table, settings)
    assert release.privacy is not None and release.privacy.delta == 0.0
    assert "key selection" not in release.model


def test_numeric_columns_need_bounds_named_with_the_flag() -> None:
    with pytest.raises(ParameterError, match=r"bounds for the numeric column\(s\) age: give bounds age=LOW:HIGH"):
        synthesize(_table(), SynthesisSettings("dp", epsilon=1.0))


def test_undeclared_text_columns_need_delta() -> None:
    with pytest.raises(ParameterError, match="needs δ > 0"):
        synthesize(_table(), SynthesisSettings("dp", epsilon=1.0, delta=0.0, bounds={"age": (18, 80)}))


def test_a_budget_too_small_for_the_domain_is_refused() -> None:
    with pytest.raises(ParameterError, match="budget is too small for the domain of 'sex'"):
        synthesize(_table(), SynthesisSettings("dp", epsilon=0.01, bounds={"age": (18, 80)}))
    declared = {"sex": ["f", "m"], "job": ["builder", "nurse", "clerk", "cook"]}
    with pytest.raises(ParameterError, match=r"budget is too small for the domain of 'age': its 200 cells"):
        synthesize(
            _table(), SynthesisSettings("dp", epsilon=0.05, bounds={"age": (18, 80)}, bins=200, domains=declared)
        )


def test_bounds_of_an_unknown_column_are_refused() -> None:
    with pytest.raises(ColumnError, match="not synthesized: weight"):
        synthesize(_table(), SynthesisSettings("dp", epsilon=1.0, bounds={"age": (18, 80), "weight": (0, 200)}))


def test_one_column_is_its_noisy_marginal() -> None:
    table = _table()[["sex"]]
    release = synthesize(table, SynthesisSettings("dp", epsilon=1.0, seed=0))
    assert "(one column)" in release.model and "1-way 1 x ε 0.75" in release.model
    assert set(release.table["sex"]) == {"f", "m"} and abs(len(release.table) - len(table)) < 200
