"""Loose ends a new user met, checked in a real browser so that they stay gone.

* The Fix page: the background search's result replaces the waiting text; the verdict banner says what the search
  found; a sample of rows before and after; the recipe command is not cut off; a re-applied recipe warns when it
  removes more than its limit, and refuses when asked to.
* A first visit opens the demo; the Data page's empty panel points to its own controls; a presentation opens in
  one click.
* The Risk page paints its grids off screen too (screenshots, prints), keeps its histogram labels whole and every
  pass / fail badge on the line of its label.
* The Postcodes page with ZIP3 data: its titles speak of ZIP3 areas, its toggle works, the empty table says so.
* After an upload the Data page's built-in select names no dataset, and an Ordinal order panel without an ordinal
  column says how to get one instead of showing empty grids.
* The Risk page's grid of QI combinations: readable titles, one filter (the combination's), every column in the card;
  no grid is sized while hidden (AG Grid warning #29).
* The Postcodes page on a dataset without a postcode column says why nothing can be applied and links to the Data
  page.

Expected numbers come from the core or pandas, not from the page's code.
"""

from __future__ import annotations

from pathlib import Path

from playwright.sync_api import Page, expect

from privdash.application.postcodes import SOURCES
from privdash.application.services import Services
from privdash.application.settings import Settings
from privdash.application.state import ViewState
from privdash.data.contract import DataContract
from privdash.data.demo import demo_datasets, people_contract, people_table
from privdash.geo.postcodes import Strategy, generalize_postcodes, read_population
from privdash.search.lattice import optimal_generalization
from privdash.targets import PrivacyTargets
from privdash.transform.generalization import generalize
from privdash.transform.hierarchy import interval_hierarchy, search_hierarchy
from privdash.transform.steps import Recipe

TIMEOUT = 30_000
QIS = ["age", "sex", "postcode"]


def demo_state(live_settings: Settings, qis: list[str], sensitive: list[str]) -> ViewState:
    services = Services(live_settings)
    return services.initial_state(services.dataset("demo:people"), ViewState()).with_quasi_identifiers(qis, sensitive)


def test_fix_page_search_verdict_sample_and_recipe_box(page: Page, live_server: str, live_settings: Settings) -> None:
    data = people_table()
    contract: DataContract = people_contract()
    hierarchies = {name: search_hierarchy(data[name], contract[name].statistical_type, 5) for name in QIS}
    found = optimal_generalization(data, hierarchies, k=5, max_suppression=0.05)

    page.set_viewport_size({"width": 1280, "height": 1000})
    page.goto(f"{live_server}{demo_state(live_settings, QIS, []).href('/fix')}")
    expect(page.locator("#fix-verdict")).to_be_visible(timeout=TIMEOUT)
    page.click("#fix-technique")
    page.get_by_role("option", name="Least-lossy search").click()
    expect(page.locator("#fix-search-k")).to_be_visible()
    page.click("#fix-add")
    verdict = page.locator("#fix-verdict")
    expect(verdict).to_contain_text("The cheapest fix found", timeout=TIMEOUT)
    expect(verdict).to_contain_text(f"suppress {found.suppressed:,} records")
    # The finished result stands alone: no waiting text above it.
    expect(page.locator("#fix-waiting")).to_have_count(0)
    assert "Computing the preview" not in page.locator("#fix-results").inner_text()
    expect(page.locator("#fix-sample .sample-changed").first).to_contain_text("→")
    # The recipe command wraps in the narrow column instead of being cut off.
    box = page.locator("#fix-recipe-command")
    assert box.evaluate("e => e.scrollWidth <= e.clientWidth")
    assert "recipe.json IN -o OUT" in box.inner_text()


def test_reapplied_recipe_warns_and_can_fail(page: Page, live_server: str, tmp_path: Path) -> None:
    data = people_table()
    # A recipe made where age classes were large, with a 2% limit: on the demo, every class of fewer than five
    # people on age, sex and postcode is removed.
    step = generalize(
        data,
        {"age": 0},
        {"age": interval_hierarchy(data["age"], widths=[5])},
        suppress=PrivacyTargets(k=5),
        quasi_identifiers=QIS,
    ).step
    path = tmp_path / "recipe.json"
    Recipe((step,), max_suppression=0.02).save(path)
    keyed = data[QIS].astype(object).where(data[QIS].notna(), "missing").astype(str).agg("|".join, axis=1)
    removed = int((keyed.map(keyed.value_counts()) < 5).sum())
    assert removed > 0.02 * len(data)

    page.goto(f"{live_server}/fix")
    page.locator("#fix-recipe-upload input[type=file]").set_input_files(str(path))
    warning = page.locator("#fix-recipe-warning")
    expect(warning).to_contain_text(f"removed {removed:,} of {len(data):,} records", timeout=TIMEOUT)
    expect(page.locator("#fix-recipe-download")).to_be_enabled()
    page.locator("#fix-recipe-strict").check()
    expect(page.locator("#fix-recipe-failed")).to_contain_text("Nothing is offered for download", timeout=TIMEOUT)
    expect(page.locator("#fix-recipe-download")).to_be_disabled()


