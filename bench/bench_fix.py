"""The Fix page's preview time on a large table: the step list applied, the fixed table diagnosed, the page built.

Target (issue: Fix page): each preview under 1 s for 100,000 rows; microaggregation and the least-lossy search run
in a background job instead.

A preview is what the page's callbacks do after a change of the step list: apply the steps (the per-process and
disk caches of earlier runs are cleared first, so every step is applied), diagnose the fixed table with the core,
compute the information loss, and build and JSON-encode the page's components. The diagnosis of the original
table is cached, as it is once the page is open (its cold time is listed separately); with ``--cold`` every
per-process cache is cleared before each preview, so the original's diagnosis is computed again each time too (the
way this benchmark measured before 2026-11-27).

Times: best wall-clock and best CPU time (``time.process_time``: the steadier figure on a shared machine).

The table is the synthetic person table (:func:`privdash.data.demo.people_table`) with more rows, stored as an
upload. Two views: the demo's contract (5 quasi-identifiers including the full postcode, 2 sensitive attributes
including the continuous amount) and a lighter one (age, sex, postcode; the diagnosis as sensitive attribute).

Usage: ``python -m bench.bench_fix [--rows N] [--repeat R] [--skip-slow] [--cold]``.
"""

from __future__ import annotations

import argparse
import gc
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from plotly.io.json import to_json_plotly

from bench._common import machine
from dashboard.pages import fix as page
from privdash.application.fixruns import FixRuns
from privdash.application.services import Services
from privdash.application.settings import Settings
from privdash.application.state import ViewState
from privdash.data.demo import people_contract, people_table

AGE = {"kind": "generalize", "column": "age", "rule": {"builder": "intervals", "widths": [5, 10, 20]}, "level": 2}
DISTRICT = {"kind": "generalize", "column": "postcode", "rule": {"builder": "postcodes", "levels": ["district"]}}
DISTRICT = {**DISTRICT, "level": 1}
CASES: list[tuple[str, tuple[dict[str, Any], ...], bool]] = [
    ("no step", (), False),
    ("generalize age (10 years)", (AGE,), False),
    ("+ postcode to district", (AGE, DISTRICT), False),
    (
        "+ record suppression k=5, 10%",
        (AGE, DISTRICT, {"kind": "record_suppression", "k": 5, "max_suppression": 0.1}),
        False,
    ),
    ("top-code age at 90", ({"kind": "top_bottom_coding", "column": "age", "top": 90},), False),
    (
        "drop and mask identifiers",
        ({"kind": "drop_identifiers", "columns": ["name"]}, {"kind": "mask_identifiers", "columns": ["phone"]}),
        False,
    ),
    ("age, district, cell suppression k=5", (AGE, DISTRICT, {"kind": "local_suppression", "k": 5}), False),
    ("least-lossy search k=5, 5% (background)", ({"kind": "search", "k": 5, "max_suppression": 0.05},), True),
    ("microaggregation k=5 (background)", ({"kind": "microaggregation", "k": 5},), True),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--skip-slow", action="store_true", help="leave out the background cases")
    parser.add_argument("--cold", action="store_true", help="also forget the original's diagnosis before each preview")
    args = parser.parse_args()
    print(f"machine: {machine()}")
    rows: list[tuple[str, str, str, str, str]] = []
    with tempfile.TemporaryDirectory() as folder:
        services = Services(Settings(store_dir=Path(folder) / "store", cache_dir=Path(folder) / "cache"))
        frame = people_table(args.rows)
        info = services.store.save(
            frame, session="bench-session-token-0000", filename="people.parquet", contract=people_contract().to_dict()
        )
        full = services.initial_state(services.dataset(info.id), ViewState())
        views = {"demo contract": full, "age, sex, postcode": full.with_quasi_identifiers(
            ["age", "sex", "postcode"], ["diagnosis"]
        )}  # fmt: skip
        for view, base in views.items():
            start = time.perf_counter()
            services.diagnosis(base)
            rows.append(
                (
                    view,
                    "diagnosis of the original (cold, cached after)",
                    f"{time.perf_counter() - start:.2f} s",
                    "",
                    "-",
                )
            )
            for label, steps, slow in CASES:
                if slow and args.skip_slow:
                    continue
                state = base.updated(fix=steps)

                def preview(state: ViewState = state) -> str:
                    if args.cold:
                        services.cache.clear()
                    else:  # the fix runs and their diagnoses; the original's diagnosis stays, as on the open page
                        services.cache.discard(lambda key: key[0] in ("fix-run", "fix-diagnosis"))
                    FixRuns(services).disk.clear()
                    return to_json_plotly(page.preview(FixRuns(services), state))

                seconds, cpu = _best_times(preview, repeat=1 if slow else args.repeat)
                payload = preview()
                run = FixRuns(services).run(state)
                after = FixRuns(services).fixed_diagnosis(run, state)
                result = f"k {after.k}, {len(run.data):,} rows" if run.error is None else run.error[:40]
                target = "background" if slow else "< 1 s"
                rows.append(
                    (
                        view,
                        label,
                        f"{seconds * 1000:,.0f} ms / {cpu * 1000:,.0f} ms",
                        f"{len(payload) / 1e6:.2f} MB; {result}",
                        target,
                    )
                )
    print()
    print(f"Fix page preview, {args.rows:,} rows{' (cold: every cache cleared)' if args.cold else ''}")
    print()
    print("| view | step list | server time: wall / CPU | response; after | target |")
    print("|---|---|---|---|---|")
    for row in rows:
        print("| " + " | ".join(row) + " |")


def _best_times(function: Callable[[], Any], *, repeat: int) -> tuple[float, float]:
    """Best wall-clock and best CPU seconds over ``repeat`` runs (after garbage collection)."""
    walls, cpus = [], []
    for _ in range(repeat):
        gc.collect()
        wall, cpu = time.perf_counter(), time.process_time()
        function()
        cpus.append(time.process_time() - cpu)
        walls.append(time.perf_counter() - wall)
    return min(walls), min(cpus)


if __name__ == "__main__":
    main()
