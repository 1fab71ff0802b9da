"""Privacy targets: what a release must meet, in one definition shared by the core, the CLI, the API and the links.

Vocabulary (the same name everywhere; see docs/definitions.md):

``k``
    k-anonymity: every equivalence class holds at least ``k`` records (a class passes iff ``f_j >= k``).
``l``
    Distinct l-diversity of each sensitive attribute: at least ``l`` distinct values per class (ARX
    ``DistinctLDiversity``; a missing value counts as a value). Recursive (c,l)-diversity has its own parameter,
    ``recursive_l``.
``t``
    t-closeness of each sensitive attribute: the class distribution's earth mover's distance to the table's is at
    most ``t`` (a class passes iff ``distance <= t``).
``max_risk``
    The highest acceptable re-identification risk of one record, tau: a record is *at risk* when its prosecutor risk
    ``1 / f_j`` is strictly greater than ``max_risk`` (ARX, El Emam). The journalist and marketer risks never exceed
    the prosecutor risk, so meeting ``max_risk`` as prosecutor bounds all three.
``max_suppression``
    The share of records a fix may remove, ``0 .. 1`` (ARX's suppression limit). Not a property of a table, so it is
    not a :class:`PrivacyTargets` field: the least-lossy search and record suppression take it as a parameter, with
    one default everywhere (the Fix page, the command line, the API, the presentations and the report):
    :data:`DEFAULT_MAX_SUPPRESSION`.

``global_risk``
    sdcMicro's global risk ``ER / n``: ``ER`` is the sum over the records of their individual risk
    (:func:`~privdash.measure.risk.individual_risk`: Benedetti-Franconi with sampling weights, ``1 / f_j``
    without). Met iff ``ER / n <= global_risk`` (non-strict). Needs no population: without weights it is the
    prosecutor view ``1 / f_j``.
``household_risk``
    The household global risk ``ER_h / n`` (:func:`~privdash.measure.household.household_risk`), met iff
    ``ER_h / n <= household_risk`` (non-strict). Needs a household-id column; without one the target is not measured
    and the verdict fails.
``average_risk``
    The prosecutor average risk (ARX success rate, ``J / n`` when the classes partition the records), met iff
    ``<= average_risk`` (non-strict).
``k_map``
    k-map (Sweeney; ARX ``KMap`` without estimator): every class has at least ``k_map`` people in the population,
    ``F_j >= k_map`` (non-strict), ``F_j`` from a population table, a population size / sampling fraction
    (``F_j = f_j / pi``) or sampling weights (``F_j`` = sum of the weights). Not measured without a population.
``delta_presence``
    delta-presence (ARX ``DPresence`` with ``delta_min = 0``): every class has ``f_j / F_j <= delta_presence``
    (non-strict), ``F_j`` as for ``k_map``. Not measured without a population.
``population_uniques``
    The estimated share of the population that is unique on the quasi-identifiers (estimated population uniques
    over ``N``, :mod:`privdash.measure.population`) is at most ``population_uniques`` (non-strict), by
    ``population_uniques_estimator``: ``dankar`` (default: Dankar et al.'s decision rule), ``pitman``, ``zayatz`` or
    ``snb``. Needs a population size (a population table, ``N`` or a sampling fraction, or sampling weights); an
    estimator that fails (no convergence) leaves the target not measured, never met.

A target that cannot be measured (no population, no household column, a failed estimator) fails the verdict with a
reason that names what is missing (:func:`~privdash.measure.verdict.check_targets`). ``global_risk``,
``household_risk``, ``average_risk`` and ``population_uniques`` are properties of the whole table
(:data:`GLOBAL_TARGETS`), ``k_map`` and ``delta_presence`` of each class with the population
(:data:`POPULATION_TARGETS`); the least-lossy search judges all of them at each node (see
:mod:`privdash.search.lattice`).

Monotonicity (what the least-lossy search may infer, :mod:`privdash.search.lattice`): under full-domain
generalization classes only merge. ``k``, ``max_risk`` and distinct ``l`` hold for a merged class whenever they hold
for one of its parts, so the records violating them can only shrink from a node to a coarser one, with or without
suppression (:meth:`PrivacyTargets.monotone`). ``t`` holds for a merged class whenever it holds for all its parts
(the earth mover's distance to a fixed distribution is convex in the class distribution), but a part that satisfies
``t`` merged with one that does not may violate it, and suppression moves the distribution ``t`` compares with (that
of the records published): with suppression the records violating ``t`` may grow. The global targets are sums or
estimates over all the records published (a class's suppression changes them), and ``delta_presence`` with weights
compares ratios of sums (a merged class's ``f_j / F_j`` lies between its parts'): none of them is left to the
monotone marks.

:func:`parse_targets` reads the command line's ``k=5,l=2,t=0.2,max_risk=0.2`` (``risk`` is an alias of
``max_risk``). Whether a diagnosed table meets the targets is :meth:`privdash.measure.diagnose.Diagnosis.check`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from privdash.constants import DEFAULT_MAX_SUPPRESSION
from privdash.errors import ParameterError, check_fraction, check_positive_int, check_threshold
from privdash.measure.classes import EquivalenceClasses

__all__ = [
    "DEFAULT_MAX_SUPPRESSION",
    "GLOBAL_TARGETS",
    "MONOTONE_TARGETS",
    "POPULATION_TARGETS",
    "TARGET_ALIASES",
    "TARGET_NAMES",
    "UNIQUES_ESTIMATORS",
    "PrivacyTargets",
    "parse_targets",
]

#: Targets whose violating records can only shrink under generalization, with or without suppression.
MONOTONE_TARGETS = ("k", "l", "max_risk")

#: Targets that are properties of the whole published table (sums or estimates over its records).
GLOBAL_TARGETS = ("global_risk", "household_risk", "average_risk", "population_uniques")
#: Targets of each class that compare it with the population (``F_j``).
POPULATION_TARGETS = ("k_map", "delta_presence")
#: Every target, in the order of :attr:`PrivacyTargets.names` and of the verdict.
TARGET_NAMES = ("k", "l", "t", "max_risk", *GLOBAL_TARGETS, *POPULATION_TARGETS)
#: The population-uniqueness estimators ``population_uniques`` may use (``dankar`` by default).
UNIQUES_ESTIMATORS = ("dankar", "pitman", "zayatz", "snb")
_CLASS_TARGETS = ("k", "l", "t", "max_risk")
_FRACTION_TARGETS = ("global_risk", "household_risk", "average_risk", "delta_presence", "population_uniques")
_OPTIONAL_KEYS = (*GLOBAL_TARGETS, *POPULATION_TARGETS, "population_uniques_estimator")

#: Old or short spellings of target names, accepted on input.
TARGET_ALIASES = {"risk": "max_risk", "threshold": "max_risk"}


@dataclass(frozen=True)
class PrivacyTargets:
    """What every published equivalence class must satisfy.

    Attributes
    ----------
    k
        Smallest class size (k-anonymity: a class satisfies iff ``f_j >= k``).
    l
        Distinct l-diversity for each sensitive attribute: at least ``l`` distinct values in the class (a missing
        value counts as a value), ARX ``DistinctLDiversity``.
    t
        t-closeness for each sensitive attribute: earth mover's distance to the distribution over all records
        ``<= t`` (ARX), the reference distribution being that of the records of the table judged: for a fix, the
        records published (after suppression), as the diagnosis of the published table measures it, with
        ``t_distance`` ``"equal"`` or ``"ordered"`` (default: ordered for numeric
        attributes, equal otherwise), see :func:`privdash.measure.models.t_closeness`.
    sensitive
        The sensitive attributes ``l`` and ``t`` apply to. Empty: every sensitive attribute of the table (a
        diagnosis's own; the least-lossy search and record suppression need them named).
    max_risk
        Highest prosecutor re-identification risk: a class satisfies iff ``1 / f_j <= max_risk`` (ARX highest
        prosecutor risk of the published records, El Emam).
    global_risk, household_risk, average_risk
        Highest global risk ``ER / n``, household global risk ``ER_h / n`` and prosecutor average risk of the table
        (each met iff the table's value is ``<=`` it; see the module docstring).
    k_map, delta_presence
        Per class against the population: ``F_j >= k_map`` and ``f_j / F_j <= delta_presence``.
    population_uniques, population_uniques_estimator
        Highest estimated share of population uniques, by the estimator named (``dankar`` when None).
    """

    k: int = 2
    l: int | None = None  # noqa: E741
    t: float | None = None
    sensitive: tuple[str, ...] = ()
    t_distance: str | None = None
    max_risk: float | None = None
    global_risk: float | None = None
    household_risk: float | None = None
    average_risk: float | None = None
    k_map: int | None = None
    delta_presence: float | None = None
    population_uniques: float | None = None
    population_uniques_estimator: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "k", check_positive_int(self.k, "k"))
        object.__setattr__(self, "sensitive", tuple(str(s) for s in self.sensitive))
        if self.l is not None:
            object.__setattr__(self, "l", check_positive_int(self.l, "l"))
        if self.t is not None:
            t = check_threshold(self.t, "t")
            if t > 1:
                raise ParameterError(f"t is a distance between 0 and 1, got {self.t!r}.")
            object.__setattr__(self, "t", t)
        if self.max_risk is not None:
            risk = check_fraction(self.max_risk, "max_risk", inclusive_zero=False)
            object.__setattr__(self, "max_risk", risk)
        for name in _FRACTION_TARGETS:
            value = getattr(self, name)
            if value is not None:
                object.__setattr__(self, name, check_fraction(value, name, inclusive_zero=False))
        if self.k_map is not None:
            object.__setattr__(self, "k_map", check_positive_int(self.k_map, "k_map"))
        if self.population_uniques_estimator is not None:
            estimator = str(self.population_uniques_estimator).lower()
            if estimator not in UNIQUES_ESTIMATORS:
                raise ParameterError(
                    f"population_uniques_estimator must be one of {', '.join(UNIQUES_ESTIMATORS)}, "
                    f"got {self.population_uniques_estimator!r}."
                )
            if self.population_uniques is None:
                raise ParameterError("population_uniques_estimator is given without a population_uniques target.")
            object.__setattr__(self, "population_uniques_estimator", estimator)
        if self.t_distance is not None and str(self.t_distance).lower() not in ("equal", "ordered"):
            raise ParameterError(f"t_distance must be 'equal' or 'ordered', got {self.t_distance!r}.")
        if len(set(self.sensitive)) != len(self.sensitive):
            raise ParameterError("A sensitive attribute is listed more than once.")

    @property
    def monotone_with_suppression(self) -> bool:
        """True when the violating records can only shrink under generalization (no t-closeness target, no global or
        population target)."""
        return self.t is None and not self.judged_per_node

    @property
    def judged_per_node(self) -> bool:
        """True when a global or population target is set (:data:`GLOBAL_TARGETS`, :data:`POPULATION_TARGETS`): the
        search judges them at each node, on the records it would publish."""
        return any(getattr(self, name) is not None for name in (*GLOBAL_TARGETS, *POPULATION_TARGETS))

    @property
    def estimator(self) -> str:
        """The population-uniqueness estimator of ``population_uniques`` (``dankar`` unless named)."""
        return self.population_uniques_estimator or "dankar"

    @property
    def names(self) -> tuple[str, ...]:
        """The targets that are set, in the order of :data:`TARGET_NAMES` (``k`` always: ``k = 1`` is met by every
        class)."""
        return tuple(name for name in TARGET_NAMES if getattr(self, name) is not None)

    def monotone(self) -> PrivacyTargets:
        """The targets of :data:`MONOTONE_TARGETS` only (``t`` dropped): a node whose records violating these exceed
        the suppression limit fails, and so do all its finer nodes, whatever ``t`` says. Built field by field, so a
        target added later is left out until it is shown monotone."""
        return PrivacyTargets(k=self.k, l=self.l, sensitive=self.sensitive, max_risk=self.max_risk)

    def size_violations(self, sizes: np.ndarray) -> np.ndarray:
        """Boolean per class of size ``sizes``: it violates ``k`` or ``max_risk`` (the size-only targets)."""
        sizes = np.asarray(sizes)
        bad = sizes < self.k
        if self.max_risk is not None and len(sizes):
            bad |= 1.0 / sizes > self.max_risk
        return np.asarray(bad, dtype=bool)

    def class_violations(self, classes: EquivalenceClasses) -> np.ndarray:
        """Boolean per class: the class violates at least one target (definitions in the class docstring)."""
        bad = self.size_violations(classes.sizes)
        if classes.n_classes == 0 or (self.l is None and self.t is None):
            return bad
        for part in self.violations_by_target(classes, ("l", "t")).values():
            bad |= part
        return np.asarray(bad, dtype=bool)

    def violations_by_target(
        self, classes: EquivalenceClasses, names: Sequence[str] | None = None
    ) -> dict[str, np.ndarray]:
        """Boolean per class for each target set (or each of ``names`` that is set): the class violates it (for
        ``l`` and ``t``: on some sensitive attribute). :meth:`class_violations` is their union. The population and
        global targets are not among them (they need the population or the whole table:
        :mod:`privdash.transform.release_targets`)."""
        wanted = [name for name in self.names if name in _CLASS_TARGETS and (names is None or name in names)]
        sizes = np.asarray(classes.sizes)
        out: dict[str, np.ndarray] = {}
        if "k" in wanted:
            out["k"] = np.asarray(sizes < self.k, dtype=bool)
        if "max_risk" in wanted:
            out["max_risk"] = PrivacyTargets(k=1, max_risk=self.max_risk).size_violations(sizes)
        if classes.n_classes == 0:
            return {name: np.zeros(0, dtype=bool) for name in wanted}
        from privdash.measure.models import distinct_l_diversity, t_closeness

        names = self.sensitive or tuple(classes.sensitive)
        if "l" in wanted and self.l is not None:
            bad = np.zeros(classes.n_classes, dtype=bool)
            for name in names:
                bad |= ~distinct_l_diversity(classes, name).class_satisfies(self.l)
            out["l"] = bad
        if "t" in wanted and self.t is not None:
            bad = np.zeros(classes.n_classes, dtype=bool)
            for name in names:
                bad |= ~t_closeness(classes, name, distance=self.t_distance).class_satisfies(self.t)
            out["t"] = bad
        return {name: out[name] for name in wanted}

    def require_sensitive(self) -> None:
        """Raise :class:`ParameterError` when ``l`` or ``t`` is set but no sensitive attribute is named (needed
        where the targets are applied to data rather than to a diagnosis)."""
        if (self.l is not None or self.t is not None) and not self.sensitive:
            raise ParameterError("l-diversity and t-closeness need at least one sensitive attribute (sensitive=...).")

    def describe(self) -> str:
        """Short text, e.g. ``k=5, l=2 (disease)``."""
        parts = [f"k={self.k}"]
        if self.max_risk is not None:
            parts.append(f"highest risk <= {self.max_risk:g}")
        on = f" ({', '.join(self.sensitive)})" if self.sensitive else ""  # no empty parentheses
        if self.l is not None:
            parts.append(f"l={self.l}{on}")
        if self.t is not None:
            parts.append(f"t={self.t:g}{on}")
        for name in (*GLOBAL_TARGETS, *POPULATION_TARGETS):
            value = getattr(self, name)
            if value is not None:
                sign = ">=" if name == "k_map" else "<="
                extra = f" ({self.estimator})" if name == "population_uniques" else ""
                parts.append(f"{name} {sign} {value:g}{extra}")
        return ", ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        return {
            "k": self.k,
            "l": self.l,
            "t": self.t,
            "sensitive": list(self.sensitive),
            "t_distance": self.t_distance,
            "max_risk": self.max_risk,
            # The targets added later are written only when set, so targets without them serialize as before.
            **{name: getattr(self, name) for name in _OPTIONAL_KEYS if getattr(self, name) is not None},
        }

    @classmethod
    def from_dict(cls, obj: Mapping[str, Any]) -> PrivacyTargets:
        if not isinstance(obj, Mapping):
            raise ParameterError("Privacy targets must be an object with k, l, t, sensitive, max_risk.")
        unknown = sorted(set(obj) - {"k", "l", "t", "sensitive", "t_distance", "max_risk", *_OPTIONAL_KEYS})
        if unknown:
            raise ParameterError(f"Unknown privacy target(s): {', '.join(unknown)}.")
        sensitive = obj.get("sensitive") or []
        if isinstance(sensitive, str) or not isinstance(sensitive, Sequence):
            raise ParameterError("'sensitive' must be a list of column names.")
        return cls(
            k=obj.get("k", 2),
            l=obj.get("l"),
            t=obj.get("t"),
            sensitive=tuple(sensitive),
            t_distance=obj.get("t_distance"),
            max_risk=obj.get("max_risk"),
            **{name: obj.get(name) for name in _OPTIONAL_KEYS},
        )


def parse_targets(text: str, *, sensitive: Sequence[str] = ()) -> PrivacyTargets:
    """Targets from ``"k=5,l=2,t=0.2,max_risk=0.2,global_risk=0.03"`` (any subset, any order; ``risk`` means
    ``max_risk``; every name of :data:`TARGET_NAMES`, and ``population_uniques_estimator`` with a
    ``population_uniques`` target).

    ``k`` defaults to 1 (no k target) when the text does not set it.
    """
    values: dict[str, Any] = {}
    known = (*TARGET_NAMES, "population_uniques_estimator")
    for part in (p.strip() for p in str(text).split(",")):
        if not part:
            continue
        name, sep, raw = part.partition("=")
        key = TARGET_ALIASES.get(name.strip().lower(), name.strip().lower())
        if not sep or key not in known:
            raise ParameterError(
                f"Cannot read the target {part!r}: write name=value with names {', '.join(TARGET_NAMES)} (risk is "
                "max_risk) and population_uniques_estimator, e.g. k=5,l=2,t=0.2,max_risk=0.2,global_risk=0.03."
            )
        if key in values:
            raise ParameterError(f"The target {key} is given twice.")
        if key == "population_uniques_estimator":
            values[key] = raw.strip()
            continue
        try:
            number = float(raw)
        except ValueError:
            raise ParameterError(f"The target {key} must be a number, got {raw.strip()!r}.") from None
        if key in ("k", "l", "k_map"):
            if not number.is_integer():
                raise ParameterError(f"The target {key} must be a whole number, got {raw.strip()}.")
            values[key] = int(number)
        else:
            values[key] = number
    if not values:
        raise ParameterError("No target given: write e.g. k=5 or k=5,l=2,t=0.2,max_risk=0.2.")
    return PrivacyTargets(
        k=values.pop("k", 1),
        l=values.pop("l", None),
        t=values.pop("t", None),
        max_risk=values.pop("max_risk", None),
        sensitive=tuple(sensitive),
        **values,
    )
