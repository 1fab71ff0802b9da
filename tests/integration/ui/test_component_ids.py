"""Every component id a callback names exists in a layout the app serves (no browser).

The app runs with ``suppress_callback_exceptions=True`` (pages and panels appear after the first load), so Dash no
longer says when a callback names an id that no layout holds: its input never fires, its output goes nowhere. This
test collects every id of every Input, State and Output of ``app.callback_map`` (background callbacks' progress,
cancel and running outputs too) and every id of the layouts the app renders: the shell and each page for the states
a page can be in (no dataset; the demo dataset; a state whose fix list holds a search with solutions to choose from;
this browser's upload, a workbook of several sheets; a server-side source not yet counted). Each callback id must be
in one of them; a pattern-matching id (a dict with ``ALL`` / ``MATCH`` / ``ALLSMALLER``) matches a layout id with the
same keys whose values equal its non-wildcard ones.

Only ids that a callback itself creates, in the ``children`` it returns, may be missing from every layout: they are
listed in :data:`CREATED_BY_CALLBACKS` with the output that creates them and why; the test checks that that output is
a ``children`` output of a callback whose component is in a layout, and that the callback's module writes the id.

The pages are reached through Dash's page registry and the callbacks through the callback map, never by module name.
"""

from __future__ import annotations

import inspect
import io
import json
import sys
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import dash
import pandas as pd
import pytest
from dash.dependencies import Wildcard

from dashboard.app import SESSION_COOKIE, _layouts, create_app
from dashboard.ui.inputs import _components
from privdash.application.fixes import check_spec
from privdash.application.fixruns import FixRuns
from privdash.application.services import Services
from privdash.application.settings import Settings
from privdash.application.state import QUERY_KEY, ViewState

DEMO = "demo:people"
#: A search on the demo table with several solutions: the Fix page then shows the solutions to choose from.
SEARCH = {"kind": "search", "k": 5, "l": None, "t": None, "max_risk": 0.2, "max_suppression": 0.05, "metric": "loss"}
SOURCE = "lake"


@dataclass(frozen=True)
class Created:
    """An id no layout holds because a callback makes it: the ``children`` output that holds it, and why."""

    output: str
    reason: str


#: Ids that exist only once a callback has returned them (key: the id's text, or its ``type`` for a dict id).
CREATED_BY_CALLBACKS: dict[str, Created] = {
    "dp-download-button": Created(
        "dp-result.children", "the download button of a differentially private release comes with its result"
    ),
    "report-get": Created(
        "report-result.children", "a report's download links (per file kind and token) exist once it is made"
    ),
    "synth-get": Created(
        "synth-result.children", "a synthetic release's download buttons (table, recipe) come with its result"
    ),
}

#: The Wildcard values of a pattern-matching id as the callback map spells them in its JSON ids.
WILDCARDS = ("ALL", "MATCH", "ALLSMALLER")


def _normal(component_id: Any) -> Any:
    """A callback id as text or a dict; a wildcard value becomes the wildcard's name."""
    if isinstance(component_id, str) and component_id.startswith("{"):
        component_id = json.loads(component_id)
    if isinstance(component_id, Mapping):
        return {
            key: (
                value.value
                if isinstance(value, Wildcard)
                else value[0]
                if isinstance(value, list) and value and value[0] in WILDCARDS
                else value
            )
            for key, value in component_id.items()
        }
    return component_id


def _key(component_id: Any) -> str:
    """The allow-list key of an id: itself, or the ``type`` of a dict id."""
    return str(component_id["type"]) if isinstance(component_id, dict) else str(component_id)


def _outputs(entry: Mapping[str, Any]) -> list[Any]:
    output = entry["output"]
    return list(output) if isinstance(output, list | tuple) else [output]


def callback_ids(app: dash.Dash) -> dict[str, list[str]]:
    """Each id named by a callback (its JSON text) -> the callbacks naming it ("output key: role")."""
    named: dict[str, list[str]] = {}

    def add(component_id: Any, where: str) -> None:
        named.setdefault(json.dumps(_normal(component_id), sort_keys=True), []).append(where)

    for key, entry in app.callback_map.items():
        short = key.split("@")[0][:80]
        for output in _outputs(entry):
            add(output.component_id, f"{short}: output")
        for role in ("inputs", "state"):
            for item in entry.get(role) or []:
                add(item["id"], f"{short}: {role}")
        background = entry.get("background") or {}
        for output in background.get("progress") or []:
            add(output.component_id, f"{short}: progress")
        for item in background.get("cancel") or []:
            add(item["id"], f"{short}: cancel")
    for entry in app._callback_list:  # the outputs set while a background callback runs
        for changes in (entry.get("running") or {}).values():
            for target in changes:
                add(target.rsplit(".", 1)[0], f"{entry['output'][:80]}: running")
    return named


def _render(app: dash.Dash, query: Mapping[str, str], cookie: str | None = None) -> Iterator[Any]:
    """Every page's layout for ``query``, as :func:`dashboard.app._layouts` renders them, for a browser holding the
    session ``cookie`` (its uploads are listed)."""
    headers = {"Cookie": f"{SESSION_COOKIE}={cookie}"} if cookie else None
    for page in list(dash.page_registry.values()):
        with app.server.app_context(), app.server.test_request_context("/", headers=headers):
            layout = page["layout"]
            yield layout(**query) if callable(layout) else layout


def _query(state: ViewState) -> dict[str, str]:
    return {QUERY_KEY: state.encode()}


