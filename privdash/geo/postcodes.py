"""Postcodes as a quasi-identifier: parsing, census populations, and population-threshold generalization.

Postcodes re-identify people more often than any other quasi-identifier. The common publication rule is that a
published geographic unit must hold enough residents: at least 20,000 in the UK practice, and for US data the
HIPAA Safe Harbor rule (45 CFR 164.514(b)(2)(i)(B)), which keeps the first three digits of a ZIP code only when the
3-digit area holds *more than* 20,000 people and replaces it with ``000`` otherwise. This module answers "is our
postcode column safe at outward-code level, and if not, what is the finest level that is?".

UK postcode structure
---------------------
``EC1A 1BB`` is a *unit*; its *outward code* or *district* is ``EC1A``, its *area* the leading letters ``EC``, its
*sector* ``EC1A 1`` (district plus the inward digit). :func:`parse_postcodes` accepts any spacing and case, also
the fixed 7-character census form (``B1  1BA``, ``EC1A1BB``) and stray spaces inside (``B  1 1BA``): the inward code
is always the last three characters, so removing every space is unambiguous. A value that does not follow the
Royal Mail format is reported as invalid, never guessed (see :func:`parse_postcodes` for the exact rules).

Population reference
--------------------
:func:`read_population` reads the census unit-postcode table (``Postcode, Total, Males, Females,
Occupied_Households``, the 2011 Census "Headcounts and household estimates for postcodes" Table 1), tables already
summed per outward code (``postcode, population``; the doogal.co.uk district list), and US ZCTA populations, and
aggregates them to every coarser level (:meth:`PopulationTable.population`).

Strategies
----------
The mapping always starts from the *source level*: postcode districts (outward codes) in the UK, 3-digit ZIP codes
in the US (ZCTA populations summed by their first three digits). Each strategy maps every source code to a
published code:

``area``
    every district is published as its area.
``outward``
    every district is published as itself (the check "is the outward code safe?").
``mixed``
    districts under the threshold fall back to their area, the others stay. The published area code then stands
    for the *fallen-back districts only* (the districts published on their own are known not to contain the
    person), so its population is the sum over those districts.
``merge``
    ``mixed``, then every unit still under the threshold is merged with a neighbouring unit until every published
    unit passes (:func:`generalize_postcodes` documents the order and the neighbour rules).
``zip3``
    US Safe Harbor: a ZIP3 with the threshold *or fewer* people becomes ``000``.

UK strategies fail a unit when ``population < threshold`` ("must hold at least 20,000"); ``zip3`` fails it when
``population <= threshold`` (Safe Harbor: "more than 20,000" may stay). :func:`fails_threshold` is that rule.

Applying a mapping
------------------
:func:`recode_postcodes` (registered as the recipe step ``postcode_recode``) replaces a dataset's postcode column by
the published codes; :func:`population_counts` turns the census populations of the published units into the
population class sizes ``F_j`` used by journalist and marketer risk and k-map.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from privdash.choices import Choice
from privdash.data.tables import read_table
from privdash.errors import (
    ColumnError,
    DataReadError,
    ParameterError,
    PrivdashError,
    check_columns,
    check_positive_int,
    format_values,
)
from privdash.measure.classes import EquivalenceClasses
from privdash.transform.steps import Step, TransformResult, register_step

__all__ = [
    "DEFAULT_DATA_DIR",
    "DEFAULT_POPULATION_THRESHOLD",
    "SUPPRESSED_ZIP3",
    "Country",
    "Neighbours",
    "PopulationTable",
    "PostcodeGeneralization",
    "Strategy",
    "UnitMerge",
    "default_data_dir",
    "fails_threshold",
    "generalize_postcodes",
    "neighbours_from_doogal",
    "normalize_postcode",
    "parse_postcodes",
    "parse_zip_codes",
    "population_counts",
    "population_from_frame",
    "postcode_order",
    "read_population",
    "recode_postcodes",
    "unit_populations",
]

DEFAULT_POPULATION_THRESHOLD = 20_000
SUPPRESSED_ZIP3 = "000"
#: The shared public datasets, relative to the working directory (beside a clone of the repository).
DEFAULT_DATA_DIR = Path("../shared/data")

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
_SOURCE_LEVEL: dict[str, str] = {"uk": "district", "us": "zip3"}


def default_data_dir() -> Path:
    """:data:`DEFAULT_DATA_DIR` (``../shared/data``) resolved against the current working directory.

    The dashboard and the command line take the folder from their settings (``PRIVDASH_DATA_DIR``, see
    :class:`privdash.application.settings.Settings`); this is the default for direct calls of the Python API.
    """
    return DEFAULT_DATA_DIR.resolve()


class Strategy(Choice, label="postcode strategy"):
    """How postcode districts (UK) or ZIP3 codes (US) become published units (see the module docstring)."""

    AREA = "area"
    OUTWARD = "outward"
    MIXED = "mixed"
    MERGE = "merge"
    ZIP3 = "zip3"

    @property
    def country(self) -> Country:
        return "us" if self is Strategy.ZIP3 else "uk"

    @property
    def comparison(self) -> Literal["<", "<="]:
        """How a unit's population is compared with the threshold to *fail* it."""
        return "<=" if self is Strategy.ZIP3 else "<"

    @property
    def description(self) -> str:
        return {
            Strategy.AREA: "every district published as its postcode area",
            Strategy.OUTWARD: "every district published as itself (outward code)",
            Strategy.MIXED: "districts under the threshold fall back to their area, the others stay",
            Strategy.MERGE: "mixed, then units under the threshold merged with their smallest neighbour",
            Strategy.ZIP3: "HIPAA Safe Harbor: ZIP3 areas with the threshold or fewer people become 000",
        }[self]


