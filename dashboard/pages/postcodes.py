"""Postcodes page: census population per postcode unit, traffic-light maps before and after a strategy, and the
mapping applied to the open dataset's postcode column.

Definitions
-----------
A *source unit* is a postcode district (UK) or a 3-digit ZIP area (US); a *published unit* is what a strategy of
:mod:`dashboard.core.geo.postcodes` maps it to. Every unit gets a traffic light from its census population ``P``:

* **red**: the unit fails the threshold (:func:`~dashboard.core.geo.postcodes.fails_threshold`: ``P < threshold`` for
  the UK strategies, ``P <= threshold`` for ``zip3``);
* **amber**: it passes but ``P < threshold * (1 + margin / 100)``, so a small change of the threshold or of the
  population (a newer census) could make it fail; ``margin`` is a percentage (default 25);
* **green**: everything else.

The map shows, as the user picks, the source districts or the postcode areas coloured by their own population
("before"), or the published units of the strategy, districts dissolved by the mapping ("after"). It is a MapLibre
choropleth on a blank style (``white-bg``): no tile server, so nothing leaves the host. Polygons come from
:mod:`dashboard.core.geo.geography` (coverage-clean, simplified, memoised); the page rounds their coordinates to
:data:`DISPLAY_DECIMALS` decimals (about 10 m, well under the 500 m simplification), which keeps shared vertices
shared (no gaps) and the largest map (every UK district) under 2 MB. A threshold change that keeps the polygons
sends only the new colours (a ``Patch``). The US data has no polygons, so ``zip3`` shows bars of the smallest ZIP3
areas instead.

View state
----------
The page's settings live in :attr:`ViewState.geo <dashboard.application.state.ViewState>` as a compact object (defaults
left out): ``p`` population source (``ew``, ``doogal``, ``us``), ``l`` what the map shows (``district``, ``area``,
``units``), ``s`` strategy, ``t`` threshold (people), ``m`` amber margin (percent). :meth:`GeoSettings.from_dict`
validates it and says what is wrong with a bad link.
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import dash
import dash_ag_grid as dag
import dash_mantine_components as dmc
import numpy as np
import pandas as pd
import plotly.graph_objects as go
import shapely
from dash import Dash, Input, Output, Patch, State, dcc, html, no_update
from shapely.geometry import mapping as geometry_mapping

from dashboard.application.services import Services
from dashboard.application.state import StateError, ViewState
from dashboard.core.data.contract import StatisticalType
from dashboard.core.errors import PrivdashError
from dashboard.core.geo import geography
from dashboard.core.geo.postcodes import (
    DEFAULT_THRESHOLD,
    PopulationTable,
    PostcodeGeneralization,
    Strategy,
    default_data_dir,
    fails_threshold,
    generalize_postcodes,
    neighbours_from_doogal,
    population_counts,
    read_population,
)
from dashboard.core.measure.diagnose import Diagnosis, diagnose
from dashboard.core.measure.population import PopulationCounts, PopulationSource
from dashboard.core.measure.risk import RiskSummary, risk_summary
from dashboard.ui.components import card, error_alert, fmt_count, fmt_share, page_title
from dashboard.ui.pagestate import PAGE_STATE, state_from_query, state_from_store, state_store
from dashboard.ui.theme import COLORS, PLOTLY_TEMPLATE

PATH = "/postcodes"
NAME = "Postcodes"

DISPLAY_DECIMALS = 4
"""Coordinates sent to the browser are rounded to this many decimals (about 10 m)."""
DEFAULT_MARGIN = 25
MAX_THRESHOLD = 200_000
MAX_MARGIN = 200
MAP_HEIGHT = 520
#: Width the initial zoom is fitted to (the maps are responsive; the user can zoom and pan).
MAP_WIDTH = 560
BAR_COUNT = 60

RED, AMBER, GREEN = 0, 1, 2
STATUS_LABELS = ("under the threshold", "just above the threshold", "passes")
STATUS_COLORS = (COLORS["danger"], COLORS["warning"], COLORS["ok"])


@dataclass(frozen=True)
class Source:
    """A population reference in the shared data folder."""

    key: str
    label: str
    folder: str
    filename: str
    country: str

    def path(self, data_dir: Path) -> Path:
        return data_dir / self.folder / self.filename


SOURCES: dict[str, Source] = {
    s.key: s
    for s in (
        Source(
            "ew",
            "England and Wales, 2011 Census (outward codes)",
            "uk_postcode_population_ew2011_outward",
            "ew2011_outward_code_population.csv",
            "uk",
        ),
        Source(
            "doogal",
            "UK postcode districts (doogal.co.uk)",
            "uk_postcode_districts_doogal",
            "postcode_districts.csv",
            "uk",
        ),
        Source("us", "United States, 2010 Census (ZCTA)", "us_zcta2010_population", "2010-pop-by-zcta.csv", "us"),
    )
}
LEVELS = {"district": "Districts", "area": "Areas", "units": "Published units"}


class GeoStateError(StateError):
    """The link's postcode settings are not valid."""


