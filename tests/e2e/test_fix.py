"""The Fix page in a real browser: open a fixed view from a link, add a step, undo it, download the fixed table.

The numbers on the page are checked against the core applied directly (generalization, record suppression and
the diagnosis), not against the page's own code. Writes ``docs/screenshots/fix.png``.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from playwright.sync_api import Page, expect

from dashboard.ui.components import fmt_count
from privdash.application.services import Services
from privdash.application.settings import Settings
from privdash.application.state import ViewState
from privdash.data.demo import people_table
from privdash.measure.diagnose import diagnose
from privdash.transform.generalization import generalize
from privdash.transform.hierarchy import interval_hierarchy, postcode_hierarchy
from privdash.transform.suppression import record_suppression

TIMEOUT = 30_000
QIS = ["age", "sex", "postcode"]
AGE = {"kind": "generalize", "column": "age", "rule": {"builder": "intervals", "widths": [5, 10, 20]}, "level": 2}
AREA = {"kind": "generalize", "column": "postcode", "rule": {"builder": "postcodes", "levels": ["district", "area"]}}
AREA = {**AREA, "level": 2}


def settled(page: Page) -> None:
    page.wait_for_function("!document.querySelector('[data-dash-is-loading=\"true\"]')", timeout=TIMEOUT)


def steps_in(url: str) -> tuple[dict, ...]:
    """The step list of the view state in ``url``."""
    return tuple(ViewState.from_search(url.split("?", 1)[1] if "?" in url else "").fix)


def expected_tables() -> tuple[pd.DataFrame, pd.DataFrame]:
    """The demo generalized (age by 10 years, postcode to its area), and then record-suppressed to k = 5 within
    20% of the rows, with the core's functions."""
    data = people_table()
    generalized = generalize(
        data,
        {"age": 2, "postcode": 2},
        {
            "age": interval_hierarchy(data["age"], widths=[5, 10, 20]),
            "postcode": postcode_hierarchy(data["postcode"], levels=["district", "area"]),
        },
    ).data
    suppressed = record_suppression(generalized, quasi_identifiers=QIS, max_suppression=0.2, k=5).data
    return generalized, suppressed


def link_state(live_settings: Settings) -> ViewState:
    services = Services(live_settings)
    state = services.initial_state(services.dataset("demo:people"), ViewState())
    return state.with_quasi_identifiers(QIS, ["diagnosis"]).updated(fix=(AGE, AREA))


def test_fix_page_add_undo_download(page: Page, live_server: str, live_settings: Settings, screenshots: Path) -> None:
    generalized, suppressed = expected_tables()
    k_generalized = diagnose(generalized, QIS, sensitive=["diagnosis"]).k
    k_suppressed = diagnose(suppressed, QIS, sensitive=["diagnosis"]).k
    assert k_suppressed >= 5 > k_generalized  # the step makes a visible difference

    state = link_state(live_settings)
    page.set_viewport_size({"width": 1500, "height": 1100})
    page.goto(f"{live_server}{state.href('/fix')}")
    after_k = page.locator("#fix-after-k .stat-value")
    expect(after_k).to_have_text(fmt_count(k_generalized), timeout=TIMEOUT)
    expect(page.locator("#fix-step-list .fix-step")).to_have_count(2)

    # Add record suppression to k = 5 within 20% of the records.
    page.click("#fix-technique")
    page.get_by_role("option", name="Record suppression").click()
    expect(page.locator("#fix-record-suppression-k")).to_be_visible()
    page.fill("#fix-record-suppression-k", "5")
    page.fill("#fix-record-suppression-max-suppression", "20")
    page.keyboard.press("Tab")
    page.click("#fix-add")
    expect(after_k).to_have_text(fmt_count(k_suppressed), timeout=TIMEOUT)
    expect(page.locator("#fix-step-list .fix-step")).to_have_count(3)
    expect(page.locator("#fix-after-k .stat-status")).to_have_text("pass")
    expect(page.locator("#fix-removed")).to_contain_text(
        f"{fmt_count(len(generalized) - len(suppressed))} of {fmt_count(len(generalized))} records removed"
    )
    page.wait_for_url(lambda url: len(steps_in(url)) == 3, timeout=TIMEOUT)
    assert [step["kind"] for step in steps_in(page.url)] == ["generalize", "generalize", "record_suppression"]
    page.set_viewport_size({"width": 1500, "height": 2300})
    page.locator("#fix-dist-chart .main-svg").first.wait_for(timeout=TIMEOUT)
    page.screenshot(path=str(screenshots / "fix.png"))
    page.set_viewport_size({"width": 1500, "height": 1100})

    # Download the fixed table: the core's suppressed table.
    with page.expect_download(timeout=TIMEOUT) as download:
        page.click("#fix-dl-csv")
    table = pd.read_csv(download.value.path())
    assert len(table) == len(suppressed)
    assert table["customer_id"].tolist() == suppressed["customer_id"].tolist()
    assert table["age"].tolist() == suppressed["age"].tolist()
    assert set(table["postcode"]) == set(suppressed["postcode"])

    # Undo: back to the two generalizations, in the page and in the link.
    page.click("#fix-undo")
    expect(after_k).to_have_text(fmt_count(k_generalized), timeout=TIMEOUT)
    expect(page.locator("#fix-step-list .fix-step")).to_have_count(2)
    page.wait_for_url(lambda url: len(steps_in(url)) == 2, timeout=TIMEOUT)
    assert steps_in(page.url) == state.fix
