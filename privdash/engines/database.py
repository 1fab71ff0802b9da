"""The per-combination aggregate of a PostgreSQL table or query, computed by the database where the data lives.

:func:`database_aggregate` runs one statement,

    ``COPY (SELECT c1, ..., COUNT(*) FROM <table | (query) AS src> GROUP BY c1, ...) TO STDOUT (FORMAT csv)``

and only its result, one row per distinct combination of the requested columns, crosses the wire: the raw rows
never leave the server. The result arrives as one stream of CSV, which Arrow parses in bulk (no Python object per
value; a ``NULL`` is an unquoted empty field and an empty text a quoted one, so the two stay apart). Identifiers are
quoted by :mod:`psycopg.sql`; a query is the user's own SQL, run with the user's role, as a subquery (so it must be
one ``SELECT``, without a second statement). :func:`database_sample` reads the first rows the same way.

Nothing is written: the statement runs in a ``READ ONLY`` transaction, which PostgreSQL enforces (a query that
inserts, updates, deletes, creates or calls ``nextval`` is refused; a data-modifying ``WITH`` is refused inside a
subquery), and the transaction is rolled back. Connecting gives up after :data:`CONNECT_TIMEOUT_SECONDS` (a
``connect_timeout`` in the URL takes precedence).

Same numbers as the pandas reader
---------------------------------
The aggregate is typed as :func:`~privdash.data.tables.read_table` types the same table saved as CSV:

* every value comes back as the text PostgreSQL writes for it (its type's output function, as COPY and psql show
  it);
* integer, floating-point and ``numeric`` columns are typed from that text by the reader's own rules
  (:func:`~privdash.engines.common.type_like_the_reader`): integers are ``int64``, or ``float64`` when the
  column has missing values (integers over 15 digits with missing values stay text, which a float would round);
  decimals are ``float64`` when a double holds them exactly (else text, as the reader keeps them); a float column
  of whole numbers without missing values is ``int64``, as its CSV would be;
* every other column (text, ``varchar``, ``char``, booleans, dates, timestamps, UUIDs ...) is that text (``t`` and
  ``f`` for booleans, ``2024-01-31`` for a date), which is what ``read_table`` keeps for such a CSV column; a
  ``char(n)`` value without the spaces that pad it to its length (PostgreSQL ignores them too).

The database's types are authoritative: a text column of digits stays text, and a text is kept as stored (the
reader would take ``NA`` or an empty field for a missing value). ``NULL``, and a floating ``NaN`` as in pandas, is
the missing value.

Credentials: every message names the source through :func:`redact_url`, and any password that a driver message
might repeat is masked too.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import unquote

import numpy as np
import pandas as pd
import pyarrow as pa
from pyarrow import csv as arrow_csv

from privdash.engines.common import COUNT, DatabaseSource, first_line, is_database_url, type_like_the_reader
from privdash.errors import DataReadError, ParameterError, check_columns

__all__ = ["CONNECT_TIMEOUT_SECONDS", "NUMERIC_TYPES", "database_aggregate", "database_sample", "redact_url"]

#: Seconds to wait for the server to answer a connection, unless the URL sets ``connect_timeout``.
CONNECT_TIMEOUT_SECONDS = 10
#: PostgreSQL types whose text the reader's numeric rules type; every other type is kept as text.
NUMERIC_TYPES = frozenset({"int2", "int4", "int8", "oid", "float4", "float8", "numeric"})
_FLOATING = frozenset({"float4", "float8", "numeric"})
_COUNT_KIND = "count"
#: char(n): text padded with spaces to its length.
_PADDED_TEXT = "bpchar"
#: How the grouped relation is named in the statement.
_ALIAS = "src"
_INSTALL = "pip install 'privdash[postgres]'"
_PASSWORD_PARAMETER = re.compile(r"(?i)(\bpassword\s*=\s*)('(?:[^'\\]|\\.)*'|[^&\s]*)")


def redact_url(url: str) -> str:
    """``url`` with its password replaced by ``***`` (in the user part and in a ``password=`` parameter).

    When the URL is ambiguous (an ``@`` after the host), more than the password is masked, never less.
    """
    text = str(url)
    scheme, separator, rest = text.partition("://")
    if separator:
        at = rest.rfind("@")
        if at >= 0:
            user, colon, _ = rest[:at].partition(":")
            if colon:
                rest = f"{user}:***{rest[at:]}"
        text = scheme + separator + rest
    return _PASSWORD_PARAMETER.sub(r"\1***", text)


def _secrets(url: str) -> list[str]:
    """The password texts of ``url`` (as written and percent-decoded), longest first."""
    found = []
    _, separator, rest = url.partition("://")
    if separator and "@" in rest:
        _, colon, password = rest[: rest.rfind("@")].partition(":")
        if colon:
            found.append(password)
    found += [match.group(2).strip("'") for match in _PASSWORD_PARAMETER.finditer(url)]
    # Very short passwords are not searched for: masking every "a" would garble the message, and libpq's
    # messages do not repeat passwords anyway (this is a second line of defence).
    texts = {text for secret in found for text in (secret, unquote(secret)) if len(text) >= 3}
    return sorted(texts, key=len, reverse=True)


def _clean(message: str, url: str) -> str:
    for secret in _secrets(url):
        message = message.replace(secret, "***")
    return message


def database_aggregate(source: DatabaseSource | str, names: list[str]) -> pd.DataFrame:
    """``SELECT names..., COUNT(*) GROUP BY names`` run in PostgreSQL, typed as the reader types a CSV (see the
    module docstring); the count column is :data:`~privdash.engines.common.COUNT`.

    Raises :class:`ParameterError` when the source names no table or query, :class:`ColumnError` for unknown
    columns, and :class:`DataReadError` when the database cannot be reached or refuses the statement.
    """
    with _reading(source) as (cursor, relation, sql):
        columns = _describe(cursor, relation, sql)
        check_columns(pd.DataFrame(columns=[name for name, _ in columns]), names, role="column")
        grouped = sql.SQL(", ").join(sql.Identifier(_ALIAS, name) for name in names)
        statement = sql.SQL("SELECT {}, COUNT(*) FROM {} GROUP BY {}").format(grouped, relation, grouped)
        kinds = dict(columns)
        return _fetch(cursor, statement, [*names, COUNT], [*(kinds[name] for name in names), _COUNT_KIND])


def database_sample(source: DatabaseSource, rows: int) -> pd.DataFrame:
    """The first ``rows`` rows of the table or query (``LIMIT``), typed as :func:`database_aggregate` types values
    (a preview: numeric columns are typed from these rows only, floating ones always as floats)."""
    with _reading(source) as (cursor, relation, sql):
        columns = _describe(cursor, relation, sql)
        statement = sql.SQL("SELECT * FROM {} LIMIT {}").format(relation, sql.Literal(int(rows)))
        frame = _fetch(cursor, statement, [name for name, _ in columns], [kind for _, kind in columns])
    # A few whole numbers of a floating column would type it as integers; the column's type says what it holds.
    floating = [
        position
        for position, (_, kind) in enumerate(columns)
        if kind in _FLOATING and pd.api.types.is_integer_dtype(frame.iloc[:, position])
    ]
    for position in floating:
        frame.isetitem(position, frame.iloc[:, position].to_numpy(dtype=np.float64))
    return frame


@contextlib.contextmanager
def _reading(source: DatabaseSource | str) -> Iterator[tuple[Any, Any, Any]]:
    """A cursor in a read-only transaction on the source's database, the source as the relation ``src``, and
    :mod:`psycopg.sql`; every driver error becomes one :class:`DataReadError` naming the source without password."""
    checked = _checked(source)
    url = _libpq_url(checked.url)
    try:
        import psycopg
        from psycopg import sql
    except ImportError:
        raise DataReadError(f"Reading from PostgreSQL needs psycopg: {_INSTALL}.") from None
    shown = redact_url(checked.url)
    what = f"table {checked.table}" if checked.table is not None else "the query"
    relation = (
        sql.SQL("{} AS {}").format(sql.Identifier(*checked.table.split(".", 1)), sql.Identifier(_ALIAS))
        if checked.table is not None
        else sql.SQL("({}) AS {}").format(sql.SQL(_query_text(checked.sql or "")), sql.Identifier(_ALIAS))
    )
    try:
        connection = psycopg.connect(url, **_connect_options(psycopg, url))
    except psycopg.Error as exc:
        raise DataReadError(_clean(f"Could not connect to {shown}: {_connect_reason(exc)}", checked.url)) from None
    try:
        connection.read_only = True  # BEGIN READ ONLY: PostgreSQL refuses any write
        with connection.cursor() as cursor:
            try:
                yield cursor, relation, sql
            except psycopg.Error as exc:
                raise DataReadError(_clean(_query_message(psycopg, exc, what, shown), checked.url)) from None
    finally:
        _close(connection)


def _describe(cursor: Any, relation: Any, sql: Any) -> list[tuple[str, str]]:
    """The relation's columns and their type names (``SELECT * ... LIMIT 0``)."""
    cursor.execute(sql.SQL("SELECT * FROM {} LIMIT 0").format(relation))
    types = cursor.connection.adapters.types
    return [
        (str(column.name), str(info.name) if (info := types.get(column.type_code)) is not None else "")
        for column in cursor.description or ()
    ]


