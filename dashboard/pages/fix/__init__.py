"""Fix page: build a list of anonymization steps and see, before and after, what it does to risk and utility.

The step list lives in the view state (``ViewState.fix``: settings only, see :mod:`privdash.application.fixes`), so the
share link reproduces the fixed view; Undo drops the last step. This module is the Dash adapter: controls, layout,
callbacks. The list is applied, cached and judged in the application layer:
:class:`~privdash.application.fixruns.FixRuns` applies it with the core's step registry (memory cache of every
prefix, disk cache of slow lists, the diagnosis of the fixed table), :mod:`privdash.application.riskview` words the
headline numbers and their verdicts, :mod:`privdash.utility.metrics` measures the utility. Step lists with
microaggregation or the least-lossy search are previewed in a background job (progress bar, cancel button) whose
result the other callbacks read from the disk cache. Downloads (fixed data, value mapping, recipe) go through
``dcc.Download``, never through a store.

The page is a package: this module (layout, the step list's callbacks), :mod:`.form` (the "Add a step" form, built
from the technique descriptions of :mod:`privdash.application.techniques`) and its sections, each with its own
``card`` and ``register``: :mod:`.protect` (perturb and mask), :mod:`.attack` (measured attacks) and
:mod:`.dp_release` (differential privacy) and :mod:`.synthetic` (synthetic data).
"""

from __future__ import annotations

import base64
import io
import math
import re
from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

import dash
import dash_mantine_components as dmc
import plotly.graph_objects as go
from dash import ALL, Dash, Input, Output, State, ctx, dcc, html, no_update
from plotly.subplots import make_subplots

from dashboard.pages.fix import attack as attack_section
from dashboard.pages.fix import dp_release as dp_release_section
from dashboard.pages.fix import protect as protect_section
from dashboard.pages.fix import synthetic as synthetic_section
from dashboard.pages.fix.form import (
    CONTROLS,
    RULE_CONTROLS,
    RULE_HINT,
    control_id,
    release_checkbox,
    rule_help,
    shown,
    spec_from_controls,
    suppression_checkbox,
    suppression_rules,
    technique_panels,
)
from dashboard.ui import estimates as estimates_section
from dashboard.ui.charts import SIZE_COLUMNS, chart, size_histogram
from dashboard.ui.components import (
    card,
    error_alert,
    fmt_count,
    fmt_number,
    fmt_share,
    no_dataset,
    page_title,
    progress_panel,
    scroll_table,
    verdict_banner,
)
from dashboard.ui.pagestate import PAGE_STATE, open_page, state_from_store, state_store
from dashboard.ui.report import register as register_report
from dashboard.ui.report import report_card
from dashboard.ui.targets import card_columns, headline_grid, release_error, target_ids, target_inputs, with_targets
from dashboard.ui.theme import COLORS, PLOTLY_TEMPLATE, figure
from privdash.application.estimates import (
    fmt_estimate,
    fmt_interval,
    fmt_overlap,
    read_estimates,
    run_solution_estimates,
)
from privdash.application.fixes import (
    KINDS,
    FixError,
    FixRun,
    RecipeOutcome,
    RowSample,
    cheapest_fix,
    check_spec,
    describe_result,
    describe_spec,
    information_loss_pair,
    reapply_recipe,
    row_sample,
    rule_text,
)
from privdash.application.fixruns import FixRuns
from privdash.application.hierarchies import reference_hierarchies as stored_hierarchies
from privdash.application.riskview import fix_headlines, release_verdict, size_bins
from privdash.application.services import LoadedDataset, Services
from privdash.application.state import StateError, ViewState
from privdash.application.storage import parquet_safe
from privdash.data.tables import csv_text
from privdash.errors import PrivdashError
from privdash.measure.classes import MissingPolicy
from privdash.measure.diagnose import Diagnosis
from privdash.measure.risk import records_at_risk_by_k
from privdash.search.solutions import SolutionEstimates
from privdash.utility.metrics import Metric, cells_changed, classifier_accuracy, value_distributions

PATH = "/fix"
NAME = "Fix"

#: The k of the records-suppressed curve.
CURVE_K = tuple(range(1, 21))
#: Values shown in a before/after distribution (the most frequent ones).
DIST_VALUES = 30
#: Download formats: button id suffix -> label.
DOWNLOADS = {"csv": "Fixed data (CSV)", "parquet": "Fixed data (Parquet)", "mapping": "Value mapping (CSV)"}
DOWNLOADS["recipe"] = "Recipe (JSON)"

# --- builders: before / after --------------------------------------------------------------------------------------


def risk_cards(diagnosis: Diagnosis, state: ViewState, side: str) -> Any:
    """k, highest prosecutor risk, records at risk, and l and t when there are sensitive attributes (card ids
    ``fix-<side>-<key>``)."""
    return headline_grid(
        fix_headlines(diagnosis, state),
        card_prefix=f"fix-{side}-",
        grid_id=f"fix-{side}-cards",
        cols=card_columns((2, 3), gap=12),  # spacing "sm"
        spacing="sm",
    )


def side_view(diagnosis: Diagnosis | None, state: ViewState, side: str, title: str, problem: str | None) -> Any:
    """One column of the comparison: risk cards and the class-size histogram."""
    if diagnosis is None:
        return card(title, error_alert(problem or "Not available.", title="The risk cannot be computed"))
    binned = size_bins(diagnosis.classes.size_frequencies())
    return card(
        title,
        risk_cards(diagnosis, state, side),
        dmc.Space(h="md"),
        chart(
            dcc.Graph(figure=size_histogram(binned, state.k), config={"displaylogo": False}, id=f"fix-{side}-sizes"),
            title=f"Class sizes {side}",
            summary="Classes per size; hatched dark-red bars are below the target k.",
            columns=SIZE_COLUMNS,
        ),
        description=f"{fmt_count(diagnosis.n_records)} {'people' if diagnosis.entity else 'records'} in "
        f"{fmt_count(diagnosis.classes.n_classes)} classes"
        + (" (missing cells match any value)" if diagnosis.missing_policy == MissingPolicy.WILDCARD else ""),
    )


def suppression_curve(before: Diagnosis, after: Diagnosis | None, k_target: int) -> go.Figure:
    """% of records record suppression would remove to reach each k (records in classes smaller than k)."""
    traces = []
    for diagnosis, name, color, dash_style in (
        (before, "before", COLORS["muted"], "dot"),
        (after, "after the steps", COLORS["primary"], "solid"),
    ):
        if diagnosis is None:
            continue
        curve = records_at_risk_by_k(diagnosis.classes, CURVE_K)
        traces.append(
            go.Scatter(
                x=curve.x,
                y=100 * curve.fraction,
                customdata=curve.records,
                name=name,
                mode="lines+markers",
                line={"shape": "hv", "color": color, "dash": dash_style},
                hovertemplate=f"{name}, k = %{{x}}: %{{customdata:,}} records (%{{y:.1f}}%)<extra></extra>",
            )
        )
    fig = figure(*traces, xaxis_title="k", yaxis_title="records suppressed (%)", height=300, showlegend=True)
    fig.add_vline(x=k_target, line_dash="dash", line_color=COLORS["muted"])
    fig.update_yaxes(range=[0, 100])
    fig.update_layout(legend={"orientation": "h", "y": 1.12})
    return fig


