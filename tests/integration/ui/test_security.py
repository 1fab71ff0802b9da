"""The web server under crafted input: dataset ids and links in every callback, security headers, cookie flags.

The app runs in-process behind Flask's test client (no browser); every callback is called the way the browser calls
it (``POST /_dash-update-component``), with the payload built from the app's own ``/_dash-dependencies``.
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import re
import time
import traceback
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
from dash import Dash, Input, Output
from dash.exceptions import BackgroundCallbackError

from dashboard.app import CALLBACK_MESSAGE, SECURITY_HEADERS, SESSION_COOKIE, create_app, user_error_message
from privdash.application.settings import Settings
from privdash.application.state import StateError, ViewState

#: Dataset ids a link or a crafted request may carry: paths, a huge text, a demo name with a path, a NUL byte,
#: and a well-formed id that names nothing (an expired upload).
CRAFTED_IDS = ["../../etc/passwd", "a" * 5000, "demo:../..", "demo:people\x00", "AbCdEfGhIjKl\x00nOpQrStUv", "A" * 22]


@pytest.fixture
def app(tmp_path: Path, data_dir: Path) -> Dash:
    return create_app(Settings(store_dir=tmp_path / "store", cache_dir=tmp_path / "cache", data_dir=data_dir))


def _dependency(item: dict[str, str], value: Any) -> Any:
    """The payload entry of one input or state: a wildcard (pattern-matching) entry matches no component here."""
    if item["id"].startswith("{"):
        return []
    return {"id": item["id"], "property": item["property"], "value": value}


def _outputs(output: str) -> Any:
    parts = output[2:-2].split("...") if output.startswith("..") else [output]
    specs = []
    for part in parts:
        component, prop = part.rsplit(".", 1)
        specs.append([] if component.startswith("{") else {"id": component, "property": prop})
    return specs if output.startswith("..") else specs[0]


def callback_payloads(app: Dash, page_state: Any) -> list[tuple[str, dict[str, Any]]]:
    """A request for every server-side callback that reads the page's view state, with ``page_state`` in it."""
    dependencies = app.server.test_client().get("/_dash-dependencies").get_json()
    payloads = []
    for dep in dependencies:
        items = dep["inputs"] + dep["state"]
        if dep.get("clientside_function") or "page-state" not in {item["id"] for item in items}:
            continue

        def value(item: dict[str, str]) -> Any:
            return _dependency(item, page_state if item["id"] == "page-state" else None)

        first = dep["inputs"][0]
        payloads.append(
            (
                dep["output"],
                {
                    "output": dep["output"],
                    "outputs": _outputs(dep["output"]),
                    "inputs": [value(item) for item in dep["inputs"]],
                    "state": [value(item) for item in dep["state"]],
                    "changedPropIds": [f"{first['id']}.{first['property']}"],
                },
            )
        )
    return payloads


def shown_alert(answer: dict[str, Any]) -> dict[str, Any]:
    """The props of the alert a callback's answer puts into the shell's message area."""
    stack: list[Any] = [answer["sideUpdate"][CALLBACK_MESSAGE]]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if node.get("props", {}).get("id") == "callback-error":
                return dict(node["props"])
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    raise AssertionError("no message in the answer")


@pytest.mark.parametrize("dataset", CRAFTED_IDS)
def test_every_callback_answers_a_crafted_dataset_id_without_an_error(
    app: Dash, dataset: str, caplog: pytest.LogCaptureFixture
) -> None:
    client = app.server.test_client()
    payloads = callback_payloads(app, {"v": 1, "d": dataset})
    assert len(payloads) >= 15  # the data, risk, fix and postcode pages' callbacks and the shell's
    caplog.set_level(logging.INFO)
    for output, payload in payloads:
        response = client.post("/_dash-update-component", json=payload)
        assert response.status_code in (200, 204), (output, response.status_code)
        body = response.get_data(as_text=True)
        assert "Traceback" not in body and "Internal Server Error" not in body, output
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []
    assert "Traceback" not in caplog.text


def test_a_bad_id_in_the_preview_gives_a_message_and_an_empty_block(app: Dash) -> None:
    client = app.server.test_client()
    payload = dict(callback_payloads(app, {"v": 1, "d": "../../etc/passwd"}))["preview-grid.getRowsResponse"]
    payload["inputs"][0]["value"] = {"startRow": 0, "endRow": 100}
    body = client.post("/_dash-update-component", json=payload).get_json()
    assert body["response"]["preview-grid"]["getRowsResponse"] == {"rowData": [], "rowCount": 0}
    alert = shown_alert(body)
    assert alert["children"] == "The link's dataset id is malformed; open the dataset from the Data page."
    expired = dict(callback_payloads(app, {"v": 1, "d": "A" * 22}))["preview-grid.getRowsResponse"]
    expired["inputs"][0]["value"] = {"startRow": 0, "endRow": 100}
    message = shown_alert(client.post("/_dash-update-component", json=expired).get_json())
    assert "upload the file again" in message["children"]


