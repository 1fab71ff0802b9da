"""Which combinations of quasi-identifiers make records unique.

Two analyses over the subsets of the quasi-identifiers (QIs):

:func:`combination_risk`
    For every non-empty subset S of the QIs, the equivalence classes over S and their α-distinction and
    α-separation (Motwani & Xu 2007, "Efficient algorithms for masking and finding quasi-identifiers"), as ARX
    reports them in its quasi-identifier table (``risk/RiskModelAttributes.java``), plus k, the number of
    classes, sample uniques and records below a k threshold; and, per QI, how much uniqueness drops when that QI
    is left out of the full set.
:func:`minimal_sample_uniques`
    SUDA's minimal sample uniques (Elliot, Manning, Mayes, Gurd & Bane 2002, "SUDA: a program for detecting
    special uniques"; sdcMicro ``suda2``): for each record, the smallest QI subsets on which it is already unique.

Both encode every QI once (:func:`~privdash.measure.encoding.encode_columns`) and derive the grouping of each
subset from that of a subset with one QI fewer: ``key(S) = class(S - q) * radix(q) + code(q)``, re-densified to
class numbers with a :func:`numpy.bincount` lookup (small key space) or :func:`pandas.factorize` (large one).
Subsets are visited in increasing order of their bit mask, with the QIs on the bits sorted by ascending number
of distinct values and ``q`` the lowest bit of S; then the parent ``S - q`` is always on a stack of at most d
groupings, the key space of a child is at most (records x smallest radix in S), and every ``S - q'`` for
any ``q'`` in S has been visited before S (needed for the minimality test of MSUs).

Missing QI values
-----------------
``value`` (default)
    A missing value is one more category, in every subset (ARX's behaviour).
``drop``
    Records with a missing value in *any* of the selected QIs are left out once, for every subset, so that all
    subsets describe the same records (n is the same in every row of the table and adding a QI never lowers
    distinction or separation).
``wildcard``
    Not supported here: when a missing cell matches every value, classes overlap, so there is no class count
    for α-distinction; a :class:`~privdash.errors.ParameterError` says so.

Cost and limits
---------------
A table of d QIs has 2^d - 1 non-empty subsets. The analyses refuse more than ``max_quasi_identifiers`` QIs
(default 12, i.e. 4,095 subsets) with :class:`~privdash.errors.TooManyQuasiIdentifiersError`;
``max_subset_size`` limits the subsets to those of at most that many QIs. Time is about one pass over the
records per subset; memory is d integer arrays of one entry per record, plus for the MSU search one bit per
subset per record that is unique on the full set.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import combinations

import numpy as np
import pandas as pd

from privdash.errors import (
    ColumnError,
    ParameterError,
    TooManyQuasiIdentifiersError,
    check_columns,
    check_counts,
    check_positive_int,
)
from privdash.measure.classes import MissingPolicy
from privdash.measure.encoding import encode_columns

__all__ = [
    "DEFAULT_MAX_QUASI_IDENTIFIERS",
    "CombinationRisk",
    "MinimalSampleUniques",
    "combination_risk",
    "count_subsets",
    "minimal_sample_uniques",
    "suda_weight",
]

DEFAULT_MAX_QUASI_IDENTIFIERS = 12
# Beyond this many subsets the analysis would not finish in any useful time, whatever the cap says.
_MAX_SUBSETS = 1 << 20
# A key space up to this multiple of the record count is counted with bincount (a flat array that stays in
# cache for tables up to ~1e5 rows); larger ones are hashed with factorize.
_BINCOUNT_FACTOR = 8
_BINCOUNT_MIN = 1 << 16

TABLE_COLUMNS = (
    "quasi_identifiers",
    "size",
    "distinction",
    "separation",
    "k",
    "classes",
    "sample_uniques",
    "records_below_k",
)


# --- preparation ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class _Prepared:
    """QIs in data column order, their integer codes (missing shifted to a code of its own) and radices.

    ``order`` lists QI positions by ascending radix: bit ``b`` of a subset mask stands for QI ``order[b]``.
    """

    quasi_identifiers: tuple[str, ...]
    policy: MissingPolicy
    codes: tuple[np.ndarray, ...]
    radices: tuple[int, ...]
    order: tuple[int, ...]
    kept: np.ndarray | None
    n_input: int
    max_size: int
    #: Records per row when the table is an aggregate (one row per combination), else None (one record per row).
    weights: np.ndarray | None = None

    @property
    def rows(self) -> int:
        return len(self.codes[0])

    @property
    def n(self) -> int:
        """Records in scope."""
        return self.rows if self.weights is None else int(self.weights.sum())

    @property
    def d(self) -> int:
        return len(self.quasi_identifiers)

    def bit_codes(self) -> list[np.ndarray]:
        return [self.codes[i] for i in self.order]

    def bit_radices(self) -> list[int]:
        return [self.radices[i] for i in self.order]

    def names(self, mask: int) -> tuple[str, ...]:
        """The QIs of a subset mask, in data column order."""
        positions = sorted(self.order[b] for b in range(self.d) if mask >> b & 1)
        return tuple(self.quasi_identifiers[p] for p in positions)

    def mask_of(self, names: Sequence[str]) -> int:
        bit_of = {self.quasi_identifiers[p]: b for b, p in enumerate(self.order)}
        mask = 0
        for name in names:
            mask |= 1 << bit_of[name]
        return mask


def count_subsets(d: int, max_size: int) -> int:
    """Number of non-empty subsets of ``d`` QIs with at most ``max_size`` QIs."""
    return sum(math.comb(d, s) for s in range(1, min(max_size, d) + 1))


def _prepare(
    data: pd.DataFrame,
    quasi_identifiers: Sequence[str],
    missing: str | MissingPolicy,
    max_quasi_identifiers: int,
    max_subset_size: int | None,
    analysis: str,
    counts: str | None = None,
) -> _Prepared:
    if not isinstance(data, pd.DataFrame):
        raise ParameterError(f"The {analysis} needs a pandas DataFrame, got {type(data).__name__}.")
    if isinstance(quasi_identifiers, str):
        quasi_identifiers = [quasi_identifiers]
    names = check_columns(data, quasi_identifiers, role="quasi-identifier")
    policy = MissingPolicy.parse(missing)
    if policy == MissingPolicy.WILDCARD:
        raise ParameterError(
            f"The {analysis} supports missing='value' and missing='drop', not 'wildcard': when a missing cell "
            "matches every value the classes of a QI subset overlap, so they have no count for α-distinction "
            "and no single class per record. Use 'value' to treat missing as a category of its own, or 'drop' "
            "to leave out records with a missing QI."
        )
    cap = check_positive_int(max_quasi_identifiers, "max_quasi_identifiers")
    d = len(names)
    max_size = d if max_subset_size is None else min(check_positive_int(max_subset_size, "max_subset_size"), d)
    n_subsets = count_subsets(d, max_size)
    if d > cap or n_subsets > _MAX_SUBSETS:
        size_note = f" of at most {max_size} QIs" if max_size < d else ""
        if n_subsets > _MAX_SUBSETS:
            limit = f"at most {_MAX_SUBSETS:,} subsets can be analysed"
            hint = "Choose fewer quasi-identifiers or a smaller max_subset_size."
        else:
            limit = f"the limit is {cap} quasi-identifiers ({2**cap - 1:,} subsets)"
            hint = (
                f"Choose at most {cap} quasi-identifiers, or pass max_quasi_identifiers={d}"
                + ("" if max_size < d else " (with a small max_subset_size, e.g. 3, to keep the work down)")
                + " to accept the cost."
            )
        raise TooManyQuasiIdentifiersError(
            f"The {analysis} looks at every subset of the quasi-identifiers: {d} QIs give {n_subsets:,} "
            f"subsets{size_note}, and {limit}. {hint}"
        )
    positions = []
    for name in names:
        location = data.columns.get_loc(name)
        if not isinstance(location, int):
            raise ColumnError(f"Column '{name}' appears more than once in the table; give columns unique names.")
        positions.append(location)
    ordered = tuple(name for _, name in sorted(zip(positions, names, strict=True)))
    encoded = encode_columns(data, ordered)
    kept = None
    if policy == MissingPolicy.DROP:
        missing_any = np.zeros(len(data), dtype=bool)
        for column in encoded:
            if column.has_missing:
                missing_any |= column.missing
        if missing_any.any():
            kept = ~missing_any
    codes, radices = [], []
    for column in encoded:
        code = column.codes if kept is None else column.codes[kept]
        shift = int(column.has_missing and kept is None)
        # Missing (-1) becomes code 0 under 'value'; under 'drop' no missing code is left.
        codes.append(code.astype(np.int64) + shift)
        radices.append(max(column.cardinality + shift, 1))
    order = tuple(sorted(range(d), key=lambda i: (radices[i], i)))
    if counts is None:
        return _Prepared(ordered, policy, tuple(codes), tuple(radices), order, kept, len(data), max_size)
    weights = check_counts(data, counts)
    return _Prepared(
        ordered,
        policy,
        tuple(codes),
        tuple(radices),
        order,
        kept,
        int(weights.sum()),
        max_size,
        weights if kept is None else weights[kept],
    )


# --- enumeration ---------------------------------------------------------------------------------------------------


def _subset_masks(d: int, max_size: int) -> list[int]:
    """Non-empty subset masks of at most ``max_size`` bits, in increasing numeric order."""
    if max_size >= d:
        return list(range(1, 1 << d))
    masks = [sum(1 << b for b in combo) for size in range(1, max_size + 1) for combo in combinations(range(d), size)]
    return sorted(masks)


def _extend(
    parent: np.ndarray,
    parent_classes: int,
    code: np.ndarray,
    radix: int,
    densify: bool,
    weights: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, int]:
    """Classes of ``parent`` refined by one more column: (per-row key, counts per key, dense classes, J).

    ``counts[key[i]]`` is the size of row i's class (in records: with ``weights``, row i stands for ``weights[i]``
    records). With ``densify``, ``dense`` numbers the classes 0..J-1 (for further refinement); otherwise it is None.
    """
    n = len(code)
    space = parent_classes * radix
    key = parent * radix + code
    if space <= max(_BINCOUNT_MIN, _BINCOUNT_FACTOR * n):
        counts = _count(key, space, weights)
        if not densify:
            return key, counts, None, -1
        present = counts > 0
        lookup = np.cumsum(present) - 1
        classes = int(lookup[-1]) + 1 if space else 0
        return key, counts, lookup[key], classes
    dense, uniques = pd.factorize(key, sort=False)
    counts = _count(dense, len(uniques), weights)
    return dense, counts, dense, len(uniques)


def _count(key: np.ndarray, space: int, weights: np.ndarray | None) -> np.ndarray:
    """Records per key: rows, or the rows' weights summed (exact: integer weights, sums below 2^53)."""
    if weights is None:
        return np.bincount(key, minlength=space)
    return np.bincount(key, weights=weights, minlength=space).astype(np.int64)