def steps_table(run: FixRun) -> Any:
    """What each applied step did (the core's summaries)."""
    rows = [
        dmc.TableTr(
            [
                dmc.TableTd(str(i + 1)),
                dmc.TableTd(describe_spec(spec)),
                dmc.TableTd(describe_result(spec, result), className="step-outcome"),
            ]
        )
        for i, (spec, result) in enumerate(zip(run.specs, run.results, strict=True))
    ]
    if not rows:
        return dmc.Text("No step yet: add one on the left. Before and after are the same.", size="sm", c="dimmed")
    head = dmc.TableThead(dmc.TableTr([dmc.TableTh("#"), dmc.TableTh("step"), dmc.TableTh("result")]))
    return dmc.Table([head, dmc.TableTbody(rows)], fz="sm", id="fix-outcomes", striped=True)


def _percent(share: float) -> float | int:
    """A share as the percentage a number field shows (5, not 5.0)."""
    value = round(100 * share, 6)
    return int(value) if float(value).is_integer() else value


def last_search(run: FixRun) -> tuple[int, dict[str, Any]] | None:
    """The position of the last search step applied and its summary (``summary["search"]``), or None."""
    found = None
    for index, (spec, result) in enumerate(zip(run.specs, run.results, strict=True)):
        if spec["kind"] == "search" and isinstance(result.summary.get("search"), Mapping):
            found = (index, dict(result.summary["search"]))
    return found


def solutions_figure(solutions: Sequence[Mapping[str, Any]], picked: int) -> go.Figure:
    """Loss against the average prosecutor risk of each solution; the frontier joined, the published one ringed."""
    numbers = list(range(1, len(solutions) + 1))
    loss = [s["loss"] for s in solutions]
    risk = [s["average_risk"] for s in solutions]
    frontier = sorted((s["loss"], s["average_risk"]) for s in solutions if s["frontier"])
    traces = [
        go.Scatter(
            x=[p[0] for p in frontier],
            y=[p[1] for p in frontier],
            mode="lines",
            name="frontier",
            line={"color": COLORS["muted"], "dash": "dot"},
            hoverinfo="skip",
        ),
        go.Scatter(
            x=loss,
            y=risk,
            text=[f"#{n}" for n in numbers],
            customdata=[s["suppressed"] for s in solutions],
            mode="markers+text",
            textposition="top center",
            cliponaxis=False,
            name="solutions",
            marker={
                "size": [16 if n == picked else 10 for n in numbers],
                "color": [COLORS["primary"] if n == picked else COLORS["muted"] for n in numbers],
                "symbol": ["circle" if s["frontier"] else "circle-open" for s in solutions],
            },
            hovertemplate="%{text}: loss %{x:.4f}, average risk %{y:.4f}, %{customdata:,} removed<extra></extra>",
        ),
    ]
    return figure(*traces, xaxis_title="information loss", yaxis_title="average prosecutor risk", height=280)


def solutions_table(summary: Mapping[str, Any], compared: Sequence[SolutionEstimates] = ()) -> Any:
    """The solutions side by side (levels, loss, records removed, risks, the frontier, a publish button); with
    ``compared``, the steward's estimates of each solution too: the mean and the lowest interval overlap."""
    solutions = summary["solutions"]
    picked = int(summary.get("pick", 1))
    labels = ["#", "levels", summary.get("metric", "loss"), "removed", "highest risk", "average risk"]
    if compared:
        labels.append("estimates: mean / lowest overlap")
    head = dmc.TableThead(
        dmc.TableTr(
            [dmc.TableTh(label) for label in labels]
            + [dmc.TableTh("frontier"), dmc.TableTh(html.Span("publish", className="visually-hidden"))]
        )
    )
    by_number = {each.number: each for each in compared}
    rows = []
    for number, solution in enumerate(solutions, start=1):
        levels = ", ".join(f"{name} {level}" for name, level in solution["levels"].items())
        published = number == picked
        cells = [
            dmc.TableTd(str(number)),
            dmc.TableTd(levels),
            dmc.TableTd(f"{solution['loss']:.4f}"),
            dmc.TableTd(fmt_count(solution["suppressed"])),
            # as percentages, as the risk cards above say them
            dmc.TableTd(fmt_share(solution["highest_risk"])),
            dmc.TableTd(fmt_share(solution["average_risk"])),
        ]
        if compared:
            each = by_number.get(number)
            overlap: list[Any] = ["-"]
            if each is not None:
                overlap = [
                    html.Span(fmt_overlap(each.mean_overlap), className="fix-solution-overlap"),
                    " / ",
                    html.Span(fmt_overlap(each.lowest_overlap), className="fix-solution-lowest"),
                ]
                if each.not_computable:
                    overlap.append(dmc.Text(f"{each.not_computable} not computable", size="xs", c="red.8", span=False))
            cells.append(dmc.TableTd(overlap))
        rows.append(
            dmc.TableTr(
                [
                    *cells,
                    dmc.TableTd("✓ on the frontier" if solution["frontier"] else "dominated"),
                    dmc.TableTd(
                        dmc.Button(
                            "Published" if published else f"Publish #{number}",
                            id={"type": "fix-solution-pick", "index": number},
                            size="compact-sm",
                            variant="filled" if published else "light",
                            disabled=published,
                            **{"aria-label": f"Publish solution {number}: {levels}"},
                        )
                    ),
                ],
                **({"aria-current": "true"} if published else {}),
            )
        )
    return scroll_table(
        "Solutions of the search",
        dmc.Table([head, dmc.TableTbody(rows)], fz="sm", id="fix-solutions", striped=True, horizontalSpacing=8),
        minWidth=680,
    )


