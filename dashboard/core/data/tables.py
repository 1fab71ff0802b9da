"""Reading tables from CSV, Excel and Parquet, with clear errors for files that are not tables.

Rules (applied the same way by the CLI, the Python API and the dashboard):

* **Format** from the file name's extension (``.csv``, ``.tsv``, ``.txt``, ``.xlsx``, ``.xlsm``, ``.parquet``,
  ``.pq``); without a known extension, from the first bytes (``PAR1`` is Parquet, a ZIP header is Excel,
  anything else is treated as delimited text).
* **Encoding** of delimited text: UTF-8 (a byte-order mark is dropped); otherwise the most probable encoding
  found by ``charset-normalizer`` on the first 1 MB, reported in :class:`TableInfo`. Files containing NUL
  bytes are rejected as binary.
* **Delimiter**: the one of ``, ; \\t |`` that splits the first lines into the same, largest number of fields.
* **Values** are read as text, then a column becomes numeric only when every non-missing value parses as a
  number and no value has a leading zero (``"02134"`` stays text, so ZIP codes and ids keep their form).
  Empty cells and the usual markers (``NA``, ``N/A``, ``NaN``, ``null``, ``None``, ``-``... the pandas default
  list) are missing values.
* Input files are only ever opened for reading.

Writing (:func:`write_table`, :func:`csv_text`) makes exports safe to open in a spreadsheet: a text cell (or a
column name) that starts with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return is written with a leading
``'`` (OWASP's rule against CSV / formula injection), so Excel or LibreOffice shows it as text instead of running
it as a formula (``=HYPERLINK(...)``, ``=cmd|' /C calc'!A0``). Numbers are never changed: a numeric column's ``-5``
stays a number. Machine consumers that need the raw text pass ``escape_formulas=False`` (CLI:
``--no-escape-formulas``). Parquet is a typed format that spreadsheets do not evaluate, so it is written as it is.
"""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import numpy as np
import pandas as pd

from dashboard.core.errors import DataReadError

__all__ = [
    "DEFAULT_MAX_BYTES",
    "FORMULA_PREFIXES",
    "TableInfo",
    "csv_text",
    "escape_formulas",
    "read_table",
    "read_table_with_info",
    "write_table",
]

DEFAULT_MAX_BYTES = 100 * 1024 * 1024
_DELIMITERS = (",", ";", "\t", "|")
_TEXT_EXTENSIONS = {".csv", ".tsv", ".txt", ".dat", ".tab"}
_EXCEL_EXTENSIONS = {".xlsx", ".xlsm"}
_PARQUET_EXTENSIONS = {".parquet", ".pq"}
_SNIFF_BYTES = 1 << 20


@dataclass(frozen=True)
class TableInfo:
    """How a table was read: format, encoding and delimiter (text only), size in bytes."""

    format: str
    encoding: str | None
    delimiter: str | None
    n_bytes: int


def read_table(
    source: str | os.PathLike[str] | bytes | BinaryIO,
    *,
    filename: str | None = None,
    max_bytes: int | None = None,
) -> pd.DataFrame:
    """Read a CSV, Excel or Parquet table into a DataFrame (see the module docstring for the rules).

    Parameters
    ----------
    source
        A path, the raw bytes of a file, or a binary file object.
    filename
        Name used to pick the format and in messages when ``source`` is bytes or a file object.
    max_bytes
        Reject files larger than this many bytes (``None``: no limit).

    Raises
    ------
    DataReadError
        With a specific message: empty file, binary content, unknown encoding, size over the limit,
        a single column, no data rows, every value missing, unreadable Excel or Parquet.
    """
    return read_table_with_info(source, filename=filename, max_bytes=max_bytes)[0]


