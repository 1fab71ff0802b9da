"""What every engine shares: the names of sources and engines, the shape of an aggregate, and the reader's typing
rules applied to text that an engine read (see :mod:`privdash.engines.aggregate`)."""

from __future__ import annotations

import glob
import mmap
import os
import re
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from privdash.constants import Engine
from privdash.data.tables import PANDAS_INDEX, detect_format, infer_numeric_columns
from privdash.data.tables.common import _STATISTICAL_FORMATS
from privdash.data.tables.delimited import _type_text_columns
from privdash.errors import DataReadError

__all__ = [
    "COUNT",
    "PANDAS_NA_VALUES",
    "Aggregate",
    "CsvText",
    "DatabaseSource",
    "Engine",
    "SparkTable",
    "check_delimited",
    "file_contains",
    "file_matches",
    "first_line",
    "is_database_url",
    "is_spark_frame",
    "pandas_index_columns",
    "quote_identifier",
    "source_kind",
    "source_paths",
    "sql_literal",
    "type_like_the_reader",
]

#: pandas' ``str`` dtype: the reader's text columns.
_TEXT_DTYPE = pd.StringDtype("pyarrow", na_value=np.nan)
#: Name of the count column of an aggregate.
COUNT = "__privdash_count"
#: pandas' default missing-value markers (``pandas.read_csv(keep_default_na=True)``), applied to CSV text.
PANDAS_NA_VALUES = frozenset(
    {
        "",
        "#N/A",
        "#N/A N/A",
        "#NA",
        "-1.#IND",
        "-1.#QNAN",
        "-NaN",
        "-nan",
        "1.#IND",
        "1.#QNAN",
        "<NA>",
        "N/A",
        "NA",
        "NULL",
        "NaN",
        "None",
        "n/a",
        "nan",
        "null",
    }
)
_PARQUET = {".parquet", ".pq"}
_TEXT = {".csv", ".tsv", ".txt", ".dat", ".tab"}


@dataclass(frozen=True, init=False)
class DatabaseSource:
    """A table or a SQL query in a database, diagnosed in place (the GROUP BY runs in the database).

    Attributes
    ----------
    url
        Connection URL, e.g. ``postgresql://user@host:5432/db``. Its password never appears in messages
        (:func:`redact_url`).
    table
        A table or view name (optionally ``schema.table``); exactly one of ``table`` and ``sql``.
    sql
        A ``SELECT`` whose rows are the records (``--sql`` on the command line). The old keyword ``query=`` is
        read for one release, with a :class:`DeprecationWarning` (``query`` is the kind of a DP release).
    """

    url: str = field(repr=False)  # may hold a password
    table: str | None = None
    sql: str | None = None

    def __init__(self, url: str, table: str | None = None, sql: str | None = None, *, query: str | None = None) -> None:
        if query is not None:
            if sql is not None:
                raise TypeError("DatabaseSource takes sql= (query= is its old spelling), not both.")
            warnings.warn(
                "DatabaseSource(query=...) is deprecated: the SQL of a database source is DatabaseSource(sql=...)",
                DeprecationWarning,
                stacklevel=2,
            )
            sql = query
        object.__setattr__(self, "url", url)
        object.__setattr__(self, "table", table)
        object.__setattr__(self, "sql", sql)


@dataclass(frozen=True)
class SparkTable:
    """A table registered in the Spark catalog (``spark.table(name)``), counted by the Spark engine."""

    name: str


@dataclass(frozen=True, eq=False)
class Aggregate:
    """One row per distinct combination of ``columns`` with its number of records.

    Attributes
    ----------
    frame
        The combinations (typed as :func:`~privdash.data.tables.read_table` types them) and :data:`COUNT`.
    columns
        The grouped columns, in order.
    rows
        Records in the source (the sum of the counts).
    engine
        The engine that computed it.
    seconds
        Wall time of the computation, reading included.
    """

    frame: pd.DataFrame
    columns: tuple[str, ...]
    rows: int
    engine: Engine
    seconds: float