def solution_estimates_view(compared: Sequence[SolutionEstimates]) -> Any:
    """Each estimate's value after, with its interval, and its overlap, per solution: one row per number of the
    estimates, one column per solution (in a disclosure, below the solutions table)."""
    if not compared:
        return None
    level = f"{compared[0].comparisons[0].level:.0%}" if compared[0].comparisons else "95%"
    head = dmc.TableThead(
        dmc.TableTr(
            [dmc.TableTh("estimate"), dmc.TableTh("of"), dmc.TableTh(f"before [{level} CI]")]
            + [dmc.TableTh(f"#{each.number}: after · overlap") for each in compared]
        )
    )
    body = []
    first = compared[0]
    for position, comparison in enumerate(first.comparisons):
        for row_index, row in enumerate(comparison.rows):
            cells = [
                dmc.TableTd(comparison.estimate.text()),
                dmc.TableTh(row.term + (f" | {row.group}" if row.group else ""), fw=500),
                dmc.TableTd(fmt_interval(row.before)),
            ]
            for each in compared:
                rows = each.comparisons[position].rows
                other = rows[row_index] if row_index < len(rows) and rows[row_index].term == row.term else None
                if other is None or other.after is None:
                    note = "" if other is None or not other.note else other.note
                    cells.append(
                        dmc.TableTd(
                            [
                                html.Span("not computable", title=note or None),
                                html.Span(f" ({note})", className="visually-hidden") if note else None,
                            ],
                            c="red.8",
                        )
                    )
                else:
                    after = other.after
                    interval = f"[{fmt_estimate(after.low)}, {fmt_estimate(after.high)}]"
                    cells.append(
                        dmc.TableTd(
                            [
                                html.Span(fmt_estimate(after.value), title=f"{level} CI {interval}"),
                                html.Span(f" {interval}", className="visually-hidden"),
                                f" · {fmt_overlap(other.overlap)}",
                            ]
                        )
                    )
            body.append(dmc.TableTr(cells))
    table = scroll_table(
        "Estimates of each solution",
        dmc.Table(
            [head, dmc.TableTbody(body)], fz="xs", striped=True, id="fix-solution-estimates-table", horizontalSpacing=8
        ),
        minWidth=600,
    )
    return html.Details(
        [
            html.Summary("Each estimate per solution: the value after and the interval overlap"),
            table,
        ],
        id="fix-solution-estimates-details",
        className="chart-numbers",
    )


def solutions_card(run: FixRun) -> Any:
    """The best solutions of the last search: levels, loss, records removed and risks side by side, the frontier of
    loss against risk and suppression marked, and a button that publishes one (it becomes the search step, and the
    recipe: the search spec's ``pick``); a button adds the steward's estimates (the Estimates section's) of each
    solution to the table. None when the list has no search with a choice."""
    found = last_search(run)
    if found is None or len(found[1].get("solutions") or []) < 2:
        return None
    summary = found[1]
    solutions = summary["solutions"]
    picked = int(summary.get("pick", 1))
    bound = summary.get("bound_by") or []
    description = (
        f"The {len(solutions)} least lossy nodes meeting the targets; a solution is on the frontier when no other is "
        "at least as good on loss, average risk and records removed, and better on one."
        + (f" Finer levels fail {', '.join(bound)}." if bound else "")
    )
    compare = dmc.Group(
        [
            dmc.Button(
                "Compare the estimates of each solution",
                id="fix-solution-estimates-run",
                variant="light",
                size="compact-sm",
            ),
            dmc.Text(
                "The estimates named in the Estimates section below, on each solution's table: the mean and the "
                "lowest interval overlap with the original's (1 the same interval, 0 disjoint), over the numbers "
                "computable after.",
                size="xs",
                c="dimmed",
            ),
        ],
        gap="sm",
        wrap="wrap",
    )
    return card(
        "Solutions to choose from",
        html.Div(solutions_table(summary), id="fix-solutions-box"),
        compare,
        html.Div(
            progress_panel("fix-solution-estimates", label="Progress of the solutions' estimates"),
            id="fix-solution-estimates-running",
            style={"display": "none"},
        ),
        dmc.Box(id="fix-solution-estimates", **{"aria-live": "polite"}),
        dmc.Space(h="sm"),
        chart(
            dcc.Graph(
                figure=solutions_figure(solutions, picked), config={"displaylogo": False}, id="fix-solutions-chart"
            ),
            title="Solutions: loss against risk",
            summary="Each solution's information loss (x) and average prosecutor risk (y); the frontier is dotted, "
            "the published solution is the large blue point.",
            columns=(("text", "solution"), ("x", "loss"), ("y", "average risk"), ("customdata", "removed")),
            title_visible=False,
        ),
        description=description,
    )


def compare_solutions(runs: FixRuns, state: ViewState, text: str | None) -> tuple[Any, Any]:
    """The solutions table with the estimates of ``text`` for each solution, and the per-estimate view; or the
    unchanged table and a message saying why not."""
    try:
        specs = read_estimates(text)
        if not specs:
            message = dmc.Text(
                "Name the estimates first in the Estimates section below (e.g. mean:age), then compare.",
                size="sm",
                id="fix-solution-estimates-empty",
            )
            return no_update, message
        if not runs.ready(state):
            return no_update, dmc.Text("The search is still running; compare when its result shows.", size="sm")
        run = runs.run(state)
        if run.error:
            raise FixError(run.error)
        found = last_search(run)
        if found is None:
            raise FixError("The step list has no least-lossy search with solutions to compare.")
        compared = run_solution_estimates(run, specs, key=runs.services.settings.pseudonym_key)
    except (PrivdashError, StateError) as exc:
        return no_update, error_alert(
            str(exc), title="The estimates could not be compared", alert_id="fix-solution-estimates-error"
        )
    return solutions_table(found[1], compared), solution_estimates_view(compared)


def pick_solution(state: ViewState, number: int) -> ViewState:
    """The state whose last search step publishes solution ``number`` (its ``pick``; 1: the least lossy)."""
    for index in range(len(state.fix) - 1, -1, -1):
        spec = state.fix[index]
        if isinstance(spec, Mapping) and spec.get("kind") == "search":
            changed = {key: value for key, value in spec.items() if key != "pick"}
            if number != 1:
                changed["pick"] = number
            return state.updated(fix=(*state.fix[:index], check_spec(changed), *state.fix[index + 1 :]))
    return state


def sample_card(run: FixRun) -> Any:
    """A few records as they were and as the steps publish them, so that "40-59" is seen in context."""
    description = (
        "Records the steps changed, as they were and as they are published (changed cells: before → after); "
        "records the steps removed are struck out."
    )
    try:
        sample = row_sample(run)
    except PrivdashError as exc:
        return card("Rows before and after", dmc.Text(str(exc), size="sm", c="dimmed"), description=description)
    return card("Rows before and after", sample_table(sample), description=description)


def _shown_value(value: Any) -> str:
    return "–" if value is None else str(value)