def test_first_visit_opens_the_demo_and_presentations(page: Page, live_server: str) -> None:
    demos = demo_datasets()
    page.goto(f"{live_server}/risk")
    expect(page.locator("#verdict")).to_be_visible(timeout=TIMEOUT)
    expect(page.locator("#header-dataset")).to_have_text(demos["people"].title, ignore_case=True)
    # A link to a dataset that is gone: the Data page's empty panel points to the controls beside it.
    page.goto(f"{live_server}/data?s={ViewState(dataset='demo:gone').encode()}")
    expect(page.locator("#no-dataset-hint")).to_be_visible(timeout=TIMEOUT)
    expect(page.get_by_text("Open the Data page")).to_have_count(0)
    # One click opens the five test-takers on the Risk page, failing k = 2 with k = 1.
    page.goto(f"{live_server}/data")
    page.locator('[id*="presentation"][id*="five"]').click()
    frame = demos["five"].load()
    smallest = int(frame.groupby(["age", "preTestScore", "postTestScore"]).size().min())
    expect(page.locator("#verdict")).to_contain_text(f"k = {smallest} is below the target k = 2", timeout=TIMEOUT)


def test_risk_page_paints_off_screen_and_keeps_labels_whole(
    page: Page, live_server: str, live_settings: Settings
) -> None:
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(f"{live_server}{demo_state(live_settings, ['sex'], []).href('/risk')}")
    page.locator("#combination-grid .ag-row").first.wait_for(state="attached", timeout=TIMEOUT)
    for grid in ("#combination-grid", "#class-grid"):
        wrapper = page.locator(f"{grid} .ag-root-wrapper")
        assert wrapper.evaluate("e => getComputedStyle(e).contentVisibility") != "auto", grid
        assert page.locator(f"{grid} .ag-row").first.evaluate("e => getComputedStyle(e).visibility") == "visible"
    # The class sizes of sex alone reach the thousands: the longest bin labels must be drawn whole.
    sizes = people_table()["sex"].value_counts(dropna=False)
    assert sizes.max() > 1_000
    chart = page.locator("#size-chart")
    chart.locator(".xtick text").first.wait_for(timeout=TIMEOUT)
    labels = chart.evaluate("e => e.querySelector('.js-plotly-plot').data[0].x")
    assert any("1,001" in str(label) for label in labels)
    svg_bottom = chart.locator("svg.main-svg").first.evaluate("e => e.getBoundingClientRect().bottom")
    ticks = chart.locator(".xtick text")
    # Every bin's label is drawn (none skipped), whole.
    assert ticks.evaluate_all("es => es.map(e => e.textContent)") == [str(label) for label in labels]
    for bottom in ticks.evaluate_all("es => es.map(e => e.getBoundingClientRect().bottom)"):
        assert bottom <= svg_bottom + 0.5
    # Every pass / fail badge sits on the line of its card's label, whatever the label's length.
    for card in page.locator("#headline-cards .stat-card").all():
        badge = card.locator(".stat-status")
        if badge.count():
            top = badge.evaluate("e => e.getBoundingClientRect().top")
            label = card.locator(".stat-label").evaluate("e => e.getBoundingClientRect().top")
            assert abs(top - label) < 8


def test_zip3_titles_toggle_and_empty_table(page: Page, live_server: str, data_dir: Path) -> None:
    blocked: list[str] = []
    page.on("console", lambda message: blocked.append(message.text) if "Blocked a string" in message.text else None)
    page.set_viewport_size({"width": 1400, "height": 1100})
    page.goto(f"{live_server}{ViewState(geo={'p': 'us', 's': 'zip3'}).href('/postcodes')}")
    title = page.locator("#pc-map-head #pc-map-heading")
    expect(title).to_have_text("Before: ZIP3 areas by their own population", timeout=TIMEOUT)
    # The Safe Harbor strategy leaves no unit under the threshold: the empty table says so in words.
    expect(page.locator("#failing-grid")).to_contain_text("No unit fails the threshold.", timeout=TIMEOUT)
    expect(page.locator("#pc-level input[value=area]")).to_be_disabled()
    page.locator("#pc-level").get_by_text("Published units").click()
    expect(title).to_have_text("After: published units of the zip3 strategy, by their population", timeout=TIMEOUT)
    page.wait_for_function(
        "document.querySelector('#pc-bars .js-plotly-plot')?.layout?.xaxis?.title?.text?.includes('published units')",
        timeout=TIMEOUT,
    )
    bars = page.evaluate("document.querySelector('#pc-bars .js-plotly-plot').data[0].x")
    result = generalize_postcodes(read_population(SOURCES["us"].path(data_dir)), strategy=Strategy.ZIP3)
    smallest = result.populations.sort_values(kind="stable").index[: len(bars)]
    assert bars == [str(code) for code in smallest]  # the published units, smallest first
    assert blocked == []


