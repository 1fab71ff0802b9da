"""The dashboard in a real browser: upload, roles, the numbers against the core, the share link, bad files.

Screenshots of every page are written to ``docs/screenshots/`` (the README shows them).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from dashboard.ui.components import fmt_count, fmt_number
from privdash.application.services import too_large_message
from privdash.application.settings import Settings
from privdash.data.contract import ColumnRole, DataContract
from privdash.data.demo import people_contract, people_table
from privdash.data.tables import read_table
from privdash.errors import DataReadError
from privdash.measure.classes import MissingPolicy
from privdash.measure.diagnose import diagnose

TIMEOUT = 20_000
VIEWPORT = {"width": 1400, "height": 1000}
CARDS = ("k", "l", "t", "prosecutor", "journalist", "marketer")


def upload(page: Page, path: Path) -> None:
    """Choose ``path`` in the upload zone's file dialog."""
    with page.expect_file_chooser() as chooser:
        page.click("#upload-zone")
    chooser.value.set_files(str(path))


def set_role(page: Page, column: str, label: str) -> None:
    page.locator(f'tr[data-column="{column}"]').get_by_text(label, exact=True).click()


def settled(page: Page) -> None:
    """Wait until no Dash callback is running."""
    page.wait_for_function("!document.querySelector('[data-dash-is-loading=\"true\"]')", timeout=TIMEOUT)


def headline_texts(page: Page) -> dict[str, str]:
    settled(page)
    return {key: page.locator(f"#card-{key}").text_content() or "" for key in CARDS}


def test_upload_roles_risk_and_share_link(
    page: Page, browser: Browser, live_server: str, data_dir: Path, screenshots: Path
) -> None:
    page.set_viewport_size(VIEWPORT)
    page.goto(f"{live_server}/data")
    upload(page, data_dir / "arx_adult" / "adult.csv")
    expect(page.locator("#dataset-rows")).to_have_text("30,162 rows", timeout=TIMEOUT)

    # Keep sex, age, race and marital status as quasi-identifiers; the other attributes are not known.
    for column in ("education", "native-country", "workclass", "occupation"):
        set_role(page, column, "Other")
    set_role(page, "salary-class", "Sensitive")
    expect(page.locator('tr[data-column="occupation"] label[data-active="true"]')).to_have_text("Other")
    page.set_viewport_size({"width": 1400, "height": 2200})
    page.locator("#preview-grid .ag-row").first.wait_for(timeout=TIMEOUT)
    page.screenshot(path=str(screenshots / "data.png"))
    page.set_viewport_size(VIEWPORT)

    page.click("#to-risk-button")
    expect(page.locator("#card-k")).to_be_visible(timeout=TIMEOUT)

    adult = read_table(data_dir / "arx_adult" / "adult.csv")
    qis = ["sex", "age", "race", "marital-status"]
    contract = DataContract.for_columns(adult, quasi_identifiers=qis, sensitive=["salary-class"])
    expected = diagnose(adult, contract=contract)
    expect(page.locator("#card-k .stat-value")).to_have_text(fmt_count(expected.k))
    l_value = expected.sensitive_models["salary-class"].l_distinct.value
    expect(page.locator("#card-l .stat-value")).to_have_text(fmt_number(l_value))
    expect(page.locator("#records-analysed")).to_have_text(f"{fmt_count(expected.n_records)} records analysed")
    expect(page.locator("#class-count")).to_have_text(f"{fmt_count(expected.classes.n_classes)} classes")
    expect(page.locator("#msu-summary")).to_be_visible(timeout=TIMEOUT)
    page.set_viewport_size({"width": 1400, "height": 2600})
    page.locator("#class-grid .ag-row").first.wait_for(timeout=TIMEOUT)
    page.screenshot(path=str(screenshots / "risk.png"))
    page.set_viewport_size(VIEWPORT)

    # The share link, opened in a fresh browser context (no cookies, no history), shows the same numbers.
    shown = headline_texts(page)
    page.click("#share-button")
    expect(page.locator("#share-link")).to_have_value(page.url, timeout=TIMEOUT)
    link = page.locator("#share-link").input_value()
    _assert_no_values_in(link, adult)
    page.click("#copy-link")
    expect(page.locator("#copy-status")).not_to_have_text("", timeout=TIMEOUT)

    other = browser.new_context(viewport=VIEWPORT)
    try:
        fresh = other.new_page()
        fresh.goto(link)
        for key, text in shown.items():
            expect(fresh.locator(f"#card-{key}")).to_have_text(text, timeout=TIMEOUT)
        expect(fresh.locator("#header-dataset")).to_have_text("adult.csv")
        assert fresh.url == link
    finally:
        other.close()