def _fetch(cursor: Any, statement: Any, names: list[str], kinds: list[str]) -> pd.DataFrame:
    """The rows of ``statement`` as a frame (:func:`_frame`), sent as ``COPY (statement) TO STDOUT (FORMAT csv)``.

    COPY writes each value as its type's output function does and sends the rows as one stream of CSV, which Arrow
    parses in bulk (no Python object per value). A NULL is an unquoted empty field and an empty text a quoted one,
    so the two stay apart.
    """
    from psycopg import sql

    with cursor.copy(sql.SQL("COPY ({}) TO STDOUT (FORMAT csv)").format(statement)) as copy:
        data = b"".join(copy)
    # Arrow's own column names: a query's may repeat.
    types = {f"c{position}": pa.int64() if kind == _COUNT_KIND else pa.string() for position, kind in enumerate(kinds)}
    if not data:
        return _frame(pa.table({field: pa.array([], type=kind) for field, kind in types.items()}), names, kinds)
    try:
        table = arrow_csv.read_csv(
            pa.py_buffer(data),
            read_options=arrow_csv.ReadOptions(column_names=list(types)),
            parse_options=arrow_csv.ParseOptions(newlines_in_values=True, ignore_empty_lines=False),
            convert_options=arrow_csv.ConvertOptions(
                column_types=types, null_values=[""], strings_can_be_null=True, quoted_strings_can_be_null=False
            ),
        )
    except pa.ArrowException as exc:  # COPY writes well-formed CSV: this would be a fault of the server or driver
        raise DataReadError(f"The rows PostgreSQL sent could not be parsed: {first_line(exc)}") from None
    return _frame(table, names, kinds)


