"""The Fix page's "Measured attacks" section: linkage, singling-out and inference attacks on the previewed release,
beside the predicted risk.

:func:`card` places the choice of the release (the fix previewed on the page, or an uploaded table), the sensitive
attribute the inference attack guesses, and the button; nothing is computed on page load. The button starts a
background job (:mod:`dashboard.ui.jobs`: queued, under the server's limits, with progress and cancel) that runs
:func:`~privdash.application.attack.attack_state` on the page's current view state. Its result: one sentence per
attack, the table of rates with their 95% intervals, baselines, the risk beyond them and the model's figures, and a
bar chart with error bars whose numbers are also a table (:func:`~dashboard.ui.charts.chart`).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from typing import Any

import dash_mantine_components as dmc
import plotly.graph_objects as go
from dash import Dash, Input, Output, State, dcc, html, no_update

from dashboard.ui.charts import chart
from dashboard.ui.components import card as card_frame
from dashboard.ui.components import error_alert, progress_panel, scroll_table
from dashboard.ui.pagestate import PAGE_STATE, state_from_store
from dashboard.ui.theme import COLORS, figure
from privdash.application.attack import (
    ALLOW_UNMATCHED,
    SOURCES,
    AttackOutcome,
    AttackRow,
    attack_state,
    fmt_interval,
    fmt_rate,
)
from privdash.application.formats import fmt_count
from privdash.application.services import LoadedDataset, Services, clean_filename
from privdash.application.state import StateError, ViewState
from privdash.errors import PrivdashError

__all__ = ["attack_figure", "attack_table", "attack_view", "card", "register"]

_REGISTERED: weakref.WeakSet[Dash] = weakref.WeakSet()
#: The bar chart's series: (name, colour, hatching); the hatching keeps them apart without colour.
_SERIES = (
    ("Measured on the release", COLORS["primary"], ""),
    ("Baseline", COLORS["muted"], "/"),
    ("Model's prediction", COLORS["warning"], "."),
)
#: The chart's table of numbers.
CHART_COLUMNS = (
    ("name", "series"),
    ("x", "attack"),
    ("y", "success (%)"),
    ("customdata.0", "95% low (%)"),
    ("customdata.1", "95% high (%)"),
)


def _sensitive(loaded: LoadedDataset, state: ViewState, services: Services) -> list[str]:
    try:
        return list(services.contract(loaded, state).sensitive)
    except (PrivdashError, StateError):
        return []


def card(loaded: LoadedDataset, state: ViewState, services: Services) -> Any:
    """The section's component for the open dataset: the controls only (the attacks run on the button)."""
    sensitive = _sensitive(loaded, state, services)
    limit_mb = services.settings.max_upload_bytes / 1e6
    return card_frame(
        "Measured attacks",
        dmc.Stack(
            [
                dmc.RadioGroup(
                    dmc.Group([dmc.Radio(label=label, value=value) for value, label in SOURCES.items()], gap="lg"),
                    id="attack-source",
                    label="Release to attack",
                    value="fix",
                    size="sm",
                ),
                dcc.Upload(
                    [
                        dmc.Text("Drop the released table (CSV or Parquet) here, or click to choose it", size="sm"),
                        dmc.Text(
                            f"Up to {limit_mb:g} MB; its columns must be columns of the open dataset.",
                            size="xs",
                            c="dimmed",
                        ),
                    ],
                    id="attack-upload",
                    accept=".csv,.tsv,.txt,.parquet,text/csv",
                    max_size=services.settings.max_upload_bytes,
                    className="upload-zone",
                ),
                html.Div(id="attack-upload-name"),
                dmc.Select(
                    id="attack-sensitive",
                    label="Attribute the inference attack guesses",
                    data=sensitive,
                    value=sensitive[0] if sensitive else None,
                    disabled=not sensitive,
                    placeholder="none marked",
                    description=None
                    if sensitive
                    else "No sensitive attribute is marked (Risk page): the inference attack is left out.",
                    allowDeselect=False,
                    size="sm",
                    maw=360,
                ),
                dmc.Checkbox(
                    id="attack-allow-unmatched",
                    label=ALLOW_UNMATCHED,
                    description="Otherwise a released value that matches no original value stops the attacks: "
                    "they could not be measured through it.",
                    checked=False,
                    size="sm",
                ),
                dmc.Group(
                    [
                        dmc.Button("Attack the release", id="attack-run", variant="filled"),
                        dmc.Text(
                            "Every record of the open dataset is a target; the attacker knows its quasi-identifiers "
                            "and how the release was made.",
                            size="sm",
                            c="dimmed",
                        ),
                    ],
                    gap="md",
                ),
            ],
            gap="sm",
        ),
        html.Div(
            progress_panel("attack", label="Progress of the attacks"), id="attack-running", style={"display": "none"}
        ),
        html.Div(id="attack-result"),
        description="The models predict the risk from the shape of the release; these attacks measure it: linkage "
        "(find a person's record), singling out (a record that describes one person) and inference of the "
        "sensitive attribute, each with a 95% interval and a baseline (docs/attacks.md).",
        mt="md",
        id="attack-card",
    )


