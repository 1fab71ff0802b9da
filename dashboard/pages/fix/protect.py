"""The Fix page's "Perturb and mask" section: noise, rank swapping, PRAM, shuffling and geomasking previewed on the
open dataset, with the risk of perturbed data in place of k.

The Dash adapter of :mod:`privdash.application.protect`: the controls (method, columns, parameters, seed), the
Preview button, the result (the risk of perturbed data, the cells changed, or spatial k and a map of original and
masked points) and two downloads (the perturbed table as formula-safe CSV, the one-step recipe). Nothing is computed
when the page loads. The preview runs as a background job (:mod:`dashboard.ui.jobs`: progress bar, cancel button,
the server's time and memory limits): record linkage and spatial k of a large table take a while. The applied step
(settings and seed, never data values) is kept in a store; the recipe download is that step, and the CSV download
applies it again (only the step, not the measures; the seed makes it the same table).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import dash_ag_grid as dag
import dash_mantine_components as dmc
import plotly.graph_objects as go
from dash import ALL, Dash, Input, Output, State, ctx, dcc, html, no_update

from dashboard.ui.components import card as card_box
from dashboard.ui.components import (
    error_alert,
    fmt_count,
    fmt_number,
    fmt_share,
    progress_panel,
    scroll_table,
    stat_card,
)
from dashboard.ui.pagestate import PAGE_STATE, state_from_store
from dashboard.ui.theme import COLORS, PLOTLY_TEMPLATE
from privdash.application.protect import (
    ColumnChange,
    ProtectColumns,
    ProtectError,
    ProtectPreview,
    default_seed,
    metres,
    perturbed_table,
    preview_protection,
    protect_columns,
    protect_step,
    recipe_json,
    stored_step,
)
from privdash.application.services import LoadedDataset, Services
from privdash.application.state import ViewState
from privdash.application.techniques import TECHNIQUES, bounds, form_default
from privdash.data.tables import csv_text
from privdash.errors import PrivdashError
from privdash.transform.steps import Step

__all__ = ["card", "controls", "preview_view", "register", "step_from_controls"]

#: Control id -> property, read when Preview is pressed (see :func:`step_from_controls`).
CONTROLS: dict[str, str] = {
    "protect-method": "value",
    "protect-noise-columns": "value",
    "protect-noise-method": "value",
    "protect-noise-share": "value",
    "protect-swap-columns": "value",
    "protect-swap-p": "value",
    "protect-pram-columns": "value",
    "protect-pram-pd": "value",
    "protect-pram-alpha": "value",
    "protect-shuffle-columns": "value",
    "protect-geo-lat": "value",
    "protect-geo-lon": "value",
    "protect-geo-k": "value",
    "protect-donut-min": "value",
    "protect-donut-max": "value",
    "protect-perturb-scale": "value",
    "protect-perturb-distribution": "value",
    "protect-seed": "value",
}
#: The panels each method shows.
PANELS: dict[str, tuple[str, ...]] = {
    "add_noise": ("noise",),
    "rank_swap": ("swap",),
    "pram": ("pram",),
    "shuffling": ("shuffle",),
    "donut_masking": ("geo", "donut"),
    "coordinate_perturbation": ("geo", "perturb"),
}
_ALL_PANELS = ("noise", "swap", "pram", "shuffle", "geo", "donut", "perturb")
MAP_HEIGHT = 420
MAP_WIDTH = 640
SEED_NOTE = (
    "The recipe holds the seed. With the seed, anyone can recompute the noise or the offsets and remove them from "
    "the published table: keep the recipe with the data owner and never publish it with the data."
)


def _options(names: Sequence[str]) -> list[dict[str, str]]:
    return [{"value": n, "label": n} for n in names]


def _shown(visible: bool) -> dict[str, str]:
    return {} if visible else {"display": "none"}


def _panel(name: str, method: str, *children: Any) -> Any:
    return html.Div(
        dmc.Stack(list(children), gap="xs"),
        id={"type": "protect-panel", "panel": name},
        style=_shown(name in PANELS[method]),
    )


# --- controls ------------------------------------------------------------------------------------------------------


def _text(method: str, name: str) -> dict[str, Any]:
    """The label and help of a parameter of a technique (:mod:`privdash.application.techniques`)."""
    param = TECHNIQUES[method].param(name)
    return {"label": param.label, **({"description": param.help} if param.help else {})}


def _number(method: str, name: str) -> dict[str, Any]:
    """Label, help, default and bounds of a numerical parameter, for a ``NumberInput``."""
    param = TECHNIQUES[method].param(name)
    limits = bounds(param)
    out: dict[str, Any] = {**_text(method, name), "value": form_default(param)}
    if limits.min is not None:
        out["min"] = limits.min
    if limits.max is not None:
        out["max"] = limits.max
    return out


def _choice(method: str, name: str) -> dict[str, Any]:
    """Label, options (with their labels) and default of a parameter with a few options, for a ``Select``."""
    param = TECHNIQUES[method].param(name)
    labels = dict(param.choices)
    data = [{"value": o, "label": labels.get(o, o)} for o in param.options]
    return {**_text(method, name), "data": data, "value": param.default}


def controls(options: ProtectColumns, state: ViewState, seed: int) -> Any:
    """Method, its columns and parameters, the seed and the Preview button (ids ``protect-*``)."""
    method = "add_noise"
    number = {"w": 200, "hideControls": False}
    columns = {"searchable": True, "clearable": True, "hidePickedOptions": True}
    qis = ", ".join(options.quasi_identifiers) or "none: mark them on the Data page"
    return dmc.Stack(
        [
            dmc.Select(
                id="protect-method",
                label="Method",
                data=[{"value": k, "label": v} for k, v in options.methods().items()],
                value=method,
                allowDeselect=False,
            ),
            _panel(
                "noise",
                method,
                dmc.MultiSelect(
                    id="protect-noise-columns",
                    label=_text("add_noise", "columns")["label"],
                    data=_options(options.numerical),
                    value=options.defaults("add_noise"),
                    **columns,
                ),
                dmc.Select(id="protect-noise-method", **_choice("add_noise", "method"), allowDeselect=False),
                dmc.NumberInput(
                    id="protect-noise-share", **_number("add_noise", "share"), step=0.05, decimalScale=4, w=260
                ),
            ),
            _panel(
                "swap",
                method,
                dmc.MultiSelect(
                    id="protect-swap-columns",
                    label=_text("rank_swap", "columns")["label"],
                    data=_options(options.numerical),
                    value=options.defaults("rank_swap"),
                    **columns,
                ),
                dmc.NumberInput(id="protect-swap-p", **_number("rank_swap", "p"), step=1, **number),
            ),
            _panel(
                "pram",
                method,
                dmc.MultiSelect(
                    id="protect-pram-columns",
                    label=_text("pram", "columns")["label"],
                    data=_options(options.categorical),
                    value=options.defaults("pram"),
                    **columns,
                ),
                dmc.Group(
                    [
                        dmc.NumberInput(
                            id="protect-pram-pd", **_number("pram", "pd"), step=0.05, decimalScale=4, w=150
                        ),
                        dmc.NumberInput(
                            id="protect-pram-alpha", **_number("pram", "alpha"), step=0.05, decimalScale=4, w=150
                        ),
                    ],
                    align="flex-start",
                ),
            ),
            _panel(
                "shuffle",
                method,
                dmc.MultiSelect(
                    id="protect-shuffle-columns",
                    label=_text("shuffling", "columns")["label"],
                    data=_options(options.shufflable),
                    value=options.defaults("shuffling"),
                    **columns,
                ),
                dmc.Text(f"Within the classes of: {qis}.", size="xs", c="dimmed", id="protect-shuffle-qis"),
            ),
            _panel(
                "geo",
                method,
                dmc.Group(
                    [
                        dmc.Select(
                            id="protect-geo-lat",
                            label=_text("donut_masking", "latitude")["label"],
                            data=_options(options.latitudes),
                            value=options.latitudes[0] if options.latitudes else None,
                            allowDeselect=False,
                            w=160,
                        ),
                        dmc.Select(
                            id="protect-geo-lon",
                            label=_text("donut_masking", "longitude")["label"],
                            data=_options(options.longitudes),
                            value=options.longitudes[0] if options.longitudes else None,
                            allowDeselect=False,
                            w=160,
                        ),
                    ]
                ),
                dmc.NumberInput(
                    id="protect-geo-k",
                    **{**_number("donut_masking", "k_target"), "value": max(state.k, 1)},
                    step=1,
                    **number,
                ),
            ),
            _panel(
                "donut",
                method,
                dmc.Group(
                    [
                        dmc.NumberInput(id="protect-donut-min", **_number("donut_masking", "min_distance"), w=150),
                        dmc.NumberInput(id="protect-donut-max", **_number("donut_masking", "max_distance"), w=150),
                    ]
                ),
            ),
            _panel(
                "perturb",
                method,
                dmc.Select(
                    id="protect-perturb-distribution",
                    **_choice("coordinate_perturbation", "distribution"),
                    allowDeselect=False,
                ),
                dmc.NumberInput(id="protect-perturb-scale", **_number("coordinate_perturbation", "scale"), **number),
            ),
            dmc.NumberInput(
                id="protect-seed",
                value=seed,
                **{key: value for key, value in _number("add_noise", "seed").items() if key not in ("max", "value")},
                step=1,
                allowDecimal=False,
                **number,
            ),
            dmc.Button("Preview", id="protect-run", fullWidth=True),
        ],
        gap="sm",
    )


def card(loaded: LoadedDataset, state: ViewState, services: Services) -> Any:
    """The section's component for the open dataset (None: nothing to show)."""
    options = protect_columns(loaded.frame, services.contract(loaded, state))
    return card_box(
        "Perturb and mask",
        dmc.Grid(
            [
                dmc.GridCol(controls(options, state, default_seed()), span={"base": 12, "lg": 4}),
                dmc.GridCol(
                    [
                        html.Div(
                            progress_panel("protect", label="Progress of the preview"),
                            id="protect-running",
                            style={"display": "none"},
                        ),
                        html.Div(
                            dmc.Text(
                                "Choose a method and press Preview: nothing is changed in the step list.",
                                size="sm",
                                c="dimmed",
                            ),
                            id="protect-result",
                        ),
                        downloads(),
                    ],
                    span={"base": 12, "lg": 8},
                ),
            ],
            gutter="lg",
        ),
        dcc.Store(id="protect-step", data=None),
        description="Publish values that are wrong on purpose: noise, swapped or recoded values, values shuffled "
        "within classes, moved points. Class sizes and k say nothing once values are noisy, so the preview "
        "measures the risk of the perturbed data instead.",
        mt="md",
        id="protect-card",
    )


