"""The per-combination aggregate computed by Apache Spark, on a cluster or in ``local[*]``.

:func:`spark_aggregate` pushes one query to Spark, ``SELECT columns..., COUNT(*) GROUP BY columns``, over

* a Spark DataFrame (in its own session), or a table or view of the session's catalog (:class:`SparkTable`);
* a Parquet file, or a glob, folder or list of Parquet files with one schema (read in parallel);
* a CSV / TSV file, read by Spark as text;
* a pandas DataFrame (handed over through Arrow).

Only the aggregate, one row per distinct combination, comes back to Python (as Arrow): raw rows never leave Spark.
Files are read by Spark's executors: on a cluster they must be on storage every executor sees, under the same path.
:func:`spark_sample` returns the first rows of the same sources, for a preview.

Same numbers as the other engines
---------------------------------
Typed columns (Parquet, Spark tables) come back as an Arrow table converted by ``pyarrow.Table.to_pandas``, the
conversion the pandas reader applies to a Parquet file: integers stay int64 (int64 with nulls becomes float64),
doubles stay float64, text becomes pandas' string dtype and nulls are missing, so the class summary sees the same
values as with pandas or DuckDB. A CSV file is read as text, every column a string, with the delimiter and encoding
that :func:`~privdash.data.tables.sniff_delimited` finds as the reader does, ``"`` as quote and escape, and
leading blanks dropped (blanks before a quote too); the reader's rules (spaces around values removed,
missing-value markers, numeric typing) are then applied to the aggregate by
:func:`~privdash.engines.common.type_like_the_reader`, as for DuckDB. Header names follow the reader
(stripped, ``Unnamed: i`` for an empty one, ``a.1`` for a repeat); a row with fewer fields than the header has
missing values at its end; a row with more is refused. A file with quotes, tabs as delimiter or a multi-byte
encoding is parsed record by record (``multiLine``: a quoted field may hold line breaks, and a row of empty tab-
separated fields is kept) in one task; other CSV files are split between tasks.

Weights are grouped, not summed, as on every engine (see :mod:`privdash.engines.aggregate`): the weighted
sums are computed by the class summary in one order, so they agree to the last digit whatever Spark's partitioning.

Session: the active SparkSession, else one started on ``master`` (default :data:`DEFAULT_MASTER`) with its web UI
off and its log limited to errors. A standalone master (``spark://host:port``) is first reached over TCP within
:data:`CONNECT_SECONDS`: Spark itself would retry an unreachable master for a minute (three registration attempts
20 s apart, fixed in Spark) before giving up.
"""

from __future__ import annotations

import atexit
import codecs
import os
import re
import shutil
import socket
import tempfile
import warnings
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from privdash.data.tables import arrow_frame, header_names, sniff_delimited
from privdash.engines.common import (
    COUNT,
    CsvText,
    SparkTable,
    check_delimited,
    file_contains,
    is_spark_frame,
    pandas_index_columns,
    source_kind,
    source_paths,
    type_like_the_reader,
)
from privdash.errors import ColumnError, DataReadError, ParameterError

__all__ = ["CONNECT_SECONDS", "DEFAULT_MASTER", "spark_aggregate", "spark_sample", "spark_session"]

#: Master of the session started when none is active.
DEFAULT_MASTER = "local[*]"
#: Seconds to wait for a TCP connection to a standalone master before the URL is reported unreachable.
CONNECT_SECONDS = 5.0
_LEGACY_CHARSETS = "spark.sql.legacy.javaCharsets"
#: Settings of a session started here: no web UI, no progress bar, the log limited to errors.
SESSION_CONFIG = {
    "spark.app.name": "privdash",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    # Every charset of the Java runtime for CSV files (cp1252, cp1250... as the pandas reader detects them).
    _LEGACY_CHARSETS: "true",
}
INSTALL_HINT = "pip install 'privdash[spark]'"

