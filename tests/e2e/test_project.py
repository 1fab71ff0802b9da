"""The project file in the browser: a steward saves a project from the Data page, the browser is closed (a fresh
context: no cookie, no local storage), the Data page is opened bare the next day, the file is dropped on "Open
project", and everything is as it was left: roles, targets, Fix-page steps and the sign-off fields."""

from __future__ import annotations

from pathlib import Path

from playwright.sync_api import Browser, Page, expect

from privdash.application.project import Project
from privdash.application.state import ViewState

TIMEOUT = 30_000


def settled(page: Page) -> None:
    expect(page.locator('[data-dash-is-loading="true"]')).to_have_count(0, timeout=TIMEOUT)


def state_of(url: str) -> ViewState:
    return ViewState.from_search(url.split("?", 1)[1] if "?" in url else "")


def test_a_saved_project_restores_the_view_in_a_fresh_browser(
    page: Page, browser: Browser, live_server: str, tmp_path: Path
) -> None:
    search = {"kind": "search", "k": 7, "max_suppression": 0.05, "pick": 2}
    left = ViewState(dataset="demo:people").updated(k=7, max_risk=0.1, release={"global_risk": 0.02}, fix=(search,))
    page.goto(f"{live_server}{left.href('/data')}")
    expect(page.locator("#project-save")).to_be_visible(timeout=TIMEOUT)
    settled(page)
    page.fill("#project-signoff-name", "Ann Steward")
    page.fill("#project-identity", "People 2024")
    settled(page)
    with page.expect_download(timeout=TIMEOUT) as download:
        page.click("#project-save")
    saved = tmp_path / "people.privdash"
    download.value.save_as(saved)
    content = saved.read_bytes()
    assert b"example.org" not in content  # no e-mail address of the table
    project = Project.from_bytes(content)
    assert project.signoff == {"name": "Ann Steward"} and project.targets.k == 7

    # The next day: a new browser, the Data page opened bare (the built-in demo with its suggested settings).
    context = browser.new_context(bypass_csp=True)
    fresh = context.new_page()
    try:
        fresh.goto(f"{live_server}/data")
        expect(fresh.locator("#project-upload")).to_be_visible(timeout=TIMEOUT)
        settled(fresh)
        assert fresh.input_value("#project-signoff-name") == ""
        fresh.set_input_files("#project-upload input[type=file]", str(saved))
        fresh.wait_for_url(lambda url: "s=" in url and state_of(url).k == 7, timeout=TIMEOUT)
        settled(fresh)
        restored = state_of(fresh.url)
        assert restored.dataset == "demo:people" and restored.k == 7 and restored.max_risk == 0.1
        assert restored.fix == (search,) and dict(restored.release) == {"global_risk": 0.02}
        assert restored.roles == project_roles(project)
        expect(fresh.locator("#project-signoff-name")).to_have_value("Ann Steward", timeout=TIMEOUT)
        expect(fresh.locator("#project-identity")).to_have_value("People 2024", timeout=TIMEOUT)
        # Every page shows the state as left: the Fix page opens on the saved steps.
        fresh.goto(f"{live_server}{restored.href('/fix')}")
        settled(fresh)
        assert state_of(fresh.url).fix == (search,)
    finally:
        context.close()


def project_roles(project: Project) -> dict[str, object]:
    return {item.name: item.role for item in project.contract.fields}
