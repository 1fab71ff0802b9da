"""The public Python API: what ``from dashboard.core import ...`` offers, and that the core never loads Dash."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest

import dashboard.core as core


def test_every_public_name_exists() -> None:
    missing = [name for name in core.__all__ if not hasattr(core, name)]
    assert missing == []


def test_core_imports_no_dashboard_libraries() -> None:
    code = (
        "import sys, dashboard.core, dashboard.core.geo.geography\n"
        "loaded = sorted(m for m in ('dash', 'plotly', 'flask', 'dash_ag_grid', 'dash_mantine_components')"
        " if m in sys.modules)\n"
        "print(','.join(loaded))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == ""


def test_readme_example(data_dir: Path) -> None:
    table = core.read_table(data_dir / "arx_adult" / "adult.csv")
    result = core.diagnose(table, ["sex", "age", "race"], sensitive=["salary-class"])
    classes = core.equivalence_classes(table, ["sex", "age", "race"])
    assert result.classes.k == classes.k == int(classes.sizes.min())
    assert result.risk.prosecutor.highest == pytest.approx(1 / classes.k)
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.rows = 0  # type: ignore[misc]
    payload = result.to_dict()
    assert payload["rows"] == len(table) == 30162
    assert payload["k"] == classes.k
