"""The Fix page's "Synthetic data" section in a real browser: a fully synthetic release of the demo dataset is made
in a background job, its attacks against the control records are shown beside the original's and the page's
generalized fix's, the verdict says that k-anonymity does not describe a synthetic table, and the CSV downloads
spreadsheet-safe (the report's section: tests/unit/ui/test_report_synthetic.py); a DP synthetic release is charged
to the dataset's budget ledger (the DP section lists it), and one over the remaining budget is refused with nothing
recorded.

The screenshots of the section with its result are written at 1280, 1440 and 1920 px
(``docs/screenshots/fix-synthetic-<width>.png``; the 1440 one is committed).
"""

from __future__ import annotations

import io
from pathlib import Path

import pandas as pd
from playwright.sync_api import Page, expect

from privdash.application.dp_release import ledger_for, table_keys
from privdash.application.services import LoadedDataset, Services
from privdash.application.settings import Settings
from privdash.application.state import ViewState
from privdash.dp import DatasetAccount, LedgerEntry
from tests.e2e.conftest import server_of_its_own
from tests.e2e.test_accessibility import assert_accessible, settled

TIMEOUT = 120_000
expect.set_options(timeout=TIMEOUT)
QIS = ["age", "sex", "postcode"]
AGE = {"kind": "generalize", "column": "age", "rule": {"builder": "intervals", "widths": [5, 10, 20]}, "level": 2}
WIDTHS = (1280, 1440, 1920)
#: Pictures of other states, for a look (not committed).
SHOTS = Path("/tmp/privdash-synthetic-screenshots")
K_ANONYMITY = "k-anonymity does not describe a synthetic table"


live_settings, live_server = server_of_its_own("privdash-synthetic")


def state_for(services: Services, fix: tuple[dict, ...] = ()) -> ViewState:
    state = services.initial_state(services.dataset("demo:people"), ViewState())
    return state.with_quasi_identifiers(QIS, ["diagnosis"]).updated(fix=fix)


def demo_account(services: Services, loaded: LoadedDataset) -> DatasetAccount:
    known = ledger_for(services).known(table_keys(services, loaded))
    return known[1] if known is not None else ledger_for(services).account(loaded.title)


def synthetic_charges(services: Services) -> list[tuple[str, LedgerEntry]]:
    """Every synthetic table charged in the ledger, with the population it was charged to (earlier tests may have
    released the demo under another population than its title)."""
    ledger = ledger_for(services).load()
    return [
        (identity, entry)
        for identity, account in ledger.accounts.items()
        for entry in account.entries
        if entry.query == "synthetic table"
    ]


def fill(page: Page, selector: str, text: str) -> None:
    field = page.locator(selector)
    field.fill(text)
    expect(field).to_have_value(text)
    page.wait_for_timeout(300)  # let the value reach the server's copy before the button reads it


def pick_columns(page: Page, names: list[str]) -> None:
    """Choose columns in the searchable multi-select with the keyboard: type a name, highlight it, Enter."""
    field = page.locator("#synth-columns")
    for name in names:
        field.focus()
        page.keyboard.type(name)
        page.keyboard.press("ArrowDown")
        page.keyboard.press("Enter")
    page.keyboard.press("Escape")
    for name in names:
        expect(page.locator("#synth-card .mantine-Pill-label", has_text=name).first).to_be_visible()
    page.wait_for_timeout(300)


