"""Privacy models over equivalence classes: k-anonymity, (alpha,k)-anonymity, l-diversity, t-closeness,
delta-disclosure privacy and beta-likeness.

Every model reads only the compact :class:`~privdash.measure.classes.EquivalenceClasses` summary: the class sizes
``f_j`` and, per sensitive attribute (SA), its :class:`~privdash.measure.classes.SensitiveDistribution` (sparse
per-class counts and the counts over all records in scope). Raw rows are never touched. Each model returns a frozen
result with the dataset value, an array of per-class values aligned with the classes, and ``satisfies`` /
``violating_classes`` / ``violating_records`` helpers that apply the model's documented threshold comparison.

Semantics follow ARX (``org.deidentifier.arx.criteria``); where pyCANON differs the function says so.

Notation: class ``j`` has size ``f_j``; the SA has ``m`` distinct values over all records in scope with counts
``n_i`` (``N = sum n_i``) and relative frequencies ``p_i = n_i / N`` (the reference distribution: the whole table in
scope, as ARX without a research subset); inside class ``j`` value ``i`` occurs ``c_ji`` times, ``q_ji = c_ji / f_j``.
Frequency differences are computed from exact integer numerators (``c N - n f``), so a class whose distribution
equals the table's gives exactly 0.

Missing values
--------------
A missing SA value is one more SA value (``(missing)``, see :mod:`privdash.measure.classes`). Under the
``wildcard`` policy the class distributions are already taken over the records compatible with the class pattern, and
the class size ``f_j`` is ``classes.sizes`` (the number of compatible records), so nothing else changes here; the
reference distribution ``p`` stays the distribution over records. Under ``drop`` the dropped records are in no class
and in no reference distribution. ``violating_records`` counts ``classes.counts`` (records whose own class fails).

People with several rows
------------------------
For person-level classes (:mod:`privdash.measure.entities`) each person contributes each of their distinct SA
values once: ``c_ji`` counts the people of class ``j`` with value ``i``, and ``f_j`` in the frequencies is the class's
number of (person, value) pairs (the total of its distribution), while k and (alpha,k)'s k count people.

Several sensitive attributes
----------------------------
Each SA is evaluated separately, as ARX does (one criterion per SA). :func:`worst_of` and
:func:`all_sensitive_models` combine them into the worst value per class and over the dataset.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from privdash.choices import Choice
from privdash.errors import ColumnError, ParameterError, check_positive_int, check_threshold
from privdash.measure.classes import MISSING_LABEL, EquivalenceClasses, SensitiveDistribution

__all__ = [
    "AlphaKResult",
    "Comparison",
    "DeltaDisclosureResult",
    "EntropyDiversityResult",
    "EntropyEstimator",
    "ModelResult",
    "MultiSensitiveModels",
    "RecursiveDiversityResult",
    "SensitiveModels",
    "TClosenessResult",
    "TDistance",
    "all_sensitive_models",
    "alpha_k_anonymity",
    "basic_beta_likeness",
    "delta_disclosure",
    "distinct_l_diversity",
    "enhanced_beta_likeness",
    "entropy_l_diversity",
    "grassberger",
    "k_anonymity",
    "recursive_cl_diversity",
    "sensitive_models",
    "t_closeness",
    "worst_of",
]

#: Cells of one dense ``(classes, values)`` block for the ordered and hierarchical distances (int64: 8 MiB).
BLOCK_CELLS = 1 << 20

# Entropy is compared in the log domain by ARX; exp(H) of a uniform class over l values can land a rounding error
# below l, so the l-diversity thresholds tolerate this relative error.
_ENTROPY_RTOL = 1e-12


class Comparison(Choice, label="comparison"):
    """How a class value is compared with a user threshold for the class to satisfy the model."""

    AT_LEAST = ">="
    AT_MOST = "<="
    BELOW = "<"


class TDistance(Choice, label="t-closeness distance"):
    """Ground distance of the earth mover's distance in t-closeness."""

    EQUAL = "equal"
    ORDERED = "ordered"
    HIERARCHICAL = "hierarchical"


class EntropyEstimator(Choice, label="entropy estimator"):
    """Entropy estimator of entropy l-diversity (ARX ``EntropyLDiversity.EntropyEstimator``)."""

    SHANNON = "shannon"
    GRASSBERGER = "grassberger"


# --- results -----------------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class ModelResult:
    """The value of one privacy model over a table and over each of its classes.

    Attributes
    ----------
    model
        Name of the model, e.g. ``"distinct l-diversity"``.
    attribute
        The sensitive attribute it was evaluated on (None for k-anonymity; several names joined by ``", "`` for a
        combination made by :func:`worst_of`).
    value
        The dataset value: the worst class value (minimum for ``>=`` models, maximum for ``<=`` and ``<`` models).
    per_class
        Value of each class, aligned with the classes of the :class:`EquivalenceClasses` it came from.
    comparison
        A class satisfies the model for threshold ``target`` iff ``per_class <comparison> target``.
    counts
        Records whose own class is each class (``classes.counts``), for :meth:`violating_records`.
    """

    model: str
    attribute: str | None
    value: float
    per_class: np.ndarray
    comparison: Comparison
    counts: np.ndarray

    def _check_target(self, target: float) -> float:
        return check_threshold(target, f"The {self.model} threshold")

    def class_satisfies(self, target: float) -> np.ndarray:
        """Boolean array: which classes satisfy the model for ``target`` (comparison per :attr:`comparison`)."""
        target = self._check_target(target)
        values = self.per_class
        if self.comparison == Comparison.AT_LEAST:
            return np.asarray(values >= target)
        if self.comparison == Comparison.AT_MOST:
            return np.asarray(values <= target)
        return np.asarray(values < target)

    def satisfies(self, target: float) -> bool:
        """True iff every class satisfies the model for ``target``."""
        return bool(self.class_satisfies(target).all())

    def violating_classes(self, target: float) -> np.ndarray:
        """Indices of the classes that do not satisfy the model for ``target``."""
        return np.flatnonzero(~self.class_satisfies(target))

    def violating_records(self, target: float) -> int:
        """Number of records whose class does not satisfy the model for ``target``."""
        return int(self.counts[~self.class_satisfies(target)].sum())


