"""Fix page: local recoding as the search's recoding, and the steward's estimates of each solution (no browser).

The local recoding is compared with the core's :func:`local_recoding` called directly and its published table with
the core's diagnosis; each solution's estimates with the estimates of the run that publishes that solution.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from dashboard.pages import fix as page
from privdash.application import fixes
from privdash.application.estimates import read_estimates, run_estimates, run_solution_estimates
from privdash.application.fixes import FixError, check_spec, reapply_recipe
from privdash.application.fixruns import FixRuns
from privdash.application.riskview import release_verdict
from privdash.application.services import Services
from privdash.application.settings import Settings
from privdash.application.state import ViewState
from privdash.measure.classes import equivalence_classes
from privdash.search.local import local_recoding
from tests.integration.pages.test_fix import find, texts
from tests.integration.pages.test_fix_solutions import default_controls

QIS = ["age", "sex", "postcode"]
ESTIMATES = "mean:age\nshare:sex\nmean:transaction_amount by sex"


@pytest.fixture
def services(tmp_path: Path) -> Services:
    return Services(Settings(store_dir=tmp_path / "store", cache_dir=tmp_path / "cache"))


@pytest.fixture
def base(services: Services) -> ViewState:
    state = services.initial_state(services.dataset("demo:people"), ViewState())
    return state.with_quasi_identifiers(QIS, ["diagnosis"])


def test_the_recoding_choice_is_labelled_and_global_by_default(services: Services, base: ViewState) -> None:
    controls = default_controls(base, services)
    assert controls["fix-search-recoding"] == "global"
    panels = page.technique_panels(services.dataset("demo:people"), base, "search")
    choice = next(found for panel in panels if (found := find(panel, "fix-search-recoding")) is not None)
    radios = choice.children.children
    assert choice.label == "Recoding" and [radio.value for radio in radios] == ["global", "local"]
    assert all(radio.label for radio in radios)
    assert "recoding" not in page.spec_from_controls("search", controls, base)


def test_local_recoding_spec() -> None:
    spec = {"kind": "search", "k": 5, "l": None, "t": None, "max_risk": None, "max_suppression": 0.05}
    assert "recoding" not in check_spec({**spec, "recoding": "global"})
    assert check_spec({**spec, "recoding": "local"})["recoding"] == "local"
    for bad in ({"recoding": "partial"}, {"recoding": "local", "pick": 2}):
        with pytest.raises(FixError):
            check_spec({**spec, **bad})
    assert fixes.describe_spec(check_spec({**spec, "recoding": "local"})).startswith("Least-lossy local recoding")


def test_local_recoding_from_the_controls(services: Services, base: ViewState) -> None:
    controls = {**default_controls(base, services), "fix-search-recoding": "local"}
    spec = page.spec_from_controls("search", controls, base)
    assert spec["recoding"] == "local"
    runs = FixRuns(services)
    state = base.updated(fix=(spec,))
    run = runs.run(state)
    assert run.error is None
    result = run.results[0]
    assert result.step.kind == "local_recoding" and run.recipe.steps[0].kind == "local_recoding"
    # The core's local recoding with the same targets and hierarchies publishes the same table.
    data = services.dataset("demo:people").frame
    direct = local_recoding(
        data,
        {name: run.hierarchies[name] for name in QIS},
        quasi_identifiers=QIS,
        k=spec["k"],
        l=spec["l"],
        t=spec["t"],
        sensitive=["diagnosis"],
        max_risk=spec["max_risk"],
        max_suppression=spec["max_suppression"],
    )
    pd.testing.assert_frame_equal(run.data, direct.data)
    found = result.summary["search"]
    assert found["recoding"] == "local" and found["loss"] == pytest.approx(direct.value)
    assert found["loss"] <= found["global_loss"] + 1e-12
    # Published as it is, the table is k-anonymous (and meets the verdict) by the core's diagnosis.
    diagnosis = runs.fixed_diagnosis(run, state)
    assert diagnosis.classes.k >= spec["k"]
    assert equivalence_classes(run.data, QIS).k >= spec["k"]
    verdict = release_verdict(diagnosis, state)
    assert verdict.passed, verdict.sentence()
    # Some column mixes levels, which the step list and the verdict say.
    assert any(sum(1 for count in levels.values() if count) > 1 for levels in found["levels"].values())
    described = fixes.describe_result(spec, result)
    assert described.startswith("local recoding, levels") and "global optimum" in described
    sentence = fixes.cheapest_fix(run)
    assert sentence is not None and sentence.startswith("The cheapest fix found (local recoding, least loss)")
    # No solutions to pick from; the downloads: the recipe reproduces the table, the mapping lists each pair.
    assert page.solutions_card(run) is None
    recipe = page.download_payload(run, "recipe", "people")["content"]
    outcome = reapply_recipe(data, recipe)
    pd.testing.assert_frame_equal(outcome.data.reset_index(drop=True), run.data.reset_index(drop=True))
    mapping = run.mapping()
    kept = data.iloc[run.kept_rows] if run.kept_rows is not None else data
    for name in ("age", "postcode"):
        block = mapping[mapping["column"] == name]
        pairs = set(zip(kept[name].astype(str), run.data[name].astype(str), strict=True))
        assert set(zip(block["original"].astype(str), block["published"].astype(str), strict=True)) == pairs
    assert "local recoding" in texts(page.steps_table(run))


def test_the_estimates_of_each_solution(services: Services, base: ViewState) -> None:
    spec = check_spec(
        {"kind": "search", "k": 5, "l": None, "t": None, "max_risk": 0.2, "max_suppression": 0.05, "metric": "loss"}
    )
    runs = FixRuns(services)
    state = base.updated(fix=({"kind": "drop_identifiers", "columns": ["name", "email"]}, spec))
    run = runs.run(state)
    assert run.error is None
    specs = read_estimates(ESTIMATES)
    compared = run_solution_estimates(run, specs)
    solutions = run.results[-1].summary["search"]["solutions"]
    assert [each.levels for each in compared] == [s["levels"] for s in solutions]
    for each in compared:
        # The same numbers as the run that publishes this solution (the search run again with its pick).
        picked = runs.run(page.pick_solution(state, each.number))
        direct = run_estimates(picked, specs)
        assert [c.to_dict() for c in each.comparisons] == [c.to_dict() for c in direct]
    assert len({each.mean_overlap for each in compared}) > 1
    # The page: without estimates a message; with them the table gains the overlaps, and the numbers are listed.
    table, message = page.compare_solutions(runs, state, "")
    assert "Name the estimates first" in texts(message)
    table, view = page.compare_solutions(runs, state, ESTIMATES)
    shown = texts(table)
    assert "estimates: mean / lowest overlap" in shown
    for each in compared:
        assert f"{page.fmt_overlap(each.mean_overlap)}  /  {page.fmt_overlap(each.lowest_overlap)}" in shown
    # A solution that publishes a column as * leaves an estimate of it not computable, and the table says so.
    blind = [each for each in compared if each.not_computable]
    assert blind and all(f"{each.not_computable} not computable" in shown for each in blind)
    assert find(view, "fix-solution-estimates-table") is not None
    assert "mean of transaction_amount" in texts(view) and "#5: after" in texts(view)
    with pytest.raises(FixError):
        run_solution_estimates(runs.run(base.updated(fix=({"kind": "drop_identifiers", "columns": ["name"]},))), specs)
