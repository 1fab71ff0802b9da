"""The Fix page's solutions in a real browser: the search's best solutions side by side (axe-core clean), one
published from the keyboard, and the verdict and the step list follow; a local recoding chosen and published from
the keyboard."""

from __future__ import annotations

import re

import pandas as pd
from playwright.sync_api import Page, expect

from dashboard.ui.components import fmt_count
from privdash.application.fixes import SOLUTIONS_SHOWN, check_spec
from privdash.application.services import Services
from privdash.application.settings import Settings
from privdash.application.state import ViewState
from privdash.measure.diagnose import diagnose
from tests.e2e.test_accessibility import assert_accessible, open_numbers, settled

TIMEOUT = 30_000
QIS = ["age", "sex", "postcode"]


def test_pick_the_second_solution_with_the_keyboard(page: Page, live_server: str, live_settings: Settings) -> None:
    services = Services(live_settings)
    base = services.initial_state(services.dataset("demo:people"), ViewState()).with_quasi_identifiers(
        QIS, ["diagnosis"]
    )
    spec = check_spec(
        {"kind": "search", "k": 5, "l": 2, "t": 0.2, "max_risk": 0.2, "max_suppression": 0.05, "metric": "loss"}
    )
    state = base.updated(fix=(spec,))
    page.set_viewport_size({"width": 1280, "height": 1000})
    page.goto(f"{live_server}{state.href('/fix')}")
    table = page.locator("#fix-solutions")
    expect(table).to_be_visible(timeout=TIMEOUT)
    expect(table.locator("tbody tr")).to_have_count(SOLUTIONS_SHOWN)
    expect(page.locator("#fix-verdict")).to_contain_text("The cheapest fix found", timeout=TIMEOUT)
    # The chart of loss against risk has its numbers, and the card passes axe-core (no critical or serious issue).
    open_numbers(page, "fix-solutions-chart")
    settled(page)
    assert_accessible(page, "Fix, the search's solutions with the chart's numbers open")
    second_levels = table.locator("tbody tr").nth(1).locator("td").nth(1).inner_text()
    button = page.get_by_role("button", name=re.compile(r"^Publish solution 2:"))
    button.focus()
    expect(button).to_be_focused()
    page.keyboard.press("Enter")
    verdict = page.locator("#fix-verdict")
    expect(verdict).to_contain_text("The fix chosen (solution 2 of the search", timeout=TIMEOUT)
    published = page.get_by_role("button", name=re.compile(r"^Publish solution 2:"))
    expect(published).to_be_disabled(timeout=TIMEOUT)
    expect(published).to_have_text("Published")
    # The step list shows the published levels: those of the second row.
    expect(page.locator("#fix-outcomes")).to_contain_text(f"levels {second_levels}")


def test_local_recoding_from_the_keyboard(page: Page, live_server: str, live_settings: Settings) -> None:
    """The search's recoding chosen with the keyboard: the local recoding is previewed, named in the step list and
    the verdict, and the downloaded table is k-anonymous as published by the core's diagnosis."""
    services = Services(live_settings)
    state = services.initial_state(services.dataset("demo:people"), ViewState()).with_quasi_identifiers(
        QIS, ["diagnosis"]
    )
    page.set_viewport_size({"width": 1280, "height": 1000})
    page.goto(f"{live_server}{state.href('/fix')}")
    page.click("#fix-technique")
    page.get_by_role("option", name="Least-lossy search").click()
    recoding = page.get_by_role("radiogroup", name=re.compile("Recoding"))
    expect(recoding).to_be_visible(timeout=TIMEOUT)
    global_choice = page.get_by_role("radio", name=re.compile("^Global"))
    expect(global_choice).to_be_checked()
    global_choice.focus()
    page.keyboard.press("ArrowDown")
    local_choice = page.get_by_role("radio", name=re.compile("^Local"))
    expect(local_choice).to_be_checked()
    expect(local_choice).to_be_focused()
    page.locator("#fix-add").focus()
    page.keyboard.press("Enter")
    expect(page.locator("#fix-outcomes")).to_contain_text("local recoding, levels", timeout=2 * TIMEOUT)
    expect(page.locator("#fix-outcomes")).to_contain_text("Least-lossy local recoding")
    expect(page.locator("#fix-verdict")).to_contain_text("The cheapest fix found (local recoding", timeout=TIMEOUT)
    expect(page.locator("#fix-solutions")).to_have_count(0)
    page.wait_for_url(lambda url: "s=" in url, timeout=TIMEOUT)
    assert ViewState.from_search(page.url.split("?", 1)[1]).fix[0]["recoding"] == "local"
    with page.expect_download(timeout=TIMEOUT) as download:
        page.click("#fix-dl-csv")
    table = pd.read_csv(download.value.path(), dtype=str, keep_default_na=False)
    published = diagnose(table, QIS, sensitive=["diagnosis"])
    assert published.k >= state.k
    expect(page.locator("#fix-after-k .stat-value")).to_have_text(fmt_count(published.k))
    # Some column publishes values at more than one level (35-39 beside 30-39).
    assert table["age"].str.contains("-").any() and table["age"].nunique() > 1
    # The search panel with its recoding choice and the local recoding's results pass axe-core.
    expect(recoding).to_be_visible()
    settled(page)
    assert_accessible(page, "Fix, a local recoding published, the search's recoding choice shown")


def test_the_estimates_of_each_solution(page: Page, live_server: str, live_settings: Settings) -> None:
    """The estimates named in the Estimates section, compared on each solution's table from the keyboard: the
    solutions table gains their overlap, the numbers open in a disclosure, and the card passes axe-core."""
    services = Services(live_settings)
    base = services.initial_state(services.dataset("demo:people"), ViewState()).with_quasi_identifiers(
        QIS, ["diagnosis"]
    )
    spec = check_spec(
        {"kind": "search", "k": 5, "l": 2, "t": 0.2, "max_risk": 0.2, "max_suppression": 0.05, "metric": "loss"}
    )
    state = base.updated(fix=(spec,))
    page.set_viewport_size({"width": 1280, "height": 1000})
    page.goto(f"{live_server}{state.href('/fix')}")
    expect(page.locator("#fix-solutions")).to_be_visible(timeout=TIMEOUT)
    box = page.get_by_label("Estimates the data are published for, one a line")
    box.fill("mean:age\nshare:sex")
    box.blur()
    button = page.get_by_role("button", name="Compare the estimates of each solution")
    button.focus()
    page.keyboard.press("Enter")
    table = page.locator("#fix-solutions")
    expect(table.locator("thead")).to_contain_text("estimates: mean / lowest overlap", timeout=TIMEOUT)
    expect(table.locator(".fix-solution-overlap")).to_have_count(SOLUTIONS_SHOWN)
    summary = page.locator("#fix-solution-estimates-details > summary")
    summary.focus()
    page.keyboard.press("Enter")
    numbers = page.locator("#fix-solution-estimates-table")
    expect(numbers).to_be_visible()
    expect(numbers.locator("thead th")).to_have_count(3 + SOLUTIONS_SHOWN)
    expect(numbers).to_contain_text("mean of age")
    settled(page)
    assert_accessible(page, "Fix, each solution's estimates open")
    # Publishing another solution still works from the table with the estimates.
    page.get_by_role("button", name=re.compile(r"^Publish solution 2:")).click()
    expect(page.locator("#fix-verdict")).to_contain_text("The fix chosen (solution 2 of the search", timeout=TIMEOUT)
