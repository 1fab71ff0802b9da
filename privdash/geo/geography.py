"""Postcode polygons: repaired, simplified without gaps, cached, dissolved to published units, as GeoJSON.

Layers
------
``districts``
    GB postcode district polygons (one GeoJSON file per postcode area, from Wikipedia via
    github.com/missinglink/uk-postcode-polygons; ``uk_postcode_polygons_wikipedia``).
``areas``
    GB postcode area polygons (GeoLytix Postal Boundaries Open 2012; ``uk_postcode_areas_geolytix``).

Processing (once per source version, then cached)
-------------------------------------------------
1. Rings are closed and geometries parsed from the GeoJSON text (a few source rings are not closed, which GDAL
   rejects), then projected to the British National Grid (EPSG:27700) so that tolerances are metres.
2. Invalid geometries are repaired with ``make_valid`` (structure method) and only polygonal parts are kept.
3. The polygons are made a clean *coverage* with ``coverage_clean`` (GEOS 3.14): overlaps between neighbours are
   given to the neighbour with the longest shared border, slivers narrower than :data:`GAP_WIDTH` metres are
   closed, and shared edges get identical vertices.
4. Adjacency: two polygons are neighbours when they share a boundary *line* (a single touching point does not
   count), measured on the clean full-detail coverage; the shared length in metres is kept. A representative
   point of each polygon (``point_on_surface``) serves as its centroid.
5. ``coverage_simplify`` (Visvalingam-Whyatt on the coverage's edges, tolerance in metres) simplifies every
   shared edge once for both neighbours, so no gap or overlap appears between them; then back to WGS84 and
   coordinates rounded to :data:`COORDINATE_DECIMALS` decimals (about 1 m), which keeps shared vertices shared
   (where rounding lays two edges onto one line, the rounded coverage is cleaned once more).

The processed layer is cached as GeoParquet in a cache directory (the ``cache_dir`` argument, else
``~/.cache/privdash``; the dashboard and the command line pass the folder of their settings), keyed by the SHA-256
of the source files, the tolerance and the processing version. There is no memo in the process (the dashboard
keeps layers in its own cache). A cache that cannot be written is skipped silently (the layer is still returned).

Attribution
-----------
Every map drawn from these layers must credit the data: :func:`attribution` returns the text for a layer or a
population source, taken from the datasets' SOURCE.md.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import shapely
from shapely.geometry import mapping as geometry_mapping
from shapely.geometry import shape

from privdash.errors import DataReadError, ParameterError, check_threshold
from privdash.geo.postcodes import Neighbours, PostcodeGeneralization, default_data_dir, postcode_order

if TYPE_CHECKING:  # geopandas (and pyproj) load when a layer is built or read, not with this module
    import geopandas as gpd

__all__ = [
    "COORDINATE_DECIMALS",
    "DEFAULT_TOLERANCE",
    "DOOGAL_ATTRIBUTION",
    "GAP_WIDTH",
    "GEOLYTIX_ATTRIBUTION",
    "ONS_ATTRIBUTION",
    "US_CENSUS_ATTRIBUTION",
    "WIKIPEDIA_ATTRIBUTION",
    "PolygonLayer",
    "area_polygons_path",
    "attribution",
    "default_cache_dir",
    "district_neighbours",
    "district_polygons_dir",
    "load_areas",
    "load_districts",
]

METRIC_CRS = "EPSG:27700"
WGS84 = "EPSG:4326"
DEFAULT_TOLERANCE = 500.0
"""Coverage simplification tolerance in metres: the district layer then serialises to about 1.6 MB of GeoJSON."""
GAP_WIDTH = 10.0
"""Slivers between neighbours narrower than this many metres are closed when the coverage is cleaned."""
COORDINATE_DECIMALS = 5
_PIPELINE_VERSION = "2"

WIKIPEDIA_ATTRIBUTION = (
    "Postcode district boundaries © Wikipedia contributors, Creative Commons Attribution-ShareAlike 3.0 Unported "
    "(CC BY-SA 3.0), via github.com/missinglink/uk-postcode-polygons"
)
GEOLYTIX_ATTRIBUTION = (
    "Postal Boundaries © GeoLytix copyright and database right 2012; Contains Ordnance Survey data © Crown "
    "copyright and database right 2012; Contains Royal Mail data © Royal Mail copyright and database right 2012; "
    "Contains National Statistics data © Crown copyright and database right 2012"
)
ONS_ATTRIBUTION = (
    "2011 Census postcode headcounts. Source: Office for National Statistics licensed under the Open Government "
    "Licence v.3.0"
)
DOOGAL_ATTRIBUTION = (
    "Postcode districts from doogal.co.uk. Contains OS data © Crown copyright and database right; Contains Royal "
    "Mail data © Royal Mail copyright and database right; Contains National Statistics data © Crown copyright and "
    "database right"
)
US_CENSUS_ATTRIBUTION = "2010 Census population by ZCTA, US Census Bureau (public domain)"

_ATTRIBUTIONS = {
    "districts": WIKIPEDIA_ATTRIBUTION,
    "units": WIKIPEDIA_ATTRIBUTION,
    "areas": GEOLYTIX_ATTRIBUTION,
    "census-unit": ONS_ATTRIBUTION,
    "outward": ONS_ATTRIBUTION,
    "doogal": DOOGAL_ATTRIBUTION,
    "us-zcta": US_CENSUS_ATTRIBUTION,
}


def attribution(layer: str) -> str:
    """The credit line a map or report must show for ``layer``.

    ``districts`` and ``units`` (districts dissolved to published units): Wikipedia, CC BY-SA 3.0. ``areas``:
    GeoLytix, OS, Royal Mail, ONS. Population sources by :attr:`PopulationTable.source_format`: ``census-unit`` and
    ``outward`` (ONS 2011 Census, OGL v3), ``doogal``, ``us-zcta`` (US Census Bureau).
    """
    try:
        return _ATTRIBUTIONS[layer]
    except KeyError:
        raise ParameterError(f"No attribution for {layer!r}; known: {', '.join(sorted(_ATTRIBUTIONS))}.") from None


def default_cache_dir() -> Path:
    """``~/.cache/privdash``: where processed layers are cached when no ``cache_dir`` is given."""
    return Path.home() / ".cache" / "privdash"


def district_polygons_dir(data_dir: str | os.PathLike[str] | None = None) -> Path:
    """The folder of per-area district GeoJSON files in the shared data (:func:`default_data_dir` by default)."""
    return Path(data_dir or default_data_dir()) / "uk_postcode_polygons_wikipedia" / "geojson"


def area_polygons_path(data_dir: str | os.PathLike[str] | None = None) -> Path:
    """The GeoLytix postcode-area GeoJSON file in the shared data."""
    return Path(data_dir or default_data_dir()) / "uk_postcode_areas_geolytix" / "postcode_areas.geojson"


@dataclass(frozen=True, eq=False)
class PolygonLayer:
    """A processed polygon layer (see the module docstring).

    Attributes
    ----------
    name
        ``districts`` or ``areas``.
    frame
        One row per code (index ``code``, natural order): ``area`` (postcode area), ``lon``/``lat`` (a point inside
        the full-detail polygon), ``geometry`` (simplified coverage, WGS84, coordinates rounded).
    pairs
        Neighbour pairs ``a`` < ``b`` sharing a boundary line, with its length ``shared_m`` in metres.
    tolerance
        Simplification tolerance in metres.
    source_key
        SHA-256 over the source files, tolerance and processing version (the cache key).
    """

    name: str
    frame: gpd.GeoDataFrame
    pairs: pd.DataFrame
    tolerance: float
    source_key: str

    @property
    def attribution(self) -> str:
        return attribution(self.name)

    @property
    def codes(self) -> pd.Index:
        return self.frame.index

    def neighbours(self) -> Neighbours:
        """The adjacency as :class:`~privdash.geo.postcodes.Neighbours` for the ``merge`` strategy."""
        return Neighbours(
            pairs=self.pairs[["a", "b"]],
            centroids=self.frame[["lon", "lat"]].copy(),
            source=f"shared boundaries of the {self.name} polygons",
        )

    @cached_property
    def _feature_geometry(self) -> dict[str, dict[str, Any]]:
        # GeoJSON geometry dicts are built once per layer: a redraw reuses them for every unit of one district.
        return {code: geometry_mapping(geom) for code, geom in zip(self.frame.index, self.frame.geometry, strict=True)}

    def geojson(self, *, properties: pd.DataFrame | None = None) -> dict[str, Any]:
        """The layer as a GeoJSON FeatureCollection (``id`` and ``properties.code`` are the code).

        ``properties``: extra columns per code (index code) copied into each feature's properties.
        """
        geometries = self._feature_geometry
        return _feature_collection(((code, geometries[code]) for code in self.frame.index), properties)

    def dissolve(self, mapping: Mapping[str, str] | pd.Series | PostcodeGeneralization) -> gpd.GeoDataFrame:
        """Polygons of the published units of ``mapping`` (code -> published code): districts dissolved.

        The union of a unit's polygons is a coverage union, exact because the coverage's shared edges are
        identical; units stay gap-free against each other. Codes of the layer absent from the mapping (Scottish
        districts with an England and Wales table) are left out; published units none of whose codes has a polygon
        (CR9, M60: non-geographic) are left out too and listed by :meth:`without_polygon`. Returns index ``code``
        (natural order), columns ``members`` (number of polygons united) and ``geometry`` (WGS84).
        """
        import geopandas as gpd

        codes, members, single, unions = self._dissolve_parts(mapping)
        geometry = [
            self.frame.geometry.loc[single[i]] if single[i] is not None else unions[code]
            for i, code in enumerate(codes)
        ]
        return gpd.GeoDataFrame({"members": members}, geometry=geometry, index=codes, crs=WGS84)

    def _dissolve_parts(
        self, mapping: Mapping[str, str] | pd.Series | PostcodeGeneralization
    ) -> tuple[pd.Index, np.ndarray, list[str | None], dict[str, Any]]:
        target = _mapping_series(mapping).reindex(self.frame.index)
        mapped = target.notna().to_numpy()
        groups = pd.Series(target.to_numpy()[mapped], index=self.frame.index[mapped])
        sizes = groups.value_counts()
        codes = pd.Index(sizes.index.astype(str), name="code")
        codes = codes[postcode_order(codes)]
        counts = sizes.reindex(codes).to_numpy(dtype=np.int64)
        first_member = pd.Series(groups.index, index=groups.to_numpy()).groupby(level=0).first()
        single: list[str | None] = [
            str(first_member[code]) if count == 1 else None for code, count in zip(codes, counts, strict=True)
        ]
        multi = groups[groups.map(sizes).to_numpy() > 1]
        unions = {
            str(code): shapely.coverage_union_all(self.frame.geometry.loc[members].to_numpy())
            for code, members in multi.groupby(multi.to_numpy()).groups.items()
        }
        return codes, counts, single, unions

    def without_polygon(self, mapping: Mapping[str, str] | pd.Series | PostcodeGeneralization) -> tuple[str, ...]:
        """Published units of ``mapping`` none of whose original codes has a polygon in this layer."""
        target = _mapping_series(mapping)
        drawn = set(target[target.index.isin(self.frame.index)].to_numpy())
        missing = sorted(set(target.to_numpy()) - drawn)
        return tuple(missing[i] for i in postcode_order(missing))

    def units_geojson(
        self,
        generalization: PostcodeGeneralization | Mapping[str, str] | pd.Series,
        *,
        properties: pd.DataFrame | None = None,
    ) -> dict[str, Any]:
        """GeoJSON of the published units (see :meth:`dissolve`), ``id`` = published code.

        For a :class:`PostcodeGeneralization` the properties include ``population`` and ``below`` (the unit fails
        the threshold); ``properties`` (index published code) adds columns.
        """
        codes, _, single, unions = self._dissolve_parts(generalization)
        extra = pd.DataFrame(index=codes)
        if isinstance(generalization, PostcodeGeneralization):
            extra["population"] = generalization.populations.reindex(codes).astype("int64")
            extra["below"] = codes.isin(generalization.below_threshold.index)
        if properties is not None:
            extra = extra.join(properties, how="left")
        geometries = self._feature_geometry
        features = (
            (code, geometries[member] if member is not None else geometry_mapping(unions[code]))
            for code, member in zip(codes, single, strict=True)
        )
        return _feature_collection(features, extra if len(extra.columns) else None)


def _mapping_series(mapping: Mapping[str, str] | pd.Series | PostcodeGeneralization) -> pd.Series:
    if isinstance(mapping, PostcodeGeneralization):
        if mapping.country != "uk":
            raise ParameterError("Polygons exist for UK postcodes only; this mapping is for US ZIP codes.")
        series = mapping.mapping
    elif isinstance(mapping, pd.Series):
        series = mapping
    else:
        series = pd.Series(dict(mapping), dtype=object)
    out = series.astype(str)
    out.index = pd.Index([str(c) for c in series.index])
    return out


def _feature_collection(
    features: Iterable[tuple[str, dict[str, Any]]], properties: pd.DataFrame | None
) -> dict[str, Any]:
    records = {}
    if properties is not None:
        records = {str(k): v for k, v in properties.to_dict(orient="index").items()}
    out = []
    for code, geometry in features:
        props: dict[str, Any] = {"code": code}
        for key, value in records.get(code, {}).items():
            props[str(key)] = value.item() if isinstance(value, np.generic) else value
        out.append({"type": "Feature", "id": code, "properties": props, "geometry": geometry})
    return {"type": "FeatureCollection", "features": out}


# --------------------------------------------------------------------------------------------------------------
# Loading and processing


def load_districts(
    directory: str | os.PathLike[str] | None = None,
    *,
    tolerance: float = DEFAULT_TOLERANCE,
    cache_dir: str | os.PathLike[str] | None = None,
    use_cache: bool = True,
) -> PolygonLayer:
    """The processed postcode-district layer (Wikipedia polygons, one ``<AREA>.geojson`` per area).

    Parameters
    ----------
    directory
        The folder of GeoJSON files (default: :func:`district_polygons_dir`). Each feature's ``name`` property is
        its district code; a code found in two features is united.
    tolerance
        Simplification tolerance in metres (:data:`DEFAULT_TOLERANCE`); 0 keeps every vertex.
    cache_dir
        Where processed layers are cached (:func:`default_cache_dir` by default).
    use_cache
        False recomputes and does not touch the disk cache.
    """
    folder = Path(directory) if directory is not None else district_polygons_dir()
    if not folder.is_dir():
        raise DataReadError(f"District polygon folder not found: {folder}.")
    files = sorted(folder.glob("*.geojson"))
    if not files:
        raise DataReadError(f"No .geojson files in {folder}.")
    return _load("districts", files, tolerance, cache_dir, use_cache, _read_districts)


def load_areas(
    path: str | os.PathLike[str] | None = None,
    *,
    tolerance: float = DEFAULT_TOLERANCE,
    cache_dir: str | os.PathLike[str] | None = None,
    use_cache: bool = True,
) -> PolygonLayer:
    """The processed postcode-area layer (GeoLytix; property ``PostArea`` is the code). See :func:`load_districts`."""
    source = Path(path) if path is not None else area_polygons_path()
    if not source.is_file():
        raise DataReadError(f"Postcode area polygons not found: {source}.")
    return _load("areas", [source], tolerance, cache_dir, use_cache, _read_areas)


def district_neighbours(
    directory: str | os.PathLike[str] | None = None, *, cache_dir: str | os.PathLike[str] | None = None
) -> Neighbours:
    """District adjacency from shared polygon boundaries (see :meth:`PolygonLayer.neighbours`)."""
    return load_districts(directory, cache_dir=cache_dir).neighbours()


def _load(
    name: str,
    files: list[Path],
    tolerance: float,
    cache_dir: str | os.PathLike[str] | None,
    use_cache: bool,
    reader: Any,
) -> PolygonLayer:
    tolerance = check_threshold(tolerance, "tolerance")
    cache = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    # No memo in the process: the application keeps layers in its own cache; the disk cache makes a reload cheap.
    key = _source_key(files, tolerance)
    layer = _read_cache(cache, name, key, tolerance) if use_cache else None
    if layer is None:
        codes, areas, geometries = reader(files)
        layer = _process(name, codes, areas, geometries, tolerance, key)
        if use_cache:
            _write_cache(cache, layer)
    return layer


def _source_key(files: list[Path], tolerance: float) -> str:
    digest = hashlib.sha256(f"{_PIPELINE_VERSION}|{tolerance!r}|{GAP_WIDTH!r}|{COORDINATE_DECIMALS}".encode())
    digest.update(f"|{shapely.__version__}|{shapely.geos_version_string}".encode())
    for path in files:
        digest.update(path.name.encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def _read_features(path: Path) -> list[dict[str, Any]]:
    try:
        collection = json.loads(path.read_text(encoding="utf-8-sig"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DataReadError(f"Cannot read {path} as GeoJSON: {exc}.") from exc
    features = collection.get("features") if isinstance(collection, dict) else None
    if not isinstance(features, list):
        raise DataReadError(f"{path} is not a GeoJSON FeatureCollection.")
    return features


def _geometry(feature: dict[str, Any], path: Path) -> Any:
    # shapely closes unclosed rings when it builds polygons from coordinates, which GDAL refuses to read.
    try:
        return shape(feature["geometry"])
    except (KeyError, TypeError, ValueError, AttributeError, shapely.errors.GEOSException) as exc:
        raise DataReadError(f"A feature of {path} has an unreadable geometry: {exc}.") from exc


def _read_districts(files: list[Path]) -> tuple[list[str], list[str], list[Any]]:
    codes, areas, geometries = [], [], []
    for path in files:
        for feature in _read_features(path):
            code = str((feature.get("properties") or {}).get("name", "")).strip().upper()
            if not code:
                raise DataReadError(f"A feature of {path} has no 'name' property (its district code).")
            codes.append(code)
            areas.append(path.stem.upper())
            geometries.append(_geometry(feature, path))
    return codes, areas, geometries


def _read_areas(files: list[Path]) -> tuple[list[str], list[str], list[Any]]:
    codes, geometries = [], []
    for feature in _read_features(files[0]):
        code = str((feature.get("properties") or {}).get("PostArea", "")).strip().upper()
        if not code:
            raise DataReadError(f"A feature of {files[0]} has no 'PostArea' property (its postcode area).")
        codes.append(code)
        geometries.append(_geometry(feature, files[0]))
    return codes, list(codes), geometries


def _polygonal(geometries: np.ndarray) -> np.ndarray:
    """Repair with make_valid and keep only the polygonal parts of each geometry."""
    repaired = shapely.make_valid(geometries, method="structure", keep_collapsed=False)
    out = repaired.copy()
    type_ids = shapely.get_type_id(repaired)
    for position in np.flatnonzero((type_ids != 3) & (type_ids != 6)):
        parts = shapely.get_parts(repaired[position])
        polygons = parts[np.isin(shapely.get_type_id(parts), (3, 6))]
        out[position] = shapely.union_all(polygons) if len(polygons) else shapely.Polygon()
    return out


def _process(
    name: str, codes: list[str], areas: list[str], geometries: list[Any], tolerance: float, key: str
) -> PolygonLayer:
    import geopandas as gpd

    raw = gpd.GeoDataFrame({"code": codes, "area": areas}, geometry=geometries, crs=WGS84)
    if raw["code"].duplicated().any():
        # A code split over several features is one polygon.
        raw = raw.dissolve(by="code", aggfunc="first").reset_index()
    metric = raw.to_crs(METRIC_CRS)
    polygons = _polygonal(metric.geometry.to_numpy())
    empty = shapely.is_empty(polygons)
    polygons, metric = polygons[~empty], metric.loc[~empty]
    clean = shapely.coverage_clean(polygons, gap_width=GAP_WIDTH)
    pairs = _adjacency(clean, metric["code"].to_numpy())
    inside = gpd.GeoSeries(shapely.point_on_surface(clean), crs=METRIC_CRS).to_crs(WGS84)
    simplified = shapely.coverage_simplify(clean, tolerance) if tolerance > 0 else clean
    wgs = gpd.GeoSeries(simplified, crs=METRIC_CRS).to_crs(WGS84).to_numpy()
    rounded = _round_coverage(wgs)
    frame = gpd.GeoDataFrame(
        {
            "area": metric["area"].to_numpy(),
            "lon": np.round(inside.x.to_numpy(), COORDINATE_DECIMALS),
            "lat": np.round(inside.y.to_numpy(), COORDINATE_DECIMALS),
        },
        geometry=rounded,
        index=pd.Index(metric["code"].to_numpy(), name="code"),
        crs=WGS84,
    )
    frame = frame.iloc[postcode_order(frame.index)]
    return PolygonLayer(name=name, frame=frame, pairs=pairs, tolerance=tolerance, source_key=key)


def _round(geometries: np.ndarray) -> np.ndarray:
    return shapely.transform(geometries, lambda xy: np.round(xy, COORDINATE_DECIMALS))


def _round_coverage(geometries: np.ndarray) -> np.ndarray:
    """Round coordinates while keeping a valid coverage.

    Rounding moves shared vertices identically, but a projected edge that ran a hair beside a neighbour's edge can
    land on it (two rounded collinear edges with different vertices): nodes them with ``coverage_clean`` in the
    rounded coordinates (no snapping) and round again, a few times at most.
    """
    rounded = _round(geometries)
    for _ in range(3):
        if shapely.coverage_is_valid(rounded) and shapely.is_valid(rounded).all():
            break
        rounded = _round(shapely.coverage_clean(_polygonal(rounded), snapping_distance=0.0))
    return rounded


def _adjacency(polygons: np.ndarray, codes: np.ndarray) -> pd.DataFrame:
    """Pairs of polygons whose boundaries share a line of positive length (rook adjacency)."""
    tree = shapely.STRtree(polygons)
    first, second = tree.query(polygons, predicate="intersects")
    keep = first < second
    first, second = first[keep], second[keep]
    shared = shapely.length(shapely.intersection(shapely.boundary(polygons[first]), shapely.boundary(polygons[second])))
    line = shared > 0
    a, b = codes[first[line]].astype(str), codes[second[line]].astype(str)
    low, high = np.where(a < b, a, b), np.where(a < b, b, a)
    pairs = pd.DataFrame({"a": low, "b": high, "shared_m": np.round(shared[line], 1)})
    return pairs.sort_values(["a", "b"], ignore_index=True)


def _cache_paths(cache: Path, name: str, key: str) -> tuple[Path, Path]:
    folder = cache / "postcode-layers"
    return folder / f"{name}-{key[:24]}.parquet", folder / f"{name}-{key[:24]}-pairs.parquet"


def _read_cache(cache: Path, name: str, key: str, tolerance: float) -> PolygonLayer | None:
    layer_path, pairs_path = _cache_paths(cache, name, key)
    if not (layer_path.is_file() and pairs_path.is_file()):
        return None
    import geopandas as gpd

    try:
        frame = gpd.read_parquet(layer_path)
        pairs = pd.read_parquet(pairs_path)
    except Exception:  # a damaged cache entry is recomputed, never fatal
        return None
    if list(pairs.columns) != ["a", "b", "shared_m"] or frame.crs is None or "lon" not in frame.columns:
        return None
    return PolygonLayer(name=name, frame=frame, pairs=pairs, tolerance=tolerance, source_key=key)


def _write_cache(cache: Path, layer: PolygonLayer) -> None:
    layer_path, pairs_path = _cache_paths(cache, layer.name, layer.source_key)
    try:
        layer_path.parent.mkdir(parents=True, exist_ok=True)
        for target, write in (
            (pairs_path, lambda p: layer.pairs.to_parquet(p, index=False)),
            (layer_path, lambda p: layer.frame.to_parquet(p)),
        ):
            temporary = target.with_name(f".{target.name}.{os.getpid()}.tmp")
            write(temporary)
            os.replace(temporary, target)
    except OSError:
        return
