"""The Fix page's "Differential privacy" section: counts, histograms, sums and means released with OpenDP, their error
bars and the dataset's budget ledger.

A thin adapter over :mod:`privdash.application.dp_release`: the form is checked there, the release is computed by
the core and charged to the dataset's ledger (kept on the server, in the store folder). Nothing is computed when
the page loads: the card reads the ledger to show what was spent. Pressing "Release" shows each DP value with its
95% error bar (table and chart) and, beside it, the true value in a column for the data owner only; the download
(CSV) holds the DP values and error bars, never the true values. When the dataset's contract marks a person-id
column, the form asks for the most rows one person may contribute (``dp-max-rows``) and the release protects people,
not rows (the field is always in the layout, hidden without a person-id column). Ids start with ``dp-``.
"""

from __future__ import annotations

import weakref
from pathlib import Path
from typing import Any

import dash_mantine_components as dmc
import pandas as pd
import plotly.graph_objects as go
from dash import Dash, Input, Output, State, dcc, html, no_update

from dashboard.ui.charts import chart
from dashboard.ui.components import card as card_box
from dashboard.ui.components import error_alert, scroll_table
from dashboard.ui.pagestate import PAGE_STATE, state_from_store
from dashboard.ui.theme import COLORS, figure
from privdash.application.dp_release import (
    CATEGORY_SOURCES,
    MAX_ROWS_FIELD,
    QUERIES,
    ReleaseOutcome,
    ReleaseRequest,
    describe,
    display_digits,
    download_name,
    ledger_for,
    release_csv,
    result_rows,
    table_keys,
)
from privdash.application.services import LoadedDataset, Services
from privdash.application.state import ViewState
from privdash.dp import BudgetExceededError, DatasetAccount, Mechanism
from privdash.errors import PrivdashError

__all__ = ["card", "register"]

#: The mechanisms offered: value -> label.
MECHANISMS = {
    Mechanism.LAPLACE.value: "Laplace",
    Mechanism.GEOMETRIC.value: "Geometric (integer values)",
    Mechanism.GAUSSIAN.value: "Gaussian (needs δ > 0)",
}
#: Released values shown in the table and the chart (the download holds them all).
MAX_SHOWN = 200
#: The header of the true values: who may see them, and that they never leave the page.
TRUE_HEADER = "True value (data owner only, not in the download)"
_HIDDEN, _SHOWN = {"display": "none"}, {"display": "block"}
_REGISTERED: weakref.WeakSet[Dash] = weakref.WeakSet()


def card(loaded: LoadedDataset, state: ViewState, services: Services) -> Any:
    """The section's component for the open dataset: the form, the (empty) result and the budget ledger."""
    title = "Differential privacy"
    if loaded.source is not None:
        return card_box(
            title,
            dmc.Text(
                f"'{loaded.title}' is a server-side source: a differentially private release needs every row in the "
                "server's memory. Release from the command line: privdash release FILE --query count --epsilon 0.5",
                size="sm",
            ),
            mt="md",
            id="dp-card",
        )
    entity = person_id(loaded, state, services)
    try:
        known = ledger_for(services).known(table_keys(services, loaded))
        if known is None:
            ledger: Any = ledger_view(DatasetAccount(services.settings.dp_budget), None)
        else:
            ledger = ledger_view(known[1], known[0])
    except PrivdashError as exc:
        ledger = error_alert(str(exc), title="The budget ledger cannot be read", alert_id="dp-ledger-error")
    return card_box(
        title,
        form(loaded, entity),
        dcc.Loading(html.Div(id="dp-result"), delay_show=300, type="dot"),
        html.Div(ledger, id="dp-ledger"),
        dcc.Store(id="dp-csv", data=None),
        dcc.Download(id="dp-download"),
        description="Publish a count, a histogram, a sum or a mean with calibrated noise (OpenDP) instead of the "
        "records. "
        + (
            f"A person may have several rows (person id '{entity}'): declare the most rows per person below. "
            if entity is not None
            else "Each person must contribute one row (mark a person-id column on the Data page otherwise). "
        )
        + "Every release spends part of the dataset's privacy budget; "
        "a release that would exceed it is refused.",
        mt="md",
        id="dp-card",
    )


