"""The presenter's page through HTTP against the real app: the deck's slides in the page (the first shown), the
counter, the Exit link, and the background job that fills the slow slides with the application layer's content."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from dash import Dash
from werkzeug.serving import make_server

from dashboard.app import create_app
from dashboard.pages import present as page
from privdash.application.presentations import presentation_links
from privdash.application.presenter import SLIDE_KEYS, compute_slow, deck
from privdash.application.services import Services
from privdash.application.settings import Settings
from privdash.application.state import ViewState
from tests.integration.dash_http import DashSession, find, payload, texts


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Settings, Dash]]:
    root: Path = tmp_path_factory.mktemp("present")
    settings = Settings(store_dir=root / "store", cache_dir=root / "cache", data_dir=root / "no-data")
    app = create_app(settings)
    http = make_server("127.0.0.1", 0, app.server, threaded=True)
    thread = threading.Thread(target=http.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{http.server_port}", settings, app
    http.shutdown()
    thread.join(10)


def page_layout(session: DashSession, href: str) -> Any:
    session.open(href)
    path, _, search = href.partition("?")
    page_json = session.call(
        payload(
            [("_pages_content", "children"), ("_pages_store", "data")],
            [("_pages_location", "pathname", path), ("_pages_location", "search", "?" + search if search else "")],
        )
    )
    return page_json.json()["response"]["_pages_content"]["children"]


def mirador(services: Services) -> ViewState:
    return services.initial_state(services.dataset("demo:mirador"), ViewState(k=2, max_risk=0.5))


def test_the_page_holds_every_slide_and_shows_the_first(server: tuple[str, Settings, Dash]) -> None:
    base, settings, _app = server
    services = Services(settings)
    state = mirador(services)
    layout = page_layout(DashSession(base), page.present_href(services, state, "/data"))
    sections = [find(layout, f"slide-{key}") for key in SLIDE_KEYS]
    assert all(section is not None for section in sections)
    assert [bool(section["props"].get("hidden")) for section in sections] == [False] + [True] * 5  # type: ignore[index]
    for key in SLIDE_KEYS:
        title = find(layout, f"slide-{key}-title")
        assert title is not None and title["props"]["tabIndex"] == -1
    counter = find(layout, "present-counter")
    assert counter is not None and counter["props"]["children"] == "1 of 6"
    assert counter["props"]["aria-live"] == "polite"
    exit_link = find(layout, "present-exit")
    assert exit_link is not None
    url = urlsplit(exit_link["props"]["href"])
    assert (
        url.path == "/data"
        and services.links.state_from_query({k: v[0] for k, v in parse_qs(url.query).items()}) == state
    )
    words = list(texts(layout))
    assert "1 of 8 records is unique" in words and "Not safe to release" in " ".join(words)
    assert find(layout, "present-tick") is not None
    assert find(layout, "present-tick")["props"]["max_intervals"] == 1  # type: ignore[index]


def test_exit_goes_only_to_a_page_of_the_app(server: tuple[str, Settings, Dash]) -> None:
    base, settings, _app = server
    services = Services(settings)
    state = mirador(services)
    href = services.links.href(state, "/present") + "&from=https://example.org/"
    layout = page_layout(DashSession(base), href)
    exit_link = find(layout, "present-exit")
    assert exit_link is not None and exit_link["props"]["href"].startswith("/risk?")
    assert page.present_href(services, state, "https://example.org/") == services.links.href(state, "/present")


def test_a_damaged_link_says_so(server: tuple[str, Settings, Dash]) -> None:
    base, _settings, _app = server
    layout = page_layout(DashSession(base), "/present?s=damaged")
    assert find(layout, "state-error") is not None and find(layout, "present-exit") is not None


def test_the_background_job_fills_the_slow_slides(server: tuple[str, Settings, Dash]) -> None:
    base, settings, app = server
    services = Services(settings)
    state = mirador(services).updated(k=3)  # a view no other test computed
    session = DashSession(base)
    layout = page_layout(session, page.present_href(services, state))
    request = find(layout, "present-request")
    slow = ["fix", "attack", "sample"]
    assert request is not None and request["props"]["data"] == {"state": state.to_dict(), "slides": slow}
    # Only the pending slides are the job's outputs; the others are shown already and stay as they are.
    assert find(layout, {"type": page.PENDING, "key": "fix"}) is not None  # type: ignore[arg-type]
    assert find(layout, {"type": "present-body", "key": "verdict"}) is not None  # type: ignore[arg-type]
    output = next(name for name in app.callback_map if page.PENDING in name)
    body = {
        "output": output,
        "outputs": [{"id": {"type": page.PENDING, "key": key}, "property": "children"} for key in slow],
        "inputs": [{"id": "present-tick", "property": "n_intervals", "value": 1}],
        "state": [{"id": "present-request", "property": "data", "value": request["props"]["data"]}],
        "changedPropIds": ["present-tick.n_intervals"],
    }
    job = session.start(body)
    deadline = time.monotonic() + 120
    while not job.done and time.monotonic() < deadline:
        time.sleep(0.3)
        job.poll()
    assert job.response is not None, job.status
    bodies = job.response
    expected = compute_slow(services, state)
    for key in ("fix", "attack", "sample"):
        rendered = json.dumps(
            bodies[json.dumps({"key": key, "type": page.PENDING}, separators=(",", ":"))], ensure_ascii=False
        )
        slide = expected.slide(key)
        assert slide.headline in rendered and "Being computed" not in rendered
    # The page opened again shows every slide at once, and starts no job.
    assert not deck(services, state).pending
    again = page_layout(DashSession(base), page.present_href(services, state))
    assert find(again, "present-tick")["props"]["max_intervals"] == 0  # type: ignore[index]


def test_the_presentations_card_links_to_the_presenter(tmp_path: Path) -> None:
    services = Services(Settings(store_dir=tmp_path / "store", cache_dir=tmp_path / "cache", data_dir=tmp_path))
    for link in presentation_links(services):
        url = urlsplit(link.present)
        query = {k: v[0] for k, v in parse_qs(url.query).items()}
        assert url.path == page.PATH and query["from"] == link.page
        opened = services.links.state_from_query(query)
        assert opened == services.links.state_from_query(
            {k: v[0] for k, v in parse_qs(urlsplit(link.href).query).items()}
        )
