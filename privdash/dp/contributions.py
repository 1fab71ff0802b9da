"""The person as the unit of privacy when one person may have several rows: the declared bound c and the truncation
that enforces it before any measurement.

Definitions (Dwork and Roth 2014, section 2.3, "group privacy"; OpenDP's ``unit_of(contributions=c)``; Tumult
Analytics' ``AddRowsWithID``): a table's rows carry a person id (the contract's ``is_entity_id`` column). Two tables
are *person-level neighbours* when one is the other with all the rows of one person added or removed. A release is
(ε, δ)-DP for people when its guarantee holds for every pair of person-level neighbours.

The bound c >= 1 (``max_rows_per_person``) is declared by the analyst, never taken from the data (the table's largest
number of rows per person would itself reveal the person who has them). The truncation keeps, for every person with
more than c rows, c of them chosen at random and drops the others; people with at most c rows keep them all. Then a
person adds or removes at most c rows, the symmetric distance between neighbouring truncated tables is at most c,
and every measurement is calibrated by OpenDP at d_in = c (its sensitivity is c times the one-row one for counts and
histograms, and OpenDP's map of the query at c rows for sums).

The choice is a function of each person's own rows and of a seed only: every row's rank is the keyed hash
(SipHash, ``pandas.util.hash_pandas_object``, key derived from the seed) of its person id (as canonical text, so
``30`` and ``30.0`` are one person) and of its occurrence number among that person's rows in table order; each
person keeps its c rows of smallest rank. Adding or removing one person changes no other person's kept rows, so the
truncation itself is stable with distance c between neighbours, whether the seed is public or not. With
``seed=None`` a fresh seed comes from the operating system's randomness (a fresh choice each release) and is
recorded in the :class:`ContributionBound`; a given seed reproduces the same choice on the same table. OpenDP 0.16
truncates by identifier only in its Polars LazyFrame API
(``make_stable_truncate`` on ``FrameDistance<SymmetricIdDistance>``), not for the vector transformations privdash
measures with, hence this vectorised NumPy/pandas truncation.

Truncation bias: a person with more than c rows counts c times, not as often as in the table, so counts, histogram
cells and sums come out lower than the table's (by the rows dropped, ``rows_dropped``), and a mean shifts toward the
values of people with few rows. A larger c drops fewer rows but adds c times the noise of one row.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from privdash.errors import ColumnError, ParameterError, check_columns
from privdash.transform.hierarchy import canonical_text

__all__ = ["ContributionBound", "bound_contributions", "check_max_rows", "most_rows_per_person"]


@dataclass(frozen=True)
class ContributionBound:
    """How a table was bounded to at most ``max_rows_per_person`` rows per person of the ``entity`` column.

    ``people`` is the number of distinct person ids, ``rows`` the rows before truncation, ``rows_kept`` after it and
    ``most_rows`` the largest number of rows of one person before it; ``seed`` the seed of the choice of rows
    (drawn fresh when none was given: passing it back keeps the same rows). These counts are exact (not
    differentially private): they are for the data owner, never for a released file.
    """

    entity: str
    max_rows_per_person: int
    people: int
    rows: int
    rows_kept: int
    most_rows: int
    seed: int | None = None

    @property
    def rows_dropped(self) -> int:
        """Rows dropped by the truncation."""
        return self.rows - self.rows_kept

    def to_dict(self) -> dict[str, Any]:
        """The bound and the truncation's exact counts as JSON values."""
        return {
            "entity": self.entity,
            "max_rows_per_person": self.max_rows_per_person,
            "people": self.people,
            "rows": self.rows,
            "rows_kept": self.rows_kept,
            "rows_dropped": self.rows_dropped,
            "most_rows_per_person": self.most_rows,
            "seed": self.seed,
        }


def check_max_rows(value: Any) -> int:
    """``value`` as the declared bound c: a whole number >= 1 (``3``, ``3.0`` or the text ``"3"``); a
    :class:`ParameterError` for 0, negatives, fractions, booleans and text that is not a whole number."""
    if isinstance(value, bool | np.bool_):
        raise ParameterError(f"The bound on rows per person must be a whole number of at least 1, got {value!r}.")
    number: float
    try:
        number = float(str(value).strip()) if isinstance(value, str) else float(value)
    except (TypeError, ValueError):
        raise ParameterError(
            f"The bound on rows per person must be a whole number of at least 1, got {value!r}."
        ) from None
    if not np.isfinite(number) or number != round(number) or number < 1:
        raise ParameterError(f"The bound on rows per person must be a whole number of at least 1, got {value!r}.")
    if number > 2**31 - 1:
        raise ParameterError(f"The bound on rows per person must be below 2^31, got {value!r}.")
    return int(number)