# --- settings --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GeoSettings:
    """The page's settings (see the module docstring for the wire keys)."""

    source: str = "ew"
    level: str = "district"
    strategy: Strategy = Strategy.MIXED
    threshold: int = DEFAULT_THRESHOLD
    margin: int = DEFAULT_MARGIN

    @property
    def country(self) -> str:
        return SOURCES[self.source].country

    @property
    def amber_limit(self) -> float:
        """Populations below this (and passing) are amber."""
        return self.threshold * (1 + self.margin / 100)

    def to_dict(self) -> dict[str, Any]:
        """The compact object stored in ``ViewState.geo`` (defaults left out)."""
        default = DEFAULT_SETTINGS
        out: dict[str, Any] = {}
        for key, value, base in (
            ("p", self.source, default.source),
            ("l", self.level, default.level),
            ("s", self.strategy.value, default.strategy.value),
            ("t", self.threshold, default.threshold),
            ("m", self.margin, default.margin),
        ):
            if value != base:
                out[key] = value
        return out

    @classmethod
    def from_dict(cls, obj: Mapping[str, Any]) -> GeoSettings:
        """Parse and validate ``ViewState.geo``; :class:`GeoStateError` says what is wrong."""
        unknown = sorted(set(obj) - {"p", "l", "s", "t", "m"})
        if unknown:
            raise GeoStateError(f"The link's postcode settings have unknown keys: {', '.join(unknown)}.")
        default = DEFAULT_SETTINGS
        source = obj.get("p", default.source)
        if source not in SOURCES:
            raise GeoStateError(
                f"The link names an unknown population source {source!r}; use one of {', '.join(SOURCES)}."
            )
        level = obj.get("l", default.level)
        if level not in LEVELS:
            raise GeoStateError(f"The link names an unknown map level {level!r}; use {', '.join(LEVELS)}.")
        try:
            strategy = Strategy.parse(obj.get("s", default.strategy.value))
        except PrivdashError as exc:
            raise GeoStateError(f"The link's postcode strategy is not valid: {exc}") from None
        threshold = _whole(obj.get("t", default.threshold), "threshold", 0, MAX_THRESHOLD)
        margin = _whole(obj.get("m", default.margin), "margin", 0, MAX_MARGIN)
        if strategy.country != SOURCES[source].country:
            raise GeoStateError(
                f"The strategy {strategy.value} does not apply to {SOURCES[source].label}: "
                + ("use zip3 for US data." if SOURCES[source].country == "us" else "zip3 applies to US data only.")
            )
        return cls(source=source, level=level, strategy=strategy, threshold=threshold, margin=margin)


DEFAULT_SETTINGS = GeoSettings()


