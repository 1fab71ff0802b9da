"""Typing text columns: a column of text becomes numeric only when every value is a decimal number that the
conversion keeps (int64 or float64); the checks run in bulk over all columns (rules in :mod:`privdash.data.tables`)."""

from __future__ import annotations

import functools
import math
import os
import re
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
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

    ``texts`` (an Arrow array of large strings) holds the non-missing cells of every column one column after the
    other, in row order (or each column's distinct values, in order of first appearance), ``cols`` the column of
    each cell (ascending) and ``complete`` which columns have no missing value. Returns column -> its cells' numbers
    (int64 for a complete column of whole numbers, else float64); the columns kept as text for a reason the module
    docstring gives are added to ``kept`` (reason -> column name and an example).
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    def any_in(mask: np.ndarray, where: np.ndarray) -> np.ndarray:
        """Per column, whether a cell of ``mask`` is set (``where``: the cells' columns, ascending)."""
        found = np.zeros(width, dtype=bool)
        if len(where):
            starts = np.flatnonzero(np.r_[True, where[1:] != where[:-1]])
            found[where[starts]] = np.logical_or.reduceat(mask, starts)
        return found

    bounds = np.searchsorted(cols, np.arange(width + 1))
    firsts = bounds[:-1][bounds[:-1] < bounds[1:]]
    # A column whose first value is neither a number nor an infinity word is text: one test per column.
    first_ok = _matches(_stripped(texts.take(pa.array(firsts))), _NUMBER_OR_INFINITY_PATTERN)
    candidate = np.zeros(width, dtype=bool)
    candidate[cols[firsts[first_ok]]] = True
    texts, cols = _narrow(texts, cols, candidate)
    if not len(cols):
        return {}
    try:  # Arrow reads exactly the decimal numbers (and words such as inf and nan): one pass when all are numbers
        (numbers,) = _in_chunks(_floats, texts)
        odd = ~np.isfinite(numbers)
        number = np.ones(len(cols), dtype=bool)
        word = np.zeros(len(cols), dtype=bool)
        if odd.any():
            strange = texts.filter(pa.array(odd))
            number[odd] = _matches(strange, _NUMBER_PATTERN)
            word[odd] = _matches(strange, _INFINITY_PATTERN)
    except pa.ArrowInvalid:
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
    if not len(cols):
        return {}
    parts = _NumberParts(*_in_chunks(_number_parts_arrays, texts))
    candidate &= ~any_in(parts.lead, cols)  # a leading zero
    integer = ~parts.shaped
    magnitude = parts.magnitude
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
        texts, cols, numbers, parts = texts.filter(pa.array(chosen)), cols[chosen], numbers[chosen], parts.take(chosen)
    infinite = ~np.isfinite(numbers)
    overflow = any_in(infinite, cols)
    for position in _flagged(floating & overflow):
        kept["overflow"].append((names[position], _example(texts, cols, int(position), infinite)))
    live = floating & ~overflow
    if not live.any():
        return out
    chosen = live[cols]
    if not chosen.all():
        texts, cols, numbers, parts = texts.filter(pa.array(chosen)), cols[chosen], numbers[chosen], parts.take(chosen)
    exact, scale, long = _kept_floats(texts, numbers, parts, cols, width)
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
        whole = complete[index] and bool(np.all((np.mod(column, 1) == 0) & (np.abs(column) < 2.0**63)))
        out[index] = column.astype(np.int64) if whole else column
    return out


def _floats(texts: Any) -> tuple[np.ndarray]:
    """Texts read as floats by Arrow (correctly rounded, as Python's ``float``); ``ArrowInvalid`` for a text that
    is neither a decimal number nor a word such as ``inf`` or ``nan``."""
    import pyarrow as pa
    import pyarrow.compute as pc

    return (pc.cast(texts, pa.float64()).to_numpy(),)


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


def _by_column(values: np.ndarray, cols: np.ndarray, columns: np.ndarray) -> dict[int, np.ndarray]:
    """``values`` (one per cell, the cells one column after the other) split into the chosen ``columns``."""
    bounds = np.searchsorted(cols, np.arange(len(columns) + 1))
    return {int(c): values[bounds[c] : bounds[c + 1]].copy() for c in np.flatnonzero(columns)}


@dataclass(frozen=True)
class _NumberParts:
    """The shape of decimal texts (``_NUMBER_TEXT``), read from their bytes (numpy over the Arrow buffers, no Python
    per text): a leading zero (``02``, ``-07``), a point or an exponent (not an integer), the length without the sign
    (an integer's digits), the digits of the mantissa, the digits after its point, the exponent (``extreme``: of more
    than 6 digits, not read)."""

    lead: np.ndarray
    shaped: np.ndarray
    magnitude: np.ndarray
    mantissa_digits: np.ndarray
    fraction: np.ndarray
    exponent: np.ndarray
    powered: np.ndarray
    extreme: np.ndarray

    def take(self, mask: np.ndarray) -> _NumberParts:
        return _NumberParts(*(value[mask] for value in vars(self).values()))

    def slice(self, a: int, b: int) -> _NumberParts:
        return _NumberParts(*(value[a:b] for value in vars(self).values()))


def _number_parts_arrays(texts: Any) -> tuple[np.ndarray, ...]:
    """The arrays of :class:`_NumberParts` for decimal texts."""
    import pyarrow.compute as pc

    n = len(texts)
    buffers = texts.buffers()
    offsets = np.frombuffer(buffers[1], dtype=np.int64)[texts.offset : texts.offset + n + 1]
    data = np.frombuffer(buffers[2], dtype=np.uint8) if buffers[2] is not None else np.zeros(1, dtype=np.uint8)
    last = len(data) - 1
    starts, ends = offsets[:-1], offsets[1:]
    first = data[np.minimum(starts, last)]
    signed = (first == ord("-")) | (first == ord("+"))
    zero_at = starts + signed
    after = data[np.minimum(zero_at + 1, last)]
    lead = (data[np.minimum(zero_at, last)] == ord("0")) & (zero_at + 1 < ends) & (after >= 48) & (after <= 57)
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
    dotted = dot >= 0
    fraction = np.where(dotted, end - starts - dot - 1, 0)
    mantissa_digits = end - starts - signed - dotted
    return lead, dotted | powered, ends - starts - signed, mantissa_digits, fraction, exponent, powered, extreme


def _kept_floats(
    texts: Any, numbers: np.ndarray, parts: _NumberParts, cols: np.ndarray, width: int
) -> tuple[np.ndarray, ...]:
    """Which decimal texts their floats keep (module docstring: a text is kept when rounding its float to the text's
    last significant digit gives the text back), each text's scale (``q``: the text is ``digits x 10**q``, its digits
    an integer without trailing zeros), and which texts have more significant digits than every decimal of at most
    15 (which a float always keeps and never merges).

    ``texts`` are decimal numbers (``_NUMBER_TEXT``), ``parts`` their shape. Decided in bulk (:func:`_digits`:
    digits, scale); texts of at most 15 significant digits whose float is normal are kept (DBL_DIG); texts of 16 to
    19 digits by :func:`_residuals`, the distance from the float to the text in units of its last digit, accurate to
    1e-12 (kept when under 1/2). The texts too close to call, a float at a power of two (an uneven gap), subnormal
    floats and longer texts go to :func:`_kept_one`, the exact test in integers, stopping in each column at the first
    text that is not kept (the column is text then).
    """
    import pyarrow as pa

    n = len(numbers)
    kept, known, scale, long = _in_chunks(_kept_in_bulk, texts, numbers, parts)
    unknown = np.flatnonzero(~known)
    if len(unknown):
        # The first text of each column known not to be kept: texts after it need no exact test.
        stop = np.full(width, n)
        refused = np.flatnonzero(known & ~kept)
        np.minimum.at(stop, cols[refused], refused)
        strings = texts.take(pa.array(unknown)).to_pylist()
        for i, text in zip(unknown.tolist(), strings, strict=True):
            column = cols[i]
            if i > stop[column]:
                continue
            kept[i], scale[i] = _kept_one(text, float(numbers[i]))
            if not kept[i]:
                stop[column] = i
    return kept, scale, long


def _kept_in_bulk(texts: Any, numbers: np.ndarray, parts: _NumberParts) -> tuple[np.ndarray, ...]:
    """The bulk part of :func:`_kept_floats`: which texts are kept, which are decided, the scales, the long texts."""
    n = len(numbers)
    kept = np.zeros(n, dtype=bool)
    known = ~np.isfinite(numbers)  # overflow: not kept
    digits, scale, castable = _digits(texts, parts)
    castable &= ~known
    zero = castable & (digits == 0)
    kept[zero] = known[zero] = True  # every spelling of zero is zero
    scale[zero] = 0
    underflow = castable & ~zero & (numbers == 0)
    known |= underflow
    work = castable & ~zero & ~underflow
    trailing = np.flatnonzero(work & (digits % np.uint64(10) == 0))
    while len(trailing):
        digits[trailing] //= np.uint64(10)
        scale[trailing] += 1
        trailing = trailing[digits[trailing] % np.uint64(10) == 0]
    short = digits < np.uint64(10**15)  # at most 15 significant digits
    fast = work & short & (np.abs(numbers) >= _SMALLEST_NORMAL)
    kept[fast] = known[fast] = True
    long = ~fast & ~zero
    bulk = work & ~short & (np.abs(scale) <= _POWER_RANGE)
    if bulk.any():
        residual = np.abs(_residuals(numbers[bulk], digits[bulk], scale[bulk]))
        uneven = np.frexp(numbers[bulk])[0] == 0.5  # a power of two: a narrower gap below
        accept = residual < 0.5 - _RESIDUAL_TOLERANCE
        reject = (residual > 0.5 + _RESIDUAL_TOLERANCE) & ~uneven
        index = np.flatnonzero(bulk)
        kept[index[accept]] = True
        known[index[accept | reject]] = True
    return kept, known, scale, long


#: Cells a step of the bulk tests handles at once (its arrays, 512 KiB of floats, stay in the processor's cache:
#: a quarter less CPU on a million 17-digit floats than with 2**18); steps run on two
#: threads (numpy's and Arrow's kernels release the GIL).
_CHUNK_TEXTS = 1 << 16


def _in_chunks(function: Callable[..., tuple[np.ndarray, ...]], texts: Any, *arrays: Any) -> tuple[np.ndarray, ...]:
    """``function(texts, *arrays)`` on slices of at most ``_CHUNK_TEXTS`` cells, two at a time, the results (tuples
    of arrays, one value a cell) joined."""
    n = len(texts)
    if n <= _CHUNK_TEXTS:
        return function(texts, *arrays)
    bounds = [*range(0, n, _CHUNK_TEXTS), n]

    def step(k: int) -> tuple[np.ndarray, ...]:
        a, b = bounds[k], bounds[k + 1]
        return function(texts.slice(a, b - a), *(_slice(array, a, b) for array in arrays))

    with ThreadPoolExecutor(max_workers=min(2, os.cpu_count() or 1)) as pool:
        results = list(pool.map(step, range(len(bounds) - 1)))
    return tuple(np.concatenate(list(pieces)) for pieces in zip(*results, strict=True))


def _slice(array: Any, a: int, b: int) -> Any:
    return array.slice(a, b) if isinstance(array, _NumberParts) else array[a:b]


def _digits(texts: Any, parts: _NumberParts) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each decimal text as ``digits x 10**scale``, ``digits`` the integer its mantissa's digits write (trailing zeros
    kept), by Arrow's kernels (the point and sign removed, then read as an integer); and which texts could be read so
    (not those of more than 19 digits in the mantissa or 6 in the exponent)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    n = len(texts)
    digits = np.zeros(n, dtype=np.uint64)
    scale = parts.exponent - parts.fraction
    readable = (parts.mantissa_digits <= 19) & ~parts.extreme
    if not readable.any():
        return digits, scale, readable
    chosen = texts if readable.all() else texts.filter(pa.array(readable))
    powered = parts.powered[readable]
    if powered.any():
        where = pa.array(powered)
        mantissas = pc.replace_substring_regex(chosen.filter(where), "[eE].*$", "")
        chosen = pc.replace_with_mask(chosen, where, mantissas)
    written = pc.replace_substring(pc.utf8_ltrim(chosen, characters="+-"), ".", "")
    digits[readable] = pc.cast(written, pa.uint64()).to_numpy()
    return digits, scale, readable


