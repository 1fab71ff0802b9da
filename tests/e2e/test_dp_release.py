"""The Fix page's differential-privacy section in a real browser, driven with the keyboard: a count and a histogram
over a declared domain are released, their error bars are the core's for the ε typed, the true values are beside
them (and not in the download), and a release over the remaining budget is refused with nothing recorded.

Expected numbers come from the core (``accuracy`` of the mechanism at scale Δ/ε with Δ = 1) and from pandas on the
demo table, never from the section's own code. The ledger is the server's: the test reads what is left before it
starts, so it does not depend on what other tests of the session released.
"""

from __future__ import annotations

import io
import re

import pandas as pd
import pytest
from playwright.sync_api import Page, expect

from privdash.application.dp_release import display_digits, ledger_for, table_keys
from privdash.application.services import LoadedDataset, Services
from privdash.application.settings import Settings
from privdash.application.state import ViewState
from privdash.data.demo import people_table
from privdash.dp import DatasetAccount, Mechanism, accuracy
from tests.e2e.conftest import server_of_its_own
from tests.e2e.test_accessibility import assert_accessible, open_numbers, settled

TIMEOUT = 30_000
# Every wait of this module may take as long as a callback on a loaded machine (the default is 5 s).
expect.set_options(timeout=TIMEOUT)


live_settings, live_server = server_of_its_own("privdash-dp")


def number(text: str) -> float:
    return float(text.replace(",", "").strip())


def type_into(page: Page, selector: str, text: str) -> None:
    """Focus a field and replace its text with the keyboard."""
    field = page.locator(selector)
    field.focus()
    expect(field).to_be_focused()
    page.keyboard.press("ControlOrMeta+a")
    page.keyboard.type(text)
    expect(field).to_have_value(text)
    # The browser sends the new value to the server's state a moment after the last key: let it land before a
    # button that reads it is pressed (a person typing is never that fast).
    page.wait_for_timeout(300)


def press_on(page: Page, selector: str, key: str = "Enter") -> None:
    """Move the focus to ``selector`` with Tab from the field before it, then press ``key``."""
    for _ in range(12):
        if page.evaluate("s => !!document.activeElement && document.activeElement.matches(s)", selector):
            page.keyboard.press(key)
            return
        page.keyboard.press("Tab")
    pytest.fail(f"{selector} is not reached with the Tab key")


def choose(page: Page, selector: str, steps: int) -> None:
    """Pick an option of a select with the arrow keys (``steps`` options down from the first) and Enter."""
    page.locator(selector).focus()
    page.keyboard.press("ArrowDown")  # opens the list
    for _ in range(steps):
        page.keyboard.press("ArrowDown")
    page.keyboard.press("Enter")


def demo_account(services: Services, loaded: LoadedDataset) -> DatasetAccount:
    """The account the demo's releases are charged to (its title's, before its first release)."""
    known = ledger_for(services).known(table_keys(services, loaded))
    return known[1] if known is not None else ledger_for(services).account(loaded.title)


def ledger_rows(page: Page) -> int:
    return page.locator("#dp-ledger-table tbody tr").count()


