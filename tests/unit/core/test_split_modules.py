"""The packages split by seam (the table reader, postcodes, the release report) keep every public name where it was,
and the tables of lazy names point at the modules that define them."""

from __future__ import annotations

import importlib
import inspect
import subprocess
import sys

import pytest

SPLIT = ("privdash.data.tables", "privdash.geo.postcodes", "privdash.application.report")


@pytest.mark.parametrize("package", SPLIT)
def test_every_public_name_of_a_split_package_comes_from_one_of_its_modules(package: str) -> None:
    module = importlib.import_module(package)
    assert hasattr(module, "__path__"), f"{package} is a package"
    for name in module.__all__:
        value = getattr(module, name)
        if inspect.isfunction(value) or inspect.isclass(value):
            assert value.__module__.startswith(package + "."), (name, value.__module__)


def _tables() -> dict[str, dict[str, str]]:
    import dashboard.core
    import privdash
    import privdash.application.report
    import privdash.data
    import privdash.geo

    return {
        "privdash": privdash._SOURCES,
        "privdash.data": privdash.data._SOURCES,
        "privdash.geo": privdash.geo._SOURCES,
        "privdash.application.report": privdash.application.report._SOURCES,
        "dashboard.core": dashboard.core._MOVED,
    }


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_the_lazy_name_tables_point_at_the_defining_modules_of_the_split_packages() -> None:
    checked = 0
    for table, sources in _tables().items():
        for name, source in sources.items():
            if not source.startswith(SPLIT):
                continue
            assert source not in SPLIT, f"{table}: {name} points at the package {source}, not at its module"
            value = getattr(importlib.import_module(source), name)
            if inspect.isfunction(value) or inspect.isclass(value):
                assert value.__module__ == source, (table, name, value.__module__)
            checked += 1
    assert checked >= 40


def test_the_old_module_paths_of_the_split_modules_still_import_through_dashboard_core() -> None:
    code = (
        "import warnings\nwarnings.simplefilter('ignore', DeprecationWarning)\n"
        "import dashboard.core.application.report_render as render, privdash.application.report.render as new\n"
        "import dashboard.core.application.report_template as template\n"
        "import dashboard.core.data.tables as tables, dashboard.core.geo.postcodes as postcodes\n"
        "import privdash.application.report.template, privdash.data.tables, privdash.geo.postcodes\n"
        "from dashboard.core import read_table, csv_text, generalize_postcodes\n"
        "assert render is new and template is privdash.application.report.template\n"
        "assert tables is privdash.data.tables and postcodes is privdash.geo.postcodes\n"
        "assert read_table is tables.read_table and csv_text is tables.csv_text\n"
        "assert generalize_postcodes is postcodes.generalize_postcodes\n"
        "print('ok')"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "ok"
