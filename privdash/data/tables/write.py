"""Writing tables (:func:`write_table`, :func:`csv_text`) safe to open in a spreadsheet: text cells that a spreadsheet
would run as a formula get a leading ``'`` (:func:`escape_formulas`)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from privdash.data.tables.common import _PARQUET_EXTENSIONS, _TEXT_EXTENSIONS
from privdash.errors import DataReadError

__all__ = ["FORMULA_PREFIXES", "csv_text", "escape_formulas", "write_table"]


#: First characters that make a spreadsheet read a cell as a formula (OWASP, "CSV Injection").
FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")
_FORMULA_PATTERN = r"^[=+\-@\t\r]"


def _escape_text(values: pd.Series) -> pd.Series:
    """``values`` with a ``'`` before every text value that starts like a formula (other values unchanged)."""
    if not (pd.api.types.is_object_dtype(values.dtype) or pd.api.types.is_string_dtype(values.dtype)):
        return values
    risky = values.str.contains(_FORMULA_PATTERN, regex=True, na=False)
    if not risky.any():
        return values
    out = values.astype(object).copy()
    out[risky.to_numpy(dtype=bool)] = "'" + values[risky].astype(str)
    return out


def escape_formulas(data: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``data`` safe to open in a spreadsheet: text cells and column names that start with ``=``, ``+``,
    ``-``, ``@``, a tab or a carriage return get a leading ``'`` (see the module docstring). Numbers are unchanged."""
    return _escaped_frame(data)


def _escaped_frame(data: pd.DataFrame) -> pd.DataFrame:
    out = data.copy()
    for position in range(out.shape[1]):
        column = out.iloc[:, position]
        escaped = _escape_text(column)
        if escaped is not column:
            out.isetitem(position, escaped.to_numpy(dtype=object))
    names = pd.Series([str(c) for c in out.columns], dtype=object)
    out.columns = pd.Index(_escape_text(names).tolist())
    return out


def csv_text(data: pd.DataFrame, *, sep: str = ",", escape_formulas: bool = True) -> str:
    """``data`` as CSV text (no index), formula cells escaped unless ``escape_formulas`` is False."""
    frame = _escaped_frame(data) if escape_formulas else data
    return str(frame.to_csv(index=False, sep=sep))


def write_table(
    data: pd.DataFrame,
    path: str | os.PathLike[str],
    *,
    overwrite_protect: Sequence[Path] = (),
    escape_formulas: bool = True,
) -> Path:
    """Write ``data`` as CSV or Parquet, chosen by the extension of ``path``.

    Refuses to write over any path in ``overwrite_protect`` (the inputs of a job), so inputs are never modified.
    CSV and TSV cells that a spreadsheet would run as formulas are escaped unless ``escape_formulas`` is False.
    """
    target = Path(path)
    for protected in overwrite_protect:
        if target.exists() and Path(protected).exists() and target.resolve() == Path(protected).resolve():
            raise DataReadError(f"Refusing to overwrite the input file {protected}; choose another output path.")
    suffix = target.suffix.lower()
    if suffix in _PARQUET_EXTENSIONS:
        data.to_parquet(target, index=False)
    elif suffix in _TEXT_EXTENSIONS or suffix == "":
        text = csv_text(data, sep="\t" if suffix == ".tsv" else ",", escape_formulas=escape_formulas)
        target.write_text(text, encoding="utf-8")
    else:
        raise DataReadError(f"Cannot write '{target.name}': use a .csv, .tsv or .parquet file name.")
    return target
