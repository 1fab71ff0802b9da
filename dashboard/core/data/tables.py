"""Reading tables from CSV, Excel and Parquet, with clear errors for files that are not tables.

Rules (applied the same way by the CLI, the Python API and the dashboard):

* **Format** from the content when it has a signature (``PAR1`` is Parquet, a ZIP archive holding a workbook is
  Excel), else from the file name's extension (``.csv``, ``.tsv``, ``.txt``, ``.xlsx``, ``.xlsm``, ``.parquet``,
  ``.pq``); anything else is delimited text. A ``.csv`` that is really a workbook is read as one (with a note in
  :class:`TableInfo`); a ``.xlsx`` or ``.parquet`` whose content is not one is refused with a message saying what
  it looks like. Old ``.xls`` (and password-protected) workbooks, gzip files and other ZIP archives are refused.
* **Encoding** of delimited text: a UTF-16 or UTF-32 byte-order mark, else UTF-8 (a byte-order mark is dropped),
  else the most probable encoding found by ``charset-normalizer`` on the first 1 MB, reported in
  :class:`TableInfo`. A NUL byte anywhere in the file (or a NUL character in UTF-16/32 text), or control
  characters in more than 1% of the first 64 KB, mean binary content: the file is refused.
* **Delimiter**: the one of ``, ; \\t |`` that splits the first lines into the same, largest number of fields.
  The header gives the number of columns: a row with more fields is an error naming the line (never a silent
  shift into an index), a row with fewer fields has missing values at its end.
* **Column names** are stripped of surrounding spaces; a name that is empty becomes ``Unnamed: i`` (``i`` the
  0-based position) and a name used twice gets a suffix (``a``, ``a.1``); both are reported in
  :attr:`TableInfo.notes`.
* **Values** of delimited text are read as text. Empty cells and the usual markers (``NA``, ``N/A``, ``NaN``,
  ``null``, ``None``... the pandas default list) are missing values. A column becomes numeric only when every
  non-missing value is a decimal number (``[+-]digits[.digits][e[+-]digits]``), no value has a leading zero
  (``"02134"`` stays text, so ZIP codes and ids keep their form), **and the conversion keeps every value**:

  - integers become ``int64`` when all of them fit in 64 bits (and, for a column with missing values, which
    is stored as float64, when none has more than 15 digits); otherwise the column stays text, so that
    ``123456789012345678901234567890`` and its neighbours stay distinct and exact;
  - other numbers become float64 when every value is finite and is given back unchanged by the float (its
    shortest representation is the same decimal number); a column holding ``inf``, ``1e999`` (overflow),
    ``1e-400`` (underflow) or more digits than a float keeps (``0.1234567890123456789``) stays text, so that
    distinct texts never merge into one number. Texts such as ``inf`` or ``Infinity`` are not numbers here;
  - a float column whose values are all whole and in the 64-bit range, with no missing value, is ``int64``.

  Each column kept as text for one of these reasons is named in :attr:`TableInfo.notes`.
* **Excel**: the first sheet unless ``sheet`` names or numbers another; :attr:`TableInfo.sheets` lists them all
  and, when there are several and none was chosen, a note says which was read. Cells keep their types (a text
  cell ``02134`` stays text; text cells that look like numbers are converted as above), error cells
  (``#DIV/0!``...) and the missing-value markers are missing values, empty rows are skipped. A workbook whose
  formulas have no saved result (written by a program that does not calculate, e.g. openpyxl, which a
  spreadsheet program would recalculate on opening) is refused with a message naming the columns, instead of
  being read as missing values or placeholder zeros.
* **Parquet**: read as typed. Nested columns (list, struct, map) and duplicate column names are refused with a
  message naming them.
* Input files are only ever opened for reading.

Reading limits (:class:`ReadLimits`) are checked **before or while** parsing, never after a full parse: the
number of columns from the CSV header, the Parquet metadata or the worksheet rows; the number of rows and cells
while the rows are read (CSV: at most ``max_rows + 1`` rows are parsed; Excel: rows are streamed and counted);
the declared uncompressed sizes of a workbook's ZIP entries and of a Parquet file's row groups before anything
is decompressed; the reading time between chunks (see :class:`ReadLimits`). Going over one raises
:class:`~dashboard.core.errors.ReadLimitError`, whose message names the limit, the value found and, when the
caller says which setting controls it, that setting. An Excel sheet holding more rows (1,048,576) or columns
(16,384) than Excel allows is refused in any case: it is damaged or built to exhaust memory.

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
import math
import operator
import os
import re
import struct
import time
import warnings
import zipfile
import zlib
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from difflib import get_close_matches
from functools import partial
from itertools import takewhile, zip_longest
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import pandas as pd

from dashboard.core.errors import DataReadError, ParameterError, ReadLimitError, format_values

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_DECOMPRESSED_BYTES",
    "DEFAULT_READ_LIMITS",
    "EXCEL_MAX_COLUMNS",
    "EXCEL_MAX_ROWS",
    "FORMULA_PREFIXES",
    "ReadLimits",
    "TableInfo",
    "csv_text",
    "escape_formulas",
    "infer_numeric_columns",
    "read_table",
    "read_table_with_info",
    "sniff_delimited",
    "write_table",
]

DEFAULT_MAX_BYTES = 100 * 1024 * 1024
#: Decompression-bomb protection of every read: a workbook whose ZIP entries (or a Parquet file whose row groups)
#: expand to more than 1 GiB is refused before anything is decompressed. Legitimate workbooks expand 5 to 20
#: times; at 1 GiB of XML openpyxl would parse for many minutes.
DEFAULT_MAX_DECOMPRESSED_BYTES = 1 << 30
#: The largest sheet Excel itself can hold (rows including the header, and columns, XFD).
EXCEL_MAX_ROWS = 1_048_576
EXCEL_MAX_COLUMNS = 16_384

_DELIMITERS = (",", ";", "\t", "|")
_TEXT_EXTENSIONS = {".csv", ".tsv", ".txt", ".dat", ".tab"}
_EXCEL_EXTENSIONS = {".xlsx", ".xlsm"}
_PARQUET_EXTENSIONS = {".parquet", ".pq"}
_SNIFF_BYTES = 1 << 20
#: Cells parsed or converted between two checks of the time limit (well under a second of work). A chunk of CSV
#: holds at least ``_CHUNK_MIN_ROWS`` rows: per-column costs would dominate thinner chunks of a wide table.
_CHUNK_CELLS = 1_000_000
_CHUNK_MIN_ROWS = 200
#: Worksheet rows streamed between two checks of the time limit.
_EXCEL_ROWS_PER_CHECK = 2_000

#: The pandas default missing-value markers (``pandas.read_csv``'s ``na_values``), applied to Excel text cells too.
_NA_MARKERS = frozenset(
    {
        "", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND", "1.#QNAN", "<NA>", "N/A",
        "NA", "NULL", "NaN", "None", "n/a", "nan", "null",
    }
)  # fmt: skip
#: What openpyxl returns for a cell holding a formula error.
_EXCEL_ERRORS = frozenset({"#NULL!", "#DIV/0!", "#VALUE!", "#REF!", "#NAME?", "#NUM!", "#N/A", "#GETTING_DATA"})

_LIMIT_UNITS = {
    "max_rows": "rows",
    "max_columns": "columns",
    "max_cells": "cells",
    "max_decompressed_bytes": "bytes",
    "max_seconds": "seconds",
}


@dataclass(frozen=True)
class ReadLimits:
    """Bounds on what reading one table may cost, checked before or while parsing (never after a full parse).

    Attributes
    ----------
    max_rows
        Data rows (the header excluded). CSV: at most ``max_rows + 1`` rows are parsed; Excel: rows are counted
        as they are streamed; Parquet: the row count of the file's metadata.
    max_columns
        Columns. CSV: the fields of the header, before the data is parsed; Excel: the widest row so far;
        Parquet: the schema.
    max_cells
        Rows times columns. CSV and Excel: checked as rows are read; Parquet: from the metadata. For Excel, the
        number of cells holding a value is also counted from the sheet's XML before parsing.
    max_decompressed_bytes
        The uncompressed size of a workbook's ZIP entries (from the ZIP directory) or of a Parquet file's row
        groups (from its metadata), before anything is decompressed. 1 GiB unless set otherwise (``None``: no
        limit): this is the protection against decompression bombs. Python's ``zipfile`` never produces more than
        an entry's declared size, so an entry cannot lie its way past the check.
    max_seconds
        Reading time, from the start of :func:`read_table` to the end of the numeric conversion. It is checked
        between steps: after decoding, between chunks of about 1,000,000 CSV cells (at least 200 rows), every
        2,000 worksheet rows, every megabyte of a sheet's XML scanned, between Parquet row groups, between batches
        of about 1,000,000 cells converted to numbers. One step is not interrupted (a single Parquet row group,
        openpyxl opening a workbook and its shared strings), so reading may overrun the limit by about one step;
        the other limits bound the size of a step.
    setting_names
        Limit name -> the name of the setting that controls it (e.g. ``{"max_cells": "PRIVDASH_MAX_CELLS"}``),
        cited in the error message so that the reader knows what to raise.

    ``None`` means no limit. The defaults (:data:`DEFAULT_READ_LIMITS`, used by the command line and the Python
    API) bound only the decompressed size: a user reading their own file on their own machine decides how long
    to wait. A server sets all of them (from its settings) so that one upload cannot take a worker.
    """

    max_rows: int | None = None
    max_columns: int | None = None
    max_cells: int | None = None
    max_decompressed_bytes: int | None = DEFAULT_MAX_DECOMPRESSED_BYTES
    max_seconds: float | None = None
    setting_names: Mapping[str, str] = field(default_factory=dict, hash=False)

    def __post_init__(self) -> None:
        for name in ("max_rows", "max_columns", "max_cells", "max_decompressed_bytes"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                raise ParameterError(f"ReadLimits.{name} must be a whole number of at least 1 or None, got {value!r}.")
        seconds = self.max_seconds
        if seconds is not None and (
            isinstance(seconds, bool) or not isinstance(seconds, int | float) or not seconds > 0 or seconds == math.inf
        ):
            raise ParameterError(
                f"ReadLimits.max_seconds must be a positive number of seconds or None, got {seconds!r}."
            )
        unknown = sorted(set(self.setting_names) - set(_LIMIT_UNITS))
        if unknown:
            raise ParameterError(
                f"ReadLimits.setting_names has unknown limits {format_values(unknown)}; "
                f"the limits are {', '.join(_LIMIT_UNITS)}."
            )
        object.__setattr__(self, "setting_names", dict(self.setting_names))

    def check(self, limit: str, found: float, label: str) -> None:
        """Raise :class:`ReadLimitError` when ``found`` (a known total) is over ``limit``."""
        maximum = getattr(self, limit)
        if maximum is not None and found > maximum:
            raise self.exceeded(limit, label, found)

    def exceeded(self, limit: str, label: str, found: float | None, *, more: bool = False) -> ReadLimitError:
        """The error for ``limit`` passed by ``label``: ``found`` is the total, or with ``more`` a lower bound."""
        maximum = getattr(self, limit)
        setting = self.setting_names.get(limit)
        cited = f" ({setting})" if setting else ""
        if limit == "max_seconds":
            message = (
                f"Reading {label} took more than {maximum:g} seconds, the limit{cited}; "
                "it was stopped. Use a smaller file or the command line."
            )
        elif limit == "max_decompressed_bytes":
            message = (
                f"{label} expands to {_megabytes(found or 0)} when decompressed, over the limit of "
                f"{_megabytes(maximum)}{cited}; it was not decompressed."
            )
        else:
            unit = _LIMIT_UNITS[limit]
            amount = f"more than {maximum:,}" if more or found is None else f"{found:,.0f}"
            message = f"{label} has {amount} {unit}, over the limit of {maximum:,} {unit}{cited}."
        return ReadLimitError(message, limit=limit, found=found, maximum=maximum, setting=setting)


#: Limits of the command line and the Python API: only decompression-bomb protection (see :class:`ReadLimits`).
DEFAULT_READ_LIMITS = ReadLimits()


def _megabytes(n_bytes: float) -> str:
    if n_bytes < 1e6:
        return f"{n_bytes:,.0f} bytes"
    return f"{n_bytes / 1e6:,.1f} MB" if n_bytes < 1e9 else f"{n_bytes / 1e9:,.2f} GB"


class _Deadline:
    """The end of the time allowed by ``limits.max_seconds`` (no end without it)."""

    def __init__(self, limits: ReadLimits, label: str) -> None:
        self.limits = limits
        self.label = label
        self.end = None if limits.max_seconds is None else time.monotonic() + limits.max_seconds

    def check(self) -> None:
        if self.end is not None and time.monotonic() > self.end:
            raise self.limits.exceeded("max_seconds", self.label, None)


@dataclass(frozen=True)
class TableInfo:
    """How a table was read.

    Attributes
    ----------
    format
        ``csv``, ``excel`` or ``parquet``.
    encoding, delimiter
        Of delimited text (None otherwise).
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
    sheet
        Excel only: the sheet to read, by name or 0-based position (default: the first).
    limits
        Bounds on rows, columns, cells, decompressed size and time (default :data:`DEFAULT_READ_LIMITS`).

    Raises
    ------
    DataReadError
        With a specific message: empty file, binary content, unknown encoding, size over the limit,
        a single column, no data rows, every value missing, unreadable Excel or Parquet, an unknown sheet,
        formulas without saved values, nested or duplicate Parquet columns, inconsistent rows.
    ReadLimitError
        When a limit of ``limits`` is passed (a :class:`DataReadError` too).
    """
    return read_table_with_info(source, filename=filename, max_bytes=max_bytes, sheet=sheet, limits=limits)[0]


def read_table_with_info(
    source: str | os.PathLike[str] | bytes | BinaryIO,
    *,
    filename: str | None = None,
    max_bytes: int | None = None,
    sheet: str | int | None = None,
    limits: ReadLimits | None = None,
) -> tuple[pd.DataFrame, TableInfo]:
    """Like :func:`read_table`, also returning how the file was read."""
    limits = DEFAULT_READ_LIMITS if limits is None else limits
    raw, name = _load_bytes(source, filename, max_bytes)
    label = name or "the file"
    deadline = _Deadline(limits, label)
    if not raw.strip():
        raise DataReadError(f"{label} is empty.")
    kind, notes = _detect_format(raw, name, label)
    if sheet is not None and kind != "excel":
        raise DataReadError(f"{label} is not an Excel workbook, so it has no sheet to choose ('{sheet}' was asked).")
    info: TableInfo
    all_missing = None
    if kind == "parquet":
        frame = _read_parquet(raw, label, limits, deadline)
        info = TableInfo("parquet", None, None, len(raw), notes=tuple(notes))
    elif kind == "excel":
        sheet_read = _read_excel(raw, label, sheet, limits, deadline)
        frame = sheet_read.frame
        notes += sheet_read.notes
        info = TableInfo("excel", None, None, len(raw), sheet_read.name, sheet_read.sheets, tuple(notes))
        label = f"{label} (sheet '{sheet_read.name}')" if len(sheet_read.sheets) > 1 else label
    else:
        text, encoding = _decode(raw, label)
        deadline.check()
        delimiter = _detect_delimiter(text)
        frame, text_notes, all_missing = _read_text(text, delimiter, label, limits, deadline)
        info = TableInfo("csv", encoding, delimiter, len(raw), notes=tuple(notes + text_notes))
    _check_shape(frame, label, info, all_missing)
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


def _reason(exc: BaseException) -> str:
    """The first line of an exception's message, shortened: libraries may put a whole schema in it."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return (text[:200] + "...") if len(text) > 200 else text.rstrip(".")


