"""Start-up time of the command line: ``privdash --version`` and ``privdash <command> --help`` of every command take
no longer than a bare ``import pandas`` (the architecture issue's goal), because they import no pandas at all: the
parsers live in privdash/commands/parsers and take their defaults from privdash/constants.py. ``import privdash``
loads none of the heavy libraries (Dash, Flask, OpenDP, scikit-learn, statsmodels) until a function that needs them
is called.

Each command runs as a whole process with this interpreter from the repository (``from privdash.cli import main``
is what the ``privdash`` script runs), interpreter start-up included, several times in turn with the pandas import
(A B C ... A B C ...) so that load on the machine hits them alike; the medians are compared, with no margin: a
command that imported pandas would take the pandas import plus its own work, and fail.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

from privdash.cli import COMMANDS

ROOT = Path(__file__).resolve().parents[3]
RUNS = 5
CLI = "import sys; from privdash.cli import main; sys.exit(main())"
HEAVY = ("dash", "flask", "opendp", "sklearn", "statsmodels")
#: What ``--help`` must not load: the data libraries and every optional heavy one.
NOT_FOR_HELP = (*HEAVY, "pandas", "numpy", "geopandas", "scipy", "duckdb", "pyarrow", "pyspark", "weasyprint")


def _seconds(arguments: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, *arguments], cwd=ROOT, capture_output=True, check=True, timeout=120)
    return time.perf_counter() - start


def test_the_cli_starts_no_slower_than_a_pandas_import() -> None:
    commands = {
        "import pandas": ["-c", "import pandas"],
        "privdash --version": ["-c", CLI, "--version"],
        **{f"privdash {name} --help": ["-c", CLI, name, "--help"] for name in COMMANDS},
    }
    for arguments in commands.values():  # warm the file cache and write the bytecode before timing
        _seconds(arguments)
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(RUNS):
        for name, arguments in commands.items():
            times[name].append(_seconds(arguments))
    medians = {name: statistics.median(values) for name, values in times.items()}
    pandas = medians.pop("import pandas")
    slower = {name: round(median, 3) for name, median in medians.items() if median > pandas}
    assert slower == {}, f"import pandas: {pandas:.3f} s (median of {RUNS}); slower: {slower}"


def test_importing_the_core_loads_no_heavy_library() -> None:
    code = f"import sys, privdash; print(sorted(m for m in {HEAVY!r} if m in sys.modules))"
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True, timeout=120
    ).stdout
    assert out.strip() == "[]"


def test_help_of_every_command_loads_no_data_library() -> None:
    code = (
        "import sys, contextlib, io\nfrom privdash.cli import COMMANDS, main\nloaded = {}\n"
        "for name in [None, *COMMANDS]:\n"
        "    with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
        "        main(['--version'] if name is None else [name, '--help'])\n"
        f"    loaded[name or '--version'] = sorted(m for m in {NOT_FOR_HELP!r} if m in sys.modules)\n"
        "print(loaded)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True, timeout=120
    ).stdout
    assert out.strip() == str({"--version": [], **{name: [] for name in COMMANDS}})


def test_a_parse_error_loads_no_data_library() -> None:
    """A mistyped option is answered by the parser alone, before the command's module is imported."""
    code = (
        "import sys, contextlib, io\nfrom privdash.cli import main\n"
        "with contextlib.redirect_stderr(io.StringIO()) as err, contextlib.suppress(SystemExit):\n"
        "    main(['diagnose', 'table.csv', '--qii', 'a'])\n"
        f"print('unrecognized arguments: --qii' in err.getvalue(), sorted(m for m in {NOT_FOR_HELP!r} "
        "if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True, timeout=120
    ).stdout
    assert out.strip() == "True []"
