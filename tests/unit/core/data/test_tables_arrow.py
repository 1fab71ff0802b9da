"""Delimited text read by Arrow equals the reference parser (pandas' C tokenizer, cell by cell) on every input.

The Arrow path (``_read_text_arrow``) is an optimisation with no rules of its own: for each file it either returns
exactly what the reference returns (the same frame, dtypes, notes and info) or hands the file to the reference.
These tests are the oracle: hand-picked shapes where the two tokenizers differ, and a few thousand random files
built from the pieces that make CSV hard (quotes, spaces, markers, numbers at the edge of float and int64, line
endings, ragged rows), each read both ways.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import pytest

from privdash.data.tables import ReadLimits, read_table_with_info
from privdash.data.tables import read as tables_read
from privdash.errors import DataReadError

Outcome = tuple[str, Any, Any]


def _outcome(raw: bytes, limits: ReadLimits | None = None) -> Outcome:
    try:
        frame, info = read_table_with_info(raw, filename="table.csv", limits=limits)
    except DataReadError as exc:
        return ("error", type(exc).__name__, str(exc))
    return ("frame", frame, info)


def _reference(monkeypatch: pytest.MonkeyPatch, raw: bytes, limits: ReadLimits | None = None) -> Outcome:
    with monkeypatch.context() as patch:
        patch.setattr(tables_read, "_read_text_arrow", lambda *args: None)
        return _outcome(raw, limits)


def _assert_same(arrow: Outcome, reference: Outcome, raw: bytes) -> None:
    assert arrow[0] == reference[0], f"{raw!r}: {arrow[1:]} != {reference[1:]}"
    if arrow[0] == "error":
        assert arrow[1:] == reference[1:], raw
        return
    pd.testing.assert_frame_equal(arrow[1], reference[1], check_exact=True, obj=repr(raw))
    assert arrow[2] == reference[2], raw


@pytest.fixture
def took_arrow(monkeypatch: pytest.MonkeyPatch) -> Callable[[], int]:
    """How many reads the Arrow path answered (the oracle must not pass because every file fell back)."""
    answered = [0]
    original = tables_read._read_text_arrow

    def counting(*args: Any) -> Any:
        result = original(*args)
        answered[0] += result is not None
        return result

    monkeypatch.setattr(tables_read, "_read_text_arrow", counting)
    return lambda: answered[0]


SHAPES = {
    "plain": b"a,b\nx,1\ny,2\n",
    "skipped spaces and markers": b"a, b\n  x, NA\n y,  2\nNA ,3\n",
    "a space before an opening quote": b'a,b\n "x",1\ny,2\n',
    "a space before a quote holding the delimiter": b'a,b,c\nx, "p,q"\ny,2,3\n',
    "a quoted value starting with a space": b'a,b\n" x",1\nx,2\n',
    "quoted markers are missing": b'a,b\n"NA",1\n"",2\nx,"3"\n',
    "doubled quotes": b'a,b\n"x""y",1\n"""",2\n',
    "a quote inside an unquoted value": b'a,b\nab"c,1\nx,2\n',
    "text after a closing quote": b'a,b\n"ab"c,1\nx,2\n',
    "line breaks in a quoted value": b'a,b\n"x\r\ny",1\n"p\nq",2\n',
    "blank lines": b"\n\na,b\n\nx,1\n\n\ny,2\n",
    "a line of spaces": b"a,b\nx,1\n   \ny,2\n",
    "carriage returns only": b"a,b\rx,1\ry,2\r",
    "CRLF": b"a,b\r\nx,1\r\ny,2\r\n",
    "carriage returns and a blank line before an empty first value": b"a;b\r1;2\r\r;x\r3;4\r",
    "no final line break": b"a,b\nx,1\ny,2",
    "a short row": b"a,b,c\nx,1\ny,2,3\n",
    "a long row": b"a,b\nx,1,3\ny,2\n",
    "an open quote at the end": b'a,b\nx,1\ny,"never closed\n',
    "an open quote at the end without a line break": b'a,b\nx,1\ny,"never closed',
    "an open quote with doubled quotes": b'a,b\nx,1\ny,"ab""cd\n',
    "an open quote in the first column": b'a,b\nx,1\n"y,2\n',
    "a quoted last value": b'a,b\nx,1\ny,"z"\n',
    "a quoted last value with a line break": b'a,b\nx,1\ny,"z\n"',
    "a UTF-8 byte-order mark": b"\xef\xbb\xbfa,b\nx,1\n",
    "Latin-1": "a,b\nSão Tomé,1\nx,2\n".encode("latin-1"),
    "UTF-16": "a,b\nx,1\n".encode("utf-16"),
    "semicolons": b"a;b;c\n1,5;x;2\n2,5;y;3\n",
    "tabs": b"a\tb\n x\t1\ny\t 2\n",
    "pipes": b"a|b\nx|1\ny|2\n",
    "a tab before a value": b"a,b\n\tx,1\ny,2\n",
    "empty and repeated names": b"a,,a\n1,2,3\n4,5,6\n",
    "only a header": b"a,b\n",
    "a single column": b"a\nx\ny\n",
    "every value missing": b"a,b\nNA,\n,null\n",
    "a column with no value": b"a,b\nx,\ny,\n",
    "leading zeros": b"zip,n\n02134,1\n10001,2\n",
    "integers beyond int64": b"id,n\n123456789012345678901234567890,1\n123456789012345678901234567891,2\n",
    "integers at the int64 edge": b"id,n\n9223372036854775807,1\n-9223372036854775808,2\n",
    "integers over the int64 edge": b"id,n\n9223372036854775808,1\n1,2\n",
    "long integers with missing values": b"id,n\n1234567890123456,1\n,2\n",
    "floats that round": b"x,n\n0.1234567890123456789,1\n0.5,2\n",
    "infinity words": b"x,n\ninf,1\n1.5,2\n",
    "overflow": b"x,n\n1e999,1\n1.5,2\n",
    "underflow": b"x,n\n1e-400,1\n1.5,2\n",
    "whole floats": b"x,n\n1.0,1\n2.0,2\n",
    "whole floats with a missing value": b"x,n\n1.0,1\n,2\n",
    "signs and exponents": b"x,n\n+5,1\n-.5e3,2\n5.,3\n",
    "numbers with spaces": b"x,n\n 1,1\n  2 ,2\n",
    "trailing spaces in text": b"x,n\nab ,1\nab,2\n",
    "non-ASCII text": "name,n\nZoë,1\n東京,2\n".encode(),
    "control characters": b"a,b\n" + b"\x01\x02,\x03\n" * 40,
    "NUL": b"a,b\nx\x00,1\n",
    "a formula": b"a,b\n=1+2,1\n@x,2\n",
}