# ---------------------------------------------------------------------------------------------------------- format

_OLE2 = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
_ZIP = (b"PK\x03\x04", b"PK\x05\x06")
_GZIP = b"\x1f\x8b"


def _detect_format(raw: bytes, name: str | None, label: str) -> tuple[str, list[str]]:
    """``parquet``, ``excel`` or ``text``, and a note when the content says otherwise than the extension."""
    suffix = Path(name).suffix.lower() if name else ""
    if raw.startswith(_OLE2):
        raise DataReadError(
            f"{label} is an old Excel .xls workbook or a password-protected workbook, which cannot be read; "
            "save it as .xlsx without a password, or as CSV."
        )
    if raw.startswith(_GZIP):
        raise DataReadError(f"{label} is gzip-compressed; decompress it first (gunzip) and read the table inside.")
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


def _looks_like(raw: bytes) -> str:
    """A hint on what a file that is not what its extension says holds."""
    head = raw[:4096]
    if b"\x00" in head:
        return ""
    try:
        head.decode("utf-8")
    except UnicodeDecodeError:
        return ""
    return "; its content is plain text: if it is a CSV table, give it the .csv extension"


_CONTROL = re.compile(r"[\x01-\x08\x0e-\x1f\x7f]")
_BOMS = (
    (b"\xff\xfe\x00\x00", "utf-32"),
    (b"\x00\x00\xfe\xff", "utf-32"),
    (b"\xff\xfe", "utf-16"),
    (b"\xfe\xff", "utf-16"),
)


