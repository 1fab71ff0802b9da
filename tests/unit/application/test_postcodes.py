"""The Postcodes page's application logic on the real reference data: settings and links, the reference data in the
worker's cache, traffic lights, the side panel and tables, and the mapping applied to the demo dataset."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from privdash.application.cache import BoundedCache
from privdash.application.postcodes import (
    AMBER,
    DEFAULT_SETTINGS,
    GREEN,
    RED,
    SOURCES,
    GeoSettings,
    GeoStateError,
    PostcodeReference,
    ReferenceDataMissing,
    apply_mapping,
    apply_to_dataset,
    build_view,
    failing_rows,
    postcode_columns,
    same_polygons,
    settings_change,
    settings_from_controls,
    settings_from_state,
    source_failing_rows,
    summarize,
    traffic_lights,
)
from privdash.application.services import Services
from privdash.application.settings import Settings
from privdash.application.state import ViewState
from privdash.data.demo import people_contract, people_table
from privdash.errors import PrivdashError
from privdash.geo import geography
from privdash.geo.postcodes import Strategy, default_data_dir, generalize_postcodes, population_counts
from privdash.measure.diagnose import diagnose


@pytest.fixture
def services(tmp_path: Path, data_dir: Path) -> Services:
    return Services(Settings(store_dir=tmp_path / "store", cache_dir=tmp_path / "cache", data_dir=data_dir))


@pytest.fixture
def reference(data_dir: Path) -> PostcodeReference:
    return PostcodeReference(data_dir, BoundedCache(16))


# --- traffic lights ------------------------------------------------------------------------------------------------


def test_zip3_uses_the_safe_harbor_rule() -> None:
    settings = GeoSettings(source="us", strategy=Strategy.ZIP3, threshold=20_000)
    lights = traffic_lights(np.array([19_999, 20_000, 20_001, 24_999, 25_000]), settings)
    assert lights.tolist() == [RED, RED, AMBER, AMBER, GREEN]
    uk = traffic_lights(np.array([19_999, 20_000]), GeoSettings(threshold=20_000))
    assert uk.tolist() == [RED, AMBER]


def test_map_units_follow_the_core_rule(reference: PostcodeReference) -> None:
    settings = GeoSettings(level="district", threshold=25_000, margin=20)
    view = build_view(reference, settings)
    assert view.shown is not None and view.shown.layer is not None
    populations = view.table.population("district").reindex(view.shown.codes).to_numpy()
    np.testing.assert_array_equal(view.shown.populations, populations)
    np.testing.assert_array_equal(view.shown.status, traffic_lights(populations, settings))
    assert len(view.shown.geometries) == len(view.shown.codes)
    after = build_view(reference, GeoSettings(level="units", strategy=Strategy.AREA))
    units = after.shown
    assert units is not None and units.layer is None  # dissolved polygons, not rows of a layer
    np.testing.assert_array_equal(units.populations, after.result.populations.reindex(units.codes).to_numpy())
    assert len(units.codes) + len(units.missing) == len(after.result.populations)


def test_us_data_has_no_map(reference: PostcodeReference) -> None:
    view = build_view(reference, GeoSettings(source="us", strategy=Strategy.ZIP3))
    assert view.shown is None and not view.has_map and "no polygons" in view.notes[0]
    assert view.attribution.endswith(".")


# --- reference data in the worker's cache -----------------------------------------------------------------------


def test_reference_data_goes_through_the_cache_with_explicit_keys(reference: PostcodeReference) -> None:
    table = reference.population_table("ew")
    assert reference.population_table("ew") is table
    result = reference.generalization(GeoSettings(threshold=30_000))
    assert reference.generalization(GeoSettings(threshold=30_000)) is result
    assert reference.generalization(GeoSettings(threshold=31_000)) is not result
    assert reference.district_layer() is reference.district_layer()
    keys = list(reference.cache._items)
    assert {key[0] for key in keys} == {"postcode-table", "postcode-generalization", "postcode-districts"}
    table_key = next(key for key in keys if key[0] == "postcode-table")
    path = SOURCES["ew"].path(reference.folder)
    assert table_key == ("postcode-table", str(path.resolve()), path.stat().st_size, path.stat().st_mtime_ns)
    assert all(id(table) not in key and id(result) not in key for key in keys)
    reference.forget_generalizations()
    assert reference.generalization(GeoSettings(threshold=30_000)) is not result
    assert reference.population_table("ew") is table


def test_a_newer_population_file_is_read_again(tmp_path: Path, data_dir: Path) -> None:
    source = SOURCES["ew"]
    (tmp_path / source.folder).mkdir()
    copy = shutil.copy(source.path(data_dir), source.path(tmp_path))
    reference = PostcodeReference(tmp_path, BoundedCache(8))
    first = reference.population_table("ew")
    stat = os.stat(copy)
    os.utime(copy, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    assert reference.population_table("ew") is not first


def test_missing_reference_data_says_where_to_put_it(tmp_path: Path) -> None:
    reference = PostcodeReference(tmp_path / "none", BoundedCache(4))
    with pytest.raises(ReferenceDataMissing, match="PRIVDASH_DATA_DIR"):
        reference.population_table("ew")
    with pytest.raises(ReferenceDataMissing, match="district polygons were not found"):
        reference.district_layer()
    with pytest.raises(ReferenceDataMissing, match="area polygons were not found"):
        reference.area_layer()
    with pytest.raises(ReferenceDataMissing, match="was not found"):
        reference.generalization(DEFAULT_SETTINGS)
    assert len(reference.cache) == 0


def test_the_services_reference_reads_the_configured_folder(services: Services, data_dir: Path) -> None:
    assert services.postcodes.folder == data_dir and services.postcodes.cache is services.cache
    assert PostcodeReference(None, BoundedCache(1)).folder == default_data_dir()
    assert PostcodeReference(str(data_dir), BoundedCache(1)).folder == data_dir


def test_merge_uses_the_polygon_neighbours(reference: PostcodeReference, data_dir: Path) -> None:
    result = reference.generalization(GeoSettings(strategy=Strategy.MERGE))
    layer = geography.load_districts(geography.district_polygons_dir(data_dir))
    table = reference.population_table("ew")
    expected = generalize_postcodes(table, strategy="merge", neighbours=layer.neighbours())
    assert result.mapping.equals(expected.mapping)
    assert reference.generalization(GeoSettings(strategy=Strategy.MERGE)) is result  # kept in the cache


# --- panels and tables ---------------------------------------------------------------------------------------------


def test_summary_and_tables_match_the_core(reference: PostcodeReference) -> None:
    table = reference.population_table("ew")
    result = generalize_postcodes(table, strategy="mixed", threshold=30_000)
    summary = summarize(result)
    assert summary.n_units == len(result.populations)
    assert summary.n_failing == len(result.below_threshold) > 0
    smallest = result.populations.min()
    assert summary.smallest_population == smallest and result.populations[summary.smallest_code] == smallest
    rows = failing_rows(result)
    assert [r["code"] for r in rows] == list(result.below_threshold.index)
    assert [r["population"] for r in rows] == sorted(r["population"] for r in rows)
    source_rows = source_failing_rows(result)
    assert len(source_rows) == len(result.original_below_threshold)
    assert all(result.mapping[r["code"]] == r["published"] for r in source_rows)
    assert all(result.populations[r["published"]] == r["published_population"] for r in source_rows)


def test_zip3_summary_leaves_out_the_suppressed_code(reference: PostcodeReference) -> None:
    result = reference.generalization(GeoSettings(source="us", strategy=Strategy.ZIP3))
    summary = summarize(result)
    assert summary.smallest_code != "000" and summary.smallest_population > 20_000
    assert summary.n_failing == 0 and summary.n_original_failing > 0


# --- settings and links --------------------------------------------------------------------------------------------


def test_settings_round_trip_through_the_link() -> None:
    settings = GeoSettings(source="doogal", level="units", strategy=Strategy.MERGE, threshold=35_000, margin=10)
    state = ViewState(dataset="demo:people", geo=settings.to_dict())
    decoded = ViewState.from_search(state.to_search())
    assert GeoSettings.from_dict(decoded.geo) == settings
    assert GeoSettings().to_dict() == {}  # defaults stay out of the link
    assert settings_from_state(ViewState()) == (DEFAULT_SETTINGS, None)


def test_controls_keep_strategy_and_source_compatible() -> None:
    uk = GeoSettings()
    picked_zip3 = settings_from_controls(uk, "ew", "district", "zip3", 20_000, 25)
    assert picked_zip3.source == "us" and picked_zip3.strategy is Strategy.ZIP3
    back = settings_from_controls(picked_zip3, "us", "district", "area", 20_000, 25)
    assert back.source == "ew" and back.strategy is Strategy.AREA
    picked_us = settings_from_controls(uk, "us", "district", "mixed", 20_000, 25)
    assert picked_us.strategy is Strategy.ZIP3
    moved = settings_from_controls(uk, "ew", "units", "mixed", 21_000.0, None)
    assert moved.threshold == 21_000 and moved.margin == uk.margin and moved.level == "units"


def test_a_settings_change_carries_the_new_state() -> None:
    state = ViewState(dataset="demo:people")
    change = settings_change(state, "ew", "district", "zip3", 20_000, 25)
    assert change.previous == DEFAULT_SETTINGS and change.settings.strategy is Strategy.ZIP3
    assert change.changed and change.state == state.updated(geo=change.settings.to_dict())
    same = settings_change(state, "ew", "district", "mixed", 20_000, 25)
    assert not same.changed and same.state == state
    with pytest.raises(ValueError):
        settings_change(state, "ew", "district", "mixed", "lots", 25)


def test_polygons_are_kept_when_only_colours_change() -> None:
    units = GeoSettings(level="units", strategy=Strategy.MERGE)
    assert not same_polygons(GeoSettings(level="units", strategy=Strategy.MERGE, threshold=1), units)
    area = GeoSettings(level="units", strategy=Strategy.AREA)
    assert same_polygons(GeoSettings(level="units", strategy=Strategy.AREA, threshold=1), area)
    assert same_polygons(GeoSettings(threshold=1), GeoSettings())
    assert not same_polygons(GeoSettings(source="doogal"), GeoSettings())
    assert not same_polygons(None, GeoSettings())


@pytest.mark.parametrize(
    ("geo", "message"),
    [
        ({"x": 1}, "unknown keys: x"),
        ({"p": "fr"}, "unknown population source 'fr'"),
        ({"l": "county"}, "unknown map level 'county'"),
        ({"s": "nearest"}, "Unknown postcode strategy 'nearest'"),
        ({"t": 2.5}, "threshold must be a whole number"),
        ({"t": "20000"}, "threshold must be a whole number"),
        ({"t": -5}, "threshold must be a whole number between 0 and 200,000"),
        ({"m": 500}, "margin must be a whole number between 0 and 200"),
        ({"s": "zip3"}, "zip3 applies to US data only"),
        ({"p": "us", "s": "merge"}, "use zip3 for US data"),
    ],
)
def test_bad_settings_say_what_is_wrong(geo: dict[str, object], message: str) -> None:
    with pytest.raises(GeoStateError, match=message):
        GeoSettings.from_dict(geo)
    settings, problem = settings_from_state(ViewState(geo=geo))
    assert settings == DEFAULT_SETTINGS and problem is not None and message in problem


# --- applying the mapping to the dataset ---------------------------------------------------------------------------


def test_apply_mapping_to_the_demo_dataset(services: Services) -> None:
    loaded = services.dataset("demo:people")
    state = services.initial_state(loaded)
    assert postcode_columns(state) == ["postcode"]
    result = services.postcodes.generalization(GeoSettings(strategy=Strategy.MIXED))
    outcome = apply_mapping(services, state, result, "postcode")

    recoded = result.recode(people_table(), column="postcode")
    expected = diagnose(recoded.data, contract=people_contract())
    assert outcome.after.k == expected.k and outcome.strategy is Strategy.MIXED
    big_f = population_counts(expected.classes, column="postcode", populations=result.populations)
    assert outcome.after_risk.journalist.highest == pytest.approx(1 / big_f.min())
    assert outcome.before.k == diagnose(people_table(), contract=people_contract()).k
    # Census populations are far larger than the sample, so the journalist risk drops.
    assert outcome.after_risk.journalist.highest < outcome.before.risk.journalist.highest
    assert outcome.summary["unmapped"] > 0  # the Scottish districts are not in the England and Wales table


def test_apply_to_dataset_uses_the_links_settings(services: Services) -> None:
    state = services.initial_state(services.dataset("demo:people"))
    outcome = apply_to_dataset(services, state.updated(geo={"s": "area"}), "postcode")
    assert outcome.strategy is Strategy.AREA and outcome.column == "postcode"
    with pytest.raises(GeoStateError, match="unknown population source 'mars'"):
        apply_to_dataset(services, state.updated(geo={"p": "mars"}), "postcode")
    with pytest.raises(PrivdashError, match="No dataset is open"):
        apply_to_dataset(services, ViewState(), "postcode")


def test_apply_needs_the_column_as_quasi_identifier(services: Services) -> None:
    loaded = services.dataset("demo:people")
    state = services.initial_state(loaded)
    state = state.with_quasi_identifiers([q for q in state.quasi_identifiers if q != "postcode"], state.sensitive)
    result = services.postcodes.generalization(GeoSettings())
    with pytest.raises(PrivdashError, match="not a quasi-identifier"):
        apply_mapping(services, state, result, "postcode")


def test_apply_refuses_people_counted_by_a_person_id(services: Services) -> None:
    state = services.initial_state(services.dataset("demo:people"))
    # Each customer is one row here; the role alone makes the risk counted in people.
    state = state.with_columns(roles={"customer_id": "entity"})
    assert services.diagnosis(state).entity == "customer_id"
    result = services.postcodes.generalization(GeoSettings())
    with pytest.raises(PrivdashError, match="'customer_id' is a person id"):
        apply_mapping(services, state, result, "postcode")