def sample_table(sample: RowSample) -> Any:
    """The sample as a table: one row per record (its row number in the table), one column per attribute, and
    whether the record is published."""
    names = [str(name) for name in sample.before.columns]
    head = dmc.TableThead(
        dmc.TableTr([dmc.TableTh("row"), *(dmc.TableTh(name) for name in names), dmc.TableTh("published")])
    )
    rows = []
    for i, position in enumerate(sample.before.index.tolist()):
        removed = bool(sample.suppressed[i])
        cells: list[Any] = [dmc.TableTd(f"{int(position) + 1:,}", c="dimmed")]
        for j in range(len(names)):
            before = _shown_value(sample.before.iat[i, j])
            if removed or not bool(sample.changed.iat[i, j]):
                cells.append(dmc.TableTd(before))
            else:
                after = _shown_value(sample.after.iat[i, j])
                cells.append(dmc.TableTd([f"{before} → ", html.Strong(after)], className="sample-changed"))
        cells.append(dmc.TableTd("removed", c="red.8") if removed else dmc.TableTd("yes"))
        style = {"textDecoration": "line-through"} if removed else None
        rows.append(dmc.TableTr(cells, className="sample-removed" if removed else "sample-row", style=style))
    return scroll_table(
        "Rows before and after",
        dmc.Table([head, dmc.TableTbody(rows)], fz="sm", striped=True, id="fix-sample"),
        minWidth=480,
    )


# --- builders: utility ---------------------------------------------------------------------------------------------


def loss_table(run: FixRun) -> Any:
    """ARX's information-loss metrics before and after, or why they are not defined for this list."""
    try:
        before, after = information_loss_pair(run)
    except PrivdashError as exc:
        return dmc.Text(
            "Information-loss metrics are defined for generalization and suppression of records; this list "
            f"changes values in other ways ({exc}). The cells changed per column are shown instead.",
            size="sm",
            c="dimmed",
            id="fix-loss-undefined",
        )
    help_text = {
        Metric.LOSS: "0 = nothing generalized, 1 = all",
        Metric.PRECISION: "mean generalization level",
        Metric.DISCERNIBILITY: "sum of squared class sizes",
        Metric.AECS: "average class size",
        Metric.ENTROPY: "bits lost",
    }
    rows = [
        dmc.TableTr(
            [
                dmc.TableTd(metric.value),
                dmc.TableTd(fmt_number(before.value(metric)), ta="right"),
                dmc.TableTd(fmt_number(after.value(metric)), ta="right", className=f"loss-{metric.value}"),
                dmc.TableTd(help_text[metric], c="dimmed"),
            ]
        )
        for metric in Metric
    ]
    head = dmc.TableThead(
        dmc.TableTr(
            [
                dmc.TableTh("metric"),
                dmc.TableTh("before", ta="right"),
                dmc.TableTh("after", ta="right"),
                dmc.TableTh(""),
            ]
        )
    )
    return dmc.Table([head, dmc.TableTbody(rows)], fz="sm", id="fix-loss-table")


def changed_table(run: FixRun) -> Any:
    """Cells changed per column and records removed."""
    table = cells_changed(run.original, run.data, kept_rows=run.kept_rows)
    table = table[table["changed"] > 0]
    dropped = [c for c in run.original.columns if c not in run.data.columns]
    lines = [f"{fmt_count(run.rows_removed)} of {fmt_count(len(run.original))} records removed"]
    if dropped:
        lines.append(f"columns dropped: {', '.join(map(str, dropped))}")
    rows = [
        dmc.TableTr(
            [dmc.TableTd(name), dmc.TableTd(fmt_count(n), ta="right"), dmc.TableTd(fmt_share(share), ta="right")]
        )
        for name, n, share in zip(table["column"], table["changed"], table["share"], strict=True)
    ]
    head = dmc.TableThead(
        dmc.TableTr([dmc.TableTh("column"), dmc.TableTh("cells changed", ta="right"), dmc.TableTh("share", ta="right")])
    )
    return dmc.Stack(
        [
            dmc.Text("; ".join(lines), size="sm", id="fix-removed"),
            dmc.Table([head, dmc.TableTbody(rows)], fz="sm", id="fix-changed-table") if rows else None,
        ],
        gap=4,
    )


def distribution_figure(run: FixRun, column: str | None) -> go.Figure:
    """Counts of the values of ``column`` before (left) and after (right), the most frequent of each side, in value
    order; suppressed records appear as a value of their own on the right."""
    if not column or column not in run.data.columns or column not in run.original.columns:
        return figure(height=300)
    table = value_distributions(run.original, run.data, [column], kept_rows=run.kept_rows)
    fig = make_subplots(rows=1, cols=2, shared_yaxes=True, subplot_titles=("before", "after"), horizontal_spacing=0.04)
    for col, side, color in ((1, "original", COLORS["muted"]), (2, "transformed", COLORS["primary"])):
        shown = table[table[side] > 0].nlargest(DIST_VALUES, side, keep="first")
        keys = [_value_key(v) for v in shown["value"]]
        shown = shown.iloc[sorted(range(len(keys)), key=keys.__getitem__)]
        fig.add_trace(
            go.Bar(
                x=shown["value"].astype(str),
                y=shown[side],
                name="before" if col == 1 else "after",
                marker_color=color,
                hovertemplate="%{x}: %{y:,} records<extra></extra>",
            ),
            row=1,
            col=col,
        )
    fig.update_layout(template=PLOTLY_TEMPLATE, height=320, yaxis_title="records")
    fig.update_xaxes(type="category", automargin=True)
    return fig


_LEADING_NUMBER = re.compile(r"^[<>=\s\[]*(-?\d+(?:\.\d+)?)")


def _value_key(value: Any) -> tuple[float, str]:
    """Sort key of a value label: by its leading number when it has one (``39``, ``35-39``, ``>= 90``), else text."""
    text = str(value)
    match = _LEADING_NUMBER.match(text)
    return (float(match.group(1)) if match else math.inf, text)


def utility_card(run: FixRun, state: ViewState) -> Any:
    columns = [str(c) for c in run.data.columns if c in run.original.columns]
    qis = [c for c in run.base_contract.quasi_identifiers if c in columns]
    first = qis[0] if qis else (columns[0] if columns else None)
    targets = [c for c in columns if c not in qis]
    target = next((c for c in run.base_contract.sensitive if c in targets), targets[0] if targets else None)
    return card(
        "Utility",
        dmc.Grid(
            [
                dmc.GridCol(
                    dmc.Stack(
                        [dmc.Text("Information loss", size="sm", fw=500), loss_table(run), changed_table(run)], gap=6
                    ),
                    # Side by side only where the card is wide enough for the four columns of the loss table.
                    span={"base": 12, "xl": 6},
                ),
                dmc.GridCol(
                    dmc.Stack(
                        [
                            dmc.Select(
                                id="fix-dist-column",
                                label="Distribution of",
                                data=columns,
                                value=first,
                                searchable=True,
                                allowDeselect=False,
                                w=260,
                            ),
                            chart(
                                dcc.Graph(
                                    figure=distribution_figure(run, first),
                                    config={"displaylogo": False},
                                    id="fix-dist-chart",
                                ),
                                title="Value distribution",
                                summary="Records per value of the chosen column: before the steps (left, grey) and "
                                "after (right, blue), the most frequent values.",
                                columns=(("name", "side"), ("x", "value"), ("y", "records")),
                            ),
                        ],
                        gap=4,
                    ),
                    span={"base": 12, "xl": 6},
                ),
            ]
        ),
        dmc.Group(
            [
                dmc.Select(
                    id="fix-clf-target",
                    label="Classifier accuracy: predict",
                    data=targets,
                    value=target,
                    searchable=True,
                    allowDeselect=False,
                    w=260,
                ),
                dmc.Button("Compare original and fixed", id="fix-clf-run", variant="light"),
            ],
            align="flex-end",
            mt="sm",
        ),
        dcc.Loading(html.Div(id="fix-clf-result"), type="dot", delay_show=300),
        description="What the steps cost: ARX information-loss metrics, cells changed, value distributions and, on "
        "request, the accuracy of a classifier trained on the fixed data (features: the quasi-identifiers).",
    )


