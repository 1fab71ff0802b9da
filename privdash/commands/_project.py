"""``--project FILE`` of ``privdash diagnose``, ``anonymize``, ``report``, ``release`` and ``synthesize``: a project
supplies the options that were not given.

The project (:mod:`privdash.application.project`) supplies the contract (``--contract``; for ``anonymize``,
``--qi`` and ``--sensitive``), the targets (``--targets``, without the targets given as options), the missing-value
policy, the recipe (``--recipe``: ``anonymize`` re-applies it unless a search option such as ``--k`` is given;
``report`` applies it unless ``--fix`` is given), the hierarchies of a search, for ``report`` the sign-off
fields, and for ``release`` and ``synthesize`` the ledger's reference (``--ledger`` and ``--dataset-identity``; for
``synthesize`` also ``--qi``, ``--sensitive`` and ``--entity`` from the contract). Options given on
the command line override it. The table is compared with the project's fingerprint: a difference is a warning on
stderr naming what differs; a column the project uses that the table lacks is an error (exit status 2).

The project's parts are written to a private temporary folder for the time of the command, so that the command
reads them as it reads the files of its options.
"""

from __future__ import annotations

import argparse
import functools
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # loaded with the first --project (a command without one never needs them)
    import pandas as pd

    from privdash.application.project import Project
    from privdash.data.contract import DataContract

MISSING_DEFAULT = "value"
STEPS_NOTE = (
    "the project's Fix-page steps run in the dashboard only; a project saved after the Fix page applied them "
    "carries their recipe"
)


def with_project(
    run: Callable[[argparse.Namespace], int], command: str, *, search_options: tuple[str, ...] = ()
) -> Callable[[argparse.Namespace], int]:
    """``run`` with the options of ``--project`` filled in (see the module docstring); ``search_options``: the
    options (argparse destinations) with which ``anonymize`` searches instead of re-applying the project's recipe."""

    @functools.wraps(run)
    def handler(args: argparse.Namespace) -> int:
        if getattr(args, "missing", MISSING_DEFAULT) is None and getattr(args, "project", None) is None:
            args.missing = MISSING_DEFAULT
        if getattr(args, "project", None) is None:
            return run(args)
        from privdash.application.project import Project

        project = Project.load(args.project)
        given = {name for name, value in vars(args).items() if value is not None}
        with tempfile.TemporaryDirectory(prefix="privdash-project-") as folder:
            apply_project(project, args, command, Path(folder), search_options=search_options)
            # What the project filled in, so that a report's command line shows what was typed (--project FILE).
            args.project_supplied = {name for name, value in vars(args).items() if value is not None} - given
            return run(args)

    return handler


def _say(command: str, kind: str, text: str) -> None:
    print(f"privdash {command}: {kind}: {text}", file=sys.stderr)


def _read_for_check(args: argparse.Namespace, command: str) -> pd.DataFrame | None:
    """The table of FILE when the command reads it into memory (other engines stream it: not compared)."""
    from privdash.data.tables import read_table
    from privdash.engines.aggregate import Engine, resolve_engine

    file = getattr(args, "file", None)
    if file is None:
        return None
    engine = getattr(args, "engine", None)
    if engine is not None and resolve_engine(engine, str(file)) != Engine.PANDAS:
        _say(command, "note", f"the {engine} engine streams the table: it is not compared with the project's digest")
        return None
    return read_table(file, sheet=getattr(args, "sheet", None))


def targets_text(project: Project, given: set[str], *, sensitive: bool) -> str | None:
    """The project's targets as ``--targets`` text, without those in ``given`` (set as options) and, without
    sensitive attributes, without l and t (they apply to sensitive attributes)."""
    parts = []
    for name, value in project.targets.to_dict().items():
        if value is None or name in given or name in ("sensitive", "t_distance"):
            continue
        if name in ("l", "t") and not sensitive:
            continue
        parts.append(f"{name}={value}")
    return ",".join(parts) or None


