from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import shapely

from privdash.errors import DataReadError, ParameterError
from privdash.geo import geography
from privdash.geo.geography import (
    COORDINATE_DECIMALS,
    GEOLYTIX_ATTRIBUTION,
    WIKIPEDIA_ATTRIBUTION,
    attribution,
    default_cache_dir,
    district_neighbours,
    load_areas,
    load_districts,
)
from privdash.geo.postcodes import Neighbours, generalize_postcodes, population_from_frame, read_population

EW = ("uk_postcode_population_ew2011_outward", "ew2011_outward_code_population.csv")


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("layers")


@pytest.fixture(scope="module")
def districts(data_dir: Path, cache: Path):
    return load_districts(data_dir / "uk_postcode_polygons_wikipedia" / "geojson", cache_dir=cache)


@pytest.fixture(scope="module")
def areas(data_dir: Path, cache: Path):
    return load_areas(data_dir / "uk_postcode_areas_geolytix" / "postcode_areas.geojson", cache_dir=cache)


@pytest.fixture(scope="module")
def ew(data_dir: Path):
    return read_population(data_dir.joinpath(*EW))


def metric(geometries: np.ndarray) -> np.ndarray:
    import geopandas as gpd

    return gpd.GeoSeries(geometries, crs=geography.WGS84).to_crs(geography.METRIC_CRS).to_numpy()


def holes_and_parts(geometries: np.ndarray) -> tuple[int, int]:
    union = shapely.union_all(metric(geometries))
    parts = shapely.get_parts(union)
    return int(shapely.get_num_interior_rings(parts).sum()), len(parts)


# --- the district layer ------------------------------------------------------------------------------------------


def test_district_layer_contents(districts, ew) -> None:
    frame = districts.frame
    assert len(frame) == 2736 and frame.index.is_unique
    assert frame.crs.to_epsg() == 4326
    assert frame["area"].nunique() == 120
    missing = sorted(set(ew.population("district").index) - set(frame.index))
    assert missing == ["CR9", "M60"]
    assert frame.geometry.geom_type.isin(["Polygon", "MultiPolygon"]).all()
    assert shapely.is_valid(frame.geometry.to_numpy()).all() and not frame.geometry.is_empty.any()
    # representative points lie inside Great Britain
    assert frame["lon"].between(-9, 2).all() and frame["lat"].between(49.8, 61).all()


def test_simplified_coverage_has_no_gaps_or_overlaps(districts, data_dir: Path, cache: Path) -> None:
    geometries = districts.frame.geometry.to_numpy()
    assert shapely.coverage_is_valid(geometries)
    full = load_districts(data_dir / "uk_postcode_polygons_wikipedia" / "geojson", tolerance=0, cache_dir=cache)
    assert (
        shapely.get_num_coordinates(geometries).sum()
        < 0.25 * shapely.get_num_coordinates(full.frame.geometry.to_numpy()).sum()
    )
    # the same holes (lakes, real gaps of the source) and pieces as the unsimplified clean coverage
    assert holes_and_parts(geometries) == holes_and_parts(full.frame.geometry.to_numpy())
    # simplifying each polygon on its own instead tears thousands of gaps between neighbours
    naive = shapely.simplify(metric(full.frame.geometry.to_numpy()), districts.tolerance, preserve_topology=True)
    union = shapely.union_all(naive)
    assert int(shapely.get_num_interior_rings(shapely.get_parts(union)).sum()) > 1000
    # every pair of neighbours still shares a boundary line after simplification
    geometry = districts.frame.geometry
    shared = shapely.intersection(
        geometry.loc[districts.pairs["a"]].to_numpy(), geometry.loc[districts.pairs["b"]].to_numpy()
    )
    assert (shapely.get_dimensions(shared) == 1).all()


