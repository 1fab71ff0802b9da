"""Reading tables from CSV, Excel, Parquet, SPSS, Stata and SAS files, with clear errors for files that are not
tables.

Rules (applied the same way by the CLI, the Python API and the dashboard):

* **Format** from the content when it has a signature (``PAR1`` is Parquet, a ZIP archive holding a workbook is
  Excel; SPSS, Stata and SAS files have theirs), else from the file name's extension (``.csv``, ``.tsv``, ``.txt``,
  ``.xlsx``, ``.xlsm``, ``.parquet``, ``.pq``, ``.sav``, ``.zsav``, ``.dta``, ``.sas7bdat``, ``.xpt``); anything else
  is delimited text. A ``.csv`` that is really a workbook is read as one (with a note in
  :class:`TableInfo`); a ``.xlsx`` or ``.parquet`` whose content is not one is refused with a message saying what
  it looks like. Old ``.xls`` (and password-protected) workbooks, gzip files and other ZIP archives are refused.
* **Encoding** of delimited text: a UTF-16 or UTF-32 byte-order mark, else UTF-8 (a byte-order mark is dropped),
  else the most probable encoding found by ``charset-normalizer`` on the first 1 MB, reported in
  :class:`TableInfo`. A NUL byte anywhere in the file (or a NUL character in UTF-16/32 text), or control
  characters in more than 1% of the first 64 KB, mean binary content: the file is refused.
* **Delimiter**: the one of ``, ; \\t |`` that splits the first lines into the same, largest number of fields.
  The header gives the number of columns: a row with more fields is an error naming the line (never a silent
  shift into an index), a row with fewer fields has missing values at its end.
* **Parsing**: fields are separated by the delimiter, ``"`` quotes a field (``""`` inside it is a quote), spaces
  before a field are skipped (a quote after them opens a quoted field), blank lines are skipped, and lines end with
  LF, CRLF or CR. UTF-8 text is parsed by Arrow's multi-threaded CSV reader into Arrow strings and each column is
  settled through its distinct values (an order of magnitude faster than cell by cell, and text columns stay in
  Arrow memory); the numeric rules below are checked on all columns together, in bulk (Arrow's kernels and numpy
  over the texts' bytes, no Python per value); other encodings, and the shapes Arrow's tokenizer reads otherwise
  than pandas' (spaces before an opening quote, rows of another width, an unclosed quote), are parsed by pandas' C
  parser. Both give the same frame, the same notes and the same errors: a differential test holds them equal on
  thousands of random files.
* **Spaces around a value are removed**, before and after it, inside quotes too: ``Bath``, ``Bath  ``, `` Bath``
  and ``" Bath "`` are one town (in an Excel text cell too). Such spaces never tell two people apart and an
  attacker matching records ignores them (the measured attacks do too), so keeping them would split a class in two
  and overstate the risk. Only the space character is removed (not tabs or non-breaking spaces); a value that is
  then empty or a missing-value marker is missing. Every engine that reads the file as text applies the same rule.
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
  - other numbers become float64 when the float **keeps** every value. A decimal text ``t`` whose last
    significant digit is in the place of ``10**q`` (``q = -1`` for ``1.50`` and ``-84.482753289932688e2``'s
    ``q = -13``; trailing zeros do not count) is read as the float ``f`` nearest to it (as Python's ``float``), and
    ``f`` keeps ``t`` when ``t`` is, among the multiples of ``10**q`` that read back as ``f``, the one nearest to
    ``f`` (ties to the even one). In words: rounding the float to the text's last digit gives the text back, so a
    float is a float however many digits it was written with (``repr``'s shortest form, ``%.17g``, numpy's
    ``%.18e``, ``0.30000000000000004``), and a text that says more than its float (``0.1234567890123456789``,
    ``9007199254740993.0``), ``1e999`` (overflow) and ``1e-400`` (underflow to 0) are not kept. Every zero is kept
    (``-0.0`` too). A decimal of at most 15 significant digits in the range of normal floats is always kept
    (DBL_DIG); longer ones are checked in bulk (see :func:`_kept_floats`). A column with a value not kept stays
    text, and so does a column where two kept values are different numbers that become one float
    (``0.1`` and ``0.10000000000000001``), so that distinct texts never merge into one number. Texts such as
    ``inf`` or ``Infinity`` are not numbers here; a number is read with the spaces and other characters
    ``str.strip()`` removes around it, and a leading ``+``;
  - a float column whose values are all whole and in the 64-bit range, with no missing value, is ``int64``.

  Each column kept as text for one of these reasons is named in :attr:`TableInfo.notes`.
* **Excel**: the first sheet unless ``sheet`` names or numbers another; :attr:`TableInfo.sheets` lists them all
  and, when there are several and none was chosen, a note says which was read. Cells keep their types (a text
  cell ``02134`` stays text; text cells that look like numbers are converted as above), error cells
  (``#DIV/0!``...) and the missing-value markers are missing values, empty rows are skipped. Without a choice,
  the first *visible* sheet is read (hidden sheets are named in a note). A merged range holds its value in its
  first cell, the others are missing: a note names the ranges. A sheet whose rows are numbered twice or out of
  order (``<row r="2">`` twice, which openpyxl merges into one row) is refused with the row's number. A workbook whose
  formulas have no saved result (written by a program that does not calculate, e.g. openpyxl, which a
  spreadsheet program would recalculate on opening) is refused with a message naming the columns, instead of
  being read as missing values or placeholder zeros.
* **Parquet**: read as typed (:func:`arrow_frame`). Nested columns (list, struct, map) and duplicate column names
  are refused with a message naming them. A pandas index saved with a name (``df.set_index('region')``) is a
  column; decimals follow the numeric rules of text on their exact digits (float64 when exact, else text); bytes
  are text (UTF-8, else hexadecimal). Arrow IPC (Feather) files are refused with a message.
* **SPSS, Stata, SAS** (``.sav``, ``.zsav``, ``.dta``, ``.sas7bdat``, ``.xpt``; recognised by their signatures, read
  with pyreadstat): read as typed, the way statistical offices' users read them (sdcMicro, haven's ``as_factor``):

  - a variable with **value labels** holds its labels in place of its codes (``1`` -> ``"Male"``), as text; a code
    without a label is kept as it is (as text: ``3``). A note names the labelled columns, and says when two codes
    became one value (two codes with one label). A variable whose present values have no label stays numeric;
  - **missing values** the file declares are missing: system missing (``.``), SPSS user-defined missing values
    and ranges, Stata's ``.a`` to ``.z``, SAS's ``.A`` to ``.Z`` and ``._``, and empty texts (Stata's rule for
    strings); a note counts them by kind and column;
  - numbers are float64, or int64 when every value is whole and none is missing (the rule for delimited text);
    texts stay text (no conversion to numbers: the file has typed them); dates and date-times are datetime64, times
    of day are ``datetime.time`` values (as Excel cells are read);
  - **encoding**: the one the file declares (Stata before version 14: Windows-1252). Text that is not valid in it
    is read as Windows-1252 with a note; ``encoding`` names another (an iconv name, e.g. ``ISO-8859-15``).

  pyreadstat parses in a child process (a damaged file can crash its C parser; the crash ends that process only
  and becomes a :class:`~privdash.errors.DataReadError`), which ``max_seconds`` stops when its time is up.
* Input files are only ever opened for reading.

Reading limits (:class:`ReadLimits`) are checked **before or while** parsing, never after a full parse: the
number of columns from the CSV header, the Parquet metadata, the worksheet rows or the variables of a statistical
file; the number of rows and cells while the rows are read (CSV: at most ``max_rows + 1`` rows are parsed; Excel:
rows are streamed and counted; SPSS, Stata, SAS: from the file's metadata, and no more rows than the limits allow
are parsed); the declared uncompressed sizes of a workbook's ZIP entries and of a Parquet file's row groups, and
the rows times the row width of a compressed statistical file, before anything is decompressed, and what shared
strings and Parquet dictionaries decode to, before they are decoded; the reading time
between chunks (see :class:`ReadLimits`). Going over one raises :class:`~privdash.errors.ReadLimitError`,
whose message names the limit, the value found and, when the caller says which setting controls it, that setting.
An Excel sheet holding more rows (1,048,576) or columns (16,384) than Excel allows is refused in any case: it is
damaged or built to exhaust memory.

Writing (:func:`write_table`, :func:`csv_text`) makes exports safe to open in a spreadsheet: a text cell (or a
column name) that starts with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return is written with a leading
``'`` (OWASP's rule against CSV / formula injection), so Excel or LibreOffice shows it as text instead of running
it as a formula (``=HYPERLINK(...)``, ``=cmd|' /C calc'!A0``). Numbers are never changed: a numeric column's ``-5``
stays a number. Machine consumers that need the raw text pass ``escape_formulas=False`` (CLI:
``--no-escape-formulas``). Parquet is a typed format that spreadsheets do not evaluate, so it is written as it is.
"""

from __future__ import annotations

import atexit
import contextlib
import csv
import functools
import io
import math
import operator
import os
import re
import struct
import threading
import time
import warnings
import zipfile
import zlib
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from difflib import get_close_matches
from fractions import Fraction
from functools import partial
from itertools import takewhile, zip_longest
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import pandas as pd

from privdash.errors import DataReadError, ParameterError, ReadLimitError, format_values

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_DECOMPRESSED_BYTES",
    "DEFAULT_READ_LIMITS",
    "EXCEL_MAX_COLUMNS",
    "EXCEL_MAX_ROWS",
    "FORMULA_PREFIXES",
    "PANDAS_INDEX",
    "ReadLimits",
    "TableInfo",
    "arrow_frame",
    "csv_text",
    "detect_format",
    "escape_formulas",
    "header_names",
    "header_record",
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
        as they are streamed; Parquet: the row count of the file's metadata; SPSS, Stata, SAS: the row count of
        the file's metadata when it has one, and at most ``max_rows + 1`` rows are parsed.
    max_columns
        Columns. CSV: the fields of the header, before the data is parsed; Excel: the widest row so far;
        Parquet: the schema; SPSS, Stata, SAS: the variables of the metadata.
    max_cells
        Rows times columns. CSV and Excel: checked as rows are read; Parquet, SPSS, Stata, SAS: from the metadata
        (and no more rows than the limit allows are parsed). For Excel, the number of cells holding a value is also
        counted from the sheet's XML before parsing.
    max_decompressed_bytes
        The uncompressed size of a workbook's ZIP entries (from the ZIP directory), of a Parquet file's row
        groups (from its metadata) or of a compressed SPSS or SAS file's rows (rows times the row width of the
        metadata), before anything is decompressed. 1 GiB unless set otherwise (``None``: no limit): this is the
        protection against decompression bombs. Python's ``zipfile`` never produces more than
        an entry's declared size, so an entry cannot lie its way past the check. What the values decode to counts
        too, where a few bytes may stand for a long value: a worksheet's cells that refer to shared strings (the
        text of each referenced string, counted before openpyxl parses the sheet), and a Parquet row group's
        dictionary-encoded text (bounded from each dictionary page's longest value, counted exactly row by row
        when the bound is over the limit, before the text is decoded).
    max_seconds
        Reading time, from the start of :func:`read_table` to the end of the numeric conversion. It is checked
        between steps: after decoding, between chunks of about 1,000,000 CSV cells (at least 200 rows), every
        2,000 worksheet rows, every megabyte of a sheet's XML scanned, between Parquet row groups, between batches
        of about 1,000,000 cells converted to numbers. One step is not interrupted (a single Parquet row group,
        openpyxl opening a workbook and its shared strings), so reading may overrun the limit by about one step;
        the other limits bound the size of a step. An SPSS, Stata or SAS file is parsed in a child process,
        stopped when the time is up.
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
        source, filename=filename, max_bytes=max_bytes, sheet=sheet, limits=limits, encoding=encoding
    )[0]


def read_table_with_info(
    source: str | os.PathLike[str] | bytes | BinaryIO,
    *,
    filename: str | None = None,
    max_bytes: int | None = None,
    sheet: str | int | None = None,
    limits: ReadLimits | None = None,
    encoding: str | None = None,
) -> tuple[pd.DataFrame, TableInfo]:
    """Like :func:`read_table`, also returning how the file was read."""
    limits = DEFAULT_READ_LIMITS if limits is None else limits
    raw, name = _load_bytes(source, filename, max_bytes)
    label = name or "the file"
    deadline = _Deadline(limits, label)
    if not raw.strip():
        raise DataReadError(f"{label} is empty.")
    kind, notes = detect_format(raw, name, label)
    if sheet is not None and kind != "excel":
        raise DataReadError(f"{label} is not an Excel workbook, so it has no sheet to choose ('{sheet}' was asked).")
    if encoding is not None and kind not in _STATISTICAL_FORMATS:
        raise DataReadError(_encoding_not_applicable(label, encoding))
    info: TableInfo
    all_missing = None
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
        arrow = _read_text_arrow(raw, label, limits, deadline)
        if arrow is not None:
            frame, text_notes, all_missing, delimiter = arrow
            encoding = "utf-8"
        else:
            text, encoding = _decode(raw, label)
            deadline.check()
            delimiter = _detect_delimiter(text)
            frame, text_notes, all_missing = _read_text(text, delimiter, label, limits, deadline)
            del text
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
    if "\r" in text and "\n" not in text:
        # Lines ended by CR alone (old Mac files): said explicitly, else pandas' tokenizer skips a blank line and
        # then the delimiter that starts the next line, shifting that line's values one column to the left.
        options["lineterminator"] = "\r"
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
    # Spaces the parser left (after a value, inside quotes): looked for in the text first, at memory speed.
    if re.search(f' (?:[{re.escape(delimiter)}\r\n"]|$)|" ', text) is not None:
        _strip_spaces(values)
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


