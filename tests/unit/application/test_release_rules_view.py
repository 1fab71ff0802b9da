"""The release rules beyond k on the Risk and Fix pages' application layer: the text the input takes, the verdict
and headlines of a view state carrying them, and the Fix page's least-lossy search meeting them (and judging people
when the contract marks a person id)."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

from privdash.application import fixes, riskview
from privdash.application.fixruns import FixRuns
from privdash.application.services import Services
from privdash.application.settings import Settings
from privdash.application.state import StateError, ViewState
from privdash.data.contract import ColumnRole
from privdash.data.tables import read_table
from privdash.measure.diagnose import diagnose
from privdash.targets import PrivacyTargets

KEYS = ["urbrur", "roof", "walls", "water", "electcon", "relat", "sex"]
#: sdcMicro's global risk of testdata.csv on KEYS with weight sampling_weight (measure_risk(...)$global$risk), the
#: value the core's tests check against sdcMicro (tests/unit/core/measure/test_risk.py).
SDCMICRO_GLOBAL_RISK = 0.00235


@pytest.fixture
def services(tmp_path: Path) -> Services:
    return Services(Settings(store_dir=tmp_path / "store", cache_dir=tmp_path / "cache"))


@pytest.fixture
def survey(services: Services, data_dir: Path) -> ViewState:
    """testdata.csv uploaded, KEYS as quasi-identifiers; the weight and household roles are suggested by name."""
    raw = (data_dir / "sdcmicro_testdata" / "testdata.csv").read_bytes()
    loaded = services.dataset(services.ingest(raw, filename="testdata.csv", session="s" * 40).id)
    state = services.initial_state(loaded).with_quasi_identifiers(KEYS, [])
    assert state.roles["sampling_weight"] == ColumnRole.WEIGHT and state.roles["ori_hid"] == ColumnRole.HOUSEHOLD
    return state


# --- the text of the input ------------------------------------------------------------------------------------------


def test_release_rules_read_the_command_line_syntax() -> None:
    text = "global_risk=0.03; household_risk=0.05, population_uniques=0.01, population_uniques_estimator=PITMAN"
    rules = riskview.release_rules(text)
    assert rules == {
        "global_risk": 0.03,
        "household_risk": 0.05,
        "population_uniques": 0.01,
        "population_uniques_estimator": "pitman",
    }
    assert riskview.release_rules(riskview.release_rules_text(rules)) == rules
    assert riskview.release_rules("") == {} == riskview.release_rules("  ") == riskview.release_rules(None)
    assert riskview.release_rules_text({"k_map": 3, "delta_presence": 0.5}) == "k_map=3, delta_presence=0.5"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("k=3", "k has its own input"),
        ("risk=0.1, global_risk=0.01", "max_risk has its own input"),
        ("l=2, t=0.3", "l, t have their own input"),
        ("globalrisk=0.01", "Cannot read the target 'globalrisk=0.01'"),
        ("global_risk=2", "global_risk must lie in"),
        ("k_map=2.5", "k_map must be a whole number"),
        ("global_risk=0.01, global_risk=0.02", "given twice"),
        ("population_uniques_estimator=pitman", "without a population_uniques target"),
    ],
)
def test_release_rules_explain_what_cannot_be_read(text: str, message: str) -> None:
    with pytest.raises(StateError, match=message):
        riskview.release_rules(text)


# --- the state with release rules -> verdict and headlines -----------------------------------------------------------


def test_the_verdict_judges_the_release_rules_of_the_state(
    services: Services, survey: ViewState, data_dir: Path
) -> None:
    state = survey.updated(k=1, release={"global_risk": 0.002, "household_risk": 0.05, "k_map": 3})
    assert ViewState.decode(state.encode()).release == state.release  # the rules survive the link
    diagnosis = services.diagnosis(state)
    verdict = riskview.release_verdict(diagnosis, state)
    checks = {check.target: check for check in verdict.checks}
    assert list(checks) == ["k", "max_risk", "global_risk", "household_risk", "k_map"]
    # the measured values are the diagnosis's (sdcMicro's global risk), judged non-strictly
    assert checks["global_risk"].achieved == pytest.approx(SDCMICRO_GLOBAL_RISK, abs=5e-6)
    assert checks["global_risk"].passed is False
    assert checks["household_risk"].achieved == pytest.approx(diagnosis.household_risk.global_risk)
    assert checks["household_risk"].passed is True
    assert checks["k_map"].passed is True and checks["k_map"].achieved >= 3
    independent = diagnose(
        read_table(data_dir / "sdcmicro_testdata" / "testdata.csv"),
        KEYS,
        weights="sampling_weight",
        household="ori_hid",
    ).check(PrivacyTargets(k=1, max_risk=state.max_risk, global_risk=0.002, household_risk=0.05, k_map=3))
    assert [(c.target, c.passed) for c in independent.checks] == [(c.target, c.passed) for c in verdict.checks]
    # one headline per rule, with its measured value and verdict
    headlines = {h.key: h for h in riskview.risk_headlines(diagnosis, state)}
    assert headlines["release-global_risk"].passed is False and headlines["release-global_risk"].value == "0.24%"
    assert headlines["release-household_risk"].passed is True
    assert "population from the sampling weights in 'sampling_weight'" in headlines["release-k_map"].detail
    # a looser rule passes
    looser = state.updated(release={"global_risk": 0.003})
    assert riskview.release_verdict(services.diagnosis(looser), looser).failed[-1].target == "max_risk"


def test_rules_that_cannot_be_measured_fail_and_say_why(services: Services, survey: ViewState) -> None:
    state = survey.with_columns(
        roles={"sampling_weight": ColumnRole.INSENSITIVE, "ori_hid": ColumnRole.INSENSITIVE}
    ).updated(k=1, max_risk=0, release={"household_risk": 0.5, "k_map": 2, "delta_presence": 0.5, "average_risk": 1})
    diagnosis = services.diagnosis(state)
    verdict = riskview.release_verdict(diagnosis, state)
    checks = {check.target: check for check in verdict.checks}
    assert verdict.passed is False and checks["average_risk"].passed is True
    for name in ("household_risk", "k_map", "delta_presence"):
        assert checks[name].passed is False and math.isnan(checks[name].achieved)
    assert "role 'household'" in checks["household_risk"].reason
    assert "no population: give a column the role 'weight'" in checks["k_map"].reason
    headlines = {h.key: h for h in riskview.release_headlines(diagnosis, state)}
    assert headlines["release-k_map"].value == "-" and headlines["release-k_map"].passed is False
    assert "not measured: no population" in headlines["release-k_map"].detail
    assert "not measured: no household column" in headlines["release-household_risk"].detail
    # the card names the measure as the survey table and the report do (the rule and its target are in the detail)
    assert headlines["release-household_risk"].label == "Household risk"


# --- the Fix page's search ------------------------------------------------------------------------------------------


def search_spec(**extra: object) -> dict[str, object]:
    return {"kind": "search", "k": 1, "max_suppression": 0.05, "metric": "loss", **extra}


def test_the_fix_search_meets_global_risk(services: Services, survey: ViewState) -> None:
    runs = FixRuns(services)
    rules = {"global_risk": 0.002}
    state = survey.updated(k=1, max_risk=0, release=rules)
    before = riskview.release_verdict(services.diagnosis(state), state)
    assert not before.passed and before.failed[0].target == "global_risk"  # 0.00235 > 0.002: a fix is needed
    fixed = state.updated(fix=(fixes.check_spec(search_spec(release=rules)),))
    run = runs.run(fixed)
    assert run.error is None
    assert run.specs[0]["release"] == rules
    assert run.rows_removed <= 0.05 * len(run.original)
    after = runs.fixed_diagnosis(run, fixed)
    verdict = riskview.release_verdict(after, fixed)
    assert verdict.passed, verdict.sentence()
    # the same numbers from the core on the published table, with the weights (not a row loop of the page's)
    published = diagnose(run.data, KEYS, weights="sampling_weight", household="ori_hid")
    assert published.individual_risk.global_risk <= 0.002
    assert verdict.checks[-1].achieved == pytest.approx(published.individual_risk.global_risk)
    # without the rule, the search has nothing to do: k = 1 is met as it is
    plain = runs.run(state.updated(release={}, fix=(fixes.check_spec(search_spec()),)))
    assert plain.rows_removed == 0 and plain.data[KEYS].equals(plain.original[KEYS])
    assert "global_risk ≤ 0.002" in fixes.describe_spec(run.specs[0])


def test_release_rules_in_a_search_spec_are_checked() -> None:
    assert fixes.check_spec(search_spec(release={}))  # no rule: no key
    assert "release" not in fixes.check_spec(search_spec(release={}))
    with pytest.raises(fixes.FixError, match="Unknown release rule"):
        fixes.check_spec(search_spec(release={"k": 3}))
    with pytest.raises(fixes.FixError, match="global_risk must lie in"):
        fixes.check_spec(search_spec(release={"global_risk": 5}))
    with pytest.raises(fixes.FixError, match="global recoding search only"):
        fixes.check_spec(search_spec(release={"global_risk": 0.01}, recoding="local"))


@pytest.fixture
def wards(services: Services) -> ViewState:
    """Person 1 visits ward x twice; 2 and 12 visit {x, z}; 3 and 13 {y, z}; 11 and 14 {x, y}: every ward has at
    least two rows (2-anonymous on rows), but on people person 1 is unique at level 0 (tests of anonymize --entity)."""
    frame = pd.DataFrame(
        {
            "pid": [1, 1, 2, 2, 3, 3, 11, 11, 12, 12, 13, 13, 14, 14],
            "ward": ["x", "x", "x", "z", "y", "z", "x", "y", "x", "z", "y", "z", "x", "y"],
        }
    )
    raw = frame.to_csv(index=False).encode()
    loaded = services.dataset(services.ingest(raw, filename="wards.csv", session="w" * 40).id)
    state = services.initial_state(loaded).with_columns(roles={"pid": ColumnRole.ENTITY})
    return state.with_quasi_identifiers(["ward"], []).updated(k=2, max_risk=0)


def test_the_fix_search_judges_people_with_a_person_id(services: Services, wards: ViewState) -> None:
    runs = FixRuns(services)
    spec = fixes.check_spec({"kind": "search", "k": 2, "max_suppression": 0.2, "metric": "loss"})
    before = services.diagnosis(wards)
    assert before.entity == "pid" and before.k == 1  # person 1 is alone among the people
    fixed = wards.updated(fix=(spec,))
    run = runs.run(fixed)
    assert run.error is None
    # whole people removed: person 1's two rows (on rows the table is 2-anonymous and needs nothing)
    assert sorted(set(run.data["pid"])) == [2, 3, 11, 12, 13, 14] and run.rows_removed == 2
    after = runs.fixed_diagnosis(run, fixed)
    assert after.entity == "pid" and after.k == 2 and after.n_records == 6  # counted in people
    assert riskview.release_verdict(after, fixed).passed
    assert diagnose(run.data, ["ward"], entity="pid").k == 2  # the core, independently
    summary = run.results[0].summary["search"]
    assert summary["entity"] == "pid" and summary["people_suppressed"] == 1
    assert "judged on people ('pid')" in fixes.describe_result(run.specs[0], run.results[0])
    rows = runs.run(wards.with_columns(roles={"pid": ColumnRole.INSENSITIVE}).updated(fix=(spec,)))
    assert rows.error is None and rows.rows_removed == 0


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"pick": 2}, "a pick among several solutions"),
        ({"recoding": "local"}, "local recoding"),
        ({"release": {"average_risk": 0.5}}, "the release rules average_risk"),
    ],
)
def test_people_search_refuses_what_it_does_not_take(
    services: Services, wards: ViewState, extra: dict[str, object], message: str
) -> None:
    spec = fixes.check_spec({"kind": "search", "k": 2, "max_suppression": 0.2, "metric": "loss", **extra})
    run = FixRuns(services).run(wards.updated(fix=(spec,)))
    assert run.error is not None and message in run.error and "person id 'pid'" in run.error


def test_fix_record_suppression_meets_the_risk_rules(services: Services, survey: ViewState) -> None:
    from dashboard.pages import fix as page

    runs = FixRuns(services)
    rules = {"global_risk": 0.002, "household_risk": 0.01}
    state = survey.updated(k=2, max_risk=0, release={**rules, "k_map": 3})
    assert page.suppression_rules(state) == rules  # k_map needs generalization: not a suppression rule
    assert page.suppression_checkbox(state)["checked"] is True
    assert page.suppression_checkbox(survey)["disabled"] is True
    spec = fixes.check_spec({"kind": "record_suppression", "k": 2, "max_suppression": 0.1, "release": rules})
    fixed = state.updated(release=rules, fix=(spec,))
    run = runs.run(fixed)
    assert run.error is None, run.error
    published = diagnose(run.data, KEYS, weights="sampling_weight", household="ori_hid")
    assert published.k >= 2
    assert published.individual_risk.global_risk <= 0.002 and published.household_risk.global_risk <= 0.01
    verdict = riskview.release_verdict(runs.fixed_diagnosis(run, fixed), fixed)
    assert verdict.passed, verdict.sentence()
    assert "global_risk ≤ 0.002" in fixes.describe_spec(spec)
    with pytest.raises(fixes.FixError, match="need\\(s\\) the search"):
        fixes.check_spec({"kind": "record_suppression", "k": 2, "max_suppression": 0.1, "release": {"k_map": 3}})
    # household_risk without a household column: the step says which role is missing
    no_home = fixed.with_columns(roles={"ori_hid": ColumnRole.INSENSITIVE})
    assert "household" in (runs.run(no_home).error or "")


def test_headlines_and_class_table_say_people_with_a_person_id(services: Services, wards: ViewState) -> None:
    diagnosis = services.diagnosis(wards)
    assert diagnosis.entity == "pid"
    for headlines in (riskview.risk_headlines(diagnosis, wards), riskview.fix_headlines(diagnosis, wards)):
        text = " ".join(f"{item.label} {item.detail}" for item in headlines)
        assert "records" not in text.lower(), text
    fix_side = {item.key: item for item in riskview.fix_headlines(diagnosis, wards)}
    assert fix_side["at-risk"].label == "People at risk"
    assert f"of {diagnosis.n_records} people" in fix_side["at-risk"].detail
    assert riskview.class_table(diagnosis, wards).titles["records"] == "people"
    # without the person id the same page says records
    rows = wards.with_columns(roles={"pid": ColumnRole.INSENSITIVE})
    plain = {item.key: item for item in riskview.fix_headlines(services.diagnosis(rows), rows)}
    assert plain["at-risk"].label == "Records at risk"
