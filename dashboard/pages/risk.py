"""Risk page: equivalence classes, privacy models and re-identification risk of the open dataset.

Every number comes from :func:`dashboard.core.measure.diagnose.diagnose` (through the per-process cache of
:class:`~dashboard.application.services.Services`) or, for the QI-combination analysis, from
:mod:`dashboard.core.measure.combinations` in a background job with a progress bar and a cancel button. The builders
here only arrange those results; callbacks turn control values into a new view state and call the builders.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import dash
import dash_ag_grid as dag
import dash_mantine_components as dmc
import numpy as np
import pandas as pd
import plotly.graph_objects as go
from dash import ClientsideFunction, Dash, Input, Output, State, dcc, html, no_update

from dashboard.application.services import Services
from dashboard.application.state import StateError, ViewState
from dashboard.core.data.contract import ColumnRole
from dashboard.core.errors import PrivdashError
from dashboard.core.measure.classes import MissingPolicy
from dashboard.core.measure.combinations import (
    CombinationRisk,
    MinimalSampleUniques,
    combination_risk,
    minimal_sample_uniques,
)
from dashboard.core.measure.diagnose import Diagnosis
from dashboard.core.measure.risk import AttackerRisk, records_at_risk_by_k
from dashboard.ui.components import (
    card,
    error_alert,
    fmt_count,
    fmt_number,
    fmt_share,
    no_dataset,
    page_title,
    progress_panel,
    stat_card,
)
from dashboard.ui.pagestate import PAGE_STATE, open_page, state_from_store, state_store
from dashboard.ui.theme import COLORS, figure

PATH = "/risk"
NAME = "Risk"

#: Class sizes listed one by one; larger sizes are grouped into these bins (lower bounds), so charts stay readable.
SINGLE_SIZES = 12
SIZE_BINS = (13, 21, 51, 101, 1_001, 10_001)

POLICY_OPTIONS = (
    (MissingPolicy.VALUE, "Missing is a value"),
    (MissingPolicy.WILDCARD, "Missing matches anything"),
    (MissingPolicy.DROP, "Drop records with missing"),
)
POLICY_HELP = {
    MissingPolicy.VALUE: "A missing QI value is a category of its own, as an attacker sees it in the released table.",
    MissingPolicy.WILDCARD: "A missing QI value matches every value (cells suppressed by the publisher): records "
    "with a missing value blend into every compatible class.",
    MissingPolicy.DROP: "Records with a missing value in any QI are left out of every class and measure.",
}

# --- class sizes -----------------------------------------------------------------------------------------------


def size_bins(frequencies: pd.DataFrame) -> pd.DataFrame:
    """Group the core's class-size frequency table for display: sizes 1..12 one by one, larger sizes in bins.

    Columns ``label``, ``low``, ``high`` (inclusive; ``high`` is None for the open last bin), ``classes``,
    ``records``; only bins up to the largest size present are listed, empty ones included in between.
    """
    sizes = frequencies["size"].to_numpy(dtype=np.int64)
    largest = int(sizes.max()) if len(sizes) else 0
    bounds: list[tuple[int, int | None]] = [(s, s) for s in range(1, SINGLE_SIZES + 1)]
    for i, low in enumerate(SIZE_BINS):
        bounds.append((low, SIZE_BINS[i + 1] - 1 if i + 1 < len(SIZE_BINS) else None))
    rows = []
    for low, high in bounds:
        if low > max(largest, 1):
            break
        inside = (sizes >= low) & (sizes <= (high if high is not None else np.iinfo(np.int64).max))
        label = str(low) if high == low else (f"{low:,}–{high:,}" if high is not None else f"{low:,}+")
        rows.append(
            (
                label,
                low,
                high,
                int(frequencies["classes"].to_numpy()[inside].sum()),
                int(frequencies["records"].to_numpy()[inside].sum()),
            )
        )
    return pd.DataFrame(rows, columns=["label", "low", "high", "classes", "records"])


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


def size_histogram(binned: pd.DataFrame, k_target: int) -> go.Figure:
    """Bars of the number of classes per size bin (red below the k target)."""
    colors = [COLORS["danger"] if low < k_target else COLORS["primary"] for low in binned["low"]]
    fig = figure(
        go.Bar(
            x=binned["label"],
            y=binned["classes"],
            marker_color=colors,
            customdata=np.stack([binned["records"]], axis=-1) if len(binned) else None,
            hovertemplate="size %{x}: %{y:,} classes, %{customdata[0]:,} records<extra></extra>",
        ),
        xaxis_title="class size",
        yaxis_title="classes",
        height=300,
    )
    fig.update_xaxes(type="category")
    return fig


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


@dataclass(frozen=True)
class Headline:
    """One headline number and its verdict against the user's target (None when there is nothing to judge)."""

    label: str
    value: str
    passed: bool | None
    detail: str
    key: str


