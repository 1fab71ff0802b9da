"""The Fix page's step list: what a step in the link means, and how the list is applied with the core.

A *fix spec* is the compact JSON object the view state carries for one step (``ViewState.fix``). It holds settings
only (a technique, column names, a hierarchy rule such as "intervals of width 5, 10, 20", a k, a suppression
limit), never a value of the table, so a share link reveals no data. :func:`check_spec` validates one;
:func:`run_fixes` applies a list in order and returns a :class:`FixRun`: the fixed table, each step's
:class:`~privdash.transform.steps.TransformResult`, the data contract of the fixed table and the recipe that
re-applies the fix to new data. Nothing here imports Dash.

One step compiler: :func:`compile_spec` turns a spec and its :class:`StepContext` (the current table's
quasi-identifiers, ordinal orders and types, the missing-value policy, the hierarchies built from the spec's rules)
into a core :class:`~privdash.transform.steps.Step`, which the core's step registry applies
(:func:`~privdash.transform.steps.apply_step`). The one exception is ``search``: its generalization levels are
the outcome of the core's least-lossy search, not settings, so :func:`least_lossy_search` runs
:func:`~privdash.search.lattice.optimal_generalization` (or, for a local recoding,
:func:`~privdash.search.local.local_recoding`); the step it returns is the registered ``generalize`` (or
``local_recoding``) step that reproduces the result, so the recipe of every list is a list of registered steps.

The contract of the fixed table (:func:`adapt_contract`) is decided here, not in the core: a step may publish values
that no longer have the column's declared type (interval labels in a numerical column, an ordinal value outside
its order, a generalized date or postcode), and the later steps and the diagnosis then treat that column as nominal.

Spec kinds (the techniques of the step list, described with their parameters in
:mod:`privdash.application.techniques`; keys besides ``kind``; ``?`` = optional)::

    generalize          column, rule, level
    top_bottom_coding   column, top?, bottom?, quantiles?, labels?
    record_suppression  k, max_suppression, release?  (share of the rows that may be removed, 0..1)
    local_suppression   k, importance?                (QIs, most important first; the rest follow)
    microaggregation    k, decimals?
    drop_identifiers    columns
    mask_identifiers    columns, first?, last?        (characters kept at the start / end)
    pseudonymize        columns, length?
    search              k, l?, t?, max_risk?, max_suppression, metric?, pick?, recoding?, release?
                      (pick: which of the best :data:`SOLUTIONS_SHOWN` solutions is published, 1 = the least
                      lossy, the default; a steward's pick on the page. recoding: "global", the default, one level
                      per QI; "local", levels per group of records, :func:`~privdash.search.local.local_recoding`,
                      recorded as a ``local_recoding`` step; a local recoding has no solutions to pick from.
                      release: the release rules beyond k by their names in :class:`PrivacyTargets`, e.g.
                      ``{"global_risk": 0.002}``, met at each node with the contract's sampling weights (the
                      population) and household id, as ``privdash anonymize --targets`` does; global recoding only)

When the contract marks a person id (role ``entity``), the search is judged on people
(:func:`~privdash.search.entities.people_generalization`, as ``privdash anonymize --entity``): whole people are
suppressed, the suppression limit counts people, and the options it does not take (a pick among several solutions,
local recoding, the release rules, a lattice too large to search whole) are refused with a message.

Links made before the vocabulary was unified may say ``budget`` (record_suppression), ``suppression`` and
``risk`` (search): :func:`check_spec` reads them as ``max_suppression`` and ``max_risk``; and links made before the
techniques had one name say ``suppress_records``, ``suppress_cells``, ``top_bottom``, ``microaggregate``, ``drop``
or ``mask``: they are read as ``record_suppression``, ``local_suppression``, ``top_bottom_coding``,
``microaggregation``, ``drop_identifiers`` and ``mask_identifiers``.

Hierarchy rules (``rule``: the core's rule settings, :func:`privdash.transform.hierarchy.build_hierarchy`)::

    {"builder": "intervals", "widths": [5, 10, 20], "origin"?: 0, "low"?: 20, "high"?: 80}
    {"builder": "quantiles", "bins": [8, 4, 2], "digits"?: 2}    {"builder": "frequency", "ratio"?: 2}
    {"builder": "dates", "levels": ["month", "year"]}            {"builder": "postcodes", "levels": ["district"]}
    {"builder": "prefix", "lengths": [3, 2, 1]}                  {"builder": "masking", "steps": 3}
    {"builder": "rare", "min_count": 10}
    {"builder": "dataset"}     the hierarchy kept with the dataset (imported or edited on the Data page, or ARX's
                               for Adult); its rule, or its table, is what the recipe records

Quasi-identifiers, ordinal orders and the missing-value policy of a step come from the view state's data contract
when the list is applied; the resolved values end up in the recipe (:attr:`FixRun.recipe`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from privdash.application.state import RELEASE_KEYS
from privdash.application.techniques import SOLUTIONS, STEPS, TECHNIQUES, canonical_name, check_settings
from privdash.data.contract import ColumnRole, DataContract, FieldMetadata, StatisticalType
from privdash.errors import ParameterError, PrivdashError, check_columns
from privdash.measure.classes import MissingPolicy
from privdash.search.entities import people_generalization
from privdash.search.lattice import optimal_generalization
from privdash.search.local import local_recoding
from privdash.targets import PrivacyTargets
from privdash.transform.hierarchy import RULE_SETTINGS, TOP, Hierarchy, canonical_text, search_hierarchy
from privdash.transform.hierarchy import build_hierarchy as core_build_hierarchy
from privdash.transform.identifiers import KEY_ENV, MIN_KEY_BYTES, key_fingerprint
from privdash.transform.microaggregation import types_from_contract
from privdash.transform.steps import Recipe, Step, TransformResult, apply_recipe, apply_step
from privdash.transform.suppression import SUPPRESSION_RISK_TARGETS
from privdash.utility.metrics import InformationLoss, Metric, information_loss_with_baseline
from privdash.validation import Interval, check_param

__all__ = [
    "BUILDERS",
    "KINDS",
    "SAMPLE_SCAN",
    "SLOW_KINDS",
    "SOLUTIONS_SHOWN",
    "FixError",
    "FixRun",
    "RecipeOutcome",
    "RowSample",
    "StepContext",
    "adapt_contract",
    "build_hierarchy",
    "cheapest_fix",
    "check_rule",
    "check_spec",
    "compile_spec",
    "describe_result",
    "describe_spec",
    "extend_run",
    "information_loss_pair",
    "is_slow",
    "key_status",
    "least_lossy_search",
    "reapply_recipe",
    "row_sample",
    "rule_from_text",
    "rule_text",
    "run_fixes",
    "start_run",
    "step_context",
]

#: Spec kinds (the techniques of the step list, :mod:`privdash.application.techniques`) and their labels, in the
#: order the page lists them.
KINDS: dict[str, str] = {name: TECHNIQUES[name].label for name in STEPS}
#: Kinds whose cost grows fast with the table (clustering, lattice search): previewed in a background job.
SLOW_KINDS = frozenset(name for name in STEPS if TECHNIQUES[name].slow)
#: Solutions the least-lossy search keeps for the steward to choose from (the page's table and chart).
SOLUTIONS_SHOWN = SOLUTIONS
#: Hierarchy builders a ``generalize`` rule may name.
BUILDERS: dict[str, str] = {
    "intervals": "Intervals of fixed width",
    "quantiles": "Intervals of equal frequency",
    "dates": "Dates: month, quarter, year",
    "postcodes": "UK postcodes: sector, district, area",
    "frequency": "Group categories, rarest first",
    "prefix": "Code prefixes (ICD, NACE, ZIP)",
    "masking": "Mask trailing characters",
    "rare": "Group rare categories",
    "dataset": "The dataset's hierarchy (Data page)",
}
_DATE_LEVELS = ("month", "quarter", "year")
_POSTCODE_LEVELS = ("sector", "district", "area")


class FixError(ParameterError):
    """A fix spec is malformed (a damaged link, or control values that do not make a step)."""


def is_slow(specs: Sequence[Mapping[str, Any]]) -> bool:
    """True when a step list contains a step of :data:`SLOW_KINDS` (previewed in a background job)."""
    return any(isinstance(spec, Mapping) and canonical_name(spec.get("kind")) in SLOW_KINDS for spec in specs)


# --- validation ----------------------------------------------------------------------------------------------------


#: The constraints of the numbers of a hierarchy rule and of a quantile threshold.
_AT_LEAST_1 = Interval(int, 1, None, closed="left")
_REAL = Interval(float, None, None)
_SHARE = Interval(float, 0, 1)
_POSITIVE = Interval(float, 0, None, closed="neither")


def _checked(value: Any, constraint: Interval, name: str) -> Any:
    """``value`` checked by ``constraint`` (:func:`~privdash.validation.check_param`), a :class:`FixError` if not;
    a float without a fraction as an int (rules are written back as text)."""
    number = check_param(value, constraint, name, error=FixError)
    return int(number) if isinstance(number, float) and number.is_integer() else number


def check_rule(rule: Any) -> dict[str, Any]:
    """A validated hierarchy rule (see the module docstring); raises :class:`FixError`."""
    if not isinstance(rule, Mapping) or rule.get("builder") not in BUILDERS:
        raise FixError(f"A hierarchy rule needs a 'builder': one of {', '.join(BUILDERS)}.")
    builder = rule["builder"]
    if builder == "dataset":
        if len(rule) > 1:
            raise FixError("The 'dataset' rule takes no settings: it names the dataset's own hierarchy.")
        return {"builder": "dataset"}
    unknown = sorted(set(rule) - RULE_SETTINGS[builder] - {"builder"})
    if unknown:
        raise FixError(f"The '{builder}' rule has unknown setting(s) {', '.join(unknown)}.")
    out: dict[str, Any] = {"builder": builder}
    if builder in ("intervals", "quantiles"):
        key = "widths" if builder == "intervals" else "bins"
        values = rule.get(key)
        if not isinstance(values, list) or not values:
            raise FixError(f"The '{builder}' rule needs '{key}': a non-empty list of numbers, finest level first.")
        if builder == "intervals":
            out[key] = [_checked(v, _POSITIVE, "An interval width") for v in values]
            for name, what in (("origin", "The interval origin"), ("low", "The bottom code"), ("high", "The top code")):
                if rule.get(name) is not None:
                    out[name] = _checked(rule[name], _REAL, what)
        else:
            out[key] = [_checked(v, _AT_LEAST_1, "A number of quantile intervals") for v in values]
            if rule.get("digits") is not None:
                out["digits"] = _checked(rule["digits"], _AT_LEAST_1, "Significant digits")
    elif builder in ("dates", "postcodes"):
        known = _DATE_LEVELS if builder == "dates" else _POSTCODE_LEVELS
        levels = rule.get("levels")
        if not isinstance(levels, list) or not levels or not all(v in known for v in levels):
            raise FixError(f"The '{builder}' rule needs 'levels': some of {', '.join(known)}, in that order.")
        out["levels"] = list(levels)
    elif builder == "frequency":
        if rule.get("ratio") is not None:
            out["ratio"] = _checked(
                rule["ratio"], Interval(float, 1, None, closed="neither"), "The ratio of group counts"
            )
    elif builder == "prefix":
        lengths = rule.get("lengths")
        if not isinstance(lengths, list) or not lengths:
            raise FixError("The 'prefix' rule needs 'lengths': the characters kept per level, longest first.")
        out["lengths"] = [_checked(v, _AT_LEAST_1, "A prefix length") for v in lengths]
    elif builder == "masking":
        out["steps"] = _checked(rule.get("steps"), _AT_LEAST_1, "Masking steps")
    else:
        out["min_count"] = _checked(rule.get("min_count"), _AT_LEAST_1, "The minimum count of a kept category")
    return out


def check_spec(spec: Any) -> dict[str, Any]:
    """A validated copy of one fix spec (settings in range, no unknown keys); raises :class:`FixError`.

    The settings are checked against the technique's parameters
    (:func:`~privdash.application.techniques.check_settings`); old names of the kind (``suppress_records`` ...) and
    of settings (``budget`` ...) are read as the new ones. What one parameter cannot say is checked here: the
    hierarchy rule, a top or a bottom threshold, the release rules, a pick of a local recoding.
    """
    if not isinstance(spec, Mapping) or canonical_name(spec.get("kind")) not in KINDS:
        raise FixError(f"A fix step needs a 'kind': one of {', '.join(KINDS)}.")
    item = TECHNIQUES[canonical_name(spec["kind"])]
    kind = item.name
    if kind == "search" and spec.get("metric") is not None:
        try:
            spec = {**spec, "metric": Metric.parse(spec["metric"]).value}
        except PrivdashError as exc:
            raise FixError(str(exc)) from None
    out: dict[str, Any] = {"kind": kind, **check_settings(item, spec, error=FixError)}
    if kind == "generalize":
        out["rule"] = check_rule(out["rule"])
    elif kind == "top_bottom_coding":
        if out["top"] is None and out["bottom"] is None:
            raise FixError("Top / bottom coding needs a top or a bottom threshold.")
        if out["quantiles"]:
            for side in ("top", "bottom"):
                if out[side] is not None:
                    out[side] = float(check_param(out[side], _SHARE, f"The {side} threshold", error=FixError))
    elif kind == "record_suppression":
        release = _release(out.pop("release", None))
        beyond = sorted(set(release) - set(SUPPRESSION_RISK_TARGETS))
        if beyond:
            raise FixError(
                f"Record suppression meets {', '.join(SUPPRESSION_RISK_TARGETS)}; {', '.join(beyond)} need(s) the "
                "search (generalization with the population)."
            )
        if release:
            out["release"] = release
    elif kind == "search":
        local = out.get("recoding") == "local"
        if local and out.get("pick", 1) != 1:
            raise FixError("A local recoding has no solutions to pick from: leave the pick out.")
        release = _release(out.pop("release", None))
        if release:
            if local:
                raise FixError(
                    f"The release rules ({', '.join(release)}) are met by the global recoding search only: choose "
                    "global recoding, or leave the release rules out."
                )
            out["release"] = release
    return out


#: The release rules a search spec may carry (``release``): the targets of :class:`PrivacyTargets` judged on the whole
#: table or against the population, and the population-uniqueness estimator.
RELEASE_RULES = RELEASE_KEYS


def _release(value: Any) -> dict[str, Any]:
    """The release rules of a search spec, checked by :class:`PrivacyTargets` (an empty or missing value: none)."""
    if value in (None, {}):
        return {}
    if not isinstance(value, Mapping):
        raise FixError('The search\'s release rules must be an object, e.g. {"global_risk": 0.002}.')
    unknown = sorted(str(name)[:40] for name in value if name not in RELEASE_RULES)
    if unknown:
        raise FixError(f"Unknown release rule(s): {', '.join(unknown)}; the rules are {', '.join(RELEASE_RULES)}.")
    try:
        targets = PrivacyTargets(k=1, **value)
    except (PrivdashError, TypeError) as exc:
        raise FixError(str(exc)) from None
    return {name: getattr(targets, name) for name in RELEASE_RULES if getattr(targets, name) is not None}


# --- hierarchy rules -----------------------------------------------------------------------------------------------


def build_hierarchy(rule: Mapping[str, Any], values: pd.Series) -> Hierarchy:
    """The core hierarchy a rule describes, built over ``values`` (it records its resolved rule, for the recipe);
    the rule is validated first (:class:`FixError`), the values by the core's builder (:class:`HierarchyError`)."""
    return core_build_hierarchy(check_rule(rule), values)