def test_adjacency(districts) -> None:
    pairs = districts.pairs
    assert len(pairs) == 7627 and (pairs["a"] < pairs["b"]).all() and not pairs.duplicated(["a", "b"]).any()
    assert (pairs["shared_m"] > 0).all()
    neighbours = districts.neighbours()
    assert {"CA6", "DG16", "TD9"} <= set(neighbours.of("DG14"))
    assert {"NE71", "TD12", "TD14"} <= set(neighbours.of("TD15"))
    assert "SE25" in neighbours.of("CR0") and "CR9" not in set(pairs["a"]) | set(pairs["b"])
    # islands: Arran and Colonsay have no neighbour; the Isles of Scilly touch only each other
    assert neighbours.of("KA27") == () and neighbours.of("PA61") == ()
    assert set(neighbours.of("TR21")) == {"TR22", "TR23", "TR24", "TR25"}
    assert neighbours.centroids is not None and neighbours.centroids.index.equals(districts.frame.index)


def test_geojson_payload(districts) -> None:
    collection = districts.geojson()
    text = json.dumps(collection, separators=(",", ":"))
    assert len(text) < 2_000_000
    assert len(collection["features"]) == 2736
    feature = collection["features"][0]
    assert feature["id"] == feature["properties"]["code"] == "AB10"
    coordinates = np.array(feature["geometry"]["coordinates"][0])
    scaled = coordinates * 10**COORDINATE_DECIMALS
    assert np.allclose(scaled, np.round(scaled), atol=1e-6)
    with_population = districts.geojson(properties=districts.frame[["area"]].rename(columns={"area": "postcode_area"}))
    assert with_population["features"][0]["properties"] == {"code": "AB10", "postcode_area": "AB"}


def test_dissolve_to_areas_and_published_units(districts, ew) -> None:
    mapping = districts.frame["area"]
    dissolved = districts.dissolve(mapping)
    assert len(dissolved) == 120 and dissolved["members"].sum() == 2736
    assert shapely.coverage_is_valid(dissolved.geometry.to_numpy())
    al = districts.frame.loc[districts.frame["area"] == "AL"]
    assert metric(dissolved.geometry.loc[["AL"]].to_numpy())[0].area == pytest.approx(
        sum(shapely.area(metric(al.geometry.to_numpy()))), rel=1e-9
    )
    area_strategy = generalize_postcodes(ew, strategy="area")
    collection = districts.units_geojson(area_strategy)
    by_code = {f["id"]: f["properties"] for f in collection["features"]}
    assert len(by_code) == 106  # Scottish-only areas are not in the England and Wales mapping
    assert by_code["DG"] == {"code": "DG", "population": 65, "below": True}
    assert by_code["AL"]["below"] is False and by_code["AL"]["population"] == 249_911


def test_units_without_polygon(districts, ew) -> None:
    outward = generalize_postcodes(ew, strategy="outward")
    assert districts.without_polygon(outward) == ("CR9", "M60")
    dissolved = districts.dissolve(outward)
    assert len(dissolved) == 2297 - 2 and "CR9" not in dissolved.index
    # a single-member unit reuses the district's geometry as it is
    assert dissolved.geometry.loc["TD15"].equals(districts.frame.geometry.loc["TD15"])
    zips = population_from_frame(pd.DataFrame({"zcta": ["01001"], "population": [5]}))
    with pytest.raises(ParameterError, match="UK postcodes only"):
        districts.dissolve(generalize_postcodes(zips, strategy="zip3"))


def test_merge_with_polygon_adjacency(districts, ew) -> None:
    result = generalize_postcodes(ew, strategy="merge", neighbours=districts.neighbours())
    assert result.below_threshold.empty and result.total_population == ew.total
    assert len(result.populations) == 1377
    merges = [(m.unit, m.into, m.result, m.reason) for m in result.merges]
    # DG (DG14 + DG16 = 65) touches TD9 (TD: 18,331) and CA5/CA6 (in CA: 144,071): the smaller is TD.
    assert merges[0] == ("DG", "TD", "DG+TD", "adjacent")
    assert ("DG+TD", "CA", "CA+DG+TD", "adjacent") in merges
    assert all(reason == "adjacent" for *_, reason in merges)
    assert result.mapping["CR9"] == result.mapping["CR3"] == "CR+CR3"
    collection = districts.units_geojson(result)
    codes = {f["id"] for f in collection["features"]}
    assert "CA+DG+TD" in codes and len(codes) == 1377
    merged = next(f for f in collection["features"] if f["id"] == "CA+DG+TD")
    assert merged["properties"]["population"] == result.populations["CA+DG+TD"]
    assert len(json.dumps(collection, separators=(",", ":"))) < 2_000_000