@functools.cache
def _powers_of_ten() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """10**k for k in [-_POWER_RANGE, _POWER_RANGE] as (hi + lo) * 2**b: hi in [0.5, 1], lo the rest of the exact
    value (a double-double, 106 bits), computed exactly with fractions."""
    high, low, power = [], [], []
    for k in range(-_POWER_RANGE, _POWER_RANGE + 1):
        value = Fraction(10) ** k
        b = value.numerator.bit_length() - value.denominator.bit_length()
        fraction = value / Fraction(2) ** b
        while fraction >= 1:
            fraction, b = fraction / 2, b + 1
        while fraction < Fraction(1, 2):
            fraction, b = fraction * 2, b - 1
        hi = float(fraction)
        high.append(hi)
        low.append(float(fraction - Fraction(hi)))
        power.append(b)
    return np.array(high), np.array(low), np.array(power, dtype=np.int64)


def _two_product_error(a: np.ndarray, b: np.ndarray, product: np.ndarray) -> np.ndarray:
    """``a * b - product`` exactly, for ``product = a * b`` rounded (Dekker's algorithm: no fused multiply-add)."""
    split = 134217729.0  # 2**27 + 1
    a_big, b_big = a * split, b * split
    a_hi = a_big - (a_big - a)
    b_hi = b_big - (b_big - b)
    a_lo, b_lo = a - a_hi, b - b_hi
    return ((a_hi * b_hi - product) + a_hi * b_lo + a_lo * b_hi) + a_lo * b_lo


