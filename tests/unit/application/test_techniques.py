"""The technique descriptions: each is complete, and every place that knows techniques knows exactly these.

The places: the Fix page's step form and its "Perturb and mask" section, the link (a spec's ``kind``), the recipe
(the core's registered step kinds), the command line (``privdash anonymize --step``) and docs/definitions.md.
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import pandas as pd
import pytest

import privdash
from privdash.application import fixes, protect
from privdash.application.techniques import (
    ALIASES,
    PERTURB,
    STEPS,
    TECHNIQUES,
    bounds,
    canonical_name,
    check_settings,
    form_default,
    parse_settings,
    technique,
)
from privdash.commands import _steps
from privdash.errors import ParameterError
from privdash.transform.steps import STEP_ALIASES, Recipe, registered_steps
from privdash.validation import Interval, StrOptions, check_param

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize("name", list(TECHNIQUES))
def test_every_description_is_complete(name: str) -> None:
    item = TECHNIQUES[name]
    assert re.fullmatch(r"[a-z]+(_[a-z]+)*", item.name)
    assert item.label and item.help.endswith((".", ")")) and item.section in ("steps", "perturb")
    assert len({p.name for p in item.params}) == len(item.params)
    for param in item.params:
        assert param.label, f"{name}.{param.name} has no label"
        assert param.form in ("input", "view", "rule", "none")
        if param.default is not None:  # the default is a value the parameter accepts
            assert check_param(param.default, param.constraint, param.label) == param.default
        constraint = param.constraint
        if isinstance(constraint, Interval):
            limits = bounds(param)
            if limits.min is not None and limits.max is not None:
                assert limits.min <= limits.max
            default = form_default(param)
            if isinstance(default, int | float):
                assert limits.min is None or default >= limits.min
                assert limits.max is None or default <= limits.max
        if param.percent:
            assert isinstance(constraint, Interval) and (constraint.left, constraint.right) == (0, 1)
        if param.choices:
            assert isinstance(constraint, StrOptions) and {o for o, _ in param.choices} == set(constraint.options)
            assert all(label for _, label in param.choices)


def test_names_are_one_name_each_and_old_names_point_to_them() -> None:
    assert set(STEPS) | set(PERTURB) == set(TECHNIQUES) and not set(STEPS) & set(PERTURB)
    assert not set(ALIASES) & set(TECHNIQUES)
    assert set(ALIASES.values()) <= set(TECHNIQUES)
    for old, new in ALIASES.items():
        assert canonical_name(old) == new and technique(old).name == new
    for old, new in STEP_ALIASES.items():  # old recipe kinds of techniques are old names of those techniques
        if new in TECHNIQUES:
            assert ALIASES[old] == new


def test_the_fix_page_step_list_and_the_link_know_exactly_the_step_techniques() -> None:
    assert tuple(fixes.KINDS) == STEPS
    assert fixes.SLOW_KINDS == {name for name in STEPS if TECHNIQUES[name].slow} == {"microaggregation", "search"}
    with pytest.raises(fixes.FixError, match="one of generalize, top_bottom_coding"):
        fixes.check_spec({"kind": "add_noise", "columns": ["a"], "share": 0.1})


def test_the_perturb_section_knows_exactly_the_perturb_techniques() -> None:
    assert set(protect.METHODS) | set(protect.GEO_METHODS) == set(PERTURB)
    assert {name: TECHNIQUES[name].label for name in PERTURB} == {**protect.METHODS, **protect.GEO_METHODS}
    # A step the section stores may hold the technique's parameters and no other.
    for name in PERTURB:
        params = {p.name: p.default for p in TECHNIQUES[name].params} | {"seed": 1}
        assert protect.stored_step({"kind": name, "params": params}).kind == name
        with pytest.raises(protect.ProtectError):
            protect.stored_step({"kind": name, "params": {**params, "other": 1}})


def test_the_recipe_knows_exactly_the_techniques_and_the_postcode_recoding() -> None:
    kinds = {kind for item in TECHNIQUES.values() for kind in item.kinds if item.name != "search"}
    kinds |= set(TECHNIQUES["search"].kinds)
    # Postcode recoding is the Postcodes page's step, synthesis the Fix page's synthetic-data section (privdash
    # synthesize): neither is a technique of the step list.
    assert set(registered_steps()) == kinds | {"postcode_recoding", "synthesize"}
    assert "search" not in registered_steps()  # the search records the generalize or local_recoding step it found


def test_the_command_line_knows_exactly_the_techniques() -> None:
    for name in TECHNIQUES:
        item, _settings = _steps.parse_step(name)
        assert item.name == name
        assert name in _steps.step_help(item)
    parser_help = _cli_help()
    for name in TECHNIQUES:
        assert name in parser_help
    with pytest.raises(ParameterError, match="did you mean 'record_suppression'"):
        _steps.parse_step("record_supression k=5")


def _cli_help() -> str:
    import argparse

    from privdash.commands.parsers import anonymize

    parser = argparse.ArgumentParser()
    anonymize.register(parser.add_subparsers())
    action = next(
        a for a in parser._subparsers._group_actions[0].choices["anonymize"]._actions if "--step" in a.option_strings
    )  # type: ignore[union-attr]
    return str(action.help)


def test_the_definitions_name_every_technique() -> None:
    text = (ROOT / "docs" / "definitions.md").read_text(encoding="utf-8")
    missing = [name for name in TECHNIQUES if f"`{name}`" not in text]
    assert missing == []


def test_command_line_settings_are_parsed_by_their_constraint() -> None:
    item = technique("record_suppression")
    assert parse_settings(item, ["k=5", "max_suppression=5%"]) == {"k": 5, "max_suppression": 0.05}
    assert parse_settings(item, ["budget=0.1"]) == {"max_suppression": 0.1}  # an old spelling of the key
    assert parse_settings(technique("mask_identifiers"), ["columns=a, b", "first=2"]) == {
        "columns": ["a", "b"],
        "first": 2,
    }
    assert parse_settings(technique("top_bottom_coding"), ["labels=yes"]) == {"labels": True}
    with pytest.raises(ParameterError, match="has no setting 'kk'; its settings: k, max_suppression, release"):
        parse_settings(item, ["kk=5"])
    with pytest.raises(ParameterError, match="name=value"):
        parse_settings(item, ["k"])
    with pytest.raises(ParameterError, match="k must be a whole number of at least 2, got 'five'"):
        check_settings(item, parse_settings(item, ["k=five", "max_suppression=0.1"]))


def test_settings_are_checked_against_the_parameters() -> None:
    item = technique("search")
    checked = check_settings(item, {"k": 5.0, "max_suppression": 0.1, "recoding": "global", "pick": 1})
    assert checked == {"k": 5, "max_suppression": 0.1, "l": None, "t": None, "max_risk": None, "metric": "loss"}
    assert check_settings(item, {"k": 5, "suppression": 0.2, "risk": 0.1})["max_risk"] == 0.1  # old keys
    with pytest.raises(ParameterError, match="Step 'search' needs k"):
        check_settings(item, {"max_suppression": 0.1})
    with pytest.raises(ParameterError, match="unknown setting\\(s\\) depth"):
        check_settings(item, {"k": 5, "max_suppression": 0.1, "depth": 3})
    with pytest.raises(ParameterError, match="The solution picked must be a whole number between 1 and 5, got 9"):
        check_settings(item, {"k": 5, "max_suppression": 0.1, "pick": 9})


# --- old spellings are still read ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("old", "new"),
    [
        (
            {"kind": "suppress_records", "k": 5, "budget": 0.1},
            {"kind": "record_suppression", "k": 5, "max_suppression": 0.1},
        ),
        ({"kind": "suppress_cells", "k": 3}, {"kind": "local_suppression", "k": 3, "importance": []}),
        ({"kind": "microaggregate", "k": 3}, {"kind": "microaggregation", "k": 3, "decimals": None}),
        (
            {"kind": "top_bottom", "column": "age", "top": 90},
            {
                "kind": "top_bottom_coding",
                "column": "age",
                "top": 90.0,
                "bottom": None,
                "quantiles": False,
                "labels": False,
            },
        ),
        ({"kind": "drop", "columns": ["name"]}, {"kind": "drop_identifiers", "columns": ["name"]}),
        (
            {"kind": "mask", "columns": ["phone"], "first": 2},
            {"kind": "mask_identifiers", "columns": ["phone"], "first": 2, "last": 0},
        ),
    ],
)
def test_specs_of_old_links_are_read_with_the_new_names(old: dict, new: dict) -> None:
    assert fixes.check_spec(old) == new


def test_recipes_with_old_kinds_load_with_the_new_names() -> None:
    old = {
        "steps": [
            {"kind": "shuffle", "params": {"columns": ["a"], "quasi_identifiers": ["b"], "seed": 1}},
            {"kind": "geomask_donut", "params": {}},
            {"kind": "geomask_perturb", "params": {}},
            {"kind": "local_recode", "params": {}},
            {"kind": "postcode_recode", "params": {}},
        ]
    }
    recipe = Recipe.from_dict(old)
    kinds = [step.kind for step in recipe.steps]
    assert kinds == ["shuffling", "donut_masking", "coordinate_perturbation", "local_recoding", "postcode_recoding"]
    assert [step["kind"] for step in recipe.to_dict()["steps"]] == kinds  # saved again with the new names
    frame = pd.DataFrame({"a": ["x", "y", "z", "w"], "b": [1, 1, 2, 2]})
    _, results = privdash.apply_recipe(frame, Recipe.from_dict({"steps": old["steps"][:1]}))
    assert results[0].step.kind == "shuffling"


@pytest.mark.parametrize(
    ("namespace", "old", "new"),
    [
        ("privdash", "suppress_records", "record_suppression"),
        ("privdash", "suppress_cells", "local_suppression"),
        ("privdash", "top_bottom_code", "top_bottom_coding"),
        ("privdash", "microaggregate", "microaggregation"),
        ("privdash.transform", "shuffle_within_classes", "shuffling"),
        ("privdash.geo", "donut_mask", "donut_masking"),
        ("privdash.geo", "perturb_coordinates", "coordinate_perturbation"),
    ],
)
def test_old_function_names_warn_and_call_the_new_function(namespace: str, old: str, new: str) -> None:
    import importlib

    module = importlib.import_module(namespace)
    assert old not in module.__all__ and (new in module.__all__ or namespace == "privdash.transform")
    alias = getattr(module, old)
    assert alias.__wrapped__ is getattr(importlib.import_module(alias.__wrapped__.__module__), new)
    frame = pd.DataFrame({"a": [1, 1, 2, 2, 3], "b": ["x", "x", "y", "y", "z"]})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises((ParameterError, TypeError)):
            alias(frame, not_a_parameter=1)
    assert any(issubclass(w.category, DeprecationWarning) and f"now {new}()" in str(w.message) for w in caught)


def test_the_old_suppress_records_gives_the_new_result() -> None:
    frame = pd.DataFrame({"a": [1, 1, 2, 2, 3], "b": ["x", "x", "y", "y", "z"]})
    with pytest.warns(DeprecationWarning, match="suppress_records\\(\\) is now record_suppression\\(\\)"):
        old = privdash.suppress_records(frame, quasi_identifiers=["a", "b"], k=2, max_suppression=0.5)  # type: ignore[attr-defined]
    new = privdash.record_suppression(frame, quasi_identifiers=["a", "b"], k=2, max_suppression=0.5)
    pd.testing.assert_frame_equal(old.data, new.data)
    assert old.step == new.step and new.step.kind == "record_suppression"