def _whole(value: Any, name: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value != int(value):
        raise GeoStateError(f"The link's postcode {name} must be a whole number, got {value!r}.")
    if not low <= int(value) <= high:
        raise GeoStateError(f"The link's postcode {name} must lie between {low:,} and {high:,}, got {int(value):,}.")
    return int(value)


def settings_from_state(state: ViewState) -> tuple[GeoSettings, str | None]:
    """The page settings of ``state``, and a message when they could not be read (the defaults are used then)."""
    try:
        return GeoSettings.from_dict(state.geo), None
    except GeoStateError as exc:
        return DEFAULT_SETTINGS, str(exc)


def settings_from_controls(
    previous: GeoSettings, source: Any, level: Any, strategy: Any, threshold: Any, margin: Any
) -> GeoSettings:
    """New settings from the controls. Picking ``zip3`` switches to US data, a UK strategy back to UK data, and a
    US source to ``zip3``, so the strategy always fits the source."""
    source = str(source) if source in SOURCES else previous.source
    chosen = Strategy.parse(strategy) if strategy else previous.strategy
    if chosen != previous.strategy and chosen.country != SOURCES[source].country:
        source = "us" if chosen is Strategy.ZIP3 else (previous.source if previous.country == "uk" else "ew")
    elif chosen.country != SOURCES[source].country:
        chosen = Strategy.ZIP3 if SOURCES[source].country == "us" else Strategy.MIXED
    threshold_value = previous.threshold if threshold in (None, "") else round(float(threshold))
    margin_value = previous.margin if margin in (None, "") else round(float(margin))
    return GeoSettings.from_dict(
        GeoSettings(
            source=source,
            level=str(level) if level in LEVELS else previous.level,
            strategy=chosen,
            threshold=min(max(threshold_value, 0), MAX_THRESHOLD),
            margin=min(max(margin_value, 0), MAX_MARGIN),
        ).to_dict()
    )


# --- reference data (memoised per process) ------------------------------------------------------------------------

_TABLES: dict[tuple[str, int, int], PopulationTable] = {}
_GENERALIZATIONS: OrderedDict[tuple[Any, ...], PostcodeGeneralization] = OrderedDict()
_DISPLAY: dict[str, dict[str, Any]] = {}
_LOCK = threading.Lock()


class ReferenceDataMissing(PrivdashError):
    """A reference file or folder of the shared data is missing."""


def data_dir(services: Services) -> Path:
    """The shared-data folder: the app's setting, else :func:`~dashboard.core.geo.postcodes.default_data_dir`."""
    configured = services.settings.data_dir
    return Path(configured) if configured is not None else default_data_dir()


def population_table(folder: Path, source: str) -> PopulationTable:
    """The population reference ``source`` of the data folder, read once per file version."""
    path = SOURCES[source].path(folder)
    if not path.is_file():
        raise ReferenceDataMissing(
            f"The population file {path.name} was not found in {path.parent}. Set PRIVDASH_DATA_DIR to the folder "
            "of the shared reference data (it holds uk_postcode_population_ew2011_outward, us_zcta2010_population "
            "and the polygon folders)."
        )
    stat = path.stat()
    key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
    with _LOCK:
        if key in _TABLES:
            return _TABLES[key]
    table = read_population(path)
    with _LOCK:
        _TABLES[key] = table
    return table


def district_layer(folder: Path) -> geography.PolygonLayer:
    """The district polygons (memoised by :mod:`~dashboard.core.geo.geography`)."""
    directory = geography.district_polygons_dir(folder)
    if not directory.is_dir():
        raise ReferenceDataMissing(f"The postcode district polygons were not found in {directory}.")
    return geography.load_districts(directory)


def area_layer(folder: Path) -> geography.PolygonLayer:
    """The postcode area polygons (memoised by :mod:`~dashboard.core.geo.geography`)."""
    path = geography.area_polygons_path(folder)
    if not path.is_file():
        raise ReferenceDataMissing(f"The postcode area polygons were not found at {path}.")
    return geography.load_areas(path)


def generalization(folder: Path, settings: GeoSettings) -> PostcodeGeneralization:
    """The core's mapping for ``settings`` (merge uses shared polygon boundaries; kept in a small LRU)."""
    table = population_table(folder, settings.source)
    key = (id(table), settings.strategy.value, settings.threshold)
    with _LOCK:
        if key in _GENERALIZATIONS:
            _GENERALIZATIONS.move_to_end(key)
            return _GENERALIZATIONS[key]
    neighbours = None
    if settings.strategy is Strategy.MERGE:
        try:
            neighbours = district_layer(folder).neighbours()
        except ReferenceDataMissing:
            if table.nearby is None:
                raise
            neighbours = neighbours_from_doogal(table)
    result = generalize_postcodes(
        table, strategy=settings.strategy, threshold=settings.threshold, neighbours=neighbours
    )
    with _LOCK:
        _GENERALIZATIONS[key] = result
        while len(_GENERALIZATIONS) > 16:
            _GENERALIZATIONS.popitem(last=False)
    return result


# --- traffic lights and map figures ---------------------------------------------------------------------------------


def traffic_lights(populations: np.ndarray | pd.Series, settings: GeoSettings) -> np.ndarray:
    """``RED`` (fails the threshold by the strategy's rule), ``AMBER`` (passes, below the amber limit) or ``GREEN``
    for each population, as int8."""
    values = np.asarray(populations, dtype=float)
    fails = fails_threshold(values, settings.threshold, strategy=settings.strategy)
    near = ~fails & (values < settings.amber_limit)
    return np.where(fails, RED, np.where(near, AMBER, GREEN)).astype(np.int8)


def _round_geometries(geometries: np.ndarray) -> list[dict[str, Any]]:
    rounded = shapely.transform(geometries, lambda xy: np.round(xy, DISPLAY_DECIMALS))
    return [geometry_mapping(g) for g in rounded]


def layer_features(layer: geography.PolygonLayer) -> dict[str, Any]:
    """Code -> GeoJSON geometry of every polygon of ``layer`` at display precision (computed once per layer)."""
    with _LOCK:
        if layer.source_key in _DISPLAY:
            return _DISPLAY[layer.source_key]
    geometries = _round_geometries(layer.frame.geometry.to_numpy())
    features = dict(zip(layer.frame.index.astype(str), geometries, strict=True))
    with _LOCK:
        _DISPLAY[layer.source_key] = features
    return features


@dataclass(frozen=True, eq=False)
class MapUnits:
    """The units drawn on one map: codes, their polygons (GeoJSON geometries), populations and traffic lights."""

    codes: list[str]
    geometries: list[dict[str, Any]]
    populations: np.ndarray
    status: np.ndarray
    bounds: tuple[float, float, float, float]
    attribution: str
    missing: tuple[str, ...] = ()

    def geojson(self) -> dict[str, Any]:
        return {
            "type": "FeatureCollection",
            "features": [
                {"type": "Feature", "id": code, "properties": {}, "geometry": geometry}
                for code, geometry in zip(self.codes, self.geometries, strict=True)
            ],
        }


def before_units(folder: Path, settings: GeoSettings, table: PopulationTable) -> MapUnits:
    """The source units (districts) or their areas, each coloured by its own population."""
    layer = district_layer(folder) if settings.level == "district" else area_layer(folder)
    populations = table.population(settings.level)
    drawn = populations.index[populations.index.isin(layer.frame.index)]
    missing = tuple(str(c) for c in populations.index[~populations.index.isin(layer.frame.index)])
    features = layer_features(layer)
    pops = populations.reindex(drawn).to_numpy(dtype=np.int64)
    bounds = shapely.total_bounds(layer.frame.geometry.reindex(drawn).to_numpy())
    return MapUnits(
        codes=[str(c) for c in drawn],
        geometries=[features[str(c)] for c in drawn],
        populations=pops,
        status=traffic_lights(pops, settings),
        bounds=_bounds(bounds),
        attribution=f"{layer.attribution}. {geography.attribution(table.source_format)}.",
        missing=missing,
    )


def after_units(folder: Path, settings: GeoSettings, result: PostcodeGeneralization) -> MapUnits:
    """The published units: districts dissolved by the mapping, coloured by the unit's population."""
    layer = district_layer(folder)
    dissolved = layer.dissolve(result)
    codes = [str(c) for c in dissolved.index]
    pops = result.populations.reindex(dissolved.index).to_numpy(dtype=np.int64)
    geometries = dissolved.geometry.to_numpy()
    return MapUnits(
        codes=codes,
        geometries=_round_geometries(geometries),
        populations=pops,
        status=traffic_lights(pops, settings),
        bounds=_bounds(shapely.total_bounds(geometries)),
        attribution=f"{geography.attribution('units')}. {geography.attribution(_source_format(folder, settings))}.",
        missing=layer.without_polygon(result),
    )


def _source_format(folder: Path, settings: GeoSettings) -> str:
    return population_table(folder, settings.source).source_format


def _bounds(values: Any) -> tuple[float, float, float, float]:
    west, south, east, north = (float(v) for v in values)
    return west, south, east, north


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


def map_figure(units: MapUnits, *, revision: str) -> dict[str, Any]:
    """A traffic-light choropleth of ``units`` on a blank MapLibre style (no tiles), as a plotly figure dict.

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
    out["data"][0]["geojson"] = units.geojson()
    return {"data": out["data"], "layout": out["layout"]}


def recolour(units: MapUnits) -> Patch:
    """A partial update of a map figure: new colours and hover texts for the same polygons."""
    patch = Patch()
    patch["data"][0]["z"] = units.status.astype(int).tolist()
    patch["data"][0]["customdata"] = _hover_data(units)
    return patch


def bar_figure(result: PostcodeGeneralization, settings: GeoSettings) -> go.Figure:
    """The smallest ZIP3 areas as bars coloured by traffic light, with the threshold and the amber limit."""
    original = result.original_populations
    smallest = original.iloc[np.argsort(original.to_numpy(), kind="stable")[:BAR_COUNT]]
    status = traffic_lights(smallest.to_numpy(), settings)
    published = result.mapping.reindex(smallest.index).astype(str).to_numpy()
    fig = go.Figure(
        go.Bar(
            x=[str(c) for c in smallest.index],
            y=smallest.to_numpy(),
            marker_color=[STATUS_COLORS[int(s)] for s in status],
            customdata=np.stack([published, [STATUS_LABELS[int(s)] for s in status]], axis=-1),
            hovertemplate="ZIP3 <b>%{x}</b><br>%{y:,} people<br>%{customdata[1]}<br>published as %{customdata[0]}"
            "<extra></extra>",
        )
    )
    fig.add_hline(y=settings.threshold, line_dash="dash", line_color=COLORS["danger"])
    fig.add_hline(y=settings.amber_limit, line_dash="dot", line_color=COLORS["warning"])
    fig.update_layout(
        template=PLOTLY_TEMPLATE,
        height=MAP_HEIGHT,
        xaxis_title=f"the {len(smallest)} smallest ZIP3 areas",
        yaxis_title="people (2010 Census)",
    )
    fig.update_xaxes(type="category")
    return fig


# --- the view: everything the page shows for one setting ------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class PostcodeView:
    """What the page shows for one setting (built by :func:`build_view`): the core's mapping and the map's units
    (None for US data, which has no polygons)."""

    settings: GeoSettings
    result: PostcodeGeneralization
    table: PopulationTable
    shown: MapUnits | None
    notes: tuple[str, ...] = field(default=())

    @property
    def has_map(self) -> bool:
        return self.shown is not None


def build_view(folder: Path, settings: GeoSettings) -> PostcodeView:
    """The core's mapping for ``settings`` and, for UK data, the units of the map the level asks for."""
    table = population_table(folder, settings.source)
    result = generalization(folder, settings)
    if settings.country == "us":
        note = (
            "US ZIP3 areas have no polygons in the shared data, so they are shown as bars (the smallest areas) "
            "and in the tables instead of a map."
        )
        return PostcodeView(settings, result, table, None, (note,))
    if settings.level == "units":
        shown = after_units(folder, settings, result)
        notes = (f"Published units without a polygon (not drawn): {_listed(shown.missing)}.",) if shown.missing else ()
    else:
        shown = before_units(folder, settings, table)
        notes = (
            (
                f"{len(shown.missing)} {settings.level}s of the population table have no polygon and are not "
                f"drawn: {_listed(shown.missing)}.",
            )
            if shown.missing
            else ()
        )
    return PostcodeView(settings, result, table, shown, notes)


def _listed(codes: Sequence[str], limit: int = 8) -> str:
    shown = ", ".join(codes[:limit])
    return shown + (f" and {len(codes) - limit} more" if len(codes) > limit else "")


@dataclass(frozen=True)
class Summary:
    """The side panel's numbers."""

    n_units: int
    n_failing: int
    smallest_code: str
    smallest_population: int
    n_original: int
    n_original_failing: int
    total_population: int


def summarize(result: PostcodeGeneralization) -> Summary:
    """Units, failing units and the smallest unit after the strategy; source units failing before it.

    The Safe Harbor code ``000`` is not a geographic unit and is left out of the smallest unit (as the core leaves
    it out of the failing units).
    """
    populations = result.populations
    if result.strategy is Strategy.ZIP3:
        populations = populations.drop("000", errors="ignore")
    order = np.argsort(populations.to_numpy(), kind="stable")
    smallest = populations.iloc[order[:1]]
    return Summary(
        n_units=len(result.populations),
        n_failing=len(result.below_threshold),
        smallest_code=str(smallest.index[0]) if len(smallest) else "-",
        smallest_population=int(smallest.iloc[0]) if len(smallest) else 0,
        n_original=len(result.mapping),
        n_original_failing=len(result.original_below_threshold),
        total_population=result.total_population,
    )


def failing_rows(result: PostcodeGeneralization) -> list[dict[str, Any]]:
    """Published units that fail the threshold, smallest first: code, population, number of source units."""
    members = result.members
    return [
        {"code": str(code), "population": int(pop), "members": len(members.get(code, ()))}
        for code, pop in result.below_threshold.items()
    ]


def source_failing_rows(result: PostcodeGeneralization) -> list[dict[str, Any]]:
    """Source units under the threshold on their own, smallest first, with the unit they are published in."""
    below = result.original_below_threshold
    published = result.mapping.reindex(below.index)
    unit_pop = result.populations.reindex(published.to_numpy())
    return [
        {"code": str(code), "population": int(pop), "published": str(unit), "published_population": int(total)}
        for code, pop, unit, total in zip(below.index, below, published, unit_pop, strict=True)
    ]


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
        defaultColDef={"resizable": True, "sortable": True},
        columnSize="responsiveSizeToFit",
        dashGridOptions={"animateRows": False, "overlayNoRowsTemplate": "No unit fails the threshold."},
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


@dataclass(frozen=True, eq=False)
class ApplyResult:
    """The open dataset's diagnosis before and after recoding its postcode column with the page's mapping."""

    column: str
    summary: Mapping[str, Any]
    before: Diagnosis
    after: Diagnosis
    after_risk: RiskSummary


def postcode_columns(state: ViewState) -> list[str]:
    """Columns the view state types as postcodes."""
    return [name for name, kind in state.types.items() if kind == StatisticalType.POSTCODE]


def apply_mapping(services: Services, state: ViewState, result: PostcodeGeneralization, column: str) -> ApplyResult:
    """Recode ``column`` with the mapping and diagnose again, with the census populations of the published units as
    the population class sizes ``F_j`` (:func:`~dashboard.core.geo.postcodes.population_counts`)."""
    if not state.dataset:
        raise PrivdashError("No dataset is open.")
    if column not in state.quasi_identifiers:
        raise PrivdashError(
            f"Column '{column}' is not a quasi-identifier; mark it as one on the Data or Risk page to see its risk."
        )
    loaded = services.dataset(state.dataset)
    before = services.diagnosis(state)
    recoded = result.recode(loaded.frame, column=column)
    contract = services.contract(loaded, state)
    after = diagnose(
        recoded.data, contract=contract, missing=state.missing, threshold=state.risk, k_values=before.k_values
    )
    classes = after.classes
    counts = population_counts(classes, column=column, populations=result.populations)
    total = float(result.total_population)
    population = PopulationCounts(
        counts=counts,
        kind=PopulationSource.TABLE,
        source=f"census populations of the published postcode units ({total:,.0f} people)",
        population_size=total,
        sampling_fraction=classes.n_records / total if total else None,
    )
    return ApplyResult(column, recoded.summary, before, after, risk_summary(classes, population, threshold=state.risk))


def apply_view(outcome: ApplyResult, settings: GeoSettings) -> Any:
    """k and the journalist / marketer risks before and after, and what the recoding changed."""
    before, after, risk = outcome.before, outcome.after, outcome.after_risk
    rows = [
        ("k (smallest class)", fmt_count(before.k), fmt_count(after.k), "apply-k"),
        (
            "Journalist risk, highest",
            fmt_share(before.risk.journalist.highest),
            fmt_share(risk.journalist.highest),
            "apply-journalist",
        ),
        (
            "Journalist risk, average",
            fmt_share(before.risk.journalist.average),
            fmt_share(risk.journalist.average),
            "apply-journalist-average",
        ),
        (
            f"Records above {fmt_share(risk.threshold, 0)} (journalist)",
            fmt_share(before.risk.journalist.records_at_risk),
            fmt_share(risk.journalist.records_at_risk),
            "apply-at-risk",
        ),
        ("Marketer risk", fmt_share(before.risk.marketer.average), fmt_share(risk.marketer.average), "apply-marketer"),
    ]
    head = dmc.TableThead(
        dmc.TableTr(
            [
                dmc.TableTh("Measure"),
                dmc.TableTh("Before (population: the sample)", ta="right"),
                dmc.TableTh(f"After {settings.strategy.value} (census populations)", ta="right"),
            ]
        )
    )
    body = dmc.TableTbody(
        [
            dmc.TableTr(
                [dmc.TableTd(label), dmc.TableTd(b, ta="right"), dmc.TableTd(a, ta="right", id=row_id)],
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
                "Before: the dataset as loaded, the sample standing for the population (F = f), as on the Risk "
                "page. After: each class's population F = f · Pop(unit) / n(unit) from the census population of "
                "its published postcode unit.",
                size="xs",
                c="dimmed",
            ),
        ],
        gap="xs",
    )


def apply_card(state: ViewState) -> Any:
    """The "apply to the dataset" card, when the open dataset has a postcode column; else an empty placeholder."""
    columns = postcode_columns(state)
    output = html.Div(id="apply-results")
    if not columns:
        return html.Div(output, style={"display": "none"})
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
                    span={"base": 12, "md": 4},
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
                            ),
                            dmc.Text(settings.strategy.description, size="xs", c="dimmed", id="pc-strategy-help"),
                        ],
                        gap=4,
                    ),
                    span={"base": 12, "md": 5},
                ),
                dmc.GridCol(
                    dmc.Stack(
                        [
                            dmc.Text("Map of", size="sm", fw=500),
                            dmc.SegmentedControl(
                                id="pc-level",
                                data=[{"value": k, "label": v} for k, v in LEVELS.items()],
                                value=settings.level,
                                size="xs",
                            ),
                        ],
                        gap=4,
                    ),
                    span={"base": 12, "md": 3},
                ),
                dmc.GridCol(
                    dmc.Stack(
                        [
                            dmc.Text(
                                f"Threshold: {fmt_count(settings.threshold)} people",
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
                            ),
                        ],
                        gap=4,
                    ),
                    span={"base": 12, "md": 8},
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
                    span={"base": 12, "md": 4},
                ),
            ],
            gutter="md",
        ),
    )


