"""Datasets for the pages, contracts from the view state, and the cached diagnosis."""

from __future__ import annotations

from pathlib import Path

import pytest

from dashboard.application.services import Services, state_from_contract, too_large_message
from dashboard.application.settings import Settings
from dashboard.application.state import StateError, ViewState
from dashboard.application.storage import DatasetNotFound
from dashboard.core.data.contract import ColumnRole, StatisticalType
from dashboard.core.data.demo import CLOTHING_SIZES, people_contract, people_table
from dashboard.core.data.tables import read_table
from dashboard.core.errors import ColumnError, DataReadError
from dashboard.core.measure.diagnose import diagnose

SESSION = "s" * 40


@pytest.fixture
def services(tmp_path: Path) -> Services:
    return Services(Settings(store_dir=tmp_path / "store", cache_dir=tmp_path / "cache", max_upload_bytes=10_000))


def test_demo_picker_lists_the_core_demos(services: Services) -> None:
    choices = services.demo_choices()
    assert [c["value"] for c in choices] == ["demo:people", "demo:uniform"]
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