def rule_text(rule: Mapping[str, Any]) -> str:
    """The rule's parameter as the page's text field shows it (``5, 10, 20, >=80``; ``month, year``; ``10``)."""
    builder = rule.get("builder")
    if builder == "intervals":
        codes = [f"{sign}{rule[name]:g}" for name, sign in (("low", "<"), ("high", ">=")) if rule.get(name) is not None]
        return ", ".join([*(f"{w:g}" for w in rule["widths"]), *codes])
    if builder == "frequency":
        return f"{rule.get('ratio', 2):g}"
    if builder == "prefix":
        return ", ".join(str(n) for n in rule["lengths"])
    if builder == "quantiles":
        return ", ".join(str(b) for b in rule["bins"])
    if builder in ("dates", "postcodes"):
        return ", ".join(rule["levels"])
    if builder == "masking":
        return str(rule["steps"])
    if builder == "rare":
        return str(rule["min_count"])
    return ""


def rule_from_text(builder: str, text: str | None) -> dict[str, Any]:
    """Parse the page's rule parameter field for ``builder`` into a validated rule; raises :class:`FixError`."""
    parts = [p.strip() for p in (text or "").replace(";", ",").split(",") if p.strip()]
    if builder not in BUILDERS:
        raise FixError(f"Choose how to generalize: one of {', '.join(BUILDERS)}.")
    if builder == "dataset":
        return {"builder": "dataset"}
    if not parts:
        raise FixError(f"Give the parameter of the '{BUILDERS[builder].lower()}' rule.")
    rule: dict[str, Any] = {"builder": builder}
    if builder == "intervals":  # top and bottom codes written ">=80" and "<20"
        for name, sign in (("high", ">="), ("low", "<")):
            codes = [p[len(sign) :].strip() for p in parts if p.startswith(sign)]
            parts = [p for p in parts if not p.startswith(sign)]
            if len(codes) > 1:
                raise FixError(f"Give at most one '{sign}' code.")
            if codes:
                rule[name] = _number_text(codes[0], text)
    if builder in ("intervals", "quantiles", "frequency", "prefix", "masking", "rare"):
        numbers = [_number_text(p, text) for p in parts]
        if builder == "intervals":
            rule["widths"] = numbers
        elif builder == "quantiles":
            rule["bins"] = numbers
        elif builder == "prefix":
            rule["lengths"] = numbers
        elif builder == "frequency":
            if len(numbers) != 1:
                raise FixError(
                    "Give one number for the 'frequency' rule: the factor by which each level divides the groups."
                )
            rule["ratio"] = numbers[0]
        elif len(numbers) != 1:
            raise FixError(f"Give one whole number for the '{BUILDERS[builder].lower()}' rule.")
        else:
            rule["steps" if builder == "masking" else "min_count"] = numbers[0]
    else:
        rule["levels"] = [p.lower() for p in parts]
    return check_rule(rule)