def person_id(loaded: LoadedDataset, state: ViewState, services: Services) -> str | None:
    """The person-id column of the dataset's contract as the view state describes it (None: one row per person,
    or a contract that does not fit, which the release reports)."""
    try:
        return services.contract(loaded, state).entity
    except PrivdashError:
        return None


def visibility(query: str | None, categories: str | None) -> tuple[dict[str, str], ...]:
    """Styles of the column, histogram, domain and bounds fields for ``query``."""
    histogram = query == "histogram"
    return (
        _SHOWN if query in ("histogram", "sum", "mean") else _HIDDEN,
        _SHOWN if histogram else _HIDDEN,
        _SHOWN if histogram and categories != "keys" else _HIDDEN,
        _SHOWN if query in ("sum", "mean") else _HIDDEN,
    )


def form(loaded: LoadedDataset, entity: str | None = None) -> Any:
    """The release's controls and the Release button (the column, domain and bounds show for the queries that use
    them; the bound on rows per person when the contract has a person-id column ``entity``)."""
    column_style, histogram_style, domain_style, bounds_style = visibility("count", "domain")
    decimal = {"inputMode": "decimal"}
    return dmc.Stack(
        [
            dmc.SimpleGrid(
                [
                    dmc.Select(
                        id="dp-query",
                        label="What to release",
                        data=[{"value": k, "label": v} for k, v in QUERIES.items()],
                        value="count",
                        allowDeselect=False,
                    ),
                    dmc.TextInput(
                        id="dp-epsilon",
                        label="ε (epsilon) of this release",
                        description="Privacy loss: smaller is more private and noisier",
                        value="0.1",
                        inputProps=decimal,
                    ),
                    dmc.TextInput(
                        id="dp-delta",
                        label="δ (delta)",
                        description="0 for Laplace and geometric; e.g. 1e-7",
                        value="0",
                        inputProps=decimal,
                    ),
                    dmc.Select(
                        id="dp-mechanism",
                        label="Noise",
                        data=[{"value": k, "label": v} for k, v in MECHANISMS.items()],
                        value=Mechanism.LAPLACE.value,
                        allowDeselect=False,
                    ),
                ],
                cols={"base": 1, "sm": 2, "lg": 4},
                spacing="md",
            ),
            html.Div(
                dmc.Select(
                    id="dp-column",
                    label="Column",
                    description="Sum and mean need a numeric column",
                    data=list(loaded.columns),
                    placeholder="Choose a column",
                    searchable=True,
                    maw=420,
                ),
                id="dp-column-box",
                style=column_style,
            ),
            html.Div(
                dmc.RadioGroup(
                    dmc.Group([dmc.Radio(label=v, value=k) for k, v in CATEGORY_SOURCES.items()], mt=4),
                    id="dp-categories",
                    label="Categories of the histogram",
                    description="Never the data's own values: a rare one would reveal the person who holds it",
                    value="domain",
                    size="sm",
                ),
                id="dp-histogram-box",
                style=histogram_style,
            ),
            html.Div(
                dmc.Textarea(
                    id="dp-domain",
                    label="Public categories (the domain)",
                    description="Separated by commas, or one per line. Values of the data outside them are not "
                    "counted; categories without records get noisy counts too.",
                    placeholder="e.g. F, M",
                    autosize=True,
                    minRows=2,
                    maw=640,
                ),
                id="dp-domain-box",
                style=domain_style,
            ),
            html.Div(
                dmc.Group(
                    [
                        dmc.NumberInput(id="dp-low", label="Lower bound L", description="Declared, public", w=200),
                        dmc.NumberInput(
                            id="dp-high", label="Upper bound U", description="Values outside are clamped", w=200
                        ),
                    ],
                    gap="md",
                    align="flex-start",
                ),
                id="dp-bounds-box",
                style=bounds_style,
            ),
            html.Div(
                dmc.NumberInput(
                    id="dp-max-rows",
                    label=MAX_ROWS_FIELD,
                    description=f"'{entity}' identifies people, who may have several rows. Each person keeps at most "
                    "this many rows (chosen at random, the others are dropped) and the noise is scaled to it, so the "
                    "privacy loss is per person. Declare a public bound: a larger one drops fewer rows but adds more "
                    "noise.",
                    min=1,
                    step=1,
                    allowDecimal=False,
                    allowNegative=False,
                    placeholder="e.g. 3",
                    maw=640,
                ),
                id="dp-max-rows-box",
                style=_SHOWN if entity is not None else _HIDDEN,
            ),
            dmc.Group(
                [
                    dmc.TextInput(
                        id="dp-identity",
                        label="Population (dataset identity)",
                        description="The people this table describes, whose budget the release spends. Left empty: "
                        "the population this table (or a copy of it) was released under, else the table's name.",
                        placeholder=loaded.title,
                        w=420,
                    ),
                    dmc.Checkbox(
                        id="dp-distinct",
                        label="Other people than the similar table",
                        description="Tick only when the ledger warns of a similar table that describes other people",
                        mt="lg",
                    ),
                ],
                gap="md",
                align="flex-start",
            ),
            dmc.Group(dmc.Button("Release", id="dp-release"), gap="md"),
        ],
        gap="sm",
    )


