"""What the Risk and Fix pages show of a diagnosis, as plain data the page builders render.

* class sizes grouped for display (:func:`size_bins`);
* the headline numbers and whether each meets the view's target (:func:`risk_headlines`, :func:`fix_headlines`);
  what passes and what fails is the core's verdict
  (:meth:`~privdash.measure.diagnose.Diagnosis.check`) on the view's targets (:func:`view_targets`), read in
  one place (:func:`verdicts`);
* the release rules beyond k (``global_risk``, ``household_risk``, ``average_risk``, ``k_map``, ``delta_presence``,
  ``population_uniques``): read from the command line's syntax (:func:`release_rules`), written back
  (:func:`release_rules_text`) and shown one headline per rule with its measured value (:func:`release_headlines`);
* the per-class table with the targets each class misses (:func:`class_table`, :func:`class_rows`);
* the household risk, when the roles name a household column (:func:`household_headline`, :func:`household_rows`);
* the QI-combination analysis of a view (:func:`run_combinations`).

Nothing here imports Dash.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from privdash.application.formats import fmt_count, fmt_number, fmt_share, in_people
from privdash.application.services import Services
from privdash.application.state import RELEASE_KEYS, StateError, ViewState
from privdash.data.contract import ColumnRole
from privdash.errors import PrivdashError
from privdash.measure.classes import MissingPolicy
from privdash.measure.combinations import (
    CombinationRisk,
    MinimalSampleUniques,
    combination_risk,
    minimal_sample_uniques,
)
from privdash.measure.diagnose import Diagnosis
from privdash.measure.risk import AttackerRisk
from privdash.measure.verdict import TargetCheck, Verdict
from privdash.targets import PrivacyTargets, parse_targets

__all__ = [
    "RELEASE_RULES",
    "SINGLE_SIZES",
    "SIZE_BINS",
    "ClassTable",
    "Headline",
    "Verdicts",
    "cached_class_table",
    "class_rows",
    "class_table",
    "combination_request",
    "combinations_left_out",
    "fix_headlines",
    "household_headline",
    "household_rows",
    "missing_effect",
    "people_column",
    "release_headlines",
    "release_rules",
    "release_rules_text",
    "release_verdict",
    "risk_headlines",
    "run_combinations",
    "size_bins",
    "verdicts",
    "view_targets",
]

#: Class sizes listed one by one; larger sizes are grouped into these bins (lower bounds), so charts stay readable.
SINGLE_SIZES = 12
SIZE_BINS = (13, 21, 51, 101, 1_001, 10_001)


# --- class sizes ---------------------------------------------------------------------------------------------------


def size_bins(frequencies: pd.DataFrame) -> pd.DataFrame:
    """Group the core's class-size frequency table for display: sizes 1..12 one by one, larger sizes in bins.

    Columns ``label``, ``low``, ``high`` (inclusive; ``high`` is None for the open last bin), ``classes``,
    ``records``; only bins up to the largest size present are listed, empty ones included in between.
    """
    sizes = frequencies["size"].to_numpy(dtype=np.int64)
    largest = int(sizes.max()) if len(sizes) else 0
    lows = np.array([*range(1, SINGLE_SIZES + 1), *SIZE_BINS], dtype=np.int64)
    highs = np.append(lows[1:] - 1, np.iinfo(np.int64).max)
    shown = lows <= max(largest, 1)
    lows, highs = lows[shown], highs[shown]
    # Each size falls in the last bin whose lower bound it reaches.
    position = np.searchsorted(lows, sizes, side="right") - 1
    classes = np.bincount(position, weights=frequencies["classes"].to_numpy(), minlength=len(lows))
    records = np.bincount(position, weights=frequencies["records"].to_numpy(), minlength=len(lows))
    open_end = np.iinfo(np.int64).max
    labels = [
        str(low) if high == low else (f"{low:,}–{high:,}" if high != open_end else f"{low:,}+")
        for low, high in zip(lows.tolist(), highs.tolist(), strict=True)
    ]
    return pd.DataFrame(
        {
            "label": labels,
            "low": lows.tolist(),
            "high": [None if high == open_end else high for high in highs.tolist()],
            "classes": classes.astype(np.int64),
            "records": records.astype(np.int64),
        }
    )


# --- verdicts and headlines ----------------------------------------------------------------------------------------


def view_targets(state: ViewState, diagnosis: Diagnosis) -> PrivacyTargets:
    """The view's targets as the core's :class:`PrivacyTargets`; l and t only when ``diagnosis`` measured a sensitive
    attribute (without one there is nothing to judge them on), the risk cap only when above 0."""
    measured = bool(diagnosis.sensitive_models)
    targets = state.targets
    return replace(targets, l=targets.l if measured else None, t=targets.t if measured else None, sensitive=())


@dataclass(frozen=True)
class Verdicts:
    """Per target of the view: passed (True), failed (False) or not judged (None).

    ``k`` is not judged on a table without classes, ``l`` and ``t`` without a sensitive attribute.
    """

    k: bool | None
    l: bool | None  # noqa: E741
    t: bool | None
    max_risk: bool


def release_verdict(diagnosis: Diagnosis, state: ViewState) -> Verdict:
    """The verdict the page opens with: the core's :meth:`~privdash.measure.diagnose.Diagnosis.check` on the
    view's targets (the release rules included), so the page, ``privdash diagnose --targets`` and the API say the
    same; a release rule that could not be measured says what the page needs (a role) instead of a command-line
    flag."""
    verdict = diagnosis.check(view_targets(state, diagnosis))
    checks = tuple(_page_check(check, diagnosis) for check in verdict.checks)
    return replace(verdict, checks=checks) if checks != verdict.checks else verdict


# --- release rules beyond k -----------------------------------------------------------------------------------------

#: The rules of the "More release rules" input: the release targets beyond k, l, t and max_risk (the names of
#: :class:`PrivacyTargets` and of ``privdash ... --targets``).
RELEASE_RULES = tuple(name for name in RELEASE_KEYS if name != "population_uniques_estimator")
#: What a release rule that cannot be measured needs on the page (the core's reasons name command-line flags).
_NEEDS = {
    "household_risk": "no household column: give a column the role 'household' (the household id) on the Data page",
    "population": "no population: give a column the role 'weight' (the sampling weights, whose sums per class "
    "estimate the population) on the Data page",
}
_LABELS = {
    "global_risk": "Global risk",
    "household_risk": "Household risk",
    "average_risk": "Average risk",
    "k_map": "k-map",
    "delta_presence": "δ-presence",
    "population_uniques": "Population uniques",
}


def release_rules(text: str | None) -> dict[str, Any]:
    """The release rules of the text ``global_risk=0.03, household_risk=0.05`` (the command line's ``--targets``
    syntax, read by :func:`~privdash.targets.parse_targets`), by name, for :attr:`ViewState.release`; empty
    for an empty text. Raises :class:`StateError` with the reason for a text that cannot be read or a rule that has
    its own input (k, l, t, max_risk)."""
    if text is None or not str(text).strip():
        return {}
    if not isinstance(text, str) or len(text) > 1_000:
        raise StateError("The release rules must be a short text such as global_risk=0.03, household_risk=0.05.")
    try:
        targets = parse_targets(text.replace(";", ","))
    except PrivdashError as exc:
        raise StateError(str(exc)) from None
    given = {part.partition("=")[0].strip().lower() for part in text.replace(";", ",").split(",")}
    own = ["k"] if "k" in given else []
    own += [name for name in ("l", "t", "max_risk") if getattr(targets, name) is not None]
    if own:
        raise StateError(
            f"{', '.join(own)} {'has its' if len(own) == 1 else 'have their'} own input beside this one; write here "
            f"the rules {', '.join(RELEASE_RULES)} (and population_uniques_estimator)."
        )
    return {name: getattr(targets, name) for name in RELEASE_KEYS if getattr(targets, name) is not None}


def release_rules_text(release: Mapping[str, Any]) -> str:
    """The text of the release rules ``release`` (what :func:`release_rules` reads back), in the order of the
    targets."""
    return ", ".join(
        f"{name}={value:g}" if isinstance(value, int | float) else f"{name}={value}"
        for name in RELEASE_KEYS
        if (value := release.get(name)) is not None
    )


def _page_check(check: TargetCheck, diagnosis: Diagnosis) -> TargetCheck:
    """``check`` with the page's reason when it is a release rule that was not measured for want of a role."""
    if not np.isnan(check.achieved) or diagnosis.n_records == 0:
        return check
    if check.target == "household_risk" and diagnosis.household_risk is None:
        return replace(check, reason=f"{check.target} was not measured: {_NEEDS['household_risk']}")
    if (
        check.target in ("k_map", "delta_presence", "population_uniques")
        and diagnosis.population.kind.value == "sample"
    ):
        return replace(check, reason=f"{check.target} was not measured: {_NEEDS['population']}")
    return check