def _workbook() -> bytes:
    """An Excel workbook of two sheets (the Data page then offers the other sheet)."""
    buffer = io.BytesIO()
    with pd.ExcelWriter(buffer, engine="openpyxl") as writer:
        pd.DataFrame({"age": [34, 51, 29], "sex": ["F", "M", "F"]}).to_excel(writer, sheet_name="people", index=False)
        pd.DataFrame({"zip": ["02134", "02139"]}).to_excel(writer, sheet_name="places", index=False)
    return buffer.getvalue()


def layouts(app: dash.Dash) -> Iterable[Any]:
    """The shell and every page in each state a page can be in (see the module's text)."""
    services: Services = app.server.extensions["privdash"]
    pages = [page["layout"] for page in dash.page_registry.values()]
    yield from _layouts(app, services, pages, DEMO)()  # the walk the app makes at start-up (the shell included)
    yield from _render(app, {})  # no dataset
    # A search with several solutions, computed, so that the Fix page shows them at once.
    demo = services.initial_state(services.dataset(DEMO), ViewState())
    searched = demo.with_quasi_identifiers(["age", "sex", "postcode"], ["diagnosis"]).updated(fix=(check_spec(SEARCH),))
    assert FixRuns(services).run(searched).error is None
    yield from _render(app, _query(searched))
    # This browser's upload of a workbook of two sheets: its Delete button and the sheet picker.
    client = app.server.test_client()
    client.get("/data")
    answer = client.post(
        "/api/upload",
        data={"file": (io.BytesIO(_workbook()), "book.xlsx")},
        content_type="multipart/form-data",
    )
    assert answer.status_code == 200, answer.get_data(as_text=True)
    cookie = client.get_cookie(SESSION_COOKIE)
    assert cookie is not None
    uploaded = services.initial_state(services.dataset(answer.get_json()["id"]), ViewState())
    yield from _render(app, _query(uploaded), cookie.value)
    # A server-side source not yet counted: the Risk page waits for its count, with progress and Cancel.
    source = services.initial_state(services.dataset(f"source:{SOURCE}"), ViewState())
    yield from _render(app, _query(source))


def _matches(wanted: Any, found: Any) -> bool:
    if isinstance(wanted, str):
        return wanted == found
    return (
        isinstance(found, dict)
        and set(found) == set(wanted)
        and all(value in WILDCARDS or found[key] == value for key, value in wanted.items())
    )


@dataclass(frozen=True)
class Ids:
    named: dict[str, list[str]]  # callback ids (JSON text) -> where
    present: list[Any]  # every id of every rendered layout
    callbacks: dict[str, Mapping[str, Any]]  # the callback map


@pytest.fixture(scope="module")
def ids(tmp_path_factory: pytest.TempPathFactory) -> Ids:
    tmp = tmp_path_factory.mktemp("ids")
    table = tmp / "lake.parquet"
    pd.DataFrame(
        {"age": [34, 51, 29, 34], "sex": ["F", "M", "F", "F"], "zip": ["021", "021", "022", "021"]}
    ).to_parquet(table)
    sources = tmp / "sources.json"
    sources.write_text(json.dumps({SOURCE: {"title": "Lake", "path": str(table)}}), encoding="utf-8")
    app = create_app(Settings(store_dir=tmp / "store", cache_dir=tmp / "cache", sources_file=sources))
    # Everything is read now: the page registry is process-wide, and a later app would replace these pages. The
    # first request sets the server up, which adds Dash's own callbacks (page routing, background jobs' Cancel).
    assert app.server.test_client().get("/").status_code == 200
    present = [
        component.id
        for layout in layouts(app)
        for component in _components(layout)
        if getattr(component, "id", None) is not None
    ]
    return Ids(callback_ids(app), present, dict(app.callback_map))


def _missing(ids: Ids) -> dict[str, list[str]]:
    return {
        text: where
        for text, where in ids.named.items()
        if not any(_matches(json.loads(text), found) for found in ids.present)
    }


def test_every_id_a_callback_names_is_in_a_layout(ids: Ids) -> None:
    assert len(ids.named) > 200  # the walk found the app's callbacks
    dangling = {
        text: where for text, where in _missing(ids).items() if _key(json.loads(text)) not in CREATED_BY_CALLBACKS
    }
    assert dangling == {}


def test_every_allowed_id_is_missing_from_the_layouts_and_made_by_its_callback(ids: Ids) -> None:
    missing = {_key(json.loads(text)) for text in _missing(ids)}
    assert set(CREATED_BY_CALLBACKS) <= missing, "an allowed id is in a layout now: take it off the list"
    for key, created in CREATED_BY_CALLBACKS.items():
        component, prop = created.output.split(".")
        assert prop == "children", key
        assert component in ids.present, f"{created.output} is in no layout"
        makers = [
            entry
            for entry in ids.callbacks.values()
            if any(
                _normal(output.component_id) == component and output.component_property == prop
                for output in _outputs(entry)
            )
        ]
        assert makers, f"no callback outputs {created.output}"
        sources = [inspect.getsource(sys.modules[inspect.unwrap(e["callback"]).__module__]) for e in makers]
        assert any(json.dumps(key) in source for source in sources), (
            f"the callback of {created.output} never writes {key!r}"
        )


def test_a_pattern_matching_id_matches_by_its_fixed_keys() -> None:
    wanted = _normal('{"index":["ALL"],"type":"fix-solution-pick"}')
    assert wanted == {"index": "ALL", "type": "fix-solution-pick"}
    assert _matches(wanted, {"type": "fix-solution-pick", "index": 3})
    assert not _matches(wanted, {"type": "fix-solution-pick", "row": 3})
    assert not _matches(wanted, {"type": "other", "index": 3})
    assert not _matches("fix-solutions-box", "fix-solutions")
