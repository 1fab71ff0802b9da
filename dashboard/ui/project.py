"""The Data page's "Project" section: save everything set up for the open table in one file, and open it again.

The Dash adapter of :mod:`privdash.application.project`. "Save project" downloads a ``.privdash`` file (the view
state's contract, hierarchies, targets, Fix-page steps and page settings, the table's fingerprint, the sign-off
fields and the DP ledger's population typed here; the table's values only when the box is ticked). "Open project"
reads such a file: a project holding its table re-creates the dataset (an upload of this browser); a project saved
on a built-in dataset opens it; otherwise it is opened against the open table, whose fingerprint is compared with the
project's: when they differ the section says what differs and offers to open the project anyway. Opening ends in a
normal view state, so every page shows the state as it was left and a share link carries it.

The sign-off fields and the population are not part of a link: they are kept in this browser (local storage) and
in the project file.
"""

from __future__ import annotations

import base64
import binascii
import weakref
from collections.abc import Mapping
from typing import Any

import dash_mantine_components as dmc
from dash import Dash, Input, Output, State, ctx, dcc, html, no_update

from dashboard.ui.components import SIGNOFF_STORE, card, error_alert
from dashboard.ui.pagestate import PAGE_STATE, session_token, state_from_store
from privdash.application.project import (
    DECISION_LABELS,
    MAX_PROJECT_BYTES,
    Project,
    open_project,
    project_from_state,
)
from privdash.application.services import Services
from privdash.application.state import StateError, ViewState
from privdash.errors import DataReadError, PrivdashError

__all__ = ["card_for", "max_project_bytes", "project_bytes", "register"]

_REGISTERED: weakref.WeakSet[Dash] = weakref.WeakSet()
#: The section's text fields (store key -> component id).
FIELDS = {
    "name": "project-signoff-name",
    "role": "project-signoff-role",
    "decision": "project-signoff-decision",
    "conditions": "project-signoff-conditions",
    "date": "project-signoff-date",
    "identity": "project-identity",
}
DECISION_CHOICES = [{"value": value, "label": label} for value, label in DECISION_LABELS.items()]


def max_project_bytes(services: Services) -> int:
    """The largest project file the section reads: the upload limit (a project may hold its table)."""
    return min(MAX_PROJECT_BYTES, int(services.settings.max_upload_bytes))


def card_for(services: Services, state: ViewState) -> Any:
    """The section: sign-off fields, the ledger's population, Save project (with the table or not), Open project."""
    limit_mb = max_project_bytes(services) / 1e6
    fields = dmc.SimpleGrid(
        [
            dmc.TextInput(id=FIELDS["name"], label="Sign-off: name"),
            dmc.TextInput(id=FIELDS["role"], label="Sign-off: role"),
            dmc.Select(id=FIELDS["decision"], label="Sign-off: decision", data=DECISION_CHOICES, clearable=True),
            dmc.TextInput(id=FIELDS["date"], label="Sign-off: date", placeholder="YYYY-MM-DD"),
            dmc.TextInput(
                id=FIELDS["identity"],
                label="Population in the DP ledger",
                placeholder="e.g. Adult census 1994",
            ),
        ],
        cols={"base": 1, "sm": 2, "lg": 5},
    )
    return card(
        "Project",
        dmc.Stack(
            [
                fields,
                dmc.Textarea(
                    id=FIELDS["conditions"], label="Sign-off: conditions or reasons", autosize=True, minRows=1
                ),
                dmc.Group(
                    [
                        dmc.Button("Save project", id="project-save", variant="light", disabled=not state.dataset),
                        dmc.Checkbox(id="project-include-table", label="Include the table's values", checked=False),
                        dcc.Download(id="project-download"),
                    ],
                    gap="md",
                ),
                dcc.Upload(
                    html.Div(
                        [
                            dmc.Text("Open project: drop a .privdash file here, or click to choose one", fw=500),
                            dmc.Text(
                                f"Up to {limit_mb:g} MB. Opened against the open table unless it holds its own.",
                                size="xs",
                                c="dimmed",
                            ),
                        ]
                    ),
                    id="project-upload",
                    accept=".privdash,.json,application/json",
                    max_size=max_project_bytes(services),
                    className="upload-zone",
                ),
                html.Div(id="project-message"),
                dcc.Store(id="project-fields", storage_type="local"),
            ],
            gap="sm",
        ),
        description="One file with everything set up for this table: where it came from and its fingerprint, the "
        "roles, types, orders and hierarchies, the targets, the Fix page's steps and chosen solution, the sign-off "
        "fields and the DP ledger's population. It holds no value of the table unless you tick the box (the orders "
        "and hierarchies name the categories they order and group).",
        mt="md",
    )


