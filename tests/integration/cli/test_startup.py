"""Start-up time of the command line: ``privdash --version`` and ``privdash diagnose --help`` take no longer than a
bare ``import pandas`` (the architecture issue's goal), and ``import privdash`` loads none of the heavy
libraries (Dash, Flask, OpenDP, scikit-learn, statsmodels) until a function that needs them is called.

Each command runs as a whole process with this interpreter from the repository (``from privdash.cli import main``
is what the ``privdash`` script runs), 3 times, alternating with the pandas import so that load on the machine hits
both alike; the medians are compared. Noise margin: the privdash commands may take up to 1.6 times the pandas
import (they import pandas too, plus argparse and privdash's own modules); before the lazy imports they took about
5 times as long.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

import pytest

from privdash.cli import COMMANDS

ROOT = Path(__file__).resolve().parents[3]
RUNS = 3
MARGIN = 1.6
CLI = "import sys; from privdash.cli import main; sys.exit(main())"
HEAVY = ("dash", "flask", "opendp", "sklearn", "statsmodels")


def _seconds(arguments: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, *arguments], cwd=ROOT, capture_output=True, check=True, timeout=120)
    return time.perf_counter() - start


def test_the_cli_starts_as_fast_as_a_pandas_import() -> None:
    commands = {
        "import pandas": ["-c", "import pandas"],
        "privdash --version": ["-c", CLI, "--version"],
        "privdash diagnose --help": ["-c", CLI, "diagnose", "--help"],
    }
    _seconds(commands["privdash --version"])  # warm the file cache and the bytecode of the first run
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(RUNS):
        for name, arguments in commands.items():
            times[name].append(_seconds(arguments))
    medians = {name: statistics.median(values) for name, values in times.items()}
    pandas = medians.pop("import pandas")
    for name, median in medians.items():
        assert median <= MARGIN * pandas, f"{name}: {median:.2f} s, import pandas: {pandas:.2f} s ({times})"


def test_importing_the_core_loads_no_heavy_library() -> None:
    code = f"import sys, privdash; print(sorted(m for m in {HEAVY!r} if m in sys.modules))"
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True, timeout=120
    ).stdout
    assert out.strip() == "[]"


def test_diagnose_help_loads_no_heavy_library() -> None:
    code = (
        "import sys, contextlib, io\nfrom privdash.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
        "    main(['diagnose', '--help'])\n"
        f"print(sorted(m for m in {(*HEAVY, 'scipy', 'duckdb', 'pyspark', 'weasyprint')!r} if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True, timeout=120
    ).stdout
    assert out.strip() == "[]"


#: What no command's ``--help`` may load: the web app's libraries, OpenDP, scikit-learn, statsmodels, and the
#: libraries of maps, charts and PDF (geopandas, matplotlib, WeasyPrint), which load when a map, a chart or a PDF
#: is made.
HELP_HEAVY = (*HEAVY, "geopandas", "pyproj", "matplotlib", "weasyprint")


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_the_help_of_every_command_loads_no_heavy_library(command: str) -> None:
    code = (
        "import sys, contextlib, io\nfrom privdash.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()) as out, contextlib.suppress(SystemExit):\n"
        f"    main([{command!r}, '--help'])\n"
        "assert out.getvalue().startswith('usage: privdash'), out.getvalue()\n"
        f"print(sorted(m for m in {HELP_HEAVY!r} if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True, timeout=120
    ).stdout
    assert out.strip() == "[]", command
