"""The release rules beyond k on the Risk and Fix pages (no browser): the "More release rules" input, the verdict
banner and headline cards that judge them, the Fix page's search meeting them, and the search judged on people."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import plotly
import pytest

from dashboard.pages import fix as fix_page
from dashboard.pages import risk as risk_page
from dashboard.ui.targets import release_error, target_ids, with_targets
from privdash.application import fixes
from privdash.application.fixruns import FixRuns
from privdash.application.services import Services
from privdash.application.settings import Settings
from privdash.application.state import StateError, ViewState
from privdash.data.contract import ColumnRole
from privdash.data.tables import read_table
from privdash.measure.diagnose import diagnose

KEYS = ["urbrur", "roof", "walls", "water", "electcon", "relat", "sex"]


def as_json(component: object) -> str:
    text = json.dumps(component, cls=plotly.utils.PlotlyJSONEncoder)
    return text.replace("\\u2265", "≥").replace("\\u2264", "≤")


def find(component: object, component_id: str) -> Any:
    if getattr(component, "id", None) == component_id:
        return component
    children = getattr(component, "children", None)
    for child in children if isinstance(children, list | tuple) else [children]:
        if child is not None and not isinstance(child, str | int | float):
            found = find(child, component_id)
            if found is not None:
                return found
    return None


def card(layout: object, card_id: str) -> tuple[str, str]:
    """The value and the verdict badge (``pass`` / ``fail``) of a stat card."""
    text = as_json(find(layout, card_id))
    verdict = "pass" if '"data-verdict": "pass"' in text else "fail" if '"data-verdict": "fail"' in text else "-"
    return str(find(layout, card_id).children[1].children), verdict


@pytest.fixture
def services(tmp_path: Path) -> Services:
    return Services(Settings(store_dir=tmp_path / "store", cache_dir=tmp_path / "cache"))


@pytest.fixture
def survey(services: Services, data_dir: Path) -> ViewState:
    raw = (data_dir / "sdcmicro_testdata" / "testdata.csv").read_bytes()
    loaded = services.dataset(services.ingest(raw, filename="testdata.csv", session="s" * 40).id)
    return services.initial_state(loaded).with_quasi_identifiers(KEYS, []).updated(k=1, max_risk=0)


def test_the_inputs_carry_the_release_rules(services: Services, survey: ViewState) -> None:
    assert target_ids("target-")[-1] == "target-release" and target_ids("fix-target-")[-1] == "fix-target-release"
    state = risk_page.controls_state(survey, KEYS, [], "value", [], None, None, None, None, "global_risk=0.002")
    assert state.release == {"global_risk": 0.002}
    assert risk_page.controls_state(state, KEYS, [], "value", [], None, None, None, None).release == state.release
    assert risk_page.controls_state(state, KEYS, [], "value", [], None, None, None, None, "").release == {}
    loaded = services.dataset(str(state.dataset))
    controls = risk_page.controls(list(loaded.frame.columns), state)
    assert find(controls, "target-release").value == "global_risk=0.002"
    assert find(controls, "target-release").label == "More release rules"
    # the layout from a link shows the rules of the link
    body = risk_page.layout(services, s=state.encode())
    assert find(body, "target-release").value == "global_risk=0.002"
    assert find(fix_page.layout(services, s=state.encode()), "fix-target-release").value == "global_risk=0.002"
    # a text that cannot be read: the reason for under the input, the state unchanged
    assert release_error("global_risk=0.002") is None
    assert "global_risk must lie in" in str(release_error("global_risk=3"))
    assert "k has its own input" in str(release_error("k=5"))
    with pytest.raises(StateError, match="Cannot read the target"):
        with_targets(state, None, None, None, None, "globalrisk=0.1")


def test_the_risk_page_judges_the_release_rules(services: Services, survey: ViewState, data_dir: Path) -> None:
    state = survey.updated(release={"global_risk": 0.002, "household_risk": 0.05, "delta_presence": 0.5})
    results = risk_page.results(services, state)
    text = as_json(results)
    assert "FAIL: Not safe to release" in text
    expected = diagnose(read_table(data_dir / "sdcmicro_testdata" / "testdata.csv"), KEYS, weights="sampling_weight")
    assert f"global risk ER/n = {expected.individual_risk.global_risk:.4g} is above global_risk ≤ 0.002" in text
    assert card(results, "card-release-global_risk") == (f"{100 * expected.individual_risk.global_risk:.2f}%", "fail")
    assert card(results, "card-release-household_risk")[1] == "pass"
    assert card(results, "card-release-delta_presence")[1] == "pass"
    assert "population from the sampling weights in 'sampling_weight'" in text
    # a looser global risk passes, and then the whole verdict does
    looser = state.updated(release={"global_risk": 0.003})
    text = as_json(risk_page.results(services, looser))
    assert "PASS: Meets every target" in text
    # without the weight role the population rules are not measured, and say what is missing
    plain = state.with_columns(roles={"sampling_weight": ColumnRole.INSENSITIVE})
    results = risk_page.results(services, plain)
    assert card(results, "card-release-delta_presence") == ("-", "fail")
    assert "not measured: no population: give a column the role" in as_json(results)


def test_the_fix_page_searches_for_the_release_rules(services: Services, survey: ViewState) -> None:
    state = survey.updated(release={"global_risk": 0.002})
    loaded = services.dataset(str(state.dataset))
    panels = as_json(fix_page.technique_panels(loaded, state, "search", None, {}))
    assert "the release rules: global_risk=0.002" in panels
    values = {
        "fix-search-k": 1,
        "fix-search-release": True,
        "fix-search-max-suppression": 5,
        "fix-search-metric": "loss",
    }
    spec = fix_page.spec_from_controls("search", values, state)
    assert spec["release"] == {"global_risk": 0.002}
    assert "release" not in fix_page.spec_from_controls("search", {**values, "fix-search-release": False}, state)
    # the checkbox follows the rules of the Targets input (ticked when there are some, unavailable without)
    assert fix_page.release_checkbox(state) == {
        "label": "the release rules: global_risk=0.002",
        "checked": True,
        "disabled": False,
    }
    assert fix_page.release_checkbox(survey)["disabled"] is True
    # a view without a risk cap (max_risk 0) searches without one, ticked or not
    assert fix_page.spec_from_controls("search", {**values, "fix-search-max-risk": True}, state)["max_risk"] is None
    assert "release" not in fix_page.spec_from_controls("search", values, survey)
    fixed = state.updated(fix=(spec,))
    body = fix_page.preview(FixRuns(services), fixed)
    # before and after judged on the same rules: the search's table meets global_risk
    assert card(body, "fix-before-release-global_risk")[1] == "fail"
    value, verdict = card(body, "fix-after-release-global_risk")
    assert verdict == "pass" and float(value.rstrip("%")) <= 0.2
    text = as_json(body)
    assert '"fix-verdict"' in text and "PASS: Meets every target" in text


@pytest.fixture
def wards(services: Services) -> ViewState:
    frame = pd.DataFrame(
        {
            "pid": [1, 1, 2, 2, 3, 3, 11, 11, 12, 12, 13, 13, 14, 14],
            "ward": ["x", "x", "x", "z", "y", "z", "x", "y", "x", "z", "y", "z", "x", "y"],
        }
    )
    loaded = services.dataset(
        services.ingest(frame.to_csv(index=False).encode(), filename="wards.csv", session="w" * 40).id
    )
    state = services.initial_state(loaded).with_columns(roles={"pid": ColumnRole.ENTITY})
    return state.with_quasi_identifiers(["ward"], []).updated(k=2, max_risk=0)


def test_the_fix_page_judges_people_and_explains_what_it_refuses(services: Services, wards: ViewState) -> None:
    runs = FixRuns(services)
    spec = fixes.check_spec({"kind": "search", "k": 2, "max_suppression": 0.2, "metric": "loss"})
    body = fix_page.preview(runs, wards.updated(fix=(spec,)))
    text = as_json(body)
    assert "judged on people ('pid')" in text
    assert "1 people (2 rows) suppressed" in text
    assert card(body, "fix-before-k") == ("1", "fail") and card(body, "fix-after-k") == ("2", "pass")
    refused = fixes.check_spec({**spec, "recoding": "local"})
    text = as_json(fix_page.preview(runs, wards.updated(fix=(refused,))))
    assert '"fix-step-error"' in text and "does not take local recoding" in text
