"""The household risk in the application layer: the dashboard's diagnosis takes the contract's household column,
the Risk page's headline and rows, and the release report's household table (before and after a fix)."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pandas as pd
import pytest

from privdash.application.report import build_report, search_fix, table_fingerprint
from privdash.application.report.render import render_html
from privdash.application.riskview import household_headline, household_rows
from privdash.application.services import Services
from privdash.application.settings import Settings
from privdash.data.contract import ColumnRole, DataContract
from privdash.data.demo import people_table
from privdash.measure.diagnose import diagnose
from privdash.targets import PrivacyTargets
from privdash.transform.hierarchy import Hierarchy


def text_of(page: str) -> str:
    body = re.sub(r"<style>.*?</style>|<svg.*?</svg>", " ", page, flags=re.S)
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", body)))


@pytest.fixture
def homes() -> pd.DataFrame:
    """Households 1..6 of two or three members; a unique record (M, 90+) makes household 6 certain; one record has
    no household id."""
    rows = [
        ("F", "30-39", 1),
        ("M", "30-39", 1),
        ("F", "30-39", 2),
        ("M", "30-39", 2),
        ("F", "30-39", 3),
        ("M", "30-39", 3),
        ("F", "40-49", 3),
        ("F", "40-49", 4),
        ("M", "40-49", 4),
        ("M", "40-49", 5),
        ("F", "40-49", 5),
        ("F", "30-39", 6),
        ("M", "90+", 6),
        ("M", "30-39", None),
    ]
    frame = pd.DataFrame(rows, columns=["sex", "age", "hid"])
    frame["hid"] = frame["hid"].astype("Int64")
    return frame


@pytest.fixture
def contract(homes: pd.DataFrame) -> DataContract:
    return DataContract.for_columns(homes, quasi_identifiers=["sex", "age"], household="hid")


def test_headline_and_rows(homes: pd.DataFrame, contract: DataContract) -> None:
    result = diagnose(homes, contract=contract)
    households = result.household_risk
    assert households is not None and result.household == "hid"
    assert households.n_households == 7 and households.records_without_household == 1
    assert households.highest == 1.0
    headline = household_headline(result)
    assert headline is not None and headline.key == "household" and headline.passed is None
    assert headline.value == f"{100 * households.global_risk:.2f}%"
    assert "7 households in 'hid'" in headline.detail and "1 records without a household id" in headline.detail
    rows = dict(household_rows(result) or [])
    assert rows["households"] == "7" and rows["highest household risk"] == "100.00%"
    assert rows["records without a household id"] == "1"
    without = diagnose(homes, ["sex", "age"])
    assert household_headline(without) is None and household_rows(without) is None


def test_dashboard_diagnosis_passes_the_contract_household_through(tmp_path: Path) -> None:
    services = Services(Settings(store_dir=tmp_path / "store", cache_dir=tmp_path / "cache"))
    loaded = services.dataset("demo:people")
    state = services.initial_state(loaded).with_quasi_identifiers(["sex", "clothing_size"], [])
    state = state.with_columns(roles={"hair_colour": ColumnRole.HOUSEHOLD})
    result = services.diagnosis(state)
    expected = diagnose(people_table(), ["sex", "clothing_size"], household="hair_colour")
    assert result.household == "hair_colour" and result.household_risk is not None
    assert expected.household_risk is not None
    assert result.household_risk.expected_reidentifications == expected.household_risk.expected_reidentifications
    assert services.diagnosis(state.with_columns(roles={"hair_colour": ColumnRole.INSENSITIVE})).household is None


def test_report_shows_the_household_table_before_and_after_a_fix(homes: pd.DataFrame, contract: DataContract) -> None:
    targets = PrivacyTargets(k=2)
    plain = build_report(homes, contract, targets, table_fingerprint("homes.csv", homes))
    assert plain.diagnosis.household_risk is not None
    page = text_of(render_html(plain))
    households = plain.diagnosis.household_risk
    assert "Household risk Households are given by the column hid." in page
    assert "households 7 expected re-identifications" in page
    assert f"expected re-identifications {households.expected_reidentifications:.2f}" in page
    assert "before the fix" not in page.split("Household risk Households")[1].split("Records at risk")[0]
    # The definition the report quotes from docs/definitions.md
    assert "Household risk the household risk of a household is the probability" in page
    hierarchies = {
        "sex": Hierarchy.from_rows([["F", "*"], ["M", "*"]]),
        "age": Hierarchy.from_rows([["30-39", "*"], ["40-49", "*"], ["90+", "*"]]),
    }
    fix = search_fix(homes, contract, targets, hierarchies=hierarchies, max_suppression=0.1)
    fixed = build_report(homes, contract, targets, table_fingerprint("homes.csv", homes), fix=fix)
    assert fixed.fix is not None and fixed.diagnosis.household_risk is not None
    after = fixed.diagnosis.household_risk
    before = fixed.fix.before.household_risk
    assert before is not None and after.highest < before.highest == 1.0
    section = text_of(render_html(fixed)).split("Household risk Households")[1].split("Records at risk")[0]
    assert "released table before the fix" in section
    assert f"highest household risk {100 * after.highest:.2f}% 100.00%" in section
