"""When a column of decimal texts becomes float64: the reader's exactness rule (module docstring of
``privdash.data.tables``) at its boundaries, against an independent oracle written with ``decimal``.

The rule: a text ``t`` whose last significant digit is in the place of ``10**q`` is kept by its float ``f`` when
``t`` is the multiple of ``10**q`` nearest to ``f`` among those that read back as ``f``. The oracle below computes
that with exact decimal arithmetic, text by text; the reader decides it in bulk (Arrow kernels, numpy, double-double
residuals) and must agree on every text.
"""

from __future__ import annotations

import math
import random
import re
import struct
from decimal import ROUND_HALF_EVEN, Decimal, localcontext

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from privdash.data.tables import infer_numeric_columns, read_table, read_table_with_info

_NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def _oracle(text: str) -> bool:
    """Whether the float keeps ``text`` (a decimal number), by exact decimal arithmetic."""
    number = float(text)
    if not math.isfinite(number):
        return False
    with localcontext() as context:
        context.prec = 10_000
        context.Emin, context.Emax = -999999, 999999
        written = Decimal(text)
        if written == 0:
            return True
        if number == 0:
            return False
        written = abs(written)
        exact = abs(Decimal(number))  # the float's exact value
        q = written.normalize().as_tuple().exponent
        assert isinstance(q, int)
        unit = Decimal(1).scaleb(q)
        nearest = exact.quantize(unit, rounding=ROUND_HALF_EVEN)
        candidates = sorted({nearest - unit, nearest, nearest + unit}, key=lambda c: (abs(c - exact), c / unit % 2))
        for candidate in candidates:
            if candidate > 0 and float(candidate) == abs(number):
                return candidate == written
        return False


def _kept_by_reader(texts: list[str]) -> list[bool]:
    """Each text alone in a column of its own (with a second row ``1`` so that the column is complete): read as a
    number or not. One wide frame: every column is decided in one call."""
    frame = pd.DataFrame({i: [text, "1"] for i, text in enumerate(texts)}, dtype=object)
    typed = infer_numeric_columns(frame)
    return [pd.api.types.is_numeric_dtype(dtype) for dtype in typed.dtypes]


def _random_decimals(rng: random.Random, count: int) -> list[str]:
    texts = []
    for _ in range(count):
        kind = rng.random()
        value = struct.unpack("<d", rng.getrandbits(64).to_bytes(8, "little"))[0]
        if not math.isfinite(value):
            value = rng.random()
        if kind < 0.25:  # the float written with n significant digits (n up to 25): kept when n >= its shortest
            text = f"{value:.{rng.randint(1, 25)}g}"
        elif kind < 0.45:  # a normal-range value of 14 to 20 random digits
            digits = rng.choice("123456789") + "".join(rng.choice("0123456789") for _ in range(rng.randint(13, 19)))
            text = f"{rng.choice(['', '-', '+'])}{digits[: rng.randint(1, 5)]}.{digits[5:]}e{rng.randint(-30, 30)}"
        elif kind < 0.6:  # the float's 17 digits with the last one moved by one (one of them is kept)
            base = f"{value:.16e}"
            mantissa, exponent = base.split("e")
            last = int(mantissa[-1])
            text = f"{mantissa[:-1]}{(last + rng.choice([-1, 1])) % 10}e{exponent}"
        elif kind < 0.7:  # subnormals
            tiny = struct.unpack("<d", rng.getrandbits(52).to_bytes(8, "little"))[0]
            text = f"{tiny:.{rng.randint(1, 20)}g}"
        elif kind < 0.8:  # powers of two, whose gap below is half the gap above, written near their value
            power = math.ldexp(1.0, rng.randint(-1074, 1023))
            text = f"{power:.{rng.randint(15, 19)}g}"
            if rng.random() < 0.5:
                text = f"{math.nextafter(power, 0):.{rng.randint(15, 19)}g}"
        elif kind < 0.9:  # positional forms with leading and trailing zeros
            text = f"{abs(value) % 1000:.{rng.randint(0, 30)}f}"
        else:  # repr, the shortest form
            text = repr(value)
        texts.append(text)
    return texts


def test_the_oracle_states_the_rule() -> None:
    assert _oracle("0.1") and _oracle("0.10000000000000001") and _oracle("0.30000000000000004")
    assert not _oracle("0.10000000000000002") or float("0.10000000000000002") != 0.1
    assert not _oracle("0.1234567890123456789") and not _oracle("1e-400") and not _oracle("1e999")
    assert _oracle("9007199254740992.0") and not _oracle("9007199254740993.0")


