"""Fix page: step specs, the step list applied with the core, builders and downloads (no browser).

Every outcome is checked with the core's own diagnosis of the fixed table.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from dashboard.pages import fix as page
from dashboard.ui.components import fmt_count
from privdash import cli
from privdash.application import fixes
from privdash.application.fixes import FixError, check_spec
from privdash.application.fixruns import FixRuns
from privdash.application.services import Services
from privdash.application.settings import Settings
from privdash.application.state import ViewState
from privdash.data.demo import people_contract, people_table
from privdash.measure.classes import MissingPolicy
from privdash.measure.diagnose import diagnose
from privdash.measure.risk import records_at_risk_by_k
from privdash.transform.hierarchy import default_rule
from privdash.transform.identifiers import KEY_ENV, key_fingerprint
from privdash.transform.steps import Recipe

AGE = {"kind": "generalize", "column": "age", "rule": {"builder": "intervals", "widths": [5, 10, 20]}, "level": 2}
DISTRICT = {
    "kind": "generalize",
    "column": "postcode",
    "rule": {"builder": "postcodes", "levels": ["district", "area"]},
}
DISTRICT = {**DISTRICT, "level": 2}
SUPPRESS = {"kind": "suppress_records", "k": 5, "max_suppression": 0.2}
QIS = ["age", "sex", "postcode"]


@pytest.fixture
def services(tmp_path: Path) -> Services:
    return Services(Settings(store_dir=tmp_path / "store", cache_dir=tmp_path / "cache"))


@pytest.fixture
def runs(services: Services) -> FixRuns:
    return FixRuns(services)


@pytest.fixture
def base(services: Services) -> ViewState:
    """The demo with age, sex and postcode as quasi-identifiers and the diagnosis as sensitive attribute."""
    state = services.initial_state(services.dataset("demo:people"), ViewState())
    return state.with_quasi_identifiers(QIS, ["diagnosis"])


def find(component: object, component_id: str) -> Any:
    """The component with ``component_id`` inside a layout tree."""
    if getattr(component, "id", None) == component_id:
        return component
    children = getattr(component, "children", None)
    for child in children if isinstance(children, list | tuple) else [children]:
        if child is not None and not isinstance(child, str | int | float):
            found = find(child, component_id)
            if found is not None:
                return found
    return None


def texts(component: object) -> str:
    """All text inside a layout tree, joined."""
    if isinstance(component, str | int | float):
        return str(component)
    children = getattr(component, "children", None)
    if children is None:
        return ""
    return " ".join(texts(c) for c in (children if isinstance(children, list | tuple) else [children]))


def card_value(layout: object, card_id: str) -> str:
    """The headline number of a stat card."""
    return str(find(layout, card_id).children[1].children)


def core_after(state: ViewState, run: fixes.FixRun, *, missing: MissingPolicy = MissingPolicy.VALUE) -> Any:
    """The core's diagnosis of the fixed table, on the state's QIs (those still present)."""
    qis = [c for c in state.quasi_identifiers if c in run.data.columns]
    return diagnose(run.data, qis, sensitive=list(state.sensitive), missing=missing)


# --- specs -----------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "spec",
    [
        AGE,
        {"kind": "generalize", "column": "age", "rule": {"builder": "quantiles", "bins": [8, 4]}, "level": 1},
        {"kind": "generalize", "column": "hair_colour", "rule": {"builder": "rare", "min_count": 50}, "level": 1},
        {"kind": "top_bottom", "column": "age", "top": 80, "bottom": None, "quantiles": False, "labels": True},
        SUPPRESS,
        {"kind": "suppress_cells", "k": 3, "importance": ["sex"]},
        {"kind": "microaggregate", "k": 5, "decimals": 0},
        {"kind": "drop", "columns": ["name"]},
        {"kind": "mask", "columns": ["phone"], "first": 2, "last": 0},
        {"kind": "pseudonymize", "columns": ["email"], "length": 16},
        {"kind": "search", "k": 5, "l": None, "t": None, "max_risk": 0.2, "max_suppression": 0.05, "metric": "loss"},
    ],
)
def test_valid_specs_survive_validation_and_the_link(spec: dict[str, Any], base: ViewState) -> None:
    checked = check_spec(spec)
    assert checked["kind"] == spec["kind"]
    state = base.updated(fix=(checked,))
    assert ViewState.decode(state.encode()).fix == (checked,)
    assert check_spec(checked) == checked


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"kind": "blur"}, "needs a 'kind'"),
        ({"kind": "generalize", "column": "age", "rule": {"builder": "intervals", "widths": [5]}}, "needs level"),
        ({**AGE, "level": -1}, "at least 0"),
        ({**AGE, "rule": {"builder": "wavelets"}}, "needs a 'builder'"),
        ({**AGE, "rule": {"builder": "intervals", "widths": [5, -10]}}, "must be positive"),
        ({**AGE, "rule": {"builder": "rare", "min_count": 5, "keep": ["Smith"]}}, "unknown setting(s) keep"),
        ({**SUPPRESS, "max_suppression": 1.5}, "between 0 and 1"),
        ({**SUPPRESS, "k": 1}, "at least 2"),
        ({**SUPPRESS, "values": [1, 2]}, "unknown setting(s) values"),
        ({"kind": "top_bottom", "column": "age"}, "a top or a bottom threshold"),
        ({"kind": "drop", "columns": []}, "at least one column"),
        ({"kind": "pseudonymize", "columns": ["email"], "length": 100}, "at most 64"),
        ({"kind": "search", "k": 5, "max_suppression": 0.1, "metric": "beauty"}, "Unknown metric"),
    ],
)
def test_bad_specs_give_a_message(spec: dict[str, Any], message: str) -> None:
    with pytest.raises(FixError) as caught:
        check_spec(spec)
    assert message in str(caught.value)


def test_a_malformed_step_in_a_link_is_reported(runs: FixRuns, base: ViewState) -> None:
    state = base.updated(fix=(AGE, {"kind": "generalize", "column": "age"}))
    listed = page.step_list(state)
    assert "Malformed step" in texts(listed) and "needs rule, level" in texts(listed)
    body = page.preview(runs, state)
    alert = find(body, "fix-step-error")
    assert alert is not None and "Step 2" in texts(alert)
    # The valid first step is still applied and shown.
    assert find(body, "fix-after-k") is not None


def test_rules_from_the_text_field() -> None:
    assert fixes.rule_from_text("intervals", "5, 10, 20") == {"builder": "intervals", "widths": [5, 10, 20]}
    assert fixes.rule_from_text("dates", "Month, year") == {"builder": "dates", "levels": ["month", "year"]}
    assert fixes.rule_from_text("rare", "25") == {"builder": "rare", "min_count": 25}
    for builder, text in (("intervals", "five"), ("quantiles", ""), ("dates", "week"), ("masking", "1, 2")):
        with pytest.raises(FixError):
            fixes.rule_from_text(builder, text)
    rule = default_rule(people_table(500)["age"], people_contract()["age"].statistical_type)
    assert rule == {"builder": "intervals", "widths": [5, 10, 20]}
    assert fixes.rule_text(rule) == "5, 10, 20"


def test_controls_make_specs(base: ViewState) -> None:
    values = {"fix-rs-k": 5, "fix-rs-budget": 10}
    assert page.spec_from_controls("suppress_records", values, base) == {
        "kind": "suppress_records",
        "k": 5,
        "max_suppression": 0.1,
    }
    spec = page.spec_from_controls(
        "generalize",
        {"fix-gen-column": "age", "fix-gen-builder": "intervals", "fix-gen-param": "10, 20", "fix-gen-level": 1},
        base,
    )
    assert spec == {
        "kind": "generalize",
        "column": "age",
        "rule": {"builder": "intervals", "widths": [10, 20]},
        "level": 1,
    }
    search = page.spec_from_controls(
        "search",
        {"fix-search-k": 4, "fix-search-risk": True, "fix-search-suppression": 2, "fix-search-metric": "aecs"},
        base,
    )
    assert search == {
        "kind": "search",
        "k": 4,
        "l": None,
        "t": None,
        "max_risk": base.max_risk,
        "max_suppression": 0.02,
        "metric": "aecs",
    }
    with pytest.raises(FixError, match="Give k"):
        page.spec_from_controls("microaggregate", {}, base)
    with pytest.raises(FixError, match="Choose the column"):
        page.spec_from_controls("generalize", {"fix-gen-builder": "intervals"}, base)


# --- the step list against the core --------------------------------------------------------------------------------


def test_generalize_then_suppress_reaches_k(runs: FixRuns, base: ViewState) -> None:
    state = base.updated(fix=(AGE, DISTRICT, SUPPRESS))
    run = runs.run(state)
    assert run.error is None and len(run.results) == 3
    summary = run.results[-1].summary
    assert summary["target_reached"]
    assert run.rows_removed == summary["rows_removed"] == len(run.original) - len(run.data) > 0
    assert summary["rows_removed"] <= 0.2 * len(run.original)
    expected = core_after(state, run)
    assert expected.k >= 5
    shown = runs.fixed_diagnosis(run, state)
    assert shown.k == expected.k and shown.n_records == len(run.data)
    # Rows kept are the original rows, in order, with their untouched columns unchanged.
    assert run.kept_rows is not None
    kept = run.original.iloc[run.kept_rows]
    assert kept["customer_id"].tolist() == run.data["customer_id"].tolist()
    assert set(run.data["age"]) <= {f"{low}-{low + 9}" for low in range(10, 100, 10)}
    # The after card shows the core's k.
    cards = page.risk_cards(shown, state, "after")
    assert card_value(cards, "fix-after-k") == fmt_count(expected.k)


def test_undo_restores_the_previous_table(runs: FixRuns, base: ViewState) -> None:
    longer = base.updated(fix=(AGE, SUPPRESS))
    shorter = longer.updated(fix=longer.fix[:-1])
    assert runs.run(shorter).data.equals(runs.run(base.updated(fix=(AGE,))).data)
    assert len(runs.run(shorter).data) == 5000 > len(runs.run(longer).data)


def test_cell_suppression_is_judged_with_wildcards(runs: FixRuns, base: ViewState) -> None:
    state = base.updated(fix=(AGE, DISTRICT, {"kind": "suppress_cells", "k": 3, "importance": []}))
    run = runs.run(state)
    assert run.error is None and run.wildcard
    assert len(run.data) == len(run.original)
    blanked = int(run.data[QIS].isna().sum().sum())
    assert blanked > run.original[QIS].isna().sum().sum()
    assert core_after(state, run, missing=MissingPolicy.WILDCARD).k >= 3
    assert runs.fixed_diagnosis(run, state).k >= 3


def test_microaggregation_reaches_k_and_has_no_mapping(runs: FixRuns, base: ViewState) -> None:
    state = base.updated(fix=({"kind": "microaggregate", "k": 5, "decimals": 0},))
    assert fixes.is_slow(state.fix) and not runs.ready(state)
    run = runs.run(state)
    assert run.error is None
    assert core_after(state, run).k >= 5
    assert run.mapping().empty
    # The run is now on disk: the page renders it without a background job.
    assert runs.ready(state)
    assert find(page.loss_table(run), "fix-loss-undefined") is not None


def test_least_lossy_search_meets_the_targets(runs: FixRuns, base: ViewState) -> None:
    spec = {"kind": "search", "k": 5, "l": None, "t": None, "max_risk": None, "max_suppression": 0.05, "metric": "loss"}
    state = base.updated(fix=(spec,))
    run = runs.run(state)
    assert run.error is None
    assert core_after(state, run).k >= 5
    assert run.rows_removed <= 0.05 * len(run.original)
    assert run.recipe.steps[0].kind == "generalize"
    before, after = fixes.information_loss_pair(run)
    assert before.loss == 0 and 0 < after.loss <= 1


def test_identifiers_and_the_pseudonym_key(
    runs: FixRuns, base: ViewState, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)
    ok, text = fixes.key_status(None)
    assert not ok and KEY_ENV in text
    spec = {"kind": "pseudonymize", "columns": ["email"], "length": 16}
    new_state, message = page.add_spec(runs, base, "pseudonymize", {"fix-ps-columns": ["email"]})
    assert new_state == base and message is not None and KEY_ENV in message
    key = "a-test-key-of-enough-length-123"
    monkeypatch.setenv(KEY_ENV, key)
    assert fixes.key_status(key) == (True, f"Key from {KEY_ENV}, fingerprint {key_fingerprint(key)}.")
    # The key comes from the settings; the run and its recipe keep its fingerprint only.
    keyed = FixRuns(Services(Settings(store_dir=tmp_path / "store", cache_dir=tmp_path / "cache", pseudonym_key=key)))
    state = base.updated(fix=({"kind": "drop", "columns": ["name", "phone"]}, spec))
    run = keyed.run(state)
    assert run.error is None
    assert "name" not in run.data.columns and "phone" not in run.data.columns
    assert run.data["email"].str.fullmatch(r"[0-9a-f]{16}").all()
    assert run.data["email"].nunique() == run.original["email"].nunique()
    assert key not in run.recipe.to_json() and key_fingerprint(key) in run.recipe.to_json()
    # The same list without a key is another run (not the cached one), and fails with the core's message.
    assert keyed.state_key(state) != runs.state_key(state)
    assert runs.run(state).error is not None and KEY_ENV in str(runs.run(state).error)


def test_add_spec_refuses_a_step_the_core_refuses(runs: FixRuns, base: ViewState) -> None:
    values = {"fix-gen-column": "sex", "fix-gen-builder": "intervals", "fix-gen-param": "5", "fix-gen-level": 1}
    state, message = page.add_spec(runs, base, "generalize", values)
    assert state == base and message is not None and "needs numbers" in message
    values = {**values, "fix-gen-column": "age", "fix-gen-level": 9}
    state, message = page.add_spec(runs, base, "generalize", values)
    assert state == base and message is not None and "between 0 and 2" in message
    state, message = page.add_spec(runs, base, "suppress_records", {"fix-rs-k": 5, "fix-rs-budget": 5})
    assert message is None and state.fix == (SUPPRESS | {"max_suppression": 0.05},)


def test_mapping_composes_steps(runs: FixRuns, base: ViewState) -> None:
    top = {"kind": "top_bottom", "column": "age", "top": 90, "bottom": None, "quantiles": False, "labels": False}
    age5 = {**AGE, "level": 1}
    state = base.updated(fix=(top, age5))
    run = runs.run(state)
    mapping = run.mapping()
    age = mapping[mapping["column"] == "age"].set_index("original")["published"]
    over = run.original.loc[run.original["age"] > 90, "age"].iloc[0]
    assert age[over] == "90-94"
    assert age[23] == "20-24"
    # Each original value appears once, and applying the mapping gives the published column.
    assert age.index.is_unique
    assert (run.original["age"].map(age) == run.data["age"]).all()


# --- builders ------------------------------------------------------------------------------------------------------


def test_layout_without_dataset_and_with_a_bad_link(services: Services) -> None:
    body = page.layout(services, s=ViewState(dataset="demo:nothing").encode())
    assert "No dataset is open" in texts(body)
    bad = page.layout(services, s="not-a-state")
    assert find(bad, "state-error") is not None


def test_layout_shows_before_and_after(services: Services, runs: FixRuns, base: ViewState) -> None:
    state = base.updated(fix=(AGE, DISTRICT, SUPPRESS))
    body = page.layout(services, s=state.encode())
    run = runs.run(state)
    before = services.diagnosis(state)
    assert card_value(body, "fix-before-k") == fmt_count(before.k)
    assert card_value(body, "fix-after-k") == fmt_count(core_after(state, run).k)
    assert find(body, "fix-step-list") is not None and len(find(body, "fix-step-list").children) == 3
    assert find(body, "fix-loss-table") is not None
    assert find(body, "fix-initial-request").data is None


def test_slow_lists_go_to_the_background(services: Services, runs: FixRuns, base: ViewState) -> None:
    state = base.updated(fix=({"kind": "microaggregate", "k": 5, "decimals": None},))
    body = page.layout(services, s=state.encode())
    assert find(body, "fix-results").children is None
    assert find(body, "fix-initial-request").data == state.to_dict()
    assert "background" in texts(find(body, "fix-slow-results"))
    # The waiting text goes where the job's result goes (fix-slow-results), so the result replaces it.
    results, slow, _, request = page._refresh(runs, state, None)
    assert request == state.to_dict() and results is None and "background" in texts(slow)


def test_suppression_curve_follows_the_classes(services: Services, runs: FixRuns, base: ViewState) -> None:
    state = base.updated(fix=(AGE, DISTRICT))
    run = runs.run(state)
    after = runs.fixed_diagnosis(run, state)
    fig = page.suppression_curve(services.diagnosis(state), after, state.k)
    trace = fig.data[1]
    curve = records_at_risk_by_k(after.classes, page.CURVE_K)
    assert list(trace.x) == list(page.CURVE_K)
    assert np.allclose(trace.y, 100 * curve.fraction)
    assert trace.customdata[4] == after.classes.records_below(5)


def test_distribution_and_classifier(runs: FixRuns, base: ViewState) -> None:
    state = base.updated(fix=(AGE,))
    run = runs.run(state)
    fig = page.distribution_figure(run, "age")
    before = dict(zip(fig.data[0].x, fig.data[0].y, strict=True))
    after = dict(zip(fig.data[1].x, fig.data[1].y, strict=True))
    assert after["20-29"] == int(run.original["age"].between(20, 29).sum())
    common = int(run.original["age"].mode()[0])
    assert before[str(common)] == int((run.original["age"] == common).sum())
    assert list(after) == sorted(after, key=lambda label: int(label.split("-")[0]))
    view = page.classifier_view(run, "diagnosis")
    assert "accuracy" in texts(view)


# --- downloads -----------------------------------------------------------------------------------------------------


def test_downloads_carry_the_fixed_table(runs: FixRuns, base: ViewState) -> None:
    state = base.updated(fix=(AGE, DISTRICT, SUPPRESS))
    run = runs.run(state)
    csv = page.download_payload(run, "csv", "people")
    assert csv["filename"] == "people-fixed.csv"
    table = pd.read_csv(io.StringIO(csv["content"]))
    assert len(table) == len(run.data) and list(table.columns) == list(run.data.columns)
    parquet = page.download_payload(run, "parquet", "people")
    import base64

    assert pd.read_parquet(io.BytesIO(base64.b64decode(parquet["content"]))).shape == run.data.shape
    mapping = pd.read_csv(io.StringIO(page.download_payload(run, "mapping", "people")["content"]))
    assert list(mapping.columns) == ["column", "original", "published"]
    assert set(mapping["column"]) == {"age", "postcode"}
    recipe = Recipe.from_dict(json.loads(page.download_payload(run, "recipe", "people")["content"]))
    assert [s.kind for s in recipe.steps] == ["generalize", "generalize", "record_suppression"]
    # Settings only in the link: no data value of the table appears in the state.
    link = json.dumps(state.to_dict())
    assert "SW1A" not in link and "C000001" not in link


def test_recipe_reapplied_by_the_cli_gives_the_same_table(
    runs: FixRuns, base: ViewState, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    steps = (
        {"kind": "drop", "columns": ["name", "email", "phone"]},
        {"kind": "generalize", "column": "hair_colour", "rule": {"builder": "rare", "min_count": 300}, "level": 1},
        {**AGE, "rule": {"builder": "quantiles", "bins": [8, 4, 2]}, "level": 1},
        DISTRICT,
        SUPPRESS,
    )
    state = base.updated(fix=steps)
    run = runs.run(state)
    assert run.error is None
    source = tmp_path / "people.parquet"
    run.original.to_parquet(source, index=False)
    recipe = tmp_path / "recipe.json"
    recipe.write_text(page.download_payload(run, "recipe", "people")["content"], encoding="utf-8")
    out = tmp_path / "out.csv"
    assert cli.main(["anonymize", "--recipe", str(recipe), str(source), "-o", str(out)]) == 0
    assert "5 step(s)" in capsys.readouterr().out
    from_cli = pd.read_csv(out)
    from_page = pd.read_csv(io.StringIO(page.download_payload(run, "csv", "people")["content"]))
    pd.testing.assert_frame_equal(from_cli, from_page)


def test_csv_downloads_are_safe_to_open_in_a_spreadsheet() -> None:
    frame = people_table().head(200).copy()
    frame["diagnosis"] = ['=HYPERLINK("http://127.0.0.1/x","y")' if i % 3 == 0 else "none" for i in range(200)]
    frame["hair_colour"] = ["@SUM(A1:A9)" if i % 4 == 0 else "grey" for i in range(200)]
    rule = {"builder": "rare", "min_count": 500}
    spec = {"kind": "generalize", "column": "hair_colour", "rule": rule, "level": 0}
    run = fixes.run_fixes(frame, people_contract(), MissingPolicy.VALUE, [spec])
    assert run.error is None
    table = pd.read_csv(io.StringIO(page.download_payload(run, "csv", "people")["content"]), dtype=str)
    assert set(table["diagnosis"]) == {'\'=HYPERLINK("http://127.0.0.1/x","y")', "none"}
    assert set(table["hair_colour"]) == {"'@SUM(A1:A9)", "grey"}
    mapping = pd.read_csv(io.StringIO(page.download_payload(run, "mapping", "people")["content"]), dtype=str)
    assert not mapping["original"].str.startswith(("=", "@", "+", "-")).any()
    parquet = page.download_payload(run, "parquet", "people")  # a typed format: the exact values
    import base64

    exact = pd.read_parquet(io.BytesIO(base64.b64decode(parquet["content"])))
    assert exact["diagnosis"].iloc[0].startswith("=HYPERLINK")