def _walk(prepared: _Prepared, masks: Sequence[int]) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
    """Yield ``(mask, key, counts)`` for every subset mask, in the given (increasing) order.

    ``counts[key[i]]`` is the size of record i's class over the subset; ``counts`` may hold zeros.
    """
    codes, radices = prepared.bit_codes(), prepared.bit_radices()
    rows, max_size = prepared.rows, prepared.max_size
    stack: list[tuple[int, np.ndarray, int]] = [(0, np.zeros(rows, dtype=np.int64), 1 if rows else 0)]
    for mask in masks:
        low = mask & -mask
        bit = low.bit_length() - 1
        parent_mask = mask ^ low
        while stack[-1][0] != parent_mask:
            stack.pop()
        _, parent, parent_classes = stack[-1]
        # Only subsets with a free lower bit and room for one more QI are ever parents.
        densify = bit > 0 and mask.bit_count() < max_size
        key, counts, dense, classes = _extend(
            parent, parent_classes, codes[bit], radices[bit], densify, prepared.weights
        )
        yield mask, key, counts
        if densify:
            assert dense is not None
            stack.append((mask, dense, classes))


def _group(prepared: _Prepared, mask: int) -> tuple[np.ndarray, np.ndarray]:
    """``(key, counts)`` of one subset, computed directly (for subsets outside the enumeration)."""
    codes, radices = prepared.bit_codes(), prepared.bit_radices()
    rows, n = prepared.rows, prepared.n
    key = dense = np.zeros(rows, dtype=np.int64)
    classes = 1 if rows else 0
    counts = np.full(1, n, dtype=np.int64) if rows else np.zeros(0, dtype=np.int64)
    for bit in range(prepared.d):
        if mask >> bit & 1:
            key, counts, refined, classes = _extend(dense, classes, codes[bit], radices[bit], True, prepared.weights)
            assert refined is not None
            dense = refined
    return key, counts


