"""The Fix page's synthetic releases: the form's checks, the release and its comparison (the numbers are the core's
on the same split), the DP release charged to the same ledger as the DP section, the files and the report's
section; bad input gets the core's message and charges nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from privdash.application.dp_release import ledger_for, table_keys
from privdash.application.report.synthetic import K_ANONYMITY_NOTE, plain_verdict, settings_rows, synthetic_section
from privdash.application.services import Services
from privdash.application.settings import Settings
from privdash.application.state import ViewState
from privdash.application.synthetic_release import (
    SyntheticFiles,
    SyntheticRequest,
    default_columns,
    parse_bounds,
    synthesize_state,
)
from privdash.attack import attack_release
from privdash.data.tables import csv_text
from privdash.dp import BudgetExceededError
from privdash.errors import ColumnError, ParameterError, PrivdashError
from privdash.synthesis import split_control

QIS = ["age", "sex", "postcode"]
COLUMNS = ["age", "sex", "postcode", "diagnosis"]
#: Columns a DP model of the demo's 4,000 training records can afford (postcodes have too many values).
DP_COLUMNS = ["age", "sex", "clothing_size", "hair_colour", "diagnosis"]
AGE = {"kind": "generalize", "column": "age", "rule": {"builder": "intervals", "widths": [5, 10, 20]}, "level": 2}


def make_services(folder: Path) -> Services:
    return Services(Settings(store_dir=folder / "store", cache_dir=folder / "cache", max_upload_bytes=5_000_000))


@pytest.fixture(scope="module")
def services(tmp_path_factory: pytest.TempPathFactory) -> Services:
    return make_services(tmp_path_factory.mktemp("synthetic"))


@pytest.fixture(scope="module")
def base(services: Services) -> ViewState:
    state = services.initial_state(services.dataset("demo:people"), ViewState())
    return state.with_quasi_identifiers(QIS, ["diagnosis"])


def request(**form: object) -> SyntheticRequest:
    columns = ["age", "sex", "postcode", "diagnosis", "name", "clothing_size", "hair_colour"]
    return SyntheticRequest.from_form(columns, **form)  # type: ignore[arg-type]


# --- the form ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("form", "error", "message"),
    [
        ({"method": "copy"}, ParameterError, "Choose a method"),
        ({"method": "full", "chosen": ["height"]}, ColumnError, "no column 'height'"),
        ({"method": "full", "control_share": 0.9}, ParameterError, "share of control records must be between"),
        ({"method": "full", "control_share": "x"}, ParameterError, "must be a number"),
        ({"method": "hybrid", "share": 0}, ParameterError, "above 0 and at most 1"),
        ({"method": "partial", "k": 1}, ParameterError, "at least 2"),
        ({"method": "full", "seed": 1.5}, ParameterError, "seed must be a whole number"),
        ({"method": "dp", "epsilon": ""}, ParameterError, r"Give ε \(epsilon\)"),
        ({"method": "dp", "epsilon": "-1"}, ParameterError, "must be above 0"),
        ({"method": "dp", "epsilon": "1", "delta": "2"}, ParameterError, "below 1"),
        ({"method": "dp", "epsilon": "1", "bounds": "age 0 100"}, ParameterError, "write column=low:high"),
        ({"method": "dp", "epsilon": "1", "bounds": "height=0:3"}, ColumnError, "'height'"),
        ({"method": "dp", "epsilon": "1", "bounds": "age=90:10"}, ParameterError, "low < high"),
    ],
)
def test_bad_form_input_gets_a_message_naming_the_field(
    form: dict[str, object], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        request(**form)


def test_the_form_becomes_the_cores_settings() -> None:
    partial = request(method="partial", rows="all", k="3", chosen=["age"], seed="7", control_share="0.25")
    assert (partial.settings.method, partial.settings.rows, partial.settings.k) == ("partial", "all", 3)
    assert (partial.settings.columns, partial.settings.seed, partial.control_share) == (("age",), 7, 0.25)
    assert request(method="hybrid", share="0.3").settings.share == 0.3
    dp = request(method="dp", epsilon="2", delta="1e-7", bounds="age=0:100\n", identity=" people ")
    assert (dp.settings.epsilon, dp.settings.delta, dp.settings.bounds) == (2.0, 1e-7, {"age": (0.0, 100.0)})
    assert dp.identity == "people"
    assert request(method="full").settings.seed is None  # drawn at run time, then recorded
    assert parse_bounds("age=0:100, x = -1.5 : 2e3", ["age", "x"]) == {"age": (0.0, 100.0), "x": (-1.5, 2000.0)}


def test_direct_identifiers_are_not_modelled_by_default(services: Services, base: ViewState) -> None:
    loaded = services.dataset("demo:people")
    contract = services.contract(loaded, base)
    identifiers = [f.name for f in contract.fields if f.role.value == "identifier"]
    assert identifiers  # the demo has names and e-mail addresses
    columns = default_columns(loaded, services, base)
    assert not set(identifiers) & set(columns) and set(QIS) <= set(columns)


def test_the_seed_withheld_and_the_verdict_says_k_anonymity_does_not_apply() -> None:
    rows = dict(settings_rows(request(method="dp", epsilon="1", seed="1234").settings, 0.2))
    assert "1234" not in " ".join(rows.values()) and rows["seed"].startswith("withheld")
    assert K_ANONYMITY_NOTE in plain_verdict("The attacks sit at their baselines.")
    assert plain_verdict("k-anonymity does not apply.") == "k-anonymity does not apply."


# --- releases -----------------------------------------------------------------------------------------------------


def test_a_fully_synthetic_release_beside_the_original_and_the_fix(services: Services, base: ViewState) -> None:
    state = base.updated(fix=(AGE,))
    settings_request = request(method="full", chosen=COLUMNS, seed="11")
    outcome = synthesize_state(services, state, settings_request, estimates=["share:sex=F"])
    release = outcome.release
    assert list(release.table.columns) == COLUMNS and release.settings.seed == 11
    assert [item.key for item in outcome.compared] == ["original", "fix", "synthetic"]
    # The control split and the attacks are the core's on the same split.
    training, control = split_control(services.dataset("demo:people").frame[COLUMNS], share=0.2, seed=0)
    assert (outcome.training_rows, outcome.control_rows) == (len(training), len(control))
    synthetic = outcome.compared[-1].report
    direct = attack_release(
        training, release.table, QIS, sensitive="diagnosis", control=control, seed=0, allow_unmatched=True
    )
    assert synthetic.linkage.targets.rate == pytest.approx(direct.linkage.targets.rate)
    assert synthetic.linkage.baseline_kind == "control"
    # The original records are found far more often than the synthetic ones.
    original = outcome.compared[0].report
    assert original.linkage.targets.rate > synthetic.linkage.targets.rate
    assert outcome.compared[1].label.startswith("The generalized fix of the page (1 step)")
    assert outcome.compared[1].report.rows_control == len(control)
    assert "k-anonymity" in plain_verdict(outcome.evaluation.verdict)
    assert outcome.evaluation.estimates and outcome.evaluation.estimates[0].estimate.text() == "share:sex=F"
    assert outcome.account is None  # not a DP release: nothing charged

    files = SyntheticFiles.of(services)
    token = files.put(outcome)
    name, content = files.get(token, "csv")
    assert name == "demo-people-synthetic-full.csv" or name.endswith("-synthetic-full.csv")
    assert content.decode("utf-8") == csv_text(release.table)
    recipe_name, recipe = files.get(token, "recipe")
    step = json.loads(recipe)["steps"][0]
    assert recipe_name.endswith("-recipe.json") and step["kind"] == "synthesize" and step["params"]["seed"] == 11
    assert step["params"]["quasi_identifiers"] == QIS
    section = files.section(token)
    assert [label for label, _rows in section.compared][-1] == "The synthetic table"
    assert "11" not in dict(section.settings)["seed"]
    with pytest.raises(PrivdashError, match="expired"):
        files.get("no-such-token", "csv")


def test_a_partially_synthetic_release_changes_only_the_records_at_risk(services: Services, base: ViewState) -> None:
    outcome = synthesize_state(services, base, request(method="partial", seed="3"))
    release = outcome.release
    assert release.rows_replaced > 0 and release.cells_replaced > 0
    assert [item.key for item in outcome.compared] == ["original", "synthetic"]
    assert outcome.notes and "no fix step" in outcome.notes[0]
    assert synthetic_section(outcome).method == "partially synthetic"
    # Only the quasi-identifiers of records at risk change.
    kept = [c for c in services.dataset("demo:people").frame.columns if c in release.table.columns]
    training, _control = split_control(services.dataset("demo:people").frame[kept], share=0.2, seed=0)
    others = [c for c in kept if c not in QIS]
    pd.testing.assert_frame_equal(release.table[others].reset_index(drop=True), training[others].reset_index(drop=True))
    changed = (release.table[QIS].reset_index(drop=True) != training[QIS].reset_index(drop=True)).any(axis=1)
    assert 0 < changed.sum() <= release.rows_replaced
    # Every other value is kept, but direct identifiers are never released.
    assert not {"name", "email", "phone", "customer_id"} & set(release.table.columns)
    assert "name" in outcome.columns_left_out
    with pytest.raises(ColumnError, match="identifies people directly"):
        synthesize_state(services, base, request(method="partial", chosen=["name"]))


def test_a_hybrid_release_replaces_the_share_asked_for(services: Services, base: ViewState) -> None:
    outcome = synthesize_state(services, base, request(method="hybrid", share="0.25", chosen=COLUMNS, seed="4"))
    assert outcome.release.rows_replaced == pytest.approx(0.25 * outcome.training_rows, abs=1)
    assert len(outcome.release.table) == outcome.training_rows
    assert synthetic_section(outcome).method.startswith("hybrid")


def test_a_dp_release_is_charged_to_the_datasets_ledger(tmp_path: Path) -> None:
    services = make_services(tmp_path)
    loaded = services.dataset("demo:people")
    state = services.initial_state(loaded, ViewState()).with_quasi_identifiers(QIS, ["diagnosis"])
    ledger = ledger_for(services)
    keys = table_keys(services, loaded)
    assert ledger.known(keys) is None
    form = {"method": "dp", "chosen": DP_COLUMNS, "epsilon": "0.6", "delta": "1e-6", "bounds": "age=0:100", "seed": "5"}
    outcome = synthesize_state(services, state, request(**form))
    known = ledger.known(keys)
    assert known is not None and outcome.identity == known[0]
    account = known[1]
    assert len(account.entries) == 1 and account.entries[0].query == "synthetic table"
    assert account.entries[0].epsilon == pytest.approx(outcome.release.privacy.epsilon)  # type: ignore[union-attr]
    assert account.entries[0].epsilon == pytest.approx(0.6)
    assert outcome.account is not None and outcome.account.spent == account.spent
    assert "charged to the budget" in (synthetic_section(outcome).charged or "")

    # Over what is left: refused before fitting, nothing recorded.
    left = account.remaining[0]
    with pytest.raises(BudgetExceededError):
        synthesize_state(services, state, request(**{**form, "epsilon": repr(left + 1)}))
    assert len(ledger.account(known[0]).entries) == 1


@pytest.mark.parametrize(
    ("form", "message"),
    [
        ({"method": "dp", "chosen": DP_COLUMNS, "epsilon": "1"}, "declared bounds for the numeric column"),
        ({"method": "dp", "chosen": COLUMNS, "epsilon": "0.5", "bounds": "age=0:100"}, "budget is too small"),
    ],
)
def test_bad_input_found_by_the_core_is_a_message_and_charges_nothing(
    tmp_path: Path, form: dict[str, object], message: str
) -> None:
    services = make_services(tmp_path)
    loaded = services.dataset("demo:people")
    state = services.initial_state(loaded, ViewState()).with_quasi_identifiers(QIS, ["diagnosis"])
    with pytest.raises(PrivdashError, match=message):
        synthesize_state(services, state, request(**form))
    assert ledger_for(services).known(table_keys(services, loaded)) is None


def test_a_table_too_small_or_of_one_value_gets_the_cores_message(tmp_path: Path) -> None:
    services = make_services(tmp_path)
    small = pd.DataFrame({"age": [30, 40, 50, 60], "sex": ["F", "M", "F", "M"], "city": ["a", "b", "c", "d"]})
    info = services.ingest(csv_text(small).encode(), filename="small.csv", session="s" * 40)
    loaded = services.dataset(info.id)
    state = services.initial_state(loaded, ViewState()).with_quasi_identifiers(["age", "sex"], [])
    with pytest.raises(PrivdashError) as caught:
        synthesize_state(services, state, request(method="full", chosen=["age", "sex"]))
    assert str(caught.value)

    # A column of one value is not modelled: it is copied as is, and the model's line says so.
    flat = pd.DataFrame({"age": [20 + i % 50 for i in range(400)], "sex": ["F"] * 400, "town": ["a", "b"] * 200})
    info = services.ingest(csv_text(flat).encode(), filename="flat.csv", session="t" * 40)
    loaded = services.dataset(info.id)
    state = services.initial_state(loaded, ViewState()).with_quasi_identifiers(["age", "sex"], [])
    outcome = synthesize_state(services, state, SyntheticRequest.from_form(["age", "sex", "town"], method="full"))
    assert "one value only, copied as is: sex" in outcome.release.model
    assert set(outcome.release.table["sex"]) == {"F"}
    # Replacing a column of one value (partially synthetic) is refused with the core's message.
    with pytest.raises(PrivdashError, match="hold one value only"):
        synthesize_state(
            services,
            state,
            SyntheticRequest.from_form(["age", "sex", "town"], method="partial", chosen=["sex"], rows="all"),
        )


def test_a_person_with_several_rows_is_one_unit_of_the_release(tmp_path: Path) -> None:
    """The contract's person id is not modelled, the control records are whole people, and a DP release needs the
    rows kept per person and is charged at them."""
    import numpy as np

    rng = np.random.default_rng(0)
    visits = rng.integers(1, 5, 600)
    pid = np.repeat([f"P{i:04d}" for i in range(600)], visits)
    table = pd.DataFrame(
        {
            "patient_id": pid,
            "sex": np.repeat(rng.choice(["F", "M"], 600), visits),
            "ward": rng.choice(list("abc"), len(pid)),
        }
    )
    services = make_services(tmp_path)
    info = services.ingest(csv_text(table).encode(), filename="visits.csv", session="v" * 40)
    loaded = services.dataset(info.id)
    state = services.initial_state(loaded, ViewState()).with_quasi_identifiers(["sex", "ward"], [])
    assert services.contract(loaded, state).entity == "patient_id"
    assert default_columns(loaded, services, state) == ["sex", "ward"]
    outcome = synthesize_state(services, state, SyntheticRequest.from_form(list(table.columns), method="full"))
    assert list(outcome.release.table.columns) == ["sex", "ward"]
    training, control = split_control(loaded.frame, share=0.2, seed=0, entity="patient_id")
    assert outcome.evaluation.attacks.rows_control == len(control)
    assert set(training["patient_id"]).isdisjoint(control["patient_id"])

    columns = list(table.columns)
    dp = {"method": "dp", "epsilon": "1", "chosen": ["sex", "ward"]}
    with pytest.raises(PrivdashError, match="rows per person"):
        synthesize_state(services, state, SyntheticRequest.from_form(columns, **dp))  # type: ignore[arg-type]
    assert ledger_for(services).known(table_keys(services, loaded)) is None
    outcome = synthesize_state(
        services,
        state,
        SyntheticRequest.from_form(columns, **dp, max_rows="2"),  # type: ignore[arg-type]
    )
    assert outcome.release.settings.max_rows_per_person == 2 and outcome.release.settings.entity == "patient_id"
    known = ledger_for(services).known(table_keys(services, loaded))
    assert known is not None and known[1].entries[0].epsilon == pytest.approx(1.0)
