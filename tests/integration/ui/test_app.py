"""The app factory and its HTTP routes (Flask test client, no browser)."""

from __future__ import annotations

import io
import json
import random
import string
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import dash
import pandas as pd
import plotly
import pytest
from dash import Dash

from dashboard.app import SESSION_COOKIE, assets_folder, create_app
from dashboard.pages import data as data_page
from privdash.application.settings import Settings
from privdash.application.state import ViewState


@pytest.fixture
def app(tmp_path: Path) -> Dash:
    return create_app(Settings(store_dir=tmp_path / "store", cache_dir=tmp_path / "cache", max_upload_bytes=50_000))


def post_file(client: Any, content: bytes, name: str, cookie: str | None = None) -> Any:
    if cookie:
        client.set_cookie(SESSION_COOKIE, cookie)
    return client.post("/api/upload", data={"file": (io.BytesIO(content), name)}, content_type="multipart/form-data")


def test_pages_are_registered_with_their_paths(app: Dash) -> None:
    paths = {page["path"] for page in dash.page_registry.values()}
    assert {"/", "/data", "/risk", "/fix", "/postcodes"} <= paths


def test_every_page_and_the_shell_are_served(app: Dash) -> None:
    client = app.server.test_client()
    for path in ("/", "/data", "/risk", "/fix", "/postcodes", "/_dash-layout", "/_dash-dependencies"):
        assert client.get(path).status_code == 200, path
    index = client.get("/data").get_data(as_text=True)
    assert "cdn." not in index and "fonts.googleapis" not in index  # fully offline


def test_the_stylesheet_and_scripts_come_from_the_assets_package(app: Dash) -> None:
    folder = assets_folder()
    assert folder == Path(app.config.assets_folder) and (folder / "privdash.css").is_file()
    assert {p.name for p in folder.iterdir()} >= {"privdash.css", "clientside.js", "upload.js"}
    client = app.server.test_client()
    assert "/assets/privdash.css" in client.get("/data").get_data(as_text=True)
    css = client.get("/assets/privdash.css")
    assert css.status_code == 200 and ".upload-zone" in css.get_data(as_text=True)
    assert client.get("/assets/upload.js").status_code == 200


def test_first_visit_sets_an_http_only_session_cookie(app: Dash) -> None:
    response = app.server.test_client().get("/data")
    cookie = response.headers["Set-Cookie"]
    assert cookie.startswith(f"{SESSION_COOKIE}=") and "HttpOnly" in cookie and "SameSite=Lax" in cookie


def test_upload_stores_the_table_and_answers_with_its_view(app: Dash) -> None:
    client = app.server.test_client()
    response = post_file(client, b"age;sex;zip\n34;F;02134\n51;M;02139\n", "people.csv", "c" * 40)
    assert response.status_code == 200
    body = response.get_json()
    state = ViewState.from_search(body["href"].split("?", 1)[1])
    assert body["href"].startswith("/data?s=") and state.dataset == body["id"]
    assert set(state.roles) == {"age", "sex", "zip"}
    services = app.server.extensions["privdash"]
    assert services.dataset(body["id"]).frame["zip"].tolist() == ["02134", "02139"]
    assert [i.id for i in services.store.owned("c" * 40)] == [body["id"]]
    assert services.store.owned("d" * 40) == []


@pytest.mark.parametrize(
    ("content", "name", "message"),
    [
        (b"", "empty.csv", "empty.csv is empty."),
        (bytes(range(256)), "binary.csv", "looks binary"),
        (b"a\n1\n", "one.csv", "single column"),
        (b"a,b\n,\n", "blank.csv", "every value is missing"),
    ],
)
def test_bad_uploads_get_the_readers_message(app: Dash, content: bytes, name: str, message: str) -> None:
    response = post_file(app.server.test_client(), content, name)
    assert response.status_code == 400
    assert message in response.get_json()["error"]
    assert "Traceback" not in response.get_data(as_text=True)


def test_upload_over_the_limit_is_refused(app: Dash) -> None:
    response = post_file(app.server.test_client(), b"a,b\n" + b"1,2\n" * 20_000, "big.csv")
    assert response.status_code in (400, 413)
    assert "over the 0 MB limit" in response.get_json()["error"] or "limit" in response.get_json()["error"]


def test_upload_without_a_file(app: Dash) -> None:
    response = app.server.test_client().post("/api/upload", data={}, content_type="multipart/form-data")
    assert response.status_code == 400 and "No file" in response.get_json()["error"]