@dataclass(frozen=True)
class _Stats:
    classes: int
    k: int
    sample_uniques: int
    pairs_within: int
    records_below: int


def _stats(counts: np.ndarray, k_threshold: int) -> _Stats:
    sizes = counts[counts > 0]
    if not len(sizes):
        return _Stats(0, 0, 0, 0, 0)
    return _Stats(
        classes=len(sizes),
        k=int(sizes.min()),
        sample_uniques=int(np.count_nonzero(sizes == 1)),
        pairs_within=int(np.dot(sizes, sizes - 1)),
        records_below=int(sizes[sizes < k_threshold].sum()),
    )


def _distinction(classes: int, n: int) -> float:
    return classes / n if n else 0.0


def _separation(pairs_within: int, n: int) -> float:
    # ordered pairs: n(n-1) in all, sum f(f-1) inside classes.
    total = n * (n - 1)
    return (total - pairs_within) / total if total else 0.0


# --- distinction and separation --------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class CombinationRisk:
    """Distinction, separation and uniqueness of every QI subset (see :func:`combination_risk`).

    Attributes
    ----------
    quasi_identifiers
        All QIs, in data column order.
    table
        One row per subset, columns ``quasi_identifiers`` (tuple of names in data column order), ``size``,
        ``distinction``, ``separation``, ``k``, ``classes``, ``sample_uniques``, ``records_below_k``; sorted
        as ARX sorts its quasi-identifier table (size, then distinction, then separation, then name).
    qi_contributions
        Per QI, the drop in sample uniques, distinction and separation when it is left out of the full set;
        columns ``quasi_identifier``, ``sample_uniques_without``, ``uniques_drop``, ``uniques_drop_share``,
        ``distinction_without``, ``distinction_drop``, ``separation_drop``; largest ``uniques_drop`` first.
    k_threshold
        The k of ``records_below_k``.
    n_records
        Records in scope (all rows except dropped ones).
    n_dropped
        Rows left out under ``missing='drop'``.
    missing_policy
        ``value`` or ``drop``.
    max_subset_size
        Largest subset size in ``table``.
    """

    quasi_identifiers: tuple[str, ...]
    table: pd.DataFrame
    qi_contributions: pd.DataFrame
    k_threshold: int
    n_records: int
    n_dropped: int
    missing_policy: MissingPolicy
    max_subset_size: int

    def of_size(self, size: int) -> pd.DataFrame:
        """The rows of subsets with exactly ``size`` QIs, in table order."""
        return self.table[self.table["size"] == size].reset_index(drop=True)

    def row(self, quasi_identifiers: Sequence[str]) -> pd.Series:
        """The row of one subset, given its QIs in any order."""
        if isinstance(quasi_identifiers, str):
            quasi_identifiers = [quasi_identifiers]
        wanted = set(quasi_identifiers)
        unknown = sorted(wanted - set(self.quasi_identifiers))
        if unknown or not wanted:
            raise ColumnError(
                f"Not a subset of the quasi-identifiers {', '.join(self.quasi_identifiers)}: "
                f"{', '.join(unknown) if unknown else 'empty set'}."
            )
        key = tuple(name for name in self.quasi_identifiers if name in wanted)
        hits = self.table.index[[names == key for names in self.table["quasi_identifiers"]]]
        if not len(hits):
            raise ParameterError(f"Subset {key} has {len(key)} QIs, more than max_subset_size={self.max_subset_size}.")
        return self.table.loc[hits[0]]