def downloads() -> Any:
    """The two downloads (enabled by a preview) and the note on the recipe's seed."""
    return dmc.Stack(
        [
            dmc.Group(
                [
                    dmc.Button("Perturbed data (CSV)", id="protect-dl-csv", variant="light", size="xs", disabled=True),
                    dmc.Button("Recipe (JSON)", id="protect-dl-recipe", variant="light", size="xs", disabled=True),
                ],
                gap="sm",
            ),
            dmc.Alert(
                SEED_NOTE, title="Keep the recipe private", color="orange", variant="light", id="protect-seed-note"
            ),
            dcc.Download(id="protect-download"),
            html.Div(id="protect-download-message"),
        ],
        gap="xs",
        mt="md",
    )


def step_from_controls(options: ProtectColumns, values: Mapping[str, Any]) -> Step:
    """The step the controls describe (:func:`~privdash.application.protect.protect_step`)."""
    v = values
    method = v.get("protect-method")
    prefix = {"add_noise": "noise", "rank_swap": "swap", "pram": "pram", "shuffling": "shuffle"}.get(str(method))
    return protect_step(
        method,
        options,
        columns=v.get(f"protect-{prefix}-columns") if prefix else None,
        share=v.get("protect-noise-share"),
        noise=v.get("protect-noise-method"),
        p=v.get("protect-swap-p"),
        pd_=v.get("protect-pram-pd"),
        alpha=v.get("protect-pram-alpha"),
        latitude=v.get("protect-geo-lat"),
        longitude=v.get("protect-geo-lon"),
        min_distance=v.get("protect-donut-min"),
        max_distance=v.get("protect-donut-max"),
        scale=v.get("protect-perturb-scale"),
        distribution=v.get("protect-perturb-distribution"),
        k_target=v.get("protect-geo-k"),
        seed=v.get("protect-seed"),
    )