def test_upload_clears_the_built_in_select_and_the_empty_order_panel_says_why(
    page: Page, live_server: str, data_dir: Path
) -> None:
    page.set_viewport_size({"width": 1440, "height": 900})
    page.goto(f"{live_server}/data")
    with page.expect_file_chooser() as chooser:
        page.click("#upload-zone")
    chooser.value.set_files(str(data_dir / "arx_adult" / "adult_subset.csv"))
    expect(page.locator("#dataset-title")).to_have_text("adult_subset.csv", timeout=TIMEOUT)
    # The select names no built-in dataset while the upload is open (it showed the demo's title), and Open waits
    # for a choice.
    select = page.locator("#demo-select")
    expect(select).to_have_value("")
    expect(select).to_have_attribute("placeholder", "Choose a built-in dataset")
    expect(page.locator("#demo-open")).to_be_disabled()
    # No ordinal column: one line says how to get one, instead of empty grids saying "No Rows To Show".
    expect(page.locator("#order-empty")).to_be_visible(timeout=TIMEOUT)
    expect(page.locator("#order-grid")).to_be_hidden()
    expect(page.locator(".ag-overlay-no-rows-center:visible")).to_have_count(0)
    # A column made ordinal brings the editor, with the column's values to order.
    page.get_by_role("textbox", name="Type of education").click()
    page.get_by_role("option", name="Ordinal").click()
    expect(page.locator("#order-grid .ag-row").first).to_be_visible(timeout=TIMEOUT)
    expect(page.locator("#order-empty")).to_be_hidden()
    # Choosing a built-in dataset makes Open available again.
    select.click()
    page.get_by_role("option", name=demo_datasets()["five"].title).click()
    expect(page.locator("#demo-open")).to_be_enabled(timeout=TIMEOUT)


def test_combination_grid_titles_fit_and_no_grid_warns(page: Page, live_server: str, live_settings: Settings) -> None:
    warnings: list[str] = []
    page.on("console", lambda message: warnings.append(message.text) if "AG Grid" in message.text else None)
    page.set_viewport_size({"width": 1440, "height": 900})
    page.goto(f"{live_server}{demo_state(live_settings, QIS, []).href('/risk')}")
    grid = page.locator("#combination-grid")
    grid.locator(".ag-row").first.wait_for(timeout=TIMEOUT)
    titles = grid.locator(".ag-header-cell-text").all_inner_texts()
    assert titles[:5] == [
        "Quasi-identifiers",
        "Number of QIs",
        "Unique records",
        "Records in classes < 5",
        "Smallest class (k)",
    ]
    # One filter button, at the right of the combination's own title; none sits between two numbers' titles.
    expect(grid.locator(".ag-header-cell:visible .ag-header-cell-filter-button:visible")).to_have_count(1)
    # Every column is in the card: nothing to scroll sideways to.
    viewport = grid.locator(".ag-center-cols-viewport")
    assert viewport.evaluate("e => e.scrollWidth <= e.clientWidth + 1")
    assert titles[-1] == "Separation" and grid.get_by_text("Separation").is_visible()
    # The Postcodes page holds a grid in a tab that is not shown: it must not be sized at zero width (warning #29).
    page.goto(f"{live_server}{demo_state(live_settings, QIS, []).href('/postcodes')}")
    expect(page.locator("#pc-map .maplibregl-canvas")).to_be_visible(timeout=TIMEOUT)
    expect(page.locator("#failing-grid .ag-header-cell-text").first).to_be_visible(timeout=TIMEOUT)
    page.get_by_role("tab", name="Source units that fail on their own").click()
    expect(page.locator("#source-failing-grid .ag-header-cell-text").first).to_be_visible(timeout=TIMEOUT)
    width = page.locator("#source-failing-grid .ag-header-cell").first.evaluate("e => e.offsetWidth")
    assert width > 100  # sized when shown
    assert warnings == []


def test_postcodes_without_a_postcode_column_says_why_there_is_nothing_to_apply(
    page: Page, live_server: str, live_settings: Settings
) -> None:
    services = Services(live_settings)
    state = services.initial_state(services.dataset("demo:five"), ViewState())
    page.set_viewport_size({"width": 1440, "height": 900})
    page.goto(f"{live_server}{state.href('/postcodes')}")
    message = page.locator("#apply-unavailable")
    expect(message).to_contain_text("No column of the open dataset has the Postcode type", timeout=TIMEOUT)
    expect(page.locator("#apply-button")).to_have_count(0)
    page.locator("#apply-to-data").click()
    expect(page.locator("#dataset-title")).to_have_text(demo_datasets()["five"].title, timeout=TIMEOUT)
