"""How pages receive and hand back the view state.

Every page's ``layout(**query)`` decodes the query with :func:`state_from_query` (the ``s`` parameter, or ``l``
naming a long state kept on the server, see :mod:`privdash.application.links`) and puts the state into the page's
``page-state`` store (:func:`state_store`); page callbacks update that store, and one shell callback writes it back
to the URL and the navigation links. So the URL always describes what is on screen.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from typing import Any

import flask
from dash import dcc

from dashboard.ui.components import error_alert
from privdash.application.links import LINK_KEY
from privdash.application.services import DEMO_PREFIX, LoadedDataset, Services
from privdash.application.state import QUERY_KEY, StateError, ViewState
from privdash.data.demo import DEFAULT_DEMO
from privdash.errors import PrivdashError

__all__ = [
    "DEFAULT_DATASET",
    "PAGE_STATE",
    "SESSION_COOKIE",
    "open_page",
    "session_token",
    "state_from_query",
    "state_from_store",
    "state_store",
]

PAGE_STATE = "page-state"
#: The dataset a page opens when its link names none (a first visit): the built-in demo.
DEFAULT_DATASET = DEMO_PREFIX + DEFAULT_DEMO
#: The cookie holding a browser's session token (which uploads are its own).
SESSION_COOKIE = "privdash_session"


def session_token() -> str:
    """This browser's session token (from the request's cookie; a new one when the cookie is missing)."""
    token = flask.request.cookies.get(SESSION_COOKIE)
    if token and 20 <= len(token) <= 128:
        return token
    existing = flask.g.get("privdash_new_session")
    if existing:
        return str(existing)
    token = secrets.token_urlsafe(32)
    flask.g.privdash_new_session = token
    return token


def state_from_query(query: Mapping[str, Any], services: Services | None = None) -> tuple[ViewState, str | None]:
    """The state in a page's query parameters, and an error message when they could not be decoded.

    A stored state (``l``) is read through ``services``, by default the app's (the request's Flask app).
    """
    try:
        if query.get(LINK_KEY):
            services = services or _app_services()
            if services is None:
                raise StateError("This link names a stored view, which only the dashboard can open.")
            return services.links.state_from_query(query), None
        encoded = query.get(QUERY_KEY)
        if isinstance(encoded, list):
            encoded = encoded[0] if encoded else None
        return ViewState.decode(encoded if isinstance(encoded, str) or encoded is None else str(encoded)), None
    except StateError as exc:
        return ViewState(), str(exc)


def _app_services() -> Services | None:
    if not flask.has_app_context():
        return None
    services = flask.current_app.extensions.get("privdash")
    return services if isinstance(services, Services) else None


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

    A state that names no dataset opens the built-in demo (:data:`DEFAULT_DATASET`), so that a first visit has
    something to show; the dataset is None when it cannot be opened (expired, unknown id) or the link could not be
    read. A state without column roles takes the dataset's suggested ones.
    """
    state, problem = state_from_query(query, services)
    alerts: list[Any] = []
    if problem:
        alerts.append(error_alert(problem, title="This link could not be read", alert_id="state-error"))
    elif not state.dataset:
        state = state.updated(dataset=DEFAULT_DATASET)
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
