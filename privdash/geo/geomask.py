"""Geomasking of point coordinates (home locations) and the spatial k-anonymity of the masked points.

Every record's point (latitude, longitude in decimal degrees, WGS84) is moved in a random direction by a random
distance; the data keep their rows and other columns, only the two coordinate columns change.

Methods
-------
* **Random perturbation** (``coordinate_perturbation``): direction uniform on [0, 360) degrees; distance either
  ``|N(0, sigma)|`` (``distribution="gaussian"``, half-normal with scale ``scale``) or uniform on
  ``[0, scale]`` (``distribution="uniform"``; uniform in *distance*, so points concentrate near the original).
* **Donut masking** (``donut_masking``; Hampton et al. 2010, Allshouse et al. 2010): distance between
  ``min_distance`` and ``max_distance``, uniform over the *area* of the annulus: ``d = sqrt(u (R^2 - r^2) + r^2)``
  with ``u ~ U(0, 1)``, so the density of ``d`` is ``2 d / (R^2 - r^2)``. The minimum keeps every masked point
  away from its true location; the maximum bounds the loss of spatial accuracy.

Metric
------
Points are moved along great circles of a sphere of radius :data:`EARTH_RADIUS` (the IUGG mean radius): the
displacement measured on that sphere equals the drawn distance to floating-point precision. Against the WGS84
ellipsoid, distances on the sphere are off by at most about 0.5 % (e.g. 5 m on a 1 km displacement), less at
mid-latitudes. Spatial k uses the same sphere, so it is consistent with the displacements.

Constraint to a polygon
-----------------------
With ``within="area"`` (GeoLytix postcode areas) or ``within="district"`` (postcode districts), a point whose
original location lies in a polygon of the layer must be published inside the same polygon. Points that left their
polygon are redrawn (direction and distance, from the same law), at most ``max_rounds`` times. For donut masking, a
point still outside then tries 64 random directions at exactly ``min_distance`` (the ring closest to its original,
most likely to lie inside) and takes the first inside (counted in ``fallback_min_distance``). A point still outside
after that keeps its last draw (its displacement stays within the method's bounds) and is counted in
``outside_polygon``: the constraint is best effort, the distance bounds are guaranteed. Points whose original
location is in no polygon (outside Great Britain, on a sliver lost to the 500 m simplification of the layer) are
masked without the constraint and counted in ``without_polygon``.
Redrawing makes the distance law conditional on staying inside; near coasts and borders directions pointing inwards
become more likely.

Spatial k-anonymity (Allshouse et al. 2010)
-------------------------------------------
For a masked point ``m_i`` with true location ``o_i`` at distance ``d_i``, ``k_i`` is the number of original points
``o_j`` (its own included) with ``dist(m_i, o_j) <= d_i``: an attacker who reverses the mask by taking the nearest
original location has ``k_i`` candidates at least as close as the truth. ``k_i = 1`` means the true location is
the nearest one; co-located originals (ties) all count. Computed with a k-d tree on unit-sphere Cartesian coordinates
(chord length is monotone in great-circle distance, so ball queries are exact on the sphere).

Missing values: a row with both coordinates missing is published missing and left out of spatial k (counted in
``missing``); a row with only one of them missing is an error, as are non-numeric values and values outside
[-90, 90] (latitude) or [-180, 180] (longitude).

The recipe records the ``seed`` so that the step can be re-applied identically. **Whoever holds the recipe and the
masked data can undo the masking** (the seed reproduces every offset): keep such a recipe as confidential as the
original data.

References
----------
Hampton K. H. et al. (2010) "Mapping health data: improved privacy protection with donut method geomasking",
American Journal of Epidemiology 172(9):1062-1069.
Allshouse W. B. et al. (2010) "Geomasking sensitive health data and privacy protection: an evaluation using an E911
database", Geocarto International 25(6):443-452.
Zandbergen P. A. (2014) "Ensuring confidentiality of geocoded health data: assessing geographic masking strategies
for individual-level data", Advances in Medicine 2014:567049.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import shapely
from scipy.spatial import cKDTree

from privdash._deprecation import deprecated_alias
from privdash.errors import ColumnError, ParameterError, check_columns, check_positive_int, format_values
from privdash.transform.steps import Step, TransformResult, register_step

__all__ = [
    "EARTH_RADIUS",
    "MAX_DISTANCE",
    "SpatialK",
    "coordinate_perturbation",
    "donut_masking",
    "great_circle_distance",
    "masking_points",
    "spatial_k_anonymity",
]

EARTH_RADIUS = 6_371_008.8
"""Mean Earth radius in metres (IUGG), the sphere on which points are moved and distances measured."""
MAX_DISTANCE = 1_000_000.0
"""The largest displacement accepted, in metres (geomasking moves points locally; 1,000 km is far beyond that)."""
DEFAULT_K_TARGET = 5
DEFAULT_MAX_ROUNDS = 20
_MAX_ROUNDS_LIMIT = 1000
_LAYERS = ("area", "district")
# Relative slack on the ball radius so that a point's own original, at exactly its distance, is always counted.
_TIE_SLACK = 1e-9
_FALLBACK_BEARINGS = 64


@dataclass(frozen=True)
class SpatialK:
    """Spatial k-anonymity of masked points (see the module docstring).

    Attributes
    ----------
    k
        ``k_i`` per point (int64; -1 for rows left out because their coordinates are missing).
    displacement
        Distance in metres between each masked point and its original (NaN for missing rows).
    target
        The k the summary compares with.
    """

    k: np.ndarray
    displacement: np.ndarray
    target: int

    @property
    def _present(self) -> np.ndarray:
        return self.k >= 1

    def summary(self) -> dict[str, Any]:
        """Spatial k (min, median, share below the target) and displacement in metres (min, median, max)."""
        k = self.k[self._present]
        distance = self.displacement[self._present]
        if not len(k):
            return {
                "spatial_k": {
                    "min": None,
                    "median": None,
                    "target": self.target,
                    "below_target": 0,
                    "share_below": 0.0,
                },
                "displacement_m": {"min": None, "median": None, "max": None},
            }
        below = int((k < self.target).sum())
        return {
            "spatial_k": {
                "min": int(k.min()),
                "median": float(np.median(k)),
                "target": self.target,
                "below_target": below,
                "share_below": round(below / len(k), 6),
            },
            "displacement_m": {
                "min": round(float(distance.min()), 2),
                "median": round(float(np.median(distance)), 2),
                "max": round(float(distance.max()), 2),
            },
        }


# --------------------------------------------------------------------------------------------------------------
# Geometry on the sphere


def _unit_vectors(lat: np.ndarray, lon: np.ndarray) -> np.ndarray:
    phi, lam = np.radians(lat), np.radians(lon)
    cos_phi = np.cos(phi)
    return np.column_stack((cos_phi * np.cos(lam), cos_phi * np.sin(lam), np.sin(phi)))


def _chord_to_metres(chord: np.ndarray) -> np.ndarray:
    return 2.0 * EARTH_RADIUS * np.arcsin(np.clip(chord / 2.0, 0.0, 1.0))


def great_circle_distance(lat1: Any, lon1: Any, lat2: Any, lon2: Any) -> np.ndarray:
    """Great-circle distance in metres on the sphere of radius :data:`EARTH_RADIUS` (vectorized)."""
    a = _unit_vectors(np.asarray(lat1, dtype=float), np.asarray(lon1, dtype=float))
    b = _unit_vectors(np.asarray(lat2, dtype=float), np.asarray(lon2, dtype=float))
    return _chord_to_metres(np.linalg.norm(a - b, axis=1))


def _destination(
    lat: np.ndarray, lon: np.ndarray, bearing: np.ndarray, distance: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The point ``distance`` metres from (lat, lon) along the great circle with initial ``bearing`` (radians)."""
    phi, lam = np.radians(lat), np.radians(lon)
    delta = distance / EARTH_RADIUS
    sin_phi2 = np.sin(phi) * np.cos(delta) + np.cos(phi) * np.sin(delta) * np.cos(bearing)
    phi2 = np.arcsin(np.clip(sin_phi2, -1.0, 1.0))
    lam2 = lam + np.arctan2(np.sin(bearing) * np.sin(delta) * np.cos(phi), np.cos(delta) - np.sin(phi) * sin_phi2)
    # Wrap the longitude into [-180, 180).
    lon2 = (np.degrees(lam2) + 180.0) % 360.0 - 180.0
    return np.degrees(phi2), lon2


