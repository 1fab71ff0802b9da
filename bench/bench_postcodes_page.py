"""The Postcodes page's server time and payload: the first layout, and the redraw after a slider or strategy change.

Targets (issue: postcode population maps): a redraw under 1 s of server time, the page payload under 3 MB.

A redraw is what the page's callback does: new settings from the controls, the core's mapping (recomputed: the
per-process mapping cache is cleared before every run, as after a new threshold), the map's units and polygons,
the figure or a colour-only patch, the side panel and tables, and Dash's JSON encoding of the response. Reference
tables and polygon layers are memoised, as in a running app.

Usage: ``python -m bench.bench_postcodes_page [--repeat R]``.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from plotly.io.json import to_json_plotly

from bench._common import DATA_DIR, best_time, machine
from dashboard.pages import postcodes as page
from privdash.application.services import Services
from privdash.application.settings import Settings
from privdash.application.state import ViewState
from privdash.geo.postcodes import Strategy


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    print(f"machine: {machine()}")
    rows: list[tuple[str, str, str, str]] = []
    with tempfile.TemporaryDirectory() as folder:
        services = Services(
            Settings(store_dir=Path(folder) / "store", cache_dir=Path(folder) / "cache", data_dir=DATA_DIR)
        )
        start = time.perf_counter()
        layout = to_json_plotly(page.layout(services))
        first = time.perf_counter() - start
        rows.append(("first page layout (reads tables, polygon layers from disk cache)", f"{first:.2f} s", "-", "-"))
        warm = best_time(lambda: to_json_plotly(page.layout(services)), repeat=args.repeat)
        rows.append(("page layout, warm", f"{warm * 1000:.0f} ms", f"{len(layout) / 1e6:.2f} MB", "< 3 MB"))

        cases = [
            ("slider: districts recoloured (patch), E&W", "ew", "district", Strategy.MIXED, True),
            ("slider: areas recoloured (patch), E&W", "ew", "area", Strategy.MIXED, True),
            ("strategy -> area, published units map, E&W", "ew", "units", Strategy.AREA, False),
            ("strategy -> outward, published units map, E&W", "ew", "units", Strategy.OUTWARD, False),
            ("slider: mixed, published units map, E&W", "ew", "units", Strategy.MIXED, False),
            ("slider: merge, published units map, E&W", "ew", "units", Strategy.MERGE, False),
            ("source -> doogal: every UK district map", "doogal", "district", Strategy.MIXED, False),
            ("merge, published units map, UK (doogal)", "doogal", "units", Strategy.MERGE, False),
            ("strategy -> zip3 (US bars, no map)", "us", "district", Strategy.ZIP3, False),
        ]
        for label, source, level, strategy, patch in cases:
            settings = page.GeoSettings(source=source, level=level, strategy=strategy, threshold=25_000)
            state = ViewState(geo=settings.to_dict())
            previous = page.GeoSettings(source=source, level=level, strategy=strategy) if patch else None

            def redraw(state: ViewState = state, previous: page.GeoSettings | None = previous) -> str:
                services.postcodes.forget_generalizations()
                return to_json_plotly(page.redraw(services, state, previous))

            seconds = best_time(redraw, repeat=args.repeat)
            rows.append((label, f"{seconds * 1000:.0f} ms", f"{len(redraw()) / 1e6:.2f} MB", "< 1 s, < 3 MB"))

    print()
    print("| measurement | server time | response | target |")
    print("|---|---|---|---|")
    for name, value, size, target in rows:
        print(f"| {name} | {value} | {size} | {target} |")


if __name__ == "__main__":
    main()
