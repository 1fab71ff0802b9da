"""The static table of commands in privdash/cli.py (which lets ``privdash --help`` list the commands without
importing them) matches the command modules: the same names, modules and help lines."""

from __future__ import annotations

import argparse
import importlib
import pkgutil

from privdash import cli, commands


def test_the_table_lists_every_command_module_with_its_help() -> None:
    registered: dict[str, tuple[str, str]] = {}
    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        subparsers = argparse.ArgumentParser().add_subparsers()
        importlib.import_module(f"privdash.commands.{info.name}").register(subparsers)
        for action in subparsers._choices_actions:
            registered[action.dest] = (info.name, str(action.help))
    assert list(cli.COMMANDS.items()) == list(registered.items())


def test_the_lazy_parser_parses_like_the_full_one() -> None:
    argv = ["diagnose", "table.csv", "--qi", "a,b"]
    lazy = vars(cli.build_parser("diagnose").parse_args(argv))
    full = vars(cli.build_parser().parse_args(argv))
    assert lazy == full and lazy["command"] == "diagnose"
    assert cli.build_parser("diagnose").format_help() == cli.build_parser().format_help()
