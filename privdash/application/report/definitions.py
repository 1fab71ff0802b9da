"""The definitions of every number the release report shows, quoted from docs/definitions.md (:data:`DEFINITIONS`),
and the wording of column roles and missing-value policies."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from privdash.data.contract import ColumnRole
from privdash.measure.classes import MissingPolicy
from privdash.targets import GLOBAL_TARGETS, POPULATION_TARGETS, PrivacyTargets

__all__ = ["DEFINITIONS", "PEOPLE_DEFINITION", "Definition", "describe_targets"]


ROLE_LABELS = {
    ColumnRole.IDENTIFIER: "direct identifier",
    ColumnRole.QUASI_IDENTIFIER: "quasi-identifier",
    ColumnRole.SENSITIVE: "sensitive",
    ColumnRole.INSENSITIVE: "insensitive",
    ColumnRole.WEIGHT: "sampling weight",
    ColumnRole.HOUSEHOLD: "household id",
    ColumnRole.ENTITY: "person id",
}
#: The rule of each missing-value policy, as docs/definitions.md words it.
POLICY_RULES = {
    MissingPolicy.VALUE: "a missing value is a category of its own (ARX, pyCANON with dropna=False)",
    MissingPolicy.WILDCARD: "a missing cell matches any value (sdcMicro alpha = 1, ARX's wildcard model)",
    MissingPolicy.DROP: "records with a missing QI are left out of every class, metric and denominator and reported "
    "as dropped",
}


def describe_targets(
    targets: PrivacyTargets, sensitive: Sequence[str] = (), distances: Mapping[str, str] | None = None
) -> str:
    """The targets in words for the report, each saying what it applies to: ``k = 5, l = 2 (distinct l-diversity,
    on salary-class), t = 0.2 (equal distance, on salary-class)``.

    ``sensitive`` are the attributes l and t are judged on when the targets name none (the contract's sensitive
    attributes, as the diagnosis judges them); ``distances`` the t-closeness distance measured on each (``equal``,
    ``ordered``, ``hierarchical``), when the targets do not fix one. Nothing is said in parentheses when there is
    nothing to say (no sensitive attribute named anywhere)."""
    names = list(targets.sensitive or sensitive)
    on = f"on {', '.join(names)}" if names else ""
    parts = [f"k = {targets.k}"]
    if targets.l is not None:
        parts.append(f"l = {targets.l} (distinct l-diversity{', ' + on if on else ''})")
    if targets.t is not None:
        if targets.t_distance is not None:
            kinds = [str(targets.t_distance)]
        else:
            kinds = list(dict.fromkeys((distances or {}).get(name, "") for name in names))
            kinds = [kind for kind in kinds if kind]
        how = [f"{' / '.join(kinds)} distance"] if kinds else []
        detail = ", ".join([*how, *([on] if on else [])])
        parts.append(f"t = {targets.t:g}" + (f" ({detail})" if detail else ""))
    if targets.max_risk is not None:
        parts.append(f"highest prosecutor risk ≤ {targets.max_risk:g}")
    for name in (*GLOBAL_TARGETS, *POPULATION_TARGETS):
        value = getattr(targets, name)
        if value is not None:
            sign = "≥" if name == "k_map" else "≤"
            extra = f" ({targets.estimator} estimator)" if name == "population_uniques" else ""
            parts.append(f"{name} {sign} {value:g}{extra}")
    return ", ".join(parts)


@dataclass(frozen=True)
class Definition:
    """One term and its definition, as ``(label, text)`` parts: the label is a column header of the table in
    docs/definitions.md that the text comes from (None for running text). Every label and text is quoted from that
    page (code marks and emphasis left out), so the report defines each number exactly as the documentation does."""

    term: str
    parts: tuple[tuple[str | None, str], ...]

    @property
    def text(self) -> str:
        return "; ".join(text if label is None else f"{label}: {text}" for label, text in self.parts)


def _d(term: str, *parts: str | tuple[str, str]) -> Definition:
    return Definition(term, tuple((None, p) if isinstance(p, str) else p for p in parts))


#: The definitions of every number the report shows (docs/definitions.md).
DEFINITIONS: tuple[Definition, ...] = (
    _d("n", "records in scope (all records, minus those the drop policy removes)"),
    _d("f_j", "size of class j as an attacker sees it (classes.sizes)"),
    _d("n_j", "records that have class j's QI pattern (classes.counts; equals f_j except under wildcard)"),
    _d("F_j", "people in the population who match class j"),
    _d("tau", "max_risk, the highest acceptable risk of one record (default 0.2)"),
    _d(
        "Equivalence class",
        "Records with equal values on every quasi-identifier (QI) form an equivalence class (Sweeney 2002).",
    ),
    _d("Class-size table", "for each size s, the number of classes of size s and the records in them."),
    _d("Records below k", "records whose class has f_j < k (strict)"),
    _d("Sample uniques", "records in classes of size 1."),
    _d(
        "k-anonymity",
        ("per class", "f_j"),
        ("a class satisfies the target iff", "f_j >= k"),
        "dataset k = min f_j",
    ),
    _d(
        "(alpha,k)-anonymity",
        ("per class", "max_i q_ji"),
        ("a class satisfies the target iff", "<= alpha (non-strict)"),
        "Wong et al. 2006",
    ),
    _d(
        "distinct l-diversity",
        ("per class", "distinct sensitive values"),
        ("a class satisfies the target iff", ">= l"),
        "missing counts as a value",
    ),
    _d(
        "entropy l-diversity",
        ("per class", "min(exp(H_j), distinct), H_j = -sum q ln q (natural log)"),
        ("a class satisfies the target iff", ">= l"),
    ),
    _d(
        "recursive (c,l)-diversity",
        ("per class", "r_1 / (r_l + ... + r_d) (counts sorted descending)"),
        ("a class satisfies the target iff", "r_1 < c * tail (strict)"),
        "reported: that ratio and the minimal integer c; inf with fewer than l values",
    ),
    _d(
        "t-closeness",
        ("per class", "earth mover's distance from p"),
        ("a class satisfies the target iff", "<= t"),
        "equal: 1/2 sum |q - p|; ordered: 1/(m-1) sum_i |sum_{k<=i} (q_k - p_k)|; hierarchical: ARX's hierarchical "
        "distance",
    ),
    _d(
        "delta-disclosure",
        ("per class", "max_i |log2(q_ji / p_i)| over values present"),
        ("a class satisfies the target iff", "< delta (strict)"),
        "log base 2 as ARX",
    ),
    _d(
        "basic beta-likeness",
        ("per class", "max_i (q_ji - p_i) / p_i"),
        ("a class satisfies the target iff", "<= beta"),
    ),
    _d(
        "enhanced beta-likeness",
        ("per class", "basic value, or inf when some (q - p)/p > -ln p_i"),
        ("a class satisfies the target iff", "<= beta"),
    ),
    _d("Dataset value of a model", "A dataset value is the worst per-class value"),
    _d(
        "Prosecutor risk",
        "prosecutor (attacker knows the person is in the data)",
        ("record risk", "1 / f_j"),
        ("highest", "1 / min f_j"),
        ("average", "(1/n) sum n_j / f_j (J / n without wildcard)"),
        ("records at risk", "share of records with risk > tau (strict)"),
    ),
    _d(
        "Journalist risk",
        "journalist (person is in the population)",
        ("record risk", "1 / F_j"),
        ("highest", "1 / min F_j"),
        ("average", "(1/n) sum n_j / F_j"),
        ("records at risk", "share with 1 / F_j > tau"),
    ),
    _d(
        "Marketer risk",
        "marketer (re-identify as many as possible)",
        ("average", "(1/n) sum n_j / F_j, the expected share re-identified"),
    ),
    _d(
        "Population uniques",
        "Pitman, Zayatz and SNB (Chen & Keller-McNulty 1998) estimators and Dankar et al.'s decision rule, ported "
        "from ARX.",
    ),
    _d(
        "Individual risk",
        "Individual risk (sdcMicro, Benedetti-Franconi) with sampling weights; expected re-identifications are the "
        "sum of individual risks.",
    ),
    _d(
        "Household risk",
        "the household risk of a household is the probability that at least one of its members is re-identified, "
        "the members' re-identifications taken as independent: hr_h = 1 - prod_i (1 - r_i) over the members i of "
        "household h, and every member's record risk is hr_h.",
        ("member risk r_i", "sdcMicro's individual risk with sampling weights; 1 / f_j without weights"),
        ("expected re-identifications", "ER_h = sum over records of hr_h, each household counted once per member"),
        ("household global risk", "ER_h / n"),
        "a record without a household id is a household of its own (hr = r)",
    ),
    _d(
        "Verdict: k",
        ("passes iff", "every class has f_j >= k"),
        ("achieved (shown)", "min f_j"),
        ("records failing", "records in classes with f_j < k"),
    ),
    _d(
        "Verdict: l",
        ("passes iff", "every class has >= l distinct values of each sensitive attribute"),
        ("achieved (shown)", "the smallest count"),
        ("records failing", "records of classes that fail on some attribute"),
    ),
    _d(
        "Verdict: t",
        (
            "passes iff",
            "every class's distance is <= t for each sensitive attribute (the distance the diagnosis measured)",
        ),
        ("achieved (shown)", "the largest distance"),
    ),
    _d(
        "Verdict: max_risk",
        ("passes iff", "no record has prosecutor risk 1 / f_j > max_risk"),
        ("achieved (shown)", "the highest prosecutor risk"),
        ("records failing", "records with 1 / f_j > max_risk"),
    ),
    _d("Records at risk", "Records at risk is the number of records whose class fails at least one target."),
    _d(
        "QI combinations",
        "classes, k, sample uniques, distinction (classes / records) and separation (share of record pairs that "
        "differ on the subset), as ARX's QI table (Motwani & Xu 2007)",
    ),
    _d(
        "Minimal sample uniques",
        "the smallest QI subsets on which it is already unique (SUDA, Elliot et al. 2002)",
    ),
    _d("Generalization", "Generalization publishes each QI at one level of its hierarchy"),
    _d(
        "Record suppression",
        "Record suppression removes the records of classes under k, smallest first, within the suppression limit.",
    ),
    _d(
        "Search",
        "the least-lossy node of the generalization lattice plus a suppression limit meeting k, l, t and the "
        "highest prosecutor risk",
    ),
    _d(
        "Information loss",
        "Information loss (ARX definitions): loss (granularity, 0..1), precision (generalization intensity, 0..1), "
        "discernibility (sum f_j^2 + n * suppressed), aecs (average class size) and non-uniform entropy (bits, log "
        "base 2).",
    ),
    _d("Postcode units", "UK units fail when population < threshold (the unit must hold at least the threshold)"),
)

#: The definition added when the contract marks a person id (docs/definitions.md, "People with several rows").
PEOPLE_DEFINITION = _d(
    "Counted in people",
    "class sizes f_j, k, sample uniques, records below k, prosecutor/journalist/marketer risk and records at risk "
    "count people (n is the number of people in scope)",
)
