"""The Fix page's measured attacks in a real browser: the unchanged demo table, a generalized fix and an uploaded
release are attacked, and the linkage rate shown equals the core's ``attack_release`` on tables made with the core's
own functions. The computed state passes axe-core, and the section is driven with the keyboard.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from playwright.sync_api import Page, expect

from privdash.application.attack import fmt_rate
from privdash.application.services import Services
from privdash.application.settings import Settings
from privdash.application.state import ViewState
from privdash.attack import AttackReport, attack_release
from privdash.data.demo import people_table
from privdash.data.tables import csv_text
from privdash.transform.generalization import generalize
from privdash.transform.hierarchy import interval_hierarchy, postcode_hierarchy
from tests.e2e.test_accessibility import assert_accessible, open_numbers, settled

TIMEOUT = 30_000
QIS = ["age", "sex", "postcode"]
AGE = {"kind": "generalize", "column": "age", "rule": {"builder": "intervals", "widths": [5, 10, 20]}, "level": 2}
AREA = {"kind": "generalize", "column": "postcode", "rule": {"builder": "postcodes", "levels": ["district", "area"]}}
AREA = {**AREA, "level": 2}


def state_for(live_settings: Settings, fix: tuple[dict, ...] = ()) -> ViewState:
    services = Services(live_settings)
    state = services.initial_state(services.dataset("demo:people"), ViewState())
    return state.with_quasi_identifiers(QIS, ["diagnosis"]).updated(fix=fix)


def generalized_people() -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    """The demo and the demo with age by 10 years and postcodes to their area, with the core's functions."""
    data = people_table()
    hierarchies = {
        "age": interval_hierarchy(data["age"], widths=[5, 10, 20]),
        "postcode": postcode_hierarchy(data["postcode"], levels=["district", "area"]),
    }
    return data, generalize(data, {"age": 2, "postcode": 2}, hierarchies).data, hierarchies


def shown_linkage(page: Page) -> str:
    return page.locator("#attack-row-linkage .attack-rate").inner_text()


def attack_by_keyboard(page: Page) -> None:
    """From the release choice, Tab to the button and press Enter."""
    page.get_by_role("radio", name="The fix previewed above").focus()
    for _ in range(12):
        if page.evaluate("document.activeElement && document.activeElement.id") == "attack-run":
            break
        page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.id") == "attack-run", "the button is not reachable with Tab"
    page.keyboard.press("Enter")


def expect_linkage(page: Page, report: AttackReport) -> None:
    expect(page.locator("#attack-row-linkage .attack-rate")).to_have_text(
        fmt_rate(report.linkage.targets.rate), timeout=TIMEOUT
    )


def test_attack_the_unfixed_table_and_a_fix(page: Page, live_server: str, live_settings: Settings) -> None:
    data, generalized, hierarchies = generalized_people()
    unchanged = attack_release(data, data, QIS, sensitive="diagnosis")
    fixed = attack_release(data, generalized, QIS, sensitive="diagnosis", hierarchies=hierarchies)
    assert fixed.linkage.targets.rate < unchanged.linkage.targets.rate  # the fix makes a visible difference

    page.set_viewport_size({"width": 1400, "height": 1000})
    page.goto(f"{live_server}{state_for(live_settings).href('/fix')}")
    expect(page.locator("#attack-run")).to_be_visible(timeout=TIMEOUT)
    expect(page.locator("#attack-table")).to_have_count(0)  # nothing computed on load
    attack_by_keyboard(page)
    expect_linkage(page, unchanged)
    expect(page.locator("#attack-sentences li")).to_have_count(3)
    first = page.locator("#attack-sentences li[data-attack='linkage']")
    expect(first).to_contain_text(f"finds a person's record {fmt_rate(unchanged.linkage.targets.rate)} of the time")
    expect(page.locator("#attack-row-linkage")).to_contain_text(
        f"prosecutor average {fmt_rate(unchanged.predicted['prosecutor_average'])}"
    )
    open_numbers(page, "attack-chart")
    expect(page.locator("#attack-chart-figure .chart-data table tbody tr")).to_have_count(9)
    settled(page)
    assert_accessible(page, "Fix page, attacks computed")

    # The fix of the link: the preview's generalized table is attacked.
    page.goto(f"{live_server}{state_for(live_settings, (AGE, AREA)).href('/fix')}")
    expect(page.locator("#attack-run")).to_be_visible(timeout=TIMEOUT)
    page.click("#attack-run")
    expect_linkage(page, fixed)
    expect(page.locator("#attack-headline")).to_contain_text("The fix previewed above (2 steps)")


def test_attack_an_uploaded_release(page: Page, live_server: str, live_settings: Settings, tmp_path: Path) -> None:
    data, generalized, hierarchies = generalized_people()
    release = tmp_path / "release.csv"
    release.write_text(csv_text(generalized[["age", "sex", "postcode", "diagnosis"]]), encoding="utf-8")
    wrong = tmp_path / "renamed.csv"
    wrong.write_text(csv_text(generalized.rename(columns={"sex": "gender"})), encoding="utf-8")
    # Only the released columns tell whether a released record is the target's own.
    partial = attack_release(data, pd.read_csv(release), QIS, sensitive="diagnosis", hierarchies=hierarchies)

    page.set_viewport_size({"width": 1400, "height": 1000})
    page.goto(f"{live_server}{state_for(live_settings).href('/fix')}")
    expect(page.locator("#attack-run")).to_be_visible(timeout=TIMEOUT)
    page.set_input_files("#attack-upload input[type=file]", str(wrong))
    expect(page.locator("#attack-upload-file")).to_contain_text("renamed.csv", timeout=TIMEOUT)
    expect(page.get_by_role("radio", name="A released table I upload")).to_be_checked()
    page.click("#attack-run")
    expect(page.locator("#attack-error")).to_contain_text(
        "The released table has columns the original does not: 'gender'", timeout=TIMEOUT
    )
    page.set_input_files("#attack-upload input[type=file]", str(release))
    expect(page.locator("#attack-upload-file")).to_contain_text("release.csv", timeout=TIMEOUT)
    page.click("#attack-run")
    expect_linkage(page, partial)
    expect(page.locator("#attack-headline")).to_contain_text("release.csv")