def read_table_with_info(
    source: str | os.PathLike[str] | bytes | BinaryIO,
    *,
    filename: str | None = None,
    max_bytes: int | None = None,
) -> tuple[pd.DataFrame, TableInfo]:
    """Like :func:`read_table`, also returning how the file was read."""
    raw, name = _load_bytes(source, filename, max_bytes)
    label = name or "the file"
    if not raw.strip():
        raise DataReadError(f"{label} is empty.")
    kind = _detect_format(raw, name)
    if kind == "parquet":
        frame = _read_parquet(raw, label)
        info = TableInfo("parquet", None, None, len(raw))
    elif kind == "excel":
        frame = _read_excel(raw, label)
        info = TableInfo("excel", None, None, len(raw))
    else:
        text, encoding = _decode(raw, label)
        delimiter = _detect_delimiter(text)
        frame = _read_text(text, delimiter, label)
        info = TableInfo("csv", encoding, delimiter, len(raw))
    _check_shape(frame, label, info)
    return frame, info


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


def _load_bytes(
    source: str | os.PathLike[str] | bytes | BinaryIO, filename: str | None, max_bytes: int | None
) -> tuple[bytes, str | None]:
    if isinstance(source, bytes | bytearray | memoryview):
        raw = bytes(source)
        name = filename
    elif isinstance(source, str | os.PathLike):
        path = Path(source)
        name = filename or path.name
        if not path.exists():
            raise DataReadError(f"File not found: {path}.")
        if path.is_dir():
            raise DataReadError(f"{path} is a folder, not a file.")
        size = path.stat().st_size
        if max_bytes is not None and size > max_bytes:
            raise DataReadError(_too_large(name, size, max_bytes))
        try:
            raw = path.read_bytes()
        except OSError as exc:
            raise DataReadError(f"Cannot read {path}: {exc.strerror or exc}.") from exc
    else:
        raw = source.read()
        name = filename or getattr(source, "name", None)
    if max_bytes is not None and len(raw) > max_bytes:
        raise DataReadError(_too_large(name, len(raw), max_bytes))
    return raw, name


def _too_large(name: str | None, size: int, limit: int) -> str:
    return (
        f"{name or 'The file'} is {size / 1e6:.1f} MB, over the {limit / 1e6:.0f} MB limit. "
        "Raise the limit or use the command line for large files."
    )


def _detect_format(raw: bytes, name: str | None) -> str:
    suffix = Path(name).suffix.lower() if name else ""
    if suffix in _PARQUET_EXTENSIONS:
        return "parquet"
    if suffix in _EXCEL_EXTENSIONS:
        return "excel"
    if suffix == ".xls":
        raise DataReadError(f"{name}: the old Excel .xls format is not supported; save it as .xlsx or CSV.")
    if suffix in _TEXT_EXTENSIONS:
        return "text"
    if raw[:4] == b"PAR1":
        return "parquet"
    if raw[:4] == b"PK\x03\x04":
        return "excel"
    return "text"


def _decode(raw: bytes, label: str) -> tuple[str, str]:
    head = raw[:_SNIFF_BYTES]
    if b"\x00" in head and not head.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise DataReadError(f"{label} looks binary, not a text table (it contains NUL bytes).")
    try:
        return raw.decode("utf-8-sig"), "utf-8"
    except UnicodeDecodeError:
        pass
    from charset_normalizer import from_bytes

    best = from_bytes(head).best()
    if best is None:
        raise DataReadError(f"{label} is not UTF-8 and its text encoding could not be recognised.")
    try:
        return raw.decode(best.encoding), best.encoding
    except (UnicodeDecodeError, LookupError) as exc:
        raise DataReadError(
            f"{label} is not UTF-8 and could not be decoded as {best.encoding}; save it as UTF-8."
        ) from exc


def _detect_delimiter(text: str) -> str:
    lines = [line for line in text[:65536].splitlines()[:50] if line.strip()]
    if len(lines) > 1:
        lines = lines[:-1]  # the last sniffed line may be cut mid-way
    best, best_score = ",", (0, 0)
    for delimiter in _DELIMITERS:
        counts = [len(row) for row in csv.reader(lines, delimiter=delimiter)]
        if not counts:
            continue
        fields = max(set(counts), key=counts.count)
        consistent = sum(c == fields for c in counts)
        score = (consistent if fields > 1 else 0, fields)
        if score > best_score:
            best, best_score = delimiter, score
    return best


