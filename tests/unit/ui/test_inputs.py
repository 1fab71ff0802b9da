"""The callback inputs' types, read from the components that declare them (:mod:`dashboard.ui.inputs`)."""

from __future__ import annotations

from typing import Any

import dash_ag_grid as dag
import dash_mantine_components as dmc
import pytest
from dash import dcc, html

from dashboard.ui.inputs import MAX_LIST, MAX_TEXT, DeclaredInputs, declared_type, value_problem


def layout() -> Any:
    return html.Div(
        [
            dmc.Select(id="column", data=["a", "b"]),
            dmc.MultiSelect(id="columns", data=["a", "b"]),
            dmc.NumberInput(id="k"),
            dmc.TextInput(id="name"),
            dmc.Textarea(id="order"),
            dmc.Checkbox(id="strict"),
            dmc.Button("Go", id="go"),
            dcc.Store(id="store"),
            dcc.Upload(id="upload"),
            dag.AgGrid(id="grid"),
            dmc.Select(id={"type": "role", "column": "age"}, data=["a"]),
            html.Div(dmc.Select(id="twice")),
            dmc.TextInput(id="twice"),
        ]
    )


@pytest.fixture
def declared() -> DeclaredInputs:
    return DeclaredInputs(lambda: [layout()])


@pytest.mark.parametrize(
    ("component_id", "prop", "value"),
    [
        ("column", "value", "a"),
        ("column", "value", None),
        ("columns", "value", ["a", "b"]),
        ("columns", "value", []),
        ("k", "value", 5),
        ("k", "value", 0.25),
        ("k", "value", 10**30),  # a browser sends 1e30 as digits
        ("k", "value", ""),  # a cleared number field
        ("k", "value", "1e"),  # a number being typed
        ("name", "value", "x" * MAX_TEXT),
        ("order", "value", "x\n" * 100_000),
        ("strict", "checked", True),
        ("go", "n_clicks", 3),
        ("store", "data", {"anything": [1, 2]}),  # a store's data is the callback's to check
        ("upload", "contents", "data:text/csv;base64," + "A" * 200_000),
        ("grid", "virtualRowData", [{"value": "a"}]),
        ({"type": "role", "column": "age"}, "value", "a"),
        ({"type": "role", "column": "age"}, "id", {"type": "role", "column": "age"}),
        ("twice", "value", 5),  # two classes under one id: not checked
        ("unknown", "value", [1] * 100_000),  # made by a callback, not in the layouts: not checked
    ],
)
def test_values_a_browser_sends_pass(declared: DeclaredInputs, component_id: Any, prop: str, value: Any) -> None:
    assert declared.problem(component_id, prop, value) is None


@pytest.mark.parametrize(
    ("component_id", "prop", "value", "message"),
    [
        ("column", "value", -1, "column.value must be text"),
        ("column", "value", ["a"], "column.value must be text"),
        ("column", "value", {"a": 1}, "column.value must be text"),
        ("columns", "value", "a", "columns.value must be a list of at most 10,000 items of text"),
        ("columns", "value", [1], "columns.value must be a list of at most 10,000 items of text"),
        ("columns", "value", ["a"] * (MAX_LIST + 1), "columns.value must be a list of at most 10,000 items of text"),
        ("k", "value", float("inf"), "k.value must be a number or text"),
        ("k", "value", float("nan"), "k.value must be a number or text"),
        ("k", "value", True, "k.value must be a number or text"),
        ("k", "value", 10**400, "k.value must be a number or text"),
        ("k", "value", -(10**400), "k.value must be a number or text"),
        ("name", "value", "x" * (MAX_TEXT + 1), f"at most {MAX_TEXT:,} characters"),
        ("strict", "checked", "yes", "strict.checked must be true or false"),
        ("go", "n_clicks", -1, "go.n_clicks must be a whole number of at least 0"),
        ("go", "n_clicks", 1.5, "go.n_clicks must be a whole number"),
        ("unknown", "n_clicks", 10**30, "unknown.n_clicks must be a whole number"),
        ("grid", "virtualRowData", "rows", "grid.virtualRowData must be a list of at most 10,000 items of objects"),
        ({"type": "role", "column": "age"}, "value", 7, '"column": "age"}.value must be text'),
        ({"type": "role", "column": "age"}, "id", {"a": 1}, '"column": "age"}.id must be its id'),
        ("column", "id", None, "column.id must be its id"),
    ],
)
def test_values_a_browser_never_sends_are_named(
    declared: DeclaredInputs, component_id: Any, prop: str, value: Any, message: str
) -> None:
    problem = declared.problem(component_id, prop, value)
    assert problem is not None and message in problem, problem


def test_the_declared_types_come_from_the_components_documentation() -> None:
    number = declared_type(dmc.NumberInput, "value")
    assert number is not None and number.scalars == {"number", "string"} and not number.items
    choices = declared_type(dmc.MultiSelect, "value")
    assert choices is not None and not choices.scalars and choices.items == {"string"}
    assert declared_type(dcc.Store, "data") is None  # any JSON
    upload = declared_type(dcc.Upload, "contents")
    assert upload is not None and upload.max_text is None  # a file: bounded by the request's size
    clicks = declared_type(html.Button, "n_clicks")
    assert clicks is not None and clicks.whole
    assert value_problem(clicks, 0) is False


def test_the_layouts_are_walked_once() -> None:
    calls = []

    def layouts() -> list[Any]:
        calls.append(1)
        return [layout()]

    declared = DeclaredInputs(layouts)
    for _ in range(3):
        declared.problem("column", "value", 5)
    assert calls == [1]
