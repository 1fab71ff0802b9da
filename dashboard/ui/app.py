"""The app factory: ``create_app()`` builds a complete, independent dashboard.

Pages are Dash ``pages`` (one module per page in :mod:`dashboard.pages`), registered here rather than discovered
from a folder so that each app gets its own registrations and callbacks (tests build several apps in one
process). State lives on disk (uploads, background jobs) and in the URL, never in process globals, so any number of
gunicorn workers can serve the same users.

The stylesheets and browser scripts are the package :mod:`dashboard.assets` (the repository's top-level
``assets/`` folder, installed under that name), found through the import system so that a wheel and an editable
install serve the same files.
"""

from __future__ import annotations

import importlib.util
import logging
import secrets
from pathlib import Path
from typing import Any

import dash
import diskcache
import flask
from dash import ALL, ClientsideFunction, Dash, Input, Output, State, no_update
from werkzeug.exceptions import RequestEntityTooLarge

from dashboard.application.services import Services, too_large_message
from dashboard.application.settings import Settings
from dashboard.application.state import StateError, ViewState
from dashboard.core.errors import PrivdashError
from dashboard.ui.pagestate import PAGE_STATE, state_from_store

from . import components

__all__ = ["SESSION_COOKIE", "assets_folder", "create_app", "session_token"]

SESSION_COOKIE = "privdash_session"
_COOKIE_MAX_AGE = 365 * 24 * 3600
log = logging.getLogger(__name__)


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


def assets_folder() -> Path:
    """The folder of the package ``dashboard.assets`` (CSS and browser scripts served under ``/assets/``)."""
    spec = importlib.util.find_spec("dashboard.assets")
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    if not locations:
        raise RuntimeError("The package dashboard.assets is not installed; reinstall privdash (pip install .).")
    return Path(locations[0]).resolve()


def create_app(settings: Settings) -> Dash:
    """Build the dashboard app.

    Parameters
    ----------
    settings
        Storage folders, expiry, upload limit, reference data and key (the entry points build it once with
        :meth:`Settings.from_env`).
    """
    from dashboard import pages

    services = Services(settings)
    settings.cache_dir.mkdir(parents=True, exist_ok=True)
    manager = dash.DiskcacheManager(diskcache.Cache(str(settings.cache_dir)))

    # The page registry is process-global in Dash; every app starts from an empty one.
    dash.page_registry.clear()
    app = Dash(
        __name__,
        use_pages=True,
        pages_folder="",
        assets_folder=str(assets_folder()),
        title="privdash",
        update_title="",
        suppress_callback_exceptions=True,
        background_callback_manager=manager,
        serve_locally=True,
    )
    app.server.extensions["privdash"] = services
    for page in pages.PAGES:
        page.register(app, services)
    app.layout = components.shell(dash.page_container)
    _register_shell_callbacks(app, services)
    _register_routes(app.server, services)
    return app


def _register_shell_callbacks(app: Dash, services: Services) -> None:
    @app.callback(
        Output("url", "search"),
        Output({"type": "nav", "path": ALL}, "href"),
        Output({"type": "nav", "path": ALL}, "active"),
        Output("header-dataset", "children"),
        Output("header-dataset", "color"),
        Input(PAGE_STATE, "data"),
        State("url", "pathname"),
        State("url", "search"),
        State({"type": "nav", "path": ALL}, "id"),
    )
    def sync_url(data: Any, pathname: str | None, search: str | None, nav_ids: list[dict[str, str]]) -> tuple:
        """Write the page's view state into the address bar and the navigation links."""
        try:
            state = state_from_store(data)
        except StateError:
            state = ViewState()
        wanted = state.to_search()
        new_search = wanted if wanted != (search or "") else no_update
        hrefs = [state.href(item["path"]) for item in nav_ids]
        current = pathname if pathname not in (None, "/") else "/data"
        active = [item["path"] == current for item in nav_ids]
        title, color = header_title(services, state)
        return new_search, hrefs, active, title, color

    app.clientside_callback(
        ClientsideFunction("privdash", "shareLink"),
        Output("share-link", "value"),
        Input("share-button", "n_clicks"),
        prevent_initial_call=True,
    )
    app.clientside_callback(
        ClientsideFunction("privdash", "copyLink"),
        Output("copy-status", "children"),
        Input("copy-link", "n_clicks"),
        State("share-link", "value"),
        prevent_initial_call=True,
    )


def header_title(services: Services, state: ViewState) -> tuple[str, str]:
    """The header badge: the open dataset's name, or why there is none."""
    if not state.dataset:
        return "no dataset", "gray"
    try:
        return services.dataset(state.dataset).title, "blue"
    except PrivdashError:
        return "dataset unavailable", "red"


def _register_routes(server: flask.Flask, services: Services) -> None:
    limit = services.settings.max_upload_bytes

    @server.after_request
    def set_session_cookie(response: flask.Response) -> flask.Response:
        token = flask.g.get("privdash_new_session")
        if token is None and not flask.request.cookies.get(SESSION_COOKIE):
            token = secrets.token_urlsafe(32)
        if token is not None:
            response.set_cookie(SESSION_COOKIE, token, max_age=_COOKIE_MAX_AGE, httponly=True, samesite="Lax", path="/")
        return response

    @server.post("/api/upload")
    def upload() -> tuple[flask.Response, int]:
        """Store an uploaded table; answer ``{id, href}`` or ``{error}`` with a message for the page."""
        session = session_token()
        # Leave room for the multipart envelope; the file itself is checked against the limit below.
        flask.request.max_content_length = limit + 1_000_000
        try:
            file = flask.request.files.get("file")
            encoded_state = flask.request.form.get("state")
        except RequestEntityTooLarge:
            size = flask.request.content_length or 0
            return flask.jsonify(error=too_large_message(None, size, limit)), 413
        if file is None or not file.filename:
            return flask.jsonify(error="No file was sent; choose a CSV, Excel or Parquet file."), 400
        raw = file.read(limit + 1)
        try:
            info = services.ingest(raw, filename=file.filename, session=session)
            try:
                base = ViewState.decode(encoded_state)
            except StateError:
                base = ViewState()
            loaded = services.dataset(info.id)
            state = services.initial_state(loaded, ViewState(k=base.k, l=base.l, t=base.t, max_risk=base.max_risk))
        except PrivdashError as exc:
            return flask.jsonify(error=str(exc)), 400
        except Exception:  # a bug, not the user's fault: log it, show a plain message
            log.exception("upload of %r failed", file.filename)
            return flask.jsonify(error=f"{file.filename} could not be processed because of an internal error."), 500
        return flask.jsonify(id=info.id, href=state.href("/data")), 200

    @server.get("/api/health")
    def health() -> flask.Response:
        return flask.jsonify(status="ok")
