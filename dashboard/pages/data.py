"""Data page: open a built-in dataset or upload a file, preview it, and set each column's role and type.

Uploads go to ``/api/upload`` (see :mod:`dashboard.app`); the table stays on the server and the preview grid
asks for the rows it shows, a block at a time. Role and type edits, contract imports and ordinal orders all end in
the page's view state (and so in the URL). For a workbook with several sheets the page says which sheet was read
and reads another on request (the upload is kept for that); a browser can delete its own uploads, to make room
under its quota.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import dash
import dash_ag_grid as dag
import dash_mantine_components as dmc
import flask
import numpy as np
import pandas as pd
from dash import ALL, Dash, Input, Output, State, ctx, dcc, html, no_update

from dashboard.ui import hierarchies as hierarchy_ui
from dashboard.ui import project as project_section
from dashboard.ui.components import card, error_alert, fmt_count, no_dataset, page_title, progress_panel, scroll_table
from dashboard.ui.pagestate import PAGE_STATE, SESSION_COOKIE, open_page, session_token, state_from_store, state_store
from privdash.application import hierarchies as hs
from privdash.application.columns import ColumnEdit, current_order, edit_columns, state_with_order
from privdash.application.fixruns import FixRuns
from privdash.application.links import LINK_KEY
from privdash.application.presentations import presentation_links
from privdash.application.services import DEMO_PREFIX, LoadedDataset, Services, too_large_message
from privdash.application.state import QUERY_KEY, StateError, ViewState
from privdash.data.contract import ColumnRole, StatisticalType
from privdash.data.demo import demo_datasets
from privdash.errors import ContractError, PrivdashError

PATH = "/data"
NAME = "Data"
#: The dataset the site root opens on a first visit.
HOME_DATASET = DEMO_PREFIX + "people"
ACCEPT = ".csv,.tsv,.txt,.tab,.dat,.xlsx,.xlsm,.parquet,.pq,.sav,.zsav,.dta,.sas7bdat,.xpt"

ROLE_OPTIONS = (
    (ColumnRole.IDENTIFIER, "ID"),
    (ColumnRole.QUASI_IDENTIFIER, "QI"),
    (ColumnRole.SENSITIVE, "Sensitive"),
    (ColumnRole.INSENSITIVE, "Other"),
    (ColumnRole.WEIGHT, "Weight"),
    (ColumnRole.HOUSEHOLD, "Household"),
    (ColumnRole.ENTITY, "Person id"),
)
ROLE_LABEL = dict(ROLE_OPTIONS)
TYPE_OPTIONS = (
    (StatisticalType.NUMERICAL, "Numerical"),
    (StatisticalType.NOMINAL, "Nominal"),
    (StatisticalType.ORDINAL, "Ordinal"),
    (StatisticalType.DATE, "Date"),
    (StatisticalType.POSTCODE, "Postcode"),
    (StatisticalType.COORDINATE, "Coordinate"),
)
ROLE_HELP = (
    "ID: direct identifier (name, e-mail, id), left out of the analysis. QI: quasi-identifier an attacker may "
    "know (age, sex, postcode). Sensitive: what must not be disclosed (diagnosis, income). Other: not used. "
    "Weight: sampling weight. Household: household id (its members can be linked). Person id: one person's id when "
    "a person has several rows (then people are counted, not rows)."
)

# --- builders ------------------------------------------------------------------------------------------------------


def source_card(services: Services, state: ViewState, owned: Sequence[Any] = ()) -> Any:
    """Where data comes from: the built-in datasets, the upload zone, and this browser's earlier uploads."""
    zone_attributes: dict[str, Any] = {
        "data-max-bytes": str(services.settings.max_upload_bytes),
        "data-upload-url": "/api/upload",
        "data-accept": ACCEPT,
    }
    limit_mb = services.settings.max_upload_bytes / 1e6
    choices = services.demo_choices()
    # The select names the open built-in dataset; with an upload open it names none (a placeholder), so that it never
    # shows a dataset that is not the one open. With no built-in dataset open (none, or one that is gone) it offers
    # the first one.
    built_in = bool(state.dataset and state.dataset.startswith(("demo:", "source:")))
    demo_value = state.dataset if state.dataset in {choice["value"] for choice in choices} else None
    if demo_value is None and (built_in or not state.dataset) and choices:
        demo_value = choices[0]["value"]
    return card(
        "Open a dataset",
        dmc.Stack(
            [
                dmc.Group(
                    [
                        dmc.Select(
                            id="demo-select",
                            data=choices,
                            value=demo_value,
                            placeholder="Choose a built-in dataset",
                            label="Built-in dataset or server source" if services.sources else "Built-in dataset",
                            allowDeselect=False,
                            # The whole width of the card, the button below: a title needs about 320 px.
                            w="100%",
                        ),
                        dmc.Button("Open", id="demo-open", variant="light", disabled=demo_value is None),
                    ],
                    align="flex-end",
                    gap="xs",
                    wrap="wrap",
                ),
                dmc.Divider(label="or upload a file", labelPosition="center"),
                html.Div(
                    [
                        dmc.Text(
                            "Drop a CSV, Excel, Parquet, SPSS, Stata or SAS file here, or click to choose one", fw=500
                        ),
                        dmc.Text(f"Up to {limit_mb:g} MB. The file stays on this server.", size="xs", c="dimmed"),
                    ],
                    className="upload-zone",
                    id="upload-zone",
                    role="button",
                    tabIndex="0",
                    **zone_attributes,
                ),
                html.Div(
                    progress_panel("upload", status="", dimmed=False),
                    id="upload-controls",
                    style={"display": "none"},
                ),
                html.Div(id="upload-message"),
                dcc.Store(id="upload-result"),
                html.Div(upload_list(owned), id="upload-list"),
            ],
            gap="sm",
        ),
    )


