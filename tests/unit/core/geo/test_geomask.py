from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import shapely
from pyproj import Geod
from scipy import stats

from privdash.data.contract import StatisticalType, infer_statistical_type
from privdash.data.tables import read_table
from privdash.errors import ColumnError, ParameterError
from privdash.geo.geography import PolygonLayer, load_areas
from privdash.geo.geomask import (
    EARTH_RADIUS,
    coordinate_perturbation,
    donut_masking,
    great_circle_distance,
    masking_points,
    spatial_k_anonymity,
)
from privdash.transform.steps import Recipe, Step, apply_recipe, apply_step

GEOD = Geod(ellps="WGS84")


@pytest.fixture(scope="module")
def districts(data_dir: Path) -> pd.DataFrame:
    """Real points: the centroids of the GB postcode districts (doogal), with a population."""
    frame = pd.read_csv(data_dir / "uk_postcode_districts_doogal" / "postcode_districts.csv")
    return frame.loc[frame["Population"].notna(), ["Postcode", "Latitude", "Longitude"]].reset_index(drop=True)


@pytest.fixture(scope="module")
def areas(data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> PolygonLayer:
    cache = tmp_path_factory.mktemp("geomask-cache")
    return load_areas(data_dir / "uk_postcode_areas_geolytix" / "postcode_areas.geojson", cache_dir=cache)


def cloud(n: int, seed: int = 0) -> pd.DataFrame:
    """``n`` points scattered over about 20 km around Leeds."""
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {"lat": 53.8 + rng.normal(0, 0.08, n), "lon": -1.55 + rng.normal(0, 0.12, n), "id": np.arange(n)}
    )