def release_headlines(diagnosis: Diagnosis, state: ViewState, verdict: Verdict | None = None) -> list[Headline]:
    """One headline per release rule of the view (keys ``release-<name>``): the measured value, passed or failed as
    the verdict judges it, the rule and the reason; ``not measured: <reason>`` (failed) when it could not be
    measured. The rules on the population say where the population comes from (the weight column), or that there
    is none."""
    found = verdict if verdict is not None else release_verdict(diagnosis, state)
    checks = {check.target: check for check in found.checks}
    weight = next((name for name, role in state.roles.items() if role == ColumnRole.WEIGHT), None)
    out = []
    for name in RELEASE_RULES:
        check = checks.get(name)
        if check is None:
            continue
        sign = "≥" if name == "k_map" else "≤"
        rule = f"{name} {sign} {check.required:g}"
        if name == "population_uniques":
            rule += f" ({state.targets.estimator})"
        if np.isnan(check.achieved):
            reason = check.reason.split(" was not measured: ", 1)[-1]
            out.append(Headline(_LABELS[name], "-", False, f"{rule}; not measured: {reason}", f"release-{name}"))
            continue
        # shares as percentages, as the survey card and the report show them; the rule keeps the typed number
        value = f"{check.achieved:,.4g}" if name == "k_map" else fmt_share(check.achieved, 2)
        detail = rule if name == "k_map" else f"{rule} ({fmt_share(check.required, 2)})"
        if name in ("k_map", "delta_presence", "population_uniques"):
            detail += f"; population from the sampling weights in '{weight}'" if weight else ""
        elif name == "global_risk":
            detail += f"; ER/n, sampling weights in '{weight}'" if weight else "; ER/n, risk 1/f (no sampling weights)"
        out.append(Headline(_LABELS[name], value, check.passed, detail, f"release-{name}"))
    return out


