"""The Postcodes page's application logic: its settings, the census reference data, the traffic lights, the units a
map shows, and the page's mapping applied to the open dataset. No Dash here; the page draws what this returns.

Definitions
-----------
A *source unit* is a postcode district (UK) or a 3-digit ZIP area (US); a *published unit* is what a strategy of
:mod:`privdash.geo.postcodes` maps it to. Every unit gets a traffic light from its census population ``P``:

* **red** (:data:`RED`): the unit fails the threshold (:func:`~privdash.geo.postcodes.fails_threshold`:
  ``P < threshold`` for the UK strategies, ``P <= threshold`` for ``zip3``);
* **amber** (:data:`AMBER`): it passes but ``P < threshold * (1 + margin / 100)``, so a small change of the
  threshold or of the population (a newer census) could make it fail; ``margin`` is a percentage (default 25);
* **green** (:data:`GREEN`): everything else.

Settings
--------
The page's settings live in :attr:`ViewState.geo <privdash.application.state.ViewState>` as a compact object
(defaults left out): ``p`` population source (``ew``, ``doogal``, ``us``), ``l`` what the map shows (``district``,
``area``, ``units``), ``s`` strategy, ``t`` threshold (people), ``m`` amber margin (percent).
:meth:`GeoSettings.from_dict` validates it and says what is wrong with a bad link.

Reference data
--------------
Population tables, polygon layers and the core's mappings are kept in the worker's
:class:`~privdash.application.cache.BoundedCache` through :class:`PostcodeReference`, keyed by the path, size and
modification time of the files they come from, so a newer file is read again.
"""

from __future__ import annotations

import os
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import shapely

from privdash.application.cache import BoundedCache
from privdash.application.state import StateError, ViewState
from privdash.data.contract import StatisticalType
from privdash.errors import PrivdashError
from privdash.geo import geography
from privdash.geo.postcodes import (
    DEFAULT_POPULATION_THRESHOLD,
    PopulationTable,
    PostcodeGeneralization,
    Strategy,
    default_data_dir,
    fails_threshold,
    generalize_postcodes,
    neighbours_from_doogal,
    population_counts,
    read_population,
    recode_postcodes,
)
from privdash.measure.classes import EquivalenceClasses
from privdash.measure.diagnose import Diagnosis, diagnose
from privdash.measure.population import PopulationCounts, PopulationSource
from privdash.measure.risk import RiskSummary, risk_summary
from privdash.validation import Interval, check_param

if TYPE_CHECKING:
    from privdash.application.services import Services

__all__ = [
    "AMBER",
    "DEFAULT_SETTINGS",
    "GREEN",
    "LEVELS",
    "RED",
    "SOURCES",
    "STATUS_LABELS",
    "US_LEVELS",
    "ApplyResult",
    "GeoSettings",
    "GeoStateError",
    "MapUnits",
    "PostcodeReference",
    "PostcodeView",
    "ReferenceDataMissing",
    "SettingsChange",
    "Source",
    "Summary",
    "apply_mapping",
    "apply_to_dataset",
    "build_view",
    "census_population",
    "failing_rows",
    "level_options",
    "postcode_columns",
    "same_polygons",
    "settings_change",
    "settings_from_controls",
    "settings_from_state",
    "source_failing_rows",
    "source_unit_counts",
    "summarize",
    "traffic_lights",
    "view_title",
]

DEFAULT_MARGIN = 25
MAX_THRESHOLD = 200_000
MAX_MARGIN = 200

RED, AMBER, GREEN = 0, 1, 2
#: What each traffic light means, indexed by RED, AMBER, GREEN.
STATUS_LABELS = ("under the threshold", "just above the threshold", "passes")


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
#: What the map can show: the source districts, the postcode areas, or the published units of the strategy.
LEVELS = {"district": "Districts", "area": "Areas", "units": "Published units"}
#: The same choice for US data, drawn as bars: the source ZIP3 areas or the published units (there are no areas).
US_LEVELS = {"district": "ZIP3 areas", "units": "Published units"}


class GeoStateError(StateError):
    """The link's postcode settings are not valid."""


