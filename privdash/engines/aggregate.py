"""The per-combination aggregate of a table, computed by pandas in memory or by DuckDB out of core.

:func:`aggregate_table` returns one row per distinct combination of the requested columns with the number of
records that have it (``GROUP BY ALL``), from

* a pandas DataFrame (either engine: DuckDB scans the frame without copying it);
* a CSV / TSV file (DuckDB streams it; pandas reads it with :func:`~privdash.data.tables.read_table`);
* a Parquet file, or a glob or list of Parquet files with the same schema (a dataset as a data lake keeps it).

With ``engine="auto"``, a Parquet file whose requested columns are all text stored dictionary-encoded (as Spark,
pandas and DuckDB write them) is counted from its dictionary codes (:mod:`privdash.engines.parquet_codes`),
with DuckDB's numbers in less than half its time when the classes are many (from 100,000 possible classes by the
first row group's dictionaries; below, DuckDB's hash aggregate is cheaper); the aggregate's engine is then
``duckdb``.

Same numbers on every engine
----------------------------
DuckDB reads CSV columns as text (``all_varchar``) and groups by the text, with the spaces around each value
removed as the pandas reader removes them; the rules of :func:`~privdash.data.tables.read_table` are then
applied to the aggregate, which holds every distinct value of each column: pandas' missing-value markers (``NA``,
``NULL``, ``-``... and the empty field) become missing, and a column becomes numeric exactly when the reader would
make it numeric (:func:`~privdash.data.tables.infer_numeric_columns`). Text that the typing merges (``1`` and
``1.0``) is merged by the class summary, which groups equal values. The delimiter and the encoding are sniffed from
the file's first megabyte as the reader does; DuckDB reads UTF-8, UTF-16 and Latin-1, and any other encoding is
read by pandas (``engine="auto"``) or refused with a message (``engine="duckdb"``).

Weights are grouped, not summed, by the engine: a weight column becomes one more grouping column, so every engine
returns the same (combination, weight, count) rows and the class summary sums ``count x weight`` in one order.
Floating-point sums therefore agree to the last digit, whatever the engine's parallel order.

Memory: DuckDB spills to ``temp_directory`` beyond ``memory_limit`` (e.g. ``"4GB"``); raw rows never reach pandas.
"""

from __future__ import annotations

import glob
import os
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from privdash.constants import AUTO_DUCKDB_BYTES, AUTO_DUCKDB_CELLS
from privdash.data.tables import (
    arrow_frame,
    header_record,
    read_table,
    sniff_delimited,
)
from privdash.engines.common import (
    COUNT,
    PANDAS_NA_VALUES,
    Aggregate,
    CsvText,
    DatabaseSource,
    Engine,
    SparkTable,
    check_delimited,
    is_database_url,
    pandas_index_columns,
    source_paths,
    type_like_the_reader,
)
from privdash.engines.common import first_line as _first_line
from privdash.engines.common import is_spark_frame as _is_spark_frame
from privdash.engines.common import quote_identifier as _quote
from privdash.engines.common import source_kind as _kind
from privdash.engines.common import sql_literal as _literal
from privdash.errors import ColumnError, DataReadError, ParameterError

__all__ = [
    "AUTO_DUCKDB_BYTES",
    "COUNT",
    "PANDAS_NA_VALUES",
    "Aggregate",
    "CsvText",
    "DatabaseSource",
    "Engine",
    "SparkTable",
    "aggregate_table",
    "is_database_url",
    "resolve_engine",
    "sample_rows",
    "source_paths",
    "type_like_the_reader",
]

_DUCKDB_ENCODINGS = {"utf-8": "utf-8", "utf_8": "utf-8", "utf-16": "utf-16", "utf_16": "utf-16", "latin-1": "latin-1"}
_LATIN_1 = {"latin_1", "iso8859_1", "iso-8859-1", "latin-1", "cp819"}


