"""``privdash synthesize``: a partially, fully, hybrid or DP synthetic version of a table, judged by the attacks
against held-out control records, the distance to the closest record and the steward's estimates.

The records are split first (``--control-share``, seed 0): the model learns from the training records only, and the
release is made from them; the control records are the attacks' baseline. A ``dp`` release is charged to the
dataset's budget ledger exactly like ``privdash release``: the ledger is locked, the dataset resolved, the cost
(the settings' ε and δ) checked against the budget before the synthesis runs, charged and saved before anything is
written or shown; over budget, nothing is written. ``--report FILE.html|.pdf`` also writes the release report of the
table with its Synthetic release section (:mod:`privdash.application.report.synthetic`, the seed withheld).
Definitions: docs/synthesis.md.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import pandas as pd

from privdash.commands import _project
from privdash.commands._common import check_output, print_json, split_columns
from privdash.commands._estimates import check_estimates, print_estimates
from privdash.data.tables import read_table_with_info, write_table
from privdash.dp.ledger import BudgetLedger, TableFingerprint, check_identity, file_sha256
from privdash.dp.mechanisms import PrivacyBudget
from privdash.errors import ParameterError, check_columns
from privdash.transform.steps import Recipe

_OUTPUTS = (".csv", ".tsv", ".parquet")
#: The seed of the training / control split and of the attacks' sampling (a measurement's seed is fixed).
MEASUREMENT_SEED = 0


def _run(args: argparse.Namespace) -> int:
    from privdash.synthesis import SynthesisSettings

    settings, recipe_qis = _settings(args, SynthesisSettings)
    qis = split_columns(args.qi) if args.qi else list(recipe_qis)
    if not qis:
        raise ParameterError("Give the quasi-identifiers (--qi): the attacks that judge the release need them.")
    dp = settings.method == "dp"
    total = PrivacyBudget.parse(args.budget) if args.budget is not None else None
    ledger_flags = total is not None or args.dataset_identity is not None or args.distinct_population
    if args.ledger is None and ledger_flags:
        raise ParameterError(
            "--budget, --dataset-identity and --distinct-population belong to the budget ledger: give the ledger "
            "file with --ledger."
        )
    if args.ledger is not None and not dp:
        raise ParameterError("--ledger charges a dp release; a partial, full or hybrid release spends no DP budget.")
    identity = check_identity(args.dataset_identity) if args.dataset_identity is not None else None
    check_output(args, _OUTPUTS)
    if args.report is not None:
        from privdash.application.report.render import report_format

        report_format(args.report)  # a file name that is not .html or .pdf is refused before any work
    control_share = args.control_share
    if not 0 <= control_share < 1:
        raise ParameterError(f"--control-share must be in [0, 1), got {control_share!r}.")
    cost = None
    if dp:
        assert settings.epsilon is not None
        cost = PrivacyBudget(settings.epsilon, settings.delta)
        if args.ledger is not None:
            from privdash.commands.release import _check_ledger_path

            _check_ledger_path(args.ledger)
            known = BudgetLedger.load(args.ledger).accounts.get(identity or "")
            if known is not None:
                known.check(cost)  # refused before the data is read
    data, info = read_table_with_info(args.file, sheet=args.sheet)
    for note in info.notes:
        print(f"privdash synthesize: note: {note}", file=sys.stderr)
    check_columns(data, qis, role="quasi-identifier", allow_empty=True)
    if args.sensitive is not None:
        check_columns(data, [args.sensitive], role="sensitive attribute")
    specs = check_estimates(args, data)
    settings = _modelled_columns(data, settings, qis, args.sensitive)
    if control_share > 0:
        from privdash.synthesis import split_control

        training, control = split_control(data, share=control_share, seed=MEASUREMENT_SEED, entity=settings.entity)
        _check_training(len(data), len(training), settings)
    else:
        training, control = data, None
    progress = _progress() if not args.json else None
    ledger_json = None
    if dp and args.ledger is not None:
        release, ledger_json = _charged(args, data, training, settings, qis, identity, total, progress)
    else:
        release = _synthesize(training, settings, qis, progress)
    from privdash.application.synthesis import evaluate_synthetic

    evaluation = evaluate_synthetic(
        training,
        release,
        control=control,
        quasi_identifiers=qis,
        sensitive=args.sensitive,
        estimates=specs,
        n_targets=args.n_targets,
        seed=MEASUREMENT_SEED,
        weights=args.weights,
    )
    if args.output is not None:
        write_table(
            release.table, args.output, overwrite_protect=[Path(args.file)], escape_formulas=args.escape_formulas
        )
        print(f"privdash synthesize: wrote {len(release.table):,} record(s) to {args.output}", file=sys.stderr)
    if args.recipe_out is not None:
        from privdash.synthesis.step import synthesis_step

        Recipe((synthesis_step(release.settings, tuple(qis)),)).save(args.recipe_out)
        print(f"privdash synthesize: saved the recipe to {args.recipe_out}", file=sys.stderr)
    if args.report is not None:
        _write_report(args, data, evaluation, qis, len(training), 0 if control is None else len(control), ledger_json)
    if args.json:
        payload: dict[str, Any] = evaluation.to_dict()
        if ledger_json is not None:
            payload["ledger"] = ledger_json
        print_json(payload)
        return 0
    _print(evaluation, ledger_json)
    return 0


def _settings(args: argparse.Namespace, settings_type: Any) -> tuple[Any, tuple[str, ...]]:
    """The settings from the flags, or from the recipe's synthesize step (then the settings flags must be left out)."""
    if args.recipe is not None:
        from privdash.synthesis.step import STEP_KIND, synthesis_step_settings

        recipe = Recipe.load(args.recipe)
        steps = [step for step in recipe.steps if step.kind == STEP_KIND]
        if len(recipe.steps) != 1 or len(steps) != 1:
            raise ParameterError(
                f"The recipe {args.recipe} must hold exactly one '{STEP_KIND}' step to re-run (it holds "
                f"{', '.join(s.kind for s in recipe.steps) or 'no step'}); apply other steps with anonymize --recipe."
            )
        if args.method is not None or args.columns is not None or args.seed is not None:
            raise ParameterError(
                "--recipe gives the method, the columns and the seed: leave out --method, --columns and --seed."
            )
        return synthesis_step_settings(dict(steps[0].params))
    if args.method is None:
        raise ParameterError("Choose how the table is made: --method partial, full, hybrid or dp (or give --recipe).")
    values: dict[str, Any] = {
        "method": args.method,
        "columns": tuple(split_columns(args.columns)) if args.columns else None,
        "rows": args.rows,
        "k": args.k,
        "share": args.share,
        "min_leaf": args.min_leaf,
        "seed": args.seed,
        "bins": args.bins,
        "delta": args.delta,
        "entity": args.entity,
        "max_rows_per_person": args.max_rows_per_person,
    }
    if args.method == "dp":
        if args.epsilon is None:
            raise ParameterError("--method dp needs the total privacy loss --epsilon (and --delta, default 1e-6).")
        values.update(epsilon=args.epsilon, bounds=_bounds(args.bounds), domains=_domains(args.domain))
    elif args.epsilon is not None or args.bounds or args.domain:
        raise ParameterError("--epsilon, --bounds and --domain belong to --method dp.")
    return settings_type(**values), ()