def _fmt(value: float, digits: int) -> str:
    return f"{value:,.{digits}f}"


def result_view(outcome: ReleaseOutcome) -> Any:
    """The release: its parameters, the table (DP value, error bar, true value for the owner), the chart and the
    download."""
    release = outcome.release
    rows = result_rows(release)
    digits = display_digits(release.expected_error)
    shown = rows.head(MAX_SHOWN)
    key_header = release.columns[0] if release.query == "histogram" else "release"
    percent = f"{release.confidence:.0%}"
    head = dmc.TableThead(
        dmc.TableTr(
            [
                dmc.TableTh(key_header),
                dmc.TableTh("DP value", ta="right"),
                dmc.TableTh(f"± ({percent} error bar)", ta="right"),
                dmc.TableTh(TRUE_HEADER, ta="right", className="dp-true"),
            ]
        )
    )
    body = dmc.TableTbody(
        [
            dmc.TableTr(
                [
                    dmc.TableTd(label),
                    dmc.TableTd(_fmt(value, digits), ta="right", className="dp-value"),
                    # Three significant digits: the bar depends only on the mechanism, ε and δ, never on the data.
                    dmc.TableTd(f"{error:#.3g}".rstrip("."), ta="right", className="dp-error"),
                    dmc.TableTd(_fmt(true, 0 if float(true).is_integer() else digits), ta="right", className="dp-true"),
                ]
            )
            for label, value, error, true in shown.itertuples(index=False)
        ]
    )
    notes: list[Any] = [
        dmc.Alert(warning, title="Warning: a similar table", color="yellow", variant="light", className="dp-warning")
        for warning in outcome.warnings
    ]
    if len(rows) > len(shown):
        notes.append(
            dmc.Text(f"The first {len(shown):,} of {len(rows):,} values are shown; the download holds all.", size="xs")
        )
    if rows.empty:
        notes.append(dmc.Text("No category reached the key-selection threshold: nothing is released.", size="sm"))
    graph = dcc.Graph(id="dp-chart", figure=release_figure(shown, key_header), config={"displaylogo": False})
    return dmc.Stack(
        [
            dmc.Alert(
                describe(release),
                title=f"Released: ε = {release.epsilon:g}, δ = {release.delta:g} charged to the budget of "
                f"'{outcome.identity}'",
                color="blue",
                variant="light",
                id="dp-released",
            ),
            scroll_table(
                "Released values",
                dmc.Table([head, body], fz="sm", striped=True, id="dp-table"),
                minWidth=480,
                maxHeight=420,
            ),
            *notes,
            dmc.Text(
                f"± is the half-width of the {percent} interval of the noise, per value. The true values are for you "
                "as the data owner: they stay on this page and are never in the download.",
                size="xs",
                c="dimmed",
            ),
            chart(
                graph,
                title=f"DP values with their {percent} error bars",
                summary="Each point is a released (noisy) value; the whisker spans ± its error bar, within which the "
                f"true value lies with {percent} probability. True values are not plotted.",
                columns=(("x", key_header), ("y", "DP value"), ("customdata.0", f"± ({percent})")),
            ),
            dmc.Group(
                [
                    dmc.Button("Download the release (CSV)", id="dp-download-button", variant="light"),
                    dmc.Text("Categories, DP values and error bars; never the true values.", size="xs", c="dimmed"),
                ],
                gap="sm",
            ),
        ],
        gap="sm",
        mt="md",
    )