@dataclass(frozen=True, eq=False)
class AlphaKResult(ModelResult):
    """(alpha,k)-anonymity (Wong et al. 2006): ``value`` is alpha, the largest relative frequency of any sensitive
    value in any class; ``per_class`` is each class's largest relative frequency; ``k`` is the smallest class size.

    A class satisfies (alpha, k) iff its largest relative frequency is ``<= alpha`` and its size is ``>= k``.
    """

    k: int = 0
    sizes: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))

    def class_satisfies(self, target: float, *, k: int | None = None) -> np.ndarray:
        """Classes with largest relative frequency ``<= target`` (alpha) and, when ``k`` is given, size ``>= k``."""
        ok = super().class_satisfies(target)
        if k is not None:
            ok &= self.sizes >= check_positive_int(k, "k")
        return ok

    def satisfies(self, target: float, *, k: int | None = None) -> bool:
        """True iff every class satisfies (alpha = ``target``, ``k``)."""
        return bool(self.class_satisfies(target, k=k).all())

    def violating_classes(self, target: float, *, k: int | None = None) -> np.ndarray:
        return np.flatnonzero(~self.class_satisfies(target, k=k))

    def violating_records(self, target: float, *, k: int | None = None) -> int:
        return int(self.counts[~self.class_satisfies(target, k=k)].sum())


@dataclass(frozen=True, eq=False)
class EntropyDiversityResult(ModelResult):
    """Entropy l-diversity; ``entropy`` holds each class's estimated entropy (natural log).

    ``per_class`` is the largest l the class satisfies: ``min(exp(entropy), distinct values)``. A class satisfies l
    iff ``per_class >= l`` (up to a relative rounding error of 1e-12, because exp(ln l) need not be exactly l).
    """

    estimator: EntropyEstimator = EntropyEstimator.SHANNON
    entropy: np.ndarray = field(default_factory=lambda: np.zeros(0))

    def class_satisfies(self, target: float) -> np.ndarray:
        target = self._check_target(target)
        return np.asarray(self.per_class >= target * (1 - _ENTROPY_RTOL))


@dataclass(frozen=True, eq=False)
class RecursiveDiversityResult(ModelResult):
    """Recursive (c,l)-diversity for a fixed ``l``.

    With the counts of a class sorted descending ``r_1 >= r_2 >= ... >= r_d``, the class satisfies (c, l) iff
    ``r_1 < c * (r_l + ... + r_d)`` (strict, Machanavajjhala et al. 2007; ARX ``RecursiveCLDiversity``). A class
    with fewer than ``l`` distinct values satisfies no c.

    ``per_class`` is the threshold ``r_1 / tail`` (``inf`` when ``d < l``): the class satisfies exactly the c
    strictly above it. ``per_class_c`` is the smallest integer c that works, ``floor(r_1 / tail) + 1``, and ``c``
    its maximum over classes (the smallest integer c for the dataset); ``value`` is the largest threshold.
    """

    l: int = 2  # noqa: E741  (the model's parameter is called l)
    largest: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    tail: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    per_class_c: np.ndarray = field(default_factory=lambda: np.zeros(0))
    c: float = math.inf

    def class_satisfies(self, target: float) -> np.ndarray:
        """Classes with ``r_1 < target * tail`` (a class with fewer than l distinct values never satisfies)."""
        target = self._check_target(target)
        return np.asarray((self.tail > 0) & (self.largest < target * self.tail))


@dataclass(frozen=True, eq=False)
class TClosenessResult(ModelResult):
    """t-closeness: ``per_class`` is the earth mover's distance between the class's and the table's distribution
    under ground distance ``distance``; a class satisfies t iff its distance is ``<= t`` (ARX)."""

    distance: TDistance = TDistance.EQUAL


@dataclass(frozen=True, eq=False)
class DeltaDisclosureResult(ModelResult):
    """delta-disclosure privacy: ``per_class`` is ``max |log_base(q_i / p_i)|`` over the values present in the
    class; a class satisfies delta iff that is ``< delta`` (strict, ARX)."""

    base: float = 2.0


# --- preparation -------------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class _Sparse:
    """The distribution of one SA as sparse entries, with per-entry class sizes and table counts."""

    dist: SensitiveDistribution
    sizes: np.ndarray  # f_j per class
    total: int  # N
    starts: np.ndarray  # first entry of each class
    cls: np.ndarray  # class of each entry
    count: np.ndarray  # c_ji of each entry
    overall: np.ndarray  # n_i of each entry
    size: np.ndarray  # f_j of each entry

    def difference(self) -> np.ndarray:
        """``(q - p) * f * N = c N - n f`` of each entry, exactly (int64)."""
        return self.count * self.total - self.overall * self.size


def _distribution(classes: EquivalenceClasses, name: str) -> SensitiveDistribution:
    if name not in classes.sensitive:
        available = ", ".join(repr(n) for n in classes.sensitive) or "none"
        raise ColumnError(
            f"'{name}' is not a sensitive attribute of these classes (available: {available}); "
            "pass it in sensitive= when building the equivalence classes."
        )
    if classes.n_classes == 0:
        raise ParameterError("No records are in scope (the table is empty or every row was dropped).")
    return classes.sensitive[name]