def apply_project(
    project: Project, args: argparse.Namespace, command: str, folder: Path, *, search_options: tuple[str, ...] = ()
) -> None:
    """Fill ``args`` from ``project`` (files written into ``folder``), and check the table against it."""
    from privdash.data.contract import DataContract

    frame = _read_for_check(args, command)
    if frame is not None:
        project.require_columns([str(c) for c in frame.columns], str(getattr(args, "file", "The table")))
        differences = project.check_table(frame)
        if not differences.same:
            _say(command, "warning", f"the table is not the one the project was saved with. {differences.describe()}")
    if command in ("release", "synthesize"):
        _apply_release(project, args, frame, command)
        return
    if getattr(args, "missing", MISSING_DEFAULT) is None:
        args.missing = project.missing.value
    present = {str(c) for c in frame.columns} if frame is not None else None
    contract = DataContract(tuple(f for f in project.contract.fields if present is None or f.name in present))
    sensitive = bool(contract.sensitive) or bool(getattr(args, "sensitive", None))
    given = {name for name in ("k", "l", "t", "max_risk") if getattr(args, name, None) is not None}
    if command == "anonymize":
        _apply_anonymize(project, args, folder, frame, contract, given, sensitive, search_options)
        return
    if getattr(args, "contract", None) is None:
        args.contract = folder / "contract.json"
        contract.save(args.contract)
    if getattr(args, "targets", None) is None:
        args.targets = targets_text(project, given, sensitive=sensitive)
    if command == "report":
        if args.recipe is None and args.fix is None and project.recipe is not None:
            args.recipe = folder / f"{args.project.stem}.recipe.json"
            project.recipe.save(args.recipe)
        elif args.fix is not None and args.hierarchies is None and project.hierarchies and frame is not None:
            qis = list(contract.quasi_identifiers)
            args.hierarchies = _hierarchy_folder(project, frame, qis, folder, k=project.targets.k)
        args.project_signoff = dict(project.signoff)
        if args.recipe is None and args.fix is None and project.steps:
            _say(
                command,
                "note",
                STEPS_NOTE,
            )


def _apply_release(project: Project, args: argparse.Namespace, frame: pd.DataFrame | None, command: str) -> None:
    """``release`` and ``synthesize``: the ledger's reference (the ledger file and the population's identity), and
    for ``synthesize`` the contract's quasi-identifiers and sensitive attribute."""
    ledger = project.ledger
    if ledger is not None:
        if args.ledger is None and ledger.path is not None:
            args.ledger = Path(ledger.path)
        if args.dataset_identity is None and ledger.identity is not None:
            args.dataset_identity = ledger.identity
    if command != "synthesize":
        return
    from privdash.data.contract import DataContract

    present = {str(c) for c in frame.columns} if frame is not None else None
    contract = DataContract(tuple(f for f in project.contract.fields if present is None or f.name in present))
    if args.qi is None and contract.quasi_identifiers:
        args.qi = ",".join(contract.quasi_identifiers)
    if args.sensitive is None and contract.sensitive:
        # The inference attack guesses one attribute: the contract's first sensitive one.
        args.sensitive = contract.sensitive[0]
    if args.entity is None and contract.entity is not None:
        args.entity = contract.entity


def _apply_anonymize(
    project: Project,
    args: argparse.Namespace,
    folder: Path,
    frame: pd.DataFrame | None,
    contract: DataContract,
    given: set[str],
    sensitive: bool,
    search_options: tuple[str, ...],
) -> None:
    searching = any(getattr(args, name, None) is not None for name in search_options)
    if args.recipe is None and project.recipe is not None and not searching:
        args.recipe = folder / f"{args.project.stem}.recipe.json"
        project.recipe.save(args.recipe)
        return
    if args.recipe is not None:
        return
    if args.qi is None and contract.quasi_identifiers:
        args.qi = ",".join(contract.quasi_identifiers)
    if args.sensitive is None and contract.sensitive:
        args.sensitive = ",".join(contract.sensitive)
    if args.targets is None:
        args.targets = targets_text(project, given, sensitive=sensitive)
    if args.hierarchies is None and project.hierarchies and frame is not None:
        k = project.targets.k if args.k is None else args.k
        args.hierarchies = _hierarchy_folder(project, frame, [c.strip() for c in args.qi.split(",")], folder, k=k)
    if project.steps and project.recipe is None:
        _say(
            "anonymize",
            "note",
            STEPS_NOTE,
        )


def _hierarchy_folder(project: Project, frame: pd.DataFrame, qis: list[str], folder: Path, *, k: int) -> Path:
    """ARX hierarchy files of the quasi-identifiers: the project's, and the default one of the others."""
    from privdash.application.hierarchies import set_from_json
    from privdash.data.contract import infer_statistical_type
    from privdash.transform.hierarchy import search_hierarchy, write_arx_hierarchy

    target = folder / "hierarchies"
    target.mkdir()
    kept = {
        name: item for name, item in project.hierarchies.items() if name in qis and name in set(map(str, frame.columns))
    }
    built = set_from_json({"columns": kept}, frame).hierarchies()
    others = [name for name in qis if name not in built]
    # The others: the default hierarchy of their type, as privdash anonymize makes it without --hierarchies.
    built.update({name: search_hierarchy(frame[name], infer_statistical_type(frame[name]), k) for name in others})
    for number, name in enumerate(qis):
        if name in built:
            # One file per column, named by position (a column name may not be a valid file name).
            write_arx_hierarchy(built[name], target / f"h{number}_hierarchy_{name}.csv")
    return target
