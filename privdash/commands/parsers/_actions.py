"""argparse actions for renamed options (standard library only, so that ``--help`` stays light)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["OldSpelling", "Refused", "add_project_argument"]


class OldSpelling(argparse.Action):
    """Store the value (as ``store``, or ``True`` with ``nargs=0``) and, when the option was written with one of
    the ``old`` spellings, say on stderr which spelling replaces it. An old spelling is read for one release after
    its rename (docs/definitions.md lists them under *also accepted*)."""

    def __init__(self, option_strings: Sequence[str], dest: str, *, old: Sequence[str] = (), **kwargs: Any) -> None:
        missing = [spelling for spelling in old if spelling not in option_strings]
        if missing:
            raise ValueError(f"old spellings {missing} are not option strings of --{dest}")
        self.old = tuple(old)
        super().__init__(option_strings, dest, **kwargs)

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        if option_string in self.old:
            current = next(spelling for spelling in self.option_strings if spelling not in self.old)
            print(
                f"{parser.prog}: warning: {option_string} is deprecated and will be removed in the next release; "
                f"use {current}",
                file=sys.stderr,
            )
        setattr(namespace, self.dest, values)


class Refused(argparse.Action):
    """An option whose meaning changed: refuse it (exit 2) with ``message``, which names the option to use, rather
    than silently computing something else."""

    def __init__(self, option_strings: Sequence[str], dest: str, *, message: str, **kwargs: Any) -> None:
        self.message = message
        kwargs.setdefault("help", argparse.SUPPRESS)
        super().__init__(option_strings, dest, **kwargs)

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        parser.exit(2, f"{parser.prog}: error: {self.message}\n")


def add_project_argument(parser: argparse.ArgumentParser) -> None:
    """``--project FILE`` of diagnose, anonymize, report, release and synthesize (:mod:`privdash.commands._project`
    applies it)."""
    parser.add_argument(
        "--project",
        type=Path,
        metavar="FILE",
        help="a privdash project (.privdash, saved from the Data page or by privdash project save): it supplies the "
        "contract, targets, recipe, hierarchies, sign-off fields and ledger reference not given as options, and the "
        "table is checked against its fingerprint (a difference is a warning; a column the project uses that is "
        "missing: exit 2)",
    )