def combination_risk(
    data: pd.DataFrame,
    quasi_identifiers: Sequence[str],
    *,
    k_threshold: int = 5,
    missing: str | MissingPolicy = MissingPolicy.VALUE,
    max_quasi_identifiers: int = DEFAULT_MAX_QUASI_IDENTIFIERS,
    max_subset_size: int | None = None,
    counts: str | None = None,
) -> CombinationRisk:
    """Distinction, separation, k and uniques of every non-empty subset of the quasi-identifiers.

    For a subset S with classes of sizes f_1..f_J over n records (ARX ``RiskModelAttributes``, after Motwani &
    Xu 2007):

    * α-distinction = J / n, the fraction of records left when S is made a key by keeping one record per class;
    * α-separation = 1 - Σ_j C(f_j, 2) / C(n, 2), the fraction of unordered record pairs that differ on S. This
      is ARX's ``getAlphaSeparation`` (its loop over class sizes counts exactly the pairs in different classes
      and divides by (n-1)n/2);
    * ``k`` = min_j f_j, ``classes`` = J, ``sample_uniques`` = records in classes of size 1, ``records_below_k``
      = records in classes of size < ``k_threshold`` (strictly).

    Edge cases follow ARX, which reports a NaN distinction or separation as 0: an empty table has distinction
    and separation 0 (and k = 0); a table of one record has distinction 1 and separation 0.

    Parameters
    ----------
    data
        One row per person.
    quasi_identifiers
        The QIs (d of them); subsets name them in data column order, as ARX does.
    k_threshold
        The k of ``records_below_k``.
    missing
        ``"value"`` or ``"drop"`` (see the module docstring; ``"wildcard"`` is refused).
    max_quasi_identifiers
        Refuse more QIs than this (2^d - 1 subsets) with :class:`TooManyQuasiIdentifiersError`.
    max_subset_size
        Only subsets of at most this many QIs (default: all). The per-QI contributions always use the full set.
    counts
        ``data`` is an aggregate (one row per distinct combination of at least the QIs, as an engine returns it)
        and this column holds its number of records: every subset's classes are counted in records, so the result
        equals the analysis of the rows (the engines' seam for tables that do not fit in memory).

    Returns
    -------
    CombinationRisk
        ``table`` sorted by size, then distinction, then separation (both ascending, compared exactly as the
        integers J and Σ f_j(f_j - 1)), then the name ``[a, b]`` as ARX's ``compareTo``; and
        ``qi_contributions``.
    """
    threshold = check_positive_int(k_threshold, "k_threshold")
    prepared = _prepare(
        data, quasi_identifiers, missing, max_quasi_identifiers, max_subset_size, "QI-combination analysis", counts
    )
    n = prepared.n
    masks = _subset_masks(prepared.d, prepared.max_size)
    stats: dict[int, _Stats] = {}
    for mask, _, class_sizes in _walk(prepared, masks):
        stats[mask] = _stats(class_sizes, threshold)
    rows = []
    for mask in masks:
        s = stats[mask]
        names = prepared.names(mask)
        rows.append(
            (
                names,
                len(names),
                _distinction(s.classes, n),
                _separation(s.pairs_within, n),
                s.k,
                s.classes,
                s.sample_uniques,
                s.records_below,
                -s.pairs_within,
                "[" + ", ".join(map(str, names)) + "]",
            )
        )
    frame = pd.DataFrame(rows, columns=[*TABLE_COLUMNS, "_pairs", "_label"])
    # J and the within-class pair count order subsets exactly as distinction and separation do (same n).
    frame = frame.sort_values(["size", "classes", "_pairs", "_label"], kind="stable").reset_index(drop=True)
    table = frame.loc[:, list(TABLE_COLUMNS)]
    for column in ("size", "k", "classes", "sample_uniques", "records_below_k"):
        table[column] = table[column].astype(np.int64)
    contributions = _qi_contributions(prepared, stats, threshold)
    return CombinationRisk(
        quasi_identifiers=prepared.quasi_identifiers,
        table=table,
        qi_contributions=contributions,
        k_threshold=threshold,
        n_records=n,
        n_dropped=prepared.n_input - n,
        missing_policy=prepared.policy,
        max_subset_size=prepared.max_size,
    )