def release_figure(rows: pd.DataFrame, key_header: str) -> go.Figure:
    """The DP values as points with their error bars as whiskers (points, not bars from 0: the whiskers stay
    visible on large counts)."""
    errors = rows["error"].to_numpy(dtype=float)
    fig = figure(
        go.Scatter(
            x=rows["label"].astype(str).tolist(),
            y=rows["dp_value"].to_numpy(dtype=float),
            mode="markers",
            error_y={
                "type": "data",
                "array": errors.tolist(),
                "visible": True,
                "color": COLORS["text"],
                "thickness": 1.5,
            },
            marker={"color": COLORS["primary"], "size": 10, "symbol": "diamond"},
            customdata=errors.reshape(-1, 1),
            hovertemplate="%{x}: %{y:,.2f} ± %{customdata[0]:,.2f}<extra></extra>",
        ),
        xaxis_title=key_header,
        yaxis_title="DP value",
        height=300,
    )
    fig.update_xaxes(type="category")
    return fig


def ledger_view(account: DatasetAccount, identity: str | None) -> Any:
    """The budget of the population ``identity`` (None: the table was never released, ``account`` is the budget a
    first release opens): spent and remaining (ε, δ), and the releases charged to it, newest first."""
    spent_epsilon, spent_delta = account.spent
    left_epsilon, left_delta = account.remaining
    total = account.budget
    share = min(spent_epsilon / total.epsilon, 1.0) * 100
    entries = list(reversed(account.entries))
    table: Any = dmc.Text("No release yet.", size="sm", id="dp-ledger-empty")
    if entries:
        head = dmc.TableThead(
            dmc.TableTr(
                [
                    dmc.TableTh("time (UTC)"),
                    dmc.TableTh("query"),
                    dmc.TableTh("column"),
                    dmc.TableTh("noise"),
                    dmc.TableTh("ε", ta="right"),
                    dmc.TableTh("δ", ta="right"),
                ]
            )
        )
        body = dmc.TableTbody(
            [
                dmc.TableTr(
                    [
                        dmc.TableTd(entry.time.replace("T", " ").removesuffix("+00:00")),
                        dmc.TableTd(entry.query),
                        dmc.TableTd(", ".join(entry.columns) or "-"),
                        dmc.TableTd(entry.mechanism),
                        dmc.TableTd(f"{entry.epsilon:g}", ta="right"),
                        dmc.TableTd(f"{entry.delta:.3g}", ta="right"),
                    ]
                )
                for entry in entries
            ]
        )
        table = scroll_table(
            "Releases charged to the budget",
            dmc.Table([head, body], fz="sm", striped=True, id="dp-ledger-table"),
            minWidth=520,
            maxHeight=260,
        )
    return dmc.Stack(
        [
            dmc.Title(
                f"Privacy budget of the population '{identity}'"
                if identity is not None
                else "Privacy budget: no release of this table yet",
                order=3,
                fz="sm",
                fw=600,
                id="dp-population",
            ),
            dmc.Text(
                f"Spent ε = {spent_epsilon:.4g} of {total.epsilon:g}, δ = {spent_delta:.3g} of {total.delta:g}; "
                f"remaining ε = {left_epsilon:.4g}, δ = {left_delta:.3g}.",
                size="sm",
                id="dp-budget",
                **{"aria-live": "polite"},
            ),
            dmc.Progress(
                value=share,
                color="red" if left_epsilon <= 0 else "blue",
                attributes={"section": {"aria-label": f"Share of the ε budget spent: {share:.0f}%"}},
            ),
            dmc.Text(
                "Releases add up (sequential composition); the total is fixed when the first release is charged. "
                f"{len(entries)} release(s) so far:",
                size="xs",
                c="dimmed",
            ),
            table,
        ],
        gap=6,
        mt="md",
    )