def fails_threshold(population: np.ndarray | pd.Series, threshold: float, *, strategy: str | Strategy) -> np.ndarray:
    """Whether each unit fails the population threshold under ``strategy``'s rule.

    UK strategies: ``population < threshold`` fails (a published unit "must hold at least" the threshold).
    ``zip3``: ``population <= threshold`` fails (HIPAA Safe Harbor keeps a ZIP3 only with *more than* 20,000
    people). Returns a boolean array.
    """
    values = np.asarray(population)
    if Strategy.parse(strategy).comparison == "<=":
        return values <= threshold
    return values < threshold


# --------------------------------------------------------------------------------------------------------------
# Parsing


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


# --------------------------------------------------------------------------------------------------------------
# Population reference


@dataclass(frozen=True, eq=False)
class PopulationTable:
    """Census populations of postcode (or ZIP) units at the finest level a source gives.

    Attributes
    ----------
    country
        ``"uk"`` or ``"us"``.
    level
        The finest level of the table: ``unit``, ``sector`` or ``district`` (UK), ``zip5`` (US).
    counts
        One row per code at ``level`` (index, normalized, natural order): ``population`` and, where the source has
        them, ``males``, ``females``, ``households`` (int64).
    parents
        For each code of ``counts``, its code at every coarser level (columns named by level).
    source_format
        ``census-unit``, ``outward``, ``doogal`` or ``us-zcta``.
    source
        Where the table came from (file name), for messages and reports.
    invalid
        Postcodes of the source that are not valid (left out and reported, never guessed).
    omitted
        Codes listed with a blank population (doogal: terminated and non-geographic districts), left out.
    coordinates
        Latitude/longitude per code when the source has them (doogal), index code, columns ``lon``, ``lat``.
    nearby
        Unordered pairs of nearby codes when the source lists them (doogal ``Nearby districts``), columns ``a``, ``b``.
    """

    country: Country
    level: str
    counts: pd.DataFrame
    parents: pd.DataFrame
    source_format: str
    source: str = ""
    invalid: tuple[str, ...] = ()
    omitted: tuple[str, ...] = ()
    coordinates: pd.DataFrame | None = None
    nearby: pd.DataFrame | None = None
    _summed: dict[str, pd.DataFrame] = field(default_factory=dict, init=False, repr=False)

    @property
    def levels(self) -> tuple[str, ...]:
        """Levels available, finest first."""
        order = _LEVELS_UK if self.country == "uk" else _LEVELS_US
        return order[order.index(self.level) :]

    @property
    def source_level(self) -> str:
        """The level strategies start from: ``district`` (UK) or ``zip3`` (US)."""
        return _SOURCE_LEVEL[self.country]

    @property
    def total(self) -> int:
        """Total population of the table."""
        return int(self.counts["population"].sum())

    def table(self, level: str | None = None) -> pd.DataFrame:
        """All counts summed to ``level`` (default: the finest), one row per code in natural order.

        Sums are computed once per level and shared: treat the returned frame as read-only.
        """
        level = self._check_level(level)
        if level == self.level:
            return self.counts
        if level not in self._summed:
            summed = self.counts.groupby(self.parents[level].to_numpy(), sort=False).sum()
            summed.index.name = level
            self._summed[level] = summed.iloc[postcode_order(summed.index)]
        return self._summed[level]

    def population(self, level: str | None = None) -> pd.Series:
        """Population per code at ``level`` (default: the finest), int64, natural order."""
        return self.table(level)["population"]

    def parent_codes(self, level: str) -> pd.Series:
        """For every code of the finest level, its code at ``level``."""
        level = self._check_level(level)
        if level == self.level:
            return pd.Series(self.counts.index, index=self.counts.index, name=level)
        return self.parents[level]

    def _check_level(self, level: str | None) -> str:
        if level is None:
            return self.level
        if level not in self.levels:
            raise ParameterError(
                f"Level {level!r} is not available in {self.source or 'this table'} "
                f"(finest level {self.level}); use one of {', '.join(self.levels)}."
            )
        return level


_FORMAT_HELP = (
    "expected one of: the census unit-postcode table (Postcode, Total, Males, Females, Occupied_Households), "
    "populations per outward code (postcode, population), the doogal district list (Postcode, Latitude, Longitude, "
    "Population, Households, Nearby districts), or US ZCTA populations (Zip Code ZCTA, 2010 Census Population)"
)


def read_population(path: str | os.PathLike[str]) -> PopulationTable:
    """Read a population reference file; the format is detected from its columns.

    Formats (column names matched case-insensitively, spaces and underscores alike):

    ``census-unit``
        ``Postcode, Total, Males, Females, Occupied_Households``: 2011 Census postcode headcounts, one row per unit
        postcode (7-character form). ``Total`` is the population.
    ``doogal``
        ``Postcode, Latitude, Longitude, Population`` (+ ``Households``, ``Nearby districts``): one row per
        district; rows with a blank population (terminated or non-geographic districts) are left out and listed
        in :attr:`PopulationTable.omitted`; coordinates and the nearby list are kept.
    ``outward``
        ``postcode, population``: populations per outward code (or per unit / sector: the level is read from the
        values, which must all be at one level).
    ``us-zcta``
        ``Zip Code ZCTA, 2010 Census Population`` (or ``zcta``/``zip`` with ``population``): one row per 5-digit
        ZCTA; integers are zero-padded to five digits. A ZCTA listed more than once (Census tables by state list
        a ZCTA that crosses a state line once per state) is summed.

    Invalid postcodes are left out and listed in :attr:`PopulationTable.invalid`. A UK code listed twice, a
    non-numeric, negative or fractional population, or unknown columns raise :class:`DataReadError`.
    """
    target = Path(path)
    if not target.is_file():
        raise DataReadError(f"Population file not found: {target}.")
    frame = read_table(target)
    return population_from_frame(frame, source=target.name)