def test_several_apps_in_one_process_each_have_their_callbacks(tmp_path: Path) -> None:
    first = create_app(Settings(store_dir=tmp_path / "1", cache_dir=tmp_path / "c1"))
    second = create_app(Settings(store_dir=tmp_path / "2", cache_dir=tmp_path / "c2"))
    for app in (first, second):
        app.server.test_client().get("/_dash-dependencies")
        outputs = " ".join(app.callback_map)
        assert "class-grid.getRowsResponse" in outputs and "combo-results.children" in outputs


def test_two_apps_in_one_process_render_their_pages_with_their_own_services(tmp_path: Path) -> None:
    """Dash's page registry is one global: each app's pages must still render from that app's own store."""
    first = create_app(Settings(store_dir=tmp_path / "1", cache_dir=tmp_path / "c1"))
    second = create_app(Settings(store_dir=tmp_path / "2", cache_dir=tmp_path / "c2"))
    response = post_file(first.server.test_client(), b"age;sex;zip\n34;F;02134\n51;M;02139\n", "people.csv")
    href = response.get_json()["href"]
    query = dict([href.split("?", 1)[1].split("=", 1)])

    def rendered(app: Dash) -> str:
        with app.server.test_request_context(href):
            layout = dash.page_registry["dashboard.pages.data"]["layout"](**query)
        return json.dumps(layout, cls=plotly.utils.PlotlyJSONEncoder)

    assert "02139" in rendered(first)  # the preview of the table uploaded to the first app
    assert "02139" not in rendered(second)  # the second app's store does not hold it


def wide_csv(columns: int = 600, rows: int = 30) -> bytes:
    """A survey-like table with ``columns`` columns whose names are as varied as real ones."""
    rng = random.Random(columns)
    names = ["".join(rng.choices(string.ascii_lowercase, k=rng.randint(6, 14))) + f"_{i}" for i in range(columns)]
    lines = [",".join(names)]
    lines += [",".join(str(rng.randint(0, 9)) for _ in range(columns)) for _ in range(rows)]
    return ("\n".join(lines) + "\n").encode()


def test_the_link_of_a_wide_table_stays_short_and_reproduces_the_view(app: Dash) -> None:
    client = app.server.test_client()
    response = post_file(client, wide_csv(), "survey.csv", "w" * 40)
    assert response.status_code == 200, response.get_json()
    href = response.get_json()["href"]
    assert href.startswith("/data?l=") and len(href) < 2_000
    services = app.server.extensions["privdash"]
    state = services.links.state_from_query({"l": href.split("=", 1)[1]})
    assert state.dataset == response.get_json()["id"] and len(state.roles) == 600
    assert len(state.to_search()) > 4_094  # as ?s=, gunicorn would refuse the request line (HTTP 414)
    # A changed view (the shell writes it to the address bar) gets its own short link, which opens that view.
    changed = state.with_columns(types=dict.fromkeys(list(state.roles)[:50], "NOMINAL")).updated(k=7)
    search = services.links.search(changed)
    assert search.startswith("?l=") and search != href[len("/data") :] and len("/risk" + search) < 2_000
    page = client.get("/risk" + search)
    assert page.status_code == 200
    layout = client.post(
        "/_dash-update-component",
        json={
            "output": ".._pages_content.children..._pages_store.data..",
            "outputs": [{"id": "_pages_content", "property": "children"}, {"id": "_pages_store", "property": "data"}],
            "inputs": [
                {"id": "_pages_location", "property": "pathname", "value": "/data"},
                {"id": "_pages_location", "property": "search", "value": search},
            ],
            "state": [],
            "changedPropIds": ["_pages_location.pathname"],
        },
    ).get_json()
    stored = find_store(layout["response"]["_pages_content"]["children"], "page-state")
    assert ViewState.from_dict(stored) == changed