def test_random_decimals_agree_with_the_oracle() -> None:
    rng = random.Random(20261127)
    texts = [text for text in _random_decimals(rng, 6_000) if _NUMBER.fullmatch(text)]
    expected = [_oracle(text) for text in texts]
    got = _kept_by_reader(texts)
    disagree = [(text, want) for text, want, have in zip(texts, expected, got, strict=True) if want != have]
    assert not disagree, disagree[:10]
    # Both outcomes are well represented (the test would pass vacuously otherwise).
    assert 0.2 < sum(expected) / len(expected) < 0.9


@pytest.mark.parametrize("digits", [1, 5, 15, 16, 17, 18, 19, 25, 40])
def test_a_float_written_with_any_number_of_digits_is_a_float(digits: int) -> None:
    rng = np.random.default_rng(digits)
    values = np.concatenate([rng.normal(0, 1e3, 300), rng.normal(0, 1e-7, 100), rng.normal(0, 1e200, 100)])
    texts = [f"{value:.{digits}g}" for value in values]
    raw = ("x,y\n" + "".join(f"{text},{i}\n" for i, text in enumerate(texts))).encode()
    frame, info = read_table_with_info(raw, filename="f.csv")
    assert frame["x"].dtype == np.float64, info.notes
    assert frame["x"].tolist() == [float(text) for text in texts]
    assert info.notes == ()


def test_numpy_savetxt_and_pandas_exports_are_floats() -> None:
    rng = np.random.default_rng(3)
    values = rng.normal(0, 50, (400, 2))
    lines = "\n".join(" ".join(f"{v:.18e}" for v in row) for row in values)  # np.savetxt's default %.18e
    frame = read_table(("a;b\n" + lines.replace(" ", ";")).encode(), filename="s.csv")
    assert frame.dtypes.tolist() == [np.float64, np.float64]
    np.testing.assert_array_equal(frame.to_numpy(), values)
    exported = pd.DataFrame(values, columns=["a", "b"]).to_csv(index=False).encode()  # repr, the shortest form
    np.testing.assert_array_equal(read_table(exported, filename="p.csv").to_numpy(), values)


@pytest.mark.parametrize(
    ("texts", "numeric"),
    [
        (["0.123456789012345"], True),  # 15 significant digits: always kept
        (["0.1234567890123456"], True),  # 16: the float's 16 digits
        (["0.12345678901234568"], True),  # 17: the float's 17 digits
        (["0.12345678901234567"], False),  # 17 digits that round to the same float but are not its digits
        (["0.30000000000000004"], True),  # 0.1 + 0.2 written at 17 digits
        (["0.1234567890123456789"], False),  # 19 digits that no float has
        (["-0.0", "0", "+0.000e5"], True),  # every zero is zero
        (["1e308", "-1.7976931348623157e308"], True),
        (["1.7976931348623159e308"], False),  # overflows
        (["5e-324", "2.2250738585072014e-308", "1.5e-310"], True),  # subnormals, the smallest normal
        (["4.9406564584124654e-324"], True),  # the smallest subnormal at 17 digits
        (["3e-324"], False),  # reads as 5e-324: the text says more than the float
        (["1e-400"], False),  # underflows to 0
        (["9007199254740992.0"], True),  # 2**53
        (["9007199254740993.0"], False),  # 2**53 + 1 as a float: it would be 2**53
        (["1." + "0" * 3000], True),  # thousands of digits, all zeros after the point
        (["1." + "0" * 3000 + "1"], False),  # thousands of digits that a float cannot hold
        (["+1.5", "+.5", "5.", "-2.5E-3"], True),  # signs and forms
    ],
)
def test_boundaries_of_the_rule(texts: list[str], numeric: bool) -> None:
    column = [*texts, "2.5"]
    frame, info = read_table_with_info(
        ("x,y\n" + "".join(f"{text},{i}\n" for i, text in enumerate(column))).encode(), filename="b.csv"
    )
    assert pd.api.types.is_numeric_dtype(frame["x"]) == numeric, (texts, info.notes)
    if numeric:
        assert frame["x"].tolist() == [float(text) for text in column]
    else:
        assert frame["x"].tolist() == column  # every text as written
        assert any("'x'" in note for note in info.notes)
    assert all(_oracle(text) == numeric for text in texts)


