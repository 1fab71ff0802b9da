"""``privdash anonymize``: the optimal generalization and record suppression meeting k / l / t / risk targets,
or the re-application of a saved recipe to a new file.

Without ``--hierarchies``, each quasi-identifier gets the hierarchy the dashboard's least-lossy search gives it: the
default rule of its statistical type inferred from the values (:func:`default_hierarchies`).

Every target given is met (``--k``, ``--l``, ``--t``, ``--max-risk``), with at most ``--max-suppression`` of the
records removed (default :data:`~privdash.targets.DEFAULT_MAX_SUPPRESSION`, as on every surface). ``--search``
chooses the exact search (up to its node limit), the heuristic one (best-first within ``--max-checks``, with its
distance to the optimum; ``--compare-exact`` also runs the exact one) or ``auto``; ``--solutions N`` lists the best N
with the frontier of loss against risk and suppression, and ``--pick N`` publishes the N-th. The output names the
targets that bound the solution (those the levels one step finer fail).

A recipe records the suppression limit it was made with; re-applied to data where it removes more records, the command
warns on stderr, and with ``--strict`` it fails instead (exit 1, nothing written).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import pandas as pd

from privdash.application.fixes import rule_text
from privdash.application.settings import Settings
from privdash.constants import AUTO_FIX_DUCKDB_BYTES, AUTO_FIX_DUCKDB_CELLS
from privdash.data.contract import infer_statistical_type
from privdash.data.tables import read_table_with_info, write_table
from privdash.engines.aggregate import COUNT, Engine, aggregate_table, resolve_engine
from privdash.engines.streaming import apply_recipe_streaming
from privdash.errors import ColumnError, ParameterError
from privdash.measure.diagnose import diagnose
from privdash.measure.perturbed import PerturbationRisk, perturbation_risk
from privdash.measure.verdict import Verdict
from privdash.search.entities import people_generalization
from privdash.search.lattice import (
    DEFAULT_MAX_NODES,
    SearchResult,
    optimal_generalization,
    suppression_limit,
)
from privdash.search.local import LocalRecodingResult, local_recoding
from privdash.search.solutions import SolutionEstimates, solution_estimates
from privdash.targets import PrivacyTargets, parse_targets
from privdash.transform.batch import run_batch_file
from privdash.transform.hierarchy import Hierarchy, load_hierarchies, search_hierarchy
from privdash.transform.perturbation import perturbed_numeric_columns
from privdash.transform.steps import Recipe, TransformResult, apply_recipe
from privdash.utility.estimates import Estimate
from privdash.utility.metrics import Metric, information_loss

from . import _estimates, _project, _steps
from ._common import format_table, print_json, split_columns
from .diagnose import render_verdict


def _run(args: argparse.Namespace) -> int:
    _check_recoding(args)
    _check_entity(args)
    if args.config is not None:
        return _run_job(args)
    settings = _steps.help_text(args)
    if settings is not None:
        print(settings)
        return 0
    if args.file is None:
        raise ParameterError("Give the table to anonymize (FILE), or a batch job with --config job.json.")
    inputs = [args.file]
    for path in (args.output, args.save_recipe):
        _refuse_overwrite(path, inputs + ([args.recipe] if args.recipe else []))
    if args.step:
        if args.recipe is not None:
            raise ParameterError("--step applies techniques, --recipe a saved recipe: give one of them.")
        return _steps.run_steps(args, _read_input(args))
    fix_limits = {"max_bytes": AUTO_FIX_DUCKDB_BYTES, "max_cells": AUTO_FIX_DUCKDB_CELLS}
    if resolve_engine(args.engine, str(args.file), **fix_limits) != Engine.PANDAS:
        return _run_out_of_core(args)
    if args.recipe is not None:
        return _run_recipe(args)
    qis = split_columns(args.qi)
    if not qis:
        raise ParameterError("Give the quasi-identifiers with --qi (comma-separated column names).")
    data = _read_input(args)
    specs = _estimates.check_estimates(args, data)
    _check_household(args, data.columns, qis)
    if args.hierarchies is not None:
        hierarchies = load_hierarchies(args.hierarchies, qis)
    else:
        hierarchies = default_hierarchies(data, qis, _targets(args).k)
        print(
            "privdash anonymize: note: no --hierarchies given; using the default hierarchy of each column's type: "
            + "; ".join(f"{name}: {_rule_text(hierarchies[name])}" for name in qis),
            file=sys.stderr,
        )
    if args.entity is not None:
        return _run_people(args, data, hierarchies, qis, inputs)
    if args.recoding == "local":
        _refuse_release_targets(args, "with --recoding local")
        return _run_local(args, data, hierarchies, qis, inputs, specs)
    started = time.perf_counter()
    result = optimal_generalization(
        data,
        hierarchies,
        **_search_targets(args, qis),
        **_search_options(args),
    )
    seconds = time.perf_counter() - started
    verdict = _verdict_of_published(args, data, result)
    exact = _exact_comparison(args, result, data, hierarchies, qis)
    metrics = information_loss(
        data, result.transform.data, hierarchies, quasi_identifiers=qis, kept_rows=result.transform.kept_rows
    )
    estimates = _estimates.run_estimates(args, specs, data, result.transform.data)
    compared = (
        solution_estimates(data, result, specs, weights=args.weights) if specs and len(result.solutions) > 1 else ()
    )
    households = _household_risks(args, data, result.transform.data, qis)
    if args.output is not None:
        write_table(result.transform.data, args.output, overwrite_protect=inputs, escape_formulas=args.escape_formulas)
    if args.save_recipe is not None:
        result.recipe.save(args.save_recipe)
    if args.json:
        payload = result.summary()
        payload["household_risk"] = households
        payload["metrics"] = {m.value: metrics.value(m) for m in Metric}
        payload["estimates"] = _estimates.estimates_payload(estimates)
        for entry, each in zip(payload["solutions"], compared, strict=False):
            entry.update({key: value for key, value in each.to_dict().items() if key not in ("solution", "levels")})
        payload["output"] = str(args.output) if args.output is not None else None
        payload["recipe"] = str(args.save_recipe) if args.save_recipe is not None else None
        payload["seconds"] = seconds
        if exact is not None:
            payload["exact"] = exact
        if verdict is not None:
            payload["verdict"] = verdict.to_dict()
        print_json(payload)
        return 0
    _print_result(args, data, result, metrics.to_dict(), seconds)
    _print_households(households)
    _print_search(result, exact, compared)
    if verdict is not None:
        print("\nThe published table, diagnosed:\n" + render_verdict(verdict))
    _estimates.print_estimates(estimates)
    return 0


def _check_household(args: argparse.Namespace, columns: Any, qis: list[str]) -> None:
    """--household names a column of the input that is none of the quasi-identifiers, sensitive or weight columns."""
    household = args.household
    if household is None:
        return
    if household not in columns:
        raise ColumnError(f"--household: {args.file.name} has no column '{household}'.")
    for role, names in (
        ("quasi-identifier", qis),
        ("sensitive attribute", split_columns(args.sensitive)),
        ("weight column", [args.weights]),
    ):
        if household in names:
            raise ColumnError(f"The household column '{household}' cannot also be a {role}.")


def _household_risks(
    args: argparse.Namespace, before: Any, after: Any, qis: list[str], engine: str = "pandas"
) -> dict[str, Any] | None:
    """With --household: the household risk of the input and of the published table (``diagnose(household=)``:
    sdcMicro's individual risk with --weights, ``1 / f`` without), or None. ``after`` None: the table was not
    written (out of core without -o), so only the input's is measured."""
    if args.household is None:
        return None
    measured = before if isinstance(before, dict) else _household_side(args, before, qis, engine)
    return {"column": args.household, "before": measured, "after": _household_side(args, after, qis, engine)}


def _household_side(args: argparse.Namespace, table: Any, qis: list[str], engine: str) -> dict[str, Any] | None:
    """The household risk of one table (None for no table)."""
    if table is None:
        return None
    options: dict[str, Any] = {"household": args.household, "weights": args.weights, "engine": engine}
    measured = diagnose(table, qis, **options).household_risk
    return measured.to_dict() if measured is not None else None


def _print_households(households: dict[str, Any] | None) -> None:
    """The household risk before and after, as a small table."""
    if households is None:
        return
    sides = [("before", households["before"]), ("after", households["after"])]
    shown = [(name, side) for name, side in sides if side is not None]
    rows = [
        [
            name,
            f"{side['households']:,}",
            f"{side['expected_reidentifications']:,.2f}",
            f"{100 * side['global_risk']:.3f} %",
            f"{side['highest']:.4g}",
        ]
        for name, side in shown
    ]
    print()
    print(f"Household risk (households in '{households['column']}'; risk that at least one member is re-identified):")
    print(
        format_table(
            ["table", "households", "expected re-identifications", "global risk", "highest"], rows, align="lrrrr"
        )
    )


def _targets(args: argparse.Namespace) -> PrivacyTargets:
    """The targets of ``--targets`` and of ``--k``, ``--l``, ``--t``, ``--max-risk`` (each target given once)."""
    sensitive = tuple(split_columns(args.sensitive))
    flags = {"k": args.k, "l": args.l, "t": args.t, "max_risk": args.max_risk}
    if args.targets is None:
        return PrivacyTargets(
            k=2 if args.k is None else args.k,
            l=args.l,
            t=args.t,
            sensitive=sensitive,
            t_distance=args.t_distance,
            max_risk=args.max_risk,
        )
    targets = parse_targets(args.targets, sensitive=sensitive)
    named = {name for name in flags if name != "k" and getattr(targets, name) is not None}
    if any(part.partition("=")[0].strip().lower() == "k" for part in args.targets.split(",")):
        named.add("k")
    given = {name: value for name, value in flags.items() if value is not None}
    twice = sorted(set(given) & named)
    if twice:
        raise ParameterError(f"{', '.join(twice)} given both in --targets and as an option; give each target once.")
    return replace(targets, t_distance=args.t_distance, **given)


def _search_targets(args: argparse.Namespace, qis: list[str]) -> dict[str, Any]:
    """The keyword arguments every search of this command shares (global, local, exact comparison, out of core):
    the quasi-identifiers, the targets, the suppression limit and the metric; with a global or population target,
    the targets whole and the population (weights, size or sampling fraction), which only the global search in
    memory takes."""
    targets = _targets(args)
    out: dict[str, Any] = {
        "quasi_identifiers": qis,
        "k": targets.k,
        "l": targets.l,
        "t": targets.t,
        "sensitive": list(targets.sensitive),
        "t_distance": targets.t_distance,
        "max_risk": targets.max_risk,
        "max_suppression": args.max_suppression,
        "metric": args.metric,
    }
    if targets.judged_per_node:
        out.update(
            targets=targets,
            weights=args.weights,
            population_size=args.population_size,
            sampling_fraction=args.sampling_fraction,
            household=args.household,
        )
    elif args.population_size is not None or args.sampling_fraction is not None:
        raise ParameterError(
            "--population-size and --sampling-fraction are for the targets k_map, delta_presence and "
            "population_uniques of --targets."
        )
    return out


def _refuse_release_targets(args: argparse.Namespace, where: str) -> None:
    """The global and population targets are searched in memory with global recoding only."""
    if args.targets is not None and _targets(args).judged_per_node:
        raise ParameterError(
            f"The targets global_risk, average_risk, population_uniques, k_map and delta_presence are not supported "
            f"{where}; use the global recoding search with --engine pandas."
        )


def _verdict_of_published(args: argparse.Namespace, data: pd.DataFrame, result: SearchResult) -> Verdict | None:
    """With a global or population target: the diagnosis of the published table judged against the targets (the
    measured value of each), with the search's weights and population."""
    if not result.targets.judged_per_node:
        return None
    qis = list(result.levels)
    fraction = args.sampling_fraction
    if args.population_size is not None:
        fraction = len(data) / args.population_size
    published = diagnose(
        result.data,
        qis,
        sensitive=list(result.targets.sensitive),
        weights=args.weights,
        sampling_fraction=fraction,
        household=args.household,
    )
    return published.check(result.targets)


def _search_options(args: argparse.Namespace) -> dict[str, Any]:
    """The search strategy, its limit of checked nodes and the number of solutions, checked."""
    if args.solutions is not None and args.solutions < 1:
        raise ParameterError(f"--solutions must be at least 1, got {args.solutions}.")
    if args.max_checks is not None and args.max_checks < 1:
        raise ParameterError(f"--max-checks must be at least 1, got {args.max_checks}.")
    if args.compare_exact and args.search != "heuristic":
        raise ParameterError("--compare-exact compares a heuristic search with the exact one: add --search heuristic.")
    if args.pick is not None and args.pick < 1:
        raise ParameterError(f"--pick must be at least 1, got {args.pick}.")
    return {
        "search": args.search or "auto",
        "solutions": args.solutions or 1,
        "max_checks": args.max_checks,
        "pick": args.pick or 1,
    }


def _binding_text(binding: Mapping[str, tuple[str, ...]]) -> str:
    """``one level finer, age and sex fail k; education fails t`` from :attr:`SearchResult.binding`."""
    groups: dict[tuple[str, ...], list[str]] = {}
    for name, entries in binding.items():
        groups.setdefault(entries, []).append(name)
    parts = []
    for entries, names in groups.items():
        what = (
            "fail " + " and ".join(e.replace("+", " and ") + (" together" if "+" in e else "") for e in entries)
            if entries
            else "meets the targets, with more loss"
        )
        parts.append(f"in {', '.join(names)}: {what}")
    return "one level finer " + "; ".join(parts)


def _exact_comparison(
    args: argparse.Namespace,
    result: SearchResult,
    data: pd.DataFrame,
    hierarchies: dict[str, Hierarchy],
    qis: list[str],
    counts: str | None = None,
) -> dict[str, Any] | None:
    """With --compare-exact: the exact optimum and the heuristic's distance to it (None when the lattice is beyond
    the exact search's limit: then only the heuristic's own lower bound tells the distance). ``counts``: ``data`` is
    the engine's aggregate with this count column."""
    if not args.compare_exact or result.lattice_size > DEFAULT_MAX_NODES:
        return None
    started = time.perf_counter()
    exact = optimal_generalization(
        data,
        hierarchies,
        **_search_targets(args, qis),
        search="exact",
        counts=counts,
    )
    return {
        "loss": exact.value,
        "levels": dict(exact.levels),
        "distance": (result.value - exact.value) / exact.value if exact.value > 0 else 0.0,
        "seconds": time.perf_counter() - started,
    }


def _print_search(
    result: SearchResult, exact: dict[str, Any] | None, compared: tuple[SolutionEstimates, ...] = ()
) -> None:
    """How the lattice was searched, what bound the solution, and the solutions to choose from (with the estimates
    of each, ``compared``, when the steward named some)."""
    if result.strategy == "heuristic":
        if result.proven:
            print("Heuristic search: it checked every node that could do better, so this is the optimum.")
        else:
            print(
                f"Heuristic search: the optimum is at least {result.lower_bound:.6g}, so this is at most "
                f"{result.gap:.1%} above it."
            )
    if exact is not None:
        print(f"Exact optimum: {exact['loss']:.6g}; the heuristic's loss is {exact['distance']:.2%} above it.")
    if result.binding:
        print(f"Bound by: {', '.join(result.bound_by) or 'the loss alone'} ({_binding_text(result.binding)}).")
    if len(result.solutions) > 1:
        print()
        applied = f"; #{result.pick} is the one applied" if result.pick > 1 else ""
        print(f"Solutions (best first; * = on the frontier of loss against risk and suppression{applied}):")
        rows = [
            [
                index + 1,
                "*" if solution.frontier else "",
                ", ".join(f"{name} {level}" for name, level in solution.levels.items()),
                f"{solution.value:.6g}",
                solution.suppressed,
                f"{solution.highest_risk:.4g}",
                f"{solution.average_risk:.4g}",
            ]
            for index, solution in enumerate(result.solutions)
        ]
        head = ["#", "frontier", "levels", result.metric.value, "removed", "highest risk", "average risk"]
        align = "rllrrrr"
        if compared:
            for row, each in zip(rows, compared, strict=True):
                row += [
                    _estimates.overlap_text(each.mean_overlap),
                    _estimates.overlap_text(each.lowest_overlap),
                    each.not_computable,
                ]
            head += ["mean overlap", "lowest overlap", "not computable"]
            align += "rrr"
        print(format_table(head, rows, align=align))
        if compared:
            _print_solution_estimates(compared)


def _print_solution_estimates(compared: tuple[SolutionEstimates, ...]) -> None:
    """Each solution's estimates: the value after with its interval, and the overlap with the original's."""
    level = compared[0].comparisons[0].level if compared[0].comparisons else 0.95
    print()
    print(
        f"Estimates of each solution (after [{level:.0%} CI] and the overlap with the original's interval; the "
        "values before are listed with the applied solution's estimates below):"
    )
    rows = []
    for each in compared:
        for comparison in each.comparisons:
            for row in comparison.rows:
                rows.append(
                    [
                        each.number,
                        comparison.estimate.text(),
                        row.term + (f" | {row.group}" if row.group else ""),
                        _estimates.interval_text(row.after),
                        _estimates.overlap_text(row.overlap),
                        row.note or "",
                    ]
                )
    print(format_table(["#", "estimate", "of", "after [CI]", "overlap", "note"], rows, align="rlllrl"))


def _check_entity(args: argparse.Namespace) -> None:
    """--entity runs the search on people, which does not combine with the options listed here."""
    if args.entity is None:
        if args.entity_key != "set":
            raise ParameterError(
                "--entity-key chooses how a person's rows form their key; name the person id with --entity."
            )
        return
    refused = {
        "--config": args.config is not None,
        "--recipe": args.recipe is not None,
        "--recoding local": args.recoding == "local",
        "--search heuristic": args.search == "heuristic",
        "--solutions": args.solutions is not None,
        "--pick": args.pick is not None,
        "--compare-exact": args.compare_exact,
        "--estimate": bool(args.estimate),
        "--household": args.household is not None,
        "--population-size": args.population_size is not None,
        "--sampling-fraction": args.sampling_fraction is not None,
    }
    if args.targets is not None and _targets(args).judged_per_node:
        refused[
            "--targets with global_risk, household_risk, average_risk, k_map, delta_presence or population_uniques"
        ] = True
    given = [name for name, present in refused.items() if present]
    if given:
        raise ParameterError(
            f"--entity (the search judged on people) does not combine with {', '.join(given)} yet: those count rows "
            "(re-apply a recipe saved with --entity --save-recipe with --recipe alone: its step knows the person id)."
        )
    if args.file is not None and resolve_engine(args.engine, str(args.file)) != Engine.PANDAS:
        raise ParameterError("--entity searches on the table in memory: use --engine pandas.")


def _run_people(
    args: argparse.Namespace,
    data: pd.DataFrame,
    hierarchies: Mapping[str, Hierarchy],
    qis: list[str],
    inputs: list[Path],
) -> int:
    """--entity: the least-lossy generalization judged on people, whole people suppressed."""
    started = time.perf_counter()
    options = _search_targets(args, qis)
    result = people_generalization(data, hierarchies, entity=args.entity, entity_key=args.entity_key, **options)
    seconds = time.perf_counter() - started
    published = result.transform.data
    after = diagnose(published, qis, entity=args.entity, entity_key=args.entity_key, missing="value")
    if args.output is not None:
        write_table(published, args.output, overwrite_protect=inputs, escape_formulas=args.escape_formulas)
    if args.save_recipe is not None:
        result.recipe.save(args.save_recipe)
    if args.json:
        payload = result.summary()
        payload["recipe"] = str(args.save_recipe) if args.save_recipe is not None else None
        payload["k"] = after.k
        payload["classes"] = after.classes.n_classes
        payload["output"] = str(args.output) if args.output is not None else None
        payload["seconds"] = seconds
        print_json(payload)
        return 0
    limit = int(args.max_suppression * result.people)
    print(
        f"{args.file}: {result.rows:,} rows of {result.people:,} people (person id '{args.entity}', key: the "
        f"{result.entity_key.value} of each person's QI tuples); quasi-identifiers {', '.join(qis)}"
    )
    print(
        f"Targets on people: {result.targets.describe()}; suppression limit {args.max_suppression:.2%} of the people "
        f"({limit:,}); metric {result.metric.value}"
    )
    print()
    print(format_table(["column", "level"], [[name, level] for name, level in result.levels.items()], align="lr"))
    print()
    print(f"Suppressed: {result.people_suppressed:,} people ({result.rows_suppressed:,} rows)")
    print(f"{result.metric.value}: {result.value:.6g}")
    print(f"Counted in people: smallest class {after.k}; classes: {after.classes.n_classes:,}")
    print(f"Searched {result.nodes_counted:,} of {result.nodes:,} nodes in {seconds:.2f} s")
    if args.output is not None:
        print(f"Wrote {len(published):,} rows to {args.output}.")
    if args.save_recipe is not None:
        print(f"Saved the recipe to {args.save_recipe}.")
    return 0


def _check_recoding(args: argparse.Namespace) -> None:
    """--recoding local is a search of the table in memory: refused with --recipe, --config, the duckdb engine and
    the global search's own options."""
    if args.recoding != "local":
        return
    if args.recipe is not None or args.config is not None:
        raise ParameterError("--recoding chooses how a fix is searched; --recipe and --config do not search.")
    if args.file is not None and resolve_engine(args.engine, str(args.file)) != Engine.PANDAS:
        raise ParameterError("--recoding local works on the table in memory: use --engine pandas.")
    given = [
        f"--{name.replace('_', '-')}"
        for name in ("search", "solutions", "max_checks", "pick")
        if getattr(args, name, None) is not None
    ] + (["--compare-exact"] if getattr(args, "compare_exact", False) else [])
    if given:
        raise ParameterError(f"--recoding local has its own search; drop {', '.join(given)}.")


def _run_local(
    args: argparse.Namespace,
    data: pd.DataFrame,
    hierarchies: dict[str, Hierarchy],
    qis: list[str],
    inputs: list[Path],
    specs: list[Estimate],
) -> int:
    """Local recoding (:func:`~privdash.search.local.local_recoding`): the published table, its recipe, the
    loss beside the global optimum's, and the ``--estimate`` estimates before and after."""
    result: LocalRecodingResult = local_recoding(
        data,
        hierarchies,
        **_search_targets(args, qis),
    )
    estimates = _estimates.run_estimates(args, specs, data, result.data)
    households = _household_risks(args, data, result.data, qis)
    if args.output is not None:
        write_table(result.data, args.output, overwrite_protect=inputs, escape_formulas=args.escape_formulas)
    if args.save_recipe is not None:
        result.recipe.save(args.save_recipe)
    if args.json:
        payload = result.summary()
        payload["household_risk"] = households
        payload["metrics"] = {m.value: result.information_loss.value(m) for m in Metric}
        payload["estimates"] = _estimates.estimates_payload(estimates)
        payload["output"] = str(args.output) if args.output is not None else None
        payload["recipe"] = str(args.save_recipe) if args.save_recipe is not None else None
        print_json(payload)
        return 0
    n = len(data)
    limit = suppression_limit(result.max_suppression, n)
    print(f"{args.file}: {n:,} records; quasi-identifiers {', '.join(qis)}; local recoding")
    print(
        f"Targets: {result.targets.describe()}; suppression limit {result.max_suppression:.2%} ({limit:,} records); "
        f"metric {result.metric.value}"
    )
    print()
    per_column = {row["column"]: row for row in result.information_loss.to_dict()["per_column"]}
    rows = [
        [
            column,
            ", ".join(f"{level}: {count:,}" for level, count in sorted(result.levels[column].items())),
            result.global_levels.get(column, "-"),
            per_column[column]["loss"],
        ]
        for column in qis
    ]
    print(format_table(["column", "records per level", "global level", "loss"], rows, align="llrr"))
    print()
    print(f"Suppressed records: {result.suppressed:,} ({result.suppressed / n if n else 0.0:.2%})")
    print(f"{result.metric.value}: {result.value:.6g} (global optimum {result.global_value:.6g})")
    print(f"Smallest class: {result.k}; classes: {result.classes.n_classes:,}; {result.seconds:.2f} s")
    if args.output is not None:
        print(f"Wrote {len(result.data):,} rows to {args.output}.")
    if args.save_recipe is not None:
        print(f"Saved the recipe to {args.save_recipe}.")
    _print_households(households)
    _estimates.print_estimates(estimates)
    return 0


def default_hierarchies(data: pd.DataFrame, quasi_identifiers: list[str], k: int) -> dict[str, Hierarchy]:
    """The hierarchies the dashboard's least-lossy search uses: the default rule of each quasi-identifier's type,
    inferred from its values (:func:`~privdash.transform.hierarchy.search_hierarchy`)."""
    missing = [name for name in quasi_identifiers if name not in data.columns]
    if missing:
        raise ParameterError(f"Unknown quasi-identifier column(s): {', '.join(missing)}.")
    return {name: search_hierarchy(data[name], infer_statistical_type(data[name]), k) for name in quasi_identifiers}


def _rule_text(hierarchy: Hierarchy) -> str:
    """The rule of a default hierarchy as the Fix page shows it (``intervals 5, 10, 20``; ``rare 10``)."""
    rule = hierarchy.rule or {}
    return f"{rule.get('builder', 'table')} {rule_text(rule)}".strip()


#: Options of the search that neither --recipe nor --config takes (argparse destinations).
_SEARCH_OPTIONS = (
    "qi",
    "hierarchies",
    "l",
    "t",
    "max_risk",
    "sensitive",
    "search",
    "solutions",
    "max_checks",
    "pick",
    "targets",
    "population_size",
    "sampling_fraction",
)


def _given(args: argparse.Namespace, destinations: tuple[str, ...]) -> list[str]:
    """The options among ``destinations`` that were given, as typed (``FILE`` for the positional argument)."""
    return [
        "FILE" if name == "file" else "--" + name.replace("_", "-")
        for name in destinations
        if getattr(args, name) is not None
    ]


def _read_input(args: argparse.Namespace) -> pd.DataFrame:
    """FILE (the --sheet of a workbook), with the reader's notes on stderr."""
    data, info = read_table_with_info(args.file, sheet=args.sheet)
    for note in info.notes:
        print(f"privdash anonymize: note: {note}", file=sys.stderr)
    return data


def _run_job(args: argparse.Namespace) -> int:
    other = _given(args, ("file", "sheet", *_SEARCH_OPTIONS, "output", "save_recipe", "recipe"))
    if args.strict:
        other.append("--strict")
    if args.estimate or args.weights:
        other.append("--estimate")
    if args.household is not None:
        other.append("--household")
    if other:
        raise ParameterError(
            f"--config runs the job file as written (source, target, contract, k); drop {', '.join(other)}."
        )
    result = run_batch_file(args.config)
    if args.json:
        print_json(result.to_dict())
        return 0
    changed = ", ".join(f"{name} ({result.cells_changed[name]:,} cells)" for name in result.columns_changed) or "none"
    print(
        f"Microaggregated {result.rows:,} rows x {result.columns} columns of {result.source} into "
        f"{result.clusters:,} clusters: k = {result.k_achieved} (asked for {result.k_requested}) on "
        f"{', '.join(result.quasi_identifiers)}."
    )
    print(f"Columns changed: {changed}.")
    print(f"Wrote {result.target}.")
    return 0


def _refuse_overwrite(path: Path | None, inputs: list[Path]) -> None:
    if path is None:
        return
    for source in inputs:
        if path.resolve() == source.resolve():
            raise ParameterError(f"Refusing to overwrite the input file {source}; choose another output path.")


def _recipe_options(args: argparse.Namespace) -> list[str]:
    """The quasi-identifiers of --household with --recipe (--qi, required then), after refusing the search's
    options a recipe does not take."""
    search_options = _given(args, (*_SEARCH_OPTIONS, "save_recipe"))
    if args.household is not None:
        search_options = [option for option in search_options if option != "--qi"]
    if search_options:
        raise ParameterError(
            f"--recipe re-applies a saved recipe; it cannot be combined with {', '.join(search_options)}."
        )
    qis = split_columns(args.qi)
    if args.household is not None and not qis:
        raise ParameterError("--household with --recipe: name the quasi-identifiers of the household risk with --qi.")
    return qis


def _run_recipe(args: argparse.Namespace) -> int:
    qis = _recipe_options(args)
    recipe = Recipe.load(args.recipe)
    seeded = sorted({step.kind for step in recipe.steps if step.params.get("seed") is not None})
    if seeded:
        print(
            f"privdash anonymize: note: the recipe holds the seed of {', '.join(seeded)}: with it and the release the "
            "random masking can be redrawn and undone, so keep the recipe with the data owner, as a key.",
            file=sys.stderr,
        )
    data = _read_input(args)
    specs = _estimates.check_estimates(args, data)
    _check_household(args, data.columns, qis)
    # A pseudonymize step gets the key of PRIVDASH_PSEUDONYM_KEY; the recipe holds only its fingerprint.
    published, results = apply_recipe(data, recipe, secrets={"key": Settings.from_env().pseudonym_key})
    perturbation = _perturbation_risk(data, published, recipe)  # before anything is written: it may fail
    estimates = _estimates.run_estimates(args, specs, data, published)
    households = _household_risks(args, data, _published_with(published, args.household, qis), qis)
    excess = recipe.suppression_excess(len(data), len(published))
    if excess is not None:
        if args.strict:
            print(f"privdash anonymize: error: {excess} Nothing was written (--strict).", file=sys.stderr)
            return 1
        print(f"privdash anonymize: warning: {excess} Check the result, or use --strict to fail.", file=sys.stderr)
    if args.output is not None:
        write_table(
            published, args.output, overwrite_protect=[args.file, args.recipe], escape_formulas=args.escape_formulas
        )
    steps = [_step_summary(r) for r in results]
    if args.json:
        print_json(
            {
                "perturbation_risk": perturbation.to_dict() if perturbation is not None else None,
                "household_risk": households,
                "estimates": _estimates.estimates_payload(estimates),
                "recipe": str(args.recipe),
                "rows_in": len(data),
                "rows_out": len(published),
                "steps": steps,
                "max_suppression": recipe.max_suppression,
                "suppression_exceeded": excess is not None,
                "output": str(args.output) if args.output is not None else None,
            }
        )
        return 0
    print(f"Applied {len(results)} step(s) of {args.recipe} to {args.file}: ", end="")
    print(f"{len(data):,} rows in, {len(published):,} out.")
    rows = [[s["kind"], s["rows_in"], s["rows_out"], _short(s["summary"])] for s in steps]
    if rows:
        print(format_table(["step", "rows in", "rows out", "summary"], rows, align="lrrl"))
    if perturbation is not None:
        _print_perturbation_risk(perturbation)
    _print_households(households)
    _estimates.print_estimates(estimates)
    if args.output is not None:
        print(f"Wrote {len(published):,} rows to {args.output}.")
    else:
        print("No output written (use -o OUT).")
    return 0


def _run_out_of_core(args: argparse.Namespace) -> int:
    """The search on DuckDB's per-class aggregate and the fix streamed to ``-o``: the table is never in memory."""
    if args.sheet is not None:
        raise ParameterError("--sheet chooses a sheet of an Excel workbook, which the duckdb engine does not read.")
    if args.estimate:
        raise ParameterError("--estimate needs the table in memory: use --engine pandas.")
    source = str(args.file)
    options = {"memory_limit": args.memory_limit, "temp_directory": args.temp_dir}
    if args.recipe is not None:
        qis = _recipe_options(args)
        recipe = Recipe.load(args.recipe)
        result = None
        exact = None
    else:
        qis = split_columns(args.qi)
        if not qis:
            raise ParameterError("Give the quasi-identifiers with --qi (comma-separated column names).")
        if args.hierarchies is None:
            raise ParameterError(
                "Out of core, give --hierarchies: the default hierarchies are built from every record's value, which "
                "the duckdb engine does not load. Or use --engine pandas."
            )
        _refuse_release_targets(args, "out of core (the duckdb engine)")
        sensitive = split_columns(args.sensitive)
        aggregate = aggregate_table(source, [*qis, *sensitive], engine=Engine.DUCKDB, **options)
        started = time.perf_counter()
        hierarchies = load_hierarchies(args.hierarchies, qis)
        result = optimal_generalization(
            aggregate.frame,
            hierarchies,
            **_search_targets(args, qis),
            counts=COUNT,
            **_search_options(args),
        )
        seconds = aggregate.seconds + time.perf_counter() - started
        exact = _exact_comparison(args, result, aggregate.frame, hierarchies, qis, counts=COUNT)
        recipe = result.recipe
        if args.save_recipe is not None:
            recipe.save(args.save_recipe)
    # the input's household risk first: a bad --household fails before anything is written
    before = _household_side(args, source, qis, "duckdb") if args.household is not None else None
    streamed = None
    refused: list[str] = []
    if args.output is not None:

        def accept(rows_in: int, rows_out: int) -> bool:
            excess = recipe.suppression_excess(rows_in, rows_out) if result is None else None
            if excess is not None:
                refused.append(excess)
            return not (refused and args.strict)

        streamed = apply_recipe_streaming(
            source,
            recipe,
            args.output,
            secrets={"key": Settings.from_env().pseudonym_key},
            batch_rows=args.batch_rows,
            escape_formulas_in_csv=args.escape_formulas,
            accept=accept,
            **options,
        )
    elif result is None:
        raise ParameterError("Out of core, a recipe is applied to a file: give -o OUT (.parquet, .csv or .tsv).")
    for excess in refused:
        if args.strict:
            print(f"privdash anonymize: error: {excess} Nothing was written (--strict).", file=sys.stderr)
            return 1
        print(f"privdash anonymize: warning: {excess} Check the result, or use --strict to fail.", file=sys.stderr)
    households = None
    if args.household is not None and not (refused and args.strict):
        written = streamed.output if streamed is not None else None
        households = _household_risks(args, before, str(written) if written is not None else None, qis, "duckdb")
    payload: dict[str, Any] = {"engine": Engine.DUCKDB.value, "household_risk": households}
    if result is not None:
        payload.update(result.summary())
        payload["recipe"] = str(args.save_recipe) if args.save_recipe is not None else None
        if exact is not None:
            payload["exact"] = exact
    else:
        payload["recipe"] = str(args.recipe)
    payload["streamed"] = streamed.to_dict() if streamed is not None else None
    if args.json:
        print_json(payload)
        return 0
    if result is not None:
        print(f"{args.file}: {result.classes.n_records + result.suppressed:,} records (counted by DuckDB)")
        print(f"Targets: {result.targets.describe()}; suppression limit {result.max_suppression:.2%}")
        print(format_table(["column", "level"], [[c, v] for c, v in result.levels.items()], align="lr"))
        print(f"Suppressed records: {result.suppressed:,}; {result.metric.value}: {result.value:.6g}")
        print(f"Smallest class: {result.k}; searched {result.nodes_checked:,} nodes in {seconds:.2f} s")
        _print_search(result, exact)
    if streamed is not None:
        print(
            f"Streamed {streamed.rows_in:,} rows in {streamed.batches} batch(es), {streamed.passes} pass(es): "
            f"{streamed.rows_out:,} written to {args.output} in {streamed.seconds:.2f} s."
        )
    if args.save_recipe is not None:
        print(f"Saved the recipe to {args.save_recipe}.")
    _print_households(households)
    return 0


def _published_with(published: pd.DataFrame, household: str | None, qis: list[str]) -> pd.DataFrame | None:
    """The published table when it still has the household column and the quasi-identifiers (a recipe may drop
    them), else None: its household risk is then not measured."""
    if household is None or household not in published.columns or any(q not in published.columns for q in qis):
        return None
    return published


def _perturbation_risk(data: pd.DataFrame, published: pd.DataFrame, recipe: Recipe) -> PerturbationRisk | None:
    """Record linkage, interval disclosure and utility of the numerical columns a perturbative step changed (k
    says nothing about noisy or swapped values); None without such a column. Records removed by a later step are
    left out of the original too (matched by row label)."""
    columns = perturbed_numeric_columns(recipe.steps, data)
    if not columns or len(published) == 0:
        return None
    if len(published) != len(data) and data.index.is_unique and published.index.isin(data.index).all():
        data = data.loc[published.index]
    return perturbation_risk(data, published, columns)


def _print_perturbation_risk(risk: PerturbationRisk) -> None:
    def share(value: float | None) -> str:
        return "-" if value is None else f"{value:.2%}"

    print()
    print(f"Perturbed data ({', '.join(risk.columns)}): class sizes and k do not measure its risk.")
    print(
        f"Record linkage: {share(risk.linkage)} of the records ({risk.linked_records:,.0f}) are nearest to their own "
        "original record."
    )
    print(
        f"Interval disclosure (sdcMicro dRisk, k = {risk.interval_k:g}): {share(risk.interval_disclosure)} of the "
        f"records, {share(risk.interval_disclosure_values)} of the values."
    )
    print(
        f"Information loss: IL1s {risk.il1s:.4g}; relative change of means {share(risk.mean_change)}, variances "
        f"{share(risk.variance_change)}, correlations {share(risk.correlation_change)}."
    )


def _step_summary(result: TransformResult) -> dict[str, Any]:
    kept = result.kept_rows
    rows_out = len(result.data)
    rows_in = rows_out if kept is None else int(result.summary.get("rows_in", rows_out))
    return {"kind": result.step.kind, "rows_in": rows_in, "rows_out": rows_out, "summary": dict(result.summary)}


def _short(summary: dict[str, Any]) -> str:
    parts = []
    for key, value in summary.items():
        if isinstance(value, dict):
            value = ", ".join(f"{k}={v}" for k, v in value.items())
        parts.append(f"{key}: {value}")
    return "; ".join(parts)


def _example_text(result: SearchResult, column: str, level: int) -> str:
    """Two original -> published values of a generalized column; for a column kept as it is, where its loss comes
    from (the suppressed records, when there are any)."""
    mapping = result.transform.mapping
    block = mapping[mapping["column"] == column] if mapping is not None and level > 0 else None
    # A level may publish every value present as it is (e.g. "rare values" when no value is rare).
    if block is None or (block["original"].astype(str) == block["published"].astype(str)).all():
        if result.suppressed:
            return f"values unchanged; loss from the {result.suppressed:,} suppressed records"
        return "values unchanged"
    changed = block[block["original"].astype(str) != block["published"].astype(str)].head(2)
    return ", ".join(f"{o} -> {p}" for o, p in zip(changed["original"], changed["published"], strict=True))


def _print_result(
    args: argparse.Namespace, data: pd.DataFrame, result: SearchResult, metrics: dict[str, Any], seconds: float
) -> None:
    n = len(data)
    limit = suppression_limit(result.max_suppression, n)
    print(f"{args.file}: {n:,} records; quasi-identifiers {', '.join(result.levels)}")
    print(
        f"Targets: {result.targets.describe()}; suppression limit {result.max_suppression:.2%} ({limit:,} records); "
        f"metric {result.metric.value}"
    )
    print()
    per_column = {row["column"]: row for row in metrics["per_column"]}
    rows = []
    for column, level in result.levels.items():
        rows.append([column, level, per_column[column]["loss"], _example_text(result, column, level)])
    print(format_table(["column", "level", "loss", "examples"], rows, align="lrrl"))
    if result.suppressed:
        print(
            "A suppressed record counts as fully generalized in every column, so a column whose values are unchanged "
            "loses only through suppression."
        )
    print()
    suppressed_share = result.suppressed / n if n else 0.0
    print(f"Suppressed records: {result.suppressed:,} ({suppressed_share:.2%})")
    print(f"{result.metric.value}: {result.value:.6g}")
    print(f"Smallest class: {result.k}; classes: {result.classes.n_classes:,}")
    others = ", ".join(f"{m.value} {metrics[m.value]:.6g}" for m in Metric if m != result.metric)
    print(f"Other metrics: {others}")
    print(f"Searched {result.nodes_checked:,} of {result.lattice_size:,} nodes ({result.strategy}) in {seconds:.2f} s")
    if args.output is not None:
        print(f"Wrote {len(result.transform.data):,} rows to {args.output}.")
    if args.save_recipe is not None:
        print(f"Saved the recipe to {args.save_recipe}.")


#: The command: ``_run`` with the options a ``--project`` file supplies.
run = _project.with_project(_run, "anonymize", search_options=(*_SEARCH_OPTIONS, "k"))
