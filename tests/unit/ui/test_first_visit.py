"""A first visit opens the built-in demo; a page without a dataset points where the user can open one; the verdict
banner carries the fix the search found."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pandas as pd
import plotly.utils
import pytest

from dashboard.pages import risk
from dashboard.ui.components import no_dataset, verdict_banner
from dashboard.ui.pagestate import DEFAULT_DATASET, open_page
from privdash.application.riskview import combinations_left_out, people_column
from privdash.application.services import Services
from privdash.application.settings import Settings
from privdash.application.state import ViewState
from privdash.data.contract import ColumnRole
from privdash.measure.diagnose import diagnose
from privdash.targets import PrivacyTargets


def as_json(component: object) -> str:
    return json.dumps(component, cls=plotly.utils.PlotlyJSONEncoder)


@pytest.fixture
def services(tmp_path: Path) -> Services:
    return Services(Settings(store_dir=tmp_path / "store", cache_dir=tmp_path / "cache"))


def test_a_page_without_a_dataset_opens_the_demo(services: Services) -> None:
    state, loaded, alerts = open_page(services, {})
    assert DEFAULT_DATASET == "demo:people" and state.dataset == DEFAULT_DATASET
    assert loaded is not None and loaded.id == DEFAULT_DATASET and not alerts
    assert state.quasi_identifiers == loaded.contract.quasi_identifiers  # the demo's own roles
    # Settings of the link are kept.
    state, _, _ = open_page(services, {"s": ViewState(k=11).encode()})
    assert state.dataset == DEFAULT_DATASET and state.k == 11
    # A link that cannot be read, or names a dataset that is gone, never shows the demo instead.
    state, loaded, alerts = open_page(services, {"s": "not-a-state"})
    assert loaded is None and state.dataset is None and alerts
    state, loaded, alerts = open_page(services, {"s": ViewState(dataset="demo:nothing").encode()})
    assert loaded is None and alerts


def test_the_empty_panel_points_to_the_data_page_except_on_it() -> None:
    elsewhere = as_json(no_dataset())
    assert "Open the Data page" in elsewhere and '"/data"' in elsewhere
    here = as_json(no_dataset("Nothing is open yet.", on_data_page=True))
    assert "Open the Data page" not in here and "controls on the left" in here and "Nothing is open yet." in here


def test_verdict_banner_adds_the_fix(services: Services) -> None:
    frame = services.dataset("demo:people").frame
    verdict = diagnose(frame, ["age", "sex"]).check(PrivacyTargets(k=5))
    banner = verdict_banner(verdict, "The cheapest fix found (least loss): suppress 3 records (0.1%).", banner_id="b")
    text = as_json(banner)
    assert banner.id == "b" and verdict.sentence() in text and "The cheapest fix found" in text
    assert ("PASS" if verdict.passed else "FAIL") in banner.title
    assert "verdict-fix" not in as_json(verdict_banner(verdict))


def visits_csv() -> bytes:
    """Four people over seven rows: p1 and p2 share (30, F), p3 and p4 are unique."""
    rows = ["pid,age,sex", "p1,30,F", "p1,30,F", "p2,30,F", "p3,41,M", "p3,41,M", "p3,41,M", "p4,52,F"]
    return ("\n".join(rows) + "\n").encode()


def test_the_verdict_counts_people_when_a_column_is_the_person_id(services: Services) -> None:
    loaded = services.dataset(services.ingest(visits_csv(), filename="visits.csv", session="s" * 40).id)
    state = services.initial_state(loaded).with_columns(roles={"pid": ColumnRole.ENTITY})
    state = state.with_quasi_identifiers(["age", "sex"], []).updated(k=2, max_risk=0)
    text = as_json(risk.results(services, state))
    # the Risk page's banner says what the report and privdash report say: 2 of 4 people, not 2 of 4 records
    assert "2 of 4 people (50.0%) are unique on these 2 attributes" in text
    assert "2 of 4 records" not in text
    verdict = diagnose(pd.read_csv(io.BytesIO(visits_csv())), ["age", "sex"], entity="pid").check(PrivacyTargets(k=2))
    assert "records" in verdict.sentence()  # the core's sentence, reworded only on the page
    banner = as_json(verdict_banner(verdict, people=True))
    assert "people" in banner and "records" not in banner
    assert as_json(verdict_banner(verdict)).count("records") == verdict.sentence().count("records")
    # the QI-combination analysis counts rows: with a person id the page says why it is left out, as the report does
    assert people_column(state) == "pid"
    assert people_column(state.with_columns(roles={"pid": ColumnRole.INSENSITIVE})) is None
    assert "left out" in combinations_left_out("pid") and "('pid')" in combinations_left_out("pid")