def _number_text(part: str, text: str | None) -> int | float:
    try:
        number = float(part)
    except ValueError:
        raise FixError(f"'{text}' is not a list of numbers.") from None
    return int(number) if number.is_integer() else number


# --- applying a list -----------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class FixRun:
    """A step list applied to a table.

    Attributes
    ----------
    original
        The table before any step.
    missing
        The missing-value policy of the view (record suppression forms its classes with it).
    data, contract
        The fixed table and its data contract (columns that were dropped are gone; a column whose values are no
        longer of its declared type, e.g. numbers generalized to interval labels, is nominal).
    specs, results
        The steps applied (validated) and the core's result of each.
    kept_rows
        Positions in ``original`` of the rows of ``data`` (None when every row is kept).
    hierarchies
        For each generalized column, the hierarchy of its first generalization (for the information-loss metrics).
    error, failed
        Why the step at position ``failed`` of the requested list could not be applied (later steps were not tried).
    reference_hierarchies
        Hierarchies that come with the dataset (ARX's for the Adult demo): the least-lossy search uses them for a
        quasi-identifier whose values are still their leaves, instead of the default of its type.
    """

    original: pd.DataFrame
    base_contract: DataContract
    missing: MissingPolicy
    data: pd.DataFrame
    contract: DataContract
    specs: tuple[dict[str, Any], ...] = ()
    results: tuple[TransformResult, ...] = ()
    kept_rows: np.ndarray | None = None
    hierarchies: Mapping[str, Hierarchy] = field(default_factory=dict)
    error: str | None = None
    failed: int | None = None
    reference_hierarchies: Mapping[str, Hierarchy] = field(default_factory=dict)

    @property
    def recipe(self) -> Recipe:
        """The recipe of the applied steps, every parameter resolved (``privdash anonymize --recipe``), with the
        suppression limit the list was made with (:attr:`suppression_limit`)."""
        return Recipe(tuple(result.step for result in self.results), max_suppression=self.suppression_limit)

    @property
    def suppression_limit(self) -> float | None:
        """The share of the records the list may remove: the sum of the limits of its record suppression and
        search steps (each removes at most its limit of the rows it receives), at most 1; None when no step
        removes records."""
        limits = [float(s["max_suppression"]) for s in self.specs if s["kind"] in ("record_suppression", "search")]
        return min(sum(limits), 1.0) if limits else None

    @property
    def rows_removed(self) -> int:
        return len(self.original) - len(self.data)

    @property
    def wildcard(self) -> bool:
        """True after cell suppression: blanked cells stand for any value, so classes are formed with wildcards."""
        return any(spec["kind"] == "local_suppression" for spec in self.specs)

    def mapping(self) -> pd.DataFrame:
        """Original -> published value per column (``column``, ``original``, ``published``), steps composed.

        Only steps that recode values one to one have a mapping (generalization, top / bottom coding); a column
        later masked, pseudonymized, dropped or microaggregated is left out (its published values are no longer
        a function of the original value, or the table would undo the masking).
        """
        current: dict[str, pd.DataFrame] = {}
        for spec, result in zip(self.specs, self.results, strict=True):
            if spec["kind"] in ("drop_identifiers", "mask_identifiers", "pseudonymize", "microaggregation"):
                touched = spec.get("columns") or list(result.step.params.get("quasi_identifiers", []))
                for name in touched:
                    current.pop(name, None)
                continue
            if result.mapping is None:
                continue
            for key, block in result.mapping.groupby("column", sort=False):
                name = str(key)
                block = block[["original", "published"]].reset_index(drop=True)
                if name in current:
                    # Values an earlier step published go through this step's mapping; values no earlier step
                    # recoded enter with this step's mapping as they are.
                    earlier = current[name]
                    lookup = dict(zip(_texts(block["original"]), block["published"], strict=True))
                    published = [
                        lookup.get(t, p)
                        for t, p in zip(_texts(earlier["published"]), earlier["published"], strict=True)
                    ]
                    seen = set(_texts(earlier["original"]))
                    originals = set(_texts(pd.Series(self.original[name].dropna().unique())))
                    fresh = block[[t not in seen and t in originals for t in _texts(block["original"])]]
                    block = pd.concat(
                        [pd.DataFrame({"original": earlier["original"], "published": published}), fresh],
                        ignore_index=True,
                    )
                current[name] = block
        frames = [block.assign(column=name)[["column", "original", "published"]] for name, block in current.items()]
        if not frames:
            return pd.DataFrame({"column": [], "original": [], "published": []}, dtype=object)
        return pd.concat(frames, ignore_index=True)


