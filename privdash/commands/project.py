"""``privdash project``: write, show and check project files (:mod:`privdash.application.project`).

``save`` writes the project of a table (its fingerprint, the contract, targets, recipe, hierarchies, sign-off fields
and ledger reference given as options; the table's values only with ``--include-table``); ``show`` prints what a
project holds; ``check`` compares a table with a project's fingerprint (exit status 0: the same table, 1: it
differs, 2: bad input or a column the project uses is missing).
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from typing import Any

from privdash.commands._common import format_table, split_columns

EXIT_DIFFERS = 1


def run(args: argparse.Namespace) -> int:
    if args.action == "save":
        return _save(args)
    if args.action == "show":
        return _show(args)
    if args.action == "check":
        return _check(args)
    print("privdash project: error: give an action: save, show or check (privdash project --help)", file=sys.stderr)
    return 2


def _save(args: argparse.Namespace) -> int:
    from privdash.application.hierarchies import set_from_json
    from privdash.application.project import LedgerReference, Project, TableSummary, table_bytes
    from privdash.data.contract import DataContract
    from privdash.data.tables import read_table_with_info
    from privdash.errors import ColumnError, ParameterError
    from privdash.targets import PrivacyTargets, parse_targets
    from privdash.transform.hierarchy import load_hierarchies
    from privdash.transform.steps import Recipe

    if args.output.resolve() == args.file.resolve():
        raise ParameterError(f"Refusing to overwrite the input file {args.file}; choose another output path.")
    data, info = read_table_with_info(args.file, sheet=args.sheet)
    for note in info.notes:
        print(f"privdash project: note: {note}", file=sys.stderr)
    qis, sensitive = split_columns(args.qi), split_columns(args.sensitive)
    unknown = [name for name in (*qis, *sensitive) if name not in data.columns]
    if unknown:
        raise ColumnError(f"{args.file.name} has no column {', '.join(repr(name) for name in unknown)}.")
    hierarchies: dict[str, object] = {}
    if args.contract is not None:
        text = args.contract.read_text(encoding="utf-8-sig")
        contract = DataContract.from_json(text)
        given = json.loads(text).get("hierarchies")
        hierarchies.update(given if isinstance(given, dict) else {})
        contract = _with_roles(contract, data, qis, sensitive)
    else:
        if not qis:
            raise ParameterError("Give the quasi-identifiers with --qi, or a data contract with --contract.")
        contract = DataContract.for_columns(data, quasi_identifiers=qis, sensitive=sensitive)
    contract.validate(data[[f.name for f in contract.fields if f.name in data.columns]])
    if hierarchies:  # those of the contract: checked against the table
        set_from_json({"columns": hierarchies}, data)
    if args.hierarchies is not None:
        for name, hierarchy in load_hierarchies(args.hierarchies, list(contract.quasi_identifiers)).items():
            hierarchies[name] = {"source": "file", "hierarchy": hierarchy.to_dict()}
    signoff = {
        name: value
        for name in ("name", "role", "decision", "conditions", "date")
        if (value := getattr(args, f"signoff_{name}")) is not None
    }
    ledger = None
    if args.identity is not None or args.ledger is not None:
        ledger = LedgerReference(args.identity, str(args.ledger) if args.ledger is not None else None)
    project = Project(
        dataset=TableSummary.of(data),
        contract=contract,
        title=args.file.name,
        origin=f"file:{args.file.name}",
        missing=args.missing,
        targets=parse_targets(args.targets) if args.targets else PrivacyTargets(),
        hierarchies=hierarchies,
        recipe=Recipe.load(args.recipe) if args.recipe is not None else None,
        signoff=signoff,
        ledger=ledger,
        table=table_bytes(data) if args.include_table else None,
    )
    Project.from_bytes(project.to_bytes())  # what is written must read back
    path = project.save(args.output)
    kept = "with the table's values" if args.include_table else "no data value"
    print(f"Saved the project of {args.file.name} to {path} ({path.stat().st_size:,} bytes; {kept}).")
    return 0


def _with_roles(contract: Any, data: Any, qis: list[str], sensitive: list[str]) -> Any:
    """``contract`` where the columns of ``--qi`` and ``--sensitive`` (when given) are exactly the quasi-identifiers
    and sensitive attributes; others that had those roles become "other"."""
    from privdash.data.contract import ColumnRole, FieldMetadata, infer_statistical_type

    roles: dict[str, ColumnRole] = {}
    for item in contract.fields:
        if qis and item.role == ColumnRole.QUASI_IDENTIFIER and item.name not in qis:
            roles[item.name] = ColumnRole.INSENSITIVE
        if sensitive and item.role == ColumnRole.SENSITIVE and item.name not in sensitive:
            roles[item.name] = ColumnRole.INSENSITIVE
    roles.update(dict.fromkeys(sensitive, ColumnRole.SENSITIVE))
    roles.update(dict.fromkeys(qis, ColumnRole.QUASI_IDENTIFIER))
    known = {item.name for item in contract.fields}
    extra = tuple(
        FieldMetadata(name, role, infer_statistical_type(data[name]))
        for name, role in roles.items()
        if name not in known
    )
    return type(contract)((*contract.fields, *extra)).with_roles(roles)


def _show(args: argparse.Namespace) -> int:
    from privdash.application.project import Project
    from privdash.commands._common import print_json

    project = Project.load(args.project)
    if args.json:
        obj = project.to_dict()
        if "table" in obj:
            obj["table"] = {"format": "parquet", "bytes": len(project.table or b"")}
        print_json(obj)
        return 0
    rows = [
        ("dataset", f"{project.title} ({project.origin})"),
        ("rows, columns", f"{project.dataset.rows:,}, {len(project.dataset.columns):,}"),
        ("digest", project.dataset.digest),
        ("quasi-identifiers", ", ".join(project.contract.quasi_identifiers) or "-"),
        ("sensitive", ", ".join(project.contract.sensitive) or "-"),
        ("targets", replace(project.targets, sensitive=project.contract.sensitive).describe()),
        ("missing values", project.missing.value),
        ("hierarchies", ", ".join(project.hierarchies) or "-"),
        ("fix steps", str(len(project.steps))),
        ("recipe", f"{len(project.recipe.steps)} step(s)" if project.recipe is not None else "-"),
        ("solution", f"step {project.solution['step']}, pick {project.solution['pick']}" if project.solution else "-"),
        ("sign-off", "; ".join(f"{k}: {v}" for k, v in project.signoff.items()) or "-"),
        ("ledger", _ledger_text(project)),
        ("table inside", f"yes ({len(project.table):,} bytes)" if project.table is not None else "no"),
        ("saved", f"{project.saved} by {project.made_by}"),
    ]
    print(format_table(["part", "value"], rows, align="ll"))
    return 0


def _ledger_text(project: object) -> str:
    ledger = getattr(project, "ledger", None)
    if ledger is None:
        return "-"
    return f"{ledger.identity or '(no identity)'} in {ledger.path or 'the dashboard ledger'}"


def _check(args: argparse.Namespace) -> int:
    from privdash.application.project import Project
    from privdash.data.tables import read_table

    project = Project.load(args.project)
    data = read_table(args.file, sheet=args.sheet)
    project.require_columns([str(c) for c in data.columns], args.file.name)
    differences = project.check_table(data)
    print(differences.describe())
    return 0 if differences.same else EXIT_DIFFERS


__all__ = ["run"]
