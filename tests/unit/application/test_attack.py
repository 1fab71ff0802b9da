"""The Fix page's measured attacks: the numbers are the core's ``attack_release`` on the same tables, the unchanged
table's linkage is the prosecutor average risk, and bad input gets a specific message."""

from __future__ import annotations

import base64
import io
from pathlib import Path

import pandas as pd
import pytest

from privdash.application.attack import AttackError, attack_rows, attack_state, fmt_rate
from privdash.application.fixes import run_fixes
from privdash.application.services import Services
from privdash.application.settings import Settings
from privdash.application.state import ViewState
from privdash.attack import AttackReport, UnmatchedValuesError, attack_release
from privdash.data.tables import csv_text
from privdash.errors import ColumnError, DataReadError
from privdash.measure.diagnose import diagnose

QIS = ["age", "sex", "postcode"]
AGE = {"kind": "generalize", "column": "age", "rule": {"builder": "intervals", "widths": [5, 10, 20]}, "level": 2}
AREA = {"kind": "generalize", "column": "postcode", "rule": {"builder": "postcodes", "levels": ["district", "area"]}}
FIX = (AGE, {**AREA, "level": 2}, {"kind": "record_suppression", "k": 5, "max_suppression": 0.2})


@pytest.fixture(scope="module")
def services(tmp_path_factory: pytest.TempPathFactory) -> Services:
    folder = tmp_path_factory.mktemp("attack")
    return Services(Settings(store_dir=folder / "store", cache_dir=folder / "cache", max_upload_bytes=5_000_000))


@pytest.fixture(scope="module")
def base(services: Services) -> ViewState:
    state = services.initial_state(services.dataset("demo:people"), ViewState())
    return state.with_quasi_identifiers(QIS, ["diagnosis"])


def data_url(raw: bytes, kind: str = "text/csv") -> str:
    return f"data:{kind};base64," + base64.b64encode(raw).decode()


def numbers(report: AttackReport) -> dict:
    """Every figure of a report but its timing."""
    out = report.to_dict()
    out.pop("seconds")
    return out


def test_the_unchanged_table_linkage_is_the_prosecutor_average(services: Services, base: ViewState) -> None:
    outcome = attack_state(services, base)
    original = services.dataset("demo:people").frame
    direct = attack_release(original, original, QIS, sensitive="diagnosis")
    assert numbers(outcome.report) == numbers(direct)
    prosecutor = diagnose(original, QIS).risk.prosecutor
    assert outcome.report.linkage.targets.rate == pytest.approx(prosecutor.average, abs=1e-12)
    assert [row.key for row in outcome.rows] == ["linkage", "singling_out", "inference"]
    assert outcome.release == "The unchanged dataset (no fix step yet)"


def test_the_fix_is_attacked_with_its_recipe(services: Services, base: ViewState) -> None:
    state = base.updated(fix=FIX)
    outcome = attack_state(services, state)
    loaded = services.dataset("demo:people")
    run = run_fixes(loaded.frame, services.contract(loaded, state), state.missing, FIX)
    direct = attack_release(loaded.frame, run.data, QIS, sensitive="diagnosis", recipe=run.recipe)
    assert numbers(outcome.report) == numbers(direct)
    # Every generalized label was understood, and no published person is found more often than 1/k.
    assert all(not rules.get("unmatched") for rules in outcome.report.matching.values())
    assert outcome.report.rows_released == len(run.data) < len(loaded.frame)
    assert outcome.report.predicted["prosecutor_highest"] <= 1 / 5
    assert outcome.report.linkage.targets.rate <= outcome.report.predicted["prosecutor_average"] + 1e-12
    assert outcome.release == "The fix previewed above (3 steps)"


