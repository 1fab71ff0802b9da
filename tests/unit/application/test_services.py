"""Datasets for the pages, contracts from the view state, and the cached diagnosis."""

from __future__ import annotations

import io
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest

from privdash.application.services import (
    Services,
    clean_filename,
    contract_from_suggestions,
    default_k_values,
    state_from_contract,
    too_large_message,
)
from privdash.application.settings import READ_LIMIT_VARIABLES, Settings
from privdash.application.state import StateError, ViewState
from privdash.application.storage import DatasetNotFound, QuotaExceeded
from privdash.data.contract import ColumnRole, StatisticalType, suggest_contract, suggest_roles
from privdash.data.demo import CLOTHING_SIZES, demo_datasets, people_contract, people_table
from privdash.data.tables import ReadLimits, read_table
from privdash.errors import ColumnError, DataReadError, ReadLimitError
from privdash.measure.diagnose import diagnose

SESSION = "s" * 40


@pytest.fixture
def services(tmp_path: Path) -> Services:
    return Services(Settings(store_dir=tmp_path / "store", cache_dir=tmp_path / "cache", max_upload_bytes=10_000))


def test_demo_picker_lists_the_core_demos(services: Services) -> None:
    choices = services.demo_choices()
    names = list(demo_datasets(services.settings.data_dir))
    assert [c["value"] for c in choices] == ["demo:" + name for name in names]
    assert names[:2] == ["people", "uniform"]
    loaded = services.dataset("demo:people")
    assert loaded.is_demo and loaded.frame.shape == (5000, 12)
    assert services.dataset("demo:people") is loaded  # built once per process
    with pytest.raises(DatasetNotFound, match="no built-in dataset"):
        services.dataset("demo:nothing")


def test_initial_state_follows_the_shipped_contract(services: Services) -> None:
    loaded = services.dataset("demo:people")
    state = services.initial_state(loaded)
    assert state.quasi_identifiers == people_contract().quasi_identifiers
    assert state.sensitive == people_contract().sensitive
    assert services.contract(loaded, state)["clothing_size"].ordinal_values == CLOTHING_SIZES
    # The state carries the order as a permutation only.
    assert all(isinstance(i, int) for i in state.orders["clothing_size"])


def test_contract_round_trips_through_the_state(services: Services) -> None:
    loaded = services.dataset("demo:people")
    contract = (
        people_contract()
        .updated("clothing_size", ordinal_values=tuple(reversed(CLOTHING_SIZES)))
        .with_roles({"age": ColumnRole.SENSITIVE})
    )
    state = state_from_contract(loaded, contract, ViewState())
    rebuilt = services.contract(loaded, ViewState.decode(state.encode()))
    assert rebuilt.to_dict() == contract.to_dict()


def test_marking_a_column_ordinal_without_an_order_uses_a_default(services: Services) -> None:
    loaded = services.dataset("demo:people")
    state = services.initial_state(loaded).with_columns(types={"hair_colour": StatisticalType.ORDINAL})
    order = services.contract(loaded, state)["hair_colour"].ordinal_values
    assert order == tuple(sorted(people_table()["hair_colour"].dropna().unique()))
    with pytest.raises(StateError, match="too many"):
        services.contract(loaded, state.with_columns(types={"email": StatisticalType.ORDINAL}))


def test_ingest_stores_a_good_file_and_reports_a_bad_one(services: Services, data_dir: Path) -> None:
    raw = (data_dir / "sdcmicro_testdata" / "francdat.csv").read_bytes()
    info = services.ingest(raw, filename="francdat.csv", session=SESSION)
    loaded = services.dataset(info.id)
    assert loaded.frame.shape == read_table(raw, filename="francdat.csv").shape
    assert set(loaded.reasons) == set(loaded.columns)
    with pytest.raises(DataReadError, match="is empty"):
        services.ingest(b"", filename="empty.csv", session=SESSION)
    with pytest.raises(DataReadError, match="over the"):
        services.ingest(b"a,b\n" + b"1,2\n" * 5000, filename="big.csv", session=SESSION)


def test_too_large_message_is_the_readers_message() -> None:
    with pytest.raises(DataReadError) as error:
        read_table(b"a,b\n1,2\n" * 100, filename="x.csv", max_bytes=100)
    assert too_large_message("x.csv", 800, 100) == str(error.value)


def test_diagnosis_is_the_cores_and_is_cached(services: Services) -> None:
    loaded = services.dataset("demo:people")
    state = services.initial_state(loaded).with_quasi_identifiers(["sex", "clothing_size"], ["diagnosis"])
    state = state.updated(missing="drop", max_risk=0.1)
    result = services.diagnosis(state)
    expected = diagnose(people_table(), contract=services.contract(loaded, state), missing="drop", max_risk=0.1)
    assert result.k == expected.k and result.n_records == expected.n_records
    assert result.risk.prosecutor.records_at_risk == expected.risk.prosecutor.records_at_risk
    assert services.diagnosis(state) is result
    assert services.diagnosis(state.updated(missing="value")) is not result


def test_diagnosis_without_quasi_identifiers_is_a_user_error(services: Services) -> None:
    loaded = services.dataset("demo:people")
    with pytest.raises(ColumnError, match="No quasi-identifier"):
        services.diagnosis(services.initial_state(loaded).with_quasi_identifiers([], []))


def workbook(sheets: dict[str, pd.DataFrame]) -> bytes:
    buffer = io.BytesIO()
    with pd.ExcelWriter(buffer, engine="openpyxl") as writer:
        for name, frame in sheets.items():
            frame.to_excel(writer, sheet_name=name, index=False)
    return buffer.getvalue()