def test_missing_value_policy_switch(page: Page, live_server: str) -> None:
    page.set_viewport_size(VIEWPORT)
    page.goto(f"{live_server}/data")
    page.click("#demo-open")
    expect(page.locator("#dataset-title")).to_have_text("Customers (synthetic, 5,000 people)", timeout=TIMEOUT)
    # sex and hair colour have missing values; postcode and age are left out so classes are not all unique.
    set_role(page, "postcode", "Other")
    set_role(page, "age", "Other")
    page.click("#to-risk-button")
    expect(page.locator("#card-k")).to_be_visible(timeout=TIMEOUT)

    people = people_table()
    contract = people_contract().with_roles({"postcode": ColumnRole.INSENSITIVE, "age": ColumnRole.INSENSITIVE})
    shown = {}
    for policy, label in (
        (MissingPolicy.WILDCARD, "Missing matches anything"),
        (MissingPolicy.DROP, "Drop records with missing"),
        (MissingPolicy.VALUE, "Missing is a value"),
    ):
        expected = diagnose(people, contract=contract, missing=policy)
        page.locator("#risk-missing").get_by_text(label, exact=True).click()
        expect(page.locator("#records-analysed")).to_have_text(
            f"{fmt_count(expected.n_records)} records analysed", timeout=TIMEOUT
        )
        expect(page.locator("#class-count")).to_have_text(f"{fmt_count(expected.classes.n_classes)} classes")
        expect(page.locator("#card-k .stat-value")).to_have_text(fmt_count(expected.k))
        page.wait_for_function(
            "policy => new URLSearchParams(window.location.search).get('s') !== null && "
            "document.querySelector('#risk-missing input:checked').value === policy",
            arg=policy.value,
            timeout=TIMEOUT,
        )
        _wait_for_policy_in_url(page, policy)
        shown[policy] = page.locator("#class-count").inner_text()
    assert len(set(shown.values())) > 1  # the switch changes what is shown


def _assert_no_values_in(link: str, data: object) -> None:
    """The link's state holds the dataset id, column names and settings, and not one data value."""
    from privdash.application.state import ViewState

    state = ViewState.from_search(link.split("?", 1)[1])
    obj = state.to_dict()
    assert set(obj) <= {"v", "d", "c", "o", "m", "k", "l", "t", "r", "x"}
    columns = set(map(str, data.columns))  # type: ignore[attr-defined]
    assert {name for name, _ in obj["c"]} == columns
    assert all(name in columns for name in obj.get("o", {}))


def _wait_for_policy_in_url(page: Page, policy: MissingPolicy) -> None:
    """The address bar (the share link) carries the policy shown on the page."""
    from privdash.application.state import ViewState

    for _ in range(100):
        if ViewState.from_search(page.url.split("?", 1)[1]).missing == policy:
            return
        page.wait_for_timeout(100)
    raise AssertionError(f"the URL never carried the missing-value policy {policy.value}")


BAD_FILES = {
    "empty.csv": b"",
    "binary.csv": bytes(range(256)) * 8,
    "one-column.csv": b"name\nAda\nGrace\n",
    "spaces.csv": b"age sex city\n34 F Leeds\n51 M York\n",
    "all-missing.csv": b"a,b\n,\nNA,NA\n",
    "broken.xlsx": b"PK\x03\x04 not really a workbook",
}


