"""The static table of commands in privdash/cli.py (which lets ``privdash --help`` list the commands without
importing them) matches the command modules: the same names, modules and help lines; every parser module of
privdash/commands/parsers has its command module with the ``run`` the CLI calls."""

from __future__ import annotations

import argparse
import importlib
import pkgutil
from pathlib import Path

import pytest

from privdash import cli, commands
from privdash.commands import parsers


def _names(package: object) -> list[str]:
    return sorted(m.name for m in pkgutil.iter_modules(package.__path__) if not m.name.startswith("_") and not m.ispkg)  # type: ignore[attr-defined]


def test_the_table_lists_every_command_module_with_its_help() -> None:
    registered: dict[str, tuple[str, str]] = {}
    for name in _names(parsers):
        subparsers = argparse.ArgumentParser().add_subparsers()
        importlib.import_module(f"privdash.commands.parsers.{name}").register(subparsers)
        for action in subparsers._choices_actions:
            registered[action.dest] = (name, str(action.help))
    assert list(cli.COMMANDS.items()) == list(registered.items())


def test_every_parser_has_its_command_module_and_every_command_module_its_parser() -> None:
    assert _names(parsers) == _names(commands)
    for name in _names(commands):
        assert callable(importlib.import_module(f"privdash.commands.{name}").run), name


def test_the_lazy_parser_parses_like_the_full_one() -> None:
    argv = ["diagnose", "table.csv", "--qi", "a,b"]
    lazy = vars(cli.build_parser("diagnose").parse_args(argv))
    full = vars(cli.build_parser().parse_args(argv))
    assert lazy == full and lazy["command"] == "diagnose"
    assert cli.build_parser("diagnose").format_help() == cli.build_parser().format_help()


def test_the_allocator_setting_asks_glibc_for_its_values(monkeypatch: pytest.MonkeyPatch) -> None:
    import ctypes
    import sys

    calls: list[tuple[int, int]] = []

    class Libc:
        def mallopt(self, option: int, value: int) -> int:
            calls.append((option, value))
            return 1

    monkeypatch.setattr(sys, "platform", "linux")
    monkeypatch.setattr(ctypes, "CDLL", lambda name: Libc())
    cli._reuse_freed_memory()
    # M_MMAP_THRESHOLD, M_TRIM_THRESHOLD, M_TOP_PAD.
    assert dict(calls) == {-3: 32 << 20, -1: 1 << 30, -2: 256 << 20}
    calls.clear()
    monkeypatch.setattr(sys, "platform", "darwin")
    cli._reuse_freed_memory()
    assert calls == []


def test_arrow_is_given_the_c_allocator_without_an_environment_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    import os
    import sys

    import pyarrow as pa

    pools: list[str] = []
    environment = dict(os.environ)
    monkeypatch.setattr(pa, "set_memory_pool", lambda pool: pools.append(pool.backend_name))
    monkeypatch.setattr(sys, "platform", "linux")
    cli._arrow_from_the_c_allocator()
    assert pools == ["system"] and dict(os.environ) == environment
    monkeypatch.setattr(sys, "platform", "darwin")
    cli._arrow_from_the_c_allocator()
    assert pools == ["system"]


def test_the_collector_is_off_while_a_command_imports_and_leaves_those_objects_alone() -> None:
    import gc

    frozen = gc.get_freeze_count()
    assert gc.isenabled()
    try:
        with cli._collector_spared():
            assert not gc.isenabled()
            made = [[] for _ in range(1000)]
        assert gc.isenabled() and gc.get_freeze_count() >= frozen + len(made)
    finally:
        gc.unfreeze()
    gc.disable()
    try:
        with cli._collector_spared():
            pass
        assert not gc.isenabled()  # left as it was found
    finally:
        gc.unfreeze()
        gc.enable()


