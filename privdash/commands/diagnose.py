"""``privdash diagnose``: the disclosure-risk diagnosis of a table, as readable tables or one JSON object."""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import Any

from privdash.commands import _project
from privdash.commands._common import format_table, print_json, split_columns
from privdash.data.tables import read_table, read_table_with_info, write_table
from privdash.engines.aggregate import DatabaseSource, Engine, is_database_url, resolve_engine
from privdash.errors import ParameterError
from privdash.measure.diagnose import Diagnosis, diagnose
from privdash.measure.model_risk import population_unique_probability
from privdash.measure.risk import DEFAULT_MAX_RISK, individual_risk
from privdash.measure.verdict import Verdict
from privdash.targets import parse_targets

#: Exit status when the table fails a target of --targets (bad input exits with 2).
EXIT_TARGETS_FAILED = 1


def _run(args: argparse.Namespace) -> int:
    targets = parse_targets(args.targets) if args.targets is not None else None
    max_risk = args.max_risk
    if max_risk is None:
        max_risk = targets.max_risk if targets is not None and targets.max_risk is not None else DEFAULT_MAX_RISK
    data: Any = _database_source(args) if is_database_url(args.file) else args.file
    if not isinstance(data, DatabaseSource) and (args.table is not None or args.sql is not None):
        raise ParameterError("--table and --sql name the records of a postgresql:// source, not of a file.")
    engine = resolve_engine(args.engine, data)
    if engine == Engine.PANDAS:
        data, info = read_table_with_info(args.file, sheet=args.sheet, columns=_needed_columns(args))
        for note in info.notes:
            print(f"privdash diagnose: note: {note}", file=sys.stderr)
    elif args.sheet is not None:
        raise ParameterError(
            f"--sheet chooses a sheet of an Excel workbook, which the {engine.value} engine does not read."
        )
    if args.master is not None and engine != Engine.SPARK:
        raise ParameterError(f"--master chooses the Spark master of --engine spark, not of the {engine.value} engine.")
    if args.record_risk is not None and engine not in (Engine.PANDAS, Engine.DUCKDB):
        raise ParameterError(
            f"--record-risk streams the records of a file (engines pandas and duckdb); the {engine.value} engine "
            "brings back only the aggregate."
        )
    contract = None
    if args.contract:
        from privdash.data.contract import DataContract

        contract = DataContract.load(args.contract)
    entity = args.entity if args.entity is not None else (contract.entity if contract else None)
    if args.entity_key != "set" and entity is None:
        raise ParameterError(
            "--entity-key chooses how a person's rows form their key; name the person id with --entity."
        )
    population: Any = None
    if args.population is not None:
        population = _population_argument(args.population)
    result = diagnose(
        data,
        split_columns(args.qi) or None,
        sensitive=split_columns(args.sensitive) if args.sensitive is not None else None,
        contract=contract,
        missing=args.missing,
        population=population,
        population_count=args.population_count,
        sampling_fraction=args.sampling_fraction,
        weights=args.weights,
        household=args.household,
        entity=entity,
        entity_key=args.entity_key,
        max_risk=max_risk,
        recursive_l=args.recursive_l,
        t_distance=args.t_distance,
        combinations=args.combinations,
        model_risk=split_columns(args.model_risk),
        model_interactions=_interactions(args.model_interactions),
        # auto stays auto: a Parquet file of dictionary-encoded text is then counted from its codes.
        engine=Engine.AUTO if Engine.parse(args.engine) == Engine.AUTO else engine,
        memory_limit=args.memory_limit,
        temp_directory=args.temp_dir,
        spark_master=args.master,
    )
    for warning in result.warnings:
        print(f"privdash diagnose: warning: {warning}", file=sys.stderr)
    if args.record_risk is not None:
        _write_record_risk(args, data, engine, result)
    verdict = result.check(targets) if targets is not None else None
    if args.json:
        out = result.to_dict()
        if verdict is not None:
            out["verdict"] = verdict.to_dict()
        print_json(out)
    else:
        print(render_text(result, _source_name(data, args.file)))
        if verdict is not None:
            print("\n" + render_verdict(verdict))
    if verdict is not None and not verdict.passed:
        print(f"privdash diagnose: {verdict.sentence()}", file=sys.stderr)
        return EXIT_TARGETS_FAILED
    return 0


