"""The Fix page's Differential privacy section through the web server (Flask's test client, no browser): the
release callback called the way the browser calls it, with the population field, a copy of the demo recognised,
and parameters OpenDP cannot compute with answered by a message in the section instead of an error.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from dash import Dash
from plotly.utils import PlotlyJSONEncoder

from dashboard.app import create_app
from dashboard.pages.fix import dp_release
from privdash.application.dp_release import LEDGER_FILE, LEDGER_FOLDER
from privdash.application.services import Services
from privdash.application.settings import Settings
from privdash.application.state import ViewState

FORM = {
    "dp-query": "count",
    "dp-column": None,
    "dp-categories": "domain",
    "dp-domain": None,
    "dp-low": None,
    "dp-high": None,
    "dp-epsilon": "0.1",
    "dp-delta": "0",
    "dp-mechanism": "laplace",
    "dp-identity": None,
    "dp-distinct": False,
    "dp-max-rows": None,
}


@pytest.fixture
def app(tmp_path: Path, data_dir: Path) -> Dash:
    return create_app(Settings(store_dir=tmp_path / "store", cache_dir=tmp_path / "cache", data_dir=data_dir))


def press_release(app: Dash, state: ViewState | None = None, **fields: Any) -> dict[str, Any]:
    """Press "Release" with the form's ``fields`` (on the demo's view ``state``): the callback's answer (its outputs
    by component id)."""
    client = app.server.test_client()
    (dep,) = [d for d in client.get("/_dash-dependencies").get_json() if "dp-result.children" in d["output"]]
    page_state = (state or ViewState(dataset="demo:people")).to_dict()
    values = {**FORM, **fields, "dp-release": 1, "page-state": page_state}
    items = dep["inputs"] + dep["state"]
    assert {item["id"] for item in items} <= set(values), "the form has fields this test does not fill"
    payload = {
        "output": dep["output"],
        "outputs": [
            {"id": part.rsplit(".", 1)[0], "property": part.rsplit(".", 1)[1]}
            for part in dep["output"][2:-2].split("...")
        ],
        "inputs": [{"id": i["id"], "property": i["property"], "value": values[i["id"]]} for i in dep["inputs"]],
        "state": [{"id": i["id"], "property": i["property"], "value": values[i["id"]]} for i in dep["state"]],
        "changedPropIds": ["dp-release.n_clicks"],
    }
    response = client.post("/_dash-update-component", json=payload)
    assert response.status_code == 200, response.get_data(as_text=True)[:500]
    return dict(response.get_json()["response"])


def text(node: Any) -> str:
    return json.dumps(node, ensure_ascii=False)


def test_a_release_is_charged_to_the_named_population(app: Dash, tmp_path: Path) -> None:
    answer = press_release(app, **{"dp-identity": "Customers 2026"})
    assert "Released: ε = 0.1" in text(answer["dp-result"]) and "'Customers 2026'" in text(answer["dp-result"])
    assert "Privacy budget of the population 'Customers 2026'" in text(answer["dp-ledger"])
    ledger = json.loads((tmp_path / "store" / LEDGER_FOLDER / LEDGER_FILE).read_text(encoding="utf-8"))
    assert list(ledger["datasets"]) == ["Customers 2026"]
    # The same table again with nothing typed: recognised, the same budget.
    answer = press_release(app)
    assert "'Customers 2026'" in text(answer["dp-result"]) and "Spent ε = 0.2 of 1" in text(answer["dp-ledger"])
    # Under another population: refused in the section, nothing charged.
    answer = press_release(app, **{"dp-identity": "Fresh"})
    assert "Nothing was released" in text(answer["dp-result"]) and "were released under" in text(answer["dp-result"])
    ledger = json.loads((tmp_path / "store" / LEDGER_FOLDER / LEDGER_FILE).read_text(encoding="utf-8"))
    assert list(ledger["datasets"]) == ["Customers 2026"]


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"dp-epsilon": "5e-324"}, "ε = 4.94066e-324"),
        ({"dp-query": "sum", "dp-column": "age", "dp-low": -1e308, "dp-high": 1e308, "dp-epsilon": "1"}, "bounds"),
        ({"dp-epsilon": "nan"}, "finite"),
        ({"dp-identity": "x" * 300}, "300 characters"),
    ],
)
def test_out_of_range_parameters_are_a_message_in_the_section(
    app: Dash, tmp_path: Path, fields: dict[str, Any], message: str
) -> None:
    answer = press_release(app, **fields)
    shown = text(answer["dp-result"])
    assert "Nothing was released" in shown and message in shown and "Traceback" not in shown
    assert not (tmp_path / "store" / LEDGER_FOLDER / LEDGER_FILE).exists()


#: The demo with its customers' names as the person id: several rows per name.
BY_NAME = ViewState(dataset="demo:people").with_columns(roles={"name": "entity"})


def find(node: Any, component_id: str) -> dict[str, Any] | None:
    """The component of ``component_id`` in a Dash layout serialised to JSON (None when absent)."""
    if isinstance(node, dict):
        if node.get("props", {}).get("id") == component_id:
            return node
        children = list(node.get("props", {}).values()) if "props" in node else list(node.values())
    elif isinstance(node, list):
        children = node
    else:
        return None
    for child in children:
        found = find(child, component_id)
        if found is not None:
            return found
    return None


def test_the_bound_on_rows_per_person_shows_only_with_a_person_id(app: Dash, data_dir: Path, tmp_path: Path) -> None:
    services = Services(Settings(store_dir=tmp_path / "s", cache_dir=tmp_path / "c", data_dir=data_dir))
    loaded = services.dataset("demo:people")
    for state, shown in ((ViewState(dataset="demo:people"), False), (BY_NAME, True)):
        layout = json.loads(json.dumps(dp_release.card(loaded, state, services), cls=PlotlyJSONEncoder))
        box = find(layout, "dp-max-rows-box")
        assert box is not None  # always in the layout: the release callback reads it
        assert (box["props"]["style"] == {"display": "block"}) is shown
        assert ("A person may have several rows (person id 'name')" in text(layout)) is shown


def test_a_person_level_release_through_the_page(app: Dash, tmp_path: Path) -> None:
    answer = press_release(app, BY_NAME)
    shown = text(answer["dp-result"])
    assert "Nothing was released" in shown and "Give the most rows per person" in shown and "has up to" in shown
    assert not (tmp_path / "store" / LEDGER_FOLDER / LEDGER_FILE).exists()
    answer = press_release(app, BY_NAME, **{"dp-max-rows": 2})
    shown = text(answer["dp-result"])
    assert "Released: ε = 0.1" in shown and "privacy unit: a person of 'name', at most 2 row(s) each" in shown
    assert "noise scale 20" in shown  # Laplace b = c/ε = 2/0.1
    ledger = json.loads((tmp_path / "store" / LEDGER_FOLDER / LEDGER_FILE).read_text(encoding="utf-8"))
    (account,) = ledger["datasets"].values()
    assert [(r["query"], r["epsilon"], r["delta"]) for r in account["releases"]] == [("count", 0.1, 0.0)]
    answer = press_release(app, BY_NAME, **{"dp-max-rows": 0})
    assert "Most rows per person must be a whole number of at least 1" in text(answer["dp-result"])
