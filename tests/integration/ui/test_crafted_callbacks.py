"""Every server-side callback under inputs a browser never sends: 200 (with a message) or 400, never a 500 or a hang.

The app runs in-process behind Flask's test client. Each callback of ``/_dash-dependencies`` is called with the page's
real view state of the demo dataset and, in every other input and state, one hostile value at a time: infinity, NaN,
a negative number, a 30-digit and a 400-digit integer (beyond a float), 100,000 characters, a 100,000-item list, an
object. The answer is a 400 naming the input, or a message of the page: never the message of a crashed callback, and
nothing logged as an error.
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import Any

import pytest
from dash import Dash

from dashboard.app import callback_body_limit, check_callback_request, create_app
from privdash.application.settings import Settings

HOSTILE: list[Any] = [float("inf"), float("nan"), -1, 10**30, 10**400, "x" * 100_000, [1] * 100_000, {"a": 1}]
NAMES = ["inf", "nan", "negative", "30-digits", "400-digits", "long-text", "long-list", "object"]
SECONDS = 5.0
#: What the app shows when a callback crashed (:func:`dashboard.app.callback_error`).
INTERNAL_ERROR = "An internal error stopped"


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory, data_dir: Path) -> Dash:
    root = tmp_path_factory.mktemp("crafted")
    return create_app(Settings(store_dir=root / "store", cache_dir=root / "cache", data_dir=data_dir))


def outputs(output: str) -> Any:
    parts = output[2:-2].split("...") if output.startswith("..") else [output]
    specs: list[Any] = []
    for part in parts:
        component, prop = part.rsplit(".", 1)
        specs.append([] if component.startswith("{") else {"id": component, "property": prop})
    return specs if output.startswith("..") else specs[0]


def requests_with(app: Dash, value: Any) -> list[tuple[str, dict[str, Any]]]:
    """A request for every server-side callback, ``value`` in each input and state but the page's view state."""
    services = app.server.extensions["privdash"]
    state = services.initial_state(services.dataset("demo:people")).to_dict()
    out = []
    for dep in app.server.test_client().get("/_dash-dependencies").get_json():
        if dep.get("clientside_function"):
            continue

        def entry(item: dict[str, str]) -> Any:
            if item["id"].startswith("{"):
                return []
            given = state if item["id"] == "page-state" else value
            return {"id": item["id"], "property": item["property"], "value": given}

        first = dep["inputs"][0]
        body = {
            "output": dep["output"],
            "outputs": outputs(dep["output"]),
            "inputs": [entry(item) for item in dep["inputs"]],
            "state": [entry(item) for item in dep["state"]],
            "changedPropIds": [f"{first['id']}.{first['property']}"],
        }
        out.append((dep["output"], body))
    return out


