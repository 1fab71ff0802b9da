"""Presenter's mode in a browser: a presenter walks a dataset's story with the keyboard alone.

From the Data page's Presentations card to the deck, every slide by the arrow keys, Page Up / Page Down, Home and
End, with the focus on each slide's heading and the counter announcing where the talk is; the slides that take
time fill in from their background job; axe-core finds nothing critical or serious on any slide; Escape goes back
to the page the presentation belongs to. Screenshots at 1280, 1440 and 1920 px wide (projectors) show large type
and nothing cut off.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from privdash.application.presenter import SLIDE_KEYS, SLIDE_TITLES
from privdash.application.services import Services
from privdash.application.settings import Settings
from privdash.application.state import ViewState

from .test_accessibility import assert_accessible, settled
from .test_keyboard import tab_to

TIMEOUT = 60_000
SHOTS = Path("/tmp/privdash-presenter-screenshots")
COUNT = len(SLIDE_KEYS)


@pytest.fixture(scope="module")
def services(live_settings: Settings) -> Services:
    return Services(live_settings)


def heading(page: Page, index: int) -> str:
    return f"#slide-{SLIDE_KEYS[index]}-title"


def expect_on(page: Page, index: int) -> None:
    """Slide ``index`` is the one shown, its heading has the focus, the counter says where the talk is."""
    expect(page.locator(heading(page, index))).to_be_focused(timeout=TIMEOUT)
    expect(page.locator(heading(page, index))).to_have_text(SLIDE_TITLES[SLIDE_KEYS[index]])
    expect(page.locator(".presenter-slide:not([hidden])")).to_have_count(1)
    expect(page.locator(f"#slide-{SLIDE_KEYS[index]}")).to_be_visible()
    expect(page.locator("#present-counter")).to_have_text(f"{index + 1} of {COUNT}")
    expect(page.locator("#present-counter")).to_have_attribute("aria-live", "polite")


def filled(page: Page) -> None:
    """Every slide computed (the background job ended)."""
    expect(page.locator(".presenter-pending")).to_have_count(0, timeout=TIMEOUT)
    expect(page.locator("#present-running")).to_be_hidden(timeout=TIMEOUT)


def test_a_presentation_is_walked_with_the_keyboard_alone(page: Page, live_server: str) -> None:
    page.set_viewport_size({"width": 1440, "height": 900})
    page.goto(f"{live_server}/data")
    present = page.locator('a[aria-label^="Present Mirador\'s worked example"]')
    expect(present).to_be_visible(timeout=TIMEOUT)
    # The keyboard reaches the link like any other (Tab, with a visible focus ring at every stop), and Enter opens it.
    settled(page)
    tab_to(page, 'a[aria-label^="Present Mirador\'s worked example"]', 80)
    page.keyboard.press("Enter")
    page.wait_for_url("**/present?**", timeout=TIMEOUT)
    expect(page.locator(".presenter-deck-title")).to_contain_text("Mirador's worked example", timeout=TIMEOUT)
    # The shell steps aside: no header, no navigation on the projector.
    expect(page.locator(".mantine-AppShell-header")).to_be_hidden()
    expect(page.locator(".mantine-AppShell-navbar")).to_be_hidden()
    expect_on(page, 0)
    expect(page.locator("#present-prev")).to_be_disabled()
    filled(page)
    settled(page)
    assert_accessible(page, "Presenter, first slide")

    for index in range(1, COUNT):
        page.keyboard.press("ArrowRight" if index % 2 else "PageDown")
        expect_on(page, index)
        assert_accessible(page, f"Presenter, slide {index + 1}")
    expect(page.locator("#present-next")).to_be_disabled()
    page.keyboard.press("ArrowRight")  # past the last slide: stays
    expect_on(page, COUNT - 1)
    assert page.url.endswith(f"#slide-{COUNT}")

    # The numbers are the story's: one of eight records unique, the verdict fails, the fix meets k = 2.
    expect(page.locator("#slide-unique")).to_contain_text("1 of 8 records is unique")
    expect(page.locator("#slide-verdict .presenter-headline")).to_have_text("✗ Not safe to release")
    expect(page.locator("#slide-fix .presenter-headline")).to_have_text("✓ After the fix: meets every target")
    expect(page.locator("#slide-attack .presenter-headline")).to_contain_text("Linkage 50% →")
    expect(page.locator("#slide-sample table tbody tr")).to_have_count(5)

    page.keyboard.press("Home")
    expect_on(page, 0)
    page.keyboard.press("End")
    expect_on(page, COUNT - 1)
    page.keyboard.press("ArrowLeft")
    expect_on(page, COUNT - 2)
    page.keyboard.press("PageUp")
    expect_on(page, COUNT - 3)

    # A reload stays on the slide of the address.
    page.reload()
    expect_on(page, COUNT - 3)

    # The buttons step too, by keyboard: Tab to Next and press Enter.
    page.locator("#present-next").focus()
    page.keyboard.press("Enter")
    expect_on(page, COUNT - 2)

    # Escape leaves for the page the presentation belongs to, with its view.
    page.keyboard.press("Escape")
    page.wait_for_url("**/risk?**", timeout=TIMEOUT)
    expect(page.locator("#verdict")).to_have_attribute("data-status", "fail", timeout=TIMEOUT)


@pytest.mark.parametrize("size", [(1280, 720), (1440, 900), (1920, 1080)])
def test_slides_fill_a_projector_without_clipping(
    page: Page, live_server: str, services: Services, screenshots: Path, size: tuple[int, int]
) -> None:
    width, height = size
    page.set_viewport_size({"width": width, "height": height})
    state = services.initial_state(services.dataset("demo:people"), ViewState())
    page.goto(f"{live_server}/present{state.to_search()}&from=/data")
    expect_on(page, 0)
    filled(page)
    SHOTS.mkdir(exist_ok=True)
    for index, key in enumerate(SLIDE_KEYS):
        if index:
            page.keyboard.press("ArrowRight")
        expect_on(page, index)
        # Large type: the headline is at least 40 px high on every projector.
        size_px = page.locator(f"#slide-{key} .presenter-headline").evaluate(
            "e => parseFloat(getComputedStyle(e).fontSize)"
        )
        assert size_px >= 40, (key, size_px)
        # Nothing cut off: the slide ends above the controls, the controls and the key help are inside the window,
        # nothing reaches past its right edge, and every table fits its box.
        layout = page.evaluate(
            """() => {
                const slide = document.querySelector('.presenter-slide:not([hidden])');
                const parts = [...slide.querySelectorAll('*')].map(e => e.getBoundingClientRect());
                const boxes = [...slide.querySelectorAll('.presenter-table-box')];
                return {
                    slideBottom: Math.max(...parts.map(r => r.bottom)),
                    right: Math.max(...parts.map(r => r.right)),
                    controlsTop: document.querySelector('.presenter-controls').getBoundingClientRect().top,
                    keysBottom: document.querySelector('.presenter-keys').getBoundingClientRect().bottom,
                    width: window.innerWidth,
                    height: window.innerHeight,
                    tables: boxes.map(b => b.scrollWidth - b.clientWidth),
                };
            }"""
        )
        assert layout["slideBottom"] <= layout["controlsTop"] + 1, (key, layout)
        assert layout["keysBottom"] <= layout["height"] + 1 and layout["right"] <= layout["width"], (key, layout)
        assert all(extra <= 1 for extra in layout["tables"]), (key, layout)
        page.screenshot(path=str(SHOTS / f"presenter-{width}-{index + 1}-{key}.png"))
        if width == 1920 and key == "attack":
            page.screenshot(path=str(screenshots / "presenter.png"))
    page.keyboard.press("Escape")
    page.wait_for_url("**/data?**", timeout=TIMEOUT)


def test_the_navigation_presents_the_open_view_and_exit_comes_back(
    page: Page, live_server: str, services: Services
) -> None:
    page.set_viewport_size({"width": 1440, "height": 900})
    state = services.initial_state(services.dataset("demo:five"), ViewState(k=2, max_risk=0.5))
    page.goto(f"{live_server}{state.href('/fix')}")
    link = page.locator('nav a[href^="/present"]')
    expect(link).to_have_attribute("href", f"/present{state.to_search()}&from=%2Ffix", timeout=TIMEOUT)
    link.focus()
    page.keyboard.press("Enter")
    page.wait_for_url("**/present?**", timeout=TIMEOUT)
    expect(page.locator(".presenter-deck-title")).to_contain_text("Five test-takers", timeout=TIMEOUT)
    expect_on(page, 0)
    page.keyboard.press("ArrowRight")
    expect_on(page, 1)
    expect(page.locator("#slide-unique")).to_contain_text("5 of 5 records are unique")
    page.keyboard.press("Escape")
    page.wait_for_url("**/fix?**", timeout=TIMEOUT)


def test_a_slide_filled_while_it_is_shown_keeps_the_place_and_the_focus(
    page: Page, live_server: str, services: Services
) -> None:
    page.set_viewport_size({"width": 1280, "height": 720})
    state = services.initial_state(services.dataset("demo:people"), ViewState(k=4))  # computed by no other test
    page.goto(f"{live_server}/present{state.to_search()}")
    expect_on(page, 0)
    page.keyboard.press("End")
    expect_on(page, COUNT - 1)
    expect(page.locator("#slide-sample .presenter-pending")).to_have_count(1)  # still being computed
    expect(page.locator("#present-running")).to_be_visible(timeout=TIMEOUT)
    assert_accessible(page, "Presenter, slides being computed")
    page.screenshot(path=str(SHOTS / "presenter-1280-computing.png"))
    filled(page)
    expect(page.locator("#slide-sample .presenter-headline")).to_contain_text("records released")
    expect_on(page, COUNT - 1)
    assert_accessible(page, "Presenter, a slide filled while shown")
