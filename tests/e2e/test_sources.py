"""A server-side source on the Risk page: counted by its engine in a background job with a progress bar, the results
equal to the engine's diagnosis, a role change counted again in the background, and a count that can be cancelled
from the keyboard."""

from __future__ import annotations

import dataclasses
import json
import logging
import threading
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest
from playwright.sync_api import Page, expect
from werkzeug.serving import make_server

from dashboard.app import create_app
from dashboard.ui.components import fmt_count
from privdash import diagnose, read_table
from privdash.application.riskview import release_verdict
from privdash.application.services import Services
from privdash.application.settings import Settings
from tests.e2e.test_accessibility import assert_accessible

TIMEOUT = 60_000
ADULT_QIS = ["sex", "age", "race", "marital-status", "education"]
#: Rows of the large source: enough for its count to take seconds, so that it can be cancelled while it runs.
LARGE_ROWS = 6_000_000
LARGE_QIS = [f"q{n}" for n in range(8)]


@pytest.fixture(scope="module")
def sources(data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Settings, Path]:
    root = tmp_path_factory.mktemp("sources")
    lake = root / "adult"
    lake.mkdir()
    adult = read_table(data_dir / "arx_adult" / "adult.csv")
    for i in range(3):
        adult.iloc[i * 10_054 : (i + 1) * 10_054].to_parquet(lake / f"part-{i}.parquet", index=False)
    large = root / "large.parquet"
    # Eight QIs of 16 values: nearly every record is unique, so the aggregate is as large as the table.
    codes = ", ".join(f"hash(i * {n + 3}) % 16 AS q{n}" for n in range(len(LARGE_QIS)))
    duckdb.sql(f"COPY (SELECT {codes} FROM range({LARGE_ROWS}) t(i)) TO '{large}' (FORMAT parquet)")
    config = root / "sources.json"
    config.write_text(
        json.dumps(
            {
                "adult": {"title": "Adult lake", "path": str(lake / "*.parquet")},
                "large": {"title": "Large extract", "path": str(large), "engine": "duckdb"},
            }
        ),
        encoding="utf-8",
    )
    settings = Settings(store_dir=root / "store", cache_dir=root / "cache", data_dir=data_dir, sources_file=config)
    return settings, lake


@pytest.fixture(scope="module")
def source_server(sources: tuple[Settings, Path]) -> Iterator[str]:
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    server = make_server("127.0.0.1", 0, create_app(sources[0]).server, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        thread.join(timeout=5)


def test_a_source_is_counted_in_the_background_then_shown(
    page: Page, source_server: str, sources, tmp_path: Path
) -> None:
    settings, lake = sources
    # The expected numbers are computed with a cache of their own, so that the server still has to count.
    services = Services(dataclasses.replace(settings, cache_dir=tmp_path / "cache"))
    loaded = services.dataset("source:adult")
    state = services.initial_state(loaded).with_quasi_identifiers(ADULT_QIS, [])
    expected = diagnose(str(lake / "*.parquet"), contract=services.contract(loaded, state))
    assert services.diagnosis(state).to_dict()["classes"] == expected.to_dict()["classes"]
    seven = state.updated(k=7)
    sentence = release_verdict(services.diagnosis(seven), seven).sentence()

    page.goto(f"{source_server}{state.href('/risk')}")
    classes = f"{fmt_count(expected.classes.n_classes)} classes"
    expect(page.locator("#class-count")).to_have_text(classes, timeout=TIMEOUT)
    expect(page.locator("#records-analysed")).to_have_text(f"{fmt_count(expected.n_records)} records analysed")
    expect(page.locator("#unique-count")).to_have_text(f"{fmt_count(expected.sample_uniques)} unique records")
    expect(page.locator("#engine-time")).to_contain_text("counted by duckdb")
    expect(page.locator("#risk-waiting")).to_have_count(0)
    expect(page.locator("#class-grid .ag-row").first).to_be_visible(timeout=TIMEOUT)  # blocks read from the disk

    # A new target k is a new count: it runs in the background and replaces the results.
    page.locator("#target-k").fill("7")
    page.locator("#target-k").press("Tab")
    expect(page.locator("#verdict")).to_contain_text(sentence, timeout=TIMEOUT)
    expect(page.locator("#class-count")).to_have_text(classes)
    expect(page.locator("#risk-waiting")).to_have_count(0)


def test_a_running_count_is_cancelled_with_the_keyboard(page: Page, source_server: str, sources) -> None:
    settings, _ = sources
    services = Services(settings)
    loaded = services.dataset("source:large")
    state = services.initial_state(loaded).with_quasi_identifiers(LARGE_QIS, [])
    page.goto(f"{source_server}{state.href('/risk')}")
    expect(page.locator("#risk-running")).to_be_visible(timeout=TIMEOUT)
    expect(page.locator("#risk-status")).to_contain_text("Counting the classes of Large extract", timeout=TIMEOUT)
    assert_accessible(page, "Risk, a server-side source being counted")
    page.locator("#risk-cancel").focus()
    page.keyboard.press("Enter")
    expect(page.locator("#risk-cancelled")).to_be_visible(timeout=TIMEOUT)
    expect(page.locator("#risk-running")).to_be_hidden(timeout=TIMEOUT)
    expect(page.locator("#class-count")).to_have_count(0)
