"""Parsing UK postcodes and US ZIP codes into their levels (unit, sector, district, area; ZIP5, ZIP3), following the
Royal Mail format rules, and the natural order of postcodes (see :mod:`privdash.geo.postcodes`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from privdash.errors import (
    ParameterError,
)

__all__ = ["Country", "normalize_postcode", "parse_postcodes", "parse_zip_codes", "postcode_order"]


Country = Literal["uk", "us"]

# Royal Mail outward-code formats A9, A99, AA9, AA99, A9A, AA9A. The first letter is never Q, V or X and the
# second never I, J or Z. The letter ending an A9A / AA9A district is not restricted further: the current Royal
# Mail letter lists would reject terminated London districts (W1M, W1N ...) that old records still hold.
_AREA = r"[A-PR-UWYZ][A-HK-Y]?"
_OUTWARD = rf"(?:{_AREA}[0-9][0-9A-Z]?|GIR)"
# The inward code: a digit and two letters, never C, I, K, M, O or V.
_INWARD = r"[0-9][ABD-HJLNP-UW-Z]{2}"
# Whitespace, Unicode separators included (a no-break space from a spreadsheet is a space too).
_SPACE = r"[\s\pZ]+"
_LEVELS_UK = ("unit", "sector", "district", "area")
_LEVELS_US = ("zip5", "zip3")


def parse_postcodes(values: Iterable[Any] | pd.Series) -> pd.DataFrame:
    """Parse UK postcodes written in any spacing and case.

    Each value is upper-cased and read, in this order, as

    * a *unit* (``EC1A 1BB``): with every whitespace (Unicode spaces included) removed, an outward code followed
      by an inward code (a digit and two letters other than C, I, K, M, O, V). The fixed 7-character form
      (``B1  1BA``, ``EC1A1BB``) and stray spaces (``B  1 1BA``) read the same, since the inward code is always
      the last three characters;
    * a *sector* (``EC1A 1``): an outward code, whitespace, one digit (a space is required: ``B11`` is a
      district, ``B1 1`` a sector);
    * a *district* (outward code, ``EC1A``): formats A9, A99, AA9, AA99, A9A, AA9A with the Royal Mail letter
      rules (first letter not Q, V, X; second not I, J, Z), plus the non-geographic ``GIR``;
    * an *area* (``EC``): one or two letters under the same rules.

    Anything else is ``invalid``; nothing is corrected or guessed. Missing values are ``missing``.

    Parameters
    ----------
    values
        The postcodes; a Series keeps its index.

    Returns
    -------
    pandas.DataFrame
        One row per value, columns ``postcode`` (normalized form at the value's own level: ``EC1A 1BB``,
        ``EC1A 1``, ``EC1A`` or ``EC``), ``level`` (``unit``, ``sector``, ``district``, ``area``, ``invalid``,
        ``missing``) and the parts ``area``, ``district``, ``sector``, ``unit`` (missing where coarser than the
        value's level). Parsing works on the distinct values, so long columns with repeated values are cheap.
    """
    series = values if isinstance(values, pd.Series) else pd.Series(list(values), dtype=object)
    codes, uniques = pd.factorize(series, use_na_sentinel=True)
    parts, level = _parse_unique_postcodes(pd.Index(uniques))
    return _expand(parts, level, codes, series.index, _LEVELS_UK)


def _arrow_text(uniques: pd.Index | np.ndarray) -> pa.Array:
    """Distinct non-missing values as an Arrow string array (non-strings through ``str``)."""
    array = uniques.array if isinstance(uniques, pd.Index) else uniques
    if isinstance(array.dtype, pd.StringDtype):
        return pa.array(array).cast(pa.string())
    values = np.asarray(array, dtype=object)
    if len(values) and pd.api.types.infer_dtype(values, skipna=False) != "string":
        values = np.array([str(v) for v in values], dtype=object)
    return pa.array(values, type=pa.string())


def _field(struct: pa.Array, name: str) -> pa.Array:
    return pc.struct_field(struct, name)


def _mask(array: pa.Array) -> np.ndarray:
    return np.asarray(pc.fill_null(array, False).to_numpy(zero_copy_only=False), dtype=bool)


def _parse_unique_postcodes(uniques: pd.Index) -> tuple[dict[str, pa.Array], np.ndarray]:
    """Parse distinct values with Arrow's RE2 kernels: the parts per value and the level code per value."""
    text = pc.utf8_upper(pc.utf8_trim_whitespace(_arrow_text(uniques)))
    compact = pc.replace_substring_regex(text, _SPACE, "")
    unit = pc.extract_regex(compact, rf"^(?P<outward>{_OUTWARD})(?P<inward>{_INWARD})$")
    sector = pc.extract_regex(text, rf"^(?P<outward>.*[^\s\pZ]){_SPACE}(?P<digit>[0-9])$")
    sector_outward = pc.replace_substring_regex(_field(sector, "outward"), _SPACE, "")
    is_unit = _mask(pc.is_valid(unit))
    is_sector = ~is_unit & _mask(pc.match_substring_regex(sector_outward, rf"^{_OUTWARD}$"))
    is_district = ~is_unit & ~is_sector & _mask(pc.match_substring_regex(compact, rf"^{_OUTWARD}$"))
    is_area = ~is_unit & ~is_sector & ~is_district & _mask(pc.match_substring_regex(compact, rf"^{_AREA}$"))

    def where(mask: np.ndarray, values: pa.Array, otherwise: pa.Array | None = None) -> pa.Array:
        fallback = otherwise if otherwise is not None else pa.nulls(len(mask), pa.string())
        return pc.if_else(pa.array(mask), values, fallback)

    unit_outward, unit_inward = _field(unit, "outward"), _field(unit, "inward")
    district = where(is_unit, unit_outward, where(is_sector, sector_outward, where(is_district, compact)))
    area = where(is_area, compact, _field(pc.extract_regex(district, r"^(?P<area>[A-Z]+)"), "area"))
    unit_sector = pc.binary_join_element_wise(unit_outward, pc.utf8_slice_codeunits(unit_inward, 0, 1), " ")
    sector_code = where(
        is_unit,
        unit_sector,
        where(is_sector, pc.binary_join_element_wise(sector_outward, _field(sector, "digit"), " ")),
    )
    unit_code = where(is_unit, pc.binary_join_element_wise(unit_outward, unit_inward, " "))
    normalized = pc.coalesce(unit_code, sector_code, district, area)
    level = np.select([is_unit, is_sector, is_district, is_area], [0, 1, 2, 3], default=len(_LEVELS_UK))
    parts = {"postcode": normalized, "area": area, "district": district, "sector": sector_code, "unit": unit_code}
    return parts, level.astype(np.int8)


def _expand(
    parts: Mapping[str, pa.Array], level: np.ndarray, codes: np.ndarray, index: pd.Index, levels: Sequence[str]
) -> pd.DataFrame:
    """Spread per-unique parse results to rows; ``-1`` codes (missing values) get the level ``missing``."""
    missing = codes < 0
    take = pa.array(np.where(missing, 0, codes), mask=missing)
    categories = [*levels, "invalid", "missing"]
    row_level = np.where(missing, len(categories) - 1, level[np.maximum(codes, 0)] if len(level) else 0)
    columns: dict[str, Any] = {}
    for name, array in parts.items():
        columns[name] = pd.array(pc.take(array, take) if len(array) else pa.nulls(len(codes), pa.string()), dtype="str")
        if name == next(iter(parts)):
            level_codes: Any = row_level.astype(np.int8)
            columns["level"] = pd.Categorical.from_codes(level_codes, categories=pd.Index(categories))
    return pd.DataFrame(columns, index=index)


def normalize_postcode(value: str) -> str:
    """One UK postcode (unit, sector, district or area) in normalized form; :class:`ParameterError` if invalid."""
    parsed = parse_postcodes([value]).iloc[0]
    if parsed["level"] in ("invalid", "missing"):
        raise ParameterError(f"{value!r} is not a valid UK postcode, sector, district or area.")
    return str(parsed["postcode"])


def parse_zip_codes(values: Iterable[Any] | pd.Series) -> pd.DataFrame:
    """Parse US ZIP codes.

    Accepted: five digits (``02134``), ZIP+4 (``02134-1234`` or nine digits), three digits (a ZIP3 already).
    A numeric column (integers) is zero-padded to five digits, because numeric storage drops leading zeros
    (``2134`` -> ``02134``); a *text* value of four digits is invalid, not padded. Returns ``zip`` (normalized at
    the value's level), ``level`` (``zip5``, ``zip3``, ``invalid``, ``missing``), ``zip5`` and ``zip3``.
    """
    series = values if isinstance(values, pd.Series) else pd.Series(list(values), dtype=object)
    numeric = pd.api.types.is_numeric_dtype(series.dtype) and not pd.api.types.is_bool_dtype(series.dtype)
    codes, uniques = pd.factorize(series, use_na_sentinel=True)
    text: pa.Array
    if numeric:
        number = pd.to_numeric(pd.Series(np.asarray(uniques)), errors="coerce").to_numpy(dtype=float)
        whole = (np.mod(number, 1) == 0) & (number >= 0) & (number <= 99_999)
        padded = np.char.zfill(np.where(whole, number, 0).astype(np.int64).astype(str), 5)
        text = pa.array(np.where(whole, padded, "x").astype(object), type=pa.string())
    else:
        text = pc.utf8_trim_whitespace(_arrow_text(pd.Index(uniques)))
    five = _field(pc.extract_regex(text, r"^(?P<zip>[0-9]{5})(?:-?[0-9]{4})?$"), "zip")
    is_five = _mask(pc.is_valid(five))
    is_three = ~is_five & _mask(pc.match_substring_regex(text, r"^[0-9]{3}$"))
    zip3 = pc.if_else(
        pa.array(is_five), pc.utf8_slice_codeunits(five, 0, 3), pc.if_else(pa.array(is_three), text, None)
    )
    level = np.select([is_five, is_three], [0, 1], default=len(_LEVELS_US)).astype(np.int8)
    parts = {"zip": pc.coalesce(five, zip3), "zip5": five, "zip3": zip3}
    return _expand(parts, level, codes, series.index, _LEVELS_US)


def postcode_order(codes: Iterable[str] | pd.Index) -> np.ndarray:
    """Positions that sort codes naturally: letters, then the number as a number (``AL2`` before ``AL10``), then
    the rest as text, then the whole text. Works for districts, sectors, units, ZIP codes and merged codes
    (``CA6+DG``)."""
    values = codes if isinstance(codes, pd.Index) else pd.Index(list(codes), dtype=object)
    if not len(values):
        return np.zeros(0, dtype=np.int64)
    text = _arrow_text(values)
    parts = pc.extract_regex(text, r"(?s)^(?P<letters>[A-Za-z]*)(?P<digits>[0-9]*)(?P<rest>.*)$")
    digits = _field(parts, "digits")
    table = pa.table(
        {
            "letters": _field(parts, "letters"),
            "number": pc.cast(pc.if_else(pc.equal(digits, ""), None, digits), pa.float64()),
            "rest": _field(parts, "rest"),
            "text": text,
        }
    )
    # A code without digits sorts before any number (null first); Arrow's sort is stable and fast on strings.
    keys = [(name, "ascending", "at_start") for name in table.column_names]
    order = pc.sort_indices(table, sort_keys=keys)
    return np.asarray(order.to_numpy(), dtype=np.int64)


def _sorted_series(series: pd.Series) -> pd.Series:
    return series.iloc[postcode_order(series.index)]
