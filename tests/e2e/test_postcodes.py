"""The Postcodes page in a real browser: the offline map, the threshold and strategy against the core, the share
link, applying the mapping to the demo dataset, and a bad link.

Writes ``docs/screenshots/postcodes.png``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from dashboard.ui.components import fmt_count
from privdash.application.postcodes import SOURCES
from privdash.application.state import ViewState
from privdash.data.demo import people_contract, people_table
from privdash.geo import geography
from privdash.geo.postcodes import PopulationTable, generalize_postcodes, read_population
from privdash.measure.diagnose import diagnose

TIMEOUT = 20_000
VIEWPORT = {"width": 1400, "height": 1300}
TRACE = "document.querySelector('#pc-map .js-plotly-plot').data[0]"


@pytest.fixture(scope="module")
def ew(data_dir: Path) -> PopulationTable:
    return read_population(SOURCES["ew"].path(data_dir))


@pytest.fixture(scope="module")
def layer(data_dir: Path) -> geography.PolygonLayer:
    return geography.load_districts(geography.district_polygons_dir(data_dir))


def settled(page: Page) -> None:
    page.wait_for_function("!document.querySelector('[data-dash-is-loading=\"true\"]')", timeout=TIMEOUT)


def drawn_codes(page: Page) -> list[str]:
    """The locations of the map's trace, once the map has drawn them."""
    # The plot element exists before its first trace: wait for the trace's locations, not for the element.
    page.wait_for_function("document.querySelector('#pc-map .js-plotly-plot')?.data?.[0]?.locations", timeout=TIMEOUT)
    return list(page.evaluate(f"{TRACE}.locations"))


