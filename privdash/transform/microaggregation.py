"""k-member microaggregation with MDAV over typed quasi-identifiers.

Microaggregation replaces the quasi-identifier (QI) values of every record by those of a small cluster of similar
records, so that each published combination is shared by at least ``k`` records. Clusters are formed with MDAV
(Maximum Distance to Average Vector; Domingo-Ferrer & Mateo-Sanz 2002, "Practical data-oriented microaggregation
for statistical disclosure control", IEEE TKDE 14(1); generalised to ordinal and nominal attributes by
Domingo-Ferrer & Torra 2005, "Ordinal, continuous and heterogeneous k-anonymity through microaggregation", Data
Mining and Knowledge Discovery 11(2)).

Algorithm (fixed-size MDAV, Domingo-Ferrer & Torra 2005, section 3)
-------------------------------------------------------------------
While at least ``3k`` records remain: ``c`` is the centroid of the remaining records, ``r`` the record farthest
from ``c``; ``r`` and its ``k - 1`` nearest remaining records form a cluster and are removed; ``s`` is the remaining
record farthest from ``r``; ``s`` and its ``k - 1`` nearest remaining records form a cluster and are removed. With
``2k .. 3k - 1`` records left, one cluster is formed around the record farthest from the centroid and the rest form
the last cluster; with ``k .. 2k - 1`` left they form one cluster. Every cluster has ``k .. 2k - 1`` records.
Ties are broken by row position (the earliest row wins), so the result is deterministic.

Distances (Domingo-Ferrer & Torra 2005)
---------------------------------------
Squared Euclidean distance over the QIs, each QI standardised so that no unit dominates:

* ``NUMERICAL``: z-score ``(x - mean) / sd`` (population sd over all records; a constant column contributes 0);
* ``ORDINAL``: the rank of the value in the declared order, z-scored the same way;
* ``NOMINAL``: 0 when two values are equal, 1 when they differ (the one-hot encoding scaled by 1/sqrt(2)). The
  centroid of a nominal QI is the mean of those vectors, i.e. its frequency vector ``f``, so a record with value
  ``v`` is ``(1 - 2 f_v + sum f^2) / 2`` from it. (Domingo-Ferrer & Torra take the mode as centroid; the mean
  keeps the search vectorised and only affects which record counts as farthest from the centroid.)

A missing value counts as the mean (z = 0) of a numerical or ordinal QI and as the zero vector of a nominal one
(distance 1/2 to any value). For large groups of purely numerical points an index (points sorted by distance to
the centre, a single-precision screen, a k-d tree; see :class:`_Indexed`) speeds up the farthest- and
nearest-point searches; it returns exactly the records the plain scans return. For large groups of mixed types whose
records share few distinct points once the nominal QIs with the most values (e.g. postcodes) are left out, the
searches run over those points and measure the records sharing such a value with the query apart (see
:class:`_Pooled`); again exactly the records of the plain scans. ``sum f^2`` is computed from the integer counts
(their squares' sum over ``m^2``, one rounding).

Partition first
---------------
Records are first grouped by their nominal and ordinal QI values (missing is a value) and by which numerical QIs
are missing. A group with at least ``k`` records is microaggregated on its numerical QIs only, so its categorical
values are published unchanged (a group with no numerical QI left, or fewer than ``2k`` records, is one cluster).
The records of the smaller groups are pooled and microaggregated together over all QIs; when fewer than ``k``
records would be pooled, the smallest large groups join the pool until it holds ``k``.

Published values
----------------
Within a cluster, a numerical QI takes the mean of the cluster's values (a float; rounded to ``decimals`` when
given), an ordinal QI the lower median in the declared order (for an even count the smaller of the two middle
values), a nominal QI the mode (ties go to the first value in sorted order). Aggregates ignore missing values; a
cluster whose members are all missing on a QI stays missing there. Missing values can therefore only be filled in
inside pooled clusters (counted in ``cells_imputed``). Every cluster publishes one QI combination, so the result is
k-anonymous on the QIs under every missing-value policy; this is verified on the output.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from privdash._deprecation import deprecated_alias
from privdash.data.contract import ColumnRole, DataContract, StatisticalType
from privdash.errors import (
    ColumnError,
    ContractError,
    ParameterError,
    check_columns,
    check_positive_int,
    format_values,
)
from privdash.measure.classes import equivalence_classes
from privdash.measure.encoding import EncodedColumn, encode_column, group_rows
from privdash.transform.steps import Step, TransformResult, register_step

__all__ = [
    "QI_TYPES",
    "mdav_clusters",
    "microaggregate_with_contract",
    "microaggregation",
    "types_from_contract",
]

QI_TYPES = ("NUMERICAL", "ORDINAL", "NOMINAL")
# Decimals of the published means: a float64 keeps about 15 significant digits.
_MAX_DECIMALS = 15

# Index-accelerated searches pay off for large groups of few numerical dimensions (k-d trees degrade with more).
_INDEX_MIN_POINTS = 3000
_INDEX_MAX_DIMS = 8
_REBUILD_FRACTION = 4  # rebuild the index when a quarter of its points have been clustered
_POOLED_POINTS = 4  # mixed data: the distinct-point search needs at most 1 point per 4 records
_POOLED_COMPACT = 16  # compact its searched points when a sixteenth of them is used up
_SCAN_POINTS = 1024  # below this many distinct points, plain scans beat the index
_PRUNE_LIMIT = 1024  # points a pruned farthest search may visit before screening all
_ROUNDING_MARGIN = 1e-5  # relative to the squared data extent; single-precision screening errs by ~1e-7
_BOUND_SLACK = 1e-9  # relative margin on triangle-inequality bounds, far above rounding error


# --- distances ---------------------------------------------------------------------------------------------------


def _sq_dist(columns: np.ndarray, point: np.ndarray) -> np.ndarray:
    """Squared Euclidean distance of each column of ``columns`` (d, c) to ``point`` (d,).

    Accumulated dimension by dimension, first to last, whatever ``c``: the plain and the indexed searches compute
    bit-identical values for the same point. (Below 8 dimensions numpy's column sum adds rows in that order too;
    from 8 on it may pair them, so the loop is spelt out.)
    """
    d = len(point)
    if d == 0:
        return np.zeros(columns.shape[1])
    if d < 8:
        terms = columns - point[:, None]
        terms *= terms
        return terms.sum(axis=0)
    out = columns[0] - point[0]
    out *= out
    for j in range(1, d):
        term = columns[j] - point[j]
        term *= term
        out += term
    return out


def _k_smallest(values: np.ndarray, k: int) -> np.ndarray:
    """Positions of the ``k`` smallest values, ties broken by position (``values`` is overwritten)."""
    if k >= len(values):
        return np.arange(len(values))
    if k <= 16:
        out = np.empty(k, dtype=np.int64)
        for i in range(k):
            position = int(np.argmin(values))
            out[i] = position
            values[position] = np.inf
        return out
    kth = np.partition(values, k - 1)[k - 1]
    below = np.flatnonzero(values < kth)
    ties = np.flatnonzero(values == kth)
    return np.concatenate([below, ties[: k - len(below)]])


class _Counts:
    """How many remaining records hold each code of one nominal QI, and the sum of the squared counts.

    The squared frequencies' sum ``sum f^2`` is that exact integer over ``m^2``, one correctly rounded division
    (a float sum over the values would depend on their number and on the BLAS library's threads).
    """

    def __init__(self, codes: np.ndarray, cardinality: int) -> None:
        counts = np.bincount(codes[codes >= 0], minlength=cardinality)
        self.counts = counts.astype(np.float64)
        self.squares = int((counts.astype(np.int64) ** 2).sum())

    def remove(self, codes: np.ndarray) -> None:
        counts, squares = self.counts, self.squares
        for code in codes.tolist():  # a cluster's few records, one at a time: (c - 1)^2 - c^2 = 1 - 2c
            if code >= 0:
                count = int(counts[code])
                squares += 1 - 2 * count
                counts[code] = count - 1
        self.squares = squares

    def centroid_terms(self, codes: np.ndarray, m: int, *, ones: bool = False) -> np.ndarray:
        """Half the squared distance of a value's one-hot vector to the frequency vector, ``(1 - 2 f_v + sum f^2)
        / 2``, for each code (``sum f^2 / 2`` for a missing code -1); ``ones``: as if every value occurred once."""
        total = self.squares / (m * m)
        # (With no value present every code is -1 and the frequency is not used.)
        frequency = np.full(len(codes), 1.0) / m if ones or not len(self.counts) else self.counts[codes] / m
        return np.where(codes >= 0, 1.0 - 2.0 * frequency + total, total) / 2.0


class _Scan:
    """The remaining records of one MDAV run, searched by full scans.

    Arrays are compacted in row order after each removal, so the first maximum or minimum found is the earliest
    row. ``num`` holds the standardised numerical/ordinal coordinates (d, m); ``nom`` the nominal codes (q, m).
    """

    def __init__(
        self,
        num: np.ndarray,
        nom: np.ndarray,
        cardinalities: Sequence[int],
        index: np.ndarray,
        sums: np.ndarray,
    ) -> None:
        self.num = num
        self.nom = nom
        self.index = index
        self.sums = sums
        self.counts = [_Counts(codes, card) for codes, card in zip(nom, cardinalities, strict=True)]

    @property
    def m(self) -> int:
        return len(self.index)

    def farthest_from_centroid(self) -> int:
        m = self.m
        distance = _sq_dist(self.num, self.sums / m)
        for codes, counts in zip(self.nom, self.counts, strict=True):
            distance += counts.centroid_terms(codes, m)
        return int(np.argmax(distance))

    def _distance_to(self, position: int) -> np.ndarray:
        distance = _sq_dist(self.num, self.num[:, position].copy())
        for codes in self.nom:
            code = codes[position]
            if code >= 0:
                distance += np.where(codes == code, 0.0, np.where(codes >= 0, 1.0, 0.5))
            else:
                distance += np.where(codes >= 0, 0.5, 0.0)
        return distance

    def cluster_around(self, position: int, k: int, *, then_farthest: bool) -> tuple[np.ndarray, int]:
        """Remove ``position`` and its ``k - 1`` nearest records; return their rows and (optionally) the position,
        after the removal, of the remaining record farthest from ``position``'s record (else -1)."""
        distance = self._distance_to(position)
        far = distance.copy() if then_farthest else distance
        distance[position] = -1.0
        members = np.sort(_k_smallest(distance, k))
        following = -1
        if then_farthest:
            far[members] = -1.0
            following = int(np.argmax(far))
            following -= int(np.searchsorted(members, following))
        return self._remove(members), following

    def _remove(self, members: np.ndarray) -> np.ndarray:
        rows = self.index[members]
        self.sums = self.sums - self.num[:, members].sum(axis=1)
        for codes, counts in zip(self.nom, self.counts, strict=True):
            counts.remove(codes[members])
        keep = np.ones(self.m, dtype=bool)
        keep[members] = False
        self.num = self.num[:, keep]
        self.nom = self.nom[:, keep]
        self.index = self.index[keep]
        return rows

    def remaining(self) -> np.ndarray:
        return self.index


class _Indexed:
    """The remaining records of one MDAV run over numerical coordinates only, searched through an index.

    Records with identical coordinates share one *distinct point*. Among equally distant records the earliest
    row is always taken first, so the remaining records of a distinct point are always its latest ones: a pointer
    per point tracks them. Searches run over distinct points:

    * few points left: exact scans over all of them;
    * otherwise, farthest-point searches visit points in decreasing distance to the centre ``c`` of the points
      (as of the last rebuild) and stop on the triangle-inequality bound ``|x - c| + |p - c|``; when that bound
      is weak (``p`` far from ``c``, an outlier), one single-precision matrix-vector product screens every
      point (``|x - c|^2 - 2 (x - c).(p - c)`` is the squared distance less a constant) and only the points
      within a rounding margin of the maximum are measured exactly; nearest-neighbour searches ask a k-d tree
      for candidates and check that no closer point can have been missed.

    Distances are measured with :func:`_sq_dist` exactly as :class:`_Scan` measures them and ties go to the
    earliest row, so both return the same clusters. The index is rebuilt over the remaining points when a
    quarter of them has been used up.
    """

    def __init__(self, num: np.ndarray, index: np.ndarray, sums: np.ndarray) -> None:
        self.num = num
        self.index = index
        self.sums = sums
        self.m = len(index)
        # Adding 0.0 turns -0.0 into 0.0, so equal coordinates are one distinct point. Two distinct points are
        # then at a positive distance unless a coordinate difference underflows, which needs values below 1e-150.
        num = num + 0.0
        self.separated = not bool(((np.abs(num) < 1e-150) & (num != 0)).any())
        distinct, inverse = np.unique(num.T, axis=0, return_inverse=True)
        self.points = np.ascontiguousarray(distinct.T)
        self.point_of = inverse.reshape(-1)
        counts = np.bincount(self.point_of, minlength=len(distinct))
        self.members = np.argsort(self.point_of, kind="stable")
        self.next = np.cumsum(counts) - counts
        self.left = counts
        self._rebuild()

    # -- index maintenance --

    def _rebuild(self) -> None:
        live = np.flatnonzero(self.left > 0)
        self.live = live
        self.used_up = 0
        self.indexed = len(live) > _SCAN_POINTS
        if not self.indexed:
            return
        from scipy.spatial import cKDTree

        self.reference = self.sums / self.m
        shifted = self.points[:, live] - self.reference[:, None]
        squares = (shifted**2).sum(axis=0)
        # Rows: the shifted coordinates and the squared radius, so one product gives the screening scores.
        # Single precision halves the memory read per screen; the margin below covers its rounding.
        self.screen = np.ascontiguousarray(np.vstack([shifted, squares]), dtype=np.float32)
        self.weights = np.ones(len(self.reference) + 1, dtype=np.float32)
        self.extent = float(np.sqrt(squares.max()))
        # The farthest points from the centre, in order, for the pruned search; a search that gets past them
        # screens instead.
        head = min(len(live), 4 * _PRUNE_LIMIT)
        negative_radius = -np.sqrt(squares)
        top = np.argpartition(negative_radius, head - 1)[:head] if head < len(live) else np.arange(len(live))
        top = top[np.lexsort((top, negative_radius[top]))]
        self.order = live[top]
        self.negative_radius = negative_radius[top]  # ascending, for searchsorted
        self.start = 0
        self.scores = np.empty(len(live), dtype=np.float32)
        self.slot_of = np.full(self.points.shape[1], -1, dtype=np.int64)
        self.slot_of[live] = np.arange(len(live))
        self.tree = cKDTree(self.points[:, live].T)

    @property
    def points_left(self) -> int:
        """Distinct points that still have rows."""
        return len(self.live) - self.used_up

    def _first(self, points: np.ndarray) -> np.ndarray:
        """The earliest remaining row of each distinct point in ``points``."""
        return self.members[self.next[points]]

    def _remaining_live(self) -> np.ndarray:
        return self.live[self.left[self.live] > 0]

    # -- farthest --

    def _farthest(self, point: np.ndarray) -> int:
        """The earliest remaining row among those farthest from ``point``."""
        if not self.indexed:
            candidates = self._remaining_live()
            distance = _sq_dist(self.points[:, candidates], point)
            return int(self._first(candidates[distance == distance.max()]).min())
        shift = float(np.sqrt(((point - self.reference) ** 2).sum()))
        order, negative_radius = self.order, self.negative_radius
        best, best_row = -1.0, -1
        low, size, chunk = self._first_remaining(), len(order), 64
        while low < size:
            bound = shift - negative_radius[low]
            if best_row >= 0:
                if bound * bound * (1.0 + _BOUND_SLACK) < best:
                    return best_row
                # Points that can still beat ``best`` are at least sqrt(best) - shift from the centre; when too
                # many remain to visit, screening all points at once is cheaper.
                reach = np.sqrt(best / (1.0 + _BOUND_SLACK)) - shift
                if int(np.searchsorted(negative_radius, -reach, side="right")) - low > _PRUNE_LIMIT:
                    return self._farthest_screened(point)
            high = min(low + chunk, size)
            candidates = order[low:high]
            candidates = candidates[self.left[candidates] > 0]
            if len(candidates):
                distance = _sq_dist(self.points[:, candidates], point)
                top = float(distance.max())
                if top >= best:
                    row = int(self._first(candidates[distance == top]).min())
                    if top > best or row < best_row:
                        best, best_row = top, row
            low, chunk = high, chunk * 2
        # The whole ordered head was visited without the bound stopping the search: the points beyond it (if any)
        # still have to be looked at.
        return self._farthest_screened(point) if size < len(self.live) else best_row

    def _first_remaining(self) -> int:
        """Position in the ordered head of the first point with rows left (all before it are used up)."""
        start, size = self.start, len(self.order)
        while start < size:
            window = self.left[self.order[start : start + 256]] > 0
            if window.any():
                start += int(np.argmax(window))
                break
            start += len(window)
        self.start = start
        return start

    def _farthest_screened(self, point: np.ndarray) -> int:
        """:meth:`_farthest` by screening: ``|x - ref|^2 - 2 (x - ref).(p - ref)`` for every point is its squared
        distance up to rounding, less the constant ``|p - ref|^2``; only the points within a rounding margin of
        the largest are measured exactly."""
        offset = point - self.reference
        self.weights[:-1] = -2.0 * offset
        scores = self.scores
        np.matmul(self.weights, self.screen, out=scores)  # used-up points score -inf (see _use)
        first = int(np.argmax(scores))
        top = float(scores[first])
        margin = _ROUNDING_MARGIN * (self.extent + float(np.sqrt(offset @ offset))) ** 2
        scores[first] = -np.inf
        if float(scores.max()) < top - margin:
            slots = np.array([first])
        else:
            slots = np.append(np.flatnonzero(scores >= top - margin), first)
        candidates = self.live[slots]
        distance = _sq_dist(self.points[:, candidates], point)
        return int(self._first(candidates[distance == distance.max()]).min())

    def farthest_from_centroid(self) -> int:
        return self._farthest(self.sums / self.m)

    # -- nearest --

    def _take(self, candidates: np.ndarray, distance: np.ndarray, need: int) -> tuple[np.ndarray, float]:
        """The ``need`` remaining rows nearest to the query among distinct points ``candidates`` (ties: earliest
        rows), and the distance of the last one taken."""
        first = self.members[self.next[candidates]]
        if int(self.left[candidates].max()) == 1:  # no repeated points among them: one row each
            ranking = np.lexsort((first, distance))[:need]
            return first[ranking], float(distance[ranking[-1]])
        ranking = np.argsort(distance, kind="stable")
        candidates, distance = candidates[ranking], distance[ranking]
        cumulative = np.cumsum(self.left[candidates])
        cut = int(np.searchsorted(cumulative, need))
        last = float(distance[cut])
        whole = candidates[distance < last]
        tied = candidates[distance == last]
        rows = [self.members[self.next[p] : self.next[p] + self.left[p]] for p in whole.tolist()]
        still = need - sum(len(r) for r in rows)
        pool = np.concatenate([self.members[self.next[p] : self.next[p] + self.left[p]] for p in tied.tolist()])
        rows.append(pool[:still] if len(tied) == 1 else np.sort(pool)[:still])
        return np.concatenate(rows), last

    def _nearest(self, row: int, k: int) -> np.ndarray:
        """``row`` (the earliest remaining row of its point) and the ``k - 1`` remaining rows nearest to it."""
        own = int(self.point_of[row])
        point = self.points[:, own].copy()
        self._use(np.array([row]))
        need = k - 1
        if need == 0:
            return np.array([row])
        if self.separated and self.left[own] >= need:
            # Enough rows share the point itself (distance 0, and every other point is farther): its next ones.
            start = self.next[own]
            taken = self.members[start : start + need]
            self.next[own] += need
            self.left[own] -= need
            if self.left[own] == 0:
                self._retire_points(np.array([own]))
            return np.sort(np.append(taken, row))
        if not self.indexed:
            candidates = self._remaining_live()
            taken, _ = self._take(candidates, _sq_dist(self.points[:, candidates], point), need)
        else:
            tree_size = len(self.live)
            asked = min(max(2 * need + 8, 16), tree_size)
            while True:
                tree_distance, found = self.tree.query(point, k=asked)
                candidates = self.live[np.atleast_1d(found)]
                candidates = candidates[self.left[candidates] > 0]
                if int(self.left[candidates].sum()) >= need:
                    taken, last = self._take(candidates, _sq_dist(self.points[:, candidates], point), need)
                    edge = float(np.atleast_1d(tree_distance)[-1])
                    # A point the tree did not return is at least ``edge`` away: then none can beat the last taken.
                    if asked >= tree_size or edge * edge > last * (1.0 + _BOUND_SLACK) + 1e-300:
                        break
                elif asked >= tree_size:
                    raise AssertionError("fewer remaining rows than the cluster size")  # pragma: no cover
                asked = min(asked * 4, tree_size)
        self._use(taken)
        return np.sort(np.append(taken, row))

    def _use(self, rows: np.ndarray) -> None:
        """Mark ``rows`` (the earliest remaining rows of their points) as clustered."""
        if len(rows) == 1:
            point = self.point_of[rows[0]]
            self.next[point] += 1
            self.left[point] -= 1
            if self.left[point] == 0:
                self._retire_points(np.array([point]))
            return
        points = np.sort(self.point_of[rows])
        repeated = bool((points[1:] == points[:-1]).any())
        if repeated:
            points, counts = np.unique(points, return_counts=True)
            self.next[points] += counts
            self.left[points] -= counts
        else:
            self.next[points] += 1
            self.left[points] -= 1
        self._retire_points(points[self.left[points] == 0])

    def _retire_points(self, points: np.ndarray) -> None:
        """Count distinct points with no rows left; make them score -inf in every screen."""
        self.used_up += len(points)
        if self.indexed and len(points):
            slots = self.slot_of[points]
            self.screen[:-1, slots] = 0.0
            self.screen[-1, slots] = -np.inf

    def cluster_around(self, position: int, k: int, *, then_farthest: bool) -> tuple[np.ndarray, int]:
        point = self.points[:, self.point_of[position]].copy()
        members = self._nearest(position, k)
        self.sums = self.sums - self.num[:, members].sum(axis=1)
        self.m -= len(members)
        following = self._farthest(point) if then_farthest else -1
        if self.used_up * _REBUILD_FRACTION > len(self.live):
            self._rebuild()
        return self.index[members], following

    def to_scan(self) -> _Scan:
        rows = self._remaining_rows()
        return _Scan(self.num[:, rows], np.empty((0, len(rows)), np.int64), [], self.index[rows], self.sums)

    def _remaining_rows(self) -> np.ndarray:
        """Positions of the remaining rows, ascending."""
        slot = np.arange(len(self.members))
        remaining = slot >= self.next[self.point_of[self.members]]
        return np.sort(self.members[remaining])

    def remaining(self) -> np.ndarray:
        return self.index[self._remaining_rows()]


_PRESENT_MISSING = np.array([0, -1])  # a present and a missing code


class _Pooled:
    """The remaining records of one mixed-type MDAV run, searched over distinct points.

    Records that agree on every coordinate, on every *low-cardinality* nominal code and on which *high-cardinality*
    nominal QIs are missing share one distinct point. A record's distance to any query is its point's distance,
    except on the high-cardinality nominal QIs where it shares the query's value (0 instead of 1): those few
    *exception* records (found through a per-value index) are measured one by one. For the distance to the centroid,
    a high-cardinality value's frequency is at least ``1 / m``, which bounds each point from above; points are visited
    from the highest bound down and their records measured exactly until no bound can beat the best found.

    Every distance that decides is computed with the same floating-point operations, in the same order, as
    :class:`_Scan` computes it (a nominal term is looked up instead of computed, the same value), and ties go to the
    earliest row, so both return the same clusters. Positions are the columns of ``num`` and ``nom`` and are never
    compacted (removed records are flagged); the searched points are compacted when a quarter of them is used up.
    """

    def __init__(
        self,
        num: np.ndarray,
        nom: np.ndarray,
        cardinalities: Sequence[int],
        index: np.ndarray,
        sums: np.ndarray,
        high: Sequence[bool],
        points: tuple[tuple[np.ndarray, np.ndarray], np.ndarray] | None = None,
    ) -> None:
        self.num = num
        self.nom = nom
        self.cardinalities = list(cardinalities)
        self.index = index
        self.sums = sums
        self.m = len(index)
        self.high = [bool(h) for h in high]
        self.counts = [_Counts(codes, card) for codes, card in zip(nom, cardinalities, strict=True)]
        # Point key: a high-cardinality code becomes -2 (present) or -1 (missing).
        (self.pnum, pnom), self.point_of = (
            _distinct_points(num, _point_key(nom, self.high)) if points is None else points
        )
        # Shifted so that they index lookup tables: low codes + 1 (missing 0), high ones + 2 (present 0, missing 1).
        shift = np.where(np.array(self.high, dtype=bool), 2, 1)[:, None]
        self.pkey = pnom + shift
        sizes = np.bincount(self.point_of, minlength=self.pnum.shape[1])
        self.members = np.argsort(self.point_of, kind="stable")
        self.end = np.cumsum(sizes)
        self.next = self.end - sizes
        self.left = sizes.copy()
        self.alive = int((sizes > 0).sum())
        self.removed = np.zeros(self.m, dtype=bool)
        self.exception = np.zeros(self.m, dtype=bool)
        self.tables: dict[tuple[int, int], np.ndarray] = {}
        self.value_range = [np.arange(-1, card) for card in self.cardinalities]
        # Per high-cardinality QI: positions sorted by code, and where each code's run starts.
        self.by_value: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        for j, is_high in enumerate(self.high):
            if is_high:
                codes = nom[j]
                order = np.argsort(codes, kind="stable")
                starts = np.searchsorted(codes[order], np.arange(self.cardinalities[j] + 1))
                self.by_value[j] = (order, starts)
        self._compact()

    @property
    def points_left(self) -> int:
        return self.alive

    # -- helpers --

    def _compact(self) -> None:
        """Search only the points with records left."""
        self.live = np.flatnonzero(self.left > 0)
        self.live_num = np.ascontiguousarray(self.pnum[:, self.live])
        self.live_key = np.ascontiguousarray(self.pkey[:, self.live])

    def _first_rows(self, points: np.ndarray, want: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Up to ``want`` earliest remaining, non-exception positions of each point; and each one's point slot."""
        if not len(points):
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
        if len(points) <= 8:  # few points (the usual case): walk their lists
            found: list[int] = []
            slots: list[int] = []
            members, removed, exception = self.members, self.removed, self.exception
            for slot, (point, wanted) in enumerate(zip(points.tolist(), want.tolist(), strict=True)):
                start, stop, got = int(self.next[point]), int(self.end[point]), 0
                while start < stop and got < wanted:
                    position = int(members[start])
                    if not removed[position] and not exception[position]:
                        found.append(position)
                        slots.append(slot)
                        got += 1
                    start += 1
            return np.array(found, dtype=np.int64), np.array(slots, dtype=np.int64)
        width = int(want.max()) + 2
        starts, ends = self.next[points], self.end[points]
        while True:
            slots = starts[:, None] + np.arange(width)[None, :]
            inside = slots < ends[:, None]
            positions = self.members[np.where(inside, slots, 0)]
            ok = inside & ~self.removed[positions] & ~self.exception[positions]
            taken = np.cumsum(ok, axis=1)
            if bool(((taken[:, -1] >= want) | ~inside[:, -1]).all()):
                break
            width *= 2
        chosen = ok & (taken <= want[:, None])
        owner = np.nonzero(chosen)[0]
        return positions[chosen], owner

    def _remove(self, positions: np.ndarray) -> None:
        self.removed[positions] = True
        for codes, counts in zip(self.nom, self.counts, strict=True):
            counts.remove(codes[positions])
        left, next_, end, members, removed = self.left, self.next, self.end, self.members, self.removed
        for point in self.point_of[positions].tolist():
            left[point] -= 1
            if left[point] == 0:
                self.alive -= 1
            start, stop = int(next_[point]), int(end[point])
            while start < stop and removed[members[start]]:  # skip the removed rows at the head of the point
                start += 1
            next_[point] = start

    def _exact_to(self, positions: np.ndarray, position: int) -> np.ndarray:
        """:meth:`_Scan._distance_to` for ``positions`` only."""
        if not len(positions):
            return np.zeros(0)
        distance = _sq_dist(self.num[:, positions], self.num[:, position].copy())
        for codes_all in self.nom:
            codes = codes_all[positions]
            code = codes_all[position]
            if code >= 0:
                distance += np.where(codes == code, 0.0, np.where(codes >= 0, 1.0, 0.5))
            else:
                distance += np.where(codes >= 0, 0.5, 0.0)
        return distance

    # -- farthest from the centroid --

    def farthest_from_centroid(self) -> int:
        m = self.m
        centre = self.sums / m
        live = self.live
        bound = _sq_dist(self.live_num, centre)
        for j, counts in enumerate(self.counts):
            if self.high[j]:
                # A remaining value occurs at least once: its term is at most the one of a count of 1.
                table = counts.centroid_terms(_PRESENT_MISSING, m, ones=True)
            else:
                table = counts.centroid_terms(self.value_range[j], m)
            bound += table[self.live_key[j]]
        bound[self.left[live] == 0] = -np.inf
        visited = np.zeros(len(live), dtype=bool)
        best, best_position = -np.inf, -1
        threshold = float(bound.max())
        while True:
            slots = np.flatnonzero(~visited & (bound >= threshold))
            if not len(slots):
                return best_position
            visited[slots] = True
            points = live[slots]
            positions = np.concatenate(
                [self.members[a:b] for a, b in zip(self.next[points].tolist(), self.end[points].tolist(), strict=True)]
            )
            positions = positions[~self.removed[positions]]
            distance = _sq_dist(self.num[:, positions], centre)
            for codes, counts in zip(self.nom, self.counts, strict=True):
                distance += counts.centroid_terms(codes[positions], m)
            top = float(distance.max())
            position = int(positions[distance == top].min())
            if top > best or (top == best and position < best_position):
                best, best_position = top, position
            threshold = best

    # -- clusters --

    def _distance_table(self, j: int, code: int) -> np.ndarray:
        """The terms :meth:`_Scan._distance_to` adds for nominal QI ``j`` when the query's code is ``code``, by point
        key (see ``pkey``)."""
        key = (j, code)
        table = self.tables.get(key)
        if table is None:
            if self.high[j]:
                table = np.array([1.0, 0.5]) if code >= 0 else np.array([0.5, 0.0])
            elif code >= 0:
                table = np.full(self.cardinalities[j] + 1, 1.0)
                table[0] = 0.5
                table[code + 1] = 0.0
            else:
                table = np.full(self.cardinalities[j] + 1, 0.5)
                table[0] = 0.0
            if self.high[j] or self.cardinalities[j] <= 256:
                self.tables[key] = table
        return table

    def _point_distances(self, position: int) -> np.ndarray:
        """Distance of every searched point's non-exception records to the record at ``position``."""
        distance = _sq_dist(self.live_num, self.num[:, position].copy())
        for j, codes in enumerate(self.nom):
            code = int(codes[position])
            if self.high[j]:  # present (any value: the records sharing it are measured apart) or missing
                code = 0 if code >= 0 else -1
            distance += self._distance_table(j, code)[self.live_key[j]]
        return distance

    def _exceptions(self, position: int) -> np.ndarray:
        """Remaining positions sharing a high-cardinality value with ``position`` (ascending)."""
        found: list[np.ndarray] = []
        for j, (order, starts) in self.by_value.items():
            code = int(self.nom[j, position])
            if code >= 0:
                found.append(order[starts[code] : starts[code + 1]])
        if not found:
            return np.empty(0, dtype=np.int64)
        special = found[0] if len(found) == 1 else np.unique(np.concatenate(found))
        return special[~self.removed[special]]

    def _available(self, special: np.ndarray) -> np.ndarray:
        """Remaining non-exception records of each searched point."""
        available = self.left[self.live]
        if len(special):
            np.subtract.at(available, np.searchsorted(self.live, self.point_of[special]), 1)
        return available

    def cluster_around(self, position: int, k: int, *, then_farthest: bool) -> tuple[np.ndarray, int]:
        """Remove ``position`` and its ``k - 1`` nearest records (see :meth:`_Scan.cluster_around`)."""
        live = self.live
        distance = self._point_distances(position)
        self._remove(np.array([position]))
        special = self._exceptions(position)
        special_distance = self._exact_to(special, position)
        self.exception[special] = True
        need = k - 1
        taken = np.empty(0, dtype=np.int64)
        if need > 0:
            available = self._available(special)
            valid = np.flatnonzero(available > 0)
            candidate_distance = distance[valid]
            if len(valid) > need:
                cut = np.partition(candidate_distance, need - 1)[need - 1]
                keep = candidate_distance <= cut
                valid, candidate_distance = valid[keep], candidate_distance[keep]
            rows, owner = self._first_rows(live[valid], np.minimum(available[valid], need))
            positions = np.concatenate([rows, special])
            values = np.concatenate([candidate_distance[owner], special_distance])
            taken = positions[np.lexsort((positions, values))[:need]]
            self.exception[special] = False
            self._remove(taken)
        members = np.sort(np.append(taken, position))
        self.sums = self.sums - self.num[:, members].sum(axis=1)
        self.m -= len(members)
        following = -1
        if then_farthest:
            still = ~self.removed[special]
            special, special_distance = special[still], special_distance[still]
            self.exception[special] = True
            valid = np.flatnonzero(self._available(special) > 0)
            top = float(distance[valid].max()) if len(valid) else -np.inf
            if len(special):
                top = max(top, float(special_distance.max()))
            tied = live[valid[distance[valid] == top]]
            rows, _ = self._first_rows(tied, np.ones(len(tied), dtype=np.int64))
            following = int(np.concatenate([rows, special[special_distance == top]]).min())
        self.exception[special] = False
        if (len(self.live) - self.alive) * _POOLED_COMPACT > len(self.live):
            self._compact()
        return self.index[members], following

    def to_scan(self) -> _Scan:
        positions = np.flatnonzero(~self.removed)
        return _Scan(
            self.num[:, positions], self.nom[:, positions], self.cardinalities, self.index[positions], self.sums
        )

    def remaining(self) -> np.ndarray:
        return self.index[~self.removed]


def _distinct_points(num: np.ndarray, nom: np.ndarray) -> tuple[tuple[np.ndarray, np.ndarray], np.ndarray]:
    """Distinct columns of ``num`` (d, m; -0.0 counted as 0.0) together with ``nom`` (q, m): ((coordinates, codes),
    point of each column)."""
    keys = np.vstack([num + 0.0, nom.astype(np.float64)])
    distinct, inverse = np.unique(keys.T, axis=0, return_inverse=True)
    d = num.shape[0]
    coordinates = np.ascontiguousarray(distinct[:, :d].T)
    codes = np.ascontiguousarray(distinct[:, d:].T).astype(np.int64)
    return (coordinates, codes), inverse.reshape(-1)


def _mdav_run(state: _Scan | _Indexed | _Pooled, k: int, labels: np.ndarray, next_label: int) -> int:
    """Run MDAV over ``state``; write cluster numbers from ``next_label`` into ``labels``; return the next free one."""
    while state.m >= 3 * k:
        if isinstance(state, _Indexed | _Pooled) and state.m < _INDEX_MIN_POINTS and 2 * state.points_left > state.m:
            # Few records left and mostly distinct: plain scans over records are cheaper.
            state = state.to_scan()
        first = state.farthest_from_centroid()
        rows, second = state.cluster_around(first, k, then_farthest=True)
        labels[rows] = next_label
        rows, _ = state.cluster_around(second, k, then_farthest=False)
        labels[rows] = next_label + 1
        next_label += 2
    if state.m >= 2 * k:
        first = state.farthest_from_centroid()
        rows, _ = state.cluster_around(first, k, then_farthest=False)
        labels[rows] = next_label
        next_label += 1
    if state.m:
        labels[state.remaining()] = next_label
        next_label += 1
    return next_label


def _run_group(
    num: np.ndarray,
    nom: np.ndarray,
    cardinalities: Sequence[int],
    rows: np.ndarray,
    k: int,
    labels: np.ndarray,
    next_label: int,
    *,
    use_index: bool | None = None,
    high: Sequence[bool] | None = None,
) -> int:
    """MDAV over the records ``rows`` (ascending) with coordinates ``num`` (d, m) and nominal codes ``nom`` (q, m).

    ``high`` (tests) forces the distinct-point search of mixed data with these nominal QIs as high-cardinality ones.
    """
    num = np.ascontiguousarray(num, dtype=np.float64)
    nom = np.ascontiguousarray(nom, dtype=np.int64)
    sums = num.sum(axis=1)
    m = len(rows)
    pooled = high is not None or (use_index is not False and m >= _INDEX_MIN_POINTS)
    if use_index is None:
        use_index = nom.shape[0] == 0 and 0 < num.shape[0] <= _INDEX_MAX_DIMS and m >= _INDEX_MIN_POINTS
    state: _Scan | _Indexed | _Pooled
    if use_index and nom.shape[0] == 0 and m >= 3 * k and num.shape[0] > 0:
        state = _Indexed(num, rows, sums)
    elif nom.shape[0] and m >= 3 * k and pooled:
        chosen = _high_cardinality(num, nom, cardinalities) if high is None else (list(high), None)
        if chosen is not None:
            state = _Pooled(num, nom, cardinalities, rows, sums, chosen[0], chosen[1])
        else:
            state = _Scan(num, nom, cardinalities, rows, sums)
    else:
        state = _Scan(num, nom, cardinalities, rows, sums)
    return _mdav_run(state, k, labels, next_label)


def _point_key(nom: np.ndarray, high: Sequence[bool]) -> np.ndarray:
    """The nominal part of the distinct-point key: a high-cardinality code becomes -2 (present) or -1 (missing)."""
    return np.where(np.array(high, dtype=bool)[:, None], np.where(nom >= 0, -2, -1), nom)


def _high_cardinality(
    num: np.ndarray, nom: np.ndarray, cardinalities: Sequence[int]
) -> tuple[list[bool], tuple[tuple[np.ndarray, np.ndarray], np.ndarray]] | None:
    """Which nominal QIs :class:`_Pooled` should treat as high-cardinality, and the distinct points they give; or
    None when the points would not be few enough (at most a quarter of the records) for it to pay off.

    A QI with more values among these records than a quarter of them is high-cardinality at once; then the QIs with
    the most values are moved out of the point key, one at a time, until the points are few.
    """
    m = nom.shape[1]
    values = [
        int((np.bincount(codes[codes >= 0], minlength=card) > 0).sum())
        for codes, card in zip(nom, cardinalities, strict=True)
    ]
    high = [count * _POOLED_POINTS > m for count in values]
    by_values = sorted((j for j in range(len(nom)) if not high[j]), key=lambda j: (-values[j], j))
    for j in [None, *by_values]:
        if j is not None:
            high[j] = True
        points = _distinct_points(num, _point_key(nom, high))
        if points[0][0].shape[1] * _POOLED_POINTS <= m:
            return high, points
    return None


def mdav_clusters(
    points: np.ndarray,
    k: int,
    *,
    nominal: np.ndarray | None = None,
    use_index: bool | None = None,
) -> np.ndarray:
    """Cluster rows with fixed-size MDAV (see the module docstring); return a cluster number per row.

    Parameters
    ----------
    points
        ``(n, d)`` coordinates, already standardised; compared by squared Euclidean distance.
    k
        Minimum cluster size (every cluster gets ``k .. 2k - 1`` rows); ``n`` must be at least ``k``.
    nominal
        Optional ``(n, q)`` integer codes of nominal attributes (``-1`` missing), compared by 0/1 distance.
    use_index
        Force (True) or forbid (False) the indexed search; by default it is used for large numerical inputs, and
        the distinct-point search for large inputs with nominal codes when their points are few (False forbids it
        too). The clusters are the same either way.

    Returns
    -------
    numpy.ndarray
        Cluster numbers ``0 .. c - 1`` in the order the clusters were formed.
    """
    points = np.asarray(points, dtype=np.float64)
    if points.ndim != 2:
        raise ParameterError("points must be a two-dimensional array (rows x coordinates).")
    n = len(points)
    k = check_positive_int(k, "k")
    if n < k:
        raise ParameterError(f"MDAV needs at least k = {k} rows, got {n}.")
    if not np.isfinite(points).all():
        raise ParameterError("points must be finite numbers (no NaN or infinity).")
    codes = np.zeros((n, 0), dtype=np.int64) if nominal is None else np.asarray(nominal, dtype=np.int64)
    if codes.ndim != 2 or len(codes) != n:
        raise ParameterError("nominal must be an (n, q) array of integer codes with one row per point.")
    cardinalities = [int(c.max()) + 1 if len(c) else 0 for c in codes.T]
    labels = np.full(n, -1, dtype=np.int64)
    _run_group(points.T, codes.T, cardinalities, np.arange(n), k, labels, 0, use_index=use_index)
    return labels


# --- typed QIs ---------------------------------------------------------------------------------------------------


def types_from_contract(contract: DataContract) -> tuple[dict[str, str], dict[str, list[Any]]]:
    """The QI types and ordinal orders :func:`microaggregation` needs, read from a data contract.

    ``POSTCODE`` QIs are treated as nominal; ``DATE`` QIs are refused (declare them numerical, ordinal or
    generalise them first).
    """
    types: dict[str, str] = {}
    orders: dict[str, list[Any]] = {}
    for item in contract.fields:
        if item.role != ColumnRole.QUASI_IDENTIFIER:
            continue
        if item.statistical_type == StatisticalType.DATE:
            raise ContractError(
                f"Quasi-identifier '{item.name}' is a DATE; microaggregation needs NUMERICAL, ORDINAL or NOMINAL "
                "quasi-identifiers (declare it NUMERICAL, e.g. as a year, or generalise it first)."
            )
        if item.statistical_type == StatisticalType.POSTCODE:
            types[item.name] = "NOMINAL"
        else:
            types[item.name] = item.statistical_type.value
        if item.ordinal_values is not None:
            orders[item.name] = list(item.ordinal_values)
    return types, orders


def _resolve_types(
    data: pd.DataFrame,
    qis: tuple[str, ...],
    types: Mapping[str, str] | None,
    orders: Mapping[str, Sequence[Any]] | None,
) -> tuple[dict[str, str], dict[str, list[Any]]]:
    types = dict(types or {})
    resolved_orders: dict[str, list[Any]] = {name: list(values) for name, values in (orders or {}).items()}
    unknown = sorted(set(types) - set(qis)) + sorted(set(resolved_orders) - set(qis))
    if unknown:
        raise ParameterError(
            f"Types or orders given for columns that are not quasi-identifiers: {format_values(unknown)}."
        )
    resolved: dict[str, str] = {}
    for name in qis:
        column = data[name]
        if name in types:
            kind = str(types[name]).upper()
            if kind not in QI_TYPES:
                raise ParameterError(
                    f"Quasi-identifier '{name}': type {types[name]!r} is not one of {', '.join(QI_TYPES)}."
                )
        elif name in resolved_orders:
            kind = "ORDINAL"
        elif pd.api.types.is_numeric_dtype(column) and not pd.api.types.is_bool_dtype(column):
            kind = "NUMERICAL"
        else:
            kind = "NOMINAL"
        if kind == "ORDINAL" and name not in resolved_orders:
            if isinstance(column.dtype, pd.CategoricalDtype) and column.dtype.ordered:
                resolved_orders[name] = list(column.dtype.categories)
            else:
                raise ParameterError(f"Ordinal quasi-identifier '{name}' needs its order of values ('orders').")
        if kind != "ORDINAL" and name in resolved_orders:
            raise ParameterError(f"Quasi-identifier '{name}' has an order but is typed {kind}; type it ORDINAL.")
        if kind == "NUMERICAL" and not (
            pd.api.types.is_numeric_dtype(column) and not pd.api.types.is_bool_dtype(column)
        ):
            numbers = pd.to_numeric(column.dropna(), errors="coerce")
            if numbers.isna().any():
                bad = column.dropna()[numbers.isna()].unique()[:5]
                raise ColumnError(
                    f"Quasi-identifier '{name}' is NUMERICAL but holds non-numbers: {format_values(list(bad))}."
                )
        resolved[name] = kind
    return resolved, resolved_orders


def _numeric_values(column: pd.Series) -> np.ndarray:
    values = pd.to_numeric(column, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
    if np.isinf(values).any():
        raise ColumnError(
            f"Quasi-identifier '{column.name}' holds infinite values; microaggregation needs finite numbers."
        )
    return values


def _standardise(values: np.ndarray) -> np.ndarray:
    """z-scores over the non-missing values (population sd); missing and constant columns give 0."""
    present = ~np.isnan(values)
    out = np.zeros(len(values))
    if present.any():
        mean = values[present].mean()
        sd = values[present].std()
        if sd > 0:
            out[present] = (values[present] - mean) / sd
    return out


def _cluster_mean(labels: np.ndarray, values: np.ndarray, n_clusters: int) -> np.ndarray:
    present = ~np.isnan(values)
    sums = np.bincount(labels[present], weights=values[present], minlength=n_clusters)
    counts = np.bincount(labels[present], minlength=n_clusters)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = sums / counts
    return np.where(counts > 0, means, np.nan)


def _cluster_lower_median(labels: np.ndarray, codes: np.ndarray, n_clusters: int) -> np.ndarray:
    present = codes >= 0
    lab, cod = labels[present], codes[present].astype(np.int64)
    ranking = np.lexsort((cod, lab))
    counts = np.bincount(lab, minlength=n_clusters)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    out = np.full(n_clusters, -1, dtype=np.int64)
    has = counts > 0
    out[has] = cod[ranking][starts[has] + (counts[has] - 1) // 2]
    return out


def _cluster_mode(labels: np.ndarray, codes: np.ndarray, n_clusters: int) -> np.ndarray:
    present = codes >= 0
    lab, cod = labels[present], codes[present].astype(np.int64)
    out = np.full(n_clusters, -1, dtype=np.int64)
    if not len(lab):
        return out
    width = int(cod.max()) + 1
    pairs, counts = np.unique(lab * width + cod, return_counts=True)
    pair_label, pair_code = pairs // width, pairs % width
    ranking = np.lexsort((pair_code, -counts, pair_label))
    first = np.ones(len(ranking), dtype=bool)
    first[1:] = pair_label[ranking][1:] != pair_label[ranking][:-1]
    chosen = ranking[first]
    out[pair_label[chosen]] = pair_code[chosen]
    return out


def microaggregation(
    data: pd.DataFrame,
    /,
    *,
    quasi_identifiers: Sequence[str],
    k: int,
    types: Mapping[str, str] | None = None,
    orders: Mapping[str, Sequence[Any]] | None = None,
    decimals: int | None = None,
) -> TransformResult:
    """k-member microaggregation (MDAV) of ``quasi_identifiers``; see the module docstring for every rule.

    Parameters
    ----------
    data
        One row per person; not modified.
    quasi_identifiers
        The QI columns to microaggregate; other columns are returned unchanged.
    k
        Minimum number of records sharing each published QI combination (at least 2).
    types
        ``NUMERICAL``, ``ORDINAL`` or ``NOMINAL`` per QI. Default: ``ORDINAL`` when an order is given (or the
        column is an ordered categorical), ``NUMERICAL`` for numeric columns, else ``NOMINAL``.
    orders
        Declared order of each ordinal QI, lowest first.
    decimals
        Round the published cluster means to this many decimals, 0 to 15 (default: no rounding).

    Returns
    -------
    TransformResult
        Same rows in the same order; numerical QIs become float columns. ``summary`` holds ``k_achieved``
        (smallest class of the output, missing values as a value), the number of clusters and their sizes,
        ``records_pooled``, ``cells_changed`` per QI, ``cells_imputed`` and ``sse_sst`` (within-cluster sum of
        squares over the total, on the standardised numerical QIs; Domingo-Ferrer & Mateo-Sanz 2002's
        information loss, 0 = none). An empty table is returned unchanged.

    Raises
    ------
    ParameterError
        k < 2, more than zero but fewer than ``k`` rows, bad types or orders.
    ColumnError, ContractError
        Unknown columns, non-numbers in a numerical QI, values outside an ordinal order.
    """
    qis = check_columns(data, quasi_identifiers, role="quasi-identifier")
    k = check_positive_int(k, "k", minimum=2)
    if decimals is not None:
        decimals = check_positive_int(decimals, "decimals", minimum=0)
        if decimals > _MAX_DECIMALS:
            raise ParameterError(
                f"decimals must be at most {_MAX_DECIMALS} (a float keeps about 15 significant digits), got {decimals}."
            )
    kinds, resolved_orders = _resolve_types(data, qis, types, orders)
    step = Step(
        "microaggregation",
        {
            "quasi_identifiers": list(qis),
            "k": k,
            "types": kinds,
            "orders": resolved_orders,
            "decimals": decimals,
        },
    )
    n = len(data)
    if n == 0:
        return TransformResult(data.copy(), step, {"k": k, "k_achieved": 0, "clusters": 0, "records": 0})
    if n < k:
        raise ParameterError(f"The table has {n} rows, fewer than k = {k}: no cluster of k records can be formed.")

    numerical = [name for name in qis if kinds[name] == "NUMERICAL"]
    ordinal = [name for name in qis if kinds[name] == "ORDINAL"]
    nominal = [name for name in qis if kinds[name] == "NOMINAL"]
    values = {name: _numeric_values(data[name]) for name in numerical}
    z = {name: _standardise(values[name]) for name in numerical}
    encoded: dict[str, EncodedColumn] = {}
    for name in ordinal:
        encoded[name] = encode_column(data[name], order=resolved_orders[name])
    for name in nominal:
        encoded[name] = encode_column(data[name], sort=True)
    for name in ordinal:
        ranks = encoded[name].codes.astype(np.float64)
        ranks[ranks < 0] = np.nan
        z[name] = _standardise(ranks)

    # Groups: categorical values plus which numerical QIs are missing.
    keys = [encoded[name] for name in (*ordinal, *nominal)]
    for name in numerical:
        missing = np.isnan(values[name])
        if missing.any():
            keys.append(EncodedColumn(f"{name} missing", missing.astype(np.int8), pd.Index([False, True])))
    if keys:
        grouping = group_rows(keys)
        row_group, sizes = grouping.row_group.astype(np.int64), grouping.sizes
    else:
        row_group, sizes = np.zeros(n, dtype=np.int64), np.array([n])
    n_groups = len(sizes)
    large = sizes >= k
    pooled_count = int(sizes[~large].sum())
    if 0 < pooled_count < k:
        for group in np.lexsort((np.arange(n_groups), sizes)):
            if pooled_count >= k:
                break
            if large[group]:
                large[group] = False
                pooled_count += int(sizes[group])

    labels = np.full(n, -1, dtype=np.int64)
    next_label = 0
    by_group = np.argsort(row_group, kind="stable")
    bounds = np.concatenate([[0], np.cumsum(sizes)])
    num_matrix = np.vstack([z[name] for name in numerical]) if numerical else np.zeros((0, n))
    missing_numeric = (
        np.vstack([np.isnan(values[name]) for name in numerical]) if numerical else np.zeros((0, n), dtype=bool)
    )
    # Large groups with fewer than 2k records, or no numerical QI present, are a single cluster each.
    single = np.zeros(n_groups, dtype=bool)
    first_rows = by_group[bounds[:-1]]
    has_numeric = (~missing_numeric[:, first_rows]).any(axis=0) if numerical else np.zeros(n_groups, dtype=bool)
    single[large & ((sizes < 2 * k) | ~has_numeric)] = True
    group_label = np.full(n_groups, -1, dtype=np.int64)
    group_label[single] = np.arange(int(single.sum()))
    next_label = int(single.sum())
    in_single = single[row_group]
    labels[in_single] = group_label[row_group[in_single]]
    for group in np.flatnonzero(large & ~single):
        rows = by_group[bounds[group] : bounds[group + 1]]
        present = ~missing_numeric[:, rows[0]]
        next_label = _run_group(
            num_matrix[:, rows][present], np.zeros((0, len(rows)), np.int64), [], rows, k, labels, next_label
        )
    pooled_rows = np.flatnonzero(~large[row_group])
    if len(pooled_rows):
        coordinates = np.vstack([num_matrix[:, pooled_rows], *(z[name][pooled_rows][None, :] for name in ordinal)])
        codes = (
            np.vstack([encoded[name].codes[pooled_rows].astype(np.int64) for name in nominal])
            if nominal
            else np.zeros((0, len(pooled_rows)), np.int64)
        )
        cardinalities = [encoded[name].cardinality for name in nominal]
        next_label = _run_group(coordinates, codes, cardinalities, pooled_rows, k, labels, next_label)
    n_clusters = next_label

    output = data.copy()
    changed: dict[str, int] = {}
    imputed = 0
    sse = sst = 0.0
    for name in numerical:
        original = values[name]
        means = _cluster_mean(labels, original, n_clusters)
        published = means[labels]
        if decimals is not None:
            with np.errstate(over="ignore", invalid="ignore"):
                rounded = np.round(published, decimals)
            # Rounding multiplies by 10**decimals: a mean too large for that has no decimals to round anyway.
            published = np.where(np.isfinite(rounded) | ~np.isfinite(published), rounded, published)
        output[name] = pd.Series(published, index=data.index, name=name)
        was_missing = np.isnan(original)
        imputed += int((was_missing & ~np.isnan(published)).sum())
        both = ~was_missing & ~np.isnan(published)
        changed[name] = int((both & (published != original)).sum() + (was_missing != np.isnan(published)).sum())
        sd = original[~was_missing].std() if (~was_missing).any() else 0.0
        if sd > 0:
            sse += float((((published[both] - original[both]) / sd) ** 2).sum())
            sst += float(both.sum())
    for name in (*ordinal, *nominal):
        column = encoded[name]
        aggregate = _cluster_lower_median if name in ordinal else _cluster_mode
        cluster_codes = aggregate(labels, column.codes, n_clusters)
        new_codes = cluster_codes[labels]
        imputed += int(((column.codes < 0) & (new_codes >= 0)).sum())
        changed[name] = int((new_codes != column.codes).sum())
        output[name] = _decode_like(column, new_codes, data[name])

    check = equivalence_classes(output, qis)
    cluster_sizes = np.bincount(labels, minlength=n_clusters)
    summary = {
        "k": k,
        "k_achieved": check.k,
        "records": n,
        "clusters": n_clusters,
        "smallest_cluster": int(cluster_sizes.min()),
        "largest_cluster": int(cluster_sizes.max()),
        "groups_kept": int(large.sum()),
        "records_pooled": len(pooled_rows),
        "cells_changed": changed,
        "cells_imputed": imputed,
        "sse_sst": (sse / sst) if sst > 0 else None,
    }
    if check.k < k:  # the construction guarantees k; a failure here is a bug, never a result to publish
        raise AssertionError(f"microaggregation produced a class of {check.k} < k = {k} records")
    return TransformResult(output, step, summary)


def _decode_like(column: EncodedColumn, codes: np.ndarray, original: pd.Series) -> pd.Series:
    """Values for ``codes`` with the original column's dtype where it can hold them."""
    decoded = column.decode(codes)
    decoded.index = original.index
    try:
        return decoded.astype(original.dtype)
    except (TypeError, ValueError):
        return decoded


def microaggregate_with_contract(
    data: pd.DataFrame, contract: DataContract, *, k: int, decimals: int | None = None
) -> TransformResult:
    """:func:`microaggregation` over the contract's quasi-identifiers, typed as in the contract."""
    qis = contract.quasi_identifiers
    if not qis:
        raise ContractError(
            "The contract marks no column as a quasi-identifier (is_quasi_id); nothing to microaggregate."
        )
    contract.validate(data)
    types, orders = types_from_contract(contract)
    return microaggregation(data, quasi_identifiers=qis, k=k, types=types, orders=orders, decimals=decimals)


@register_step("microaggregation")
def _microaggregation_step(data: pd.DataFrame, /, **params: Any) -> TransformResult:
    return microaggregation(data, **params)


# Old names, kept for one release (a call warns with a DeprecationWarning).
microaggregate = deprecated_alias(microaggregation, "microaggregate")