def presentations_card(services: Services) -> Any:
    """The classic cases, one click away: each built-in dataset on the page that tells its story."""
    pages = {"/risk": "Risk", "/fix": "Fix", "/postcodes": "Postcodes"}
    items = [
        dmc.Stack(
            [
                dmc.Group(
                    [
                        dmc.Anchor(
                            f"{link.title} → {pages.get(link.page, link.page)}",
                            href=link.href,
                            size="sm",
                            fw=500,
                            id={"type": "presentation", "name": link.name},
                        ),
                        dmc.Anchor(
                            "Present",
                            href=link.present,
                            size="sm",
                            id={"type": "present", "name": link.name},
                            **{"aria-label": f"Present {link.title}"},
                        ),
                    ],
                    gap="xs",
                    justify="space-between",
                    wrap="nowrap",
                ),
                dmc.Text(link.story, size="xs", c="dimmed"),
            ],
            gap=0,
        )
        for link in presentation_links(services)
    ]
    return card("Presentations", dmc.Stack(items, gap="xs"), description="Classic cases, each with its story.")


def _dataset_query(dataset_id: str) -> str:
    return ViewState(dataset=dataset_id).to_search().lstrip("?")


def upload_list(owned: Sequence[Any]) -> Any:
    """This browser's uploads: a link to each, and a button that deletes it (to make room under the quota)."""
    if not owned:
        return None
    rows = [
        dmc.Group(
            [
                dmc.Anchor(
                    f"{info.filename} ({fmt_count(info.rows)} rows)", href=f"/data?{_dataset_query(info.id)}", size="sm"
                ),
                dmc.Button(
                    "Delete",
                    id={"type": "delete-upload", "dataset": info.id},
                    size="compact-xs",
                    variant="subtle",
                    color="red",
                ),
            ],
            justify="space-between",
            gap="xs",
            wrap="nowrap",
        )
        for info in owned
    ]
    return dmc.Stack([dmc.Text("Your uploads", size="sm", fw=500, mt="xs"), *rows], gap=2)


def dataset_summary(loaded: LoadedDataset) -> Any:
    """Name, shape and origin of the open dataset; for a workbook, which sheet was read and a picker of the others."""
    rows, cols = loaded.frame.shape
    shown = f"preview of {fmt_count(rows)} rows" if loaded.source is not None else f"{fmt_count(rows)} rows"
    badges = [dmc.Badge(shown, id="dataset-rows"), dmc.Badge(f"{cols} columns")]
    if loaded.source is not None:
        badges.append(dmc.Badge(f"server source: {loaded.source.describe()}", color="gray"))
    elif loaded.is_demo:
        # Adult is built in but real public data (read from the data folder), not generated.
        synthetic = loaded.id.split(":", 1)[1] in demo_datasets()
        badges.append(dmc.Badge("built-in, synthetic" if synthetic else "built-in, public data", color="teal"))
    elif loaded.expires is not None:
        badges.append(dmc.Badge("uploaded", color="gray"))
    head = dmc.Group([dmc.Text(loaded.title, fw=600, id="dataset-title"), *badges], gap="xs")
    parts: list[Any] = [head]
    if len(loaded.sheets) > 1:
        parts.append(sheet_picker(loaded))
    if loaded.notes:
        parts.append(
            dmc.Stack([dmc.Text(note, size="xs", c="dimmed") for note in loaded.notes], gap=0, id="dataset-notes")
        )
    return dmc.Stack(parts, gap="xs") if len(parts) > 1 else head


def sheet_picker(loaded: LoadedDataset) -> Any:
    """Which sheet of a workbook was read, and a select that reads another one (from the kept upload)."""
    count = len(loaded.sheets)
    return dmc.Group(
        [
            dmc.Text(
                f"This workbook has {count} sheets; the table is sheet '{loaded.sheet}'.",
                size="sm",
                id="sheet-status",
            ),
            dmc.Select(
                id="sheet-select",
                data=list(loaded.sheets),
                value=loaded.sheet,
                allowDeselect=False,
                size="xs",
                w=200,
                **{"aria-label": "Sheet"},
            ),
            dmc.Button("Read this sheet", id="sheet-read", size="xs", variant="light"),
        ],
        gap="xs",
        id="sheet-picker",
    )


