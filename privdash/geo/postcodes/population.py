"""Census population references: reading them (:func:`read_population`), summing them to every level
(:class:`PopulationTable`), and the population class sizes of published units for risk (:func:`population_counts`)
(see :mod:`privdash.geo.postcodes`)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from privdash.data.tables import read_table
from privdash.errors import (
    ColumnError,
    DataReadError,
    ParameterError,
    PrivdashError,
    format_values,
)
from privdash.geo.postcodes.parse import (
    _LEVELS_UK,
    _LEVELS_US,
    Country,
    parse_postcodes,
    parse_zip_codes,
    postcode_order,
)
from privdash.measure.classes import EquivalenceClasses

__all__ = [
    "DEFAULT_DATA_DIR",
    "PopulationTable",
    "default_data_dir",
    "population_counts",
    "population_from_frame",
    "read_population",
]


#: The shared public datasets, relative to the working directory (beside a clone of the repository).
DEFAULT_DATA_DIR = Path("../shared/data")
_SOURCE_LEVEL: dict[str, str] = {"uk": "district", "us": "zip3"}


def default_data_dir() -> Path:
    """:data:`DEFAULT_DATA_DIR` (``../shared/data``) resolved against the current working directory.

    The dashboard and the command line take the folder from their settings (``PRIVDASH_DATA_DIR``, see
    :class:`privdash.application.settings.Settings`); this is the default for direct calls of the Python API.
    """
    return DEFAULT_DATA_DIR.resolve()


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