def classifier_view(run: FixRun, target: str | None) -> Any:
    """Accuracy of a logistic regression on the original vs the fixed table (core's classifier_accuracy)."""
    features = [c for c in run.base_contract.quasi_identifiers if c in run.data.columns and c != target]
    if not target or not features:
        return error_alert("Choose a target column; the quasi-identifiers are the features.", title="Nothing to train")
    try:
        result = classifier_accuracy(run.original, run.data, target=target, features=features, kept_rows=run.kept_rows)
    except PrivdashError as exc:
        return error_alert(str(exc), title="The classifier could not be trained")
    return dmc.Text(
        f"Predicting {target} from {', '.join(features)}: accuracy {fmt_share(result.original_accuracy)} on the "
        f"original, {fmt_share(result.transformed_accuracy)} on the fixed data (always guessing the most frequent "
        f"value: {fmt_share(result.baseline_accuracy)}).",
        size="sm",
        id="fix-clf-text",
    )


def preview(runs: FixRuns, state: ViewState, progress: Callable[[int, str], None] | None = None) -> Any:
    """Everything right of the controls for ``state``: outcomes, before / after, the curve and utility."""
    try:
        run = runs.run(state, progress)
        before = runs.services.diagnosis(state)
    except (PrivdashError, StateError) as exc:
        return error_alert(str(exc), title="The fix cannot be previewed", alert_id="fix-error")
    parts: list[Any] = []
    if run.error:
        parts.append(
            error_alert(
                run.error + " Undo it, or change its settings and add it again.",
                title="A step could not be applied",
                alert_id="fix-step-error",
            )
        )
    after: Diagnosis | None = None
    problem = None
    try:
        after = runs.fixed_diagnosis(run, state)
    except PrivdashError as exc:
        problem = str(exc)
    if after is not None:
        # The decision first, for the fixed table (the Risk page's banner, with what the search found).
        verdict = release_verdict(after, state)
        people = after.entity is not None
        parts.insert(0, verdict_banner(verdict, cheapest_fix(run), banner_id="fix-verdict", people=people))
    parts += [
        card("Steps applied", steps_table(run)),
        *[section for section in (solutions_card(run),) if section is not None],
        sample_card(run),
        dmc.Grid(
            [
                dmc.GridCol(side_view(before, state, "before", "Before", None), span={"base": 12, "md": 6}),
                dmc.GridCol(side_view(after, state, "after", "After", problem), span={"base": 12, "md": 6}),
            ],
            gutter="md",
        ),
        card(
            "Records suppressed to reach k",
            chart(
                dcc.Graph(
                    figure=suppression_curve(before, after, state.k), config={"displaylogo": False}, id="fix-k-curve"
                ),
                title="Records suppressed to reach k",
                summary="Share of the records in classes smaller than k: what record suppression would remove to "
                "reach each k, before (dotted grey) and after the steps (solid blue); dashed line: the target k.",
                columns=(("name", "series"), ("x", "k"), ("customdata", "records"), ("y", "share (%)")),
                title_visible=False,
            ),
        ),
        utility_card(run, state),
    ]
    return dmc.Stack(parts, gap="md")


# --- builders: controls --------------------------------------------------------------------------------------------


def step_list(state: ViewState) -> Any:
    """The state's steps, in order (a malformed one is shown with its message)."""
    items = []
    for i, spec in enumerate(state.fix):
        try:
            line = dmc.Text(describe_spec(check_spec(spec)), size="sm")
        except FixError as exc:
            line = dmc.Text(f"Malformed step: {exc}", size="sm", c="red.8")
        items.append(dmc.ListItem(line, className="fix-step", id=f"fix-step-{i}"))
    if not items:
        return dmc.Text("No step yet.", size="sm", c="dimmed", id="fix-no-steps")
    return dmc.List(items, type="ordered", spacing=4, id="fix-step-list")


def controls(
    loaded: LoadedDataset, state: ViewState, pseudonym_key: str | None = None, stored: Collection[str] = ()
) -> Any:
    technique = "generalize"
    return dmc.Stack(
        [
            card(
                "Add a step",
                dmc.Select(
                    id="fix-technique",
                    label="Technique",
                    data=[{"value": k, "label": v} for k, v in KINDS.items()],
                    value=technique,
                    allowDeselect=False,
                    mb="xs",
                ),
                *technique_panels(loaded, state, technique, pseudonym_key, stored),
                dmc.Button("Add step", id="fix-add", mt="md", fullWidth=True),
                html.Div(id="fix-message", style={"marginTop": "8px"}),
            ),
            card(
                "Steps",
                html.Div(step_list(state), id="fix-steps"),
                dmc.Group(
                    [
                        dmc.Button("Undo last step", id="fix-undo", variant="light", size="xs"),
                        dmc.Button("Remove all", id="fix-clear", variant="subtle", color="red", size="xs"),
                    ],
                    mt="sm",
                ),
                dmc.Text("Targets", size="sm", fw=500, mt="md"),
                target_inputs("fix-target-", state, compact=True),
                description="Applied in order to the table; the link carries the settings, never data values.",
            ),
            card(
                "Download",
                dmc.Stack(
                    [
                        dmc.Button(label, id=f"fix-dl-{key}", variant="light", size="xs", fullWidth=True)
                        for key, label in DOWNLOADS.items()
                    ],
                    gap=6,
                ),
                dcc.Download(id="fix-download"),
                html.Div(id="fix-download-message"),
                dmc.Code(
                    "privdash anonymize --recipe recipe.json IN -o OUT",
                    block=True,
                    mt="sm",
                    id="fix-recipe-command",
                    # A narrow column wraps the command instead of cutting it off.
                    style={"whiteSpace": "pre-wrap", "overflowWrap": "anywhere"},
                ),
                description="The recipe re-applies these steps to new data with the same columns:",
            ),
            recipe_card(),
        ],
        gap="md",
    )