# Errors only (the Python gateway's logger too: Spark would otherwise set the log of an interactive session to
# warnings, and say so). The scheduler's warnings stay: they say when a cluster has no resources for the job. Task
# failures are not logged: they reach the caller as one exception, turned into one message.
_LOG4J2 = """\
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex
logger.repl.name = org.apache.spark.api.python.PythonGatewayServer
logger.repl.level = error
logger.scheduler.name = org.apache.spark.scheduler.TaskSchedulerImpl
logger.scheduler.level = warn
logger.executor.name = org.apache.spark.executor.Executor
logger.executor.level = off
logger.tasks.name = org.apache.spark.scheduler.TaskSetManager
logger.tasks.level = off
"""
_STANDALONE = re.compile(r"spark://(?P<hosts>[^/]+)/?")
_OTHER_MASTERS = re.compile(r"local|local\[(\*|\d+)(,\d+)?\]|local-cluster\[\d+,\d+,\d+\]|yarn|k8s://.+")
_EXTRA = "__privdash_extra"
#: The most digits of a Spark decimal.
_SPARK_DECIMAL_DIGITS = 38
# Python codec names (codecs.lookup(...).name) whose Java charset has another name.
_JAVA_CHARSETS = {
    "ascii": "US-ASCII",
    "iso8859-1": "ISO-8859-1",
    "mac-roman": "x-MacRoman",
    "mac-greek": "x-MacGreek",
    "mac-cyrillic": "x-MacCyrillic",
    "utf-16-le": "UTF-16LE",
    "utf-16-be": "UTF-16BE",
    "utf-32-le": "UTF-32LE",
    "utf-32-be": "UTF-32BE",
}
# The charsets Spark's CSV reader accepts without spark.sql.legacy.javaCharsets (the others Java has need it).
_SPARK_CHARSETS = {"iso-8859-1", "us-ascii", "utf-16", "utf-16be", "utf-16le", "utf-32", "utf-8"}
_log_config: str | None = None


@dataclass(frozen=True)
class _Text:
    """A CSV file read by Spark as text: its columns are ``_0``, ``_1``... in the order of ``names``."""

    name: str
    names: list[str]
    csv: CsvText


def spark_aggregate(source: Any, names: list[str], *, master: str | None) -> pd.DataFrame:
    """``SELECT names..., COUNT(*) AS COUNT GROUP BY names`` computed by Spark (see the module docstring).

    ``master`` chooses the session started when none is active; a Spark DataFrame is counted in its own session.
    Raises :class:`ParameterError` (pyspark or Java missing, master unreachable or in conflict with the running
    session), :class:`DataReadError` (unreadable source) or :class:`ColumnError` (unknown column).
    """
    _require_pyspark()
    with _quiet_pandas_warning():
        frame, text = _spark_frame(source, master)
        available = text.names if text is not None else [str(c) for c in frame.columns]
        unknown = [name for name in names if name not in available]
        if unknown:
            raise ColumnError(f"Unknown column(s): {', '.join(unknown)}; the source has {', '.join(available)}.")
        if text is not None:
            return _text_aggregate(frame, names, text)
        _check_flat(frame, names)
        return _collect(frame.groupBy(*[_column(name) for name in names]), names)


def spark_sample(source: Any, rows: int, *, master: str | None) -> pd.DataFrame:
    """The first ``rows`` rows of ``source`` read by Spark: a preview, typed like the reader from these rows only
    (a CSV column may type otherwise over the whole file)."""
    _require_pyspark()
    with _quiet_pandas_warning():
        frame, text = _spark_frame(source, master)
        try:
            result = frame.limit(rows).toArrow().to_pandas()
        except _spark_errors() as exc:
            raise DataReadError(f"Spark could not read the source: {_reason(exc)}") from exc
    if text is None:
        return result
    _refuse_longer_rows(result.iloc[:, -1], text)
    result = result.iloc[:, :-1].set_axis(text.names, axis=1)
    return type_like_the_reader(result, text.names)


def _spark_frame(source: Any, master: str | None) -> tuple[Any, _Text | None]:
    """The source as a Spark DataFrame, and for a CSV file its names and column names."""
    if is_spark_frame(source):
        return source, None
    return _source_frame(spark_session(master), source)


def spark_session(master: str | None = None, *, config: Mapping[str, str] | None = None) -> Any:
    """The active SparkSession, else one started on ``master`` (default :data:`DEFAULT_MASTER`), quiet and without
    web UI; ``config`` adds settings to a session started here.

    Raises :class:`ParameterError` for a master that cannot be reached, that differs from the running session's,
    or a Java runtime that cannot be started.
    """
    _require_pyspark()
    from pyspark.sql import SparkSession

    if master is not None:
        _check_master(master)
    active = SparkSession.getActiveSession()
    if active is None:
        builder = SparkSession.builder.master(master or DEFAULT_MASTER)
        options = {**SESSION_CONFIG, "spark.driver.extraJavaOptions": f"-Dlog4j2.configurationFile={_log4j2_file()}"}
        for key, value in {**options, **(config or {})}.items():
            builder = builder.config(key, value)
        try:
            with _quiet_pandas_warning():
                active = builder.getOrCreate()
        except Exception as exc:  # pyspark raises PySparkRuntimeError, Py4JJavaError, RuntimeError ...
            raise _session_error(exc, master or DEFAULT_MASTER) from exc
    running = str(active.sparkContext.master) if hasattr(active, "sparkContext") else None
    if master is not None and running is not None and running != master:
        raise ParameterError(
            f"A Spark session on {running} is already running in this process and Spark keeps one per process: "
            f"stop it (spark.stop()) to count on {master}, or leave the master out to use it."
        )
    return active


