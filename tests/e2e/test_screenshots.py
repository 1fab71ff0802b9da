"""Every page in its main states on the demo dataset at 1280, 1440 and 1920 px wide: a full-page screenshot of each
(``docs/screenshots/<page>-<state>-<width>.png``) and no clipped text.

Clipped text: a visible label, heading, card title, badge, table or grid header, button or select whose content is
wider than its box (``scrollWidth > clientWidth + 1``: cut off or ended with "..."), or a word of one broken over two
lines (a badge or a narrow column pushing "k-anonymity" onto "k-" and "anonymity"). No card's content may be wider
than the card, a grid that is meant to fit its card (:data:`GRIDS_THAT_FIT`) must not scroll sideways (its rightmost
columns would be cut off), and no page may make AG Grid warn (warning #29: a grid sized while hidden, at zero width).

Only the pages in :data:`PAGES_CHECKED` are asserted; the others are opened, photographed and their offenders
printed (run with ``-s``), so that a page being reworked can join the list once it is clean.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from privdash.application.services import Services
from privdash.application.settings import Settings
from privdash.application.state import ViewState

TIMEOUT = 60_000
WIDTHS = (1280, 1440, 1920)
HEIGHT = 900
#: Pages whose offenders fail the test (every page; a page being reworked may leave the list while it is unclean).
PAGES_CHECKED = ("data", "risk", "postcodes", "fix")
#: Grids whose columns must fit their card; the data preview and the per-class grid have a column per attribute and
#: scroll sideways by design.
GRIDS_THAT_FIT = ("combination-grid", "failing-grid", "source-failing-grid", "order-grid")
FIX_QIS = ["age", "sex", "postcode"]
FIX_STEPS = (
    {"kind": "generalize", "column": "age", "rule": {"builder": "intervals", "widths": [5, 10, 20]}, "level": 2},
    {"kind": "generalize", "column": "postcode", "rule": {"builder": "postcodes", "levels": ["district", "area"]}}
    | {"level": 2},
)

#: The offenders on the page: clipped text, words broken over two lines, tables wider than their column, grids that
#: scroll sideways.
OFFENDERS = """(grids) => {
    const SELECTOR = [
        "label", "h1", "h2", "h3", "h4", ".card-title", ".stat-label", ".stat-value", ".mantine-Badge-label",
        "th", ".ag-header-cell-text", "button", ".mantine-Button-label", ".mantine-SegmentedControl-label",
        ".mantine-Tabs-tabLabel", ".mantine-Alert-title", ".mantine-Select-input", ".mantine-InputWrapper-label",
    ].join(",");
    const shown = e => e.getClientRects().length > 0 && e.checkVisibility({visibilityProperty: true});
    const name = e => {
        const owner = e.closest("[id]");
        const classes = String(e.className || "").split(" ").filter(c => c && !c.startsWith("m_")).slice(0, 2);
        return `${e.tagName.toLowerCase()}${e.id ? "#" + e.id : ""}${classes.map(c => "." + c).join("")}`
            + (owner && owner !== e ? ` in #${owner.id}` : "");
    };
    const found = [];
    for (const e of document.querySelectorAll(SELECTOR)) {
        if (!shown(e) || getComputedStyle(e).display === "inline") continue;
        const text = (e.value || e.innerText || "").replace(/\\s+/g, " ").trim();
        if (!text) continue;
        if (e.scrollWidth > e.clientWidth + 1) {
            found.push({kind: "clipped", element: name(e), text: text.slice(0, 80),
                        scrollWidth: e.scrollWidth, clientWidth: e.clientWidth});
        }
        if (e.tagName === "INPUT") continue;
        const walker = document.createTreeWalker(e, NodeFilter.SHOW_TEXT);
        for (let node = walker.nextNode(); node; node = walker.nextNode()) {
            for (const match of node.data.matchAll(/\\S{2,}/g)) {
                const range = document.createRange();
                range.setStart(node, match.index);
                range.setEnd(node, match.index + match[0].length);
                const lines = new Set([...range.getClientRects()].filter(r => r.width > 0).map(r => Math.round(r.top)));
                if (lines.size > 1) {
                    found.push({kind: "word broken over lines", element: name(e), text: text.slice(0, 80),
                                word: match[0], clientWidth: e.clientWidth});
                }
            }
        }
    }
    for (const e of document.querySelectorAll(".mantine-Card-root")) {
        if (shown(e) && e.scrollWidth > e.clientWidth + 1) {
            const title = e.querySelector(".card-title");
            found.push({kind: "content wider than its card", element: name(e),
                        text: title ? title.innerText : "", scrollWidth: e.scrollWidth, clientWidth: e.clientWidth});
        }
    }
    // A table wider than the column it sits in runs under its neighbour (a grid column of the page).
    for (const e of document.querySelectorAll("table")) {
        const column = e.closest(".mantine-Grid-col");
        if (!shown(e) || !column) continue;
        let scrolls = false;  // a table in a scroll container scrolls sideways by design
        for (let a = e.parentElement; a && a !== column; a = a.parentElement) {
            if (["auto", "scroll", "hidden"].includes(getComputedStyle(a).overflowX)) scrolls = true;
        }
        if (scrolls) continue;
        const over = e.getBoundingClientRect().right - column.getBoundingClientRect().right;
        if (over > 1) {
            found.push({kind: "table wider than its column", element: name(e), text: (e.innerText || "").slice(0, 40),
                        scrollWidth: Math.round(e.getBoundingClientRect().width), clientWidth: column.clientWidth});
        }
    }
    for (const id of grids) {
        const viewport = document.querySelector(`#${id} .ag-center-cols-viewport`);
        if (viewport && shown(viewport) && viewport.scrollWidth > viewport.clientWidth + 1) {
            found.push({kind: "grid columns cut off", element: `#${id}`, text: "",
                        scrollWidth: viewport.scrollWidth, clientWidth: viewport.clientWidth});
        }
    }
    // One entry per element and kind (a broken label is one offender, not one per word).
    const seen = new Set();
    return found.filter(o => {
        const key = `${o.kind}|${o.element}|${o.text}`;
        return seen.has(key) ? false : (seen.add(key), true);
    });
}"""


def settled(page: Page) -> None:
    expect(page.locator('[data-dash-is-loading="true"]')).to_have_count(0, timeout=TIMEOUT)
    # A grid in a tab that is not shown stays unpainted: only the grids on show must be painted.
    expect(page.locator(".ag-delay-render:visible")).to_have_count(0, timeout=TIMEOUT)


def demo_state(live_settings: Settings) -> ViewState:
    services = Services(live_settings)
    return services.initial_state(services.dataset("demo:people"), ViewState())


def open_data(page: Page, base: str, state: ViewState) -> None:
    page.goto(f"{base}{state.href('/data')}")
    page.locator("#preview-grid .ag-row").first.wait_for(timeout=TIMEOUT)
    page.locator("#order-grid .ag-row").first.wait_for(timeout=TIMEOUT)


def open_risk(page: Page, base: str, state: ViewState) -> None:
    page.goto(f"{base}{state.href('/risk')}")
    page.locator("#class-grid .ag-row").first.wait_for(timeout=TIMEOUT)
    page.locator("#combination-grid .ag-row").first.wait_for(timeout=TIMEOUT)


def open_postcodes(page: Page, base: str, state: ViewState) -> None:
    page.goto(f"{base}{state.href('/postcodes')}")
    page.locator("#pc-map .maplibregl-canvas").wait_for(timeout=TIMEOUT)
    expect(page.locator("#apply-button")).to_be_visible(timeout=TIMEOUT)


def apply_postcodes(page: Page, base: str, state: ViewState) -> None:
    open_postcodes(page, base, state)
    settled(page)
    page.click("#apply-button")
    expect(page.locator("#apply-table")).to_be_visible(timeout=TIMEOUT)


def open_fix(page: Page, base: str, state: ViewState) -> None:
    page.goto(f"{base}{state.href('/fix')}")
    expect(page.locator("#fix-verdict")).to_be_visible(timeout=TIMEOUT)


def open_fix_steps(page: Page, base: str, state: ViewState) -> None:
    fixed = state.with_quasi_identifiers(FIX_QIS, ["diagnosis"]).updated(fix=FIX_STEPS)
    page.goto(f"{base}{fixed.href('/fix')}")
    expect(page.locator("#fix-after-k .stat-value")).to_be_visible(timeout=TIMEOUT)
    expect(page.locator("#fix-step-list .fix-step")).to_have_count(2, timeout=TIMEOUT)


#: (page, state) -> how to open it from the demo's view state.
STATES: dict[tuple[str, str], Callable[[Page, str, ViewState], None]] = {
    ("data", "demo"): open_data,
    ("risk", "demo"): open_risk,
    ("postcodes", "demo"): open_postcodes,
    ("postcodes", "applied"): apply_postcodes,
    ("fix", "demo"): open_fix,
    ("fix", "steps"): open_fix_steps,
}


def describe(offender: dict[str, Any], width: int) -> str:
    widths = (
        f"scrollWidth {offender['scrollWidth']} > clientWidth {offender['clientWidth']}"
        if "scrollWidth" in offender
        else f"'{offender.get('word')}' over two lines in {offender.get('clientWidth')} px"
    )
    return f"{width} px: {offender['kind']}: {offender['element']} {offender['text']!r} ({widths})"


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize(("name", "state_name"), list(STATES))
def test_pages_keep_their_text_whole(
    page: Page, live_server: str, live_settings: Settings, screenshots: Path, name: str, state_name: str, width: int
) -> None:
    warnings: list[str] = []
    page.on("console", lambda message: warnings.append(message.text) if "AG Grid" in message.text else None)
    page.set_viewport_size({"width": width, "height": HEIGHT})
    STATES[(name, state_name)](page, live_server, demo_state(live_settings))
    settled(page)
    page.wait_for_timeout(300)  # let the grids' columns and the charts take their final widths
    page.screenshot(path=str(screenshots / f"{name}-{state_name}-{width}.png"), full_page=True)
    offenders = [describe(o, width) for o in page.evaluate(OFFENDERS, list(GRIDS_THAT_FIT))]
    report = "\n".join([*offenders, *(f"{width} px: console: {w.splitlines()[0]}" for w in warnings)])
    if name not in PAGES_CHECKED:
        print(f"\n{name} ({state_name}), not checked yet:\n{report or 'nothing clipped'}")
        return
    assert not offenders and not warnings, f"{name} ({state_name}):\n{report}"
