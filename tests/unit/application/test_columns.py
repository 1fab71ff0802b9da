"""The Data page's column editor as rules: role edits, a reset, an imported contract, each checked against the data."""

from __future__ import annotations

from pathlib import Path

import pytest

from privdash.application.columns import ColumnEdit, edit_columns
from privdash.application.services import Services
from privdash.application.settings import Settings
from privdash.data.contract import ColumnRole, StatisticalType
from privdash.data.demo import people_contract
from privdash.errors import ContractError, PrivdashError


@pytest.fixture
def services(tmp_path: Path) -> Services:
    return Services(Settings(store_dir=tmp_path / "store", cache_dir=tmp_path / "cache"))


def test_role_edits_reset_and_contract(services: Services) -> None:
    loaded = services.dataset("demo:people")
    state = services.initial_state(loaded)
    edited = edit_columns(services, state, ColumnEdit(roles={"postcode": "insensitive"}))
    assert edited.roles["postcode"] == ColumnRole.INSENSITIVE and state.roles["postcode"] != ColumnRole.INSENSITIVE
    assert edit_columns(services, edited, ColumnEdit(reset=True)) == state
    contract = people_contract().with_roles({"sex": ColumnRole.SENSITIVE})
    imported = edit_columns(services, state, ColumnEdit(contract_text=contract.to_json(), contract_name="c.json"))
    assert imported.roles["sex"] == ColumnRole.SENSITIVE
    with pytest.raises(ContractError, match="empty"):
        edit_columns(services, state, ColumnEdit(contract_text=None, contract_name="c.json"))


def test_a_type_that_does_not_fit_the_data_is_refused(services: Services) -> None:
    loaded = services.dataset("demo:people")
    state = services.initial_state(loaded)
    with pytest.raises(PrivdashError, match="holds non-numbers"):
        edit_columns(services, state, ColumnEdit(types={"sex": StatisticalType.NUMERICAL.value}))