def _strip_spaces(values: np.ndarray) -> None:
    """Remove the spaces around every text of ``values`` (rows x columns of parsed fields, changed in place), inside
    quotes too; a text that becomes a missing-value marker (``" NA "``, ``"  "``) is then missing."""
    cells = pd.Series(values.reshape(-1), dtype=object, copy=False)
    spaced = (cells.str.startswith(" ", na=False) | cells.str.endswith(" ", na=False)).to_numpy(dtype=bool)
    if not spaced.any():
        return
    stripped = cells[spaced].str.strip(" ")
    stripped = stripped.mask(stripped.isin(_NA_MARKERS))
    rows, columns = np.divmod(np.flatnonzero(spaced), values.shape[1])
    values[rows, columns] = stripped.to_numpy(dtype=object)


#: Bytes of text per Arrow batch (batches are parsed in parallel; limits and time are checked between them).
_ARROW_BLOCK_BYTES = 1 << 20
_UTF8_BOM = b"\xef\xbb\xbf"


def _read_text_arrow(
    raw: bytes, label: str, limits: ReadLimits, deadline: _Deadline
) -> tuple[pd.DataFrame, list[str], bool, str] | None:
    """Delimited UTF-8 text parsed by Arrow's multi-threaded CSV reader, with the rules and results of
    :func:`_read_text` (the reference) at a fraction of its time and memory: returns the frame, the notes, whether
    every value is missing, and the delimiter.

    Every field is read as text, then each column is settled through its distinct values (or row by row when its
    first values are mostly distinct, and all columns at once for a table of at most ``_FLAT_ROWS`` rows), as the
    reference settles it through every cell: surrounding spaces removed (:func:`_strip_spaces`), the missing-value
    markers, the numeric rules (:func:`_settle_numbers` on every column at once, on the values in order of first
    appearance, so that the decisions and the examples in the notes are the reference's). Text columns stay Arrow
    strings, the storage of pandas' ``str``.

    ``None`` when the reference must read the file: another encoding, binary or control-laden content, fewer than
    two columns, no data row, spaces before an opening quote or at the start of a quoted value (Arrow sees a quote
    only at a field's first character, pandas after the skipped spaces, and keeps quoted spaces), and anything Arrow
    rejects (a row of another width, which pandas pads or names in its message, an unclosed quote, text that is not
    UTF-8). The reference then reads the file, or refuses it with its message.
    """
    if raw.startswith(tuple(bom for bom, _ in _BOMS)) or b"\x00" in raw:
        return None
    start = len(_UTF8_BOM) if raw.startswith(_UTF8_BOM) else 0
    # The reference sniffs the first 65,536 characters: at most four bytes each.
    head = raw[start : start + 4 * 65536 + 4].decode("utf-8", errors="ignore")[:65536]
    controls = len(_CONTROL.findall(head))
    if controls > 10 and controls * 100 > len(head):
        return None
    delimiter = _detect_delimiter(head)
    width = _header_width(head, delimiter)
    # Over the column limit, or a header longer than the sniffed text: the reference counts and says how many.
    if width < 2 or (limits.max_columns is not None and width > limits.max_columns):
        return None
    table = _arrow_strings(raw, start, delimiter, width, label, limits, deadline)
    if table is None or table.num_rows < 2 or _ends_in_open_quote(raw, table.column(width - 1)[-1].as_py()):
        return None
    header = [str(table.column(i)[0].as_py()) for i in range(width)]
    if any(_SPACED_QUOTE.match(name) for name in header):
        return None
    names, notes = _column_names(header, label)
    data = table.slice(1)
    kept: dict[str, list[tuple[str, str]]] = {
        "overflow": [],
        "inexact": [],
        "merged": [],
        "integers": [],
        "integers_missing": [],
    }
    if data.num_rows <= _FLAT_ROWS:
        flat = _flat_columns(data, [str(name) for name in names], kept)
        if flat is None:
            return None
        columns, all_missing = flat
        deadline.check()
    else:
        # Arrow's kernels release the GIL: the columns are settled two at a time.
        with ThreadPoolExecutor(max_workers=min(2, os.cpu_count() or 1)) as pool:
            settled = list(pool.map(lambda i: _settle_text_column(data.column(i)), range(width)))
        deadline.check()
        if any(column is None for column in settled):
            return None
        columns = _typed_columns([column for column in settled if column is not None], names, kept)
        all_missing = all(not len(column.present) for column in settled if column is not None)
    frame = pd.DataFrame(dict(enumerate(columns)), index=pd.RangeIndex(data.num_rows), copy=False)
    frame.columns = pd.Index(names)
    return frame, notes + _numeric_notes(kept, names), all_missing, delimiter


def _ends_in_open_quote(raw: bytes, last: str) -> bool:
    """Whether the file's last value is a quote never closed (Arrow ends it at the end of the file; pandas refuses
    it). Only the last value of the last row can be one: an open quote anywhere else swallows the fields after it,
    and Arrow rejects the shortened row. A closed last value is followed by its closing quote, an unquoted one
    is preceded by a delimiter or a line break: neither file ends with a quote and then the value."""
    return raw.endswith(b'"' + last.replace('"', '""').encode("utf-8"))


#: A field Arrow read as text that pandas would read as quoted: spaces, then a quote.
_SPACED_QUOTE = re.compile(r' +"')


def _arrow_strings(
    raw: bytes, start: int, delimiter: str, width: int, label: str, limits: ReadLimits, deadline: _Deadline
) -> Any:
    """Every row (the header first) as a table of ``width`` large-string columns, read in batches with the row,
    cell and time limits checked between them; ``None`` when Arrow rejects the text."""
    import pyarrow as pa
    import pyarrow.csv as pa_csv

    names = [f"c{i}" for i in range(width)]
    read_options = pa_csv.ReadOptions(column_names=names, block_size=_ARROW_BLOCK_BYTES, use_threads=True)
    parse_options = pa_csv.ParseOptions(
        delimiter=delimiter,
        quote_char='"',
        double_quote=True,
        escape_char=False,
        newlines_in_values=True,
        ignore_empty_lines=True,
    )
    convert_options = pa_csv.ConvertOptions(
        column_types=dict.fromkeys(names, pa.large_string()),
        strings_can_be_null=False,
        quoted_strings_can_be_null=False,
        null_values=[],
        check_utf8=True,
    )
    batches = []
    rows = 0
    try:
        reader = pa_csv.open_csv(
            pa.BufferReader(pa.py_buffer(raw)[start:]),
            read_options=read_options,
            parse_options=parse_options,
            convert_options=convert_options,
        )
        for batch in reader:
            batches.append(batch)
            rows += batch.num_rows
            # As the reference: the header is not a data row; going over is said as soon as it is seen.
            if limits.max_rows is not None and rows - 1 > limits.max_rows:
                raise limits.exceeded("max_rows", label, None, more=True)
            if limits.max_cells is not None and (rows - 1) * width > limits.max_cells:
                raise limits.exceeded("max_cells", label, None, more=True)
            deadline.check()
    except pa.ArrowException:
        return None
    if not batches:
        return None
    return pa.Table.from_batches(batches)


@dataclass(frozen=True)
class _TextColumn:
    """A column of Arrow text with its values settled (spaces skipped, markers found): its distinct values, or for
    a column of mostly distinct values (``codes`` None) its values row by row, which spares hashing them."""

    column: Any  # the column as read (ChunkedArray of large strings)
    as_read: Any  # its distinct values, in order of first appearance (None: row by row)
    uniques: Any  # the same (or the rows), leading and trailing spaces removed
    missing: Any  # which of them are missing-value markers
    present: Any  # the others, in the same order
    trimmed: bool


#: A column whose first rows are mostly distinct is settled row by row (``_TextColumn``): hashing its values would
#: cost more than it spares.
_DISTINCT_SAMPLE = 16_384


def _settle_text_column(column: Any) -> _TextColumn | None:
    """The values of one column of Arrow text, settled; ``None`` when pandas would have read the column otherwise
    (see :func:`_read_text_arrow`)."""
    import pyarrow.compute as pc

    as_read: Any = None
    if len(column) > 2 * _DISTINCT_SAMPLE and pc.count_distinct(column.slice(0, _DISTINCT_SAMPLE)).as_py() > (
        _DISTINCT_SAMPLE // 2
    ):
        uniques = column  # its rows (kernels take the chunks as they are)
    else:
        as_read = uniques = pc.unique(column)  # in order of first appearance
    leading = bool(pc.any(pc.starts_with(uniques, " ")).as_py())
    trimmed = leading or bool(pc.any(pc.ends_with(uniques, " ")).as_py())
    if trimmed:
        if leading and bool(pc.any(pc.match_substring_regex(uniques, _SPACED_QUOTE.pattern)).as_py()):
            return None
        uniques = pc.utf8_trim(uniques, characters=" ")
    missing = pc.is_in(uniques, value_set=_na_markers())
    present = pc.filter(uniques, pc.invert(missing)) if pc.any(missing).as_py() else uniques
    return _TextColumn(column, as_read, uniques, missing, present, trimmed)


@functools.cache
def _na_markers() -> Any:
    import pyarrow as pa

    return pa.array(sorted(_NA_MARKERS), type=pa.large_string())


def _typed_columns(
    settled: Sequence[_TextColumn], names: Sequence[object], kept: dict[str, list[tuple[str, str]]]
) -> list[Any]:
    """The columns as the reference builds them: numbers by :func:`_settle_numbers`'s rules (decided on the values
    of every column at once, mapped back to the rows), else text with missing values, else (every value missing)
    an object column of NaN."""
    import pyarrow as pa
    import pyarrow.compute as pc

    width = len(settled)
    lengths = np.array([len(text.present) for text in settled], dtype=np.int64)
    complete = np.array([len(text.present) == len(text.uniques) for text in settled], dtype=bool)
    # Only the columns whose first value is a number or an infinity word are passed on (the first test of
    # _settle_numbers, made here on one value a column so that text columns are never copied).
    passed = [
        i
        for i, text in enumerate(settled)
        if lengths[i] and _FIRST_NUMBER.fullmatch(str(text.present[0].as_py()).strip()) is not None
    ]
    decided: dict[int, np.ndarray] = {}
    if passed:
        texts = pa.concat_arrays([chunk for i in passed for chunk in _chunks(settled[i].present)])
        cols = np.repeat(np.array(passed), lengths[passed])
        decided = _settle_numbers(texts, cols, width, complete, [str(name) for name in names], kept)
    columns: list[Any] = []
    for i, text in enumerate(settled):
        n_rows = len(text.column)
        if not lengths[i]:
            columns.append(np.full(n_rows, np.nan, dtype=object))
            continue
        if i in decided:
            typed = decided[i]
            if complete[i] and text.as_read is None:
                columns.append(typed)
                continue
            lookup = np.full(len(text.uniques), np.nan, dtype=typed.dtype) if not complete[i] else typed
            if not complete[i]:
                lookup[~np.asarray(text.missing.to_numpy(zero_copy_only=False), dtype=bool)] = typed
            columns.append(lookup if text.as_read is None else lookup[_codes(text)])
            continue
        column = text.column
        if text.trimmed or not complete[i]:
            settled_values = pc.if_else(text.missing, pa.scalar(None, pa.large_string()), text.uniques)
            column = settled_values if text.as_read is None else settled_values.take(_codes(text))
        columns.append(pd.array(column, dtype=_TEXT_DTYPE))
    return columns


#: A table of at most this many rows is settled all columns at once, cell by cell (a wide table's columns would
#: each cost more in kernel calls than their few values).
_FLAT_ROWS = 1_000


def _flat_columns(
    data: Any, names: Sequence[str], kept: dict[str, list[tuple[str, str]]]
) -> tuple[list[Any], bool] | None:
    """:func:`_typed_columns` for a short table: every cell of every column in one Arrow array (one column after
    the other), settled with one call of each kernel; ``None`` when pandas would read a column otherwise (see
    :func:`_read_text_arrow`). Returns the columns and whether every value is missing."""
    import pyarrow as pa
    import pyarrow.compute as pc

    width, n_rows = data.num_columns, data.num_rows
    texts = pa.concat_arrays([chunk for column in data.columns for chunk in column.chunks])
    cols = np.repeat(np.arange(width), n_rows)
    leading = np.asarray(pc.starts_with(texts, " ").to_numpy(zero_copy_only=False), dtype=bool)
    if leading.any():
        quoted = _matches(texts, _SPACED_QUOTE.pattern)
        if ((np.bincount(cols[leading], minlength=width) > 0) & (np.bincount(cols[quoted], minlength=width) > 0)).any():
            return None
    if leading.any() or bool(pc.any(pc.ends_with(texts, " ")).as_py()):
        texts = pc.utf8_trim(texts, characters=" ")
    missing = np.asarray(pc.is_in(texts, value_set=_na_markers()).to_numpy(zero_copy_only=False), dtype=bool)
    present = ~missing
    complete = np.bincount(cols[missing], minlength=width) == 0
    counts = np.bincount(cols[present], minlength=width)
    chosen = texts.filter(pa.array(present)) if missing.any() else texts
    decided = _settle_numbers(chosen, cols[present], width, complete, names, kept) if present.any() else {}
    if missing.any():
        texts = pc.if_else(pa.array(missing), pa.scalar(None, pa.large_string()), texts)
    columns: list[Any] = []
    for i in range(width):
        if not counts[i]:
            columns.append(np.full(n_rows, np.nan, dtype=object))
        elif i in decided and complete[i]:
            columns.append(decided[i])
        elif i in decided:
            full = np.full(n_rows, np.nan)
            full[present[i * n_rows : (i + 1) * n_rows]] = decided[i]
            columns.append(full)
        else:
            columns.append(pd.array(texts.slice(i * n_rows, n_rows), dtype=_TEXT_DTYPE))
    return columns, not present.any()