# --------------------------------------------------------------------------------------------------------------
# Spatial k-anonymity


def spatial_k_anonymity(
    original_lat: Any,
    original_lon: Any,
    masked_lat: Any,
    masked_lon: Any,
    *,
    target: int = DEFAULT_K_TARGET,
) -> SpatialK:
    """Spatial k of every masked point against all original points (Allshouse et al. 2010; module docstring).

    Rows where any of the four values is missing get ``k = -1`` and are left out of the summary and of the set of
    original points.
    """
    target = check_positive_int(target, "k_target")
    arrays = [np.asarray(a, dtype=float) for a in (original_lat, original_lon, masked_lat, masked_lon)]
    if len({a.shape for a in arrays}) != 1 or arrays[0].ndim != 1:
        raise ParameterError("Original and masked coordinates must be four 1-D arrays of the same length.")
    present = np.isfinite(np.column_stack(arrays)).all(axis=1) if len(arrays[0]) else np.zeros(0, dtype=bool)
    k, displacement = _spatial_k_of(arrays, present, np.flatnonzero(present))
    return SpatialK(k=k, displacement=displacement, target=target)


def _spatial_k_of(arrays: list[np.ndarray], present: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Spatial k and displacement (metres) of the masked points at positions ``rows`` (all with four values), each
    against every original point ``present``; ``-1`` and NaN elsewhere. A sample of points gets the k it has
    among all the points, at the cost of its own queries only."""
    n = len(arrays[0])
    k = np.full(n, -1, dtype=np.int64)
    displacement = np.full(n, np.nan)
    if present.any() and len(rows):
        tree = cKDTree(_unit_vectors(arrays[0][present], arrays[1][present]))
        original = _unit_vectors(arrays[0][rows], arrays[1][rows])
        masked = _unit_vectors(arrays[2][rows], arrays[3][rows])
        chord = np.linalg.norm(masked - original, axis=1)
        counts = tree.query_ball_point(masked, chord * (1.0 + _TIE_SLACK) + 1e-15, return_length=True)
        k[rows] = np.maximum(np.asarray(counts, dtype=np.int64), 1)
        displacement[rows] = _chord_to_metres(chord)
    return k, displacement


# --------------------------------------------------------------------------------------------------------------
# Validation


def _coordinates(data: pd.DataFrame, latitude: str, longitude: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Latitude and longitude as float arrays and the mask of rows with both present; raises on bad values."""
    if not isinstance(latitude, str) or not isinstance(longitude, str):
        raise ParameterError("Give the latitude and longitude column names as text.")
    check_columns(data, [latitude, longitude], role="coordinate column")
    values = {}
    for name, low, high in ((latitude, -90.0, 90.0), (longitude, -180.0, 180.0)):
        raw = data[name]
        if pd.api.types.is_bool_dtype(raw):
            raise ColumnError(f"Coordinate column '{name}' holds true/false values, not degrees.")
        numbers = pd.to_numeric(raw, errors="coerce").astype(float)
        bad = raw.notna().to_numpy() & numbers.isna().to_numpy()
        if bad.any():
            raise ColumnError(
                f"Coordinate column '{name}' holds {int(bad.sum()):,} non-numeric value(s): "
                f"{format_values(list(pd.unique(raw[bad].astype(str))))}. Give decimal degrees."
            )
        array = numbers.to_numpy(dtype=float)
        outside = ~np.isnan(array) & ~((array >= low) & (array <= high))
        if outside.any():
            raise ColumnError(
                f"Coordinate column '{name}' has {int(outside.sum()):,} value(s) outside [{low:g}, {high:g}]: "
                f"{format_values(list(pd.unique(array[outside])))}. Are latitude and longitude swapped, or the values "
                "projected (metres) rather than degrees?"
            )
        values[name] = array
    lat, lon = values[latitude], values[longitude]
    lat_missing, lon_missing = np.isnan(lat), np.isnan(lon)
    half = lat_missing != lon_missing
    if half.any():
        rows = np.flatnonzero(half)[:5].tolist()
        raise ColumnError(
            f"{int(half.sum()):,} row(s) have only one of '{latitude}' and '{longitude}' (row positions "
            f"{', '.join(map(str, rows))}{' ...' if half.sum() > 5 else ''}): give both coordinates or neither."
        )
    return lat, lon, ~lat_missing


def _distance(value: object, name: str, *, positive: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value:
        raise ParameterError(f"{name} must be a number of metres, got {value!r}.")
    number = float(value)
    if number < 0 or (positive and number == 0):
        raise ParameterError(f"{name} must be {'> 0' if positive else '>= 0'} metres, got {value!r}.")
    if number > MAX_DISTANCE:
        raise ParameterError(f"{name} must be at most {MAX_DISTANCE:,.0f} metres, got {value!r}.")
    return number


def _seed(seed: object) -> int:
    if seed is None:
        # A fresh seed, recorded in the step so that the recipe reproduces this draw.
        return int(np.random.SeedSequence().entropy % (2**63))  # type: ignore[operator]
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ParameterError(f"seed must be a whole number >= 0, got {seed!r}.")
    return seed


def _within(within: object) -> str | None:
    if within is None:
        return None
    if within not in _LAYERS:
        raise ParameterError(f"within must be one of {', '.join(_LAYERS)} or null, got {within!r}.")
    return str(within)


# --------------------------------------------------------------------------------------------------------------
# Masking


class _Sampler:
    """Draws (bearing, distance) pairs for ``n`` points from a numpy Generator."""

    def __init__(self, rng: np.random.Generator, law: str, a: float, b: float) -> None:
        self.rng, self.law, self.a, self.b = rng, law, a, b

    def __call__(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        bearing = self.rng.uniform(0.0, 2.0 * np.pi, n)
        if self.law == "donut":
            u = self.rng.uniform(0.0, 1.0, n)
            distance = np.sqrt(u * (self.b**2 - self.a**2) + self.a**2)
        elif self.law == "gaussian":
            distance = np.abs(self.rng.normal(0.0, self.a, n))
        else:
            distance = self.rng.uniform(0.0, self.a, n)
        return bearing, distance


def _polygons_of(lat: np.ndarray, lon: np.ndarray, layer: Any) -> tuple[np.ndarray, np.ndarray]:
    """Geometries of the layer (prepared) and the index of the polygon holding each point (-1: none)."""
    geometries = np.asarray(layer.frame.geometry.to_numpy(), dtype=object)
    shapely.prepare(geometries)
    tree = shapely.STRtree(geometries)
    points = shapely.points(lon, lat)
    point_index, polygon_index = tree.query(points, predicate="within")
    holder = np.full(len(lat), -1, dtype=np.int64)
    # A point on a shared border lies in no polygon's interior; ``within`` gives each point at most one polygon
    # except on overlaps, where the first polygon found is kept.
    first = np.unique(point_index, return_index=True)[1]
    holder[point_index[first]] = polygon_index[first]
    return geometries, holder


def _mask(
    data: pd.DataFrame,
    *,
    latitude: str,
    longitude: str,
    sampler_args: tuple[str, float, float],
    params: dict[str, Any],
    within: str | None,
    polygons: Any,
    max_rounds: int,
    k_target: int,
    kind: str,
) -> TransformResult:
    lat, lon, present = _coordinates(data, latitude, longitude)
    seed = params["seed"]
    sample = _Sampler(np.random.default_rng(seed), *sampler_args)
    rows = np.flatnonzero(present)
    lat0, lon0 = lat[rows], lon[rows]
    bearing, distance = sample(len(rows))
    new_lat, new_lon = _destination(lat0, lon0, bearing, distance)
    summary: dict[str, Any] = {"method": kind, "rows": len(data), "masked": len(rows), "missing": len(data) - len(rows)}
    if within is not None:
        geometries, holder = _polygons_of(lat0, lon0, polygons)
        constrained = np.flatnonzero(holder >= 0)
        rounds = 0
        outside = constrained[
            ~shapely.contains_xy(geometries[holder[constrained]], new_lon[constrained], new_lat[constrained])
        ]
        while len(outside) and rounds < max_rounds:
            rounds += 1
            b, d = sample(len(outside))
            new_lat[outside], new_lon[outside] = _destination(lat0[outside], lon0[outside], b, d)
            inside = shapely.contains_xy(geometries[holder[outside]], new_lon[outside], new_lat[outside])
            outside = outside[~inside]
        fallback = 0
        if len(outside) and sample.law == "donut" and sample.a > 0:
            fallback = _fallback_to_minimum(sample, outside, lat0, lon0, new_lat, new_lon, geometries[holder[outside]])
            outside = outside[~shapely.contains_xy(geometries[holder[outside]], new_lon[outside], new_lat[outside])]
        summary.update(
            {
                "within": within,
                "without_polygon": int((holder < 0).sum()),
                "outside_polygon": len(outside),
                "redraw_rounds": rounds,
                "fallback_min_distance": fallback,
            }
        )
    out = data.copy()
    for name, values in ((latitude, new_lat), (longitude, new_lon)):
        column = np.full(len(data), np.nan)
        column[rows] = values
        out[name] = column
    k = spatial_k_anonymity(lat, lon, out[latitude].to_numpy(), out[longitude].to_numpy(), target=k_target)
    summary.update(k.summary())
    return TransformResult(data=out, step=Step(kind, params), summary=summary)


def _fallback_to_minimum(
    sample: _Sampler,
    outside: np.ndarray,
    lat0: np.ndarray,
    lon0: np.ndarray,
    new_lat: np.ndarray,
    new_lon: np.ndarray,
    polygons: np.ndarray,
) -> int:
    """Donut points still outside their polygon after the redraws: try :data:`_FALLBACK_BEARINGS` random bearings
    at exactly the minimum distance (the ring most likely to stay inside) and take the first one inside; points with
    no such bearing keep their last draw. Updates ``new_lat``/``new_lon`` in place; returns how many moved."""
    m, b = len(outside), _FALLBACK_BEARINGS
    bearing = sample.rng.uniform(0.0, 2.0 * np.pi, (m, b))
    lat, lon = _destination(
        np.repeat(lat0[outside], b), np.repeat(lon0[outside], b), bearing.ravel(), np.full(m * b, sample.a)
    )
    inside = shapely.contains_xy(np.repeat(polygons, b), lon, lat).reshape(m, b)
    found = inside.any(axis=1)
    choice = np.argmax(inside, axis=1)  # the first bearing inside (bearings are in random order)
    flat = np.arange(m) * b + choice
    new_lat[outside[found]] = lat.reshape(-1)[flat[found]]
    new_lon[outside[found]] = lon.reshape(-1)[flat[found]]
    return int(found.sum())


def _layer(within: str | None, polygons: Any, data_dir: str | None, cache_dir: str | None) -> Any:
    if within is None:
        return None
    if polygons is not None:
        if not hasattr(polygons, "frame"):
            raise ParameterError("polygons must be a PolygonLayer (load_areas or load_districts).")
        return polygons
    from privdash.geo.geography import area_polygons_path, district_polygons_dir, load_areas, load_districts

    if within == "area":
        return load_areas(area_polygons_path(data_dir), cache_dir=cache_dir)
    return load_districts(district_polygons_dir(data_dir), cache_dir=cache_dir)


def _common_params(
    latitude: str,
    longitude: str,
    seed: object,
    within: object,
    max_rounds: object,
    k_target: object,
    data_dir: str | os.PathLike[str] | None,
) -> dict[str, Any]:
    params: dict[str, Any] = {
        "latitude": latitude,
        "longitude": longitude,
        "seed": _seed(seed),
        "within": _within(within),
        "max_rounds": check_positive_int(max_rounds, "max_rounds", minimum=0),
        "k_target": check_positive_int(k_target, "k_target"),
    }
    if params["max_rounds"] > _MAX_ROUNDS_LIMIT:
        raise ParameterError(f"max_rounds must be at most {_MAX_ROUNDS_LIMIT}, got {max_rounds!r}.")
    if data_dir is not None:
        if not isinstance(data_dir, str | os.PathLike):
            raise ParameterError(f"data_dir must be a folder path, got {data_dir!r}.")
        params["data_dir"] = os.fspath(data_dir)
    return params


def donut_masking(
    data: pd.DataFrame,
    *,
    latitude: str,
    longitude: str,
    min_distance: float,
    max_distance: float,
    seed: int | None = None,
    within: str | None = None,
    max_rounds: int = DEFAULT_MAX_ROUNDS,
    k_target: int = DEFAULT_K_TARGET,
    data_dir: str | os.PathLike[str] | None = None,
    polygons: Any = None,
    cache_dir: str | os.PathLike[str] | None = None,
) -> TransformResult:
    """Donut masking: every point moved ``min_distance`` to ``max_distance`` metres, uniform over the annulus area.

    ``within``: ``"area"`` or ``"district"`` keeps each point in the postcode polygon holding its original (module
    docstring), from the shared data in ``data_dir`` (default :func:`~privdash.geo.postcodes.default_data_dir`)
    or from ``polygons`` (a :class:`~privdash.geo.geography.PolygonLayer`, not recorded). ``seed`` (recorded;
    drawn when None) makes the result reproducible. The summary holds the spatial k and displacement statistics.
    """
    low = _distance(min_distance, "min_distance")
    high = _distance(max_distance, "max_distance", positive=True)
    if low >= high:
        raise ParameterError(f"min_distance ({low:g} m) must be smaller than max_distance ({high:g} m).")
    params = _common_params(latitude, longitude, seed, within, max_rounds, k_target, data_dir)
    params.update({"min_distance": min_distance, "max_distance": max_distance})
    layer = _layer(params["within"], polygons, params.get("data_dir"), _path(cache_dir))
    return _mask(
        data,
        latitude=latitude,
        longitude=longitude,
        sampler_args=("donut", low, high),
        params=params,
        within=params["within"],
        polygons=layer,
        max_rounds=params["max_rounds"],
        k_target=params["k_target"],
        kind="donut_masking",
    )


def coordinate_perturbation(
    data: pd.DataFrame,
    *,
    latitude: str,
    longitude: str,
    scale: float,
    distribution: str = "gaussian",
    seed: int | None = None,
    within: str | None = None,
    max_rounds: int = DEFAULT_MAX_ROUNDS,
    k_target: int = DEFAULT_K_TARGET,
    data_dir: str | os.PathLike[str] | None = None,
    polygons: Any = None,
    cache_dir: str | os.PathLike[str] | None = None,
) -> TransformResult:
    """Random perturbation: uniform direction, distance ``|N(0, scale)|`` (``gaussian``) or ``U(0, scale)``
    (``uniform``) metres. Other parameters as in :func:`donut_masking`."""
    if distribution not in ("gaussian", "uniform"):
        raise ParameterError(f"distribution must be 'gaussian' or 'uniform', got {distribution!r}.")
    size = _distance(scale, "scale", positive=True)
    params = _common_params(latitude, longitude, seed, within, max_rounds, k_target, data_dir)
    params.update({"distribution": distribution, "scale": scale})
    layer = _layer(params["within"], polygons, params.get("data_dir"), _path(cache_dir))
    return _mask(
        data,
        latitude=latitude,
        longitude=longitude,
        sampler_args=(distribution, size, 0.0),
        params=params,
        within=params["within"],
        polygons=layer,
        max_rounds=params["max_rounds"],
        k_target=params["k_target"],
        kind="coordinate_perturbation",
    )


def _path(value: str | os.PathLike[str] | None) -> str | None:
    return os.fspath(value) if value is not None else None


def masking_points(
    original: pd.DataFrame,
    masked: pd.DataFrame,
    *,
    latitude: str,
    longitude: str,
    k_target: int = DEFAULT_K_TARGET,
    sample: int | None = None,
) -> pd.DataFrame:
    """Original and masked points side by side, for a map: columns ``lat``, ``lon``, ``masked_lat``,
    ``masked_lon``, ``displacement_m`` and ``spatial_k`` (one row per record with coordinates, index of
    ``original``). The two tables must have the same rows in the same order (a geomask step keeps every row).

    ``sample``: at most this many records, drawn without replacement by a fixed generator (the same map for the
    same table), each with its spatial k against *all* the original points; only their k is computed, so a map
    of a million records costs the queries of its sample."""
    if sample is not None:
        sample = check_positive_int(sample, "sample")
    if len(original) != len(masked):
        raise ParameterError(
            f"The original ({len(original):,} rows) and masked ({len(masked):,} rows) tables must have the same rows."
        )
    lat, lon, present = _coordinates(original, latitude, longitude)
    masked_lat, masked_lon, masked_present = _coordinates(masked, latitude, longitude)
    if (present != masked_present).any():
        raise ParameterError("The original and masked tables have coordinates missing in different rows.")
    check_positive_int(k_target, "k_target")
    rows = np.flatnonzero(present)
    if sample is not None and len(rows) > sample:
        rows = rows[np.sort(np.random.default_rng(0).choice(len(rows), size=sample, replace=False))]
    k, displacement = _spatial_k_of([lat, lon, masked_lat, masked_lon], present, rows)
    return pd.DataFrame(
        {
            "lat": lat[rows],
            "lon": lon[rows],
            "masked_lat": masked_lat[rows],
            "masked_lon": masked_lon[rows],
            "displacement_m": displacement[rows],
            "spatial_k": k[rows],
        },
        index=original.index[rows],
    )


# --------------------------------------------------------------------------------------------------------------
# Recipe steps


@register_step("donut_masking")
def _donut_step(data: pd.DataFrame, /, **params: Any) -> TransformResult:
    """The ``donut_masking`` recipe step: :func:`donut_masking` with JSON parameters."""
    _refuse_objects(params)
    return donut_masking(data, **params)


@register_step("coordinate_perturbation")
def _perturb_step(data: pd.DataFrame, /, **params: Any) -> TransformResult:
    """The ``coordinate_perturbation`` recipe step: :func:`coordinate_perturbation` with JSON parameters."""
    _refuse_objects(params)
    return coordinate_perturbation(data, **params)


def _refuse_objects(params: Mapping[str, Any]) -> None:
    # A recipe holds JSON values only: polygons and the cache folder are arguments of the Python functions.
    for name in ("polygons", "cache_dir"):
        if name in params:
            raise ParameterError(f"A geomask recipe step cannot set '{name}'; remove it from the step.")


# Old names, kept for one release (a call warns with a DeprecationWarning).
donut_mask = deprecated_alias(donut_masking, "donut_mask")
perturb_coordinates = deprecated_alias(coordinate_perturbation, "perturb_coordinates")