@pytest.mark.parametrize("value", HOSTILE, ids=NAMES)
def test_every_callback_answers_a_value_of_the_wrong_kind_without_a_500(
    app: Dash, value: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """Refused with a 400 or answered with a message: never the internal-error message, never a logged crash."""
    client = app.server.test_client()
    problems = []
    for output, body in requests_with(app, value):
        caplog.clear()
        with caplog.at_level(logging.INFO):
            started = time.monotonic()
            response = client.post(
                "/_dash-update-component", data=json.dumps(body), headers={"Content-Type": "application/json"}
            )
            seconds = time.monotonic() - started
        if response.status_code not in (200, 204, 400) or seconds > SECONDS:
            problems.append(f"{output[:80]}: {response.status_code} in {seconds:.1f} s")
        if response.status_code == 400 and not response.get_json().get("error"):
            problems.append(f"{output[:80]}: a 400 without a message")
        if INTERNAL_ERROR in response.get_data(as_text=True):
            problems.append(f"{output[:80]}: the internal-error message")
        crashes = [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]
        for record in crashes:
            kind = record.exc_info[1].__class__.__name__ if record.exc_info and record.exc_info[1] else ""
            problems.append(f"{output[:80]}: logged {record.getMessage()[:60]!r} {kind}")
    assert problems == []


def page_values(app: Dash, path: str, search: str) -> tuple[dict[tuple[str, str], Any], set[str]]:
    """The value of every property of every component of a page as the server renders it (what a browser sends
    back until the user changes something), and the ids of its number fields."""
    body = {
        "output": ".._pages_content.children..._pages_store.data..",
        "outputs": [{"id": "_pages_content", "property": "children"}, {"id": "_pages_store", "property": "data"}],
        "inputs": [
            {"id": "_pages_location", "property": "pathname", "value": path},
            {"id": "_pages_location", "property": "search", "value": search},
        ],
        "changedPropIds": ["_pages_location.pathname"],
    }
    response = app.server.test_client().post("/_dash-update-component", json=body)
    assert response.status_code == 200, response.get_data()[:300]
    values: dict[tuple[str, str], Any] = {}
    numbers: set[str] = set()
    stack = [response.get_json()["response"]["_pages_content"]["children"]]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(node)
        elif isinstance(node, dict):
            props = node.get("props", {}) if "type" in node and "namespace" in node else {}
            if isinstance(props.get("id"), str):
                values.update({(props["id"], name): value for name, value in props.items()})
                if node["type"] == "NumberInput":
                    numbers.add(props["id"])
            stack.extend(node.values())
    return values, numbers


def test_every_callback_takes_the_values_its_page_renders(app: Dash) -> None:
    """The declared types do not refuse what the pages themselves hold: each callback's request, with the values of
    its inputs as the pages render them on the demo dataset and the number fields' other forms (empty, a fraction,
    text being typed), passes the request guard."""
    services = app.server.extensions["privdash"]
    search = services.links.search(services.initial_state(services.dataset("demo:people")))
    rendered: dict[tuple[str, str], Any] = {}
    numbers: set[str] = set()
    for path in ("/data", "/risk", "/fix", "/postcodes", "/present"):
        values, number_fields = page_values(app, path, search)
        rendered.update(values)
        numbers |= number_fields
    assert len(numbers) > 20
    refused = []
    for variant in (None, "", 0.5, "1e"):
        for _output, body in requests_with(app, None):
            for item in _flat_items(body):
                if item["id"] != "page-state":
                    item["value"] = rendered.get((item["id"], item["property"]))
                    if variant is not None and item["id"] in numbers and item["property"] == "value":
                        item["value"] = variant
            problem = check_callback_request(body, app.callback_map, app.server.extensions["privdash-inputs"])
            if problem is not None:
                refused.append(problem)
    assert refused == []


def _flat_items(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [item for item in [*body["inputs"], *body["state"]] if isinstance(item, dict)]


def _pattern_ids(app: Dash) -> list[dict[str, Any]]:
    """The pattern-matching (object) ids of the pages' components on the demo dataset."""
    services = app.server.extensions["privdash"]
    search = services.links.search(services.initial_state(services.dataset("demo:people")))
    found: list[dict[str, Any]] = []
    for path in ("/data", "/risk", "/fix", "/postcodes", "/present"):
        body = {
            "output": ".._pages_content.children..._pages_store.data..",
            "outputs": [{"id": "_pages_content", "property": "children"}, {"id": "_pages_store", "property": "data"}],
            "inputs": [
                {"id": "_pages_location", "property": "pathname", "value": path},
                {"id": "_pages_location", "property": "search", "value": search},
            ],
            "changedPropIds": ["_pages_location.pathname"],
        }
        stack = [app.server.test_client().post("/_dash-update-component", json=body).get_json()["response"]]
        while stack:
            node = stack.pop()
            if isinstance(node, list):
                stack.extend(node)
            elif isinstance(node, dict):
                props = node.get("props", {}) if "namespace" in node else {}
                if isinstance(props.get("id"), dict) and props["id"] not in found:
                    found.append(props["id"])
                stack.extend(node.values())
    return found


def _members(pattern: str, ids: list[dict[str, Any]]) -> list[dict[str, Any]]:
    wanted = json.loads(pattern)
    return [i for i in ids if set(i) == set(wanted) and all(v == ["ALL"] or v == i[k] for k, v in wanted.items())]


@pytest.mark.parametrize("value", HOSTILE, ids=NAMES)
def test_pattern_matching_groups_answer_a_value_of_the_wrong_kind_without_a_crash(
    app: Dash, value: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """As above for the groups of pattern-matching inputs: the group of the page's components, ``value`` in each
    member of one group at a time (the other groups and inputs as the browser starts them)."""
    services = app.server.extensions["privdash"]
    state = services.initial_state(services.dataset("demo:people")).to_dict()
    ids = _pattern_ids(app)
    client = app.server.test_client()
    problems, sent = [], 0
    for dep in client.get("/_dash-dependencies").get_json():
        if dep.get("clientside_function"):
            continue
        groups = [(key, n) for key in ("inputs", "state") for n, item in enumerate(dep[key]) if item["id"][0] == "{"]
        multi = dep["output"].startswith("..")
        parts = dep["output"][2:-2].split("...") if multi else [dep["output"]]
        specs = []
        for part in parts:
            component, prop = part.rsplit(".", 1)
            prop = prop.split("@")[0]
            specs.append(
                [{"id": i, "property": prop} for i in _members(component, ids)]
                if component[0] == "{"
                else {"id": component, "property": prop}
            )
        for hostile in groups:

            def entry(key: str, n: int, item: dict[str, str], hostile: tuple[str, int] = hostile) -> Any:
                if item["id"][0] == "{":
                    given = value if (key, n) == hostile and item["property"] != "id" else None
                    return [
                        {"id": i, "property": item["property"], "value": i if item["property"] == "id" else given}
                        for i in _members(item["id"], ids)
                    ]
                given = state if item["id"] == "page-state" else None
                return {"id": item["id"], "property": item["property"], "value": given}

            body = {
                "output": dep["output"],
                "outputs": specs if multi else specs[0],
                "inputs": [entry("inputs", n, item) for n, item in enumerate(dep["inputs"])],
                "state": [entry("state", n, item) for n, item in enumerate(dep["state"])],
            }
            trigger = body["inputs"][hostile[1]] if hostile[0] == "inputs" else body["inputs"][0]
            first = trigger[0] if isinstance(trigger, list) and trigger else trigger
            if not first:
                continue
            component = first["id"]
            component = component if isinstance(component, str) else json.dumps(component, separators=(",", ":"))
            body["changedPropIds"] = [f"{component}.{first['property']}"]
            caplog.clear()
            with caplog.at_level(logging.INFO):
                response = client.post("/_dash-update-component", json=body)
            sent += 1
            where = f"{dep['output'][:60]} ({dep[hostile[0]][hostile[1]]['id'][:40]})"
            if response.status_code not in (200, 204, 400) or INTERNAL_ERROR in response.get_data(as_text=True):
                problems.append(f"{where}: {response.status_code}")
            problems += [f"{where}: logged {r.getMessage()[:60]!r}" for r in caplog.records if r.levelno >= 40]
            problems += [f"{where}: a traceback" for r in caplog.records if r.exc_info and r.levelno < 40]
    assert sent > 5 and problems == []


def test_the_location_and_the_grids_refuse_values_of_the_wrong_kind_with_400(app: Dash) -> None:
    client = app.server.test_client()
    for value in (5, ["/risk"], "risk"):
        body = {
            "output": ".._pages_content.children..._pages_store.data..",
            "outputs": [{"id": "_pages_content", "property": "children"}, {"id": "_pages_store", "property": "data"}],
            "inputs": [
                {"id": "_pages_location", "property": "pathname", "value": value},
                {"id": "_pages_location", "property": "search", "value": ""},
            ],
            "changedPropIds": ["_pages_location.pathname"],
        }
        response = client.post("/_dash-update-component", json=body)
        assert response.status_code == 400 and "pathname must" in response.get_json()["error"]


@pytest.mark.parametrize(
    ("block", "message"),
    [
        ({"startRow": 0, "endRow": 10**9}, "at most 1,000 rows"),
        ({"startRow": -5, "endRow": 10}, "whole numbers"),
        ({"startRow": 0.5, "endRow": 10}, "whole numbers"),
        ({"startRow": 50, "endRow": 10}, "whole numbers"),
        ({"startRow": 0, "endRow": 100, "sortModel": [{"colId": "size"}] * 21}, "at most 20 columns"),
    ],
)
def test_a_grid_block_request_is_bounded(app: Dash, block: dict[str, Any], message: str) -> None:
    services = app.server.extensions["privdash"]
    state = services.initial_state(services.dataset("demo:people")).to_dict()
    for grid in ("class-grid", "preview-grid"):
        body = {
            "output": f"{grid}.getRowsResponse",
            "outputs": {"id": grid, "property": "getRowsResponse"},
            "inputs": [{"id": grid, "property": "getRowsRequest", "value": block}],
            "state": [{"id": "page-state", "property": "data", "value": state}],
            "changedPropIds": [f"{grid}.getRowsRequest"],
        }
        response = app.server.test_client().post("/_dash-update-component", json=body)
        assert response.status_code == 400 and message in response.get_json()["error"], (grid, response.get_data())


def test_a_callback_may_carry_a_file_of_the_upload_limit_and_no_more(tmp_path: Path) -> None:
    """The attack section sends its release inside a callback, base64-encoded: a file of the upload limit fits."""
    settings = Settings(store_dir=tmp_path / "store", cache_dir=tmp_path / "cache", max_upload_bytes=9_000_000)
    assert callback_body_limit(settings) == 13_000_000
    client = create_app(settings).server.test_client()

    def post(size: int) -> Any:
        body = {"output": "url.search", "outputs": {"id": "url", "property": "search"}, "inputs": ["x" * size]}
        return client.post("/_dash-update-component", json=body)

    assert post(12_000_000).status_code == 400  # read, and refused for what it is (not for its size)
    too_large = post(14_000_000)
    assert too_large.status_code == 413 and "larger than the 13 MB" in too_large.get_json()["error"]
