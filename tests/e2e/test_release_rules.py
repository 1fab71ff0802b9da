"""The Risk page's "More release rules" input in a real browser: a typed rule changes the verdict and its card, the
link carries it, and a rule that cannot be read is explained under the input."""

from __future__ import annotations

from playwright.sync_api import Page, expect

from privdash.application.services import Services
from privdash.application.settings import Settings
from privdash.application.state import ViewState

TIMEOUT = 20_000


def settled(page: Page) -> None:
    page.wait_for_function("!document.querySelector('[data-dash-is-loading=\"true\"]')", timeout=TIMEOUT)


def test_a_typed_release_rule_changes_the_verdict(page: Page, live_server: str, live_settings: Settings) -> None:
    services = Services(live_settings)
    state = services.initial_state(services.dataset("demo:people"))
    # k = 1 and no risk cap: the table meets every target until a release rule asks for more
    state = state.with_quasi_identifiers(list(state.quasi_identifiers), []).updated(k=1, max_risk=0)
    page.set_viewport_size({"width": 1400, "height": 1000})
    page.goto(f"{live_server}/risk?s={state.encode()}")
    verdict = page.locator("#verdict")
    expect(verdict).to_have_attribute("data-status", "pass", timeout=TIMEOUT)
    settled(page)

    rules = page.locator("#target-release")
    rules.fill("global_risk=0.01")
    rules.press("Enter")
    expect(verdict).to_have_attribute("data-status", "fail", timeout=TIMEOUT)
    expect(verdict).to_contain_text("global risk ER/n = 1 is above global_risk ≤ 0.01")
    card = page.locator("#card-release-global_risk")
    expect(card).to_contain_text("Global risk")
    expect(card.locator("[data-verdict]")).to_have_attribute("data-verdict", "fail")
    settled(page)
    for _ in range(100):  # the address bar (the share link) carries the rule
        if ViewState.from_search(page.url.split("?", 1)[1]).release == {"global_risk": 0.01}:
            break
        page.wait_for_timeout(100)
    else:
        raise AssertionError("the link never carried the release rule")

    rules.fill("globalrisk=0.01")
    rules.press("Enter")
    expect(page.get_by_text("Cannot read the target 'globalrisk=0.01'")).to_be_visible(timeout=TIMEOUT)
    expect(rules).to_have_attribute("aria-invalid", "true")
    expect(verdict).to_have_attribute("data-status", "fail")  # the page keeps what it showed

    rules.fill("")
    rules.press("Enter")
    expect(verdict).to_have_attribute("data-status", "pass", timeout=TIMEOUT)
    expect(page.locator("#card-release-global_risk")).to_have_count(0)


def test_the_fix_page_searches_for_a_typed_release_rule(page: Page, live_server: str, live_settings: Settings) -> None:
    services = Services(live_settings)
    state = services.initial_state(services.dataset("demo:people"))
    state = state.with_quasi_identifiers(["age", "sex", "postcode"], []).updated(k=1, max_risk=0)
    page.set_viewport_size({"width": 1400, "height": 1000})
    page.goto(f"{live_server}{state.href('/fix')}")
    expect(page.locator("#fix-verdict")).to_have_attribute("data-status", "pass", timeout=TIMEOUT)
    checkbox = page.locator("#fix-search-release")
    expect(checkbox).to_be_disabled()
    settled(page)

    rules = page.locator("#fix-target-release")
    rules.fill("global_risk=0.1")
    rules.press("Enter")
    # the table as it is fails the rule (every record nearly unique: ER/n close to 1)
    expect(page.locator("#fix-verdict")).to_have_attribute("data-status", "fail", timeout=TIMEOUT)
    expect(page.locator("#fix-before-release-global_risk [data-verdict]")).to_have_attribute("data-verdict", "fail")
    expect(checkbox).to_be_enabled()
    expect(checkbox).to_be_checked()
    settled(page)

    page.click("#fix-technique")
    page.get_by_role("option", name="Least-lossy search").click()
    expect(page.locator("#fix-search-k")).to_be_visible()
    page.locator("#fix-search-k").fill("1")
    page.click("#fix-add")
    expect(page.locator("#fix-outcomes")).to_contain_text("global_risk ≤ 0.1", timeout=4 * TIMEOUT)
    after = page.locator("#fix-after-release-global_risk [data-verdict]")
    expect(after).to_have_attribute("data-verdict", "pass", timeout=TIMEOUT)
    expect(page.locator("#fix-verdict")).to_have_attribute("data-status", "pass", timeout=TIMEOUT)