def test_integers_beyond_2_53_never_silently_become_floats() -> None:
    frame = read_table(b"n,y\n9007199254740992,1\n9007199254740993,2\n", filename="i.csv")
    assert frame["n"].dtype == np.int64 and frame["n"].tolist() == [2**53, 2**53 + 1]
    # With a missing value the column would be float64, which would merge them: text, as before.
    frame, info = read_table_with_info(b"n,y\n9007199254740992,1\n,2\n9007199254740993,3\n", filename="i.csv")
    assert frame["n"].tolist()[::2] == ["9007199254740992", "9007199254740993"]
    assert any("more than 15 digits" in note for note in info.notes)


def test_whole_floats_become_integers_only_when_every_one_is_whole() -> None:
    """A column of floats whose first hundred values are whole and one later value is not stays float64 (the test
    of a column's start must not decide alone); whole floats throughout become int64."""
    whole_start = ["2.0"] * 100 + ["2.5"] + ["1e3"] * 5
    raw = ("a,b,c\n" + "".join(f"{v},{w},7\n" for v, w in zip(whole_start, ["3.0"] * 106, strict=True))).encode()
    frame = read_table(raw, filename="w.csv")
    assert frame["a"].dtype == np.float64 and frame["a"].iloc[100] == 2.5
    assert frame["b"].dtype == np.int64 and frame["c"].dtype == np.int64


def test_one_inexact_cell_keeps_its_column_as_text() -> None:
    values = [f"{v:.17g}" for v in np.random.default_rng(1).normal(size=2_000)]
    values[1_500] = "0.1234567890123456789"
    raw = ("x,y\n" + "".join(f"{v},{i}\n" for i, v in enumerate(values))).encode()
    frame, info = read_table_with_info(raw, filename="m.csv")
    assert frame["x"].tolist() == values
    assert info.notes == (
        "Column 'x' holds numbers that a 64-bit float cannot keep (too many digits, or beyond its range) (e.g. "
        "'0.1234567890123456789'); it is kept as text so that every value stays exact and distinct values stay "
        "distinct.",
    )


def test_two_kept_numbers_of_one_float_keep_their_column_as_text() -> None:
    # 0.1 and 0.10000000000000001 are both kept by the float 0.1, but they are two numbers: never merged.
    frame, info = read_table_with_info(b"x,y\n0.1,1\n0.10000000000000001,2\n0.5,3\n", filename="m.csv")
    assert frame["x"].tolist() == ["0.1", "0.10000000000000001", "0.5"]
    assert any("one 64-bit float would merge" in note and "'0.1'" in note for note in info.notes)
    subnormal = read_table(b"x,y\n5e-324,1\n4.9406564584124654e-324,2\n", filename="t.csv")
    assert subnormal["x"].tolist() == ["5e-324", "4.9406564584124654e-324"]
    # The same number twice, spelled two ways, is one number: a float.
    same = read_table(b"x,y\n0.10000000000000001,1\n1.0000000000000001e-1,2\n0.5,3\n", filename="s.csv")
    assert same["x"].tolist() == [0.1, 0.1, 0.5]


@pytest.mark.parametrize(
    ("cell", "kept_as"),
    [
        ("inf", "inf"), ("-Infinity", "-Infinity"), ("+inf", "+inf"), ("INF", "INF"),
        ("NAN", "NAN"), ("+nan", "+nan"), ("nan(1)", "nan(1)"), ("1e", "1e"), ("0x10", "0x10"), ("1_000", "1_000"),
    ],
)  # fmt: skip
def test_infinity_and_nan_spellings_are_not_numbers(cell: str, kept_as: str) -> None:
    frame = read_table(f"x,y\n1.5,1\n{cell},2\n".encode(), filename="w.csv")
    assert frame["x"].tolist() == ["1.5", kept_as]


def test_spaces_and_other_blanks_around_numbers() -> None:
    # Spaces are removed by the reader; tabs and other blanks that str.strip() removes are removed for the test.
    frame = read_table(b"x,y,z\n 1.5 ,\t2,3\n2.25,\t3\t,\xc2\xa04\n", filename="s.csv")
    assert frame["x"].tolist() == [1.5, 2.25]
    assert frame["y"].tolist() == [2, 3]
    assert frame["z"].tolist() == [3, 4]  # a no-break space around 4
    # Inside a number, a blank is text.
    assert read_table(b"x,y\n1 5,1\n2,2\n", filename="s.csv")["x"].tolist() == ["1 5", "2"]