def resolve_engine(
    engine: str | Engine, source: Any, *, max_bytes: int = AUTO_DUCKDB_BYTES, max_cells: int = AUTO_DUCKDB_CELLS
) -> Engine:
    """The engine ``auto`` stands for: DuckDB for Parquet globs, several files, files over ``max_bytes``
    (:data:`~privdash.constants.AUTO_DUCKDB_BYTES`) and Parquet files whose footer counts over ``max_cells``
    rows x columns (:data:`~privdash.constants.AUTO_DUCKDB_CELLS`), else pandas."""
    chosen = Engine.parse(engine)
    if chosen != Engine.AUTO:
        return chosen
    if isinstance(source, pd.DataFrame):
        return Engine.PANDAS
    if isinstance(source, DatabaseSource) or (isinstance(source, str) and is_database_url(source)):
        return Engine.POSTGRESQL
    if isinstance(source, SparkTable) or _is_spark_frame(source):
        return Engine.SPARK
    items = [source] if isinstance(source, str | os.PathLike) else list(source)
    if any(glob.has_magic(os.fspath(item)) or Path(item).is_dir() for item in items):
        return Engine.DUCKDB  # a dataset of files
    paths = source_paths(source)
    if any(_kind(path) == "other" for path in paths):
        return Engine.PANDAS
    if len(paths) > 1 or sum(path.stat().st_size for path in paths) > max_bytes:
        return Engine.DUCKDB
    if all(_kind(path) == "parquet" for path in paths) and sum(map(_parquet_cells, paths)) > max_cells:
        return Engine.DUCKDB
    return Engine.PANDAS


def _parquet_cells(path: Path) -> int:
    """Rows x columns of a Parquet file, from its footer (no data read); 0 when the footer cannot be read (the
    reader then says why)."""
    import pyarrow.parquet as pq

    try:
        metadata = pq.read_metadata(path)
    except (OSError, ValueError):
        return 0
    return int(metadata.num_rows) * int(metadata.num_columns)


def aggregate_table(
    source: Any,
    columns: Sequence[str],
    *,
    engine: str | Engine = Engine.AUTO,
    memory_limit: str | None = None,
    temp_directory: str | os.PathLike[str] | None = None,
    spark_master: str | None = None,
) -> Aggregate:
    """``SELECT columns..., COUNT(*) GROUP BY ALL`` over ``source`` (see the module docstring).

    Raises :class:`DataReadError` for sources that cannot be read, :class:`ColumnError` for unknown columns and
    :class:`ParameterError` for an engine that cannot read the source or a memory limit too small.
    """
    names = [str(c) for c in columns]
    if not names:
        raise ColumnError("No column to group by.")
    if len(set(names)) != len(names):
        raise ColumnError("A column is listed twice.")
    if COUNT in names:
        raise ColumnError(f"'{COUNT}' is the name of the counts privdash computes; rename that column to analyse it.")
    started = time.perf_counter()
    chosen = resolve_engine(engine, source)
    if chosen == Engine.PANDAS:
        frame = source if isinstance(source, pd.DataFrame) else _read_with_pandas(source, names)
        result = _pandas_aggregate(frame, names)
    elif chosen == Engine.DUCKDB:
        codes = _parquet_codes(source, names) if Engine.parse(engine) == Engine.AUTO else None
        if codes is not None:
            result = codes
        else:
            result = _duckdb_aggregate(source, names, memory_limit=memory_limit, temp_directory=temp_directory)
    elif chosen == Engine.SPARK:
        from privdash.engines.spark import spark_aggregate

        result = spark_aggregate(source, names, master=spark_master)
    else:
        from privdash.engines.database import database_aggregate

        result = database_aggregate(source, names)
    rows = int(result[COUNT].sum())
    if rows == 0:
        raise DataReadError(
            f"{_source_label(source)} has columns but no records (0 rows): there is nothing to count, and no "
            "target can be met by no records."
        )
    return Aggregate(result, tuple(names), rows, chosen, time.perf_counter() - started)


