"""Delimited text (CSV, TSV ...): decoding, the delimiter, and parsing with Arrow's CSV reader or, for the shapes
it reads otherwise, pandas' C parser (the reference); both give the same frame and notes (rules in
:mod:`privdash.data.tables`)."""

from __future__ import annotations

import csv
import functools
import io
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from privdash._threads import map_beside
from privdash.data.tables.common import _NA_MARKERS, _column_names, _reason
from privdash.data.tables.limits import ReadLimits, _Deadline
from privdash.data.tables.numbers import (
    _CHUNK_CELLS,
    _FIRST_NUMBER,
    _TEXT_DTYPE,
    _matches,
    _numeric_conversions,
    _numeric_notes,
    _settle_numbers,
    _text_bytes,
)
from privdash.errors import DataReadError

__all__ = ["header_names", "header_record", "sniff_delimited"]


_DELIMITERS = (",", ";", "\t", "|")
_SNIFF_BYTES = 1 << 20
#: Rows a chunk of CSV holds at least (a chunk is about ``_CHUNK_CELLS`` cells): per-column costs would dominate
#: thinner chunks of a wide table.
_CHUNK_MIN_ROWS = 200


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
    raw: bytes, label: str, limits: ReadLimits, deadline: _Deadline, columns: Sequence[str] | None = None
) -> tuple[pd.DataFrame, list[str], bool, str, int] | None:
    """Delimited UTF-8 text parsed by Arrow's multi-threaded CSV reader, with the rules and results of
    :func:`_read_text` (the reference) at a fraction of its time and memory: returns the frame, the notes, whether
    every value is missing (of the columns read), the delimiter and the file's number of columns.

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

    ``columns`` (names as the reader names the header's fields): only these columns are parsed and settled, in the
    file's order (Arrow's ``include_columns``: the other fields are skipped, not converted); the header is parsed
    first from the sniffed text and must agree with what Arrow reads, else every column is read. ``None``, or a
    name the header does not hold: every column.
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
    width = file_width = _header_width(head, delimiter)
    # Over the column limit, or a header longer than the sniffed text: the reference counts and says how many.
    if width < 2 or (limits.max_columns is not None and width > limits.max_columns):
        return None
    chosen = _chosen_positions(head, delimiter, width, label, columns) if columns is not None else None
    # The last column is always read: its last value tells whether the file ends in an open quote.
    positions = None if chosen is None else sorted({*chosen.fields, width - 1})
    table = _arrow_strings(raw, start, delimiter, width, label, limits, deadline, positions)
    if table is None or table.num_rows < 2 or _ends_in_open_quote(raw, table.column(table.num_columns - 1)[-1].as_py()):
        return None
    if chosen is not None and positions is not None:
        if width - 1 not in chosen.fields:
            table = table.remove_column(table.num_columns - 1)
        header = [str(table.column(k)[0].as_py()) for k in range(table.num_columns)]
        if header != list(chosen.fields.values()):  # Arrow read the header otherwise: every column is read
            return _read_text_arrow(raw, label, limits, deadline)
        names, notes = chosen.names, chosen.notes
    else:
        header = [str(table.column(i)[0].as_py()) for i in range(width)]
        if any(_SPACED_QUOTE.match(name) for name in header):
            return None
        names, notes = _column_names(header, label)
    data = table.slice(1)
    width = data.num_columns
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
        settled = map_beside(lambda i: _settle_text_column(data.column(i)), range(width))
        deadline.check()
        if any(column is None for column in settled):
            return None
        columns = _typed_columns([column for column in settled if column is not None], names, kept)
        all_missing = all(not len(column.present) for column in settled if column is not None)
    frame = pd.DataFrame(dict(enumerate(columns)), index=pd.RangeIndex(data.num_rows), copy=False)
    frame.columns = pd.Index(names)
    return frame, notes + _numeric_notes(kept, names), all_missing, delimiter, file_width


def _ends_in_open_quote(raw: bytes, last: str) -> bool:
    """Whether the file's last value is a quote never closed (Arrow ends it at the end of the file; pandas refuses
    it). Only the last value of the last row can be one: an open quote anywhere else swallows the fields after it,
    and Arrow rejects the shortened row. A closed last value is followed by its closing quote, an unquoted one
    is preceded by a delimiter or a line break: neither file ends with a quote and then the value."""
    return raw.endswith(b'"' + last.replace('"', '""').encode("utf-8"))


#: A field Arrow read as text that pandas would read as quoted: spaces, then a quote.
_SPACED_QUOTE = re.compile(r' +"')


def _arrow_strings(
    raw: bytes,
    start: int,
    delimiter: str,
    width: int,
    label: str,
    limits: ReadLimits,
    deadline: _Deadline,
    chosen: Sequence[int] | None = None,
) -> Any:
    """Every row (the header first) as a table of ``width`` large-string columns (only those at the ``chosen``
    positions when given), read in batches with the row, cell and time limits checked between them; ``None`` when
    Arrow rejects the text."""
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
        include_columns=[names[i] for i in chosen] if chosen is not None else None,
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
class _Chosen:
    """The chosen columns of a header: position -> the header's field, the names of those columns as the reader
    names them (in the file's order), and the notes on the whole header's names."""

    fields: dict[int, str]
    names: list[str]
    notes: list[str]


def _chosen_positions(head: str, delimiter: str, width: int, label: str, columns: Sequence[str]) -> _Chosen | None:
    """Where the columns named ``columns`` are in the header parsed from the sniffed text ``head`` (``None`` when a
    name is not in it, or the header cannot be parsed there: every column is read then)."""
    record = _header_fields(head, delimiter)
    if record is None or len(record) != width or any(_SPACED_QUOTE.match(field) for field in record):
        return None
    names, notes = _column_names(record, label)
    if all(not name or str(name).startswith("Unnamed:") for name in names):
        return None  # no header: the reader says so after reading every column
    where = {str(name): i for i, name in enumerate(names)}
    if any(str(name) not in where for name in columns):
        return None
    positions = sorted({where[str(name)] for name in columns})
    return _Chosen({i: record[i] for i in positions}, [names[i] for i in positions], notes)


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
#: cost more than it spares. The first 4,096 values tell (hashing them costs 0.3 ms; 16,384 cost 1.3 ms a column).
_DISTINCT_SAMPLE = 4_096


def _settle_text_column(column: Any) -> _TextColumn | None:
    """The values of one column of Arrow text, settled; ``None`` when pandas would have read the column otherwise
    (see :func:`_read_text_arrow`)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    as_read: Any = None
    if len(column) > 2 * _DISTINCT_SAMPLE and pc.count_distinct(column.slice(0, _DISTINCT_SAMPLE)).as_py() > (
        _DISTINCT_SAMPLE // 2
    ):
        uniques = column  # its rows (kernels take the chunks as they are)
    else:
        as_read = uniques = pc.unique(column)  # in order of first appearance
    leading, trailing, shortest = _spaces_and_shortest(uniques)
    trimmed = leading or trailing
    if trimmed:
        if leading and bool(pc.any(pc.match_substring_regex(uniques, _SPACED_QUOTE.pattern)).as_py()):
            return None
        uniques = pc.utf8_trim(uniques, characters=" ")
        shortest = pc.min(pc.binary_length(uniques)).as_py() if len(uniques) else 0
    if len(uniques) and shortest > _LONGEST_MARKER:
        # Every value is longer than every marker (a column of long numbers): none is missing, no hash lookups.
        missing = pa.nulls(len(uniques), pa.bool_()).fill_null(False)
        return _TextColumn(column, as_read, uniques, missing, uniques, trimmed)
    missing = pc.is_in(uniques, value_set=_na_markers())
    present = pc.filter(uniques, pc.invert(missing)) if pc.any(missing).as_py() else uniques
    return _TextColumn(column, as_read, uniques, missing, present, trimmed)


def _spaces_and_shortest(values: Any) -> tuple[bool, bool, int]:
    """Whether a value of an Arrow text array (or chunked array) of large strings starts with a space, whether one
    ends with one, and the length in bytes of the shortest (0 for none): read off its buffers, the first and last
    byte of each value (Arrow's string kernels take three passes over the values, four times as long)."""
    import pyarrow as pa

    leading = trailing = False
    shortest: int | None = None
    for chunk in _chunks(values):
        if not len(chunk):
            continue
        if chunk.type != pa.large_string():
            chunk = chunk.cast(pa.large_string())
        offsets, data = _text_bytes(chunk, 1)
        lengths = np.diff(offsets)
        least = int(lengths.min())
        shortest = least if shortest is None else min(shortest, least)
        filled = offsets[:-1][lengths > 0] if least == 0 else offsets[:-1]
        ends = offsets[1:][lengths > 0] if least == 0 else offsets[1:]
        leading = leading or bool((data[filled] == 32).any())
        trailing = trailing or bool((data[ends - 1] == 32).any())
    return leading, trailing, shortest or 0


#: Bytes of the longest missing-value marker.
_LONGEST_MARKER = max(len(marker.encode()) for marker in _NA_MARKERS)


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
        # The columns' chunks one after the other, not copied into one array (a million texts: 7 ms of copying
        # spared): the steps of the numeric check take them a slice at a time. Many small chunks (a wide table) are
        # joined, as Arrow's kernels take time for each chunk.
        chunks = [chunk for i in passed for chunk in _chunks(settled[i].present)]
        texts = pa.chunked_array(chunks, pa.large_string()) if len(chunks) <= _FEW_CHUNKS else pa.concat_arrays(chunks)
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


def _header_fields(text: str, delimiter: str) -> list[str] | None:
    """The fields of the first record that is not blank, as the csv module parses them (``None``: not found whole
    in ``text``, or not parsed). Arrow does not skip the spaces before a field: the caller compares its header."""
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    try:
        for record in reader:
            if len(record) > 1 or (record and record[0].strip()):
                return record if reader.line_num < text.count("\n") + text.count("\r") else None
    except csv.Error:
        return None
    return None


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


#: Chunks of text passed to the numeric check as they are (more are joined into one array first).
_FEW_CHUNKS = 256

#: Rows from which an aggregate's columns are settled on two threads (below, starting threads costs more).
_PARALLEL_ROWS = 100_000


def _type_text_columns(columns: Sequence[Any], names: Sequence[str]) -> list[Any] | None:
    """Columns of Arrow text (nulls for missing fields) typed by the reader's rules, all columns at once: surrounding
    spaces removed, the missing-value markers, the numeric rules (:func:`_typed_columns`), as :func:`_read_text_arrow`
    types the columns of a file. ``None`` when a column holds a value the reader would read otherwise (spaces before
    a quote: see :func:`_settle_text_column`); an engine then types that aggregate the slow way. A column whose every
    value is missing comes back as objects (``None``)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    def settle(column: Any) -> _TextColumn | None:
        chunked = column if isinstance(column, pa.ChunkedArray) else pa.chunked_array([column])
        if chunked.type != pa.large_string():
            chunked = chunked.cast(pa.large_string())
        if chunked.null_count:
            chunked = pc.fill_null(chunked, "")  # the empty field: a missing-value marker
        return _settle_text_column(chunked)

    # Arrow's kernels release the GIL: long columns are settled two at a time, as the reader settles a file's.
    found = map_beside(settle, columns, threads=2 if len(columns) and len(columns[0]) >= _PARALLEL_ROWS else 1)
    if any(text is None for text in found):
        return None
    settled = [text for text in found if text is not None]
    kept: dict[str, list[tuple[str, str]]] = {reason: [] for reason in _KEPT_REASONS}
    typed = _typed_columns(settled, names, kept)
    return [
        np.full(len(text.column), None, dtype=object) if not len(text.present) else column
        for text, column in zip(settled, typed, strict=True)
    ]


_KEPT_REASONS = ("overflow", "inexact", "merged", "integers", "integers_missing")
