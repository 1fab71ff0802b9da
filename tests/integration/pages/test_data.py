"""Data page builders and helpers (no browser)."""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import plotly
import pytest

from dashboard.pages import data as page
from privdash.application import columns
from privdash.application.services import Services
from privdash.application.settings import Settings
from privdash.application.state import StateError, ViewState
from privdash.data.contract import ColumnRole
from privdash.data.demo import CLOTHING_SIZES, people_contract
from privdash.errors import ContractError


def as_json(component: object) -> str:
    return json.dumps(component, cls=plotly.utils.PlotlyJSONEncoder)


@pytest.fixture
def services(tmp_path: Path) -> Services:
    return Services(Settings(store_dir=tmp_path / "store", cache_dir=tmp_path / "cache"))


def test_preview_rows_are_the_requested_block_and_json_safe() -> None:
    frame = pd.DataFrame(
        {
            "n": [3, 1, 2, None],
            "s": pd.Series(["c", None, "a", "b"], dtype="str"),
            "d": pd.to_datetime(["2024-01-02", None, "2024-01-01", "2024-01-03"]),
        }
    )
    block = page.preview_rows(frame, {"startRow": 1, "endRow": 3})
    assert block["rowCount"] == 4
    assert block["rowData"] == [
        {"c0": 1, "c1": None, "c2": None, "_row": 2},
        {"c0": 2, "c1": "a", "c2": "2024-01-01 00:00:00", "_row": 3},
    ]
    json.dumps(block)
    ordered = page.preview_rows(frame, {"startRow": 0, "endRow": 4, "sortModel": [{"colId": "c1", "sort": "asc"}]})
    assert [row["c1"] for row in ordered["rowData"]][:3] == ["a", "b", "c"]
    descending = page.preview_rows(frame, {"startRow": 0, "endRow": 1, "sortModel": [{"colId": "c0", "sort": "desc"}]})
    assert descending["rowData"][0]["c0"] is None or descending["rowData"][0]["c0"] == 3
    ignored = page.preview_rows(frame, {"startRow": 0, "endRow": 2, "sortModel": [{"colId": "evil", "sort": "asc"}]})
    assert [row["_row"] for row in ignored["rowData"]] == [1, 2]


def test_json_records_handle_numbers_and_missing() -> None:
    frame = pd.DataFrame({"f": [1.5, np.nan], "i": [1, 2], "b": [True, None]})
    assert page.json_records(frame) == [{"c0": 1.5, "c1": 1, "c2": True}, {"c0": None, "c1": 2, "c2": None}]


def test_column_editor_shows_roles_types_and_reasons(services: Services) -> None:
    loaded = services.dataset("demo:people")
    state = services.initial_state(loaded)
    text = as_json(page.column_editor(loaded, state, services.profile(loaded)))
    for name in loaded.columns:
        assert f'"data-column": "{name}"' in text
    assert "values look like e-mail addresses" in text  # the suggestion's reason is the hint
    assert '"value": "quasi_identifier"' in text and '"value": "ORDINAL"' in text
    profile = services.profile(loaded)
    assert profile["sex"]["missing"].startswith(f"{people_contract() and loaded.frame['sex'].isna().sum():,}")


def test_layout_without_dataset_points_to_the_sources(services: Services) -> None:
    # A dataset that cannot be opened: the empty panel points to the controls beside it, not to this very page.
    text = as_json(page.layout(services, s=ViewState(dataset="demo:nothing").encode()))
    assert "upload-zone" in text and "demo-select" in text and "No data yet" in text
    assert "no-dataset-hint" in text and "Open the Data page" not in text
    assert '"data-max-bytes": "100000000"' in text
    # No dataset named at all: the built-in demo opens.
    assert "dataset-title" in as_json(page.layout(services))


def test_layout_with_a_damaged_link_says_so(services: Services) -> None:
    text = as_json(page.layout(services, s="garbage!"))
    assert "This link could not be read" in text


def test_layout_with_a_missing_dataset_says_so(services: Services) -> None:
    text = as_json(page.layout(services, s=ViewState(dataset="A" * 22).encode()))
    assert "The dataset is not available" in text and "upload the file again" in text


def test_layout_with_the_demo(services: Services) -> None:
    text = as_json(page.layout(services, s=ViewState(dataset="demo:people").encode()))
    assert "preview-grid" in text and "column-table" in text and "5,000 rows" in text
    assert "order-grid" in text and '"clothing_size"' in text


def test_upload_outcome() -> None:
    assert page.upload_outcome(None, 100) == (None, None)
    assert page.upload_outcome({"id": "x", "href": "/data?s=abc"}, 100) == (None, "/data?s=abc")
    alert, href = page.upload_outcome({"error": "x.csv is empty."}, 100)
    assert href is None and alert.children == "x.csv is empty."
    alert, _ = page.upload_outcome({"too_large": {"filename": "big.csv", "size": 3_000_000}}, 1_000_000)
    assert alert.children.startswith("big.csv is 3.0 MB, over the 1 MB limit.")


def test_state_with_order(services: Services) -> None:
    loaded = services.dataset("demo:people")
    state = services.initial_state(loaded)
    reverse = [str(v) for v in reversed(CLOTHING_SIZES)]
    new = columns.state_with_order(loaded, state, "clothing_size", reverse)
    assert services.contract(loaded, new)["clothing_size"].ordinal_values == tuple(reversed(CLOTHING_SIZES))
    with pytest.raises(StateError, match="exactly once"):
        columns.state_with_order(loaded, state, "clothing_size", reverse[:-1])
    with pytest.raises(StateError, match="Not a value"):
        columns.state_with_order(loaded, state, "clothing_size", [*reverse, "XXXL"])


