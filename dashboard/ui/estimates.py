"""The Fix page's "Estimates" section: the estimates the data are published for, before and after the previewed fix.

:func:`card` places a text box where the steward names the estimates, one a line (``mean:income by region``,
``share:sex=Female``, ``crosstab:sex*race``, ``coef:income~age+sex``; :mod:`privdash.utility.estimates`),
and a button; nothing is computed on page load. The button starts a background job (:mod:`dashboard.ui.jobs`:
queued, under the server's limits, with cancel) that computes them on the fix the page previews
(:meth:`~privdash.application.fixruns.FixRuns.run`, from its cache) and shows each number before and after with
its 95% interval and Karr et al.'s interval overlap, weighted by the contract's weight column, then the notes on
how "after" was computed. The text box's id is a pattern (``{"type": "estimates-input", "page": "fix"}``) so that
the release report, made from the same page, names the same estimates.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from typing import Any

import dash_mantine_components as dmc
from dash import Dash, Input, Output, State, html, no_update

from dashboard.ui.components import card as card_frame
from dashboard.ui.components import error_alert, progress_panel, scroll_table
from dashboard.ui.pagestate import PAGE_STATE, state_from_store
from privdash.application.estimates import (
    EXAMPLES,
    MAX_TEXT,
    fmt_interval,
    fmt_overlap,
    read_estimates,
    run_estimates,
)
from privdash.application.fixruns import FixRuns
from privdash.application.services import LoadedDataset, Services
from privdash.application.state import StateError, ViewState
from privdash.errors import PrivdashError
from privdash.utility.estimates import EstimateComparison

__all__ = ["INPUT_ID", "card", "estimates_table", "estimates_view", "register"]

#: The text box (a pattern id: the report reads it with ``ALL`` on the pages that have it).
INPUT_ID = {"type": "estimates-input", "page": "fix"}
_REGISTERED: weakref.WeakSet[Dash] = weakref.WeakSet()


def _weight(loaded: LoadedDataset, state: ViewState, services: Services) -> str | None:
    try:
        return services.contract(loaded, state).weight
    except (PrivdashError, StateError):
        return None


def card(loaded: LoadedDataset, state: ViewState, services: Services) -> Any:
    """The section for the open dataset: the text box, the button and where the table goes."""
    weight = _weight(loaded, state, services)
    weighting = (
        f"Weighted by the survey weights in '{weight}' (the column whose role is weight)."
        if weight
        else "No column has the role weight (Data page): every record weighs 1."
    )
    columns = ", ".join(str(c) for c in loaded.columns[:40]) + (", ..." if len(loaded.columns) > 40 else "")
    return card_frame(
        "Estimates before and after",
        dmc.Stack(
            [
                dmc.Textarea(
                    id=INPUT_ID,
                    label="Estimates the data are published for, one a line",
                    description="mean, total or share (by groups), a cross-table, or regression coefficients: "
                    + "; ".join(EXAMPLES)
                    + ". C(x) treats a number as categories.",
                    placeholder="\n".join(EXAMPLES[:3]),
                    autosize=True,
                    minRows=3,
                    maxRows=10,
                    inputProps={"maxLength": MAX_TEXT},
                    persistence=True,
                    persistence_type="session",
                ),
                dmc.Text(f"Columns: {columns}", size="xs", c="dimmed", id="estimates-columns"),
                dmc.Group(
                    [
                        dmc.Button("Compare before and after", id="estimates-run", variant="light"),
                        dmc.Text(weighting, size="sm", c="dimmed", id="estimates-weighting"),
                    ],
                    gap="md",
                ),
            ],
            gap="sm",
        ),
        html.Div(
            progress_panel("estimates", label="Progress of the estimates"),
            id="estimates-running",
            style={"display": "none"},
        ),
        dmc.Box(id="estimates-result", **{"aria-live": "polite"}),
        description="Utility in the terms of the estimates the release is for: each on the original and on the "
        "fixed table, with its 95% confidence interval and the overlap of the two intervals (Karr et al. 2006: 1 "
        "the same interval, 0 disjoint). Definitions in docs/definitions.md.",
        mt="md",
        id="estimates-card",
    )


def estimates_table(comparisons: Sequence[EstimateComparison]) -> Any:
    """One row per number: the estimate, what it is of, the group, before and after with their intervals, the
    overlap and why a side is not computable."""
    level = f"{comparisons[0].level:.0%}" if comparisons else "95%"
    head = dmc.TableThead(
        dmc.TableTr(
            [
                dmc.TableTh("estimate"),
                dmc.TableTh("of"),
                dmc.TableTh("group"),
                dmc.TableTh(f"before [{level} CI]"),
                dmc.TableTh(f"after [{level} CI]"),
                dmc.TableTh("overlap", ta="right"),
                dmc.TableTh("note"),
            ]
        )
    )
    body = []
    for index, comparison in enumerate(comparisons):
        for row in comparison.rows:
            body.append(
                dmc.TableTr(
                    [
                        dmc.TableTd(comparison.estimate.text(), className="estimates-spec"),
                        dmc.TableTh(row.term, fw=500),
                        dmc.TableTd(row.group or ""),
                        dmc.TableTd(fmt_interval(row.before)),
                        dmc.TableTd(fmt_interval(row.after)),
                        dmc.TableTd(fmt_overlap(row.overlap), ta="right", className="estimates-overlap"),
                        dmc.TableTd(row.note or "", c="dimmed"),
                    ],
                    **{"data-estimate": str(index)},
                )
            )
    caption = dmc.TableCaption("Each estimate on the original table (before) and on the fixed table (after).")
    return scroll_table(
        "Estimates before and after",
        dmc.Table(
            [caption, head, dmc.TableTbody(body)], fz="sm", striped=True, id="estimates-table", captionSide="top"
        ),
        minWidth=760,
    )


def estimates_view(comparisons: Sequence[EstimateComparison]) -> Any:
    """The table and the notes on how "after" was computed."""
    notes = list(dict.fromkeys(note for comparison in comparisons for note in comparison.notes))
    parts: list[Any] = [estimates_table(comparisons)]
    if notes:
        parts.append(dmc.List([dmc.ListItem(dmc.Text(note, size="xs")) for note in notes], id="estimates-notes"))
    return dmc.Stack(parts, gap="xs", mt="sm")


def compute(runs: FixRuns, state: ViewState, text: str | None) -> Any:
    """What the button shows for ``text`` on the state's previewed fix."""
    try:
        specs = read_estimates(text)
        if not specs:
            return dmc.Text("Name an estimate first, e.g. " + EXAMPLES[0] + ".", size="sm", id="estimates-empty")
        if not runs.ready(state):
            return dmc.Text(
                "The fix is still being previewed in the background; compare when its result shows.",
                size="sm",
                id="estimates-waiting",
            )
        run = runs.run(state)
        if run.error:
            return error_alert(run.error + " Undo it first.", title="A step failed", alert_id="estimates-error")
        return estimates_view(run_estimates(run, specs))
    except (PrivdashError, StateError) as exc:
        return error_alert(str(exc), title="The estimates could not be computed", alert_id="estimates-error")


def register(app: Dash, services: Services) -> None:
    """Add the section's callback to ``app`` (once; later calls for the same app do nothing)."""
    if app in _REGISTERED:
        return
    _REGISTERED.add(app)
    runs = FixRuns(services)

    @app.callback(
        Output("estimates-result", "children"),
        Input("estimates-run", "n_clicks"),
        State(INPUT_ID, "value"),
        State(PAGE_STATE, "data"),
        prevent_initial_call=True,
        background=True,
        progress=[Output("estimates-progress", "value"), Output("estimates-status", "children")],
        running=[
            (Output("estimates-running", "style"), {"display": "block"}, {"display": "none"}),
            (Output("estimates-run", "disabled"), True, False),
        ],
        cancel=[Input("estimates-cancel", "n_clicks"), Input("url", "pathname")],
        interval=400,
    )
    def compare(
        set_progress: Callable[[tuple[int, str]], None], clicks: int | None, text: str | None, data: Any
    ) -> Any:
        if not clicks:
            return no_update
        set_progress((10, "Computing the estimates on the original and the fixed table ..."))
        try:
            state = state_from_store(data)
        except StateError as exc:
            return error_alert(str(exc), title="The estimates could not be computed", alert_id="estimates-error")
        return compute(runs, state, text)