def verdicts(diagnosis: Diagnosis, state: ViewState) -> Verdicts:
    """The core's verdict (:meth:`Diagnosis.check`) on the view's targets, target by target."""
    checks = {check.target: check.passed for check in diagnosis.check(view_targets(state, diagnosis)).checks}
    # A cap of 0 puts every record at risk; the diagnosis measured the risks against that very cap.
    max_risk = checks.get("max_risk", diagnosis.risk.prosecutor.n_records_at_risk == 0)
    return Verdicts(
        k=checks["k"] if diagnosis.classes.n_classes else None,
        l=checks.get("l"),
        t=checks.get("t"),
        max_risk=max_risk,
    )


@dataclass(frozen=True)
class Headline:
    """One headline number and its verdict against the view's target (None when there is nothing to judge)."""

    label: str
    value: str
    passed: bool | None
    detail: str
    key: str


def _k_headline(diagnosis: Diagnosis, state: ViewState, passed: bool | None) -> Headline:
    below = diagnosis.classes.records_below(state.k)
    detail = f"target k ≥ {state.k}; {fmt_count(below)} records in smaller classes"
    return Headline("k-anonymity", fmt_count(diagnosis.k), passed, detail, "k")


def _sensitive_headlines(diagnosis: Diagnosis, state: ViewState, found: Verdicts, *, distance: bool) -> list[Headline]:
    """l and t of the worst sensitive attribute (none without a sensitive attribute)."""
    models = list(diagnosis.sensitive_models.values())
    if not models:
        return []
    worst_l = min(models, key=lambda m: m.l_distinct.value)
    worst_t = max(models, key=lambda m: m.t_closeness.value)
    t_detail = f"target t ≤ {fmt_number(state.t)}; highest on {worst_t.attribute}"
    if distance:
        t_detail += f" ({worst_t.t_closeness.distance.value} distance)"
    return [
        Headline(
            "l-diversity",
            fmt_number(worst_l.l_distinct.value),
            found.l,
            f"target l ≥ {state.l}; lowest on {worst_l.attribute}",
            "l",
        ),
        Headline("t-closeness", fmt_number(worst_t.t_closeness.value), found.t, t_detail, "t"),
    ]


