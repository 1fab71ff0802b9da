"""How pages receive and hand back the view state.

Every page's ``layout(**query)`` decodes the ``s`` query parameter with :func:`state_from_query` and puts the state
into the page's ``page-state`` store (:func:`state_store`); page callbacks update that store, and one shell
callback writes it back to the URL and the navigation links. So the URL always describes what is on screen.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dash import dcc

from dashboard.application.services import LoadedDataset, Services
from dashboard.application.state import QUERY_KEY, StateError, ViewState
from dashboard.core.errors import PrivdashError
from dashboard.ui.components import error_alert

__all__ = ["PAGE_STATE", "open_page", "state_from_query", "state_from_store", "state_store"]

PAGE_STATE = "page-state"


def state_from_query(query: Mapping[str, Any]) -> tuple[ViewState, str | None]:
    """The state in a page's query parameters, and an error message when they could not be decoded."""
    encoded = query.get(QUERY_KEY)
    if isinstance(encoded, list):
        encoded = encoded[0] if encoded else None
    try:
        return ViewState.decode(encoded), None
    except StateError as exc:
        return ViewState(), str(exc)


def state_from_store(data: Mapping[str, Any] | None) -> ViewState:
    """The state held by a ``page-state`` store (its compact dict form)."""
    if not data:
        return ViewState()
    return ViewState.from_dict(data)


def state_store(state: ViewState) -> dcc.Store:
    """The page's state store, initialised with ``state``."""
    return dcc.Store(id=PAGE_STATE, data=state.to_dict())


def open_page(services: Services, query: Mapping[str, Any]) -> tuple[ViewState, LoadedDataset | None, list[Any]]:
    """What a page's ``layout(**query)`` starts from: the view state, its dataset, and alerts for what failed.

    The dataset is None when the state names none or it cannot be opened (expired, unknown id); a state without
    column roles takes the dataset's suggested ones.
    """
    state, problem = state_from_query(query)
    alerts: list[Any] = []
    if problem:
        alerts.append(error_alert(problem, title="This link could not be read", alert_id="state-error"))
    loaded = None
    if state.dataset:
        try:
            loaded = services.dataset(state.dataset)
            if not state.roles:
                state = services.initial_state(loaded, state)
        except PrivdashError as exc:
            alerts.append(error_alert(str(exc), title="The dataset is not available", alert_id="dataset-error"))
            loaded = None
    return state, loaded, alerts