@pytest.mark.parametrize("bad", ["../../etc/passwd", "a" * 5000, "demo:../..", "AbCdEfGhIjKlMnOpQrSt\x00v", None, 5])
def test_a_malformed_dataset_id_is_refused_before_any_lookup(services: Services, bad: object) -> None:
    with pytest.raises(DatasetNotFound, match="does not name a valid dataset"):
        services.dataset(bad)  # type: ignore[arg-type]


def test_uploads_are_read_with_the_settings_limits(tmp_path: Path) -> None:
    settings = Settings(store_dir=tmp_path / "store", cache_dir=tmp_path / "cache", max_rows=100, max_columns=5)
    services = Services(settings)
    assert services.read_limits == ReadLimits(
        max_rows=100,
        max_columns=5,
        max_cells=settings.max_cells,
        max_decompressed_bytes=settings.max_decompressed_bytes,
        max_seconds=settings.max_parse_seconds,
        setting_names=READ_LIMIT_VARIABLES,
    )
    with pytest.raises(ReadLimitError, match=r"over the limit of 100 rows \(PRIVDASH_MAX_ROWS\)"):
        services.ingest(b"a,b\n" + b"1,2\n" * 101, filename="long.csv", session=SESSION)
    wide = ",".join(f"c{i}" for i in range(6)).encode() + b"\n" + b",".join(b"1" for _ in range(6)) + b"\n"
    with pytest.raises(ReadLimitError, match=r"PRIVDASH_MAX_COLUMNS"):
        services.ingest(wide, filename="wide.csv", session=SESSION)
    assert services.store.owned(SESSION) == []


def test_a_session_over_its_quota_is_told_before_the_file_is_read(tmp_path: Path) -> None:
    settings = Settings(store_dir=tmp_path / "store", cache_dir=tmp_path / "cache", session_max_datasets=1)
    services = Services(settings)
    services.ingest(b"a,b\n1,2\n3,4\n", filename="one.csv", session=SESSION)
    with pytest.raises(QuotaExceeded, match="delete one or wait until they expire"):
        services.ingest(b"", filename="empty.csv", session=SESSION)  # refused by quota, not read (it is empty)


def test_a_workbook_with_several_sheets_says_which_was_read_and_can_read_another(services: Services) -> None:
    people = pd.DataFrame({"age": [30, 41, 52], "sex": ["F", "M", "F"]})
    towns = pd.DataFrame({"town": ["Leeds", "York"], "population": [800_000, 200_000], "county": ["W", "N"]})
    raw = workbook({"people": people, "towns": towns})
    services = Services(replace(services.settings, max_upload_bytes=1_000_000))
    info = services.ingest(raw, filename="book.xlsx", session=SESSION)
    loaded = services.dataset(info.id)
    assert (loaded.sheet, loaded.sheets) == ("people", ("people", "towns")) and loaded.columns == ("age", "sex")
    assert any("'people'" in note and "towns" in note for note in loaded.notes)
    other = services.read_sheet(info.id, "towns", session=SESSION)
    towns_loaded = services.dataset(other.id)
    assert towns_loaded.columns == ("town", "population", "county") and towns_loaded.sheet == "towns"
    with pytest.raises(DatasetNotFound):  # the session's own dataset is replaced by the other sheet
        services.dataset(info.id)
    with pytest.raises(DatasetNotFound, match="has no sheet"):
        services.read_sheet(other.id, "nothing", session=SESSION)
    # Someone who opened the link gets a copy of their own; the uploader's dataset stays.
    copy = services.read_sheet(other.id, "people", session="t" * 40)
    assert services.dataset(copy.id).columns == ("age", "sex") and services.dataset(other.id).sheet == "towns"
    single = services.ingest(workbook({"only": people}), filename="single.xlsx", session=SESSION)
    assert services.dataset(single.id).sheets == ("only",) and not services.store.info(single.id).has_original


def test_uploaded_file_names_are_cleaned(services: Services) -> None:
    info = services.ingest(b"a,b\n1,2\n3,4\n", filename="../../etc/" + "x" * 300 + "\x00.csv", session=SESSION)
    assert "/" not in info.filename and "\x00" not in info.filename
    assert len(info.filename) <= 120 and info.filename.endswith(".csv")
    assert clean_filename(None) == "upload" and clean_filename("C:\\Users\\me\\data.csv") == "data.csv"


def test_the_stored_contract_is_the_suggested_one(services: Services) -> None:
    frame = people_table()
    assert contract_from_suggestions(frame, suggest_roles(frame)) == suggest_contract(frame)


@pytest.mark.parametrize("k", [1, 5, 10, 100, 101, 1_000, 30_000_000, 1_000_000_000])
def test_the_records_at_risk_curve_is_bounded_whatever_k(k: int) -> None:
    values = default_k_values(k)
    assert len(values) <= 200 and k in values and max(values) == max(20, 2 * k)
    assert (
        list(values) == sorted(set(values)) and values[: min(100, len(values))] == tuple(range(1, 101))[: len(values)]
    )
    if 2 * k <= 200:
        assert values == tuple(range(1, max(20, 2 * k) + 1))


def test_a_chunked_upload_over_the_limit_is_worded_without_a_size() -> None:
    assert "more than 100 MB, over the 100 MB limit" in too_large_message(None, None, 100_000_000)
    assert "is 250.0 MB, over the 100 MB limit" in too_large_message("a.csv", 250_000_000, 100_000_000)