def headlines(diagnosis: Diagnosis, state: ViewState) -> list[Headline]:
    """k, l, t and the three attacker risks, each judged by the core's comparison against the state's target."""
    classes = diagnosis.classes
    out = [
        Headline(
            "k-anonymity",
            fmt_count(diagnosis.k),
            classes.records_below(state.k) == 0 if classes.n_classes else None,
            f"target k ≥ {state.k}; {fmt_count(classes.records_below(state.k))} records in smaller classes",
            "k",
        )
    ]
    models = list(diagnosis.sensitive_models.values())
    if models:
        worst_l = min(models, key=lambda m: m.l_distinct.value)
        worst_t = max(models, key=lambda m: m.t_closeness.value)
        out.append(
            Headline(
                "l-diversity",
                fmt_number(worst_l.l_distinct.value),
                all(m.l_distinct.satisfies(state.l) for m in models),
                f"target l ≥ {state.l}; lowest on {worst_l.attribute}",
                "l",
            )
        )
        out.append(
            Headline(
                "t-closeness",
                fmt_number(worst_t.t_closeness.value),
                all(m.t_closeness.satisfies(state.t) for m in models),
                f"target t ≤ {fmt_number(state.t)}; highest on {worst_t.attribute} "
                f"({worst_t.t_closeness.distance.value} distance)",
                "t",
            )
        )
    else:
        for label, key in (("l-diversity", "l"), ("t-closeness", "t")):
            out.append(Headline(label, "-", None, "no sensitive attribute chosen", key))
    risk = diagnosis.risk
    out.append(_attacker("Prosecutor risk", risk.prosecutor, "prosecutor"))
    out.append(_attacker("Journalist risk", risk.journalist, "journalist"))
    marketer = risk.marketer
    out.append(
        Headline(
            "Marketer risk",
            fmt_share(marketer.average),
            marketer.average <= marketer.threshold,
            f"expected share re-identified; target ≤ {fmt_share(marketer.threshold, 0)}",
            "marketer",
        )
    )
    return out


def _attacker(label: str, risk: AttackerRisk, key: str) -> Headline:
    return Headline(
        label,
        fmt_share(risk.highest),
        risk.n_records_at_risk == 0,
        f"highest; average {fmt_share(risk.average)}, {fmt_share(risk.records_at_risk)} of records above "
        f"{fmt_share(risk.threshold, 0)}",
        key,
    )


def headline_cards(items: Sequence[Headline]) -> Any:
    return dmc.SimpleGrid(
        [stat_card(h.label, h.value, passed=h.passed, detail=h.detail, card_id=f"card-{h.key}") for h in items],
        cols={"base": 2, "sm": 3, "lg": 6},
        spacing="md",
        id="headline-cards",
    )


def summary_line(diagnosis: Diagnosis) -> Any:
    """Records, classes, uniques and the missing-value policy's effect, in one line of badges."""
    classes = diagnosis.classes
    missing_rows = _records_with_missing_qi(diagnosis)
    policy = diagnosis.missing_policy
    if policy == MissingPolicy.DROP:
        effect = f"{fmt_count(classes.n_dropped)} records with a missing QI value left out"
    elif policy == MissingPolicy.WILDCARD:
        effect = f"{fmt_count(missing_rows)} records with a missing QI value match every compatible class"
    else:
        effect = f"{fmt_count(missing_rows)} records with a missing QI value form their own classes"
    return dmc.Group(
        [
            dmc.Badge(f"{fmt_count(diagnosis.n_records)} records analysed", id="records-analysed"),
            dmc.Badge(f"{fmt_count(classes.n_classes)} classes", id="class-count"),
            dmc.Badge(f"{fmt_count(diagnosis.sample_uniques)} unique records", color="red", id="unique-count"),
            dmc.Badge(effect, color="gray", id="missing-effect"),
        ],
        gap="xs",
    )