def _qi_contributions(prepared: _Prepared, stats: dict[int, _Stats], threshold: int) -> pd.DataFrame:
    n, d = prepared.n, prepared.d
    full = (1 << d) - 1

    def get(mask: int) -> _Stats:
        if mask not in stats:
            if mask == 0:
                # The empty set puts every record in one class.
                stats[mask] = _stats(np.array([n]), threshold) if n else _Stats(0, 0, 0, 0, 0)
            else:
                stats[mask] = _stats(_group(prepared, mask)[1], threshold)
        return stats[mask]

    whole = get(full)
    rows = []
    for name in prepared.quasi_identifiers:
        without = get(full ^ prepared.mask_of([name]))
        drop = whole.sample_uniques - without.sample_uniques
        rows.append(
            (
                name,
                without.sample_uniques,
                drop,
                drop / whole.sample_uniques if whole.sample_uniques else 0.0,
                _distinction(without.classes, n),
                _distinction(whole.classes, n) - _distinction(without.classes, n),
                _separation(whole.pairs_within, n) - _separation(without.pairs_within, n),
            )
        )
    frame = pd.DataFrame(
        rows,
        columns=[
            "quasi_identifier",
            "sample_uniques_without",
            "uniques_drop",
            "uniques_drop_share",
            "distinction_without",
            "distinction_drop",
            "separation_drop",
        ],
    )
    return frame.sort_values(["uniques_drop", "distinction_drop"], ascending=False, kind="stable").reset_index(
        drop=True
    )


