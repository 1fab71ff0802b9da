"""Every technique of the Fix page's step list round-trips: the form's controls -> spec -> share link -> spec -> recipe
step, and the recipe re-applied gives the same table (no browser)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from dashboard.pages import fix as page
from dashboard.pages.fix.form import RULE_CONTROLS, VIEW_CONTROLS, control_id
from privdash.application.fixes import check_spec, run_fixes
from privdash.application.services import Services
from privdash.application.settings import Settings
from privdash.application.state import ViewState
from privdash.application.techniques import STEPS, TECHNIQUES
from privdash.transform.steps import apply_recipe
from tests.integration.pages.test_fix import find

QIS = ["age", "sex", "postcode"]
KEY = "a-test-key-of-at-least-16-bytes"
#: What the form does not fill in by itself (a technique whose defaults make no step).
EXTRA: dict[str, dict[str, Any]] = {"top_bottom_coding": {control_id("top_bottom_coding", "top"): 80}}


@pytest.fixture(scope="module")
def services(tmp_path_factory: pytest.TempPathFactory) -> Services:
    root = tmp_path_factory.mktemp("techniques")
    return Services(Settings(store_dir=root / "store", cache_dir=root / "cache"))


@pytest.fixture(scope="module")
def base(services: Services) -> ViewState:
    state = services.initial_state(services.dataset("demo:people"), ViewState())
    return state.with_quasi_identifiers(QIS, ["diagnosis"])


def form_values(services: Services, state: ViewState, name: str) -> dict[str, Any]:
    """The controls of technique ``name`` as the page first shows them."""
    panels = page.technique_panels(services.dataset("demo:people"), state, name)
    values = {}
    for control, prop in page.CONTROLS.items():
        found = next((c for panel in panels if (c := find(panel, control)) is not None), None)
        assert found is not None, f"no control {control}"
        values[control] = getattr(found, prop, None)
    return values


def test_the_form_has_a_panel_and_a_control_for_every_parameter(services: Services, base: ViewState) -> None:
    panels = page.technique_panels(services.dataset("demo:people"), base, "generalize")
    assert [panel.id["kind"] for panel in panels] == list(STEPS)
    expected = set()
    for name in STEPS:
        for param in TECHNIQUES[name].params:
            if param.form == "rule":
                expected |= set(RULE_CONTROLS.values())
            elif param.form in ("input", "view"):
                expected.add(control_id(name, param.name))
    assert set(page.CONTROLS) == expected
    views = {(name, p.name) for name in STEPS for p in TECHNIQUES[name].params if p.form == "view"}
    assert set(VIEW_CONTROLS) == views
    # The labels and help of the description are the form's.
    microaggregation = panels[STEPS.index("microaggregation")]
    assert find(microaggregation, "fix-microaggregation-decimals").label == "Round means to decimals"
    limit = find(panels[STEPS.index("record_suppression")], "fix-record-suppression-max-suppression")
    assert (limit.label, limit.min, limit.max, limit.value) == ("Suppression limit (% of records)", 0, 100, 5)


@pytest.mark.parametrize("name", STEPS)
def test_controls_spec_link_spec_recipe_round_trip(services: Services, base: ViewState, name: str) -> None:
    values = {**form_values(services, base, name), **EXTRA.get(name, {})}
    spec = page.spec_from_controls(name, values, base)
    assert spec["kind"] == name
    state = base.updated(fix=(spec,))
    decoded = ViewState.decode(state.encode())
    assert decoded.fix == (spec,) and check_spec(decoded.fix[0]) == spec
    loaded = services.dataset("demo:people")
    contract = services.contract(loaded, decoded)
    run = run_fixes(loaded.frame, contract, decoded.missing, decoded.fix, key=KEY)
    assert run.error is None
    (step,) = run.recipe.steps
    assert step.kind in TECHNIQUES[name].kinds
    again, _ = apply_recipe(loaded.frame, run.recipe, secrets={"key": KEY})
    pd.testing.assert_frame_equal(again.reset_index(drop=True), run.data.reset_index(drop=True))


def test_an_old_link_decodes_to_the_new_names(base: ViewState) -> None:
    old = base.updated(
        fix=(
            {"kind": "suppress_records", "k": 5, "budget": 0.1},
            {"kind": "top_bottom", "column": "age", "top": 80},
            {"kind": "drop", "columns": ["name"]},
        )
    )
    decoded = ViewState.decode(old.encode())
    assert [check_spec(spec)["kind"] for spec in decoded.fix] == [
        "record_suppression",
        "top_bottom_coding",
        "drop_identifiers",
    ]
    listed = page.step_list(decoded)
    assert "Malformed" not in str(listed)


def test_a_step_is_added_under_its_name(tmp_path: Path, services: Services, base: ViewState) -> None:
    from privdash.application.fixruns import FixRuns

    values = {control_id("local_suppression", "k"): 3, control_id("local_suppression", "importance"): ["sex"]}
    state, message = page.add_spec(FixRuns(services), base, "local_suppression", values)
    assert message is None and state.fix == ({"kind": "local_suppression", "k": 3, "importance": ["sex"]},)
    state, message = page.add_spec(FixRuns(services), base, "suppress_cells", values)  # the form sends new names
    assert message == "Choose a technique." and state == base