def _sparse(classes: EquivalenceClasses, name: str) -> _Sparse:
    dist = _distribution(classes, name)
    # The denominators are the class totals of the distribution: the class sizes, except for person-level classes
    # (privdash.measure.entities), whose distributions count (person, value) pairs.
    sizes = dist.class_totals()
    total = int(dist.overall.sum())
    if total > 2**31:
        # c*N and n*f must fit in int64; beyond 2^31 records the exact numerators could overflow.
        raise ParameterError(f"The privacy models support at most 2^31 records in scope, got {total:,}.")
    cls = np.asarray(dist.class_index, dtype=np.int64)
    count = np.asarray(dist.counts, dtype=np.int64)
    overall = np.asarray(dist.overall, dtype=np.int64)[dist.value_index]
    return _Sparse(dist, sizes, total, dist.class_starts, cls, count, overall, sizes[cls])


def _per_class_max(sparse: _Sparse, values: np.ndarray) -> np.ndarray:
    """Maximum of entry ``values`` within each class (every class has at least one entry)."""
    return np.maximum.reduceat(values, sparse.starts)


def _result_value(per_class: np.ndarray, comparison: Comparison) -> float:
    worst = per_class.min() if comparison == Comparison.AT_LEAST else per_class.max()
    return int(worst) if np.issubdtype(per_class.dtype, np.integer) else float(worst)


# --- k-anonymity and (alpha,k)-anonymity ------------------------------------------------------------------------


def k_anonymity(classes: EquivalenceClasses) -> ModelResult:
    """k-anonymity: ``per_class`` is the class size ``f_j``, ``value`` the smallest one (Sweeney 2002).

    A class satisfies k iff ``f_j >= k`` (ARX ``KAnonymity``). Under ``wildcard`` the sizes are the numbers of
    compatible records (``classes.sizes``). Raises :class:`ParameterError` when no records are in scope.
    """
    if classes.n_classes == 0:
        raise ParameterError("No records are in scope (the table is empty or every row was dropped).")
    sizes = np.asarray(classes.sizes, dtype=np.int64)
    return ModelResult("k-anonymity", None, int(sizes.min()), sizes, Comparison.AT_LEAST, classes.counts)


def alpha_k_anonymity(classes: EquivalenceClasses, name: str) -> AlphaKResult:
    """(alpha,k)-anonymity (Wong, Li, Fu, Wang, KDD 2006): alpha = ``max_j max_i q_ji``, k = ``min_j f_j``.

    ``per_class`` is each class's largest relative frequency ``max_i c_ji / f_j``; a class satisfies alpha iff it
    is ``<= alpha`` (non-strict, as the definition; same value as pyCANON ``alpha_k_anonymity``).
    """
    sparse = _sparse(classes, name)
    per_class = _per_class_max(sparse, sparse.count) / sparse.sizes
    return AlphaKResult(
        "(alpha,k)-anonymity",
        name,
        _result_value(per_class, Comparison.AT_MOST),
        per_class,
        Comparison.AT_MOST,
        classes.counts,
        k=int(classes.sizes.min()),
        sizes=np.asarray(classes.sizes, dtype=np.int64),
    )


# --- l-diversity -------------------------------------------------------------------------------------------------


def distinct_l_diversity(classes: EquivalenceClasses, name: str) -> ModelResult:
    """Distinct l-diversity: ``per_class`` is the number of distinct SA values in the class, ``value`` the minimum.

    A class satisfies l iff it has ``>= l`` distinct values (ARX ``DistinctLDiversity``; pyCANON ``l_diversity``
    agrees). A missing SA value counts as one value.
    """
    dist = _distribution(classes, name)
    per_class = np.asarray(dist.distinct_values(), dtype=np.int64)
    return ModelResult(
        "distinct l-diversity",
        name,
        int(per_class.min()),
        per_class,
        Comparison.AT_LEAST,
        classes.counts,
    )


def grassberger(n: np.ndarray | int) -> np.ndarray:
    """Grassberger's (1988/2003) correction ``G(n)`` of ``ln n`` for entropy estimation from counts.

    ``G(2m) = G(2m + 1) = -gamma - ln 2 + sum_{k=1}^{m} 2 / (2k - 1)``, as ARX ``EntropyLDiversity`` (which
    tabulates it). Computed for any ``n >= 1`` in closed form: with harmonic numbers ``H_k = psi(k + 1) + gamma``,
    ``sum_{k<=m} 1/(2k - 1) = H_{2m} - H_m / 2``, so ``G(n) = 2 psi(2m + 1) - psi(m + 1) - ln 2`` with
    ``m = floor(n / 2)``. ``G(1) = -gamma - ln 2``; ``G(n) - ln n -> 0`` as ``n`` grows.
    """
    from scipy.special import digamma  # imported on use: scipy adds ~0.15 s to start-up

    values = np.asarray(n)
    if values.size and (values < 1).any():
        raise ParameterError("Grassberger's G(n) is defined for counts n >= 1.")
    half = np.floor_divide(values, 2).astype(np.float64)
    return np.asarray(2.0 * digamma(2.0 * half + 1.0) - digamma(half + 1.0) - math.log(2.0))