def risk_headlines(diagnosis: Diagnosis, state: ViewState) -> list[Headline]:
    """The Risk page's headlines: k, l, t, the three attacker risks and the release rules (keys ``k``, ``l``, ``t``,
    ``prosecutor``, ``journalist``, ``marketer``, ``release-<name>``: :func:`release_headlines`)."""
    found = verdicts(diagnosis, state)
    out = [_k_headline(diagnosis, state, found.k)]
    sensitive = _sensitive_headlines(diagnosis, state, found, distance=True)
    out += sensitive or [
        Headline(label, "-", None, "no sensitive attribute chosen", key)
        for label, key in (("l-diversity", "l"), ("t-closeness", "t"))
    ]
    risk = diagnosis.risk
    # The prosecutor risk is the one the cap judges; journalist and marketer risks are judged by their own
    # measure against the same threshold (they never exceed the prosecutor risk).
    out.append(_attacker("Prosecutor risk", risk.prosecutor, "prosecutor", found.max_risk))
    out.append(_attacker("Journalist risk", risk.journalist, "journalist", risk.journalist.n_records_at_risk == 0))
    marketer = risk.marketer
    out.append(
        Headline(
            "Marketer risk",
            fmt_share(marketer.average),
            marketer.average <= marketer.max_risk,
            f"expected share re-identified; target ≤ {fmt_share(marketer.max_risk, 0)}",
            "marketer",
        )
    )
    return _in_units(diagnosis, out + release_headlines(diagnosis, state))


def _attacker(label: str, risk: AttackerRisk, key: str, passed: bool) -> Headline:
    return Headline(
        label,
        fmt_share(risk.highest),
        passed,
        f"highest; average {fmt_share(risk.average)}, {fmt_share(risk.records_at_risk)} of records above "
        f"{fmt_share(risk.max_risk, 0)}",
        key,
    )


def household_headline(diagnosis: Diagnosis) -> Headline | None:
    """The household risk as a headline (key ``household``): the global household risk, with the expected
    re-identifications, the highest household risk and the number of households; None without a household column.
    Not judged against a target (``passed`` None)."""
    households = diagnosis.household_risk
    if households is None:
        return None
    detail = (
        f"expected re-identifications {fmt_number(households.expected_reidentifications, 1)} of "
        f"{fmt_count(diagnosis.n_records)} records; highest household risk {fmt_share(households.highest)}; "
        f"{fmt_count(households.n_households)} households in '{diagnosis.household}'"
    )
    if households.records_without_household:
        detail += f" ({fmt_count(households.records_without_household)} records without a household id, each alone)"
    if not households.weighted:
        detail += "; member risk 1/f (no sampling weights)"
    return Headline("Household risk", fmt_share(households.global_risk, 2), None, detail, "household")


def household_rows(diagnosis: Diagnosis) -> list[tuple[str, str]] | None:
    """The household risk as ``(quantity, value)`` rows: households, expected re-identifications, global risk,
    highest household risk (and the records without a household id, when there are some); None without a household
    column."""
    households = diagnosis.household_risk
    if households is None:
        return None
    rows = [
        ("households", fmt_count(households.n_households)),
        ("expected re-identifications", fmt_number(households.expected_reidentifications, 2)),
        ("household global risk", fmt_share(households.global_risk, 3)),
        ("highest household risk", fmt_share(households.highest, 2)),
    ]
    if households.records_without_household:
        rows.append(("records without a household id", fmt_count(households.records_without_household)))
    return rows