def population_from_frame(frame: pd.DataFrame, *, source: str = "the population table") -> PopulationTable:
    """Build a :class:`PopulationTable` from a DataFrame in one of the :func:`read_population` formats."""
    columns = {_column_key(c): c for c in frame.columns}
    has = columns.keys().__contains__
    if all(map(has, ("postcode", "total", "males", "females", "occupied_households"))):
        counts = {
            "population": columns["total"],
            "males": columns["males"],
            "females": columns["females"],
            "households": columns["occupied_households"],
        }
        return _uk_table(frame, columns["postcode"], counts, "census-unit", source)
    if all(map(has, ("postcode", "population", "latitude", "longitude"))):
        counts = {"population": columns["population"]}
        if has("households"):
            counts["households"] = columns["households"]
        return _uk_table(frame, columns["postcode"], counts, "doogal", source, doogal=columns)
    if has("postcode") and has("population"):
        return _uk_table(frame, columns["postcode"], {"population": columns["population"]}, "outward", source)
    zip_column = next((columns[k] for k in ("zip_code_zcta", "zcta", "zcta5", "zip", "zip_code") if has(k)), None)
    pop_column = next((columns[k] for k in ("2010_census_population", "population") if has(k)), None)
    if zip_column is not None and pop_column is not None:
        return _us_table(frame, zip_column, pop_column, source)
    shown = ", ".join(str(c) for c in frame.columns[:10])
    raise DataReadError(f"Cannot tell the format of {source} from its columns ({shown}); {_FORMAT_HELP}.")


def _column_key(name: object) -> str:
    return "_".join(str(name).strip().lower().replace("_", " ").split())


def _counts(frame: pd.DataFrame, columns: Mapping[str, str], source: str) -> tuple[pd.DataFrame, np.ndarray]:
    """Numeric count columns; also a mask of rows whose population is blank."""
    out = {}
    blank = frame[columns["population"]].isna().to_numpy()
    for key, column in columns.items():
        values = pd.to_numeric(frame[column], errors="coerce")
        present = values.notna().to_numpy()
        bad = ~present & frame[column].notna().to_numpy()
        number = values.fillna(0).to_numpy(dtype=float)
        bad |= present & ((number < 0) | (number % 1 != 0) | ~np.isfinite(number))
        if bad.any():
            examples = format_values(frame.loc[bad, column].astype(str).tolist())
            raise DataReadError(
                f"Column '{column}' of {source} must hold non-negative whole numbers; found {examples}."
            )
        out[key] = values.fillna(0).to_numpy(dtype=np.int64)
    return pd.DataFrame(out), blank


def _check_unique(codes: pd.Series, source: str) -> None:
    repeated = codes[codes.duplicated(keep=False)]
    if len(repeated):
        raise DataReadError(
            f"{source} lists some codes more than once (after normalizing spacing and case): "
            f"{format_values(sorted(set(repeated.tolist())))}."
        )


def _uk_table(
    frame: pd.DataFrame,
    code_column: str,
    count_columns: Mapping[str, str],
    source_format: str,
    source: str,
    *,
    doogal: Mapping[str, str] | None = None,
) -> PopulationTable:
    counts, blank = _counts(frame, count_columns, source)
    parsed = parse_postcodes(frame[code_column].reset_index(drop=True))
    invalid = parsed["level"].isin(["invalid", "missing"]).to_numpy()
    found = sorted(str(v) for v in parsed["level"][~invalid].unique())
    if len(found) > 1:
        raise DataReadError(
            f"The postcodes of {source} mix levels ({', '.join(found)}); a population table holds one level."
        )
    if not found:
        raise DataReadError(f"{source} holds no valid UK postcode.")
    level = found[0]
    if level == "area":
        raise DataReadError(f"{source} holds postcode areas only; a population table needs districts or finer.")
    keep = ~invalid & ~blank
    codes = parsed.loc[keep, level].reset_index(drop=True)
    _check_unique(codes, source)
    table = counts.loc[keep].reset_index(drop=True)
    table.index = pd.Index(codes, name=level)
    parents = parsed.loc[keep, list(_LEVELS_UK[_LEVELS_UK.index(level) + 1 :])].reset_index(drop=True)
    parents.index = table.index
    order = postcode_order(table.index)
    coordinates = nearby = None
    if doogal is not None:
        coordinates, nearby = _doogal_extras(frame, doogal, parsed, keep)
    return PopulationTable(
        country="uk",
        level=level,
        counts=table.iloc[order],
        parents=parents.iloc[order],
        source_format=source_format,
        source=source,
        invalid=tuple(str(v) for v in frame[code_column].to_numpy()[invalid & frame[code_column].notna().to_numpy()]),
        omitted=tuple(parsed.loc[~invalid & blank, level].astype(str)),
        coordinates=coordinates,
        nearby=nearby,
    )


def _doogal_extras(
    frame: pd.DataFrame, columns: Mapping[str, str], parsed: pd.DataFrame, keep: np.ndarray
) -> tuple[pd.DataFrame, pd.DataFrame | None]:
    valid = parsed["district"].notna().to_numpy()
    codes = parsed.loc[valid, "district"].to_numpy()
    lat = pd.to_numeric(frame.loc[valid, columns["latitude"]], errors="coerce").to_numpy()
    lon = pd.to_numeric(frame.loc[valid, columns["longitude"]], errors="coerce").to_numpy()
    coordinates = pd.DataFrame({"lon": lon, "lat": lat}, index=pd.Index(codes, name="district")).dropna()
    coordinates = coordinates[~coordinates.index.duplicated()]
    nearby = None
    if "nearby_districts" in columns:
        nearby = _pairs_from_lists(pd.Series(frame.loc[valid, columns["nearby_districts"]].to_numpy(), index=codes))
    return coordinates, nearby


