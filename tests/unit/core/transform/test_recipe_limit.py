"""A recipe records the suppression limit it was made with and says when re-applying it removes more."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from privdash.errors import ParameterError
from privdash.search.lattice import optimal_generalization
from privdash.transform.hierarchy import interval_hierarchy
from privdash.transform.steps import Recipe, Step, apply_recipe


def test_the_limit_survives_a_round_trip(tmp_path: Path) -> None:
    recipe = Recipe((Step("drop_identifiers", {"columns": ["name"]}),), max_suppression=0.02)
    path = tmp_path / "recipe.json"
    recipe.save(path)
    assert json.loads(path.read_text())["max_suppression"] == 0.02
    assert Recipe.load(path) == recipe
    # Recipes written before the limit was recorded have none.
    plain = Recipe((Step("drop_identifiers", {"columns": ["name"]}),))
    assert "max_suppression" not in plain.to_dict() and Recipe.from_dict(plain.to_dict()).max_suppression is None
    with pytest.raises(ParameterError, match="max_suppression"):
        Recipe.from_dict({**plain.to_dict(), "max_suppression": 1.5})


def test_excess_is_judged_against_floor_of_the_limit() -> None:
    recipe = Recipe((), max_suppression=0.02)
    assert recipe.suppression_excess(1_000, 980) is None  # 20 = floor(0.02 * 1000) records: within
    message = recipe.suppression_excess(1_000, 979)
    assert message is not None and "21 of 1,000 records (2.1%)" in message and "2.0% suppression limit" in message
    assert Recipe(()).suppression_excess(1_000, 0) is None  # no limit recorded, nothing to judge
    assert recipe.suppression_excess(0, 0) is None


def test_a_search_recipe_carries_its_limit_and_warns_on_other_data() -> None:
    # Made on a table where every age class is large, re-applied to one where the same levels leave small classes.
    made_on = pd.DataFrame({"age": [20, 21, 22, 23, 24] * 20 + [30, 31, 32, 33, 34] * 20})
    found = optimal_generalization(
        made_on, {"age": interval_hierarchy(made_on["age"], widths=[5, 10])}, k=5, max_suppression=0.05
    )
    assert found.recipe.max_suppression == 0.05
    other = pd.DataFrame({"age": [20, 21, 22, 23, 24] * 20 + [30, 41, 52, 63, 74, 85]})
    published, _ = apply_recipe(other, Recipe.from_dict(json.loads(found.recipe.to_json())))
    removed = len(other) - len(published)
    # The six scattered ages form classes of one at every level the search chose: all six are suppressed.
    assert removed == 6 and removed > 0.05 * len(other)
    assert found.recipe.suppression_excess(len(other), len(published)) is not None
