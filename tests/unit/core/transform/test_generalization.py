from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from privdash.errors import ColumnError, ParameterError
from privdash.measure.classes import equivalence_classes
from privdash.targets import PrivacyTargets
from privdash.transform.generalization import generalize
from privdash.transform.hierarchy import Hierarchy, HierarchyError, interval_hierarchy, load_hierarchies
from privdash.transform.steps import Recipe, Step, apply_recipe, apply_step, registered_steps

SEX = Hierarchy.from_rows([["M", "*"], ["F", "*"]])
ZIP = Hierarchy.from_rows([["1301", "130*", "13**"], ["1302", "130*", "13**"], ["1410", "141*", "14**"]])


def small() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "age": [23, 27, 31, 38, 38, np.nan],
            "sex": ["M", "F", "M", "M", "F", "F"],
            "zip": ["1301", "1302", "1301", "1410", "1410", "1302"],
            "disease": ["flu", "flu", "hiv", "flu", "cancer", "flu"],
        },
        index=[10, 11, 12, 13, 14, 15],
    )


def test_step_is_registered() -> None:
    assert "generalize" in registered_steps()


def test_generalize_by_hand() -> None:
    data = small()
    age = interval_hierarchy(data["age"], widths=[5, 10])
    result = generalize(data, {"age": 1, "zip": 2, "sex": 0}, {"age": age, "zip": ZIP, "sex": SEX})
    out = result.data
    assert out["age"].tolist()[:5] == ["20-24", "25-29", "30-34", "35-39", "35-39"]
    assert pd.isna(out["age"].iloc[5])
    assert out["zip"].tolist() == ["13**", "13**", "13**", "14**", "14**", "13**"]
    assert out["sex"].tolist() == data["sex"].tolist() and out["sex"].dtype == data["sex"].dtype
    assert out["disease"].tolist() == data["disease"].tolist()
    assert list(out.index) == list(data.index)
    assert result.kept_rows is None
    # 5 ages and 6 zips changed text; sex is at level 0.
    assert result.summary == {
        "levels": {"age": 1, "zip": 2, "sex": 0},
        "cells_changed": 11,
        "records_suppressed": 0,
        "rows_in": 6,
        "rows_out": 6,
    }
    mapping = result.mapping
    assert mapping is not None
    zips = mapping[mapping["column"] == "zip"].set_index("original")["published"].to_dict()
    assert zips == {"1301": "13**", "1302": "13**", "1410": "14**"}
    ages = mapping[mapping["column"] == "age"]
    assert ages["original"].tolist() == [23.0, 27.0, 31.0, 38.0] and ages["published"].tolist()[-1] == "35-39"
    assert mapping[mapping["column"] == "sex"]["published"].tolist() == ["M", "F"]
    # The input is untouched.
    assert data["zip"].tolist()[0] == "1301"


def test_suppression_of_violating_classes() -> None:
    data = small().iloc[:5]
    result = generalize(
        data,
        {"sex": 0, "zip": 1},
        {"sex": SEX, "zip": ZIP},
        suppress=PrivacyTargets(k=2),
        quasi_identifiers=["sex", "zip"],
    )
    # Classes (M,130*) x2, (F,130*) x1, (M,141*) x1, (F,141*) x1: three singletons removed.
    assert result.kept_rows is not None and result.kept_rows.tolist() == [0, 2]
    assert list(result.data.index) == [10, 12]
    assert result.summary["records_suppressed"] == 3
    assert equivalence_classes(result.data, ["sex", "zip"]).k >= 2
    diverse = generalize(
        data,
        {"sex": 1, "zip": 2},
        {"sex": SEX, "zip": ZIP},
        suppress=PrivacyTargets(k=1, l=2, sensitive=("disease",)),
        quasi_identifiers=["sex", "zip"],
    )
    # (*,13**) has flu, flu, hiv: 2 distinct; (*,14**) has flu, cancer: 2 distinct. Nothing removed.
    assert diverse.kept_rows is None and len(diverse.data) == 5
    strict = generalize(
        data,
        {"sex": 1, "zip": 2},
        {"sex": SEX, "zip": ZIP},
        suppress=PrivacyTargets(k=1, l=3, sensitive=("disease",)),
        quasi_identifiers=["sex", "zip"],
    )
    assert len(strict.data) == 0 and strict.summary["records_suppressed"] == 5