def _pairs_from_lists(lists: pd.Series) -> pd.DataFrame:
    """Unordered pairs (a < b) from a Series code -> comma-separated codes; invalid names are dropped."""
    exploded = lists.dropna().astype(str).str.split(",").explode().str.strip()
    exploded = exploded[exploded != ""]
    other = parse_postcodes(exploded.reset_index(drop=True))
    ok = other["level"].eq("district").to_numpy()
    a = pd.Index(exploded.index).to_numpy()[ok].astype(str)
    b = other.loc[ok, "district"].to_numpy().astype(str)
    return _unordered_pairs(a, b)


def _unordered_pairs(a: np.ndarray, b: np.ndarray) -> pd.DataFrame:
    a, b = np.asarray(a, dtype=object), np.asarray(b, dtype=object)
    distinct = a != b
    lo = np.where(a < b, a, b)[distinct]
    hi = np.where(a < b, b, a)[distinct]
    pairs = pd.DataFrame({"a": lo, "b": hi}).drop_duplicates(ignore_index=True)
    return pairs.sort_values(["a", "b"], ignore_index=True)


def _us_table(frame: pd.DataFrame, zip_column: str, pop_column: str, source: str) -> PopulationTable:
    counts, blank = _counts(frame, {"population": pop_column}, source)
    parsed = parse_zip_codes(frame[zip_column].reset_index(drop=True))
    invalid = ~parsed["level"].eq("zip5").to_numpy()
    keep = ~invalid & ~blank
    if not keep.any():
        raise DataReadError(f"{source} holds no valid 5-digit ZIP code.")
    # Census tables by state list a ZCTA that crosses a state line once per state: its parts are summed.
    table = counts.loc[keep].groupby(parsed.loc[keep, "zip5"].to_numpy()).sum()
    table.index.name = "zip5"
    parents = pd.DataFrame({"zip3": table.index.str[:3]}, index=table.index)
    return PopulationTable(
        country="us",
        level="zip5",
        counts=table,
        parents=parents,
        source_format="us-zcta",
        source=source,
        invalid=tuple(str(v) for v in frame[zip_column].to_numpy()[invalid & frame[zip_column].notna().to_numpy()]),
        omitted=tuple(parsed.loc[~invalid & blank, "zip5"].astype(str)),
    )


# --------------------------------------------------------------------------------------------------------------
# Neighbours


@dataclass(frozen=True, eq=False)
class Neighbours:
    """Which postcode districts are neighbours, for the ``merge`` strategy.

    Attributes
    ----------
    pairs
        Unordered neighbour pairs of district codes, columns ``a`` < ``b``.
    centroids
        Optional representative point of each district (index code, columns ``lon``, ``lat`` in degrees), used to
        find the nearest unit for a unit that has no neighbour (islands).
    source
        Where the adjacency came from (for reports).
    """

    pairs: pd.DataFrame
    centroids: pd.DataFrame | None = None
    source: str = ""

    def of(self, code: str) -> tuple[str, ...]:
        """The neighbours of one district, in natural order."""
        found = pd.concat([self.pairs.loc[self.pairs["a"] == code, "b"], self.pairs.loc[self.pairs["b"] == code, "a"]])
        values = found.drop_duplicates().tolist()
        return tuple(values[i] for i in postcode_order(values))


def neighbours_from_doogal(source: str | os.PathLike[str] | PopulationTable) -> Neighbours:
    """Neighbours from the doogal district list: its ``Nearby districts`` column (made symmetric: ``a`` and ``b``
    are neighbours when either lists the other) and its coordinates as centroids.

    The list holds the ten nearest districts by distance, not shared boundaries, so it links across water
    (islands get mainland neighbours) and may skip a long thin neighbour.
    """
    table = source if isinstance(source, PopulationTable) else read_population(source)
    if table.nearby is None:
        raise DataReadError(
            f"{table.source or 'The table'} has no 'Nearby districts' column; pass the doogal postcode_districts.csv."
        )
    return Neighbours(table.nearby, table.coordinates, source=f"nearby districts in {table.source}")


# --------------------------------------------------------------------------------------------------------------
# Strategies


@dataclass(frozen=True)
class UnitMerge:
    """One step of the ``merge`` strategy: unit ``unit`` (population ``population``) merged into ``into``.

    ``reason`` is ``adjacent`` (shared boundary / listed neighbour), ``nearest`` (no neighbour: nearest unit by
    centroid distance) or ``same area`` (no neighbour and no coordinates: a unit of the same postcode area).
    """

    unit: str
    population: int
    into: str
    into_population: int
    result: str
    reason: str