def _bounds(items: list[str] | None) -> dict[str, tuple[float, float]]:
    bounds: dict[str, tuple[float, float]] = {}
    for item in [part for given in items or [] for part in given.split(",") if part.strip()]:
        name, sep, rest = item.partition("=")
        low, colon, high = rest.partition(":")
        try:
            if not (sep and colon and name.strip()):
                raise ValueError
            bounds[name.strip()] = (float(low), float(high))
        except ValueError:
            raise ParameterError(f"--bounds reads COL=LOW:HIGH (e.g. age=17:90), got '{item}'.") from None
    return bounds


def _domains(items: list[str] | None) -> dict[str, list[str]] | None:
    if not items:
        return None
    domains: dict[str, list[str]] = {}
    for item in items:
        name, sep, rest = item.partition("=")
        values = [v.strip() for v in rest.split(",") if v.strip()]
        if not (sep and name.strip() and values):
            raise ParameterError(f"--domain reads COL=VALUE,VALUE,... (e.g. sex=Female,Male), got '{item}'.")
        domains[name.strip()] = values
    return domains


def _progress() -> Any:
    def report(fraction: float, text: str) -> None:
        print(f"privdash synthesize: {100 * fraction:3.0f}% {text}", file=sys.stderr)

    return report


def _modelled_columns(data: pd.DataFrame, settings: Any, qis: list[str], sensitive: str | None) -> Any:
    """Without --columns, a full, hybrid or dp release models every column but the direct identifiers and the
    household id privdash suggests (a name is not data to model, and a household id drawn per record describes no
    household), unless they are quasi-identifiers or the sensitive attribute; a note names what is left out."""
    if settings.columns is not None or settings.method == "partial":
        return settings
    from dataclasses import replace

    from privdash.data.contract import ColumnRole, suggest_roles

    wanted = {*qis, *([sensitive] if sensitive else [])}
    structural = (ColumnRole.IDENTIFIER, ColumnRole.HOUSEHOLD)
    left_out = [s.name for s in suggest_roles(data) if s.role in structural and s.name not in wanted]
    if not left_out:
        return settings
    print(
        f"privdash synthesize: note: not modelled or released: {', '.join(left_out)} (direct identifiers and "
        "household ids as privdash suggests them; name the columns with --columns to model them)",
        file=sys.stderr,
    )
    kept = tuple(str(c) for c in data.columns if str(c) not in left_out and str(c) != settings.entity)
    return replace(settings, columns=kept)