def _parquet_codes(source: Any, names: list[str]) -> pd.DataFrame | None:
    """The aggregate of one Parquet file whose columns ``names`` are all dictionary-encoded text, counted from its
    dictionary codes (:mod:`privdash.engines.parquet_codes`: the DuckDB engine's numbers, faster with many classes);
    ``None`` for any other source, and when the first row group's dictionaries allow fewer than
    :data:`~privdash.engines.parquet_codes.MIN_POSSIBLE_CLASSES` classes."""
    if not isinstance(source, str | os.PathLike) or glob.has_magic(os.fspath(source)):
        return None
    path = Path(source)
    if not path.is_file() or _kind(path) != "parquet":
        return None
    from privdash.engines import parquet_codes

    if not parquet_codes.dictionary_encoded_text(path, names):
        return None
    if parquet_codes.possible_classes(path, names) < parquet_codes.MIN_POSSIBLE_CLASSES:
        return None  # few classes: DuckDB's hash aggregate is the cheaper count
    return parquet_codes.parquet_codes_aggregate(path, names)


def _source_label(source: Any) -> str:
    """How messages name a source: its file or folder, its table or query, or what it is."""
    if isinstance(source, pd.DataFrame):
        return "The table"
    if isinstance(source, DatabaseSource):
        return f"Table {source.table}" if source.table is not None else "The query"
    if isinstance(source, SparkTable):
        return f"Spark table {source.name}"
    if _is_spark_frame(source):
        return "The Spark DataFrame"
    if isinstance(source, str | os.PathLike):
        return Path(source).name or os.fspath(source)
    return "The source"


def sample_rows(
    source: Any,
    rows: int,
    *,
    engine: str | Engine = Engine.AUTO,
    spark_master: str | None = None,
) -> pd.DataFrame:
    """The first ``rows`` rows of ``source``, read where it lives (a preview: typed from these rows only, so a CSV
    column may type differently than over the whole file; no number is computed from it)."""
    if isinstance(rows, bool) or not isinstance(rows, int) or rows < 0:
        raise ParameterError(f"rows must be a whole number >= 0, got {rows!r}.")
    chosen = resolve_engine(engine, source)
    if isinstance(source, pd.DataFrame):
        return source.head(rows)
    if chosen == Engine.SPARK:
        from privdash.engines.spark import spark_sample

        return spark_sample(source, rows, master=spark_master)
    if chosen == Engine.POSTGRESQL:
        from privdash.engines.database import database_sample

        return database_sample(source, rows)
    import duckdb

    connection = duckdb.connect()
    try:
        _quiet(connection)
        opened = _relation(connection, source)
        try:
            frame = _fetch_frame(connection.sql(f"SELECT * FROM src LIMIT {rows}"))
        except duckdb.Error as exc:
            raise DataReadError(f"DuckDB could not read the source: {_first_line(exc)}") from exc
    finally:
        connection.close()
    frame.columns = pd.Index(opened.names)
    frame = opened.in_zones(frame)
    if opened.text is not None:
        # A preview of a few rows: not checked against the whole file.
        frame = type_like_the_reader(frame, list(dict.fromkeys(opened.names)))
    return frame


def _read_with_pandas(source: Any, names: Sequence[str] | None = None) -> pd.DataFrame:
    """The source's table read by :func:`read_table` (of one file, only the columns ``names`` when given: a wide
    delimited file then parses only those)."""
    paths = source_paths(source)
    if len(paths) == 1:
        return read_table(paths[0], columns=names)
    frames = [read_table(path) for path in paths]  # every column: the files must share one schema
    first = list(frames[0].columns)
    for path, frame in zip(paths[1:], frames[1:], strict=True):
        if list(frame.columns) != first:
            raise DataReadError(f"{path.name} has other columns than {paths[0].name}; a dataset needs one schema.")
    return pd.concat(frames, ignore_index=True)