def map_title(settings: GeoSettings) -> str:
    if settings.level == "units":
        return f"After: published units of the {settings.strategy.value} strategy, by their population"
    return f"Before: {LEVELS[settings.level].lower()} by their own population"


def _revision(settings: GeoSettings) -> str:
    # The map keeps the user's zoom and pan while only colours change.
    return f"{settings.source}-{settings.level}"


def results_layout(view: PostcodeView | None) -> Any:
    """Side panel, the map (or the bars), the legend, the attribution and the failing-unit tables."""
    settings = view.settings if view else DEFAULT_SETTINGS
    has_map = bool(view and view.has_map)
    map_fig = map_figure(view.shown, revision=_revision(settings)) if view and view.shown else EMPTY_FIGURE
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
                        [dmc.Text(map_title(settings), fw=600, size="sm", id="pc-map-title"), legend(settings)],
                        justify="space-between",
                        mb="xs",
                        id="pc-map-head",
                    ),
                    html.Div(
                        dcc.Graph(id="pc-map", figure=map_fig, config={"displaylogo": False, "scrollZoom": True}),
                        id="pc-map-wrap",
                        style=_display(has_map),
                    ),
                    html.Div(
                        dcc.Graph(id="pc-bars", figure=bars, config={"displaylogo": False}),
                        id="pc-bars-wrap",
                        style=_display(bool(view) and not has_map),
                    ),
                    dmc.Text(
                        attribution_text(view),
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
                            dmc.TabsList(
                                [
                                    dmc.TabsTab("Published units that fail", value="after", id="tab-after"),
                                    dmc.TabsTab("Source units that fail on their own", value="before", id="tab-before"),
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


def attribution_text(view: PostcodeView | None) -> str:
    """The credit line of the map's polygons and population, from the datasets' SOURCE.md (via geography)."""
    if view is None:
        return ""
    if view.shown is not None:
        return view.shown.attribution
    return geography.attribution(view.table.source_format) + "."


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
        view = build_view(data_dir(services), settings)
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
        dcc.Loading(results_layout(view), delay_show=400, type="dot"),
        apply_card(state),
        state_store(state.updated(geo=settings.to_dict()) if geo_problem else state),
    ]
    return html.Div(body)


def same_polygons(previous: GeoSettings | None, settings: GeoSettings) -> bool:
    """Whether the map keeps its polygons from ``previous`` to ``settings`` (only the colours change).

    Districts and areas depend on the population source only; the published units of ``area`` and ``outward`` do
    not depend on the threshold.
    """
    if previous is None or previous.source != settings.source or previous.level != settings.level:
        return False
    if settings.level != "units":
        return True
    return previous.strategy == settings.strategy and settings.strategy in (Strategy.AREA, Strategy.OUTWARD)


def redraw(services: Services, state: ViewState, previous: GeoSettings | None) -> tuple[Any, ...]:
    """Outputs of the main callback for ``state`` (in the order of :data:`REDRAW_OUTPUTS`): the map (a colour-only
    patch when its polygons did not change), bars, side panel, tables. Raises ``PrivdashError`` for the page."""
    settings, _ = settings_from_state(state)
    view = build_view(data_dir(services), settings)
    map_fig: Any = no_update
    if view.shown is not None:
        if same_polygons(previous, settings):
            map_fig = recolour(view.shown)
        else:
            map_fig = map_figure(view.shown, revision=_revision(settings))
    bars = bar_figure(view.result, settings) if not view.has_map else no_update
    return (
        map_fig,
        _display(view.has_map),
        bars,
        _display(not view.has_map),
        stats_panel(summarize(view.result), settings),
        failing_rows(view.result),
        source_failing_rows(view.result),
        [dmc.Text(map_title(settings), fw=600, size="sm", id="pc-map-title"), legend(settings)],
        notes_view(view.notes),
        attribution_text(view),
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
            state = state_from_store(data)
            previous, _ = settings_from_state(state)
            settings = settings_from_controls(previous, source, level, strategy, threshold, margin)
        except (PrivdashError, ValueError, TypeError) as exc:
            alert = error_alert(str(exc), title="These settings are not valid")
            return (no_update,) * 5 + (alert, no_update) + skipped
        new_state = state.updated(geo=settings.to_dict())
        head = (
            new_state.to_dict() if new_state != state else no_update,
            settings.source if settings.source != source else no_update,
            settings.strategy.value if settings.strategy.value != strategy else no_update,
            settings.strategy.description,
            f"Threshold: {fmt_count(settings.threshold)} people",
        )
        try:
            outputs = redraw(services, new_state, previous if data else None)
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
            state = state_from_store(data)
            settings, problem = settings_from_state(state)
            if problem:
                raise PrivdashError(problem)
            result = generalization(data_dir(services), settings)
            return apply_view(apply_mapping(services, state, result, column), settings)
        except PrivdashError as exc:
            return error_alert(str(exc), title="The mapping could not be applied", alert_id="apply-error")


__all__ = [
    "DEFAULT_SETTINGS",
    "SOURCES",
    "ApplyResult",
    "GeoSettings",
    "GeoStateError",
    "MapUnits",
    "PostcodeView",
    "Summary",
    "apply_mapping",
    "apply_view",
    "bar_figure",
    "build_view",
    "failing_rows",
    "layout",
    "map_figure",
    "map_view",
    "recolour",
    "redraw",
    "register",
    "settings_from_controls",
    "settings_from_state",
    "source_failing_rows",
    "summarize",
    "traffic_lights",
]
