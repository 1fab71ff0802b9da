"""The app factory: ``create_app()`` builds a complete, independent dashboard.

Pages are Dash ``pages`` (one module per page in :mod:`dashboard.pages`), registered here rather than discovered
from a folder so that each app gets its own registrations and callbacks (tests build several apps in one
process). State lives on disk (uploads, background jobs) and in the URL, never in process globals, so any number of
gunicorn workers can serve the same users.

The stylesheets and browser scripts are the package :mod:`dashboard.assets` (the repository's top-level
``assets/`` folder, installed under that name), found through the import system so that a wheel and an editable
install serve the same files.

Errors
    Every callback's exception goes to one handler (Dash's app-level ``on_error``, :func:`callback_error`): a
    ``PrivdashError`` (a bad or expired dataset id, a damaged link, a refused input) shows its message in the
    shell's message area and is logged as one line; anything else is a bug, logged with its traceback and shown
    as a plain message. Either way the answer is HTTP 200 with no output changed (an empty block for a grid that
    asked for rows), never a 500.
Security
    Every response carries a Content-Security-Policy (:func:`content_security_policy`: scripts only from this
    server plus the hashes of Dash's own inline scripts, no framing), ``X-Frame-Options: DENY``,
    ``X-Content-Type-Options: nosniff`` and ``Referrer-Policy: no-referrer``. The session cookie is ``HttpOnly``,
    ``SameSite=Lax``, and ``Secure`` when the app is served over HTTPS (``PRIVDASH_SECURE_COOKIES``, or a request
    that arrived over HTTPS, directly or through ``PRIVDASH_TRUSTED_PROXIES`` proxies).
Hostile requests
    A request body other than an upload is limited (:func:`callback_body_limit`; 413 with a message); a callback
    request that is not the JSON object Dash sends, names a callback the app does not have, carries a location that
    is not text, asks a grid for more than :data:`MAX_GRID_BLOCK` rows or gives an input a value of another type
    than its component declares (:mod:`dashboard.ui.inputs`, read from the pages' layouts) gets 400 with a message
    (:func:`check_callback_request`), never a 500; a body that stops arriving gets 408. Quotas and rates also count
    per client address (the address ``PRIVDASH_TRUSTED_PROXIES`` proxies forwarded, else the connection's), which a
    client cannot shed by dropping its session cookie: uploads kept and sent per hour, long share links.
"""

from __future__ import annotations

import importlib.util
import logging
import secrets
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import dash
import dash_mantine_components as dmc
import flask
from dash import ALL, ClientsideFunction, Dash, Input, Output, State, ctx, html, no_update
from dash.exceptions import BackgroundCallbackError, DependencyException
from werkzeug.exceptions import BadRequest, ClientDisconnected, HTTPException, RequestEntityTooLarge
from werkzeug.middleware.proxy_fix import ProxyFix

from dashboard.ui import components
from dashboard.ui.inputs import DeclaredInputs
from dashboard.ui.jobs import LimitedJobManager
from dashboard.ui.pagestate import PAGE_STATE, SESSION_COOKIE, session_token, state_from_store
from privdash.application.services import Services, clean_filename, too_large_message
from privdash.application.settings import Settings
from privdash.application.state import QUERY_KEY, StateError, ViewState
from privdash.application.storage import Sweeper, client_digest
from privdash.errors import PrivdashError

__all__ = [
    "CALLBACK_MESSAGE",
    "SECURITY_HEADERS",
    "SESSION_COOKIE",
    "assets_folder",
    "callback_body_limit",
    "callback_error",
    "check_callback_request",
    "client_key",
    "content_security_policy",
    "create_app",
    "session_token",
    "user_error_message",
]

