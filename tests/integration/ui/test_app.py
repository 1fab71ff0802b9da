"""The app factory and its HTTP routes (Flask test client, no browser)."""

from __future__ import annotations

import io
from pathlib import Path

import dash
import pytest
from dash import Dash

from dashboard.application.settings import Settings
from dashboard.application.state import ViewState
from dashboard.ui.app import SESSION_COOKIE, assets_folder, create_app


@pytest.fixture
def app(tmp_path: Path) -> Dash:
    return create_app(Settings(store_dir=tmp_path / "store", cache_dir=tmp_path / "cache", max_upload_bytes=50_000))


def post_file(client, content: bytes, name: str, cookie: str | None = None):  # type: ignore[no-untyped-def]
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
