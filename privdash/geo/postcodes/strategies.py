"""Population-threshold strategies (``area``, ``outward``, ``mixed``, ``merge``, ``zip3``): the threshold rule,
the neighbours the ``merge`` strategy joins, and the mapping of every source code to a published code
(see :mod:`privdash.geo.postcodes`)."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd

from privdash.choices import Choice
from privdash.constants import DEFAULT_POPULATION_THRESHOLD
from privdash.errors import (
    DataReadError,
    ParameterError,
    check_positive_int,
    format_values,
)
from privdash.geo.postcodes.parse import Country, _sorted_series, postcode_order
from privdash.geo.postcodes.population import PopulationTable, read_population
from privdash.geo.postcodes.recode import _plain_mapping, recode_postcodes
from privdash.transform.steps import Step, TransformResult

__all__ = [
    "DEFAULT_POPULATION_THRESHOLD",
    "SUPPRESSED_ZIP3",
    "Neighbours",
    "PostcodeGeneralization",
    "Strategy",
    "UnitMerge",
    "fails_threshold",
    "generalize_postcodes",
    "neighbours_from_doogal",
    "unit_populations",
]


SUPPRESSED_ZIP3 = "000"


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
        """This mapping as a ``postcode_recoding`` recipe step for ``column``."""
        return Step(
            "postcode_recoding",
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