def _pandas_aggregate(frame: pd.DataFrame, names: list[str]) -> pd.DataFrame:
    missing = [name for name in names if name not in frame.columns]
    if missing:
        raise ColumnError(f"Unknown column(s): {', '.join(missing)}.")
    grouped = frame.groupby(names, dropna=False, sort=False, observed=True).size()
    return grouped.rename(COUNT).reset_index()


# --- DuckDB --------------------------------------------------------------------------------------------------------


def _duckdb_aggregate(
    source: Any, names: list[str], *, memory_limit: str | None, temp_directory: str | os.PathLike[str] | None
) -> pd.DataFrame:
    import duckdb

    connection = duckdb_connection(memory_limit, temp_directory, ordered=False)
    try:
        # Text as Arrow's large strings, the layout of pandas' str: the aggregate's text columns become pandas
        # columns without a copy (a million rows of three text columns: 0.01-0.07 s of casting).
        connection.execute("SET arrow_large_buffer_size = true")
        opened = _relation(connection, source)
        unknown = [name for name in names if name not in opened.names]
        if unknown:
            available = ", ".join(opened.names)
            raise ColumnError(f"Unknown column(s): {', '.join(unknown)}; the source has {available}.")
        # CSV text is grouped as read; surrounding spaces are removed on the distinct values (type_like_the_reader).
        query = f"SELECT {opened.select(names)}, COUNT(*) AS n FROM src GROUP BY ALL"
        try:
            result = _fetch_frame(connection.sql(query))
            result.columns = pd.Index([*names, COUNT])
            result = opened.in_zones(result)
        except duckdb.OutOfMemoryException as exc:
            raise ParameterError(
                f"DuckDB ran out of memory within memory_limit={memory_limit or 'its default'}: raise the limit or "
                "give a temp_directory with room to spill."
            ) from exc
        except duckdb.Error as exc:
            raise DataReadError(_duckdb_error(exc, opened)) from exc
    finally:
        connection.close()
    if opened.text is not None:
        result = type_like_the_reader(result, names, opened.text)
    return result


def _duckdb_error(exc: Exception, source: DuckSource) -> str:
    """The message of a DuckDB error while reading ``source``: for a CSV file that its parser rejects, what makes
    it do so and what reads the file."""
    message = f"DuckDB could not read the source: {_first_line(exc)}"
    if source.text is None:
        return message
    name = source.text.path.name
    if "Maximum line size" in str(exc):
        return (
            f"{name} has a line longer than the 2,000,000 bytes DuckDB reads (a very long value); "
            "engine='pandas' reads it."
        )
    if "state machine" in str(exc) or "CSV Error" in str(exc):
        message += (
            f" {name} may have a row with more fields than the header, mix line endings (CRLF, LF alone or CR "
            "alone), hold lines that are not rows (blanks between them) or rows shorter than the header beside "
            "quoted values; engine='pandas' reads such files, or says which line is wrong."
        )
    return message


#: pandas' nullable dtype of each Arrow integer type and of booleans, by name.
_NULLABLE = {
    "int8": "Int8", "int16": "Int16", "int32": "Int32", "int64": "Int64",
    "uint8": "UInt8", "uint16": "UInt16", "uint32": "UInt32", "uint64": "UInt64", "bool": "boolean",
}  # fmt: skip


