"""SPSS, Stata and SAS files: their signatures, the rows the limits allow, value labels, declared missing values
and encodings (rules in :mod:`privdash.data.tables`)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from privdash.data.tables.common import _GZIP, _OLE2, _STATISTICAL_FORMATS, _ZIP, _column_names, _looks_like
from privdash.data.tables.limits import ReadLimits, _Deadline
from privdash.data.tables.readstat import _FALLBACK_ENCODING, _Readstat, _readstat_read
from privdash.errors import DataReadError, ParameterError, format_values

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

    pyreadstat runs in a worker process (:mod:`privdash.data.tables._readstat_worker`): a crash of its C parser on a
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