def _texts(values: pd.Series) -> list[str]:
    return [str(t) for t in canonical_text(values)]


def adapt_contract(contract: DataContract, data: pd.DataFrame, recoded: Sequence[str] = ()) -> DataContract:
    """The contract of a fixed table: fields of dropped columns removed, types that no longer fit made nominal.

    A numerical column that holds text (interval labels), an ordinal column with values outside its order, and a
    date or postcode column that was ``recoded`` (generalized) become ``NOMINAL``; roles are kept.
    """
    fields = []
    for item in contract.fields:
        if item.name not in data.columns:
            continue
        kind, order = item.statistical_type, item.ordinal_values
        column = data[item.name]
        if item.name in recoded and kind in (StatisticalType.DATE, StatisticalType.POSTCODE):
            kind = StatisticalType.NOMINAL
        numeric = pd.api.types.is_numeric_dtype(column) and not pd.api.types.is_bool_dtype(column)
        if kind == StatisticalType.NUMERICAL and item.role != ColumnRole.IDENTIFIER and not numeric:
            kind = StatisticalType.NOMINAL
        if kind == StatisticalType.ORDINAL and order is not None:
            present = pd.Index(column.dropna().unique())
            if len(present.difference(pd.Index(order))):
                kind = StatisticalType.NOMINAL
        fields.append(FieldMetadata(item.name, item.role, kind, order if kind == StatisticalType.ORDINAL else None))
    return DataContract(tuple(fields))


def start_run(
    frame: pd.DataFrame,
    contract: DataContract,
    missing: MissingPolicy,
    hierarchies: Mapping[str, Hierarchy] | None = None,
) -> FixRun:
    """The empty step list on ``frame``; ``hierarchies`` come with the dataset
    (:attr:`FixRun.reference_hierarchies`)."""
    return FixRun(
        frame, contract, MissingPolicy.parse(missing), frame, contract, reference_hierarchies=dict(hierarchies or {})
    )


def extend_run(run: FixRun, spec: Mapping[str, Any], position: int | None = None, *, key: str | None = None) -> FixRun:
    """``run`` with one more step applied; a step that cannot be applied gives a run with ``error`` set.

    The spec is compiled to a core step (:func:`compile_spec`) and applied by the core's step registry; the
    least-lossy search is the one kind that runs the core's search instead (:func:`least_lossy_search`). ``key`` is
    the pseudonymization key (settings), handed to a ``pseudonymize`` step and never kept in the run.
    """
    if run.error is not None:
        return run
    index = len(run.specs) if position is None else position
    try:
        checked = check_spec(spec)
        context = step_context(run, checked, key=key)
        if checked["kind"] == "search":
            result = least_lossy_search(run.data, checked, context)
        else:
            result = apply_step(run.data, compile_spec(checked, context), secrets={"key": context.key})
    except PrivdashError as exc:
        label = KINDS.get(canonical_name(spec.get("kind", "")), "step") if isinstance(spec, Mapping) else "step"
        message = f"Step {index + 1} ({label.lower()}) was not applied: {exc}"
        return replace(run, error=message, failed=index)
    kept = run.kept_rows
    if result.kept_rows is not None:
        base = np.arange(len(run.original)) if kept is None else kept
        kept = base[np.asarray(result.kept_rows, dtype=np.int64)]
    hierarchies = dict(run.hierarchies)
    for name, hierarchy in context.hierarchies.items():
        if name in hierarchies:
            continue
        # Built over the original column (every row kept, values unchanged so far), the hierarchy covers the
        # original values as a table; otherwise the metrics rebuild it from its rule over the original values.
        untouched = run.kept_rows is None and run.data[name].equals(run.original[name])
        hierarchies[name] = replace(hierarchy, rule=None) if untouched else hierarchy
    recoded = list(result.mapping["column"].unique()) if result.mapping is not None else []
    if checked["kind"] == "search":
        recoded = list(result.summary.get("levels", {}))
    contract = adapt_contract(run.contract, result.data, recoded)
    return replace(
        run,
        data=result.data,
        contract=contract,
        specs=(*run.specs, checked),
        results=(*run.results, result),
        kept_rows=kept,
        hierarchies=hierarchies,
    )


def run_fixes(
    frame: pd.DataFrame,
    contract: DataContract,
    missing: MissingPolicy,
    specs: Sequence[Mapping[str, Any]],
    progress: Callable[[int, str], None] | None = None,
    *,
    key: str | None = None,
) -> FixRun:
    """Apply ``specs`` in order (stopping at the first that fails; see :attr:`FixRun.error`); ``key`` as in
    :func:`extend_run`."""
    run = start_run(frame, contract, missing)
    for index, spec in enumerate(specs):
        if progress is not None:
            progress(index, describe_spec(spec) if isinstance(spec, Mapping) else "step")
        run = extend_run(run, spec, key=key)
    return run


