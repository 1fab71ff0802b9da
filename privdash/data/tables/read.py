"""Reading a table of any format: :func:`read_table` finds the format from the content and the extension and hands the
bytes to that format's reader, then checks the table's shape (the rules are in :mod:`privdash.data.tables`)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import pandas as pd

from privdash.data.tables.common import (
    _EXCEL_EXTENSIONS,
    _GZIP,
    _OLE2,
    _PARQUET_EXTENSIONS,
    _STATISTICAL_FORMATS,
    _ZIP,
    _looks_like,
)
from privdash.data.tables.delimited import _decode, _detect_delimiter, _read_text, _read_text_arrow
from privdash.data.tables.excel import _read_excel
from privdash.data.tables.limits import DEFAULT_READ_LIMITS, ReadLimits, _Deadline
from privdash.data.tables.parquet import _read_parquet
from privdash.data.tables.statistical import _detect_statistical, _encoding_not_applicable, _read_statistical
from privdash.errors import DataReadError, format_values

__all__ = ["TableInfo", "detect_format", "read_table", "read_table_with_info"]


@dataclass(frozen=True)
class TableInfo:
    """How a table was read.

    Attributes
    ----------
    format
        ``csv``, ``excel``, ``parquet``, ``spss``, ``stata``, ``sas7bdat`` or ``xport``.
    encoding, delimiter
        Of delimited text (None otherwise); the encoding of an SPSS, Stata or SAS file's text, when known.
    n_bytes
        Size of the file.
    sheet
        The Excel sheet read (None for other formats).
    sheets
        Every sheet of the workbook, in order (empty for other formats).
    notes
        Plain sentences about what the reader did that the user should know: the sheet read when there are
        several, renamed columns, columns kept as text to keep their values exact, a format other than the
        extension says.
    """

    format: str
    encoding: str | None
    delimiter: str | None
    n_bytes: int
    sheet: str | None = None
    sheets: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()


def read_table(
    source: str | os.PathLike[str] | bytes | BinaryIO,
    *,
    filename: str | None = None,
    max_bytes: int | None = None,
    sheet: str | int | None = None,
    limits: ReadLimits | None = None,
    encoding: str | None = None,
    columns: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Read a CSV, Excel, Parquet, SPSS, Stata or SAS table into a DataFrame (see the module docstring for the
    rules).

    Parameters
    ----------
    source
        A path, the raw bytes of a file, or a binary file object.
    filename
        Name used to pick the format and in messages when ``source`` is bytes or a file object.
    max_bytes
        Reject files larger than this many bytes (``None``: no limit).
    sheet
        Excel only: the sheet to read, by name or 0-based position (default: the first).
    limits
        Bounds on rows, columns, cells, decompressed size and time (default :data:`DEFAULT_READ_LIMITS`).
    encoding
        SPSS, Stata and SAS files only: the encoding of their text (an iconv name such as ``WINDOWS-1252``), in
        place of the one the file declares (default: the declared one, else Windows-1252 with a note).
    columns
        Only these columns (named as the reader names them), in the file's order: the same columns, values and
        types as reading every column and selecting these. A delimited text file then parses only them (a wide
        file costs what its chosen columns cost); other formats are read whole and narrowed. When a name is not a
        column of the file, every column is read (the caller's check of its names says which are unknown). The
        checks of the table's shape (a single column, no data rows) are those of the whole file; "every value is
        missing" is checked on the chosen columns only when they are all the file has.

    Raises
    ------
    DataReadError
        With a specific message: empty file, binary content, unknown encoding, size over the limit,
        a single column, no data rows, every value missing, unreadable Excel or Parquet, an unknown sheet,
        formulas without saved values, nested or duplicate Parquet columns, inconsistent rows, a damaged or
        truncated statistical file, text not valid in its encoding.
    ReadLimitError
        When a limit of ``limits`` is passed (a :class:`DataReadError` too).
    """
    return read_table_with_info(
        source, filename=filename, max_bytes=max_bytes, sheet=sheet, limits=limits, encoding=encoding, columns=columns
    )[0]