def preview_grid(loaded: LoadedDataset) -> Any:
    """A virtualised preview: the grid asks the server for the rows it displays, 100 at a time."""
    columns = [
        {"field": f"c{i}", "headerName": name, "sortable": True, "width": 150, "minWidth": 90}
        for i, name in enumerate(loaded.columns)
    ]
    return dag.AgGrid(
        id="preview-grid",
        columnDefs=[{"field": "_row", "headerName": "#", "width": 90, "sortable": False, "pinned": "left"}, *columns],
        rowModelType="infinite",
        defaultColDef={"resizable": True, "filter": False},
        dashGridOptions={
            "cacheBlockSize": 100,
            "maxBlocksInCache": 20,
            "infiniteInitialRowCount": min(len(loaded.frame), 100),
            "rowBuffer": 10,
            "suppressContentVisibilityAuto": True,
        },
        style={"height": "360px"},
    )


def preview_rows(frame: pd.DataFrame, request: Mapping[str, Any] | None) -> dict[str, Any]:
    """The block of rows an infinite grid asked for (``startRow``..``endRow``, sorted as its ``sortModel``)."""
    request = request or {}
    start = max(int(request.get("startRow", 0) or 0), 0)
    end = max(int(request.get("endRow", start + 100) or start + 100), start)
    order: np.ndarray | None = None
    sort_model = request.get("sortModel") or []
    if sort_model:
        sort = sort_model[0]
        field = str(sort.get("colId", ""))
        if field.startswith("c") and field[1:].isdigit() and int(field[1:]) < frame.shape[1]:
            column = frame.iloc[:, int(field[1:])]
            order = column.argsort(kind="stable").to_numpy()
            if sort.get("sort") == "desc":
                order = order[::-1]
    positions = np.arange(start, min(end, len(frame))) if order is None else order[start:end]
    block = frame.iloc[positions]
    rows = json_records(block)
    for position, row in zip(positions.tolist(), rows, strict=True):
        row["_row"] = position + 1
    return {"rowData": rows, "rowCount": len(frame)}


def json_records(block: pd.DataFrame) -> list[dict[str, Any]]:
    """Rows as JSON-safe dicts keyed ``c0, c1 ...`` (missing values become None, other values text or numbers)."""
    out: dict[str, list[Any]] = {}
    for i in range(block.shape[1]):
        column = block.iloc[:, i]
        if pd.api.types.is_bool_dtype(column) or not pd.api.types.is_numeric_dtype(column):
            values = column.astype(object).where(column.notna(), None)
            out[f"c{i}"] = [v if v is None or isinstance(v, str | bool) else str(v) for v in values]
        else:
            numbers = column.astype("float64")
            out[f"c{i}"] = [None if v != v else (int(v) if float(v).is_integer() else v) for v in numbers.tolist()]
    n = len(block)
    return [{key: values[r] for key, values in out.items()} for r in range(n)]


def column_editor(loaded: LoadedDataset, state: ViewState, profile: Mapping[str, Mapping[str, Any]]) -> Any:
    """The per-column table: name with the suggestion's reason, role, type, missing values and distinct values."""
    suggested = {f.name: f.role for f in loaded.contract.fields}
    rows = []
    for name in loaded.columns:
        role = state.roles.get(name, suggested.get(name, ColumnRole.INSENSITIVE))
        kind = state.types.get(name, StatisticalType.NOMINAL)
        stats = profile.get(name, {})
        reason = loaded.reasons.get(name)
        hint = f"Suggested {ROLE_LABEL.get(suggested.get(name, ColumnRole.INSENSITIVE), 'Other')}"
        if reason:
            hint += f": {reason}"
        rows.append(
            dmc.TableTr(
                [
                    dmc.TableTd(
                        dmc.Stack(
                            [dmc.Text(name, fw=600, size="sm"), dmc.Text(hint, size="xs", c="dimmed")],
                            gap=0,
                        )
                    ),
                    dmc.TableTd(
                        dmc.SegmentedControl(
                            id={"type": "role", "column": name},
                            data=[{"value": r.value, "label": label} for r, label in ROLE_OPTIONS],
                            value=ColumnRole(role).value,
                            size="xs",
                            **{"aria-label": f"Role of {name}"},
                        )
                    ),
                    dmc.TableTd(
                        dmc.Select(
                            id={"type": "kind", "column": name},
                            data=[{"value": t.value, "label": label} for t, label in TYPE_OPTIONS],
                            value=StatisticalType(kind).value,
                            allowDeselect=False,
                            size="xs",
                            w=130,
                            **{"aria-label": f"Type of {name}"},
                        )
                    ),
                    dmc.TableTd(dmc.Text(stats.get("missing", ""), size="sm"), ta="right"),
                    dmc.TableTd(dmc.Text(stats.get("distinct", ""), size="sm"), ta="right"),
                    dmc.TableTd(dmc.Text(stats.get("examples", ""), size="xs", c="dimmed", lineClamp=1, maw=220)),
                ],
                **{"data-column": name},
            )
        )
    head = dmc.TableThead(
        dmc.TableTr(
            [
                dmc.TableTh("Column"),
                dmc.TableTh("Role"),
                dmc.TableTh("Type"),
                dmc.TableTh("Missing", ta="right"),
                dmc.TableTh("Distinct", ta="right"),
                dmc.TableTh("Examples"),
            ]
        )
    )
    return scroll_table(
        "Columns: roles and types",
        dmc.Table([head, dmc.TableTbody(rows)], highlightOnHover=True, verticalSpacing="xs", id="column-table"),
        minWidth=900,
    )