# --- compiling a spec to a core step -------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class StepContext:
    """What a spec takes from the table it is applied to (the spec itself holds settings only).

    Attributes
    ----------
    contract
        The data contract of the current table (fields of its columns only): quasi-identifiers, sensitive
        attributes, types and ordinal orders.
    missing
        The view's missing-value policy (record suppression forms its classes with it).
    hierarchies
        Hierarchies built from rules over the current values: the column of a ``generalize`` spec (its rule), each
        quasi-identifier of a ``search`` (the default rule of its type).
    key
        The pseudonymization key of the settings, or None (a ``pseudonymize`` step then fails with the core's
        message). The compiled step carries it to the core; the step the core returns records its fingerprint only.
    """

    contract: DataContract
    missing: MissingPolicy
    hierarchies: Mapping[str, Hierarchy] = field(default_factory=dict)
    key: str | None = field(default=None, repr=False)

    @property
    def quasi_identifiers(self) -> list[str]:
        """The quasi-identifiers of the current table; raises :class:`FixError` when none is left."""
        qis = list(self.contract.quasi_identifiers)
        if not qis:
            raise FixError("No quasi-identifier is left: mark some on the Risk or Data page.")
        return qis

    @property
    def orders(self) -> dict[str, list[Any]]:
        """Declared order of each ordinal quasi-identifier."""
        qis = set(self.contract.quasi_identifiers)
        return {name: list(values) for name, values in self.contract.ordinal_orders().items() if name in qis}


def step_context(run: FixRun, spec: Mapping[str, Any], *, key: str | None = None) -> StepContext:
    """The context of validated ``spec`` applied next on ``run`` (builds the hierarchies its rules describe)."""
    data = run.data
    contract = DataContract(tuple(item for item in run.contract.fields if item.name in data.columns))
    context = StepContext(contract, run.missing, key=key)
    hierarchies: dict[str, Hierarchy] = {}
    if spec["kind"] == "generalize":
        (column,) = check_columns(data, [spec["column"]], role="column to generalize")
        if spec["rule"]["builder"] == "dataset":
            given = _reference_hierarchy(run, column)
            if given is None:
                raise FixError(
                    f"The dataset has no hierarchy of '{column}' that covers its current values: import or edit one "
                    "on the Data page, or choose a rule."
                )
            hierarchies[column] = given
        else:
            hierarchies[column] = build_hierarchy(spec["rule"], data[column])
    elif spec["kind"] == "search":
        for name in context.quasi_identifiers:
            given = _reference_hierarchy(run, name)
            hierarchies[name] = given or search_hierarchy(data[name], contract[name].statistical_type, spec["k"])
    return replace(context, hierarchies=hierarchies)


def _reference_hierarchy(run: FixRun, name: str) -> Hierarchy | None:
    """The dataset's own hierarchy of ``name`` when its current values are all leaves of it (no earlier step
    recoded them), else None."""
    hierarchy = run.reference_hierarchies.get(name)
    if hierarchy is None:
        return None
    try:
        hierarchy.leaf_codes(run.data[name])
    except PrivdashError:
        return None
    return hierarchy


def compile_spec(spec: Mapping[str, Any], context: StepContext) -> Step:
    """The core step (:mod:`privdash.transform.steps`) a validated spec stands for in ``context``.

    Every kind but ``search`` compiles to the registered step of the same name (a technique has one name, the
    spec's kind and the recipe's, :mod:`privdash.application.techniques`); the resolved step the core returns (e.g.
    the rule of a hierarchy with its cut points) is what the recipe records. Raises :class:`FixError` for
    ``search`` and when the context lacks what the spec needs (a quasi-identifier, the hierarchy of the generalized
    column).
    """
    kind = spec["kind"]
    if kind == "generalize":
        column = spec["column"]
        if column not in context.hierarchies:
            raise FixError(f"No hierarchy was built for the column '{column}'.")
        setting = {"level": spec["level"], "hierarchy": context.hierarchies[column].to_dict()}
        return Step(kind, {"columns": {column: setting}})
    if kind == "top_bottom_coding":
        names = ("top_quantile", "bottom_quantile") if spec["quantiles"] else ("top", "bottom")
        return Step(
            kind,
            {
                "column": spec["column"],
                names[0]: spec["top"],
                names[1]: spec["bottom"],
                "replacement": "label" if spec["labels"] else "threshold",
            },
        )
    if kind in ("drop_identifiers", "mask_identifiers", "pseudonymize"):
        params: dict[str, Any] = {"columns": spec["columns"]}
        if kind == "mask_identifiers":
            params.update(keep_first=spec["first"], keep_last=spec["last"])
        if kind == "pseudonymize":
            params["length"] = spec["length"]
        return Step(kind, params)
    if kind == "search":
        raise FixError("The least-lossy search is not a step of its own: its result is (see least_lossy_search).")
    qis = context.quasi_identifiers
    if kind == "record_suppression":
        params = {
            "quasi_identifiers": qis,
            "max_suppression": spec["max_suppression"],
            "k": spec["k"],
            "missing": context.missing.value,
            "orders": context.orders,
        }
        release = spec.get("release") or {}
        if release:
            household = context.contract.household
            if "household_risk" in release and household is None:
                raise FixError("household_risk needs a household column: give a column the role 'household'.")
            params.update(
                risk_targets=dict(release),
                weights=context.contract.weight,
                household=household if "household_risk" in release else None,
            )
        return Step(kind, params)
    if kind == "local_suppression":
        given = [name for name in spec["importance"] if name in qis]
        importance = given + [name for name in qis if name not in given] if given else None
        return Step(
            kind,
            {"quasi_identifiers": qis, "k": spec["k"], "importance": importance, "orders": context.orders},
        )
    if kind == "microaggregation":
        types, orders = types_from_contract(context.contract)
        params = {
            "quasi_identifiers": qis,
            "k": spec["k"],
            "types": types,
            "orders": orders,
            "decimals": spec["decimals"],
        }
        return Step(kind, params)
    raise FixError(f"Unknown step kind {kind!r}.")


