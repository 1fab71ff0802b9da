"""The release report with a person id (several rows per person): counted in people, as ``diagnose(entity=...)``
counts them, in :func:`build_report` and in the dashboard's report of a view whose roles mark a person id."""

from __future__ import annotations

import html
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from privdash.application.report import (
    PEOPLE_DEFINITION,
    build_report,
    recipe_fix,
    report_for_state,
    search_fix,
    table_fingerprint,
)
from privdash.application.report.render import in_people, render_html
from privdash.application.services import Services
from privdash.application.settings import Settings
from privdash.data.contract import ColumnRole, DataContract
from privdash.errors import ParameterError
from privdash.measure.diagnose import diagnose
from privdash.targets import PrivacyTargets
from privdash.transform.hierarchy import Hierarchy
from privdash.transform.steps import Recipe, Step


def text_of(page: str) -> str:
    body = re.sub(r"<style>.*?</style>|<svg.*?</svg>", " ", page, flags=re.S)
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", body)))


@pytest.fixture
def visits() -> pd.DataFrame:
    """Ten people: p1..p6 each visit Lisbon and Porto (a class of 6 people), p7..p9 visit Lisbon only (a class of
    3), and p10 visits Porto only: unique as a person, while counted in rows its row is in a class of 7 rows."""
    rows = [(f"p{i}", "F", town) for i in range(1, 7) for town in ("Lisbon", "Porto")]
    rows += [(f"p{i}", "F", "Lisbon") for i in range(7, 10)]
    rows += [("p10", "F", "Porto")]
    return pd.DataFrame(rows, columns=["person", "sex", "town"])


@pytest.fixture
def contract(visits: pd.DataFrame) -> DataContract:
    return DataContract.for_columns(visits, quasi_identifiers=["sex", "town"], entity="person")


def test_report_counts_people(visits: pd.DataFrame, contract: DataContract) -> None:
    report = build_report(visits, contract, PrivacyTargets(k=2), table_fingerprint("visits", visits))
    expected = diagnose(visits, contract=contract)
    # By hand: classes of 6, 3 and 1 people; k = 1; one sample unique; one person below k = 2.
    assert sorted(report.diagnosis.classes.sizes) == [1, 3, 6] == sorted(expected.classes.sizes)
    assert (report.diagnosis.n_records, report.diagnosis.rows, report.diagnosis.k) == (10, 16, 1)
    assert report.verdict.records_at_risk == 1 and report.withheld_classes == 1 and report.withheld_records == 1
    assert report.unit == "people" and PEOPLE_DEFINITION in report.definitions
    assert report.combinations is None and "left out" in (report.combinations_note or "")
    assert list(report.shown_classes.columns) == ["person_key", "size"]
    text = text_of(render_html(report))
    assert "Every count of this report is of people, not rows: 10 people in 16 rows" in text
    assert "the targets leave 1 people (10.0%) at risk" in text
    # Values never shown: the key of the person alone in a class is not listed; the classes of 3 and 6 are.
    assert sorted(report.shown_classes["size"]) == [3, 6] and "(sex=F, town=Porto) 1" not in text
    assert "(sex=F, town=Lisbon); (sex=F, town=Porto) 6" in text and "(sex=F, town=Lisbon) 3" in text
    # Counted in rows the table would pass k = 2 (every row is in a class of at least 2 rows).
    rows = build_report(visits, contract.with_roles({"person": ColumnRole.INSENSITIVE}), PrivacyTargets(k=2),
                        table_fingerprint("visits", visits))  # fmt: skip
    assert rows.verdict.passed and not report.verdict.passed and rows.unit == "records"


def test_multiset_key_and_refusals(visits: pd.DataFrame, contract: DataContract) -> None:
    doubled = pd.concat([visits, visits.iloc[[0]]], ignore_index=True)  # p1 visits Lisbon twice
    fingerprint = table_fingerprint("visits", doubled)
    as_set = build_report(doubled, contract, PrivacyTargets(k=2), fingerprint)
    as_multiset = build_report(doubled, contract, PrivacyTargets(k=2), fingerprint, entity_key="multiset")
    assert sorted(as_set.diagnosis.classes.sizes) == [1, 3, 6]
    assert sorted(as_multiset.diagnosis.classes.sizes) == [1, 1, 3, 5]
    assert "(multiset)" not in (as_set.people or "") and "with the number of rows" in (as_multiset.people or "")
    plain = contract.with_roles({"person": ColumnRole.INSENSITIVE})
    with pytest.raises(ParameterError, match="marks no person id"):
        build_report(doubled, plain, PrivacyTargets(k=2), fingerprint, entity_key="multiset")