# --- settings --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GeoSettings:
    """The page's settings (see the module docstring for the wire keys)."""

    source: str = "ew"
    level: str = "district"
    strategy: Strategy = Strategy.MIXED
    threshold: int = DEFAULT_POPULATION_THRESHOLD
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
        threshold = check_param(
            obj.get("t", default.threshold), Interval(int, 0, MAX_THRESHOLD), "The link's postcode threshold",
            error=GeoStateError,
        )  # fmt: skip
        margin = check_param(
            obj.get("m", default.margin), Interval(int, 0, MAX_MARGIN), "The link's postcode margin",
            error=GeoStateError,
        )  # fmt: skip
        if strategy.country != SOURCES[source].country:
            raise GeoStateError(
                f"The strategy {strategy.value} does not apply to {SOURCES[source].label}: "
                + ("use zip3 for US data." if SOURCES[source].country == "us" else "zip3 applies to US data only.")
            )
        return cls(source=source, level=level, strategy=strategy, threshold=threshold, margin=margin)


DEFAULT_SETTINGS = GeoSettings()


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
    if SOURCES[source].country == "us" and level == "area":
        level = "district"  # US data has no postcode areas: its choices are ZIP3 areas or published units
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


@dataclass(frozen=True)
class SettingsChange:
    """The page's settings before and after a change of its controls, and the view state holding the new ones
    (``changed``: whether it differs from the state the change started from)."""

    previous: GeoSettings
    settings: GeoSettings
    state: ViewState
    changed: bool


def settings_change(
    state: ViewState, source: Any, level: Any, strategy: Any, threshold: Any, margin: Any
) -> SettingsChange:
    """The settings the controls ask for, from the settings of ``state`` (see :func:`settings_from_controls`).

    Raises ``PrivdashError``, ``ValueError`` or ``TypeError`` for values the controls should not send.
    """
    previous, _ = settings_from_state(state)
    settings = settings_from_controls(previous, source, level, strategy, threshold, margin)
    new_state = state.updated(geo=settings.to_dict())
    return SettingsChange(previous, settings, new_state, new_state != state)


def level_options(settings: GeoSettings) -> list[dict[str, Any]]:
    """The choices of what to show: districts, areas or published units on a UK map; ZIP3 areas or published units
    as bars for US data (areas shown, but disabled)."""
    if settings.country == "us":
        return [
            {"value": "district", "label": US_LEVELS["district"]},
            {"value": "area", "label": LEVELS["area"], "disabled": True},
            {"value": "units", "label": US_LEVELS["units"]},
        ]
    return [{"value": key, "label": label} for key, label in LEVELS.items()]


def view_title(settings: GeoSettings) -> str:
    """The title of the map (UK) or of the bars (US) for the settings."""
    if settings.level == "units":
        return f"After: published units of the {settings.strategy.value} strategy, by their population"
    if settings.country == "us":
        return "Before: ZIP3 areas by their own population"
    return f"Before: {LEVELS[settings.level].lower()} by their own population"


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


# --- reference data -------------------------------------------------------------------------------------------


class ReferenceDataMissing(PrivdashError):
    """A reference file or folder of the shared data is missing."""


def _file_stamp(path: Path) -> tuple[str, int, int]:
    stat = path.stat()
    return str(path.resolve()), stat.st_size, stat.st_mtime_ns