def least_lossy_search(data: pd.DataFrame, spec: Mapping[str, Any], context: StepContext) -> TransformResult:
    """The generalization levels (and record suppression) of least loss meeting a validated ``search`` spec.

    The exception to :func:`compile_spec`: the levels are the outcome of the core's search
    (:func:`~privdash.search.lattice.optimal_generalization`) over ``context.hierarchies``, so the spec is not
    a step; the step of the result is the registered ``generalize`` step that reproduces it, and the summary adds
    the search's own (``search``).
    """
    qis = context.quasi_identifiers
    sensitive = list(context.contract.sensitive)
    wants_sensitive = spec["l"] is not None or spec["t"] is not None
    if wants_sensitive and not sensitive:
        raise FixError(
            "The l and t targets need a sensitive attribute: mark one on the Risk page, or leave l and t off."
        )
    options: dict[str, Any] = {
        "quasi_identifiers": qis,
        "k": spec["k"],
        "l": spec["l"],
        "t": spec["t"],
        "sensitive": sensitive if wants_sensitive else (),
        "max_risk": spec["max_risk"],
        "max_suppression": spec["max_suppression"],
        "metric": spec["metric"],
    }
    hierarchies = {name: context.hierarchies[name] for name in qis}
    if context.contract.entity is not None:
        return _people_search(data, spec, context, hierarchies, options)
    release = spec.get("release") or {}
    if release:
        # As privdash anonymize --targets: the targets whole, with the population of the sampling weights and the
        # household id of the contract.
        targets = PrivacyTargets(
            k=spec["k"],
            l=spec["l"],
            t=spec["t"],
            sensitive=tuple(options["sensitive"]),
            max_risk=spec["max_risk"],
            **release,
        )
        options.update(targets=targets, weights=context.contract.weight, household=context.contract.household)
    if spec.get("recoding") == "local":
        local = local_recoding(data, hierarchies, **options)
        transform = local.transform
        mapping = _local_mapping(data, transform.data, transform.kept_rows, qis)
        summary = {**transform.summary, "search": local.summary()}
        return TransformResult(transform.data, transform.step, summary, mapping, transform.kept_rows)
    found = optimal_generalization(data, hierarchies, **options, solutions=SOLUTIONS_SHOWN, pick=spec.get("pick", 1))
    transform = found.transform
    summary = {**transform.summary, "search": found.summary()}
    return TransformResult(transform.data, transform.step, summary, transform.mapping, transform.kept_rows)


def _people_search(
    data: pd.DataFrame,
    spec: Mapping[str, Any],
    context: StepContext,
    hierarchies: Mapping[str, Hierarchy],
    options: Mapping[str, Any],
) -> TransformResult:
    """The search judged on people (the contract's person id, as ``privdash anonymize --entity``): whole people
    suppressed, the limit counting people. The options the people search does not take are refused here."""
    entity = str(context.contract.entity)
    refused = {
        "a pick among several solutions": spec.get("pick", 1) != 1,
        "local recoding": spec.get("recoding") == "local",
        "the release rules " + ", ".join(spec.get("release") or {}): bool(spec.get("release")),
    }
    given = [name for name, present in refused.items() if present]
    if given:
        raise FixError(
            f"The search judged on people (person id '{entity}') does not take {_joined(given)}: it finds the one "
            "least lossy global generalization meeting k, l, t and the highest risk on people. Leave them out, or "
            f"take the person-id role off '{entity}' to search on rows."
        )
    try:
        found = people_generalization(data, hierarchies, entity=entity, **options)
    except PrivdashError as exc:
        raise FixError(
            f"{exc} (the search on people visits every node of the lattice: there is no best-first search on people)"
            if "nodes" in str(exc)
            else str(exc)
        ) from None
    transform = found.transform
    search = {
        **found.summary(),
        "suppressed": found.rows_suppressed,
        "nodes_checked": found.nodes_counted,
        "lattice_size": found.nodes,
        "loss": found.value,
        "search": "exact",
        "proven_optimal": True,
    }
    return TransformResult(
        transform.data, transform.step, {**transform.summary, "search": search}, transform.mapping, transform.kept_rows
    )


def _local_mapping(
    data: pd.DataFrame, published: pd.DataFrame, kept_rows: np.ndarray | None, qis: Sequence[str]
) -> pd.DataFrame:
    """Original -> published values of a local recoding: every distinct pair over the published records, so an
    original value generalized to different levels in different parts of the table has a row per published value
    (``column``, ``original``, ``published``)."""
    rows = np.arange(len(data)) if kept_rows is None else np.asarray(kept_rows, dtype=np.int64)
    frames = []
    for name in qis:
        pairs = pd.DataFrame(
            {"original": data[name].iloc[rows].to_numpy(), "published": published[name].to_numpy()}
        ).dropna(subset=["original"])
        pairs = pairs.drop_duplicates(ignore_index=True)
        frames.append(pairs.assign(column=name)[["column", "original", "published"]])
    return pd.concat(frames, ignore_index=True)


# --- descriptions --------------------------------------------------------------------------------------------------


def describe_spec(spec: Mapping[str, Any]) -> str:
    """One line saying what a (valid) spec does."""
    kind = spec.get("kind")
    if kind == "generalize":
        rule = spec.get("rule", {})
        how = f"{rule.get('builder')} {rule_text(rule)}"
        return f"Generalize {spec.get('column')} to level {spec.get('level')} ({how})"
    if kind == "top_bottom_coding":
        parts = [f"{side} {spec[side]:g}" for side in ("top", "bottom") if spec.get(side) is not None]
        unit = " (quantiles)" if spec.get("quantiles") else ""
        return f"Top/bottom-code {spec.get('column')}: {', '.join(parts)}{unit}"
    if kind == "record_suppression":
        limit = 100 * float(spec.get("max_suppression", 0))
        rules = "".join(f", {name} ≤ {value:g}" for name, value in (spec.get("release") or {}).items())
        return f"Suppress records of classes smaller than {spec.get('k')}{rules} (at most {limit:g}% of rows)"
    if kind == "local_suppression":
        order = ", ".join(spec.get("importance") or []) or "fewest distinct values first"
        return f"Blank QI cells until k = {spec.get('k')} (importance: {order})"
    if kind == "microaggregation":
        return f"Microaggregate the QIs in clusters of at least {spec.get('k')} records"
    if kind in ("drop_identifiers", "mask_identifiers", "pseudonymize"):
        verb = {"drop_identifiers": "Drop", "mask_identifiers": "Mask", "pseudonymize": "Pseudonymize"}[kind]
        return f"{verb} {', '.join(spec.get('columns') or [])}"
    if kind == "search":
        targets = [f"k ≥ {spec.get('k')}"]
        for key, sign in (("l", "≥"), ("t", "≤"), ("max_risk", "≤")):
            if spec.get(key) is not None:
                targets.append(f"{key} {sign} {spec[key]:g}")
        for key, value in (spec.get("release") or {}).items():
            if key != "population_uniques_estimator":
                targets.append(f"{key} {'≥' if key == 'k_map' else '≤'} {value:g}")
        limit = 100 * float(spec.get("max_suppression", 0))
        chosen = f"; solution {spec['pick']}" if spec.get("pick", 1) != 1 else ""
        what = "Least-lossy local recoding" if spec.get("recoding") == "local" else "Least-lossy generalization"
        return f"{what}: {', '.join(targets)}; suppress ≤ {limit:g}%; {spec.get('metric', 'loss')}" + chosen
    return str(kind)


