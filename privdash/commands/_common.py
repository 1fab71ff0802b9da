"""Helpers shared by the CLI commands: JSON output and plain-text tables."""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
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


def check_output(args: argparse.Namespace, formats: Sequence[str]) -> None:
    """``--output`` of a command that reads ``args.file`` and may charge ``args.ledger``: a name of one of
    ``formats``, never the input file, never the ledger (:class:`~privdash.errors.ParameterError`)."""
    from privdash.errors import ParameterError

    output = args.output
    if output is None:
        return
    if output.suffix.lower() not in formats:
        raise ParameterError(f"Cannot write '{output.name}': use a {', '.join(formats)} file name.")
    if output.exists() and output.resolve() == Path(args.file).resolve():
        raise ParameterError(f"Refusing to overwrite the input file {args.file}; choose another output path.")
    ledger = getattr(args, "ledger", None)
    if ledger is not None and output.resolve() == Path(ledger).resolve():
        raise ParameterError("The output file and the ledger must be different files.")