class PostcodeReference:
    """The census populations, polygon layers and postcode mappings of one shared-data folder.

    Every value goes through ``cache`` under a key naming its kind and the version (path, size, modification time)
    of the files it is read from.

    Parameters
    ----------
    folder
        The shared-data folder; None: :func:`~privdash.geo.postcodes.default_data_dir`.
    cache
        The worker's cache.
    polygon_cache
        Where processed polygon layers are kept on disk (``cache_dir`` of
        :func:`~privdash.geo.geography.load_districts`); None: the core's default.
    """

    def __init__(
        self,
        folder: str | os.PathLike[str] | None,
        cache: BoundedCache,
        *,
        polygon_cache: str | os.PathLike[str] | None = None,
    ) -> None:
        self.folder = Path(folder) if folder is not None else default_data_dir()
        self.cache = cache
        self.polygon_cache = polygon_cache
        self._generation = 0

    def forget_generalizations(self) -> None:
        """Compute the mappings again from now on (as after a new threshold); the entries computed so far age out
        of the cache. Tables and polygon layers are kept."""
        self._generation += 1

    def _table_path(self, source: str) -> Path:
        path = SOURCES[source].path(self.folder)
        if not path.is_file():
            raise ReferenceDataMissing(
                f"The population file {path.name} was not found in {path.parent}. Set PRIVDASH_DATA_DIR to the "
                "folder of the shared reference data (it holds uk_postcode_population_ew2011_outward, "
                "us_zcta2010_population and the polygon folders)."
            )
        return path

    def population_table(self, source: str) -> PopulationTable:
        """The population reference ``source`` of the data folder, read once per file version."""
        path = self._table_path(source)
        return self.cache.get_or_build(("postcode-table", *_file_stamp(path)), lambda: read_population(path))

    def _district_dir(self) -> Path:
        directory = geography.district_polygons_dir(self.folder)
        if not directory.is_dir():
            raise ReferenceDataMissing(f"The postcode district polygons were not found in {directory}.")
        return directory

    def _district_stamp(self, directory: Path) -> tuple[Hashable, ...]:
        return tuple(_file_stamp(f) for f in sorted(directory.glob("*.geojson")))

    def district_layer(self) -> geography.PolygonLayer:
        """The district polygons (:func:`~privdash.geo.geography.load_districts`)."""
        directory = self._district_dir()
        key = ("postcode-districts", str(directory.resolve()), self._district_stamp(directory))
        return self.cache.get_or_build(key, lambda: geography.load_districts(directory, cache_dir=self.polygon_cache))

    def area_layer(self) -> geography.PolygonLayer:
        """The postcode area polygons (:func:`~privdash.geo.geography.load_areas`)."""
        path = geography.area_polygons_path(self.folder)
        if not path.is_file():
            raise ReferenceDataMissing(f"The postcode area polygons were not found at {path}.")
        return self.cache.get_or_build(
            ("postcode-areas", *_file_stamp(path)), lambda: geography.load_areas(path, cache_dir=self.polygon_cache)
        )

    def generalization(self, settings: GeoSettings) -> PostcodeGeneralization:
        """The core's mapping for ``settings``; ``merge`` joins districts that share a polygon boundary (the
        doogal table's nearby districts when the polygons are missing)."""
        path = self._table_path(settings.source)
        polygons: tuple[Hashable, ...] = ()
        if settings.strategy is Strategy.MERGE:
            # The merge depends on the polygons too, so their version is part of the key.
            try:
                polygons = self._district_stamp(self._district_dir())
            except ReferenceDataMissing:
                polygons = ("no polygons",)
        key = (
            "postcode-generalization",
            *_file_stamp(path),
            settings.strategy.value,
            settings.threshold,
            polygons,
            self._generation,
        )
        return self.cache.get_or_build(key, lambda: self._generalize(settings))

    def _generalize(self, settings: GeoSettings) -> PostcodeGeneralization:
        table = self.population_table(settings.source)
        neighbours = None
        if settings.strategy is Strategy.MERGE:
            try:
                neighbours = self.district_layer().neighbours()
            except ReferenceDataMissing:
                if table.nearby is None:
                    raise
                neighbours = neighbours_from_doogal(table)
        return generalize_postcodes(
            table, strategy=settings.strategy, threshold=settings.threshold, neighbours=neighbours
        )


# --- traffic lights and the units of a map --------------------------------------------------------------------------


def traffic_lights(populations: np.ndarray | pd.Series, settings: GeoSettings) -> np.ndarray:
    """``RED`` (fails the threshold by the strategy's rule), ``AMBER`` (passes, below the amber limit) or ``GREEN``
    for each population, as int8."""
    values = np.asarray(populations, dtype=float)
    fails = fails_threshold(values, settings.threshold, strategy=settings.strategy)
    near = ~fails & (values < settings.amber_limit)
    return np.where(fails, RED, np.where(near, AMBER, GREEN)).astype(np.int8)


@dataclass(frozen=True, eq=False)
class MapUnits:
    """The units drawn on one map: codes, their polygons (shapely, WGS84), populations and traffic lights.

    ``layer`` is the polygon layer the units are rows of (districts or areas coloured by their own population), or
    None when the polygons were dissolved into published units.
    """

    codes: list[str]
    geometries: np.ndarray
    populations: np.ndarray
    status: np.ndarray
    bounds: tuple[float, float, float, float]
    attribution: str
    missing: tuple[str, ...] = ()
    layer: geography.PolygonLayer | None = None