def test_a_bug_in_a_callback_is_logged_and_shown_as_a_plain_message(
    app: Dash, caplog: pytest.LogCaptureFixture
) -> None:
    # A callback with a bug of its own (the app's callbacks refuse what no browser sends before they run).
    @app.callback(Output("bug-output", "children"), Input("bug-input", "value"))
    def buggy(value: Any) -> Any:
        return {"a": 1}["not a number"]

    client = app.server.test_client()
    payload = {
        "output": "bug-output.children",
        "outputs": {"id": "bug-output", "property": "children"},
        "inputs": [{"id": "bug-input", "property": "value", "value": 1}],
        "changedPropIds": ["bug-input.value"],
    }
    caplog.set_level(logging.INFO)
    response = client.post("/_dash-update-component", json=payload)
    assert response.status_code == 200
    alert = shown_alert(response.get_json())
    assert alert["children"].startswith("An internal error stopped this action")
    assert "not a number" not in response.get_data(as_text=True)  # no detail of the error reaches the browser
    assert any(r.levelno == logging.ERROR and r.exc_info for r in caplog.records)  # the bug is logged in full


@pytest.mark.parametrize("path", ["/data", "/risk", "/fix", "/postcodes"])
@pytest.mark.parametrize(
    "query",
    [
        {"s": ViewState(dataset="../../etc/passwd").encode()},
        {"s": ViewState(dataset="a" * 5000).encode()},
        {"s": ViewState(dataset="demo:../..").encode()},
        {"s": ViewState(dataset="A" * 22).encode()},
        {"l": "../../etc/passwd"},
        {"l": "A" * 22},
    ],
)
def test_every_page_answers_a_crafted_link_with_a_message(app: Dash, path: str, query: dict[str, str]) -> None:
    client = app.server.test_client()
    assert client.get(path, query_string=query).status_code == 200
    search = "?" + urlencode(query)
    layout = client.post(
        "/_dash-update-component",
        json={
            "output": ".._pages_content.children..._pages_store.data..",
            "outputs": [{"id": "_pages_content", "property": "children"}, {"id": "_pages_store", "property": "data"}],
            "inputs": [
                {"id": "_pages_location", "property": "pathname", "value": path},
                {"id": "_pages_location", "property": "search", "value": search},
            ],
            "state": [],
            "changedPropIds": ["_pages_location.pathname"],
        },
    )
    assert layout.status_code == 200
    text = layout.get_data(as_text=True)
    assert "Traceback" not in text
    if path == "/postcodes" and query.get("s") == ViewState(dataset="A" * 22).encode():
        return  # a well-formed id: the Postcodes page does not open the dataset to draw itself
    assert re.search(r"link could not be read|not available|malformed|expired or is unknown|damaged", text), text[:500]


def _inline_script_hashes(html: str) -> set[str]:
    """The CSP hashes of the executable inline scripts of a page."""
    found = set()
    html = re.sub(r"<!--.*?-->", "", html, flags=re.S)  # a script inside a comment does not run
    for attributes, body in re.findall(r"<script([^>]*)>(.*?)</script>", html, flags=re.S):
        if "src=" in attributes or "application/json" in attributes:
            continue
        digest = base64.b64encode(hashlib.sha256(body.encode()).digest()).decode()
        found.add(f"'sha256-{digest}'")
    return found


def test_every_response_has_the_security_headers(app: Dash) -> None:
    client = app.server.test_client()
    client.get("/data")  # Dash finishes setting up (and adds the pages' inline script) on its first request
    responses = {
        "page": client.get("/data"),
        "layout": client.get("/_dash-layout"),
        "asset": client.get("/assets/upload.js"),
        "health": client.get("/api/health"),
        "upload": client.post("/api/upload", data={}, content_type="multipart/form-data"),
        "missing": client.get("/no-such-file.txt"),
    }
    for name, response in responses.items():
        for header, value in SECURITY_HEADERS.items():
            assert response.headers.get(header) == value, (name, header)
        policy = response.headers["Content-Security-Policy"]
        directives = dict(item.strip().split(" ", 1) for item in policy.split(";"))
        assert directives["frame-ancestors"] == "'none'" and directives["object-src"] == "'none'", name
        assert directives["default-src"] == "'self'" and directives["base-uri"] == "'none'", name
        script = directives["script-src"].split()
        assert script[0] == "'self'" and "'unsafe-inline'" not in script and "'unsafe-eval'" not in script, name
    # The page's inline scripts (Dash's renderer and inline client-side callbacks) are allowed by hash, and only
    # they: a script injected into the page would not run.
    html = responses["page"].get_data(as_text=True)
    hashes = _inline_script_hashes(html)
    assert len(hashes) >= 2
    policy = dict(
        item.strip().split(" ", 1) for item in responses["page"].headers["Content-Security-Policy"].split(";")
    )
    script = set(policy["script-src"].split())
    assert hashes <= script and script - hashes == {"'self'"}