def contract_tools() -> Any:
    """Import and export of the data contract JSON, and a reset to the suggestions."""
    return dmc.Group(
        [
            dcc.Upload(dmc.Button("Import contract", variant="light", size="xs"), id="contract-upload", accept=".json"),
            dmc.Button("Export contract", id="contract-export", variant="light", size="xs"),
            dmc.Button("Reset to suggestions", id="contract-reset", variant="subtle", size="xs", color="gray"),
            dcc.Download(id="contract-download"),
        ],
        gap="xs",
    )


def ordinal_columns(state: ViewState) -> list[str]:
    return [name for name, kind in state.types.items() if kind == StatisticalType.ORDINAL]


def order_editor(state: ViewState) -> Any:
    """Edit the order of an ordinal column: drag the rows, or type the values one per line."""
    columns = ordinal_columns(state)
    return card(
        "Ordinal order",
        # Without an ordinal column, one line says how to get one instead of two empty editors.
        dmc.Text(ORDER_EMPTY, size="sm", c="dimmed", id="order-empty", style=_shown(not columns)),
        dmc.Group(
            [
                dmc.Select(
                    id="order-column",
                    data=columns,
                    value=columns[0] if columns else None,
                    placeholder="no ordinal column" if not columns else None,
                    label="Column",
                    w=240,
                    allowDeselect=False,
                ),
            ],
            id="order-picker",
            style=_shown(bool(columns)),
        ),
        dmc.SimpleGrid(
            [
                dag.AgGrid(
                    id="order-grid",
                    columnDefs=[{"field": "value", "headerName": "Lowest first (drag to reorder)", "rowDrag": True}],
                    rowData=[],
                    # A flex column fills the width whenever the grid is shown (sizing to fit a hidden grid warns).
                    defaultColDef={"flex": 1},
                    # Painted off screen too (AG Grid's content-visibility: auto leaves prints and screenshots empty).
                    dashGridOptions={
                        "rowDragManaged": True,
                        "animateRows": True,
                        "suppressContentVisibilityAuto": True,
                    },
                    style={"height": "260px"},
                    className="order-grid",
                ),
                dmc.Stack(
                    [
                        dmc.Textarea(
                            id="order-text",
                            label="Or edit the list (one value per line, lowest first)",
                            autosize=True,
                            minRows=6,
                            maxRows=10,
                        ),
                        dmc.Button("Apply list", id="order-apply", size="xs", variant="light", w=120),
                    ],
                    gap="xs",
                ),
            ],
            cols=2,
            mt="sm",
            id="order-editors",
            style=_shown(bool(columns)),
        ),
        html.Div(id="order-message"),
        description="Ordinal columns are compared by this order (t-closeness, generalisation).",
    )


ORDER_EMPTY = "No column has the Ordinal type: set a column's type to Ordinal in the Columns table to order its values."


def _shown(visible: bool) -> dict[str, str]:
    return {} if visible else {"display": "none"}


def layout(services: Services, **query: Any) -> Any:
    """The Data page for the state in ``query``."""
    state, loaded, alerts = open_page(services, query)
    owned: list[Any] = []
    session = flask.request.cookies.get(SESSION_COOKIE) if flask.has_request_context() else None
    try:
        owned = services.store.owned(session) if session else []
    except OSError:
        owned = []
    body: list[Any] = [page_title("Data", "Pick a table and tell privdash what each column is."), *alerts]
    left = dmc.Stack([source_card(services, state, owned), presentations_card(services)], gap="md")
    if loaded is None:
        right = card("Dataset", no_dataset("Nothing is open yet.", on_data_page=True))
        body.append(dmc.Grid([dmc.GridCol(left, span={"base": 12, "md": 5}), dmc.GridCol(right, span="auto")]))
        body.append(project_section.card_for(services, state))
        body.append(state_store(state))
        return html.Div(body)
    right = card(None, dataset_summary(loaded), dmc.Space(h="sm"), preview_grid(loaded))
    # Below Mantine's xl (1,408 px) the left column takes 5 twelfths: room for a whole title in the dataset select.
    spans = {"base": 12, "md": 5, "xl": 4}, {"base": 12, "md": 7, "xl": 8}
    body.append(dmc.Grid([dmc.GridCol(left, span=spans[0]), dmc.GridCol(right, span=spans[1])]))
    body.append(
        card(
            "Columns",
            dmc.Group(
                [dmc.Text(ROLE_HELP, size="xs", c="dimmed", maw=760), contract_tools()],
                justify="space-between",
                align="flex-start",
                mb="sm",
            ),
            html.Div(id="column-message"),
            column_editor(loaded, state, services.profile(loaded)),
            dmc.Group(
                [
                    # A link drawn as a button (one Tab stop; a button inside a link would be two).
                    dmc.Anchor(
                        html.Span("Check the risk", id="to-risk-button"),
                        id="to-risk",
                        href=services.links.href(state, "/risk"),
                        className="button-link",
                        underline="never",
                        # The Risk page opens with the focus on its verdict (assets/focus.js), not on the page's top.
                        **{"data-focus-next": "#verdict, #risk-error"},
                    )
                ],
                justify="flex-end",
                mt="md",
            ),
            mt="md",
        )
    )
    body.append(html.Div(order_editor(state), id="order-card", style={"marginTop": "16px"}))
    body.append(html.Div(hierarchy_card(services, loaded, state), style={"marginTop": "16px"}))
    body.append(project_section.card_for(services, state))
    body.append(state_store(state))
    return html.Div(body)