def describe_result(spec: Mapping[str, Any], result: TransformResult) -> str:
    """What a step did, from the core's summary."""
    s = result.summary
    kind = spec["kind"]
    if kind == "generalize":
        return f"{s.get('cells_changed', 0):,} cells changed"
    if kind == "top_bottom_coding":
        top, bottom = s.get("cells_top_coded", 0), s.get("cells_bottom_coded", 0)
        return f"{top:,} top-coded, {bottom:,} bottom-coded (thresholds {s.get('top')}, {s.get('bottom')})"
    if kind == "record_suppression":
        reached = "target reached" if s.get("target_reached") else "target not reached within the suppression limit"
        return f"{s.get('rows_removed', 0):,} records removed; smallest class {s.get('k_achieved')}; {reached}"
    if kind == "local_suppression":
        return f"{s.get('cells_suppressed', 0):,} cells blanked in {s.get('records_affected', 0):,} records"
    if kind == "microaggregation":
        return f"{s.get('clusters', 0):,} clusters; smallest class {s.get('k_achieved')}"
    if kind == "drop_identifiers":
        return f"{len(s.get('columns_dropped', []))} column(s) removed"
    if kind == "mask_identifiers":
        return f"{sum(s.get('cells_masked', {}).values()):,} cells masked"
    if kind == "pseudonymize":
        return f"key fingerprint {s.get('key_fingerprint')}"
    if kind == "search":
        found = s.get("search", {})
        if found.get("recoding") == "local":
            return _describe_local(found)
        levels = ", ".join(f"{c} {v}" for c, v in found.get("levels", {}).items())
        checked = f"{found.get('nodes_checked', 0):,} of {found.get('lattice_size', 0):,} nodes checked"
        bound = f"; bound by {_target_words(found['bound_by'])}" if found.get("bound_by") else ""
        if found.get("search") == "heuristic" and not found.get("proven_optimal"):
            checked += f" (best-first, at most {found.get('gap', 0):.1%} above the optimum)"
        if found.get("entity"):
            return (
                f"judged on people ('{found['entity']}'): levels {levels}; {found.get('people_suppressed', 0):,} "
                f"people ({found.get('rows_suppressed', 0):,} rows) suppressed; {checked}"
            )
        return f"levels {levels}; {found.get('suppressed', 0):,} records suppressed; {checked}{bound}"
    return ""


def _level_range(counts: Mapping[str, int]) -> str:
    """``0–2`` (or ``1``) from a local recoding's records per level of one column."""
    used = sorted(int(level) for level, count in counts.items() if count)
    if not used:
        return "-"
    return str(used[0]) if used[0] == used[-1] else f"{used[0]}–{used[-1]}"


def _describe_local(found: Mapping[str, Any]) -> str:
    """What a local recoding did: the levels used per column, records suppressed, classes, and the loss beside the
    global optimum's."""
    levels = ", ".join(f"{c} {_level_range(counts)}" for c, counts in found.get("levels", {}).items())
    metric = found.get("metric", Metric.LOSS.value)
    return (
        f"local recoding, levels {levels}; {found.get('suppressed', 0):,} records suppressed; "
        f"{found.get('classes', 0):,} classes, smallest {found.get('k', 0)}; {metric} {found.get('loss', 0):.4f} "
        f"(global optimum {found.get('global_loss', 0):.4f})"
    )


# --- utility -------------------------------------------------------------------------------------------------------


def information_loss_pair(run: FixRun) -> tuple[InformationLoss, InformationLoss]:
    """ARX's information-loss metrics of the original (the baseline) and of the fixed table, over the QIs kept.

    Each QI is measured against the hierarchy of its generalization, or a one-level hierarchy (value -> ``*``)
    when it was not generalized. Raises :class:`PrivdashError` when a published value is not a generalization of
    the original (microaggregation, top coding, blanked cells): the metrics are not defined for those steps.
    """
    qis = [name for name in run.base_contract.quasi_identifiers if name in run.data.columns]
    if not qis:
        raise FixError("No quasi-identifier is left to measure.")
    hierarchies = {name: run.hierarchies.get(name) or _flat_hierarchy(run.original[name]) for name in qis}
    return information_loss_with_baseline(
        run.original, run.data, hierarchies, quasi_identifiers=qis, kept_rows=run.kept_rows
    )


def _flat_hierarchy(values: pd.Series) -> Hierarchy:
    """Every value -> ``*``: the hierarchy of a column that was published as it is."""
    leaves = pd.Index(values.dropna().unique())
    if not len(leaves):
        raise FixError(f"Column '{values.name}' has no values.")
    return Hierarchy.from_rows(
        np.column_stack([np.asarray(leaves, dtype=object), np.full(len(leaves), TOP, dtype=object)])
    )


# --- pseudonymization key ------------------------------------------------------------------------------------------


def key_status(key: str | None) -> tuple[bool, str]:
    """Whether ``key`` (the settings' ``pseudonym_key``) is a usable pseudonymization key, and a sentence saying so
    (never the key)."""
    if not key:
        return False, (
            f"No pseudonymization key is configured: set the environment variable {KEY_ENV} on the server to a "
            f"secret of at least {MIN_KEY_BYTES} characters. Masking and dropping work without it."
        )
    try:
        return True, f"Key from {KEY_ENV}, fingerprint {key_fingerprint(key)}."
    except PrivdashError as exc:
        return False, str(exc)


# --- the verdict's fix sentence ------------------------------------------------------------------------------------