def register(app: Dash, services: Services) -> None:
    """Add the section's callbacks to ``app`` (once per app)."""
    if app in _REGISTERED:
        return
    _REGISTERED.add(app)
    ledger = ledger_for(services)

    @app.callback(
        Output("dp-column-box", "style"),
        Output("dp-histogram-box", "style"),
        Output("dp-domain-box", "style"),
        Output("dp-bounds-box", "style"),
        Input("dp-query", "value"),
        Input("dp-categories", "value"),
        prevent_initial_call=True,
    )
    def show_fields(query: str | None, categories: str | None) -> tuple[dict[str, str], ...]:
        return visibility(query, categories)

    @app.callback(
        Output("dp-result", "children"),
        Output("dp-ledger", "children"),
        Output("dp-csv", "data"),
        Input("dp-release", "n_clicks"),
        State("dp-query", "value"),
        State("dp-column", "value"),
        State("dp-categories", "value"),
        State("dp-domain", "value"),
        State("dp-low", "value"),
        State("dp-high", "value"),
        State("dp-epsilon", "value"),
        State("dp-delta", "value"),
        State("dp-mechanism", "value"),
        State("dp-identity", "value"),
        State("dp-distinct", "checked"),
        State("dp-max-rows", "value"),
        State(PAGE_STATE, "data"),
        running=[(Output("dp-release", "disabled"), True, False)],  # one release per press: no double charge
        prevent_initial_call=True,
    )
    def release(
        clicks: int | None,
        query: Any,
        column: Any,
        categories: Any,
        domain: Any,
        low: Any,
        high: Any,
        epsilon: Any,
        delta: Any,
        mechanism: Any,
        identity: Any,
        distinct: Any,
        max_rows: Any,
        data: Any,
    ) -> tuple[Any, Any, Any]:
        if not clicks:
            return no_update, no_update, no_update
        try:
            state = state_from_store(data)
            loaded = services.dataset(state.dataset or "")
            loaded.require_rows("A differentially private release")
            entity = services.contract(loaded, state).entity  # a contract with two person ids is refused here
            request = ReleaseRequest.from_form(
                loaded.columns,
                query=query,
                column=column,
                categories=categories,
                domain=domain,
                low=low,
                high=high,
                epsilon=epsilon,
                delta=delta,
                mechanism=mechanism,
                identity=identity,
                distinct=distinct,
                entity=entity,
                max_rows=max_rows,
            )
            outcome = ledger.release(loaded.frame, table_keys(services, loaded), request)
        except BudgetExceededError as exc:
            return error_alert(str(exc), title="Refused: over the privacy budget", alert_id="dp-error"), no_update, None
        except PrivdashError as exc:
            return error_alert(str(exc), title="Nothing was released", alert_id="dp-error"), no_update, None
        stem = loaded.id.split(":", 1)[1] if loaded.is_demo else Path(loaded.title).stem or "data"
        payload = {"csv": release_csv(outcome.release), "filename": download_name(stem, outcome.release)}
        return result_view(outcome), ledger_view(outcome.account, outcome.identity), payload

    @app.callback(
        Output("dp-download", "data"),
        Input("dp-download-button", "n_clicks"),
        State("dp-csv", "data"),
        prevent_initial_call=True,
    )
    def download(clicks: int | None, payload: Any) -> Any:
        if not clicks or not isinstance(payload, dict) or "csv" not in payload:
            return no_update
        return {"content": str(payload["csv"]), "filename": str(payload["filename"]), "type": "text/csv"}
