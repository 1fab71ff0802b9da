"""Differentially private releases of the Fix page: the form's checks, the ledger kept in the store folder (read
back by a new app, unchanged by a refusal or by bad input), and the download without true values."""

from __future__ import annotations

import io
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from privdash.application.dp_release import (
    ReleaseLedger,
    ReleaseRequest,
    TableKeys,
    describe,
    display_digits,
    ledger_for,
    parse_domain,
    release_csv,
    result_rows,
    table_keys,
)
from privdash.application.services import Services
from privdash.application.settings import Settings
from privdash.dp import BudgetExceededError, BudgetLedger, Mechanism, PrivacyBudget, accuracy, frame_sha256
from privdash.errors import ColumnError, ParameterError

TABLE = pd.DataFrame(
    {
        "city": ["Leeds"] * 6 + ["York"] * 3 + ["=HYPERLINK()"],
        "age": [20, 30, 40, 50, 60, 70, 25, 35, 45, 55],
        "name": [f"p{i}" for i in range(10)],
    }
)
KEY = TableKeys.of(TABLE, "people")


def settings(tmp_path: Path) -> Settings:
    return Settings(store_dir=tmp_path / "store", cache_dir=tmp_path / "cache")


def request(**form: object) -> ReleaseRequest:
    return ReleaseRequest.from_form(list(TABLE.columns), **form)


def test_the_ledger_is_kept_in_the_store_and_read_back_by_a_new_app(tmp_path: Path) -> None:
    first = Services(settings(tmp_path))
    loaded = first.dataset("demo:people")
    keys = table_keys(first, loaded)
    assert keys.legacy == frame_sha256(loaded.frame) and keys.title == loaded.title
    assert ledger_for(first).known(keys) is None  # never released
    outcome = ledger_for(first).release(loaded.frame, keys, ReleaseRequest.from_form(loaded.columns, **COUNT))
    assert outcome.account.spent == (0.25, 0.0) and outcome.identity == loaded.title  # no identity: its name
    assert ledger_for(first).path.parent.parent == first.settings.store_dir

    second = Services(settings(tmp_path))  # another process: nothing shared but the folder
    known = ledger_for(second).known(table_keys(second, second.dataset("demo:people")))
    assert known is not None
    identity, account = known
    assert identity == loaded.title
    assert [(e.query, e.mechanism, e.epsilon, e.delta) for e in account.entries] == [("count", "laplace", 0.25, 0.0)]
    assert account.budget == PrivacyBudget(1.0, 1e-6) and account.remaining == (0.75, 1e-6)
    # A table of other people is another population, with its own (untouched) account.
    assert ledger_for(second).known(KEY) is None and ledger_for(second).account("people").entries == ()


COUNT = {"query": "count", "epsilon": "0.25"}


def test_a_release_over_the_budget_is_refused_and_nothing_is_recorded(tmp_path: Path) -> None:
    ledger = ReleaseLedger(tmp_path / "privacy", PrivacyBudget(0.5, 0.0))
    ledger.release(TABLE, KEY, request(**COUNT))
    ledger.release(TABLE, KEY, request(query="histogram", column="city", domain="Leeds, York", epsilon=0.2))
    before = ledger.path.read_bytes()
    with pytest.raises(BudgetExceededError, match=r"only ε=0\.05.* is left after 2 release"):
        ledger.release(TABLE, KEY, request(**COUNT))
    assert ledger.path.read_bytes() == before
    account = ledger.account("people")
    assert [e.epsilon for e in account.entries] == [0.25, 0.2]
    assert account.spent[0] == pytest.approx(0.45)
    # What is left can still be spent, to the last bit.
    ledger.release(TABLE, KEY, request(query="count", epsilon=0.05))
    assert ledger.account("people").remaining[0] == pytest.approx(0.0, abs=1e-12)


def test_a_gaussian_release_whose_delta_does_not_fit_is_refused(tmp_path: Path) -> None:
    ledger = ReleaseLedger(tmp_path / "privacy", PrivacyBudget(1.0, 1e-8))
    with pytest.raises(BudgetExceededError, match="δ=1e-07"):
        ledger.release(TABLE, KEY, request(query="count", epsilon=0.5, delta="1e-7", mechanism="gaussian"))
    assert not ledger.path.exists()