def test_arrow_reads_exactly_the_decimal_grammar() -> None:
    """The reader lets Arrow's float cast validate a column when it succeeds: Arrow must accept, as finite
    numbers, exactly the texts of the grammar, and Python's float must agree with its value."""
    rng = random.Random(7)
    alphabet = "0123456789.eE+- \tinfatyINFATYx_"
    texts = ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 8))) for _ in range(20_000)]
    texts += ["1e5", ".5", "5.", "+5", "-0", "1E+05", "00.1", "1e-0005"]
    for text in texts:
        try:
            value = pc.cast(pa.array([text], pa.large_string()), pa.float64())[0].as_py()
        except pa.ArrowInvalid:
            assert not _NUMBER.fullmatch(text), text
            continue
        if _NUMBER.fullmatch(text):
            assert value == float(text) and str(math.copysign(1, value)) == str(math.copysign(1, float(text)))
        else:
            assert not math.isfinite(value), text  # words: inf, nan...


def test_arrow_parses_floats_as_python_does() -> None:
    rng = random.Random(11)
    texts = _random_decimals(rng, 20_000)
    texts = [text for text in texts if _NUMBER.fullmatch(text)]
    parsed = pc.cast(pa.array(texts, pa.large_string()), pa.float64()).to_numpy()
    expected = np.array([float(text) for text in texts])
    assert np.array_equal(parsed, expected, equal_nan=True)


def test_steps_of_the_bulk_test_give_the_same_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    """Columns settled in small steps on two threads (as a large file is) read as in one step: the first inexact
    value and the merged one are found in a later step, and the notes name the same examples."""
    from privdash.data.tables import numbers

    rng = np.random.default_rng(9)
    floats = [f"{v:.17g}" for v in rng.normal(0, 1e3, 5_000)]
    inexact = list(floats)
    inexact[4_321] = "0.1234567890123456789"
    merged = [*floats[:4_000], "0.1", "0.10000000000000001", *floats[4_000:]]
    rows = max(len(inexact), len(merged))
    raw = (
        "a,b,c,d\n"
        + "".join(
            f"{floats[i % len(floats)]},{inexact[i % len(inexact)]},{merged[i % len(merged)]},{i}\n"
            for i in range(rows)
        )
    ).encode()
    whole = read_table_with_info(raw, filename="s.csv")
    monkeypatch.setattr(numbers, "_CHUNK_TEXTS", 700)
    stepped = read_table_with_info(raw, filename="s.csv")
    pd.testing.assert_frame_equal(stepped[0], whole[0], check_exact=True)
    assert stepped[1] == whole[1]
    assert stepped[0].dtypes.astype(str).tolist() == ["float64", "str", "str", "int64"]
    assert "'0.1234567890123456789'" in " ".join(whole[1].notes) and "'0.1'" in " ".join(whole[1].notes)


def test_columns_of_mostly_distinct_values_read_row_by_row_as_the_reference(monkeypatch: pytest.MonkeyPatch) -> None:
    """Columns whose first values are mostly distinct skip the hash of their distinct values: with missing values,
    spaces, a text among the floats and a high-cardinality text column, the frame and notes are the reference's."""
    from privdash.data.tables import read

    n = 40_000
    rng = np.random.default_rng(4)
    with_missing = rng.normal(size=n).astype(str).astype(object)
    with_missing[::7] = "NA"
    with_missing[3] = " 1.5 "
    with_text = np.char.mod("%.17g", rng.normal(size=n)).astype(object)
    with_text[n - 5] = "abc"
    ids = np.char.add("id", np.arange(n).astype(str)).astype(object)
    ids[10] = " id10 "
    frame = pd.DataFrame({"a": with_missing, "b": with_text, "c": ids, "d": np.arange(n)})
    raw = frame.to_csv(index=False).encode()
    arrow = read_table_with_info(raw, filename="r.csv")
    monkeypatch.setattr(read, "_read_text_arrow", lambda *args: None)
    reference = read_table_with_info(raw, filename="r.csv")
    pd.testing.assert_frame_equal(arrow[0], reference[0], check_exact=True)
    assert arrow[1] == reference[1]
    assert arrow[0].dtypes.astype(str).tolist() == ["float64", "str", "str", "int64"]
    assert arrow[0]["a"].isna().sum() == len(range(0, n, 7)) and arrow[0]["a"][3] == 1.5