def entropy_l_diversity(
    classes: EquivalenceClasses, name: str, *, estimator: str | EntropyEstimator = EntropyEstimator.SHANNON
) -> EntropyDiversityResult:
    """Entropy l-diversity (Machanavajjhala et al. 2007), real-valued, natural log.

    Per class the entropy is estimated from the counts ``c_i`` (``f = sum c_i``) as
    ``H = psi(f) - (1/f) sum_i c_i psi(c_i)`` with ``psi = ln`` (``"shannon"``, default: the plug-in entropy
    ``-sum q_i ln q_i``) or ``psi = G`` (``"grassberger"``, see :func:`grassberger`), exactly as ARX
    ``EntropyLDiversity``. ARX passes a class for l iff it has at least ``ceil(l)`` distinct values and
    ``H >= ln l``, so the largest l a class satisfies is ``per_class = min(exp(H), distinct values)`` (for Shannon
    ``exp(H)`` never exceeds the distinct count; Grassberger's can). ``value`` is the minimum over classes.

    pyCANON ``entropy_l_diversity`` returns ``int(min_j exp(H_j))``, i.e. the Shannon value **floored** to an
    integer. A class with a single value has ``H = 0`` and l = 1.
    """
    method = EntropyEstimator.parse(estimator)
    sparse = _sparse(classes, name)
    count = sparse.count.astype(np.float64)
    if method == EntropyEstimator.SHANNON:
        psi_counts, psi_sizes = np.log(count), np.log(sparse.sizes.astype(np.float64))
    else:
        psi_counts, psi_sizes = grassberger(sparse.count), grassberger(sparse.sizes)
    weighted = np.bincount(sparse.cls, weights=count * psi_counts, minlength=classes.n_classes)
    entropy = psi_sizes - weighted / sparse.sizes
    if method == EntropyEstimator.SHANNON:
        # A class with one value has entropy 0 exactly; rounding may leave -1e-16.
        entropy = np.maximum(entropy, 0.0)
    distinct = sparse.dist.distinct_values()
    per_class = np.minimum(np.exp(entropy), distinct)
    return EntropyDiversityResult(
        f"entropy l-diversity ({method.value})",
        name,
        float(per_class.min()),
        per_class,
        Comparison.AT_LEAST,
        classes.counts,
        estimator=method,
        entropy=entropy,
    )