def _checked(source: DatabaseSource | str) -> DatabaseSource:
    if isinstance(source, str) and is_database_url(source):
        raise ParameterError(
            f"{redact_url(source)} is a database: name the records with DatabaseSource(url, table=...) or "
            "DatabaseSource(url, sql='SELECT ...') (--table or --sql on the command line)."
        )
    if not isinstance(source, DatabaseSource):
        raise ParameterError(
            "The postgresql engine reads a table or a query of a database, DatabaseSource(url, table=...) or "
            f"DatabaseSource(url, sql=...), not a {type(source).__name__}; files are read by pandas or duckdb."
        )
    if not is_database_url(source.url):
        raise ParameterError(f"{redact_url(source.url)} is not a PostgreSQL URL (postgresql://user@host/db).")
    if (source.table is None) == (source.sql is None):
        raise ParameterError(
            f"Give either a table or a query for {redact_url(source.url)}"
            + (", not both." if source.table is not None else ".")
        )
    if source.table is not None and not source.table.strip():
        raise ParameterError("The table name is empty.")
    if source.sql is not None and not _query_text(source.sql):
        raise ParameterError("The query is empty.")
    return source


def _libpq_url(url: str) -> str:
    # SQLAlchemy's spelling names the driver; libpq knows the plain scheme.
    return "postgresql://" + url.split("://", 1)[1] if url.startswith("postgresql+psycopg://") else url


