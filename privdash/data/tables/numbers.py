"""Typing text columns: a column of text becomes numeric only when every value is a decimal number that the
conversion keeps (int64 or float64); the checks run in bulk over all columns (rules in :mod:`privdash.data.tables`)."""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd

from privdash.data.tables.limits import _Deadline
from privdash.errors import format_values

__all__ = ["infer_numeric_columns"]


#: Cells parsed or converted between two checks of the time limit (well under a second of work).
_CHUNK_CELLS = 1_000_000


_NUMBER_TEXT = r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
_INFINITY_TEXT = r"[+-]?(?i:inf|infinity)"
#: The characters Python's ``str.strip()`` removes (``str.isspace``), as an RE2 class: a numeric text is read
#: with them removed from both ends, as ``float()`` reads it.
_STRIPPED_CLASS = (
    r"[\t\n\x0b\x0c\r\x1c-\x1f \x{85}\x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}]"
)
_STRIP_PATTERN = f"^{_STRIPPED_CLASS}+|{_STRIPPED_CLASS}+$"
_NUMBER_PATTERN = f"^{_NUMBER_TEXT}$"
_INFINITY_PATTERN = f"^{_INFINITY_TEXT}$"
_NUMBER_OR_INFINITY_PATTERN = f"^(?:{_NUMBER_TEXT}|{_INFINITY_TEXT})$"
_FIRST_NUMBER = re.compile(f"{_NUMBER_TEXT}|[+-]?(?:inf|infinity)", re.IGNORECASE)
#: Columns whose first values are tested by Python's regular expression rather than Arrow's.
_FEW_COLUMNS = 64
#: Texts read one by one rather than taken at once (:func:`_texts_at`).
_FEW_TEXTS = 256
#: pandas' ``str`` dtype (Arrow storage, NaN for missing): what the reference's text columns become.
_TEXT_DTYPE = pd.StringDtype("pyarrow", na_value=np.nan)
_DECIMAL = re.compile(r"[+-]?([0-9]*)(?:\.([0-9]*))?(?:[eE]([+-]?[0-9]+))?")
_SMALLEST_NORMAL = 2.2250738585072014e-308
#: Powers of ten held in the table of :func:`_powers_of_ten` (10**-_POWER_RANGE ... 10**_POWER_RANGE).
_POWER_RANGE = 350
#: Where the bulk test of :func:`_kept_floats` is too close to call, the exact test decides.
_RESIDUAL_TOLERANCE = 1e-6
#: More significant digits than any float's exact decimal expansion has (at most 767).
_MAX_EXPANSION_DIGITS = 800


def infer_numeric_columns(frame: pd.DataFrame) -> pd.DataFrame:
    """Convert the text columns whose every non-missing value is a decimal number, without a leading zero, that the
    conversion keeps exactly (see the module docstring); other columns are unchanged."""
    return _infer_numeric(frame, None)[0]


def _infer_numeric(frame: pd.DataFrame, deadline: _Deadline | None) -> tuple[pd.DataFrame, list[str]]:
    """:func:`infer_numeric_columns`, and notes naming the columns kept as text to keep their values.

    The columns are converted in batches of about ``_CHUNK_CELLS`` cells, all columns of a batch at once (a wide
    table costs one pass, not one per column), with a time check between batches.
    """
    dtypes = frame.dtypes.tolist()
    positions = [
        i
        for i, dtype in enumerate(dtypes)
        if pd.api.types.is_object_dtype(dtype) or pd.api.types.is_string_dtype(dtype)
    ]
    n_rows = len(frame)
    if not positions or not n_rows:
        return frame, []
    converted, notes = _numeric_conversions(
        lambda chosen: frame.iloc[:, chosen].to_numpy(dtype=object), positions, n_rows, list(frame.columns), deadline
    )
    if not converted:
        return frame, notes
    # One frame of the new columns and one of the others, then the original order: a wide table is rebuilt in one
    # step instead of one column assignment at a time.
    others = [i for i in range(frame.shape[1]) if i not in converted]
    new = pd.DataFrame({i: converted[i] for i in sorted(converted)}, index=frame.index)
    rest = frame.iloc[:, others].set_axis(others, axis=1)
    out = pd.concat([rest, new], axis=1) if others else new
    out = out[list(range(frame.shape[1]))]
    out.columns = frame.columns
    return out, notes