def _decode(raw: bytes, label: str) -> tuple[str, str]:
    text: str | None = None
    encoding = ""
    for bom, codec in _BOMS:
        if raw.startswith(bom):
            try:
                text, encoding = raw.decode(codec), codec
            except UnicodeDecodeError as exc:
                raise DataReadError(
                    f"{label} starts with a {codec.upper()} byte-order mark but is not valid {codec.upper()} text."
                ) from exc
            if "\x00" in text:
                raise DataReadError(f"{label} looks binary, not a text table (it contains NUL characters).")
            break
    if text is None:
        # A NUL anywhere means binary, as in the first megabyte: checked on the whole content (a C-speed scan).
        position = raw.find(b"\x00")
        if position >= 0:
            hint = ""
            if position < 2 or raw[:200].count(b"\x00") * 3 > min(len(raw), 200):
                hint = "; if it is UTF-16 text, save it as UTF-8 or with a byte-order mark"
            raise DataReadError(
                f"{label} looks binary, not a text table (it contains NUL bytes, the first at byte {position:,}{hint})."
            )
        text, encoding = _decode_8bit(raw, label)
    if not text.strip():
        raise DataReadError(f"{label} is empty.")
    sample = text[:65536]
    controls = len(_CONTROL.findall(sample))
    if controls > 10 and controls * 100 > len(sample):
        raise DataReadError(f"{label} looks binary, not a text table (it is full of control characters).")
    return text, encoding


def _decode_8bit(raw: bytes, label: str) -> tuple[str, str]:
    try:
        return raw.decode("utf-8-sig"), "utf-8"
    except UnicodeDecodeError:
        pass
    from charset_normalizer import from_bytes

    best = from_bytes(raw[:_SNIFF_BYTES]).best()
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


# -------------------------------------------------------------------------------------------------- delimited text