def _long_decimals(rng: random.Random, count: int) -> list[str]:
    """Texts of 14 to 21 significant digits in the forms the bulk test reads by their last four digits: exports at
    17 and 18 digits, trailing zeros, a point among the last digits, signs and exponents, one digit moved."""
    texts = []
    for _ in range(count):
        value = rng.normalvariate(0, 10 ** rng.randint(-8, 22))
        kind = rng.random()
        if kind < 0.25:
            text = f"{value:.{rng.randint(14, 21)}g}"
        elif kind < 0.4:
            text = f"{value:.18e}"  # numpy.savetxt's default
        elif kind < 0.55:  # a point among the last four digits of a long number
            text = f"{rng.randint(10**14, 10**19)}.{rng.randint(0, 999):0{rng.randint(1, 3)}d}"
        elif kind < 0.75:  # one of the last four digits moved by one, trailing zeros after it
            mantissa, exponent = f"{value:.{rng.randint(15, 19)}e}".split("e")
            digits = list(mantissa)
            place = len(digits) - rng.randint(1, 4)
            if digits[place].isdigit():
                digits[place] = str((int(digits[place]) + rng.choice([-1, 1])) % 10)
            text = "".join(digits) + "0" * rng.randint(0, 3) + (f"e{exponent}" if rng.random() < 0.5 else "")
        else:  # fixed notation with many places
            text = f"{rng.choice(['', '+', '-'])}{abs(value) % 10 ** rng.randint(1, 6):.{rng.randint(10, 22)}f}"
        texts.append(text)
    return texts


def test_the_bulk_test_agrees_with_the_oracle_on_long_texts_in_many_steps() -> None:
    """The bulk test decides texts of 16 digits and more from their last four significant digits and the float:
    on thousands of long texts, repeated past the size of a step (so that steps run on two threads), every decision
    equals the oracle's and every scale equals the exact test's."""
    from privdash.data.tables import numbers

    rng = random.Random(20261128)
    unique = [text for text in dict.fromkeys(_long_decimals(rng, 4_000)) if _NUMBER.fullmatch(text)]
    expected = {text: _oracle(text) for text in unique}
    texts = [unique[i % len(unique)] for i in range(numbers._CHUNK_TEXTS * 2 + 123)]
    rng.shuffle(texts)
    array = pa.array(texts, type=pa.large_string())
    reading = numbers._Reading(*numbers._in_chunks(numbers._read_numbers, array))
    floats = reading.numbers
    kept, scale, _ = numbers._kept_floats(array, reading, np.arange(len(texts)), len(texts))
    disagree = sorted({text for text, have in zip(texts, kept.tolist(), strict=True) if have != expected[text]})
    assert not disagree, disagree[:10]
    assert 0.3 < sum(expected.values()) / len(expected) < 0.95
    for text, number, found in zip(texts[:3_000], floats[:3_000], scale[:3_000], strict=True):
        if expected[text] and number != 0:
            assert numbers._kept_one(text, float(number)) == (True, int(found)), text


@pytest.mark.parametrize("failing", [0, 1, 5])
def test_a_failing_step_stops_the_steps_and_its_error_is_raised(failing: int) -> None:
    """Steps run on the calling thread and a helper: the error of any step (the first, one the helper may take, the
    last) reaches the caller; after a failing first step no other starts. The joined results are in order."""
    from privdash.data.tables import numbers

    size = numbers._CHUNK_TEXTS
    texts = pa.array([str(i) for i in range(size * 6)], type=pa.large_string())
    ran: list[int] = []

    def step(chunk: pa.Array) -> tuple[np.ndarray]:
        start = int(chunk[0].as_py())
        ran.append(start // size)
        if start // size == failing:
            raise ValueError(f"step {failing}")
        return (np.zeros(len(chunk)),)

    with pytest.raises(ValueError, match=f"step {failing}"):
        numbers._in_chunks(step, texts)
    assert failing in ran and (failing != 0 or ran == [0])
    joined = numbers._in_chunks(lambda chunk: (np.full(len(chunk), int(chunk[0].as_py())),), texts)
    assert np.array_equal(joined[0], np.repeat(np.arange(6) * size, size))
