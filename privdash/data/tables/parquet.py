"""Parquet files, and the typing of an Arrow table as the reader types it (:func:`arrow_frame`), which the
engines share (rules in :mod:`privdash.data.tables`)."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from typing import Any

import pandas as pd

from privdash.data.tables.common import _reason
from privdash.data.tables.limits import ReadLimits, _Deadline
from privdash.data.tables.numbers import _TEXT_DTYPE, _numeric_conversions
from privdash.errors import DataReadError, format_values

__all__ = ["PANDAS_INDEX", "arrow_frame"]


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