def test_suppression_forms_classes_over_every_quasi_identifier() -> None:
    data = small().iloc[:5]
    with pytest.raises(ParameterError, match="needs quasi_identifiers"):
        generalize(data, {"zip": 1}, {"zip": ZIP}, suppress=PrivacyTargets(k=2))
    # Only zip is generalized, but sex is a QI too: (M,130*) x2 is the only class of two records.
    result = generalize(data, {"zip": 1}, {"zip": ZIP}, suppress=PrivacyTargets(k=2), quasi_identifiers=["sex", "zip"])
    assert result.kept_rows is not None and result.kept_rows.tolist() == [0, 2]
    assert equivalence_classes(result.data, ["sex", "zip"]).k >= 2
    assert result.step.params["quasi_identifiers"] == ["sex", "zip"]
    # Over the generalized column alone, (130*) x3 and (141*) x2 would both pass: nothing would be removed.
    alone = generalize(data, {"zip": 1}, {"zip": ZIP}, suppress=PrivacyTargets(k=2), quasi_identifiers=["zip"])
    assert alone.kept_rows is None
    again, _ = apply_recipe(data, Recipe((result.step,)))
    pd.testing.assert_frame_equal(again, result.data)


def test_step_round_trip_through_json() -> None:
    data = small()
    age = interval_hierarchy(data["age"], widths=[5, 10])
    result = generalize(
        data,
        {"age": 2, "zip": 1, "sex": 1},
        {"age": age, "zip": ZIP, "sex": SEX},
        suppress=PrivacyTargets(k=2),
        quasi_identifiers=["age", "zip", "sex"],
    )
    recipe = Recipe((result.step,))
    loaded = Recipe.from_dict(json.loads(recipe.to_json()))
    again, results = apply_recipe(data, loaded)
    pd.testing.assert_frame_equal(again, result.data)
    assert results[0].step.to_dict() == result.step.to_dict()
    params = result.step.params
    assert params["columns"]["age"]["hierarchy"] == {"rule": age.rule}
    assert params["columns"]["zip"]["hierarchy"]["rows"][0] == ["1301", "130*", "13**"]
    assert params["suppress"]["k"] == 2


def test_rule_hierarchy_reapplied_to_new_values() -> None:
    data = small()
    age = interval_hierarchy(data["age"], widths=[5, 10])
    step = generalize(data, {"age": 1}, {"age": age}).step
    new = pd.DataFrame({"age": [61, 23, 99]})
    out = apply_step(new, step)
    assert out.data["age"].tolist() == ["60-64", "20-24", "95-99"]
    table_step = generalize(data, {"zip": 1}, {"zip": ZIP}).step
    with pytest.raises(HierarchyError, match=r"of column 'zip' are not leaves.*'9999'"):
        apply_step(pd.DataFrame({"zip": ["1301", "9999"]}), table_step)


def test_errors() -> None:
    data = small()
    with pytest.raises(HierarchyError, match="No hierarchy given for: 'zip'"):
        generalize(data, {"zip": 1}, {})
    with pytest.raises(HierarchyError, match="Level of 'zip' must be between 0 and 2"):
        generalize(data, {"zip": 5}, {"zip": ZIP})
    with pytest.raises(ColumnError, match="Unknown generalized column"):
        generalize(data, {"zap": 1}, {"zap": ZIP})
    with pytest.raises(HierarchyError, match="not leaves"):
        generalize(data, {"sex": 1}, {"sex": Hierarchy.from_rows([["M", "*"]])})
    with pytest.raises(ParameterError, match="unknown parameter"):
        apply_step(data, Step("generalize", {"columns": {}, "extra": 1}))
    with pytest.raises(ParameterError, match="'columns' must be an object"):
        apply_step(data, Step("generalize", {"columns": []}))
    with pytest.raises(ParameterError, match="give a 'level' and a 'hierarchy'"):
        apply_step(data, Step("generalize", {"columns": {"zip": {"level": 1}}}))
    with pytest.raises(ParameterError, match="Unknown privacy target"):
        apply_step(
            data,
            Step("generalize", {"columns": {"zip": {"level": 1, "hierarchy": ZIP.to_dict()}}, "suppress": {"q": 1}}),
        )


def test_adult_generalization_matches_hierarchy(data_dir: Path, adult: pd.DataFrame) -> None:
    hierarchies = load_hierarchies(data_dir / "arx_adult" / "hierarchies", ["age", "education"])
    result = generalize(adult, {"age": 2, "education": 3}, hierarchies)
    assert set(result.data["education"]) == {"*"}
    # ARX's file labels are shifted by one ("40;35-39;30-39;..."): '30-39' holds the ages 31..40.
    assert (result.data["age"] == "30-39").sum() == adult["age"].between(31, 40).sum()
    assert result.summary["cells_changed"] == 2 * len(adult)
