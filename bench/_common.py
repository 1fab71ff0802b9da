"""Shared helpers for the benchmark scripts: data location, machine description, timing and peak memory."""

from __future__ import annotations

import gc
import os
import platform
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DATA_DIR = Path(os.environ.get("PRIVDASH_DATA_DIR", ROOT.parent / "shared" / "data")).resolve()


def data_path(*parts: str) -> Path:
    """A file of the shared public datasets; exits with a clear message when the folder is missing."""
    path = DATA_DIR.joinpath(*parts)
    if not path.exists():
        raise SystemExit(f"Benchmark data not found: {path} (set PRIVDASH_DATA_DIR).")
    return path


def machine() -> str:
    """One line describing this machine and the library versions."""
    import numpy
    import pandas
    import pyarrow

    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        mem_kb = next(
            int(line.split()[1])
            for line in Path("/proc/meminfo").read_text().splitlines()
            if line.startswith("MemTotal")
        )
        memory = f"{mem_kb / 1024**2:.0f} GiB"
    except (OSError, StopIteration):
        memory = "? GiB"
    return (
        f"{date.today().isoformat()}, {cpu}, {os.cpu_count()} cores, {memory}, Python {platform.python_version()}, "
        f"numpy {numpy.__version__}, pandas {pandas.__version__}, pyarrow {pyarrow.__version__}"
    )


def best_time(function: Callable[[], Any], *, repeat: int = 3) -> float:
    """Best wall-clock time in seconds over ``repeat`` runs (after garbage collection)."""
    times = []
    for _ in range(repeat):
        gc.collect()
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return min(times)


@dataclass(frozen=True)
class Peak:
    """Peak extra memory (bytes) while a function ran: numpy/Python allocations plus Arrow's pool."""

    python_bytes: int
    arrow_bytes: int

    @property
    def total(self) -> int:
        return self.python_bytes + self.arrow_bytes


def peak_memory(function: Callable[[], Any]) -> Peak:
    """Measure the peak memory ``function`` allocates beyond what is live before it starts.

    numpy reports its buffers to ``tracemalloc``; Arrow allocates from its own pool, whose high-water mark is read
    before and after (a fresh pool peak needs a fresh process, so run this first in a process).
    """
    import pyarrow as pa

    gc.collect()
    pool = pa.default_memory_pool()
    arrow_before = pool.bytes_allocated()
    arrow_peak_before = pool.max_memory() or 0
    tracemalloc.start()
    tracemalloc.reset_peak()
    baseline = tracemalloc.get_traced_memory()[0]
    try:
        function()
        python_peak = tracemalloc.get_traced_memory()[1] - baseline
    finally:
        tracemalloc.stop()
    arrow_peak = max((pool.max_memory() or 0) - max(arrow_peak_before, arrow_before), 0)
    return Peak(python_peak, arrow_peak)


def ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}x" if b else "n/a"
