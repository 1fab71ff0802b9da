"""A corpus of bad input files for the table reader, generated on demand (nothing here is committed as a binary).

:func:`write_corpus` writes every file into a folder and returns the :class:`Case` list: for each file, what a
reader must do with it, either refuse it with a :class:`~privdash.errors.DataReadError` whose message matches
``error`` (a regular expression, searched), or read it into a table of ``shape`` with the stated columns, values
and, for ``privdash diagnose FILE --qi <qi>``, the stated ``k`` and number of classes.

The module has no test-framework dependency: the CLI tests (``tests/integration/cli/test_bad_files.py``), the
reader's unit tests and the upload endpoint's tests all run the same cases::

    from tests.badfiles import write_corpus
    for case in write_corpus(folder):
        ...  # case.path, case.error or case.shape/columns/values/k/classes; case.sheet; case.limits

Cases with ``limits`` hold for :func:`~privdash.data.tables.read_table` with those limits (a server sets them
from its settings; the command line reads with the defaults, and the same file has a case without limits). Cases
with ``upload=False`` are about a path (a folder, a missing or unreadable file) and mean nothing for an upload.
Cases with ``engine`` are counted by that engine on the command line (the reader must agree); cases with
``dataset`` are folders of Parquet files, which only the engines read. Everything is deterministic (fixed seeds)
and takes a few seconds to write; the decompression bombs are built from one compressed block repeated, or from
one long value referenced by every row, so they cost kilobytes to write and at most megabytes on disk.
"""

from __future__ import annotations

import gzip
import io
import os
import random
import struct
import zipfile
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from privdash.data.tables import ReadLimits

__all__ = ["Case", "write_corpus"]


@dataclass(frozen=True)
class Case:
    """One file of the corpus and what reading it must give.

    Attributes
    ----------
    name
        Unique short id (used as the test id).
    path
        The file (or folder, or missing path).
    description
        What is wrong with it, in words.
    error
        Regular expression the error message must match (``re.search``); None: the file must read.
    shape
        ``(rows, columns)`` of the table read.
    columns
        The leading column names of the table read.
    values
        Column -> the leading values of that column (``None`` for a missing value).
    qi
        The quasi-identifier for ``diagnose`` (default: the first column).
    k, classes
        The smallest class size and the number of classes ``diagnose --qi <qi>`` must report.
    note
        Regular expression that one of :attr:`TableInfo.notes` must match.
    warning
        Regular expression that one of the diagnosis warnings (:attr:`Diagnosis.warnings`) must match.
    sheet
        The sheet to read (``--sheet``), for workbooks.
    limits
        Read with these limits instead of the defaults (not expressible on the command line).
    upload
        False for path cases (a folder, a missing or unreadable file): nothing to upload.
    engine
        The engine ``diagnose`` counts with (``--engine``); None: the command line's choice (``auto``). The reader
        must read the file as the case says too (an engine never answers otherwise than the reader), except when
        the case's error is the engine's own refusal of a file it cannot read.
    dataset
        True for a folder of Parquet files, a dataset that the engines read (``diagnose FOLDER``); the reader reads
        files only, so such a case runs through the command line alone (and is never uploaded).
    """

    name: str
    path: Path
    description: str
    error: str | None = None
    shape: tuple[int, int] | None = None
    columns: tuple[str, ...] | None = None
    values: Mapping[str, tuple[object, ...]] = field(default_factory=dict)
    qi: str | None = None
    k: int | None = None
    classes: int | None = None
    note: str | None = None
    warning: str | None = None
    sheet: str | int | None = None
    limits: ReadLimits | None = None
    upload: bool = True
    engine: str | None = None
    dataset: bool = False

    @property
    def reads(self) -> bool:
        """True when the file must be read (no error expected)."""
        return self.error is None

    @property
    def quasi_identifier(self) -> str:
        """The column given to ``--qi``: ``qi``, else the first of ``columns``, else the first of ``values``."""
        if self.qi is not None:
            return self.qi
        if self.columns:
            return self.columns[0]
        return next(iter(self.values), "a")


def write_corpus(folder: str | os.PathLike[str]) -> list[Case]:
    """Write every file of the corpus into ``folder`` (created if needed) and return the cases, at least 40."""
    root = Path(folder)
    root.mkdir(parents=True, exist_ok=True)
    cases: list[Case] = []
    cases += _text_cases(root)
    cases += _number_cases(root)
    cases += _header_cases(root)
    cases += _limit_cases(root)
    cases += _excel_cases(root)
    cases += _parquet_cases(root)
    cases += _statistical_cases(root)
    cases += _path_cases(root)
    cases += _engine_cases(root)
    cases += _decoded_size_cases(root)
    cases += _audit_cases(root)
    names = [case.name for case in cases]
    assert len(names) == len(set(names)), "case names must be unique"
    return cases


def _write(root: Path, name: str, content: bytes) -> Path:
    path = root / name
    path.write_bytes(content)
    return path


# ------------------------------------------------------------------------------------------------------ text files


def _text_cases(root: Path) -> list[Case]:
    rng = random.Random(7)
    garbage = bytes(rng.randrange(256) for _ in range(4096))
    controls = bytes(rng.choice([*range(1, 9), *range(14, 32), *range(65, 91)]) for _ in range(4096))
    big = "id,town\n" + "".join(f"{i},town{i % 10}\n" for i in range(100_000))  # about 1.5 MB
    assert len(big) > 1 << 20
    nul_late = big.encode() + b"100000,town\x00x\n"
    nul_position = nul_late.index(b"\x00")
    people = "name,town\nÉlodie,Québec\nZoë,Montréal\nAnaïs,Québec\n"
    long_value = "x" * 2_000_000
    return [
        Case("empty", _write(root, "empty.csv", b""), "no bytes at all", error=r"is empty"),
        Case("header_only", _write(root, "header_only.csv", b"a,b,c\n"), "a header, no rows", error=r"no data rows"),
        Case("only_blanks", _write(root, "blanks.csv", b"  \n\n\t \n  \n"), "spaces and newlines", error=r"is empty"),
        Case("binary_garbage", _write(root, "garbage.csv", garbage), "random bytes", error=r"looks binary"),
        Case(
            "control_characters",
            _write(root, "controls.csv", controls),
            "bytes without NUL but full of control characters",
            error=r"looks binary",
        ),
        Case(
            "nul_in_the_middle",
            _write(root, "nul_middle.csv", b"a,b\n1,2\n3,\x004\n5,6\n"),
            "a NUL byte inside a value",
            error=r"NUL bytes, the first at byte 10\b",
        ),
        Case(
            "nul_after_1mb",
            _write(root, "nul_late.csv", nul_late),
            "a valid table whose last row, after the first megabyte, holds a NUL byte",
            error=rf"NUL bytes, the first at byte {nul_position:,}",
        ),
        Case(
            "utf16_bom",
            _write(root, "utf16.csv", people.encode("utf-16")),
            "UTF-16 text with a byte-order mark",
            shape=(3, 2),
            columns=("name", "town"),
            values={"name": ("Élodie", "Zoë", "Anaïs"), "town": ("Québec", "Montréal", "Québec")},
            qi="town",
            k=1,
            classes=2,
        ),
        Case(
            "utf16_without_bom",
            _write(root, "utf16_nobom.csv", people.encode("utf-16-le")),
            "UTF-16 text without a byte-order mark",
            error=r"looks binary.*UTF-16",
        ),
        Case(
            "latin1",
            _write(root, "latin1.csv", (people * 1).encode("latin-1")),
            "Latin-1 text",
            shape=(3, 2),
            values={"town": ("Québec", "Montréal", "Québec")},
            qi="town",
            k=1,
            classes=2,
        ),
        Case(
            "bom_semicolon",
            _write(root, "bom_semicolon.csv", "\ufeffname;age\nAnn;30\nBob;30\nCid;41\n".encode()),
            "UTF-8 byte-order mark and ';' between fields",
            shape=(3, 2),
            columns=("name", "age"),
            values={"age": (30, 30, 41)},
            qi="age",
            k=1,
            classes=2,
        ),
        Case(
            "mixed_line_endings",
            _write(root, "line_endings.csv", b"a,b\r\n1,x\n2,y\r3,x\r\n4,y\n"),
            "\\r\\n, \\n and \\r line endings in one file",
            shape=(4, 2),
            values={"a": (1, 2, 3, 4), "b": ("x", "y", "x", "y")},
            qi="b",
            k=2,
            classes=2,
        ),
        Case(
            "unterminated_quote",
            _write(root, "open_quote.csv", b'a,b\n1,"x\n2,y\n3,z\n'),
            "a quote opened and never closed",
            error=r"quote .* never closed",
        ),
        Case(
            "quote_inside_field",
            _write(root, "inner_quote.csv", b'a,b\n1,x"y\n2,z\n'),
            "a lone quote in the middle of a field (literal)",
            shape=(2, 2),
            values={"b": ('x"y', "z")},
            k=1,
            classes=2,
        ),
        Case(
            "quoted_newline",
            _write(root, "quoted_newline.csv", b'a,b\n1,"line one\nline two"\n2,z\n'),
            "a quoted value spanning two lines",
            shape=(2, 2),
            values={"b": ("line one\nline two", "z")},
            k=1,
            classes=2,
        ),
        Case(
            "ragged_longer_row",
            _write(root, "ragged_longer.csv", b"a,b\n1,2\n3,4,5\n"),
            "a row with more fields than the header",
            error=r"line 3 has 3 fields but the header has 2",
        ),
        Case(
            "ragged_first_row_wider",
            _write(root, "ragged_first.csv", b"a,b\n1,2,3\n4,5,6\n"),
            "every row one field wider than the header (pandas would make the first column an index)",
            error=r"line 2 has 3 fields but the header has 2",
        ),
        Case(
            "ragged_shorter_row",
            _write(root, "ragged_shorter.csv", b"a,b,c\n1,2\n3,4,5\n"),
            "a row with fewer fields: missing values at its end",
            shape=(2, 3),
            values={"a": (1, 3), "c": (None, 5)},
            k=1,
            classes=2,
        ),
        Case(
            "tab_separated",
            _write(root, "tabs.tsv", b"a\tb\n1\tx\n1\ty\n2\tx\n"),
            "tab-separated",
            shape=(3, 2),
            values={"a": (1, 1, 2)},
            k=1,
            classes=2,
        ),
        Case(
            "pipe_separated",
            _write(root, "pipes.txt", b"a|b\n1|x\n1|y\n2|x\n"),
            "pipe-separated",
            shape=(3, 2),
            values={"b": ("x", "y", "x")},
            k=1,
            classes=2,
        ),
        Case(
            "single_column",
            _write(root, "single.csv", b"only\n1\n2\n"),
            "one column",
            error=r"single column 'only'",
        ),
        Case(
            "every_value_missing",
            _write(root, "missing_values.csv", b"a;b\n;\nNA;null\n"),
            "a header and rows of missing values",
            error=r"every value is missing",
        ),
        Case(
            "long_cell_value",
            _write(root, "long_value.csv", f"a,b\n1,{long_value}\n2,short\n".encode()),
            "a 2 MB value",
            shape=(2, 2),
            values={"b": (long_value, "short")},
            k=1,
            classes=2,
        ),
        Case(
            "unicode_file_name",
            _write(root, "données_ß_日本.csv", "a,b\n1,é\n1,ß\n".encode()),
            "a file name outside ASCII",
            shape=(2, 2),
            columns=("a", "b"),
            values={"b": ("é", "ß")},
            k=2,
            classes=1,
        ),
        Case(
            "leading_zeros_and_markers",
            _write(root, "zips.csv", b"zip,n,flag\n02134,1,NA\n10001,,yes\n02134,3,null\n"),
            "ZIP codes with a leading zero and missing-value markers",
            shape=(3, 3),
            values={"zip": ("02134", "10001", "02134"), "n": (1.0, None, 3.0), "flag": (None, "yes", None)},
            k=1,
            classes=2,
        ),
        Case(
            "gzip_csv",
            _write(root, "compressed.csv", gzip.compress(b"a,b\n1,2\n", mtime=0)),
            "a gzip-compressed CSV",
            error=r"gzip",
        ),
    ]