def fix_headlines(diagnosis: Diagnosis, state: ViewState) -> list[Headline]:
    """The Fix page's headlines of one side (before or after): k, highest prosecutor risk, records at risk, and l
    and t when there are sensitive attributes, and the release rules (keys ``k``, ``risk``, ``at-risk``, ``l``, ``t``,
    ``release-<name>``)."""
    found = verdicts(diagnosis, state)
    prosecutor = diagnosis.risk.prosecutor
    headlines = [
        _k_headline(diagnosis, state, found.k),
        Headline(
            "Highest risk",
            fmt_share(prosecutor.highest),
            found.max_risk,
            f"prosecutor; target ≤ {fmt_share(state.max_risk, 0)}",
            "risk",
        ),
        Headline(
            "Records at risk",
            fmt_count(prosecutor.n_records_at_risk),
            found.max_risk,
            f"{fmt_share(prosecutor.records_at_risk)} of {fmt_count(diagnosis.n_records)} records",
            "at-risk",
        ),
        *_sensitive_headlines(diagnosis, state, found, distance=False),
        *release_headlines(diagnosis, state),
    ]
    return _in_units(diagnosis, headlines)


def _in_units(diagnosis: Diagnosis, headlines: list[Headline]) -> list[Headline]:
    """The headlines as they are: with a person id every count of the diagnosis is of people, so "records" in a
    label or a detail is said of people (the verdict, the report and the command line say it so)."""
    if not diagnosis.entity:
        return headlines
    return [
        replace(item, label=in_people(item.label).replace("Records", "People"), detail=in_people(item.detail))
        for item in headlines
    ]


def missing_effect(diagnosis: Diagnosis) -> str:
    """What the missing-value policy did to the records with a missing QI value, in one phrase."""
    classes = diagnosis.classes
    policy = diagnosis.missing_policy
    if policy == MissingPolicy.DROP:
        return f"{fmt_count(classes.n_dropped)} records with a missing QI value left out"
    missing = int(classes.counts[(classes.class_codes < 0).any(axis=1)].sum()) if classes.n_classes else 0
    if policy == MissingPolicy.WILDCARD:
        return f"{fmt_count(missing)} records with a missing QI value match every compatible class"
    return f"{fmt_count(missing)} records with a missing QI value form their own classes"


# --- per-class table -----------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class ClassTable:
    """The per-class table behind the grid: one row per class, with the columns' grid ids and titles.

    ``orders`` keeps the row order of each sort the grid asked for (column, direction, violating only), so that the
    blocks of one sorted view are cut from one sort instead of sorting a million classes per block.
    """

    frame: pd.DataFrame
    titles: Mapping[str, str]
    orders: dict[tuple[str, str, bool], np.ndarray] = field(default_factory=dict, compare=False, repr=False)