_COOKIE_MAX_AGE = 365 * 24 * 3600
#: The shell's area for messages of failed callbacks (see :func:`callback_error`).
CALLBACK_MESSAGE = "callback-message"
#: Headers of every response, besides the Content-Security-Policy.
SECURITY_HEADERS = {
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}
log = logging.getLogger(__name__)


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
    manager = LimitedJobManager.from_settings(settings, session=session_token)

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
        on_error=callback_error,
    )
    app.server.extensions["privdash"] = services
    services.client = client_key
    app.server.config["MAX_CONTENT_LENGTH"] = callback_body_limit(settings)
    # The page's language, for screen readers and hyphenation (WCAG 3.1.1).
    app.index_string = app.index_string.replace("<html>", '<html lang="en">', 1)
    for page in pages.PAGES:
        page.register(app, services)
    layouts = _own_layouts(app)
    app.layout = with_message_area(components.shell(dash.page_container))
    _register_shell_callbacks(app, services)
    _register_routes(app.server, services)
    declared = DeclaredInputs(_layouts(app, services, layouts, pages.data.HOME_DATASET))
    app.server.extensions["privdash-inputs"] = declared
    # Walked now, while the worker starts, rather than by the first callback: that one would otherwise wait for
    # every page to render, with all the requests that arrive behind it.
    declared.classes()
    _guard_callbacks(app, declared)
    _secure(app, settings)
    # Expired uploads and leftovers of interrupted writes are deleted on a timer, not only when a request comes.
    Sweeper.start(services.store, settings.sweep_interval)
    return app