#: Largest recipe file the page reads (a recipe with table hierarchies of a wide table stays far below).
RECIPE_MAX_BYTES = 20_000_000


def recipe_card() -> Any:
    """Re-apply a saved recipe to the open dataset, with a warning (or a refusal) when it removes more records
    than the limit it was made with."""
    return card(
        "Re-apply a recipe",
        dcc.Upload(
            dmc.Text("Drop a recipe (JSON) here, or click to choose one", size="sm"),
            id="fix-recipe-upload",
            accept=".json,application/json",
            max_size=RECIPE_MAX_BYTES,
            className="upload-zone",
        ),
        dmc.Checkbox(
            id="fix-recipe-strict",
            label="Fail instead of warning when it removes more records than its suppression limit",
            checked=False,
            mt="xs",
            size="sm",
        ),
        html.Div(id="fix-recipe-result", style={"marginTop": "8px"}),
        dmc.Button(
            "Download the result (CSV)",
            id="fix-recipe-download",
            variant="light",
            size="xs",
            fullWidth=True,
            mt="xs",
            disabled=True,
        ),
        dcc.Download(id="fix-recipe-file"),
        description="Apply a recipe saved here or by privdash anonymize to the open dataset, as "
        "privdash anonymize --recipe does (the dataset itself is not changed).",
    )


def recipe_text(contents: str | None) -> bytes:
    """The bytes of an uploaded file (a ``data:...;base64,...`` URL; decoded as a recipe by
    :meth:`Recipe.from_bytes`); raises :class:`FixError` when the upload is unreadable."""
    if not contents or "," not in contents:
        raise FixError("Choose a recipe file.")
    try:
        return base64.b64decode(contents.split(",", 1)[1], validate=True)
    except ValueError:
        raise FixError("The recipe file could not be decoded; choose it again.") from None


def recipe_outcome(runs: FixRuns, state: ViewState, contents: str | None) -> RecipeOutcome:
    """The uploaded recipe applied to the state's dataset; raises ``PrivdashError`` with a message for the page."""
    if not state.dataset:
        raise FixError("No dataset is open.")
    loaded = runs.services.dataset(state.dataset)
    return reapply_recipe(loaded.frame, recipe_text(contents), key=runs.services.settings.pseudonym_key)


def recipe_view(outcome: RecipeOutcome, filename: str | None, *, strict: bool) -> Any:
    """What re-applying the recipe did, and its warning, or the refusal when the user chose to fail."""
    name = filename or "The recipe"
    parts: list[Any] = [
        dmc.Text(
            f"{name}: {len(outcome.recipe.steps)} step(s) applied to the open dataset, "
            f"{fmt_count(outcome.rows_in)} records in, {fmt_count(outcome.rows_out)} out.",
            size="sm",
            id="fix-recipe-summary",
        ),
        dmc.List([dmc.ListItem(dmc.Text(line, size="xs")) for line in outcome.steps], size="xs"),
    ]
    if outcome.warning and strict:
        parts.insert(
            0,
            error_alert(
                outcome.warning + " Nothing is offered for download: untick the box to accept the result anyway.",
                title="Stopped: more records removed than the recipe allows",
                alert_id="fix-recipe-failed",
            ),
        )
    elif outcome.warning:
        parts.insert(
            0,
            dmc.Alert(
                outcome.warning + " Tick the box above to refuse such a result instead.",
                title="Warning: more records removed than the recipe allows",
                color="yellow",
                variant="light",
                id="fix-recipe-warning",
            ),
        )
    return dmc.Stack(parts, gap=4)


def running_box() -> Any:
    return html.Div(
        card(None, progress_panel("fix")),
        id="fix-running",
        style={"display": "none"},
    )


def layout(services: Services, **query: Any) -> Any:
    """The Fix page for the state in ``query``."""
    state, loaded, alerts = open_page(services, query)
    body: list[Any] = [
        page_title("Fix", "Generalize, suppress, aggregate: see what each step does to the risk and to the data."),
        *alerts,
    ]
    if loaded is None:
        body += [no_dataset(), state_store(state)]
        return html.Div(body)
    runs = FixRuns(services)
    ready = runs.ready(state)
    body += [
        dmc.Grid(
            [
                dmc.GridCol(
                    controls(loaded, state, services.settings.pseudonym_key, stored_hierarchies(services, state)),
                    # A third of the page up to 1,408 px, so that the technique names fit the select.
                    span={"base": 12, "lg": 4, "xl": 3},
                ),
                dmc.GridCol(
                    [
                        running_box(),
                        dcc.Loading(
                            html.Div(preview(runs, state) if ready else None, id="fix-results"),
                            delay_show=300,
                            type="dot",
                        ),
                        html.Div(None if ready else waiting_text(), id="fix-slow-results"),
                    ],
                    span={"base": 12, "lg": 8, "xl": 9},
                ),
            ],
            gutter="md",
        ),
        estimates_section.card(loaded, state, services),
        protect_section.card(loaded, state, services),
        attack_section.card(loaded, state, services),
        dp_release_section.card(loaded, state, services),
        synthetic_section.card(loaded, state, services),
        report_card(),
        dcc.Store(id="fix-slow-request", data=None),
        dcc.Store(id="fix-initial-request", data=None if ready else state.to_dict()),
        state_store(state),
    ]
    return html.Div(body)


# --- downloads -----------------------------------------------------------------------------------------------------


def download_stem(loaded: LoadedDataset) -> str:
    return loaded.id.split(":", 1)[1] if loaded.is_demo else Path(loaded.title).stem or "data"


def download_payload(run: FixRun, what: str, stem: str) -> dict[str, Any]:
    """What ``dcc.Download`` sends for ``what``: ``csv``, ``parquet`` (the fixed table), ``mapping`` or ``recipe``."""
    if what == "csv":
        # CSV downloads are opened in spreadsheets: formula cells are escaped (the Parquet download is exact).
        return {"content": csv_text(run.data), "filename": f"{stem}-fixed.csv", "type": "text/csv"}
    if what == "parquet":
        buffer = io.BytesIO()
        parquet_safe(run.data).to_parquet(buffer, index=False)
        return dcc.send_bytes(buffer.getvalue(), f"{stem}-fixed.parquet")
    if what == "mapping":
        return {"content": csv_text(run.mapping()), "filename": f"{stem}-mapping.csv", "type": "text/csv"}
    if what == "recipe":
        return {"content": run.recipe.to_json() + "\n", "filename": f"{stem}-recipe.json", "type": "application/json"}
    raise FixError(f"Unknown download {what!r}.")


# --- callbacks -----------------------------------------------------------------------------------------------------


