"""The recipe step ``synthesize``: records the seed used so the recipe re-makes the same table, and refuses a dp
step outside ``privdash synthesize`` (which charges the ledger)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from privdash.errors import ParameterError
from privdash.synthesis import SynthesisSettings
from privdash.synthesis.step import synthesis_step
from privdash.transform.steps import Recipe, Step, apply_recipe, registered_steps


def _table() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    return pd.DataFrame({"age": rng.integers(20, 80, 300), "sex": rng.choice(["f", "m"], 300), "x": rng.random(300)})


def test_the_step_records_the_seed_and_the_recipe_reproduces_the_table() -> None:
    assert "synthesize" in registered_steps()
    table = _table()
    first, results = apply_recipe(table, [Step("synthesize", {"method": "hybrid", "share": 0.3})])
    recorded = results[0].step
    assert isinstance(recorded.params["seed"], int)
    assert results[0].summary["rows_replaced"] == 90
    again, _ = apply_recipe(table, Recipe.from_json(Recipe([recorded]).to_json()))
    pd.testing.assert_frame_equal(first, again)


def test_a_partial_step_uses_its_quasi_identifiers() -> None:
    table = _table()
    step = synthesis_step(SynthesisSettings("partial", columns=("age",), k=3, seed=2), ("age", "sex"))
    out, results = apply_recipe(table, [step])
    pd.testing.assert_series_equal(out["x"], table["x"])
    assert results[0].summary["cells_replaced"] == results[0].summary["rows_replaced"] > 0


def test_a_dp_step_is_refused_outside_privdash_synthesize() -> None:
    step = Step("synthesize", {"method": "dp", "epsilon": 1.0, "bounds": {"age": [18, 80], "x": [0, 1]}})
    with pytest.raises(ParameterError, match="privdash synthesize DATA --recipe"):
        apply_recipe(_table(), [step])


def test_bad_step_parameters_are_refused() -> None:
    with pytest.raises(ParameterError, match="Unknown synthesis setting"):
        apply_recipe(_table(), [Step("synthesize", {"method": "full", "sharee": 0.3})])
    with pytest.raises(ParameterError, match="quasi_identifiers must be a list"):
        apply_recipe(_table(), [Step("synthesize", {"method": "full", "quasi_identifiers": "age"})])