# --- the result ------------------------------------------------------------------------------------------------------


def _percent(value: float) -> float:
    return round(100 * float(value), 4)


def attack_figure(rows: Sequence[AttackRow]) -> go.Figure:
    """Grouped bars per attack: the measured success and the baseline with their 95% intervals (error bars), and the
    model's prediction (prosecutor average, sample uniques, majority share)."""
    names = [row.label for row in rows]
    measured = [row.result.targets for row in rows]
    baselines = [row.result.baseline for row in rows]
    traces = []
    for (name, color, shape), rates in zip(_SERIES[:2], (measured, baselines), strict=True):
        traces.append(
            go.Bar(
                name=name,
                x=names,
                y=[_percent(r.rate) for r in rates],
                error_y={
                    "type": "data",
                    "array": [_percent(r.ci_high - r.rate) for r in rates],
                    "arrayminus": [_percent(r.rate - r.ci_low) for r in rates],
                    "color": COLORS["text"],
                    "thickness": 1.5,
                },
                customdata=[[_percent(r.ci_low), _percent(r.ci_high)] for r in rates],
                marker={"color": color, "pattern": {"shape": shape, "solidity": 0.3}},
                hovertemplate=f"{name}: %{{y:.3f}}% [%{{customdata[0]:.3f}}–%{{customdata[1]:.3f}}%]<extra></extra>",
            )
        )
    name, color, shape = _SERIES[2]
    traces.append(
        go.Bar(
            name=name,
            x=names,
            y=[None if row.predicted is None else _percent(row.predicted) for row in rows],
            customdata=[[row.predicted_text, ""] for row in rows],
            marker={"color": color, "pattern": {"shape": shape, "solidity": 0.3}},
            hovertemplate="%{customdata[0]}<extra></extra>",
        )
    )
    fig = figure(
        *traces,
        barmode="group",
        yaxis_title="success (%)",
        yaxis_range=[0, 105],
        height=320,
        showlegend=True,
        legend={"orientation": "h", "y": -0.15},
    )
    return fig


def attack_table(rows: Sequence[AttackRow]) -> Any:
    """Per attack: success [95% CI], baseline, risk beyond it, the model's figures and the targets attacked."""
    head = dmc.TableThead(
        dmc.TableTr(
            [
                dmc.TableTh("attack"),
                dmc.TableTh("success [95% CI]"),
                dmc.TableTh("baseline"),
                dmc.TableTh("risk beyond the baseline [95% CI]"),
                dmc.TableTh("predicted by the model"),
                dmc.TableTh("targets", ta="right"),
            ]
        )
    )
    body = []
    for row in rows:
        result = row.result
        risk = "-" if result.risk is None else f"{fmt_rate(result.risk[0])} {fmt_interval(*result.risk[1:])}"
        body.append(
            dmc.TableTr(
                [
                    dmc.TableTh(row.label, fw=500),
                    dmc.TableTd(
                        [
                            html.Span(fmt_rate(result.targets.rate), className="attack-rate"),
                            " ",
                            fmt_interval(result.targets.ci_low, result.targets.ci_high),
                        ]
                    ),
                    dmc.TableTd(f"{fmt_rate(result.baseline.rate)} ({row.baseline_label})"),
                    dmc.TableTd(risk),
                    dmc.TableTd(row.predicted_text),
                    dmc.TableTd(fmt_count(result.targets.n), ta="right"),
                ],
                id=f"attack-row-{row.key}",
            )
        )
    return scroll_table(
        "Measured attacks",
        dmc.Table([head, dmc.TableTbody(body)], fz="sm", striped=True, id="attack-table"),
        minWidth=720,
    )