def test_a_fully_synthetic_release_of_the_demo(
    page: Page, live_server: str, live_settings: Settings, screenshots: Path
) -> None:
    services = Services(live_settings)
    page.set_viewport_size({"width": 1440, "height": 1000})
    page.goto(f"{live_server}{state_for(services, (AGE,)).href('/fix')}")
    expect(page.locator("#synth-run")).to_be_visible()
    expect(page.locator("#synth-result")).to_be_empty()  # nothing computed on load
    expect(page.get_by_role("radio", name="Fully synthetic: every record drawn from a model")).to_be_checked()
    expect(page.locator("#synth-dp-box")).to_be_hidden()
    fill(page, "#synth-seed", "21")
    page.get_by_label("Estimates the data are published for, one a line").fill("share:sex=F")
    page.wait_for_timeout(300)
    # While the job runs its progress and a Cancel button are shown (cancelling a running job is tested with a job
    # long enough to be caught running: tests/e2e/test_sources.py; this one may end in a second).
    page.locator("#synth-run").scroll_into_view_if_needed()
    page.click("#synth-run")
    expect(page.locator("#synth-running")).to_be_visible()
    expect(page.locator("#synth-cancel")).to_be_visible()
    verdict = page.locator("#synth-verdict")
    expect(verdict).to_contain_text(K_ANONYMITY)
    # Three releases side by side, three attacks each, against the same control records.
    for key in ("original", "fix", "synthetic"):
        expect(page.locator(f"#synth-row-{key}-linkage")).to_have_count(1)
    expect(page.locator("#synth-attacks tbody tr")).to_have_count(9)
    expect(page.locator("#synth-row-synthetic-linkage")).to_contain_text("control records")
    expect(page.locator("#synth-row-fix-linkage")).to_contain_text("The generalized fix of the page (1 step)")
    expect(page.locator("#synth-distance")).to_contain_text("Released records equal to a training record")
    expect(page.locator("#synth-estimates")).to_contain_text("share:sex=F")
    expect(page.locator("#synth-running")).to_be_hidden()
    settled(page)
    assert_accessible(page, "Fix, a fully synthetic release made")

    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 1000})
        page.wait_for_timeout(300)
        # The card cut out of a full-page picture of the page scrolled to its top: the sticky header stays there,
        # off the card.
        page.evaluate("() => window.scrollTo(0, 0)")
        page.wait_for_timeout(200)
        box = page.evaluate(
            "() => { const r = document.querySelector('#synth-card').getBoundingClientRect();"
            " return {x: r.left + scrollX, y: r.top + scrollY, width: r.width, height: r.height}; }"
        )
        page.screenshot(path=str(screenshots / f"fix-synthetic-{width}.png"), full_page=True, clip=box)
    page.set_viewport_size({"width": 1440, "height": 1000})

    # The synthetic CSV: the modelled columns, no direct identifier, every record.
    with page.expect_download() as download:
        page.get_by_role("button", name="Download the synthetic table (CSV, 4,000 rows)").click()
    table = pd.read_csv(io.StringIO(download.value.path().read_text(encoding="utf-8")))
    assert download.value.suggested_filename.endswith("-synthetic-full.csv")
    assert len(table) == 4_000 and not {"name", "email", "phone"} & set(table.columns)
    assert set(QIS) <= set(table.columns)
    with page.expect_download() as recipe:
        page.get_by_role("button", name="Download the recipe (JSON)").click()
    assert '"seed": 21' in recipe.value.path().read_text(encoding="utf-8")


def test_a_dp_synthetic_release_is_charged_to_the_ledger(page: Page, live_server: str, live_settings: Settings) -> None:
    services = Services(live_settings)
    loaded = services.dataset("demo:people")
    before = demo_account(services, loaded)
    entries = len(before.entries)
    epsilon = round(before.remaining[0] / 2, 6)
    assert epsilon > 0, "an earlier test spent the demo's budget"
    charged = len(synthetic_charges(services))

    page.set_viewport_size({"width": 1440, "height": 1000})
    page.goto(f"{live_server}{state_for(services).href('/fix')}")
    expect(page.locator("#synth-run")).to_be_visible()
    page.get_by_role("radio", name="Differentially private synthetic (charged to the privacy budget)").check()
    expect(page.locator("#synth-dp-box")).to_be_visible()
    fill(page, "#synth-epsilon", repr(epsilon))
    # No bounds for the numeric columns: the core's message, nothing charged.
    page.click("#synth-run")
    expect(page.locator("#synth-error")).to_contain_text("age")
    assert len(demo_account(services, loaded).entries) == entries and len(synthetic_charges(services)) == charged

    fill(page, "#synth-bounds", "age=0:100\ntransaction_amount=0:1000")
    # Postcodes and dates have too many values for a DP model of 4,000 records: the core says so, nothing charged.
    page.click("#synth-run")
    expect(page.locator("#synth-error")).to_contain_text("The budget is too small for the domain")
    assert len(demo_account(services, loaded).entries) == entries and len(synthetic_charges(services)) == charged

    # Numbers with declared bounds only: no text column whose categories DP key selection must find, so the release
    # fits in what earlier tests left of the demo's budget.
    pick_columns(page, ["age", "transaction_amount"])
    page.click("#synth-run")
    expect(page.locator("#synth-charged")).to_contain_text(f"ε = {epsilon:g}")
    expect(page.locator("#synth-verdict")).to_contain_text(K_ANONYMITY)
    charges = synthetic_charges(services)
    assert len(charges) == charged + 1
    identity, entry = charges[-1]
    assert abs(entry.epsilon - epsilon) < 1e-9
    expect(page.locator("#synth-charged")).to_contain_text(identity)
    after = ledger_for(services).account(identity)
    settled(page)
    assert_accessible(page, "Fix, a DP synthetic release charged")
    SHOTS.mkdir(exist_ok=True)
    page.locator("#synth-result").screenshot(path=str(SHOTS / "synthetic-dp-1440.png"))

    # Over what is left: refused, nothing recorded.
    fill(page, "#synth-epsilon", repr(after.remaining[0] * 2))
    page.click("#synth-run")
    expect(page.locator("#synth-error")).to_contain_text("Refused: over the privacy budget")
    assert len(synthetic_charges(services)) == charged + 1

    # The DP section's ledger lists the charge.
    page.reload()
    expect(page.locator("#dp-ledger-table")).to_contain_text("synthetic table")