def _require_pyspark() -> None:
    try:
        import pyspark
    except ImportError as exc:
        raise ParameterError(
            f"The Spark engine needs pyspark, which is not installed: {INSTALL_HINT} (and a Java runtime, 17 or later)."
        ) from exc
    # Arrow both ways (DataFrame.toArrow, createDataFrame from a pyarrow.Table) came with Spark 4.0.
    version = str(getattr(pyspark, "__version__", "0"))
    if int(version.split(".")[0]) < 4:
        raise ParameterError(f"The Spark engine needs pyspark 4.0 or later, found {version}: {INSTALL_HINT} -U.")


@contextmanager
def _quiet_pandas_warning() -> Iterator[None]:
    # pyspark warns on every Arrow conversion that it is not tested with the newest pandas; the conversions used
    # here are Arrow's own (pyarrow.Table.to_pandas), so the warning says nothing about them.
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="PySpark does not yet fully support", category=FutureWarning)
        yield


def _log4j2_file() -> str:
    """A log4j2 configuration limiting the driver's log to errors, written once per process."""
    global _log_config
    if _log_config is None or not Path(_log_config).exists():
        handle, name = tempfile.mkstemp(prefix="privdash-spark-log4j2-", suffix=".properties")
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(_LOG4J2)
        atexit.register(_remove, name)
        _log_config = name
    return _log_config


def _remove(name: str) -> None:
    Path(name).unlink(missing_ok=True)


def _check_master(master: str) -> None:
    """Refuse a master URL of no kind Spark knows, a malformed standalone URL, and one whose master answers on no
    address within :data:`CONNECT_SECONDS`."""
    if _OTHER_MASTERS.fullmatch(master):
        return  # Spark checks the rest when the session starts
    if not master.startswith("spark://"):
        raise ParameterError(
            f"Invalid Spark master URL {master!r}: use local[*], local[N], spark://host:port, yarn or k8s://host:port."
        )
    match = _STANDALONE.fullmatch(master)
    if match is None:
        raise ParameterError(f"Invalid Spark master URL {master!r}: expected spark://host:port (e.g. :7077).")
    reasons = []
    for address in match.group("hosts").split(","):
        host, _, port = address.rpartition(":")
        if not host or not port.isdigit():
            raise ParameterError(f"Invalid Spark master URL {master!r}: expected spark://host:port (e.g. :7077).")
        try:
            with socket.create_connection((host.strip("[]"), int(port)), timeout=CONNECT_SECONDS):
                return
        except OSError as exc:
            reasons.append(f"{address}: {exc.strerror or type(exc).__name__}")
    raise ParameterError(
        f"Cannot reach the Spark master {master} ({'; '.join(reasons)}, within {CONNECT_SECONDS:g} s). Check the "
        "host and port (the master's URL is shown at the top of its web UI) and that it is running."
    )


def _session_error(exc: Exception, master: str) -> ParameterError:
    reason = _reason(exc)
    if "JAVA_GATEWAY_EXITED" in str(exc) or "Java gateway process exited" in str(exc):
        found = shutil.which("java")
        where = f"'{found}' could not start it" if found else "no 'java' was found on the PATH"
        return ParameterError(
            f"Spark could not start its Java process ({where}): the Spark engine needs a Java runtime, 17 or later, "
            "on the PATH or in JAVA_HOME (e.g. apt-get install default-jre-headless)."
        )
    if master.startswith("spark://"):
        return ParameterError(f"The Spark master {master} did not accept the application: {reason}")
    return ParameterError(f"Spark could not start a session on {master}: {reason}")


def _reason(exc: BaseException) -> str:
    """The first informative line of a Spark or Py4J error, without Java class names and SQLSTATE."""
    lines = [line.strip() for line in str(exc).splitlines()]
    useful = [
        line
        for line in lines
        if line and not line.startswith(("An error occurred while calling", "at ", "...", "JVM stacktrace"))
    ]
    text = useful[0] if useful else type(exc).__name__
    text = re.sub(r"^:\s*", "", text)
    text = re.sub(r"^(?:[\w$]+\.)+[\w$]*(?:Exception|Error):\s*", "", text)
    text = re.sub(r"\s*SQLSTATE:\s*\w+\.?$", "", text).strip()
    return text.rstrip(".") + "."