# ------------------------------------------------------------------------------------------------------- numbers


def _number_cases(root: Path) -> list[Case]:
    big = [str(10**29 + 7919 * i) for i in range(100)]  # 30 digits: beyond int64, distinct
    int30 = "id,group\n" + "".join(f"{value},{i % 3}\n" for i, value in enumerate(big))
    edges = "x,y\n9223372036854775807,1\n-9223372036854775808,2\n9223372036854775806,3\n"
    return [
        Case(
            "integers_30_digits",
            _write(root, "int30.csv", int30.encode()),
            "100 distinct 30-digit integers (int64 overflow would merge them into one class)",
            shape=(100, 2),
            values={"id": tuple(big[:3])},
            k=1,
            classes=100,
            note=r"'id' holds integers outside the 64-bit range",
        ),
        Case(
            "int64_edges",
            _write(root, "int64_edges.csv", edges.encode()),
            "the largest and smallest 64-bit integers",
            shape=(3, 2),
            values={"x": (9223372036854775807, -9223372036854775808, 9223372036854775806)},
            k=1,
            classes=3,
        ),
        Case(
            "int64_overflow_with_missing",
            _write(root, "ids_missing.csv", b"id,y\n1234567890123456,1\n,2\n1234567890123457,3\n"),
            "16-digit ids with a missing value (a float column would round them together)",
            shape=(3, 2),
            values={"id": ("1234567890123456", None, "1234567890123457")},
            k=1,
            classes=3,
            note=r"more than 15 digits and missing values",
        ),
        Case(
            "infinities",
            _write(root, "infinities.csv", b"x,y\ninf,1\n1e999,2\n-inf,3\nnan,4\nInfinity,5\n1.5,6\n"),
            "inf, 1e999 (overflow), -inf, nan, Infinity: distinct texts that a float column would merge",
            shape=(6, 2),
            values={"x": ("inf", "1e999", "-inf", None, "Infinity", "1.5")},
            k=1,
            classes=6,
            note=r"'x' holds infinite or overflowing numbers",
        ),
        Case(
            "huge_floats",
            _write(
                root, "huge_floats.csv", b"x,y\n1.7976931348623157e308,1\n-1.7976931348623157e308,2\n1e308,3\n2.5,4\n"
            ),
            "the largest finite floats",
            shape=(4, 2),
            values={"x": (1.7976931348623157e308, -1.7976931348623157e308, 1e308, 2.5)},
            k=1,
            classes=4,
        ),
        Case(
            "too_many_digits",
            _write(root, "digits.csv", b"x,y\n0.1234567890123456789,1\n0.1234567890123456788,2\n0.5,3\n"),
            "decimals that differ beyond the 17th digit (one float)",
            shape=(3, 2),
            values={"x": ("0.1234567890123456789", "0.1234567890123456788", "0.5")},
            k=1,
            classes=3,
            note=r"numbers that a 64-bit float cannot keep",
        ),
        Case(
            "underflow",
            _write(root, "underflow.csv", b"x,y\n1e-400,1\n0,2\n0.0,3\n"),
            "1e-400 underflows to 0 as a float",
            shape=(3, 2),
            values={"x": ("1e-400", "0", "0.0")},
            k=1,
            classes=3,
            note=r"numbers that a 64-bit float cannot keep",
        ),
    ]


# -------------------------------------------------------------------------------------------------------- headers


def _header_cases(root: Path) -> list[Case]:
    return [
        Case(
            "duplicate_header_names",
            _write(root, "duplicate_header.csv", b"a,a,b\n1,2,x\n1,3,y\n"),
            "a column name used twice",
            shape=(2, 3),
            columns=("a", "a.1", "b"),
            values={"a.1": (2, 3)},
            k=2,
            classes=1,
            note=r"repeats the column name 'a'",
        ),
        Case(
            "duplicate_after_stripping",
            _write(root, "duplicate_stripped.csv", b"a ,a,b\n1,2,x\n3,4,y\n"),
            "names equal once surrounding spaces are removed",
            shape=(2, 3),
            columns=("a", "a.1", "b"),
            k=1,
            classes=2,
        ),
        Case(
            "empty_header_names",
            _write(root, "empty_names.csv", b"a,,c\n1,2,3\n4,5,6\n"),
            "a column without a name",
            shape=(2, 3),
            columns=("a", "Unnamed: 1", "c"),
            k=1,
            classes=2,
            note=r"no name for column 2",
        ),
        Case(
            "trailing_delimiter",
            _write(root, "trailing.csv", b"a,b,\n1,x,\n2,y,\n"),
            "a delimiter at the end of every line",
            shape=(2, 3),
            columns=("a", "b", "Unnamed: 2"),
            values={"Unnamed: 2": (None, None)},
            k=1,
            classes=2,
        ),
        Case(
            "quasi_identifier_all_missing",
            _write(root, "empty_column.csv", b"a,b\n,1\nNA,2\n,3\n"),
            "the first column is missing in every row: it reads, and the diagnosis warns",
            shape=(3, 2),
            columns=("a", "b"),
            values={"a": (None, None, None)},
            k=3,
            classes=1,
            warning=r"Quasi-identifier 'a' is missing in every record: it does not distinguish anyone\.",
        ),
        Case(
            "header_only_whitespace",
            _write(root, "blank_header.csv", b" , , \n1,2,3\n4,5,6\n"),
            "a header of spaces",
            error=r"no header row with column names",
        ),
    ]


