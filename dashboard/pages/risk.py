"""Risk page: equivalence classes, privacy models and re-identification risk of the open dataset.

Every number comes from :func:`privdash.measure.diagnose.diagnose` (through the per-process cache of
:class:`~privdash.application.services.Services`) or, for the QI-combination analysis, from
:mod:`privdash.measure.combinations` in a background job with a progress bar and a cancel button. What is shown
of them (class-size bins, headlines and their verdicts, the per-class table) is computed in
:mod:`privdash.application.riskview`; the builders here only arrange it, and callbacks turn control values into a new
view state and call the builders.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import dash
import dash_ag_grid as dag
import dash_mantine_components as dmc
import pandas as pd
import plotly.graph_objects as go
from dash import ClientsideFunction, Dash, Input, Output, State, ctx, dcc, html, no_update

from dashboard.ui.charts import SIZE_COLUMNS, chart, size_histogram
from dashboard.ui.components import (
    card,
    elapsed_progress,
    error_alert,
    fmt_count,
    fmt_share,
    no_dataset,
    page_title,
    progress_panel,
    verdict_banner,
)
from dashboard.ui.pagestate import PAGE_STATE, open_page, state_from_store, state_store
from dashboard.ui.report import register as register_report
from dashboard.ui.report import report_card
from dashboard.ui.targets import card_columns, headline_grid, release_error, target_ids, target_inputs, with_targets
from dashboard.ui.theme import COLORS, figure
from privdash.application.riskview import (
    ClassTable,
    Headline,
    RiskRow,
    cached_class_table,
    class_rows,
    combination_request,
    combinations_left_out,
    missing_effect,
    people_column,
    release_verdict,
    risk_headlines,
    run_combinations,
    size_bins,
    survey_risk_rows,
)
from privdash.application.services import Services
from privdash.application.state import StateError, ViewState
from privdash.errors import PrivdashError
from privdash.measure.classes import MissingPolicy
from privdash.measure.combinations import CombinationRisk, MinimalSampleUniques
from privdash.measure.diagnose import Diagnosis
from privdash.measure.model_risk import MODEL_RISK_METHODS
from privdash.measure.risk import records_at_risk_by_k

PATH = "/risk"
NAME = "Risk"

POLICY_OPTIONS = (
    (MissingPolicy.VALUE, "Missing is a value"),
    (MissingPolicy.WILDCARD, "Missing matches anything"),
    (MissingPolicy.DROP, "Drop records with missing"),
)
MODEL_RISK_LABELS = {
    "default": "Standard log-linear model",
    "CE": "Clogg-Eliason (weights as offset)",
    "PML": "Pseudo maximum likelihood",
    "weightedLLM": "Weighted log-linear model",
    "IPF": "Iterative proportional fitting",
}

POLICY_HELP = {
    MissingPolicy.VALUE: "A missing QI value is a category of its own, as an attacker sees it in the released table.",
    MissingPolicy.WILDCARD: "A missing QI value matches every value (cells suppressed by the publisher): records "
    "with a missing value blend into every compatible class.",
    MissingPolicy.DROP: "Records with a missing value in any QI are left out of every class and measure.",
}

# --- class sizes -----------------------------------------------------------------------------------------------


def size_table(binned: pd.DataFrame, n_records: int, k_target: int) -> Any:
    """The class-size frequency table; rows of sizes below the k target are marked."""
    head = dmc.TableThead(
        dmc.TableTr(
            [
                dmc.TableTh("Class size"),
                dmc.TableTh("Classes", ta="right"),
                dmc.TableTh("Records", ta="right"),
                dmc.TableTh("Share", ta="right"),
            ]
        )
    )
    rows = []
    columns = zip(
        binned["label"].tolist(),
        binned["low"].tolist(),
        binned["classes"].tolist(),
        binned["records"].tolist(),
        strict=True,
    )
    for label, low, n_classes, n_in in columns:
        marked = {"c": "red.8", "className": "below-k"} if low < k_target and n_classes else {}
        rows.append(
            dmc.TableTr(
                [
                    dmc.TableTd(label),
                    dmc.TableTd(fmt_count(n_classes), ta="right"),
                    dmc.TableTd(fmt_count(n_in), ta="right"),
                    dmc.TableTd(fmt_share(n_in / n_records if n_records else 0.0), ta="right"),
                ],
                **marked,
            )
        )
    return dmc.Table([head, dmc.TableTbody(rows)], striped=True, withTableBorder=False, fz="sm", id="size-table")


def records_at_risk_figure(diagnosis: Diagnosis, k_target: int) -> go.Figure:
    """Share of records in classes smaller than k, for k = 1, 2, ... (the core's records-at-risk-by-k curve)."""
    curve = records_at_risk_by_k(diagnosis.classes, diagnosis.k_values)
    fig = figure(
        go.Scatter(
            x=curve.x,
            y=100 * curve.fraction,
            mode="lines+markers",
            line_shape="hv",
            customdata=curve.records,
            hovertemplate="k = %{x}: %{customdata:,} records (%{y:.1f}%) in smaller classes<extra></extra>",
        ),
        xaxis_title="k",
        yaxis_title="records at risk (%)",
        height=300,
    )
    fig.add_vline(x=k_target, line_dash="dash", line_color=COLORS["muted"])
    fig.update_yaxes(range=[0, 100])
    return fig


# --- headline ------------------------------------------------------------------------------------------------------


def headline_cards(items: Sequence[Headline]) -> Any:
    """The headline numbers with their verdicts (card ids ``card-<key>``)."""
    return headline_grid(items, card_prefix="card-", grid_id="headline-cards", cols=card_columns((2, 3, 6), gap=16))


def records_analysed(diagnosis: Diagnosis) -> str:
    """``N records analysed``, or ``N people in M rows analysed`` when a person-id column makes one person several
    rows (every count of the page is then in people)."""
    if diagnosis.entity:
        return f"{fmt_count(diagnosis.n_records)} people in {fmt_count(diagnosis.rows)} rows analysed"
    return f"{fmt_count(diagnosis.n_records)} records analysed"


def summary_line(diagnosis: Diagnosis) -> Any:
    """Records, classes, uniques and the missing-value policy's effect, in one line of badges."""
    return dmc.Group(
        [
            dmc.Badge(records_analysed(diagnosis), id="records-analysed"),
            dmc.Badge(f"{fmt_count(diagnosis.classes.n_classes)} classes", id="class-count"),
            dmc.Badge(
                f"{fmt_count(diagnosis.sample_uniques)} unique {'people' if diagnosis.entity else 'records'}",
                color="red",
                id="unique-count",
            ),
            dmc.Badge(missing_effect(diagnosis), color="gray", id="missing-effect"),
            dmc.Badge(
                f"counted by {diagnosis.engine} in {diagnosis.counting_seconds:.2f} s", color="gray", id="engine-time"
            ),
        ],
        gap="xs",
    )


def survey_risk_table(rows: Sequence[RiskRow]) -> Any:
    """The survey, household, person-level and model-based risk measures of the diagnosis, one row each."""
    head = dmc.TableThead(dmc.TableTr([dmc.TableTh("Measure"), dmc.TableTh("Value", ta="right"), dmc.TableTh("")]))
    body = dmc.TableTbody(
        [
            dmc.TableTr(
                [
                    dmc.TableTd(row.measure),
                    dmc.TableTd(row.value, ta="right", id=f"survey-{row.key}"),
                    dmc.TableTd(row.detail, c="dimmed"),
                ]
            )
            for row in rows
        ]
    )
    return dmc.Table([head, body], striped=True, withTableBorder=False, fz="sm", id="survey-risk-table")


# --- per-class table -----------------------------------------------------------------------------------------


def class_grid(table: ClassTable) -> Any:
    """The virtualised per-class grid; rows are fetched from the server a block at a time, sorted there."""
    defs = []
    for field, title in table.titles.items():
        spec: dict[str, Any] = {"field": field, "headerName": title, "sortable": True}
        if field in ("size", "records"):
            spec.update(type="numericColumn", width=110)
        if field == "size":
            spec["sort"] = "asc"
        if field == "risk":
            spec.update(type="numericColumn", width=110, valueFormatter={"function": "d3.format('.1%')(params.value)"})
        if field.startswith(("l", "t")) and field[1:].isdigit():
            # Wide enough for the title, which names the sensitive attribute: "l (transaction_amount)".
            spec.update(type="numericColumn", width=max(130, 8 * len(title) + 48))
            if field.startswith("t"):
                spec["valueFormatter"] = {"function": "params.value == null ? '' : d3.format('.3f')(params.value)"}
        if field == "fails":
            spec.update(width=110, cellClass="mono")
        defs.append(spec)
    return dag.AgGrid(
        id="class-grid",
        columnDefs=defs,
        rowModelType="infinite",
        defaultColDef={"resizable": True, "minWidth": 90},
        # AG Grid skips painting a grid outside the viewport (content-visibility: auto): screenshots, prints and
        # a shared view scrolled elsewhere would show an empty box.
        dashGridOptions={
            "cacheBlockSize": 100,
            "maxBlocksInCache": 20,
            "rowBuffer": 10,
            "suppressContentVisibilityAuto": True,
        },
        getRowStyle={
            "styleConditions": [
                {"condition": "params.data && params.data.fails", "style": {"backgroundColor": "#fff5f5"}}
            ]
        },
        style={"height": "420px"},
    )


# --- QI combinations -----------------------------------------------------------------------------------------


def combination_columns(k_threshold: int) -> list[dict[str, Any]]:
    """The columns of the grid of every QI combination. Only the combination itself has a filter (of its text): a
    filter button beside a right-aligned number's title sat next to the title of the column before it; the numbers
    sort by a click on their titles."""
    three_decimals = {"function": "d3.format('.3f')(params.value)"}
    number = {"type": "numericColumn", "filter": False, "valueFormatter": {"function": "d3.format(',')(params.value)"}}
    return [
        {"field": "qis", "headerName": "Quasi-identifiers", "flex": 2, "minWidth": 180, "filter": True},
        {"field": "size", "headerName": "Number of QIs", **number},
        {"field": "sample_uniques", "headerName": "Unique records", **number},
        {"field": "records_below_k", "headerName": f"Records in classes < {k_threshold}", **number},
        {
            "field": "k",
            "headerName": "Smallest class (k)",
            "headerTooltip": "Size of the smallest class when the records are grouped on these QIs",
            **number,
        },
        {"field": "classes", "headerName": "Classes", **number},
        {
            "field": "distinction",
            "headerName": "Distinction",
            "headerTooltip": "Classes per record (1: every record is in a class of its own)",
            **number,
            "valueFormatter": three_decimals,
        },
        {
            "field": "separation",
            "headerName": "Separation",
            "headerTooltip": "Share of record pairs that these QIs tell apart",
            **number,
            "valueFormatter": three_decimals,
        },
    ]


def combinations_view(risk: CombinationRisk, msus: MinimalSampleUniques | None) -> Any:
    """Which QI combinations make records unique: leave-one-out drops, the smallest unique combinations, and the
    table of every subset."""
    contributions = risk.qi_contributions
    bar = figure(
        go.Bar(
            x=contributions["quasi_identifier"],
            y=contributions["uniques_drop"],
            marker_color=COLORS["primary"],
            hovertemplate="without %{x}: %{y:,} fewer unique records<extra></extra>",
        ),
        yaxis_title="fewer unique records",
        xaxis_title="quasi-identifier left out",
        height=280,
    )
    bar.update_xaxes(type="category")
    table_rows: list[dict[Any, Any]] = risk.table.to_dict("records")
    grid = dag.AgGrid(
        id="combination-grid",
        rowData=[
            {
                "qis": " + ".join(map(str, row["quasi_identifiers"])),
                "size": int(row["size"]),
                "sample_uniques": int(row["sample_uniques"]),
                "records_below_k": int(row["records_below_k"]),
                "k": int(row["k"]),
                "classes": int(row["classes"]),
                "distinction": float(row["distinction"]),
                "separation": float(row["separation"]),
            }
            for row in table_rows
        ],
        columnDefs=combination_columns(risk.k_threshold),
        # Flex columns share the card's width (none is cut off at the right); long titles wrap onto two lines.
        defaultColDef={
            "sortable": True,
            "resizable": True,
            "flex": 1,
            "minWidth": 110,  # the longest word of a title ("Distinction") whole
            "wrapHeaderText": True,
            "autoHeaderHeight": True,
        },
        dashGridOptions={"suppressContentVisibilityAuto": True},  # painted off screen too (see class_grid)
        style={"height": "320px"},
    )
    parts: list[Any] = [
        chart(
            dcc.Graph(figure=bar, config={"displaylogo": False}, id="contribution-chart"),
            title="Unique records lost without each quasi-identifier",
            summary="Unique records lost when one quasi-identifier is left out: the tallest bars are the attributes "
            "that single people out.",
        ),
    ]
    if msus is not None:
        by_size = msus.counts_by_size()
        by_size = by_size[by_size["records"] > 0]
        text = ", ".join(
            f"{fmt_count(records)} by {size} QI{'s' if size > 1 else ''}"
            for size, records in zip(by_size["size"].tolist(), by_size["records"].tolist(), strict=True)
        )
        parts.append(
            dmc.Text(
                f"{fmt_count(msus.n_unique)} records are unique on all QIs. Smallest combination that singles them "
                f"out: {text or 'none'}.",
                size="sm",
                id="msu-summary",
            )
        )
    parts += [dmc.Text("Every combination of quasi-identifiers", fw=500, size="sm", mt="sm"), grid]
    return dmc.Stack(parts, gap="xs")


# --- page ------------------------------------------------------------------------------------------------------


def controls(loaded_columns: Sequence[str], state: ViewState) -> Any:
    """Roles (QIs, sensitive attributes), the missing-value policy and the targets."""
    data = [{"value": name, "label": name} for name in loaded_columns]
    return card(
        None,
        dmc.Grid(
            [
                dmc.GridCol(
                    dmc.MultiSelect(
                        id="risk-qis",
                        label="Quasi-identifiers",
                        data=data,
                        value=list(state.quasi_identifiers),
                        searchable=True,
                        clearable=True,
                    ),
                    span={"base": 12, "md": 6},
                ),
                dmc.GridCol(
                    dmc.MultiSelect(
                        id="risk-sas",
                        label="Sensitive attributes",
                        data=data,
                        value=list(state.sensitive),
                        searchable=True,
                        clearable=True,
                    ),
                    span={"base": 12, "md": 6},
                ),
                dmc.GridCol(
                    dmc.Stack(
                        [
                            dmc.Text("Missing QI values", size="sm", fw=500),
                            dmc.SegmentedControl(
                                id="risk-missing",
                                data=[{"value": p.value, "label": label} for p, label in POLICY_OPTIONS],
                                value=state.missing.value,
                                size="xs",
                                **{"aria-label": "Missing QI values"},
                            ),
                            dmc.Text(POLICY_HELP[state.missing], size="xs", c="dimmed", id="missing-help"),
                        ],
                        gap=4,
                    ),
                    span={"base": 12, "md": 6},
                ),
                dmc.GridCol(target_inputs("target-", state), span={"base": 12, "md": 6}),
                dmc.GridCol(
                    dmc.MultiSelect(
                        id="risk-model",
                        label="Model-based risk (sdcMicro modRisk)",
                        description="Fit a log-linear model of the QI table and estimate how many sample uniques "
                        "are population uniques; the weight column's sampling weights are used.",
                        data=[{"value": method, "label": MODEL_RISK_LABELS[method]} for method in MODEL_RISK_METHODS],
                        value=list(state.model_risk),
                        searchable=True,
                        clearable=True,
                    ),
                    span={"base": 12, "md": 6},
                ),
            ],
            gutter="md",
        ),
    )


def results(services: Services, state: ViewState) -> Any:
    """Everything below the controls for ``state``, or the message explaining why there is nothing to show."""
    try:
        diagnosis = services.diagnosis(state)
    except PrivdashError as exc:
        return error_alert(str(exc), title="The risk cannot be computed", alert_id="risk-error")
    binned = size_bins(diagnosis.classes.size_frequencies())
    table = cached_class_table(services, state)
    survey = survey_risk_rows(diagnosis)
    return dmc.Stack(
        [
            verdict_banner(release_verdict(diagnosis, state), people=diagnosis.entity is not None),
            summary_line(diagnosis),
            headline_cards(risk_headlines(diagnosis, state)),
            *(
                [
                    card(
                        "Survey, household and person-level risk",
                        survey_risk_table(survey),
                        description="Risk measures for sample surveys (sampling weights), households and people "
                        "with several rows; definitions in the report and docs/definitions.md.",
                        id="survey-risk-card",
                    )
                ]
                if survey
                else []
            ),
            dmc.Grid(
                [
                    dmc.GridCol(
                        card(
                            "Class sizes",
                            size_table(binned, diagnosis.n_records, state.k),
                            description="How many classes have each size; sizes above 12 are grouped.",
                        ),
                        span={"base": 12, "lg": 4},
                    ),
                    dmc.GridCol(
                        card(
                            "Class-size histogram",
                            chart(
                                dcc.Graph(
                                    figure=size_histogram(binned, state.k),
                                    config={"displaylogo": False},
                                    id="size-chart",
                                ),
                                title="Class-size histogram",
                                summary="Classes per size; hatched dark-red bars are below the target k.",
                                columns=SIZE_COLUMNS,
                                title_visible=False,
                            ),
                        ),
                        span={"base": 12, "lg": 4},
                    ),
                    dmc.GridCol(
                        card(
                            "Records at risk over k",
                            chart(
                                dcc.Graph(
                                    figure=records_at_risk_figure(diagnosis, state.k),
                                    config={"displaylogo": False},
                                    id="risk-curve",
                                ),
                                title="Records at risk over k",
                                summary="Share of records in classes smaller than k (dashed line: the target k).",
                                columns=(("x", "k"), ("customdata", "records at risk"), ("y", "share (%)")),
                                title_visible=False,
                            ),
                        ),
                        span={"base": 12, "lg": 4},
                    ),
                ],
                gutter="md",
            ),
            card(
                "Equivalence classes",
                dmc.Group(
                    [
                        dmc.Switch(
                            id="risk-violating",
                            label="Only classes that fail a target",
                            checked=state.violating,
                        ),
                        dmc.Text(
                            f"{fmt_count(int((table.frame['fails'] != '').sum()))} of "
                            f"{fmt_count(len(table.frame))} classes fail a target",
                            size="sm",
                            c="dimmed",
                            id="failing-classes",
                        ),
                    ],
                    justify="space-between",
                    mb="xs",
                ),
                class_grid(table),
                description="One row per class: its QI values, size, prosecutor risk, and l and t per sensitive "
                "attribute. Click a header to sort.",
            ),
        ],
        gap="md",
    )


def combination_card() -> Any:
    return card(
        "Which QI combinations make records unique",
        html.Div(
            progress_panel("combo"),
            id="combo-running",
            style={"display": "none"},
        ),
        html.Div(id="combo-results"),
        description="Every subset of the quasi-identifiers is grouped on its own (runs in the background).",
        mt="md",
    )


def waiting_text() -> Any:
    """What the results say while a background job counts a server-side source: the progress of the count and its
    Cancel button, replaced by the results (the job's output) when the count is done."""
    return card(
        None,
        dmc.Stack(
            [
                dmc.Text(
                    "Counting the classes where the data lives; the results appear here when the count is done.",
                    size="sm",
                    c="dimmed",
                    id="risk-waiting",
                ),
                progress_panel("risk", label="Progress of the count"),
            ],
            gap="xs",
        ),
        id="risk-running",
    )


def slow_request(services: Services, state: ViewState, previous: Any) -> tuple[Any, Any, Any]:
    """``risk-results``, ``risk-slow-results`` and ``risk-slow-request`` for ``state``: the results at once when the
    diagnosis is ready, else a waiting text and a request for the background job. A ready state sends an empty
    request when a job may still be running, which cancels it (its result would belong to the earlier view)."""
    if services.diagnosis_ready(state):
        return results(services, state), None, (None if previous is not None else no_update)
    request = state.to_dict()
    return None, waiting_text(), (request if request != previous else no_update)


def layout(services: Services, **query: Any) -> Any:
    """The Risk page for the state in ``query``."""
    state, loaded, alerts = open_page(services, query)
    body: list[Any] = [page_title("Risk", "How easily can the records be re-identified, and which ones?"), *alerts]
    if loaded is None:
        body += [no_dataset(), state_store(state)]
        return html.Div(body)
    ready = services.diagnosis_ready(state)
    body += [
        controls(loaded.columns, state),
        dcc.Loading(
            html.Div(results(services, state) if ready else None, id="risk-results"), delay_show=300, type="dot"
        ),
        html.Div(None if ready else waiting_text(), id="risk-slow-results"),
        dcc.Store(id="risk-slow-request", data=None),
        # The first count of a page starts from one tick of this timer (when there is something to count), so that
        # it is requested once: a request forwarded through a second store was sent twice by the browser.
        dcc.Interval(id="risk-initial-tick", interval=100, max_intervals=0 if ready else 1),
        dcc.Store(id="risk-initial-request", data=None if ready else state.to_dict()),
        combination_card(),
        report_card(),
        dcc.Store(id="combo-request", data=combination_request(state)),
        dcc.Store(id="class-grid-version", data=0),
        state_store(state),
    ]
    return html.Div(body)


# --- callbacks -----------------------------------------------------------------------------------------------------


def controls_state(
    state: ViewState,
    qis: list[str] | None,
    sas: list[str] | None,
    missing: str,
    models: list[str] | None,
    *targets: Any,
) -> ViewState:
    """The state the controls describe: roles, missing-value policy, model-based risk methods and the targets k, l,
    t, risk and the release rules' text (in that order; the text may be left out: the state's rules are kept).
    Raises :class:`StateError` or ``PrivdashError`` for settings that are not valid."""
    if models is not None and not isinstance(models, list):
        raise StateError("The model-based risk methods must be a list.")
    chosen = state.with_quasi_identifiers(qis or [], sas or []).updated(
        missing=MissingPolicy.parse(missing), model_risk=tuple(models or ())
    )
    return with_targets(chosen, *targets)


def register(app: Dash, services: Services) -> None:
    dash.register_page(
        __name__, path=PATH, name=NAME, title="privdash · Risk", order=1, layout=lambda **q: layout(services, **q)
    )
    register_report(app, services)

    @app.callback(
        Output(PAGE_STATE, "data", allow_duplicate=True),
        Output("risk-results", "children"),
        Output("risk-slow-results", "children", allow_duplicate=True),
        Output("risk-slow-request", "data"),
        Output("risk-sas", "value"),
        Output("missing-help", "children"),
        Output("combo-request", "data"),
        Output("target-release", "error"),
        Input("risk-qis", "value"),
        Input("risk-sas", "value"),
        Input("risk-missing", "value"),
        Input("risk-model", "value"),
        *[Input(target, "value") for target in target_ids("target-")],
        State(PAGE_STATE, "data"),
        State("combo-request", "data"),
        State("risk-slow-request", "data"),
        prevent_initial_call=True,
    )
    def update_risk(
        qis: list[str] | None, sas: list[str] | None, missing: str, models: list[str] | None, *rest: Any
    ) -> tuple[Any, ...]:
        *targets, data, previous_request, previous_slow = rest
        # Release rules that cannot be read are explained under their input; the page keeps what it shows.
        rules_error = release_error(targets[-1])
        if rules_error:
            return (*(no_update,) * 7, rules_error)
        try:
            current = state_from_store(data)
            new_state = controls_state(current, qis, sas, missing, models, *targets)
        except (StateError, PrivdashError, ValueError) as exc:
            alert = error_alert(str(exc), title="These settings are not valid")
            return (no_update, alert, None, no_update, no_update, no_update, no_update, None)
        if new_state == current:  # a control settling on the value it shows: nothing to compute (or count) again
            return (*(no_update,) * 7, None)
        request = combination_request(new_state)
        return (
            new_state.to_dict(),
            *slow_request(services, new_state, previous_slow),
            list(new_state.sensitive),
            POLICY_HELP[new_state.missing],
            request if request != previous_request else no_update,
            None,
        )

    @app.callback(
        Output("risk-slow-results", "children", allow_duplicate=True),
        Input("risk-cancel", "n_clicks"),
        prevent_initial_call=True,
    )
    def cancelled(_clicks: int | None) -> Any:
        return dmc.Text(
            "Counting cancelled. Change a setting, or reload the page, to count again.",
            size="sm",
            id="risk-cancelled",
            **{"aria-live": "polite"},
        )

    @app.callback(
        Output("risk-slow-results", "children"),
        Input("risk-slow-request", "data"),
        Input("risk-initial-tick", "n_intervals"),
        State("risk-initial-request", "data"),
        prevent_initial_call=True,
        background=True,
        progress=[Output("risk-progress", "value"), Output("risk-status", "children")],
        cancel=[Input("risk-cancel", "n_clicks"), Input("url", "pathname")],
        interval=500,
    )
    def slow_results(
        set_progress: Callable[[tuple[int, str]], None], request: Any, ticks: int | None, initial: Any
    ) -> Any:
        """Count a server-side source in a background job (cancellable), then show its results: the page's first
        count (one tick of its timer), or a later one (a request of :func:`update_risk`)."""
        if ctx.triggered_id == "risk-initial-tick":
            request = initial if ticks else None
        if not request:  # the page's controls show results without a count (an empty request stops a running one)
            return no_update
        state = state_from_store(request)
        try:
            loaded = services.dataset(state.dataset or "")
            where = loaded.source.describe() if loaded.source is not None else loaded.title
            with elapsed_progress(set_progress, f"Counting the classes of {loaded.title} ({where})"):
                services.diagnosis(state)
        except PrivdashError as exc:
            return error_alert(str(exc), title="The risk cannot be computed", alert_id="risk-error")
        return results(services, state)

    @app.callback(
        Output(PAGE_STATE, "data", allow_duplicate=True),
        Input("risk-violating", "checked"),
        State(PAGE_STATE, "data"),
        prevent_initial_call=True,
    )
    def toggle_violating(checked: bool | None, data: Any) -> Any:
        state = state_from_store(data)
        if bool(checked) == state.violating:
            return no_update
        return state.updated(violating=bool(checked)).to_dict()

    @app.callback(
        Output("class-grid", "getRowsResponse"),
        Input("class-grid", "getRowsRequest"),
        State(PAGE_STATE, "data"),
        prevent_initial_call=True,
    )
    def class_block(request: Mapping[str, Any] | None, data: Any) -> Any:
        state = state_from_store(data)
        if not request or not state.dataset:
            return no_update
        try:
            table = cached_class_table(services, state)
        except PrivdashError:
            return {"rowData": [], "rowCount": 0}
        return class_rows(table, request, violating_only=state.violating)

    app.clientside_callback(
        ClientsideFunction("privdash", "refreshGrid"),
        Output("class-grid-version", "data"),
        Input(PAGE_STATE, "data"),
        State("class-grid", "id"),
        prevent_initial_call=True,
    )

    @app.callback(
        Output("combo-results", "children"),
        Input("combo-request", "data"),
        State(PAGE_STATE, "data"),
        background=True,
        progress=[Output("combo-progress", "value"), Output("combo-status", "children")],
        running=[(Output("combo-running", "style"), {"display": "block"}, {"display": "none"})],
        cancel=[Input("combo-cancel", "n_clicks"), Input("url", "pathname")],
        interval=300,
    )
    def combinations(set_progress: Callable[[tuple[int, str]], None], request: Any, data: Any) -> Any:
        if not request or not request.get("dataset") or not request.get("qis"):
            return dmc.Text("Choose at least one quasi-identifier.", size="sm", c="dimmed")
        try:
            state = state_from_store(data)
            entity = people_column(state)
            if entity is not None:  # the classes are of people: row combinations would count other things
                return dmc.Text(combinations_left_out(entity), size="sm", c="dimmed", id="combo-left-out")
            risk, msus = run_combinations(services, state, set_progress)
        except PrivdashError as exc:
            return error_alert(str(exc), title="The combinations were not analysed")
        return combinations_view(risk, msus)


__all__ = [
    "combinations_view",
    "controls_state",
    "headline_cards",
    "layout",
    "records_at_risk_figure",
    "register",
    "results",
    "size_table",
    "summary_line",
]