def _check_training(rows: int, training: int, settings: Any) -> None:
    """Name the held-out control records when they leave too few records to learn from (the core only sees the
    training records)."""
    from privdash.synthesis import minimum_rows

    needed = minimum_rows(settings.min_leaf) if settings.method != "dp" else 1
    if training < needed <= rows:
        raise ParameterError(
            f"The table has {rows:,} record(s); holding out {rows - training:,} as control records leaves "
            f"{training:,} to learn from, and the model needs at least {needed}: give a smaller --control-share "
            "(0 measures the attacks without control records)."
        )


def _synthesize(training: pd.DataFrame, settings: Any, qis: list[str], progress: Any) -> Any:
    from privdash.synthesis import synthesize

    return synthesize(training, settings, quasi_identifiers=qis, progress=progress)


def _charged(
    args: argparse.Namespace,
    data: pd.DataFrame,
    training: pd.DataFrame,
    settings: Any,
    qis: list[str],
    identity: str | None,
    total: PrivacyBudget | None,
    progress: Any,
) -> tuple[Any, dict[str, Any]]:
    """The dp release charged to the ledger (one critical section: load, resolve, check, synthesize, charge, save),
    as ``privdash release`` charges its releases."""
    from privdash.commands.release import _ledger_json, _ledger_lock

    fingerprint, aliases = TableFingerprint.of(data), (file_sha256(args.file),)
    with _ledger_lock(args.ledger):
        ledger = BudgetLedger.load(args.ledger)
        resolution = ledger.resolve(fingerprint, identity, aliases=aliases, confirm_distinct=args.distinct_population)
        for warning in resolution.warnings:
            print(f"privdash synthesize: warning: {warning}", file=sys.stderr)
        dataset = resolution.identity
        ledger.account(dataset, total).check(PrivacyBudget(settings.epsilon, settings.delta))
        release = _synthesize(training, settings, qis, progress)
        ledger = ledger.charge(
            dataset,
            release.privacy,
            query="synthesize",
            columns=tuple(str(c) for c in release.table.columns),
            mechanism="mst",
            budget=total,
            fingerprint=fingerprint,
        )
        ledger.save(args.ledger)
    return release, _ledger_json(dataset, resolution.how, ledger.account(dataset))