# --- minimal sample uniques ------------------------------------------------------------------------------------------


def suda_weight(size: int, n_quasi_identifiers: int) -> float:
    """SUDA weight of one MSU of ``size`` QIs among ``n_quasi_identifiers``: (max(d, 3) - size)!.

    This is sdcMicro ``suda2``'s score weight with ``original_scores=TRUE`` (the default since sdcMicro 5.0.2,
    after Elliot et al. 2002): ``g_ab[i] = Π_{j=i+1}^{d-1} (d - j) = (d - i - 1)!`` for an MSU of i + 1
    variables (``src/Suda2.h``). ``suda2`` pads a key of one or two variables with constant dummy columns to
    three, which changes d but never the MSUs; max(d, 3) reproduces that.
    """
    return float(math.factorial(max(n_quasi_identifiers, 3) - size))


@dataclass(frozen=True, eq=False)
class MinimalSampleUniques:
    """Minimal sample uniques of every record (see :func:`minimal_sample_uniques`).

    Per-row arrays have one entry per input row, in input order (0 for rows that are not unique on the full QI
    set and for dropped rows).

    Attributes
    ----------
    quasi_identifiers
        All QIs, in data column order.
    msus
        One row per MSU: ``row`` (position of the record in the input), ``quasi_identifiers`` (tuple in data
        column order), ``size``; sorted by row, then size, then subset.
    unique
        Per row: unique on the full QI set.
    msu_count
        Per row: number of MSUs.
    smallest_msu
        Per row: size of the smallest MSU (0 when there is none).
    suda_score
        Per row: Σ over its MSUs of :func:`suda_weight` (sdcMicro ``suda2`` ``score``).
    index
        The input's row labels.
    n_records
        Records in scope.
    n_dropped
        Rows left out under ``missing='drop'``.
    missing_policy
        ``value`` or ``drop``.
    max_subset_size
        Largest MSU size searched.
    """

    quasi_identifiers: tuple[str, ...]
    msus: pd.DataFrame
    unique: np.ndarray
    msu_count: np.ndarray
    smallest_msu: np.ndarray
    suda_score: np.ndarray
    index: pd.Index
    n_records: int
    n_dropped: int
    missing_policy: MissingPolicy
    max_subset_size: int

    @property
    def n_unique(self) -> int:
        """Records unique on the full QI set."""
        return int(self.unique.sum())

    @property
    def n_msus(self) -> int:
        """Number of MSUs over all records."""
        return len(self.msus)

    @property
    def records_without_msu(self) -> int:
        """Records unique on the full set without an MSU of at most ``max_subset_size`` QIs.

        Always 0 when every subset size was searched.
        """
        return int((self.unique & (self.msu_count == 0)).sum())

    def msus_of(self, row: int) -> list[tuple[str, ...]]:
        """The MSUs of the record at input position ``row``, smallest first."""
        if not 0 <= row < len(self.unique):
            raise ParameterError(f"Row {row} is outside the table of {len(self.unique)} rows.")
        lo, hi = np.searchsorted(self.msus["row"].to_numpy(), [row, row + 1])
        return list(self.msus["quasi_identifiers"].iloc[lo:hi])

    def per_record(self) -> pd.DataFrame:
        """One row per input row (input index): ``unique``, ``msu_count``, ``smallest_msu``, ``suda_score`` and
        ``msus``, the record's MSUs as a tuple of QI tuples, smallest first (empty for records without MSUs)."""
        msus = np.empty(len(self.unique), dtype=object)
        msus.fill(())
        grouped = self.msus.groupby("row", sort=True)["quasi_identifiers"].agg(tuple)
        msus[grouped.index.to_numpy()] = grouped.to_numpy()
        return pd.DataFrame(
            {
                "unique": self.unique,
                "msu_count": self.msu_count,
                "smallest_msu": self.smallest_msu,
                "suda_score": self.suda_score,
                "msus": msus,
            },
            index=self.index,
        )

    def counts_by_size(self) -> pd.DataFrame:
        """Per MSU size 1..``max_subset_size``: ``msus`` (number of MSUs of that size) and ``records`` (records
        whose smallest MSU has that size)."""
        sizes = np.arange(1, self.max_subset_size + 1)
        msus = np.bincount(self.msus["size"].to_numpy(), minlength=self.max_subset_size + 1)[1:]
        records = np.bincount(self.smallest_msu, minlength=self.max_subset_size + 1)[1:]
        return pd.DataFrame({"size": sizes, "msus": msus.astype(np.int64), "records": records.astype(np.int64)})

    def attribute_contributions(self) -> pd.DataFrame:
        """Per QI: ``msus`` (MSUs containing it), ``msu_share`` (that over all MSUs) and ``suda_contribution``.

        ``suda_contribution`` is sdcMicro ``suda2``'s ``attribute_contributions``: 100 x Σ over MSUs containing
        the QI of :func:`suda_weight` / Σ of all records' SUDA scores, i.e. the share of the total SUDA score
        carried by MSUs that use the QI. An MSU of several QIs counts for each of them, so the percentages sum
        to more than 100. Both shares are NaN when there is no MSU (sdcMicro: 0/0). The numbers equal
        ``suda2``'s except when two QIs split the records identically (a one-to-one mapping between their
        values): ``suda2`` then handles the twin MSUs through "correlated items" and credits their weight
        unevenly (often all to one of the two), although the two QIs play symmetric parts; here each MSU
        credits each of its own QIs.
        """
        d = len(self.quasi_identifiers)
        weights = np.array([suda_weight(s, d) for s in range(d + 1)])
        sizes = self.msus["size"].to_numpy()
        total_weight = float(weights[sizes].sum())
        rows = []
        for name in self.quasi_identifiers:
            has = np.fromiter((name in msu for msu in self.msus["quasi_identifiers"]), dtype=bool, count=len(sizes))
            count = int(has.sum())
            rows.append(
                (
                    name,
                    count,
                    count / len(sizes) if len(sizes) else float("nan"),
                    100.0 * float(weights[sizes[has]].sum()) / total_weight if total_weight else float("nan"),
                )
            )
        return pd.DataFrame(rows, columns=["quasi_identifier", "msus", "msu_share", "suda_contribution"])


