"""Bounds on what reading a table may hold and the time it may take (:class:`ReadLimits`, :data:`DEFAULT_READ_LIMITS`),
and the deadline every reader checks."""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

from privdash.errors import ParameterError, ReadLimitError, format_values

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_DECOMPRESSED_BYTES",
    "DEFAULT_READ_LIMITS",
    "EXCEL_MAX_COLUMNS",
    "EXCEL_MAX_ROWS",
    "ReadLimits",
]


DEFAULT_MAX_BYTES = 100 * 1024 * 1024
#: Decompression-bomb protection of every read: a workbook whose ZIP entries (or a Parquet file whose row groups)
#: expand to more than 1 GiB is refused before anything is decompressed. Legitimate workbooks expand 5 to 20
#: times; at 1 GiB of XML openpyxl would parse for many minutes.
DEFAULT_MAX_DECOMPRESSED_BYTES = 1 << 30
#: The largest sheet Excel itself can hold (rows including the header, and columns, XFD).
EXCEL_MAX_ROWS = 1_048_576
EXCEL_MAX_COLUMNS = 16_384

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