def source_paths(source: str | os.PathLike[str] | Sequence[str | os.PathLike[str]]) -> list[Path]:
    """The files a source names: a path, a glob (``data/*.parquet``) or a list of paths; sorted, checked to exist."""
    items = [source] if isinstance(source, str | os.PathLike) else list(source)
    paths: list[Path] = []
    for item in items:
        text = os.fspath(item)
        if glob.has_magic(text):
            matched = sorted(Path(p) for p in glob.glob(text))
            if not matched:
                raise DataReadError(f"No file matches {text}.")
            paths.extend(matched)
        else:
            path = Path(text)
            if not path.exists():
                raise DataReadError(f"File not found: {path}.")
            if path.is_dir():
                parquet = sorted(path.glob("*.parquet"))
                if not parquet:
                    raise DataReadError(f"{path} is a folder without Parquet files.")
                paths.extend(parquet)
            else:
                paths.append(path)
    kinds = {source_kind(path) for path in paths}
    if len(kinds) > 1:
        raise DataReadError("A source must be files of one format: all Parquet or one delimited text file.")
    if kinds == {"text"} and len(paths) > 1:
        raise DataReadError("Give one CSV file at a time (several files are supported for Parquet).")
    return paths


def source_kind(path: Path) -> str:
    suffix = path.suffix.lower()
    if suffix in _PARQUET:
        return "parquet"
    if suffix in _TEXT:
        return "text"
    return "other"


def is_database_url(text: str) -> bool:
    """Whether ``text`` is a database connection URL rather than a path."""
    return text.startswith(("postgresql://", "postgres://", "postgresql+psycopg://"))


def is_spark_frame(source: Any) -> bool:
    # pyspark is optional: a Spark DataFrame is recognised by its class, without importing pyspark.
    return any(cls.__module__.startswith("pyspark.") and cls.__name__ == "DataFrame" for cls in type(source).__mro__)