def _residuals(numbers: np.ndarray, digits: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """``|number| / 10**scale - digits`` (digits below 10**19), accurate to about 1e-12: the float times the power of
    ten in double-double arithmetic, then the difference from the integer, split in two exact doubles."""
    high, low, power = _powers_of_ten()
    index = _POWER_RANGE - scale
    mantissa, exponent = np.frexp(np.abs(numbers))
    product = mantissa * high[index]
    error = _two_product_error(mantissa, high[index], product) + mantissa * low[index]
    shift = exponent + power[index]
    top, rest = np.ldexp(product, shift), np.ldexp(error, shift)
    digits_top = digits.astype(np.float64)
    digits_rest = (digits - digits_top.astype(np.uint64)).view(np.int64).astype(np.float64)
    return (top - digits_top) + (rest - digits_rest)  # top - digits_top is exact (Sterbenz)


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
        bits = np.where(numbers[a:b] == 0, 0.0, numbers[a:b]).view(np.int64)  # -0.0 and 0.0: one number
        ordered = np.sort(bits)
        repeated = ordered[1:][ordered[1:] == ordered[:-1]]
        if not len(repeated):
            continue
        index = np.flatnonzero(np.isin(bits, repeated))
        groups = pd.DataFrame({"bits": bits[index], "scale": scale[a:b][index]})
        spread = groups.groupby("bits", sort=False)["scale"].transform("nunique").to_numpy() > 1
        merged[a + index[spread]] = True
    return merged


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
