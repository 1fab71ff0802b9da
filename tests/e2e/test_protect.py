"""The Fix page's "Perturb and mask" section in a real browser, driven with the keyboard: choose additive noise on one
numerical column, preview it, and read the record linkage the page shows against the core's for the seed the form
holds; the section passes axe in its computed state; the recipe download records that seed and the CSV download is
the core's noisy table.
"""

from __future__ import annotations

import json
from pathlib import Path

from playwright.sync_api import Page, expect

from dashboard.ui.components import fmt_number, fmt_share
from privdash.application.services import Services
from privdash.application.settings import Settings
from privdash.application.state import ViewState
from privdash.data.demo import people_table
from privdash.data.tables import csv_text
from privdash.measure.perturbed import perturbation_risk
from privdash.transform.perturbation import add_noise
from tests.e2e.test_accessibility import assert_accessible, settled

TIMEOUT = 30_000
COLUMN = "transaction_amount"
SHARE = 0.25


def focused_id(page: Page) -> str:
    return str(page.evaluate("() => document.activeElement && document.activeElement.id"))


def choose_with_keys(page: Page, select_id: str, name: str, label: str) -> None:
    """Pick ``label`` in the Mantine Select ``select_id`` (labelled ``name``) with the arrow keys and Enter only."""
    page.focus(f"#{select_id}")
    page.keyboard.press("ArrowDown")  # opens the list
    listbox = page.get_by_role("listbox", name=name)
    expect(listbox).to_be_visible(timeout=TIMEOUT)
    for _ in range(listbox.get_by_role("option").count() + 1):
        if listbox.locator("[data-combobox-selected]").text_content() == label:
            break
        page.keyboard.press("ArrowDown")
    page.keyboard.press("Enter")
    expect(page.locator(f"#{select_id}")).to_have_value(label)


def test_noise_preview_by_keyboard_shows_the_core_linkage(
    page: Page, live_server: str, live_settings: Settings
) -> None:
    services = Services(live_settings)
    state = services.initial_state(services.dataset("demo:people"), ViewState())
    page.set_viewport_size({"width": 1400, "height": 1000})
    page.goto(f"{live_server}{state.href('/fix')}")
    expect(page.locator("#protect-card")).to_be_visible(timeout=TIMEOUT)
    settled(page)

    # The method list is operated with the keyboard: rank swapping shows its own panel, noise comes back.
    choose_with_keys(page, "protect-method", "Method", "Rank swapping")
    expect(page.locator("#protect-swap-p")).to_be_visible()
    expect(page.locator("#protect-noise-share")).to_be_hidden()
    choose_with_keys(page, "protect-method", "Method", "Additive noise")
    expect(page.locator("#protect-noise-share")).to_be_visible()

    # One column: drop the two chosen by default with Backspace, then type and pick the amount.
    page.focus("#protect-noise-columns")
    page.keyboard.press("Backspace")
    page.keyboard.press("Backspace")
    page.keyboard.type("transaction")
    page.keyboard.press("ArrowDown")
    page.keyboard.press("Enter")
    page.keyboard.press("Escape")
    root = page.locator("#protect-noise-columns").locator("xpath=ancestor::div[contains(@class, 'MultiSelect-root')]")
    expect(root.locator(".mantine-MultiSelect-pill")).to_have_text([COLUMN])

    page.focus("#protect-noise-share")
    page.keyboard.press("Control+A")
    page.keyboard.type(str(SHARE))
    seed = int(page.input_value("#protect-seed"))

    # Every control on the way to the button is a stop of the Tab key; Enter presses the button.
    page.focus("#protect-method")
    visited = []
    for _ in range(20):
        page.keyboard.press("Tab")
        visited.append(focused_id(page))
        if visited[-1] == "protect-run":
            break
    assert visited[-1] == "protect-run", visited
    for control in ("protect-noise-columns", "protect-noise-method", "protect-noise-share", "protect-seed"):
        assert control in visited, visited
    page.keyboard.press("Enter")

    noisy = add_noise(people_table(), columns=[COLUMN], share=SHARE, seed=seed).data
    expected = perturbation_risk(people_table(), noisy, [COLUMN])
    expect(page.locator("#protect-linkage .stat-value")).to_have_text(fmt_share(expected.linkage), timeout=TIMEOUT)
    expect(page.locator("#protect-interval .stat-value")).to_have_text(fmt_share(expected.interval_disclosure))
    expect(page.locator("#protect-il1s .stat-value")).to_have_text(fmt_number(expected.il1s))
    expect(page.locator("#protect-applied")).to_contain_text(f"seed {seed}")
    expect(page.locator("#protect-seed-note")).to_contain_text("never publish it")
    settled(page)
    assert_accessible(page, "Fix, perturbation previewed")

    # The recipe holds the step as applied, seed included.
    with page.expect_download() as download:
        page.click("#protect-dl-recipe")
    recipe = json.loads(Path(download.value.path()).read_text(encoding="utf-8"))
    assert recipe["steps"] == [
        {"kind": "add_noise", "params": {"columns": [COLUMN], "share": SHARE, "method": "uncorrelated", "seed": seed}}
    ]
    # The table is the core's noisy table, written formula-safe.
    with page.expect_download() as download:
        page.click("#protect-dl-csv")
    assert Path(download.value.path()).read_text(encoding="utf-8") == csv_text(noisy)
