"""What the readers of every format share: file signatures and extensions, the missing-value markers, the
cleaning of column names and the wording of a library's failure."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

from privdash.errors import format_values

_TEXT_EXTENSIONS = {".csv", ".tsv", ".txt", ".dat", ".tab"}
_EXCEL_EXTENSIONS = {".xlsx", ".xlsm"}
_PARQUET_EXTENSIONS = {".parquet", ".pq"}

#: The pandas default missing-value markers (``pandas.read_csv``'s ``na_values``), applied to Excel text cells too.
_NA_MARKERS = frozenset(
    {
        "", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND", "1.#QNAN", "<NA>", "N/A",
        "NA", "NULL", "NaN", "None", "n/a", "nan", "null",
    }
)  # fmt: skip


def _reason(exc: BaseException) -> str:
    """The first line of an exception's message, shortened: libraries may put a whole schema in it."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return (text[:200] + "...") if len(text) > 200 else text.rstrip(".")


_OLE2 = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
_ZIP = (b"PK\x03\x04", b"PK\x05\x06")
_GZIP = b"\x1f\x8b"


def _looks_like(raw: bytes) -> str:
    """A hint on what a file that is not what its extension says holds."""
    head = raw[:4096]
    if b"\x00" in head:
        return ""
    try:
        head.decode("utf-8")
    except UnicodeDecodeError:
        return ""
    return "; its content is plain text: if it is a CSV table, give it the .csv extension"


def _column_names(header: Sequence[object], label: str) -> tuple[list[str], list[str]]:
    """Names from a header row: stripped, empty ones ``Unnamed: i``, repeated ones suffixed; notes on both."""
    names = ["" if _is_missing(value) else str(value).strip() for value in header]
    unnamed = [i for i, name in enumerate(names) if not name]
    names = [name or f"Unnamed: {i}" for i, name in enumerate(names)]
    notes = []
    if unnamed and len(unnamed) < len(names):
        positions = format_values([i + 1 for i in unnamed])
        notes.append(
            f"{label}: the header has no name for column {positions} (counting from 1); "
            f"named {format_values([names[i] for i in unnamed])}."
        )
    counts = Counter(names)
    repeated = [name for name, count in counts.items() if count > 1]
    if repeated:
        taken = set(names)
        seen: Counter[str] = Counter()
        renamed = []
        for i, name in enumerate(names):
            if counts[name] < 2:
                continue
            seen[name] += 1
            if seen[name] == 1:
                continue
            suffix = seen[name] - 1
            while f"{name}.{suffix}" in taken:
                suffix += 1
            names[i] = f"{name}.{suffix}"
            taken.add(names[i])
            renamed.append(names[i])
        notes.append(
            f"{label}: the header repeats the column name {format_values(repeated)}; "
            f"the repeats were renamed {format_values(renamed)}."
        )
    return names, notes


def _is_missing(value: object) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


#: Format -> how messages name it.
_STATISTICAL_FORMATS = {
    "spss": "an SPSS data file",
    "stata": "a Stata data file",
    "sas7bdat": "a SAS data set (.sas7bdat)",
    "xport": "a SAS transport file (XPORT)",
}