@dataclass(frozen=True, eq=False)
class PostcodeGeneralization:
    """The published units a strategy produces.

    Attributes
    ----------
    strategy, threshold
        As requested; ``comparison`` is the failing rule (``<`` UK, ``<=`` US Safe Harbor).
    country, source_level
        ``uk``/``district`` or ``us``/``zip3``.
    mapping
        Original code (every code of the source level) -> published code, natural order of the original codes.
    populations
        Population of every published unit (index published code, natural order), int64.
    original_populations
        Population of every original code.
    merges
        The merge steps, in order (``merge`` strategy only).
    """

    strategy: Strategy
    threshold: int
    country: Country
    source_level: str
    mapping: pd.Series
    populations: pd.Series
    original_populations: pd.Series
    merges: tuple[UnitMerge, ...] = field(default=())

    @property
    def comparison(self) -> Literal["<", "<="]:
        return self.strategy.comparison

    @property
    def total_population(self) -> int:
        return int(self.populations.sum())

    @property
    def below_threshold(self) -> pd.Series:
        """Published units that fail the threshold, smallest first (ties in natural code order).

        The Safe Harbor suppression code ``000`` is not a geographic unit and is never listed.
        """
        populations = self.populations
        if self.strategy is Strategy.ZIP3:
            populations = populations.drop(SUPPRESSED_ZIP3, errors="ignore")
        return _smallest_first(
            populations[fails_threshold(populations.to_numpy(), self.threshold, strategy=self.strategy)]
        )

    @property
    def original_below_threshold(self) -> pd.Series:
        """Original codes that fail the threshold on their own, smallest first (what the strategy had to fix)."""
        original = self.original_populations
        return _smallest_first(original[fails_threshold(original.to_numpy(), self.threshold, strategy=self.strategy)])

    @property
    def members(self) -> pd.Series:
        """For every published unit, the tuple of its original codes (natural order)."""
        originals = pd.Series(self.mapping.index.to_numpy(dtype=object), dtype=object)
        grouped = originals.groupby(self.mapping.to_numpy(), sort=False).agg(tuple)
        return grouped.reindex(self.populations.index)

    def recode(
        self, data: pd.DataFrame, *, column: str, invalid: str = "suppress", unmapped: str = "suppress"
    ) -> TransformResult:
        """Apply this mapping to ``data[column]`` (see :func:`recode_postcodes`)."""
        return recode_postcodes(
            data, column=column, mapping=self.mapping, country=self.country, invalid=invalid, unmapped=unmapped
        )

    def to_step(self, *, column: str) -> Step:
        """This mapping as a ``postcode_recode`` recipe step for ``column``."""
        return Step(
            "postcode_recode",
            {"column": column, "mapping": _plain_mapping(self.mapping), "country": self.country},
        )

    def to_dict(self, *, include_mapping: bool = True) -> dict[str, Any]:
        """Plain JSON: strategy, threshold, comparison, totals, units, below_threshold, merges and mapping."""
        members = self.members
        below = self.below_threshold
        original_below = self.original_below_threshold
        result: dict[str, Any] = {
            "strategy": self.strategy.value,
            "threshold": self.threshold,
            "comparison": self.comparison,
            "country": self.country,
            "source_level": self.source_level,
            "total_population": self.total_population,
            "n_original": len(self.mapping),
            "n_units": len(self.populations),
            "units": [
                {"code": str(code), "population": int(pop), "members": len(group)}
                for code, pop, group in zip(self.populations.index, self.populations, members, strict=True)
            ],
            "below_threshold": [{"code": code, "population": int(pop)} for code, pop in below.items()],
            "original_below_threshold": [
                {"code": str(code), "population": int(pop), "published": str(published)}
                for code, pop, published in zip(
                    original_below.index, original_below, self.mapping.reindex(original_below.index), strict=True
                )
            ],
            "merges": [m.__dict__.copy() for m in self.merges],
        }
        if include_mapping:
            result["mapping"] = _plain_mapping(self.mapping)
        return result


def _smallest_first(series: pd.Series) -> pd.Series:
    natural = series.iloc[postcode_order(series.index)]
    return natural.iloc[np.argsort(natural.to_numpy(), kind="stable")]


def _plain_mapping(mapping: pd.Series | Mapping[str, str]) -> dict[str, str]:
    items = mapping.items()
    return {str(k): str(v) for k, v in items}


def unit_populations(population: PopulationTable, mapping: Mapping[str, str] | pd.Series) -> pd.Series:
    """Census population of every published unit of ``mapping`` (published code -> population, natural order).

    ``mapping`` maps codes of the table's source level (UK districts, US ZIP3) to published codes, e.g. a saved
    recipe's ``postcode_recode`` mapping. Every code of the table must be mapped (:class:`ParameterError`
    otherwise), so the returned populations sum to the table's total; codes of the mapping that the table does not
    hold are ignored.
    """
    base = population.population(population.source_level)
    published = pd.Series(dict(mapping) if not isinstance(mapping, pd.Series) else mapping).astype(str)
    published.index = published.index.astype(str)
    target = published.reindex(base.index)
    unmapped = target.isna()
    if unmapped.any():
        raise ParameterError(
            f"The mapping leaves {int(unmapped.sum())} {population.source_level} codes of {population.source} "
            f"unmapped: {format_values(base.index[unmapped].tolist())}."
        )
    summed = base.groupby(target.to_numpy(), sort=False).sum()
    return _sorted_series(summed.rename("population"))