def test_fixes_are_judged_on_people(visits: pd.DataFrame, contract: DataContract) -> None:
    towns = Hierarchy.from_rows([["Lisbon", "*"], ["Porto", "*"], ["Braga", "*"]])
    sexes = Hierarchy.from_rows([["F", "*"]])
    fix = search_fix(visits, contract, PrivacyTargets(k=2), hierarchies={"sex": sexes, "town": towns},
                     max_suppression=0.1)  # fmt: skip
    # One person of ten may go: p10 is suppressed, the towns are kept.
    assert sorted(fix.data["person"].unique()) == sorted(f"p{i}" for i in range(1, 10))
    report = build_report(visits, contract, PrivacyTargets(k=2), table_fingerprint("visits", visits), fix=fix)
    assert report.verdict.passed and report.diagnosis.k == 3 and report.diagnosis.n_records == 9
    assert report.fix is not None and (report.fix.people_in, report.fix.people_out) == (10, 9)
    assert (report.fix.rows_in, report.fix.rows_out) == (16, 15)
    assert "rows suppressed: 1" in report.fix.steps[0][1] and "records" not in report.fix.steps[0][1]
    # Estimates count rows, and k rows may be one person: left out with the reason, never printed.
    estimated = build_report(
        visits, contract, PrivacyTargets(k=2), table_fingerprint("v", visits), fix=fix, estimates=["share:town=Porto"]
    )
    assert estimated.fix is not None and estimated.fix.estimates == ()
    assert "estimates are left out" in (estimated.fix.estimates_note or "")
    # A recipe that drops the person id is still counted in people, by the input's ids of the rows kept.
    dropping = Recipe((*fix.recipe.steps, Step("drop_identifiers", {"columns": ["person"]})))
    dropped = recipe_fix(visits, dropping)
    assert "person" not in dropped.data.columns
    again = build_report(visits, contract, PrivacyTargets(k=2), table_fingerprint("v", visits), fix=dropped)
    assert again.diagnosis.n_records == 9 and again.diagnosis.k == 3 and again.diagnosis.entity == "person"


def test_in_people_rewords_records() -> None:
    assert (
        in_people("3 records are in smaller classes; a record's risk")
        == "3 people are in smaller classes; a person's risk"
    )
    assert in_people("no record is unique") == "no person is unique"


def test_dashboard_report_of_a_view_with_a_person_id(tmp_path: Path) -> None:
    services = Services(Settings(store_dir=tmp_path / "store", cache_dir=tmp_path / "cache", data_dir=tmp_path))
    people = services.dataset("demo:people").frame.head(600)
    visits = people.loc[people.index.repeat(1 + np.arange(len(people)) % 3)].reset_index(drop=True)
    visits["clinic"] = np.array(["north", "south", "east"])[np.arange(len(visits)) % 3]
    raw = visits.to_csv(index=False).encode("utf-8")
    info = services.ingest(raw, filename="visits.csv", session="s" * 40)
    loaded = services.dataset(info.id)
    state = services.initial_state(loaded).updated(dataset=info.id)
    state = state.with_columns(roles={"customer_id": ColumnRole.ENTITY, "clinic": ColumnRole.QUASI_IDENTIFIER})
    contract = services.contract(loaded, state)
    assert contract.entity == "customer_id" and "postcode" in contract.quasi_identifiers
    report = report_for_state(services, state.updated(model_risk=("default",)))
    shown = services.diagnosis(state)
    assert report.diagnosis.entity == "customer_id" and report.diagnosis.n_records == shown.n_records == 600
    assert report.diagnosis.rows == len(visits) and report.diagnosis.k == shown.k
    assert report.verdict.records_at_risk == shown.check(report.targets).records_at_risk
    # The postcode units count rows and the model-based risk fits rows: both left out with a reason.
    assert report.postcodes == () and not report.diagnosis.model_risk
    text = text_of(render_html(report))
    assert "The postcode units of postcode are left out" in text
    assert "Model-based risk is left out" in text
    assert f"Every count of this report is of people, not rows: 600 people in {len(visits):,} rows" in text
