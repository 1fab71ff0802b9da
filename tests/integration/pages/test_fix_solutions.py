"""Fix page: the search meets the verdict's targets by default, and a steward picks among its solutions (no browser).

The verdict is the page's own (:func:`release_verdict` on the core's diagnosis of the fixed table); the solutions are
compared with the core's search called directly.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dashboard.pages import fix as page
from privdash.application import fixes
from privdash.application.fixes import SOLUTIONS_SHOWN, FixError, check_spec
from privdash.application.fixruns import FixRuns
from privdash.application.presentations import PRESENTATIONS
from privdash.application.riskview import release_verdict
from privdash.application.services import Services
from privdash.application.settings import Settings
from privdash.application.state import ViewState
from privdash.search.lattice import optimal_generalization
from privdash.targets import DEFAULT_MAX_SUPPRESSION
from tests.integration.pages.test_fix import find, texts

QIS = ["age", "sex", "postcode"]


@pytest.fixture
def services(tmp_path: Path) -> Services:
    return Services(Settings(store_dir=tmp_path / "store", cache_dir=tmp_path / "cache"))


@pytest.fixture
def base(services: Services) -> ViewState:
    state = services.initial_state(services.dataset("demo:people"), ViewState())
    return state.with_quasi_identifiers(QIS, ["diagnosis"])


def find_id(component: object, component_id: object) -> Any:
    """The component with ``component_id`` (a pattern-matching id) inside a layout tree."""
    if getattr(component, "id", None) == component_id:
        return component
    children = getattr(component, "children", None)
    for child in children if isinstance(children, list | tuple) else [children]:
        if child is not None and not isinstance(child, str | int | float):
            found = find_id(child, component_id)
            if found is not None:
                return found
    return None


def default_controls(base: ViewState, services: Services) -> dict[str, Any]:
    """The search panel's controls as the page first shows them."""
    panels = page.technique_panels(services.dataset("demo:people"), base, "search")
    values = {}
    for control, prop in page.CONTROLS.items():
        if control.startswith("fix-search-"):
            component = next(found for panel in panels if (found := find(panel, control)) is not None)
            values[control] = getattr(component, prop)
    return values


def test_the_default_search_meets_every_target_of_the_verdict(services: Services, base: ViewState) -> None:
    controls = default_controls(base, services)
    assert controls["fix-search-l"] and controls["fix-search-t"] and controls["fix-search-max-risk"]
    assert controls["fix-search-max-suppression"] == 100 * DEFAULT_MAX_SUPPRESSION
    spec = page.spec_from_controls("search", controls, base)
    assert (spec["k"], spec["l"], spec["t"], spec["max_risk"]) == (base.k, base.l, base.t, base.max_risk)
    runs = FixRuns(services)
    state = base.updated(fix=(spec,))
    run = runs.run(state)
    assert run.error is None
    verdict = release_verdict(runs.fixed_diagnosis(run, state), state)
    assert verdict.passed, verdict.sentence()
    sentence = fixes.cheapest_fix(run)
    assert sentence is not None and sentence.startswith("The cheapest fix found (least loss)")
    assert "Finer levels fail" in sentence
    # Unticked, the search ignores t: its fix then fails the verdict on t (what the default now avoids).
    loose = page.spec_from_controls("search", {**controls, "fix-search-t": False}, base)
    state = base.updated(fix=(loose,))
    run = runs.run(state)
    checks = {c.target: c.passed for c in release_verdict(runs.fixed_diagnosis(run, state), state).checks}
    assert checks["t"] is False


def test_one_default_suppression_limit_on_the_page_and_presentations(services: Services, base: ViewState) -> None:
    panels = page.technique_panels(services.dataset("demo:people"), base, "record_suppression")
    budget = next(
        found for panel in panels if (found := find(panel, "fix-record-suppression-max-suppression")) is not None
    )
    assert budget.value == 100 * DEFAULT_MAX_SUPPRESSION
    searches = [spec for p in PRESENTATIONS for spec in p.fix if spec["kind"] == "search"]
    assert searches and all(spec["max_suppression"] == DEFAULT_MAX_SUPPRESSION for spec in searches)
    assert all(spec["l"] is not None and spec["t"] is not None and spec["max_risk"] is not None for spec in searches)


def test_pick_in_a_spec() -> None:
    spec = {"kind": "search", "k": 5, "l": None, "t": None, "max_risk": None, "max_suppression": 0.05}
    assert "pick" not in check_spec({**spec, "pick": 1})
    assert check_spec({**spec, "pick": 3})["pick"] == 3
    for bad in (0, SOLUTIONS_SHOWN + 1, 1.5):
        with pytest.raises(FixError):
            check_spec({**spec, "pick": bad})


def test_pick_a_solution_and_it_becomes_the_step(services: Services, base: ViewState) -> None:
    spec = check_spec(
        {"kind": "search", "k": 5, "l": None, "t": None, "max_risk": 0.2, "max_suppression": 0.05, "metric": "loss"}
    )
    runs = FixRuns(services)
    state = base.updated(fix=(spec,))
    run = runs.run(state)
    card = page.solutions_card(run)
    table = find(card, "fix-solutions")
    assert table is not None and find(card, "fix-solutions-chart") is not None
    assert "on the frontier" in texts(card) and "Published" in texts(card)
    summary = run.results[0].summary["search"]
    assert len(summary["solutions"]) == SOLUTIONS_SHOWN and summary["pick"] == 1
    # Risks as percentages, as the risk cards say them.
    first = summary["solutions"][0]
    assert f"{100 * first['highest_risk']:.1f}%" in texts(table) and f"{100 * first['average_risk']:.1f}%" in texts(
        table
    )
    # The core's own search agrees on the solutions.
    data = services.dataset("demo:people").frame
    expected = optimal_generalization(
        data,
        {name: run.hierarchies[name] for name in QIS},
        quasi_identifiers=QIS,
        k=5,
        max_risk=0.2,
        max_suppression=0.05,
        solutions=SOLUTIONS_SHOWN,
    )
    assert [s["levels"] for s in summary["solutions"]] == [dict(s.levels) for s in expected.solutions]
    picked = page.pick_solution(state, 2)
    assert picked.fix[0]["pick"] == 2 and picked.to_dict() != state.to_dict()
    second = runs.run(picked)
    found = second.results[0].summary["search"]
    assert found["pick"] == 2 and found["levels"] == summary["solutions"][1]["levels"]
    columns = second.recipe.steps[0].params["columns"]
    assert {name: columns[name]["level"] for name in QIS} == summary["solutions"][1]["levels"]
    sentence = fixes.cheapest_fix(second)
    assert sentence is not None and sentence.startswith("The fix chosen (solution 2 of the search")
    assert "solution 2" in fixes.describe_spec(picked.fix[0])
    button = find_id(page.solutions_card(second), {"type": "fix-solution-pick", "index": 2})
    assert button is not None and button.disabled and button.children == "Published"
    # Back to the least lossy: the spec loses its choice.
    assert "pick" not in page.pick_solution(picked, 1).fix[0]