def test_the_download_has_the_dp_values_and_error_bars_but_never_the_true_values(tmp_path: Path) -> None:
    ledger = ReleaseLedger(tmp_path / "privacy", PrivacyBudget(1.0, 0.0))
    domain = "Leeds, York, Bath, =HYPERLINK()"
    release = ledger.release(TABLE, KEY, request(query="histogram", column="city", domain=domain, epsilon=0.5)).release
    text = release_csv(release)
    frame = pd.read_csv(io.StringIO(text))
    assert list(frame.columns) == ["city", "dp_value", "error"]
    assert frame["city"].tolist() == ["Leeds", "York", "Bath", "'=HYPERLINK()"]  # formula cell escaped
    np.testing.assert_allclose(frame["dp_value"], release.table["dp_value"].to_numpy(dtype=float))
    assert (frame["error"] == accuracy(Mechanism.LAPLACE, 2.0)).all()  # Δ = 1 at ε = 0.5: scale 2
    # The true counts (6, 3, 0, 1) are on the page for the owner, not in the file.
    rows = result_rows(release)
    assert rows["true_value"].tolist() == [6, 3, 0, 1]
    assert "true" not in text.lower()


def test_a_mean_with_declared_bounds_and_its_true_value_for_the_owner(tmp_path: Path) -> None:
    ledger = ReleaseLedger(tmp_path / "privacy", PrivacyBudget(1.0, 1e-6))
    outcome = ledger.release(
        TABLE,
        KEY,
        request(query="mean", column="age", low="20", high="60", epsilon=1, delta="1e-7", mechanism="gaussian"),
    )
    release = outcome.release
    assert release.bounds == (20.0, 60.0) and release.mechanism is Mechanism.GAUSSIAN
    # The owner's value is the mean of the clamped ages (70 becomes 60).
    assert result_rows(release)["true_value"].iloc[0] == pytest.approx(np.clip(TABLE["age"], 20, 60).mean())
    assert outcome.account.spent == pytest.approx((1.0, 1e-7))
    assert "true_value" not in release_csv(release)


def test_key_selection_releases_only_keys_above_the_threshold(tmp_path: Path) -> None:
    ledger = ReleaseLedger(tmp_path / "privacy", PrivacyBudget(1.0, 1e-6))
    release = ledger.release(
        TABLE, KEY, request(query="histogram", column="name", categories="keys", epsilon=1, delta="1e-7")
    ).release
    # Ten names held by one person each: the threshold (about 1 + ln(1/2δ)/ε ≈ 16) keeps every one out.
    assert release.key_selection_threshold is not None and release.key_selection_threshold > 10
    assert release.table.empty and "p0" not in release_csv(release)


@pytest.mark.parametrize(
    ("form", "message"),
    [
        ({"query": "count", "epsilon": "0"}, r"ε \(epsilon\) must be above 0"),
        ({"query": "count", "epsilon": "-1"}, r"ε \(epsilon\) must be above 0"),
        ({"query": "count", "epsilon": ""}, r"Give ε \(epsilon\)"),
        ({"query": "count", "epsilon": "one"}, r"ε \(epsilon\) must be a number"),
        ({"query": "count", "epsilon": "inf"}, "finite"),
        ({"query": "count", "epsilon": 1, "delta": "1"}, r"δ \(delta\) must be at least 0 and below 1"),
        ({"query": "count", "epsilon": 1, "delta": "-0.1"}, r"δ \(delta\) must be at least 0 and below 1"),
        ({"query": "count", "epsilon": 1, "mechanism": "gaussian"}, "Gaussian mechanism needs δ > 0"),
        ({"query": "count", "epsilon": 1, "mechanism": "uniform"}, "Unknown mechanism 'uniform'"),
        ({"query": "median", "epsilon": 1}, "Choose what to release"),
        ({"query": "sum", "epsilon": 1, "column": "age", "low": 5, "high": 5}, "L < U, got L = 5 and U = 5"),
        ({"query": "mean", "epsilon": 1, "column": "age", "low": 9, "high": 1}, "L < U"),
        ({"query": "sum", "epsilon": 1, "column": "age", "high": 5}, "Give the lower bound L"),
        ({"query": "sum", "epsilon": 1, "low": 0, "high": 5}, "Choose the column of the sum"),
        (
            {"query": "histogram", "epsilon": 1, "column": "city", "domain": " ,, "},
            "declared domain of 'city' is empty",
        ),
        ({"query": "histogram", "epsilon": 1, "column": "city", "categories": "keys"}, "DP key selection needs δ > 0"),
        (
            {
                "query": "histogram",
                "epsilon": 1,
                "delta": 1e-6,
                "column": "city",
                "categories": "keys",
                "mechanism": "gaussian",
            },
            "choose Laplace or geometric",
        ),
    ],
)
def test_bad_input_is_refused_with_a_message_that_names_the_field(form: dict[str, object], message: str) -> None:
    with pytest.raises(ParameterError, match=message):
        request(**form)