def _numeric_conversions(
    block: Callable[[list[int]], np.ndarray],
    positions: list[int],
    n_rows: int,
    names: Sequence[object],
    deadline: _Deadline | None,
) -> tuple[dict[int, np.ndarray], list[str]]:
    """The converted columns (position -> values) among ``positions``, read through ``block(positions)`` (rows x
    columns of objects) in batches of about ``_CHUNK_CELLS`` cells, and the notes on the columns kept as text."""
    converted: dict[int, np.ndarray] = {}
    kept: dict[str, list[tuple[str, str]]] = {
        "overflow": [],
        "inexact": [],
        "merged": [],
        "integers": [],
        "integers_missing": [],
    }
    if not n_rows:
        return converted, []
    batch = max(1, _CHUNK_CELLS // n_rows)
    for start in range(0, len(positions), batch):
        chosen = positions[start : start + batch]
        _convert_block(block(chosen), chosen, names, converted, kept)
        if deadline is not None:
            deadline.check()
    return converted, _numeric_notes(kept, names)


def _convert_block(
    block: np.ndarray,
    positions: list[int],
    names: Sequence[object],
    converted: dict[int, np.ndarray],
    kept: dict[str, list[tuple[str, str]]],
) -> None:
    """Decide and convert every column of ``block`` (rows x columns of objects) at once, on its non-missing cells."""
    n_rows, width = block.shape
    present = ~pd.isna(block)
    cols, rows = np.nonzero(present.T)  # column-major: each column's cells in row order
    if not len(rows):
        return
    texts = _text_array(block.T[cols, rows])
    complete = present.sum(axis=0) == n_rows
    decided = _settle_numbers(texts, cols, width, complete, [str(names[p]) for p in positions], kept)
    bounds = np.searchsorted(cols, np.arange(width + 1))
    for column, numbers in decided.items():
        if complete[column]:
            converted[positions[column]] = numbers
        else:
            full = np.full(n_rows, np.nan)
            full[rows[bounds[column] : bounds[column + 1]]] = numbers
            converted[positions[column]] = full


def _text_array(values: np.ndarray) -> Any:
    """Objects as an Arrow array of texts (``str(value)`` for those that are not texts)."""
    import pyarrow as pa

    if pd.api.types.infer_dtype(values, skipna=False) != "string":
        values = np.array([str(value) for value in values], dtype=object)
    return pa.array(values, type=pa.large_string())


def _settle_numbers(
    texts: Any,
    cols: np.ndarray,
    width: int,
    complete: np.ndarray,
    names: Sequence[str],
    kept: dict[str, list[tuple[str, str]]],
) -> dict[int, np.ndarray]:
    """The numeric columns among ``width`` columns of texts, decided together, vectorized over cells and columns.

    ``texts`` (an Arrow array or chunked array of large strings) holds the non-missing cells of every column one
    column after the other, in row order (or each column's distinct values, in order of first appearance), ``cols``
    the column of each cell (ascending) and ``complete`` which columns have no missing value. Returns column -> its
    cells' numbers (int64 for a complete column of whole numbers, else float64); the columns kept as text for a
    reason the module docstring gives are added to ``kept`` (reason -> column name and an example).
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    def any_in(mask: np.ndarray, where: np.ndarray) -> np.ndarray:
        """Per column, whether a cell of ``mask`` is set (``where``: the cells' columns, ascending; each column's
        cells found by a binary search, not a pass over the cells)."""
        found = np.zeros(width, dtype=bool)
        if len(where):
            edges = np.searchsorted(where, np.arange(width + 1))
            held = edges[:-1] < edges[1:]
            found[held] = np.logical_or.reduceat(mask, edges[:-1][held])
        return found

    bounds = np.searchsorted(cols, np.arange(width + 1))
    firsts = bounds[:-1][bounds[:-1] < bounds[1:]]
    # A column whose first value is neither a number nor an infinity word is text: one test per column (a few
    # columns by Python's regular expression: the first of Arrow's in a process costs 5 ms to set up).
    if len(firsts) <= _FEW_COLUMNS:
        first_ok = np.array(
            [
                text is not None and _FIRST_NUMBER.fullmatch(text.strip()) is not None
                for text in _texts_at(texts, firsts)
            ],
            dtype=bool,
        )
    else:
        first_ok = _matches(_stripped(texts.take(pa.array(firsts))), _NUMBER_OR_INFINITY_PATTERN)
    candidate = np.zeros(width, dtype=bool)
    candidate[cols[firsts[first_ok]]] = True
    texts, cols = _narrow(texts, cols, candidate)
    if not len(cols):
        return {}
    reading: _Reading | None = None
    try:  # Arrow reads exactly the decimal numbers (and words such as inf and nan): one pass when all are numbers,
        # which also reads their shape and makes the bulk test of exactness while each step is in the cache
        reading = _Reading(*_in_chunks(_read_numbers, texts))
        numbers = reading.numbers
        odd = ~np.isfinite(numbers)
        number = np.ones(len(cols), dtype=bool)
        word = np.zeros(len(cols), dtype=bool)
        if odd.any():
            strange = texts.filter(pa.array(odd))
            number[odd] = _matches(strange, _NUMBER_PATTERN)
            word[odd] = _matches(strange, _INFINITY_PATTERN)
    except pa.ArrowInvalid:
        texts = _contiguous(texts)
        number = _matches(texts, _NUMBER_PATTERN)
        word = np.zeros(len(cols), dtype=bool)
        loose = ~number
        # Characters str.strip() removes around a number, infinity words, text.
        stripped = _stripped(texts.filter(pa.array(loose)))
        number[loose] = _matches(stripped, _NUMBER_PATTERN)
        word[loose] = _matches(stripped, _INFINITY_PATTERN)
        texts = pc.replace_with_mask(texts, pa.array(loose), stripped)
        numbers = np.full(len(cols), np.nan)
        if number.any():
            numbers[number] = pc.cast(texts.filter(pa.array(number)), pa.float64()).to_numpy()
    # Columns of numbers with infinity words (inf, Infinity...): text, as the words are not numbers here; say so.
    for position in _flagged(candidate & any_in(number, cols) & any_in(word, cols) & ~any_in(~number & ~word, cols)):
        kept["overflow"].append((names[position], _example(texts, cols, int(position), word)))
    candidate &= ~any_in(~number, cols)
    chosen = candidate[cols]
    if not chosen.all():
        texts, cols, numbers = texts.filter(pa.array(chosen)), cols[chosen], numbers[chosen]
        reading = reading.take(chosen) if reading is not None else None
    if not len(cols):
        return {}
    if reading is None:
        reading = _Reading(*_in_chunks(_read_numbers, texts, numbers))
    candidate &= ~any_in(reading.lead, cols)  # a leading zero
    integer = ~reading.shaped
    magnitude = reading.magnitude
    all_integer = candidate & ~any_in(~integer, cols)
    as_float_integers = np.zeros(width, dtype=bool)
    out: dict[int, np.ndarray] = {}
    if all_integer.any():
        chosen = all_integer[cols]
        integers, int_cols, digits = texts.filter(pa.array(chosen)), cols[chosen], magnitude[chosen]
        # An integer fits int64 with at most 18 digits; with 19, compare it with the limit of its sign.
        over = digits > 19
        nineteen = np.flatnonzero(digits == 19)
        if len(nineteen):
            some = integers.take(pa.array(nineteen))
            values = pc.cast(pc.utf8_ltrim(some, characters="+-"), pa.uint64()).to_numpy()
            negative = _matches(some, "^-")
            over[nineteen] = values > np.where(negative, np.uint64(2**63), np.uint64(2**63 - 1))
        as_int64 = all_integer & complete & ~any_in(over, int_cols)
        # With missing values an integer column is stored as float64, exact up to 15 digits.
        as_float_integers = all_integer & ~complete & ~any_in(digits > 15, int_cols)
        for position in _flagged(all_integer & ~as_int64 & ~as_float_integers):
            reason = "integers" if complete[position] else "integers_missing"
            kept[reason].append((names[position], _example(integers, int_cols, int(position), digits)))
        if as_int64.any():
            chosen = as_int64[int_cols]
            some = integers.filter(pa.array(chosen))
            values = pc.cast(pc.utf8_ltrim(some, characters="+"), pa.int64()).to_numpy()
            out.update(_by_column(values, int_cols[chosen], as_int64))
    floating = (candidate & ~all_integer) | as_float_integers
    if not floating.any():
        return out
    chosen = floating[cols]
    if not chosen.all():
        texts, cols, reading = texts.filter(pa.array(chosen)), cols[chosen], reading.take(chosen)
    numbers = reading.numbers
    infinite = ~np.isfinite(numbers)
    overflow = any_in(infinite, cols)
    for position in _flagged(floating & overflow):
        kept["overflow"].append((names[position], _example(texts, cols, int(position), infinite)))
    live = floating & ~overflow
    if not live.any():
        return out
    chosen = live[cols]
    if not chosen.all():
        texts, cols, reading = texts.filter(pa.array(chosen)), cols[chosen], reading.take(chosen)
    numbers = reading.numbers
    exact, scale, long = _kept_floats(texts, reading, cols, width)
    inexact = any_in(~exact, cols)
    for position in _flagged(live & inexact):
        kept["inexact"].append((names[position], _example(texts, cols, int(position), ~exact)))
    good = live & ~inexact
    merged = _merged_cells(numbers, scale, cols, good & any_in(long, cols))
    merged_columns = any_in(merged, cols)
    for position in _flagged(good & merged_columns):
        kept["merged"].append((names[position], _example(texts, cols, int(position), merged)))
    good &= ~merged_columns
    for index, column in _by_column(numbers, cols, good).items():
        whole = complete[index] and _whole(column[:64]) and _whole(column)  # most float columns fail on their start
        out[index] = column.astype(np.int64) if whole else column
    return out


@dataclass(frozen=True)
class _Reading:
    """Decimal texts read in one pass (:func:`_read_numbers`), one value a text: the float, the shape the numeric
    rules need (a leading zero, a point or an exponent, an integer's digits: :class:`_NumberParts`) and the bulk
    test of exactness (:func:`_kept_in_bulk`: kept, decided, scale, on a grid finer than the float's)."""

    numbers: np.ndarray
    lead: np.ndarray
    shaped: np.ndarray
    magnitude: np.ndarray
    kept: np.ndarray
    known: np.ndarray
    scale: np.ndarray
    long: np.ndarray

    def take(self, mask: np.ndarray) -> _Reading:
        return _Reading(*(value[mask] for value in vars(self).values()))


def _read_numbers(texts: Any, numbers: np.ndarray | None = None) -> tuple[np.ndarray, ...]:
    """The arrays of :class:`_Reading` for a slice of texts that Arrow reads as floats (decimal numbers, and words
    such as ``inf`` or ``nan``, whose float is not finite and whose shape is not used), the floats read by Arrow
    unless given: one step of :func:`_in_chunks` does all three while the slice is in the cache."""
    if numbers is None:
        numbers = _floats(texts)
    parts = _NumberParts(*_number_parts_arrays(texts))
    kept, known, scale, long = _kept_in_bulk(texts, numbers, parts)
    return numbers, parts.lead, parts.shaped, parts.magnitude, kept, known, scale, long


def _floats(texts: Any) -> np.ndarray:
    """Texts read as floats by Arrow (correctly rounded, as Python's ``float``); ``ArrowInvalid`` for a text that
    is neither a decimal number nor a word such as ``inf`` or ``nan``."""
    import pyarrow as pa
    import pyarrow.compute as pc

    return pc.cast(texts, pa.float64()).to_numpy()


def _texts_at(texts: Any, positions: np.ndarray) -> list[str]:
    """The texts at ``positions`` as Python strings: a few read one by one (Arrow's take of a chunked array joins
    its chunks first, 3-4 ms for a million texts), more taken at once."""
    import pyarrow as pa

    if len(positions) <= _FEW_TEXTS:
        return [texts[int(i)].as_py() for i in positions]
    return texts.take(pa.array(positions)).to_pylist()


def _flagged(mask: np.ndarray) -> list[int]:
    """The positions a mask marks, as Python integers."""
    return [int(i) for i in np.flatnonzero(mask)]


def _matches(texts: Any, pattern: str) -> np.ndarray:
    """Which texts match an RE2 ``pattern`` (Arrow's regular expressions: one pass, no Python per cell)."""
    import pyarrow.compute as pc

    return np.asarray(pc.match_substring_regex(texts, pattern).to_numpy(zero_copy_only=False), dtype=bool)


def _stripped(texts: Any) -> Any:
    """Texts without the characters ``str.strip()`` removes at their ends."""
    import pyarrow.compute as pc

    return pc.replace_substring_regex(texts, _STRIP_PATTERN, "")


def _narrow(texts: Any, cols: np.ndarray, columns: np.ndarray) -> tuple[Any, np.ndarray]:
    """The cells of the chosen ``columns`` (a mask over the columns)."""
    import pyarrow as pa

    mask = columns[cols]
    if mask.all():
        return texts, cols
    return texts.filter(pa.array(mask)), cols[mask]


def _whole(values: np.ndarray) -> bool:
    """Whether every float is a whole number in the 64-bit integers' range (np.floor, not np.mod: np.mod iterates
    on large floats, about 20x slower)."""
    return bool(np.all((np.floor(values) == values) & (np.abs(values) < 2.0**63)))


def _by_column(values: np.ndarray, cols: np.ndarray, columns: np.ndarray) -> dict[int, np.ndarray]:
    """``values`` (one per cell, the cells one column after the other) split into the chosen ``columns``: writable
    copies (``values`` itself for a column that is all of it, when it is writable: a view of Arrow's memory is not)."""
    bounds = np.searchsorted(cols, np.arange(len(columns) + 1))
    whole = values.flags.writeable and values.flags.c_contiguous
    return {
        int(c): values
        if whole and bounds[c + 1] - bounds[c] == len(values)
        else values[bounds[c] : bounds[c + 1]].copy()
        for c in np.flatnonzero(columns)
    }


@dataclass(frozen=True)
class _NumberParts:
    """The shape of decimal texts (``_NUMBER_TEXT``), read from their bytes (numpy over the Arrow buffers, no Python
    per text): a leading zero (``02``, ``-07``), a point or an exponent (not an integer), the length without the sign
    (an integer's digits), a sign, the length of the mantissa (with its sign: the place of the ``e``, else the
    text's length), the place of the point (the mantissa's end: none), the exponent (``extreme``: of more than 6
    digits, not read). Places count bytes from the text's start: they hold however the texts are filtered."""

    lead: np.ndarray
    shaped: np.ndarray
    magnitude: np.ndarray
    signed: np.ndarray
    mantissa_length: np.ndarray
    point: np.ndarray
    exponent: np.ndarray
    extreme: np.ndarray


def _number_parts_arrays(texts: Any) -> tuple[np.ndarray, ...]:
    """The arrays of :class:`_NumberParts` for decimal texts."""
    import pyarrow.compute as pc

    n = len(texts)
    offsets, data = _text_bytes(texts, 1)
    last = len(data) - 1
    starts, ends = offsets[:-1], offsets[1:]
    first = data[np.minimum(starts, last)]
    signed = (first == ord("-")) | (first == ord("+"))
    zero_at = starts + signed
    lead = data[np.minimum(zero_at, last)] == ord("0")
    zeros = np.flatnonzero(lead)  # the texts that start with a zero (0.5, 00.5, 02): is a digit next?
    if len(zeros):
        following = zero_at[zeros] + 1
        after = data[np.minimum(following, last)]
        lead[zeros] = (following < ends[zeros]) & (after >= 48) & (after <= 57)
    region = data[offsets[0] : offsets[-1]]
    end = ends.copy()  # of the mantissa
    exponent = np.zeros(n, dtype=np.int64)
    powered = np.zeros(n, dtype=bool)
    extreme = np.zeros(n, dtype=bool)
    marks = np.flatnonzero((region | 32) == ord("e")) + offsets[0]  # 'e' or 'E': at most one a text
    if len(marks):
        owner = np.searchsorted(offsets, marks, side="right") - 1
        end[owner] = marks
        powered[owner] = True
        sign = data[np.minimum(marks + 1, last)]
        begin = marks + 1 + ((sign == ord("-")) | (sign == ord("+")))
        size = ends[owner] - begin
        extreme[owner[size > 6]] = True
        value = np.zeros(len(marks), dtype=np.int64)
        for j in range(6):
            byte = data[np.minimum(begin + j, last)].astype(np.int64)
            value = np.where(j < size, value * 10 + byte - 48, value)
        exponent[owner] = np.where(sign == ord("-"), -value, value)
    # The point's place in each text (-1: none), by Arrow's search: no search of the owner of each point.
    dot = np.asarray(pc.find_substring(texts, ".").to_numpy(zero_copy_only=False), dtype=np.int64)
    point = np.where(dot >= 0, dot, end - starts)
    return lead, (dot >= 0) | powered, ends - starts - signed, signed, end - starts, point, exponent, extreme


def _text_bytes(texts: Any, minimum: int) -> tuple[np.ndarray, np.ndarray]:
    """The offsets (``len(texts) + 1``) and the bytes of an Arrow array of large strings, as numpy views of its
    buffers; the bytes padded with zeros to ``minimum`` when shorter (places are unchanged)."""
    buffers = texts.buffers()
    offsets = np.frombuffer(buffers[1], dtype=np.int64)[texts.offset : texts.offset + len(texts) + 1]
    data = np.frombuffer(buffers[2], dtype=np.uint8) if buffers[2] is not None else np.zeros(0, dtype=np.uint8)
    if len(data) < minimum:
        data = np.concatenate([data, np.zeros(minimum, dtype=np.uint8)])
    return offsets, data


def _kept_floats(texts: Any, reading: _Reading, cols: np.ndarray, width: int) -> tuple[np.ndarray, ...]:
    """Which decimal texts their floats keep (module docstring: a text is kept when rounding its float to the text's
    last significant digit gives the text back), each text's scale (``q``: the text is ``digits x 10**q``, its digits
    an integer without trailing zeros), and which texts lie on a grid of ``10**q`` not coarser than their float's
    (only those can be one of two kept texts of one float: a text on a coarser grid never merges).

    ``texts`` are decimal numbers (``_NUMBER_TEXT``), ``reading`` their floats and the bulk test. Decided in bulk by
    :func:`_kept_in_bulk`: a text whose grid is coarser than its float's is kept without reading its digits (every
    decimal of at most 15 significant digits in the normal range is one, DBL_DIG); the others up to 19 digits by
    :func:`_residual`, the distance from the float to the text in units of its last digit, accurate to 1e-12 (kept
    when under 1/2). The texts too close to call, a float at a power of two (an uneven gap), subnormal floats and
    longer texts go to :func:`_kept_one`, the exact test in integers, stopping in each column at the first text that
    is not kept (the column is text then).
    """
    # The exact tests complete the reading's own arrays (made for this check), not copies of them.
    numbers, known, kept, scale = reading.numbers, reading.known, reading.kept, reading.scale
    n = len(numbers)
    unknown = np.flatnonzero(~known)
    if len(unknown):
        # The first text of each column known not to be kept: texts after it need no exact test.
        stop = np.full(width, n)
        refused = np.flatnonzero(known & ~kept)
        np.minimum.at(stop, cols[refused], refused)
        strings = _texts_at(texts, unknown)
        for i, text in zip(unknown.tolist(), strings, strict=True):
            column = cols[i]
            if i > stop[column]:
                continue
            kept[i], scale[i] = _kept_one(text, float(numbers[i]))
            if not kept[i]:
                stop[column] = i
    return kept, scale, reading.long


def _kept_in_bulk(texts: Any, numbers: np.ndarray, parts: _NumberParts) -> tuple[np.ndarray, ...]:
    """The bulk part of :func:`_kept_floats`: which texts are kept, which are decided, the scales, the texts on a
    grid finer than their float's (the only ones two kept texts of one float can include).

    A text ``t = D x 10**q`` (``D`` an integer without trailing zeros) is read as the float ``f = m x 2**E``
    (``m`` in [0.5, 1)) nearest to it, so ``|f / 10**q - D|`` is at most half the gap above ``f`` in units of
    ``10**q``, ``bound = 2**(E - 54) x 10**-q``. With ``bound <= 1/4`` the multiples of ``10**q`` are further apart
    than the floats: ``t`` is the one nearest to ``f`` and kept (its digits never read). Otherwise ``D`` is the
    integer within ``bound`` of ``f / 10**q`` that ends in the text's last four significant digits (one integer when
    ``bound`` is under 5,000, as for up to 19 significant digits), and :func:`_residual` gives ``f / 10**q - D`` from
    those four digits. Only the end of each text is read (numpy over the Arrow buffers, no string kernel).
    """
    n = len(numbers)
    kept = np.zeros(n, dtype=bool)
    known = ~np.isfinite(numbers)  # overflow: not kept
    offsets, data = _text_bytes(texts, 8)  # eight bytes at least for the windows of _ending
    starts = offsets[:-1]
    first = starts + parts.signed  # the first digit (or the point)
    point = starts + parts.point  # the point's place (the mantissa's end when there is none)
    last = starts + (parts.mantissa_length - 1)  # the last significant digit, once trailing zeros are passed
    byte = data[last]
    at = np.flatnonzero((byte == 48) | (byte == 46))  # a trailing zero, or a point after one
    while len(at):
        last[at] -= 1
        at = at[last[at] >= first[at]]
        byte = data[last[at]]
        at = at[(byte == 48) | (byte == 46)]
    scale = parts.exponent + (point - last) - (last < point)
    zero = ~known & (last < first)
    kept[zero] = known[zero] = True  # every spelling of zero is zero
    scale[zero] = 0
    magnitude = np.abs(numbers)
    live = ~known
    known |= live & (magnitude == 0)  # underflow: the text is not zero
    mantissa, exponent = np.frexp(magnitude)
    work = live & (magnitude >= _SMALLEST_NORMAL) & (np.abs(scale) <= _POWER_RANGE) & ~parts.extreme
    table = _powers_of_ten()
    index = np.where(work, _POWER_RANGE - scale, _POWER_RANGE)
    bound = exponent + table.power[index]  # log2 of the bound, rounded up, plus 54
    coarse = work & (bound <= 52)
    kept[coarse] = known[coarse] = True
    check = work & ~coarse & (bound <= 66)
    fine = np.flatnonzero(check) if not check.all() else slice(None)
    ending = _ending(data, last[fine], first[fine], point[fine])
    residual = np.abs(_residual(mantissa[fine], exponent[fine], index[fine], ending))
    uneven = mantissa[fine] == 0.5  # a power of two: a narrower gap below
    accept = residual < 0.5 - _RESIDUAL_TOLERANCE
    reject = (residual > 0.5 + _RESIDUAL_TOLERANCE) & ~uneven
    kept[fine] |= accept
    known[fine] |= accept | reject
    return kept, known, scale, ~coarse & ~zero


def _ending(data: np.ndarray, last: np.ndarray, first: np.ndarray, point: np.ndarray) -> np.ndarray:
    """The integer the last four digits up to byte ``last`` write (the point skipped; places before ``first`` are
    0): the four bytes read as one little-endian word where they are all digits (the usual case), else digit by
    digit."""
    start = last - 3  # at least -3, at most len(data) - 4: a window of data (a negative one is never whole)
    # The word starting at each byte, as a view of the bytes (one gather of 4-byte items; a gather of 4-byte rows of
    # a 2-D view was twice as slow). The first text byte is the word's lowest.
    words = np.ndarray(shape=(len(data) - 3,), dtype=np.dtype("<u4"), buffer=data, strides=(1,))
    word = words[start] - np.uint32(0x30303030)
    whole = (start >= first) & ((point > last) | (point < start)) & ~((word & np.uint32(0xF0F0F0F0)).astype(bool))
    # Digit pairs: the first and third digits times ten plus the second and fourth, then the two pairs.
    word = (word & np.uint32(0x00FF00FF)) * np.uint32(10) + ((word >> np.uint32(8)) & np.uint32(0x00FF00FF))
    ending = ((word & np.uint32(0xFFFF)) * np.uint32(100) + (word >> np.uint32(16))).astype(np.float64)
    other = np.flatnonzero(~whole)
    if len(other):
        last, first, point = last[other], first[other], point[other]
        passed = np.where(last > point, last - point, 5)  # digits before the point is passed
        value = np.zeros(len(other))
        for k in range(4):
            at = last - k - (k >= passed)
            digit = data[np.maximum(at, 0)].astype(np.float64) - 48.0
            value += np.where(at >= first, digit, 0.0) * 10.0**k
        ending[other] = value
    return ending


#: Cells a step of the bulk tests handles at once (its arrays, 512 KiB of floats, stay in the processor's cache:
#: a quarter less CPU on a million 17-digit floats than with 2**18); steps run on two
#: threads (numpy's and Arrow's kernels release the GIL).
_CHUNK_TEXTS = 1 << 16


def _in_chunks(function: Callable[..., tuple[np.ndarray, ...]], texts: Any, *arrays: Any) -> tuple[np.ndarray, ...]:
    """``function(texts, *arrays)`` on slices of at most ``_CHUNK_TEXTS`` cells, two at a time, the results (tuples
    of arrays, one value a cell) joined: each step writes its results into the joined arrays while they are still
    in the processor's cache (a join at the end would read them all again). The first step runs alone, on the
    calling thread, which then makes the joined arrays; the others run on it and a helper (:func:`map_beside`)."""
    from privdash._threads import map_beside

    n = len(texts)
    if n <= _CHUNK_TEXTS:
        return function(_contiguous(texts), *arrays)
    bounds = [*range(0, n, _CHUNK_TEXTS), n]

    def run(k: int) -> tuple[np.ndarray, ...]:
        a, b = bounds[k], bounds[k + 1]
        return function(_contiguous(texts.slice(a, b - a)), *(array[a:b] for array in arrays))

    first = run(0)
    joined = tuple(np.empty(n, dtype=result.dtype) for result in first)

    def write(k: int, results: tuple[np.ndarray, ...]) -> None:
        for out, result in zip(joined, results, strict=True):
            out[bounds[k] : bounds[k + 1]] = result

    write(0, first)
    map_beside(lambda k: write(k, run(k)), range(1, len(bounds) - 1))
    return joined


def _contiguous(texts: Any) -> Any:
    """An Arrow array of the texts of an array or chunked array (the chunks copied into one only when several)."""
    if not hasattr(texts, "chunks"):
        return texts
    chunks = [chunk for chunk in texts.chunks if len(chunk)]
    return chunks[0] if len(chunks) == 1 else texts.combine_chunks()


@dataclass(frozen=True)
class _PowersOfTen:
    """10**k for k in [-_POWER_RANGE, _POWER_RANGE] (at ``k + _POWER_RANGE``) as ``(high + low) x 2**power``,
    ``high`` in [0.5, 1] and ``low`` the rest of the exact value (a double-double, 106 bits); ``high`` also split
    in two halves of 26 bits for Dekker's product."""

    high: np.ndarray
    low: np.ndarray
    power: np.ndarray
    high_top: np.ndarray
    high_bottom: np.ndarray


@functools.cache
def _powers_of_ten() -> _PowersOfTen:
    """The table of :class:`_PowersOfTen`, exactly: Python's integer division is correctly rounded."""
    high, low, power = [], [], []
    for k in range(-_POWER_RANGE, _POWER_RANGE + 1):
        numerator, denominator = (10**k, 1) if k >= 0 else (1, 10**-k)
        b = numerator.bit_length() - denominator.bit_length() + 1  # 10**k / 2**b in [0.5, 1) or just below 0.5
        if (numerator << max(-b, 0)) < (denominator << max(b, 0)) >> 1:
            b -= 1
        scaled_num, scaled_den = numerator << max(-b, 0), denominator << max(b, 0)  # 10**k / 2**b, in [0.5, 1)
        hi = scaled_num / scaled_den
        rest = scaled_num * 2**53 - int(hi * 2**53) * scaled_den  # (value - hi) x 2**53 x scaled_den, exact
        high.append(hi)
        low.append(rest / (scaled_den * 2**53))
        power.append(b)
    high_array = np.array(high)
    top = _split(high_array)
    return _PowersOfTen(high_array, np.array(low), np.array(power, dtype=np.int64), top, high_array - top)


def _split(a: np.ndarray) -> np.ndarray:
    """The upper half of each float's 53 bits (Dekker's split: ``a - result`` is exact and has 26 bits)."""
    big = a * 134217729.0  # 2**27 + 1
    return big - (big - a)


def _residual(mantissa: np.ndarray, exponent: np.ndarray, index: np.ndarray, ending: np.ndarray) -> np.ndarray:
    """``f / 10**q - D`` for ``f = mantissa x 2**exponent``, ``10**-q`` the power of ten at ``index`` of
    :func:`_powers_of_ten`, and ``D`` the integer within 5,000 of ``f / 10**q`` whose last four digits are
    ``ending``: the float times the power of ten in double-double arithmetic (``top + rest``, Dekker's product,
    accurate to about 1e-12 of a unit), then ``top`` less a multiple of 10,000 (exactly), less ``ending``, plus
    ``rest``, brought within 5,000 of zero."""
    table = _powers_of_ten()
    high, high_top, high_bottom = table.high[index], table.high_top[index], table.high_bottom[index]
    product = mantissa * high
    top_m = _split(mantissa)
    bottom_m = mantissa - top_m
    error = ((top_m * high_top - product) + top_m * high_bottom + bottom_m * high_top) + bottom_m * high_bottom
    error += mantissa * table.low[index]
    # 2**shift built from its bits (shift is 53 to 66 for the texts checked here): np.ldexp is slower.
    scaling = ((exponent + table.power[index] + 1023) << 52).view(np.float64)
    top, rest = product * scaling, error * scaling
    # top (below 2**67) less multiples of 10,000 in two exact steps: a multiple of 10,000 x 2**27 (at most 2**40 of
    # them: the product is exact and shares top's unit), then of 10,000 (below 2**28 of them). np.fmod would be
    # exact too, but iterates: about 30 times slower on 17-digit numbers. rest may hold thousands (top's unit can
    # exceed 10,000): the sum, not top alone, is brought near zero.
    top -= np.floor(top / 1.34217728e12) * 1.34217728e12
    top -= np.floor(top / 10_000.0) * 10_000.0
    step = (top - ending) + rest
    return step - 10_000.0 * np.rint(step / 10_000.0)


def _kept_one(text: str, number: float) -> tuple[bool, int]:
    """The exact test of :func:`_kept_floats` for one text and its float: whether the text is the multiple of
    10**q (q its last significant digit) nearest to the float among those that read back as the float, and q."""
    match = _DECIMAL.fullmatch(text)
    if match is None:
        return False, 0
    whole, fraction, power = match.group(1), match.group(2) or "", match.group(3) or "0"
    digits = (whole + fraction).lstrip("0")
    core = digits.rstrip("0")
    if not core:
        return True, 0
    power = power.lstrip("+")
    if len(power.lstrip("-0")) > 18 or not math.isfinite(number) or number == 0 or len(core) > _MAX_EXPANSION_DIGITS:
        return False, 0  # the float overflowed or underflowed, or has fewer digits than the text
    scale = int(power) - len(fraction) + len(digits) - len(core)
    target = abs(number)
    exact = Fraction(target)
    unit = Fraction(10) ** scale
    nearest = math.floor(exact / unit)
    candidates = sorted(range(max(nearest - 1, 1), nearest + 3), key=lambda c: (abs(c * unit - exact), c % 2))
    for candidate in candidates:
        if float(candidate * unit) == target:
            return str(candidate) == core, scale
    return False, scale


def _merged_cells(numbers: np.ndarray, scale: np.ndarray, cols: np.ndarray, columns: np.ndarray) -> np.ndarray:
    """Cells of the chosen ``columns`` whose float another cell of the column reaches from another decimal number
    (two kept texts of one float differ in the position of their last digit, ``scale``): ``0.1`` and
    ``0.10000000000000001`` are both kept, but together they would become one value. A column's floats are sorted
    (numpy's vectorized sort) to find the repeated ones; only those are grouped."""
    merged = np.zeros(len(numbers), dtype=bool)
    bounds = np.searchsorted(cols, np.arange(len(columns) + 1))
    for column in _flagged(columns & (np.diff(bounds) > 1)):
        a, b = bounds[column], bounds[column + 1]
        ordered = _bits(numbers[a:b])
        ordered.sort()  # in place: the bits are made again in the rare column with a repeated float
        repeated = ordered[1:][ordered[1:] == ordered[:-1]]
        if not len(repeated):
            continue
        bits = _bits(numbers[a:b])
        index = np.flatnonzero(np.isin(bits, repeated))
        groups = pd.DataFrame({"bits": bits[index], "scale": scale[a:b][index]})
        spread = groups.groupby("bits", sort=False)["scale"].transform("nunique").to_numpy() > 1
        merged[a + index[spread]] = True
    return merged


def _bits(numbers: np.ndarray) -> np.ndarray:
    """The floats' bits as integers, a new array (``-0.0`` and ``0.0`` alike: one number)."""
    return np.where(numbers == 0, 0.0, numbers).view(np.int64)


def _example(texts: Any, cols: np.ndarray, position: int, mask: np.ndarray | None) -> str:
    """One text of column ``position`` to show in a note (one that caused the decision when ``mask`` says which)."""
    bounds = np.searchsorted(cols, [position, position + 1])
    index = np.arange(bounds[0], bounds[1])
    # The first cell the mask marks, or with digits the longest (np.argmax gives the first of the largest).
    chosen = int(index[np.argmax(mask[index])]) if mask is not None and mask[index].any() else int(index[0])
    return str(texts[chosen].as_py())


def _numeric_notes(kept: dict[str, list[tuple[str, str]]], names: Sequence[object]) -> list[str]:
    """One note per reason a column was kept as text, naming the columns in table order (whatever order they
    were decided in) with an example from the first."""
    reasons = {
        "integers": "integers outside the 64-bit range",
        "integers_missing": "integers of more than 15 digits and missing values, which a float column would round",
        "overflow": "infinite or overflowing numbers",
        "inexact": "numbers that a 64-bit float cannot keep (too many digits, or beyond its range)",
        "merged": "distinct numbers that one 64-bit float would merge (they differ beyond its precision)",
    }
    notes = []
    order = {str(name): i for i, name in reversed(list(enumerate(names)))}
    for reason, decided in kept.items():
        if not decided:
            continue
        columns = sorted(decided, key=lambda column: order.get(column[0], 0))
        names = format_values([name for name, _ in columns])
        example = columns[0][1]
        shown = example if len(example) <= 40 else example[:37] + "..."
        many = len(columns) > 1
        notes.append(
            f"{'Columns' if many else 'Column'} {names} {'hold' if many else 'holds'} {reasons[reason]} (e.g. "
            f"'{shown}'); {'they are' if many else 'it is'} kept as text so that every value stays exact and "
            "distinct values stay distinct."
        )
    return notes