# --- result --------------------------------------------------------------------------------------------------------


def describe_step(step: Step) -> str:
    """The applied step in words."""
    p = step.params
    columns = ", ".join(str(c) for c in p.get("columns", ()))
    if step.kind == "add_noise":
        text = f"{p['method']} noise with sd {fmt_share(p['share'])} of each column's sd on {columns}"
    elif step.kind == "rank_swap":
        text = f"rank swapping within {fmt_number(p['p'])}% of the ranks on {columns}"
    elif step.kind == "pram":
        text = f"PRAM (pd {fmt_number(p['pd'])}, alpha {fmt_number(p['alpha'])}) on {columns}"
    elif step.kind == "shuffling":
        text = f"{columns} shuffled within the classes of {', '.join(p['quasi_identifiers'])}"
    elif step.kind == "donut_masking":
        text = f"donut masking of {p['latitude']}/{p['longitude']}, {fmt_number(p['min_distance'])} to "
        text += f"{fmt_number(p['max_distance'])} m"
    else:
        text = f"{p['distribution']} perturbation of {p['latitude']}/{p['longitude']}, scale {fmt_number(p['scale'])} m"
    return f"{text[0].upper()}{text[1:]}; seed {p['seed']}."


def _table(head: Sequence[str], rows: Sequence[Sequence[str]], table_id: str) -> Any:
    return scroll_table(
        "Perturbation preview",
        dmc.Table(
            [
                dmc.TableThead(dmc.TableTr([dmc.TableTh(h) for h in head])),
                dmc.TableTbody([dmc.TableTr([dmc.TableTd(cell) for cell in row]) for row in rows]),
            ],
            fz="sm",
            striped=True,
            id=table_id,
        ),
        minWidth=420,
    )