def _fetch_frame(relation: Any) -> pd.DataFrame:
    """A query's result fetched through Arrow: text becomes pandas' ``str`` on Arrow's buffers (``.df()`` converts
    text value by value, four times slower on a long aggregate), and integers and booleans with missing values
    become pandas' nullable types, as ``.df()`` makes them. Decimals, bytes, dates and the other types convert as
    the reader converts a Parquet file's columns (:func:`~privdash.data.tables.arrow_frame`): decimals by the
    numeric rules on their exact text (``.df()`` makes them float64, merging values that differ in the ninth
    decimal), bytes as ``bytes`` (``.df()`` gives unhashable ``bytearray``)."""
    import pyarrow as pa

    fetched = relation.arrow()
    table = fetched.read_all() if isinstance(fetched, pa.RecordBatchReader) else fetched
    text = pd.StringDtype("pyarrow", na_value=np.nan)
    columns: dict[str, Any] = {}
    typed: list[str] = []
    for name, column in zip(table.column_names, table.columns, strict=True):
        kind = column.type
        if pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_string_view(kind):
            columns[name] = pd.array(column, dtype=text)
        elif column.null_count and (pa.types.is_integer(kind) or pa.types.is_boolean(kind)):
            nullable = pd.api.types.pandas_dtype(_NULLABLE[str(kind)])
            columns[name] = pd.array(column.to_pandas(types_mapper=lambda _, dtype=nullable: dtype), dtype=nullable)
        elif pa.types.is_integer(kind) or pa.types.is_floating(kind) or pa.types.is_boolean(kind):
            columns[name] = column.to_numpy()
        else:
            columns[name] = None
            typed.append(name)
    if typed:
        frame, _ = arrow_frame(table.select(typed))
        for name in typed:
            columns[name] = frame[name].to_numpy(dtype=object) if frame[name].dtype == object else frame[name]
    return pd.DataFrame(columns, copy=False)


def duckdb_connection(memory_limit: str | None, temp_directory: str | os.PathLike[str] | None, *, ordered: bool) -> Any:
    """A DuckDB connection of its own with the memory limit and spill folder given (a bad value is a
    :class:`ParameterError`) and no progress bar; ``ordered`` keeps the rows of a query in the source's order
    (streaming needs it, a GROUP BY does not)."""
    import duckdb

    connection = duckdb.connect(config={"preserve_insertion_order": ordered})
    try:
        _quiet(connection)
        if memory_limit is not None:
            _set(connection, "memory_limit", memory_limit)
        if temp_directory is not None:
            _set(connection, "temp_directory", os.fspath(temp_directory))
    except BaseException:
        connection.close()
        raise
    return connection


def _quiet(connection: Any) -> None:
    """No progress bar: DuckDB draws one on standard output once a query runs for 2 s, into ``--json`` output and
    the CSV a command writes to standard output."""
    connection.execute("SET enable_progress_bar = false")


def _set(connection: Any, option: str, value: str) -> None:
    import duckdb

    try:
        connection.execute(f"SET {option} = {_literal(str(value))}")
    except duckdb.Error as exc:
        raise ParameterError(f"Invalid {option} {value!r}: {_first_line(exc)}") from exc


@dataclass(frozen=True)
class DuckSource:
    """A source opened on a DuckDB connection as the view ``src``, whose columns are ``c0``, ``c1``... in the order
    of ``names``: the reader's names are never SQL identifiers, which DuckDB compares without case (``Age`` and
    ``age`` would be one column, a Parquet file's ``a`` beside ``A`` is renamed ``a_1``) and which would clash with
    the names of a query's own columns."""

    names: list[str]
    text: CsvText | None
    #: Column -> the time zone of its timestamps in the source (DuckDB gives them in UTC).
    zones: Mapping[str, str] = field(default_factory=dict)

    def column(self, name: str) -> str:
        """The view's identifier of column ``name``."""
        return f"c{self.names.index(name)}"

    def select(self, names: Sequence[str]) -> str:
        """``c3 AS c3, ...`` for ``names``: a SELECT list of these columns."""
        return ", ".join(self.column(name) for name in names)

    def in_zones(self, frame: pd.DataFrame) -> pd.DataFrame:
        """``frame`` (columns named as the source's) with its timestamps in the source's time zones, as the reader
        gives them (the same instants DuckDB gives in UTC)."""
        for name, zone in self.zones.items():
            if name in frame.columns and isinstance(frame[name].dtype, pd.DatetimeTZDtype):
                frame[name] = frame[name].dt.tz_convert(zone)
        return frame