def recursive_cl_diversity(classes: EquivalenceClasses, name: str, *, l: int = 2) -> RecursiveDiversityResult:  # noqa: E741
    """Recursive (c,l)-diversity for a given ``l`` (Machanavajjhala et al. 2007; ARX ``RecursiveCLDiversity``).

    Per class, with counts sorted descending ``r_1 >= ... >= r_d`` and ``tail = r_l + ... + r_d``, the class
    satisfies c iff ``r_1 < c * tail`` (strict). Reported per class: the threshold ``r_1 / tail`` (any c above it
    works; ``inf`` when the class has fewer than ``l`` distinct values, which no c can fix) and the minimal integer
    ``c = floor(r_1 / tail) + 1``; the dataset values are the maxima. Worked example (peers §4, l = 2): per class
    4, 1, 3, dataset 4.

    pyCANON ``recursive_c_l_diversity`` sorts the counts ascending and returns
    ``max_j floor(r_min / sum(r[l-1:]) + 1)`` with l taken from distinct l-diversity, which is not this minimal c
    (it returns 1 on the worked example).
    """
    level = check_positive_int(l, "l")
    sparse = _sparse(classes, name)
    largest = _per_class_max(sparse, sparse.count)
    if level <= 2:  # the head is the largest count alone (or nothing): no sort needed
        head = largest if level == 2 else np.zeros(classes.n_classes, dtype=np.int64)
    else:
        order = np.lexsort((-sparse.count, sparse.cls))
        count = sparse.count[order]
        rank = np.arange(len(count)) - sparse.starts[sparse.cls]  # entries stay grouped by class after the sort
        head = np.bincount(sparse.cls, weights=np.where(rank < level - 1, count, 0), minlength=classes.n_classes)
    tail = sparse.sizes - head.astype(np.int64)
    with np.errstate(divide="ignore"):
        ratio = np.where(tail > 0, largest / np.maximum(tail, 1), np.inf)
    per_class_c = np.where(tail > 0, largest // np.maximum(tail, 1) + 1, np.inf)
    return RecursiveDiversityResult(
        f"recursive (c,{level})-diversity",
        name,
        float(ratio.max()),
        ratio,
        Comparison.BELOW,
        classes.counts,
        l=level,
        largest=largest,
        tail=tail,
        per_class_c=per_class_c,
        c=float(per_class_c.max()),
    )


# --- t-closeness -------------------------------------------------------------------------------------------------


def t_closeness(
    classes: EquivalenceClasses,
    name: str,
    *,
    distance: str | TDistance | None = None,
    hierarchy: Mapping[Any, Sequence[Any]] | pd.DataFrame | None = None,
) -> TClosenessResult:
    """t-closeness (Li, Li, Venkatasubramanian, ICDE 2007): earth mover's distance between each class's SA
    distribution ``q`` and the table's ``p``; a class satisfies t iff its distance is ``<= t`` (ARX).

    Parameters
    ----------
    classes, name
        The classes and the sensitive attribute.
    distance
        ``"equal"``: ``D = 1/2 sum_i |q_i - p_i|`` (ARX ``EqualDistanceTCloseness``; pyCANON for string SAs).
        ``"ordered"``: values in ascending order (a missing value last), ``m`` = distinct values of the SA in
        the whole table,
        ``D = 1/(m - 1) sum_{i=1}^{m} |sum_{k<=i} (q_k - p_k)|``, 0 when ``m = 1`` (ARX
        ``OrderedDistanceTCloseness``; pyCANON for numeric SAs). Needs an ordered attribute.
        ``"hierarchical"``: ``D = sum over inner nodes N of (level(N) / H) * min(pos(N), neg(N))`` where leaf
        extras are ``p_i - q_i``, ``pos``/``neg`` of a level-1 node sum the positive/negative extras of its leaves,
        and a higher node sums the positive/negative *net* extras (``pos - neg``) of its children; ``H`` is the
        number of levels above the leaves (ARX ``HierarchicalDistanceTCloseness``). Needs ``hierarchy``.
        Default: hierarchical when a hierarchy is given, else ordered for an ordered attribute, else equal.
    hierarchy
        Each SA value mapped to its ancestors, coarser levels to the right (one ARX hierarchy CSV row without the
        leaf: ``{"Sales": ("Nontechnical", "*")}``), or a DataFrame laid out like the ARX CSV (first column the
        leaf). Every value of the SA must be a leaf (looked up as is, then as ``str``); all leaves need the same
        number of levels, and a node must have one parent.

    Notes
    -----
    The equal distance is computed from the sparse counts; the ordered and hierarchical ones from dense blocks of
    classes of at most :data:`BLOCK_CELLS` cells, so memory stays bounded for many classes and values.
    """
    sparse = _sparse(classes, name)
    dist = sparse.dist
    if distance is None:
        kind = (
            TDistance.HIERARCHICAL
            if hierarchy is not None
            else (TDistance.ORDERED if dist.ordered else TDistance.EQUAL)
        )
    else:
        kind = TDistance.parse(distance)
    if kind == TDistance.EQUAL:
        per_class = _equal_distance(sparse, classes.n_classes)
    elif kind == TDistance.ORDERED:
        if not dist.ordered:
            raise ParameterError(
                f"Sensitive attribute '{name}' has no order, so the ordered distance is undefined; declare an "
                "order for it (ordered= or orders= when building the classes) or use the equal distance."
            )
        per_class = _ordered_distance(sparse, classes.n_classes)
    else:
        if hierarchy is None:
            raise ParameterError(f"The hierarchical distance for '{name}' needs a hierarchy of its values.")
        per_class = _hierarchical_distance(sparse, classes.n_classes, _Tree.build(dist, hierarchy))
    return TClosenessResult(
        f"t-closeness ({kind.value} distance)",
        name,
        float(per_class.max()),
        per_class,
        Comparison.AT_MOST,
        classes.counts,
        distance=kind,
    )


def _equal_distance(sparse: _Sparse, n_classes: int) -> np.ndarray:
    # 1/2 sum_i |q - p| = [sum_present |cN - nf| + f (N - sum_present n)] / (2 f N): values absent from the class
    # contribute their p, and everything stays an exact integer until the final division.
    present = np.abs(sparse.difference())
    absent = sparse.total - np.bincount(sparse.cls, weights=sparse.overall, minlength=n_classes).astype(np.int64)
    numerator = np.bincount(sparse.cls, weights=present, minlength=n_classes) + sparse.sizes * absent
    return numerator / (2.0 * sparse.sizes * sparse.total)


def _blocks(n_classes: int, n_values: int) -> range:
    step = max(1, BLOCK_CELLS // max(n_values, 1))
    return range(0, n_classes, step)


def _block_differences(sparse: _Sparse, start: int, stop: int) -> np.ndarray:
    """``c N - n f`` for classes ``start:stop`` and every value, as a dense int64 block."""
    counts = sparse.dist.dense(start, stop)
    overall = np.asarray(sparse.dist.overall, dtype=np.int64)
    return counts * sparse.total - sparse.sizes[start:stop, None] * overall[None, :]


def _ordered_distance(sparse: _Sparse, n_classes: int) -> np.ndarray:
    m = sparse.dist.n_values
    out = np.zeros(n_classes)
    if m <= 1:
        return out
    fast = _ordered_distance_sparse(sparse, n_classes)
    if fast is not None:
        return fast
    step = _blocks(n_classes, m).step
    for start in _blocks(n_classes, m):
        stop = min(start + step, n_classes)
        cumulative = np.cumsum(_block_differences(sparse, start, stop), axis=1)
        out[start:stop] = np.abs(cumulative).sum(axis=1, dtype=np.float64)
    return out / (sparse.sizes * float(sparse.total) * (m - 1))


def _ordered_distance_sparse(sparse: _Sparse, n_classes: int) -> np.ndarray | None:
    """The ordered distance in ``O(entries * log m)`` instead of ``O(classes * m)``, exactly; None if it can't.

    ``sum_i |D_j(i)|`` with ``D_j(i) = N C_j(i) - f_j P(i)``, where ``C_j`` (the class's cumulative counts) is
    constant between two values present in the class and ``P`` (the table's cumulative counts) is non-decreasing.
    On such a run ``[lo, hi]`` with ``a = N C``, ``D`` changes sign once, at the first ``i`` with
    ``P(i) > a // f`` (binary search), and each side sums in closed form from the prefix sums ``S`` of ``P``. Sums
    stay in int64, so the result equals the dense computation; when they could overflow, or a class has no entry,
    None sends the caller to the dense blocks.
    """
    m = sparse.dist.n_values
    n_entries = len(sparse.cls)
    if n_entries == 0 or len(np.unique(sparse.cls)) != n_classes:
        return None
    cumulative = np.cumsum(np.asarray(sparse.dist.overall, dtype=np.int64))  # P(i)
    total = int(cumulative[-1])
    if int(sparse.sizes.max()) * m * max(total, 1) >= 2**62:
        return None
    prefix = np.concatenate(([0], np.cumsum(cumulative)))  # prefix[x + 1] = S(x) = P(0) + ... + P(x)
    value = np.asarray(sparse.dist.value_index, dtype=np.int64)
    order = np.lexsort((value, sparse.cls))
    cls, value, count = sparse.cls[order], value[order], sparse.count[order]
    size = sparse.size[order]
    starts = np.flatnonzero(np.r_[True, cls[1:] != cls[:-1]])
    running = np.cumsum(count)
    class_cumulative = running - np.repeat(running[starts] - count[starts], np.diff(np.r_[starts, n_entries]))
    last = np.r_[cls[1:] != cls[:-1], True]
    lo = value
    hi = np.where(last, m - 1, np.r_[value[1:], 0] - 1)
    a = class_cumulative * total
    split = np.clip(np.searchsorted(cumulative, a // size, side="right"), lo, hi + 1)
    below = a * (split - lo) - size * (prefix[split] - prefix[lo])
    above = size * (prefix[hi + 1] - prefix[split]) - a * (hi + 1 - split)
    per_entry = below + above
    # Before a class's first value C = 0, so |D| = f P(i).
    per_entry[starts] += size[starts] * prefix[value[starts]]
    sums = np.add.reduceat(per_entry, starts)
    return sums.astype(np.float64) / (sparse.sizes * float(sparse.total) * (m - 1))


@dataclass(frozen=True, eq=False)
class _Tree:
    """A hierarchy over the SA values: for each level above the leaves, the parent of each node below.

    ``parents[0]`` maps value indices (leaves) to level-1 nodes, ``parents[i]`` level-i nodes to level-(i+1) nodes.
    """

    parents: tuple[np.ndarray, ...]

    @property
    def height(self) -> int:
        return len(self.parents)

    @classmethod
    def build(cls, dist: SensitiveDistribution, hierarchy: Mapping[Any, Sequence[Any]] | pd.DataFrame) -> _Tree:
        table = _hierarchy_mapping(hierarchy)
        rows = []
        unknown = []
        for label in dist.labels:
            key = label if label in table else str(label)
            if key not in table:
                unknown.append(label)
            else:
                rows.append(tuple(table[key]))
        if unknown:
            shown = ", ".join(repr(v) for v in unknown[:5]) + (
                f" and {len(unknown) - 5} more" if len(unknown) > 5 else ""
            )
            hint = f" (add a row for {MISSING_LABEL!r} or drop missing values)" if MISSING_LABEL in unknown else ""
            raise ParameterError(f"The hierarchy of '{dist.name}' has no leaf for the values {shown}{hint}.")
        heights = {len(row) for row in rows}
        if len(heights) != 1 or 0 in heights:
            raise ParameterError(
                f"Every value in the hierarchy of '{dist.name}' needs the same number (>= 1) of coarser levels; "
                f"found {sorted(heights)}."
            )
        matrix = pd.DataFrame(rows).astype(str)
        parents = []
        below = np.arange(len(rows))
        for level in range(matrix.shape[1]):
            codes, _ = pd.factorize(matrix.iloc[:, level])
            # Each node at the level below must have exactly one parent: the hierarchy must be a tree.
            pairs = pd.DataFrame({"child": below, "parent": codes}).drop_duplicates()
            if pairs["child"].duplicated().any():
                child = int(pairs.loc[pairs["child"].duplicated(), "child"].iloc[0])
                what = repr(dist.labels[child]) if level == 0 else repr(matrix.iloc[below == child, level - 1].iloc[0])
                raise ParameterError(
                    f"The hierarchy of '{dist.name}' is not a tree: {what} has several parents at level {level + 1}."
                )
            parent = np.empty(int(below.max()) + 1, dtype=np.int64)
            parent[pairs["child"].to_numpy()] = pairs["parent"].to_numpy()
            parents.append(parent)
            below = codes.astype(np.int64)
        return cls(tuple(parents))


def _hierarchy_mapping(hierarchy: Mapping[Any, Sequence[Any]] | pd.DataFrame) -> Mapping[Any, Sequence[Any]]:
    if isinstance(hierarchy, pd.DataFrame):
        if hierarchy.shape[1] < 2:
            raise ParameterError("A hierarchy table needs the leaf column and at least one coarser level.")
        leaves = hierarchy.iloc[:, 0]
        if leaves.duplicated().any():
            raise ParameterError(f"The hierarchy table lists the leaf {leaves[leaves.duplicated()].iloc[0]!r} twice.")
        return dict(zip(leaves.tolist(), hierarchy.iloc[:, 1:].itertuples(index=False, name=None), strict=True))
    if not isinstance(hierarchy, Mapping):
        raise ParameterError("A hierarchy must map each value to its ancestors, or be a table like an ARX CSV.")
    for leaf, ancestors in hierarchy.items():
        if isinstance(ancestors, str) or not isinstance(ancestors, Sequence):
            raise ParameterError(f"The ancestors of {leaf!r} in the hierarchy must be a sequence, got {ancestors!r}.")
    return hierarchy


def _group_sum(values: np.ndarray, parent: np.ndarray, n_parents: int) -> np.ndarray:
    """Sum the columns of ``values`` into their parents' columns."""
    order = np.argsort(parent, kind="stable")
    starts = np.searchsorted(parent[order], np.arange(n_parents))
    return np.add.reduceat(values[:, order], starts, axis=1)


def _hierarchical_distance(sparse: _Sparse, n_classes: int, tree: _Tree) -> np.ndarray:
    m = sparse.dist.n_values
    out = np.zeros(n_classes)
    step = _blocks(n_classes, m).step
    for start in _blocks(n_classes, m):
        stop = min(start + step, n_classes)
        net = -_block_differences(sparse, start, stop)  # extras p - q, scaled by f N
        cost = np.zeros(stop - start)
        for level, parent in enumerate(tree.parents, start=1):
            n_parents = int(parent.max()) + 1
            positive = _group_sum(np.maximum(net, 0), parent, n_parents)
            negative = _group_sum(np.maximum(-net, 0), parent, n_parents)
            cost += (level / tree.height) * np.minimum(positive, negative).sum(axis=1, dtype=np.float64)
            net = positive - negative
        out[start:stop] = cost
    return out / (sparse.sizes * float(sparse.total))


# --- delta-disclosure and beta-likeness --------------------------------------------------------------------------


def delta_disclosure(classes: EquivalenceClasses, name: str, *, base: float = 2.0) -> DeltaDisclosureResult:
    """delta-disclosure privacy (Brickell and Shmatikov, KDD 2008): ``per_class = max_i |log_base(q_i / p_i)|``
    over the values present in the class; a class satisfies delta iff that is ``< delta`` (strict).

    ``base`` defaults to 2, as ARX ``DDisclosurePrivacy``; pyCANON ``delta_disclosure`` uses the natural log
    (pass ``base=math.e`` to compare). Values absent from a class (q = 0) are skipped, as in both.
    """
    if isinstance(base, bool) or not isinstance(base, int | float) or not base > 0 or base == 1 or math.isinf(base):
        raise ParameterError(f"The logarithm base must be a positive number other than 1, got {base!r}.")
    sparse = _sparse(classes, name)
    ratio = (sparse.count * sparse.total) / (sparse.overall * sparse.size).astype(np.float64)
    logs = np.abs(np.log2(ratio) if base == 2 else np.log(ratio) / math.log(base))
    per_class = _per_class_max(sparse, logs)
    return DeltaDisclosureResult(
        f"delta-disclosure privacy (log base {base:g})",
        name,
        float(per_class.max()),
        per_class,
        Comparison.BELOW,
        classes.counts,
        base=float(base),
    )


def _relative_gain(sparse: _Sparse) -> np.ndarray:
    """``(q_i - p_i) / p_i`` of each entry, from exact integer numerators."""
    return sparse.difference() / (sparse.overall * sparse.size).astype(np.float64)


def basic_beta_likeness(classes: EquivalenceClasses, name: str) -> ModelResult:
    """Basic beta-likeness (Cao and Karras, VLDB 2012): ``per_class = max_i (q_i - p_i) / p_i`` over the values
    present in the class (only values with ``q_i > p_i`` can be the maximum, which is ``>= 0``); a class satisfies
    beta iff that is ``<= beta`` (ARX ``BasicBLikeness``; pyCANON ``basic_beta_likeness`` agrees).
    """
    sparse = _sparse(classes, name)
    per_class = _per_class_max(sparse, _relative_gain(sparse))
    return ModelResult(
        "basic beta-likeness", name, float(per_class.max()), per_class, Comparison.AT_MOST, classes.counts
    )


def enhanced_beta_likeness(classes: EquivalenceClasses, name: str) -> ModelResult:
    """Enhanced beta-likeness (Cao and Karras, VLDB 2012; ARX ``EnhancedBLikeness``).

    A class satisfies beta iff for every value present in it ``(q_i - p_i) / p_i <= min(beta, -ln p_i)``.
    ``per_class`` is the smallest beta for which the class satisfies this: its basic beta-likeness value, or
    ``inf`` when some ``(q_i - p_i) / p_i > -ln p_i`` (then no beta can satisfy it). A class satisfies beta iff
    ``per_class <= beta``; ``value`` is the maximum over classes.

    pyCANON ``enhanced_beta_likeness`` instead returns ``max_i min(beta_basic, -ln p_i)`` over all values, which is
    finite even when the enhanced condition cannot hold (worked example: 1.2222 where this gives ``inf``).
    """
    sparse = _sparse(classes, name)
    gain = _relative_gain(sparse)
    bound = -np.log(sparse.overall / float(sparse.total))
    per_class = _per_class_max(sparse, np.where(gain > bound, np.inf, gain))
    return ModelResult(
        "enhanced beta-likeness", name, float(per_class.max()), per_class, Comparison.AT_MOST, classes.counts
    )


# --- combinations ------------------------------------------------------------------------------------------------


def worst_of(results: Sequence[ModelResult]) -> ModelResult:
    """Combine results of the same model on several sensitive attributes into the worst per class.

    Per class the minimum (``>=`` models) or maximum (``<=``, ``<`` models) over the results; ``value`` likewise.
    A class then satisfies the combination for a threshold iff it satisfies every input (for recursive
    (c,l)-diversity the comparison is made on the thresholds ``r_1 / tail``, i.e. ``threshold < c``). For
    (alpha,k)-anonymity the result keeps ``k``. t-closeness results may use different ground distances.
    """
    if not results:
        raise ParameterError("Nothing to combine: give at least one model result.")
    first = results[0]
    if any(r.comparison != first.comparison or len(r.per_class) != len(first.per_class) for r in results):
        raise ParameterError("Only results of the same kind of model over the same classes can be combined.")
    stacked = np.vstack([np.asarray(r.per_class, dtype=np.float64) for r in results])
    per_class = stacked.min(axis=0) if first.comparison == Comparison.AT_LEAST else stacked.max(axis=0)
    if all(np.issubdtype(np.asarray(r.per_class).dtype, np.integer) for r in results):
        per_class = per_class.astype(np.int64)
    names = [r.attribute for r in results if r.attribute is not None]
    attribute = ", ".join(dict.fromkeys(names)) if names else None
    model = first.model if all(r.model == first.model for r in results) else first.model.split(" (")[0]
    common = {
        "model": model,
        "attribute": attribute,
        "value": _result_value(per_class, first.comparison),
        "per_class": per_class,
        "comparison": first.comparison,
        "counts": first.counts,
    }
    if isinstance(first, AlphaKResult):
        return AlphaKResult(**common, k=first.k, sizes=first.sizes)
    return ModelResult(**common)


@dataclass(frozen=True, eq=False)
class SensitiveModels:
    """Every attribute-disclosure model for one sensitive attribute (see :func:`sensitive_models`)."""

    attribute: str
    alpha_k: AlphaKResult
    l_distinct: ModelResult
    l_entropy: EntropyDiversityResult
    recursive: RecursiveDiversityResult
    t_closeness: TClosenessResult
    delta_disclosure: DeltaDisclosureResult
    beta_basic: ModelResult
    beta_enhanced: ModelResult

    def summary(self) -> dict[str, Any]:
        """Dataset values as plain Python numbers (``inf`` marks a model no threshold can satisfy)."""
        return {
            "attribute": self.attribute,
            "alpha_k": {"alpha": self.alpha_k.value, "k": self.alpha_k.k},
            "l_distinct": int(self.l_distinct.value),
            "l_entropy": self.l_entropy.value,
            "l_entropy_estimator": self.l_entropy.estimator.value,
            "recursive_l": self.recursive.l,
            "recursive_c": self.recursive.c,
            "recursive_threshold": self.recursive.value,
            "t_closeness": self.t_closeness.value,
            "t_distance": self.t_closeness.distance.value,
            "delta_disclosure": self.delta_disclosure.value,
            "delta_base": self.delta_disclosure.base,
            "beta_basic": self.beta_basic.value,
            "beta_enhanced": self.beta_enhanced.value,
        }

    def per_class_table(self) -> pd.DataFrame:
        """One row per class (aligned with the classes): each model's class value."""
        return pd.DataFrame(
            {
                "alpha": self.alpha_k.per_class,
                "l_distinct": self.l_distinct.per_class,
                "l_entropy": self.l_entropy.per_class,
                "recursive_c": self.recursive.per_class_c,
                "recursive_threshold": self.recursive.per_class,
                "t_closeness": self.t_closeness.per_class,
                "delta_disclosure": self.delta_disclosure.per_class,
                "beta_basic": self.beta_basic.per_class,
                "beta_enhanced": self.beta_enhanced.per_class,
            }
        )


def sensitive_models(
    classes: EquivalenceClasses,
    name: str,
    *,
    recursive_l: int = 2,
    hierarchy: Mapping[Any, Sequence[Any]] | pd.DataFrame | None = None,
    t_distance: str | TDistance | None = None,
    entropy_estimator: str | EntropyEstimator = EntropyEstimator.SHANNON,
    delta_base: float = 2.0,
) -> SensitiveModels:
    """Evaluate every attribute-disclosure model on sensitive attribute ``name``.

    (alpha,k)-anonymity, distinct and entropy l-diversity, recursive (c, ``recursive_l``)-diversity, t-closeness
    (distance ``t_distance``, default as :func:`t_closeness`: hierarchical with a ``hierarchy``, else ordered for an
    ordered attribute, else equal; the result names it), delta-disclosure (log base ``delta_base``, 2 as ARX) and
    basic and enhanced beta-likeness, each with the definitions documented on its function.
    """
    return SensitiveModels(
        attribute=name,
        alpha_k=alpha_k_anonymity(classes, name),
        l_distinct=distinct_l_diversity(classes, name),
        l_entropy=entropy_l_diversity(classes, name, estimator=entropy_estimator),
        recursive=recursive_cl_diversity(classes, name, l=recursive_l),
        t_closeness=t_closeness(classes, name, distance=t_distance, hierarchy=hierarchy),
        delta_disclosure=delta_disclosure(classes, name, base=delta_base),
        beta_basic=basic_beta_likeness(classes, name),
        beta_enhanced=enhanced_beta_likeness(classes, name),
    )


@dataclass(frozen=True, eq=False)
class MultiSensitiveModels:
    """The models of several sensitive attributes, each evaluated separately, and their worst case per class."""

    attributes: tuple[str, ...]
    by_attribute: Mapping[str, SensitiveModels]
    alpha_k: AlphaKResult
    l_distinct: ModelResult
    l_entropy: ModelResult
    recursive: ModelResult
    t_closeness: ModelResult
    delta_disclosure: ModelResult
    beta_basic: ModelResult
    beta_enhanced: ModelResult


def all_sensitive_models(
    classes: EquivalenceClasses,
    names: Sequence[str] | None = None,
    *,
    recursive_l: int = 2,
    hierarchies: Mapping[str, Mapping[Any, Sequence[Any]] | pd.DataFrame] | None = None,
    t_distances: Mapping[str, str | TDistance] | None = None,
    entropy_estimator: str | EntropyEstimator = EntropyEstimator.SHANNON,
    delta_base: float = 2.0,
) -> MultiSensitiveModels:
    """:func:`sensitive_models` for each of ``names`` (default: every sensitive attribute of ``classes``), plus the
    worst across them per class (:func:`worst_of`): the largest alpha, the smallest l, the largest t, ...

    As ARX, each attribute is its own criterion: a table satisfies, say, t-closeness for all attributes iff the
    combined t is within the threshold. ``hierarchies`` and ``t_distances`` are per attribute.
    """
    chosen = tuple(classes.sensitive) if names is None else tuple(names)
    if not chosen:
        raise ColumnError("No sensitive attribute given: choose at least one.")
    hierarchies = dict(hierarchies or {})
    t_distances = dict(t_distances or {})
    unknown = sorted((set(hierarchies) | set(t_distances)) - set(chosen))
    if unknown:
        raise ColumnError(f"Options given for attributes that are not evaluated: {', '.join(unknown)}.")
    by_attribute = {
        name: sensitive_models(
            classes,
            name,
            recursive_l=recursive_l,
            hierarchy=hierarchies.get(name),
            t_distance=t_distances.get(name),
            entropy_estimator=entropy_estimator,
            delta_base=delta_base,
        )
        for name in chosen
    }
    models = list(by_attribute.values())
    alpha_k = worst_of([m.alpha_k for m in models])
    assert isinstance(alpha_k, AlphaKResult)
    return MultiSensitiveModels(
        attributes=chosen,
        by_attribute=by_attribute,
        alpha_k=alpha_k,
        l_distinct=worst_of([m.l_distinct for m in models]),
        l_entropy=worst_of([m.l_entropy for m in models]),
        recursive=worst_of([m.recursive for m in models]),
        t_closeness=worst_of([m.t_closeness for m in models]),
        delta_disclosure=worst_of([m.delta_disclosure for m in models]),
        beta_basic=worst_of([m.beta_basic for m in models]),
        beta_enhanced=worst_of([m.beta_enhanced for m in models]),
    )