def _refresh(runs: FixRuns, state: ViewState, previous_request: Any) -> tuple[Any, Any, Any, Any]:
    """Outputs after a state change: results, slow results, step list, background request.

    A quick list is previewed at once (and a pending background request is withdrawn); a slow one that is not
    cached yet is handed to the background job.
    """
    steps = step_list(state)
    if runs.ready(state):
        return preview(runs, state), None, steps, (no_update if previous_request is None else None)
    # The waiting text goes where the background job's result will go, so that the result replaces it.
    return None, waiting_text(), steps, state.to_dict()


def waiting_text() -> Any:
    """What the results column says while a background job computes the preview (replaced by its result)."""
    return dmc.Text("Computing the preview in the background ...", size="sm", c="dimmed", id="fix-waiting")


def register(app: Dash, services: Services) -> None:
    dash.register_page(
        __name__, path=PATH, name=NAME, title="privdash · Fix", order=2, layout=lambda **q: layout(services, **q)
    )
    register_report(app, services)
    for section in (estimates_section, protect_section, attack_section, dp_release_section, synthetic_section):
        section.register(app, services)
    runs = FixRuns(services)
    control_ids = list(CONTROLS)

    @app.callback(
        Output({"type": "fix-panel", "kind": ALL}, "style"),
        Input("fix-technique", "value"),
        State({"type": "fix-panel", "kind": ALL}, "id"),
    )
    def show_panel(technique: str | None, ids: list[dict[str, str]]) -> list[dict[str, str]]:
        return [shown(item["kind"] == technique) for item in ids]

    @app.callback(
        Output(RULE_CONTROLS["builder"], "value"),
        Output(RULE_CONTROLS["text"], "value"),
        Input(control_id("generalize", "column"), "value"),
        State(PAGE_STATE, "data"),
        prevent_initial_call=True,
    )
    def default_generalization(column: str | None, data: Any) -> tuple[Any, Any]:
        state = state_from_store(data)
        if not column or not state.dataset:
            return no_update, no_update
        rule = runs.suggested_rule(state, column)
        return rule["builder"], rule_text(rule)

    @app.callback(
        Output(RULE_CONTROLS["text"], "description"),
        Output(RULE_HINT, "children"),
        Input(RULE_CONTROLS["builder"], "value"),
        Input(RULE_CONTROLS["text"], "value"),
        Input(control_id("generalize", "level"), "value"),
        State(control_id("generalize", "column"), "value"),
        State(PAGE_STATE, "data"),
    )
    def generalization_hint(builder: str | None, text: str | None, level: Any, column: str | None, data: Any) -> tuple:
        return rule_help(builder or ""), runs.hierarchy_hint(state_from_store(data), column, builder, text, level)

    view_outputs = [
        Output("fix-results", "children", allow_duplicate=True),
        Output("fix-slow-results", "children", allow_duplicate=True),
        Output("fix-steps", "children", allow_duplicate=True),
        Output("fix-slow-request", "data", allow_duplicate=True),
    ]
    unchanged = (no_update, no_update, no_update, no_update)

    @app.callback(
        Output(PAGE_STATE, "data", allow_duplicate=True),
        Output("fix-message", "children"),
        *view_outputs,
        Input("fix-add", "n_clicks"),
        State("fix-technique", "value"),
        *[State(cid, prop) for cid, prop in CONTROLS.items()],
        State(PAGE_STATE, "data"),
        State("fix-slow-request", "data"),
        prevent_initial_call=True,
    )
    def add_step(_clicks: int | None, technique: str | None, *rest: Any) -> tuple[Any, ...]:
        *values, data, request = rest
        new_state, message = add_spec(
            runs, state_from_store(data), technique, dict(zip(control_ids, values, strict=True))
        )
        if message is not None:
            alert = error_alert(message, title="This step was not added", alert_id="fix-add-error")
            return (no_update, alert, *unchanged)
        return (new_state.to_dict(), None, *_refresh(runs, new_state, request))

    @app.callback(
        Output(PAGE_STATE, "data", allow_duplicate=True),
        *view_outputs,
        Input({"type": "fix-solution-pick", "index": ALL}, "n_clicks"),
        State(PAGE_STATE, "data"),
        State("fix-slow-request", "data"),
        prevent_initial_call=True,
    )
    def pick(clicks: list[int | None], data: Any, request: Any) -> tuple[Any, ...]:
        trigger = ctx.triggered_id
        if not isinstance(trigger, Mapping) or not any(clicks):
            return (no_update, *unchanged)
        state = state_from_store(data)
        try:
            new_state = pick_solution(state, int(trigger["index"]))
        except (FixError, StateError):
            return (no_update, *unchanged)
        if new_state == state:
            return (no_update, *unchanged)
        return (new_state.to_dict(), *_refresh(runs, new_state, request))

    @app.callback(
        Output("fix-solutions-box", "children"),
        Output("fix-solution-estimates", "children"),
        Input("fix-solution-estimates-run", "n_clicks"),
        State(estimates_section.INPUT_ID, "value"),
        State(PAGE_STATE, "data"),
        prevent_initial_call=True,
        background=True,
        progress=[
            Output("fix-solution-estimates-progress", "value"),
            Output("fix-solution-estimates-status", "children"),
        ],
        running=[
            (Output("fix-solution-estimates-running", "style"), {"display": "block"}, {"display": "none"}),
            (Output("fix-solution-estimates-run", "disabled"), True, False),
        ],
        cancel=[Input("fix-solution-estimates-cancel", "n_clicks"), Input("url", "pathname")],
        interval=400,
    )
    def solution_estimates(
        set_progress: Callable[[tuple[int, str]], None], clicks: int | None, text: str | None, data: Any
    ) -> tuple[Any, Any]:
        if not clicks:
            return no_update, no_update
        set_progress((10, "Computing the estimates on each solution's table ..."))
        try:
            state = state_from_store(data)
        except StateError as exc:
            return no_update, error_alert(
                str(exc), title="The estimates could not be compared", alert_id="fix-solution-estimates-error"
            )
        return compare_solutions(runs, state, text)

    @app.callback(
        Output(PAGE_STATE, "data", allow_duplicate=True),
        *view_outputs,
        Input("fix-undo", "n_clicks"),
        Input("fix-clear", "n_clicks"),
        State(PAGE_STATE, "data"),
        State("fix-slow-request", "data"),
        prevent_initial_call=True,
    )
    def undo(_undo: int | None, _clear: int | None, data: Any, request: Any) -> tuple[Any, ...]:
        state = state_from_store(data)
        if not state.fix:
            return (no_update, *unchanged)
        new_state = state.updated(fix=() if ctx.triggered_id == "fix-clear" else state.fix[:-1])
        return (new_state.to_dict(), *_refresh(runs, new_state, request))

    @app.callback(
        Output(PAGE_STATE, "data", allow_duplicate=True),
        *view_outputs,
        Output("fix-target-release", "error"),
        Output(control_id("search", "release"), "label"),
        Output(control_id("search", "release"), "checked"),
        Output(control_id("search", "release"), "disabled"),
        Output(control_id("record_suppression", "release"), "label"),
        Output(control_id("record_suppression", "release"), "checked"),
        Output(control_id("record_suppression", "release"), "disabled"),
        *[Input(target, "value") for target in target_ids("fix-target-")],
        State(PAGE_STATE, "data"),
        State("fix-slow-request", "data"),
        prevent_initial_call=True,
    )
    def targets(*args: Any) -> tuple[Any, ...]:
        *values, data, request = args
        rules_error = release_error(values[-1])  # explained under the release-rules input
        state = state_from_store(data)
        try:
            new_state = with_targets(state, *values)
        except StateError:
            return (no_update, *unchanged, rules_error, *(no_update,) * 6)
        if new_state == state:
            return (no_update, *unchanged, None, *(no_update,) * 6)
        # The search's checkbox follows the rules: new rules are met by the next search unless it is unticked.
        changed = new_state.release != state.release
        checkbox = release_checkbox(new_state) if changed else {}
        suppression = suppression_checkbox(new_state) if changed else {}
        return (
            new_state.to_dict(),
            *_refresh(runs, new_state, request),
            None,
            *(checkbox.get(prop, no_update) for prop in ("label", "checked", "disabled")),
            *(suppression.get(prop, no_update) for prop in ("label", "checked", "disabled")),
        )

    app.clientside_callback(
        "function(request) { return request || window.dash_clientside.no_update; }",
        Output("fix-slow-request", "data", allow_duplicate=True),
        Input("fix-initial-request", "data"),
        prevent_initial_call="initial_duplicate",
    )

    @app.callback(
        Output("fix-slow-results", "children"),
        Input("fix-slow-request", "data"),
        prevent_initial_call=True,
        background=True,
        progress=[Output("fix-progress", "value"), Output("fix-status", "children")],
        running=[(Output("fix-running", "style"), {"display": "block"}, {"display": "none"})],
        cancel=[Input("fix-cancel", "n_clicks"), Input("url", "pathname")],
        interval=300,
    )
    def slow_preview(set_progress: Callable[[tuple[int, str]], None], request: Any) -> Any:
        if not request:
            return None
        state = state_from_store(request)
        total = max(len(state.fix), 1)

        def progress(index: int, text: str) -> None:
            set_progress((int(100 * index / total), f"Step {index + 1} of {total}: {text} ..."))

        return preview(runs, state, progress)

    @app.callback(
        Output("fix-dist-chart", "figure"),
        Input("fix-dist-column", "value"),
        State(PAGE_STATE, "data"),
        prevent_initial_call=True,
    )
    def distribution(column: str | None, data: Any) -> Any:
        try:
            return distribution_figure(runs.run(state_from_store(data)), column)
        except PrivdashError:
            return no_update

    @app.callback(
        Output("fix-clf-result", "children"),
        Input("fix-clf-run", "n_clicks"),
        State("fix-clf-target", "value"),
        State(PAGE_STATE, "data"),
        prevent_initial_call=True,
    )
    def classifier(_clicks: int | None, target: str | None, data: Any) -> Any:
        try:
            run = runs.run(state_from_store(data))
        except PrivdashError as exc:
            return error_alert(str(exc), title="The classifier could not be trained")
        return classifier_view(run, target)

    @app.callback(
        Output("fix-recipe-result", "children"),
        Output("fix-recipe-download", "disabled"),
        Input("fix-recipe-upload", "contents"),
        Input("fix-recipe-strict", "checked"),
        State("fix-recipe-upload", "filename"),
        State(PAGE_STATE, "data"),
        prevent_initial_call=True,
    )
    def recipe_check(contents: str | None, strict: bool | None, filename: str | None, data: Any) -> tuple[Any, bool]:
        if not contents:
            return None, True
        try:
            outcome = recipe_outcome(runs, state_from_store(data), contents)
        except PrivdashError as exc:
            return error_alert(str(exc), title="The recipe could not be applied", alert_id="fix-recipe-error"), True
        return recipe_view(outcome, filename, strict=bool(strict)), bool(strict and outcome.warning)

    @app.callback(
        Output("fix-recipe-file", "data"),
        Input("fix-recipe-download", "n_clicks"),
        State("fix-recipe-upload", "contents"),
        State("fix-recipe-strict", "checked"),
        State(PAGE_STATE, "data"),
        prevent_initial_call=True,
    )
    def recipe_download(_clicks: int | None, contents: str | None, strict: bool | None, data: Any) -> Any:
        state = state_from_store(data)
        try:
            outcome = recipe_outcome(runs, state, contents)
        except PrivdashError:
            return no_update
        if strict and outcome.warning:
            return no_update
        stem = download_stem(runs.services.dataset(str(state.dataset)))
        return {"content": csv_text(outcome.data), "filename": f"{stem}-recipe-applied.csv", "type": "text/csv"}

    @app.callback(
        Output("fix-download", "data"),
        Output("fix-download-message", "children"),
        *[Input(f"fix-dl-{key}", "n_clicks") for key in DOWNLOADS],
        State(PAGE_STATE, "data"),
        prevent_initial_call=True,
    )
    def download(*args: Any) -> tuple[Any, Any]:
        what = str(ctx.triggered_id or "").removeprefix("fix-dl-")
        try:
            payload = download_of(runs, state_from_store(args[-1]), what)
        except PrivdashError as exc:
            return no_update, error_alert(str(exc), title="Nothing to download", alert_id="fix-download-error")
        return payload, None