@pytest.mark.parametrize("raw", SHAPES.values(), ids=SHAPES.keys())
def test_shapes_read_as_the_reference_reads_them(monkeypatch: pytest.MonkeyPatch, raw: bytes) -> None:
    _assert_same(_outcome(raw), _reference(monkeypatch, raw), raw)


def test_the_arrow_path_answers_clean_files(took_arrow: Callable[[], int]) -> None:
    clean = (
        "plain",
        "skipped spaces and markers",
        "doubled quotes",
        "line breaks in a quoted value",
        "CRLF",
        "a quoted value starting with a space",  # its spaces are removed like any value's
        "trailing spaces in text",
    )
    for name in clean:
        _outcome(SHAPES[name])
    assert took_arrow() == len(clean)


def test_the_arrow_path_hands_over_what_it_cannot_read_alike(took_arrow: Callable[[], int]) -> None:
    for name in (
        "a space before an opening quote",
        "a short row",
        "an open quote at the end",
        "Latin-1",
        "a single column",
    ):
        _outcome(SHAPES[name])
    assert took_arrow() == 0


_VALUES = [
    "a", "b c", "x", "1", "2", "-3", "01", "1.5", "2.25", "1e3", "-.5", "5.", "+7", "0", "-0", "1.0", "NA", "",
    "null", "NaN", "n/a", "-", " x", "  1", " NA", "ab ", '"q,r"', '"x""y"', '""', '" s"', ' "t"', 'ab"c', "inf",
    "Infinity", "1e999", "1e-400", "0.12345678901234567", "123456789012345678901", "9223372036854775807",
    "1234567890123456", "é", "東", "=1+2", "\t1", "#N/A",
]  # fmt: skip
_NAMES = ["a", "b", "c", " d", '"e"', "", "a", "n", "NA"]