# --------------------------------------------------------------------------------------------------------- limits


def _limit_cases(root: Path) -> list[Case]:
    width = 20_000
    wide = ",".join(f"c{i}" for i in range(width)) + "\n"
    wide += "".join(",".join([str(j % 5)] + ["1"] * (width - 1)) + "\n" for j in range(50))
    wide_path = _write(root, "wide_20000_columns.csv", wide.encode())
    rows = "a,b\n" + "".join(f"{i % 50},{i}\n" for i in range(5_000))
    rows_path = _write(root, "many_rows.csv", rows.encode())
    settings = {
        "max_rows": "PRIVDASH_MAX_ROWS",
        "max_columns": "PRIVDASH_MAX_COLUMNS",
        "max_cells": "PRIVDASH_MAX_CELLS",
        "max_seconds": "PRIVDASH_MAX_READ_SECONDS",
    }
    return [
        Case(
            "wide_20000_columns",
            wide_path,
            "20,000 columns (about 2 MB), read with the default limits",
            shape=(50, width),
            columns=("c0", "c1"),
            values={"c0": (0, 1, 2, 3, 4, 0)},
            k=10,
            classes=5,
        ),
        Case(
            "wide_20000_columns_limited",
            wide_path,
            "20,000 columns against a limit of 1,000, refused from the header",
            error=r"has 20,000 columns, over the limit of 1,000 columns \(PRIVDASH_MAX_COLUMNS\)",
            limits=ReadLimits(max_columns=1_000, setting_names=settings),
        ),
        Case(
            "many_rows",
            rows_path,
            "5,000 rows, read with the default limits",
            shape=(5_000, 2),
            values={"a": (0, 1, 2)},
            k=100,
            classes=50,
        ),
        Case(
            "many_rows_limited",
            rows_path,
            "5,000 rows against a limit of 1,000 (at most 1,001 are parsed)",
            error=r"has more than 1,000 rows, over the limit of 1,000 rows \(PRIVDASH_MAX_ROWS\)",
            limits=ReadLimits(max_rows=1_000, setting_names=settings),
        ),
        Case(
            "many_cells_limited",
            rows_path,
            "10,000 cells against a limit of 5,000",
            error=r"has more than 5,000 cells, over the limit of 5,000 cells \(PRIVDASH_MAX_CELLS\)",
            limits=ReadLimits(max_cells=5_000, setting_names=settings),
        ),
        Case(
            "time_limited",
            rows_path,
            "a time limit shorter than the parse",
            error=r"took more than 1e-06 seconds, the limit \(PRIVDASH_MAX_READ_SECONDS\)",
            limits=ReadLimits(max_seconds=1e-6, setting_names=settings),
        ),
    ]


# ---------------------------------------------------------------------------------------------------------- Excel


def _workbook(sheets: Mapping[str, list[list[object]]]) -> bytes:
    from openpyxl import Workbook

    book = Workbook()
    first = True
    for title, rows in sheets.items():
        sheet = book.active if first else book.create_sheet()
        first = False
        assert sheet is not None
        sheet.title = title
        for row in rows:
            sheet.append(row)
    buffer = io.BytesIO()
    book.save(buffer)
    return buffer.getvalue()


def _replace_member(workbook: bytes, name: str, old: bytes, new: bytes) -> bytes:
    """``workbook`` with ``old`` replaced by ``new`` in its member ``name``."""
    source = zipfile.ZipFile(io.BytesIO(workbook))
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as target:
        for info in source.infolist():
            content = source.read(info.filename)
            if info.filename == name:
                assert old in content
                content = content.replace(old, new)
            target.writestr(info.filename, content)
    return buffer.getvalue()


def _damage_member(workbook: bytes, name: str) -> bytes:
    """``workbook`` with 8 bytes in the middle of member ``name``'s compressed data overwritten (the ZIP directory
    intact, so the archive opens and the damage shows when the member is decompressed)."""
    info = zipfile.ZipFile(io.BytesIO(workbook)).getinfo(name)
    name_length, extra_length = struct.unpack("<HH", workbook[info.header_offset + 26 : info.header_offset + 30])
    middle = info.header_offset + 30 + name_length + extra_length + info.compress_size // 2
    return workbook[:middle] + b"\xff" * 8 + workbook[middle + 8 :]


@dataclass(frozen=True)
class _Member:
    name: str
    deflated: bytes
    crc: int
    size: int


def _deflate(content: bytes) -> _Member:
    compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
    return _Member("", compressor.compress(content) + compressor.flush(), zlib.crc32(content), len(content))


def _repeated(head: bytes, chunk: bytes, count: int, tail: bytes) -> _Member:
    """The raw deflate stream of ``head + chunk * count + tail`` without compressing ``count`` chunks: each piece is
    compressed once, ending on a byte boundary with a full flush (no reference across pieces), and repeated."""
    pieces = []
    for part, last in ((head, False), (chunk, False), (tail, True)):
        compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
        pieces.append(compressor.compress(part) + compressor.flush(zlib.Z_FINISH if last else zlib.Z_FULL_FLUSH))
    crc = zlib.crc32(head)
    for _ in range(count):
        crc = zlib.crc32(chunk, crc)
    crc = zlib.crc32(tail, crc)
    deflated = pieces[0] + pieces[1] * count + pieces[2]
    return _Member("", deflated, crc, len(head) + len(chunk) * count + len(tail))


def _write_zip(path: Path, members: list[_Member]) -> Path:
    """A ZIP archive of already deflated members (sizes under 4 GiB, so no ZIP64)."""
    out = io.BytesIO()
    central = io.BytesIO()
    for member in members:
        name = member.name.encode()
        offset = out.tell()
        out.write(struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, 8, 0, 0x21, member.crc, len(member.deflated),
                              member.size, len(name), 0))  # fmt: skip
        out.write(name)
        out.write(member.deflated)
        central.write(struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 20, 0, 8, 0, 0x21, member.crc,
                                  len(member.deflated), member.size, len(name), 0, 0, 0, 0, 0, offset))  # fmt: skip
        central.write(name)
    start = out.tell()
    directory = central.getvalue()
    out.write(directory)
    out.write(struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(members), len(members), len(directory), start, 0))
    path.write_bytes(out.getvalue())
    return path