def project_bytes(contents: str | None, limit: int) -> bytes:
    """The bytes of a file sent by ``dcc.Upload`` (a ``data:...;base64,`` URL); :class:`DataReadError` when it is
    malformed or larger than ``limit``."""
    if not contents or "," not in contents:
        raise DataReadError("No project file was sent.")
    encoded = contents.split(",", 1)[1]
    if len(encoded) > limit * 4 // 3 + 8:
        raise DataReadError(f"The project file is larger than {limit / 1e6:g} MB, the most opened here.")
    try:
        return base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError):
        raise DataReadError("The project file could not be read (damaged upload).") from None


def _fields(values: Mapping[str, Any] | None) -> dict[str, str]:
    out = {}
    for key in FIELDS:
        value = (values or {}).get(key)
        if isinstance(value, str) and value.strip():
            out[key] = value
    return out


def register(app: Dash, services: Services) -> None:
    """Add the section's callbacks to ``app`` (once per app)."""
    if app in _REGISTERED:
        return
    _REGISTERED.add(app)
    outputs = [Output(component, "value") for component in FIELDS.values()]

    @app.callback(
        Output("project-fields", "data"),
        Output(SIGNOFF_STORE, "data"),
        *outputs,
        Input("project-fields", "data"),
        *[Input(component, "value") for component in FIELDS.values()],
    )
    def keep_fields(stored: Any, *values: Any) -> tuple:
        """The fields follow this browser's stored copy when it changes (page load, a project opened) and are
        stored when they are edited; the shell's copy (:data:`SIGNOFF_STORE`, read by the report) follows both."""
        if ctx.triggered_id in FIELDS.values():
            edited = _fields(dict(zip(FIELDS, values, strict=True)))
            return (edited, edited, *[no_update] * len(FIELDS))
        kept = _fields(stored if isinstance(stored, Mapping) else None)
        return (no_update, kept, *[kept.get(key) or (None if key == "decision" else "") for key in FIELDS])

    @app.callback(
        Output("project-download", "data"),
        Output("project-message", "children"),
        Input("project-save", "n_clicks"),
        State("project-include-table", "checked"),
        State(PAGE_STATE, "data"),
        *[State(component, "value") for component in FIELDS.values()],
        prevent_initial_call=True,
    )
    def save(clicks: int | None, include: bool | None, data: Any, *values: Any) -> tuple:
        if not clicks:
            return no_update, no_update
        fields = _fields(dict(zip(FIELDS, values, strict=True)))
        identity = fields.pop("identity", None)
        try:
            state = state_from_store(data)
            project = project_from_state(
                services, state, signoff=fields, identity=identity, include_table=bool(include)
            )
            text = project.to_json() + "\n"
        except (PrivdashError, StateError) as exc:
            return no_update, error_alert(str(exc), title="The project was not saved", alert_id="project-error")
        stem = project.title.rsplit(".", 1)[0] if "." in project.title else project.title
        filename = "".join(ch if ch.isalnum() or ch in "-_ " else "_" for ch in stem).strip() or "project"
        return {"content": text, "filename": f"{filename}.privdash", "type": "application/json"}, None

    @app.callback(
        Output("redirect", "href", allow_duplicate=True),
        Output("project-message", "children", allow_duplicate=True),
        Output("project-fields", "data", allow_duplicate=True),
        Input("project-upload", "contents"),
        State("project-upload", "filename"),
        State(PAGE_STATE, "data"),
        prevent_initial_call=True,
    )
    def open_file(contents: str | None, filename: str | None, data: Any) -> tuple:
        if not contents:
            return no_update, no_update, no_update
        name = str(filename or "The project")[:120]
        try:
            limit = max_project_bytes(services)
            project = Project.from_bytes(project_bytes(contents, limit), max_bytes=limit)
            try:
                current = state_from_store(data)
            except StateError:
                current = ViewState()
            opened = open_project(services, project, current=current, session=session_token())
            href = services.links.href(opened.state, "/data")
        except (PrivdashError, StateError) as exc:
            return no_update, error_alert(str(exc), title=f"{name} was not opened", alert_id="project-error"), no_update
        fields = {**project.signoff}
        if project.ledger is not None and project.ledger.identity:
            fields["identity"] = project.ledger.identity
        differences = opened.differences
        if differences is None or differences.same:
            return href, None, fields
        message = dmc.Alert(
            [
                dmc.Text("This table is not the one the project was saved with.", fw=500, size="sm"),
                *[dmc.Text(sentence, size="sm") for sentence in differences.sentences()],
                dmc.Anchor("Open the project with this table anyway", href=href, id="project-open-anyway", size="sm"),
            ],
            color="yellow",
            title=f"{name}: the table differs",
            id="project-differences",
        )
        return no_update, message, fields