def attack_view(outcome: AttackOutcome) -> Any:
    """The job's result: the headline, one sentence per attack, the table and the chart."""
    parts: list[Any] = [
        dmc.Text(outcome.headline, size="sm", id="attack-headline"),
        dmc.List(
            [dmc.ListItem(dmc.Text(row.sentence, size="sm"), **{"data-attack": row.key}) for row in outcome.rows],
            id="attack-sentences",
            spacing="xs",
        ),
    ]
    if outcome.notes:
        parts.append(
            dmc.Alert(
                dmc.List([dmc.ListItem(note) for note in outcome.notes], size="sm"),
                title="Released values that stand for no one",
                color="yellow",
                variant="light",
                id="attack-notes",
            )
        )
    parts += [
        attack_table(outcome.rows),
        chart(
            dcc.Graph(figure=attack_figure(outcome.rows), config={"displaylogo": False}, id="attack-chart"),
            title="Measured success and the model's prediction",
            summary="Per attack: the success on the release and its baseline, with their 95% intervals as error "
            "bars, and the figure the model predicts (prosecutor average risk, sample uniques, majority share).",
            columns=CHART_COLUMNS,
        ),
    ]
    return dmc.Stack(parts, gap="sm", mt="sm")


# --- callbacks -------------------------------------------------------------------------------------------------------


def register(app: Dash, services: Services) -> None:
    """Add the section's callbacks to ``app`` (once; later calls for the same app do nothing)."""
    if app in _REGISTERED:
        return
    _REGISTERED.add(app)

    @app.callback(
        Output("attack-upload-name", "children"),
        Output("attack-source", "value"),
        Input("attack-upload", "filename"),
        prevent_initial_call=True,
    )
    def chosen(filename: str | None) -> tuple[Any, Any]:
        if not filename:
            return no_update, no_update
        text = dmc.Text(f"Released table: {clean_filename(filename)}", size="sm", id="attack-upload-file")
        return text, "upload"

    @app.callback(
        Output("attack-result", "children"),
        Input("attack-run", "n_clicks"),
        State(PAGE_STATE, "data"),
        State("attack-source", "value"),
        State("attack-upload", "contents"),
        State("attack-upload", "filename"),
        State("attack-sensitive", "value"),
        State("attack-allow-unmatched", "checked"),
        prevent_initial_call=True,
        background=True,
        progress=[Output("attack-progress", "value"), Output("attack-status", "children")],
        running=[
            (Output("attack-running", "style"), {"display": "block"}, {"display": "none"}),
            (Output("attack-run", "disabled"), True, False),
        ],
        cancel=[Input("attack-cancel", "n_clicks"), Input("url", "pathname")],
        interval=400,
    )
    def attack(
        set_progress: Callable[[tuple[int, str]], None],
        clicks: int | None,
        data: Any,
        source: str | None,
        contents: str | None,
        filename: str | None,
        sensitive: str | None,
        allow_unmatched: bool | None,
    ) -> Any:
        if not clicks:
            return no_update
        try:
            outcome = attack_state(
                services,
                state_from_store(data),
                source=source or "fix",
                contents=contents,
                filename=filename,
                sensitive=sensitive or None,
                progress=lambda percent, text: set_progress((percent, text)),
                allow_unmatched=bool(allow_unmatched),
            )
        except (PrivdashError, StateError) as exc:
            return error_alert(str(exc), title="The release was not attacked", alert_id="attack-error")
        return attack_view(outcome)