# --- the area layer ----------------------------------------------------------------------------------------------


def test_area_layer(areas, districts) -> None:
    assert len(areas.frame) == 120 and set(areas.frame.index) == set(districts.frame["area"])
    assert shapely.is_valid(areas.frame.geometry.to_numpy()).all()
    assert shapely.coverage_is_valid(areas.frame.geometry.to_numpy())
    neighbours = areas.neighbours()
    assert {"DG", "NE", "EH", "CA"} <= set(neighbours.of("TD"))
    assert areas.attribution == GEOLYTIX_ATTRIBUTION
    assert len(json.dumps(areas.geojson(), separators=(",", ":"))) < 1_500_000


# --- caching -----------------------------------------------------------------------------------------------------


def small_layer(folder: Path) -> None:
    """Two areas: AA1 | AA2 share an edge; BB1 overlaps AA2 a little, BB2 touches AA1 at one corner only; AA3 is
    a bow-tie (invalid) and a ring is left unclosed."""
    folder.mkdir(parents=True, exist_ok=True)

    def feature(name: str, rings: list[list[list[float]]], kind: str = "Polygon") -> dict:
        return {"type": "Feature", "properties": {"name": name}, "geometry": {"type": kind, "coordinates": rings}}

    aa = [
        feature("AA1", [[[0, 52], [0.1, 52], [0.1, 52.1], [0, 52.1], [0, 52]]]),
        feature("AA2", [[[0.1, 52], [0.2, 52], [0.2, 52.1], [0.1, 52.1]]]),  # not closed
        feature("AA3", [[[0.3, 52], [0.4, 52.1], [0.4, 52], [0.3, 52.1], [0.3, 52]]]),  # bow-tie
    ]
    bb = [
        feature("BB1", [[[0.195, 52.05], [0.3, 52.05], [0.3, 52.2], [0.195, 52.2], [0.195, 52.05]]]),
        feature("BB2", [[[-0.1, 51.9], [0, 51.9], [0, 52], [-0.1, 52], [-0.1, 51.9]]]),
    ]
    for name, features in (("AA", aa), ("BB", bb)):
        (folder / f"{name}.geojson").write_text(json.dumps({"type": "FeatureCollection", "features": features}))


def test_small_layer_repair_and_adjacency(tmp_path: Path) -> None:
    small_layer(tmp_path / "geojson")
    layer = load_districts(tmp_path / "geojson", tolerance=0, cache_dir=tmp_path / "cache")
    assert layer.frame.index.tolist() == ["AA1", "AA2", "AA3", "BB1", "BB2"]
    assert shapely.is_valid(layer.frame.geometry.to_numpy()).all()
    assert shapely.coverage_is_valid(layer.frame.geometry.to_numpy())
    assert layer.frame.geometry.loc["AA3"].geom_type == "MultiPolygon"  # the bow-tie repaired into two triangles
    pairs = {(a, b) for a, b in zip(layer.pairs["a"], layer.pairs["b"], strict=True)}
    # AA1-AA2 share an edge; AA2-BB1 overlapped and now share one; BB2 touches AA1 at a corner only: no pair
    assert ("AA1", "AA2") in pairs and ("AA2", "BB1") in pairs
    assert not any("BB2" in pair for pair in pairs)
    assert layer.pairs.set_index(["a", "b"]).loc[("AA1", "AA2"), "shared_m"] == pytest.approx(11_120, rel=0.01)


