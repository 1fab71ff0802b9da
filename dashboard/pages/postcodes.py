"""Postcodes page: census population per postcode unit, traffic-light maps before and after a strategy, and the
mapping applied to the open dataset's postcode column.

The settings, the reference data, the traffic lights (red, amber, green) and the units each map shows are
:mod:`privdash.application.postcodes`; this module draws them.

The map shows, as the user picks, the source districts or the postcode areas coloured by their own population
("before"), or the published units of the strategy, districts dissolved by the mapping ("after"). It is a MapLibre
choropleth on a blank style (``white-bg``): no tile server, so nothing leaves the host. Polygons come from
:mod:`privdash.geo.geography` (coverage-clean, simplified, memoised); the page rounds their coordinates to
:data:`DISPLAY_DECIMALS` decimals (about 10 m, well under the 500 m simplification), which keeps shared vertices
shared (no gaps) and the largest map (every UK district) under 2 MB. A threshold change that keeps the polygons
sends only the new colours (a ``Patch``). The US data has no polygons, so ``zip3`` shows bars of the smallest ZIP3
areas instead.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import Any

import dash
import dash_ag_grid as dag
import dash_mantine_components as dmc
import numpy as np
import plotly.graph_objects as go
import shapely
from dash import Dash, Input, Output, Patch, State, dcc, html, no_update
from shapely.geometry import mapping as geometry_mapping

from dashboard.ui.charts import chart
from dashboard.ui.components import card, error_alert, fmt_count, fmt_share, page_title
from dashboard.ui.pagestate import PAGE_STATE, state_from_query, state_from_store, state_store
from dashboard.ui.theme import COLORS, PLOTLY_TEMPLATE
from privdash.application.cache import BoundedCache
from privdash.application.postcodes import (
    AMBER,
    DEFAULT_SETTINGS,
    GREEN,
    MAX_MARGIN,
    RED,
    SOURCES,
    STATUS_LABELS,
    ApplyResult,
    GeoSettings,
    MapUnits,
    PostcodeView,
    SettingsChange,
    Summary,
    apply_to_dataset,
    build_view,
    failing_rows,
    level_options,
    postcode_columns,
    same_polygons,
    settings_change,
    settings_from_state,
    source_failing_rows,
    summarize,
    traffic_lights,
    view_title,
)
from privdash.application.services import Services
from privdash.application.state import ViewState
from privdash.errors import PrivdashError
from privdash.geo import geography
from privdash.geo.postcodes import PostcodeGeneralization, Strategy

PATH = "/postcodes"
NAME = "Postcodes"

DISPLAY_DECIMALS = 4
"""Coordinates sent to the browser are rounded to this many decimals (about 10 m)."""
MAP_HEIGHT = 520
#: Width the initial zoom is fitted to (the maps are responsive; the user can zoom and pan).
MAP_WIDTH = 560
BAR_COUNT = 60

#: Colours of the traffic lights, indexed by RED, AMBER, GREEN.
STATUS_COLORS = (COLORS["danger"], COLORS["warning"], COLORS["ok"])


# --- map figures ----------------------------------------------------------------------------------------------------


def _round_geometries(geometries: np.ndarray) -> list[dict[str, Any]]:
    rounded = shapely.transform(geometries, lambda xy: np.round(xy, DISPLAY_DECIMALS))
    return [geometry_mapping(g) for g in rounded]


def _layer_features(layer: geography.PolygonLayer) -> dict[str, dict[str, Any]]:
    return dict(zip(layer.frame.index.astype(str), _round_geometries(layer.frame.geometry.to_numpy()), strict=True))


def display_geometries(cache: BoundedCache, units: MapUnits) -> list[dict[str, Any]]:
    """GeoJSON geometries of ``units`` at :data:`DISPLAY_DECIMALS`; the polygons of a whole layer are rounded once
    and kept in ``cache`` (by the layer's source key), dissolved units are rounded on every call."""
    if units.layer is None:
        return _round_geometries(units.geometries)
    key = ("postcode-display", units.layer.source_key, DISPLAY_DECIMALS)
    features = cache.get_or_build(key, functools.partial(_layer_features, units.layer))
    return [features[code] for code in units.codes]


def map_view(bounds: tuple[float, float, float, float]) -> tuple[dict[str, float], float]:
    """Centre and zoom that fit ``bounds`` (west, south, east, north) into a map of MAP_WIDTH x MAP_HEIGHT px."""
    west, south, east, north = bounds
    if not all(math.isfinite(v) for v in bounds):
        return {"lon": -2.0, "lat": 53.0}, 4.5

    def mercator(lat: float) -> float:
        return math.log(math.tan(math.pi / 4 + math.radians(max(min(lat, 85.0), -85.0)) / 2))

    lon_span = max(east - west, 1e-6)
    y_span = max(mercator(north) - mercator(south), 1e-6)
    zoom_lon = math.log2(MAP_WIDTH * 360 / (lon_span * 512))
    zoom_lat = math.log2(MAP_HEIGHT * 2 * math.pi / (y_span * 512))
    center_lat = math.degrees(2 * math.atan(math.exp((mercator(north) + mercator(south)) / 2)) - math.pi / 2)
    return {"lon": (west + east) / 2, "lat": center_lat}, round(min(zoom_lon, zoom_lat) - 0.15, 2)


def _hover_data(units: MapUnits) -> list[list[str]]:
    return [
        [f"{int(p):,}", STATUS_LABELS[int(s)]] for p, s in zip(units.populations.tolist(), units.status, strict=True)
    ]


def map_figure(units: MapUnits, geometries: Sequence[dict[str, Any]], *, revision: str) -> dict[str, Any]:
    """A traffic-light choropleth of ``units`` (drawn with ``geometries``, GeoJSON in the order of ``units.codes``)
    on a blank MapLibre style (no tiles), as a plotly figure dict.

    The figure is built without the GeoJSON (so plotly does not validate and copy it) and the GeoJSON is put in
    afterwards. ``z`` is the traffic light (0 red, 1 amber, 2 green) on a stepped colour scale.
    """
    center, zoom = map_view(units.bounds)
    scale = []
    for i, colour in enumerate(STATUS_COLORS):
        scale += [[i / 3, colour], [(i + 1) / 3, colour]]
    fig = go.Figure(
        go.Choroplethmap(
            locations=units.codes,
            z=units.status.astype(int).tolist(),
            featureidkey="id",
            colorscale=scale,
            zmin=-0.5,
            zmax=2.5,
            showscale=False,
            marker={"line": {"width": 0.4, "color": "#ffffff"}, "opacity": 0.85},
            customdata=_hover_data(units),
            hovertemplate="<b>%{location}</b><br>%{customdata[0]} people<br>%{customdata[1]}<extra></extra>",
        )
    )
    fig.update_layout(
        template=PLOTLY_TEMPLATE,
        map={"style": "white-bg", "center": center, "zoom": zoom},
        margin={"l": 0, "r": 0, "t": 0, "b": 0},
        height=MAP_HEIGHT,
        uirevision=revision,
    )
    out = fig.to_plotly_json()
    out["data"][0]["geojson"] = {
        "type": "FeatureCollection",
        "features": [
            {"type": "Feature", "id": code, "properties": {}, "geometry": geometry}
            for code, geometry in zip(units.codes, geometries, strict=True)
        ],
    }
    return {"data": out["data"], "layout": out["layout"]}


def view_map(cache: BoundedCache, units: MapUnits, settings: GeoSettings) -> dict[str, Any]:
    """The map figure of ``units`` for ``settings``."""
    return map_figure(units, display_geometries(cache, units), revision=_revision(settings))


def recolour(units: MapUnits) -> Patch:
    """A partial update of a map figure: new colours and hover texts for the same polygons."""
    patch = Patch()
    patch["data"][0]["z"] = units.status.astype(int).tolist()
    patch["data"][0]["customdata"] = _hover_data(units)
    return patch


def bar_figure(result: PostcodeGeneralization, settings: GeoSettings) -> go.Figure:
    """The smallest ZIP3 areas (or, for the "published units" choice, the smallest units of the strategy) as bars
    coloured by traffic light, with the threshold and the amber limit."""
    units = settings.level == "units"
    populations = result.populations if units else result.original_populations
    smallest = populations.iloc[np.argsort(populations.to_numpy(), kind="stable")[:BAR_COUNT]]
    status = traffic_lights(smallest.to_numpy(), settings)
    if units:
        members = result.members
        detail = np.asarray([f"{len(members.get(code, ())):,} ZIP3 areas" for code in smallest.index], dtype=object)
        what, hover = "published units", "unit <b>%{x}</b><br>%{y:,} people<br>%{customdata[1]}<br>%{customdata[0]}"
    else:
        detail = result.mapping.reindex(smallest.index).astype(str).to_numpy()
        what = "ZIP3 areas"
        hover = "ZIP3 <b>%{x}</b><br>%{y:,} people<br>%{customdata[1]}<br>published as %{customdata[0]}"
    fig = go.Figure(
        go.Bar(
            x=[str(c) for c in smallest.index],
            y=smallest.to_numpy(),
            marker_color=[STATUS_COLORS[int(s)] for s in status],
            customdata=np.stack([detail, [STATUS_LABELS[int(s)] for s in status]], axis=-1),
            hovertemplate=hover + "<extra></extra>",
        )
    )
    fig.add_hline(y=settings.threshold, line_dash="dash", line_color=COLORS["danger"])
    fig.add_hline(y=settings.amber_limit, line_dash="dot", line_color=COLORS["warning"])
    fig.update_layout(
        template=PLOTLY_TEMPLATE,
        height=MAP_HEIGHT,
        xaxis_title=f"the {len(smallest)} smallest {what}",
        yaxis_title="people (2010 Census)",
    )
    # Sixty codes side by side: upright labels would overlap, so they stand on end, each under its bar.
    fig.update_xaxes(type="category", tickangle=-90, tickfont={"size": 10}, automargin=True)
    return fig


# --- side panel, legend and tables ----------------------------------------------------------------------------------


def stats_panel(summary: Summary, settings: GeoSettings) -> Any:
    """Number of published units, how many fail, the smallest, and how many source units failed before."""
    kind = "ZIP3 areas" if settings.country == "us" else "districts"
    rule = "≤" if settings.strategy.comparison == "<=" else "<"
    rows = [
        ("Published units", fmt_count(summary.n_units), "pc-units"),
        ("Units failing", fmt_count(summary.n_failing), "pc-failing"),
        ("Smallest unit", f"{summary.smallest_code} ({fmt_count(summary.smallest_population)})", "pc-smallest"),
        (f"Source {kind} failing before", fmt_count(summary.n_original_failing), "pc-before-failing"),
    ]
    return dmc.Stack(
        [
            *(
                dmc.Stack(
                    [
                        dmc.Text(label, size="xs", c="dimmed"),
                        dmc.Text(
                            value,
                            fw=700,
                            fz=22,
                            id=cid,
                            **({"c": "red.8"} if cid == "pc-failing" and summary.n_failing else {}),
                        ),
                    ],
                    gap=0,
                )
                for label, value, cid in rows
            ),
            dmc.Text(
                f"{fmt_count(summary.n_original)} source {kind}, {fmt_count(summary.total_population)} people. "
                f"A unit fails when its population is {rule} {fmt_count(settings.threshold)}.",
                size="xs",
                c="dimmed",
                id="pc-rule",
            ),
        ],
        gap="sm",
    )


_SWATCH = {"display": "inline-block", "width": "12px", "height": "12px", "borderRadius": "2px"}


def legend(settings: GeoSettings) -> Any:
    """The traffic-light key with the numbers of the current setting."""
    rule = "≤" if settings.strategy.comparison == "<=" else "<"
    items = (
        (STATUS_COLORS[RED], f"fails: {rule} {fmt_count(settings.threshold)} people"),
        (
            STATUS_COLORS[AMBER],
            f"passes, but < {fmt_count(math.ceil(settings.amber_limit))} (within {settings.margin}% above)",
        ),
        (STATUS_COLORS[GREEN], "passes"),
    )
    return dmc.Group(
        [
            dmc.Group(
                [html.Span(className="pc-swatch", style={**_SWATCH, "background": colour}), dmc.Text(text, size="xs")],
                gap=4,
            )
            for colour, text in items
        ],
        gap="md",
        id="pc-legend",
    )


def _grid(grid_id: str, columns: list[dict[str, Any]], rows: list[dict[str, Any]]) -> Any:
    return dag.AgGrid(
        id=grid_id,
        columnDefs=columns,
        rowData=rows,
        # Flex columns fill the width whenever the grid has one: the tab that is not shown holds its grid at zero
        # width, where sizing the columns to fit would warn (AG Grid warning #29) and size them to nothing.
        defaultColDef={"resizable": True, "sortable": True, "flex": 1, "minWidth": 110},
        # The empty-table message as locale text: AG Grid would evaluate an overlay template, which dash-ag-grid
        # blocks as unsafe (the user would see "No Rows To Show"); painted off screen too (prints, shared views).
        dashGridOptions={
            "animateRows": False,
            "localeText": {"noRowsToShow": "No unit fails the threshold."},
            "suppressContentVisibilityAuto": True,
        },
        style={"height": "300px"},
    )


_NUMBER = {"type": "numericColumn", "valueFormatter": {"function": "d3.format(',')(params.value)"}}


def failing_grid(rows: list[dict[str, Any]]) -> Any:
    return _grid(
        "failing-grid",
        [
            {"field": "code", "headerName": "Published unit"},
            {"field": "population", "headerName": "Population", **_NUMBER},
            {"field": "members", "headerName": "Source units", **_NUMBER},
        ],
        rows,
    )


def source_failing_grid(rows: list[dict[str, Any]]) -> Any:
    return _grid(
        "source-failing-grid",
        [
            {"field": "code", "headerName": "Source unit"},
            {"field": "population", "headerName": "Population", **_NUMBER},
            {"field": "published", "headerName": "Published as"},
            {"field": "published_population", "headerName": "Unit population", **_NUMBER},
        ],
        rows,
    )


def notes_view(notes: Sequence[str]) -> Any:
    return dmc.Stack([dmc.Text(n, size="sm", c="dimmed") for n in notes], gap=2)


def _display(visible: bool) -> dict[str, str]:
    return {} if visible else {"display": "none"}


EMPTY_FIGURE: dict[str, Any] = {"data": [], "layout": {"template": PLOTLY_TEMPLATE, "height": MAP_HEIGHT}}


# --- applying the mapping to the open dataset --------------------------------------------------------------------


def apply_view(outcome: ApplyResult) -> Any:
    """k and the journalist / marketer risks before and after, and what the recoding changed."""
    # Before and after on the same basis: census populations of the units the postcodes lie in.
    before, after, risk = outcome.before, outcome.after, outcome.after_risk
    was = outcome.before_risk or before.risk
    rows = [
        ("k (smallest class)", fmt_count(before.k), fmt_count(after.k), "apply-k"),
        (
            "Journalist risk, highest",
            fmt_share(was.journalist.highest),
            fmt_share(risk.journalist.highest),
            "apply-journalist",
        ),
        (
            "Journalist risk, average",
            fmt_share(was.journalist.average),
            fmt_share(risk.journalist.average),
            "apply-journalist-average",
        ),
        (
            f"Records above {fmt_share(risk.max_risk, 0)} (journalist)",
            fmt_share(was.journalist.records_at_risk),
            fmt_share(risk.journalist.records_at_risk),
            "apply-at-risk",
        ),
        ("Marketer risk", fmt_share(was.marketer.average), fmt_share(risk.marketer.average), "apply-marketer"),
    ]
    head = dmc.TableThead(
        dmc.TableTr(
            [
                dmc.TableTh("Measure (census populations)"),
                dmc.TableTh("Before: the dataset as loaded", ta="right"),
                dmc.TableTh(f"After the {outcome.strategy.value} strategy", ta="right"),
            ]
        )
    )
    body = dmc.TableTbody(
        [
            dmc.TableTr(
                [
                    dmc.TableTd(label),
                    dmc.TableTd(b, ta="right", id=f"{row_id}-before"),
                    dmc.TableTd(a, ta="right", id=row_id),
                ],
            )
            for label, b, a, row_id in rows
        ]
    )
    summary = outcome.summary
    return dmc.Stack(
        [
            dmc.Table([head, body], striped=True, withTableBorder=False, fz="sm", id="apply-table"),
            dmc.Text(
                f"Column '{outcome.column}': {fmt_count(summary['changed'])} of {fmt_count(summary['rows'])} values "
                f"changed, {fmt_count(summary['published_units'])} published units; "
                f"{fmt_count(summary['unmapped'])} postcodes outside the population table and "
                f"{fmt_count(summary['invalid'])} invalid values were suppressed (made missing).",
                size="sm",
                id="apply-summary",
            ),
            dmc.Text(
                "Both columns estimate each class's population from the census, F = f · Pop(unit) / n(unit): before, "
                "with the unit each postcode lies in (its district or ZIP3); after, with its published unit. The "
                "Risk page, without a census, takes the sample as the population (F = f), so its journalist risk is "
                "higher than both.",
                size="xs",
                c="dimmed",
                id="apply-basis",
            ),
        ],
        gap="xs",
    )


def apply_card(state: ViewState, data_href: str = "/data") -> Any:
    """The "apply to the dataset" card. Without a postcode column (or without a dataset) it says why there is nothing
    to apply and links to the Data page (``data_href``, the open view's link to it), where a column's type is set."""
    columns = postcode_columns(state)
    output = html.Div(id="apply-results")
    if not columns:
        why = (
            "No column of the open dataset has the Postcode type, so there is nothing to recode."
            if state.dataset
            else "No dataset is open, so there is nothing to recode."
        )
        action = (
            "Set a column's type to Postcode on the Data page" if state.dataset else "Open a dataset on the Data page"
        )
        return card(
            "Apply to the dataset",
            dmc.Text(
                [f"{why} ", dmc.Anchor(action, href=data_href, id="apply-to-data"), ", then come back here."],
                size="sm",
                id="apply-unavailable",
            ),
            html.Div(output, style={"display": "none"}),
            mt="md",
        )
    return card(
        "Apply to the dataset",
        dmc.Group(
            [
                dmc.Select(
                    id="apply-column",
                    label="Postcode column",
                    data=columns,
                    value=columns[0],
                    allowDeselect=False,
                    w=220,
                ),
                dmc.Button("Apply to the dataset", id="apply-button"),
            ],
            align="flex-end",
            mb="sm",
        ),
        dcc.Loading(output, delay_show=300, type="dot"),
        description="Recode the open dataset's postcode column with this mapping and compare k and the journalist "
        "and marketer risks before and after, with the census populations as population counts (k-map). The "
        "dataset itself is not changed.",
        mt="md",
    )


# --- page ------------------------------------------------------------------------------------------------------


#: Columns of the controls: on screens narrower than Mantine's ``xl`` (1,408 px) the population select takes half the
#: width, so that the longest source's name ("England and Wales, 2011 Census (outward codes)") is shown whole.
SPANS: dict[str, dict[str, int]] = {
    "source": {"base": 12, "md": 6, "xl": 4},
    "strategy": {"base": 12, "md": 6, "xl": 5},
    "level": {"base": 12, "md": 4, "xl": 3},
    "threshold": {"base": 12, "md": 5, "xl": 8},
    "margin": {"base": 12, "md": 3, "xl": 4},
}


def controls(settings: GeoSettings) -> Any:
    """Population source, map level, strategy, threshold and amber margin."""
    return card(
        None,
        dmc.Grid(
            [
                dmc.GridCol(
                    dmc.Select(
                        id="pc-source",
                        label="Population",
                        data=[{"value": s.key, "label": s.label} for s in SOURCES.values()],
                        value=settings.source,
                        allowDeselect=False,
                    ),
                    span=SPANS["source"],
                ),
                dmc.GridCol(
                    dmc.Stack(
                        [
                            dmc.Text("Strategy", size="sm", fw=500),
                            dmc.SegmentedControl(
                                id="pc-strategy",
                                data=[s.value for s in Strategy],
                                value=settings.strategy.value,
                                size="xs",
                                **{"aria-label": "Strategy"},
                            ),
                            dmc.Text(settings.strategy.description, size="xs", c="dimmed", id="pc-strategy-help"),
                        ],
                        gap=4,
                    ),
                    span=SPANS["strategy"],
                ),
                dmc.GridCol(
                    dmc.Stack(
                        [
                            dmc.Text("Show", size="sm", fw=500),
                            dmc.SegmentedControl(
                                id="pc-level",
                                data=level_options(settings),
                                value=settings.level,
                                size="xs",
                                **{"aria-label": "Map of"},
                            ),
                        ],
                        gap=4,
                    ),
                    span=SPANS["level"],
                ),
                dmc.GridCol(
                    dmc.Stack(
                        [
                            dmc.Text(
                                threshold_label(settings),
                                size="sm",
                                fw=500,
                                id="pc-threshold-label",
                            ),
                            dmc.Slider(
                                id="pc-threshold",
                                value=settings.threshold,
                                min=0,
                                max=100_000,
                                step=1_000,
                                marks=[{"value": v, "label": f"{v // 1000}k"} for v in (0, 20_000, 50_000, 100_000)],
                                updatemode="mouseup",
                                mb="md",
                                thumbLabel="Minimum population (people)",
                            ),
                        ],
                        gap=4,
                    ),
                    span=SPANS["threshold"],
                ),
                dmc.GridCol(
                    dmc.NumberInput(
                        id="pc-margin",
                        label="Amber margin (%)",
                        description="amber: passes, but within this much above",
                        value=settings.margin,
                        min=0,
                        max=MAX_MARGIN,
                        step=5,
                        w=200,
                    ),
                    span=SPANS["margin"],
                ),
            ],
            gutter="md",
        ),
    )


def map_title(settings: GeoSettings) -> str:
    return view_title(settings)


def _revision(settings: GeoSettings) -> str:
    # The map keeps the user's zoom and pan while only colours change.
    return f"{settings.source}-{settings.level}"


def threshold_label(settings: GeoSettings) -> str:
    return f"Minimum population: {fmt_count(settings.threshold)} people"


def map_head(settings: GeoSettings) -> list[Any]:
    """The map's title and the traffic-light key."""
    return [dmc.Text(map_title(settings), fw=600, size="sm", id="pc-map-heading"), legend(settings)]


def results_layout(cache: BoundedCache, view: PostcodeView | None) -> Any:
    """Side panel, the map (or the bars), the legend, the attribution and the failing-unit tables."""
    settings = view.settings if view else DEFAULT_SETTINGS
    has_map = bool(view and view.has_map)
    map_fig = view_map(cache, view.shown, settings) if view and view.shown else EMPTY_FIGURE
    bars = bar_figure(view.result, settings) if view and not has_map else EMPTY_FIGURE
    summary = summarize(view.result) if view else None
    return dmc.Grid(
        [
            dmc.GridCol(
                card("Published units", html.Div(stats_panel(summary, settings) if summary else None, id="pc-stats")),
                span={"base": 12, "lg": 3},
            ),
            dmc.GridCol(
                card(
                    None,
                    dmc.Group(
                        map_head(settings),
                        justify="space-between",
                        mb="xs",
                        id="pc-map-head",
                    ),
                    html.Div(
                        chart(
                            dcc.Graph(id="pc-map", figure=map_fig, config={"displaylogo": False, "scrollZoom": True}),
                            title="Traffic-light map",
                            summary="Each unit is filled with its traffic light (see the key); the table lists every "
                            "unit with its population and status.",
                            columns=(("locations", "unit"), ("customdata.0", "people"), ("customdata.1", "status")),
                            title_visible=False,
                            modebar=("toImage", "zoomInMap", "zoomOutMap", "resetViewMap"),
                        ),
                        id="pc-map-wrap",
                        style=_display(has_map),
                    ),
                    html.Div(
                        chart(
                            dcc.Graph(id="pc-bars", figure=bars, config={"displaylogo": False}),
                            title="The smallest areas",
                            summary="One bar per ZIP3 area (or per published unit, when those are shown), coloured "
                            "by its traffic light; dashed line: the threshold, "
                            "dotted: the amber limit.",
                            columns=(
                                ("x", "area"),
                                ("y", "people"),
                                ("customdata.1", "status"),
                                ("customdata.0", "published as"),
                            ),
                            title_visible=False,
                        ),
                        id="pc-bars-wrap",
                        style=_display(bool(view) and not has_map),
                    ),
                    dmc.Text(
                        view.attribution if view else "",
                        size="xs",
                        c="dimmed",
                        id="pc-attribution",
                        className="map-attribution",
                    ),
                    html.Div(notes_view(view.notes if view else ()), id="pc-notes"),
                ),
                span={"base": 12, "lg": 9},
            ),
            dmc.GridCol(
                card(
                    "Units under the threshold",
                    dmc.Tabs(
                        [
                            # No ids on the tabs: Mantine names each panel after its tab by the tab's own id.
                            dmc.TabsList(
                                [
                                    dmc.TabsTab("Published units that fail", value="after"),
                                    dmc.TabsTab("Source units that fail on their own", value="before"),
                                ]
                            ),
                            dmc.TabsPanel(
                                failing_grid(failing_rows(view.result) if view else []), value="after", pt="xs"
                            ),
                            dmc.TabsPanel(
                                source_failing_grid(source_failing_rows(view.result) if view else []),
                                value="before",
                                pt="xs",
                            ),
                        ],
                        value="after",
                    ),
                    description="Smallest first. Published units are what the strategy produces; source units are "
                    "the districts (UK) or ZIP3 areas (US) before it.",
                ),
                span=12,
            ),
        ],
        gutter="md",
        mt="md",
    )


def layout(services: Services, **query: Any) -> Any:
    """The Postcodes page for the state in ``query``."""
    state, problem = state_from_query(query)
    settings, geo_problem = settings_from_state(state)
    body: list[Any] = [
        page_title(
            "Postcodes",
            "Which postcode units hold enough residents to be published, and what the rest become under each strategy.",
        )
    ]
    if problem:
        body.append(error_alert(problem, title="This link could not be read", alert_id="state-error"))
    if geo_problem:
        body.append(
            error_alert(geo_problem, title="The postcode settings of this link are not valid", alert_id="geo-error")
        )
    view: PostcodeView | None = None
    error: str | None = None
    try:
        view = build_view(services.postcodes, settings)
    except PrivdashError as exc:
        error = str(exc)
    body += [
        controls(settings),
        html.Div(
            error_alert(error, title="The postcode data cannot be shown", alert_id="postcodes-error")
            if error
            else None,
            id="pc-error",
        ),
        dcc.Loading(results_layout(services.cache, view), delay_show=400, type="dot"),
        apply_card(state, services.links.href(state, "/data") if state.dataset else "/data"),
        state_store(state.updated(geo=settings.to_dict()) if geo_problem else state),
    ]
    return html.Div(body)


def redraw(services: Services, state: ViewState, previous: GeoSettings | None) -> tuple[Any, ...]:
    """Outputs of the main callback for ``state`` (in the order of :data:`REDRAW_OUTPUTS`): the map (a colour-only
    patch when its polygons did not change), bars, side panel, tables. Raises ``PrivdashError`` for the page."""
    settings, _ = settings_from_state(state)
    view = build_view(services.postcodes, settings)
    map_fig: Any = no_update
    if view.shown is not None:
        keep = same_polygons(previous, settings)
        map_fig = recolour(view.shown) if keep else view_map(services.cache, view.shown, settings)
    return (
        map_fig,
        _display(view.has_map),
        bar_figure(view.result, settings) if not view.has_map else no_update,
        _display(not view.has_map),
        stats_panel(summarize(view.result), settings),
        failing_rows(view.result),
        source_failing_rows(view.result),
        map_head(settings),
        notes_view(view.notes),
        view.attribution,
        level_options(settings),
    )


def control_outputs(change: SettingsChange, source: Any, strategy: Any) -> tuple[Any, ...]:
    """The view state (when it changed), the source and strategy the controls must show when the change corrected
    them (see :func:`~privdash.application.postcodes.settings_from_controls`), the strategy's description and the
    threshold label."""
    settings = change.settings
    return (
        change.state.to_dict() if change.changed else no_update,
        settings.source if settings.source != source else no_update,
        settings.strategy.value if settings.strategy.value != strategy else no_update,
        settings.strategy.description,
        threshold_label(settings),
    )


REDRAW_OUTPUTS: tuple[tuple[str, str], ...] = (
    ("pc-map", "figure"),
    ("pc-map-wrap", "style"),
    ("pc-bars", "figure"),
    ("pc-bars-wrap", "style"),
    ("pc-stats", "children"),
    ("failing-grid", "rowData"),
    ("source-failing-grid", "rowData"),
    ("pc-map-head", "children"),
    ("pc-notes", "children"),
    ("pc-attribution", "children"),
    ("pc-level", "data"),
)


def register(app: Dash, services: Services) -> None:
    dash.register_page(
        __name__,
        path=PATH,
        name=NAME,
        title="privdash · Postcodes",
        order=3,
        layout=lambda **q: layout(services, **q),
    )

    @app.callback(
        Output(PAGE_STATE, "data", allow_duplicate=True),
        Output("pc-source", "value"),
        Output("pc-strategy", "value"),
        Output("pc-strategy-help", "children"),
        Output("pc-threshold-label", "children"),
        Output("pc-error", "children"),
        Output("apply-results", "children", allow_duplicate=True),
        *(Output(cid, prop) for cid, prop in REDRAW_OUTPUTS),
        Input("pc-source", "value"),
        Input("pc-level", "value"),
        Input("pc-strategy", "value"),
        Input("pc-threshold", "value"),
        Input("pc-margin", "value"),
        State(PAGE_STATE, "data"),
        prevent_initial_call=True,
    )
    def update(source: Any, level: Any, strategy: Any, threshold: Any, margin: Any, data: Any) -> tuple[Any, ...]:
        skipped = (no_update,) * len(REDRAW_OUTPUTS)
        try:
            change = settings_change(state_from_store(data), source, level, strategy, threshold, margin)
        except (PrivdashError, ValueError, TypeError) as exc:
            alert = error_alert(str(exc), title="These settings are not valid")
            return (no_update,) * 5 + (alert, no_update) + skipped
        head = control_outputs(change, source, strategy)
        try:
            outputs = redraw(services, change.state, change.previous if data else None)
        except PrivdashError as exc:
            alert = error_alert(str(exc), title="The postcode data cannot be shown", alert_id="postcodes-error")
            return (*head, alert, None, *skipped)
        return (*head, None, None, *outputs)

    @app.callback(
        Output("apply-results", "children", allow_duplicate=True),
        Input("apply-button", "n_clicks"),
        State("apply-column", "value"),
        State(PAGE_STATE, "data"),
        prevent_initial_call=True,
    )
    def apply(n_clicks: int | None, column: str | None, data: Any) -> Any:
        if not n_clicks or not column:
            return no_update
        try:
            return apply_view(apply_to_dataset(services, state_from_store(data), column))
        except PrivdashError as exc:
            return error_alert(str(exc), title="The mapping could not be applied", alert_id="apply-error")


__all__ = [
    "BAR_COUNT",
    "DISPLAY_DECIMALS",
    "EMPTY_FIGURE",
    "REDRAW_OUTPUTS",
    "STATUS_COLORS",
    "apply_card",
    "apply_view",
    "bar_figure",
    "control_outputs",
    "display_geometries",
    "layout",
    "legend",
    "map_figure",
    "map_head",
    "map_view",
    "recolour",
    "redraw",
    "register",
    "results_layout",
    "stats_panel",
    "view_map",
]