def _chunks(values: Any) -> list[Any]:
    return list(values.chunks) if hasattr(values, "chunks") else [values]


def _codes(text: _TextColumn) -> np.ndarray:
    """Each row's position among the column's distinct values."""
    import pyarrow.compute as pc

    codes = pc.index_in(text.column, value_set=text.as_read)
    return np.asarray(codes.to_numpy() if not hasattr(codes, "chunks") else codes.combine_chunks().to_numpy())


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
_INFINITY_TEXT = r"[+-]?(?i:inf|infinity)"
#: The characters Python's ``str.strip()`` removes (``str.isspace``), as an RE2 class: a numeric text is read
#: with them removed from both ends, as ``float()`` reads it.
_STRIPPED_CLASS = (
    r"[\t\n\x0b\x0c\r\x1c-\x1f \x{85}\x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}]"
)
_STRIP_PATTERN = f"^{_STRIPPED_CLASS}+|{_STRIPPED_CLASS}+$"
_NUMBER_PATTERN = f"^{_NUMBER_TEXT}$"
_INFINITY_PATTERN = f"^{_INFINITY_TEXT}$"
_NUMBER_OR_INFINITY_PATTERN = f"^(?:{_NUMBER_TEXT}|{_INFINITY_TEXT})$"
_FIRST_NUMBER = re.compile(f"{_NUMBER_TEXT}|[+-]?(?:inf|infinity)", re.IGNORECASE)
#: pandas' ``str`` dtype (Arrow storage, NaN for missing): what the reference's text columns become.
_TEXT_DTYPE = pd.StringDtype("pyarrow", na_value=np.nan)
_DECIMAL = re.compile(r"[+-]?([0-9]*)(?:\.([0-9]*))?(?:[eE]([+-]?[0-9]+))?")
_SMALLEST_NORMAL = 2.2250738585072014e-308
#: Powers of ten held in the table of :func:`_powers_of_ten` (10**-_POWER_RANGE ... 10**_POWER_RANGE).
_POWER_RANGE = 350
#: Where the bulk test of :func:`_kept_floats` is too close to call, the exact test decides.
_RESIDUAL_TOLERANCE = 1e-6
#: More significant digits than any float's exact decimal expansion has (at most 767).
_MAX_EXPANSION_DIGITS = 800


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
    kept: dict[str, list[tuple[str, str]]] = {
        "overflow": [],
        "inexact": [],
        "merged": [],
        "integers": [],
        "integers_missing": [],
    }
    if not n_rows:
        return converted, []
    batch = max(1, _CHUNK_CELLS // n_rows)
    for start in range(0, len(positions), batch):
        chosen = positions[start : start + batch]
        _convert_block(block(chosen), chosen, names, converted, kept)
        if deadline is not None:
            deadline.check()
    return converted, _numeric_notes(kept, names)


def _convert_block(
    block: np.ndarray,
    positions: list[int],
    names: Sequence[object],
    converted: dict[int, np.ndarray],
    kept: dict[str, list[tuple[str, str]]],
) -> None:
    """Decide and convert every column of ``block`` (rows x columns of objects) at once, on its non-missing cells."""
    n_rows, width = block.shape
    present = ~pd.isna(block)
    cols, rows = np.nonzero(present.T)  # column-major: each column's cells in row order
    if not len(rows):
        return
    texts = _text_array(block.T[cols, rows])
    complete = present.sum(axis=0) == n_rows
    decided = _settle_numbers(texts, cols, width, complete, [str(names[p]) for p in positions], kept)
    bounds = np.searchsorted(cols, np.arange(width + 1))
    for column, numbers in decided.items():
        if complete[column]:
            converted[positions[column]] = numbers
        else:
            full = np.full(n_rows, np.nan)
            full[rows[bounds[column] : bounds[column + 1]]] = numbers
            converted[positions[column]] = full


def _text_array(values: np.ndarray) -> Any:
    """Objects as an Arrow array of texts (``str(value)`` for those that are not texts)."""
    import pyarrow as pa

    if pd.api.types.infer_dtype(values, skipna=False) != "string":
        values = np.array([str(value) for value in values], dtype=object)
    return pa.array(values, type=pa.large_string())


def _settle_numbers(
    texts: Any,
    cols: np.ndarray,
    width: int,
    complete: np.ndarray,
    names: Sequence[str],
    kept: dict[str, list[tuple[str, str]]],
) -> dict[int, np.ndarray]:
    """The numeric columns among ``width`` columns of texts, decided together, vectorized over cells and columns.

    ``texts`` (an Arrow array of large strings) holds the non-missing cells of every column one column after the
    other, in row order (or each column's distinct values, in order of first appearance), ``cols`` the column of
    each cell (ascending) and ``complete`` which columns have no missing value. Returns column -> its cells' numbers
    (int64 for a complete column of whole numbers, else float64); the columns kept as text for a reason the module
    docstring gives are added to ``kept`` (reason -> column name and an example).
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    def any_in(mask: np.ndarray, where: np.ndarray) -> np.ndarray:
        """Per column, whether a cell of ``mask`` is set (``where``: the cells' columns, ascending)."""
        found = np.zeros(width, dtype=bool)
        if len(where):
            starts = np.flatnonzero(np.r_[True, where[1:] != where[:-1]])
            found[where[starts]] = np.logical_or.reduceat(mask, starts)
        return found

    bounds = np.searchsorted(cols, np.arange(width + 1))
    firsts = bounds[:-1][bounds[:-1] < bounds[1:]]
    # A column whose first value is neither a number nor an infinity word is text: one test per column.
    first_ok = _matches(_stripped(texts.take(pa.array(firsts))), _NUMBER_OR_INFINITY_PATTERN)
    candidate = np.zeros(width, dtype=bool)
    candidate[cols[firsts[first_ok]]] = True
    texts, cols = _narrow(texts, cols, candidate)
    if not len(cols):
        return {}
    try:  # Arrow reads exactly the decimal numbers (and words such as inf and nan): one pass when all are numbers
        (numbers,) = _in_chunks(_floats, texts)
        odd = ~np.isfinite(numbers)
        number = np.ones(len(cols), dtype=bool)
        word = np.zeros(len(cols), dtype=bool)
        if odd.any():
            strange = texts.filter(pa.array(odd))
            number[odd] = _matches(strange, _NUMBER_PATTERN)
            word[odd] = _matches(strange, _INFINITY_PATTERN)
    except pa.ArrowInvalid:
        number = _matches(texts, _NUMBER_PATTERN)
        word = np.zeros(len(cols), dtype=bool)
        loose = ~number
        # Characters str.strip() removes around a number, infinity words, text.
        stripped = _stripped(texts.filter(pa.array(loose)))
        number[loose] = _matches(stripped, _NUMBER_PATTERN)
        word[loose] = _matches(stripped, _INFINITY_PATTERN)
        texts = pc.replace_with_mask(texts, pa.array(loose), stripped)
        numbers = np.full(len(cols), np.nan)
        if number.any():
            numbers[number] = pc.cast(texts.filter(pa.array(number)), pa.float64()).to_numpy()
    # Columns of numbers with infinity words (inf, Infinity...): text, as the words are not numbers here; say so.
    for position in _flagged(candidate & any_in(number, cols) & any_in(word, cols) & ~any_in(~number & ~word, cols)):
        kept["overflow"].append((names[position], _example(texts, cols, int(position), word)))
    candidate &= ~any_in(~number, cols)
    chosen = candidate[cols]
    if not chosen.all():
        texts, cols, numbers = texts.filter(pa.array(chosen)), cols[chosen], numbers[chosen]
    if not len(cols):
        return {}
    parts = _NumberParts(*_in_chunks(_number_parts_arrays, texts))
    candidate &= ~any_in(parts.lead, cols)  # a leading zero
    integer = ~parts.shaped
    magnitude = parts.magnitude
    all_integer = candidate & ~any_in(~integer, cols)
    as_float_integers = np.zeros(width, dtype=bool)
    out: dict[int, np.ndarray] = {}
    if all_integer.any():
        chosen = all_integer[cols]
        integers, int_cols, digits = texts.filter(pa.array(chosen)), cols[chosen], magnitude[chosen]
        # An integer fits int64 with at most 18 digits; with 19, compare it with the limit of its sign.
        over = digits > 19
        nineteen = np.flatnonzero(digits == 19)
        if len(nineteen):
            some = integers.take(pa.array(nineteen))
            values = pc.cast(pc.utf8_ltrim(some, characters="+-"), pa.uint64()).to_numpy()
            negative = _matches(some, "^-")
            over[nineteen] = values > np.where(negative, np.uint64(2**63), np.uint64(2**63 - 1))
        as_int64 = all_integer & complete & ~any_in(over, int_cols)
        # With missing values an integer column is stored as float64, exact up to 15 digits.
        as_float_integers = all_integer & ~complete & ~any_in(digits > 15, int_cols)
        for position in _flagged(all_integer & ~as_int64 & ~as_float_integers):
            reason = "integers" if complete[position] else "integers_missing"
            kept[reason].append((names[position], _example(integers, int_cols, int(position), digits)))
        if as_int64.any():
            chosen = as_int64[int_cols]
            some = integers.filter(pa.array(chosen))
            values = pc.cast(pc.utf8_ltrim(some, characters="+"), pa.int64()).to_numpy()
            out.update(_by_column(values, int_cols[chosen], as_int64))
    floating = (candidate & ~all_integer) | as_float_integers
    if not floating.any():
        return out
    chosen = floating[cols]
    if not chosen.all():
        texts, cols, numbers, parts = texts.filter(pa.array(chosen)), cols[chosen], numbers[chosen], parts.take(chosen)
    infinite = ~np.isfinite(numbers)
    overflow = any_in(infinite, cols)
    for position in _flagged(floating & overflow):
        kept["overflow"].append((names[position], _example(texts, cols, int(position), infinite)))
    live = floating & ~overflow
    if not live.any():
        return out
    chosen = live[cols]
    if not chosen.all():
        texts, cols, numbers, parts = texts.filter(pa.array(chosen)), cols[chosen], numbers[chosen], parts.take(chosen)
    exact, scale, long = _kept_floats(texts, numbers, parts, cols, width)
    inexact = any_in(~exact, cols)
    for position in _flagged(live & inexact):
        kept["inexact"].append((names[position], _example(texts, cols, int(position), ~exact)))
    good = live & ~inexact
    merged = _merged_cells(numbers, scale, cols, good & any_in(long, cols))
    merged_columns = any_in(merged, cols)
    for position in _flagged(good & merged_columns):
        kept["merged"].append((names[position], _example(texts, cols, int(position), merged)))
    good &= ~merged_columns
    for index, column in _by_column(numbers, cols, good).items():
        whole = complete[index] and bool(np.all((np.mod(column, 1) == 0) & (np.abs(column) < 2.0**63)))
        out[index] = column.astype(np.int64) if whole else column
    return out


def _floats(texts: Any) -> tuple[np.ndarray]:
    """Texts read as floats by Arrow (correctly rounded, as Python's ``float``); ``ArrowInvalid`` for a text that
    is neither a decimal number nor a word such as ``inf`` or ``nan``."""
    import pyarrow as pa
    import pyarrow.compute as pc

    return (pc.cast(texts, pa.float64()).to_numpy(),)


def _flagged(mask: np.ndarray) -> list[int]:
    """The positions a mask marks, as Python integers."""
    return [int(i) for i in np.flatnonzero(mask)]


def _matches(texts: Any, pattern: str) -> np.ndarray:
    """Which texts match an RE2 ``pattern`` (Arrow's regular expressions: one pass, no Python per cell)."""
    import pyarrow.compute as pc

    return np.asarray(pc.match_substring_regex(texts, pattern).to_numpy(zero_copy_only=False), dtype=bool)


def _stripped(texts: Any) -> Any:
    """Texts without the characters ``str.strip()`` removes at their ends."""
    import pyarrow.compute as pc

    return pc.replace_substring_regex(texts, _STRIP_PATTERN, "")


def _narrow(texts: Any, cols: np.ndarray, columns: np.ndarray) -> tuple[Any, np.ndarray]:
    """The cells of the chosen ``columns`` (a mask over the columns)."""
    import pyarrow as pa

    mask = columns[cols]
    if mask.all():
        return texts, cols
    return texts.filter(pa.array(mask)), cols[mask]


def _by_column(values: np.ndarray, cols: np.ndarray, columns: np.ndarray) -> dict[int, np.ndarray]:
    """``values`` (one per cell, the cells one column after the other) split into the chosen ``columns``."""
    bounds = np.searchsorted(cols, np.arange(len(columns) + 1))
    return {int(c): values[bounds[c] : bounds[c + 1]].copy() for c in np.flatnonzero(columns)}


@dataclass(frozen=True)
class _NumberParts:
    """The shape of decimal texts (``_NUMBER_TEXT``), read from their bytes (numpy over the Arrow buffers, no Python
    per text): a leading zero (``02``, ``-07``), a point or an exponent (not an integer), the length without the sign
    (an integer's digits), the digits of the mantissa, the digits after its point, the exponent (``extreme``: of more
    than 6 digits, not read)."""

    lead: np.ndarray
    shaped: np.ndarray
    magnitude: np.ndarray
    mantissa_digits: np.ndarray
    fraction: np.ndarray
    exponent: np.ndarray
    powered: np.ndarray
    extreme: np.ndarray

    def take(self, mask: np.ndarray) -> _NumberParts:
        return _NumberParts(*(value[mask] for value in vars(self).values()))

    def slice(self, a: int, b: int) -> _NumberParts:
        return _NumberParts(*(value[a:b] for value in vars(self).values()))


def _number_parts_arrays(texts: Any) -> tuple[np.ndarray, ...]:
    """The arrays of :class:`_NumberParts` for decimal texts."""
    n = len(texts)
    buffers = texts.buffers()
    offsets = np.frombuffer(buffers[1], dtype=np.int64)[texts.offset : texts.offset + n + 1]
    data = np.frombuffer(buffers[2], dtype=np.uint8) if buffers[2] is not None else np.zeros(1, dtype=np.uint8)
    last = len(data) - 1
    starts, ends = offsets[:-1], offsets[1:]
    first = data[np.minimum(starts, last)]
    signed = (first == ord("-")) | (first == ord("+"))
    zero_at = starts + signed
    after = data[np.minimum(zero_at + 1, last)]
    lead = (data[np.minimum(zero_at, last)] == ord("0")) & (zero_at + 1 < ends) & (after >= 48) & (after <= 57)
    region = data[offsets[0] : offsets[-1]]
    end = ends.copy()  # of the mantissa
    exponent = np.zeros(n, dtype=np.int64)
    powered = np.zeros(n, dtype=bool)
    extreme = np.zeros(n, dtype=bool)
    marks = np.flatnonzero((region | 32) == ord("e")) + offsets[0]  # 'e' or 'E': at most one a text
    if len(marks):
        owner = np.searchsorted(offsets, marks, side="right") - 1
        end[owner] = marks
        powered[owner] = True
        sign = data[np.minimum(marks + 1, last)]
        begin = marks + 1 + ((sign == ord("-")) | (sign == ord("+")))
        size = ends[owner] - begin
        extreme[owner[size > 6]] = True
        value = np.zeros(len(marks), dtype=np.int64)
        for j in range(6):
            byte = data[np.minimum(begin + j, last)].astype(np.int64)
            value = np.where(j < size, value * 10 + byte - 48, value)
        exponent[owner] = np.where(sign == ord("-"), -value, value)
    fraction = np.zeros(n, dtype=np.int64)
    dotted = np.zeros(n, dtype=bool)
    dots = np.flatnonzero(region == ord(".")) + offsets[0]
    if len(dots):
        owner = np.searchsorted(offsets, dots, side="right") - 1
        fraction[owner] = end[owner] - dots - 1
        dotted[owner] = True
    mantissa_digits = end - starts - signed - dotted
    return lead, dotted | powered, ends - starts - signed, mantissa_digits, fraction, exponent, powered, extreme


def _kept_floats(
    texts: Any, numbers: np.ndarray, parts: _NumberParts, cols: np.ndarray, width: int
) -> tuple[np.ndarray, ...]:
    """Which decimal texts their floats keep (module docstring: a text is kept when rounding its float to the text's
    last significant digit gives the text back), each text's scale (``q``: the text is ``digits x 10**q``, its digits
    an integer without trailing zeros), and which texts have more significant digits than every decimal of at most
    15 (which a float always keeps and never merges).

    ``texts`` are decimal numbers (``_NUMBER_TEXT``), ``parts`` their shape. Decided in bulk (:func:`_digits`:
    digits, scale); texts of at most 15 significant digits whose float is normal are kept (DBL_DIG); texts of 16 to
    19 digits by :func:`_residuals`, the distance from the float to the text in units of its last digit, accurate to
    1e-12 (kept when under 1/2). The texts too close to call, a float at a power of two (an uneven gap), subnormal
    floats and longer texts go to :func:`_kept_one`, the exact test in integers, stopping in each column at the first
    text that is not kept (the column is text then).
    """
    import pyarrow as pa

    n = len(numbers)
    kept, known, scale, long = _in_chunks(_kept_in_bulk, texts, numbers, parts)
    unknown = np.flatnonzero(~known)
    if len(unknown):
        # The first text of each column known not to be kept: texts after it need no exact test.
        stop = np.full(width, n)
        refused = np.flatnonzero(known & ~kept)
        np.minimum.at(stop, cols[refused], refused)
        strings = texts.take(pa.array(unknown)).to_pylist()
        for i, text in zip(unknown.tolist(), strings, strict=True):
            column = cols[i]
            if i > stop[column]:
                continue
            kept[i], scale[i] = _kept_one(text, float(numbers[i]))
            if not kept[i]:
                stop[column] = i
    return kept, scale, long


def _kept_in_bulk(texts: Any, numbers: np.ndarray, parts: _NumberParts) -> tuple[np.ndarray, ...]:
    """The bulk part of :func:`_kept_floats`: which texts are kept, which are decided, the scales, the long texts."""
    n = len(numbers)
    kept = np.zeros(n, dtype=bool)
    known = ~np.isfinite(numbers)  # overflow: not kept
    digits, scale, castable = _digits(texts, parts)
    castable &= ~known
    zero = castable & (digits == 0)
    kept[zero] = known[zero] = True  # every spelling of zero is zero
    scale[zero] = 0
    underflow = castable & ~zero & (numbers == 0)
    known |= underflow
    work = castable & ~zero & ~underflow
    trailing = np.flatnonzero(work & (digits % np.uint64(10) == 0))
    while len(trailing):
        digits[trailing] //= np.uint64(10)
        scale[trailing] += 1
        trailing = trailing[digits[trailing] % np.uint64(10) == 0]
    short = digits < np.uint64(10**15)  # at most 15 significant digits
    fast = work & short & (np.abs(numbers) >= _SMALLEST_NORMAL)
    kept[fast] = known[fast] = True
    long = ~fast & ~zero
    bulk = work & ~short & (np.abs(scale) <= _POWER_RANGE)
    if bulk.any():
        residual = np.abs(_residuals(numbers[bulk], digits[bulk], scale[bulk]))
        uneven = np.frexp(numbers[bulk])[0] == 0.5  # a power of two: a narrower gap below
        accept = residual < 0.5 - _RESIDUAL_TOLERANCE
        reject = (residual > 0.5 + _RESIDUAL_TOLERANCE) & ~uneven
        index = np.flatnonzero(bulk)
        kept[index[accept]] = True
        known[index[accept | reject]] = True
    return kept, known, scale, long


#: Cells a step of the bulk tests handles at once (its arrays stay in the processor's cache); steps run on two
#: threads (numpy's and Arrow's kernels release the GIL).
_CHUNK_TEXTS = 1 << 18


def _in_chunks(function: Callable[..., tuple[np.ndarray, ...]], texts: Any, *arrays: Any) -> tuple[np.ndarray, ...]:
    """``function(texts, *arrays)`` on slices of at most ``_CHUNK_TEXTS`` cells, two at a time, the results (tuples
    of arrays, one value a cell) joined."""
    n = len(texts)
    if n <= _CHUNK_TEXTS:
        return function(texts, *arrays)
    bounds = [*range(0, n, _CHUNK_TEXTS), n]

    def step(k: int) -> tuple[np.ndarray, ...]:
        a, b = bounds[k], bounds[k + 1]
        return function(texts.slice(a, b - a), *(_slice(array, a, b) for array in arrays))

    with ThreadPoolExecutor(max_workers=min(2, os.cpu_count() or 1)) as pool:
        results = list(pool.map(step, range(len(bounds) - 1)))
    return tuple(np.concatenate(list(pieces)) for pieces in zip(*results, strict=True))


def _slice(array: Any, a: int, b: int) -> Any:
    return array.slice(a, b) if isinstance(array, _NumberParts) else array[a:b]


def _digits(texts: Any, parts: _NumberParts) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each decimal text as ``digits x 10**scale``, ``digits`` the integer its mantissa's digits write (trailing zeros
    kept), by Arrow's kernels (the point and sign removed, then read as an integer); and which texts could be read so
    (not those of more than 19 digits in the mantissa or 6 in the exponent)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    n = len(texts)
    digits = np.zeros(n, dtype=np.uint64)
    scale = parts.exponent - parts.fraction
    readable = (parts.mantissa_digits <= 19) & ~parts.extreme
    if not readable.any():
        return digits, scale, readable
    chosen = texts if readable.all() else texts.filter(pa.array(readable))
    powered = parts.powered[readable]
    if powered.any():
        where = pa.array(powered)
        mantissas = pc.replace_substring_regex(chosen.filter(where), "[eE].*$", "")
        chosen = pc.replace_with_mask(chosen, where, mantissas)
    written = pc.replace_substring(pc.utf8_ltrim(chosen, characters="+-"), ".", "")
    digits[readable] = pc.cast(written, pa.uint64()).to_numpy()
    return digits, scale, readable


@functools.cache
def _powers_of_ten() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """10**k for k in [-_POWER_RANGE, _POWER_RANGE] as (hi + lo) * 2**b: hi in [0.5, 1], lo the rest of the exact
    value (a double-double, 106 bits), computed exactly with fractions."""
    high, low, power = [], [], []
    for k in range(-_POWER_RANGE, _POWER_RANGE + 1):
        value = Fraction(10) ** k
        b = value.numerator.bit_length() - value.denominator.bit_length()
        fraction = value / Fraction(2) ** b
        while fraction >= 1:
            fraction, b = fraction / 2, b + 1
        while fraction < Fraction(1, 2):
            fraction, b = fraction * 2, b - 1
        hi = float(fraction)
        high.append(hi)
        low.append(float(fraction - Fraction(hi)))
        power.append(b)
    return np.array(high), np.array(low), np.array(power, dtype=np.int64)


def _two_product_error(a: np.ndarray, b: np.ndarray, product: np.ndarray) -> np.ndarray:
    """``a * b - product`` exactly, for ``product = a * b`` rounded (Dekker's algorithm: no fused multiply-add)."""
    split = 134217729.0  # 2**27 + 1
    a_big, b_big = a * split, b * split
    a_hi = a_big - (a_big - a)
    b_hi = b_big - (b_big - b)
    a_lo, b_lo = a - a_hi, b - b_hi
    return ((a_hi * b_hi - product) + a_hi * b_lo + a_lo * b_hi) + a_lo * b_lo


def _residuals(numbers: np.ndarray, digits: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """``|number| / 10**scale - digits`` (digits below 10**19), accurate to about 1e-12: the float times the power of
    ten in double-double arithmetic, then the difference from the integer, split in two exact doubles."""
    high, low, power = _powers_of_ten()
    index = _POWER_RANGE - scale
    mantissa, exponent = np.frexp(np.abs(numbers))
    product = mantissa * high[index]
    error = _two_product_error(mantissa, high[index], product) + mantissa * low[index]
    shift = exponent + power[index]
    top, rest = np.ldexp(product, shift), np.ldexp(error, shift)
    digits_top = digits.astype(np.float64)
    digits_rest = (digits - digits_top.astype(np.uint64)).view(np.int64).astype(np.float64)
    return (top - digits_top) + (rest - digits_rest)  # top - digits_top is exact (Sterbenz)


def _kept_one(text: str, number: float) -> tuple[bool, int]:
    """The exact test of :func:`_kept_floats` for one text and its float: whether the text is the multiple of
    10**q (q its last significant digit) nearest to the float among those that read back as the float, and q."""
    match = _DECIMAL.fullmatch(text)
    if match is None:
        return False, 0
    whole, fraction, power = match.group(1), match.group(2) or "", match.group(3) or "0"
    digits = (whole + fraction).lstrip("0")
    core = digits.rstrip("0")
    if not core:
        return True, 0
    power = power.lstrip("+")
    if len(power.lstrip("-0")) > 18 or not math.isfinite(number) or number == 0 or len(core) > _MAX_EXPANSION_DIGITS:
        return False, 0  # the float overflowed or underflowed, or has fewer digits than the text
    scale = int(power) - len(fraction) + len(digits) - len(core)
    target = abs(number)
    exact = Fraction(target)
    unit = Fraction(10) ** scale
    nearest = math.floor(exact / unit)
    candidates = sorted(range(max(nearest - 1, 1), nearest + 3), key=lambda c: (abs(c * unit - exact), c % 2))
    for candidate in candidates:
        if float(candidate * unit) == target:
            return str(candidate) == core, scale
    return False, scale


def _merged_cells(numbers: np.ndarray, scale: np.ndarray, cols: np.ndarray, columns: np.ndarray) -> np.ndarray:
    """Cells of the chosen ``columns`` whose float another cell of the column reaches from another decimal number
    (two kept texts of one float differ in the position of their last digit, ``scale``): ``0.1`` and
    ``0.10000000000000001`` are both kept, but together they would become one value. A column's floats are sorted
    (numpy's vectorized sort) to find the repeated ones; only those are grouped."""
    merged = np.zeros(len(numbers), dtype=bool)
    bounds = np.searchsorted(cols, np.arange(len(columns) + 1))
    for column in _flagged(columns & (np.diff(bounds) > 1)):
        a, b = bounds[column], bounds[column + 1]
        bits = np.where(numbers[a:b] == 0, 0.0, numbers[a:b]).view(np.int64)  # -0.0 and 0.0: one number
        ordered = np.sort(bits)
        repeated = ordered[1:][ordered[1:] == ordered[:-1]]
        if not len(repeated):
            continue
        index = np.flatnonzero(np.isin(bits, repeated))
        groups = pd.DataFrame({"bits": bits[index], "scale": scale[a:b][index]})
        spread = groups.groupby("bits", sort=False)["scale"].transform("nunique").to_numpy() > 1
        merged[a + index[spread]] = True
    return merged


def _example(texts: Any, cols: np.ndarray, position: int, mask: np.ndarray | None) -> str:
    """One text of column ``position`` to show in a note (one that caused the decision when ``mask`` says which)."""
    bounds = np.searchsorted(cols, [position, position + 1])
    index = np.arange(bounds[0], bounds[1])
    # The first cell the mask marks, or with digits the longest (np.argmax gives the first of the largest).
    chosen = int(index[np.argmax(mask[index])]) if mask is not None and mask[index].any() else int(index[0])
    return str(texts[chosen].as_py())


def _numeric_notes(kept: dict[str, list[tuple[str, str]]], names: Sequence[object]) -> list[str]:
    """One note per reason a column was kept as text, naming the columns in table order (whatever order they
    were decided in) with an example from the first."""
    reasons = {
        "integers": "integers outside the 64-bit range",
        "integers_missing": "integers of more than 15 digits and missing values, which a float column would round",
        "overflow": "infinite or overflowing numbers",
        "inexact": "numbers that a 64-bit float cannot keep (too many digits, or beyond its range)",
        "merged": "distinct numbers that one 64-bit float would merge (they differ beyond its precision)",
    }
    notes = []
    order = {str(name): i for i, name in reversed(list(enumerate(names)))}
    for reason, decided in kept.items():
        if not decided:
            continue
        columns = sorted(decided, key=lambda column: order.get(column[0], 0))
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
    the first row, the header), whether any formula exists, the first row number that repeats or goes back (None
    when the numbered rows ascend), the merged ranges, and the cells that refer to a shared string."""

    rows: int
    values: int
    header_values: int
    formulas: bool
    disordered_row: int | None = None
    merged: tuple[str, ...] = ()
    shared_references: int = 0


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
            hidden = tuple(other for other in sheets if getattr(book[other], "sheet_state", "visible") != "visible")
            # Without a choice, the first sheet a spreadsheet program shows: the first visible one.
            visible = [other for other in sheets if other not in hidden]
            name = _choose_sheet(sheets, sheet if sheet is not None or not visible else visible[0], label)
            worksheet = book[name]
            where = f"{label} (sheet '{name}')" if len(sheets) > 1 else label
            if not hasattr(worksheet, "iter_rows"):
                tables = [other for other in sheets if hasattr(book[other], "iter_rows")]
                choose = f"choose another sheet: {format_values(tables, 8)}" if tables else "it has no sheet of values"
                raise DataReadError(f"{where} is a chart, not a table of values; {choose}.")
            path = str(getattr(worksheet, "_worksheet_path", "")).lstrip("/")
            scan = scans.get(path)
            if scan is not None:
                _check_scan(scan, where, limits)
                _check_shared_strings(archive, path, scan, where, limits, deadline)
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
        which = "the first" if name == sheets[0] else "the first visible"
        notes.append(
            f"{label} has {len(sheets)} sheets; {which}, '{name}', was read. Not read: {others}. "
            "Choose a sheet to read another."
        )
    if hidden and (sheet is None or name in hidden):
        notes.append(
            f"{label} has hidden sheets: {format_values(list(hidden), 8)}"
            + (f"; '{name}', which was read, is one of them." if name in hidden else "; they were not read.")
        )
    if not rows:
        frame = pd.DataFrame()
    else:
        frame, frame_notes = _sheet_frame(rows, where, deadline)
        notes += frame_notes
    if scan is not None and scan.formulas:
        _check_formulas(archive, path, where, frame, recalculate, deadline)
    if scan is not None and scan.merged:
        count = len(scan.merged)
        notes.append(
            f"{where} has {count} merged range{'s' if count > 1 else ''} ({format_values(list(scan.merged), 8)}): "
            "a merged range holds its value in its first cell only, so its other cells were read as missing values."
        )
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
    rows = values = shared = 0
    header_values: int | None = None
    formulas = False
    carry = b""
    prefix: bytes | None = None
    last_row = 0
    disordered: int | None = None
    merged: list[str] = []
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
            shared += part.count(b' t="s"') + part.count(b" t='s'")
            formulas = formulas or any(part.count(b"<" + prefix + b"f" + end) for end in (b">", b" ", b"/"))
            if header_values is None:
                header_values = _first_row_values(part, row_tags, value_tags)
            if disordered is None and part.count(b"<" + prefix + b"row "):
                numbers = _ROW_NUMBER.findall(part)
                if numbers:
                    found_rows = np.array([last_row, *map(int, numbers)], dtype=np.int64)
                    back = np.flatnonzero(np.diff(found_rows) <= 0)
                    if len(back):
                        disordered = int(found_rows[back[0] + 1])
                    last_row = int(found_rows[-1])
            if b"mergeCell" in part:
                merged += [ref.decode("ascii", "replace") for ref in _MERGED_RANGE.findall(part)]
            carry = buffer[cut:]
            deadline.check()
            if not chunk:
                return _SheetScan(rows, values, header_values or 0, formulas, disordered, tuple(merged), shared)


#: The number of a row element (``<row r="12" ...>``, any namespace prefix) and the range of a merged cell.
_ROW_NUMBER = re.compile(rb"<(?:[A-Za-z_][\w.-]*:)?row\s[^>]*?\br=[\"'](\d+)[\"']")
_MERGED_RANGE = re.compile(rb"<(?:[A-Za-z_][\w.-]*:)?mergeCell\s[^>]*?\bref=[\"']([^\"']+)[\"']")
#: A cell referring to a shared string, and its index.
_SHARED_CELL = re.compile(
    rb"<(?:[A-Za-z_][\w.-]*:)?c\s[^>]*?\bt=[\"']s[\"'][^>]*>\s*<(?:[A-Za-z_][\w.-]*:)?v>\s*(\d+)\s*<"
)
_SHARED_ITEM = re.compile(rb"<(?:[A-Za-z_][\w.-]*:)?si\b")


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
    cells of the table from below. Rows numbered twice or out of order are refused: a reader keeps one of the
    rows numbered alike and drops the other."""
    if limits.max_cells is not None and scan.values - scan.header_values > limits.max_cells:
        raise limits.exceeded("max_cells", where, None, more=True)
    if scan.disordered_row is not None:
        raise DataReadError(
            f"{where}: row {scan.disordered_row:,} appears twice, or after a row with a higher number; the sheet's "
            "rows are not in order and one of them would be lost. Open the file in a spreadsheet program and save "
            "it, or export it as CSV."
        )


def _check_shared_strings(
    archive: zipfile.ZipFile, path: str, scan: _SheetScan, where: str, limits: ReadLimits, deadline: _Deadline
) -> None:
    """Bound the text the sheet's cells hold once their shared strings are filled in: a cell refers to a shared
    string by its index, so a few bytes of XML can stand for a long text, and 40,000 references to one 50 KB string
    are 2 GB of text. First a bound from the longest shared string (its XML length, which is at least its text's);
    only over the limit, each cell's string is counted exactly."""
    limit = limits.max_decompressed_bytes
    parts = [name for name in archive.namelist() if name.lower().endswith("sharedstrings.xml")]
    if limit is None or not scan.shared_references or not parts:
        return
    strings = archive.read(parts[0])
    lengths = np.array([len(item) for item in _SHARED_ITEM.split(strings)[1:]], dtype=np.int64)
    del strings
    if not len(lengths) or scan.shared_references * int(lengths.max()) <= limit:
        return
    references: list[np.ndarray] = []
    carry = b""
    with archive.open(path) as stream:
        while True:
            chunk = stream.read(1 << 20)
            buffer = carry + chunk
            # Up to the last cell's start, so that no cell is split between two reads.
            cut = max(buffer.rfind(b"<c "), buffer.rfind(b":c ")) if chunk else len(buffer)
            if cut <= 0:
                cut = max(len(buffer) - 256, 0)
            references.append(np.array(list(map(int, _SHARED_CELL.findall(buffer[:cut]))), dtype=np.int64))
            carry = buffer[cut:]
            deadline.check()
            if not chunk:
                break
    indices = np.concatenate(references) if references else np.zeros(0, dtype=np.int64)
    indices = indices[(indices >= 0) & (indices < len(lengths))]
    total = int(lengths[indices].sum())
    if total > limit:
        raise limits.exceeded("max_decompressed_bytes", f"{where} (its cells' shared strings)", total)


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


#: What pandas infers for a column of cells that holds text (``.str`` refuses the others).
_TEXT_KINDS = frozenset({"string", "mixed", "mixed-integer"})


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
            # Spaces around a text are removed, as in delimited text (other cells give NaN here, hence False).
            if pd.api.types.infer_dtype(series, skipna=True) in _TEXT_KINDS:
                spaced = series.str.startswith(" ", na=False) | series.str.endswith(" ", na=False)
                if spaced.any():
                    series[spaced] = series[spaced].str.strip(" ")
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


def _read_parquet(raw: bytes, label: str, limits: ReadLimits, deadline: _Deadline) -> tuple[pd.DataFrame, list[str]]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    if len(raw) < 12 or raw[-4:] != b"PAR1":
        raise DataReadError(f"{label} is truncated or damaged: the end of a Parquet file (its footer) is missing.")
    try:
        parquet = pq.ParquetFile(pa.BufferReader(raw))
        schema = parquet.schema_arrow
        # Text and bytes columns, whose dictionary pages may hold long values that few bytes of each row refer to.
        encoded = [
            f.name
            for f in schema
            if pa.types.is_string(f.type)
            or pa.types.is_large_string(f.type)
            or pa.types.is_binary(f.type)
            or pa.types.is_large_binary(f.type)
        ]
        # The same file with those columns kept dictionary-encoded: what they decode to is counted before decoding.
        encoded_file = pq.ParquetFile(pa.BufferReader(raw), read_dictionary=encoded) if encoded else None
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
    decoded = 0
    try:
        tables = []
        for i, group in enumerate(groups):
            # What the row group's values decode to, bounded from its metadata and the longest value of each
            # dictionary page (a dictionary-encoded row is a few bits that stand for a whole value): under the limit,
            # the row group is read as usual; over it, read encoded and its decoded bytes counted exactly.
            bound = _decoded_bound(encoded_file, i, group, encoded)
            limit = limits.max_decompressed_bytes
            if limit is None or decoded + bound <= limit:
                table = parquet.read_row_group(i)
                decoded += table.nbytes
            else:
                assert encoded_file is not None
                table = encoded_file.read_row_group(i)
                decoded += _decoded_bytes(table, encoded)
                limits.check("max_decompressed_bytes", decoded, label)
                table = _decoded(table, encoded)
            limits.check("max_decompressed_bytes", decoded, label)
            tables.append(table)
            deadline.check()
        table = pa.concat_tables(tables) if tables else schema.empty_table()
        return arrow_frame(table, deadline)
    except DataReadError:
        raise
    except Exception as exc:
        raise DataReadError(f"{label} could not be read as a Parquet file: {_reason(exc)}.") from exc


def _decoded_bound(encoded_file: Any, index: int, group: Any, encoded: Sequence[str]) -> int:
    """An upper bound of the bytes row group ``index`` decodes to: its declared size, plus for each column of
    ``encoded`` with a dictionary page its values times the longest value of that page (read from one row)."""
    import pyarrow.compute as pc

    bound = int(group.total_byte_size)
    chunks = {group.column(j).path_in_schema: group.column(j) for j in range(group.num_columns)}
    paged = [name for name in encoded if name in chunks and chunks[name].has_dictionary_page]
    if not paged or not group.num_rows:
        return bound
    first = next(encoded_file.iter_batches(batch_size=1, row_groups=[index], columns=paged), None)
    if first is None:
        return bound
    for name in paged:
        column = first.column(name)
        dictionary = column.dictionary if hasattr(column, "dictionary") else column
        longest = pc.max(pc.binary_length(dictionary)).as_py() if len(dictionary) else 0
        bound += int(chunks[name].num_values) * (int(longest or 0) + 8)
    return bound


def _decoded(table: Any, encoded: Sequence[str]) -> Any:
    """``table`` with its dictionary-encoded columns among ``encoded`` decoded (as a plain read gives them)."""
    import pyarrow as pa

    for name in encoded:
        position = table.schema.get_field_index(name)
        column = table.column(position)
        if pa.types.is_dictionary(column.type):
            table = table.set_column(position, name, column.cast(column.type.value_type))
    return table


def _decoded_bytes(table: Any, encoded: Sequence[str]) -> int:
    """The bytes ``table`` holds once its dictionary-encoded columns among ``encoded`` are decoded: each row's
    value length, summed (plus 8 bytes of offsets and validity per row); other columns as they are."""
    import pyarrow as pa
    import pyarrow.compute as pc

    total = 0
    for name, column in zip(table.column_names, table.columns, strict=True):
        if name in encoded and pa.types.is_dictionary(column.type):
            for chunk in column.chunks:
                lengths = pc.binary_length(chunk.dictionary).fill_null(0)
                used = pc.take(lengths, chunk.indices).fill_null(0)
                total += int(pc.sum(used.cast(pa.int64())).as_py() or 0) + 8 * len(chunk)
        else:
            total += column.nbytes
    return total


#: The names pandas gives an unnamed index it writes into a Parquet file (row labels, not data).
PANDAS_INDEX = re.compile(r"__index_level_\d+__")


def arrow_frame(table: Any, deadline: _Deadline | None = None) -> tuple[pd.DataFrame, list[str]]:
    """An Arrow table as the reader gives a Parquet file's columns (the other engines convert their typed results
    with it too, so that every engine gives the same values), and notes on columns kept as text.

    * Every column of the table is a column of the frame, in the table's order: a pandas index written with a name
      (``df.set_index('region').to_parquet()``) is the column it was, never dropped into the row labels; an unnamed
      pandas index (``__index_level_0__``: row labels of a filtered frame) is not data and is left out.
    * Decimal columns follow the numeric rules of delimited text, applied to their exact decimal text: float64
      when every value survives the conversion, int64 when every value is whole and none is missing, else text,
      so that decimals that differ in the last digit, or beyond a float's 17 digits, stay apart.
    * Bytes (binary columns) are text: decoded as UTF-8 when every value is valid UTF-8 (writers that store text as
      bytes), else each value in hexadecimal (``0x00ff``), with a note.
    * The other types convert as Arrow converts them to pandas, with the file's pandas metadata (text to pandas'
      ``str``, dictionary columns to categoricals, dates to ``datetime.date``...).
    """
    import pyarrow as pa

    decimals = [i for i, f in enumerate(table.schema) if pa.types.is_decimal(f.type)]
    for i in decimals:
        table = table.set_column(i, table.schema.field(i).name, _decimal_texts(table.column(i)))
    hexadecimal = []
    for i, f in enumerate(table.schema):
        if pa.types.is_binary(f.type) or pa.types.is_large_binary(f.type) or pa.types.is_fixed_size_binary(f.type):
            texts, decoded = _bytes_texts(table.column(i))
            table = table.set_column(i, f.name, texts)
            if not decoded:
                hexadecimal.append(f.name)
    frame = table.to_pandas()
    named = [name for name in frame.index.names if name is not None]
    if named:
        frame = frame.reset_index(level=named)
        order = [name for name in table.column_names if name in frame.columns]
        frame = frame[order + [name for name in frame.columns if name not in order]]
    if not isinstance(frame.index, pd.RangeIndex) or frame.index.start != 0 or frame.index.step != 1:
        frame.index = pd.RangeIndex(len(frame))
    notes = []
    if hexadecimal:
        many = len(hexadecimal) > 1
        notes.append(
            f"{'Columns' if many else 'Column'} {format_values(hexadecimal, 8)} {'hold' if many else 'holds'} bytes "
            "that are not UTF-8 text; each value is written in hexadecimal (0x and two digits a byte)."
        )
    if not decimals:
        return frame, notes
    positions = [frame.columns.get_loc(table.schema.field(i).name) for i in decimals]
    names = list(frame.columns)
    converted, numeric_notes = _numeric_conversions(
        lambda chosen: frame.iloc[:, chosen].to_numpy(dtype=object), positions, len(frame), names, deadline
    )
    for i in positions:
        frame.isetitem(i, converted[i] if i in converted else frame.iloc[:, i].astype(_TEXT_DTYPE))
    return frame, notes + numeric_notes


def _bytes_texts(column: Any) -> tuple[Any, bool]:
    """A column of bytes as text, and whether it was decoded: as UTF-8 when every value is valid UTF-8 (writers that
    store text as bytes), else each value in hexadecimal (``0x00ff``: never taken for a number), so that every value
    stays distinct and exact."""
    import pyarrow as pa
    import pyarrow.compute as pc

    plain = column.cast(pa.binary()) if pa.types.is_fixed_size_binary(column.type) else column
    try:
        return plain.cast(pa.large_string() if pa.types.is_large_binary(plain.type) else pa.string()), True
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        pass
    # Each distinct value written once, then spread to the rows.
    distinct = pc.unique(plain)
    written = pa.array([None if value is None else "0x" + value.hex() for value in distinct.to_pylist()], pa.string())
    return pc.take(written, pc.index_in(plain, value_set=distinct)), False


def _decimal_texts(column: Any) -> Any:
    """A decimal column as the exact text of each value, written without exponent (``0.000000000``, as databases
    write decimals; Arrow would write ``0E-9``)."""
    from decimal import Decimal

    import pyarrow as pa
    import pyarrow.compute as pc

    texts = column.cast(pa.string())
    scientific = pc.fill_null(pc.match_substring(texts, "E"), False)
    if not pc.any(scientific).as_py():
        return texts
    # Few values are written with an exponent (zeros and values under 1e-6, or a negative scale): each distinct one
    # is rewritten once.
    odd = pc.unique(pc.filter(texts, scientific))
    rewritten = pa.array([format(Decimal(text), "f") for text in odd.to_pylist()], pa.string())
    position = pc.index_in(texts, value_set=odd)
    return pc.if_else(scientific, pc.take(rewritten, pc.fill_null(position, 0)), texts)


# ------------------------------------------------------------------------------------------- SPSS, Stata and SAS

#: Format -> how messages name it.
_STATISTICAL_FORMATS = {
    "spss": "an SPSS data file",
    "stata": "a Stata data file",
    "sas7bdat": "a SAS data set (.sas7bdat)",
    "xport": "a SAS transport file (XPORT)",
}
_STATISTICAL_EXTENSIONS = {
    ".sav": "spss", ".zsav": "spss", ".dta": "stata", ".sas7bdat": "sas7bdat", ".xpt": "xport", ".xport": "xport",
}  # fmt: skip
#: What a file of each format starts with, for the messages on files that do not.
_STATISTICAL_SIGNATURES = {
    "spss": "$FL2 or $FL3",
    "stata": "a Stata header",
    "sas7bdat": "the SAS7BDAT signature",
    "xport": "a SAS transport library header",
}
_SAS7BDAT_MAGIC = bytes.fromhex("000000000000000000000000c2ea8160b31411cfbd92080009c7318c181f1011")
_XPORT_HEADERS = (
    b"HEADER RECORD*******LIBRARY HEADER RECORD!!!!!!!",
    b"HEADER RECORD*******LIBV8   HEADER RECORD!!!!!!!",
)
_CPORT = b"**COMPRESSED** **COMPRESSED**"
#: The pyreadstat function of each format.
_PYREADSTAT_READERS = {"spss": "read_sav", "stata": "read_dta", "sas7bdat": "read_sas7bdat", "xport": "read_xport"}
#: What pyreadstat reports (ReadStat's messages, or Python's decoding error) when text is not valid in its encoding.
_ENCODING_FAILURES = ("Unable to convert string to the requested encoding", "codec can't decode")
_UNKNOWN_ENCODING = "unsupported character set"
#: Read when the text is not valid in the declared encoding: the usual encoding of files written on Windows.
_FALLBACK_ENCODING = "WINDOWS-1252"
#: SPSS stores dates as seconds since 14 October 1582 (the eve of the Gregorian calendar).
_SPSS_EPOCH = np.datetime64("1582-10-14T00:00:00", "us")
#: How the notes name the missing values of each kind (one, several).
_MISSING_KINDS = {
    "system": ("system-missing value (.)", "system-missing values (.)"),
    "user": ("user-defined missing value", "user-defined missing values"),
    "tagged_stata": ("extended missing value (.a to .z)", "extended missing values (.a to .z)"),
    "tagged_sas": ("special missing value (.A to .Z, ._)", "special missing values (.A to .Z, ._)"),
    "empty": ("empty text", "empty texts"),
}


def _statistical_signature(raw: bytes) -> str | None:
    """The statistical format whose signature ``raw`` starts with (None for none)."""
    if raw[:4] in (b"$FL2", b"$FL3"):
        return "spss"
    # Stata 13 and later (format 117-119) start with an XML-like tag; versions 104-115 with a binary header: the
    # format's version, the byte order (1 or 2), the file type (1) and a zero byte.
    if raw.startswith(b"<stata_dta>") or (
        len(raw) >= 4 and 104 <= raw[0] <= 115 and raw[1] in (1, 2) and raw[2] == 1 and raw[3] == 0
    ):
        return "stata"
    if raw.startswith(_SAS7BDAT_MAGIC):
        return "sas7bdat"
    if raw.startswith(_XPORT_HEADERS):
        return "xport"
    return None


def _detect_statistical(raw: bytes, suffix: str, label: str) -> tuple[str, list[str]] | None:
    """The statistical format of ``raw`` and a note when its extension says otherwise; None when it is not one.

    A file whose extension is statistical but whose content is not is refused, unless it has another signature
    (Parquet, ZIP, gzip, OLE2), which the general rules then handle.
    """
    kind = _statistical_signature(raw)
    expected = _STATISTICAL_EXTENSIONS.get(suffix)
    if kind is not None:
        if expected == kind or not suffix:
            return kind, []
        what = _STATISTICAL_FORMATS[kind]
        return kind, [f"{label} is {what} despite its extension '{suffix}'; it was read as {what}."]
    if expected is None or raw.startswith((b"PAR1", *_ZIP, _OLE2, _GZIP)):
        return None
    if raw.startswith(_CPORT):
        raise DataReadError(
            f"{label} is a SAS CPORT file (written by PROC CPORT), which cannot be read; export the data set as a "
            "transport file with the XPORT engine (or PROC EXPORT to CSV) instead."
        )
    raise DataReadError(
        f"{label} is not {_STATISTICAL_FORMATS[expected]} (it does not start with "
        f"{_STATISTICAL_SIGNATURES[expected]}){_looks_like(raw)}."
    )


def _encoding_not_applicable(label: str, encoding: str) -> str:
    return (
        f"{label} is not an SPSS, Stata or SAS file, so encoding='{encoding}' does not apply; the encoding of a "
        "delimited text file is detected from its content."
    )


@dataclass(frozen=True)
class _Statistical:
    """A statistical file read: the table, the notes about it, the encoding of its text (when known)."""

    frame: pd.DataFrame
    notes: list[str]
    encoding: str | None


def _read_statistical(
    raw: bytes, kind: str, label: str, limits: ReadLimits, deadline: _Deadline, encoding: str | None
) -> _Statistical:
    """Read the metadata, check the limits on it, read no more rows than the limits allow, then type the columns.

    pyreadstat runs in a worker process (:mod:`privdash.data._readstat_worker`): a crash of its C parser on a
    damaged file, or the time limit, ends that process only.
    """
    if encoding is not None and (not isinstance(encoding, str) or not encoding.strip()):
        raise ParameterError(f"encoding must be the name of a character encoding, got {encoding!r}.")
    options: dict[str, Any] = {}
    if kind != "xport":  # XPORT has no user-defined or tagged missing values to keep
        options["user_missing"] = True
    with _Readstat(raw, kind, label, limits, deadline) as readstat:
        given = encoding is not None
        _, meta, used, notes = _readstat_read(readstat, encoding, given=given, metadataonly=True, **options)
        # The data is read as the header was: in the encoding given, or in the fallback when the declared one failed.
        chosen = encoding if encoding is not None or not notes else _FALLBACK_ENCODING
        names = [str(name) for name in (meta["column_names"] or [])]
        limits.check("max_columns", len(names), label)
        repeated = [f"'{name}' ({count} times)" for name, count in Counter(names).items() if count > 1]
        if repeated:
            raise DataReadError(f"{label} has duplicate variable names: {', '.join(repeated[:8])}.")
        if not names:
            return _Statistical(pd.DataFrame(), notes, used)
        widths = meta["variable_storage_width"] or {}
        row_bytes = sum(max(int(widths.get(name) or 8), 1) for name in names)
        declared = meta["number_rows"]
        known = isinstance(declared, int) and declared >= 0
        if not known and kind in ("stata", "sas7bdat"):  # their headers always give it (SPSS's and XPORT's may not)
            raise DataReadError(f"{label} does not declare a valid number of rows: it is truncated or damaged.")
        if known:
            if declared * _smallest_row(raw, kind, len(names)) > len(raw):
                raise DataReadError(
                    f"{label} declares {declared:,} rows, more than its {len(raw):,} bytes can hold: it is truncated "
                    "or damaged."
                )
            limits.check("max_rows", declared, label)
            limits.check("max_cells", declared * len(names), label)
            if declared * row_bytes > len(raw):  # compressed: its rows expand to more than the file
                limits.check("max_decompressed_bytes", declared * row_bytes, label)
        caps = _row_caps(limits, len(names), row_bytes, len(raw))
        row_limit = min(caps.values()) if caps else 0
        # pyreadstat makes room for as many rows as it may read: no more than the file declares (one more shows a
        # file holding more than it declares).
        read_limit = min(row_limit or declared + 1, declared + 1) if known else row_limit
        data, meta, used, more_notes = _readstat_read(readstat, chosen, given=given, row_limit=read_limit, **options)
    notes += [note for note in more_notes if note not in notes]
    n_rows = len(next(iter(data.values()))) if data else 0
    if row_limit and n_rows >= row_limit:
        limit = next(name for name, cap in caps.items() if cap == row_limit)
        if limit == "max_decompressed_bytes":
            raise limits.exceeded(limit, label, n_rows * row_bytes)
        raise limits.exceeded(limit, label, None, more=True)
    if list(data) != names or any(len(values) != n_rows for values in data.values()):
        raise DataReadError(f"{label} is damaged: its variables are not the ones its metadata lists.")
    frame, frame_notes = _statistical_frame(data, meta, kind, label, n_rows)
    return _Statistical(frame, notes + frame_notes, used)


def _smallest_row(raw: bytes, kind: str, n_columns: int) -> int:
    """The fewest bytes a row of ``n_columns`` variables takes in the file; 0 when its data may be compressed without
    bound (zlib in .zsav, SAS's compression). A Stata or SAS value takes at least a byte; an SPSS value 8 bytes, or
    one byte (its code) under SPSS's bytecode compression, which the header's compression field (offset 72) says.
    A compressed SAS data set names its method (``SASYZCRL``, ``SASYZCR2``) in its metadata."""
    if kind == "stata" or (kind == "sas7bdat" and b"SASYZCR" not in raw):
        return n_columns
    if kind == "spss" and len(raw) >= 76:
        little = raw[64:68] in (b"\x02\x00\x00\x00", b"\x03\x00\x00\x00")
        compression = int.from_bytes(raw[72:76], "little" if little else "big")
        return {0: 8 * n_columns, 1: n_columns}.get(compression, 0)
    return 0


def _row_caps(limits: ReadLimits, n_columns: int, row_bytes: int, n_bytes: int) -> dict[str, int]:
    """Limit name -> the number of rows whose reading shows that the limit is passed (one over it)."""
    caps = {}
    if limits.max_rows is not None:
        caps["max_rows"] = limits.max_rows + 1
    if limits.max_cells is not None:
        caps["max_cells"] = limits.max_cells // n_columns + 1
    if limits.max_decompressed_bytes is not None:
        # An uncompressed file's rows fit in the file: only compressed rows can pass the larger of the two.
        caps["max_decompressed_bytes"] = max(limits.max_decompressed_bytes, n_bytes) // row_bytes + 1
    return caps


class _ReaderFailure(Exception):
    """A pyreadstat call raised: the exception's type name and message (it was raised in the worker process)."""

    def __init__(self, name: str, message: str) -> None:
        super().__init__(message)
        self.name = name
        self.message = message


#: Idle worker processes, kept for the next reads (at most ``_MAX_IDLE_WORKERS``; reads running at the same time
#: start more, which end after their read).
_IDLE_WORKERS: list[_Worker] = []
_WORKERS_LOCK = threading.Lock()
_MAX_IDLE_WORKERS = 2
#: A worker that read a file up to this size is kept for the next read (a larger read's memory is returned).
_REUSE_BYTES = 8 << 20


class _Worker:
    """A worker process running :mod:`privdash.data._readstat_worker`, with a thread that collects its
    answers (so that waiting for one can time out, and the worker never blocks writing a large answer)."""

    def __init__(self) -> None:
        import queue
        import subprocess
        import sys

        from privdash.data import _readstat_worker

        if not sys.executable:
            raise OSError("no Python executable to start a worker process with")
        # -P: the script's folder (this package's) is not put on the worker's module path, so no module of the
        # package can stand in for one the worker imports.
        self.process = subprocess.Popen(
            [sys.executable, "-P", _readstat_worker.__file__],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        self.owner = os.getpid()  # a forked copy of this process must not share the worker's pipes
        self.answers: queue.Queue[bytes | None] = queue.Queue()
        threading.Thread(target=self._collect, daemon=True).start()

    def _collect(self) -> None:
        from privdash.data._readstat_worker import read_frame

        assert self.process.stdout is not None
        while True:
            try:
                payload = read_frame(self.process.stdout)
            except (OSError, ValueError):  # the pipe was closed by stop()
                payload = None
            self.answers.put(payload)
            if payload is None:
                return

    def request(self, value: object, timeout: float | None) -> tuple[Any, ...] | None:
        """The worker's answer to ``value``; None when it ended (crashed) before answering. Raises TimeoutError."""
        import queue

        from privdash.data._readstat_worker import write_frame

        assert self.process.stdin is not None
        try:
            write_frame(self.process.stdin, value)
        except OSError:  # a broken pipe: the worker has ended
            return None
        try:
            payload = self.answers.get(timeout=timeout)
        except queue.Empty:
            raise TimeoutError from None
        if payload is None:
            return None
        try:
            return _worker_answer(payload)
        except Exception:  # not an answer the worker writes: it is not to be trusted any more
            self.stop()
            return None

    def exit_code(self) -> int | None:
        import subprocess

        try:
            return self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:  # still running after its output ended: it is stopped anyway
            return None

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        for stream in (self.process.stdin, self.process.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()


def _stop_idle_workers() -> None:
    with _WORKERS_LOCK:
        workers = list(_IDLE_WORKERS)
        _IDLE_WORKERS.clear()
    for worker in workers:
        worker.stop()


atexit.register(_stop_idle_workers)


def _worker_answer(payload: bytes) -> tuple[Any, ...]:
    """Unpickle a worker's answer, allowing only the types it sends (plain values, numpy arrays, dates), so that a
    worker subverted by a malicious file cannot have this process run code."""
    import pickle

    allowed = {
        ("collections", "OrderedDict"),
        ("datetime", "date"),
        ("datetime", "datetime"),
        ("datetime", "time"),
        ("numpy", "dtype"),
        ("numpy", "ndarray"),
        ("numpy.core.multiarray", "_reconstruct"),
        ("numpy._core.multiarray", "_reconstruct"),
        ("numpy.core.numeric", "_frombuffer"),
        ("numpy._core.numeric", "_frombuffer"),
    }

    class Unpickler(pickle.Unpickler):
        def find_class(self, module: str, name: str) -> Any:
            if (module, name) not in allowed:
                raise pickle.UnpicklingError(f"unexpected {module}.{name} in a worker's answer")
            return super().find_class(module, name)

    answer = Unpickler(io.BytesIO(payload)).load()
    assert isinstance(answer, tuple)
    return answer


class _Readstat:
    """pyreadstat calls on one file's bytes, in a worker process (in this process when none can be started)."""

    def __init__(self, raw: bytes, kind: str, label: str, limits: ReadLimits, deadline: _Deadline) -> None:
        self.raw = raw
        self.kind = kind
        self.label = label
        self.limits = limits
        self.deadline = deadline
        self.worker: _Worker | None = None
        self.healthy = False

    def __enter__(self) -> _Readstat:
        self.deadline.check()
        with _WORKERS_LOCK:
            idle = _IDLE_WORKERS.pop() if _IDLE_WORKERS else None
        if idle is not None and idle.owner != os.getpid():  # started by the process this one was forked from
            idle = None
        # An idle worker that has ended since is replaced by a new one; a new one that ends before it has read
        # anything cannot run here (no Python, or no pyreadstat, for it): then the file is read in this process.
        for worker in (idle, None):
            try:
                worker = worker or _Worker()
            except OSError:
                return self
            try:
                answer = worker.request(("open", self.raw), self._remaining())
            except TimeoutError:
                worker.stop()
                raise self.limits.exceeded("max_seconds", self.label, None) from None
            if answer is not None:
                self.worker, self.healthy = worker, True
                return self
            worker.stop()
        return self

    def __exit__(self, *exc_info: object) -> None:
        worker, self.worker = self.worker, None
        if worker is None:
            return
        if self.healthy and len(self.raw) <= _REUSE_BYTES and worker.process.poll() is None:
            with _WORKERS_LOCK:
                if len(_IDLE_WORKERS) < _MAX_IDLE_WORKERS:
                    _IDLE_WORKERS.append(worker)
                    return
        worker.stop()

    def call(self, **options: Any) -> tuple[Mapping[str, Any], dict[str, Any]]:
        """The data and metadata pyreadstat reads with ``options``; raises :class:`_ReaderFailure` when it fails."""
        from privdash.data._readstat_worker import call

        reader = _PYREADSTAT_READERS[self.kind]
        # The time left is checked before and after each call: a call that ends as the time is up stops reading too
        # (a worker's answer may be there before the wait for it starts).
        self.deadline.check()
        answer = call(self.raw, reader, options) if self.worker is None else self._ask(("call", reader, options))
        self.deadline.check()
        if answer[0] == "error":
            raise _ReaderFailure(str(answer[1]), str(answer[2]))
        data, meta = answer[1], answer[2]
        assert isinstance(data, Mapping) and isinstance(meta, dict)
        return data, meta

    def _remaining(self) -> float | None:
        end = self.deadline.end
        return None if end is None else max(end - time.monotonic(), 0.0)

    def _ask(self, request: object) -> tuple[Any, ...]:
        assert self.worker is not None
        try:
            answer = self.worker.request(request, self._remaining())
        except TimeoutError:
            self.healthy = False
            raise self.limits.exceeded("max_seconds", self.label, None) from None
        if answer is None:
            self.healthy = False
            code = self.worker.exit_code()
            signal = f" with signal {-code}" if code is not None and code < 0 else ""
            raise DataReadError(
                f"{self.label} could not be read as {_STATISTICAL_FORMATS[self.kind]}: the file is damaged (its "
                f"parser stopped on its content{signal})."
            )
        return answer


def _readstat_read(
    readstat: _Readstat, encoding: str | None, *, given: bool, **options: Any
) -> tuple[Mapping[str, Any], dict[str, Any], str | None, list[str]]:
    """The data and metadata of one read, the encoding of the text, and a note when ``encoding`` is None (the
    declared one) and failed, and Windows-1252 was used instead. ``given``: the caller chose ``encoding`` (else it
    is None, or the fallback that the header needed). Every failure of the parser is a :class:`DataReadError` with a
    specific message."""
    label = readstat.label
    what = _STATISTICAL_FORMATS[readstat.kind]
    try:
        data, meta = _readstat_call(readstat, encoding, options)
        return data, meta, encoding or meta["file_encoding"], []
    except _EncodingFailure as failure:
        if given:
            raise DataReadError(
                f"{label}: its text is not valid {encoding}, the encoding given ({failure.reason}); give the "
                "encoding it was written in."
            ) from None
        reason = failure.reason
    except _UnknownEncoding:
        if given:
            raise ParameterError(
                f"encoding='{encoding}' is not a character encoding the reader knows; use an iconv name such as "
                "'UTF-8', 'WINDOWS-1252' or 'ISO-8859-15'."
            ) from None
        raise DataReadError(
            f"{label} declares a character encoding the reader does not know; give its encoding (encoding=...)."
        ) from None
    except _ParserFailure as failure:
        raise DataReadError(f"{label} could not be read as {what}: {failure.reason}.") from None
    declared = _declared_encoding(readstat) or "UTF-8"
    if encoding is None:
        try:
            data, meta = _readstat_call(readstat, _FALLBACK_ENCODING, options)
        except (_EncodingFailure, _UnknownEncoding) as failure:
            reason = str(failure)
        except _ParserFailure as failure:
            raise DataReadError(f"{label} could not be read as {what}: {failure.reason}.") from None
        else:
            note = (
                f"{label}: its text is not valid {declared}, the encoding it declares; it was read as Windows-1252. "
                "If names or labels look wrong, give the encoding it was written in (encoding=...)."
            )
            return data, meta, _FALLBACK_ENCODING, [note]
    raise DataReadError(
        f"{label}: its text is valid neither in {declared}, the encoding it declares, nor in Windows-1252 "
        f"({reason}); give the encoding it was written in (encoding=...)."
    )


class _EncodingFailure(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class _UnknownEncoding(Exception):
    pass


class _ParserFailure(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _readstat_call(
    readstat: _Readstat, encoding: str | None, options: Mapping[str, Any]
) -> tuple[Mapping[str, Any], dict[str, Any]]:
    """One pyreadstat call, its failures sorted: text not valid in the encoding, an unknown encoding, or a parser
    failure worded for the user."""
    try:
        return readstat.call(encoding=encoding, **options)
    except _ReaderFailure as failure:
        text = _reason(failure)
        if failure.name == "MemoryError":
            raise DataReadError(f"{readstat.label} is too large to read into memory.") from None
        if failure.name == "UnicodeDecodeError" or any(marker in text for marker in _ENCODING_FAILURES):
            raise _EncodingFailure(text) from None
        if _UNKNOWN_ENCODING in text:
            raise _UnknownEncoding(text) from None
        if failure.name == "OverflowError":
            raise _ParserFailure(
                f"it holds a date outside the years 1 to 9999, which cannot be represented, or it is damaged ({text})"
            ) from None
        if failure.name in ("ReadstatError", "PyreadstatError"):
            raise _ParserFailure(f"it is truncated or damaged ({text})") from None
        raise _ParserFailure(f"it is damaged ({failure.name}: {text})") from None


def _declared_encoding(readstat: _Readstat) -> str | None:
    """The encoding the file declares, from its header read with every text taken as Windows-1252 (where any byte
    is valid, so the header reads whatever its text)."""
    try:
        meta = readstat.call(metadataonly=True, encoding=_FALLBACK_ENCODING)[1]
    except _ReaderFailure:  # the header itself is damaged: the message does without the declared encoding
        return None
    declared = meta["file_encoding"]
    return str(declared) if declared and str(declared).upper() != _FALLBACK_ENCODING else None


def _statistical_frame(
    data: Mapping[str, Any], meta: Mapping[str, Any], kind: str, label: str, n_rows: int
) -> tuple[pd.DataFrame, list[str]]:
    """The typed columns of a statistical file's values (see the module docstring), and the notes on what changed.

    ``data`` maps each variable to its values: a float64 array (numbers, NaN for missing values), or the objects
    pyreadstat gives (texts, dates, times, numbers, the tags of missing values, None for missing values).
    """
    types = meta["readstat_variable_types"] or {}
    ranges = meta["missing_ranges"] or {}
    tags = meta["missing_user_values"] or {}
    value_labels = meta["variable_value_labels"] or {}
    tagged_kind = "tagged_sas" if kind in ("sas7bdat", "xport") else "tagged_stata"
    counts: dict[str, list[tuple[str, int]]] = {name: [] for name in _MISSING_KINDS}
    labelled: list[str] = []
    kept: list[tuple[str, int]] = []
    merged: list[str] = []
    columns: dict[int, Any] = {}
    for position, (name, values) in enumerate(data.items()):  # one pass per column, vectorized within it
        numeric = isinstance(values, np.ndarray) and values.dtype == np.float64
        column = values.copy() if numeric else np.asarray(values, dtype=object)
        found: dict[str, np.ndarray] = {}
        if name in tags:
            found[tagged_kind] = pd.Series(column, dtype=object).isin(list(tags[name])).to_numpy(dtype=bool)
            column[found[tagged_kind]] = None
        absent = pd.isna(column)
        if types.get(name) == "string" and not numeric:
            found["system"] = absent
            found["empty"] = column == ""
            found["user"] = _user_missing_texts(column, ranges.get(name, ()))
            column[found["empty"] | found["user"]] = None
            typed: Any = column
            codes: Any = column
        else:
            found["system"] = absent & ~found.get(tagged_kind, np.zeros(n_rows, dtype=bool))
            typed, codes, user = _typed_values(column, ranges.get(name, ()))
            found["user"] = user
        for missing_kind, mask in found.items():
            count = int(np.count_nonzero(mask))
            if count:
                counts[missing_kind].append((name, count))
        labels = value_labels.get(name)
        if labels:
            applied = _apply_labels(codes, labels)
            if applied is not None:
                typed, unlabelled, merge = applied
                labelled.append(name)
                if unlabelled:
                    kept.append((name, unlabelled))
                if merge:
                    merged.append(f"in '{name}', {merge}")
        columns[position] = typed
    frame = pd.DataFrame(columns, index=pd.RangeIndex(n_rows))
    names, notes = _column_names(list(data), label)
    frame.columns = pd.Index(names)
    notes += _statistical_notes(label, counts, labelled, kept, merged)
    return frame, notes


def _user_missing_texts(column: np.ndarray, ranges: Sequence[Mapping[str, Any]]) -> np.ndarray:
    """The texts that SPSS declares missing (a string variable's missing values are single values)."""
    texts = {bound for limits in ranges for bound in (limits.get("lo"), limits.get("hi")) if isinstance(bound, str)}
    if not texts:
        return np.zeros(len(column), dtype=bool)
    return np.asarray(pd.Series(column, dtype=object).isin(sorted(texts)), dtype=bool)


def _typed_values(column: np.ndarray, ranges: Sequence[Mapping[str, Any]]) -> tuple[Any, Any, np.ndarray]:
    """A numeric, date or time variable's values (tagged missing values already removed): the typed column, the
    codes that value labels apply to (the numbers; None for dates and times), and the user-defined missing values
    (SPSS's ranges, compared with the stored numbers: seconds for dates and times)."""
    inferred = "floating" if column.dtype == np.float64 else pd.api.types.infer_dtype(column, skipna=True)
    bounds = [
        (float(limits["lo"]), float(limits["hi"]))
        for limits in ranges
        if isinstance(limits.get("lo"), int | float) and isinstance(limits.get("hi"), int | float)
    ]
    if inferred in ("floating", "integer", "mixed-integer-float", "empty"):
        numbers = column.astype(np.float64)
        stored = numbers
    elif inferred in ("date", "datetime", "datetime64"):
        dates = pd.to_datetime(pd.Series(column, dtype=object)).astype("datetime64[us]")
        stored = ((dates.to_numpy() - _SPSS_EPOCH) / np.timedelta64(1, "s")).astype(np.float64)
        numbers = None
    elif inferred == "time":
        present = ~pd.isna(column)
        stored = np.full(len(column), np.nan)
        times = pd.Series(column[present], dtype=object).astype(str)
        stored[present] = pd.to_timedelta(times).dt.total_seconds().to_numpy()
        numbers = None
    else:
        raise DataReadError(f"a variable holds values of mixed types ({inferred}); the file is damaged")
    user = np.zeros(len(column), dtype=bool)
    for low, high in bounds:
        user |= (stored >= low) & (stored <= high)
    if numbers is not None:
        numbers[user] = np.nan
        complete = not np.isnan(numbers).any()
        with np.errstate(invalid="ignore"):  # infinities: not whole
            whole = complete and bool(((np.mod(numbers, 1) == 0) & (np.abs(numbers) < 2.0**63)).all())
        if whole and len(numbers):
            return numbers.astype(np.int64), numbers, user
        return numbers, numbers, user
    if inferred == "time":
        column[user] = None
        return column, None, user
    moments = dates.to_numpy(copy=True)
    moments[user] = np.datetime64("NaT")
    return moments, None, user


def _apply_labels(codes: Any, labels: Mapping[Any, Any]) -> tuple[np.ndarray, int, str] | None:
    """``codes`` (numbers, or texts) with their labels in place of them, as text; None when no present code has a
    label. Also: the number of values without a label (kept, as text), and a description of the codes that became
    one value (two codes with one label, or a label equal to an unlabelled code), empty when none did."""
    if codes is None:
        return None
    series = pd.Series(codes)
    numeric = pd.api.types.is_float_dtype(series.dtype)
    mapping: dict[Any, str]
    if numeric:
        mapping = {float(code): str(text) for code, text in labels.items() if isinstance(code, int | float)}
    else:
        mapping = {code: str(text) for code, text in labels.items() if isinstance(code, str)}
    named = series.map(mapping)
    present = series.notna().to_numpy()
    has_label = named.notna().to_numpy()
    if not has_label.any():
        return None
    out = named.to_numpy(dtype=object)
    unlabelled = present & ~has_label
    if unlabelled.any():
        out[unlabelled] = _code_texts(series[unlabelled].to_numpy()) if numeric else series[unlabelled].to_numpy()
    pairs = pd.DataFrame({"code": series[present].to_numpy(), "value": out[present]}).drop_duplicates()
    shared = pairs[pairs["value"].duplicated(keep=False)]
    merge = ""
    if len(shared):
        value = shared["value"].iloc[0]
        joined = format_values([_code_text(code) for code in shared.loc[shared["value"] == value, "code"]])
        merge = f"the codes {joined} became the one value '{value}'"
        others = shared["value"].nunique() - 1
        if others:
            merge += f" (and {others} more value{'s' if others > 1 else ''} likewise)"
    return out, int(np.count_nonzero(unlabelled)), merge


def _code_texts(numbers: np.ndarray) -> np.ndarray:
    """Numbers as texts: whole numbers without a decimal point (``3``), others as their shortest form (``2.5``)."""
    numbers = numbers.astype(np.float64)
    with np.errstate(invalid="ignore"):  # infinities: not whole
        whole = np.isfinite(numbers) & (np.mod(numbers, 1) == 0) & (np.abs(numbers) < 2.0**63)
    texts = numbers.astype(str).astype(object)
    texts[whole] = numbers[whole].astype(np.int64).astype(str)
    return texts


def _code_text(code: object) -> object:
    return _code_texts(np.array([code]))[0] if isinstance(code, float) else code


def _statistical_notes(
    label: str,
    counts: Mapping[str, list[tuple[str, int]]],
    labelled: list[str],
    kept: list[tuple[str, int]],
    merged: list[str],
) -> list[str]:
    notes = []
    if labelled:
        note = (
            f"{label}: the value labels of {format_values(labelled, 8)} were applied: "
            f"{'that column holds' if len(labelled) == 1 else 'those columns hold'} the labels in place of the codes."
        )
        if kept:
            note += f" Codes without a label were kept as they are, as text (values: {_column_counts(kept)})."
        notes.append(note)
    notes += [f"{label}: {text}." for text in merged]
    parts = []
    for kind, columns in counts.items():
        count = sum(found for _, found in columns)
        if count:
            parts.append(f"{count:,} {_MISSING_KINDS[kind][count > 1]} in {_column_counts(columns)}")
    if parts:
        total = sum(count for columns in counts.values() for _, count in columns)
        notes.append(f"{label}: {total:,} values the file marks as missing were read as missing: {'; '.join(parts)}.")
    return notes


def _column_counts(columns: list[tuple[str, int]], limit: int = 5) -> str:
    """``'age' (3), 'sex' (1) and 2 more columns``."""
    shown = ", ".join(f"'{name}' ({count:,})" for name, count in columns[:limit])
    more = len(columns) - limit
    return shown + (f" and {more} more column{'s' if more > 1 else ''}" if more > 0 else "")


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
        header = "a header" if info.format in ("csv", "excel") else "columns"
        raise DataReadError(f"{label} has {header} but no data rows.{others}")
    if frame.isna().all().all() if all_missing is None else all_missing:
        raise DataReadError(f"{label}: every value is missing.{others}")
    unnamed = [c for c in frame.columns if not c or str(c).startswith("Unnamed:")]
    if unnamed and len(unnamed) == frame.shape[1]:
        raise DataReadError(f"{label} has no header row with column names.{others}")


def header_names(path: Path, encoding: str, delimiter: str) -> list[str]:
    """The column names :func:`read_table` gives a delimited text file's header (its first record that is not
    blank: names stripped, ``Unnamed: i`` for an empty one, ``a.1`` for a repeat), parsed from the start of the file
    in Python. Engines that read the file themselves name its columns with these: a header read by the engine
    (``LIMIT 1`` of a parallel scan) may be any row of the file."""
    return header_record(path, encoding, delimiter)[0]


def header_record(path: Path, encoding: str, delimiter: str) -> tuple[list[str], int]:
    """:func:`header_names`, and the number of lines before the header (blank lines, which the reader skips and an
    engine may take for the header)."""
    size = 1 << 16
    with path.open("rb") as handle:
        while True:
            handle.seek(0)
            sample = handle.read(size)
            complete = len(sample) < size
            end = sample.rfind(b"\n") + 1
            if not complete and end:
                sample = sample[:end]  # whole lines: the last may be cut, in a multi-byte character too
            if sample.startswith((b"\xff\xfe", b"\xfe\xff")) and len(sample) % 2:
                sample = sample[:-1]
            codec = "utf-8-sig" if encoding.replace("_", "-").lower() == "utf-8" else encoding
            text = sample.decode(codec, errors="replace")
            reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, skipinitialspace=True)
            record: list[str] | None = None
            before = 0
            try:
                for row in reader:
                    if len(row) > 1 or (row and row[0].strip()):
                        record = row
                        break
                    before = reader.line_num
            except csv.Error as exc:
                if complete:
                    raise DataReadError(f"{path.name} has no readable header: {exc}.") from exc
            # The record is whole when lines follow it (or the file ended): else read a larger start.
            if record is not None and (complete or reader.line_num <= text.count("\n")):
                return _column_names(record, path.name)[0], before
            if complete:
                raise DataReadError(f"{path.name} has no columns.")
            size *= 4


def sniff_delimited(sample: bytes, name: str | None = None) -> tuple[str, str]:
    """The encoding and the delimiter :func:`read_table` would use for a delimited text file that starts with
    ``sample`` (its first megabyte or so): engines that stream the file read it with the same two choices."""
    end = sample.rfind(b"\n") + 1
    cut = sample[:end] if end else sample  # a sample may end inside a multi-byte character
    if cut.startswith((b"\xff\xfe", b"\xfe\xff")) and len(cut) % 2:
        cut = cut[:-1] if cut.startswith(b"\xfe\xff") else sample[: end + 1]
    text, encoding = _decode(cut, name or "The file")
    return encoding, _detect_delimiter(text)