def _cards(items: Sequence[tuple[str, str, str, str]]) -> Any:
    return dmc.SimpleGrid(
        [stat_card(label, value, detail=detail, card_id=f"protect-{key}") for key, label, value, detail in items],
        cols={"base": 1, "sm": 2, "xl": 3},
        spacing="sm",
    )


def numerical_view(preview: ProtectPreview) -> list[Any]:
    risk = preview.risk
    assert risk is not None and preview.moments is not None
    cards = _cards(
        [
            ("linkage", "Record linkage", fmt_share(risk.linkage), "records re-identified by the nearest record"),
            (
                "interval",
                "Interval disclosure",
                fmt_share(risk.interval_disclosure),
                f"records within {fmt_number(risk.interval_k, 2)} sd in every column",
            ),
            ("il1s", "IL1s", fmt_number(risk.il1s), "mean |x - x'| / (√2 sd): 0 is unchanged"),
            ("mean-change", "Change of means", fmt_share(risk.mean_change), "mean relative change"),
            ("variance-change", "Change of variances", fmt_share(risk.variance_change), "mean relative change"),
            (
                "correlation-change",
                "Change of correlations",
                fmt_share(risk.correlation_change),
                "mean relative change" if risk.correlation_change is not None else "needs two columns",
            ),
        ]
    )
    rows = [
        [
            str(name),
            fmt_number(m.mean_before),
            fmt_number(m.mean_after),
            fmt_number(m.sd_before),
            fmt_number(m.sd_after),
            fmt_number(risk.per_column[str(name)]["il1s"]),
            fmt_share(risk.per_column[str(name)]["interval_disclosure"]),
        ]
        for name, m in preview.moments.iterrows()
    ]
    head = ["column", "mean before", "mean after", "sd before", "sd after", "IL1s", "cells within the interval"]
    return [cards, dmc.Space(h="sm"), _table(head, rows, "protect-moments")]


