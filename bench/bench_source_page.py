"""The Risk page on a large server-side source, in a real browser: how long until the page answers and until the
numbers are shown, and how long a role change takes to count again.

Generates ``--rows`` rows of :mod:`bench.bench_scale`'s table (8 QIs, 1,152,000 possible classes, as Parquet),
lists the folder as a server-side source (``PRIVDASH_SOURCES``), serves the app on 127.0.0.1 and opens the source's
Risk page in headless Chromium, timing from the request to:

* the first paint of the page with the progress bar of the count (the page answers at once; the count runs in a
  background job);
* the results: the class-count badge and the first block of the per-class grid;
* after a new missing-value policy (a new count in the background), the new results.

Run: ``python -m bench.bench_source_page --rows 100000000 [--folder /big/disk]``.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import tempfile
import threading
import time
from pathlib import Path

from playwright.sync_api import expect, sync_playwright
from werkzeug.serving import make_server

from bench._common import DATA_DIR, machine
from bench.bench_scale import QIS, generate
from dashboard.app import create_app
from privdash.application.services import Services
from privdash.application.settings import Settings

TIMEOUT = int(os.environ.get("BENCH_TIMEOUT_MS", "600000"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=100_000_000)
    parser.add_argument("--folder", type=Path, help="where to write the Parquet files (default: a temporary folder)")
    parser.add_argument("--memory-limit", default="6GB")
    args = parser.parse_args()
    print(machine())
    with tempfile.TemporaryDirectory(dir=args.folder) as scratch:
        root = Path(scratch)
        lake = root / "lake"
        lake.mkdir()
        seconds = generate(lake, args.rows)
        size = sum(p.stat().st_size for p in lake.glob("*.parquet")) / 1e9
        print(f"{args.rows:,} rows in Parquet, {size:.2f} GB, generated in {seconds:.0f} s")
        config = root / "sources.json"
        source = {"title": "Census extract", "path": str(lake / "*.parquet"), "memory_limit": args.memory_limit}
        config.write_text(json.dumps({"census": source}), encoding="utf-8")
        settings = Settings(
            store_dir=root / "store",
            cache_dir=root / "cache",
            data_dir=DATA_DIR,
            sources_file=config,
            job_seconds=3600.0,  # the server's default job limit is 300 s
        )
        services = Services(settings)
        state = services.initial_state(services.dataset("source:census")).with_quasi_identifiers(QIS, [])
        logging.getLogger("werkzeug").setLevel(logging.WARNING)
        server = make_server("127.0.0.1", 0, create_app(settings).server, threaded=True)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        base = f"http://127.0.0.1:{server.server_port}"
        try:
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path="/usr/bin/chromium")
                page = browser.new_page(viewport={"width": 1400, "height": 1000})
                start = time.perf_counter()
                page.goto(f"{base}{state.href('/risk')}")
                expect(page.locator("#risk-running")).to_be_visible(timeout=TIMEOUT)
                shown = time.perf_counter() - start
                expect(page.locator("#class-count")).to_be_visible(timeout=TIMEOUT)
                counted = time.perf_counter() - start
                expect(page.locator("#class-grid .ag-row").first).to_be_visible(timeout=TIMEOUT)
                grid = time.perf_counter() - start
                text = page.locator("#class-count").inner_text()
                start = time.perf_counter()
                page.get_by_text("Drop records with missing", exact=True).click()
                expect(page.locator("#risk-running")).to_be_visible(timeout=TIMEOUT)
                expect(page.locator("#class-count")).to_be_visible(timeout=TIMEOUT)
                again = time.perf_counter() - start
                browser.close()
        finally:
            server.shutdown()
        print("\n| step | time |\n|---|---|")
        print(f"| page shown with the progress of the count | {shown:.2f} s |")
        print(f"| results shown ({text}) | {counted:.1f} s |")
        print(f"| first block of the per-class grid | {grid:.1f} s |")
        print(f"| another missing-value policy: counted again in the background and shown | {again:.1f} s |")


if __name__ == "__main__":
    main()