def test_map_threshold_strategy_and_share_link(
    page: Page,
    browser: Browser,
    live_server: str,
    ew: PopulationTable,
    layer: geography.PolygonLayer,
    screenshots: Path,
) -> None:
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.url))
    page.set_viewport_size(VIEWPORT)
    page.goto(f"{live_server}/postcodes")

    # The default view: every England and Wales district with a polygon, coloured by the mixed rule at 20,000.
    districts = ew.population("district").index
    expected_codes = [str(c) for c in districts if c in layer.frame.index]
    assert drawn_codes(page) == expected_codes
    expect(page.locator("#pc-map .maplibregl-canvas")).to_be_visible(timeout=TIMEOUT)
    mixed = generalize_postcodes(ew, strategy="mixed", threshold=20_000)
    expect(page.locator("#pc-failing")).to_have_text(fmt_count(len(mixed.below_threshold)), timeout=TIMEOUT)
    expect(page.locator("#pc-units")).to_have_text(fmt_count(len(mixed.populations)))
    expect(page.locator("#pc-before-failing")).to_have_text(fmt_count(len(mixed.original_below_threshold)))
    expect(page.locator("#failing-grid .ag-center-cols-container .ag-row")).to_have_count(len(mixed.below_threshold))
    first = page.locator("#failing-grid .ag-center-cols-container .ag-row[row-index='0'] [col-id='code']")
    expect(first).to_have_text(str(mixed.below_threshold.index[0]))
    red = int(page.evaluate(f"{TRACE}.z.filter(v => v === 0).length"))
    assert red == int((ew.population("district").reindex(expected_codes) < 20_000).sum())
    expect(page.locator("#pc-attribution")).to_contain_text("Wikipedia contributors")

    # One step right on the slider: 21,000 people.
    page.locator("#pc-threshold .mantine-Slider-thumb").focus()
    page.keyboard.press("ArrowRight")
    expect(page.locator("#pc-threshold-label")).to_have_text("Minimum population: 21,000 people", timeout=TIMEOUT)
    higher = generalize_postcodes(ew, strategy="mixed", threshold=21_000)
    expect(page.locator("#pc-before-failing")).to_have_text(
        fmt_count(len(higher.original_below_threshold)), timeout=TIMEOUT
    )
    expect(page.locator("#pc-units")).to_have_text(fmt_count(len(higher.populations)))
    page.wait_for_function(
        f"{TRACE}.z.filter(v => v === 0).length === {int((ew.population().reindex(expected_codes) < 21_000).sum())}",
        timeout=TIMEOUT,
    )
    page.locator("#pc-threshold .mantine-Slider-thumb").blur()
    settled(page)
    page.wait_for_timeout(500)  # let MapLibre finish painting before the screenshot
    page.screenshot(path=str(screenshots / "postcodes.png"), full_page=True)

    # The area strategy, then the published units on the map.
    page.locator("#pc-strategy").get_by_text("area", exact=True).click()
    area = generalize_postcodes(ew, strategy="area", threshold=21_000)
    expect(page.locator("#pc-failing")).to_have_text(fmt_count(len(area.below_threshold)), timeout=TIMEOUT)
    expect(page.locator("#pc-units")).to_have_text(fmt_count(len(area.populations)))
    expect(page.locator("#failing-grid .ag-center-cols-container .ag-row")).to_have_count(len(area.below_threshold))
    page.locator("#pc-level").get_by_text("Published units", exact=True).click()
    page.wait_for_function(f"{TRACE}.locations.length === {len(layer.dissolve(area))}", timeout=TIMEOUT)
    assert sorted(drawn_codes(page)) == sorted(str(c) for c in layer.dissolve(area).index)

    page.locator("#pc-strategy").get_by_text("merge", exact=True).click()
    merge = generalize_postcodes(ew, strategy="merge", threshold=21_000, neighbours=layer.neighbours())
    expect(page.locator("#pc-units")).to_have_text(fmt_count(len(merge.populations)), timeout=TIMEOUT)
    expect(page.locator("#pc-failing")).to_have_text(fmt_count(len(merge.below_threshold)))
    page.wait_for_function(f"{TRACE}.locations.length === {len(layer.dissolve(merge))}", timeout=TIMEOUT)

    # The address bar carries the settings; the link opened elsewhere shows the same view.
    state = ViewState.from_search(page.url.split("?", 1)[1])
    assert state.geo == {"l": "units", "s": "merge", "t": 21_000}
    other = browser.new_context(viewport=VIEWPORT)
    try:
        fresh = other.new_page()
        fresh.goto(page.url)
        expect(fresh.locator("#pc-units")).to_have_text(fmt_count(len(merge.populations)), timeout=TIMEOUT)
        expect(fresh.locator("#pc-threshold-label")).to_have_text("Minimum population: 21,000 people")
    finally:
        other.close()

    # US data: bars instead of a map, with the note.
    page.locator("#pc-strategy").get_by_text("zip3", exact=True).click()
    expect(page.locator("#pc-bars-wrap")).to_be_visible(timeout=TIMEOUT)
    expect(page.locator("#pc-map-wrap")).to_be_hidden()
    expect(page.locator("#pc-notes")).to_contain_text("no polygons")

    # MapLibre starts its workers from in-memory blob: URLs of the page's own origin; nothing else may leave.
    local = (live_server, f"blob:{live_server}/", "data:")
    off_host = [url for url in requests if not url.startswith(local)]
    assert requests and not off_host, off_host


def test_apply_the_mapping_to_the_demo_dataset(page: Page, live_server: str, ew: PopulationTable) -> None:
    page.set_viewport_size(VIEWPORT)
    page.goto(f"{live_server}/data")
    page.click("#demo-open")
    expect(page.locator("#dataset-title")).to_have_text("Customers (synthetic, 5,000 people)", timeout=TIMEOUT)
    page.locator('a[href^="/postcodes"]').first.click()
    expect(page.locator("#apply-button")).to_be_visible(timeout=TIMEOUT)
    page.click("#apply-button")

    people = people_table()
    mapping = generalize_postcodes(ew, strategy="mixed", threshold=20_000)
    recoded = mapping.recode(people, column="postcode")
    after = diagnose(recoded.data, contract=people_contract())
    expect(page.locator("#apply-k")).to_have_text(fmt_count(after.k), timeout=TIMEOUT)
    expect(page.locator("#apply-summary")).to_contain_text(
        f"{fmt_count(recoded.summary['unmapped'])} postcodes outside the population table"
    )


def test_bad_link_shows_a_message(page: Page, live_server: str) -> None:
    bad = ViewState(geo={"p": "ew", "s": "zip3"})
    page.goto(f"{live_server}/postcodes{bad.to_search()}")
    expect(page.locator("#geo-error")).to_contain_text("zip3 applies to US data only", timeout=TIMEOUT)
    expect(page.locator("#pc-units")).to_be_visible()