def cheapest_fix(run: FixRun) -> str | None:
    """What the last least-lossy search of the list found, in one sentence for the verdict ("The cheapest fix
    found (least loss): generalize age (e.g. 39 → 20-39) and education, suppress 406 records (1.3%)."); None when
    the list has no search that was applied. Columns whose level publishes every value as it is are not named."""
    found: TransformResult | None = None
    for spec, result in zip(run.specs, run.results, strict=True):
        if spec["kind"] == "search":
            found = result
    if found is None:
        return None
    summary = found.summary.get("search", {})
    generalized = []
    mapping = found.mapping
    local = summary.get("recoding") == "local"
    for name, level in summary.get("levels", {}).items():
        if mapping is None or (local and not any(int(v) > 0 and n for v, n in level.items())):
            continue
        if not local and int(level) <= 0:
            continue
        block = mapping[mapping["column"] == name]
        changed = block[np.asarray(_texts(block["original"])) != np.asarray(_texts(block["published"]))]
        if len(changed):
            example = changed.iloc[len(changed) // 2]
            generalized.append(f"{name} (e.g. {example['original']} → {example['published']})")
    suppressed = int(summary.get("suppressed", 0))
    rows = len(run.original)
    parts = []
    if generalized:
        parts.append(("generalize in parts of the table " if local else "generalize ") + _joined(generalized))
    if suppressed:
        parts.append(f"suppress {suppressed:,} records ({suppressed / rows:.1%})" if rows else "suppress records")
    if not parts:
        return "The cheapest fix found: none needed, the table meets the search's targets as it is."
    metric = summary.get("metric", Metric.LOSS.value)
    bound = f" Finer levels fail {_target_words(summary['bound_by'])}." if summary.get("bound_by") else ""
    pick = int(summary.get("pick", 1))
    if local:
        return f"The cheapest fix found (local recoding, least {metric}): {', '.join(parts)}.{bound}"
    if pick > 1:
        return f"The fix chosen (solution {pick} of the search, by {metric}): {', '.join(parts)}.{bound}"
    return f"The cheapest fix found (least {metric}): {', '.join(parts)}.{bound}"


#: Targets as the page words them.
TARGET_WORDS = {"k": "k-anonymity", "l": "l-diversity", "t": "t-closeness", "max_risk": "the highest risk"}


def _target_words(names: Sequence[str]) -> str:
    return _joined([TARGET_WORDS.get(name, name) for name in names]) if names else ""


def _joined(items: Sequence[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


# --- a sample of rows before and after ------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class RowSample:
    """A few records of the original table and what the steps made of them, for the page to show side by side.

    ``before`` and ``after`` have the same index (positions in the original table) and the same columns (the
    quasi-identifiers, then the sensitive attributes, present in both tables); values are display text, missing
    values None. ``suppressed`` flags the records the steps removed (their ``after`` row is all None) and
    ``changed`` the cells whose published text differs from the original's.
    """

    before: pd.DataFrame
    after: pd.DataFrame
    suppressed: np.ndarray
    changed: pd.DataFrame


#: Records :func:`row_sample` looks at (the first ones of the table): enough to find a few changed ones, and a
#: bounded cost on a table of millions of rows.
SAMPLE_SCAN = 50_000


def row_sample(run: FixRun, size: int = 8, columns: int = 8) -> RowSample:
    """Up to ``size`` records among the first :data:`SAMPLE_SCAN`: those the steps changed first (then, when some
    were removed, a few of those), in table order; at most ``columns`` columns (QIs first). Raises
    :class:`FixError` when no column is left to show."""
    contract = run.base_contract
    names = [n for n in (*contract.quasi_identifiers, *contract.sensitive) if n in run.data.columns]
    names = list(dict.fromkeys(names))[:columns]
    if not names:
        raise FixError("No quasi-identifier or sensitive attribute is left to show.")
    n = min(len(run.original), SAMPLE_SCAN)
    kept = np.arange(len(run.original)) if run.kept_rows is None else np.asarray(run.kept_rows, dtype=np.int64)
    published = np.flatnonzero(kept < n)  # rows of the fixed table that come from the scanned records
    removed = np.ones(n, dtype=bool)
    removed[kept[published]] = False
    gone = np.flatnonzero(removed)
    n_gone = min(len(gone), max(size // 4, 1)) if len(gone) else 0
    # Records are compared in growing chunks until enough changed ones are found (the first ones in table order).
    differs = np.zeros((n, len(names)), dtype=bool)
    done, chunk = 0, 1024
    while done < n:
        stop = min(done + chunk, n)
        rows = published[(kept[published] >= done) & (kept[published] < stop)]
        for j, name in enumerate(names):
            differs[kept[rows], j] = _texts_differ(run.original[name].iloc[kept[rows]], run.data[name].iloc[rows])
        done, chunk = stop, chunk * 4
        if int(differs[:done].any(axis=1).sum()) >= size - n_gone:
            break
    touched = np.flatnonzero(differs.any(axis=1))
    chosen = np.concatenate([touched[: size - n_gone], gone[:n_gone]])
    if len(chosen) < size:  # nothing (or little) changed: show the first records as they are
        rest = np.setdiff1d(np.arange(n), chosen, assume_unique=True)
        chosen = np.concatenate([chosen, rest[: size - len(chosen)]])
    chosen = np.sort(chosen).astype(np.int64)
    # Display text for the chosen records only.
    before = _display(run.original[names].iloc[chosen].set_axis(chosen))
    after = pd.DataFrame(None, index=before.index, columns=names, dtype=object)
    shown = np.flatnonzero(~removed[chosen])
    if len(shown):
        fixed_rows = np.searchsorted(kept, chosen[shown])
        after.iloc[shown] = _display(run.data[names].iloc[fixed_rows]).to_numpy()
    changed = pd.DataFrame(differs[chosen], index=before.index, columns=names)
    return RowSample(before, after, removed[chosen], changed)


def _texts_differ(original: pd.Series, published: pd.Series) -> np.ndarray:
    """Per row, whether the display texts (:func:`_display`) of the two aligned columns differ: a value missing on
    one side only differs; equal values of one dtype have equal texts, so only the other pairs are converted."""
    before, after = original.reset_index(drop=True), published.reset_index(drop=True)
    missing_before, missing_after = before.isna().to_numpy(), after.isna().to_numpy()
    out = missing_before != missing_after
    both = ~missing_before & ~missing_after
    if before.dtype == after.dtype and before.dtype != object:
        both &= ~(before == after).to_numpy(dtype=bool, na_value=False)
    rows = np.flatnonzero(both)
    if len(rows):
        out[rows] = np.asarray(canonical_text(pd.Index(before.iloc[rows]))) != np.asarray(
            canonical_text(pd.Index(after.iloc[rows]))
        )
    return out


def _display(frame: pd.DataFrame) -> pd.DataFrame:
    """Display text of every cell (numbers as written, no trailing ``.0`` on whole floats), missing as None."""
    columns = {}
    for name in frame.columns:
        column = frame[name]
        present = column.notna().to_numpy()
        texts = np.full(len(column), None, dtype=object)
        if present.any():
            texts[present] = np.asarray(canonical_text(pd.Index(column[present])), dtype=object)
        columns[name] = texts
    return pd.DataFrame(columns, index=frame.index)


# --- re-applying a recipe --------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class RecipeOutcome:
    """A recipe re-applied to a table: the published table, what each step did, and the warning when it removed
    more records than the limit the recipe was made with (:meth:`Recipe.suppression_excess`)."""

    recipe: Recipe
    data: pd.DataFrame
    rows_in: int
    steps: tuple[str, ...]
    warning: str | None

    @property
    def rows_out(self) -> int:
        return len(self.data)


def reapply_recipe(frame: pd.DataFrame, text: str | bytes, *, key: str | None = None) -> RecipeOutcome:
    """Apply the recipe in ``text`` (JSON, as the Fix page or ``privdash anonymize --save-recipe`` write it; the
    bytes of an uploaded file are decoded as :meth:`Recipe.from_bytes` does) to ``frame``; ``key`` is the
    pseudonymization key of the settings. Raises ``PrivdashError`` with a message for the page (not JSON, not a
    recipe, a step that does not fit the table)."""
    source = "The recipe file"
    recipe = Recipe.from_bytes(text, source) if isinstance(text, bytes) else Recipe.from_json(text, source)
    data, results = apply_recipe(frame, recipe, secrets={"key": key})
    steps = tuple(
        f"{result.step.kind}: {len(result.data):,} records out"
        + (f" ({_rows_removed(result)})" if result.kept_rows is not None else "")
        for result in results
    )
    return RecipeOutcome(recipe, data, len(frame), steps, recipe.suppression_excess(len(frame), len(data)))


def _rows_removed(result: TransformResult) -> str:
    removed = int(result.summary.get("rows_in", len(result.data))) - len(result.data)
    return f"{removed:,} removed"