def callback_body_limit(settings: Settings) -> int:
    """The largest request body but an upload's (which the upload route sets itself): ``PRIVDASH_MAX_REQUEST_MB``,
    and at least what a file of the upload limit takes inside a callback (a ``dcc.Upload`` sends it base64-encoded:
    the release the attack section reads)."""
    return max(settings.max_request_bytes, settings.max_upload_bytes * 4 // 3 + 1_000_000)


def client_key() -> str:
    """The digest of the current request's client address (as the trusted proxies forwarded it), or "" outside a
    request: what the per-client quotas and rates count."""
    if not flask.has_request_context():
        return ""
    return client_digest(flask.request.remote_addr)


#: The callback endpoint of Dash.
_CALLBACK_PATH = "/_dash-update-component"


def check_callback_request(body: Any, callbacks: Any, declared: DeclaredInputs | None = None) -> str | None:
    """Why a callback request's JSON body is not one Dash can dispatch (None when it is).

    Dash itself answers a body that is not an object, lacks a key or names an unknown callback with an HTTP 500.
    With ``declared``, each input's value must also be of the type its component declares for the property
    (:mod:`dashboard.ui.inputs`): a value a browser never sends is refused before the callback runs.
    """
    if not isinstance(body, dict):
        return "The callback request is not a JSON object."
    output = body.get("output")
    if not isinstance(output, str) or output not in callbacks:
        return f"There is no callback for the output {str(output)[:200]!r}."
    if not isinstance(body.get("outputs"), dict | list):
        return "The callback request has no 'outputs'."
    for key in ("inputs", "state", "changedPropIds"):
        if key in body and not isinstance(body[key], list):
            return f"The callback request's '{key}' is not a list."
    if not isinstance(body.get("inputs"), list):
        return "The callback request has no 'inputs'."
    for item in _flat([*body["inputs"], *body.get("state", [])]):
        if not isinstance(item, dict) or not isinstance(item.get("property"), str):
            return "The callback request's inputs are malformed."
        wanted = _PROPERTY_TYPES.get(item["property"])
        value = item.get("value")
        if wanted is not None and value is not None and not isinstance(value, wanted[0]):
            return f"The callback's {str(item.get('id'))[:80]}.{item['property']} must be {wanted[1]}."
        if item["property"] == "pathname" and isinstance(value, str) and not value.startswith("/"):
            return "The callback's pathname must start with '/'."
        if item["property"] == "getRowsRequest" and isinstance(value, dict):
            problem = _block_problem(value)
            if problem is not None:
                return problem
        problem = declared.problem(item.get("id"), item["property"], value) if declared is not None else None
        if problem is not None:
            return problem
    return None


#: The most rows one request of a grid may ask for (the grids ask for blocks of 100).
MAX_GRID_BLOCK = 1_000


def _block_problem(request: dict[str, Any]) -> str | None:
    """Why a grid's block request is not one a grid sends: rows as whole numbers, at most :data:`MAX_GRID_BLOCK` of
    them, a sort model of at most 20 columns."""
    start, end = request.get("startRow", 0), request.get("endRow", 100)
    whole = all(isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= 10**12 for v in (start, end))
    if not whole or end < start:
        return "A grid's rows must be whole numbers from startRow to endRow."
    if end - start > MAX_GRID_BLOCK:
        return f"A grid asks for at most {MAX_GRID_BLOCK:,} rows at a time."
    sort_model = request.get("sortModel") or []
    if not isinstance(sort_model, list) or len(sort_model) > 20:
        return "A grid's sort model must be a list of at most 20 columns."
    return None


#: Properties whose values have one type whatever the component (the location's parts, a grid's block request),
#: checked before a callback runs: what a browser never sends is refused with a 400.
_PROPERTY_TYPES: dict[str, tuple[type | tuple[type, ...], str]] = {
    "pathname": (str, "text"),
    "search": (str, "text"),
    "hash": (str, "text"),
    "href": (str, "text"),
    "getRowsRequest": (dict, "an object"),
}


def _flat(items: list[Any]) -> list[Any]:
    """The entries of a callback's inputs or state, with those of pattern-matching (wildcard) groups."""
    out: list[Any] = []
    for item in items:
        out.extend(_flat(item) if isinstance(item, list) else [item])
    return out


_LAYOUTS = "privdash-layouts"


def _own_layouts(app: Dash) -> list[Any]:
    """Keep this app's page layouts with the app and leave the process-wide ``dash.page_registry`` a dispatcher.

    Dash keeps the page registry in a module global, so a second app built in the same process (tests, a second
    mount) re-registers every page and its layout closure, which holds that app's :class:`Services`. The registry's
    layout therefore looks the layout up in the app serving the request (``flask.current_app``), and a request to
    the first app renders with the first app's services."""
    own = {module: entry["layout"] for module, entry in dash.page_registry.items()}
    app.server.extensions[_LAYOUTS] = own
    for module, entry in dash.page_registry.items():
        entry["layout"] = _dispatch_layout(module)
    return list(own.values())


def _dispatch_layout(module: str) -> Callable[..., Any]:
    def layout(**query: Any) -> Any:
        own = flask.current_app.extensions[_LAYOUTS][module]
        return own(**query) if callable(own) else own

    return layout


def _layouts(app: Dash, services: Services, pages: list[Any], dataset_id: str) -> Callable[[], Iterator[Any]]:
    """The app's layouts as a browser gets them: the shell, and every page on the built-in demo dataset (where its
    controls are shown), rendered on their own (outside any user's request)."""

    def render() -> Iterator[Any]:
        yield app.layout
        try:
            state = services.initial_state(services.dataset(dataset_id))
            query = {QUERY_KEY: state.encode()}
        except PrivdashError as exc:  # no demo data: the pages without a dataset
            log.warning("the demo dataset could not be opened to read the pages' inputs: %s", exc)
            query = {}
        for layout in pages:
            # In a context of its own: nothing the page does (a session token it makes) reaches the user's request.
            with app.server.app_context(), app.server.test_request_context("/"):
                try:
                    rendered = layout(**query) if callable(layout) else layout
                except Exception:  # a page that fails here fails for users too, and is reported there
                    log.warning("a page's layout could not be rendered to read its inputs", exc_info=True)
                    continue
            yield rendered

    return render


def _serialize_setup(app: Dash) -> None:
    """Dash sets its server up on the first request (``Dash._setup_server``, a ``before_request`` hook) with a flag
    checked and set without a lock: two first requests of a threaded worker at once both run it, and one iterates
    the callback map while the other fills it (``RuntimeError: dictionary changed size during iteration``, a 500).
    This hook, first of all, runs the setup once under a lock; Dash's own call then finds it done."""
    lock = threading.Lock()
    done = False

    def setup_once() -> None:
        nonlocal done
        if done:
            return
        with lock:
            if not done:
                app._setup_server()
                done = True

    app.server.before_request_funcs.setdefault(None, []).insert(0, setup_once)


def _guard_callbacks(app: Dash, declared: DeclaredInputs) -> None:
    """Malformed callback requests and oversized bodies get 400 / 413 with a message instead of a 500."""
    server = app.server
    _serialize_setup(app)

    @server.before_request
    def check_callback() -> tuple[flask.Response, int] | None:
        if flask.request.path != _CALLBACK_PATH or flask.request.method != "POST":
            return None
        try:
            body = flask.request.get_json(silent=True)
        except RecursionError:  # JSON nested deeper than the parser goes
            body = None
        problem = check_callback_request(body, app.callback_map, declared)
        if problem is None:
            return None
        log.info("callback request refused: %s", problem)
        return flask.jsonify(error=problem), 400

    @server.errorhandler(RequestEntityTooLarge)
    def too_large(exc: RequestEntityTooLarge) -> tuple[flask.Response, int]:
        limit = flask.request.max_content_length or 0
        return flask.jsonify(error=f"The request is larger than the {limit / 1e6:g} MB this server accepts."), 413

    @server.errorhandler(BadRequest)
    def bad_request(exc: BadRequest) -> tuple[flask.Response, int]:
        if isinstance(exc, ClientDisconnected):  # the body stopped arriving, or too slowly (dashboard.server)
            return flask.jsonify(error="The request was interrupted or arrived too slowly; send it again."), 408
        return flask.jsonify(error=f"The request is malformed: {exc.description}"), 400

    @server.errorhandler(Exception)
    def malformed_callback(exc: Exception) -> Any:
        """An error in Dash's handling of a callback request (not in a callback: those go to :func:`callback_error`)
        comes from a request Dash cannot read: a 400 with a message. Anything else stays a 500."""
        if isinstance(exc, HTTPException):
            return exc
        if isinstance(exc, DependencyException):  # a script or style of a library that is not there
            log.info("unknown component file: %s", flask.request.path[:300])
            return flask.jsonify(error="There is no such file."), 404
        if isinstance(exc, OSError):  # reading the body failed: the client left or sent too slowly
            log.info("request not read: %s", str(exc)[:300])
            return flask.jsonify(error="The request was interrupted or arrived too slowly; send it again."), 408
        malformed = LookupError | TypeError | ValueError | AttributeError
        if flask.request.path == _CALLBACK_PATH and isinstance(exc, malformed):
            log.info("callback request refused: %s: %s", type(exc).__name__, str(exc)[:300])
            return flask.jsonify(error="The callback request is malformed and was not run."), 400
        log.error("request failed", exc_info=exc)
        return flask.jsonify(error="An internal error stopped this request."), 500


def with_message_area(shell: Any) -> Any:
    """The shell with the area where failed callbacks show their message (inside the Mantine provider)."""
    area = html.Div(
        id=CALLBACK_MESSAGE,
        style={"position": "fixed", "right": "16px", "bottom": "16px", "zIndex": 1000, "maxWidth": "480px"},
    )
    shell.children = [*shell.children, area]
    return shell


def callback_error(exc: Exception) -> Any:
    """The app's one handler of callback exceptions (Dash ``on_error``): a message instead of an HTTP 500.

    A ``PrivdashError`` is the user's input (a bad or expired dataset id, a damaged link ...), also when a background
    job raised it (:func:`user_error_message`): its message is shown and logged without a traceback. Anything else
    is a bug: logged with its traceback, shown as a plain message.
    Outputs stay as they are, except that a grid asking for rows gets an empty block (so it stops waiting).
    """
    refused = user_error_message(exc)
    if refused is not None:
        log.info("callback refused: %s", refused)
        title, message = "This could not be done", refused
    else:
        log.error("callback failed", exc_info=exc)
        title, message = "Something went wrong", "An internal error stopped this action; reload the page and try again."
    alert = dmc.Alert(
        message,
        title=title,
        color="red",
        variant="light",
        withCloseButton=True,
        className="error-message",
        id="callback-error",
    )
    # On an opaque card: the message floats over the page.
    dash.set_props(CALLBACK_MESSAGE, {"children": dmc.Paper(alert, shadow="md", radius="md")})
    return _empty_outputs(ctx.outputs_list)


def user_error_message(exc: BaseException) -> str | None:
    """The message of an error the user's input caused (a ``PrivdashError``), or None for anything else.

    A background callback's error reaches the app as a ``BackgroundCallbackError`` holding the job's traceback as
    text; its last line names the original exception's class, which counts when it is a ``PrivdashError`` of this
    package (looked up among the loaded modules, nothing is imported).
    """
    if isinstance(exc, PrivdashError):
        return str(exc)
    if not isinstance(exc, BackgroundCallbackError) or not exc.args:
        return None
    lines = [line for line in str(exc.args[0]).splitlines() if line.strip()]
    name, separator, message = (lines[-1] if lines else "").partition(": ")
    module, _, class_name = name.rpartition(".")
    loaded = sys.modules.get(module) if module.startswith(("privdash.", "dashboard.")) else None
    error_class = getattr(loaded, class_name, None)
    if separator and isinstance(error_class, type) and issubclass(error_class, PrivdashError):
        return message
    return None


def _empty_outputs(spec: Any) -> Any:
    """``no_update`` for every output of a failed callback, but an empty block of rows for a grid's request."""
    if isinstance(spec, list):
        return [_empty_outputs(item) for item in spec]
    if isinstance(spec, dict) and spec.get("property") == "getRowsResponse":
        return {"rowData": [], "rowCount": 0}
    return no_update


def content_security_policy(script_hashes: Sequence[str]) -> str:
    """The Content-Security-Policy of every response.

    Measured in headless Chromium on every page (no violation reported, see the browser tests):

    * ``script-src 'self'`` plus the hashes of the inline scripts of Dash's index page (the renderer's start and
      inline client-side callbacks, :meth:`dash.Dash.csp_hashes`); no ``'unsafe-inline'`` and no ``'unsafe-eval'``
      for scripts: Plotly, AG Grid and Mantine run without them.
    * ``style-src 'self' 'unsafe-inline'``: Mantine, AG Grid, Plotly and React insert ``<style>`` elements and style
      attributes at run time whose text is not known in advance (CSS cannot run code).
    * ``worker-src 'self' blob:``: the postcode map (MapLibre, in Plotly) starts its worker from a ``blob:`` URL.
    * ``img-src 'self' data: blob:``: Plotly's and MapLibre's images; ``connect-src 'self'``: callbacks and uploads.
    * ``frame-ancestors 'none'`` (as ``X-Frame-Options: DENY``), ``object-src 'none'``, ``base-uri 'none'``,
      ``form-action 'self'``.
    """
    return "; ".join(
        (
            "default-src 'self'",
            "script-src " + " ".join(["'self'", *script_hashes]),
            "style-src 'self' 'unsafe-inline'",
            "img-src 'self' data: blob:",
            "font-src 'self' data:",
            "connect-src 'self'",
            "worker-src 'self' blob:",
            "object-src 'none'",
            "base-uri 'none'",
            "form-action 'self'",
            "frame-ancestors 'none'",
        )
    )


def _secure(app: Dash, settings: Settings) -> None:
    """Security headers on every response; trusted proxies' ``X-Forwarded-*`` headers when configured."""
    server = app.server
    if settings.trusted_proxies:
        n = settings.trusted_proxies
        server.wsgi_app = ProxyFix(server.wsgi_app, x_for=n, x_proto=n, x_host=n, x_port=n)

    @server.after_request
    def security_headers(response: flask.Response) -> flask.Response:
        # The hashes are taken per response: Dash adds the inline scripts of pages while serving its first request.
        response.headers["Content-Security-Policy"] = content_security_policy(app.csp_hashes())
        for name, value in SECURITY_HEADERS.items():
            response.headers[name] = value
        return response


def _register_shell_callbacks(app: Dash, services: Services) -> None:
    @app.callback(
        Output("url", "search"),
        Output({"type": "nav", "path": ALL}, "href"),
        Output({"type": "nav", "path": ALL}, "active"),
        Output({"type": "nav", "path": ALL}, "aria-current"),
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
        # A long state (a wide table) is kept on the server and the URL names it (?l=...), so that it stays short.
        wanted = services.links.search(state)
        new_search = wanted if wanted != (search or "") else no_update
        current = pathname if pathname not in (None, "/") else "/data"
        # The presenter's mode opens on the view, and its Exit link comes back to this page.
        back = ("&" if wanted else "?") + urlencode({"from": current})
        hrefs = [item["path"] + wanted + (back if item["path"] == "/present" else "") for item in nav_ids]
        active = [item["path"] == current for item in nav_ids]
        # Screen readers announce the current page from aria-current, not from the highlight.
        current_page = ["page" if is_active else None for is_active in active]
        title, color = header_title(services, state)
        return new_search, hrefs, active, current_page, title, color

    @app.callback(Output(CALLBACK_MESSAGE, "children"), Input("url", "pathname"), prevent_initial_call=True)
    def clear_message(_pathname: str | None) -> Any:
        """A failed action's message belongs to its page: going to another page clears it."""
        return None

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
    # The Share button says whether its dialog is open (the popover reports "opened" on every change).
    app.clientside_callback(
        ClientsideFunction("privdash", "expanded"),
        Output("share-button", "aria-expanded"),
        Input("share-popover", "opened"),
        prevent_initial_call=True,
    )
    # The menu button of narrow screens opens and closes the navigation; going to another page closes it.
    app.clientside_callback(
        ClientsideFunction("privdash", "navbar"),
        Output("app-shell", "navbar"),
        Output("nav-burger", "aria-expanded"),
        Input("nav-burger", "opened"),
        State("app-shell", "navbar"),
        prevent_initial_call=True,
    )
    app.clientside_callback(
        ClientsideFunction("privdash", "closeMenu"),
        Output("nav-burger", "opened"),
        Input("url", "pathname"),
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
    secure_setting = services.settings.secure_cookies

    @server.after_request
    def set_session_cookie(response: flask.Response) -> flask.Response:
        token = flask.g.get("privdash_new_session")
        if token is None and not flask.request.cookies.get(SESSION_COOKIE):
            token = secrets.token_urlsafe(32)
        if token is not None:
            response.set_cookie(
                SESSION_COOKIE,
                token,
                max_age=_COOKIE_MAX_AGE,
                httponly=True,
                samesite="Lax",
                path="/",
                # Over HTTPS (declared, or seen: directly or through a trusted proxy) the cookie never travels in
                # clear text.
                secure=secure_setting or flask.request.is_secure,
            )
        return response

    @server.post("/api/upload")
    def upload() -> tuple[flask.Response, int]:
        """Store an uploaded table; answer ``{id, href}`` or ``{error}`` with a message for the page."""
        session = session_token()
        # Leave room for the multipart envelope; the file itself is checked against the limit below.
        flask.request.max_content_length = limit + 1_000_000
        try:
            file = flask.request.files.get("file")
            query = {key: flask.request.form.get(key) for key in ("s", "l")}
            query["s"] = query["s"] or flask.request.form.get("state")
            sheet = flask.request.form.get("sheet") or None
        except RequestEntityTooLarge:
            size = flask.request.content_length
            if size is not None and size <= flask.request.max_content_length:
                parts = flask.request.max_form_parts
                return flask.jsonify(error=f"The upload has more than {parts:,} form fields; send the file alone."), 413
            # A chunked upload has no declared length: it is refused once more than the limit arrived.
            return flask.jsonify(error=too_large_message(None, size, limit)), 413
        except (ClientDisconnected, OSError):  # the client stopped sending (or too slowly: dashboard.server)
            return flask.jsonify(error="The upload was interrupted or arrived too slowly; send the file again."), 408
        if file is None or not file.filename:
            return flask.jsonify(error="No file was sent; choose a CSV, Excel, Parquet, SPSS, Stata or SAS file."), 400
        raw = file.read(limit + 1)
        try:
            info = services.ingest(raw, filename=file.filename, session=session, sheet=sheet)
            try:
                base = services.links.state_from_query(query)
            except StateError:
                base = ViewState()
            loaded = services.dataset(info.id)
            state = services.initial_state(loaded, ViewState(k=base.k, l=base.l, t=base.t, max_risk=base.max_risk))
            href = services.links.href(state, "/data")
        except PrivdashError as exc:
            return flask.jsonify(error=str(exc)), 400
        except Exception:  # a bug, not the user's fault: log it, show a plain message
            log.exception("upload of %r failed", file.filename)
            message = f"{clean_filename(file.filename)} could not be processed because of an internal error."
            return flask.jsonify(error=message), 500
        return flask.jsonify(id=info.id, href=href), 200

    @server.get("/api/health")
    def health() -> flask.Response:
        return flask.jsonify(status="ok")