def _query_text(query: str) -> str:
    # A trailing semicolon is habit, not a second statement; inside the subquery it would be a syntax error.
    return query.strip().rstrip(";").strip()


def _connect_options(psycopg: Any, url: str) -> dict[str, Any]:
    try:
        given = psycopg.conninfo.conninfo_to_dict(url)
    except psycopg.Error:
        given = {}  # connect() reports the malformed URL
    # COPY's text is parsed as UTF-8 whatever the server's or the URL's encoding (the server converts).
    options: dict[str, Any] = {"autocommit": False, "client_encoding": "UTF8"}
    if "connect_timeout" not in given:
        options["connect_timeout"] = CONNECT_TIMEOUT_SECONDS
    if "application_name" not in given:
        options["application_name"] = "privdash"
    return options


def _connect_reason(exc: Exception) -> str:
    """libpq's reason without its framing: ``connection failed: connection to server at ... failed: FATAL: x``."""
    lines = [line.strip() for line in str(exc).strip().splitlines() if line.strip()]
    if not lines:
        return type(exc).__name__ + "."
    reason = lines[0].rsplit(" failed: ", 1)[-1]
    for prefix in ("connection failed: ", "connection is bad: ", "FATAL:  ", "FATAL: "):
        reason = reason.removeprefix(prefix)
    reason = reason.rstrip(".") + "."
    if len(lines) > 1 and lines[1].startswith("Is the server"):
        reason += " " + lines[1]
    return reason


def _query_message(psycopg: Any, exc: Exception, what: str, shown: str) -> str:
    diag = getattr(exc, "diag", None)
    primary = (getattr(diag, "message_primary", None) or str(exc).strip().splitlines()[0]).rstrip(".")
    if isinstance(exc, psycopg.errors.ReadOnlySqlTransaction | psycopg.errors.FeatureNotSupported) and (
        "read-only" in primary or "data-modifying" in primary
    ):
        return f"The query tries to change the database ({primary}); privdash only reads: give a query that reads."
    if isinstance(exc, psycopg.errors.SyntaxError):
        return f"The query is not valid SQL ({primary}); it must be one SELECT statement."
    if isinstance(exc, psycopg.errors.UndefinedTable) and what.startswith("table"):
        return f"{what.capitalize()} does not exist in {shown} ({primary})."
    if isinstance(exc, psycopg.OperationalError) and not getattr(exc, "sqlstate", None):
        return f"The connection to {shown} was lost: {_connect_reason(exc)}"
    return f"PostgreSQL could not read {what} in {shown}: {primary}."


def _close(connection: Any) -> None:
    # Roll back rather than commit: the transaction read, so there is nothing to keep.
    with contextlib.suppress(Exception):  # a broken connection is closed all the same
        connection.rollback()
    connection.close()


def _frame(table: Any, names: list[str], kinds: list[str]) -> pd.DataFrame:
    """Columns of text (an Arrow table) as a frame: numeric types by the reader's rules, the count as int64, every
    other column as the reader's text column (Python strings, NaN for missing: pandas' text dtype)."""
    import pyarrow.compute as pc

    built: dict[int, Any] = {}
    for position, (name, kind) in enumerate(zip(names, kinds, strict=True)):
        values = table.column(position)
        if kind == _PADDED_TEXT:
            # char(n) pads its values with spaces, which PostgreSQL itself ignores (and the reader removes).
            values = pc.utf8_rtrim(values, characters=" ")
        column = values.to_pandas()
        if kind in NUMERIC_TYPES:
            column = type_like_the_reader(column.rename(name).to_frame(), [name])[name]
            if not pd.api.types.is_numeric_dtype(column):  # kept as text by the reader's rules
                text = column.to_numpy(dtype=object, copy=True)
                text[pd.isna(text)] = np.nan
                column = pd.Series(text)
        built[position] = column.reset_index(drop=True)
    frame = pd.DataFrame(built, index=pd.RangeIndex(table.num_rows))
    frame.columns = pd.Index(names)
    return frame