def _records_with_missing_qi(diagnosis: Diagnosis) -> int:
    classes = diagnosis.classes
    if diagnosis.missing_policy == MissingPolicy.DROP:
        return classes.n_dropped
    if not classes.n_classes:
        return 0
    return int(classes.counts[(classes.class_codes < 0).any(axis=1)].sum())


# --- per-class table -----------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class ClassTable:
    """The per-class table behind the grid: one row per class, with the columns' grid ids and titles."""

    frame: pd.DataFrame
    titles: Mapping[str, str]


def class_table(diagnosis: Diagnosis, state: ViewState) -> ClassTable:
    """QI values, size, records, prosecutor risk, and per sensitive attribute l and t, for every class.

    ``fails`` names the targets a class misses (k, l, t), from the core's per-class comparisons.
    """
    classes = diagnosis.classes
    keys = classes.keys()
    columns: dict[str, Any] = {}
    titles: dict[str, str] = {}
    for i, name in enumerate(diagnosis.quasi_identifiers):
        column = keys[name]
        columns[f"q{i}"] = (
            column.astype(object).where(column.notna(), None).map(lambda v: v if v is None else str(v)).to_numpy()
        )
        titles[f"q{i}"] = name
    columns["size"] = classes.sizes
    titles["size"] = "size"
    columns["records"] = classes.counts
    titles["records"] = "records"
    columns["risk"] = diagnosis.risk.prosecutor.class_risk
    titles["risk"] = "risk"
    fails_k = classes.sizes < state.k
    fails_l = np.zeros(classes.n_classes, dtype=bool)
    fails_t = np.zeros(classes.n_classes, dtype=bool)
    for i, (name, models) in enumerate(diagnosis.sensitive_models.items()):
        columns[f"l{i}"] = models.l_distinct.per_class
        titles[f"l{i}"] = f"l ({name})"
        columns[f"t{i}"] = models.t_closeness.per_class
        titles[f"t{i}"] = f"t ({name})"
        fails_l |= ~models.l_distinct.class_satisfies(state.l)
        fails_t |= ~models.t_closeness.class_satisfies(state.t)
    labels = np.full(classes.n_classes, "", dtype=object)
    for flag, text in ((fails_k, "k"), (fails_l, "l"), (fails_t, "t")):
        labels = np.where(flag, np.where(labels == "", text, labels + ", " + text), labels)
    columns["fails"] = labels
    titles["fails"] = "fails"
    return ClassTable(pd.DataFrame(columns), titles)


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
            spec.update(type="numericColumn", width=130)
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
        dashGridOptions={"cacheBlockSize": 100, "maxBlocksInCache": 20, "rowBuffer": 10},
        getRowStyle={
            "styleConditions": [
                {"condition": "params.data && params.data.fails", "style": {"backgroundColor": "#fff5f5"}}
            ]
        },
        style={"height": "420px"},
    )


def class_rows(table: ClassTable, request: Mapping[str, Any] | None, *, violating_only: bool) -> dict[str, Any]:
    """The block of the per-class table an infinite grid asked for, sorted by its ``sortModel``."""
    request = request or {}
    frame = table.frame
    positions = np.arange(len(frame))
    if violating_only:
        positions = positions[frame["fails"].to_numpy() != ""]
    sort_model = request.get("sortModel") or []
    if sort_model and sort_model[0].get("colId") in frame.columns:
        column = frame[sort_model[0]["colId"]].iloc[positions]
        key = column.astype(str) if column.dtype == object else column
        order = np.argsort(key.to_numpy(), kind="stable")
        if sort_model[0].get("sort") == "desc":
            order = order[::-1]
        positions = positions[order]
    start = max(int(request.get("startRow", 0) or 0), 0)
    end = max(int(request.get("endRow", start + 100) or start + 100), start)
    block = frame.iloc[positions[start:end]]
    rows = []
    records = block.to_dict("records")
    for row in records:
        rows.append({key: _json_value(value) for key, value in row.items()})
    return {"rowData": rows, "rowCount": len(positions)}


