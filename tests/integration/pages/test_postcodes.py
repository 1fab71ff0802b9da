"""Postcodes page builders against the core on the real reference data (no browser)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from dash import Patch
from plotly.io.json import to_json_plotly

from dashboard.application.services import Services
from dashboard.application.settings import Settings
from dashboard.application.state import ViewState
from dashboard.core.data.demo import people_contract, people_table
from dashboard.core.errors import PrivdashError
from dashboard.core.geo import geography
from dashboard.core.geo.postcodes import Strategy, fails_threshold, generalize_postcodes, population_counts
from dashboard.core.measure.diagnose import diagnose
from dashboard.pages import postcodes as page
from dashboard.pages.postcodes import AMBER, GREEN, RED, GeoSettings, GeoStateError

MB = 1_000_000


@pytest.fixture
def services(tmp_path: Path, data_dir: Path) -> Services:
    return Services(Settings(store_dir=tmp_path / "store", cache_dir=tmp_path / "cache", data_dir=data_dir))


def state_with(**settings: object) -> ViewState:
    return ViewState(geo=GeoSettings(**settings).to_dict())  # type: ignore[arg-type]


def find(component: object, component_id: str) -> object | None:
    """The component with ``component_id`` inside a layout tree."""
    if getattr(component, "id", None) == component_id:
        return component
    children = getattr(component, "children", None)
    for child in children if isinstance(children, list | tuple) else [children]:
        if child is not None and not isinstance(child, str | int | float):
            found = find(child, component_id)
            if found is not None:
                return found
    return None


# --- colours -------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("level", ["district", "area", "units"])
@pytest.mark.parametrize("strategy", ["mixed", "area", "outward"])
def test_map_colours_follow_the_core_rule(data_dir: Path, level: str, strategy: str) -> None:
    settings = GeoSettings(level=level, strategy=Strategy(strategy), threshold=25_000, margin=20)
    view = page.build_view(data_dir, settings)
    assert view.shown is not None
    figure = page.map_figure(view.shown, revision="r")
    trace = figure["data"][0]
    z = np.asarray(trace["z"])
    if level == "units":
        populations = view.result.populations.reindex(trace["locations"]).to_numpy()
    else:
        populations = view.table.population(level).reindex(trace["locations"]).to_numpy()
    fails = fails_threshold(populations, 25_000, strategy=strategy)
    assert fails.any() and (~fails).any()
    np.testing.assert_array_equal(z == RED, fails)
    np.testing.assert_array_equal(z == AMBER, ~fails & (populations < 30_000))
    np.testing.assert_array_equal(z == GREEN, populations >= 30_000)
    assert [f["id"] for f in trace["geojson"]["features"]] == trace["locations"]
    assert figure["layout"]["map"]["style"] == "white-bg"  # no tile server
    hover = dict(zip(trace["locations"], trace["customdata"], strict=True))
    code = trace["locations"][0]
    assert hover[code][0] == f"{int(populations[0]):,}"


def test_zip3_uses_the_safe_harbor_rule(data_dir: Path) -> None:
    settings = GeoSettings(source="us", strategy=Strategy.ZIP3, threshold=20_000)
    lights = page.traffic_lights(np.array([19_999, 20_000, 20_001, 24_999, 25_000]), settings)
    assert lights.tolist() == [RED, RED, AMBER, AMBER, GREEN]
    uk = page.traffic_lights(np.array([19_999, 20_000]), GeoSettings(threshold=20_000))
    assert uk.tolist() == [RED, AMBER]
    view = page.build_view(data_dir, settings)
    assert view.shown is None and "no polygons" in view.notes[0]
    bars = page.bar_figure(view.result, settings)
    heights = np.asarray(bars.data[0].y)
    expected = np.where(heights <= 20_000, page.STATUS_COLORS[RED], "")
    assert [c for c, e in zip(bars.data[0].marker.color, expected, strict=True) if e] == [e for e in expected if e]
    assert list(heights) == sorted(heights)


# --- payload and patches -----------------------------------------------------------------------------------------


def test_page_payload_is_under_3_mb(services: Services) -> None:
    layout = page.layout(services)
    assert find(layout, "pc-map") is not None
    assert len(to_json_plotly(layout)) < 3 * MB
    # The largest map: every UK district (doogal) and every district as its own unit.
    for level in ("district", "units"):
        outputs = page.redraw(services, state_with(source="doogal", level=level, strategy=Strategy.OUTWARD), None)
        assert len(to_json_plotly(outputs)) < 3 * MB


def test_a_threshold_change_sends_only_colours(services: Services) -> None:
    before = GeoSettings(level="district", threshold=20_000)
    after = GeoSettings(level="district", threshold=30_000)
    outputs = page.redraw(services, ViewState(geo=after.to_dict()), before)
    assert isinstance(outputs[0], Patch)
    assert len(to_json_plotly(outputs)) < 0.3 * MB
    units = GeoSettings(level="units", strategy=Strategy.MERGE)
    assert not page.same_polygons(GeoSettings(level="units", strategy=Strategy.MERGE, threshold=1), units)
    assert page.same_polygons(
        GeoSettings(level="units", strategy=Strategy.AREA, threshold=1), replace_strategy(units, Strategy.AREA)
    )
    assert not page.same_polygons(GeoSettings(source="doogal"), GeoSettings())
    full = page.redraw(services, ViewState(geo=units.to_dict()), None)
    assert isinstance(full[0], dict) and full[0]["data"][0]["geojson"]["features"]


def replace_strategy(settings: GeoSettings, strategy: Strategy) -> GeoSettings:
    return GeoSettings(settings.source, settings.level, strategy, settings.threshold, settings.margin)


def test_map_view_fits_england_and_wales() -> None:
    center, zoom = page.map_view((-5.7, 49.9, 1.8, 55.8))
    assert 51.5 < center["lat"] < 54 and -3 < center["lon"] < -1.5
    assert 4 < zoom < 7


# --- panels and tables ---------------------------------------------------------------------------------------------


def test_summary_and_tables_match_the_core(data_dir: Path) -> None:
    table = page.population_table(data_dir, "ew")
    result = generalize_postcodes(table, strategy="mixed", threshold=30_000)
    summary = page.summarize(result)
    assert summary.n_units == len(result.populations)
    assert summary.n_failing == len(result.below_threshold) > 0
    smallest = result.populations.min()
    assert summary.smallest_population == smallest and result.populations[summary.smallest_code] == smallest
    rows = page.failing_rows(result)
    assert [r["code"] for r in rows] == list(result.below_threshold.index)
    assert [r["population"] for r in rows] == sorted(r["population"] for r in rows)
    source_rows = page.source_failing_rows(result)
    assert len(source_rows) == len(result.original_below_threshold)
    assert all(result.mapping[r["code"]] == r["published"] for r in source_rows)
    assert all(result.populations[r["published"]] == r["published_population"] for r in source_rows)


def test_zip3_summary_leaves_out_the_suppressed_code(data_dir: Path) -> None:
    result = page.generalization(data_dir, GeoSettings(source="us", strategy=Strategy.ZIP3))
    summary = page.summarize(result)
    assert summary.smallest_code != "000" and summary.smallest_population > 20_000
    assert summary.n_failing == 0 and summary.n_original_failing > 0


def test_merge_uses_the_polygon_neighbours(data_dir: Path) -> None:
    result = page.generalization(data_dir, GeoSettings(strategy=Strategy.MERGE))
    layer = geography.load_districts(geography.district_polygons_dir(data_dir))
    table = page.population_table(data_dir, "ew")
    expected = generalize_postcodes(table, strategy="merge", neighbours=layer.neighbours())
    assert result.mapping.equals(expected.mapping)
    assert page.generalization(data_dir, GeoSettings(strategy=Strategy.MERGE)) is result  # memoised


def test_attribution_names_the_sources(data_dir: Path) -> None:
    view = page.build_view(data_dir, GeoSettings(level="area"))
    text = page.attribution_text(view)
    assert "GeoLytix" in text and "Office for National Statistics" in text
    units = page.attribution_text(page.build_view(data_dir, GeoSettings(level="units")))
    assert "Wikipedia contributors" in units


# --- view state -----------------------------------------------------------------------------------------------------


def test_settings_round_trip_through_the_link() -> None:
    settings = GeoSettings(source="doogal", level="units", strategy=Strategy.MERGE, threshold=35_000, margin=10)
    state = ViewState(dataset="demo:people", geo=settings.to_dict())
    decoded = ViewState.from_search(state.to_search())
    assert GeoSettings.from_dict(decoded.geo) == settings
    assert GeoSettings().to_dict() == {}  # defaults stay out of the link
    assert page.settings_from_state(ViewState()) == (page.DEFAULT_SETTINGS, None)


def test_controls_keep_strategy_and_source_compatible() -> None:
    uk = GeoSettings()
    picked_zip3 = page.settings_from_controls(uk, "ew", "district", "zip3", 20_000, 25)
    assert picked_zip3.source == "us" and picked_zip3.strategy is Strategy.ZIP3
    back = page.settings_from_controls(picked_zip3, "us", "district", "area", 20_000, 25)
    assert back.source == "ew" and back.strategy is Strategy.AREA
    picked_us = page.settings_from_controls(uk, "us", "district", "mixed", 20_000, 25)
    assert picked_us.strategy is Strategy.ZIP3
    moved = page.settings_from_controls(uk, "ew", "units", "mixed", 21_000.0, None)
    assert moved.threshold == 21_000 and moved.margin == uk.margin and moved.level == "units"


@pytest.mark.parametrize(
    ("geo", "message"),
    [
        ({"x": 1}, "unknown keys: x"),
        ({"p": "fr"}, "unknown population source 'fr'"),
        ({"l": "county"}, "unknown map level 'county'"),
        ({"s": "nearest"}, "Unknown postcode strategy 'nearest'"),
        ({"t": 2.5}, "threshold must be a whole number"),
        ({"t": "20000"}, "threshold must be a whole number"),
        ({"t": -5}, "threshold must lie between 0 and 200,000"),
        ({"m": 500}, "margin must lie between 0 and 200"),
        ({"s": "zip3"}, "zip3 applies to US data only"),
        ({"p": "us", "s": "merge"}, "use zip3 for US data"),
    ],
)
def test_bad_settings_say_what_is_wrong(geo: dict[str, object], message: str) -> None:
    with pytest.raises(GeoStateError, match=message):
        GeoSettings.from_dict(geo)
    settings, problem = page.settings_from_state(ViewState(geo=geo))
    assert settings == page.DEFAULT_SETTINGS and problem is not None and message in problem


def test_a_bad_link_shows_its_message_and_the_defaults(services: Services) -> None:
    layout = page.layout(services, s=ViewState(geo={"p": "mars"}).encode())
    alert = find(layout, "geo-error")
    assert alert is not None and "unknown population source 'mars'" in str(alert.children)  # type: ignore[attr-defined]
    store = find(layout, "page-state")
    assert store is not None and "g" not in store.data  # type: ignore[attr-defined]


def test_missing_data_folder_is_a_message_not_a_crash(tmp_path: Path) -> None:
    services = Services(Settings(store_dir=tmp_path / "s", cache_dir=tmp_path / "c", data_dir=tmp_path / "none"))
    layout = page.layout(services)
    alert = find(layout, "postcodes-error")
    assert alert is not None and "PRIVDASH_DATA_DIR" in str(alert.children)  # type: ignore[attr-defined]
    with pytest.raises(PrivdashError, match="was not found"):
        page.redraw(services, ViewState(), None)


# --- applying the mapping to the dataset ---------------------------------------------------------------------------


def test_apply_mapping_to_the_demo_dataset(services: Services, data_dir: Path) -> None:
    loaded = services.dataset("demo:people")
    state = services.initial_state(loaded)
    assert page.postcode_columns(state) == ["postcode"]
    result = page.generalization(data_dir, GeoSettings(strategy=Strategy.MIXED))
    outcome = page.apply_mapping(services, state, result, "postcode")

    recoded = result.recode(people_table(), column="postcode")
    expected = diagnose(recoded.data, contract=people_contract())
    assert outcome.after.k == expected.k
    big_f = population_counts(expected.classes, column="postcode", populations=result.populations)
    assert outcome.after_risk.journalist.highest == pytest.approx(1 / big_f.min())
    assert outcome.before.k == diagnose(people_table(), contract=people_contract()).k
    # Census populations are far larger than the sample, so the journalist risk drops.
    assert outcome.after_risk.journalist.highest < outcome.before.risk.journalist.highest
    assert outcome.summary["unmapped"] > 0  # the Scottish districts are not in the England and Wales table
    view = page.apply_view(outcome, GeoSettings())
    assert find(view, "apply-k") is not None


def test_apply_needs_the_column_as_quasi_identifier(services: Services, data_dir: Path) -> None:
    loaded = services.dataset("demo:people")
    state = services.initial_state(loaded)
    state = state.with_quasi_identifiers([q for q in state.quasi_identifiers if q != "postcode"], state.sensitive)
    result = page.generalization(data_dir, GeoSettings())
    with pytest.raises(PrivdashError, match="not a quasi-identifier"):
        page.apply_mapping(services, state, result, "postcode")
