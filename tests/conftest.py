"""Shared fixtures: where the public reference datasets live, and the pyCANON oracle.

The datasets in ``../shared/data`` (beside the repository) are read in place, never copied into the repository.
Set ``PRIVDASH_DATA_DIR`` to read them from elsewhere. A missing folder fails the tests that need it, loudly.

pyCANON is imported only by the tests that compare with it (through the ``pycanon`` fixture), so the rest of the
suite collects and runs without it; when it is missing those tests fail, with the command that installs it.
"""

from __future__ import annotations

import os
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]
DATA_DIR = Path(os.environ.get("PRIVDASH_DATA_DIR") or ROOT.parent / "shared" / "data").resolve()
#: The pyCANON release of the test extra (later ones pin exact old numpy and pandas versions).
PYCANON = "pycanon==1.0.1.post2"


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """The folder holding the shared public datasets (``PRIVDASH_DATA_DIR``, default ``../shared/data``)."""
    if not DATA_DIR.is_dir():
        pytest.fail(f"Shared datasets not found at {DATA_DIR}; set PRIVDASH_DATA_DIR to their folder.")
    return DATA_DIR


@pytest.fixture(scope="session")
def adult(data_dir: Path):
    """The ARX version of UCI Adult (30,162 rows, 9 columns), read with privdash's reader."""
    from privdash.data.tables import read_table

    return read_table(data_dir / "arx_adult" / "adult.csv")


@pytest.fixture(scope="session")
def pycanon() -> ModuleType:
    """pyCANON's ``anonymity`` module, the independent oracle of the privacy models; fails (never skips) without it."""
    try:
        from pycanon import anonymity
    except ImportError as exc:
        reason = str(exc)
    else:
        return anonymity
    pytest.fail(
        f"pyCANON is not installed ({reason}); the comparisons with it need it: pip install -e '.[test]' "
        f"(or pip install '{PYCANON}').",
        pytrace=False,
    )