def test_bad_files_show_their_message(page: Page, live_server: str, tmp_path: Path) -> None:
    page.goto(f"{live_server}/data")
    for name, content in BAD_FILES.items():
        path = tmp_path / name
        path.write_bytes(content)
        with pytest.raises(DataReadError) as error:
            read_table(path)
        upload(page, path)
        expect(page.locator("#upload-error")).to_contain_text(str(error.value), timeout=TIMEOUT)
        expect(page.locator("#upload-controls")).to_be_hidden()
        assert "/data" in page.url and "Traceback" not in page.content()


def test_file_over_the_limit_is_refused_before_upload(
    page: Page, live_server: str, live_settings: Settings, tmp_path: Path
) -> None:
    path = tmp_path / "big.csv"
    row = b"1234567890,abcdefghij\n"
    path.write_bytes(b"a,b\n" + row * (live_settings.max_upload_bytes // len(row) + 10))
    sent = []
    page.on("request", lambda request: sent.append(request.url) if "/api/upload" in request.url else None)
    page.goto(f"{live_server}/data")
    upload(page, path)
    message = too_large_message("big.csv", path.stat().st_size, live_settings.max_upload_bytes)
    expect(page.locator("#upload-error")).to_contain_text(message, timeout=TIMEOUT)
    assert not sent


#: Collects the page's Content-Security-Policy violations (the browser fires this event for each one).
CSP_LISTENER = (
    "window.__cspViolations = [];"
    "document.addEventListener('securitypolicyviolation', e => window.__cspViolations.push("
    "e.violatedDirective + ' ' + (e.blockedURI || 'inline') + ' ' + e.sourceFile + ':' + e.lineNumber));"
)


def test_every_page_renders_under_the_content_security_policy(browser: Browser, live_server: str) -> None:
    """Dash, Mantine, AG Grid, Plotly and the postcode map run with the policy (no violation reported).

    A context of its own: the other tests' pages ignore the policy (Playwright's ``wait_for_function`` needs eval).
    """
    from privdash.application.state import ViewState

    context = browser.new_context(viewport=VIEWPORT)
    try:
        page = context.new_page()
        page.add_init_script(CSP_LISTENER)
        search = ViewState(dataset="demo:people").to_search()
        checks = {
            "/data": "#preview-grid .ag-center-cols-container .ag-row",
            "/risk": "#class-grid .ag-center-cols-container .ag-row",
            "/fix": "#fix-k-curve .main-svg",
            "/postcodes": "#pc-map .maplibregl-canvas",
        }
        for path, rendered in checks.items():
            response = page.goto(f"{live_server}{path}{search}")
            assert response is not None and response.status == 200
            policy = response.headers["content-security-policy"]
            assert "'unsafe-eval'" not in policy and "script-src 'self' 'sha256-" in policy
            assert response.headers["x-frame-options"] == "DENY"
            expect(page.locator(rendered).first).to_be_visible(timeout=TIMEOUT)
            expect(page.locator('[data-dash-is-loading="true"]')).to_have_count(0, timeout=TIMEOUT)
            if path == "/risk":
                page.click("#share-button")  # a client-side callback
                expect(page.locator("#share-link")).to_have_value(page.url, timeout=TIMEOUT)
            assert page.evaluate("window.__cspViolations") == [], path
            assert page.locator("#callback-error").count() == 0, path
    finally:
        context.close()


def test_a_crafted_link_gets_a_message_not_an_error(page: Page, live_server: str) -> None:
    from privdash.application.state import ViewState

    for search in (ViewState(dataset="../../etc/passwd").to_search(), "?l=" + "A" * 22):
        response = page.goto(f"{live_server}/data{search}")
        assert response is not None and response.status == 200
        expect(page.locator("#state-error")).to_be_visible(timeout=TIMEOUT)
        assert "Traceback" not in page.content()
