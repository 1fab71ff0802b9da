"""Excel workbooks (.xlsx, .xlsm): the sheet to read, streamed rows under the limits, merged ranges, and formulas
without saved values refused (rules in :mod:`privdash.data.tables`)."""

from __future__ import annotations

import io
import operator
import re
import struct
import warnings
import zipfile
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from difflib import get_close_matches
from functools import partial
from itertools import takewhile, zip_longest
from typing import Any

import numpy as np
import pandas as pd

from privdash.data.tables.common import _NA_MARKERS, _column_names, _reason
from privdash.data.tables.limits import EXCEL_MAX_COLUMNS, EXCEL_MAX_ROWS, ReadLimits, _Deadline
from privdash.data.tables.numbers import _infer_numeric
from privdash.errors import DataReadError, ParameterError, format_values

#: Worksheet rows streamed between two checks of the time limit.
_EXCEL_ROWS_PER_CHECK = 2_000
#: What openpyxl returns for a cell holding a formula error.
_EXCEL_ERRORS = frozenset({"#NULL!", "#DIV/0!", "#VALUE!", "#REF!", "#NAME?", "#NUM!", "#N/A", "#GETTING_DATA"})


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