def _person_codes(data: pd.DataFrame, entity: str) -> tuple[str, np.ndarray, pd.Series]:
    """The checked person-id column: its name, one integer code per row (one per person) and each row's id text."""
    (name,) = check_columns(data, [entity], role="person-id column")
    ids = data[name]
    missing = int(ids.isna().sum())
    if missing:
        raise ColumnError(
            f"The person-id column '{name}' has {missing:,} row(s) without an id: every row must name its person "
            "(fill in or drop those rows) so that its contribution can be bounded."
        )
    codes, uniques = pd.factorize(ids, use_na_sentinel=True)
    if uniques.dtype.kind == "f" and (np.abs(uniques) < 2**53).all() and (uniques == np.round(uniques)).all():
        uniques = pd.Index(np.asarray(uniques, dtype=np.int64))  # 30.0 is the id 30 (and the fast path of the text)
    texts = np.asarray(canonical_text(pd.Index(uniques)), dtype=object)
    # Ids that are one value as canonical text (30 and 30.0) are one person.
    merged, _ = pd.factorize(texts)
    person = merged[codes]
    return name, np.asarray(person, dtype=np.int64), pd.Series(texts[codes], index=ids.index, dtype=object)


def most_rows_per_person(data: pd.DataFrame, entity: str) -> int:
    """The largest number of rows that one person of ``entity`` has in ``data`` (0 for an empty table); a
    :class:`ColumnError` for an unknown column or rows without an id."""
    _, person, _ = _person_codes(data, entity)
    return int(np.bincount(person).max()) if len(person) else 0


def _seed(seed: int | None) -> int:
    """The seed of the truncation: ``seed`` checked, or a fresh one from the operating system's randomness."""
    if seed is None:
        return secrets.randbits(63)
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer):
        raise ParameterError(f"The truncation seed must be a whole number, got {seed!r}.")
    return int(seed)


def _hash_key(seed: int) -> str:
    """The 16-character SipHash key of a seed."""
    return hashlib.sha256(f"privdash-truncation:{int(seed)}".encode()).hexdigest()[:16]


def bound_contributions(
    data: pd.DataFrame, entity: str, max_rows_per_person: Any, *, seed: int | None = None
) -> tuple[pd.DataFrame, ContributionBound]:
    """Keep at most ``max_rows_per_person`` (c) rows of each person of the ``entity`` column, chosen at random.

    Parameters
    ----------
    data
        The table, several rows per person allowed.
    entity
        The person-id column; every row needs an id (:class:`ColumnError` otherwise).
    max_rows_per_person
        The declared bound c >= 1 (:func:`check_max_rows`).
    seed
        None for a fresh random choice (its seed is recorded in the :class:`ContributionBound`); a whole number
        reproduces the choice on the same table.

    Returns
    -------
    (pandas.DataFrame, ContributionBound)
        The kept rows (in table order, the original index) and the counts of the truncation.
    """
    bound = check_max_rows(max_rows_per_person)
    seed = _seed(seed)
    key = _hash_key(seed)
    name, person, texts = _person_codes(data, entity)
    rows = len(data)
    sizes = np.bincount(person) if rows else np.zeros(0, dtype=np.int64)
    most = int(sizes.max()) if rows else 0
    if most <= bound:
        kept = data
    else:
        occurrence = pd.Series(person).groupby(person).cumcount().to_numpy(dtype=np.int64)
        rank = pd.util.hash_pandas_object(
            pd.DataFrame({"id": texts.to_numpy(dtype=object), "n": occurrence}), index=False, hash_key=key
        ).to_numpy(dtype=np.uint64)
        order = np.lexsort((occurrence, rank, person))  # by person, then by rank (occurrence breaks ties)
        starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
        position = np.arange(rows) - starts[person[order]]
        keep = np.sort(order[position < bound])
        kept = data.iloc[keep]
    return kept, ContributionBound(
        entity=name,
        max_rows_per_person=bound,
        people=len(sizes),
        rows=rows,
        rows_kept=len(kept),
        most_rows=most,
        seed=seed,
    )