def before_units(reference: PostcodeReference, settings: GeoSettings, table: PopulationTable) -> MapUnits:
    """The source units (districts) or their areas, each coloured by its own population."""
    layer = reference.district_layer() if settings.level == "district" else reference.area_layer()
    populations = table.population(settings.level)
    inside = populations.index.isin(layer.frame.index)
    drawn = populations.index[inside]
    pops = populations.reindex(drawn).to_numpy(dtype=np.int64)
    geometries = layer.frame.geometry.reindex(drawn).to_numpy()
    return MapUnits(
        codes=[str(c) for c in drawn],
        geometries=geometries,
        populations=pops,
        status=traffic_lights(pops, settings),
        bounds=_bounds(shapely.total_bounds(geometries)),
        attribution=f"{layer.attribution}. {geography.attribution(table.source_format)}.",
        missing=tuple(str(c) for c in populations.index[~inside]),
        layer=layer,
    )


def after_units(reference: PostcodeReference, settings: GeoSettings, result: PostcodeGeneralization) -> MapUnits:
    """The published units: districts dissolved by the mapping, coloured by the unit's population."""
    layer = reference.district_layer()
    dissolved = layer.dissolve(result)
    pops = result.populations.reindex(dissolved.index).to_numpy(dtype=np.int64)
    geometries = dissolved.geometry.to_numpy()
    source_format = reference.population_table(settings.source).source_format
    return MapUnits(
        codes=[str(c) for c in dissolved.index],
        geometries=geometries,
        populations=pops,
        status=traffic_lights(pops, settings),
        bounds=_bounds(shapely.total_bounds(geometries)),
        attribution=f"{geography.attribution('units')}. {geography.attribution(source_format)}.",
        missing=layer.without_polygon(result),
    )


def _bounds(values: Any) -> tuple[float, float, float, float]:
    west, south, east, north = (float(v) for v in values)
    return west, south, east, north


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

    @property
    def attribution(self) -> str:
        """The credit line of the map's polygons and population, from the datasets' SOURCE.md (via geography)."""
        if self.shown is not None:
            return self.shown.attribution
        return geography.attribution(self.table.source_format) + "."


def build_view(reference: PostcodeReference, settings: GeoSettings) -> PostcodeView:
    """The core's mapping for ``settings`` and, for UK data, the units of the map the level asks for."""
    table = reference.population_table(settings.source)
    result = reference.generalization(settings)
    if settings.country == "us":
        note = (
            "US ZIP3 areas have no polygons in the shared data, so they are shown as bars (the smallest areas) "
            "and in the tables instead of a map."
        )
        return PostcodeView(settings, result, table, None, (note,))
    if settings.level == "units":
        shown = after_units(reference, settings, result)
        notes = (f"Published units without a polygon (not drawn): {_listed(shown.missing)}.",) if shown.missing else ()
    else:
        shown = before_units(reference, settings, table)
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


# --- the side panel and the tables ----------------------------------------------------------------------------------


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


# --- applying the mapping to the open dataset --------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class ApplyResult:
    """The open dataset's diagnosis before and after recoding its postcode column with the page's mapping.

    ``before_risk`` and ``after_risk`` are measured alike, with census populations (:func:`census_population`):
    before, each class's population comes from the census population of its postcode's source unit (district or
    ZIP3); after, from that of its published unit. (The Risk page, without a census, takes the sample as the
    population; comparing that with a census-based "after" would show a drop that no recoding caused.)
    """

    column: str
    summary: Mapping[str, Any]
    before: Diagnosis
    after: Diagnosis
    after_risk: RiskSummary
    strategy: Strategy = Strategy.MIXED
    before_risk: RiskSummary | None = None


def postcode_columns(state: ViewState) -> list[str]:
    """Columns the view state types as postcodes."""
    return [name for name, kind in state.types.items() if kind == StatisticalType.POSTCODE]


