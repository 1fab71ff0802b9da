"""Hierarchies in the browser: an ARX file refused and one imported for an upload, two categories grouped with the
keyboard, the link naming the hierarchies by id only, and the Fix page generalizing with them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
from playwright.sync_api import Page, expect
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

from privdash.application.state import ViewState
from tests.e2e.test_accessibility import assert_accessible

TIMEOUT = 20_000
SHOTS = Path("/tmp/privdash-hierarchy-screenshots")


def settled(page: Page) -> None:
    expect(page.locator('[data-dash-is-loading="true"]')).to_have_count(0, timeout=TIMEOUT)


def upload(page: Page, path: Path) -> None:
    with page.expect_file_chooser() as chooser:
        page.click("#upload-zone")
    chooser.value.set_files(str(path))


def open_with_enter(page: Page, button: Any) -> Any:
    """The file dialog the focused ``button`` opens on Enter. A late redraw of the page (the previous import's
    message) can take the focus between focusing and pressing: then focus it again, a bounded number of times."""
    for attempt in range(3):
        settled(page)
        button.focus()
        expect(button).to_be_focused(timeout=TIMEOUT)
        try:
            with page.expect_file_chooser(timeout=8_000) as chooser:
                page.keyboard.press("Enter")
            return chooser.value
        except PlaywrightTimeoutError:
            if attempt == 2:
                raise
    raise AssertionError("unreachable")


def import_files(page: Page, paths: list[Path]) -> None:
    with page.expect_file_chooser() as chooser:
        page.click("#hier-upload button")
    chooser.value.set_files([str(p) for p in paths])


def choose(page: Page, select: str, option: str) -> None:
    page.click(select)
    page.get_by_role("option", name=option, exact=True).click()


def state_of(url: str) -> ViewState:
    return ViewState.from_search(url.split("?", 1)[1] if "?" in url else "")


def test_import_group_and_generalize_on_the_fix_page(
    page: Page, live_server: str, data_dir: Path, tmp_path: Path, screenshots: Path
) -> None:
    page.set_viewport_size({"width": 1280, "height": 1000})
    page.goto(f"{live_server}/data")
    upload(page, data_dir / "arx_adult" / "adult_subset.csv")
    expect(page.locator("#dataset-title")).to_have_text("adult_subset.csv", timeout=TIMEOUT)
    expect(page.locator("#hier-levels-table")).to_be_visible(timeout=TIMEOUT)

    # A file that does not cover the column's values is refused with the core's message.
    bad = tmp_path / "adult_hierarchy_race.csv"
    bad.write_text("White;*\nBlack;*\n", encoding="utf-8")
    import_files(page, [bad])
    error = page.locator("#hier-import-error")
    expect(error).to_contain_text("value(s) of column 'race' are not leaves of the hierarchy", timeout=TIMEOUT)
    expect(error).to_contain_text("Asian-Pac-Islander")
    settled(page)
    assert_accessible(page, "Data, a hierarchy file refused")
    assert state_of(page.url).hierarchies is None

    # ARX's file for marital status, matched to its column by its name; the button opens the file dialog from the
    # keyboard too.
    hierarchies = data_dir / "arx_adult" / "hierarchies"
    chooser = open_with_enter(page, page.locator("#hier-upload button"))
    chooser.set_files(str(hierarchies / "adult_hierarchy_marital-status.csv"))
    expect(page.locator("#hier-imported")).to_contain_text(
        "marital-status ← adult_hierarchy_marital-status.csv", timeout=TIMEOUT
    )
    page.wait_for_url(lambda url: state_of(url).hierarchies is not None, timeout=TIMEOUT)
    choose(page, "#hier-column", "marital-status (QI)")
    expect(page.locator("#hier-status")).to_contain_text("Imported from adult_hierarchy_marital-status.csv")
    expect(page.locator("#hier-levels-table tbody tr")).to_have_count(3, timeout=TIMEOUT)
    expect(page.locator("#hier-groups-table")).to_contain_text("spouse not present")

    # Group two categories of workclass with the keyboard: the values, the name, the button.
    choose(page, "#hier-column", "workclass (QI)")
    choose(page, "#hier-builder", "Categories (named groups)")
    expect(page.locator("#hier-group-members")).to_be_visible()
    settled(page)
    members = page.locator("#hier-group-members")
    members.focus()
    for value in ("Federal-gov", "State-gov"):
        page.keyboard.press("Control+a")  # the search text of the value before, if it is kept
        page.keyboard.type(value)
        page.get_by_role("option", name=value, exact=True).wait_for(timeout=TIMEOUT)
        page.keyboard.press("ArrowDown")
        page.keyboard.press("Enter")
    page.keyboard.press("Escape")
    page.locator("#hier-group-name").focus()
    page.keyboard.type("Government")
    page.keyboard.press("Tab")
    expect(page.locator("#hier-group-add")).to_be_focused()
    # The name is sent when its field loses focus: let that update land before the button reads it.
    expect(page.locator("#hier-group-name")).to_have_value("Government")
    settled(page)
    page.keyboard.press("Enter")
    made = "Made in the editor from categories (named groups)"
    expect(page.locator("#hier-status")).to_contain_text(made, timeout=TIMEOUT)
    expect(page.locator("#hier-groups-table")).to_contain_text("Government", timeout=TIMEOUT)
    rows = page.locator("#hier-levels-table tbody tr")
    expect(rows).to_have_count(3)
    expect(rows.nth(1).locator("td").nth(1)).to_have_text("6")  # 7 workclasses, two of them now one group
    settled(page)
    assert_accessible(page, "Data, the hierarchy editor with named groups")
    SHOTS.mkdir(exist_ok=True)
    for width in (1280, 1920):
        page.set_viewport_size({"width": width, "height": 1000})
        page.locator("#hier-card").scroll_into_view_if_needed()
        page.locator("#hier-card").screenshot(path=str(SHOTS / f"hierarchies-{width}.png"))
        if width == 1280:
            page.locator("#hier-card").screenshot(path=str(screenshots / "hierarchies.png"))
    page.set_viewport_size({"width": 1280, "height": 1000})

    # The link names the stored hierarchies by id; no value of them is in it.
    page.wait_for_url(lambda url: "Government" not in url and state_of(url).hierarchies is not None, timeout=TIMEOUT)
    state = state_of(page.url)
    text = json.dumps(state.to_dict())
    assert "Government" not in text and "Federal" not in text and "spouse" not in text

    # The Fix page generalizes workclass with the dataset's hierarchy by default.
    page.goto(f"{live_server}{state.href('/fix')}")
    choose(page, "#fix-generalize-column", "workclass")
    expect(page.locator("#fix-generalize-builder")).to_have_value(
        "The dataset's hierarchy (Data page)", timeout=TIMEOUT
    )
    page.fill("#fix-generalize-level", "1")
    page.keyboard.press("Tab")
    expect(page.locator("#fix-generalize-hint")).to_contain_text("Levels 0–2", timeout=TIMEOUT)
    page.click("#fix-add")
    page.wait_for_url(lambda url: len(state_of(url).fix) == 1, timeout=TIMEOUT)
    step = state_of(page.url).fix[0]
    assert step == {"kind": "generalize", "column": "workclass", "rule": {"builder": "dataset"}, "level": 1}
    settled(page)
    with page.expect_download(timeout=TIMEOUT) as download:
        page.click("#fix-dl-csv")
    fixed = pd.read_csv(download.value.path(), sep=None, engine="python")
    assert "Government" in set(fixed["workclass"])
    assert not {"Federal-gov", "State-gov"} & set(fixed["workclass"])