def _needed_columns(args: argparse.Namespace) -> list[str] | None:
    """The columns the diagnosis reads when the command names them all (QIs, sensitive, weight, household and
    person columns): a wide file is then parsed only there. ``None`` (every column) with a contract, whose roles
    name the columns, and with --record-risk, which writes every column of each record."""
    if args.qi is None or args.contract is not None or args.record_risk is not None:
        return None
    named = [*split_columns(args.qi), *split_columns(args.sensitive)]
    named += [name for name in (args.weights, args.household, args.entity) if name is not None]
    return list(dict.fromkeys(named)) or None


def _write_record_risk(args: argparse.Namespace, data: Any, engine: Engine, result: Diagnosis) -> None:
    """--record-risk: each record with its class size and risks, from the rows in memory or streamed by DuckDB."""
    from privdash.engines.streaming import with_record_sizes, write_person_sizes, write_record_sizes

    # sdcMicro's individual risk: F from the sampling weights, else 1 / f (survey = FALSE); the household risk's too
    # (with a person id, each row gets its person's class size and risk, the columns DuckDB's streaming gives too)
    risks: dict[str, Any] = (
        {}
        if result.entity
        else {
            "individual": individual_risk(result.classes),
            "households": result.household_risk,
            "household": result.household if result.household_risk is not None else None,
            # per method, the model's P(F = 1 | f = 1) of each sample unique (empty for the other records)
            "class_values": {
                f"population_unique_{method}": population_unique_probability(model, result.classes)
                for method, model in result.model_risk.items()
            },
        }
    )
    if engine == Engine.PANDAS:
        write_table(
            with_record_sizes(data, result.classes, **risks), args.record_risk, overwrite_protect=[Path(args.file)]
        )
        written = f"{len(data):,} records" + (" (each with its person's class)" if result.entity else "")
    elif result.people is not None:
        streamed = write_person_sizes(
            args.file, result.people, args.record_risk, memory_limit=args.memory_limit, temp_directory=args.temp_dir
        )
        written = f"{streamed.rows:,} records (each with its person's class) in {streamed.batches} batches"
    else:
        streamed = write_record_sizes(
            args.file,
            result.classes,
            args.record_risk,
            memory_limit=args.memory_limit,
            temp_directory=args.temp_dir,
            **risks,
        )
        written = f"{streamed.rows:,} records in {streamed.batches} batches"
    what = "class size and risks" + (" (household risk included)" if result.household_risk is not None else "")
    print(f"privdash diagnose: wrote {written} with their {what} to {args.record_risk}", file=sys.stderr)


def household_line(result: Diagnosis) -> str | None:
    """``Household risk: expected re-identifications X (Y %), highest Z, N households`` (None without households)."""
    households = result.household_risk
    if households is None:
        return None
    alone = households.records_without_household
    return (
        f"Household risk: expected re-identifications {households.expected_reidentifications:,.2f} "
        f"({100 * households.global_risk:.3f} %), highest {households.highest:.4g}, "
        f"{households.n_households:,} households"
        + (f" ({alone:,} records without a household id, each a household of its own)" if alone else "")
        + ("" if households.weighted else "; individual risk 1/f, no sampling weights")
    )


def render_verdict(verdict: Verdict) -> str:
    """The verdict as text: status, the sentence, and one line per target."""
    rows = [
        (
            check.target,
            f"{check.required:g}",
            "-" if math.isnan(check.achieved) else f"{check.achieved:.4g}",
            "pass" if check.passed else "FAIL",
            check.records_failing,
        )
        for check in verdict.checks
    ]
    table = format_table(["target", "required", "achieved", "status", "records failing"], rows)
    return f"verdict: {verdict.status.upper()}\n{verdict.sentence()}\n\n{table}"