def find_store(tree: object, component_id: str) -> dict:
    """The ``data`` of the store ``component_id`` in a layout (as JSON)."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if node.get("props", {}).get("id") == component_id:
                return dict(node["props"]["data"])
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    raise AssertionError(f"no {component_id} in the layout")


def test_an_expired_link_says_so(app: Dash) -> None:
    layout = data_page.layout(app.server.extensions["privdash"], l="A" * 22)
    text = json.dumps(layout, cls=plotly.utils.PlotlyJSONEncoder)
    assert "This link could not be read" in text and "expired or is unknown" in text


def call(client: Any, trigger: str, values: Mapping[str, object], changed: str | None = None) -> Any:
    """Call the server callback whose first input is ``trigger`` (``id.property``), with ``values`` by component id
    (a list of entries for a pattern-matching id); ``changed`` is the component that fired (default: ``trigger``)."""
    dependencies = client.get("/_dash-dependencies").get_json()
    dep = next(d for d in dependencies if f"{d['inputs'][0]['id']}.{d['inputs'][0]['property']}" == trigger)

    def entry(item: dict[str, str]) -> object:
        if item["id"].startswith("{"):
            return values.get(item["id"], [])
        return {"id": item["id"], "property": item["property"], "value": values.get(item["id"])}

    outputs = []
    for part in dep["output"][2:-2].split("...") if dep["output"].startswith("..") else [dep["output"]]:
        component, prop = part.rsplit(".", 1)
        outputs.append([] if component.startswith("{") else {"id": component, "property": prop})
    return client.post(
        "/_dash-update-component",
        json={
            "output": dep["output"],
            "outputs": outputs if dep["output"].startswith("..") else outputs[0],
            "inputs": [entry(item) for item in dep["inputs"]],
            "state": [entry(item) for item in dep["state"]],
            "changedPropIds": [changed or trigger],
        },
    )


def test_reading_another_sheet_and_deleting_uploads(app: Dash) -> None:
    client = app.server.test_client()
    buffer = io.BytesIO()
    with pd.ExcelWriter(buffer, engine="openpyxl") as writer:
        pd.DataFrame({"age": [30, 41], "sex": ["F", "M"]}).to_excel(writer, sheet_name="people", index=False)
        pd.DataFrame({"town": ["Leeds", "York"], "n": [8, 2]}).to_excel(writer, sheet_name="towns", index=False)
    body = post_file(client, buffer.getvalue(), "book.xlsx", "e" * 40).get_json()
    services = app.server.extensions["privdash"]
    state = ViewState.from_search(body["href"].split("?", 1)[1])
    response = call(
        client, "sheet-read.n_clicks", {"sheet-read": 1, "sheet-select": "towns", "page-state": state.to_dict()}
    )
    href = next(iter(response.get_json()["response"]["redirect"].values()))
    towns = ViewState.from_search(href.split("?", 1)[1])
    assert services.dataset(towns.dataset).columns == ("town", "n") and set(towns.roles) == {"town", "n"}
    assert [info.id for info in services.store.owned("e" * 40)] == [towns.dataset]  # the other sheet replaced it
    # Deleting the open upload leaves its page; the list is empty afterwards.
    clicked = json.dumps({"dataset": towns.dataset, "type": "delete-upload"}, separators=(",", ":"))
    pattern = '{"dataset":["ALL"],"type":"delete-upload"}'
    buttons = [{"id": {"type": "delete-upload", "dataset": towns.dataset}, "property": "n_clicks", "value": 1}]
    values = {pattern: buttons, "page-state": towns.to_dict()}
    answer = call(client, f"{pattern}.n_clicks", values, changed=f"{clicked}.n_clicks").get_json()["response"]
    assert answer["upload-list"]["children"] is None and next(iter(answer["redirect"].values())) == "/data"
    assert services.store.owned("e" * 40) == []


@pytest.mark.parametrize("trusted", [0, 1])
def test_the_client_address_is_the_forwarded_one_only_behind_a_trusted_proxy(tmp_path: Path, trusted: int) -> None:
    """Without trusted proxies, a forged X-Forwarded-For does not make a new client: the third upload of one
    connection's address is refused however the header varies. Behind one trusted proxy, each forwarded address
    counts on its own."""
    settings = Settings(
        store_dir=tmp_path / "store", cache_dir=tmp_path / "cache", client_max_datasets=2, trusted_proxies=trusted
    )
    client = create_app(settings).server.test_client()
    statuses = []
    for number in range(3):
        response = client.post(
            "/api/upload",
            data={"file": (io.BytesIO(b"a,b\n1,2\n3,4\n"), "t.csv")},
            content_type="multipart/form-data",
            headers={"X-Forwarded-For": f"198.51.100.{number + 1}"},
            environ_base={"REMOTE_ADDR": "192.0.2.50"},
        )
        client.delete_cookie(SESSION_COOKIE)  # a client that drops its cookie every time
        statuses.append(response.status_code)
    assert statuses == ([200, 200, 400] if not trusted else [200, 200, 200])


def test_simultaneous_first_requests_of_a_fresh_app_are_all_answered(tmp_path: Path) -> None:
    """Dash sets its server up on the first request without a lock; a threaded worker just (re)started gets several
    first requests at once. Each fresh app here gets 8 at the same moment: none may fail."""
    import threading

    for attempt in range(4):
        fresh = create_app(Settings(store_dir=tmp_path / f"store{attempt}", cache_dir=tmp_path / f"cache{attempt}"))
        start = threading.Barrier(8)
        codes: list[int] = []

        def first_request(app: Dash = fresh, barrier: threading.Barrier = start, answered: list[int] = codes) -> None:
            client = app.server.test_client()
            barrier.wait()
            answered.append(client.get("/_dash-layout").status_code)

        threads = [threading.Thread(target=first_request) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        assert codes == [200] * 8, codes