def _positional(relation: Any, skipped: frozenset[int] = frozenset()) -> str:
    """The relation's columns as ``c0``, ``c1``... (those at the ``skipped`` positions left out)."""
    kept = [column for i, column in enumerate(relation.columns) if i not in skipped]
    return ", ".join(f"{_quote(str(column))} AS c{i}" for i, column in enumerate(kept))


def _relation(connection: Any, source: Any) -> DuckSource:
    """The source as the DuckDB view ``src`` of positional columns (:class:`DuckSource`)."""
    import duckdb

    if isinstance(source, pd.DataFrame):
        connection.register("src_frame", source)
        connection.sql(f"SELECT {_positional(connection.table('src_frame'))} FROM src_frame").create_view("src")
        return DuckSource([str(c) for c in source.columns], None)
    paths = source_paths(source)
    kinds = {_kind(path) for path in paths}
    if kinds == {"parquet"}:
        files = "[" + ", ".join(_literal(str(path)) for path in paths) + "]"
        names = _check_decimals(paths)
        try:
            relation = connection.sql(f"SELECT * FROM read_parquet({files}, union_by_name = false)")
            _check_parquet(relation)
            if names is None or len(names) != len(relation.columns):
                names = [str(c) for c in relation.columns]
            repeated = sorted({name for name in names if names.count(name) > 1})
            if repeated:  # DuckDB would rename the repeats (a_1): refused, as the reader refuses them
                raise DataReadError(
                    f"The Parquet source has duplicate column names: {', '.join(repr(n) for n in repeated[:8])}; "
                    "give each column its own name."
                )
            # Unnamed pandas index columns are row labels, which the reader leaves out (arrow_frame).
            skipped = frozenset(i for i, name in enumerate(names) if name in pandas_index_columns(paths[0]))
            connection.sql(
                f"SELECT {_positional(relation, skipped)} FROM read_parquet({files}, union_by_name = false)"
            ).create_view("src")
        except duckdb.Error as exc:
            raise DataReadError(f"The Parquet source could not be read: {_first_line(exc)}") from exc
        return DuckSource([name for i, name in enumerate(names) if i not in skipped], None, _time_zones(paths[0]))
    if kinds != {"text"}:
        raise ParameterError(
            f"DuckDB reads CSV and Parquet; {paths[0].name} is neither. Use engine='pandas' for Excel files."
        )
    path = paths[0]
    with path.open("rb") as handle:
        sample = handle.read(1 << 20)
    check_delimited(sample, path.name, "DuckDB")
    encoding, delimiter = sniff_delimited(sample, path.name)
    # Line ends of more than one kind (CRLF, LF alone, CR alone) in one file: DuckDB's parser reads one kind per file
    # (it stops, or misreads the rows around another); the pandas reader reads them all. A CR that ends the sample
    # may be the first half of a CRLF cut there. With quotes, a line break may be inside a value (an Excel CSV:
    # CRLF between rows, LF inside cells), which DuckDB reads: its own error is then explained (_duckdb_error).
    line_ends = [
        b"\r\n" in sample,
        re.search(rb"(?<!\r)\n", sample) is not None,
        re.search(rb"\r[^\n]", sample) is not None,
    ]
    if sum(line_ends) > 1 and b'"' not in sample:
        raise DataReadError(
            f"{path.name} mixes line endings (CRLF, LF alone or CR alone), which DuckDB cannot read. Read it with "
            "engine='pandas', or save it with one kind of line ending."
        )
    duckdb_encoding = _duckdb_encoding(encoding)
    if duckdb_encoding is None:
        raise ParameterError(
            f"{path.name} is encoded as {encoding}; DuckDB reads UTF-8, UTF-16 and Latin-1. Save it as UTF-8 or "
            "use engine='pandas'."
        )
    # The header is parsed in Python from the file's first lines: a LIMIT 1 of DuckDB's parallel scan may return
    # any row, and a data row's values as column names (repeated ones) made the query fail at random.
    # Blank lines before the header are skipped (DuckDB would take the first line for the header). A row with fewer
    # fields than the header has missing values at its end, as the reader reads it: DuckDB pads it with NULL,
    # unless the file may hold quoted line breaks, which its padding cannot read (a short row is then refused).
    names, before = header_record(path, encoding, delimiter)
    padding = "false" if b'"' in sample else "true"
    columns = "{" + ", ".join(f"'c{i}': 'VARCHAR'" for i in range(len(names))) + "}"
    options = (
        f"delim = {_literal(delimiter)}, header = true, skip = {before}, all_varchar = true, quote = '\"', "
        f"escape = '\"', encoding = {_literal(duckdb_encoding)}, null_padding = {padding}, auto_detect = false, "
        f"columns = {columns}, max_line_size = 2000000, buffer_size = {_CSV_BUFFER_BYTES}"
    )
    try:
        connection.sql(f"SELECT * FROM read_csv({_literal(str(path))}, {options})").create_view("src")
    except duckdb.Error as exc:
        raise DataReadError(f"{path.name} is not a consistent delimited table: {_first_line(exc)}") from exc
    return DuckSource(names, CsvText(path, delimiter))