def _print(evaluation: Any, ledger_json: dict[str, Any] | None) -> None:
    from privdash.commands.attack import render_text

    release = evaluation.release
    print(f"method: {release.settings.method} (seed {release.settings.seed}); {release.model}")
    print(
        f"records released: {len(release.table):,}; records with synthetic values: {release.rows_replaced:,}; "
        f"cells drawn: {release.cells_replaced:,}; {release.seconds:.2f} s"
    )
    if release.privacy is not None:
        print(f"privacy: ε = {release.privacy.epsilon:g}, δ = {release.privacy.delta:g}")
    print()
    print(render_text(evaluation.attacks, "synthetic release"))
    if evaluation.original_attacks is not None:
        print()
        print(render_text(evaluation.original_attacks, "the training table as is"))
    distance = evaluation.distance
    print()
    line = (
        f"distance to the closest record ({distance.rows:,} released records; {distance.metric}): exact copies "
        f"{100 * distance.exact_copies:.1f}%, median to training {distance.median_training:.4f}"
    )
    if distance.median_control is not None and distance.closer_to_training is not None:
        line += (
            f", median to control {distance.median_control:.4f}, closer to training than to control "
            f"{100 * distance.closer_to_training:.1f}% (50% when nothing particular was learned)"
        )
    print(line)
    if evaluation.estimates:
        print_estimates(evaluation.estimates)
    print()
    print(f"verdict: {evaluation.verdict}")
    if ledger_json is not None:
        spent, budget = ledger_json["spent"], ledger_json["budget"]
        left = ledger_json["remaining"]
        print(
            f"\nbudget of '{ledger_json['dataset_identity']}': spent ε={spent['epsilon']:g}, δ={spent['delta']:g} of "
            f"ε={budget['epsilon']:g}, δ={budget['delta']:g}; left ε={left['epsilon']:g}, δ={left['delta']:g}"
        )


def _write_report(
    args: argparse.Namespace,
    data: pd.DataFrame,
    evaluation: Any,
    qis: list[str],
    training_rows: int,
    control_rows: int,
    ledger_json: dict[str, Any] | None,
) -> None:
    """The release report of the input with its Synthetic release section (``--report``), the seed withheld."""
    from privdash.application.report import file_fingerprint
    from privdash.application.report.render import write_report
    from privdash.application.report.synthetic import section_from_evaluation, synthetic_report

    privacy = evaluation.release.privacy
    charged = None
    if privacy is not None and ledger_json is not None:
        charged = (
            f"ε = {privacy.epsilon:g}, δ = {privacy.delta:g}, charged to the budget of "
            f"'{ledger_json['dataset_identity']}'"
        )
    section = section_from_evaluation(
        evaluation,
        dataset=Path(args.file).name,
        training_rows=training_rows,
        control_rows=control_rows,
        control_share=args.control_share,
        charged=charged,
    )
    settings = evaluation.release.settings
    report = synthetic_report(
        data,
        section,
        file_fingerprint(args.file, data),
        quasi_identifiers=qis,
        sensitive=[args.sensitive] if args.sensitive else [],
        k=settings.k,
        parameters=(
            ("command", "privdash synthesize"),
            ("method", settings.method),
            ("quasi-identifiers", ", ".join(qis)),
            ("targets", f"k={settings.k} (the classes and risk of the original table)"),
        ),
    )
    path, seconds = write_report(report, args.report, protect=[args.file])
    print(f"privdash synthesize: wrote the report to {path} ({seconds:.1f} s)", file=sys.stderr)


#: The command: ``_run`` with the options a ``--project`` file supplies (the ledger's reference, the contract's
#: quasi-identifiers and sensitive attribute).
run = _project.with_project(_run, "synthesize")
