"""Assembling a release report (:func:`build_report`) from a table, its contract, the targets and a fix, under the rule
that no value of a class smaller than k is shown (see :mod:`privdash.application.report`)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd

from privdash.application.fixes import adapt_contract
from privdash.application.project import SIGNOFF_FIELDS
from privdash.application.report.definitions import (
    DEFINITIONS,
    PEOPLE_DEFINITION,
    POLICY_RULES,
    ROLE_LABELS,
    describe_targets,
)
from privdash.application.report.model import (
    CLASS_ROWS,
    EXAMPLES,
    UNIT_ROWS,
    AppliedFix,
    ColumnInfo,
    Fingerprint,
    FixSummary,
    PostcodeUnits,
    Progress,
    ReleaseReport,
)
from privdash.application.riskview import combinations_left_out, missing_effect, size_bins
from privdash.application.services import default_k_values
from privdash.data.contract import ColumnRole, DataContract, FieldMetadata, StatisticalType
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
from privdash.measure.model_risk import check_model_request
from privdash.measure.model_risk import model_risk as fit_model_risk
from privdash.measure.risk import DEFAULT_MAX_RISK, records_at_risk_curve
from privdash.targets import PrivacyTargets
from privdash.transform.hierarchy import TOP, Hierarchy
from privdash.transform.steps import Recipe, TransformResult
from privdash.utility.estimates import Estimate, compare_estimates
from privdash.utility.metrics import cells_changed, information_loss_with_baseline

__all__ = ["build_report", "condensed_recipe", "printable_values", "recipe_steps", "shown_threshold"]


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


def _condensed_value(key: Any, value: Any) -> Any:
    """The summary printed instead of a recipe parameter that lists original values, or None to keep it."""
    if isinstance(value, Mapping):
        rows = value.get("rows")
        if set(value) == {"rows"} and isinstance(rows, list):
            levels = len(rows[0]) if rows and isinstance(rows[0], list) else 0
            return {"rows": f"{len(rows):,} leaves x {levels} levels"}
        if key == "orders":
            return {str(name): f"{len(order) if isinstance(order, list) else 0:,} ordered values" for name, order in
                    value.items()}  # fmt: skip
        if key == "mapping":
            return f"{len(value):,} values mapped"
        if key == "matrix":
            return f"{len(value):,} x {len(value):,} transition matrix"
        if key == "classes" and "values" in value:
            listed = value.get("values")
            return f"{len(listed) if isinstance(listed, list) else 0:,} classes"
    return None


def condensed_recipe(recipe: Recipe) -> str:
    """The recipe's JSON with each parameter that lists original values replaced by its shape: hierarchy tables
    (their leaves are original values, those of small classes among them), ordinal orders, value mappings, the
    classes of a local recoding and a PRAM matrix; rule-based hierarchies (settings only) are kept as they are. The
    seed of a random step is withheld: whoever holds it and the release can redraw the noise and subtract it (the
    recipe's SHA-256 still identifies the whole recipe)."""

    def condense(value: Any) -> Any:
        if isinstance(value, Mapping):
            out = {}
            for key, item in value.items():
                summary = _condensed_value(key, item)
                out[key] = WITHHELD_SEED if _is_seed(key, item) else summary if summary is not None else condense(item)
            rows = _condensed_value(None, value)
            return rows if rows is not None else out
        if isinstance(value, list):
            return [condense(item) for item in value]
        return value

    return _compact_json(condense(recipe.to_dict()))


#: The technique of each step kind, in words.
STEP_TECHNIQUES = {
    "generalize": "Generalization (global recoding)",
    "local_recode": "Local recoding",
    "record_suppression": "Record suppression",
    "local_suppression": "Cell suppression",
    "top_bottom_coding": "Top and bottom coding",
    "microaggregation": "Microaggregation",
    "add_noise": "Noise addition",
    "rank_swap": "Rank swapping",
    "pram": "PRAM (post-randomisation)",
    "shuffle": "Shuffling",
    "drop_identifiers": "Dropping columns",
    "mask_identifiers": "Masking",
    "pseudonymize": "Pseudonymization (keyed hash)",
    "postcode_recode": "Postcode recoding",
    "geomask_donut": "Geomasking (donut)",
    "geomask_perturb": "Geomasking (perturbation)",
}

#: Parameter names in words (the others: their name with spaces).
_PARAMETER_WORDS = {
    "max_suppression": "suppression limit",
    "k": "smallest group k",
    "p": "swap range p (% of the ranks)",
    "pd": "smallest probability of keeping a category",
    "alpha": "share of the randomisation",
    "keep_first": "characters kept at the start",
    "keep_last": "characters kept at the end",
    "mask_char": "mask character",
    "key_env": "key from the environment variable",
    "key_fingerprint": "key fingerprint",
    "length": "pseudonym length",
    "missing": "missing values",
}


def _in_words(value: Any) -> str:
    """A parameter's value as text: numbers with :g, yes/no, lists joined, objects as ``name value`` pairs."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, Mapping):
        return "; ".join(f"{key} {_in_words(item)}" for key, item in value.items() if item is not None)
    if isinstance(value, list | tuple):
        return ", ".join(_in_words(item) for item in value)
    return str(value)


def _hierarchy_words(spec: Any) -> tuple[str, str]:
    """A generalized column's top level (`` of 3``, when a table gives it) and its hierarchy in words: the shape of
    a table (its leaves are original values), or a rule."""
    hierarchy = spec.get("hierarchy") if isinstance(spec, Mapping) else None
    if not isinstance(hierarchy, Mapping):
        return "", ""
    rows = hierarchy.get("rows")
    if isinstance(rows, list):
        levels = len(rows[0]) - 1 if rows and isinstance(rows[0], list) else 0
        return f" of {levels}", f"hierarchy table of {len(rows):,} values"
    rule = hierarchy.get("rule")
    if isinstance(rule, Mapping):
        settings = _in_words({key: item for key, item in rule.items() if key != "builder"})
        return "", f"rule: {rule.get('builder', '?')}" + (f" {settings}" if settings else "")
    return "", ""


def _level_words(name: str, spec: Any) -> str:
    """What generalization does to one column, e.g. ``age to level 2 of 4 (hierarchy table of 74 values)``."""
    level = spec.get("level", 0) if isinstance(spec, Mapping) else 0
    top, how = _hierarchy_words(spec)
    if level == 0:
        return f"{name} kept as is (level 0{top}" + (f"; {how})" if how else ")")
    return f"{name} to level {level}{top}" + (f" ({how})" if how else "")


def _step_parameters(kind: str, params: Mapping[str, Any]) -> list[str]:
    """What a step's parameters say, in words; values that list original values are counted, seeds withheld."""
    words: list[str] = []
    for key, value in params.items():
        if value is None or (key == "quasi_identifiers" and kind in ("generalize", "local_recode")):
            continue
        if kind == "generalize" and key == "columns" and isinstance(value, Mapping):
            words += [_level_words(str(name), spec) for name, spec in value.items()]
            continue
        if key in ("columns", "column", "quasi_identifiers") and kind != "generalize":
            continue  # shown in the columns cell
        if key == "suppress" and isinstance(value, Mapping):
            try:
                targets = PrivacyTargets.from_dict(value)
            except PrivdashError:
                words.append(f"suppress: {_in_words(value)}")
            else:
                words.append(f"then the records of classes that miss {describe_targets(targets)} are suppressed")
            continue
        if key == "entity" and isinstance(value, Mapping):
            words.append(f"judged on the people of {value.get('column')} (key: the {value.get('key', 'set')})")
            continue
        if key == "hierarchies" and isinstance(value, Mapping):
            words.append(f"hierarchies of {', '.join(map(str, value))}")
            continue
        if _is_seed(key, value):
            words.append("seed withheld")
            continue
        summary = _condensed_value(key, value)
        if summary is not None:
            shown = _in_words(summary) if isinstance(summary, Mapping) else str(summary)
            words.append(f"{_PARAMETER_WORDS.get(key, str(key).replace('_', ' '))}: {shown}")
            continue
        name = _PARAMETER_WORDS.get(key, str(key).replace("_", " "))
        if key == "max_suppression" and isinstance(value, int | float):
            words.append(f"{name}: {value:.2%} of the records")
        else:
            words.append(f"{name}: {_in_words(value)}")
    return words


def _step_columns(params: Mapping[str, Any]) -> str:
    for key in ("columns", "column", "quasi_identifiers"):
        value = params.get(key)
        if isinstance(value, Mapping):
            return ", ".join(map(str, value))
        if isinstance(value, list | tuple):
            return ", ".join(map(str, value))
        if isinstance(value, str):
            return value
    return "-"


def recipe_steps(recipe: Recipe) -> tuple[tuple[str, str, tuple[str, ...]], ...]:
    """The recipe as ``(technique, columns, parameters)`` in words, one per step, for a reader: the technique of the
    step's kind (:data:`STEP_TECHNIQUES`), the columns it changes and its parameters (one phrase each), without the
    values a condensed recipe leaves out (:func:`condensed_recipe`)."""
    rows = []
    for step in recipe.steps:
        params = dict(step.params)
        technique = STEP_TECHNIQUES.get(step.kind, step.kind.replace("_", " ").capitalize())
        words = _step_parameters(step.kind, params)
        if step.kind in ("generalize", "local_recode") and isinstance(params.get("quasi_identifiers"), list):
            words.append(f"classes formed over {len(params['quasi_identifiers'])} quasi-identifiers")
        rows.append((technique, _step_columns(params), tuple(words) or ("-",)))
    return tuple(rows)


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
    signoff: Mapping[str, str] | None = None,
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
    methods (sdcMicro ``modRisk``) fitted to the released table. ``signoff``: sign-off fields filled in beforehand
    (a project's), printed in the sign-off block.
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
    check_model_request(model_risk, (), list(contract.quasi_identifiers))  # unknown methods: before any counting
    if entity is not None and model_risk:
        raise ParameterError(
            "Model-based risk fits the table of QI combinations of records; with a person id a class is a set of "
            "combinations per person, which the log-linear models do not describe. Leave out the model-based risk."
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
    # the risk models are fitted below, each table on its own, so that a table they cannot fit loses only them
    before = diagnose(data, contract=contract, missing=policy, **options)
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
            **options,
        )
    left_out: list[str] = []
    if model_risk:
        # Fitted to the released table and, with a fix, to the input too (the "before" column). A table the models
        # cannot fit (a grid of key combinations too large, a key generalized to one value) loses only them, with
        # the reason in the report.
        report_progress(35, "Fitting the risk models ...")
        diagnosis, note = _with_model_risk(diagnosis, model_risk, "the released table" if fix else "the table")
        left_out += [note] if note else []
        if fix is not None:
            before, note = _with_model_risk(before, model_risk, "the table before the fix")
            left_out += [note] if note else []
    verdict = diagnosis.check(targets)
    threshold = shown_threshold(targets)
    classes = diagnosis.classes

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
        signoff={name: str(value) for name, value in (signoff or {}).items() if value and name in SIGNOFF_FIELDS},
        people=_people_sentence(diagnosis) if entity is not None else None,
        left_out=tuple(left_out),
        definitions=DEFINITIONS + ((PEOPLE_DEFINITION,) if entity is not None else ()),
    )


def _with_model_risk(diagnosis: Diagnosis, methods: Sequence[str], name: str) -> tuple[Diagnosis, str | None]:
    """``diagnosis`` with the model-based risk of ``methods`` fitted to its classes, or unchanged with the reason the
    models could not be fitted to ``name``."""
    try:
        names, _pairs = check_model_request(methods, (), diagnosis.quasi_identifiers)
        fitted = {method: fit_model_risk(diagnosis.classes, method=method) for method in names}
    except PrivdashError as exc:
        return diagnosis, f"The model-based risk of {name} is not shown: {exc}"
    return replace(diagnosis, model_risk=fitted), None


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
        loss_before, loss_after = information_loss_with_baseline(
            data, published, hierarchies, quasi_identifiers=kept, kept_rows=fix.kept_rows
        )
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
        recipe_steps=recipe_steps(fix.recipe),
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