def apply_mapping(services: Services, state: ViewState, result: PostcodeGeneralization, column: str) -> ApplyResult:
    """Recode ``column`` with the mapping and diagnose again, with the census populations of the published units as
    the population class sizes ``F_j`` (:func:`~privdash.geo.postcodes.population_counts`)."""
    if not state.dataset:
        raise PrivdashError("No dataset is open.")
    if column not in state.quasi_identifiers:
        raise PrivdashError(
            f"Column '{column}' is not a quasi-identifier; mark it as one on the Data or Risk page to see its risk."
        )
    loaded = services.dataset(state.dataset)
    loaded.require_rows("Recoding postcodes")
    before = services.diagnosis(state)
    if before.entity is not None:
        raise PrivdashError(
            f"'{before.entity}' is a person id: the risk is counted in people, whose classes are sets of QI values, "
            "and census populations per postcode unit count single values. Remove the person-id role to recode "
            "postcodes against the census."
        )
    recoded = result.recode(loaded.frame, column=column)
    contract = services.contract(loaded, state)
    after = diagnose(
        recoded.data, contract=contract, missing=state.missing, max_risk=state.max_risk, k_values=before.k_values
    )
    classes = after.classes
    counts = population_counts(classes, column=column, populations=result.populations)
    after_population = census_population(classes, counts, result, "published postcode units")
    before_counts = source_unit_counts(before, column, result)
    before_population = census_population(before.classes, before_counts, result, "postcodes' source units")
    return ApplyResult(
        column,
        recoded.summary,
        before,
        after,
        risk_summary(classes, after_population, max_risk=state.max_risk),
        strategy=result.strategy,
        before_risk=risk_summary(before.classes, before_population, max_risk=state.max_risk),
    )


def census_population(
    classes: EquivalenceClasses, counts: np.ndarray, result: PostcodeGeneralization, units: str
) -> PopulationCounts:
    """Population class sizes ``F_j`` (``counts``) from the census of ``result``, described for the page."""
    total = float(result.total_population)
    return PopulationCounts(
        counts=counts,
        kind=PopulationSource.TABLE,
        source=f"census populations of the {units} ({total:,.0f} people)",
        population_size=total,
        sampling_fraction=classes.n_records / total if total else None,
    )


def source_unit_counts(diagnosis: Diagnosis, column: str, result: PostcodeGeneralization) -> np.ndarray:
    """``F_j`` of the dataset's own classes, as loaded: ``F_j = f_j * Pop(u) / n_u`` with ``u`` the source unit
    (district or ZIP3) of the class's postcode, ``Pop(u)`` its census population and ``n_u`` the records in it (the
    rule of :func:`~privdash.geo.postcodes.population_counts`, with the unit each postcode lies in instead of
    the value itself). As there, ``F_j`` is never below ``f_j``, and a class whose postcode is missing or in no
    unit of the census uses the overall fraction ``Pop / n``."""
    classes = diagnosis.classes
    position = classes.quasi_identifiers.index(column)
    categories = pd.Series(np.asarray(classes.categories[position], dtype=object), dtype=object)
    identity = {str(code): str(code) for code in result.mapping.index}
    # The core's parser takes each postcode to its source unit (a unit postcode to its district, a ZIP to its ZIP3).
    units = recode_postcodes(
        pd.DataFrame({column: categories}), column=column, mapping=identity, country=result.country
    )
    unit_codes, unit_names = pd.factorize(units.data[column], use_na_sentinel=True)
    codes = classes.class_codes[:, position].astype(np.int64)
    class_unit = np.where(codes >= 0, unit_codes[np.maximum(codes, 0)], -1) if len(categories) else codes
    placed = class_unit >= 0
    records = np.asarray(classes.counts, dtype=np.float64)
    n_unit = np.bincount(class_unit[placed], weights=records[placed], minlength=len(unit_names))
    pop_unit = pd.to_numeric(result.original_populations, errors="coerce").reindex(unit_names).to_numpy(float)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio_unit = np.where(n_unit > 0, pop_unit / n_unit, 1.0)
    overall = float(result.total_population) / float(records.sum()) if records.sum() else 1.0
    ratio = np.where(placed, ratio_unit[np.maximum(class_unit, 0)] if len(ratio_unit) else 1.0, overall)
    ratio = np.where(np.isfinite(ratio), ratio, overall)
    return np.asarray(classes.sizes, dtype=np.float64) * np.maximum(ratio, 1.0)


def apply_to_dataset(services: Services, state: ViewState, column: str) -> ApplyResult:
    """:func:`apply_mapping` with the mapping of the settings in ``state``; a bad link's settings are refused."""
    settings, problem = settings_from_state(state)
    if problem:
        raise GeoStateError(problem)
    return apply_mapping(services, state, services.postcodes.generalization(settings), column)