def generalize_postcodes(
    population: PopulationTable,
    *,
    strategy: str | Strategy,
    threshold: int = DEFAULT_POPULATION_THRESHOLD,
    neighbours: Neighbours | None = None,
) -> PostcodeGeneralization:
    """Map every source code to a published unit with one of the strategies of the module docstring.

    Parameters
    ----------
    population
        The reference populations (UK at district level or finer for ``area``/``outward``/``mixed``/``merge``;
        US for ``zip3``).
    strategy
        ``area``, ``outward``, ``mixed``, ``merge`` or ``zip3``.
    threshold
        Minimum population of a published unit (default 20,000). A unit fails when ``population < threshold``
        (UK) or ``population <= threshold`` (``zip3``).
    neighbours
        District adjacency, required by ``merge`` (polygons: ``geography.district_neighbours``; or
        :func:`neighbours_from_doogal`).

    Notes
    -----
    ``merge`` starts from the ``mixed`` units and repeats: take the failing unit with the smallest population
    (ties: first code in natural order) and merge it into its neighbouring unit with the smallest population
    (ties: natural code order), until no unit fails or one unit is left. Two units are neighbours when any of
    their districts are. A unit with no neighbour (an island, or districts without a polygon) is merged into the
    unit holding the nearest district by great-circle distance between centroids when its districts have
    centroids, otherwise into the smallest unit holding a district of one of its postcode areas (non-geographic
    districts such as CR9 or M60 stay within their area). If that fails too, :class:`ParameterError` is raised.
    The code of a merged unit joins the codes of the ``mixed`` units it contains with ``+`` in natural order
    (``CA6+DG``); it is independent of the order of the merges. When the whole population is under the threshold
    the single remaining unit still fails and is reported in :attr:`PostcodeGeneralization.below_threshold`.
    """
    chosen = Strategy.parse(strategy)
    threshold = check_positive_int(threshold, "threshold", minimum=0)
    if chosen.country != population.country:
        kind = "US ZIP code" if population.country == "us" else "UK postcode"
        allowed = "zip3" if population.country == "us" else "area, outward, mixed or merge"
        raise ParameterError(
            f"Strategy '{chosen.value}' does not apply to {population.source or 'this table'} ({kind} populations); "
            f"use {allowed}."
        )
    base = population.population(population.source_level)
    codes = base.index
    merges: tuple[UnitMerge, ...] = ()
    if chosen is Strategy.ZIP3:
        published = np.where(fails_threshold(base.to_numpy(), threshold, strategy=chosen), SUPPRESSED_ZIP3, codes)
    else:
        areas = pd.Series(codes, dtype=object).str.extract(r"^([A-Z]+)", expand=False).to_numpy(dtype=object)
        if chosen is Strategy.OUTWARD:
            published = codes.to_numpy(dtype=object)
        elif chosen is Strategy.AREA:
            published = areas
        else:
            small = fails_threshold(base.to_numpy(), threshold, strategy=chosen)
            published = np.where(small, areas, codes.to_numpy(dtype=object))
            if chosen is Strategy.MERGE:
                if neighbours is None:
                    raise ParameterError(
                        "The merge strategy needs district neighbours: polygon adjacency "
                        "(geography.district_neighbours) or the doogal nearby-districts list (neighbours_from_doogal)."
                    )
                published, merges = _merge(codes, areas, published, base.to_numpy(), threshold, neighbours)
    mapping = pd.Series(np.asarray(published, dtype=object).astype(str), index=codes, name="published")
    mapping.index.name = population.source_level
    populations = _sorted_series(base.groupby(mapping.to_numpy(), sort=False).sum().rename("population"))
    populations.index.name = "code"
    return PostcodeGeneralization(
        strategy=chosen,
        threshold=threshold,
        country=population.country,
        source_level=population.source_level,
        mapping=mapping,
        populations=populations,
        original_populations=base,
        merges=merges,
    )


def _merge(
    codes: pd.Index,
    areas: np.ndarray,
    start: np.ndarray,
    population: np.ndarray,
    threshold: int,
    neighbours: Neighbours,
) -> tuple[np.ndarray, tuple[UnitMerge, ...]]:
    """Greedy smallest-first merging of failing units (see :func:`generalize_postcodes`)."""
    label, unit_codes = pd.factorize(pd.Series(start, dtype=object))
    n_units = len(unit_codes)
    unit_pop = np.bincount(label, weights=population, minlength=n_units).astype(np.int64)
    parts: list[list[str]] = [[str(code)] for code in unit_codes]
    alive = np.ones(n_units, dtype=bool)
    first = codes.get_indexer(pd.Index(neighbours.pairs["a"].astype(str)))
    second = codes.get_indexer(pd.Index(neighbours.pairs["b"].astype(str)))
    known = (first >= 0) & (second >= 0) & (first != second)
    edge_a = np.concatenate([first[known], second[known]])
    edge_b = np.concatenate([second[known], first[known]])
    lon = lat = None
    if neighbours.centroids is not None and len(neighbours.centroids):
        located = neighbours.centroids.reindex(codes.astype(str))
        lon = np.radians(located["lon"].to_numpy(dtype=float))
        lat = np.radians(located["lat"].to_numpy(dtype=float))
    steps = []

    def key(unit: int) -> tuple[int, tuple[str, int, str, str]]:
        return (int(unit_pop[unit]), _natural_key(_join(parts[unit])))

    while alive.sum() > 1:
        failing = np.flatnonzero(alive & (unit_pop < threshold))
        if not len(failing):
            break
        smallest = failing[unit_pop[failing] == unit_pop[failing].min()]
        unit = int(min(smallest, key=key))
        members = label == unit
        candidates = np.unique(label[edge_b[members[edge_a]]])
        candidates = candidates[candidates != unit]
        reason = "adjacent"
        if not len(candidates):
            target = _nearest_unit(members, label, lon, lat)
            reason = "nearest"
            if target is None:
                same_area = np.isin(areas, np.unique(areas[members])) & ~members
                candidates = np.unique(label[same_area])
                reason = "same area"
                if not len(candidates):
                    raise ParameterError(
                        f"Unit {_join(parts[unit])} ({int(unit_pop[unit]):,} people) is under the threshold and has "
                        "no neighbour, no coordinates and no other unit in its postcode area; supply neighbours that "
                        "cover it."
                    )
        if len(candidates):
            target = int(min(candidates, key=key))
        assert target is not None
        steps.append(
            UnitMerge(
                unit=_join(parts[unit]),
                population=int(unit_pop[unit]),
                into=_join(parts[target]),
                into_population=int(unit_pop[target]),
                result=_join(parts[unit] + parts[target]),
                reason=reason,
            )
        )
        label[members] = target
        unit_pop[target] += unit_pop[unit]
        unit_pop[unit] = 0
        alive[unit] = False
        parts[target] = parts[target] + parts[unit]
    names = np.array([_join(p) for p in parts], dtype=object)
    return names[label], tuple(steps)


