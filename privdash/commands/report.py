"""``privdash report``: the release report of a table (HTML or PDF, by the output's extension), optionally after a
fix (a saved recipe re-applied, or the least-lossy search of ``privdash anonymize``).

The exit status is 0 whenever the report is written, whatever its verdict (the verdict is in the report; use
``privdash diagnose --targets`` for a pass/fail status), and 2 for bad input.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import pandas as pd

from privdash.application.formats import in_people
from privdash.application.report import (
    AppliedFix,
    build_report,
    file_fingerprint,
    recipe_fix,
    search_fix,
)
from privdash.application.report.render import FORMATS, report_format, write_report
from privdash.application.settings import Settings
from privdash.commands import _project
from privdash.commands._common import split_columns
from privdash.commands.anonymize import _refuse_overwrite, default_hierarchies
from privdash.commands.diagnose import _population_argument
from privdash.data.contract import ColumnRole, DataContract, FieldMetadata, StatisticalType
from privdash.data.tables import read_table_with_info
from privdash.errors import ColumnError, ParameterError
from privdash.geo import geography
from privdash.geo.postcodes import DEFAULT_POPULATION_THRESHOLD, PopulationTable, read_population
from privdash.measure.model_risk import parse_model_risk_methods
from privdash.targets import DEFAULT_MAX_SUPPRESSION, PrivacyTargets, parse_targets
from privdash.transform.hierarchy import load_hierarchies
from privdash.transform.steps import Recipe
from privdash.utility.estimates import parse_estimate

#: The census table the postcode units are looked up in (England and Wales, 2011, outward codes).
POSTCODE_POPULATION = Path("uk_postcode_population_ew2011_outward") / "ew2011_outward_code_population.csv"


def _targets(args: argparse.Namespace) -> PrivacyTargets:
    """The targets of ``--targets`` and ``--k`` (one k only)."""
    if args.targets is None:
        return PrivacyTargets(k=2 if args.k is None else args.k, sensitive=())
    targets = parse_targets(args.targets)
    named = {part.partition("=")[0].strip().lower() for part in args.targets.split(",")}
    if args.k is not None:
        if "k" in named and targets.k != args.k:
            raise ParameterError(f"--k {args.k} and the k={targets.k} of --targets differ; give k once.")
        targets = replace(targets, k=args.k)
    elif "k" not in named:
        targets = replace(targets, k=2)
    return targets


def _contract(args: argparse.Namespace, data: pd.DataFrame) -> DataContract:
    """The contract of --contract with the roles of --qi, --sensitive, --weights and --household, or one inferred
    from the data with those roles."""
    qis = split_columns(args.qi)
    sensitive = split_columns(args.sensitive)
    household = args.household
    entity = args.entity
    named = [
        *qis,
        *sensitive,
        *([args.weights] if args.weights else []),
        *([household] if household else []),
        *([entity] if entity else []),
    ]
    unknown = [name for name in named if name not in data]
    if unknown:
        raise ColumnError(f"{args.file.name} has no column {', '.join(repr(name) for name in unknown)}.")
    if entity is not None:
        others = (("quasi-identifier", qis), ("sensitive attribute", sensitive), ("weight column", [args.weights]))
        for role, names in others:
            if entity in names:
                raise ColumnError(f"The person-id column '{entity}' cannot also be a {role}.")
    if household is not None:
        others = (("quasi-identifier", qis), ("sensitive attribute", sensitive), ("weight column", [args.weights]))
        for role, names in others:
            if household in names:
                raise ColumnError(f"The household column '{household}' cannot also be a {role}.")
    if args.contract is not None:
        contract = DataContract.load(args.contract)
        contract.validate(data)
        roles: dict[str, ColumnRole] = {}
        if args.qi is not None:
            roles |= {f.name: ColumnRole.INSENSITIVE for f in contract.fields if f.role == ColumnRole.QUASI_IDENTIFIER}
        if args.sensitive is not None:
            roles |= {f.name: ColumnRole.INSENSITIVE for f in contract.fields if f.role == ColumnRole.SENSITIVE}
        roles |= dict.fromkeys(qis, ColumnRole.QUASI_IDENTIFIER)
        roles |= dict.fromkeys(sensitive, ColumnRole.SENSITIVE)
        if args.weights:
            roles[args.weights] = ColumnRole.WEIGHT
        if household:
            if contract.household not in (None, household):
                roles[str(contract.household)] = ColumnRole.INSENSITIVE
            roles[household] = ColumnRole.HOUSEHOLD
        if entity:
            if contract.entity not in (None, entity):
                roles[str(contract.entity)] = ColumnRole.INSENSITIVE
            roles[entity] = ColumnRole.ENTITY
        contract = contract.with_roles(roles)
        if household and household not in contract:  # a column the contract does not list
            contract = DataContract((*contract.fields, FieldMetadata(household, ColumnRole.HOUSEHOLD)))
        if entity and entity not in contract:
            contract = DataContract((*contract.fields, FieldMetadata(entity, ColumnRole.ENTITY)))
    else:
        contract = DataContract.for_columns(
            data, quasi_identifiers=qis, sensitive=sensitive, weight=args.weights, household=household, entity=entity
        )
    if not contract.quasi_identifiers:
        raise ColumnError("Give the quasi-identifiers with --qi (comma-separated), or a --contract that marks some.")
    overlap = sorted(set(contract.quasi_identifiers) & set(contract.sensitive))
    if overlap:
        raise ColumnError(f"A column cannot be both quasi-identifier and sensitive: {', '.join(overlap)}.")
    if args.entity_key != "set" and contract.entity is None:
        raise ParameterError(
            "--entity-key chooses how a person's rows form their key; name the person id with --entity."
        )
    return contract


def _fix(
    args: argparse.Namespace, data: pd.DataFrame, contract: DataContract, targets: PrivacyTargets
) -> AppliedFix | None:
    if args.recipe is not None and args.fix is not None:
        raise ParameterError("Give one fix: --recipe FILE or --fix least-lossy, not both.")
    if args.fix is None:
        search_only = [
            option
            for option, given in (
                ("--hierarchies", args.hierarchies is not None),
                ("--max-suppression", args.max_suppression != DEFAULT_MAX_SUPPRESSION),
                ("--save-recipe", args.save_recipe is not None),
            )
            if given
        ]
        if search_only:
            raise ParameterError(f"{', '.join(search_only)} belong(s) to --fix least-lossy, which was not given.")
    if args.recipe is not None:
        recipe = Recipe.load(args.recipe)
        # A pseudonymize step gets the key of PRIVDASH_PSEUDONYM_KEY; the recipe holds only its fingerprint.
        return recipe_fix(
            data, recipe, name=f"The recipe {args.recipe.name}", secrets={"key": Settings.from_env().pseudonym_key}
        )
    if args.fix == "least-lossy":
        qis = list(contract.quasi_identifiers)
        # Without --hierarchies, the defaults of privdash anonymize (those of the dashboard's search).
        hierarchies = (
            load_hierarchies(args.hierarchies, qis)
            if args.hierarchies is not None
            else default_hierarchies(data, qis, targets.k)
        )
        population = _population_argument(args.population) if args.population is not None else None
        needs_population = any(
            getattr(targets, name) is not None for name in ("k_map", "delta_presence", "population_uniques")
        )
        if needs_population and isinstance(population, pd.DataFrame):
            raise ParameterError(
                "The least-lossy search cannot meet k_map, delta_presence or population_uniques against a population "
                "table (it would have to be generalized with the sample): give --population N, --sampling-fraction "
                "or --weights for the fix, or drop --fix and judge the table against the population table."
            )
        fix = search_fix(
            data,
            contract,
            targets,
            hierarchies=hierarchies,
            max_suppression=args.max_suppression,
            metric=args.metric,
            population_size=population if isinstance(population, int | float) else None,
            sampling_fraction=args.sampling_fraction,
            entity_key=args.entity_key,
        )
        if args.save_recipe is not None:
            fix.recipe.save(args.save_recipe)
        return fix
    return None


def _postcode_population(contract: DataContract) -> PopulationTable | None:
    """The census populations of the postcode units, when a quasi-identifier holds postcodes and the shared data
    folder (``PRIVDASH_DATA_DIR``) has the table."""
    if not any(contract[name].statistical_type == StatisticalType.POSTCODE for name in contract.quasi_identifiers):
        return None
    path = Settings.from_env().data_dir / POSTCODE_POPULATION
    if not path.is_file():
        print(
            f"privdash report: note: {path} not found; the postcode units are listed without census populations "
            "(set PRIVDASH_DATA_DIR to the shared data folder).",
            file=sys.stderr,
        )
        return None
    return read_population(path)


def _postcode_polygons(contract: DataContract) -> dict[str, Any] | None:
    """The postcode district and area polygons of the shared data folder for the report's map, when a
    quasi-identifier holds postcodes and the folder has them (the map is left out otherwise)."""
    if not any(contract[name].statistical_type == StatisticalType.POSTCODE for name in contract.quasi_identifiers):
        return None
    settings = Settings.from_env()
    polygons: dict[str, Any] = {}
    districts = geography.district_polygons_dir(settings.data_dir)
    if districts.is_dir():
        polygons["district"] = geography.load_districts(districts, cache_dir=settings.geo_cache_dir).frame
    areas = geography.area_polygons_path(settings.data_dir)
    if areas.is_file():
        polygons["area"] = geography.load_areas(areas, cache_dir=settings.geo_cache_dir).frame
    return polygons or None


#: Options left out of the report's command line when they have these values (the defaults).
_DEFAULTS = {
    "missing": "value",
    "max_suppression": DEFAULT_MAX_SUPPRESSION,
    "metric": "loss",
    "postcode_min_population": DEFAULT_POPULATION_THRESHOLD,
    "entity_key": "set",
}


def _parameters(args: argparse.Namespace, targets: PrivacyTargets) -> list[tuple[str, str]]:
    """What the report was made with: the command line (paths reduced to file names) and the targets."""
    shown: list[str] = ["privdash report", args.file.name]
    supplied: set[str] = getattr(args, "project_supplied", set())
    for name, value in sorted(vars(args).items()):
        if name in ("file", "command") or value is None or _DEFAULTS.get(name, object()) == value:
            continue
        if name in supplied or name in ("project_supplied", "project_signoff"):
            continue  # filled in from --project, which is shown
        shown.append(f"--{name.replace('_', '-')} {value.name if isinstance(value, Path) else value}")
    return [("command", " ".join(shown)), ("targets", targets.describe())]


def recipe_entity(recipe: Recipe) -> tuple[str, str] | None:
    """The person id and person key of the first ``generalize`` step of ``recipe`` that removes whole people
    (``"entity": {"column": ..., "key": ...}``), or None."""
    for step in recipe.steps:
        spec = step.params.get("entity") if step.kind == "generalize" else None
        if isinstance(spec, Mapping) and spec.get("column"):
            return str(spec["column"]), str(spec.get("key") or "set")
    return None


def _with_recipe_entity(args: argparse.Namespace) -> argparse.Namespace:
    """The options, with the person id of a ``--recipe`` whose generalization was judged on people when neither
    --entity nor the contract names one: such a fix is reported in people, as it was made."""
    if args.recipe is None or args.fix is not None or args.entity is not None:
        return args
    if args.contract is not None and DataContract.load(args.contract).entity is not None:
        return args
    found = recipe_entity(Recipe.load(args.recipe))
    if found is None:
        return args
    column, key = found
    print(
        f"privdash report: note: the recipe's generalization is judged on the people of '{column}' ({key} of their "
        "QI tuples); the report counts people too (--entity).",
        file=sys.stderr,
    )
    return argparse.Namespace(**{**vars(args), "entity": column, "entity_key": key})


def _run(args: argparse.Namespace) -> int:
    kind = report_format(args.output)
    inputs: list[Path] = [args.file, *[p for p in (args.recipe, args.contract, args.save_recipe) if p is not None]]
    if args.population is not None and not re.fullmatch(r"[\d.,_eE+-]+", args.population):
        inputs.append(Path(args.population))
    _refuse_overwrite(args.output, [p for p in inputs if p != args.save_recipe])
    if args.save_recipe is not None:
        _refuse_overwrite(args.save_recipe, [args.file, args.output])
    data, info = read_table_with_info(args.file, sheet=args.sheet)
    for note in info.notes:
        print(f"privdash report: note: {note}", file=sys.stderr)
    shown_args = args
    args = _with_recipe_entity(args)
    contract = _contract(args, data)
    targets = _targets(args)
    population: Any = _population_argument(args.population) if args.population is not None else None
    fix = _fix(args, data, contract, targets)
    started = time.perf_counter()
    report = build_report(
        data,
        contract,
        targets,
        file_fingerprint(args.file, data),
        missing=args.missing,
        population=population,
        population_count=args.population_count,
        sampling_fraction=args.sampling_fraction,
        max_risk=args.max_risk,
        fix=fix,
        postcode_population=_postcode_population(contract),
        postcode_polygons=_postcode_polygons(contract),
        postcode_threshold=args.postcode_min_population,
        parameters=_parameters(shown_args, targets)
        + ([("person id", f"'{args.entity}' of the recipe ({args.entity_key})")] if args is not shown_args else []),
        signoff=getattr(args, "project_signoff", None),
        model_risk=parse_model_risk_methods(args.model_risk) if args.model_risk else (),
        estimates=[parse_estimate(text) for text in args.estimate or []],
        entity_key=args.entity_key,
    )
    for warning in report.diagnosis.warnings:
        print(f"privdash report: warning: {warning}", file=sys.stderr)
    path, seconds = write_report(report, args.output, protect=inputs)
    total = time.perf_counter() - started
    verdict = report.verdict
    sentence = verdict.sentence()
    print(f"{verdict.status.upper()}: {in_people(sentence) if report.diagnosis.entity is not None else sentence}")
    print(
        f"Wrote the {kind.upper()} report to {path} ({path.stat().st_size:,} bytes; rendered in {seconds:.1f} s, "
        f"{total:.1f} s in all)."
    )
    if args.save_recipe is not None:
        print(f"Saved the recipe to {args.save_recipe}.")
    return 0


__all__ = ["FORMATS", "run"]


#: The command: ``_run`` with the options a ``--project`` file supplies.
run = _project.with_project(_run, "report")
