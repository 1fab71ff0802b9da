"""The public Python API: what ``from dashboard.core import ...`` offers, and that the core never loads Dash."""

from __future__ import annotations

import ast
import dataclasses
import importlib
import subprocess
import sys
import types
from pathlib import Path

import pandas as pd
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


def test_the_five_line_example(data_dir: Path, tmp_path: Path) -> None:
    """The module docstring's example: diagnose, fix, check, export, recipe."""
    adult, qis, targets = (
        core.read_table(data_dir / "arx_adult" / "adult.csv"),
        ["sex", "age", "race", "education"],
        core.PrivacyTargets(k=5),
    )
    before = core.diagnose(adult, qis).check(targets)
    assert not before.passed and before.sentence().startswith("Not safe to release:")
    hierarchies = core.load_hierarchies(data_dir / "arx_adult" / "hierarchies", qis)
    fix = core.optimal_generalization(adult, hierarchies, k=5, max_suppression=0.02)
    after = core.diagnose(fix.data, qis).check(targets)
    assert after.passed and after.sentence().startswith("Meets every target")
    assert fix.suppressed <= 0.02 * len(adult)
    core.write_table(fix.data, tmp_path / "adult-k5.csv")
    fix.recipe.save(tmp_path / "adult-k5.recipe.json")
    again, _ = core.apply_recipe(adult, core.Recipe.load(tmp_path / "adult-k5.recipe.json"))
    pd.testing.assert_frame_equal(again, fix.data)
    assert core.read_table(tmp_path / "adult-k5.csv").shape == fix.data.shape


def test_everything_the_app_imports_from_the_core_is_public() -> None:
    """The dashboard, the CLI and the application layer use only names of ``dashboard.core.__all__``."""
    package = Path(core.__file__).resolve().parent.parent
    private = []
    for path in package.rglob("*.py"):
        if path.relative_to(package).parts[0] == "core":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("dashboard.core"):
                for alias in node.names:
                    module = importlib.import_module(node.module or "")
                    value = getattr(module, alias.name, None)
                    if value is None or isinstance(value, types.ModuleType):
                        continue  # a submodule imported as a namespace
                    if alias.name not in core.__all__:
                        private.append(f"{path.relative_to(package)}: {alias.name}")
    assert private == []
