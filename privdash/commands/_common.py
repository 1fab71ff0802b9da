"""Helpers shared by the CLI commands: JSON output and plain-text tables."""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd


def jsonable(value: Any) -> Any:
    """Convert numpy/pandas values to plain JSON types; NaN and infinity become ``null``."""
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return [jsonable(v) for v in value.tolist()]
    if isinstance(value, pd.DataFrame):
        return [jsonable(row) for row in value.to_dict(orient="records")]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if value is pd.NA or value is pd.NaT:
        return None
    return value


def print_json(obj: Any) -> None:
    """Print one JSON object on stdout (strict JSON: no NaN or Infinity)."""
    json.dump(jsonable(obj), sys.stdout, indent=2, ensure_ascii=False, allow_nan=False)
    sys.stdout.write("\n")


def format_table(headers: Sequence[str], rows: Sequence[Sequence[Any]], *, align: str | None = None) -> str:
    """A plain-text table; ``align`` gives ``l`` or ``r`` per column (default: numbers right, text left)."""
    cells = [[_cell(v) for v in row] for row in rows]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]
    if align is None:
        align = "".join(
            "r" if rows and all(isinstance(r[i], int | float | np.number) for r in rows) else "l"
            for i in range(len(headers))
        )

    def line(values: Sequence[str]) -> str:
        return "  ".join(v.rjust(w) if a == "r" else v.ljust(w) for v, w, a in zip(values, widths, align, strict=True))

    return "\n".join([line(headers), line(["-" * w for w in widths]), *(line(r) for r in cells)]).rstrip()


def _cell(value: Any) -> str:
    if isinstance(value, float | np.floating):
        if not math.isfinite(value):
            return "-" if math.isnan(value) else ("inf" if value > 0 else "-inf")
        return f"{value:.4g}"
    return str(value)


def split_columns(text: str | None) -> list[str]:
    """Split a ``--qi A,B,C`` style argument into names (surrounding spaces dropped, empties removed)."""
    if not text:
        return []
    return [part.strip() for part in text.split(",") if part.strip()]


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