def hierarchy_card(services: Services, loaded: LoadedDataset, state: ViewState) -> Any:
    """The hierarchy editor for the open table (read-only for a built-in table)."""
    qis = [name for name in loaded.columns if state.roles.get(name) == ColumnRole.QUASI_IDENTIFIER]
    ordered = qis or list(loaded.columns)
    first = ordered[0] if ordered else None
    form = None
    if first is not None:
        try:
            form = hs.editor_form(services, loaded, state, first)
        except PrivdashError:
            form = None
    return hierarchy_ui.editor_card(loaded.columns, qis, hs.editable(state.dataset), form)


def home(services: Services, **query: Any) -> Any:
    """The site root: the Data page, on the built-in demo dataset when no view state is given."""
    if QUERY_KEY not in query and LINK_KEY not in query:
        query = {**query, QUERY_KEY: ViewState(dataset=HOME_DATASET).encode()}
    return layout(services, **query)


# --- callbacks -----------------------------------------------------------------------------------------------------


def register(app: Dash, services: Services) -> None:
    dash.register_page(
        __name__,
        path=PATH,
        name=NAME,
        title="privdash · Data",
        order=0,
        layout=lambda **q: layout(services, **q),
    )
    # The site root shows the Data page too (a redirect would drop the query string); opened bare, it starts on the
    # built-in demo dataset so that a first visit has something to look at.
    dash.register_page(
        f"{__name__}.home", path="/", name=NAME, title="privdash", order=99, layout=lambda **q: home(services, **q)
    )

    @app.callback(
        Output("redirect", "href", allow_duplicate=True),
        Input("demo-open", "n_clicks"),
        State("demo-select", "value"),
        State(PAGE_STATE, "data"),
        prevent_initial_call=True,
    )
    def open_demo(clicks: int | None, dataset_id: str | None, data: Any) -> Any:
        if not clicks or not dataset_id:
            return no_update
        loaded = services.dataset(dataset_id)
        return services.initial_state(loaded, _targets(data)).href(PATH)

    @app.callback(
        Output("upload-message", "children"),
        Output("redirect", "href", allow_duplicate=True),
        Input("upload-result", "data"),
        prevent_initial_call=True,
    )
    def upload_done(result: Mapping[str, Any] | None) -> tuple[Any, Any]:
        message, href = upload_outcome(result, services.settings.max_upload_bytes)
        return message, href or no_update

    @app.callback(
        Output("redirect", "href", allow_duplicate=True),
        Input("sheet-read", "n_clicks"),
        State("sheet-select", "value"),
        State(PAGE_STATE, "data"),
        prevent_initial_call=True,
    )
    def read_sheet(clicks: int | None, sheet: str | None, data: Any) -> Any:
        """Read another sheet of the open workbook; the page then opens the new table (roles suggested afresh)."""
        state = state_from_store(data)
        if not clicks or not sheet or not state.dataset:
            return no_update
        info = services.read_sheet(state.dataset, str(sheet), session=session_token())
        loaded = services.dataset(info.id)
        return services.links.href(services.initial_state(loaded, _targets(data)), PATH)

    @app.callback(
        Output("upload-list", "children"),
        Output("redirect", "href", allow_duplicate=True),
        Input({"type": "delete-upload", "dataset": ALL}, "n_clicks"),
        State(PAGE_STATE, "data"),
        prevent_initial_call=True,
    )
    def delete_upload(clicks: list[int | None], data: Any) -> tuple[Any, Any]:
        """Delete one of this browser's uploads; leave the page when it was the open one."""
        trigger = ctx.triggered_id
        if not isinstance(trigger, Mapping) or not any(clicks):
            return no_update, no_update
        session = session_token()
        dataset_id = str(trigger["dataset"])
        services.store.delete(dataset_id, session=session)
        state = state_from_store(data)
        return upload_list(services.store.owned(session)), (PATH if state.dataset == dataset_id else no_update)

    @app.callback(
        Output("preview-grid", "getRowsResponse"),
        Input("preview-grid", "getRowsRequest"),
        State(PAGE_STATE, "data"),
        prevent_initial_call=True,
    )
    def preview_block(request: Mapping[str, Any] | None, data: Any) -> Any:
        state = state_from_store(data)
        if not state.dataset or not request:
            return no_update
        return preview_rows(services.dataset(state.dataset).frame, request)

    @app.callback(
        Output(PAGE_STATE, "data"),
        Output({"type": "role", "column": ALL}, "value"),
        Output({"type": "kind", "column": ALL}, "value"),
        Output("column-message", "children"),
        Output("to-risk", "href"),
        Output("order-column", "data"),
        Input({"type": "role", "column": ALL}, "value"),
        Input({"type": "kind", "column": ALL}, "value"),
        Input("contract-upload", "contents"),
        Input("contract-reset", "n_clicks"),
        State({"type": "role", "column": ALL}, "id"),
        State("contract-upload", "filename"),
        State(PAGE_STATE, "data"),
        prevent_initial_call=True,
    )
    def update_columns(
        roles: list[str],
        kinds: list[str],
        contract_contents: str | None,
        _reset: int | None,
        ids: list[dict[str, str]],
        contract_name: str | None,
        data: Any,
    ) -> tuple:
        state, names = state_from_store(data), [item["column"] for item in ids]
        edit = ColumnEdit(
            roles=dict(zip(names, roles, strict=True)),
            types=dict(zip(names, kinds, strict=True)),
            contract_text=upload_text(contract_contents) if ctx.triggered_id == "contract-upload" else None,
            contract_name=contract_name if ctx.triggered_id == "contract-upload" else None,
            reset=ctx.triggered_id == "contract-reset",
        )
        try:
            new_state, message = edit_columns(services, state, edit), None
            if edit.contract_name is not None:  # a contract may carry hierarchies: kept with the upload
                new_state = hs.state_with_contract_hierarchies(services, new_state, edit.contract_text)
        except (PrivdashError, StateError) as exc:
            new_state, message = state, error_alert(str(exc), title="This change was not applied")
        return (
            new_state.to_dict(),
            [new_state.roles[n].value for n in names],
            [new_state.types[n].value for n in names],
            message,
            services.links.href(new_state, "/risk"),
            ordinal_columns(new_state),
        )

    @app.callback(
        Output("contract-download", "data"),
        Input("contract-export", "n_clicks"),
        State(PAGE_STATE, "data"),
        prevent_initial_call=True,
    )
    def export_contract(_clicks: int | None, data: Any) -> Any:
        state = state_from_store(data)
        loaded = services.dataset(str(state.dataset))
        stem = loaded.title.rsplit(".", 1)[0] if not loaded.is_demo else str(state.dataset).split(":")[-1]
        return {"content": hs.contract_json(services, loaded, state), "filename": f"{stem}.contract.json"}

    register_hierarchies(app, services)
    project_section.register(app, services)

    @app.callback(
        Output("demo-open", "disabled"),
        Input("demo-select", "value"),
        prevent_initial_call=True,
    )
    def demo_chosen(dataset_id: str | None) -> bool:
        return not dataset_id

    @app.callback(
        Output("order-empty", "style"),
        Output("order-picker", "style"),
        Output("order-editors", "style"),
        Output("order-column", "value"),
        Input("order-column", "data"),
        State("order-column", "value"),
        prevent_initial_call=True,
    )
    def order_shown(columns: list[str] | None, column: str | None) -> tuple[Any, Any, Any, Any]:
        """The editors when there is an ordinal column (showing the first one when none is chosen), else the line
        that says how to get one."""
        columns = list(columns or [])
        chosen = column if column in columns else (columns[0] if columns else None)
        return _shown(not columns), _shown(bool(columns)), _shown(bool(columns)), chosen

    @app.callback(
        Output("order-grid", "rowData"),
        Output("order-text", "value"),
        Input("order-column", "value"),
        Input(PAGE_STATE, "data"),
    )
    def show_order(column: str | None, data: Any) -> tuple[Any, Any]:
        state = state_from_store(data)
        if not column or not state.dataset or column not in ordinal_columns(state):
            return [], ""
        loaded = services.dataset(state.dataset)
        order = current_order(services, loaded, state, column)
        return [{"value": str(v)} for v in order], "\n".join(str(v) for v in order)

    @app.callback(
        Output(PAGE_STATE, "data", allow_duplicate=True),
        Output("order-message", "children"),
        Input("order-grid", "virtualRowData"),
        Input("order-apply", "n_clicks"),
        State("order-text", "value"),
        State("order-column", "value"),
        State(PAGE_STATE, "data"),
        prevent_initial_call=True,
    )
    def save_order(
        rows: list[dict[str, Any]] | None, _apply: int | None, text: str | None, column: str | None, data: Any
    ) -> tuple[Any, Any]:
        state = state_from_store(data)
        if not column or not state.dataset:
            return no_update, None
        labels = [str(r["value"]) for r in rows or []] if ctx.triggered_id == "order-grid" else _lines(text)
        if not labels:
            return no_update, None
        loaded = services.dataset(state.dataset)
        try:
            new_state = state_with_order(loaded, state, column, labels)
        except StateError as exc:
            return no_update, error_alert(str(exc), title="This order was not applied")
        if new_state == state:
            return no_update, None
        return new_state.to_dict(), None