def test_release_count_and_histogram_then_refuse_over_budget(
    page: Page, live_server: str, live_settings: Settings
) -> None:
    services = Services(live_settings)
    loaded = services.dataset("demo:people")
    account = demo_account(services, loaded)
    left = account.remaining[0]
    assert left > 0.1, "an earlier test spent the demo's budget"
    released = len(account.entries)
    eps_count, eps_histogram, eps_over = left / 4, left / 2, left / 2  # the third does not fit: 1.25 x what is left
    people = people_table()
    sexes = people["sex"].value_counts()

    state = services.initial_state(loaded, ViewState())
    page.set_viewport_size({"width": 1400, "height": 1000})
    page.goto(f"{live_server}{state.href('/fix')}")
    expect(page.locator("#dp-card")).to_be_visible(timeout=TIMEOUT)
    expect(page.locator("#dp-column-box")).to_be_hidden()  # a count needs no column

    # A count, with the keyboard: ε, then Tab to Release and Enter.
    type_into(page, "#dp-epsilon", repr(eps_count))
    press_on(page, "#dp-release")
    expect(page.locator("#dp-released")).to_be_visible(timeout=TIMEOUT)
    cells = page.locator("#dp-table tbody tr").first.locator("td")
    expected = accuracy(Mechanism.LAPLACE, 1 / eps_count)  # Δ = 1
    assert number(cells.nth(2).inner_text()) == pytest.approx(expected, rel=5e-3)
    assert number(cells.nth(3).inner_text()) == len(people)  # the true value, for the owner
    assert abs(number(cells.nth(1).inner_text()) - len(people)) < 20 * expected  # noise, not another number
    expect(page.locator("#dp-ledger-table tbody tr")).to_have_count(released + 1)

    # A histogram of sex over the declared domain F, M (plus a category without records).
    choose(page, "#dp-query", 1)
    expect(page.locator("#dp-column-box")).to_be_visible()
    page.locator("#dp-column").focus()
    page.keyboard.type("sex")
    page.keyboard.press("ArrowDown")
    page.keyboard.press("Enter")
    expect(page.locator("#dp-column")).to_have_value("sex")
    type_into(page, "#dp-domain", "F, M, X")
    type_into(page, "#dp-epsilon", repr(eps_histogram))
    press_on(page, "#dp-release")
    rows = page.locator("#dp-table tbody tr")
    expect(rows).to_have_count(3, timeout=TIMEOUT)
    expect(page.locator("#dp-table thead")).to_contain_text("data owner only, not in the download")
    expected = accuracy(Mechanism.LAPLACE, 1 / eps_histogram)
    shown = {}
    for i in range(3):
        label, value, error, true = (rows.nth(i).locator("td").nth(j).inner_text() for j in range(4))
        assert number(error) == pytest.approx(expected, rel=5e-3)
        assert number(true) == sexes.get(label, 0)
        shown[label] = number(value)
    assert list(shown) == ["F", "M", "X"]
    # The chart's whiskers are the same error bars.
    page.locator("#dp-chart .main-svg").first.wait_for(timeout=TIMEOUT)
    whiskers = page.evaluate("() => document.querySelector('#dp-chart .js-plotly-plot').data[0].error_y.array")
    assert whiskers == pytest.approx([expected] * 3)
    expect(page.locator("#dp-budget")).to_contain_text(f"Spent ε = {account.spent[0] + eps_count + eps_histogram:.4g}")
    expect(page.locator("#dp-ledger-table tbody tr")).to_have_count(released + 2)

    # The download: the DP values and error bars, never the true values.
    with page.expect_download(timeout=TIMEOUT) as download:
        page.locator("#dp-download-button").focus()
        page.keyboard.press("Enter")
    table = pd.read_csv(io.StringIO(download.value.path().read_text(encoding="utf-8")))
    assert list(table.columns) == ["sex", "dp_value", "error"]
    assert table["sex"].tolist() == ["F", "M", "X"]
    # The page rounds to the digits worth showing (a tenth of the error bar); the file keeps every digit.
    shown_unit = 10.0 ** -display_digits(expected)
    assert table["dp_value"].to_numpy() == pytest.approx(list(shown.values()), abs=shown_unit / 2 + 1e-9)
    assert table["error"].to_numpy() == pytest.approx([expected] * 3)

    open_numbers(page, "dp-chart")
    settled(page)
    assert_accessible(page, "Fix, a DP histogram released, its chart's numbers open")

    # Over the budget: refused, nothing recorded, the spent total unchanged.
    budget_text = page.locator("#dp-budget").inner_text()
    choose(page, "#dp-query", 0)
    type_into(page, "#dp-epsilon", repr(eps_over))
    press_on(page, "#dp-release")
    refusal = page.locator("#dp-error")
    expect(refusal).to_contain_text("Refused: over the privacy budget", timeout=TIMEOUT)
    expect(refusal).to_contain_text(f"costs ε={eps_over:g}")
    expect(refusal).to_contain_text("Nothing was released")
    expect(page.locator("#dp-released")).to_have_count(0)
    assert page.locator("#dp-budget").inner_text() == budget_text
    assert ledger_rows(page) == released + 2
    assert len(demo_account(services, loaded).entries) == released + 2

    # Bad input: a clear message, nothing spent.
    type_into(page, "#dp-epsilon", "0")
    press_on(page, "#dp-release")
    expect(refusal).to_contain_text(re.compile(r"ε \(epsilon\) must be above 0"), timeout=TIMEOUT)
    assert page.locator("#dp-budget").inner_text() == budget_text
    settled(page)
    assert_accessible(page, "Fix, a DP release refused")