def _interactions(text: str | None) -> list[tuple[str, str]]:
    """``--model-interactions sex:age,sex:region`` as pairs of column names."""
    pairs = []
    for part in split_columns(text):
        names = [name.strip() for name in part.split(":")]
        if len(names) != 2 or not all(names):
            raise ParameterError(f"--model-interactions takes pairs of QIs such as sex:age, got '{part}'.")
        pairs.append((names[0], names[1]))
    return pairs


def _database_source(args: argparse.Namespace) -> DatabaseSource:
    """The table or query of a postgresql:// source; nothing of it is read with pandas."""
    from privdash.engines.database import redact_url

    shown = redact_url(args.file)
    if args.sheet is not None:
        raise ParameterError(f"--sheet chooses a sheet of an Excel workbook; {shown} is a database (use --table).")
    if args.engine not in (Engine.AUTO.value, Engine.POSTGRESQL.value):
        raise ParameterError(
            f"{shown} is counted by the postgresql engine, in the database; --engine {args.engine} reads files."
        )
    if (args.table is None) == (args.sql is None):
        raise ParameterError(f"Name the records of {shown} with --table NAME or --sql 'SELECT ...' (one of them).")
    return DatabaseSource(args.file, table=args.table, sql=args.sql)


def _source_name(data: Any, file: str) -> str:
    """How the text output names the source: a file's name, or a database URL without its password."""
    if isinstance(data, DatabaseSource):
        from privdash.engines.database import redact_url

        return f"{redact_url(data.url)} " + (f"table {data.table}" if data.table is not None else "(query)")
    return Path(file).name


def _population_argument(text: str) -> Any:
    """A number of people, or a population table read from a file."""
    try:
        number = float(text.replace(",", "").replace("_", ""))
    except ValueError:
        path = Path(text)
        if not path.exists():
            raise ParameterError(
                f"--population must be a number of people or an existing file, got '{text}'."
            ) from None
        return read_table(path)
    if not math.isfinite(number) or number <= 0:
        raise ParameterError(f"--population must be a positive number of people, got {text}.")
    return number


def _share(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.4f} ({100 * value:.2f}%)"


def _percent(part: float, whole: float) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "-"