def test_bad_input_found_by_the_core_spends_nothing(tmp_path: Path) -> None:
    ledger = ReleaseLedger(tmp_path / "privacy", PrivacyBudget(1.0, 0.0))
    ledger.release(TABLE, KEY, request(**COUNT))
    before = ledger.path.read_bytes()
    with pytest.raises(ColumnError, match="'city' is not numeric"):
        ledger.release(TABLE, KEY, request(query="sum", column="city", low=0, high=1, epsilon=0.5))
    with pytest.raises(ParameterError, match="integer bounds"):
        ledger.release(
            TABLE, KEY, request(query="sum", column="age", low=0.5, high=90, epsilon=0.5, mechanism="geometric")
        )
    with pytest.raises(ColumnError, match="no column 'height'"):
        request(query="mean", column="height", low=0, high=2, epsilon=0.5)
    assert ledger.path.read_bytes() == before


def test_the_total_budget_setting(tmp_path: Path) -> None:
    assert Settings().dp_budget == PrivacyBudget(1.0, 1e-6)
    assert Settings.from_env({"PRIVDASH_DP_BUDGET": "2,1e-5"}).dp_budget == PrivacyBudget(2.0, 1e-5)
    assert Settings.from_env({"PRIVDASH_DP_BUDGET": "0.5"}).dp_budget == PrivacyBudget(0.5, 1e-6)  # one default δ
    assert Settings.from_env({"PRIVDASH_DP_BUDGET": "0.5,0"}).dp_budget == PrivacyBudget(0.5, 0.0)
    with pytest.raises(ParameterError, match="PRIVDASH_DP_BUDGET: ε"):
        Settings.from_env({"PRIVDASH_DP_BUDGET": "0"})
    # A dataset's total is fixed when its account opens: a later setting does not change it.
    ReleaseLedger(tmp_path, PrivacyBudget(0.5, 0.0)).release(TABLE, KEY, request(**COUNT))
    later = ReleaseLedger(tmp_path, PrivacyBudget(3.0, 0.0))
    later.release(TABLE, KEY, request(**COUNT))
    assert BudgetLedger.load(later.path).accounts["people"].budget == PrivacyBudget(0.5, 0.0)
    with pytest.raises(BudgetExceededError):
        later.release(TABLE, KEY, request(**COUNT))


def test_domain_text_and_display_digits() -> None:
    assert parse_domain(" F, M ,, F ") == ("F", "M")
    assert parse_domain("Leeds, West Yorkshire\nYork\n\n") == ("Leeds, West Yorkshire", "York")
    assert parse_domain(None) == () and parse_domain("  ") == ()
    assert display_digits(11.98) == 0 and display_digits(2.9) == 1 and display_digits(0.03) == 3
    assert display_digits(0.0) == 6 and display_digits(1e-12) == 6


def test_the_population_is_kept_across_copies_and_asked_for_near_copies(tmp_path: Path) -> None:
    ledger = ReleaseLedger(tmp_path / "privacy", PrivacyBudget(1.0, 0.0))
    named = request(**COUNT, identity="  Town survey 2024 ")
    assert named.identity == "Town survey 2024"
    assert ledger.release(TABLE, KEY, named).identity == "Town survey 2024"
    # The same rows re-sorted, uploaded under another name: the same population, even with nothing typed.
    resorted = TABLE.sample(frac=1, random_state=3).reset_index(drop=True)
    copy = TableKeys.of(resorted, "copy.csv")
    outcome = ledger.release(resorted, copy, request(**COUNT))
    assert outcome.identity == "Town survey 2024" and outcome.account.spent[0] == pytest.approx(0.5)
    before = ledger.path.read_bytes()
    with pytest.raises(ParameterError, match="were released under the dataset identity 'Town survey 2024'"):
        ledger.release(resorted, copy, request(**COUNT, identity="Fresh budget"))
    # One corrected cell: charged to the same population with a warning, or refused under another until confirmed.
    corrected = TABLE.assign(age=TABLE["age"].where(TABLE.index != 0, 21))
    near = TableKeys.of(corrected, "corrected.csv")
    with pytest.raises(ParameterError, match="the box 'Other people than the similar table'"):
        ledger.release(corrected, near, request(**COUNT, identity="Fresh budget"))
    assert ledger.path.read_bytes() == before
    confirmed = ledger.release(corrected, near, request(**COUNT, identity="Fresh budget", distinct=True))
    assert confirmed.identity == "Fresh budget" and "shares about 90%" in confirmed.warnings[0]
    assert ledger.account("Town survey 2024").spent[0] == pytest.approx(0.5)