def add_spec(
    runs: FixRuns, state: ViewState, technique: str | None, values: Mapping[str, Any]
) -> tuple[ViewState, str | None]:
    """The state with the step the controls describe appended, or the unchanged state and why not
    (:meth:`FixRuns.append`: a quick step the core refuses is not added)."""
    try:
        spec = spec_from_controls(technique, values, state)
    except PrivdashError as exc:
        return state, str(exc)
    return runs.append(state, spec)


def download_of(runs: FixRuns, state: ViewState, what: str) -> dict[str, Any]:
    """The ``dcc.Download`` payload of ``what`` for the state's run; raises ``PrivdashError`` when a step failed."""
    run = runs.run(state)
    if run.error:
        raise FixError(run.error + " Undo it before downloading.")
    return download_payload(run, what, download_stem(runs.services.dataset(str(state.dataset))))


__all__ = [
    "CONTROLS",
    "add_spec",
    "classifier_view",
    "control_id",
    "distribution_figure",
    "download_of",
    "download_payload",
    "layout",
    "loss_table",
    "preview",
    "recipe_outcome",
    "recipe_view",
    "register",
    "release_checkbox",
    "risk_cards",
    "sample_table",
    "spec_from_controls",
    "step_list",
    "suppression_checkbox",
    "suppression_curve",
    "suppression_rules",
    "technique_panels",
]