def render_text(result: Diagnosis, name: str) -> str:
    """The diagnosis as readable plain-text sections."""
    n = result.n_records
    classes = result.classes
    uniques = result.sample_uniques
    dropped_rows = result.entity_rows_dropped if result.entity is not None else classes.n_dropped
    lines = [
        f"{name}: {result.rows:,} rows, {len(result.quasi_identifiers)} quasi-identifiers "
        f"({', '.join(result.quasi_identifiers)}); missing QI values: {result.missing_policy.value}"
        + (f", {dropped_rows:,} rows dropped" if dropped_rows else ""),
        f"equivalence classes: {classes.n_classes:,}   k = {result.k}   "
        f"sample uniques: {uniques:,} ({_percent(uniques, n)})",
        f"counted by {result.engine} in {result.counting_seconds:.2f} s",
    ]
    if result.entity is not None:
        lines.insert(
            1,
            f"counted in people ({n:,} people, {result.rows - result.entity_rows_dropped:,} rows): person id "
            f"'{result.entity}', key: the {result.entity_key} of each person's QI tuples"
            + (f"; {classes.n_dropped:,} people with every row dropped" if classes.n_dropped else ""),
        )
    if result.identifiers:
        lines.append(f"direct identifiers to remove or mask: {', '.join(result.identifiers)}")
    lines += [f"warning: {warning}" for warning in result.warnings]
    lines += ["", "class sizes"]
    table = classes.size_frequencies()
    shown = table[table["size"] <= 12]
    rows: list[list[Any]] = [
        [int(s), int(c), int(r)] for s, c, r in zip(shown["size"], shown["classes"], shown["records"], strict=True)
    ]
    larger = table[table["size"] > 12]
    if len(larger):
        rows.append(["> 12", int(larger["classes"].sum()), int(larger["records"].sum())])
    lines.append(format_table(["size", "classes", "records"], rows, align="rrr"))
    lines += ["", "records in classes smaller than k"]
    below = result.records_below_k()
    lines.append(
        format_table(
            ["k", "records", "share"],
            [[k, count, _percent(count, n)] for k, count in below.items()],
            align="rrr",
        )
    )
    lines += ["", f"re-identification risk (records at risk: risk > {result.risk.max_risk:g})"]
    at_risk = [m.n_records_at_risk for m in result.risk.models]
    lines.append(
        format_table(
            ["attacker", "highest", "average", "lowest", "records at risk"],
            [
                [m.model, m.highest, m.average, m.lowest, f"{count:,} ({_percent(count, n)})"]
                for m, count in zip(result.risk.models, at_risk, strict=True)
            ],
            align="lrrrr",
        )
    )
    lines.append(f"population: {result.population.source}")
    if result.population_uniqueness is not None:
        uniqueness = result.population_uniqueness
        estimate = uniqueness.dankar
        value = (
            f"{estimate.uniques:,.0f} ({100 * estimate.fraction:.2f}% of the population)" if estimate.valid else "n/a"
        )
        lines.append(f"population uniques (Dankar et al., {estimate.model.value}): {value}")
    if result.individual_risk is not None:
        individual = result.individual_risk
        lines.append(
            f"individual risk (sdcMicro): expected re-identifications {individual.expected_reidentifications:,.1f}, "
            f"global risk {100 * individual.global_risk:.3f}%"
        )
    household = household_line(result)
    if household is not None:
        lines.append(f"{household} (column '{result.household}')")
    if result.model_risk:
        lines += ["", "Model-based risk (sdcMicro modRisk, log-linear models of the QI table)"]
        lines.append(
            format_table(
                ["method", "risk1", "risk2", "model"],
                [
                    [method, _share(model.risk1), _share(model.risk2), model.model]
                    for method, model in result.model_risk.items()
                ],
                align="lrrl",
            )
        )
        lines.append(
            "risk1 = sum of P(F=1 | f=1) over the sample uniques / m, risk2 = sum of E(1/F | f=1) / m; m: cells with "
            "0 < f <= bound"
        )
        notes = dict.fromkeys(note for model in result.model_risk.values() for note in model.warnings)
        lines += [f"note: {note}" for note in notes]
    for attribute, models in result.sensitive_models.items():
        summary = models.summary()
        lines += ["", f"sensitive attribute '{attribute}'"]
        lines.append(
            format_table(
                ["model", "value"],
                [
                    ["distinct l-diversity", summary["l_distinct"]],
                    ["entropy l-diversity (exp H, natural log)", summary["l_entropy"]],
                    [f"recursive (c,{summary['recursive_l']})-diversity: smallest integer c", summary["recursive_c"]],
                    [f"t-closeness ({summary['t_distance']} distance)", summary["t_closeness"]],
                    [f"delta-disclosure (log base {summary['delta_base']:g})", summary["delta_disclosure"]],
                    ["basic beta-likeness", summary["beta_basic"]],
                    ["enhanced beta-likeness", summary["beta_enhanced"]],
                    ["(alpha,k)-anonymity: alpha", summary["alpha_k"]["alpha"]],
                ],
                align="lr",
            )
        )
    if result.combinations is not None:
        lines += ["", "QI combinations (smallest subsets with the most sample uniques first)"]
        top = result.combinations.table.sort_values(["sample_uniques", "size"], ascending=[False, True]).head(15)
        lines.append(
            format_table(
                ["quasi-identifiers", "distinction", "separation", "k", "sample uniques"],
                [
                    [", ".join(qis), distinction, separation, k, uniques]
                    for qis, distinction, separation, k, uniques in zip(
                        top["quasi_identifiers"],
                        top["distinction"],
                        top["separation"],
                        top["k"],
                        top["sample_uniques"],
                        strict=True,
                    )
                ],
                align="lrrrr",
            )
        )
    return "\n".join(lines)


#: The command: ``_run`` with the options a ``--project`` file supplies.
run = _project.with_project(_run, "diagnose")
