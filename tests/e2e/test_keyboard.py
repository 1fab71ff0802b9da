"""Keyboard only: from an uploaded file to the share link with Tab, Enter, arrow keys and Escape; the Risk page's
verdict takes the focus after "Check the risk"; a built-in dataset opened from its list; data grids that are one
stop of the Tab key; the postcode threshold slider.

Every stop of the Tab key on the way must show a focus ring: a solid outline of 2 px or more whose colour has a
contrast of 3:1 or more against the background it is drawn on (WCAG 2.4.7 and 1.4.11), checked here with the WCAG
formula on the browser's computed styles.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from playwright.sync_api import Page, expect

from dashboard.ui.components import fmt_count
from privdash.application.postcodes import DEFAULT_SETTINGS
from privdash.application.state import ViewState

TIMEOUT = 30_000
VIEWPORT = {"width": 1400, "height": 1000}

#: The focused element (or, for a hidden native input, the part drawn for it), its outline and the background the
#: outline lies on (the first opaque background among its ancestors; inside a grid the ring is drawn on the cell).
FOCUS = """() => {
    let el = document.activeElement;
    if (!el || el === document.body) return null;
    const box = el.getBoundingClientRect();
    if ((box.width < 2 || box.height < 2 || getComputedStyle(el).opacity === "0") && el.id) {
        const drawn = [el.nextElementSibling, document.querySelector(`label[for="${CSS.escape(el.id)}"]`)];
        el = drawn.find(d => d && getComputedStyle(d).outlineStyle !== "none") || drawn[1] || el;
    }
    const style = getComputedStyle(el);
    const inside = parseFloat(style.outlineOffset) < 0;
    let node = inside ? el : el.parentElement, background = "rgb(255, 255, 255)";
    for (; node; node = node.parentElement) {
        const color = getComputedStyle(node).backgroundColor;
        if (color && color !== "transparent" && !/^rgba\\(.*, 0\\)$/.test(color)) { background = color; break; }
    }
    const active = document.activeElement;
    return {
        what: `${active.tagName.toLowerCase()}#${active.id} ${active.getAttribute("aria-label") || ""}`
            + ` ${(active.textContent || "").trim().slice(0, 40)}`,
        style: style.outlineStyle, width: parseFloat(style.outlineWidth), color: style.outlineColor, background,
    };
}"""


def _luminance(css_color: str) -> float:
    channels = [int(v) / 255 for v in re.findall(r"\d+", css_color)[:3]]
    linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def contrast(a: str, b: str) -> float:
    """WCAG contrast ratio of two CSS ``rgb(...)`` colours."""
    high, low = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def assert_focus_visible(page: Page) -> dict[str, Any] | None:
    """The focused element shows a ring of 2 px or more at 3:1 against its background (None: the page has no
    focus, between the last stop and the first one)."""
    ring = page.evaluate(FOCUS)
    if ring is None:
        return None
    assert ring["style"] not in ("none", "hidden") and ring["width"] >= 2, f"no focus ring on {ring['what']}"
    ratio = contrast(ring["color"], ring["background"])
    assert ratio >= 3, f"focus ring of {ring['what']}: {ring['color']} on {ring['background']} is {ratio:.2f}:1"
    return ring


def focused_in(page: Page, selector: str) -> bool:
    return bool(page.evaluate("s => !!(document.activeElement && document.activeElement.closest(s))", selector))


def tab_to(page: Page, selector: str, limit: int, key: str = "Tab") -> list[str]:
    """Press ``key`` until the focus is in ``selector``, checking the focus ring at every stop; the stops passed."""
    stops: list[str] = []
    for _ in range(limit):
        page.keyboard.press(key)
        ring = assert_focus_visible(page)
        stops.append(ring["what"] if ring else "(page)")
        if focused_in(page, selector):
            return stops
    raise AssertionError(f"{selector} not reached in {limit} presses of {key}: {stops}")


def settled(page: Page) -> None:
    expect(page.locator('[data-dash-is-loading="true"]')).to_have_count(0, timeout=TIMEOUT)
    # A grid that is not on show (a closed tab, an empty panel) is drawn when it is shown.
    expect(page.locator(".ag-delay-render:visible")).to_have_count(0, timeout=TIMEOUT)


def checked_role(page: Page, column: str) -> str:
    return page.locator(f'tr[data-column="{column}"] input[type="radio"]:checked').get_attribute("value") or ""


def test_upload_to_share_link_with_the_keyboard_only(page: Page, live_server: str, data_dir: Path) -> None:
    page.set_viewport_size(VIEWPORT)
    page.goto(f"{live_server}/data")
    expect(page.locator("#upload-zone")).to_be_visible(timeout=TIMEOUT)
    settled(page)

    # The first stop is the skip link; it moves the focus to the main content and leaves the address alone.
    page.keyboard.press("Tab")
    expect(page.locator("#skip-link")).to_be_focused()
    assert_focus_visible(page)
    page.keyboard.press("Enter")
    expect(page.locator("#main-content")).to_be_focused()
    assert "#" not in page.url

    # Upload: the drop zone opens the file dialog on Enter (the listener is set before, so no dialog is missed).
    page.once("filechooser", lambda chooser: chooser.set_files(str(data_dir / "arx_adult" / "adult_subset.csv")))
    tab_to(page, "#upload-zone", 6)
    page.keyboard.press("Enter")
    expect(page.locator("#dataset-title")).to_have_text("adult_subset.csv", timeout=TIMEOUT)
    expect(page.locator("#preview-grid .ag-row").first).to_be_visible(timeout=TIMEOUT)
    settled(page)

    # The preview grid is one stop: arrow keys move inside it, one Tab leaves it.
    tab_to(page, "#preview-grid", 30)
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowDown")
    expect(page.locator("#preview-grid .ag-cell:focus")).to_have_count(1)
    page.keyboard.press("Tab")
    assert not focused_in(page, "#preview-grid")
    assert_focus_visible(page)

    # A role is a group of radio buttons named by its column: the arrow keys choose another role.
    columns = page.locator("tr[data-column]").evaluate_all("rows => rows.map(r => r.dataset.column)")
    tab_to(page, 'tr[data-column="education"] input[type="radio"]', 20)
    group = page.locator('tr[data-column="education"] [role="radiogroup"]')
    expect(group).to_have_attribute("aria-label", "Role of education")
    before = checked_role(page, "education")
    page.keyboard.press("ArrowRight")
    expect(page.locator('tr[data-column="education"] input[type="radio"]:checked')).not_to_have_attribute(
        "value", before, timeout=TIMEOUT
    )
    assert focused_in(page, 'tr[data-column="education"]')
    chosen = checked_role(page, "education")
    settled(page)

    # "Check the risk" is the next stop after the last column's type.
    stops = tab_to(page, "#to-risk", 3 * len(columns))
    assert stops[-2].startswith("input#") and f"Type of {columns[-1]}" in stops[-2], stops[-3:]
    page.keyboard.press("Enter")
    expect(page.locator("#card-k")).to_be_visible(timeout=TIMEOUT)
    assert ViewState.from_search(page.url.split("?", 1)[1]).roles["education"].value == chosen

    # The share dialog: Enter opens it with the focus on the link, Tab reaches Copy, Escape closes it.
    tab_to(page, "#share-button", 60)
    share = page.locator("#share-button")
    expect(share).to_have_attribute("aria-haspopup", "dialog")
    page.keyboard.press("Enter")
    expect(page.get_by_role("dialog")).to_be_visible(timeout=TIMEOUT)
    expect(page.locator("#share-link")).to_be_focused()
    expect(page.locator("#share-link")).to_have_value(page.url, timeout=TIMEOUT)
    expect(share).to_have_attribute("aria-expanded", "true", timeout=TIMEOUT)
    page.keyboard.press("Tab")
    expect(page.locator("#copy-link")).to_be_focused()
    assert_focus_visible(page)
    page.keyboard.press("Enter")
    expect(page.locator("#copy-status")).not_to_have_text("", timeout=TIMEOUT)
    for _ in range(3):  # the focus stays in the dialog while it is open
        page.keyboard.press("Tab")
        assert focused_in(page, '[role="dialog"]')
    page.keyboard.press("Escape")
    expect(page.get_by_role("dialog")).to_have_count(0, timeout=TIMEOUT)
    expect(share).to_be_focused()
    expect(share).to_have_attribute("aria-expanded", "false", timeout=TIMEOUT)


def test_check_the_risk_puts_the_focus_on_the_verdict(page: Page, live_server: str) -> None:
    """After "Check the risk" the focus is on the Risk page's verdict (it stayed on the page itself, and Share was
    24 presses of Tab away): the keyboard goes on from the result."""
    page.set_viewport_size(VIEWPORT)
    page.goto(f"{live_server}/data")
    expect(page.locator("#to-risk")).to_be_visible(timeout=TIMEOUT)
    settled(page)
    page.locator("#to-risk").focus()  # (the way there by Tab is walked in the test above)
    page.keyboard.press("Enter")
    verdict = page.locator("#verdict")
    expect(verdict).to_be_focused(timeout=TIMEOUT)
    expect(verdict).to_have_attribute("tabindex", "-1")  # focusable by the page, no extra stop of the Tab key
    assert_focus_visible(page)
    settled(page)
    expect(verdict).to_be_focused()  # the page's own updates did not take it away
    # Tab goes on to the first control after the verdict; Shift+Tab goes back through the page's controls.
    page.keyboard.press("Tab")
    after = "e => !!(e.compareDocumentPosition(document.activeElement) & Node.DOCUMENT_POSITION_FOLLOWING)"
    assert verdict.evaluate(after)
    assert_focus_visible(page)
    # Opened from an address, the page leaves the focus alone (nobody asked for the verdict).
    page.goto(page.url)
    expect(page.locator("#verdict")).to_be_visible(timeout=TIMEOUT)
    settled(page)
    assert page.evaluate("document.activeElement === document.body")


def test_open_a_dataset_and_leave_each_grid_with_one_tab(page: Page, live_server: str) -> None:
    page.set_viewport_size(VIEWPORT)
    page.goto(f"{live_server}/data")
    expect(page.locator("#demo-select")).to_be_visible(timeout=TIMEOUT)
    settled(page)

    # The list of built-in datasets opens with an arrow key and closes with Escape; Open opens the chosen one.
    tab_to(page, "#demo-select", 12)
    chosen = page.locator("#demo-select").input_value()
    page.keyboard.press("ArrowDown")
    expect(page.get_by_role("listbox")).to_be_visible(timeout=TIMEOUT)
    page.keyboard.press("Escape")
    expect(page.get_by_role("listbox")).to_have_count(0, timeout=TIMEOUT)
    expect(page.locator("#demo-select")).to_have_value(chosen)
    page.keyboard.press("Tab")
    expect(page.locator("#demo-open")).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.locator("#dataset-title")).to_have_text(chosen, timeout=TIMEOUT)
    expect(page.locator("#preview-grid .ag-row").first).to_be_visible(timeout=TIMEOUT)
    settled(page)

    # 5,000 rows: Tab enters the grid at its header, and one Tab leaves it, forwards or backwards.
    tab_to(page, "#preview-grid", 30)
    for key in ("ArrowDown", "ArrowDown", "ArrowRight"):
        page.keyboard.press(key)
        assert focused_in(page, "#preview-grid")
        assert_focus_visible(page)
    page.keyboard.press("Tab")
    assert not focused_in(page, "#preview-grid")
    after = page.evaluate("document.activeElement.outerHTML")
    page.keyboard.press("Shift+Tab")
    assert focused_in(page, "#preview-grid")
    # The grid puts the focus back on a cell or header of its own a moment after it is entered (a second, deferred
    # focus call follows the first on a busy machine): let it settle, as a person's next key press always does.
    expect(page.locator("#preview-grid :is(.ag-cell, .ag-header-cell):focus")).to_have_count(1, timeout=TIMEOUT)
    page.wait_for_timeout(500)
    page.keyboard.press("Shift+Tab")
    expect(page.locator("#preview-grid :focus")).to_have_count(0, timeout=TIMEOUT)
    page.keyboard.press("Tab")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.outerHTML") == after

    # The Risk page's class grid, reached from its link on the Data page.
    tab_to(page, "#to-risk", 60)
    page.keyboard.press("Enter")
    expect(page.locator("#class-grid .ag-row").first).to_be_visible(timeout=TIMEOUT)
    settled(page)
    tab_to(page, "#class-grid", 60)
    page.keyboard.press("ArrowDown")
    expect(page.locator("#class-grid .ag-cell:focus")).to_have_count(1)
    page.keyboard.press("Tab")
    assert not focused_in(page, "#class-grid")
    assert_focus_visible(page)


def test_postcode_threshold_slider_moves_with_arrow_keys(page: Page, live_server: str) -> None:
    page.set_viewport_size(VIEWPORT)
    page.goto(f"{live_server}/postcodes")
    expect(page.locator("#pc-map .maplibregl-canvas")).to_be_visible(timeout=TIMEOUT)
    settled(page)
    tab_to(page, '[role="slider"]', 40)
    slider = page.locator('[role="slider"]')
    expect(slider).to_have_attribute("aria-label", "Minimum population (people)")
    page.keyboard.press("ArrowRight")
    raised = DEFAULT_SETTINGS.threshold + 1_000
    expect(page.locator("#pc-threshold-label")).to_have_text(
        f"Minimum population: {fmt_count(raised)} people", timeout=TIMEOUT
    )
    page.wait_for_url(lambda url: "?" in url, timeout=TIMEOUT)
    settings = ViewState.from_search(page.url.split("?", 1)[1]).geo
    assert settings.get("t") == raised


def test_navigation_folds_into_a_menu_on_a_narrow_screen(page: Page, live_server: str) -> None:
    """At 360 px (a phone, or 1,440 px zoomed to 400 %) the page reflows without sideways scrolling and the
    navigation is a menu opened and used with the keyboard."""
    page.set_viewport_size({"width": 360, "height": 800})
    page.goto(f"{live_server}/data")
    expect(page.locator("#upload-zone")).to_be_visible(timeout=TIMEOUT)
    settled(page)
    assert page.evaluate("document.documentElement.scrollWidth") <= 360
    fix_link = page.get_by_role("navigation", name="Pages").locator('a[href^="/fix"]')
    expect(fix_link).not_to_be_in_viewport()
    burger = page.locator("#nav-burger")
    tab_to(page, "#nav-burger", 4)
    page.keyboard.press("Enter")
    expect(burger).to_have_attribute("aria-expanded", "true", timeout=TIMEOUT)
    expect(fix_link).to_be_in_viewport(timeout=TIMEOUT)
    tab_to(page, 'nav a[href^="/fix"]', 10)
    page.keyboard.press("Enter")
    expect(page.get_by_role("heading", level=1)).to_have_text("Fix", timeout=TIMEOUT)
    expect(burger).to_have_attribute("aria-expanded", "false", timeout=TIMEOUT)
    # The current page is announced, not only highlighted: exactly one link carries aria-current.
    expect(fix_link).to_have_attribute("aria-current", "page", timeout=TIMEOUT)
    expect(page.locator('nav a[aria-current="page"]')).to_have_count(1)
    expect(fix_link).not_to_be_in_viewport(timeout=TIMEOUT)