def register_hierarchies(app: Dash, services: Services) -> None:
    """The hierarchy editor's callbacks: adapters between its controls and :mod:`privdash.application.hierarchies`."""
    ids = hierarchy_ui.IDS

    def given(loaded: LoadedDataset) -> Mapping[str, Any]:
        return FixRuns(services).reference_hierarchies(loaded)

    @app.callback(
        Output(ids["status"], "children"),
        Output(ids["levels"], "children"),
        Output(ids["groups"], "children"),
        Output(ids["level"], "data"),
        Output(ids["level"], "value"),
        Output("hier-rename-from", "data"),
        Input(ids["column"], "value"),
        Input(ids["level"], "value"),
        Input(PAGE_STATE, "data"),
    )
    def show_hierarchy(column: str | None, level: str | None, data: Any) -> tuple:
        state = state_from_store(data)
        if not column or not state.dataset:
            return "", None, None, [], None, []
        loaded = services.dataset(state.dataset)
        try:
            chosen = hs.level_number(level) if ctx.triggered_id == ids["level"] and level else None
            view = hs.editor_view(services, loaded, state, column, chosen, given(loaded))
        except PrivdashError as exc:
            return error_alert(str(exc), title="This hierarchy cannot be shown"), None, None, [], None, []
        levels, groups, choices, value, labels = hierarchy_ui.view_parts(view)
        return view.status, levels, groups, choices, value, labels

    @app.callback(
        Output(ids["column"], "data"),
        Output(ids["target"], "data"),
        Input(PAGE_STATE, "data"),
        prevent_initial_call=True,
    )
    def hierarchy_columns(data: Any) -> tuple:
        """The editor's column choices follow the roles: quasi-identifiers first."""
        state = state_from_store(data)
        if not state.dataset:
            return no_update, no_update
        loaded = services.dataset(state.dataset)
        qis = [name for name in loaded.columns if state.roles.get(name) == ColumnRole.QUASI_IDENTIFIER]
        return hierarchy_ui.column_options(loaded.columns, qis), hierarchy_ui.target_options(loaded.columns, qis)

    @app.callback(
        Output(ids["builder"], "value"),
        Output("hier-widths", "value"),
        Output("hier-low", "value"),
        Output("hier-high", "value"),
        Output("hier-bins", "value"),
        Output("hier-ratio", "value"),
        Output("hier-date-levels", "value"),
        Output("hier-lengths", "value"),
        Input(ids["column"], "value"),
        State(PAGE_STATE, "data"),
        prevent_initial_call=True,
    )
    def fill_form(column: str | None, data: Any) -> tuple:
        state = state_from_store(data)
        if not column or not state.dataset:
            return (no_update,) * 8
        form = hs.editor_form(services, services.dataset(state.dataset), state, column)
        low = "" if form.low is None else form.low
        high = "" if form.high is None else form.high
        return form.builder, form.widths, low, high, form.bins, form.ratio, list(form.date_levels), form.lengths

    @app.callback(
        Output({"type": "hier-panel", "builder": ALL}, "style"),
        Output(ids["apply"], "style"),
        Input(ids["builder"], "value"),
        State({"type": "hier-panel", "builder": ALL}, "id"),
    )
    def show_builder(builder: str | None, panel_ids: list[dict[str, str]]) -> tuple:
        return hierarchy_ui.panel_styles(builder, panel_ids), {"display": "none"} if builder == "groups" else None

    @app.callback(
        Output("hier-group-members", "data"),
        Output("hier-ungroup-name", "data"),
        Output("hier-ungroup-name", "value"),
        Input("hier-group-level", "value"),
        Input(ids["column"], "value"),
        Input(PAGE_STATE, "data"),
    )
    def group_choices(level: Any, column: str | None, data: Any) -> tuple:
        state = state_from_store(data)
        if not column or not state.dataset or not hs.editable(state.dataset):
            return [], [], None
        try:
            values, names = hs.group_choices(services, state, column, int(level or 1))
        except (PrivdashError, ValueError, TypeError):
            return [], [], None
        return values, names, names[0] if names else None

    @app.callback(
        Output(PAGE_STATE, "data", allow_duplicate=True),
        Output(ids["message"], "children"),
        Output("hier-group-members", "value"),
        Output("hier-group-name", "value"),
        Output("hier-rename-to", "value"),
        Input(ids["apply"], "n_clicks"),
        Input(ids["reset"], "n_clicks"),
        Input("hier-group-add", "n_clicks"),
        Input("hier-ungroup", "n_clicks"),
        Input("hier-rename", "n_clicks"),
        Input(ids["upload"], "contents"),
        State(ids["upload"], "filename"),
        State(ids["target"], "value"),
        State(ids["column"], "value"),
        State(ids["builder"], "value"),
        State("hier-widths", "value"),
        State("hier-low", "value"),
        State("hier-high", "value"),
        State("hier-bins", "value"),
        State("hier-ratio", "value"),
        State("hier-date-levels", "value"),
        State("hier-lengths", "value"),
        State("hier-group-level", "value"),
        State("hier-group-members", "value"),
        State("hier-group-name", "value"),
        State("hier-ungroup-name", "value"),
        State(ids["level"], "value"),
        State("hier-rename-from", "value"),
        State("hier-rename-to", "value"),
        State(PAGE_STATE, "data"),
        prevent_initial_call=True,
    )
    def edit_hierarchy(*args: Any) -> tuple:
        """Apply the editor's action (build, reset, group, ungroup, rename, import) and keep the result with the
        upload; the state then names the new set."""
        *_clicks, contents, names, target, column, builder = args[:10]
        widths, low, high, bins, ratio, date_levels, lengths = args[10:17]
        group_level, members, group_name, ungroup_name, level, rename_from, rename_to, data = args[17:]
        state, trigger = state_from_store(data), ctx.triggered_id
        keep: tuple[Any, Any, Any] = no_update, no_update, no_update
        try:
            if trigger == ids["upload"]:
                if not contents:
                    return no_update, no_update, *keep
                files = [(str(n), upload_bytes(c)) for n, c in zip(names or [], contents, strict=False)]
                chosen = None if target in (None, "", hierarchy_ui.MATCH_BY_NAME) else str(target)
                outcome = hs.import_files(services, state, files, chosen)
                changed = outcome.state.to_dict() if outcome.state != state else no_update
                return changed, hierarchy_ui.import_message(outcome.imported, outcome.errors), *keep
            if not column:
                raise hs.HierarchyError("Choose a column.")
            if trigger == ids["apply"]:
                form = hs.EditorForm(
                    builder=str(builder),
                    widths=str(widths or ""),
                    low=None if low in (None, "") else low,
                    high=None if high in (None, "") else high,
                    bins=str(bins or ""),
                    ratio=float(ratio or 2),
                    date_levels=tuple(date_levels or ()),
                    lengths=str(lengths or ""),
                )
                new_state = hs.edit_column(services, state, column, hs.settings_from_form(form))
            elif trigger == ids["reset"]:
                new_state = hs.reset_column(services, state, column)
            elif trigger == "hier-group-add":
                new_state = hs.group_values(
                    services, state, column, int(group_level or 1), list(members or []), str(group_name or "")
                )
                keep = [], "", no_update
            elif trigger == "hier-ungroup":
                new_state = hs.ungroup(services, state, column, int(group_level or 1), str(ungroup_name or ""))
            elif trigger == "hier-rename":
                new_state = hs.rename_group(
                    services, state, column, int(level or 1), str(rename_from or ""), str(rename_to or "")
                )
                keep = no_update, no_update, ""
            else:
                return no_update, no_update, *keep
        except (PrivdashError, StateError, ValueError) as exc:
            alert = error_alert(str(exc), title="The hierarchy was not changed", alert_id="hier-error")
            return no_update, alert, no_update, no_update, no_update
        return new_state.to_dict(), None, *keep

    @app.callback(
        Output(ids["download-data"], "data"),
        Input(ids["download"], "n_clicks"),
        State(ids["column"], "value"),
        State(PAGE_STATE, "data"),
        prevent_initial_call=True,
    )
    def download_hierarchy(_clicks: int | None, column: str | None, data: Any) -> Any:
        state = state_from_store(data)
        if not column or not state.dataset:
            return no_update
        loaded = services.dataset(state.dataset)
        hierarchy, _text, _stored = hs.current_hierarchy(services, loaded, state, column, given(loaded))
        return {"content": hs.arx_text(hierarchy), "filename": f"hierarchy_{column}.csv"}