def class_table(diagnosis: Diagnosis, state: ViewState) -> ClassTable:
    """QI values, size, records, prosecutor risk, and per sensitive attribute l and t, for every class.

    ``fails`` names the targets a class misses (k, l, t), from the core's per-class comparisons.
    """
    classes = diagnosis.classes
    columns: dict[str, Any] = {}
    titles: dict[str, str] = {}
    # The classes' own key columns: the QIs, or the one key column of person-level classes (a person id given).
    for i, name in enumerate(classes.quasi_identifiers):
        # Text of each distinct value once, shared by the classes through their codes (-1: missing). The codes
        # follow the core's sorted categories, so sorting the column sorts numbers as numbers.
        columns[f"q{i}"] = pd.Categorical.from_codes(
            classes.class_codes[:, i], categories=pd.Index(classes.categories[i].astype(str), dtype=object)
        )
        titles[f"q{i}"] = name
    columns["size"] = classes.sizes
    titles["size"] = "size"
    columns["records"] = classes.counts
    titles["records"] = "people" if diagnosis.entity else "records"
    columns["risk"] = diagnosis.risk.prosecutor.class_risk
    titles["risk"] = "risk"
    fails_k = classes.sizes < state.k
    fails_l = np.zeros(classes.n_classes, dtype=bool)
    fails_t = np.zeros(classes.n_classes, dtype=bool)
    for i, (name, models) in enumerate(diagnosis.sensitive_models.items()):
        columns[f"l{i}"] = models.l_distinct.per_class
        titles[f"l{i}"] = f"l ({name})"
        columns[f"t{i}"] = models.t_closeness.per_class
        titles[f"t{i}"] = f"t ({name})"
        fails_l |= ~models.l_distinct.class_satisfies(state.l)
        fails_t |= ~models.t_closeness.class_satisfies(state.t)
    failed = fails_k.astype(np.int8) + 2 * fails_l.astype(np.int8) + 4 * fails_t.astype(np.int8)
    names = [", ".join(t for bit, t in ((1, "k"), (2, "l"), (4, "t")) if code & bit) for code in range(8)]
    columns["fails"] = pd.Categorical.from_codes(failed, categories=pd.Index(names, dtype=object))
    titles["fails"] = "fails"
    return ClassTable(pd.DataFrame(columns), titles)


def cached_class_table(services: Services, state: ViewState) -> ClassTable:
    """:func:`class_table` of the state's diagnosis, kept in the services' cache (the page and the grid's row
    requests share it). Raises ``PrivdashError`` when the state cannot be diagnosed."""
    diagnosis = services.diagnosis(state)
    loaded = services.dataset(str(state.dataset))
    contract_json = services.contract(loaded, state).to_json(indent=None)
    key = ("class-table", loaded.id, contract_json, state.missing.value, state.max_risk, state.k, state.l, state.t)
    return services.cache.get_or_build(key, lambda: class_table(diagnosis, state))


def class_rows(table: ClassTable, request: Mapping[str, Any] | None, *, violating_only: bool) -> dict[str, Any]:
    """The block of the per-class table an infinite grid asked for, sorted by its ``sortModel`` (JSON values)."""
    request = request or {}
    frame = table.frame
    sort_model = request.get("sortModel") or []
    column_id = str(sort_model[0].get("colId")) if sort_model else ""
    direction = "desc" if sort_model and sort_model[0].get("sort") == "desc" else "asc"
    if column_id not in frame.columns:
        column_id, direction = "", "asc"
    view = (column_id, direction, violating_only)
    positions = table.orders.get(view)
    if positions is None:
        positions = np.arange(len(frame))
        if violating_only:
            positions = positions[frame["fails"].to_numpy() != ""]
        if column_id:
            column = frame[column_id].iloc[positions]
            key: np.ndarray
            if isinstance(column.dtype, pd.CategoricalDtype):
                key = column.cat.codes.to_numpy()  # the categories' own order; missing first
            else:
                key = (column.astype(str) if column.dtype == object else column).to_numpy()
            order = np.argsort(key, kind="stable")
            positions = positions[order[::-1] if direction == "desc" else order]
        table.orders[view] = positions
    start = max(int(request.get("startRow", 0) or 0), 0)
    end = max(int(request.get("endRow", start + 100) or start + 100), start)
    block = frame.iloc[positions[start:end]]
    rows = [{key: _json_value(value) for key, value in row.items()} for row in block.to_dict("records")]
    return {"rowData": rows, "rowCount": len(positions)}


def _json_value(value: Any) -> Any:
    if value is None:
        return None
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating | float):
        number = float(value)
        return None if number != number else (number if np.isfinite(number) else str(number))
    return value


# --- QI combinations -----------------------------------------------------------------------------------------------


def combinations_left_out(entity: str) -> str:
    """Why the QI-combination analysis is left out when ``entity`` is the person id (the report and the Risk page
    say the same)."""
    return (
        "The QI-combination analysis is left out: it counts rows per combination of quasi-identifiers, while "
        f"with a person id ('{entity}') a person's key is the set of their QI tuples over all their rows, which "
        "a subset of columns of one row does not describe."
    )


