"""The ``privdash`` command line: one subcommand per module of :mod:`dashboard.commands`.

Each command module defines ``register(subparsers)``, which adds its parser and sets ``handler`` (a function of
the parsed arguments returning an exit status). A command that needs settings (the shared-data folder, the
pseudonymisation key, the server address) reads them once with
:meth:`~dashboard.application.settings.Settings.from_env` and passes the values down. Errors caused by the input
(:class:`PrivdashError`) print one clear message on stderr and exit with status 2; they never print a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
from collections.abc import Sequence

from . import __version__, commands
from .core.errors import PrivdashError

EXIT_USAGE = 2


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="privdash",
        description="Privacy risk diagnostics for microdata: which records can be re-identified, why, "
        "and what is the cheapest fix.",
    )
    parser.add_argument("--version", action="version", version=f"privdash {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{commands.__name__}.{info.name}")
        module.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "handler", None):
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    try:
        return int(args.handler(args) or 0)
    except PrivdashError as exc:
        print(f"privdash {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print(f"privdash {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