def _upload(text: str) -> str:
    return "data:application/json;base64," + base64.b64encode(text.encode()).decode()


def test_importing_a_contract(services: Services) -> None:
    loaded = services.dataset("demo:people")
    state = services.initial_state(loaded)
    contract = people_contract().with_roles({"postcode": ColumnRole.INSENSITIVE})
    new = columns.state_with_contract(loaded, state, page.upload_text(_upload(contract.to_json())), "c.json")
    assert new.roles["postcode"] == ColumnRole.INSENSITIVE
    with pytest.raises(ContractError, match="not valid JSON"):
        columns.state_with_contract(loaded, state, page.upload_text(_upload("{")), "c.json")
    other = {"field_metadata": [{"field_name": "salary", "statistical_data_type": "NUMERICAL"}]}
    with pytest.raises(ContractError, match="does not have"):
        columns.state_with_contract(loaded, state, page.upload_text(_upload(json.dumps(other))), "c.json")
    wrong_type = {"field_metadata": [{"field_name": "name", "statistical_data_type": "NUMERICAL"}]}
    with pytest.raises(ContractError, match="non-numbers"):
        columns.state_with_contract(loaded, state, page.upload_text(_upload(json.dumps(wrong_type))), "c.json")


def test_site_root_opens_the_demo_dataset(services: Services) -> None:
    text = as_json(page.home(services))
    assert "Customers (synthetic, 5,000 people)" in text and "Nothing is open yet" not in text
    # A view state without a dataset opens the demo too; one that cannot be read never shows the demo instead.
    empty = as_json(page.home(services, s=""))
    assert "Customers (synthetic, 5,000 people)" in empty and "Nothing is open yet" not in empty
    stored = as_json(page.home(services, l="A" * 22))  # a long state kept on the server: never the demo instead
    assert "expired or is unknown" in stored and "Nothing is open yet" in stored and "dataset-title" not in stored


def workbook(sheets: dict[str, pd.DataFrame]) -> bytes:
    buffer = io.BytesIO()
    with pd.ExcelWriter(buffer, engine="openpyxl") as writer:
        for name, frame in sheets.items():
            frame.to_excel(writer, sheet_name=name, index=False)
    return buffer.getvalue()


def test_a_workbook_with_several_sheets_names_the_sheet_read_and_offers_the_others(services: Services) -> None:
    people = pd.DataFrame({"age": [30, 41, 52], "sex": ["F", "M", "F"]})
    towns = pd.DataFrame({"town": ["Leeds", "York"], "population": [800_000, 200_000]})
    info = services.ingest(workbook({"people": people, "towns": towns}), filename="book.xlsx", session="s" * 40)
    text = as_json(page.layout(services, s=ViewState(dataset=info.id).encode()))
    assert "This workbook has 2 sheets; the table is sheet 'people'." in text
    assert '"id": "sheet-select"' in text and '"towns"' in text and '"sheet-read"' in text
    assert "the first, 'people', was read" in text  # the reader's note
    single = services.ingest(workbook({"people": people}), filename="one.xlsx", session="s" * 40)
    assert "sheet-select" not in as_json(page.layout(services, s=ViewState(dataset=single.id).encode()))


def test_the_upload_list_offers_to_delete_each_upload(services: Services) -> None:
    assert page.upload_list([]) is None
    first = services.ingest(b"a,b\n1,2\n3,4\n", filename="first.csv", session="s" * 40)
    second = services.ingest(b"a,b\n1,2\n3,4\n", filename="second.csv", session="s" * 40)
    text = as_json(page.upload_list(services.store.owned("s" * 40)))
    assert text.index("second.csv") < text.index("first.csv")  # newest first
    for info in (first, second):
        assert f'"id": {{"type": "delete-upload", "dataset": "{info.id}"}}' in text


def find(component: object, component_id: str) -> Any:
    """The component with ``component_id`` inside a layout tree (None when there is none)."""
    if getattr(component, "id", None) == component_id:
        return component
    children = getattr(component, "children", None)
    for child in children if isinstance(children, list | tuple) else [children]:
        if child is not None and not isinstance(child, str | int | float):
            found = find(child, component_id)
            if found is not None:
                return found
    return None


def test_an_open_upload_is_not_shown_as_a_built_in_dataset_and_no_ordinal_column_is_said(services: Services) -> None:
    info = services.ingest(b"age,sex\n30,F\n41,M\n52,F\n", filename="people.csv", session="s" * 40)
    layout = page.layout(services, s=ViewState(dataset=info.id).encode())
    select = find(layout, "demo-select")
    assert select.value is None and select.placeholder == "Choose a built-in dataset"
    assert find(layout, "demo-open").disabled is True
    # No ordinal column: one line says how to get one; the editors are hidden until there is one.
    assert find(layout, "order-empty").style == {} and "Ordinal type" in find(layout, "order-empty").children
    assert find(layout, "order-picker").style == {"display": "none"}
    assert find(layout, "order-editors").style == {"display": "none"}
    # The demo open: the select names it, and its ordinal column is in the editor.
    demo = page.layout(services, s=ViewState(dataset="demo:people").encode())
    assert find(demo, "demo-select").value == "demo:people" and find(demo, "demo-open").disabled is False
    assert find(demo, "order-empty").style == {"display": "none"} and find(demo, "order-editors").style == {}
    assert find(demo, "order-column").value == "clothing_size"
    # A built-in dataset that is gone: the select offers the first one instead of a name that is not in its list.
    gone = page.layout(services, s=ViewState(dataset="demo:nothing").encode())
    assert find(gone, "demo-select").value == "demo:people" and find(gone, "demo-open").disabled is False
