"""The release report: what a privacy officer reads before signing off a release, assembled in one object.

A :class:`ReleaseReport` is built by :func:`build_report` from a table, its data contract (roles and types), the
release targets and, optionally, the fix applied before release (:class:`AppliedFix`: a recipe re-applied,
:func:`recipe_fix`, or the least-lossy search, :func:`search_fix`). It holds the core's results, and the few
tables derived from them for display:

* the fingerprint of the input (:class:`Fingerprint`: name, SHA-256, rows, columns, dates);
* the *released table*'s diagnosis (the fixed table when there is a fix, else the input) and the core's verdict
  against the targets (:meth:`~privdash.measure.diagnose.Diagnosis.check`);
* with a fix, the diagnosis of the input, the steps, the recipe and the information loss (:class:`FixSummary`);
* the QI-combination analysis of the input: which attributes single people out;
* for each postcode quasi-identifier, its units with their census populations (:class:`PostcodeUnits`);
* the definitions of every number shown (:data:`DEFINITIONS`, worded as docs/definitions.md words them).

Values never shown
------------------
The report never prints a quasi-identifier value of an equivalence class smaller than the target k: next to the
other facts of the report, such a value points at the few people who have it. A list of classes shows only classes
of at least k records of the released table, with their values, and counts the smaller ones; a list of values (the
published values of a fix, postcode units) shows a value only when a record having it is in a class of at least k
records of the released table, and counts the others. A class of one record is never shown, even with the target
k = 1 (:func:`shown_threshold`). The hierarchies of a recipe are summarised, not printed, since their leaves list
original values (:func:`condensed_recipe`).

People with several rows
------------------------
When the contract marks a person id, every count is of people (the diagnosis with ``entity``): a class is a group of
people with equal keys, the rule above holds for classes of people (a class's key, its people's QI tuples, is shown
only for classes of at least k people), and the sections that count rows (the QI-combination analysis, postcode
units, the fix's estimates) are left out with the reason (:attr:`ReleaseReport.left_out`, ``combinations_note``).

:func:`report_for_state` builds the report of a dashboard view (its dataset, roles, targets and fix steps); the
finished files wait for their download in a disk cache (:class:`ReportFiles`). Rendering (HTML and PDF) is
:mod:`privdash.application.report_render`. Nothing here imports Dash.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

import privdash
from privdash.application.fixes import adapt_contract, describe_spec
from privdash.application.riskview import combinations_left_out, missing_effect, size_bins
from privdash.application.services import default_k_values
from privdash.data.contract import ColumnRole, DataContract, FieldMetadata, StatisticalType
from privdash.data.tables import csv_text
from privdash.errors import ColumnError, ParameterError, PrivdashError, TooManyQuasiIdentifiersError
from privdash.geo.postcodes import (
    DEFAULT_POPULATION_THRESHOLD,
    PopulationTable,
    Strategy,
    fails_threshold,
    parse_postcodes,
)
from privdash.measure.classes import EquivalenceClasses, MissingPolicy
from privdash.measure.combinations import (
    CombinationRisk,
    MinimalSampleUniques,
    combination_risk,
    minimal_sample_uniques,
)
from privdash.measure.diagnose import Diagnosis, diagnose
from privdash.measure.entities import EntityKey
from privdash.measure.risk import DEFAULT_MAX_RISK, RiskCurve, records_at_risk_curve
from privdash.measure.verdict import Verdict
from privdash.search.entities import people_generalization
from privdash.search.lattice import SearchResult, optimal_generalization
from privdash.targets import DEFAULT_MAX_SUPPRESSION, PrivacyTargets
from privdash.transform.hierarchy import TOP, Hierarchy, HierarchyError, search_hierarchy
from privdash.transform.steps import Recipe, TransformResult, apply_recipe
from privdash.utility.estimates import Estimate, EstimateComparison, compare_estimates
from privdash.utility.metrics import InformationLoss, cells_changed, information_loss

if TYPE_CHECKING:
    from privdash.application.services import Services
    from privdash.application.state import ViewState

__all__ = [
    "DEFINITIONS",
    "PEOPLE_DEFINITION",
    "AppliedFix",
    "ColumnInfo",
    "Definition",
    "Fingerprint",
    "FixSummary",
    "PostcodeUnits",
    "ReleaseReport",
    "ReportFiles",
    "build_report",
    "condensed_recipe",
    "file_fingerprint",
    "printable_values",
    "recipe_fix",
    "report_for_state",
    "search_fix",
    "shown_threshold",
    "table_fingerprint",
]

#: Classes listed with their values (the smallest ones of at least k records).
CLASS_ROWS = 8
#: Postcode units listed (smallest census population first).
UNIT_ROWS = 30
#: QI combinations listed (most sample uniques first).
COMBINATION_ROWS = 6
#: Published values shown per generalized column.
EXAMPLES = 4

Progress = Callable[[int, str], None]

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


# --- definitions -----------------------------------------------------------------------------------------------


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
        "Record suppression removes the records of classes under k, smallest first, within a budget.",
    ),
    _d(
        "Search",
        "the least-lossy node of the generalization lattice plus a suppression budget meeting k, l, t and the "
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


# --- inputs ------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Fingerprint:
    """What identifies the input: its name, the SHA-256 of ``hashed`` (the file's bytes, or the table's content
    when no file is at hand), its size in bytes, rows, columns, when the file was last modified and when the report
    was made (ISO 8601, UTC)."""

    name: str
    sha256: str
    hashed: str
    size_bytes: int | None
    rows: int
    columns: int
    modified: str | None
    created: str


def _now(now: datetime | None) -> str:
    return (now or datetime.now(UTC)).astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def file_fingerprint(path: str | os.PathLike[str], data: pd.DataFrame, *, now: datetime | None = None) -> Fingerprint:
    """The fingerprint of a file (SHA-256 of its bytes, read in blocks) that was read into ``data``."""
    source = Path(path)
    digest = hashlib.sha256()
    try:
        with source.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
        stat = source.stat()
    except OSError as exc:
        raise PrivdashError(f"Cannot read {source.name} to fingerprint it: {exc.strerror or exc}.") from exc
    modified = datetime.fromtimestamp(stat.st_mtime, UTC)
    return Fingerprint(
        name=source.name,
        sha256=digest.hexdigest(),
        hashed="the file's bytes",
        size_bytes=int(stat.st_size),
        rows=len(data),
        columns=len(data.columns),
        modified=_now(modified),
        created=_now(now),
    )


def table_fingerprint(name: str, data: pd.DataFrame, *, now: datetime | None = None) -> Fingerprint:
    """The fingerprint of a table whose file is not kept: SHA-256 of its CSV text (UTF-8, comma-separated, header
    row, no formula escaping), which the same table always gives."""
    text = csv_text(data, escape_formulas=False).encode("utf-8")
    return Fingerprint(
        name=name,
        sha256=hashlib.sha256(text).hexdigest(),
        hashed="the table's content as CSV text (the uploaded file itself is not kept)",
        size_bytes=None,
        rows=len(data),
        columns=len(data.columns),
        modified=None,
        created=_now(now),
    )


@dataclass(frozen=True, eq=False)
class AppliedFix:
    """A fix applied to the input before release.

    Attributes
    ----------
    description
        What was done, in one sentence.
    recipe
        The steps, every parameter resolved (re-applies the fix to data of the same schema).
    data
        The published table.
    kept_rows
        Positions in the input of the published rows (None when every row is kept).
    results
        The core's result of each step.
    hierarchies
        The hierarchy of each generalized quasi-identifier (for the information-loss metrics).
    wildcard
        True after cell suppression: blanked cells stand for any value, so the published classes are formed with
        wildcards.
    search
        The least-lossy search behind the fix, if any.
    contract
        The published table's contract (default: the input's, adapted by
        :func:`~privdash.application.fixes.adapt_contract`).
    """

    description: str
    recipe: Recipe
    data: pd.DataFrame
    kept_rows: np.ndarray | None
    results: tuple[TransformResult, ...]
    hierarchies: Mapping[str, Hierarchy] = field(default_factory=dict)
    wildcard: bool = False
    search: SearchResult | None = None
    contract: DataContract | None = None


def search_fix(
    data: pd.DataFrame,
    contract: DataContract,
    targets: PrivacyTargets,
    *,
    hierarchies: Mapping[str, Hierarchy] | None = None,
    max_suppression: float = DEFAULT_MAX_SUPPRESSION,
    metric: str = "loss",
    population_size: float | None = None,
    sampling_fraction: float | None = None,
    entity_key: str = EntityKey.SET.value,
) -> AppliedFix:
    """The least-lossy generalization and record suppression meeting ``targets``
    (:func:`~privdash.search.lattice.optimal_generalization`), over ``hierarchies`` or, without them, the
    hierarchy the dashboard's search uses for each quasi-identifier's type
    (:func:`~privdash.transform.hierarchy.search_hierarchy`). With a global or population target
    (``global_risk``, ``k_map`` ...) the contract's weight column and ``population_size`` or ``sampling_fraction``
    give the population (:mod:`privdash.transform.release_targets`).

    With a person id in the contract (``contract.entity``) the search is judged on people
    (:func:`~privdash.search.entities.people_generalization`, ``entity_key`` the person key): k, l, t and
    max_risk count people, suppression removes whole people and ``max_suppression`` is a share of the people."""
    qis = list(contract.quasi_identifiers)
    if not qis:
        raise ColumnError("The least-lossy search needs at least one quasi-identifier.")
    if entity_key != EntityKey.SET.value and contract.entity is None:
        raise ParameterError(
            "The person key chooses how a person's rows form their key; the contract marks no person id."
        )
    if hierarchies is None:
        chosen = {name: search_hierarchy(data[name], contract[name].statistical_type, targets.k) for name in qis}
    else:
        chosen = {name: hierarchies[name] for name in qis if name in hierarchies}
        absent = [name for name in qis if name not in chosen]
        if absent:
            raise HierarchyError(f"No hierarchy given for: {', '.join(repr(name) for name in absent)}.")
    wants_sensitive = targets.l is not None or targets.t is not None
    if contract.entity is not None:
        return _people_fix(data, contract, targets, chosen, entity_key, max_suppression, metric, wants_sensitive)
    release: dict[str, Any] = {}
    if targets.judged_per_node:
        release = {
            "targets": replace(targets, sensitive=tuple(targets.sensitive or contract.sensitive))
            if wants_sensitive
            else replace(targets, sensitive=()),
            "weights": contract.weight,
            "population_size": population_size,
            "sampling_fraction": sampling_fraction,
        }
    result = optimal_generalization(
        data,
        chosen,
        quasi_identifiers=qis,
        k=targets.k,
        l=targets.l,
        t=targets.t,
        sensitive=(targets.sensitive or contract.sensitive) if wants_sensitive else (),
        t_distance=targets.t_distance,
        max_risk=targets.max_risk,
        max_suppression=max_suppression,
        metric=metric,
        **release,
    )
    description = (
        f"Least-lossy generalization meeting {result.targets.describe()}, with at most "
        f"{result.max_suppression:.2%} of the records suppressed (metric: {result.metric.value}); "
        f"{result.nodes_checked:,} of {result.lattice_size:,} lattice nodes checked."
    )
    return AppliedFix(
        description=description,
        recipe=result.recipe,
        data=result.data,
        kept_rows=_positions(result.transform.kept_rows),
        results=(result.transform,),
        hierarchies=chosen,
        search=result,
    )


def _people_fix(
    data: pd.DataFrame,
    contract: DataContract,
    targets: PrivacyTargets,
    hierarchies: Mapping[str, Hierarchy],
    entity_key: str,
    max_suppression: float,
    metric: str,
    wants_sensitive: bool,
) -> AppliedFix:
    """:func:`search_fix` with a person id: the least-lossy search judged on people."""
    entity = contract.entity
    assert entity is not None
    others = [name for name in targets.names if name not in ("k", "l", "t", "max_risk")]
    if others:
        raise ParameterError(
            f"The least-lossy search on people meets k, l, t and max_risk; {', '.join(others)} cannot be searched "
            f"with a person id ('{entity}'): leave them out of the targets of the fix."
        )
    result = people_generalization(
        data,
        hierarchies,
        entity=entity,
        quasi_identifiers=list(contract.quasi_identifiers),
        entity_key=entity_key,
        k=targets.k,
        l=targets.l,
        t=targets.t,
        sensitive=(targets.sensitive or contract.sensitive) if wants_sensitive else (),
        t_distance=targets.t_distance,
        max_risk=targets.max_risk,
        max_suppression=max_suppression,
        metric=metric,
    )
    description = (
        f"Least-lossy generalization meeting {result.targets.describe()} counted in people (person id '{entity}', "
        f"key: the {result.entity_key.value} of each person's QI tuples), with at most {max_suppression:.2%} of the "
        f"people suppressed, whole people (metric: {result.metric.value}); {result.people_suppressed:,} people "
        f"({result.rows_suppressed:,} rows) suppressed; {result.nodes_counted:,} of {result.nodes:,} lattice nodes "
        "checked."
    )
    return AppliedFix(
        description=description,
        recipe=result.recipe,
        data=result.transform.data,
        kept_rows=_positions(result.transform.kept_rows),
        results=(result.transform,),
        hierarchies=dict(hierarchies),
    )


def recipe_fix(
    data: pd.DataFrame, recipe: Recipe, *, name: str = "the recipe", secrets: Mapping[str, Any] | None = None
) -> AppliedFix:
    """``recipe`` re-applied to ``data`` (:func:`~privdash.transform.steps.apply_recipe`); ``secrets`` as
    there (the pseudonymization key)."""
    published, results = apply_recipe(data, recipe, secrets=secrets)
    kept: np.ndarray | None = None
    hierarchies: dict[str, Hierarchy] = {}
    for result in results:
        rows = _positions(result.kept_rows)
        if rows is not None:
            kept = rows if kept is None else kept[rows]
        if result.step.kind == "generalize":
            for column, spec in dict(result.step.params.get("columns", {})).items():
                if column in data.columns and column not in hierarchies:
                    hierarchies[str(column)] = Hierarchy.from_dict(spec["hierarchy"], data[str(column)])
    kinds = ", ".join(result.step.kind for result in results) or "no step"
    return AppliedFix(
        description=f"{name} re-applied: {len(results)} step{'s' if len(results) != 1 else ''} ({kinds}).",
        recipe=recipe,
        data=published,
        kept_rows=kept,
        results=tuple(results),
        hierarchies=hierarchies,
        wildcard=any(result.step.kind == "suppress_cells" for result in results),
    )


def _positions(rows: Any) -> np.ndarray | None:
    return None if rows is None else np.asarray(rows, dtype=np.int64)


# --- the report ----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ColumnInfo:
    """One column of the input: its role, its statistical type, and what the release does with it."""

    name: str
    role: str
    type: str
    released: str


@dataclass(frozen=True, eq=False)
class PostcodeUnits:
    """The postcode units of one postcode quasi-identifier of the released table.

    ``units`` lists the units shown (columns ``code``, ``level``, ``records``, ``population`` (census, NaN when not
    known), ``fails`` (population below ``threshold``; NA when not known)), smallest population first, at most
    :data:`UNIT_ROWS`; ``more`` units are left out for length. ``withheld_units`` units (``withheld_records``
    records) have records only in classes smaller than the shown threshold: they are counted, not named.
    ``failing`` counts every unit with a known population under the threshold, withheld ones included.
    """

    column: str
    source: str | None
    threshold: int
    units: pd.DataFrame
    n_units: int
    failing: int
    more: int
    withheld_units: int
    withheld_records: int
    missing_records: int
    #: Every named unit (``code``, ``level``, ``fails``) with its polygon, for the map (None without polygons): the
    #: units of :attr:`units` and those left out for length, never the withheld ones.
    mapped: Any = None
    #: Postcode areas drawn as the map's background (outlines only), or None.
    outline: Any = None


@dataclass(frozen=True, eq=False)
class FixSummary:
    """A fix in the report: what it did, the table before it, and what it cost.

    ``columns`` has one row per quasi-identifier of the input: ``column``, ``change`` (e.g. ``level 3 of 4``),
    ``distinct_before``, ``distinct_after``, ``cells_changed``, ``share_changed`` and ``examples`` (published values
    that may be shown, see the module docstring). ``steps`` are ``(kind, facts)`` pairs (numbers and column names
    only). ``loss_before`` / ``loss_after`` are the information-loss metrics of the input (the baseline) and of the
    published table, or None with ``loss_note`` saying why they are not defined. ``estimates`` are the steward's
    estimates before and after (:mod:`privdash.utility.estimates`), or ``estimates_note`` says why not.
    """

    description: str
    recipe: Recipe
    recipe_json: str
    recipe_sha256: str
    before: Diagnosis
    before_verdict: Verdict
    steps: tuple[tuple[str, str], ...]
    columns: pd.DataFrame
    rows_in: int
    rows_out: int
    loss_before: InformationLoss | None
    loss_after: InformationLoss | None
    loss_note: str | None
    estimates: tuple[EstimateComparison, ...] = ()
    estimates_note: str | None = None
    #: With a person id: the people of the input and of the published table (None without).
    people_in: int | None = None
    people_out: int | None = None


@dataclass(frozen=True, eq=False)
class ReleaseReport:
    """Everything the release report shows (see the module docstring).

    Attributes
    ----------
    title
        The report's title (the input's name).
    fingerprint
        The input's fingerprint.
    columns
        Roles and types of the input's columns.
    missing_policy, missing_rule, missing_effect
        The missing-value policy, its rule and what it did to the records with a missing QI value.
    targets, verdict
        The release targets and the core's verdict on the released table.
    diagnosis
        The released table's diagnosis.
    size_bins
        The class-size table for display (:func:`~privdash.application.riskview.size_bins`).
    shown_classes
        The smallest classes of at least ``threshold`` records (QI values, ``size``), at most :data:`CLASS_ROWS`.
    withheld_classes, withheld_records
        Classes smaller than ``threshold`` and their records: counted, never listed.
    threshold
        Classes smaller than this are never shown with values (:func:`shown_threshold`).
    risk_curve
        Records whose prosecutor risk is above each threshold, for the released table.
    combinations, msus, combinations_note
        The QI-combination analysis of the input (None with a note when it could not run).
    postcodes
        One :class:`PostcodeUnits` per postcode quasi-identifier.
    fix
        The fix, if any.
    parameters
        What the report was made with, as ``(name, value)`` pairs (command, options).
    version
        The privdash version.
    people
        With a person id: the sentence saying that every count is of people (None without).
    left_out
        Sections that could not be made (e.g. postcode units with a person id), each with why.
    """

    title: str
    fingerprint: Fingerprint
    columns: tuple[ColumnInfo, ...]
    missing_policy: MissingPolicy
    missing_rule: str
    missing_effect: str
    targets: PrivacyTargets
    verdict: Verdict
    diagnosis: Diagnosis
    size_bins: pd.DataFrame
    shown_classes: pd.DataFrame
    withheld_classes: int
    withheld_records: int
    threshold: int
    risk_curve: RiskCurve
    combinations: CombinationRisk | None
    msus: MinimalSampleUniques | None
    combinations_note: str | None
    postcodes: tuple[PostcodeUnits, ...]
    fix: FixSummary | None
    parameters: tuple[tuple[str, str], ...]
    version: str = privdash.__version__
    definitions: tuple[Definition, ...] = DEFINITIONS
    people: str | None = None
    left_out: tuple[str, ...] = ()

    @property
    def unit(self) -> str:
        """What the counts count: ``people`` with a person id, else ``records``."""
        return "people" if self.diagnosis.entity is not None else "records"

    @property
    def released_rows(self) -> int:
        return self.diagnosis.rows

    def top_combinations(self, limit: int = COMBINATION_ROWS) -> pd.DataFrame:
        """The QI subsets with the most sample uniques (smallest subsets first among equals)."""
        if self.combinations is None:
            return pd.DataFrame()
        table = self.combinations.table
        return table.sort_values(["sample_uniques", "size"], ascending=[False, True], kind="stable").head(limit)


def shown_threshold(targets: PrivacyTargets) -> int:
    """The smallest class whose values the report may show: the target k, and never a class of one record."""
    return max(int(targets.k), 2)


def printable_values(values: pd.Series, classes: EquivalenceClasses, threshold: int) -> pd.Index:
    """The distinct values of ``values`` (one per record of the table ``classes`` were formed from) that some
    record in a class of at least ``threshold`` records has: the values the report may show."""
    sizes = classes.record_sizes()
    return pd.Index(values[sizes >= threshold].dropna().unique())


#: What the report prints instead of the seed of a random step (noise, swapping, PRAM, geomasking).
WITHHELD_SEED = "withheld (with the seed and the release, the random masking could be undone)"


def _is_seed(key: Any, value: Any) -> bool:
    return key == "seed" and isinstance(value, int) and not isinstance(value, bool)


def condensed_recipe(recipe: Recipe) -> str:
    """The recipe's JSON with each hierarchy table replaced by its shape: the leaves of a hierarchy are original
    values (those of small classes among them), so the report describes them instead of printing them. Rule-based
    hierarchies (settings only) are kept as they are. The seed of a random step is withheld: whoever holds it and
    the release can redraw the noise and subtract it (the recipe's SHA-256 still identifies the whole recipe)."""

    def condense(value: Any) -> Any:
        if isinstance(value, Mapping):
            rows = value.get("rows")
            if set(value) == {"rows"} and isinstance(rows, list):
                levels = len(rows[0]) if rows and isinstance(rows[0], list) else 0
                return {"rows": f"{len(rows):,} leaves x {levels} levels"}
            return {key: WITHHELD_SEED if _is_seed(key, item) else condense(item) for key, item in value.items()}
        if isinstance(value, list):
            return [condense(item) for item in value]
        return value

    return _compact_json(condense(recipe.to_dict()))


def _compact_json(value: Any, indent: str = "", width: int = 96) -> str:
    """JSON indented by two spaces, with every object or list that fits in ``width`` characters on one line."""
    flat = json.dumps(value, ensure_ascii=False)
    if not isinstance(value, Mapping | list) or len(indent) + len(flat) <= width or not value:
        return flat
    inner = indent + "  "
    if isinstance(value, Mapping):
        items = [f"{inner}{json.dumps(str(key))}: {_compact_json(item, inner, width)}" for key, item in value.items()]
        return "{\n" + ",\n".join(items) + "\n" + indent + "}"
    items = [inner + _compact_json(item, inner, width) for item in value]
    return "[\n" + ",\n".join(items) + "\n" + indent + "]"


def build_report(
    data: pd.DataFrame,
    contract: DataContract,
    targets: PrivacyTargets,
    fingerprint: Fingerprint,
    *,
    missing: str | MissingPolicy = MissingPolicy.VALUE,
    population: float | pd.DataFrame | None = None,
    population_count: str | None = None,
    sampling_fraction: float | None = None,
    max_risk: float | None = None,
    fix: AppliedFix | None = None,
    postcode_population: PopulationTable | None = None,
    postcode_threshold: int = DEFAULT_POPULATION_THRESHOLD,
    postcode_polygons: Mapping[str, Any] | None = None,
    parameters: Sequence[tuple[str, str]] = (),
    progress: Progress | None = None,
    estimates: Sequence[Estimate | str] = (),
    model_risk: Sequence[str] = (),
    entity_key: str | EntityKey = EntityKey.SET,
) -> ReleaseReport:
    """Assemble the release report of ``data`` (the input) with the roles and types of ``contract``.

    With a person id in the contract (``contract.entity``: several rows per person) every count is of people
    (:func:`~privdash.measure.diagnose.diagnose` with ``entity``; ``entity_key`` ``set`` or ``multiset`` is
    the person key): classes, k, risks, records at risk and the verdict. The QI-combination analysis and the postcode
    units count rows and are left out, each with a sentence saying why.

    ``max_risk`` is the risk threshold of the records-at-risk counts (default: the targets' ``max_risk``, else
    0.2); ``population``, ``population_count`` and ``sampling_fraction`` are those of
    :func:`~privdash.measure.diagnose.diagnose`. A population table cannot go with a fix (its quasi-identifier
    values would have to be generalized the same way): give the population size instead. ``postcode_population``
    gives the census populations of the postcode units, ``postcode_polygons`` their shapes for the map
    (``{"district": GeoDataFrame, "area": GeoDataFrame}`` indexed by code, as the Postcodes page's layers).
    ``progress(percent, text)`` is called at each stage. ``estimates`` (with a fix): the steward's estimates,
    shown before and after the fix, weighted by the contract's weight column. ``model_risk``: the model-based risk
    methods (sdcMicro ``modRisk``) fitted to the released table.
    """
    report_progress = progress or (lambda _percent, _text: None)
    policy = MissingPolicy.parse(missing)
    if not contract.quasi_identifiers:
        raise ColumnError("The report needs at least one quasi-identifier.")
    entity = contract.entity
    key = EntityKey.parse(entity_key)
    if entity is None and key != EntityKey.SET:
        raise ParameterError(
            "The person key chooses how a person's rows form their key; the contract marks no person id."
        )
    if fix is not None and isinstance(population, pd.DataFrame):
        raise ParameterError(
            "A population table cannot be combined with a fix (its values are not generalized the same way); "
            "give the population size or the sampling fraction instead."
        )
    tau = max_risk if max_risk is not None else (targets.max_risk or DEFAULT_MAX_RISK)
    ks = default_k_values(targets.k)
    options: dict[str, Any] = {
        "population": population,
        "population_count": population_count,
        "sampling_fraction": sampling_fraction,
        "max_risk": tau,
        "k_values": ks,
        "entity_key": key,
    }
    report_progress(5, "Diagnosing the table ...")
    # the models are fitted to the table released: the input's when there is no fix
    before = diagnose(data, contract=contract, missing=policy, model_risk=() if fix else model_risk, **options)
    released, released_contract = data, contract
    diagnosis = before
    if fix is not None:
        report_progress(25, "Diagnosing the released table ...")
        generalized = [name for name in fix.hierarchies if name in fix.data.columns]
        released = fix.data
        released_contract = fix.contract or adapt_contract(contract, released, generalized)
        if entity is not None:
            released, released_contract = _with_person_id(data, entity, fix, released_contract)
        diagnosis = diagnose(
            released,
            contract=released_contract,
            missing=MissingPolicy.WILDCARD if fix.wildcard else policy,
            model_risk=model_risk,
            **options,
        )
    verdict = diagnosis.check(targets)
    threshold = shown_threshold(targets)
    classes = diagnosis.classes

    left_out: list[str] = []
    report_progress(40, "Finding the QI combinations that single people out ...")
    if entity is None:
        combinations, msus, combinations_note = _combinations(data, list(contract.quasi_identifiers), policy, targets.k)
    else:
        combinations, msus = None, None
        combinations_note = combinations_left_out(entity)

    report_progress(65, "Listing classes and postcode units ...")
    shown = classes.sizes >= threshold
    keys = classes.keys()
    keys["size"] = classes.sizes
    smallest = keys[shown].sort_values("size", kind="stable").head(CLASS_ROWS).reset_index(drop=True)
    postcode_columns = [
        name
        for name in contract.quasi_identifiers
        if contract[name].statistical_type == StatisticalType.POSTCODE and name in released.columns
    ]
    if entity is not None and postcode_columns:
        left_out.append(
            f"The postcode units of {', '.join(postcode_columns)} are left out: they count the rows of each unit, "
            f"and a person of '{entity}' may have rows in several units, so they cannot be counted in people."
        )
        postcode_columns = []
    postcodes = tuple(
        _postcode_units(released, name, classes, threshold, postcode_population, postcode_threshold, postcode_polygons)
        for name in postcode_columns
    )
    summary = None
    if fix is not None:
        report_progress(80, "Measuring what the fix costs ...")
        summary = _fix_summary(data, contract, fix, before, targets, classes, threshold)
        if entity is not None:
            summary = replace(
                summary, people_in=int(data[entity].nunique()), people_out=int(released[entity].nunique())
            )
        if estimates and entity is not None:
            summary = replace(
                summary,
                estimates_note=(
                    "The estimates are left out: they are computed over rows, and with a person id a group of k rows "
                    "may be one person, so the rule that withholds numbers about fewer than k people cannot be kept."
                ),
            )
        elif estimates:
            summary = _with_estimates(summary, data, contract, fix, estimates)
    report_progress(95, "Writing the report ...")
    return ReleaseReport(
        title=fingerprint.name,
        fingerprint=fingerprint,
        columns=_columns(contract, released_contract, fix),
        missing_policy=policy,
        missing_rule=POLICY_RULES[policy],
        missing_effect=missing_effect(before) if entity is None else _people_missing_effect(data, before),
        targets=targets,
        verdict=verdict,
        diagnosis=diagnosis,
        size_bins=size_bins(classes.size_frequencies()),
        shown_classes=smallest,
        withheld_classes=int((~shown).sum()),
        withheld_records=int(classes.counts[~shown].sum()),
        threshold=threshold,
        risk_curve=records_at_risk_curve(diagnosis.risk.prosecutor),
        combinations=combinations,
        msus=msus,
        combinations_note=combinations_note,
        postcodes=postcodes,
        fix=summary,
        parameters=tuple(parameters),
        people=_people_sentence(diagnosis) if entity is not None else None,
        left_out=tuple(left_out),
        definitions=DEFINITIONS + ((PEOPLE_DEFINITION,) if entity is not None else ()),
    )


def _people_sentence(diagnosis: Diagnosis) -> str:
    """The report's statement that its counts are of people."""
    key = (
        "the set of their QI tuples (set)"
        if diagnosis.entity_key == EntityKey.SET.value
        else "their QI tuples with the number of rows of each (multiset)"
    )
    rows = diagnosis.rows - diagnosis.entity_rows_dropped
    return (
        f"Every count of this report is of people, not rows: {diagnosis.n_records:,} people in {rows:,} rows of the "
        f"released table (person id '{diagnosis.entity}'); a person's key is {key}, and people with equal keys form "
        "an equivalence class."
    )


def _people_missing_effect(data: pd.DataFrame, diagnosis: Diagnosis) -> str:
    """What the missing-value policy did, counted in rows and people (with a person id)."""
    qis = list(diagnosis.quasi_identifiers)
    missing = int(data[qis].isna().any(axis=1).sum())
    if diagnosis.missing_policy == MissingPolicy.DROP:
        return (
            f"{diagnosis.entity_rows_dropped:,} rows with a missing QI value left out; "
            f"{diagnosis.classes.n_dropped:,} people have no row left and are in no class"
        )
    return f"{missing:,} rows with a missing QI value: the missing value is a value inside their person's QI tuples"


def _with_person_id(
    data: pd.DataFrame, entity: str, fix: AppliedFix, contract: DataContract
) -> tuple[pd.DataFrame, DataContract]:
    """The released table and contract with the input's person id: a fix that drops the person-id column still
    publishes each person's rows, so they are counted in people by the input's ids (``kept_rows``)."""
    released = fix.data
    if entity not in released.columns:
        if fix.kept_rows is None and len(released) != len(data):
            raise ParameterError(
                f"The fix drops the person-id column '{entity}' and changes the rows without saying which are kept: "
                "the released table cannot be counted in people."
            )
        ids = data[entity].to_numpy() if fix.kept_rows is None else data[entity].to_numpy()[fix.kept_rows]
        released = released.assign(**{entity: ids})
    if contract.entity != entity:
        kept = tuple(item for item in contract.fields if item.name != entity and item.role != ColumnRole.ENTITY)
        contract = DataContract((*kept, FieldMetadata(entity, ColumnRole.ENTITY)))
    return released, contract


def _columns(contract: DataContract, released: DataContract, fix: AppliedFix | None) -> tuple[ColumnInfo, ...]:
    levels: dict[str, str] = {}
    if fix is not None:
        for result in fix.results:
            if result.step.kind == "generalize":
                for name, spec in dict(result.step.params.get("columns", {})).items():
                    level = int(spec.get("level", 0))
                    levels.setdefault(name, f"level {level}" if level else "unchanged")
    out = []
    for item in contract.fields:
        kind = item.statistical_type.value.lower()
        if item.ordinal_values is not None:
            kind += f" ({len(item.ordinal_values)} ordered values)"
        if item.name not in released:
            state = "dropped"
        elif fix is None:
            state = "as is"
        else:
            state = levels.get(item.name, "as is")
        out.append(ColumnInfo(item.name, ROLE_LABELS[item.role], kind, state))
    return tuple(out)


def _combinations(
    data: pd.DataFrame, qis: list[str], policy: MissingPolicy, k: int
) -> tuple[CombinationRisk | None, MinimalSampleUniques | None, str | None]:
    """The QI-combination analysis of the input; wildcard missing values are analysed as values (the analysis has
    no wildcards), as on the Risk page."""
    used = MissingPolicy.VALUE if policy == MissingPolicy.WILDCARD else policy
    note = "Missing values are analysed as values here (the analysis has no wildcards)." if used != policy else None
    try:
        risk = combination_risk(data, qis, k_threshold=k, missing=used)
        msus = minimal_sample_uniques(data, qis, missing=used)
    except TooManyQuasiIdentifiersError as exc:
        return None, None, str(exc)
    return risk, msus, note


def _postcode_units(
    data: pd.DataFrame,
    column: str,
    classes: EquivalenceClasses,
    threshold: int,
    table: PopulationTable | None,
    population_threshold: int,
    polygons: Mapping[str, Any] | None = None,
) -> PostcodeUnits:
    """Records per postcode unit (the district of a unit, sector or district postcode; the area of an area) of
    the released table, with the census population of the unit when ``table`` has it."""
    parsed = parse_postcodes(data[column].reset_index(drop=True))
    has_district = parsed["district"].notna().to_numpy()
    has_area = parsed["area"].notna().to_numpy()
    raw = data[column].reset_index(drop=True).astype(object)
    code = np.where(has_district, parsed["district"], np.where(has_area, parsed["area"], raw.astype(str)))
    level = np.where(has_district, "district", np.where(has_area, "area", "other"))
    present = raw.notna().to_numpy()
    frame = pd.DataFrame({"code": code[present], "level": level[present], "size": classes.record_sizes()[present]})
    grouped = frame.groupby(["code", "level"], sort=False)["size"].agg(records="size", largest="max").reset_index()
    population = pd.Series(np.nan, index=grouped.index)
    if table is not None:
        for name in ("district", "area"):
            if name in table.levels:
                rows = grouped["level"] == name
                population[rows] = grouped.loc[rows, "code"].map(table.population(name)).to_numpy(dtype=float)
    grouped["population"] = population.to_numpy(dtype=float)
    known = grouped["population"].notna().to_numpy()
    fails = fails_threshold(grouped["population"].fillna(0).to_numpy(), population_threshold, strategy=Strategy.OUTWARD)
    grouped["fails"] = pd.array(np.where(known, fails, False), dtype="boolean")
    grouped.loc[~known, "fails"] = pd.NA
    visible = grouped["largest"].to_numpy() >= threshold
    listed = grouped[visible].sort_values(["population", "records"], na_position="last", kind="stable")
    return PostcodeUnits(
        column=column,
        source=table.source if table is not None else None,
        threshold=population_threshold,
        units=listed.head(UNIT_ROWS)[["code", "level", "records", "population", "fails"]].reset_index(drop=True),
        n_units=len(grouped),
        failing=int((known & fails).sum()),
        more=max(len(listed) - UNIT_ROWS, 0),
        withheld_units=int((~visible).sum()),
        withheld_records=int(grouped.loc[~visible, "records"].sum()),
        missing_records=int((~present).sum()),
        mapped=_unit_shapes(listed, polygons),
        outline=(polygons or {}).get("area"),
    )


def _unit_shapes(units: pd.DataFrame, polygons: Mapping[str, Any] | None) -> Any:
    """The named units with their polygons (districts from the district layer, areas from the area layer)."""
    if not polygons or not len(units):
        return None
    import geopandas as gpd

    parts = []
    for level in ("district", "area"):
        layer = polygons.get(level)
        rows = units[units["level"] == level]
        if layer is None or not len(rows):
            continue
        shaped = rows.join(layer[["geometry"]], on="code", how="inner")
        parts.append(shaped[["code", "level", "fails", "geometry"]])
    if not parts:
        return None
    return gpd.GeoDataFrame(pd.concat(parts, ignore_index=True), geometry="geometry", crs="EPSG:4326")


# Summary facts of a step that name columns (the others are shown only when they are numbers).
_COLUMN_FACTS = frozenset({"column", "columns", "columns_dropped", "importance", "quasi_identifiers"})


def _step_facts(result: TransformResult, *, rows: bool = False) -> str:
    """A step's summary as ``name: value`` facts, numbers and column names only (a summary may hold values, e.g.
    a top-coding threshold or unreadable postcodes, which the report does not print). ``rows``: the report counts
    people, so the step's "records" are called rows."""
    parts = []
    for key, value in result.summary.items():
        if isinstance(value, bool | int | float | np.number):
            shown = f"{value:,}" if isinstance(value, int | np.integer) and not isinstance(value, bool) else str(value)
        elif isinstance(value, Mapping) and all(isinstance(v, int | float | np.number) for v in value.values()):
            shown = ", ".join(f"{k}={v}" for k, v in value.items())
        elif key in _COLUMN_FACTS and isinstance(value, str | list | tuple):
            shown = value if isinstance(value, str) else ", ".join(map(str, value))
        else:
            continue
        name = key.replace("_", " ")
        parts.append(f"{name.replace('records', 'rows') if rows else name}: {shown}")
    return "; ".join(parts)


def _flat_hierarchy(values: pd.Series) -> Hierarchy:
    """Every value to ``*``: the hierarchy of a quasi-identifier the fix did not generalize."""
    leaves = pd.Index(values.dropna().unique())
    return Hierarchy.from_rows(
        np.column_stack([np.asarray(leaves, dtype=object), np.full(len(leaves), TOP, dtype=object)])
    )


def _fix_summary(
    data: pd.DataFrame,
    contract: DataContract,
    fix: AppliedFix,
    before: Diagnosis,
    targets: PrivacyTargets,
    released: EquivalenceClasses,
    threshold: int,
) -> FixSummary:
    published = fix.data
    qis = list(contract.quasi_identifiers)
    people = contract.entity is not None
    changed_table = cells_changed(data, published, kept_rows=fix.kept_rows)
    changed = dict(zip(changed_table["column"], changed_table["changed"], strict=True))
    shares = dict(zip(changed_table["column"], changed_table["share"], strict=True))
    levels: dict[str, tuple[int, int]] = {}
    for result in fix.results:
        if result.step.kind == "generalize":
            for name, spec in dict(result.step.params.get("columns", {})).items():
                if name in fix.hierarchies:
                    levels.setdefault(name, (int(spec.get("level", 0)), fix.hierarchies[name].max_level))
    rows = []
    for name in qis:
        if name not in published.columns:
            rows.append((name, "dropped", int(data[name].nunique()), 0, 0, 0.0, ""))
            continue
        level, top = levels.get(name, (0, 0))
        change = f"level {level} of {top}" if name in levels else "not generalized"
        values = published[name].reset_index(drop=True)
        printable = printable_values(values, released, threshold)
        frequent = values[values.isin(printable)].value_counts().head(EXAMPLES).index
        rows.append(
            (
                name,
                change,
                int(data[name].nunique()),
                int(published[name].nunique()),
                int(changed.get(name, 0)),
                float(shares.get(name, 0.0)),
                ", ".join(map(str, frequent)),
            )
        )
    columns = pd.DataFrame(
        rows,
        columns=["column", "change", "distinct_before", "distinct_after", "cells_changed", "share_changed", "examples"],
    )
    loss_before = loss_after = None
    note = None
    kept = [name for name in qis if name in published.columns]
    try:
        hierarchies = {name: fix.hierarchies.get(name) or _flat_hierarchy(data[name]) for name in kept}
        loss_before = information_loss(data, data, hierarchies, quasi_identifiers=kept)
        loss_after = information_loss(data, published, hierarchies, quasi_identifiers=kept, kept_rows=fix.kept_rows)
    except PrivdashError as exc:
        note = (
            "The information-loss metrics are defined for generalization and record suppression only; "
            f"here they are not: {exc}"
        )
    text = fix.recipe.to_json()
    return FixSummary(
        description=fix.description,
        recipe=fix.recipe,
        recipe_json=condensed_recipe(fix.recipe),
        recipe_sha256=hashlib.sha256((text + "\n").encode("utf-8")).hexdigest(),
        before=before,
        before_verdict=before.check(targets),
        steps=tuple((result.step.kind, _step_facts(result, rows=people)) for result in fix.results),
        columns=columns,
        rows_in=len(data),
        rows_out=len(published),
        loss_before=loss_before,
        loss_after=loss_after,
        loss_note=note,
    )


def _with_estimates(
    summary: FixSummary,
    data: pd.DataFrame,
    contract: DataContract,
    fix: AppliedFix,
    estimates: Sequence[Estimate | str],
) -> FixSummary:
    """The summary with the steward's estimates before and after the fix (or why they could not be computed)."""
    try:
        comparisons = compare_estimates(data, fix.data, estimates, weights=contract.weight)
    except PrivdashError as exc:
        return replace(summary, estimates_note=f"The estimates could not be computed: {exc}")
    return replace(summary, estimates=comparisons)


# --- the dashboard's report ---------------------------------------------------------------------------------------


def report_for_state(
    services: Services,
    state: ViewState,
    progress: Progress | None = None,
    estimates: Sequence[Estimate | str] = (),
) -> ReleaseReport:
    """The release report of a dashboard view: its dataset, roles, missing-value policy, targets (l and t only with
    a sensitive attribute) and risk threshold, after the view's fix steps when it has any, with the steward's
    ``estimates`` before and after them. Postcode units get the census populations of the Postcodes page's
    settings when the shared data holds them."""
    from privdash.application.fixruns import FixRuns
    from privdash.application.postcodes import ReferenceDataMissing, settings_from_state

    report_progress = progress or (lambda _percent, _text: None)
    if not state.dataset:
        raise PrivdashError("No dataset is open.")
    report_progress(2, "Loading the table ...")
    loaded = services.dataset(state.dataset)
    contract = services.contract(loaded, state)
    contract.validate(loaded.frame)
    # The page's targets (riskview.view_targets): l and t only with a sensitive attribute to judge them on.
    measured = bool(contract.sensitive)
    targets = replace(state.targets, l=state.l if measured else None, t=state.t if measured else None, sensitive=())
    fix = None
    if state.fix:
        report_progress(10, "Applying the fix steps ...")
        run = FixRuns(services).run(state)
        if run.error is not None:
            raise PrivdashError(f"Fix step {(run.failed or 0) + 1} could not be applied: {run.error}")
        fix = AppliedFix(
            description="; ".join(describe_spec(spec) for spec in run.specs) + ".",
            recipe=run.recipe,
            data=run.data,
            kept_rows=run.kept_rows,
            results=run.results,
            hierarchies=dict(run.hierarchies),
            wildcard=run.wildcard,
            contract=run.contract,
        )
    geo, _problem = settings_from_state(state)
    table = None
    has_postcode = any(
        contract[name].statistical_type == StatisticalType.POSTCODE for name in contract.quasi_identifiers
    )
    polygons: dict[str, Any] = {}
    if has_postcode and geo.country == "uk":
        try:
            table = services.postcodes.population_table(geo.source)
        except ReferenceDataMissing:
            table = None
        layers = (("district", services.postcodes.district_layer), ("area", services.postcodes.area_layer))
        for level, layer in layers:
            with contextlib.suppress(ReferenceDataMissing):  # the map is left out without polygons
                polygons[level] = layer().frame
    fingerprint = table_fingerprint(loaded.title, loaded.frame)
    parameters = (
        ("dataset", loaded.title),
        ("targets", targets.describe()),
        ("risk threshold (max_risk)", f"{state.max_risk:g}"),
        ("missing values", state.missing.value),
        ("fix steps", str(len(state.fix))),
        ("made with", "the privdash dashboard"),
    )
    report = build_report(
        loaded.frame,
        contract,
        targets,
        fingerprint,
        missing=state.missing,
        max_risk=state.max_risk,
        fix=fix,
        postcode_population=table,
        postcode_threshold=geo.threshold,
        postcode_polygons=polygons or None,
        parameters=parameters,
        progress=report_progress,
        estimates=estimates,
        # model-based risk fits rows' QI combinations: not defined with a person id (the report says why)
        model_risk=state.model_risk if contract.entity is None else (),
    )
    if state.model_risk and contract.entity is not None:
        note = (
            "Model-based risk is left out: its log-linear models describe the table of QI combinations of rows, "
            f"while with a person id ('{contract.entity}') a class is a set of combinations per person."
        )
        report = replace(report, left_out=(*report.left_out, note))
    return report


class ReportFiles:
    """Finished reports waiting for their download, in a disk cache that every worker process and background job
    opens (``<cache_dir>/reports``), under a random 128-bit token, for ``ttl`` seconds."""

    def __init__(self, folder: str | os.PathLike[str], *, ttl: float) -> None:
        self.folder = Path(folder)
        self.ttl = ttl

    def _cache(self) -> Any:
        import diskcache

        self.folder.mkdir(parents=True, exist_ok=True)
        return diskcache.Cache(str(self.folder), size_limit=2**30)

    def put(self, files: Mapping[str, tuple[str, bytes]]) -> str:
        """Keep ``{format: (file name, content)}``; returns the token that fetches them."""
        token = secrets.token_urlsafe(16)
        with self._cache() as cache:
            cache.set(token, dict(files), expire=self.ttl)
        return token

    def get(self, token: str, kind: str) -> tuple[str, bytes]:
        """The file name and content of one format of a kept report; ``PrivdashError`` when it has expired."""
        with self._cache() as cache:
            files = cache.get(str(token))
        if not isinstance(files, dict) or kind not in files:
            raise PrivdashError("This report has expired; make it again with the Report button.")
        name, content = files[kind]
        return str(name), bytes(content)