def quote_identifier(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def sql_literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def first_line(exc: Exception) -> str:
    text = str(exc).strip().splitlines()
    return (text[0] if text else type(exc).__name__).rstrip(".") + "."


def file_contains(path: Path, needle: bytes) -> bool:
    """Whether the file holds ``needle`` (a scan at memory speed, without reading the file into Python)."""
    if path.stat().st_size == 0:
        return False
    with path.open("rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as content:
        return content.find(needle) >= 0


def file_matches(path: Path, pattern: re.Pattern[bytes], needle: bytes) -> bool:
    """Whether the file holds a match of ``pattern``, searched only when it holds ``needle`` (which every match
    contains), without reading the file into Python."""
    if not file_contains(path, needle):
        return False
    with path.open("rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as content:
        return pattern.search(content) is not None


@dataclass(frozen=True)
class CsvText:
    """A delimited text file that an engine reads as text: what the checks on the file itself need."""

    path: Path
    delimiter: str


def check_delimited(sample: bytes, name: str, engine: str) -> None:
    """Refuse a file named as delimited text that starts with ``sample`` when its content is another format (a
    workbook, Parquet, SPSS ... named ``.csv``: the reader reads it by its content, an engine by its extension), or
    one the reader never reads (gzip, old ``.xls`` ...), with the reader's message."""
    kind, _ = detect_format(sample, name, name)
    if kind != "text":
        what = {"excel": "an Excel workbook", "parquet": "a Parquet file", **_STATISTICAL_FORMATS}.get(kind, kind)
        raise DataReadError(
            f"{name} is {what}, not delimited text, despite its extension; {engine} reads a file by its extension: "
            "give it the right one, or use engine='pandas', which reads it."
        )


def type_like_the_reader(result: pd.DataFrame, names: list[str], csv: CsvText | None = None) -> pd.DataFrame:
    """Apply :func:`read_table`'s missing markers and numeric typing to the text aggregate.

    The reader's decisions depend only on a column's set of distinct values and on whether it has missing values,
    so each column is typed through its distinct values (a handful, however long the aggregate) and mapped back.
    Surrounding spaces are removed first, as the reader removes them (before and after a value, inside quotes
    too): on the distinct values rather than on every row in the engine (``trim`` per row tripled DuckDB's time
    on a CSV), so texts that differ only in those spaces become equal values, which the class summary groups.

    The reader finds a quote after skipped spaces (``  "x"`` is ``x``), which an engine reading the file as text
    keeps as part of the value: when a value starts with spaces and a quote, the aggregate cannot be typed
    exactly and a :class:`DataReadError` says so (``engine="pandas"`` reads the file).

    Text columns (pandas' ``str`` or Python strings) are typed together on their Arrow buffers by the reader's own
    column typing (:func:`~privdash.data.tables.delimited._type_text_columns`: no Python object per value); other
    columns, and an aggregate with spaces before a quote, go through :func:`_type_column`, value by value.
    """
    frame = result.copy()
    texts = {name: _arrow_text(frame[name]) for name in names}
    fast = [name for name in names if texts[name] is not None]
    typed = _type_text_columns([texts[name] for name in fast], fast) if fast else None
    if typed is not None:
        for name, column in zip(fast, typed, strict=True):
            frame[name] = pd.Series(column, index=frame.index, copy=False) if isinstance(column, np.ndarray) else column
    for name in names if typed is None else [name for name in names if name not in fast]:
        frame[name] = _type_column(frame[name], name, csv)
    return frame


def _arrow_text(column: pd.Series) -> Any:
    """The column as an Arrow array of text when it holds only text and missing values (else ``None``)."""
    import pyarrow as pa

    if isinstance(column.dtype, pd.StringDtype) and column.dtype.storage == "pyarrow":
        return pa.array(column.array)
    if column.dtype == object and pd.api.types.infer_dtype(column, skipna=True) in ("string", "empty"):
        try:
            return pa.array(column.to_numpy(dtype=object), type=pa.large_string(), from_pandas=True)
        except (pa.ArrowException, TypeError):
            return None
    return None


def _type_column(column: pd.Series, name: str, csv: CsvText | None) -> pd.Series:
    """One column of :func:`type_like_the_reader`, through its distinct values as Python objects."""
    codes, uniques = pd.factorize(column, use_na_sentinel=True)
    values = pd.Series(np.asarray(uniques, dtype=object), dtype=object)
    spaced = values.str.startswith(" ", na=False)
    if csv is not None and bool(spaced.any()) and bool(values[spaced].str.match(' +"').any()):
        raise DataReadError(
            f'{csv.path.name} has spaces before an opening quote ( "x"): the reader skips them and reads the '
            "quoted value, and an engine that reads the file as text keeps them with the quotes. Read it with "
            "engine='pandas', or remove those spaces."
        )
    values = values.str.strip(" ").where(values.notna(), None).astype(object)
    values = values.where(~values.isin(PANDAS_NA_VALUES), None)
    missing = bool((codes < 0).any()) or bool(values.isna().any())
    if missing:
        values = pd.concat([values, pd.Series([None], dtype=object)], ignore_index=True)
        codes = np.where(codes < 0, len(values) - 1, codes)
    typed = infer_numeric_columns(values.rename(name).to_frame())[name]
    if pd.api.types.is_float_dtype(typed):
        typed = typed.astype(np.float64)
    elif typed.dtype == object and typed.notna().any():
        typed = typed.astype(_TEXT_DTYPE)  # text, as the reader gives it (pandas' str on Arrow; a fast take)
    return typed.take(codes).reset_index(drop=True).set_axis(column.index)


def pandas_index_columns(path: Path) -> set[str]:
    """The unnamed pandas index columns of a Parquet file (``__index_level_0__``... listed as index in its pandas
    metadata): row labels of the frame it was written from, which the reader leaves out."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        metadata = pq.read_schema(path).pandas_metadata or {}
    except (pa.ArrowException, OSError, ValueError):
        return set()
    listed = metadata.get("index_columns", [])
    return {name for name in listed if isinstance(name, str) and PANDAS_INDEX.fullmatch(name)}
