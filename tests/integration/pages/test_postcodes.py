"""Postcodes page builders against the core on the real reference data (no browser)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import shapely
import shapely.geometry
from dash import Patch, no_update
from plotly.io.json import to_json_plotly

from dashboard.pages import postcodes as page
from privdash.application.postcodes import (
    AMBER,
    GREEN,
    RED,
    GeoSettings,
    apply_mapping,
    build_view,
    settings_change,
)
from privdash.application.services import Services
from privdash.application.settings import Settings
from privdash.application.state import ViewState
from privdash.errors import PrivdashError
from privdash.geo.postcodes import Strategy, fails_threshold

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
def test_map_colours_follow_the_core_rule(services: Services, level: str, strategy: str) -> None:
    settings = GeoSettings(level=level, strategy=Strategy(strategy), threshold=25_000, margin=20)
    view = build_view(services.postcodes, settings)
    assert view.shown is not None
    figure = page.view_map(services.cache, view.shown, settings)
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


def test_layer_polygons_are_rounded_once_per_layer(services: Services) -> None:
    view = build_view(services.postcodes, GeoSettings(level="district"))
    assert view.shown is not None and view.shown.layer is not None
    geometries = page.display_geometries(services.cache, view.shown)
    assert len(geometries) == len(view.shown.codes)
    key = ("postcode-display", view.shown.layer.source_key, page.DISPLAY_DECIMALS)
    assert key in services.cache
    again = page.display_geometries(services.cache, view.shown)
    assert all(a is b for a, b in zip(geometries, again, strict=True))
    coordinates = shapely.get_coordinates([shapely.geometry.shape(g) for g in geometries[:20]])
    np.testing.assert_array_equal(coordinates, np.round(coordinates, page.DISPLAY_DECIMALS))


def test_zip3_shows_bars_by_the_safe_harbor_rule(services: Services) -> None:
    settings = GeoSettings(source="us", strategy=Strategy.ZIP3, threshold=20_000)
    view = build_view(services.postcodes, settings)
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
    full = page.redraw(services, ViewState(geo=units.to_dict()), GeoSettings(level="units", strategy=Strategy.MERGE))
    assert isinstance(full[0], dict) and full[0]["data"][0]["geojson"]["features"]


def test_map_view_fits_england_and_wales() -> None:
    center, zoom = page.map_view((-5.7, 49.9, 1.8, 55.8))
    assert 51.5 < center["lat"] < 54 and -3 < center["lon"] < -1.5
    assert 4 < zoom < 7


# --- panels and tables ---------------------------------------------------------------------------------------------


def test_attribution_names_the_sources(services: Services) -> None:
    layout = page.layout(services, s=ViewState(geo=GeoSettings(level="area").to_dict()).encode())
    text = str(find(layout, "pc-attribution").children)  # type: ignore[attr-defined]
    assert "GeoLytix" in text and "Office for National Statistics" in text
    outputs = page.redraw(services, ViewState(geo=GeoSettings(level="units").to_dict()), None)
    assert "Wikipedia contributors" in outputs[page.REDRAW_OUTPUTS.index(("pc-attribution", "children"))]


# --- view state -----------------------------------------------------------------------------------------------------


def test_controls_show_the_corrected_source_and_strategy(services: Services) -> None:
    picked = settings_change(ViewState(), "ew", "district", "zip3", 20_000, 25)
    head = page.control_outputs(picked, "ew", "zip3")
    assert head[0] == picked.state.to_dict() and head[1] == "us" and head[2] is no_update
    assert head[3] == Strategy.ZIP3.description and head[4] == "Minimum population: 20,000 people"
    unchanged = settings_change(ViewState(), "ew", "district", "mixed", 20_000, 25)
    assert page.control_outputs(unchanged, "ew", "mixed")[:3] == (no_update,) * 3


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


def test_apply_view_compares_before_and_after(services: Services) -> None:
    state = services.initial_state(services.dataset("demo:people"))
    result = services.postcodes.generalization(GeoSettings(strategy=Strategy.OUTWARD))
    outcome = apply_mapping(services, state, result, "postcode")
    view = page.apply_view(outcome)
    assert find(view, "apply-k") is not None
    assert "After the outward strategy" in str(view) and "Measure (census populations)" in str(view)
    summary = str(find(view, "apply-summary").children)  # type: ignore[attr-defined]
    assert f"{outcome.summary['changed']:,} of {outcome.summary['rows']:,} values changed" in summary
    card = page.apply_card(state)
    assert find(card, "apply-column").data == ["postcode"]  # type: ignore[attr-defined]


def test_apply_card_without_a_postcode_column_says_why_and_links_to_the_data_page(services: Services) -> None:
    # The five test-takers have no postcode: the card stays, says why, and points to where a column's type is set.
    state = services.initial_state(services.dataset("demo:five"))
    assert not any(kind.value == "POSTCODE" for kind in state.types.values())
    href = services.links.href(state, "/data")
    card = page.apply_card(state, href)
    message = find(card, "apply-unavailable")
    assert message is not None and "No column of the open dataset has the Postcode type" in str(message)
    link = find(card, "apply-to-data")
    assert link is not None and link.href == href  # type: ignore[attr-defined]
    assert find(card, "apply-button") is None and find(card, "apply-results") is not None
    # Without a dataset the card says so and opens the Data page.
    empty = page.apply_card(ViewState())
    assert "No dataset is open" in str(find(empty, "apply-unavailable"))
    assert find(empty, "apply-to-data").href == "/data"  # type: ignore[union-attr]
    # The page itself shows the card for the open dataset.
    text = str(page.layout(services, s=state.encode()))
    assert "apply-unavailable" in text and "Set a column's type to Postcode on the Data page" in text
