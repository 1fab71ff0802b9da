"""The Data page's column editor as rules: role and type edits, an imported data contract, a reset, and the
order of an ordinal column. Each returns the new view state, or raises a :class:`~privdash.errors.PrivdashError`
that the page shows, and every state it returns has a contract that fits the data.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from privdash.application.services import LoadedDataset, Services, reference_values, state_from_contract
from privdash.application.state import StateError, ViewState, order_permutation
from privdash.data.contract import DataContract
from privdash.errors import ContractError

__all__ = ["ColumnEdit", "current_order", "edit_columns", "state_with_contract", "state_with_order"]


@dataclass(frozen=True)
class ColumnEdit:
    """One change on the column editor: new roles and types per column, or a contract file, or a reset."""

    roles: Mapping[str, str] = field(default_factory=dict)
    types: Mapping[str, str] = field(default_factory=dict)
    contract_text: str | None = None
    contract_name: str | None = None
    reset: bool = False


def edit_columns(services: Services, state: ViewState, edit: ColumnEdit) -> ViewState:
    """The state after ``edit``, checked against the data (a contract that does not fit raises)."""
    loaded = services.dataset(str(state.dataset))
    if edit.contract_name is not None:  # a contract file was sent (its text may be empty)
        new_state = state_with_contract(loaded, state, edit.contract_text, edit.contract_name)
    elif edit.reset:
        new_state = services.initial_state(loaded, state)
    else:
        new_state = state.with_columns(edit.roles, edit.types)
    services.contract(loaded, new_state).validate(loaded.frame)
    return new_state


def state_with_contract(loaded: LoadedDataset, state: ViewState, text: str | None, filename: str | None) -> ViewState:
    """The state after importing a data contract file (its text)."""
    if not text:
        raise ContractError("The contract file is empty.")
    contract = DataContract.from_json(text)
    unknown = [f.name for f in contract.fields if f.name not in loaded.columns]
    if unknown:
        raise ContractError(
            f"{filename or 'The contract'} names columns this table does not have: {', '.join(unknown[:5])}."
        )
    contract.validate(loaded.frame[[f.name for f in contract.fields]])
    return state_from_contract(loaded, contract, state)


def current_order(services: Services, loaded: LoadedDataset, state: ViewState, column: str) -> list[Any]:
    """The order the state gives an ordinal column."""
    contract = services.contract(loaded, state)
    return list(contract[column].ordinal_values or ())


def state_with_order(loaded: LoadedDataset, state: ViewState, column: str, labels: Sequence[str]) -> ViewState:
    """The state with a new order for an ordinal column, given as the values' text, lowest first."""
    values = reference_values(loaded, column)
    by_label = {str(v): v for v in values}
    unknown = [label for label in labels if label not in by_label]
    if unknown:
        raise StateError(f"Not a value of '{column}': {', '.join(unknown[:5])}.")
    missing = [label for label in by_label if label not in labels]
    if missing or len(set(labels)) != len(labels):
        raise StateError(
            f"List every value of '{column}' exactly once"
            + (f" (missing: {', '.join(missing[:5])})." if missing else ".")
        )
    perm = order_permutation([by_label[label] for label in labels], values)
    return state.updated(orders={**state.orders, column: perm})