def categorical_view(preview: ProtectPreview) -> list[Any]:
    changes: Sequence[ColumnChange] = preview.changes
    cells = sum(c.cells for c in changes)
    changed = sum(c.changed for c in changes)
    shift = max((c.total_variation for c in changes), default=0.0)
    share = changed / cells if cells else 0.0
    cards = _cards(
        [
            ("cells-changed", "Cells changed", fmt_share(share), f"{fmt_count(changed)} cells"),
            ("distribution-shift", "Distribution moved", fmt_share(shift), "largest total variation distance"),
        ]
    )
    rows = [
        [c.column, str(value), fmt_share(before), fmt_share(after)]
        for c in changes
        for value, before, after in c.distribution.itertuples(index=False)
    ]
    per_column = [[c.column, fmt_share(c.share_changed), fmt_share(c.total_variation)] for c in changes]
    return [
        cards,
        dmc.Space(h="sm"),
        _table(["column", "cells changed", "distribution moved"], per_column, "protect-changes"),
        dmc.Text("The most frequent values before and after", size="sm", fw=500, mt="sm"),
        _table(["column", "value", "before", "after"], rows, "protect-distribution"),
    ]


def map_view(points: Any) -> tuple[dict[str, float], float]:
    """Centre and zoom that fit every point, original and masked, into the map."""
    lats = [points["lat"].min(), points["lat"].max(), points["masked_lat"].min(), points["masked_lat"].max()]
    lons = [points["lon"].min(), points["lon"].max(), points["masked_lon"].min(), points["masked_lon"].max()]
    south, north, west, east = min(lats), max(lats), min(lons), max(lons)
    if not all(math.isfinite(v) for v in (south, north, west, east)):
        return {"lon": 0.0, "lat": 0.0}, 1.0

    def mercator(lat: float) -> float:
        return math.log(math.tan(math.pi / 4 + math.radians(max(min(lat, 85.0), -85.0)) / 2))

    zoom_lon = math.log2(MAP_WIDTH * 360 / (max(east - west, 1e-6) * 512))
    zoom_lat = math.log2(MAP_HEIGHT * 2 * math.pi / (max(mercator(north) - mercator(south), 1e-6) * 512))
    center_lat = math.degrees(2 * math.atan(math.exp((mercator(north) + mercator(south)) / 2)) - math.pi / 2)
    return {"lon": (west + east) / 2, "lat": center_lat}, round(max(min(zoom_lon, zoom_lat, 18.0) - 0.3, 0.0), 2)


def points_figure(points: Any) -> go.Figure:
    """Original points as filled blue discs, masked ones as orange rings, on a blank MapLibre style (no tiles,
    nothing leaves the host). The white-bg style has no icon sprites, so a ring is a white disc on an orange one."""
    center, zoom = map_view(points)
    hover = points[["displacement_m", "spatial_k"]].to_numpy()
    original = go.Scattermap(
        lat=points["lat"],
        lon=points["lon"],
        mode="markers",
        name="original (filled disc)",
        marker={"size": 6, "color": COLORS["primary"]},
        hovertemplate="original<br>%{lat:.5f}, %{lon:.5f}<extra></extra>",
    )
    ring = go.Scattermap(
        lat=points["masked_lat"],
        lon=points["masked_lon"],
        mode="markers",
        name="masked (ring)",
        marker={"size": 10, "color": COLORS["warning"]},
        customdata=hover,
        hovertemplate="masked<br>%{lat:.5f}, %{lon:.5f}<br>moved %{customdata[0]:,.0f} m<br>"
        "spatial k %{customdata[1]}<extra></extra>",
    )
    hole = go.Scattermap(
        lat=points["masked_lat"],
        lon=points["masked_lon"],
        mode="markers",
        showlegend=False,
        hoverinfo="skip",
        marker={"size": 5, "color": "#ffffff"},
    )
    # The originals are drawn last, on top: a ring's white centre never hides one.
    fig = go.Figure([ring, hole, original])
    fig.update_layout(
        template=PLOTLY_TEMPLATE,
        map={"style": "white-bg", "center": center, "zoom": zoom},
        margin={"l": 0, "r": 0, "t": 0, "b": 0},
        height=MAP_HEIGHT,
        showlegend=True,
        legend={"orientation": "h", "y": 1.0, "x": 0.0, "bgcolor": "rgba(255,255,255,0.85)"},
    )
    return fig


