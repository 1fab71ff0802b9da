"""The one step compiler: every fix spec but the search becomes a registered core step, applied by the registry."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest

from privdash.application import fixes
from privdash.application.fixes import FixError, StepContext, compile_spec, run_fixes, start_run, step_context
from privdash.data.contract import ColumnRole, DataContract, StatisticalType
from privdash.data.demo import people_contract, people_table
from privdash.measure.classes import MissingPolicy
from privdash.transform.hierarchy import RULE_BUILDERS, interval_hierarchy
from privdash.transform.identifiers import key_fingerprint
from privdash.transform.steps import apply_recipe, apply_step, registered_steps

QIS = ["age", "sex", "postcode"]
AGE = {"kind": "generalize", "column": "age", "rule": {"builder": "intervals", "widths": [5, 10, 20]}, "level": 2}
KEY = "a-test-key-of-enough-length-123"

SPECS: list[dict[str, Any]] = [
    AGE,
    {"kind": "generalize", "column": "age", "rule": {"builder": "quantiles", "bins": [8, 4]}, "level": 1},
    {"kind": "generalize", "column": "postcode", "rule": {"builder": "postcodes", "levels": ["district"]}, "level": 1},
    {"kind": "top_bottom_coding", "column": "age", "top": 0.9, "bottom": None, "quantiles": True, "labels": True},
    {"kind": "record_suppression", "k": 5, "max_suppression": 0.2},
    {"kind": "local_suppression", "k": 3, "importance": ["sex"]},
    {"kind": "microaggregation", "k": 5, "decimals": 0},
    {"kind": "drop_identifiers", "columns": ["name"]},
    {"kind": "mask_identifiers", "columns": ["phone"], "first": 2, "last": 1},
    {"kind": "pseudonymize", "columns": ["email"], "length": 16},
]


@pytest.fixture(scope="module")
def people() -> tuple[pd.DataFrame, DataContract]:
    frame = people_table(600)
    roles = dict.fromkeys(("clothing_size", "hair_colour", "transaction_amount"), ColumnRole.INSENSITIVE)
    return frame, people_contract().with_roles(roles)


@pytest.mark.parametrize("spec", SPECS, ids=lambda spec: str(spec["kind"]))
def test_every_kind_compiles_to_a_registered_step(spec: dict[str, Any], people: tuple) -> None:
    frame, contract = people
    run = start_run(frame, contract, MissingPolicy.VALUE)
    checked = fixes.check_spec(spec)
    step = compile_spec(checked, step_context(run, checked, key=KEY))
    assert step.kind in registered_steps()
    extended = fixes.extend_run(run, spec, key=KEY)
    assert extended.error is None
    # The run is the registry's result of the compiled step, and its recorded step reproduces it.
    direct = apply_step(frame, step, secrets={"key": KEY})
    pd.testing.assert_frame_equal(extended.data, direct.data)
    assert extended.recipe.steps == (direct.step,)
    # The recorded step never holds the key: a pseudonymization is re-applied with the key handed to it.
    assert KEY not in extended.recipe.to_json()
    again, _ = apply_recipe(frame, [direct.step], secrets={"key": KEY})
    pd.testing.assert_frame_equal(again, extended.data)


def test_the_search_is_the_one_kind_that_is_not_compiled(people: tuple) -> None:
    frame, contract = people
    spec = fixes.check_spec({"kind": "search", "k": 5, "max_risk": None, "max_suppression": 0.05})
    run = start_run(frame, contract, MissingPolicy.VALUE)
    context = step_context(run, spec)
    assert set(context.hierarchies) == set(QIS)
    with pytest.raises(FixError, match="not a step"):
        compile_spec(spec, context)
    result = fixes.least_lossy_search(frame, spec, context)
    # Its step is the registered generalize step that reproduces the search's table.
    assert result.step.kind == "generalize" and result.step.kind in registered_steps()
    pd.testing.assert_frame_equal(apply_step(frame, result.step).data, result.data)
    assert "search" in result.summary


def test_the_context_holds_the_current_quasi_identifiers_and_orders(people: tuple) -> None:
    frame, contract = people
    run = run_fixes(frame, contract, MissingPolicy.DROP, [{"kind": "drop_identifiers", "columns": ["postcode"]}])
    spec = fixes.check_spec({"kind": "record_suppression", "k": 5, "max_suppression": 0.1})
    context = step_context(run, spec)
    assert context.quasi_identifiers == ["age", "sex"] and context.missing == MissingPolicy.DROP
    step = compile_spec(spec, context)
    assert step.params["quasi_identifiers"] == ["age", "sex"] and step.params["missing"] == "drop"
    empty = StepContext(DataContract.for_columns(frame[["age"]]), MissingPolicy.VALUE)
    with pytest.raises(FixError, match="No quasi-identifier"):
        compile_spec(spec, empty)
    assert KEY not in repr(StepContext(empty.contract, empty.missing, key=KEY))


def test_the_pseudonymization_key_reaches_the_step_but_not_the_recipe(people: tuple) -> None:
    frame, contract = people
    spec = {"kind": "pseudonymize", "columns": ["email"], "length": 16}
    run = run_fixes(frame, contract, MissingPolicy.VALUE, [spec], key=KEY)
    assert run.error is None and KEY not in run.recipe.to_json()
    assert run.recipe.steps[0].params["key_fingerprint"] == key_fingerprint(KEY)
    refused = run_fixes(frame, contract, MissingPolicy.VALUE, [spec])
    assert refused.error is not None and refused.failed == 0 and "key" in refused.error


def test_a_generalization_records_its_resolved_rule(people: tuple) -> None:
    frame, contract = people
    run = run_fixes(frame, contract, MissingPolicy.VALUE, [AGE])
    (step,) = run.recipe.steps
    expected = interval_hierarchy(frame["age"], widths=[5, 10, 20]).to_dict()
    assert step.params == {"columns": {"age": {"level": 2, "hierarchy": expected}}}
    # Interval labels in a numerical column: the fixed table's contract calls it nominal (adapt_contract).
    assert contract["age"].statistical_type == StatisticalType.NUMERICAL
    assert run.contract["age"].statistical_type == StatisticalType.NOMINAL
    # The hierarchy over the untouched original is kept as a table for the information-loss metrics.
    assert run.hierarchies["age"].rule is None


def test_a_failing_step_stops_the_list(people: tuple) -> None:
    frame, contract = people
    bad = {"kind": "generalize", "column": "sex", "rule": {"builder": "intervals", "widths": [5]}, "level": 1}
    run = run_fixes(frame, contract, MissingPolicy.VALUE, [AGE, bad, {"kind": "drop_identifiers", "columns": ["name"]}])
    assert run.failed == 1 and len(run.specs) == 1
    assert run.error is not None and run.error.startswith("Step 2 (generalize a quasi-identifier) was not applied:")
    assert "needs numbers" in run.error


def test_slow_lists_and_builders() -> None:
    assert fixes.is_slow([AGE, {"kind": "microaggregation", "k": 5}])
    assert not fixes.is_slow([AGE, "not a spec"])  # type: ignore[list-item]
    assert tuple(fixes.BUILDERS) == (*RULE_BUILDERS, "dataset")  # and the hierarchy kept with the dataset
    hierarchy = fixes.build_hierarchy({"builder": "masking", "steps": 2}, pd.Series(["ab1", "cd2"]))
    assert hierarchy.max_level == 3
    with pytest.raises(FixError, match=r"(?i)masking steps"):
        fixes.build_hierarchy({"builder": "masking"}, pd.Series(["ab1"]))
    assert np.array_equal(hierarchy.leaves, ["ab1", "cd2"])


def test_old_spec_keys_from_earlier_links_are_read_with_the_new_names() -> None:
    old = fixes.check_spec({"kind": "record_suppression", "k": 5, "budget": 0.1})
    assert old == fixes.check_spec({"kind": "record_suppression", "k": 5, "max_suppression": 0.1})
    search = fixes.check_spec({"kind": "search", "k": 5, "risk": 0.2, "suppression": 0.05})
    assert search["max_risk"] == 0.2 and search["max_suppression"] == 0.05
    assert "risk" not in search and "suppression" not in search


def test_default_rules_round_trip_through_the_page_text(data_dir: Any) -> None:
    """Every default rule (codes, frequency groups, intervals with a top code) is shown and read back unchanged."""
    from privdash.data.contract import infer_statistical_type
    from privdash.data.tables import read_table
    from privdash.transform.hierarchy import default_rule

    adult = read_table(data_dir / "arx_adult" / "adult.csv")
    columns = {name: adult[name] for name in ("age", "race", "education")}
    columns["icd"] = pd.Series(["A01.1", "A01.2", "A02.0", "B20.1", "B21.3"])
    seen = set()
    for name, values in columns.items():
        rule = default_rule(values, infer_statistical_type(values))
        seen.add(rule["builder"])
        read_back = fixes.rule_from_text(rule["builder"], fixes.rule_text(rule))
        assert fixes.build_hierarchy(read_back, values).equals(fixes.build_hierarchy(rule, values)), name
    assert seen == {"intervals", "frequency", "prefix"}
    assert fixes.rule_text(default_rule(adult["age"], StatisticalType.NUMERICAL)) == "5, 10, 20, >=80"
    assert fixes.rule_from_text("intervals", "10, 20, <20, >=60") == {
        "builder": "intervals",
        "widths": [10, 20],
        "low": 20,
        "high": 60,
    }
    with pytest.raises(FixError, match="at most one"):
        fixes.rule_from_text("intervals", "10, >=60, >=80")
    with pytest.raises(FixError, match="above 1"):
        fixes.check_rule({"builder": "frequency", "ratio": 1})