def _session_cookie(response: Any) -> str:
    cookies = [value for value in response.headers.getlist("Set-Cookie") if value.startswith(f"{SESSION_COOKIE}=")]
    assert len(cookies) == 1
    return cookies[0]


def test_the_session_cookie_is_http_only_and_same_site(app: Dash) -> None:
    cookie = _session_cookie(app.server.test_client().get("/data"))
    assert "HttpOnly" in cookie and "SameSite=Lax" in cookie and "Secure" not in cookie
    # A request that claims HTTPS through a proxy header is not believed without a trusted proxy.
    claimed = app.server.test_client().get("/data", headers={"X-Forwarded-Proto": "https"})
    assert "Secure" not in _session_cookie(claimed)
    # Served over HTTPS directly: Secure.
    direct = app.server.test_client().get("/data", base_url="https://dash.example.org")
    assert "; Secure" in _session_cookie(direct)


def test_the_session_cookie_is_secure_when_the_settings_say_https(tmp_path: Path) -> None:
    app = create_app(Settings(store_dir=tmp_path / "s", cache_dir=tmp_path / "c", secure_cookies=True))
    cookie = _session_cookie(app.server.test_client().get("/data"))
    assert "; Secure" in cookie and "HttpOnly" in cookie and "SameSite=Lax" in cookie


def test_behind_a_trusted_proxy_the_forwarded_scheme_counts(tmp_path: Path) -> None:
    app = create_app(Settings(store_dir=tmp_path / "s", cache_dir=tmp_path / "c", trusted_proxies=1))
    client = app.server.test_client()
    assert "; Secure" in _session_cookie(client.get("/data", headers={"X-Forwarded-Proto": "https"}))
    assert "Secure" not in _session_cookie(app.server.test_client().get("/data"))


def test_a_background_callback_answers_a_crafted_id_with_a_message(app: Dash, caplog: pytest.LogCaptureFixture) -> None:
    """The error of a background job reaches the app as text; a PrivdashError in it is still the user's input."""
    client = app.server.test_client()
    page = client.get("/fix").get_data(as_text=True)
    config = re.search(r'<script id="_dash-config" type="application/json"[^>]*>(.*?)</script>', page, re.S)
    assert config is not None
    end_id = json.loads(config.group(1)).get("end_id") or ""
    body: dict[str, Any] = {
        "output": "fix-slow-results.children",
        "outputs": {"id": "fix-slow-results", "property": "children"},
        "inputs": [{"id": "fix-slow-request", "property": "data", "value": {"v": 1, "d": "../../etc/passwd"}}],
        "changedPropIds": ["fix-slow-request.data"],
    }
    caplog.set_level(logging.INFO)
    started = client.post("/_dash-update-component", json=body, query_string={"endId": end_id}).get_json()
    poll = {**body, "inputs": [{**body["inputs"][0], "value": None}]}
    handles = {"endId": end_id, "cacheKey": started["cacheKey"], "job": started["job"]}
    deadline = time.monotonic() + 30
    answer: dict[str, Any] = {}
    while "sideUpdate" not in answer and time.monotonic() < deadline:
        time.sleep(0.2)
        response = client.post("/_dash-update-component", json=poll, query_string=handles)
        assert response.status_code in (200, 204)
        answer = response.get_json(silent=True) or {}
    alert = shown_alert(answer)
    assert alert["children"] == "The link's dataset id is malformed; open the dataset from the Data page."
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == [] and "Traceback" not in caplog.text


def test_user_errors_are_told_from_bugs() -> None:
    def background_error(exc: Exception) -> BackgroundCallbackError:
        try:
            raise exc
        except Exception as raised:
            text = "".join(traceback.format_exception(raised))
        return BackgroundCallbackError(f"An error occurred inside a background callback: {exc}\n{text}")

    assert user_error_message(StateError("The link is damaged.")) == "The link is damaged."
    assert user_error_message(background_error(StateError("The link is damaged."))) == "The link is damaged."
    assert user_error_message(background_error(KeyError("c0"))) is None
    assert user_error_message(background_error(ValueError("not a privdash error"))) is None
    assert user_error_message(RuntimeError("bug")) is None