def _spark_errors() -> tuple[type[BaseException], ...]:
    from py4j.protocol import Py4JError
    from pyspark.errors import PySparkException

    return (PySparkException, Py4JError)


def _column(name: str) -> Any:
    from pyspark.sql import functions as F

    return F.col("`" + name.replace("`", "``") + "`")


def _source_frame(spark: Any, source: Any) -> tuple[Any, _Text | None]:
    """A source that is not a Spark DataFrame, read in ``spark`` (see :func:`_spark_frame`)."""
    if isinstance(source, SparkTable):
        try:
            return spark.table(source.name), None
        except _spark_errors() as exc:
            raise DataReadError(f"Spark cannot read the table '{source.name}': {_reason(exc)}") from exc
    if isinstance(source, pd.DataFrame):
        return _from_pandas(spark, source), None
    paths = source_paths(source)
    kinds = {source_kind(path) for path in paths}
    if kinds == {"parquet"}:
        return _read_parquet(spark, paths), None
    if kinds != {"text"}:
        raise ParameterError(
            f"The Spark engine reads CSV and Parquet files; {paths[0].name} is neither. Use engine='pandas' for "
            "Excel files."
        )
    return _read_csv(spark, paths[0])


def _from_pandas(spark: Any, frame: pd.DataFrame) -> Any:
    import pyarrow as pa

    try:
        table = pa.Table.from_pandas(frame, preserve_index=False)
        # Categorical columns travel as their values: Spark has no dictionary type.
        table = table.cast(
            pa.schema(
                [
                    field.with_type(field.type.value_type) if pa.types.is_dictionary(field.type) else field
                    for field in table.schema
                ]
            )
        )
        return spark.createDataFrame(table)
    except (pa.ArrowException, *_spark_errors()) as exc:
        raise DataReadError(f"The DataFrame could not be handed to Spark: {_reason(exc)}") from exc


def _read_parquet(spark: Any, paths: list[Path]) -> Any:
    import pyarrow as pa
    import pyarrow.parquet as pq

    # Spark takes one file's schema and reads every file with it (a column missing from a file would silently be
    # null), so the files' columns are compared here, from their footers.
    first: list[str] | None = None
    for path in paths:
        try:
            schema = pq.read_schema(path)
        except (pa.ArrowException, OSError) as exc:
            raise DataReadError(f"{path.name} could not be read as a Parquet file: {_reason(exc)}") from exc
        nested = [f"{field.name} ({field.type})" for field in schema if pa.types.is_nested(field.type)]
        if nested:
            raise DataReadError(f"Nested columns cannot be analysed as values: {', '.join(nested)}.")
        wide = [
            f"'{field.name}' ({field.type.precision} digits)"
            for field in schema
            if pa.types.is_decimal(field.type) and field.type.precision > _SPARK_DECIMAL_DIGITS
        ]
        if wide:
            raise DataReadError(
                f"{path.name} has decimal columns wider than the {_SPARK_DECIMAL_DIGITS} digits Spark reads: "
                f"{', '.join(wide)}. Read it with engine='pandas'."
            )
        if first is None:
            first = list(schema.names)
        elif list(schema.names) != first:
            raise DataReadError(
                f"{path.name} has other columns than {paths[0].name}; a dataset needs one schema "
                f"({', '.join(schema.names)} against {', '.join(first)})."
            )
    # Unnamed pandas index columns are row labels, which the reader leaves out.
    index = sorted(pandas_index_columns(paths[0]))
    try:
        frame = spark.read.parquet(*[str(path.resolve()) for path in paths])
        return frame.drop(*index) if index else frame
    except _spark_errors() as exc:
        raise DataReadError(f"Spark could not read the Parquet source: {_reason(exc)}") from exc


