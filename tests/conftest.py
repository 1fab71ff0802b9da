"""Shared fixtures: where the public reference datasets live.

The datasets in ``../shared/data`` (beside the repository) are read in place, never copied into the repository.
Set ``PRIVDASH_DATA_DIR`` to read them from elsewhere. A missing folder fails the tests that need it, loudly.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DATA_DIR = Path(os.environ.get("PRIVDASH_DATA_DIR", ROOT.parent / "shared" / "data")).resolve()


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """The folder holding the shared public datasets (``PRIVDASH_DATA_DIR``, default ``../shared/data``)."""
    if not DATA_DIR.is_dir():
        pytest.fail(f"Shared datasets not found at {DATA_DIR}; set PRIVDASH_DATA_DIR to their folder.")
    return DATA_DIR


@pytest.fixture(scope="session")
def adult(data_dir: Path):
    """The ARX version of UCI Adult (30,162 rows, 9 columns), read with privdash's reader."""
    from dashboard.core.data.tables import read_table

    return read_table(data_dir / "arx_adult" / "adult.csv")