def _bomb(path: Path, template: bytes, rows: int, rows_per_chunk: int) -> Path:
    """A workbook whose first sheet holds a header and ``rows`` rows of two numbers, with no dimension element."""
    source = zipfile.ZipFile(io.BytesIO(template))
    head = (
        b'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
        b'<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>'
        b'<row><c t="inlineStr"><is><t>a</t></is></c><c t="inlineStr"><is><t>b</t></is></c></row>'
    )
    chunk = b"<row><c><v>1</v></c><c><v>2</v></c></row>" * rows_per_chunk
    assert rows % rows_per_chunk == 0
    members = []
    for info in source.infolist():
        if info.filename == "xl/worksheets/sheet1.xml":
            member = _repeated(head, chunk, rows // rows_per_chunk, b"</sheetData></worksheet>")
        else:
            member = _deflate(source.read(info.filename))
        members.append(_Member(info.filename, member.deflated, member.crc, member.size))
    return _write_zip(path, members)


def _excel_cases(root: Path) -> list[Case]:
    people = [["region", "age", "zip"], ["north", 30, "02134"], ["south", 30, "10001"], ["north", 41, "02134"]]
    sheets = _workbook(
        {"people": people, "codes": [["code", "label"], [1, "one"], [2, "two"]], "notes": [["text"], ["hello"]]}
    )
    sheets_path = _write(root, "sheets.xlsx", sheets)
    formulas = _workbook({"data": [["a", "b", "total"], *[[i, 2 * i, f"=A{i + 2}+B{i + 2}"] for i in range(4)]]})
    placeholders = _replace_member(formulas, "xl/worksheets/sheet1.xml", b"<v />", b"<v>0</v>")
    errors = _replace_member(
        _workbook({"data": [["a", "b"], ["x", 1], ["y", 2], ["x", 3]]}),
        "xl/worksheets/sheet1.xml",
        b'<c r="B3" t="n"><v>2</v></c>',
        b'<c r="B3" t="e"><v>#DIV/0!</v></c>',
    )
    big = [str(10**29 + i) for i in range(5)]
    template = _workbook({"Sheet": [["a", "b"], [1, 2]]})
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as zipped:
        zipped.writestr("data.csv", "a,b\n1,2\n")
    return [
        Case(
            "excel_several_sheets",
            sheets_path,
            "a workbook of three sheets: the first is read, with a note naming the others",
            shape=(3, 3),
            columns=("region", "age", "zip"),
            values={"region": ("north", "south", "north"), "zip": ("02134", "10001", "02134")},
            k=1,
            classes=2,
            note=r"has 3 sheets; the first, 'people', was read\. Not read: 'codes', 'notes'",
        ),
        Case(
            "excel_sheet_by_name",
            sheets_path,
            "the same workbook, sheet 'codes'",
            sheet="codes",
            shape=(2, 2),
            columns=("code", "label"),
            values={"label": ("one", "two")},
            k=1,
            classes=2,
        ),
        Case(
            "excel_unknown_sheet",
            sheets_path,
            "a sheet name with a typo",
            sheet="peple",
            error=r"no sheet 'peple'\. Did you mean 'people'\? Its sheets: 'people', 'codes', 'notes'",
        ),
        Case(
            "excel_formulas_without_values",
            _write(root, "formulas.xlsx", formulas),
            "formulas saved without results (openpyxl): all missing if read naively",
            error=r"column 'total' \(C\) holds formulas without a saved result \(4 cells, the first C2\)",
        ),
        Case(
            "excel_placeholder_formulas",
            _write(root, "placeholders.xlsx", placeholders),
            "formulas with placeholder results and the flag asking for a recalculation (XlsxWriter writes 0)",
            error=r"formulas whose saved results are placeholders",
        ),
        Case(
            "excel_error_cells",
            _write(root, "errors.xlsx", errors),
            "a #DIV/0! cell",
            shape=(3, 2),
            columns=("a", "b"),
            values={"b": (1.0, None, 3.0)},
            k=1,
            classes=2,
            note=r"formula errors .* in 'b' were read as missing",
        ),
        Case(
            "excel_big_integers",
            _write(root, "big_ints.xlsx", _workbook({"data": [["id", "b"], *[[value, 1] for value in big]]})),
            "30-digit integers in text cells (pandas would make them one float)",
            shape=(5, 2),
            columns=("id", "b"),
            values={"id": tuple(big[:2])},
            k=1,
            classes=5,
        ),
        Case(
            "excel_empty_first_sheet",
            _write(root, "empty_first.xlsx", _workbook({"cover": [], "data": [["a", "b"], [1, 2]]})),
            "an empty first sheet; the data is on the second",
            error=r"sheet 'cover'\) is empty\. The workbook's other sheets: 'data'",
        ),
        Case(
            "excel_zip_bomb",
            _bomb(root / "zip_bomb.xlsx", template, rows=33_000_000, rows_per_chunk=30_000),
            "3 MB of ZIP that expands to 1.35 GB of XML",
            error=r"expands to 1\.\d\d GB when decompressed, over the limit of 1\.07 GB",
        ),
        Case(
            "excel_rows_bomb",
            _bomb(root / "rows_bomb.xlsx", template, rows=1_500_000, rows_per_chunk=50_000),
            "a small workbook of 1.5 million rows (more than Excel allows), without a dimension element",
            error=r"sheet1\.xml holds 1,500,001 rows, more than an Excel sheet can \(1,048,576\)",
        ),
        Case(
            "excel_truncated",
            _write(root, "truncated.xlsx", sheets[: len(sheets) // 2]),
            "the first half of a workbook",
            error=r"could not be read as an Excel workbook",
        ),
        Case(
            "excel_damaged_entry",
            _write(root, "damaged.xlsx", _damage_member(sheets, "xl/worksheets/sheet1.xml")),
            "a workbook whose first sheet's compressed data is damaged (the ZIP directory is intact)",
            error=r"could not be read as an Excel workbook: it is damaged",
        ),
        Case(
            "excel_named_csv",
            _write(root, "workbook.csv", sheets),
            "a workbook with a .csv name",
            shape=(3, 3),
            columns=("region", "age", "zip"),
            k=1,
            classes=2,
            note=r"is an Excel workbook despite its extension '\.csv'",
        ),
        Case(
            "csv_named_xlsx",
            _write(root, "table.xlsx", b"a,b\n1,2\n3,4\n"),
            "CSV text with a .xlsx name",
            error=r"not an Excel workbook .*plain text",
        ),
        Case(
            "zip_not_workbook",
            _write(root, "archive.xlsx", archive.getvalue()),
            "a ZIP archive holding a CSV",
            error=r"ZIP archive, not an Excel workbook \(it holds 'data\.csv'\)",
        ),
        Case(
            "old_xls",
            _write(root, "old.xls", b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(504)),
            "an OLE2 compound file (old .xls, or an encrypted workbook)",
            error=r"old Excel \.xls workbook or a password-protected workbook",
        ),
    ]


# -------------------------------------------------------------------------------------------------------- Parquet


def _parquet(table: object, *, store_schema: bool = True) -> bytes:
    """``table`` written as Parquet; without ``store_schema``, as writers other than Arrow write it (no Arrow schema
    in its metadata: a dictionary-encoded text column is plain text to a reader)."""
    import pyarrow.parquet as pq

    buffer = io.BytesIO()
    pq.write_table(table, buffer, store_schema=store_schema)
    return buffer.getvalue()


def _parquet_cases(root: Path) -> list[Case]:
    import pyarrow as pa

    plain = _parquet(pa.table({"a": [1, 2, 3], "b": ["x", "y", "z"]}))
    nested = pa.table(
        {
            "id": [1, 2],
            "tags": [["a"], ["b", "c"]],
            "address": [{"city": "Leeds", "code": 1}, {"city": "York", "code": 2}],
            "scores": pa.array([[("m", 1)], [("n", 2)]], type=pa.map_(pa.string(), pa.int64())),
        }
    )
    duplicate = pa.Table.from_arrays([pa.array([1, 2]), pa.array([3, 4]), pa.array(["x", "y"])], names=["a", "a", "b"])
    empty = pa.table({"a": pa.array([], pa.int64()), "b": pa.array([], pa.string())})
    regions = pd.DataFrame(
        {"region": pd.Categorical(["north", "south", "north", "north"], categories=["north", "south", "west"])}
    ).assign(age=[30, 30, 41, 30])
    categorical = io.BytesIO()
    regions.to_parquet(categorical, index=False)
    return [
        Case(
            "parquet_truncated",
            _write(root, "truncated.parquet", plain[: len(plain) // 2]),
            "the first half of a Parquet file",
            error=r"truncated or damaged",
        ),
        Case(
            "parquet_nested",
            _write(root, "nested.parquet", _parquet(nested)),
            "list, struct and map columns",
            error=r"nested columns.*'tags' \(list<.*'address' \(struct<.*'scores' \(map<",
        ),
        Case(
            "parquet_duplicate_names",
            _write(root, "duplicate.parquet", _parquet(duplicate)),
            "two columns named 'a'",
            error=r"duplicate column names: 'a' \(2 times\)",
        ),
        Case(
            "parquet_zero_rows",
            _write(root, "zero_rows.parquet", _parquet(empty)),
            "a schema and no rows",
            error=r"has columns but no data rows",
        ),
        Case(
            "parquet_dictionary",
            _write(root, "categorical.parquet", categorical.getvalue()),
            "a dictionary-encoded (categorical) column with an unused category",
            shape=(4, 2),
            columns=("region", "age"),
            values={"region": ("north", "south", "north", "north")},
            k=1,
            classes=2,
        ),
        Case(
            "parquet_named_txt",
            _write(root, "parquet.txt", plain),
            "a Parquet file with a .txt name",
            shape=(3, 2),
            values={"b": ("x", "y", "z")},
            k=1,
            classes=3,
            note=r"is a Parquet file despite its extension '\.txt'",
        ),
        Case(
            "not_parquet",
            _write(root, "text.parquet", b"a,b\n1,2\n"),
            "CSV text with a .parquet name",
            error=r"not a Parquet file .*plain text",
        ),
    ]


# ------------------------------------------------------------------------------------------- SPSS, Stata and SAS


def _statistical(write: str, frame: pd.DataFrame, **options: object) -> bytes:
    """The bytes of ``frame`` written by ``pyreadstat.<write>`` (it writes to a path only)."""
    import tempfile

    import pyreadstat

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "file"
        getattr(pyreadstat, write)(frame, str(path), **options)
        return path.read_bytes()


def _statistical_cases(root: Path) -> list[Case]:
    import numpy as np

    # Codes with value labels (9 is a user-defined missing code), an unlabelled code (3), ages with a missing range
    # (98-99) and a system-missing value, texts with labels and an empty text.
    people = pd.DataFrame(
        {
            "region": [1.0, 2.0, 1.0, 3.0, 9.0, 1.0],
            "age": [30.0, 41.0, 30.0, 99.0, 52.0, np.nan],
            "sex": ["f", "m", "f", "", "m", "f"],
        }
    )
    labelled = _statistical(
        "write_sav",
        people,
        variable_value_labels={"region": {1: "north", 2: "south", 9: "refused"}, "sex": {"f": "female", "m": "male"}},
        missing_ranges={"region": [9], "age": [{"lo": 98, "hi": 99}]},
    )
    labelled_path = _write(root, "labelled.sav", labelled)
    # Stata's extended missing values are written as their letter in a numeric column.
    counties = pd.DataFrame({"county": [1, 2, 2, "a", 1], "income": [1200.5, np.nan, 800.0, 950.0, "b"]}, dtype=object)
    tagged = _statistical(
        "write_dta",
        counties,
        variable_value_labels={"county": {1: "Kent", 2: "Essex"}},
        missing_user_values={"county": ["a"], "income": ["b"]},
    )
    xport = _statistical("write_xport", pd.DataFrame({"a": [1.0, 2.0, 2.0], "b": ["x", "y", "x"]}))
    # The first variable's type (offset 180) made a string of 32,512 bytes: ReadStat crashes on it (a segmentation
    # fault in pyreadstat 1.3), or a later version refuses it.
    crash = bytearray(labelled)
    crash[181] = 0x7F
    # A zlib-compressed SPSS file whose header declares 1,900,000 rows of 608 bytes (a 600-character text and a
    # number): 1.16 GB, refused from the header before anything is decompressed; its 1.9 million rows are within
    # the server's default row and cell limits.
    wide = bytearray(
        _statistical("write_sav", pd.DataFrame({"id": [1.0, 2.0], "text": ["x" * 600, "y"]}), compress=True)
    )
    wide[80:84] = (1_900_000).to_bytes(4, "little")
    settings = {"max_rows": "PRIVDASH_MAX_ROWS", "max_seconds": "PRIVDASH_MAX_READ_SECONDS"}
    return [
        Case(
            "spss_labels_and_missing",
            labelled_path,
            "an SPSS file with value labels, user-defined missing values and ranges, system missing, an empty text",
            shape=(6, 3),
            columns=("region", "age", "sex"),
            values={
                "region": ("north", "south", "north", "3", None, "north"),
                "age": (30.0, 41.0, 30.0, None, 52.0, None),
                "sex": ("female", "male", "female", None, "male", "female"),
            },
            k=1,
            classes=4,
            note=(
                r"4 values the file marks as missing were read as missing: 1 system-missing value \(\.\) in 'age' "
                r"\(1\); 2 user-defined missing values in 'region' \(1\), 'age' \(1\); 1 empty text in 'sex' \(1\)"
            ),
        ),
        Case(
            "spss_rows_limited",
            labelled_path,
            "6 rows against a limit of 3, refused from the file's metadata",
            error=r"has 6 rows, over the limit of 3 rows \(PRIVDASH_MAX_ROWS\)",
            limits=ReadLimits(max_rows=3, setting_names=settings),
        ),
        Case(
            "spss_time_limited",
            labelled_path,
            "a time limit shorter than the parse (the parser's process is stopped)",
            error=r"took more than 1e-06 seconds, the limit \(PRIVDASH_MAX_READ_SECONDS\)",
            limits=ReadLimits(max_seconds=1e-6, setting_names=settings),
        ),
        Case(
            "stata_extended_missing",
            _write(root, "tagged.dta", tagged),
            "a Stata file with value labels and the extended missing values .a and .b",
            shape=(5, 2),
            values={"county": ("Kent", "Essex", "Essex", None, "Kent"), "income": (1200.5, None, 800.0, 950.0, None)},
            k=1,
            classes=3,
            note=r"2 extended missing values \(\.a to \.z\) in 'county' \(1\), 'income' \(1\)",
        ),
        Case(
            "sas_transport",
            _write(root, "transport.xpt", xport),
            "a SAS transport (XPORT) file",
            shape=(3, 2),
            columns=("a", "b"),
            values={"a": (1, 2, 2), "b": ("x", "y", "x")},
            k=1,
            classes=2,
        ),
        Case(
            "spss_truncated",
            _write(root, "truncated.sav", labelled[: len(labelled) // 2]),
            "the first half of an SPSS file",
            error=r"could not be read as an SPSS data file: it is truncated or damaged",
        ),
        Case(
            "spss_parser_crash",
            _write(root, "crash.sav", bytes(crash)),
            "an SPSS file whose damaged header crashes the C parser",
            error=r"could not be read as an SPSS data file: (the file is damaged|it is truncated or damaged)",
        ),
        Case(
            "zsav_declared_rows",
            _write(root, "declared_rows.zsav", bytes(wide)),
            "a compressed SPSS file declaring rows that expand to 1.16 GB",
            error=r"expands to 1\.16 GB when decompressed, over the limit of 1\.07 GB",
        ),
        Case(
            "stata_named_text",
            _write(root, "text.dta", b"county,income\nKent,1200\nEssex,800\n"),
            "CSV text with a .dta name",
            error=r"not a Stata data file \(it does not start with a Stata header\); its content is plain text",
        ),
        Case("sas7bdat_empty", _write(root, "empty.sas7bdat", b""), "an empty .sas7bdat file", error=r"is empty"),
        Case(
            "spss_named_csv",
            _write(root, "labelled_spss.csv", labelled),
            "an SPSS file with a .csv name",
            shape=(6, 3),
            values={"region": ("north", "south")},
            k=1,
            classes=4,
            note=r"is an SPSS data file despite its extension '\.csv'; it was read as an SPSS data file",
        ),
    ]


# ----------------------------------------------------------------------------------------------------------- paths


def _path_cases(root: Path) -> list[Case]:
    folder = root / "a_folder.csv"
    folder.mkdir(exist_ok=True)
    locked = _write(root, "unreadable.csv", b"a,b\n1,x\n2,x\n")
    locked.chmod(0)
    as_root = os.geteuid() == 0
    unreadable = (
        Case(
            "unreadable_file",
            locked,
            "permissions 000; root reads it anyway (permissions do not apply to root)",
            shape=(2, 2),
            columns=("a", "b"),
            values={"b": ("x", "x")},
            k=1,
            classes=2,
            upload=False,
        )
        if as_root
        else Case("unreadable_file", locked, "permissions 000", error=r"Cannot read .*Permission denied", upload=False)
    )
    return [
        Case("directory", folder, "a folder instead of a file", error=r"folder", upload=False),
        Case("missing_file", root / "absent.csv", "a path where no file exists", error=r"not found", upload=False),
        unreadable,
    ]


# --------------------------------------------------------------------------------------- what the engines read


def _dataset(root: Path, name: str, *tables: object) -> Path:
    """A folder of Parquet files, one per table (a dataset the engines read as one source)."""
    import pyarrow.parquet as pq

    folder = root / name
    folder.mkdir(exist_ok=True)
    for i, table in enumerate(tables):
        pq.write_table(table, folder / f"part-{i}.parquet")
    return folder


def _engine_cases(root: Path) -> list[Case]:
    """Sources the engines once counted otherwise than the reader: no records, decimals, bytes, a pandas index,
    names DuckDB compares without case, a header read from a random row."""
    import decimal

    import pyarrow as pa
    import pyarrow.parquet as pq

    empty = pa.table({"age": pa.array([], pa.int64()), "sex": pa.array([], pa.string())})
    # Three decimals that differ in the ninth digit (a float64 would keep them apart, but DuckDB's .df() did not).
    ninth = [decimal.Decimal(text) for text in ("1.000000001", "1.000000002", "1.000000003", "1.000000001")]
    decimals = pa.table({"d": pa.array(ninth, pa.decimal128(38, 9)), "n": [1, 2, 3, 4]})
    # Sixty digits: beyond a float's 17 and DuckDB's 38.
    wide = [decimal.Decimal("7" * 58 + tail) for tail in ("01", "02", "03", "01")]
    wide_table = pa.table({"d": pa.array(wide, pa.decimal256(60, 0)), "n": [1, 2, 3, 4]})
    blobs = pa.table(
        {
            "b": pa.array([b"\x00\xff", b"ab", b"\xfe", b"ab"], pa.binary()),
            "f": pa.array([b"pq", b"rs", b"pq", b"rs"], pa.binary(2)),
            "n": [1, 2, 3, 4],
        }
    )
    regions = pd.DataFrame({"region": ["north", "south", "north", "west"], "age": [30, 30, 30, 41]})
    indexed = io.BytesIO()
    regions.set_index("region").to_parquet(indexed)
    indexed_table = pq.read_table(io.BytesIO(indexed.getvalue()))
    # A filtered frame written with its row labels: an unnamed index (__index_level_0__), not data.
    labelled = io.BytesIO()
    filtered = pd.DataFrame({"a": [1, 2, 3, 4], "b": ["x", "y", "x", "x"]}).iloc[[3, 0, 2]]
    filtered.set_index(pd.Index([7, 3, 9])).to_parquet(labelled)
    labelled_table = pq.read_table(io.BytesIO(labelled.getvalue()))
    # A header whose names repeat, one empty, and data rows whose values are the header's names: DuckDB once took
    # the names from any row of a parallel scan (LIMIT 1), and from the header it failed on the repeats.
    clash = "v2,v2,,w\n" + "".join(f"{i % 3},v2,v2,{i % 2}\n" for i in range(3000))
    return [
        Case(
            "dataset_zero_rows",
            _dataset(root, "dataset_zero_rows", empty),
            "a folder holding one Parquet file of columns and no rows (it once passed every target with k = 0)",
            error=r"has columns but no records \(0 rows\)",
            qi="age",
            upload=False,
            dataset=True,
        ),
        Case(
            "csv_header_only_duckdb",
            _write(root, "header_only_duckdb.csv", b"age,sex\n"),
            "a header and no rows, counted by DuckDB",
            error=r"but no (data rows|records)",
            qi="age",
            engine="duckdb",
        ),
        Case(
            "parquet_decimals_ninth_digit",
            _write(root, "decimals.parquet", _parquet(decimals)),
            "decimal(38, 9) values that differ in the ninth decimal",
            shape=(4, 2),
            values={"d": (1.000000001, 1.000000002, 1.000000003, 1.000000001)},
            k=1,
            classes=3,
        ),
        Case(
            "dataset_decimals_ninth_digit",
            _dataset(root, "dataset_decimals", decimals),
            "the same decimals in a folder, counted by DuckDB (its float conversion made them 2 classes)",
            shape=(4, 2),
            qi="d",
            k=1,
            classes=3,
            upload=False,
            dataset=True,
        ),
        Case(
            "parquet_decimals_60_digits",
            _write(root, "decimals_60.parquet", _parquet(wide_table)),
            "decimal256(60, 0) values: kept exact, as text",
            shape=(4, 2),
            values={"d": tuple(str(value) for value in wide)},
            k=1,
            classes=3,
            note=r"'d' holds integers outside the 64-bit range",
        ),
        Case(
            "dataset_decimals_60_digits",
            _dataset(root, "dataset_decimals_60", wide_table),
            "60-digit decimals in a folder: DuckDB would read them as doubles and merge them",
            error=r"decimal columns wider than the 38 digits DuckDB keeps exactly: 'd' \(60 digits\)",
            qi="d",
            upload=False,
            dataset=True,
        ),
        Case(
            "parquet_binary",
            _write(root, "binary.parquet", _parquet(blobs)),
            "binary and fixed-size binary columns: UTF-8 bytes are text, other bytes hexadecimal text",
            shape=(4, 3),
            values={"b": ("0x00ff", "0x6162", "0xfe", "0x6162"), "f": ("pq", "rs", "pq", "rs")},
            k=1,
            classes=3,
            note=r"Column 'b' holds bytes that are not UTF-8 text; each value is written in hexadecimal",
        ),
        Case(
            "dataset_binary",
            _dataset(root, "dataset_binary", blobs),
            "the binary columns in a folder, counted by DuckDB (once a crash: bytearray is unhashable)",
            shape=(4, 3),
            qi="b",
            k=1,
            classes=3,
            upload=False,
            dataset=True,
        ),
        Case(
            "parquet_named_index",
            _write(root, "named_index.parquet", indexed.getvalue()),
            "df.set_index('region').to_parquet(): the named index is a column",
            shape=(4, 2),
            columns=("age", "region"),
            values={"region": ("north", "south", "north", "west")},
            qi="region",
            k=1,
            classes=3,
        ),
        Case(
            "dataset_named_index",
            _dataset(root, "dataset_named_index", indexed_table),
            "the same file in a folder, counted by DuckDB",
            shape=(4, 2),
            qi="region",
            k=1,
            classes=3,
            upload=False,
            dataset=True,
        ),
        Case(
            "parquet_unnamed_index",
            _write(root, "unnamed_index.parquet", labelled.getvalue()),
            "a filtered frame written with its row labels (an unnamed index): they are not a column",
            shape=(3, 2),
            columns=("a", "b"),
            values={"a": (4, 1, 3)},
            qi="b",
            k=3,
            classes=1,
        ),
        Case(
            "dataset_unnamed_index",
            _dataset(root, "dataset_unnamed_index", labelled_table),
            "the same file in a folder, counted by DuckDB (which sees __index_level_0__ as a column)",
            shape=(3, 2),
            qi="b",
            k=3,
            classes=1,
            upload=False,
            dataset=True,
        ),
        Case(
            "duckdb_header_names_clash",
            _write(root, "header_clash.csv", clash.encode()),
            "repeated and empty header names, data rows of the header's names, counted by DuckDB",
            shape=(3000, 4),
            columns=("v2", "v2.1", "Unnamed: 2", "w"),
            k=1000,
            classes=3,
            engine="duckdb",
        ),
    ]


# ------------------------------------------------------------------------------- what is decoded, not declared


def _with_shared_strings(template: bytes, sheet: bytes, strings: list[str]) -> bytes:
    """``template`` (an openpyxl workbook of one sheet) with its sheet replaced by ``sheet`` and a shared-strings
    part holding ``strings`` (openpyxl writes inline strings; Excel writes shared ones)."""
    from xml.sax.saxutils import escape

    items = "".join(f"<si><t>{escape(text)}</t></si>" for text in strings)
    shared = (
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
        '<sst xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" '
        f'count="{len(strings)}" uniqueCount="{len(strings)}">{items}</sst>'
    ).encode()
    relation = (
        b'<Relationship Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/sharedStrings" '
        b'Target="sharedStrings.xml" Id="rIdStrings" /></Relationships>'
    )
    content_type = (
        b'<Override PartName="/xl/sharedStrings.xml" '
        b'ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sharedStrings+xml" /></Types>'
    )
    source = zipfile.ZipFile(io.BytesIO(template))
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as target:
        for info in source.infolist():
            content = source.read(info.filename)
            if info.filename == "xl/worksheets/sheet1.xml":
                content = sheet
            elif info.filename == "xl/_rels/workbook.xml.rels":
                content = content.replace(b"</Relationships>", relation)
            elif info.filename == "[Content_Types].xml":
                content = content.replace(b"</Types>", content_type)
            target.writestr(info.filename, content)
        target.writestr("xl/sharedStrings.xml", shared)
    return buffer.getvalue()


def _sheet_xml(rows: list[bytes]) -> bytes:
    return (
        b'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
        b'<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>'
        + b"".join(rows)
        + b"</sheetData></worksheet>"
    )


def _shared_row(number: int, *cells: bytes) -> bytes:
    """A row of cells, each ``s:<index>`` (a shared string) or a number."""
    out = [f'<row r="{number}">'.encode()]
    for column, cell in zip("ABCDEFGH", cells, strict=False):
        reference = f"{column}{number}".encode()
        if cell.startswith(b"s:"):
            out.append(b'<c r="' + reference + b'" t="s"><v>' + cell[2:] + b"</v></c>")
        else:
            out.append(b'<c r="' + reference + b'"><v>' + cell + b"</v></c>")
    out.append(b"</row>")
    return b"".join(out)


def _decoded_size_cases(root: Path) -> list[Case]:
    """Files whose declared sizes are small and whose values are not: the limit counts what is decoded."""
    import pyarrow as pa

    template = _workbook({"Sheet": [["a", "b"], [1, 2]]})
    # 40,000 cells referring to one 50,000-character shared string: 2 GB of text from a few hundred KB.
    rows = [_shared_row(1, b"s:1", b"s:2")] + [_shared_row(i, b"s:0", str(i % 7).encode()) for i in range(2, 40_002)]
    bomb = _with_shared_strings(template, _sheet_xml(rows), ["x" * 50_000, "label", "n"])
    # The same structure at a harmless size: shared strings read as they should be.
    towns = ["Bath", "York", "Leeds"]
    normal = [_shared_row(1, b"s:3", b"s:4")] + [
        _shared_row(i, f"s:{i % 3}".encode(), str(i % 2).encode()) for i in range(2, 14)
    ]
    shared = _with_shared_strings(template, _sheet_xml(normal), [*towns, "town", "n"])
    # A dictionary page of one 50,000-byte value and 200,000 rows referring to it: 10 GB once decoded.
    long_value = pa.DictionaryArray.from_arrays(pa.array([0] * 200_000, pa.int32()), pa.array(["y" * 50_000]))
    small = pa.DictionaryArray.from_arrays(pa.array([0, 1] * 100_000, pa.int32()), pa.array(["p", "q"]))
    return [
        Case(
            "excel_shared_string_bomb",
            _write(root, "shared_string_bomb.xlsx", bomb),
            "40,000 cells referring to one 50 KB shared string: 2 GB of cell text from a small workbook",
            error=r"shared strings\) expands to 2\.\d\d GB when decompressed, over the limit of 1\.07 GB",
        ),
        Case(
            "excel_shared_strings",
            _write(root, "shared_strings.xlsx", shared),
            "text cells stored as shared strings, as Excel saves them",
            shape=(12, 2),
            columns=("town", "n"),
            values={"town": ("Leeds", "Bath", "York", "Leeds")},
            k=4,
            classes=3,
        ),
        Case(
            "parquet_dictionary_bomb",
            _write(
                root, "dictionary_bomb.parquet", _parquet(pa.table({"a": long_value, "b": small}), store_schema=False)
            ),
            "a dictionary page of one 50 KB value referred to by 200,000 rows: 10 GB once decoded",
            error=r"expands to 10\.\d\d GB when decompressed, over the limit of 1\.07 GB",
        ),
    ]


# ------------------------------------------------------------------------------------- an audit of new kinds


def _audit_cases(root: Path) -> list[Case]:
    """Kinds of input the corpus did not try before: spreadsheet rows and sheets, odd headers and line ends,
    types and shapes of Parquet files, names DuckDB reads otherwise, formats that are not tables."""
    import datetime

    import pyarrow as pa
    import pyarrow.parquet as pq

    people = _workbook({"data": [["a", "b"], ["x", 1], ["y", 2], ["z", 3]]})
    # Row 3 renumbered 2: a second <row r="2">, which openpyxl merges with the first (one data row lost).
    duplicated = _replace_member(
        people,
        "xl/worksheets/sheet1.xml",
        b'<row r="3"><c r="A3" t="inlineStr"><is><t>y</t></is></c><c r="B3" t="n">',
        b'<row r="2"><c r="A2" t="inlineStr"><is><t>y</t></is></c><c r="B2" t="n">',
    )
    merged = _replace_member(
        _replace_member(people, "xl/worksheets/sheet1.xml", b'<c r="A3" t="inlineStr"><is><t>y</t></is></c>', b""),
        "xl/worksheets/sheet1.xml",
        b"</sheetData>",
        b'</sheetData><mergeCells count="1"><mergeCell ref="A2:A3" /></mergeCells>',
    )
    hidden = _replace_member(
        _workbook({"secret": [["id", "name"], [1, "Ann"]], "data": [["a", "b"], ["x", 1], ["y", 2]]}),
        "xl/workbook.xml",
        b'<sheet name="secret" sheetId="1" state="visible"',
        b'<sheet name="secret" sheetId="1" state="hidden"',
    )
    from openpyxl import Workbook
    from openpyxl.chart import BarChart
    from openpyxl.styles import Font

    chart_book = Workbook()
    chart_book.create_chartsheet("chart").add_chart(BarChart())
    chart_book.remove(chart_book["Sheet"])
    charts = io.BytesIO()
    chart_book.save(charts)
    styled_book = Workbook()
    styled = styled_book.active
    assert styled is not None
    for row in (["a", "b"], [1, "x"], [2, "y"], [1, "x"]):
        styled.append(row)
    for row_number in range(5, 2_005):  # formatted, empty: a sheet's "used range" far below its data
        styled.cell(row=row_number, column=1).font = Font(bold=True)
        styled.cell(row=row_number, column=2).font = Font(italic=True)
    styled_bytes = io.BytesIO()
    styled_book.save(styled_bytes)
    paris = pa.timestamp("us", tz="Europe/Paris")
    moments = [
        datetime.datetime(2020, 1, 1, 12),
        datetime.datetime(2020, 1, 1, 13),
        None,
        datetime.datetime(2020, 1, 1, 12),
    ]
    zoned = pa.table({"t": pa.array(moments, paris), "n": [1, 2, 3, 4]})
    old = pa.table(
        {
            "d": pa.array([datetime.date(1, 1, 1), datetime.date(1899, 12, 31), datetime.date(1899, 12, 31)]),
            "t": pa.array(
                [datetime.datetime(1, 1, 1), datetime.datetime(9999, 12, 31), datetime.datetime(1850, 6, 1)],
                pa.timestamp("ms"),
            ),
            "n": [1, 2, 3],
        }
    )
    nulls = pa.table({"a": pa.nulls(3), "b": [1, 2, 2]})
    cased = pa.table({"A": [1, 1, 2, 2], "a": [5, 6, 6, 6]})
    groups = io.BytesIO()
    pq.write_table(pa.table({"g": [i % 4 for i in range(400)], "n": list(range(400))}), groups, row_group_size=1)
    long_name = "q" * 1_000  # the longest name a dashboard view keeps
    feather = io.BytesIO()
    import pyarrow.feather as feather_format

    feather_format.write_feather(pa.table({"a": [1, 2], "b": ["x", "y"]}), feather)
    return [
        Case(
            "excel_duplicated_row",
            _write(root, "duplicated_row.xlsx", duplicated),
            'two <row r="2"> elements: one data row would be silently lost',
            error=r"row 2 appears twice, or after a row with a higher number",
        ),
        Case(
            "excel_merged_cells",
            _write(root, "merged.xlsx", merged),
            "a merged range A2:A3: its second cell is empty, read as missing, with a note naming the range",
            shape=(3, 2),
            values={"a": ("x", None, "z")},
            k=1,
            classes=3,
            note=r"has 1 merged range \('A2:A3'\): a merged range holds its value in its first cell only",
        ),
        Case(
            "excel_hidden_first_sheet",
            _write(root, "hidden_first.xlsx", hidden),
            "a hidden first sheet: the first visible sheet is read, and the note says so",
            shape=(2, 2),
            columns=("a", "b"),
            k=1,
            classes=2,
            note=r"has hidden sheets: 'secret'; they were not read",
        ),
        Case(
            "excel_chartsheet_only",
            _write(root, "chart_only.xlsx", charts.getvalue()),
            "a workbook whose only sheet is a chart sheet",
            error=r"is a chart, not a table of values; it has no sheet of values",
        ),
        Case(
            "excel_spaces_around_text",
            _write(
                root,
                "spaced_cells.xlsx",
                _workbook({"data": [["town", "n"], ["Bath ", 1], [" Bath", 2], ["Bath", 3], [" NA ", 4]]}),
            ),
            "text cells with spaces around them: one town, as in a CSV file; ' NA ' is missing",
            shape=(4, 2),
            values={"town": ("Bath", "Bath", "Bath", None)},
            k=1,
            classes=2,
        ),
        Case(
            "excel_formatted_empty_rows",
            _write(root, "formatted_rows.xlsx", styled_bytes.getvalue()),
            "3 data rows, then 2,000 formatted empty rows",
            shape=(3, 2),
            values={"a": (1, 2, 1)},
            k=1,
            classes=2,
        ),
        Case(
            "csv_trailing_spaces",
            _write(root, "trailing_spaces.csv", b'town,n\nBath ,1\n Bath,2\nBath,3\n"Bath  ",4\n'),
            "spaces after a value, before it and inside quotes: removed on both sides, one town",
            shape=(4, 2),
            values={"town": ("Bath", "Bath", "Bath", "Bath")},
            k=4,
            classes=1,
        ),
        Case(
            "csv_trailing_spaces_duckdb",
            _write(root, "trailing_spaces_duckdb.csv", b'town,n\nBath ,1\n Bath,2\nBath,3\n"Bath  ",4\n'),
            "the same file counted by DuckDB",
            shape=(4, 2),
            qi="town",
            k=4,
            classes=1,
            engine="duckdb",
        ),
        Case(
            "csv_mixed_line_endings_duckdb",
            _write(root, "line_endings_duckdb.csv", b"a,b\r\n1,x\n2,y\r3,x\r\n4,y\n"),
            "CRLF, LF and CR line ends counted by DuckDB, whose parser reads one kind per file",
            error=r"mixes line endings \(CRLF, LF alone or CR alone\), which DuckDB cannot read",
            engine="duckdb",
            upload=False,  # the reader reads it (case mixed_line_endings)
        ),
        Case(
            "bom_and_quoted_header_duckdb",
            _write(root, "bom_quoted.csv", '\ufeff"name","age"\n"Ann",30\n"Bob",30\n"Cid",41\n'.encode()),
            "a UTF-8 byte-order mark before a quoted header, counted by DuckDB",
            shape=(3, 2),
            columns=("name", "age"),
            qi="age",
            k=1,
            classes=2,
            engine="duckdb",
        ),
        Case(
            "blank_lines_before_the_header_duckdb",
            _write(root, "blank_lines_first.csv", b"\n\n\na,b\n1,x\n2,y\n1,x\n"),
            "blank lines before the header, counted by DuckDB (which took the first line for the header)",
            shape=(3, 2),
            columns=("a", "b"),
            k=1,
            classes=2,
            engine="duckdb",
        ),
        Case(
            "line_breaks_in_cells_duckdb",
            _write(root, "cells_with_line_breaks.csv", b'a,b\r\n1,"x\ny"\r\n2,y\r\n1,"x\ny"\r\n'),
            "CRLF between rows and LF inside quoted cells (as Excel saves them), counted by DuckDB",
            shape=(3, 2),
            values={"b": ("x\ny", "y", "x\ny")},
            qi="b",
            k=1,
            classes=2,
            engine="duckdb",
        ),
        Case(
            "short_rows_duckdb",
            _write(root, "short_rows_duckdb.csv", b"a,b,c\n1,2\n3,4,5\n1,2\n"),
            "rows with fewer fields than the header (missing values at their end), counted by DuckDB",
            shape=(3, 3),
            values={"c": (None, 5, None)},
            k=1,
            classes=2,
            engine="duckdb",
        ),
        Case(
            "long_line_duckdb",
            _write(root, "long_line_duckdb.csv", b"a,b\n1," + b"x" * 2_100_000 + b"\n2,y\n"),
            "a line of 2.1 MB, longer than DuckDB reads",
            error=r"has a line longer than the 2,000,000 bytes DuckDB reads",
            engine="duckdb",
            upload=False,  # the reader reads it (case long_cell_value)
        ),
        Case(
            "parquet_named_csv_duckdb",
            _write(root, "parquet_duckdb.csv", _parquet(pa.table({"a": [1, 2], "b": ["x", "y"]}))),
            "a Parquet file with a .csv name, counted by DuckDB (which reads files by their extension)",
            error=r"is a Parquet file, not delimited text, despite its extension; .* engine='pandas', which reads it",
            engine="duckdb",
            upload=False,  # the reader reads it (case parquet_named_txt)
        ),
        Case(
            "bom_in_the_middle",
            _write(root, "bom_middle.csv", "name,age\nAnn,30\n\ufeffBob,41\n".encode()),
            "a byte-order mark character at the start of a value in the middle of the file: kept, as it is text",
            shape=(2, 2),
            values={"name": ("Ann", "\ufeffBob"), "age": (30, 41)},
            k=1,
            classes=2,
        ),
        Case(
            "header_of_delimiters",
            _write(root, "delimiter_header.csv", b",,\n1,2,3\n4,5,6\n"),
            "a header of delimiters only: no name at all",
            error=r"no header row with column names",
        ),
        Case(
            "rows_of_delimiters",
            _write(root, "delimiter_rows.csv", b"a,b,c\n1,x,2\n,,\n3,y,4\n"),
            "a row of delimiters only: a record whose every value is missing, never skipped",
            shape=(3, 3),
            values={"a": (1.0, None, 3.0), "b": ("x", None, "y")},
            k=1,
            classes=3,
        ),
        Case(
            "names_differing_in_case_duckdb",
            _write(root, "cased_names.csv", b"Age,age,x\n1,2,a\n1,3,b\n2,3,c\n"),
            "columns 'Age' and 'age' counted by DuckDB, whose identifiers ignore case",
            shape=(3, 3),
            columns=("Age", "age", "x"),
            qi="age",
            k=1,
            classes=2,
            engine="duckdb",
        ),
        Case(
            "dataset_duplicate_names",
            _dataset(
                root,
                "dataset_duplicate",
                pa.Table.from_arrays([pa.array([1, 2]), pa.array([3, 4]), pa.array(["x", "y"])], names=["a", "a", "b"]),
            ),
            "two columns named 'a' in a folder (DuckDB renames the second 'a_1' and counted the first)",
            error=r"duplicate column names: 'a'",
            qi="a",
            upload=False,
            dataset=True,
        ),
        Case(
            "dataset_names_differing_in_case",
            _dataset(root, "dataset_cased", cased),
            "Parquet columns 'A' and 'a' in a folder (DuckDB renames the second 'a_1')",
            shape=(4, 2),
            qi="a",
            k=1,
            classes=2,
            upload=False,
            dataset=True,
        ),
        Case(
            "column_named_like_the_count",
            _write(root, "count_name.csv", b"a,__privdash_count\n1,2\n1,3\n2,3\n"),
            "a column named like the engines' count column, beside the one counted by DuckDB",
            shape=(3, 2),
            k=1,
            classes=2,
            engine="duckdb",
        ),
        Case(
            "gzip_inside_gzip",
            _write(root, "double.csv.gz", gzip.compress(gzip.compress(b"a,b\n1,2\n", mtime=0), mtime=0)),
            "a gzip file inside a gzip file",
            error=r"is gzip-compressed; decompress it first",
        ),
        Case(
            "arrow_ipc_file",
            _write(root, "table.feather", feather.getvalue()),
            "an Arrow IPC (Feather) file",
            error=r"is an Arrow IPC \(Feather\) file, which is not read; save the table as Parquet",
        ),
        Case(
            "parquet_zero_columns",
            _write(root, "zero_columns.parquet", _parquet(pa.table({}))),
            "a Parquet file without columns",
            error=r"has no columns",
        ),
        Case(
            "parquet_null_type_column",
            _write(root, "null_type.parquet", _parquet(nulls)),
            "a column of Arrow's null type (every value missing) as the quasi-identifier",
            shape=(3, 2),
            values={"a": (None, None, None)},
            k=3,
            classes=1,
            warning=r"Quasi-identifier 'a' is missing in every record",
        ),
        Case(
            "parquet_time_zone",
            _write(root, "time_zone.parquet", _parquet(zoned)),
            "timestamps with a time zone and a missing one",
            shape=(4, 2),
            qi="t",
            k=1,
            classes=3,
        ),
        Case(
            "dataset_time_zone",
            _dataset(root, "dataset_time_zone", zoned),
            "the same timestamps in a folder, counted by DuckDB",
            shape=(4, 2),
            qi="t",
            k=1,
            classes=3,
            upload=False,
            dataset=True,
        ),
        Case(
            "parquet_dates_before_1900",
            _write(root, "old_dates.parquet", _parquet(old)),
            "dates of year 1 and 1899, timestamps of years 1 and 9999 (beyond nanosecond timestamps)",
            shape=(3, 3),
            qi="d",
            k=1,
            classes=2,
        ),
        Case(
            "dataset_dates_before_1900",
            _dataset(root, "dataset_old_dates", old),
            "the same dates in a folder, counted by DuckDB",
            shape=(3, 3),
            qi="d",
            k=1,
            classes=2,
            upload=False,
            dataset=True,
        ),
        Case(
            "parquet_row_group_per_row",
            _write(root, "row_groups.parquet", groups.getvalue()),
            "400 row groups of one row each",
            shape=(400, 2),
            values={"g": (0, 1, 2, 3)},
            k=100,
            classes=4,
        ),
        Case(
            "one_row",
            _write(root, "one_row.csv", b"a,b\n1,x\n"),
            "a header and a single record",
            shape=(1, 2),
            values={"a": (1,), "b": ("x",)},
            k=1,
            classes=1,
        ),
        Case(
            "long_column_name",
            _write(root, "long_name.csv", f"{long_name},b\n1,x\n1,y\n2,x\n".encode()),
            "a column name of 1,000 characters",
            shape=(3, 2),
            values={long_name: (1, 1, 2)},
            k=1,
            classes=2,
        ),
        Case(
            "decimal_commas",
            _write(root, "decimal_commas.csv", b"a;b\n1,5;x\n2,5;y\n1,5;z\n"),
            "decimal commas between semicolons: text, as the reader's numbers have decimal points",
            shape=(3, 2),
            values={"a": ("1,5", "2,5", "1,5")},
            k=1,
            classes=2,
        ),
    ]