def _read_text(
    text: str, delimiter: str, label: str, limits: ReadLimits, deadline: _Deadline
) -> tuple[pd.DataFrame, list[str], bool]:
    """Parse delimited text: the header first (its fields fix the columns), then at most the rows the limits allow,
    in chunks with a time check between them. Returns the frame, notes, and whether every value is missing."""
    options: dict[str, Any] = {
        "sep": delimiter,
        "header": None,
        "index_col": False,  # never take a first column as the index when rows are wider than the header
        "skipinitialspace": True,
        "engine": "c",
    }
    if limits.max_columns is not None:
        # The header's fields counted by the csv module (C speed, no frame built) before pandas parses anything.
        limits.check("max_columns", _header_width(text, delimiter), label)
    try:
        head = pd.read_csv(io.StringIO(text), nrows=1, dtype=object, keep_default_na=False, **options)
    except pd.errors.EmptyDataError as exc:
        raise DataReadError(f"{label} has no columns.") from exc
    except (pd.errors.ParserError, ValueError) as exc:
        raise DataReadError(_parser_message(exc, label, delimiter)) from exc
    n_columns = head.shape[1]
    if not len(head) or not n_columns:
        raise DataReadError(f"{label} has no columns.")
    limits.check("max_columns", n_columns, label)
    # Parse the header row too (it is dropped below) so that pandas and this function agree on where it is.
    caps = []
    if limits.max_rows is not None:
        caps.append(limits.max_rows + 1)
    if limits.max_cells is not None:
        caps.append(limits.max_cells // n_columns + 1)
    nrows = min(caps) + 1 if caps else None
    chunks = []
    try:
        # Parsed as Python strings (one 2-D block; fast to slice and convert whatever the width); the text columns
        # become pandas' string dtype when the frame is built, once.
        with pd.read_csv(
            io.StringIO(text),
            names=range(n_columns),
            dtype=object,
            keep_default_na=True,
            nrows=nrows,
            chunksize=max(_CHUNK_MIN_ROWS, _CHUNK_CELLS // n_columns),
            **options,
        ) as reader:
            for chunk in reader:
                chunks.append(chunk.to_numpy(dtype=object))
                deadline.check()
    except pd.errors.ParserError as exc:
        raise DataReadError(_parser_message(exc, label, delimiter)) from exc
    values = (np.concatenate(chunks) if len(chunks) > 1 else chunks[0])[1:]
    rows = len(values)
    if limits.max_rows is not None and rows > limits.max_rows:
        raise limits.exceeded("max_rows", label, None, more=True)
    if limits.max_cells is not None and rows * n_columns > limits.max_cells:
        raise limits.exceeded("max_cells", label, None, more=True)
    names, notes = _column_names(head.iloc[0].tolist(), label)
    converted, numeric_notes = _numeric_conversions(
        lambda chosen: values[:, chosen], list(range(n_columns)), rows, names, deadline
    )
    data = pd.DataFrame(
        {i: converted[i] if i in converted else values[:, i] for i in range(n_columns)}, index=pd.RangeIndex(rows)
    )
    data.columns = pd.Index(names)
    return data, notes + numeric_notes, bool(pd.isna(values).all())


def _header_width(text: str, delimiter: str) -> int:
    """Fields of the first record that is not blank (0 when the csv module cannot tell; pandas decides then)."""
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, skipinitialspace=True)
    try:
        for record in reader:
            if len(record) > 1 or (record and record[0].strip()):
                return len(record)
    except csv.Error:  # a field over the csv module's size limit, or a stray line break in a field
        return 0
    return 0


_EXPECTED_FIELDS = re.compile(r"Expected (\d+) fields in line (\d+), saw (\d+)")
_OPEN_QUOTE = re.compile(r"EOF inside string starting at row (\d+)")


def _parser_message(exc: Exception, label: str, delimiter: str) -> str:
    text = str(exc)
    shown = "tab" if delimiter == "\t" else repr(delimiter)
    wider = _EXPECTED_FIELDS.search(text)
    if wider:
        expected, line, saw = (int(g) for g in wider.groups())
        return (
            f"{label} is not a consistent table: line {line:,} has {saw} fields but the header has {expected} "
            f"(delimiter {shown}). Quote values that contain the delimiter, or remove the extra fields."
        )
    quote = _OPEN_QUOTE.search(text)
    if quote:
        return (
            f'{label} has a quote (") that is never closed, opened in row {int(quote.group(1)) + 1:,}; '
            "the rest of the file would be one value. Close or remove the quote."
        )
    return f"{label} is not a consistent delimited table: {_reason(exc)}."


def _column_names(header: Sequence[object], label: str) -> tuple[list[str], list[str]]:
    """Names from a header row: stripped, empty ones ``Unnamed: i``, repeated ones suffixed; notes on both."""
    names = ["" if _is_missing(value) else str(value).strip() for value in header]
    unnamed = [i for i, name in enumerate(names) if not name]
    names = [name or f"Unnamed: {i}" for i, name in enumerate(names)]
    notes = []
    if unnamed and len(unnamed) < len(names):
        positions = format_values([i + 1 for i in unnamed])
        notes.append(
            f"{label}: the header has no name for column {positions} (counting from 1); "
            f"named {format_values([names[i] for i in unnamed])}."
        )
    counts = Counter(names)
    repeated = [name for name, count in counts.items() if count > 1]
    if repeated:
        taken = set(names)
        seen: Counter[str] = Counter()
        renamed = []
        for i, name in enumerate(names):
            if counts[name] < 2:
                continue
            seen[name] += 1
            if seen[name] == 1:
                continue
            suffix = seen[name] - 1
            while f"{name}.{suffix}" in taken:
                suffix += 1
            names[i] = f"{name}.{suffix}"
            taken.add(names[i])
            renamed.append(names[i])
        notes.append(
            f"{label}: the header repeats the column name {format_values(repeated)}; "
            f"the repeats were renamed {format_values(renamed)}."
        )
    return names, notes


def _is_missing(value: object) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


# ------------------------------------------------------------------------------------------------ numeric columns

_NUMBER_TEXT = r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
_INTEGER_TEXT = r"[+-]?[0-9]+"
_LEADING_ZERO = r"[+-]?0\d"
_INFINITY_TEXT = r"[+-]?(?:inf|infinity)"
_ZERO_TEXT = r"[+-]?0*\.?0*(?:[eE][+-]?\d+)?"
_DECIMAL_PARTS = r"^([+-]?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?$"
_SMALLEST_NORMAL = 2.2250738585072014e-308
_INT64_DIGITS = "9223372036854775807"


def infer_numeric_columns(frame: pd.DataFrame) -> pd.DataFrame:
    """Convert the text columns whose every non-missing value is a decimal number, without a leading zero, that the
    conversion keeps exactly (see the module docstring); other columns are unchanged."""
    return _infer_numeric(frame, None)[0]


def _infer_numeric(frame: pd.DataFrame, deadline: _Deadline | None) -> tuple[pd.DataFrame, list[str]]:
    """:func:`infer_numeric_columns`, and notes naming the columns kept as text to keep their values.

    The columns are converted in batches of about ``_CHUNK_CELLS`` cells, all columns of a batch at once (a wide
    table costs one pass, not one per column), with a time check between batches.
    """
    dtypes = frame.dtypes.tolist()
    positions = [
        i
        for i, dtype in enumerate(dtypes)
        if pd.api.types.is_object_dtype(dtype) or pd.api.types.is_string_dtype(dtype)
    ]
    n_rows = len(frame)
    if not positions or not n_rows:
        return frame, []
    converted, notes = _numeric_conversions(
        lambda chosen: frame.iloc[:, chosen].to_numpy(dtype=object), positions, n_rows, list(frame.columns), deadline
    )
    if not converted:
        return frame, notes
    # One frame of the new columns and one of the others, then the original order: a wide table is rebuilt in one
    # step instead of one column assignment at a time.
    others = [i for i in range(frame.shape[1]) if i not in converted]
    new = pd.DataFrame({i: converted[i] for i in sorted(converted)}, index=frame.index)
    rest = frame.iloc[:, others].set_axis(others, axis=1)
    out = pd.concat([rest, new], axis=1) if others else new
    out = out[list(range(frame.shape[1]))]
    out.columns = frame.columns
    return out, notes


def _numeric_conversions(
    block: Callable[[list[int]], np.ndarray],
    positions: list[int],
    n_rows: int,
    names: Sequence[object],
    deadline: _Deadline | None,
) -> tuple[dict[int, np.ndarray], list[str]]:
    """The converted columns (position -> values) among ``positions``, read through ``block(positions)`` (rows x
    columns of objects) in batches of about ``_CHUNK_CELLS`` cells, and the notes on the columns kept as text."""
    converted: dict[int, np.ndarray] = {}
    kept: dict[str, list[tuple[str, str]]] = {"overflow": [], "inexact": [], "integers": [], "integers_missing": []}
    if not n_rows:
        return converted, []
    batch = max(1, _CHUNK_CELLS // n_rows)
    for start in range(0, len(positions), batch):
        chosen = positions[start : start + batch]
        _convert_block(block(chosen), chosen, names, converted, kept)
        if deadline is not None:
            deadline.check()
    return converted, _numeric_notes(kept)


def _convert_block(
    block: np.ndarray,
    positions: list[int],
    names: Sequence[object],
    converted: dict[int, np.ndarray],
    kept: dict[str, list[tuple[str, str]]],
) -> None:
    """Decide and convert every column of ``block`` (rows x columns of objects) at once, on its non-missing cells."""
    n_rows, width = block.shape
    rows, cols = np.nonzero(~pd.isna(block))  # row-major: each column's first cell comes first
    if not len(rows):
        return
    present = np.bincount(cols, minlength=width)
    # A column whose first value is neither a number nor an infinity word is text: one test per column.
    seen, first = np.unique(cols, return_index=True)
    firsts = pd.Series(block[rows[first], cols[first]], dtype=object).astype(str).str.strip()
    candidate = np.zeros(width, dtype=bool)
    candidate[seen[firsts.str.fullmatch(f"{_NUMBER_TEXT}|{_INFINITY_TEXT}", case=False).to_numpy(dtype=bool)]] = True
    cells = candidate[cols]
    if not cells.any():
        return
    rows, cols = rows[cells], cols[cells]
    text = pd.Series(block[rows, cols], dtype=object).astype(str).str.strip()

    def any_in_column(mask: np.ndarray) -> np.ndarray:
        return np.bincount(cols[mask], minlength=width) > 0

    # Cheap elimination next (pandas' C parser), then the exact rule on the columns left.
    parsable = pd.to_numeric(text, errors="coerce").notna().to_numpy()
    candidate &= ~any_in_column(~parsable)
    cells = candidate[cols]
    if not cells.any():
        return
    sub = text[cells].reset_index(drop=True)
    sub_rows, sub_cols = rows[cells], cols[cells]
    number = sub.str.fullmatch(_NUMBER_TEXT).to_numpy(dtype=bool)
    leading_zero = sub.str.match(_LEADING_ZERO).to_numpy(dtype=bool)

    def any_sub(mask: np.ndarray) -> np.ndarray:
        return np.bincount(sub_cols[mask], minlength=width) > 0

    # Columns of numbers with infinity words (inf, Infinity...): text, as the words are not numbers here; say so.
    words = sub.str.fullmatch(_INFINITY_TEXT, case=False).to_numpy(dtype=bool)
    for position in np.flatnonzero(candidate & any_sub(number) & any_sub(words) & ~any_sub(~number & ~words)):
        kept["overflow"].append((str(names[positions[position]]), _example(sub, sub_cols, int(position), words)))
    candidate &= ~any_sub(~number) & ~any_sub(leading_zero)
    if not candidate.any():
        return
    complete = present == n_rows
    integer = sub.str.fullmatch(_INTEGER_TEXT).to_numpy(dtype=bool)
    all_integer = candidate & ~any_sub(~integer)
    digits = sub.str.lstrip("+-").str.len().to_numpy()
    # An integer fits int64 with at most 18 digits; with 19, compare the digits as text (same length).
    magnitude = sub.str.lstrip("+-")
    negative = sub.str.startswith("-").to_numpy(dtype=bool)
    nineteen = digits == 19
    over = np.zeros(len(sub), dtype=bool)
    if nineteen.any():
        tail = magnitude[nineteen]
        limit = np.where(negative[nineteen], "9223372036854775808", _INT64_DIGITS)
        over[nineteen] = (tail.to_numpy(dtype=object) > limit).astype(bool)
    over |= digits > 19
    as_int64 = all_integer & complete & ~any_sub(over)
    # With missing values an integer column is stored as float64, exact up to 15 digits.
    as_float_integers = all_integer & ~complete & ~any_sub(digits > 15)
    for position in np.flatnonzero(all_integer & ~as_int64 & ~as_float_integers):
        reason = "integers" if complete[position] else "integers_missing"
        kept[reason].append((str(names[positions[position]]), _example(sub, sub_cols, int(position), digits)))
    if as_int64.any():
        chosen = as_int64[sub_cols]
        values = np.zeros((n_rows, width), dtype=np.int64)
        values[sub_rows[chosen], sub_cols[chosen]] = sub[chosen].to_numpy(dtype=object).astype(np.int64)
        for position in np.flatnonzero(as_int64):
            converted[positions[position]] = values[:, position].copy()
    floating = candidate & ~all_integer | as_float_integers
    if not floating.any():
        return
    chosen = floating[sub_cols]
    texts = sub[chosen].reset_index(drop=True)
    f_rows, f_cols = sub_rows[chosen], sub_cols[chosen]
    numbers = texts.to_numpy(dtype=object).astype(np.float64)  # Python's float(): correctly rounded
    infinite = ~np.isfinite(numbers)
    overflow = np.bincount(f_cols[infinite], minlength=width) > 0
    inexact_cells = _inexact(texts, numbers)
    inexact = np.bincount(f_cols[inexact_cells], minlength=width) > 0
    for position in np.flatnonzero(floating & overflow):
        kept["overflow"].append((str(names[positions[position]]), _example(texts, f_cols, int(position), infinite)))
    for position in np.flatnonzero(floating & ~overflow & inexact):
        kept["inexact"].append((str(names[positions[position]]), _example(texts, f_cols, int(position), inexact_cells)))
    good = floating & ~overflow & ~inexact
    if not good.any():
        return
    values_f = np.full((n_rows, width), np.nan)
    keep = good[f_cols]
    values_f[f_rows[keep], f_cols[keep]] = numbers[keep]
    whole = np.isfinite(values_f) & (np.mod(values_f, 1) == 0) & (np.abs(values_f) < 2.0**63)
    for position in np.flatnonzero(good):
        column = values_f[:, position]
        if complete[position] and whole[:, position].all():
            converted[positions[position]] = column.astype(np.int64)
        else:
            converted[positions[position]] = column.copy()


def _inexact(texts: pd.Series, numbers: np.ndarray) -> np.ndarray:
    """Cells whose float is not the number the text writes (precision lost, underflow to 0 or a subnormal).

    A decimal with at most 15 significant digits in the normal float range always comes back from the float
    (DBL_DIG = 15), so only longer texts, zeros and subnormals are compared, as canonical decimals, with the
    float's shortest representation.
    """
    magnitude = np.abs(numbers)
    suspect = (texts.str.len().to_numpy() >= 16) | (magnitude < _SMALLEST_NORMAL)
    if not suspect.any():
        return np.zeros(len(texts), dtype=bool)
    written = _decimal_key(texts[suspect])
    given = _decimal_key(pd.Series(numbers[suspect]).astype(str))
    out = np.zeros(len(texts), dtype=bool)
    out[suspect] = written != given
    return out


def _decimal_key(texts: pd.Series) -> np.ndarray:
    """A canonical form of decimal texts (``-1.50e2`` and ``-150`` both give ``-15e1``; every zero gives ``0``)."""
    parts = texts.reset_index(drop=True).str.extract(_DECIMAL_PARTS)
    sign = parts[0].fillna("").str.replace("+", "", regex=False)
    whole, fraction = parts[1].fillna(""), parts[2].fillna("")
    exponent = pd.to_numeric(parts[3].fillna("0"), errors="coerce").fillna(0).clip(-(10**9), 10**9)
    digits = whole + fraction
    significant = digits.str.lstrip("0")
    core = significant.str.rstrip("0")
    scale = exponent.astype(np.int64) - fraction.str.len() + significant.str.len() - core.str.len()
    key = sign + core + "e" + scale.astype(str)
    return np.where(core == "", "0", key.to_numpy(dtype=object))


def _example(texts: pd.Series, cols: np.ndarray, position: int, mask: np.ndarray | None) -> str:
    """One text of column ``position`` to show in a note (one that caused the decision when ``mask`` says which)."""
    chosen = cols == position
    if mask is not None and mask.dtype == bool and (chosen & mask).any():
        chosen &= mask
    elif mask is not None and mask.dtype != bool:  # digits: show the longest
        index = np.flatnonzero(chosen)
        return str(texts.iloc[index[np.argmax(mask[index])]])
    return str(texts.iloc[int(np.flatnonzero(chosen)[0])])


def _numeric_notes(kept: dict[str, list[tuple[str, str]]]) -> list[str]:
    reasons = {
        "integers": "integers outside the 64-bit range",
        "integers_missing": "integers of more than 15 digits and missing values, which a float column would round",
        "overflow": "infinite or overflowing numbers",
        "inexact": "numbers that a 64-bit float cannot keep (too many digits, or beyond its range)",
    }
    notes = []
    for reason, columns in kept.items():
        if not columns:
            continue
        names = format_values([name for name, _ in columns])
        example = columns[0][1]
        shown = example if len(example) <= 40 else example[:37] + "..."
        many = len(columns) > 1
        notes.append(
            f"{'Columns' if many else 'Column'} {names} {'hold' if many else 'holds'} {reasons[reason]} (e.g. "
            f"'{shown}'); {'they are' if many else 'it is'} kept as text so that every value stays exact and "
            "distinct values stay distinct."
        )
    return notes


# ------------------------------------------------------------------------------------------------------------ Excel


@dataclass(frozen=True)
class _Sheet:
    frame: pd.DataFrame
    name: str
    sheets: tuple[str, ...]
    notes: list[str]


@dataclass(frozen=True)
class _SheetScan:
    """What a byte scan of a worksheet's XML finds before parsing: row elements, cells holding a value (and those of
    the first row, the header), whether any formula exists."""

    rows: int
    values: int
    header_values: int
    formulas: bool


#: What ``zipfile`` raises for damaged, encrypted or unsupported archives and entries.
_ZIP_ERRORS = (
    zipfile.BadZipFile, zlib.error, EOFError, OSError, RuntimeError, NotImplementedError, ValueError, struct.error,
)  # fmt: skip


def _read_excel(raw: bytes, label: str, sheet: str | int | None, limits: ReadLimits, deadline: _Deadline) -> _Sheet:
    try:
        archive = zipfile.ZipFile(io.BytesIO(raw))
    except _ZIP_ERRORS as exc:
        raise DataReadError(
            f"{label} could not be read as an Excel workbook: it is not a complete ZIP archive "
            f"(truncated or damaged: {_reason(exc)})."
        ) from exc
    try:
        with archive:
            entries = archive.infolist()
            names = [entry.filename for entry in entries]
            _check_workbook_entries(archive, names, label)
            limits.check("max_decompressed_bytes", sum(entry.file_size for entry in entries), label)
            # Every worksheet is scanned before openpyxl opens the workbook: opening parses a sheet that has no
            # dimension element in full (to find its size), so a sheet of millions of rows must be refused first.
            scans = {name: _scan_sheet(archive, name, deadline) for name in names if _WORKSHEET.search(name)}
            for name, scan in scans.items():
                if scan.rows > EXCEL_MAX_ROWS:
                    raise DataReadError(
                        f"{label}: its worksheet {name} holds {scan.rows:,} rows, more than an Excel sheet can "
                        f"({EXCEL_MAX_ROWS:,}); the file is damaged or was built to exhaust memory."
                    )
            return _read_workbook(raw, archive, scans, label, sheet, limits, deadline)
    except DataReadError:
        raise
    except _ZIP_ERRORS as exc:
        # A damaged entry (bad deflate data, checksum or offsets), an encrypted entry, an unknown compression method.
        raise DataReadError(f"{label} could not be read as an Excel workbook: it is damaged ({_reason(exc)}).") from exc


_WORKSHEET = re.compile(r"(?:^|/)worksheets/[^/]+\.xml$", re.IGNORECASE)


class _TimedBytes(io.BytesIO):
    """A workbook's bytes for openpyxl, checking the time limit at every read: openpyxl reads the ZIP as it parses,
    so a long parse inside openpyxl (opening a workbook, streaming rows) stops at the limit too."""

    def __init__(self, raw: bytes, deadline: _Deadline) -> None:
        super().__init__(raw)
        self._deadline = deadline

    def read(self, size: int | None = -1) -> bytes:
        self._deadline.check()
        return super().read(size)


def _check_workbook_entries(archive: zipfile.ZipFile, names: list[str], label: str) -> None:
    if "mimetype" in names and b"opendocument" in archive.read("mimetype")[:200]:
        raise DataReadError(f"{label} is an OpenDocument spreadsheet (.ods); save it as .xlsx or CSV.")
    if not any(name.lower().endswith("workbook.xml") for name in names):
        raise DataReadError(
            f"{label} is a ZIP archive, not an Excel workbook (it holds {format_values(names, 3)}); "
            "extract the table it holds and read that."
        )


def _read_workbook(
    raw: bytes,
    archive: zipfile.ZipFile,
    scans: Mapping[str, _SheetScan],
    label: str,
    sheet: str | int | None,
    limits: ReadLimits,
    deadline: _Deadline,
) -> _Sheet:
    from openpyxl import load_workbook

    with warnings.catch_warnings():
        # openpyxl warns about styles, extensions and data validation it drops: irrelevant to the values.
        warnings.simplefilter("ignore")
        try:
            book = load_workbook(_TimedBytes(raw, deadline), read_only=True, data_only=True)
        except DataReadError:
            raise
        except Exception as exc:  # openpyxl raises many exception types for corrupt files
            raise DataReadError(f"{label} could not be read as an Excel workbook: {_reason(exc)}.") from exc
        try:
            sheets = tuple(book.sheetnames)
            name = _choose_sheet(sheets, sheet, label)
            worksheet = book[name]
            where = f"{label} (sheet '{name}')" if len(sheets) > 1 else label
            if not hasattr(worksheet, "iter_rows"):
                raise DataReadError(f"{where} is a chart, not a table of values; choose another sheet.")
            path = str(getattr(worksheet, "_worksheet_path", "")).lstrip("/")
            scan = scans.get(path)
            if scan is not None:
                _check_scan(scan, where, limits)
            recalculate = _asks_for_recalculation(archive)
            deadline.check()
            try:
                rows = _sheet_rows(worksheet, where, limits, deadline)
            except (DataReadError, ParameterError):
                raise
            except Exception as exc:
                raise DataReadError(f"{where} could not be read: {_reason(exc)}.") from exc
        finally:
            book.close()
    notes = []
    if len(sheets) > 1 and sheet is None:
        others = format_values([other for other in sheets if other != name], 8)
        notes.append(
            f"{label} has {len(sheets)} sheets; the first, '{name}', was read. Not read: {others}. "
            "Choose a sheet to read another."
        )
    if not rows:
        frame = pd.DataFrame()
    else:
        frame, frame_notes = _sheet_frame(rows, where, deadline)
        notes += frame_notes
    if scan is not None and scan.formulas:
        _check_formulas(archive, path, where, frame, recalculate, deadline)
    return _Sheet(frame, name, sheets, notes)


def _asks_for_recalculation(archive: zipfile.ZipFile) -> bool:
    """Whether the workbook part sets ``fullCalcOnLoad`` (read from its XML: openpyxl reports True when the attribute
    is absent, as in every workbook Excel saves)."""
    names = [name for name in archive.namelist() if name.lower().endswith("workbook.xml")]
    if not names:
        return False
    part = archive.read("xl/workbook.xml" if "xl/workbook.xml" in names else names[0])
    return re.search(rb"<(?:[\w.-]+:)?calcPr\b[^>]*\bfullCalcOnLoad=[\"'](?:1|true)[\"']", part) is not None


def _choose_sheet(sheets: tuple[str, ...], sheet: str | int | None, label: str) -> str:
    listing = format_values(list(sheets), 12)
    if not sheets:
        raise DataReadError(f"{label} has no sheets.")
    if sheet is None:
        return sheets[0]
    if isinstance(sheet, bool) or not isinstance(sheet, int | str):
        raise ParameterError(f"sheet must be a sheet name or a 0-based position, got {sheet!r}.")
    if isinstance(sheet, int):
        if 0 <= sheet < len(sheets):
            return sheets[sheet]
        raise DataReadError(
            f"{label} has no sheet at position {sheet} (counting from 0); it has {len(sheets)}: {listing}."
        )
    if sheet in sheets:
        return sheet
    folded = [name for name in sheets if name.strip().casefold() == sheet.strip().casefold()]
    if len(folded) == 1:
        return folded[0]
    close = get_close_matches(sheet, list(sheets), n=1, cutoff=0.5)
    hint = f" Did you mean '{close[0]}'?" if close else ""
    raise DataReadError(f"{label} has no sheet '{sheet}'.{hint} Its sheets: {listing}.")


def _scan_sheet(archive: zipfile.ZipFile, path: str, deadline: _Deadline) -> _SheetScan:
    """Count row elements and cells holding a value, and see whether formulas exist, by a byte scan of the sheet's
    XML (bytes.count runs at memory speed), before any parsing. Elements may carry a namespace prefix (``<x:row>``).
    """
    rows = values = 0
    header_values: int | None = None
    formulas = False
    carry = b""
    prefix: bytes | None = None
    with archive.open(path) as stream:
        while True:
            chunk = stream.read(1 << 20)
            buffer = carry + chunk
            if prefix is None:
                found = re.search(rb"<(?:([A-Za-z_][\w.-]*):)?worksheet\b", buffer)
                prefix = (found.group(1) + b":") if found and found.group(1) else b""
            # Count only up to the last '<' so that no tag is split between two reads.
            cut = len(buffer) if not chunk else max(buffer.rfind(b"<"), 0)
            part = buffer[:cut]
            row_tags = (b"<" + prefix + b"row ", b"<" + prefix + b"row>")
            value_tags = (b"<" + prefix + b"v>", b"<" + prefix + b"is>")
            rows += sum(part.count(tag) for tag in row_tags)
            values += sum(part.count(tag) for tag in value_tags)
            formulas = formulas or any(part.count(b"<" + prefix + b"f" + end) for end in (b">", b" ", b"/"))
            if header_values is None:
                header_values = _first_row_values(part, row_tags, value_tags)
            carry = buffer[cut:]
            deadline.check()
            if not chunk:
                return _SheetScan(rows, values, header_values or 0, formulas)


def _first_row_values(part: bytes, row_tags: tuple[bytes, ...], value_tags: tuple[bytes, ...]) -> int | None:
    """Cells holding a value in the first row element of ``part`` (None when ``part`` has no row)."""
    starts = [position for position in (part.find(tag) for tag in row_tags) if position >= 0]
    if not starts:
        return None
    first = min(starts)
    following = [position for position in (part.find(tag, first + 1) for tag in row_tags) if position >= 0]
    row = part[first : min(following)] if following else part[first:]
    return sum(row.count(tag) for tag in value_tags)


def _check_scan(scan: _SheetScan, where: str, limits: ReadLimits) -> None:
    """Limits known from the scan of the chosen sheet: the cells holding a value, the header's excepted, bound the
    cells of the table from below."""
    if limits.max_cells is not None and scan.values - scan.header_values > limits.max_cells:
        raise limits.exceeded("max_cells", where, None, more=True)


_IS_NONE = partial(operator.is_, None)


def _sheet_rows(worksheet: Any, where: str, limits: ReadLimits, deadline: _Deadline) -> list[tuple[Any, ...]]:
    """The non-empty rows of a worksheet, trailing empty cells dropped, streamed with the limits checked as they come.

    openpyxl yields one row at a time (this loop is the streaming itself); the declared dimension of the sheet is
    ignored, as pandas does, because writers get it wrong.
    """
    worksheet.reset_dimensions()
    rows: list[tuple[Any, ...]] = []
    width = 0
    max_rows = limits.max_rows
    max_columns = min(limits.max_columns or EXCEL_MAX_COLUMNS, EXCEL_MAX_COLUMNS)
    for seen, row in enumerate(worksheet.iter_rows(values_only=True), start=1):
        if seen % _EXCEL_ROWS_PER_CHECK == 0:
            deadline.check()
            if seen > EXCEL_MAX_ROWS:
                raise DataReadError(
                    f"{where} holds more than {EXCEL_MAX_ROWS:,} rows, more than an Excel sheet can; the file is "
                    "damaged or was built to exhaust memory."
                )
        end = len(row) - len(list(takewhile(_IS_NONE, reversed(row))))  # trailing empty cells, at C speed
        if not end:
            continue
        if end > width:
            width = end
            if width > max_columns:
                if limits.max_columns is not None and width > limits.max_columns:
                    raise limits.exceeded("max_columns", where, None, more=True)
                raise DataReadError(f"{where} has more columns than an Excel sheet can ({EXCEL_MAX_COLUMNS:,}).")
        rows.append(row[:end])
        data_rows = len(rows) - 1
        if max_rows is not None and data_rows > max_rows:
            raise limits.exceeded("max_rows", where, None, more=True)
        if limits.max_cells is not None and data_rows * width > limits.max_cells:
            raise limits.exceeded("max_cells", where, None, more=True)
    return rows


def _sheet_frame(rows: list[tuple[Any, ...]], where: str, deadline: _Deadline) -> tuple[pd.DataFrame, list[str]]:
    """The DataFrame of a sheet's rows (the first is the header): typed cells, missing markers, numeric text."""
    names, notes = _column_names(rows[0], where)
    width = len(names)
    columns = list(zip_longest(*rows[1:], fillvalue=None)) if len(rows) > 1 else [() for _ in range(width)]
    columns += [(None,) * (len(rows) - 1)] * (width - len(columns))
    data = {}
    errors: list[str] = []
    for position, values in enumerate(columns):
        series = pd.Series(values, dtype=object)
        if len(series):
            # Error cells (#DIV/0!...) and the missing-value markers are missing, as pandas reads them.
            markers = series.isin(_NA_MARKERS | _EXCEL_ERRORS)
            if series.isin(_EXCEL_ERRORS).any():
                errors.append(names[position])
            series = series.mask(markers)
        data[position] = series.infer_objects() if len(series) else series
    frame = pd.DataFrame(data, index=pd.RangeIndex(len(rows) - 1))
    frame.columns = pd.Index(names)
    if errors:
        notes.append(f"{where}: formula errors (#DIV/0!, #N/A...) in {format_values(errors)} were read as missing.")
    frame, numeric_notes = _infer_numeric(frame, deadline)
    return frame, notes + numeric_notes


def _check_formulas(
    archive: zipfile.ZipFile, path: str, where: str, frame: pd.DataFrame, recalculate: bool, deadline: _Deadline
) -> None:
    """Refuse formulas whose result was not saved, or whose saved result the workbook itself says to recompute.

    A formula cell without a ``<v>`` value, or with an empty one that is not a text result (``t="str"``), has no
    saved result: openpyxl writes them so; data_only reading gives None, i.e. a missing value that is not
    missing. A workbook that asks for a full recalculation on opening (``fullCalcOnLoad``, set by openpyxl and
    XlsxWriter, cleared by Excel when it saves) holds placeholders (XlsxWriter writes 0) instead of results.
    """
    import xml.etree.ElementTree as ElementTree

    missing: list[str] = []
    placeholders: list[str] = []
    with archive.open(path) as stream:
        try:
            _formula_cells(ElementTree.iterparse(stream, events=("start", "end")), missing, placeholders, deadline)
        except ElementTree.ParseError as exc:
            raise DataReadError(f"{where} could not be read: {_reason(exc)}.") from exc
    if missing:
        raise DataReadError(
            f"{where}: {_formula_columns(missing, frame)} formulas without a saved result ({len(missing):,} cells, "
            f"the first {missing[0] or 'unknown'}); they would be read as missing values. The workbook was written "
            "by a program that does not calculate formulas: open it in a spreadsheet program and save it (which "
            "recalculates it), or export it as CSV."
        )
    if placeholders and recalculate:
        raise DataReadError(
            f"{where}: {_formula_columns(placeholders, frame)} formulas whose saved results are placeholders "
            f"({len(placeholders):,} cells): the workbook asks to be recalculated when opened, as programs that do "
            "not calculate formulas write it. Open it in a spreadsheet program and save it (which recalculates it), "
            "or export it as CSV."
        )


def _formula_cells(events: Any, missing: list[str], placeholders: list[str], deadline: _Deadline) -> None:
    """Sort the formula cells of a sheet's parse events into those without a saved result and the others."""
    sheet_data = None
    for count, (event, element) in enumerate(events):
        tag = element.tag.rpartition("}")[2]
        if event == "start":
            if tag == "sheetData":
                sheet_data = element
            continue
        if tag == "c":
            children = {child.tag.rpartition("}")[2]: child for child in element}
            if "f" in children:
                value = children.get("v")
                has_value = value is not None and (bool(value.text) or element.get("t") in ("str", "s"))
                has_value = has_value or "is" in children
                (placeholders if has_value else missing).append(element.get("r") or "")
        elif tag == "row" and sheet_data is not None:
            sheet_data.clear()  # rows already seen: keep the memory flat
        if count % 200_000 == 0:
            deadline.check()


def _formula_columns(references: list[str], frame: pd.DataFrame) -> str:
    """``column 'total' (C) holds`` (or ``columns ... hold``) for the columns of the cell references (``C2``...)."""
    letters = pd.Series(references, dtype=object).str.extract(r"^([A-Za-z]+)")[0].dropna().unique().tolist()
    if not letters:
        return "some cells hold"
    shown = []
    for letter in letters[:5]:
        position = 0
        for char in letter.upper():
            position = position * 26 + ord(char) - 64
        name = frame.columns[position - 1] if 0 < position <= frame.shape[1] else None
        shown.append(f"'{name}' ({letter})" if name is not None else letter)
    more = f" and {len(letters) - 5} more" if len(letters) > 5 else ""
    if len(letters) == 1:
        return f"column {shown[0]} holds"
    return "columns " + ", ".join(shown) + more + " hold"


# ---------------------------------------------------------------------------------------------------------- Parquet


def _read_parquet(raw: bytes, label: str, limits: ReadLimits, deadline: _Deadline) -> pd.DataFrame:
    import pyarrow as pa
    import pyarrow.parquet as pq

    if len(raw) < 12 or raw[-4:] != b"PAR1":
        raise DataReadError(f"{label} is truncated or damaged: the end of a Parquet file (its footer) is missing.")
    try:
        parquet = pq.ParquetFile(pa.BufferReader(raw))
        schema = parquet.schema_arrow
    except Exception as exc:  # pyarrow raises ArrowInvalid, OSError ... for corrupt files
        raise DataReadError(f"{label} could not be read as a Parquet file: {_reason(exc)}.") from exc
    names = list(schema.names)
    counts = Counter(names)
    repeated = [f"'{name}' ({count} times)" for name, count in counts.items() if count > 1]
    if repeated:
        raise DataReadError(
            f"{label} has duplicate column names: {', '.join(repeated[:8])}"
            f"{' and more' if len(repeated) > 8 else ''}; give each column its own name."
        )
    nested = [f"'{f.name}' ({f.type})" for f in schema if pa.types.is_nested(f.type)]
    if nested:
        raise DataReadError(
            f"{label} has nested columns, which do not hold one value per cell: {', '.join(nested[:8])}"
            f"{' and more' if len(nested) > 8 else ''}. Flatten them into plain columns or leave them out."
        )
    metadata = parquet.metadata
    n_rows, n_columns = metadata.num_rows, len(names)
    limits.check("max_columns", n_columns, label)
    limits.check("max_rows", n_rows, label)
    limits.check("max_cells", n_rows * n_columns, label)
    groups = [metadata.row_group(i) for i in range(metadata.num_row_groups)]
    limits.check("max_decompressed_bytes", sum(group.total_byte_size for group in groups), label)
    try:
        tables = []
        for i in range(len(groups)):
            tables.append(parquet.read_row_group(i))
            deadline.check()
        table = pa.concat_tables(tables) if tables else schema.empty_table()
        frame = table.to_pandas()
    except DataReadError:
        raise
    except Exception as exc:
        raise DataReadError(f"{label} could not be read as a Parquet file: {_reason(exc)}.") from exc
    return frame


# ------------------------------------------------------------------------------------------------------------ shape


def _check_shape(frame: pd.DataFrame, label: str, info: TableInfo, all_missing: bool | None = None) -> None:
    others = ""
    if len(info.sheets) > 1:
        others = f" The workbook's other sheets: {format_values([s for s in info.sheets if s != info.sheet], 8)}."
    if frame.shape[1] == 0:
        what = "is empty" if info.format == "excel" else "has no columns"
        raise DataReadError(f"{label} {what}.{others}")
    if frame.shape[1] == 1:
        hint = ""
        if info.delimiter is not None:
            shown = "tab" if info.delimiter == "\t" else repr(info.delimiter)
            hint = f" (the delimiter found was {shown}; use , ; tab or | between columns)"
        raise DataReadError(
            f"{label} has a single column '{frame.columns[0]}'; a table needs at least two{hint}.{others}"
        )
    if frame.shape[0] == 0:
        header = "a header" if info.format != "parquet" else "columns"
        raise DataReadError(f"{label} has {header} but no data rows.{others}")
    if frame.isna().all().all() if all_missing is None else all_missing:
        raise DataReadError(f"{label}: every value is missing.{others}")
    unnamed = [c for c in frame.columns if not c or str(c).startswith("Unnamed:")]
    if unnamed and len(unnamed) == frame.shape[1]:
        raise DataReadError(f"{label} has no header row with column names.{others}")


def sniff_delimited(sample: bytes, name: str | None = None) -> tuple[str, str]:
    """The encoding and the delimiter :func:`read_table` would use for a delimited text file that starts with
    ``sample`` (its first megabyte or so): engines that stream the file read it with the same two choices."""
    end = sample.rfind(b"\n") + 1
    cut = sample[:end] if end else sample  # a sample may end inside a multi-byte character
    if cut.startswith((b"\xff\xfe", b"\xfe\xff")) and len(cut) % 2:
        cut = cut[:-1] if cut.startswith(b"\xfe\xff") else sample[: end + 1]
    text, encoding = _decode(cut, name or "The file")
    return encoding, _detect_delimiter(text)