def read_table_with_info(
    source: str | os.PathLike[str] | bytes | BinaryIO,
    *,
    filename: str | None = None,
    max_bytes: int | None = None,
    sheet: str | int | None = None,
    limits: ReadLimits | None = None,
    encoding: str | None = None,
    columns: Sequence[str] | None = None,
) -> tuple[pd.DataFrame, TableInfo]:
    """Like :func:`read_table`, also returning how the file was read."""
    limits = DEFAULT_READ_LIMITS if limits is None else limits
    raw, name = _load_bytes(source, filename, max_bytes)
    label = name or "the file"
    deadline = _Deadline(limits, label)
    if not raw or raw.isspace():  # as ``not raw.strip()`` (ASCII whitespace), without copying the file
        raise DataReadError(f"{label} is empty.")
    kind, notes = detect_format(raw, name, label)
    if sheet is not None and kind != "excel":
        raise DataReadError(f"{label} is not an Excel workbook, so it has no sheet to choose ('{sheet}' was asked).")
    if encoding is not None and kind not in _STATISTICAL_FORMATS:
        raise DataReadError(_encoding_not_applicable(label, encoding))
    info: TableInfo
    all_missing = None
    file_width: int | None = None
    if kind == "parquet":
        frame, parquet_notes = _read_parquet(raw, label, limits, deadline)
        info = TableInfo("parquet", None, None, len(raw), notes=tuple(notes + parquet_notes))
    elif kind == "excel":
        sheet_read = _read_excel(raw, label, sheet, limits, deadline)
        frame = sheet_read.frame
        notes += sheet_read.notes
        info = TableInfo("excel", None, None, len(raw), sheet_read.name, sheet_read.sheets, tuple(notes))
        label = f"{label} (sheet '{sheet_read.name}')" if len(sheet_read.sheets) > 1 else label
    elif kind in _STATISTICAL_FORMATS:
        statistical = _read_statistical(raw, kind, label, limits, deadline, encoding)
        frame = statistical.frame
        info = TableInfo(kind, statistical.encoding, None, len(raw), notes=tuple(notes + statistical.notes))
    else:
        arrow = _read_text_arrow(raw, label, limits, deadline, columns)
        if arrow is not None:
            frame, text_notes, all_missing, delimiter, file_width = arrow
            encoding = "utf-8"
        else:
            text, encoding = _decode(raw, label)
            deadline.check()
            delimiter = _detect_delimiter(text)
            frame, text_notes, all_missing = _read_text(text, delimiter, label, limits, deadline)
            del text
        info = TableInfo("csv", encoding, delimiter, len(raw), notes=tuple(notes + text_notes))
    if file_width is not None and file_width > frame.shape[1]:
        # Only the chosen columns were parsed: the shape is the file's. When all their values are missing, the
        # whole file is read to tell whether every value of the file is.
        if all_missing:
            whole = read_table_with_info(raw, filename=name, max_bytes=max_bytes, limits=limits)
            return whole[0][list(frame.columns)], whole[1]
        _check_shape(frame, label, info, False, file_width)
        return frame, info
    _check_shape(frame, label, info, all_missing)
    if columns is not None and all(name in frame.columns for name in columns):
        wanted = {str(name) for name in columns}
        return frame[[name for name in frame.columns if str(name) in wanted]], info
    return frame, info


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


_ARROW_IPC = b"ARROW1"
_FEATHER_V1 = b"FEA1"


def detect_format(raw: bytes, name: str | None, label: str) -> tuple[str, list[str]]:
    """``parquet``, ``excel``, ``text`` or a statistical format (``spss``...) of a file that starts with ``raw``, and
    a note when the content says otherwise than the extension; the formats never read (gzip, old ``.xls``, Arrow
    IPC ...) are refused with a message."""
    suffix = Path(name).suffix.lower() if name else ""
    statistical = _detect_statistical(raw, suffix, label)
    if statistical is not None:
        return statistical
    if raw.startswith(_OLE2):
        raise DataReadError(
            f"{label} is an old Excel .xls workbook or a password-protected workbook, which cannot be read; "
            "save it as .xlsx without a password, or as CSV."
        )
    if raw.startswith(_GZIP):
        raise DataReadError(f"{label} is gzip-compressed; decompress it first (gunzip) and read the table inside.")
    if raw.startswith((_ARROW_IPC, _FEATHER_V1)):
        raise DataReadError(
            f"{label} is an Arrow IPC (Feather) file, which is not read; save the table as Parquet "
            "(pyarrow.feather.read_table(path) then pyarrow.parquet.write_table) or as CSV."
        )
    if raw.startswith(b"PAR1"):
        kind = "parquet"
    elif raw.startswith(_ZIP):
        kind = "excel"
    elif suffix == ".xls":
        raise DataReadError(f"{name}: the old Excel .xls format is not supported; save it as .xlsx or CSV.")
    elif suffix in _EXCEL_EXTENSIONS:
        raise DataReadError(f"{label} is not an Excel workbook (it is not a ZIP archive){_looks_like(raw)}.")
    elif suffix in _PARQUET_EXTENSIONS:
        raise DataReadError(f"{label} is not a Parquet file (it does not start with PAR1){_looks_like(raw)}.")
    else:
        return "text", []
    expected = (
        "excel"
        if suffix in _EXCEL_EXTENSIONS or suffix == ".xls"
        else "parquet"
        if suffix in _PARQUET_EXTENSIONS
        else None
    )
    if expected == kind or not suffix:
        return kind, []
    what = "an Excel workbook" if kind == "excel" else "a Parquet file"
    return kind, [f"{label} is {what} despite its extension '{suffix}'; it was read as {what}."]


def _check_shape(
    frame: pd.DataFrame, label: str, info: TableInfo, all_missing: bool | None = None, width: int | None = None
) -> None:
    """The reader's checks of a table's shape; ``width``: the file's columns when only some were read."""
    others = ""
    if len(info.sheets) > 1:
        others = f" The workbook's other sheets: {format_values([s for s in info.sheets if s != info.sheet], 8)}."
    if (frame.shape[1] if width is None else width) == 0:
        what = "is empty" if info.format == "excel" else "has no columns"
        raise DataReadError(f"{label} {what}.{others}")
    if (frame.shape[1] if width is None else width) == 1:
        hint = ""
        if info.delimiter is not None:
            shown = "tab" if info.delimiter == "\t" else repr(info.delimiter)
            hint = f" (the delimiter found was {shown}; use , ; tab or | between columns)"
        raise DataReadError(
            f"{label} has a single column '{frame.columns[0]}'; a table needs at least two{hint}.{others}"
        )
    if frame.shape[0] == 0:
        header = "a header" if info.format in ("csv", "excel") else "columns"
        raise DataReadError(f"{label} has {header} but no data rows.{others}")
    if frame.isna().all().all() if all_missing is None else all_missing:
        raise DataReadError(f"{label}: every value is missing.{others}")
    unnamed = [c for c in frame.columns if not c or str(c).startswith("Unnamed:")]
    if unnamed and len(unnamed) == frame.shape[1] and width is None:
        raise DataReadError(f"{label} has no header row with column names.{others}")