def _read_text(text: str, delimiter: str, label: str) -> pd.DataFrame:
    try:
        frame = pd.read_csv(
            io.StringIO(text),
            sep=delimiter,
            dtype=str,
            keep_default_na=True,
            skipinitialspace=True,
            engine="c",
        )
    except pd.errors.EmptyDataError as exc:
        raise DataReadError(f"{label} has no columns.") from exc
    except pd.errors.ParserError as exc:
        raise DataReadError(f"{label} is not a consistent delimited table: {exc}".rstrip(".") + ".") from exc
    frame.columns = [str(c).strip() for c in frame.columns]
    return infer_numeric_columns(frame)


def infer_numeric_columns(frame: pd.DataFrame) -> pd.DataFrame:
    """Convert text columns whose every non-missing value is a number without a leading zero."""
    converted = {}
    for name in frame.columns:
        column = frame[name]
        if not (pd.api.types.is_string_dtype(column) or column.dtype == object):
            continue
        values = column.dropna()
        if values.empty:
            continue
        stripped = values.astype(str).str.strip()
        if stripped.str.match(r"^[+-]?0\d").any():
            continue
        numbers = pd.to_numeric(stripped, errors="coerce")
        if numbers.isna().any():
            continue
        result = pd.to_numeric(column.astype(str).str.strip().where(column.notna()), errors="coerce")
        if (result.dropna() % 1 == 0).all() and result.notna().all():
            result = result.astype(np.int64)
        converted[name] = result
    return frame.assign(**converted) if converted else frame


def _read_excel(raw: bytes, label: str) -> pd.DataFrame:
    try:
        frame = pd.read_excel(io.BytesIO(raw), sheet_name=0, engine="openpyxl")
    except Exception as exc:  # openpyxl raises many exception types for corrupt files
        raise DataReadError(f"{label} could not be read as an Excel workbook: {exc}.") from exc
    frame.columns = [str(c).strip() for c in frame.columns]
    return frame


def _read_parquet(raw: bytes, label: str) -> pd.DataFrame:
    try:
        return pd.read_parquet(io.BytesIO(raw))
    except Exception as exc:  # pyarrow raises ArrowInvalid, OSError ... for corrupt files
        raise DataReadError(f"{label} could not be read as a Parquet file: {exc}.") from exc


def _check_shape(frame: pd.DataFrame, label: str, info: TableInfo) -> None:
    if frame.shape[1] == 0:
        raise DataReadError(f"{label} has no columns.")
    if frame.shape[1] == 1:
        hint = ""
        if info.delimiter is not None:
            shown = "tab" if info.delimiter == "\t" else repr(info.delimiter)
            hint = f" (the delimiter found was {shown}; use , ; tab or | between columns)"
        raise DataReadError(f"{label} has a single column '{frame.columns[0]}'; a table needs at least two{hint}.")
    if frame.shape[0] == 0:
        raise DataReadError(f"{label} has a header but no data rows.")
    if frame.isna().all().all():
        raise DataReadError(f"{label}: every value is missing.")
    unnamed = [c for c in frame.columns if not c or c.startswith("Unnamed:")]
    if unnamed and len(unnamed) == frame.shape[1]:
        raise DataReadError(f"{label} has no header row with column names.")


def sniff_delimited(sample: bytes, name: str | None = None) -> tuple[str, str]:
    """The encoding and the delimiter :func:`read_table` would use for a delimited text file that starts with
    ``sample`` (its first megabyte or so): engines that stream the file read it with the same two choices."""
    end = sample.rfind(b"\n") + 1
    cut = sample[:end] if end else sample  # a sample may end inside a multi-byte character
    if cut.startswith((b"\xff\xfe", b"\xfe\xff")) and len(cut) % 2:
        cut = cut[:-1] if cut.startswith(b"\xfe\xff") else sample[: end + 1]
    text, encoding = _decode(cut, name or "The file")
    return encoding, _detect_delimiter(text)