@pytest.mark.parametrize(
    ("form", "message"),
    [
        ({**COUNT, "identity": "a\tb"}, "control character"),
        ({**COUNT, "identity": "x" * 250}, "250 characters"),
        ({"query": "count", "epsilon": "5e-324"}, "ε = 4.94066e-324"),
        ({"query": "sum", "epsilon": 1, "column": "age", "low": "-1e308", "high": "1e308"}, "bounds"),
        ({"query": "histogram", "epsilon": "1e-9", "delta": "1e-300", "column": "city", "categories": "keys"}, "2^31"),
    ],
)
def test_out_of_range_input_is_refused_and_spends_nothing(
    tmp_path: Path, form: dict[str, object], message: str
) -> None:
    ledger = ReleaseLedger(tmp_path / "privacy", PrivacyBudget(1.0, 1e-6))
    with pytest.raises(ParameterError, match=re.escape(message)):
        ledger.release(TABLE, KEY, request(**form))
    assert not ledger.path.exists()


# --- people with several rows (the contract's person-id column) ---------------------------------------------------

PEOPLE = TABLE.assign(pid=["a", "a", "a", "b", "b", "c", "d", "e", "f", "g"])
PEOPLE_KEY = TableKeys.of(PEOPLE, "visits")


def person_request(**form: object) -> ReleaseRequest:
    return ReleaseRequest.from_form(list(PEOPLE.columns), entity="pid", **form)


def test_the_bound_on_rows_per_person_from_the_form() -> None:
    assert person_request(**COUNT, max_rows="2").max_rows_per_person == 2
    assert person_request(**COUNT, max_rows=3).entity == "pid"
    assert person_request(**COUNT, max_rows="").max_rows_per_person is None  # asked for when the release runs
    assert request(**COUNT).entity is None and request(**COUNT).max_rows_per_person is None
    for bad in (0, -1, 1.5, "two"):
        with pytest.raises(ParameterError, match="Most rows per person must be a whole number of at least 1"):
            person_request(**COUNT, max_rows=bad)
    with pytest.raises(ParameterError, match="'pid' is the person-id column"):
        person_request(query="histogram", column="pid", domain="a, b", epsilon="1", max_rows=2)
    with pytest.raises(ColumnError, match="person-id column 'who'"):
        ReleaseRequest.from_form(list(PEOPLE.columns), entity="who", **COUNT)


def test_a_person_level_release_is_charged_like_a_one_row_release(tmp_path: Path) -> None:
    ledger = ReleaseLedger(tmp_path / "privacy", PrivacyBudget(1.0, 0.0))
    with pytest.raises(ParameterError, match=r"most rows per person: in this table a person of 'pid' has up to 3"):
        ledger.release(PEOPLE, PEOPLE_KEY, person_request(**COUNT))
    assert not ledger.path.exists()  # refused before anything was charged
    outcome = ledger.release(PEOPLE, PEOPLE_KEY, person_request(**COUNT, max_rows=2))
    release = outcome.release
    assert release.contribution is not None and release.contribution.rows_dropped == 1
    assert release.true_value == 9 and release.sensitivity == 2 and release.scale == 8.0
    one_row = ledger.release(TABLE, KEY, request(**COUNT))
    entries = [ledger.account(name).entries for name in ("visits", "people")]
    assert [(e.query, e.mechanism, e.epsilon, e.delta) for e in entries[0]] == [("count", "laplace", 0.25, 0.0)]
    assert [(e.query, e.mechanism, e.epsilon, e.delta) for e in entries[1]] == [("count", "laplace", 0.25, 0.0)]
    assert outcome.account.spent == one_row.account.spent == (0.25, 0.0)
    text = describe(release)
    assert "privacy unit: a person of 'pid', at most 2 row(s) each (7 people; 1 of 10 rows dropped at random)" in text
