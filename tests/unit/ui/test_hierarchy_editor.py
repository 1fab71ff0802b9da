"""The hierarchy editor's components, without a browser: what each shows and that every control is named."""

from __future__ import annotations

import json
from typing import Any

import plotly

from dashboard.ui import hierarchies as ui
from privdash.application.hierarchies import EditorForm, GroupRow, LevelSummary


def as_json(component: object) -> Any:
    return json.loads(json.dumps(component, cls=plotly.utils.PlotlyJSONEncoder))


def nodes(tree: Any) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    if isinstance(tree, dict):
        if "type" in tree and "props" in tree:
            found.append(tree)
        for value in tree.values():
            found += nodes(value)
    elif isinstance(tree, list):
        for value in tree:
            found += nodes(value)
    return found


def test_the_card_names_every_control_and_shows_the_chosen_builder_only() -> None:
    card = as_json(ui.editor_card(["age", "sex", "job"], ["sex", "age"], True, EditorForm(builder="prefix")))
    controls = [n for n in nodes(card) if n["type"] in ("Select", "MultiSelect", "TextInput", "NumberInput")]
    assert len(controls) >= 12
    unnamed = [n["props"].get("id") for n in controls if not (n["props"].get("label") or n["props"].get("aria-label"))]
    assert unnamed == []
    column = next(n for n in controls if n["props"].get("id") == "hier-column")
    assert [o["label"] for o in column["props"]["data"]] == ["sex (QI)", "age (QI)", "job"]
    panels = {
        n["props"]["id"]["builder"]: n["props"].get("style")
        for n in nodes(card)
        if n["type"] == "Div" and isinstance(n["props"].get("id"), dict)
    }
    assert panels["prefix"] is None and all(
        style == {"display": "none"} for b, style in panels.items() if b != "prefix"
    )


def test_a_built_in_table_is_read_only() -> None:
    card = as_json(ui.editor_card(["age"], ["age"], False, None))
    assert any(n["props"].get("id") == "hier-readonly" for n in nodes(card))
    upload = next(n for n in nodes(card) if n["props"].get("id") == "hier-upload")
    assert upload["props"]["disabled"] is True


def test_levels_groups_and_import_messages() -> None:
    levels = as_json(ui.levels_table([LevelSummary(0, 7, 1, "Private"), LevelSummary(1, 6, 1, "Private")]))
    text = json.dumps(levels)
    assert "values" in text and "Smallest group (records)" in text
    groups = as_json(ui.groups_table([GroupRow("Government", 205, 2, "Federal-gov, State-gov")], 1))
    assert groups["props"]["tabIndex"] == 0 and groups["props"]["aria-label"] == "Groups at level 1"
    assert "Federal-gov, State-gov" in json.dumps(groups)
    message = json.dumps(
        as_json(ui.import_message([("age", "age.csv")], ["x.csv matches no column"])), ensure_ascii=False
    )
    assert "age ← age.csv" in message and "x.csv matches no column" in message and "Not imported" in message
    assert ui.import_message([], []) is None