def _json_value(value: Any) -> Any:
    if value is None:
        return None
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating | float):
        number = float(value)
        return None if number != number else (number if np.isfinite(number) else str(number))
    return value


# --- QI combinations -----------------------------------------------------------------------------------------


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
        columnDefs=[
            {"field": "qis", "headerName": "quasi-identifiers", "flex": 2, "minWidth": 220},
            {"field": "size", "headerName": "QIs", "width": 80},
            {"field": "sample_uniques", "headerName": "unique records", "type": "numericColumn"},
            {
                "field": "records_below_k",
                "headerName": f"records in classes < {risk.k_threshold}",
                "type": "numericColumn",
            },
            {"field": "k", "type": "numericColumn", "width": 80},
            {"field": "classes", "type": "numericColumn"},
            {
                "field": "distinction",
                "type": "numericColumn",
                "valueFormatter": {"function": "d3.format('.3f')(params.value)"},
            },
            {
                "field": "separation",
                "type": "numericColumn",
                "valueFormatter": {"function": "d3.format('.3f')(params.value)"},
            },
        ],
        defaultColDef={"sortable": True, "resizable": True, "filter": True},
        style={"height": "320px"},
    )
    parts: list[Any] = [
        dmc.Text(
            "Unique records lost when one quasi-identifier is left out: the tallest bars are the attributes that "
            "single people out.",
            size="sm",
            c="dimmed",
        ),
        dcc.Graph(figure=bar, config={"displaylogo": False}, id="contribution-chart"),
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


def run_combinations(
    services: Services, state: ViewState, progress: Callable[[tuple[int, str]], None]
) -> tuple[CombinationRisk, MinimalSampleUniques]:
    """The QI-combination analysis of the state's view (the slow part of the page)."""
    progress((5, "Loading the table ..."))
    loaded = services.dataset(str(state.dataset))
    qis = [name for name in loaded.columns if state.roles.get(name) == ColumnRole.QUASI_IDENTIFIER]
    policy = MissingPolicy.VALUE if state.missing == MissingPolicy.WILDCARD else state.missing
    progress((15, f"Grouping records on all {2 ** len(qis) - 1:,} combinations of {len(qis)} QIs ..."))
    risk = combination_risk(loaded.frame, qis, k_threshold=state.k, missing=policy)
    progress((60, "Finding the smallest combinations that single out each unique record ..."))
    msus = minimal_sample_uniques(loaded.frame, qis, missing=policy)
    progress((100, "Done"))
    return risk, msus


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
                            ),
                            dmc.Text(POLICY_HELP[state.missing], size="xs", c="dimmed", id="missing-help"),
                        ],
                        gap=4,
                    ),
                    span={"base": 12, "md": 6},
                ),
                dmc.GridCol(
                    dmc.Group(
                        [
                            dmc.NumberInput(id="target-k", label="Target k", value=state.k, min=1, step=1, w=100),
                            dmc.NumberInput(id="target-l", label="Target l", value=state.l, min=1, step=1, w=100),
                            dmc.NumberInput(
                                id="target-t",
                                label="Target t",
                                value=state.t,
                                min=0,
                                max=1,
                                step=0.05,
                                decimalScale=3,
                                w=100,
                            ),
                            dmc.NumberInput(
                                id="target-risk",
                                label="Risk threshold",
                                value=state.risk,
                                min=0,
                                max=1,
                                step=0.05,
                                decimalScale=3,
                                w=120,
                                description="highest acceptable risk",
                            ),
                        ],
                        gap="sm",
                        align="flex-end",
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
    table = services.derived(
        ("class-table", diagnosis, state.k, state.l, state.t), lambda: class_table(diagnosis, state)
    )
    return dmc.Stack(
        [
            summary_line(diagnosis),
            headline_cards(headlines(diagnosis, state)),
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
                            dcc.Graph(
                                figure=size_histogram(binned, state.k), config={"displaylogo": False}, id="size-chart"
                            ),
                            description="Classes per size; red bars are below the target k.",
                        ),
                        span={"base": 12, "lg": 4},
                    ),
                    dmc.GridCol(
                        card(
                            "Records at risk over k",
                            dcc.Graph(
                                figure=records_at_risk_figure(diagnosis, state.k),
                                config={"displaylogo": False},
                                id="risk-curve",
                            ),
                            description="Share of records in classes smaller than k (dashed: target).",
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


def combination_request(state: ViewState) -> dict[str, Any]:
    """What the combination analysis depends on (it reruns only when this changes)."""
    return {
        "dataset": state.dataset,
        "qis": list(state.quasi_identifiers),
        "missing": state.missing.value,
        "k": state.k,
        "roles": state.to_dict().get("c", []),
        "orders": state.to_dict().get("o", {}),
    }


def layout(services: Services, **query: Any) -> Any:
    """The Risk page for the state in ``query``."""
    state, loaded, alerts = open_page(services, query)
    body: list[Any] = [page_title("Risk", "How easily can the records be re-identified, and which ones?"), *alerts]
    if loaded is None:
        body += [no_dataset(), state_store(state)]
        return html.Div(body)
    body += [
        controls(loaded.columns, state),
        dcc.Loading(html.Div(results(services, state), id="risk-results"), delay_show=300, type="dot"),
        combination_card(),
        dcc.Store(id="combo-request", data=combination_request(state)),
        dcc.Store(id="class-grid-version", data=0),
        state_store(state),
    ]
    return html.Div(body)


# --- callbacks -----------------------------------------------------------------------------------------------------


def register(app: Dash, services: Services) -> None:
    dash.register_page(
        __name__, path=PATH, name=NAME, title="privdash · Risk", order=1, layout=lambda **q: layout(services, **q)
    )

    @app.callback(
        Output(PAGE_STATE, "data", allow_duplicate=True),
        Output("risk-results", "children"),
        Output("risk-sas", "value"),
        Output("missing-help", "children"),
        Output("combo-request", "data"),
        Input("risk-qis", "value"),
        Input("risk-sas", "value"),
        Input("risk-missing", "value"),
        Input("target-k", "value"),
        Input("target-l", "value"),
        Input("target-t", "value"),
        Input("target-risk", "value"),
        State(PAGE_STATE, "data"),
        State("combo-request", "data"),
        prevent_initial_call=True,
    )
    def update_risk(
        qis: list[str] | None,
        sas: list[str] | None,
        missing: str,
        k: Any,
        l: Any,  # noqa: E741
        t: Any,
        risk: Any,
        data: Any,
        previous_request: Any,
    ) -> tuple:
        state = state_from_store(data)
        try:
            new_state = state.with_quasi_identifiers(qis or [], sas or []).updated(
                missing=MissingPolicy.parse(missing),
                k=int(k) if k not in (None, "") else state.k,
                l=int(l) if l not in (None, "") else state.l,
                t=float(t) if t not in (None, "") else state.t,
                risk=float(risk) if risk not in (None, "") else state.risk,
            )
        except (StateError, PrivdashError, ValueError) as exc:
            return (
                no_update,
                error_alert(str(exc), title="These settings are not valid"),
                no_update,
                no_update,
                no_update,
            )
        request = combination_request(new_state)
        return (
            new_state.to_dict(),
            results(services, new_state),
            list(new_state.sensitive),
            POLICY_HELP[new_state.missing],
            request if request != previous_request else no_update,
        )

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
            diagnosis = services.diagnosis(state)
        except PrivdashError:
            return {"rowData": [], "rowCount": 0}
        table = services.derived(
            ("class-table", diagnosis, state.k, state.l, state.t), lambda: class_table(diagnosis, state)
        )
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
            risk, msus = run_combinations(services, state, set_progress)
        except PrivdashError as exc:
            return error_alert(str(exc), title="The combinations were not analysed")
        return combinations_view(risk, msus)


__all__ = [
    "ClassTable",
    "Headline",
    "class_rows",
    "class_table",
    "combinations_view",
    "headlines",
    "layout",
    "records_at_risk_figure",
    "register",
    "results",
    "size_bins",
    "size_histogram",
    "size_table",
]
