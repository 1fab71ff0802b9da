"""Server-side sources: tables the administrator lets the dashboard diagnose where they live.

A source is a folder or glob of Parquet files (or one CSV / Parquet file) on the server, a PostgreSQL table or SQL
query (``"sql"``; ``"query"`` is its old spelling, still read),
or files read by Spark. The administrator lists them in a JSON file named by ``PRIVDASH_SOURCES``::

    {
      "census": {"title": "Census 2021 extract", "path": "/data/census/*.parquet", "memory_limit": "6GB"},
      "patients": {"title": "Hospital admissions", "url": "postgresql://reader:secret@db:5432/health",
                   "table": "admissions"},
      "lake": {"title": "Survey lake (Spark)", "path": "/lake/survey/", "engine": "spark", "master": "local[2]"}
    }

Users pick a source by its title; its location and credentials never leave the server (pages and links name it
``source:<name>``). Numbers come from the source's engine (only the per-class aggregate is brought back); the page
shows a preview of the first rows. Steps that need every row in the worker's memory (fixes, QI combinations,
postcode recoding) are refused for a source with a message pointing to ``privdash anonymize --engine duckdb``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from privdash.engines.aggregate import DatabaseSource, Engine
from privdash.errors import ParameterError, PrivdashError

__all__ = ["SOURCE_PREFIX", "ServerSource", "SourceError", "load_sources", "preview"]

SOURCE_PREFIX = "source:"
_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
_KEYS = {"title", "path", "url", "table", "sql", "query", "engine", "master", "memory_limit", "temp_directory"}


class SourceError(PrivdashError):
    """A server-side source that cannot be used (bad configuration, unreachable, a step it cannot run)."""


@dataclass(frozen=True)
class ServerSource:
    """One configured source (see the module docstring)."""

    name: str
    title: str
    path: str | None = None
    url: str | None = None
    table: str | None = None
    sql: str | None = None
    engine: Engine = Engine.AUTO
    master: str | None = None
    memory_limit: str | None = None
    temp_directory: str | None = None

    @property
    def dataset_id(self) -> str:
        return SOURCE_PREFIX + self.name

    @property
    def location(self) -> Any:
        """What the core's engines read: a path or glob, or a :class:`DatabaseSource`."""
        if self.url is not None:
            return DatabaseSource(self.url, table=self.table, sql=self.sql)
        return self.path

    def describe(self) -> str:
        """A description without credentials: the kind of source and its engine."""
        if self.url is not None:
            what = f"table {self.table}" if self.table else "a query"
            return f"PostgreSQL, {what}"
        return f"{Path(str(self.path)).name or self.path}, engine {self.engine.value}"

    def engine_options(self) -> dict[str, Any]:
        """Keyword arguments of :func:`~privdash.diagnose` for this source."""
        return {
            "engine": self.engine,
            "memory_limit": self.memory_limit,
            "temp_directory": self.temp_directory,
            "spark_master": self.master,
        }


def load_sources(path: Path | None) -> dict[str, ServerSource]:
    """The sources listed in the JSON file ``path`` (none when ``path`` is None); raises :class:`ParameterError`
    naming the entry and the problem."""
    if path is None:
        return {}
    try:
        document = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise ParameterError(f"PRIVDASH_SOURCES: cannot read {path}: {exc.strerror or exc}.") from None
    except json.JSONDecodeError as exc:
        raise ParameterError(f"PRIVDASH_SOURCES: {path} is not valid JSON ({exc.msg}, line {exc.lineno}).") from None
    if not isinstance(document, Mapping):
        raise ParameterError("PRIVDASH_SOURCES: the file must hold one JSON object of named sources.")
    sources = {}
    for name, entry in document.items():
        sources[str(name)] = _source(str(name), entry)
    return sources


def _source(name: str, entry: Any) -> ServerSource:
    where = f"PRIVDASH_SOURCES, source '{name[:64]}'"
    if not _NAME.fullmatch(name):
        raise ParameterError(f"{where}: a name has 1 to 64 letters, digits, '-' or '_'.")
    if not isinstance(entry, Mapping):
        raise ParameterError(f"{where}: give an object with a 'path' or a 'url'.")
    unknown = sorted(set(entry) - _KEYS)
    if unknown:
        raise ParameterError(f"{where}: unknown key(s) {', '.join(unknown)}; known: {', '.join(sorted(_KEYS))}.")
    text = {key: str(value) for key, value in entry.items() if value is not None}
    if ("path" in text) == ("url" in text):
        raise ParameterError(f"{where}: give exactly one of 'path' (files) and 'url' (a database).")
    if "query" in text:  # the old spelling of "sql", read for one release
        if "sql" in text:
            raise ParameterError(f"{where}: give 'sql' ('query' is its old spelling), not both.")
        text["sql"] = text.pop("query")
    if "url" in text and ("table" in text) == ("sql" in text):
        raise ParameterError(f"{where}: a database source needs exactly one of 'table' and 'sql'.")
    engine = Engine.parse(text.get("engine", "auto"))
    if "url" in text:
        engine = Engine.POSTGRESQL
    return ServerSource(
        name=name,
        title=text.get("title", name),
        path=text.get("path"),
        url=text.get("url"),
        table=text.get("table"),
        sql=text.get("sql"),
        engine=engine,
        master=text.get("master"),
        memory_limit=text.get("memory_limit"),
        temp_directory=text.get("temp_directory"),
    )


def preview(source: ServerSource, rows: int) -> pd.DataFrame:
    """The first ``rows`` rows of the source, read by its engine (a preview and a sample for role suggestions; never
    the basis of a number)."""
    from privdash.engines.aggregate import sample_rows

    return sample_rows(source.location, rows, engine=source.engine, spark_master=source.master)