def geodesic(original: pd.DataFrame, masked: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Azimuth (degrees) and distance (metres) on the WGS84 ellipsoid, computed by PROJ, independent of the module."""
    azimuth, _, distance = GEOD.inv(
        original["lon"].to_numpy(), original["lat"].to_numpy(), masked["lon"].to_numpy(), masked["lat"].to_numpy()
    )
    return np.asarray(azimuth), np.asarray(distance)


def test_donut_displacement_is_within_bounds_and_area_uniform() -> None:
    data = cloud(4000)
    low, high = 200.0, 1500.0
    result = donut_masking(data, latitude="lat", longitude="lon", min_distance=low, max_distance=high, seed=7)
    moved = result.data
    distance = great_circle_distance(data["lat"], data["lon"], moved["lat"], moved["lon"])
    assert distance.min() >= low * (1 - 1e-9)
    assert distance.max() <= high * (1 + 1e-9)
    # The annulus area law: P(D <= d) = (d^2 - r^2) / (R^2 - r^2).
    cdf = lambda d: (np.asarray(d) ** 2 - low**2) / (high**2 - low**2)  # noqa: E731
    assert stats.kstest(distance, cdf).pvalue > 0.01
    # A uniform law on distance (not area) is rejected by the same test: the test has power.
    assert stats.kstest(distance, stats.uniform(low, high - low).cdf).pvalue < 1e-6
    # The sphere agrees with the WGS84 ellipsoid to within the documented 0.5 %.
    azimuth, ellipsoid = geodesic(data, moved)
    assert np.all(np.abs(ellipsoid / distance - 1) < 0.005)
    # Direction uniform on the circle.
    assert stats.kstest(np.mod(azimuth, 360.0), stats.uniform(0, 360).cdf).pvalue > 0.01
    assert moved["id"].equals(data["id"])
    summary = result.summary
    assert summary["displacement_m"]["min"] >= low - 0.01
    assert summary["displacement_m"]["max"] <= high + 0.01
    assert summary["masked"] == 4000


@pytest.mark.parametrize(
    ("distribution", "law"),
    [("gaussian", stats.halfnorm(scale=300.0)), ("uniform", stats.uniform(0, 300.0))],
)
def test_perturbation_distance_law(distribution: str, law: stats.rv_continuous) -> None:
    data = cloud(3000, seed=1)
    result = coordinate_perturbation(
        data, latitude="lat", longitude="lon", scale=300.0, distribution=distribution, seed=11
    )
    distance = great_circle_distance(data["lat"], data["lon"], result.data["lat"], result.data["lon"])
    assert stats.kstest(distance, law.cdf).pvalue > 0.01
    azimuth, _ = geodesic(data, result.data)
    assert stats.kstest(np.mod(azimuth, 360.0), stats.uniform(0, 360).cdf).pvalue > 0.01


def test_seed_is_recorded_and_reproduces_the_mask() -> None:
    data = cloud(500)
    first = donut_masking(data, latitude="lat", longitude="lon", min_distance=50, max_distance=400, seed=3)
    again = donut_masking(data, latitude="lat", longitude="lon", min_distance=50, max_distance=400, seed=3)
    other = donut_masking(data, latitude="lat", longitude="lon", min_distance=50, max_distance=400, seed=4)
    pd.testing.assert_frame_equal(first.data, again.data)
    assert not np.allclose(first.data["lat"], other.data["lat"])
    # Without a seed one is drawn and recorded: the recorded step (via its JSON recipe) reproduces the result.
    fresh = coordinate_perturbation(data, latitude="lat", longitude="lon", scale=100.0)
    seed = fresh.step.params["seed"]
    assert isinstance(seed, int) and seed >= 0
    recipe = Recipe.from_dict(Recipe((fresh.step,)).to_dict())
    replayed, results = apply_recipe(data, recipe)
    pd.testing.assert_frame_equal(replayed, fresh.data)
    assert results[0].step.params["seed"] == seed
    assert not data["lat"].equals(fresh.data["lat"])  # the input is left untouched and the output differs


def brute_force_k(original: pd.DataFrame, masked: pd.DataFrame) -> np.ndarray:
    """O(n^2) haversine count of originals at least as close to each masked point as its own original."""
    lat1, lon1 = np.radians(masked["lat"].to_numpy())[:, None], np.radians(masked["lon"].to_numpy())[:, None]
    lat2, lon2 = np.radians(original["lat"].to_numpy())[None, :], np.radians(original["lon"].to_numpy())[None, :]
    h = np.sin((lat2 - lat1) / 2) ** 2 + np.cos(lat1) * np.cos(lat2) * np.sin((lon2 - lon1) / 2) ** 2
    matrix = 2 * EARTH_RADIUS * np.arcsin(np.sqrt(h))
    own = np.diag(matrix)
    return (matrix <= own[:, None] * (1 + 1e-7)).sum(axis=1)


def test_spatial_k_matches_a_brute_force_count() -> None:
    data = cloud(400, seed=5)
    # Some co-located households: ties count as candidates.
    data.loc[1:5, ["lat", "lon"]] = data.loc[0, ["lat", "lon"]].to_numpy()
    result = donut_masking(data, latitude="lat", longitude="lon", min_distance=300, max_distance=3000, seed=2)
    measured = spatial_k_anonymity(data["lat"], data["lon"], result.data["lat"], result.data["lon"], target=5)
    expected = brute_force_k(data, result.data)
    np.testing.assert_array_equal(measured.k, expected)
    assert expected.max() > 5  # the sample exercises k > 1
    summary = result.summary["spatial_k"]
    assert summary["min"] == expected.min()
    assert summary["median"] == pytest.approx(np.median(expected))
    assert summary["below_target"] == int((expected < 5).sum())
    assert summary["share_below"] == pytest.approx((expected < 5).mean(), abs=1e-6)


def test_spatial_k_of_an_unmoved_point_is_one_and_of_a_far_point_counts_everyone() -> None:
    lat = np.array([50.0, 50.001, 50.002, 50.003])
    lon = np.zeros(4)
    k = spatial_k_anonymity(lat, lon, lat, lon).k
    np.testing.assert_array_equal(k, [1, 1, 1, 1])
    masked_lat = np.array([50.0045, 50.001, 50.002, 50.003])
    assert spatial_k_anonymity(lat, lon, masked_lat, lon).k[0] == 4


def test_masking_within_postcode_areas_keeps_points_in_their_area(districts: pd.DataFrame, areas: PolygonLayer) -> None:
    data = districts.rename(columns={"Latitude": "lat", "Longitude": "lon"})
    geometries = areas.frame.geometry.to_numpy()
    tree = shapely.STRtree(geometries)

    def area_of(frame: pd.DataFrame) -> np.ndarray:
        points = shapely.points(frame["lon"].to_numpy(), frame["lat"].to_numpy())
        where, polygon = tree.query(points, predicate="within")
        out = np.full(len(frame), -1)
        out[where] = polygon
        return out

    before = area_of(data)
    free = donut_masking(data, latitude="lat", longitude="lon", min_distance=2000, max_distance=8000, seed=1)
    kept = donut_masking(
        data, latitude="lat", longitude="lon", min_distance=2000, max_distance=8000, seed=1, within="area",
        polygons=areas,
    )  # fmt: skip
    has_area = before >= 0
    assert (area_of(free.data)[has_area] != before[has_area]).sum() > 50  # without the constraint many leave
    after = area_of(kept.data)
    left = int((after[has_area] != before[has_area]).sum())
    assert left == kept.summary["outside_polygon"]
    assert left <= 0.01 * has_area.sum()
    assert kept.summary["without_polygon"] == int((~has_area).sum())
    assert kept.summary["redraw_rounds"] >= 1
    assert kept.summary["fallback_min_distance"] >= 0
    distance = great_circle_distance(data["lat"], data["lon"], kept.data["lat"], kept.data["lon"])
    assert distance.min() >= 2000 * (1 - 1e-9) and distance.max() <= 8000 * (1 + 1e-9)


def test_points_that_cannot_stay_inside_keep_their_last_draw(areas: PolygonLayer) -> None:
    # A point on the Isles of Scilly (TR area) moved 30-40 km cannot stay on land inside TR in most directions.
    data = pd.DataFrame({"lat": [49.915] * 20, "lon": [-6.315] * 20})
    result = donut_masking(
        data, latitude="lat", longitude="lon", min_distance=30_000, max_distance=40_000, seed=0, within="area",
        polygons=areas, max_rounds=2,
    )  # fmt: skip
    assert result.summary["redraw_rounds"] == 2
    assert result.summary["outside_polygon"] > 0
    # Isolated points fall back to the minimum distance when some direction at that distance stays inside.
    assert result.summary["fallback_min_distance"] + result.summary["outside_polygon"] <= 20
    distance = great_circle_distance(data["lat"], data["lon"], result.data["lat"], result.data["lon"])
    assert distance.min() >= 30_000 * (1 - 1e-9) and distance.max() <= 40_000 * (1 + 1e-9)


def test_recipe_step_with_polygons_from_the_data_folder(data_dir: Path, districts: pd.DataFrame) -> None:
    data = districts.head(300)
    step = Step(
        "coordinate_perturbation",
        {"latitude": "Latitude", "longitude": "Longitude", "scale": 500, "seed": 9, "within": "area",
         "data_dir": str(data_dir)},
    )  # fmt: skip
    result = apply_step(data, step)
    assert result.summary["within"] == "area"
    assert result.data["Postcode"].equals(data["Postcode"])
    assert result.step.params["data_dir"] == str(data_dir)
    with pytest.raises(ParameterError, match="cannot set 'polygons'"):
        apply_step(data, Step("coordinate_perturbation", {**step.params, "polygons": "x"}))


def test_missing_coordinates_stay_missing() -> None:
    data = cloud(50)
    data.loc[[3, 7], ["lat", "lon"]] = np.nan
    result = donut_masking(data, latitude="lat", longitude="lon", min_distance=10, max_distance=100, seed=1)
    assert result.data.loc[[3, 7], ["lat", "lon"]].isna().all().all()
    assert result.data["lat"].notna().sum() == 48
    assert result.summary["missing"] == 2 and result.summary["masked"] == 48
    points = masking_points(data, result.data, latitude="lat", longitude="lon")
    assert len(points) == 48 and 3 not in points.index
    np.testing.assert_allclose(
        points["displacement_m"],
        great_circle_distance(points["lat"], points["lon"], points["masked_lat"], points["masked_lon"]),
    )
    assert (points["spatial_k"] >= 1).all()


@pytest.mark.parametrize(
    ("column", "values", "message"),
    [
        ("lat", [10.0, 91.0, 0.0], r"outside \[-90, 90\]"),
        ("lon", [10.0, -180.5, 0.0], r"outside \[-180, 180\]"),
        ("lat", ["52.1", "north", "0"], "non-numeric"),
        ("lat", [True, False, True], "true/false"),
        ("lat", [1.0, np.nan, 2.0], "only one of"),
    ],
)
def test_bad_coordinates_are_refused(column: str, values: list[object], message: str) -> None:
    data = pd.DataFrame({"lat": [51.0, 52.0, 53.0], "lon": [0.0, 1.0, 2.0]})
    data[column] = pd.Series(values, dtype=object if isinstance(values[1], str) else None)
    with pytest.raises(ColumnError, match=message):
        donut_masking(data, latitude="lat", longitude="lon", min_distance=10, max_distance=100, seed=1)


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"min_distance": 100, "max_distance": 100}, "must be smaller than"),
        ({"min_distance": 200, "max_distance": 100}, "must be smaller than"),
        ({"min_distance": -1, "max_distance": 100}, ">= 0"),
        ({"min_distance": 0, "max_distance": "far"}, "number of metres"),
        ({"min_distance": 0, "max_distance": 2e6}, "at most"),
        ({"min_distance": 0, "max_distance": 10, "seed": -3}, "seed"),
        ({"min_distance": 0, "max_distance": 10, "within": "county"}, "within"),
        ({"min_distance": 0, "max_distance": 10, "max_rounds": 1.5}, "max_rounds"),
        ({"min_distance": 0, "max_distance": 10, "k_target": 0}, "k_target"),
    ],
)
def test_bad_parameters_are_refused(params: dict[str, object], message: str) -> None:
    with pytest.raises(ParameterError, match=message):
        donut_masking(cloud(5), latitude="lat", longitude="lon", **params)  # type: ignore[arg-type]


def test_bad_perturbation_parameters_and_columns() -> None:
    with pytest.raises(ParameterError, match="distribution"):
        coordinate_perturbation(cloud(5), latitude="lat", longitude="lon", scale=10, distribution="cauchy")
    with pytest.raises(ParameterError, match="> 0"):
        coordinate_perturbation(cloud(5), latitude="lat", longitude="lon", scale=0)
    with pytest.raises(ColumnError, match="did you mean 'lat'"):
        coordinate_perturbation(cloud(5), latitude="lats", longitude="lon", scale=10)
    with pytest.raises(ParameterError, match="PolygonLayer"):
        coordinate_perturbation(cloud(5), latitude="lat", longitude="lon", scale=10, within="area", polygons="areas")
    with pytest.raises(ParameterError, match="same rows"):
        masking_points(cloud(5), cloud(4), latitude="lat", longitude="lon")


def test_empty_table() -> None:
    empty = cloud(0)
    result = donut_masking(empty, latitude="lat", longitude="lon", min_distance=1, max_distance=2, seed=1)
    assert len(result.data) == 0
    assert result.summary["spatial_k"]["min"] is None


@pytest.mark.parametrize(
    ("name", "values", "expected"),
    [
        ("lat", [51.5, -33.9], StatisticalType.COORDINATE),
        ("Longitude", [-0.1, 151.2], StatisticalType.COORDINATE),
        ("home_LNG", [-0.1, 179.0], StatisticalType.COORDINATE),
        ("lat", [51.5, 95.0], StatisticalType.NUMERICAL),  # out of range: not a latitude
        ("long_term", [1.0, 2.0], StatisticalType.NUMERICAL),
        ("latency", [1.0, 2.0], StatisticalType.NUMERICAL),
        ("lat", ["a", "b"], StatisticalType.NOMINAL),
    ],
)
def test_coordinate_type_is_inferred_from_name_and_range(
    name: str, values: list[object], expected: StatisticalType
) -> None:
    assert infer_statistical_type(pd.Series(values, name=name)) == expected


def test_only_coordinate_columns_of_the_shared_data_change_type(data_dir: Path) -> None:
    # Every main table of the shared data: COORDINATE is inferred for the doogal Latitude/Longitude only, and those
    # columns were NUMERICAL before (a numeric dtype), so no other column's type changed.
    tables = [p for p in sorted(data_dir.glob("*/*.csv")) if "hierarch" not in p.name and "config" not in p.name]
    assert len(tables) >= 10
    found = {}
    for path in tables:
        frame = read_table(path)
        for name in frame.columns:
            kind = infer_statistical_type(frame[name])
            if kind == StatisticalType.COORDINATE:
                found[(path.parent.name, name)] = pd.api.types.is_numeric_dtype(frame[name])
    assert found == {
        ("uk_postcode_districts_doogal", "Latitude"): True,
        ("uk_postcode_districts_doogal", "Longitude"): True,
    }


def test_a_sample_of_points_gets_the_spatial_k_it_has_among_all() -> None:
    data = cloud(400)
    data.loc[[5, 9], ["lat", "lon"]] = np.nan
    result = donut_masking(data, latitude="lat", longitude="lon", min_distance=10, max_distance=300, seed=4)
    every = masking_points(data, result.data, latitude="lat", longitude="lon", k_target=3)
    sample = masking_points(data, result.data, latitude="lat", longitude="lon", k_target=3, sample=50)
    assert len(sample) == 50 and sample.index.is_monotonic_increasing
    pd.testing.assert_frame_equal(sample, every.loc[sample.index])
    # The same table gives the same map; a sample larger than the records is all of them.
    again = masking_points(data, result.data, latitude="lat", longitude="lon", k_target=3, sample=50)
    pd.testing.assert_frame_equal(sample, again)
    whole = masking_points(data, result.data, latitude="lat", longitude="lon", k_target=3, sample=1_000)
    pd.testing.assert_frame_equal(whole, every)
    with pytest.raises(ParameterError, match="sample"):
        masking_points(data, result.data, latitude="lat", longitude="lon", sample=0)