def minimal_sample_uniques(
    data: pd.DataFrame,
    quasi_identifiers: Sequence[str],
    *,
    missing: str | MissingPolicy = MissingPolicy.VALUE,
    max_quasi_identifiers: int = DEFAULT_MAX_QUASI_IDENTIFIERS,
    max_subset_size: int | None = None,
) -> MinimalSampleUniques:
    """SUDA minimal sample uniques (MSUs) of every record.

    A record is *unique* on a QI subset S when no other record shares its values on S. An MSU of the record is
    a non-empty S on which it is unique while it is unique on no S minus one QI (hence on no proper subset, since
    uniqueness only grows with S) — Elliot et al. 2002, and sdcMicro ``suda2`` (Manning, Haglin & Keane 2008).
    Only records unique on the full QI set have MSUs, and each of them has at least one when every subset size
    is searched. The empty set is never an MSU: in a table of one record, each single QI is one (as in
    ``suda2``).

    The SUDA score of a record is Σ over its MSUs of :func:`suda_weight` ``(max(d, 3) - size)!``, sdcMicro
    ``suda2``'s ``score`` (``original_scores=TRUE``). It equals sdcMicro's when ``max_subset_size`` is not set
    and no QI value is missing; ``suda2`` never lets a record's own missing cell enter an MSU while it treats
    other records' missing cells as a value, whereas here ``value`` treats every missing cell as a category and
    ``drop`` leaves such records out. sdcMicro's DIS-SUDA score is not computed: the number of sample uniques it
    uses there is in fact the number of records alone in a 16-bit hash bucket of their R-coded values (536
    instead of 14,021 on Adult with 8 QIs), which depends on the coding rather than on the data.

    Parameters
    ----------
    data
        One row per person.
    quasi_identifiers
        The QIs (d of them).
    missing
        ``"value"`` or ``"drop"`` (see the module docstring; ``"wildcard"`` is refused).
    max_quasi_identifiers
        Refuse more QIs than this with :class:`TooManyQuasiIdentifiersError`.
    max_subset_size
        Only MSUs of at most this many QIs (default: all). Unique records whose MSUs are all larger then have
        none (see :attr:`MinimalSampleUniques.records_without_msu`), and scores count only the MSUs found.

    Returns
    -------
    MinimalSampleUniques
    """
    prepared = _prepare(data, quasi_identifiers, missing, max_quasi_identifiers, max_subset_size, "MSU search")
    n, d = prepared.n, prepared.d
    full_key, full_counts = _group(prepared, (1 << d) - 1)
    candidates = np.flatnonzero(full_counts[full_key] == 1) if n else np.zeros(0, dtype=np.int64)
    u = len(candidates)
    masks = _subset_masks(d, prepared.max_size)
    unique_bits: dict[int, np.ndarray] = {}
    empty = np.zeros((u + 7) // 8, dtype=np.uint8)
    found_rows: list[np.ndarray] = []
    found_masks: list[np.ndarray] = []
    if u:
        for mask, key, counts in _walk(prepared, masks):
            bits = np.packbits(counts[key[candidates]] == 1)
            if mask.bit_count() < prepared.max_size:
                unique_bits[mask] = bits
            if not bits.any():
                continue
            covered = empty
            rest = mask
            while rest:
                low = rest & -rest
                if mask != low:
                    covered = covered | unique_bits[mask ^ low]
                rest ^= low
            minimal = np.flatnonzero(np.unpackbits(bits & ~covered, count=u))
            if len(minimal):
                found_rows.append(minimal)
                found_masks.append(np.full(len(minimal), mask, dtype=np.int64))
    local = np.concatenate(found_rows) if found_rows else np.zeros(0, dtype=np.int64)
    mask_of_msu = np.concatenate(found_masks) if found_masks else np.zeros(0, dtype=np.int64)
    # Positions in the input (dropped rows shifted out under 'drop').
    kept_positions = np.flatnonzero(prepared.kept) if prepared.kept is not None else np.arange(n)
    rows = kept_positions[candidates[local]]
    distinct_masks, inverse = np.unique(mask_of_msu, return_inverse=True)
    mask_list = [int(m) for m in distinct_masks]
    label_of = np.empty(len(mask_list), dtype=object)
    for i, mask in enumerate(mask_list):
        label_of[i] = prepared.names(mask)
    size_of = np.array([m.bit_count() for m in mask_list], dtype=np.int64)
    # Within a record: smaller MSUs first, then by QI names.
    rank = np.empty(len(mask_list), dtype=np.int64)
    by_name = sorted(range(len(mask_list)), key=lambda i: (size_of[i], tuple(map(str, label_of[i]))))
    rank[by_name] = np.arange(len(mask_list))
    order = np.lexsort((rank[inverse], rows))
    msu_sizes = size_of[inverse][order]
    msus = pd.DataFrame(
        {"row": rows[order].astype(np.int64), "quasi_identifiers": label_of[inverse][order], "size": msu_sizes}
    )
    total = prepared.n_input
    unique = np.zeros(total, dtype=bool)
    unique[kept_positions[candidates]] = True
    msu_count = np.bincount(rows, minlength=total).astype(np.int64)
    smallest = np.zeros(total, dtype=np.int64)
    if len(rows):
        first = np.r_[True, msus["row"].to_numpy()[1:] != msus["row"].to_numpy()[:-1]]
        smallest[msus["row"].to_numpy()[first]] = msus["size"].to_numpy()[first]
    weights = np.array([suda_weight(s, d) for s in range(d + 1)])
    score = np.bincount(msus["row"].to_numpy(), weights=weights[msu_sizes], minlength=total)
    return MinimalSampleUniques(
        quasi_identifiers=prepared.quasi_identifiers,
        msus=msus,
        unique=unique,
        msu_count=msu_count,
        smallest_msu=smallest,
        suda_score=score,
        index=data.index,
        n_records=n,
        n_dropped=total - n,
        missing_policy=prepared.policy,
        max_subset_size=prepared.max_size,
    )