def people_column(state: ViewState) -> str | None:
    """The column with the person-id role, if any."""
    return next((name for name, role in state.roles.items() if role == ColumnRole.ENTITY), None)


def combination_request(state: ViewState) -> dict[str, Any]:
    """What the combination analysis depends on (it reruns only when this changes)."""
    return {
        "dataset": state.dataset,
        "qis": list(state.quasi_identifiers),
        "missing": state.missing.value,
        "k": state.k,
        "roles": state.to_dict().get("c", []),
        "orders": state.to_dict().get("o", {}),
    }


def run_combinations(
    services: Services, state: ViewState, progress: Callable[[tuple[int, str]], None]
) -> tuple[CombinationRisk, MinimalSampleUniques]:
    """The QI-combination analysis of the state's view (the slow part of the Risk page); ``progress((percent,
    text))`` reports each stage. Wildcard missing values are analysed as values (the analysis has no wildcards)."""
    progress((5, "Loading the table ..."))
    loaded = services.dataset(str(state.dataset))
    loaded.require_rows("The QI-combination analysis")
    qis = [name for name in loaded.columns if state.roles.get(name) == ColumnRole.QUASI_IDENTIFIER]
    policy = MissingPolicy.VALUE if state.missing == MissingPolicy.WILDCARD else state.missing
    progress((15, f"Grouping records on all {2 ** len(qis) - 1:,} combinations of {len(qis)} QIs ..."))
    risk = combination_risk(loaded.frame, qis, k_threshold=state.k, missing=policy)
    progress((60, "Finding the smallest combinations that single out each unique record ..."))
    msus = minimal_sample_uniques(loaded.frame, qis, missing=policy)
    progress((100, "Done"))
    return risk, msus


# --- survey, household, person-level and model-based risk -----------------------------------------------------


@dataclass(frozen=True)
class RiskRow:
    """One line of the Risk page's "Survey and household risk" table: a measure, its value and how it is defined."""

    measure: str
    value: str
    detail: str
    key: str


def survey_risk_rows(diagnosis: Diagnosis) -> list[RiskRow]:
    """The risk measures beyond the attacker models that the diagnosis has: whom the records count (people or rows),
    sdcMicro's global risk (with sampling weights), the household risk (with a household column) and the
    model-based risks (when asked for). Empty when the diagnosis has none of them."""
    rows: list[RiskRow] = []
    entity = diagnosis.entity
    if entity:
        people = diagnosis.entities if diagnosis.entities is not None else diagnosis.n_records
        rows.append(
            RiskRow(
                "Counted in people",
                f"{fmt_count(people)} people",
                f"{fmt_count(diagnosis.rows)} rows; a person's key is the set of their QI values over their rows "
                f"('{entity}' names the person)",
                "people",
            )
        )
    individual = diagnosis.individual_risk
    if individual is not None:
        rows.append(
            RiskRow(
                "Global risk",
                fmt_share(individual.global_risk, 2),
                f"expected re-identifications {fmt_number(individual.expected_reidentifications)} of "
                f"{fmt_count(individual.n_records)} records (sdcMicro ER/n); highest individual risk "
                f"{fmt_share(individual.highest, 1)}",
                "global-risk",
            )
        )
    household = household_headline(diagnosis)
    if household is not None:
        rows.append(RiskRow(household.label, household.value, household.detail, "household-risk"))
    for method, model in diagnosis.model_risk.items():
        notes = f"; {' '.join(model.warnings)}" if model.warnings else ""
        rows.append(
            RiskRow(
                f"Model-based risk ({method})",
                fmt_share(model.risk1, 2),
                f"share of the cells with records whose one record is estimated population-unique (sdcMicro "
                f"modRisk risk 1; log-linear model {model.formula}); expected correct matches of the sample uniques "
                f"{fmt_share(model.risk2, 2)} (risk 2){notes}",
                f"model-{method}",
            )
        )
    return rows