def points_grid(points: Any) -> Any:
    """The points of the map as a table (its numbers, for screen readers and for checking)."""
    rows = points.round({"lat": 6, "lon": 6, "masked_lat": 6, "masked_lon": 6, "displacement_m": 1})
    columns = [
        ("lat", "latitude"),
        ("lon", "longitude"),
        ("masked_lat", "masked latitude"),
        ("masked_lon", "masked longitude"),
        ("displacement_m", "moved (m)"),
        ("spatial_k", "spatial k"),
    ]
    return dag.AgGrid(
        id="protect-points",
        columnDefs=[{"field": field, "headerName": name, "type": "numericColumn"} for field, name in columns],
        rowData=rows.to_dict("records"),
        defaultColDef={"resizable": True, "sortable": True},
        columnSize="responsiveSizeToFit",
        dashGridOptions={"animateRows": False, "suppressContentVisibilityAuto": True},
        style={"height": "260px"},
    )


def spatial_view(preview: ProtectPreview) -> list[Any]:
    assert preview.spatial is not None and preview.points is not None
    k = preview.spatial["spatial_k"]
    moved = preview.spatial["displacement_m"]
    cards = _cards(
        [
            ("k-min", "Smallest spatial k", fmt_count(k["min"]), "the weakest point"),
            ("k-median", "Median spatial k", fmt_number(k["median"]), "the typical point"),
            (
                "k-below",
                f"Points below k = {k['target']}",
                fmt_share(k["share_below"]),
                f"{fmt_count(k['below_target'])} points",
            ),
            (
                "moved",
                "Median move",
                f"{metres(moved['median'])} m",
                f"from {metres(moved['min'])} to {metres(moved['max'])} m",
            ),
        ]
    )
    points = preview.points
    shown = f"{fmt_count(len(points))} points" + (
        f" (a sample of {fmt_count(preview.summary.get('masked', len(points)))})"
        if len(points) < int(preview.summary.get("masked", len(points)))
        else ""
    )
    figure = html.Figure(
        [
            html.Figcaption(
                [
                    dmc.Text("Original and masked points", fw=600, size="sm", id="protect-map-title"),
                    dmc.Text(
                        f"{shown}: originals as filled blue discs, masked points as orange rings. The table below "
                        "lists the same points.",
                        size="xs",
                        c="dimmed",
                    ),
                ]
            ),
            dcc.Graph(
                id="protect-map",
                figure=points_figure(points),
                config={
                    "displaylogo": False,
                    "scrollZoom": True,
                    "modeBarButtons": [["toImage", "zoomInMap", "zoomOutMap", "resetViewMap"]],
                },
            ),
        ],
        className="chart",
        id="protect-map-figure",
    )
    return [
        cards,
        dmc.Space(h="sm"),
        figure,
        dmc.Text("The points on the map", size="sm", fw=500, mt="sm", id="protect-points-title"),
        points_grid(points),
    ]


