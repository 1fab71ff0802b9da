"""The Fix page's estimates section in a real browser, with the keyboard only: the steward types two estimates, tabs
to the button and presses Enter; the numbers shown before and after are the core's on the tables the page's fix
makes, and the section with its result passes axe-core.
"""

from __future__ import annotations

from playwright.sync_api import Page, expect

from privdash.application.estimates import fmt_interval, fmt_overlap
from privdash.application.fixruns import FixRuns
from privdash.application.services import Services
from privdash.application.settings import Settings
from privdash.application.state import ViewState
from privdash.utility.estimates import compare_estimates
from tests.e2e.test_accessibility import assert_accessible, settled

TIMEOUT = 30_000
AGE = {"kind": "generalize", "column": "age", "rule": {"builder": "intervals", "widths": [10]}, "level": 1}
SPECS = ["mean:transaction_amount by sex", "coef:transaction_amount~age+sex"]


def test_estimates_by_keyboard(page: Page, live_server: str, live_settings: Settings) -> None:
    services = Services(live_settings)
    state = services.initial_state(services.dataset("demo:people"), ViewState())
    state = state.with_quasi_identifiers(["age", "sex", "postcode"], ["diagnosis"]).updated(fix=(AGE,))
    run = FixRuns(services).run(state)
    expected = compare_estimates(run.original, run.data, SPECS)

    page.set_viewport_size({"width": 1400, "height": 1000})
    page.goto(f"{live_server}{state.href('/fix')}")
    box = page.get_by_label("Estimates the data are published for, one a line")
    expect(box).to_be_visible(timeout=TIMEOUT)
    expect(page.locator("#estimates-table")).to_have_count(0)  # nothing computed on load
    settled(page)
    box.focus()
    page.keyboard.type(SPECS[0])
    page.keyboard.press("Enter")
    page.keyboard.type(SPECS[1])
    text = "\n".join(SPECS[:2])
    if box.input_value() != text:  # keys typed while a late update of the page redrew the section were lost
        settled(page)
        box.fill(text)
    expect(box).to_have_value(text)
    box.focus()
    settled(page)
    for _ in range(6):
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement && document.activeElement.id") == "estimates-run":
            break
    assert page.evaluate("document.activeElement.id") == "estimates-run", "the button is not reachable with Tab"
    page.keyboard.press("Enter")

    table = page.locator("#estimates-table")
    expect(table).to_be_visible(timeout=TIMEOUT)
    rows = sum(len(c.rows) for c in expected)
    expect(table.locator("tbody tr")).to_have_count(rows, timeout=TIMEOUT)
    shown = table.inner_text()
    for comparison in expected:
        for row in comparison.rows:
            assert row.term in shown
            assert fmt_interval(row.before) in shown and fmt_interval(row.after) in shown
            assert fmt_overlap(row.overlap) in shown
    expect(page.locator("#estimates-notes")).to_contain_text("midpoint")
    settled(page)
    assert_accessible(page, "Fix page with estimates")