def _nearest_unit(members: np.ndarray, label: np.ndarray, lon: np.ndarray | None, lat: np.ndarray | None) -> int | None:
    """The unit of the district nearest (haversine) to any located district of ``members``; None if unlocated."""
    if lon is None or lat is None:
        return None
    here = members & ~np.isnan(lon)
    there = ~members & ~np.isnan(lon)
    if not here.any() or not there.any():
        return None
    lon1, lat1 = lon[here][:, None], lat[here][:, None]
    lon2, lat2 = lon[there][None, :], lat[there][None, :]
    h = np.sin((lat2 - lat1) / 2) ** 2 + np.cos(lat1) * np.cos(lat2) * np.sin((lon2 - lon1) / 2) ** 2
    # argmin over the flattened matrix takes the first minimum: districts are in natural order, so ties are
    # broken deterministically.
    nearest = int(np.argmin(h.min(axis=0)))
    return int(label[np.flatnonzero(there)[nearest]])


def _natural_key(code: str) -> tuple[str, int, str, str]:
    """The sort key of :func:`postcode_order` for one code."""
    match = _NATURAL.match(code)
    letters, digits, rest = match.groups() if match else ("", "", code)
    return (letters, int(digits) if digits else -1, rest, code)


_NATURAL = re.compile(r"^([A-Za-z]*)([0-9]*)(.*)$", re.DOTALL)


def _join(parts: Sequence[str]) -> str:
    return "+".join(sorted(parts, key=_natural_key))


# --------------------------------------------------------------------------------------------------------------
# Applying a mapping to data

_HANDLING = ("suppress", "error")


def recode_postcodes(
    data: pd.DataFrame,
    /,
    *,
    column: str,
    mapping: Mapping[str, str] | pd.Series,
    country: str = "uk",
    invalid: str = "suppress",
    unmapped: str = "suppress",
) -> TransformResult:
    """Replace the postcodes of ``data[column]`` by their published codes.

    Each value is parsed (:func:`parse_postcodes`, :func:`parse_zip_codes`) and taken to the mapping's source
    level first: a UK unit or sector to its district, a US ZIP code to its first three digits. A UK *area* value
    maps to the published code shared by all the area's districts in the mapping, and counts as unmapped when they
    do not share one (it cannot be placed without guessing).

    Parameters
    ----------
    data
        The table; not modified.
    column
        The postcode column.
    mapping
        Source code -> published code (:attr:`PostcodeGeneralization.mapping`, or a saved recipe's dict).
    country
        ``uk`` (keys are districts) or ``us`` (keys are ZIP3).
    invalid
        What to do with values that are not postcodes: ``suppress`` (published as missing, counted and listed in
        the summary) or ``error`` (:class:`ParameterError` naming them).
    unmapped
        Valid postcodes whose district / ZIP3 is not in the mapping (e.g. Scottish postcodes with an England and
        Wales table): ``suppress`` or ``error``.

    Returns
    -------
    TransformResult
        ``data`` with the column replaced (text, missing where suppressed); ``summary`` with ``rows``,
        ``missing`` (missing before), ``invalid``, ``unmapped``, ``suppressed`` (rows made missing), ``changed``
        (cells whose value changed, suppressions included), ``levels`` (rows per parsed level), examples of invalid
        and unmapped values, and ``published_units`` (distinct published codes present); ``mapping`` lists each
        distinct original value with its published code.
    """
    check_columns(data, [column], role="postcode column")
    if country not in ("uk", "us"):
        raise ParameterError(f"country must be 'uk' or 'us', got {country!r}.")
    for name, value in (("invalid", invalid), ("unmapped", unmapped)):
        if value not in _HANDLING:
            raise ParameterError(f"{name} must be one of {', '.join(_HANDLING)}, got {value!r}.")
    if not isinstance(mapping, Mapping | pd.Series) or not len(mapping):
        raise ParameterError("The postcode mapping must be a non-empty object of source code -> published code.")
    lookup = _plain_mapping(mapping)
    values = data[column]
    codes, uniques = pd.factorize(values, use_na_sentinel=True)
    unique_index = pd.Index(uniques)
    if country == "uk":
        parsed = parse_postcodes(pd.Series(unique_index, dtype=object))
        published = parsed["district"].astype(object).map(lookup).astype(object)
        is_area = parsed["level"].eq("area").to_numpy()
        if is_area.any():
            by_area = parsed.loc[is_area, "area"].astype(object).map(_area_lookup(lookup))
            published[is_area] = by_area.to_numpy(dtype=object)
    else:
        parsed = parse_zip_codes(pd.Series(uniques))
        published = parsed["zip3"].astype(object).map(lookup).astype(object)
    level = parsed["level"].astype(str).to_numpy()
    bad = level == "invalid"
    not_found = ~bad & published.isna().to_numpy()
    raw = unique_index.astype(str)
    row_counts = np.bincount(codes[codes >= 0], minlength=len(unique_index))
    if invalid == "error" and bad.any():
        raise ParameterError(
            f"Column '{column}' holds {int(row_counts[bad].sum())} values that are not valid "
            f"{'UK postcodes' if country == 'uk' else 'US ZIP codes'}: {format_values(raw[bad].tolist())}."
        )
    if unmapped == "error" and not_found.any():
        raise ParameterError(
            f"Column '{column}' holds {int(row_counts[not_found].sum())} postcodes outside the mapping: "
            f"{format_values(raw[not_found].tolist())}."
        )
    published_values = published.to_numpy(dtype=object)
    padded = np.concatenate([published_values, np.array([None], dtype=object)])
    output = pd.Series(
        pd.array(padded[np.where(codes < 0, len(published_values), codes)], dtype="str"),
        index=values.index,
        name=column,
    )
    out = data.copy()
    out[column] = output
    original_text = values.astype("str").where(values.notna(), None)
    changed = int((original_text.fillna("\0") != output.fillna("\0")).sum())
    level_counts = pd.Series(row_counts, index=level).groupby(level=0).sum()
    summary = {
        "column": column,
        "country": country,
        "rows": len(data),
        "missing": int((codes < 0).sum()),
        "invalid": int(row_counts[bad].sum()),
        "invalid_values": raw[bad].tolist()[:10],
        "unmapped": int(row_counts[not_found].sum()),
        "unmapped_values": raw[not_found].tolist()[:10],
        "suppressed": int(row_counts[bad | not_found].sum()),
        "changed": changed,
        "levels": {str(k): int(v) for k, v in level_counts.items() if v},
        "published_units": int(output.nunique()),
    }
    value_map = pd.DataFrame({"column": column, "original": raw, "published": pd.array(published_values, dtype="str")})
    step = Step(
        "postcode_recode",
        {"column": column, "mapping": lookup, "country": country, "invalid": invalid, "unmapped": unmapped},
    )
    return TransformResult(data=out, step=step, summary=summary, mapping=value_map)