def test_disk_cache_is_keyed_by_source_content(tmp_path: Path) -> None:
    folder, cache = tmp_path / "geojson", tmp_path / "cache"
    small_layer(folder)
    first = load_districts(folder, cache_dir=cache)
    files = sorted((cache / "postcode-layers").glob("*.parquet"))
    assert len(files) == 2
    again = load_districts(folder, cache_dir=cache)
    assert again is not first and again.source_key == first.source_key
    assert again.frame.geom_equals(first.frame.geometry).all() and again.pairs.equals(first.pairs)
    # a damaged cache entry is recomputed
    files[0].write_bytes(b"not parquet")
    assert load_districts(folder, cache_dir=cache).pairs.equals(first.pairs)
    # changed source content -> another key
    shutil.copy(folder / "BB.geojson", tmp_path / "BB.bak")
    text = (folder / "BB.geojson").read_text().replace("52.2", "52.3")
    (folder / "BB.geojson").write_text(text)
    changed = load_districts(folder, cache_dir=cache)
    assert changed.source_key != first.source_key
    assert load_districts(folder, cache_dir=cache).source_key == changed.source_key  # read back from the disk cache
    uncached = load_districts(folder, cache_dir=tmp_path / "elsewhere", use_cache=False)
    assert not (tmp_path / "elsewhere").exists() and uncached.source_key == changed.source_key


def test_unwritable_cache_is_skipped(tmp_path: Path) -> None:
    folder = tmp_path / "geojson"
    small_layer(folder)
    blocker = tmp_path / "file"
    blocker.write_text("a file where the cache folder should be")
    layer = load_districts(folder, cache_dir=blocker, use_cache=True)
    assert len(layer.frame) == 5


def test_loader_errors(tmp_path: Path) -> None:
    with pytest.raises(DataReadError, match="not found"):
        load_districts(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataReadError, match=r"No \.geojson"):
        load_districts(tmp_path / "empty")
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "AA.geojson").write_text("{not json")
    with pytest.raises(DataReadError, match="Cannot read"):
        load_districts(bad, use_cache=False)
    (bad / "AA.geojson").write_text(json.dumps({"type": "FeatureCollection", "features": [{"properties": {}}]}))
    with pytest.raises(DataReadError, match="no 'name'"):
        load_districts(bad, use_cache=False)
    with pytest.raises(DataReadError, match="not found"):
        load_areas(tmp_path / "nope.geojson")
    with pytest.raises(ParameterError, match="tolerance"):
        load_districts(bad, tolerance=-1, use_cache=False)


def test_district_neighbours_shortcut(data_dir: Path, cache: Path, districts) -> None:
    neighbours = district_neighbours(data_dir / "uk_postcode_polygons_wikipedia" / "geojson", cache_dir=cache)
    assert isinstance(neighbours, Neighbours) and neighbours.pairs.equals(districts.pairs[["a", "b"]])


# --- attribution and settings ------------------------------------------------------------------------------------


def test_attribution_matches_source_files(data_dir: Path) -> None:
    wikipedia = (data_dir / "uk_postcode_polygons_wikipedia" / "SOURCE.md").read_text()
    geolytix = (data_dir / "uk_postcode_areas_geolytix" / "SOURCE.md").read_text()
    ons = (data_dir / "uk_postcode_population_ew2011_outward" / "SOURCE.md").read_text()
    assert "© Wikipedia contributors" in wikipedia and "CC BY-SA 3.0" in wikipedia
    assert "Wikipedia contributors" in WIKIPEDIA_ATTRIBUTION and "CC BY-SA 3.0" in WIKIPEDIA_ATTRIBUTION
    for sentence in GEOLYTIX_ATTRIBUTION.split("; "):
        assert sentence in geolytix
    assert "Office for National Statistics licensed under the Open Government Licence v.3.0" in ons
    assert ons.count("Open Government Licence") and "Open Government Licence v.3.0" in attribution("outward")
    assert attribution("districts") == attribution("units") == WIKIPEDIA_ATTRIBUTION
    assert attribution("areas") == GEOLYTIX_ATTRIBUTION
    assert "US Census Bureau" in attribution("us-zcta") and "doogal" in attribution("doogal")
    with pytest.raises(ParameterError, match="No attribution"):
        attribution("roads")


def test_default_cache_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # The settings map PRIVDASH_CACHE_DIR and XDG_CACHE_HOME to a folder; the core never reads them.
    monkeypatch.setenv("PRIVDASH_CACHE_DIR", str(tmp_path / "c"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "x"))
    assert default_cache_dir() == Path.home() / ".cache" / "privdash"