@pytest.mark.parametrize(
    ("argv", "process_argv", "spared"),
    [
        (None, ["privdash", "diagnose", "t.csv", "--qi", "a"], True),  # the console script
        (["diagnose", "t.csv", "--qi", "a"], ["privdash", "diagnose", "t.csv", "--qi", "a"], True),
        (["diagnose", "t.csv", "--qi", "a"], ["pytest", "-q"], False),  # a program's or a test's own arguments
        (None, ["privdash", "serve"], False),  # a long-lived server
    ],
)
def test_the_collector_is_spared_only_for_the_command_line_of_the_process(
    monkeypatch: pytest.MonkeyPatch, argv: list[str] | None, process_argv: list[str], spared: bool
) -> None:
    import contextlib
    import sys
    import types

    calls: list[str] = []
    real_import = importlib.import_module

    def import_module(name: str) -> object:
        if name.startswith("privdash.commands.parsers"):
            return real_import(name)
        calls.append(f"import {name}")
        return types.SimpleNamespace(run=lambda args: calls.append("run") or 0)

    @contextlib.contextmanager
    def spy() -> object:
        calls.append("spared")
        yield

    monkeypatch.setattr(sys, "argv", process_argv)
    monkeypatch.setattr(cli.importlib, "import_module", import_module)
    monkeypatch.setattr(cli, "_collector_spared", spy)
    monkeypatch.setattr(cli, "_reuse_freed_memory", lambda: None)
    monkeypatch.setattr(cli, "_arrow_from_the_c_allocator", lambda: calls.append("arrow pool"))
    monkeypatch.setattr(cli, "_stop_idle_blas_threads", lambda: calls.append("blas threads"))
    assert cli.main(argv) == 0
    command = process_argv[1] if argv is None else argv[0]
    expected = [f"import privdash.commands.{command}", "run"]
    assert calls == (["spared", "blas threads", "arrow pool", *expected] if spared else expected)


def test_the_blas_threads_are_stopped_in_each_openblas_the_process_loaded(monkeypatch: pytest.MonkeyPatch) -> None:
    import ctypes
    import io
    import sys

    maps = (
        "7f00-7f01 r-xp 0 08:01 1 /venv/numpy.libs/libscipy_openblas64_-32a4b2a6.so\n"
        "7f01-7f02 r--p 0 08:01 1 /venv/numpy.libs/libscipy_openblas64_-32a4b2a6.so\n"
        "7f02-7f03 r-xp 0 08:01 2 /usr/lib/libopenblas.so.0\n"
        "7f03-7f04 r-xp 0 08:01 3 /usr/lib/libc.so.6\n"
        "7f04-7f05 rw-p 0 00:00 0 [heap]\n"
    )
    stopped: list[str] = []

    class Library:
        def __init__(self, path: str) -> None:
            if path.startswith("/usr"):  # an OpenBLAS without the function: left alone
                raise AttributeError("blas_thread_shutdown_")
            self.blas_thread_shutdown_ = lambda: stopped.append(path)

    def library(path: str) -> Library:
        return Library(path)

    monkeypatch.setattr(sys, "platform", "linux")
    monkeypatch.setattr(cli, "_openblas_beside_numpy", lambda: ["/venv/numpy.libs/libscipy_openblas64_-32a4b2a6.so"])
    monkeypatch.setattr(cli, "open", lambda *args, **kwargs: io.StringIO(maps), raising=False)
    monkeypatch.setattr(ctypes, "CDLL", library)
    cli._stop_idle_blas_threads()
    # numpy's own, before numpy's import and once more among the loaded libraries (each mapping listed once)
    assert stopped == ["/venv/numpy.libs/libscipy_openblas64_-32a4b2a6.so"] * 2
    monkeypatch.setattr(sys, "platform", "darwin")
    cli._stop_idle_blas_threads()
    assert len(stopped) == 2


def test_numpys_openblas_is_found_beside_the_package_without_importing_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import importlib.machinery
    import importlib.util

    package = tmp_path / "site [packages]" / "numpy"  # a glob character in the path is taken as it is
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    libraries = package.parent / "numpy.libs"
    libraries.mkdir()
    for name in ("libscipy_openblas64_-32a4b2a6.so", "libgfortran-040039e1.so.5.0.0", "libopenblas.so.0"):
        (libraries / name).write_text("")
    spec = importlib.machinery.ModuleSpec("numpy", None, origin=str(package / "__init__.py"))
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: spec if name == "numpy" else None)
    assert cli._openblas_beside_numpy() == [
        str(libraries / "libopenblas.so.0"),
        str(libraries / "libscipy_openblas64_-32a4b2a6.so"),
    ]
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    assert cli._openblas_beside_numpy() == []


def test_blas_works_after_its_threads_are_stopped() -> None:
    import numpy as np

    cli._stop_idle_blas_threads()  # the real library, where it is OpenBLAS
    matrix = np.arange(40_000, dtype=np.float64).reshape(200, 200) / 1e4
    assert np.allclose(matrix @ matrix, np.einsum("ij,jk->ik", matrix, matrix))