@register_step("postcode_recode")
def _postcode_recode_step(data: pd.DataFrame, /, **params: Any) -> TransformResult:
    """The ``postcode_recode`` recipe step: :func:`recode_postcodes` with JSON parameters."""
    return recode_postcodes(data, **params)


def _area_lookup(lookup: Mapping[str, str]) -> dict[str, str]:
    """Area -> published code, for areas whose districts all share one published code."""
    table = pd.DataFrame({"district": list(lookup), "published": list(lookup.values())})
    table["area"] = table["district"].str.extract(r"^([A-Z]+)", expand=False)
    shared = table.groupby("area")["published"].agg(["nunique", "first"])
    single = shared.loc[shared["nunique"] == 1, "first"]
    return {str(area): str(code) for area, code in zip(single.index, single, strict=True)}


# --------------------------------------------------------------------------------------------------------------
# Population counts for risk


def population_counts(
    classes: EquivalenceClasses,
    *,
    column: str,
    populations: pd.Series | Mapping[str, int],
    strict: bool = False,
) -> np.ndarray:
    """Estimated population size ``F_j`` of every equivalence class, from census populations of postcode units.

    Journalist and marketer risk and k-map compare the sample class size ``f_j`` with the number ``F_j`` of people
    in the population who share the class's quasi-identifier values (El Emam; ARX ``RiskModelSampleSummary``,
    ``KMap``). The census gives the population of each published postcode unit ``u`` but not its joint
    distribution with the other quasi-identifiers, so for a class ``j`` in unit ``u``::

        F_j = f_j * Pop(u) / n_u

    where ``n_u`` is the number of sample records in unit ``u`` (``counts`` summed over the classes with postcode
    ``u``): the class is scaled by the unit's sampling fraction ``n_u / Pop(u)``, assuming the other
    quasi-identifiers are distributed in the unit's population as in its sample. When the postcode is the only
    quasi-identifier, ``f_j = n_u`` and ``F_j = Pop(u)`` exactly.

    Edge cases: a class with a missing postcode may live anywhere, so it uses the overall fraction
    (``Pop`` = total population of ``populations``, ``n`` = all records). ``F_j`` is never below ``f_j``: a unit
    whose census population is smaller than its sample count (a stale or mismatched reference, e.g. 2011 census
    figures for later data) gets ``F_j = f_j`` (sampling fraction 1), or raises :class:`ParameterError` naming the
    units when ``strict`` is true. A postcode value absent from ``populations`` raises :class:`PrivdashError`:
    recode the column with the same mapping first (:func:`recode_postcodes`). No classes: an empty array.

    Returns
    -------
    numpy.ndarray
        Float ``F_j`` per class, aligned with ``classes.sizes``.
    """
    if column not in classes.quasi_identifiers:
        raise ColumnError(
            f"'{column}' is not a quasi-identifier of these classes ({', '.join(classes.quasi_identifiers)})."
        )
    table = pd.Series(dict(populations) if not isinstance(populations, pd.Series) else populations)
    if not len(table):
        raise ParameterError("The population table is empty.")
    table.index = pd.Index([str(k).strip().upper() for k in table.index])
    position = classes.quasi_identifiers.index(column)
    categories = classes.categories[position]
    keys = pd.Index([str(v).strip().upper() for v in categories])
    unit_pop = pd.to_numeric(table, errors="coerce").reindex(keys).to_numpy(dtype=float)
    codes = classes.class_codes[:, position].astype(np.int64)
    present = np.zeros(len(categories), dtype=bool)
    present[codes[codes >= 0]] = True
    unknown = present & np.isnan(unit_pop)
    if unknown.any():
        raise PrivdashError(
            f"Column '{column}' holds values without a census population: "
            f"{format_values([str(v) for v in categories[unknown]])}. Recode the column with the same postcode "
            "mapping first, so that its values are published units."
        )
    sizes = classes.sizes.astype(float)
    n_unit = np.bincount(codes[codes >= 0], weights=classes.counts[codes >= 0], minlength=len(categories))
    if strict:
        short = present & (unit_pop < n_unit)
        if short.any():
            shown = [
                f"{label} ({int(people):,} people, {int(records):,} records)"
                for label, people, records in zip(categories[short], unit_pop[short], n_unit[short], strict=True)
            ]
            raise ParameterError(
                f"Some postcode units have fewer people in the census than records in the sample: "
                f"{format_values(shown)}. The population reference does not match the data."
            )
    total_pop = float(pd.to_numeric(table, errors="coerce").sum())
    pop_of_class = np.where(codes >= 0, unit_pop[np.maximum(codes, 0)], total_pop)
    n_of_class = np.where(codes >= 0, n_unit[np.maximum(codes, 0)], float(classes.n_records))
    with np.errstate(divide="ignore", invalid="ignore"):
        estimate = sizes * pop_of_class / n_of_class
    return np.maximum(np.nan_to_num(estimate, nan=0.0), sizes)
