"""The public Python API: ``import privdash`` and its namespaces, what they load, and the deprecated old name."""

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

import privdash as core


def test_every_public_name_exists() -> None:
    missing = [name for name in core.__all__ if not hasattr(core, name)]
    assert missing == []


def test_import_privdash_and_diagnose_load_no_web_dp_or_learning_library() -> None:
    """``import privdash`` and a diagnosis load neither the web app's libraries nor OpenDP nor scikit-learn."""
    code = (
        "import sys, pandas as pd, privdash\n"
        "table = pd.DataFrame({'age': [30, 30, 41], 'sex': ['f', 'f', 'm']})\n"
        "assert privdash.diagnose(table, ['age', 'sex']).classes.k == 1\n"
        "heavy = ('dash', 'plotly', 'flask', 'dash_ag_grid', 'dash_mantine_components', 'opendp', 'sklearn',"
        " 'dashboard', 'statsmodels', 'geopandas', 'weasyprint', 'matplotlib')\n"
        "print(','.join(sorted(m for m in heavy if m in sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == ""


def test_the_top_level_is_short_and_every_namespace_resolves() -> None:
    assert 25 <= len(core.__all__) <= 40
    for name in ("DP_TRUE_VALUE", "KEY_ENV", "AUTO_DUCKDB_BYTES", "redact_url", "check_finite"):
        assert name not in core.__all__
        with pytest.raises(AttributeError):
            getattr(core, name)
    for sub in NAMESPACES:
        namespace = importlib.import_module(f"privdash.{sub}")
        missing = [name for name in getattr(namespace, "__all__", ()) if not hasattr(namespace, name)]
        assert missing == [], sub
        assert set(dir(namespace)) >= set(namespace.__all__)


def test_no_namespace_exports_a_name_that_is_also_its_submodule() -> None:
    """``privdash.measure.diagnose`` would be the function until the submodule of that name is imported, and the
    module after: such names live at the top level only (``privdash.diagnose``, ``privdash.model_risk``)."""
    import pkgutil

    for sub in ("", *(f".{name}" for name in NAMESPACES)):
        namespace = importlib.import_module(f"privdash{sub}")
        submodules = {info.name for info in pkgutil.iter_modules(getattr(namespace, "__path__", []))}
        assert set(getattr(namespace, "__all__", ())) & submodules == set(), sub


def test_the_old_dashboard_core_imports_still_work_with_a_deprecation_warning() -> None:
    code = (
        "import warnings, importlib, sys\n"
        "with warnings.catch_warnings(record=True) as caught:\n"
        "    warnings.simplefilter('always')\n"
        "    import dashboard.core as old\n"
        "    from dashboard.core import diagnose, DP_TRUE_VALUE\n"
        "    import dashboard.core.measure.risk as risk\n"
        "    from dashboard.core.privacy.ledger import BudgetLedger\n"
        "import privdash, privdash.measure.risk, privdash.dp.ledger, privdash.dp.release\n"
        "assert diagnose is privdash.diagnose\n"
        "assert risk is privdash.measure.risk\n"
        "assert BudgetLedger is privdash.dp.ledger.BudgetLedger\n"
        "assert DP_TRUE_VALUE == privdash.dp.release.DP_TRUE_VALUE\n"
        "print(sum(issubclass(w.category, DeprecationWarning) and 'import privdash' in str(w.message)"
        " for w in caught))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "1"


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


def test_the_web_app_uses_only_public_names_of_the_core() -> None:
    """``dashboard/`` reaches the core only through names of ``privdash.__all__`` or of a namespace's ``__all__``
    (and the application layer, which is its own API)."""
    public = set(core.__all__)
    for sub in NAMESPACES:
        public |= set(getattr(importlib.import_module(f"privdash.{sub}"), "__all__", ()))
    app = Path(core.__file__).resolve().parent.parent / "dashboard"
    private = []
    for path in app.rglob("*.py"):
        if path.relative_to(app).parts[0] == "core":
            continue  # the deprecated alias of privdash
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ImportFrom) or node.level:
                continue
            module = node.module or ""
            if not module.startswith("privdash") or module.startswith(("privdash.application", "privdash.cli")):
                continue
            for alias in node.names:
                value = getattr(importlib.import_module(module), alias.name, None)
                if value is None or isinstance(value, types.ModuleType):
                    continue  # a submodule imported as a namespace
                if alias.name not in public:
                    private.append(f"{path.relative_to(app)}: {module}.{alias.name}")
    assert private == []


NAMESPACES = (
    "data",
    "measure",
    "transform",
    "search",
    "utility",
    "geo",
    "engines",
    "dp",
    "attack",
    "synthesis",
    "errors",
)