def test_an_uploaded_release_csv_and_parquet(services: Services, base: ViewState) -> None:
    loaded = services.dataset("demo:people")
    state = base.updated(fix=FIX)
    run = run_fixes(loaded.frame, services.contract(loaded, state), state.missing, FIX)
    released = run.data[["age", "sex", "postcode", "diagnosis"]]
    text = csv_text(released)
    outcome = attack_state(
        services, state, source="upload", contents=data_url(text.encode()), filename="release.csv", sensitive=None
    )
    direct = attack_release(loaded.frame, pd.read_csv(io.StringIO(text)), QIS, sensitive="diagnosis", recipe=run.recipe)
    assert numbers(outcome.report) == numbers(direct)
    assert outcome.release == "release.csv"
    buffer = io.BytesIO()
    released.to_parquet(buffer, index=False)
    parquet = attack_state(
        services,
        state,
        source="upload",
        contents=data_url(buffer.getvalue(), "application/octet-stream"),
        filename="release.parquet",
    )
    assert parquet.report.linkage == direct.linkage


def test_bad_releases_get_specific_messages(services: Services, base: ViewState, tmp_path: Path) -> None:
    original = services.dataset("demo:people").frame
    renamed = original.rename(columns={"sex": "gender"})
    with pytest.raises(ColumnError) as core:
        attack_release(original, renamed, QIS)
    with pytest.raises(ColumnError) as page:
        attack_state(services, base, source="upload", contents=data_url(csv_text(renamed).encode()), filename="r.csv")
    assert str(page.value) == str(core.value) and "'gender'" in str(page.value)
    with pytest.raises(AttackError, match="Choose the released table"):
        attack_state(services, base, source="upload", contents=None, filename=None)
    with pytest.raises(DataReadError, match="empty"):
        attack_state(services, base, source="upload", contents=data_url(b""), filename="empty.csv")
    too_big = data_url(b"a,b\n" + b"1,2\n" * 1_300_000)
    with pytest.raises(DataReadError, match="limit"):
        attack_state(services, base, source="upload", contents=too_big, filename="big.csv")
    with pytest.raises(AttackError, match="quasi-identifiers"):
        attack_state(services, base.with_quasi_identifiers([], []))
    with pytest.raises(AttackError, match="Unknown release"):
        attack_state(services, base, source="elsewhere")


def test_sentences_and_rates_read_plainly(services: Services, base: ViewState) -> None:
    report = attack_state(services, base.updated(fix=FIX)).report
    rows = {row.key: row for row in attack_rows(report)}
    link = report.linkage.targets
    assert rows["linkage"].sentence.startswith(
        f"An attacker who knows these 3 attributes (age, sex, postcode) finds a person's record {fmt_rate(link.rate)}"
    )
    assert f"bounds it by {fmt_rate(report.predicted['prosecutor_highest'])}" in rows["linkage"].sentence
    assert rows["inference"].label == "Inference of diagnosis"
    assert rows["linkage"].predicted == report.predicted["prosecutor_average"]
    assert [fmt_rate(v) for v in (0, 1, 0.2, 0.0077243, 0.99996, 0.367654, 1e-9)] == [
        "0%",
        "100%",
        "20%",
        "0.772%",
        "99.996%",
        "36.77%",
        "<0.001%",
    ]


def test_an_upload_of_unknown_labels_is_not_measured(services: Services, base: ViewState) -> None:
    original = services.dataset("demo:people").frame
    released = original.assign(sex="person")  # a label the page has no hierarchy for
    contents = data_url(csv_text(released).encode())
    with pytest.raises(UnmatchedValuesError, match=r"The attacks were not measured: .*'sex' \(1 value: 'person'\)"):
        attack_state(services, base, source="upload", contents=contents, filename="r.csv")
    # Declared to stand for no one: measured, with nobody linked and a note that says why.
    outcome = attack_state(services, base, source="upload", contents=contents, filename="r.csv", allow_unmatched=True)
    assert outcome.report.linkage.targets.rate == 0.0
    assert len(outcome.notes) == 1 and "'sex'" in outcome.notes[0] and "'person'" in outcome.notes[0]