def _read_csv(spark: Any, path: Path) -> tuple[Any, _Text]:
    """The file as a DataFrame of strings ``_0``, ``_1``... (one per header field, and one more that catches the
    fields of rows longer than the header), and the column names the reader gives the header."""
    from pyspark.sql import types as T

    with path.open("rb") as handle:
        sample = handle.read(1 << 20)
    if not sample.strip():
        raise DataReadError(f"{path.name} is empty.")
    check_delimited(sample, path.name, "Spark")
    encoding, delimiter = sniff_delimited(sample, path.name)
    charset = _java_charset(spark, encoding)
    if charset is None:
        raise ParameterError(
            f"{path.name} is encoded as {encoding}, which Spark's Java runtime does not read. Save it as UTF-8 or "
            "use engine='pandas'."
        )
    if charset.lower() not in _SPARK_CHARSETS and str(spark.conf.get(_LEGACY_CHARSETS, "false")).lower() != "true":
        raise ParameterError(
            f"{path.name} is encoded as {encoding}, which Spark reads only with {_LEGACY_CHARSETS}=true: set it on "
            "the session, save the file as UTF-8, or use engine='pandas'."
        )
    names = header_names(path, encoding, delimiter)
    ascii_compatible = "a\n".encode(encoding, errors="ignore") == b"a\n"
    # Line by line (split between tasks) only when no field can hold a line break and no row is all blanks: Spark's
    # line reader drops lines that are blank once trimmed, as a row of empty tab-separated fields is.
    multi_line = not ascii_compatible or delimiter == "\t" or file_contains(path, b'"')
    schema = T.StructType([T.StructField(f"_{i}", T.StringType()) for i in range(len(names) + 1)])
    reader = spark.read.options(
        header=True,
        enforceSchema=True,
        sep=delimiter,
        encoding=charset,
        quote='"',
        escape='"',
        multiLine=multi_line,
        ignoreLeadingWhiteSpace=True,
        ignoreTrailingWhiteSpace=False,
        mode="PERMISSIVE",
    )
    _mute_header_check(spark)
    try:
        return reader.schema(schema).csv(str(path.resolve())), _Text(path.name, names, CsvText(path, delimiter))
    except _spark_errors() as exc:
        raise DataReadError(f"Spark could not read {path.name}: {_reason(exc)}") from exc


def _java_charset(spark: Any, encoding: str) -> str | None:
    """The Java name of a Python codec, or None when the session's JVM does not have it."""
    try:
        name = codecs.lookup(encoding).name
    except LookupError:
        return None
    name = _JAVA_CHARSETS.get(name, name)
    jvm = getattr(spark, "_jvm", None)
    if jvm is None:  # a Spark Connect session: its server decides
        return name
    return name if jvm.java.nio.charset.Charset.isSupported(name) else None


def _mute_header_check(spark: Any) -> None:
    # The schema has one column more than the header (for longer rows), which Spark's header check would report as
    # a warning on every read.
    jvm = getattr(spark, "_jvm", None)
    if jvm is None:
        return
    try:
        jvm.org.apache.logging.log4j.core.config.Configurator.setLevel(
            "org.apache.spark.sql.catalyst.csv.CSVHeaderChecker", jvm.org.apache.logging.log4j.Level.ERROR
        )
    except Exception:  # another logging backend: the warning stays, nothing else changes
        return


def _text_aggregate(frame: Any, names: list[str], text: _Text) -> pd.DataFrame:
    from pyspark.sql import functions as F

    # Positional Spark names: a header may hold names Spark would resolve otherwise (dots, case-insensitive twins).
    # The extra column is grouped too: a row with more fields than the header has a value in it, and is refused.
    width = len(text.names)
    columns = [F.col(f"_{text.names.index(name)}") for name in names] + [F.col(f"_{width}")]
    result = _collect(frame.groupBy(*columns), [*names, _EXTRA])
    _refuse_longer_rows(result[_EXTRA], text)
    return type_like_the_reader(result.drop(columns=_EXTRA), names, text.csv)


def _refuse_longer_rows(extra: pd.Series, text: _Text) -> None:
    if extra.notna().any():
        raise DataReadError(
            f"{text.name} is not a consistent table: a row has more fields than the header's {len(text.names)}. "
            "Quote values that contain the delimiter, or remove the extra fields."
        )


def _collect(grouped: Any, names: list[str]) -> pd.DataFrame:
    """The counts of a Spark ``GroupedData`` as pandas, through Arrow (columns ``names`` + :data:`COUNT`)."""
    from pyspark.sql import functions as F

    try:
        table = grouped.agg(F.count(F.lit(1)).alias(COUNT)).toArrow()
    except _spark_errors() as exc:
        raise DataReadError(f"Spark could not count the source: {_reason(exc)}") from exc
    result, _ = arrow_frame(table)  # decimals typed as the reader types them, exactly
    result.columns = [*names, COUNT]
    return result


def _check_flat(frame: Any, names: list[str]) -> None:
    from pyspark.sql import types as T

    nested = [
        f"{field.name} ({field.dataType.simpleString()})"
        for field in frame.schema.fields
        if field.name in names and isinstance(field.dataType, T.StructType | T.ArrayType | T.MapType)
    ]
    if nested:
        raise DataReadError(f"Nested columns cannot be analysed as values: {', '.join(nested)}.")