def preview_view(preview: ProtectPreview) -> Any:
    """The result of a preview: what was applied, the reading, and the method's numbers."""
    if preview.risk is not None:
        body = numerical_view(preview)
    elif preview.changes:
        body = categorical_view(preview)
    else:
        body = spatial_view(preview)
    return dmc.Stack(
        [
            dmc.Text(describe_step(preview.step), size="sm", fw=500, id="protect-applied"),
            dmc.Alert(preview.reading, color="blue", variant="light", id="protect-reading", title="In plain words"),
            *body,
        ],
        gap="xs",
    )


# --- callbacks -----------------------------------------------------------------------------------------------------


def _stem(loaded: LoadedDataset) -> str:
    return loaded.id.split(":", 1)[1] if loaded.is_demo else Path(loaded.title).stem or "data"


def register(app: Dash, services: Services) -> None:
    """Add the section's callbacks to ``app``."""
    control_ids = list(CONTROLS)

    @app.callback(
        Output({"type": "protect-panel", "panel": ALL}, "style"),
        Input("protect-method", "value"),
        State({"type": "protect-panel", "panel": ALL}, "id"),
        prevent_initial_call=True,
    )
    def show_panels(method: str | None, ids: list[dict[str, str]]) -> list[dict[str, str]]:
        wanted = PANELS.get(str(method), ())
        return [_shown(item["panel"] in wanted) for item in ids]

    @app.callback(
        Output("protect-result", "children"),
        Output("protect-step", "data"),
        Output("protect-dl-csv", "disabled"),
        Output("protect-dl-recipe", "disabled"),
        Input("protect-run", "n_clicks"),
        *[State(cid, prop) for cid, prop in CONTROLS.items()],
        State(PAGE_STATE, "data"),
        prevent_initial_call=True,
        background=True,
        progress=[Output("protect-progress", "value"), Output("protect-status", "children")],
        running=[
            (Output("protect-running", "style"), {"display": "block"}, {"display": "none"}),
            (Output("protect-run", "disabled"), True, False),
        ],
        cancel=[Input("protect-cancel", "n_clicks"), Input("url", "pathname")],
        interval=300,
    )
    def run(set_progress: Callable[[tuple[int, str]], None], clicks: int | None, *rest: Any) -> tuple[Any, ...]:
        *values, data = rest
        if not clicks:
            return no_update, no_update, no_update, no_update
        try:
            state = state_from_store(data)
            loaded = services.dataset(str(state.dataset))
            options = protect_columns(loaded.frame, services.contract(loaded, state))
            step = step_from_controls(options, dict(zip(control_ids, values, strict=True)))
            preview = preview_protection(loaded, step, lambda percent, text: set_progress((percent, text)))
        except PrivdashError as exc:
            alert = error_alert(str(exc), title="The preview was not made", alert_id="protect-error")
            return alert, None, True, True
        return preview_view(preview), preview.step.to_dict(), False, False

    @app.callback(
        Output("protect-download", "data"),
        Output("protect-download-message", "children"),
        Input("protect-dl-csv", "n_clicks"),
        Input("protect-dl-recipe", "n_clicks"),
        State("protect-step", "data"),
        State(PAGE_STATE, "data"),
        prevent_initial_call=True,
    )
    def download(_csv: int | None, _recipe: int | None, step: Any, data: Any) -> tuple[Any, Any]:
        try:
            if not step:
                raise ProtectError("Press Preview first: the download is the previewed table.")
            applied = stored_step(step)
            loaded = services.dataset(str(state_from_store(data).dataset))
            stem = f"{_stem(loaded)}-{applied.kind}"
            if ctx.triggered_id == "protect-dl-recipe":
                return {
                    "content": recipe_json(applied),
                    "filename": f"{stem}-recipe.json",
                    "type": "application/json",
                }, None
            table = perturbed_table(services, loaded, applied)
        except PrivdashError as exc:
            return no_update, error_alert(str(exc), title="Nothing to download", alert_id="protect-download-error")
        # Opened in spreadsheets: formula cells are escaped.
        return {"content": csv_text(table), "filename": f"{stem}.csv", "type": "text/csv"}, None