def upload_bytes(contents: str | None) -> bytes:
    """The bytes of a file sent by ``dcc.Upload`` (a ``data:...;base64,`` URL)."""
    import base64

    if not contents or "," not in contents:
        return b""
    try:
        return base64.b64decode(contents.split(",", 1)[1])
    except ValueError as exc:
        raise ContractError("The file could not be read.") from exc


def _targets(data: Any) -> ViewState:
    try:
        state = state_from_store(data)
    except StateError:
        return ViewState()
    return ViewState(missing=state.missing, k=state.k, l=state.l, t=state.t, max_risk=state.max_risk)


def _lines(text: str | None) -> list[str]:
    return [line.strip() for line in (text or "").splitlines() if line.strip()]


def upload_outcome(result: Mapping[str, Any] | None, limit: int) -> tuple[Any, str | None]:
    """What the page shows after an upload: an error message, or the address of the new dataset's view."""
    if not result or not isinstance(result, Mapping):  # nothing, or not what the page's upload script writes
        return None, None
    info = result.get("too_large")
    if isinstance(info, Mapping):
        size = info.get("size")
        size = int(size) if isinstance(size, int | float) and 0 <= size < 2**63 else 0
        name = info.get("filename")
        message = too_large_message(name if isinstance(name, str) else None, size, limit)
        return error_alert(message, title="The file was not loaded", alert_id="upload-error"), None
    if result.get("error"):
        return error_alert(str(result["error"]), title="The file was not loaded", alert_id="upload-error"), None
    if result.get("href"):
        return None, str(result["href"])
    return None, None


def upload_text(contents: str | None) -> str | None:
    """The text of a file sent by ``dcc.Upload`` (a ``data:...;base64,`` URL), or None when nothing was sent."""
    import base64

    if not contents or "," not in contents:
        return None
    try:
        return base64.b64decode(contents.split(",", 1)[1]).decode("utf-8-sig")
    except (ValueError, UnicodeDecodeError) as exc:
        raise ContractError("The contract is not a UTF-8 JSON file.") from exc


__all__ = [
    "column_editor",
    "json_records",
    "layout",
    "preview_rows",
    "register",
    "upload_outcome",
]
