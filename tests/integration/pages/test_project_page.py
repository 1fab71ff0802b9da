"""The Data page's Project section through the app's callbacks (no browser): save a project, open it in a fresh
session and get the same view; a project with its table re-creates the dataset; another table is compared with the
fingerprint; a damaged file is a message."""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path
from typing import Any

import pandas as pd
import plotly
import pytest
from dash import Dash

from dashboard.app import create_app
from dashboard.pages import data as data_page
from dashboard.ui.pagestate import SESSION_COOKIE
from privdash.application.project import Project
from privdash.application.settings import Settings
from privdash.application.state import ViewState
from tests.integration.ui.test_app import call

SECRET = "zz-rare-job-9931"


@pytest.fixture
def app(tmp_path: Path) -> Dash:
    return create_app(Settings(store_dir=tmp_path / "store", cache_dir=tmp_path / "cache"))


def as_upload(content: bytes) -> str:
    return "data:application/octet-stream;base64," + base64.b64encode(content).decode("ascii")


def upload_table(client: Any, frame: pd.DataFrame, name: str, cookie: str) -> ViewState:
    client.set_cookie(SESSION_COOKIE, cookie)
    body = client.post(
        "/api/upload",
        data={"file": (io.BytesIO(frame.to_csv(index=False).encode()), name)},
        content_type="multipart/form-data",
    ).get_json()
    return ViewState.from_search(body["href"].split("?", 1)[1])


def save(client: Any, state: ViewState, *, include: bool = False, **fields: str) -> dict[str, Any]:
    values: dict[str, object] = {
        "project-save": 1,
        "project-include-table": include,
        "page-state": state.to_dict(),
        "project-signoff-name": fields.get("name"),
        "project-signoff-role": fields.get("role"),
        "project-signoff-decision": fields.get("decision"),
        "project-signoff-conditions": fields.get("conditions"),
        "project-signoff-date": fields.get("date"),
        "project-identity": fields.get("identity"),
    }
    response = call(client, "project-save.n_clicks", values).get_json()["response"]
    return dict(response["project-download"]["data"])


def open_file(client: Any, content: bytes, state: ViewState | None = None) -> dict[str, Any]:
    values = {
        "project-upload": as_upload(content),
        "page-state": (state or ViewState()).to_dict(),
    }
    response = call(client, "project-upload.contents", values).get_json()
    return dict(response["response"])


def state_of(response: dict[str, Any]) -> ViewState:
    href = response["redirect"]["href"]
    return ViewState.from_search(href.split("?", 1)[1])


def test_the_section_is_on_the_data_page(app: Dash) -> None:
    services = app.server.extensions["privdash"]
    text = json.dumps(data_page.layout(services), cls=plotly.utils.PlotlyJSONEncoder)
    assert "project-save" in text and "project-upload" in text and "Include the table's values" in text


def test_a_saved_project_opens_the_same_view_in_a_fresh_session(app: Dash) -> None:
    services = app.server.extensions["privdash"]
    client = app.server.test_client()
    frame = pd.DataFrame({"age": [30, 40, 30, 50] * 3, "sex": ["F", "M"] * 6, "job": ["a", "b", "c", SECRET] * 3})
    state = upload_table(client, frame, "jobs.csv", "a" * 40)
    state = state.with_quasi_identifiers(["age", "sex"], ["job"]).updated(k=3, max_risk=0.25, violating=True)
    download = save(client, state, name="Ann Steward", decision="approve", identity="Jobs 2024")
    assert download["filename"] == "jobs.privdash"
    content = download["content"].encode()
    assert SECRET.encode() not in content
    project = Project.from_bytes(content)
    assert project.signoff == {"name": "Ann Steward", "decision": "approve"}
    assert project.ledger is not None and project.ledger.identity == "Jobs 2024"

    # The next day: the same table uploaded again, then the project opened on it.
    fresh = app.server.test_client()
    again = upload_table(fresh, frame, "jobs.csv", "b" * 40)
    response = open_file(fresh, content, again)
    reopened = state_of(response)
    assert reopened == state.updated(dataset=again.dataset)
    assert response["project-fields"]["data"] == {"name": "Ann Steward", "decision": "approve", "identity": "Jobs 2024"}
    assert services.dataset(str(reopened.dataset)).frame.shape == frame.shape


def test_a_project_with_its_table_re_creates_the_dataset(app: Dash) -> None:
    client = app.server.test_client()
    frame = pd.DataFrame({"age": [30, 40, 30, 50] * 3, "sex": ["F", "M"] * 6, "job": ["a", "b", "c", SECRET] * 3})
    state = upload_table(client, frame, "jobs.csv", "a" * 40).with_quasi_identifiers(["age", "sex"], ["job"])
    content = save(client, state, include=True)["content"].encode()
    assert SECRET.encode() not in content  # inside, but as Parquet (base64)
    assert Project.from_bytes(content).table is not None
    fresh = app.server.test_client()
    fresh.set_cookie(SESSION_COOKIE, "c" * 40)
    reopened = state_of(open_file(fresh, content))
    assert reopened.dataset not in (None, state.dataset)
    assert reopened.quasi_identifiers == ("age", "sex") and reopened.sensitive == ("job",)
    services = app.server.extensions["privdash"]
    assert services.dataset(str(reopened.dataset)).frame["job"].tolist() == frame["job"].tolist()


def test_another_table_is_compared_with_the_fingerprint(app: Dash) -> None:
    client = app.server.test_client()
    frame = pd.DataFrame({"age": [30, 40, 30, 50] * 3, "sex": ["F", "M"] * 6, "job": ["a", "b", "c", "d"] * 3})
    state = upload_table(client, frame, "jobs.csv", "a" * 40).with_quasi_identifiers(["age", "sex"], ["job"])
    content = save(client, state)["content"].encode()
    other = upload_table(client, frame.iloc[:10].assign(extra=1), "jobs2.csv", "a" * 40)
    response = open_file(client, content, other)
    assert "redirect" not in response  # the steward decides
    text = json.dumps(response["project-message"]["children"])
    assert "saved with 12 rows; this table has 10" in text and "'extra'" in text
    assert "project-open-anyway" in text
    missing = upload_table(client, frame.drop(columns="sex"), "jobs3.csv", "a" * 40)
    refused = json.dumps(open_file(client, content, missing)["project-message"]["children"])
    assert "lacks column(s) the project uses: 'sex'" in refused


@pytest.mark.parametrize(
    ("content", "words"),
    [
        (b"{not json", "not valid JSON"),
        (b'{"privdash_recipe": 1, "steps": []}', "not a privdash project"),
        (b'{"format": "privdash-project", "version": 9}', "newer privdash"),
    ],
)
def test_a_damaged_file_is_a_message(app: Dash, content: bytes, words: str) -> None:
    response = open_file(app.server.test_client(), content)
    assert "redirect" not in response and words in json.dumps(response["project-message"]["children"])


def test_a_built_in_dataset_s_project_opens_it(app: Dash) -> None:
    services = app.server.extensions["privdash"]
    client = app.server.test_client()
    state = services.initial_state(services.dataset("demo:people")).updated(k=9)
    content = save(client, state)["content"].encode()
    assert b"example.org" not in content  # no e-mail address of the table
    assert state_of(open_file(app.server.test_client(), content)) == state