#: DuckDB's read buffer for a CSV file: its default (16 x the 2,000,000-byte line limit, buffers held per thread)
#: was a fifth of the peak memory of a 114 MiB file read to the class table; 8 MiB reads as fast (4 MiB cost 4%
#: more CPU on 20M rows) and keeps the peak under twice the file. The line limit is given with it: a smaller
#: buffer would otherwise raise the limit to its own size and change which files DuckDB reads.
_CSV_BUFFER_BYTES = 2**23


def _duckdb_encoding(encoding: str) -> str | None:
    key = encoding.lower().replace(" ", "")
    if key in _DUCKDB_ENCODINGS:
        return _DUCKDB_ENCODINGS[key]
    if key in _LATIN_1:
        return "latin-1"
    if key in {"ascii", "us-ascii"}:
        return "utf-8"
    return None


def _check_parquet(relation: Any) -> None:
    nested = [
        f"{name} ({kind})"
        for name, kind in zip(relation.columns, relation.types, strict=True)
        if any(word in str(kind).upper() for word in ("STRUCT", "MAP", "[]", "UNION"))
    ]
    if nested:
        raise DataReadError(f"Nested columns cannot be analysed as values: {', '.join(nested)}.")


#: The most digits of a decimal DuckDB holds exactly: it reads wider Parquet decimals as DOUBLE.
DUCKDB_DECIMAL_DIGITS = 38


def _check_decimals(paths: Sequence[Path]) -> list[str] | None:
    """Refuse Parquet decimal columns wider than DuckDB's decimals (from each file's footer, nothing else read):
    DuckDB would read them as floating-point numbers and merge values that differ beyond the 17th digit. Returns
    the first file's column names (None when its footer cannot be read: DuckDB then says what is wrong)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    names: list[str] | None = None
    for path in paths:
        try:
            schema = pq.read_schema(path)
        except (pa.ArrowException, OSError):
            continue
        if names is None:
            names = [str(name) for name in schema.names]
        wide = [
            f"'{f.name}' ({f.type.precision} digits)"
            for f in schema
            if pa.types.is_decimal(f.type) and f.type.precision > DUCKDB_DECIMAL_DIGITS
        ]
        if wide:
            raise DataReadError(
                f"{path.name} has decimal columns wider than the {DUCKDB_DECIMAL_DIGITS} digits DuckDB keeps "
                f"exactly: {', '.join(wide)}; DuckDB would round them into floating-point numbers and merge "
                "distinct values. Read it with engine='pandas'."
            )
    return names


def _time_zones(path: Path) -> dict[str, str]:
    """Column -> time zone of a Parquet file's timestamp columns that have one (from its footer)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        schema = pq.read_schema(path)
    except (pa.ArrowException, OSError):
        return {}
    return {f.name: str(f.type.tz) for f in schema if pa.types.is_timestamp(f.type) and f.type.tz}