def _random_table(rng: random.Random) -> bytes:
    delimiter = rng.choice([",", ",", ",", ";", "\t", "|"])
    newline = rng.choice(["\n", "\n", "\r\n", "\r"])
    width = rng.choice([2, 2, 3, 4])
    # Columns drawn from a few values each (numbers stay numbers more often), with rare odd ones.
    pools = [rng.sample(_VALUES, rng.randint(1, 5)) for _ in range(width)]
    lines = [delimiter.join(rng.choice(_NAMES) for _ in range(width))]
    for _ in range(rng.randint(1, 12)):
        fields = [rng.choice(pool) if rng.random() > 0.05 else rng.choice(_VALUES) for pool in pools]
        shape = rng.random()
        if shape < 0.03:
            fields = fields[:-1]
        elif shape < 0.05:
            fields.append("z")
        lines.append(delimiter.join(fields))
        if rng.random() < 0.03:
            lines.append("")
    text = newline.join(lines) + (newline if rng.random() < 0.8 else "")
    if rng.random() < 0.03:
        text += '"open'
    return text.encode("utf-8")


def test_random_tables_read_as_the_reference_reads_them(
    monkeypatch: pytest.MonkeyPatch, took_arrow: Callable[[], int]
) -> None:
    rng = random.Random(20261124)
    cases = [_random_table(rng) for _ in range(2_500)]
    for raw in cases:
        arrow = _outcome(raw)
        reference = _reference(monkeypatch, raw)
        _assert_same(arrow, reference, raw)
    # Most random files are answered by Arrow; the rest are handed over and give the reference's answer above.
    assert took_arrow() > len(cases) // 3


def test_limits_are_said_alike(monkeypatch: pytest.MonkeyPatch) -> None:
    rows = b"a,b\n" + b"".join(b"%d,x%d\n" % (i, i) for i in range(5_000))
    for limits in (ReadLimits(max_rows=4_999), ReadLimits(max_cells=9_000), ReadLimits(max_columns=1)):
        _assert_same(_outcome(rows, limits), _reference(monkeypatch, rows, limits), rows[:20])
        assert _outcome(rows, limits)[1] == "ReadLimitError"


def test_a_large_file_equals_the_reference(monkeypatch: pytest.MonkeyPatch, took_arrow: Callable[[], int]) -> None:
    # Many Arrow batches (one per megabyte), columns of every kind the rules produce.
    rng = np.random.default_rng(5)
    n = 200_000
    frame = pd.DataFrame(
        {
            "code": rng.integers(0, 50, n),
            "zip": np.array(["02134", "10001", "94110"])[rng.integers(0, 3, n)],
            "income": np.round(rng.normal(5e4, 1e4, n), 2),
            "sex": np.array(["F", "M", "NA", ""])[rng.integers(0, 4, n)],
            "age": np.where(rng.random(n) < 0.01, "", rng.integers(0, 99, n).astype(str)),
        }
    )
    raw = frame.to_csv(index=False).encode()
    arrow = _outcome(raw)
    _assert_same(arrow, _reference(monkeypatch, raw), raw[:80])
    assert took_arrow() == 1
    assert arrow[1].dtypes.astype(str).tolist() == ["int64", "str", "float64", "str", "float64"]


def test_lines_ended_by_carriage_returns_keep_their_columns(monkeypatch: pytest.MonkeyPatch) -> None:
    # pandas' tokenizer, left to guess the line ends, drops the delimiter after a blank line and shifts "x" left.
    raw = SHAPES["carriage returns and a blank line before an empty first value"]
    for outcome in (_outcome(raw), _reference(monkeypatch, raw)):
        assert outcome[1]["a"].fillna(-1).tolist() == [1, -1, 3]
        assert outcome[1]["b"].tolist() == ["2", "x", "4"]
