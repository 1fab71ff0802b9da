"""The Fix page's solutions in a real browser: the search's best solutions side by side (axe-core clean), one
published from the keyboard, and the verdict and the step list follow."""

from __future__ import annotations

import re

from playwright.sync_api import Page, expect

from dashboard.application.fixes import SOLUTIONS_SHOWN, check_spec
from dashboard.application.services import Services
from dashboard.application.settings import Settings
from dashboard.application.state import ViewState
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
