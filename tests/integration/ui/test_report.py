"""The Report button, through HTTP against the real app (werkzeug threaded server on 127.0.0.1): the Fix page's
view with a least-lossy step is reported in a background job with progress, and both downloads hold the report of
that view (the verdict computed here from the core's diagnosis of the fixed table)."""

from __future__ import annotations

import base64
import json
import threading
import time
from collections.abc import Iterator
from html import unescape
from pathlib import Path
from typing import Any

import pytest
from werkzeug.serving import make_server

from dashboard.app import create_app
from privdash.application.fixruns import FixRuns
from privdash.application.services import Services
from privdash.application.settings import Settings
from tests.integration.dash_http import DashSession, find, payload

SEARCH = {"kind": "search", "k": 5, "l": None, "t": None, "max_risk": None, "max_suppression": 0.05}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Settings]]:
    root: Path = tmp_path_factory.mktemp("report")
    settings = Settings(store_dir=root / "store", cache_dir=root / "cache", data_dir=root / "no-data")
    app = create_app(settings)
    http = make_server("127.0.0.1", 0, app.server, threaded=True)
    thread = threading.Thread(target=http.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{http.server_port}", settings
    http.shutdown()
    thread.join(10)


def page_layout(session: DashSession, href: str) -> Any:
    session.open(href)
    path, search = href.split("?", 1)
    page = session.call(
        payload(
            [("_pages_content", "children"), ("_pages_store", "data")],
            [("_pages_location", "pathname", path), ("_pages_location", "search", "?" + search)],
        )
    )
    return page.json()["response"]["_pages_content"]["children"]


def download(session: DashSession, button: dict[str, Any]) -> dict[str, Any]:
    """Click one download button (a pattern-matching input, as dash-renderer sends it)."""
    kinds = ("pdf", "html")
    ids = [{**button, "kind": kind} for kind in kinds]
    body = {
        "output": "report-download.data",
        "outputs": {"id": "report-download", "property": "data"},
        "inputs": [[{"id": i, "property": "n_clicks", "value": 1 if i == button else None} for i in ids]],
        "changedPropIds": [json.dumps(button, sort_keys=True, separators=(",", ":")) + ".n_clicks"],
    }
    response = session.call(body)
    response.raise_for_status()
    return dict(response.json()["response"]["report-download"]["data"])


def test_report_button_makes_both_files_of_the_view(server: tuple[str, Settings]) -> None:
    base, settings = server
    session = DashSession(base)
    services = Services(settings)
    state = services.initial_state(services.dataset("demo:people")).updated(dataset="demo:people", fix=(SEARCH,))
    layout = page_layout(session, state.href("/fix"))
    assert find(layout, "report-make") is not None and find(layout, "report-card") is not None
    stored = find(layout, "page-state")
    assert stored is not None
    body = payload(
        ("report-result", "children"),
        [("report-make", "n_clicks", 1)],
        [("page-state", "data", stored["props"]["data"])],
    )
    # The Fix page's estimates: a pattern-matching state that matches no component on a view without estimates
    # (the browser sends an empty list for it).
    body["state"].append([])
    # The sign-off fields the steward filled in on the Data page (the shell's copy, kept in this browser).
    signoff = {"name": "Ann Steward", "role": "Data steward", "decision": "approve"}
    body["state"].append({"id": "signoff-fields", "property": "data", "value": signoff})
    # The Fix page's last synthetic release: none made on this view.
    body["state"].append([])
    job = session.start(body)
    deadline = time.monotonic() + 90
    while not job.poll().done:
        assert time.monotonic() < deadline, "the report job did not end"
        time.sleep(0.3)
    assert job.response is not None
    # Progress: stage texts, at percentages that never go back.
    percents = [int(update["report-progress.value"]) for update in job.progress]
    statuses = [str(update["report-status.children"]) for update in job.progress]
    assert percents and percents == sorted(percents) and all(status.endswith(" ...") for status in statuses)
    result = job.response["report-result"]["children"]
    verdict = find(result, "report-verdict")
    assert verdict is not None, result
    # The verdict of the view's fixed table, computed here with the core.
    runs = FixRuns(services)
    fixed = runs.fixed_diagnosis(runs.run(state), state)
    expected = fixed.check(state.targets).sentence()
    assert verdict["props"]["children"] == expected
    # The headline says what happened: the report is ready, and its verdict.
    status = "PASS" if fixed.check(state.targets).passed else "FAIL"
    assert verdict["props"]["title"] == f"Report ready - verdict: {status}"
    buttons = [node["props"]["id"] for node in _buttons(result)]
    assert {button["kind"] for button in buttons} == {"pdf", "html"}
    pdf = download(session, next(b for b in buttons if b["kind"] == "pdf"))
    assert pdf["filename"] == "Customers-synthetic-5-000-people-report.pdf"
    assert base64.b64decode(pdf["content"]).startswith(b"%PDF")
    html = download(session, next(b for b in buttons if b["kind"] == "html"))
    text = base64.b64decode(html["content"]).decode("utf-8") if html.get("base64") else html["content"]
    assert expected in unescape(text) and "Least-lossy generalization: k ≥ 5" in unescape(text)
    block = text[text.index('id="signoff"') :]
    assert 'value="Ann Steward"' in block and 'value="Data steward"' in block and 'value="approve" checked>' in block


def _buttons(tree: Any) -> list[dict[str, Any]]:
    found = []
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if isinstance(node.get("props", {}).get("id"), dict):
                found.append(node)
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return found
