"""``privdash release``: a differentially private count, histogram (or class-size table), sum or mean of a table,
with its error bar, charged to the privacy budget of the population it describes, in a ledger.

Each person must contribute one row, unless ``--entity`` names the person-id column and ``--max-rows-per-person``
declares the most rows a person may contribute: each person's rows are then truncated at random to that bound and
every measurement is calibrated to it (see :mod:`privdash.dp.contributions`). The release is refused,
and nothing is written (neither the output nor the ledger), when an input is wrong or the release would exceed the
budget. True values, and the exact counts of people and of rows dropped by the truncation, are printed only on the
terminal (for the data owner; true values only with ``--show-true``) and never go to the output file.

The ledger's accounts are keyed by the dataset identity the data owner declares (``--dataset-identity``, asked for
at the first release of a table); a copy of a released table, in any row order, is recognised and charged to the
same account (see :mod:`privdash.dp.ledger`). Loading, checking, computing, charging and saving run under
one lock (``flock`` on ``.<ledger name>.lock`` beside the ledger), so parallel releases cannot overspend.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import sys
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from privdash.application.storage import exclusive_lock
from privdash.commands import _project
from privdash.commands._common import check_output, format_table, jsonable, print_json, split_columns
from privdash.data.tables import read_table_with_info, write_table
from privdash.dp.contributions import check_max_rows
from privdash.dp.ledger import (
    BudgetLedger,
    DatasetAccount,
    TableFingerprint,
    check_identity,
    file_sha256,
    is_read_only,
)
from privdash.dp.mechanisms import Mechanism, PrivacyBudget
from privdash.errors import DataReadError, ParameterError, check_finite
from privdash.transform.hierarchy import load_hierarchies

if TYPE_CHECKING:
    from privdash.dp.release import DPRelease

# The queries (dp_count ... in privdash.dp.release) are imported where they run: with OpenDP, which
# pulls in scikit-learn, they would add about a second to ``privdash release --help``.

_OUTPUTS = (".csv", ".tsv", ".parquet", ".json")
#: Serialises the releases of this process's threads (``flock`` serialises the processes).
_THREAD_LOCK = threading.Lock()


def _run(args: argparse.Namespace) -> int:
    epsilon = check_finite(args.epsilon, "--epsilon")
    delta = check_finite(args.delta, "--delta")
    mechanism = Mechanism.parse(args.mechanism)
    cost_limit = PrivacyBudget(epsilon, delta)
    total = PrivacyBudget.parse(args.budget) if args.budget is not None else None
    if args.ledger is None and (total is not None or args.dataset_identity is not None or args.distinct_population):
        raise ParameterError(
            "--budget, --dataset-identity and --distinct-population belong to the budget ledger: give the ledger "
            "file with --ledger."
        )
    identity = check_identity(args.dataset_identity) if args.dataset_identity is not None else None
    args.max_rows_per_person = _check_entity_arguments(args)
    check_output(args, _OUTPUTS)
    _check_query_arguments(args)
    if args.ledger is not None:
        _check_ledger_path(args.ledger)
        # Fail before reading the data when the ledger already rules this release out.
        known = BudgetLedger.load(args.ledger).accounts.get(identity or "")
        if known is not None:
            known.check(PrivacyBudget(cost_limit.epsilon, 0.0))
    data, info = read_table_with_info(args.file, sheet=args.sheet)
    for note in info.notes:
        print(f"privdash release: note: {note}", file=sys.stderr)
    account, dataset, resolution = None, "", None
    if args.ledger is None:
        release = _compute(args, data, mechanism)
    else:
        fingerprint, aliases = TableFingerprint.of(data), (file_sha256(args.file),)
        with _ledger_lock(args.ledger):
            # One critical section: load, resolve, check, compute, charge and save.
            ledger = BudgetLedger.load(args.ledger)
            resolution = ledger.resolve(
                fingerprint,
                identity,
                aliases=aliases,
                confirm_distinct=args.distinct_population,
            )
            for warning in resolution.warnings:
                print(f"privdash release: warning: {warning}", file=sys.stderr)
            dataset = resolution.identity
            ledger.account(dataset, total).check(PrivacyBudget(cost_limit.epsilon, 0.0))
            release = _compute(args, data, mechanism)
            # The charge is checked against the cost OpenDP proves; the ledger is saved before anything is shown.
            ledger = ledger.charge(
                dataset,
                release.cost,
                query=release.query,
                columns=release.columns,
                mechanism=release.mechanism.value,
                budget=total,
                fingerprint=fingerprint,
            )
            ledger.save(args.ledger)
        account = ledger.account(dataset)
    if args.output is not None:
        _write(release, args.output, Path(args.file))
        print(f"privdash release: wrote {len(release.table):,} value(s) to {args.output}", file=sys.stderr)
    if args.json:
        payload = release.to_dict(include_true=args.show_true, include_counts=True)
        if account is not None and resolution is not None:
            payload["ledger"] = _ledger_json(dataset, resolution.how, account)
        print_json(payload)
    else:
        print(render_text(release, show_true=args.show_true))
        if account is not None:
            left_epsilon, left_delta = account.remaining
            print(
                f"\nbudget of '{dataset}': spent ε={account.spent[0]:g}, δ={account.spent[1]:g} of "
                f"ε={account.budget.epsilon:g}, δ={account.budget.delta:g}; left ε={left_epsilon:g}, δ={left_delta:g}"
            )
    return 0


def _ledger_json(dataset: str, how: str, account: DatasetAccount) -> dict[str, Any]:
    return {
        "dataset_identity": dataset,
        "identity_from": how,
        "budget": {"epsilon": account.budget.epsilon, "delta": account.budget.delta},
        "spent": dict(zip(("epsilon", "delta"), account.spent, strict=True)),
        "remaining": dict(zip(("epsilon", "delta"), account.remaining, strict=True)),
    }


def _check_ledger_path(ledger: Path) -> None:
    """A ledger path the release can lock and write: a file (or a new name) in an existing, writable folder."""
    if ledger.is_dir():
        raise DataReadError(f"The budget ledger {ledger} is a folder; give a file name such as ledger.json.")
    if not ledger.parent.is_dir():
        raise DataReadError(f"The folder of the budget ledger {ledger} does not exist; create it first.")
    if ledger.exists() and is_read_only(ledger):
        raise DataReadError(f"The budget ledger {ledger} is read-only: nothing can be charged to it.")


@contextlib.contextmanager
def _ledger_lock(ledger: Path) -> Iterator[None]:
    """Hold the exclusive lock of ``ledger``: ``flock`` on ``.<name>.lock`` in its folder (created, owner only)."""
    with contextlib.ExitStack() as stack:
        try:
            stack.enter_context(exclusive_lock(ledger.parent / f".{ledger.name}.lock", _THREAD_LOCK))
        except OSError as exc:
            raise DataReadError(f"Cannot lock the budget ledger {ledger}: {exc.strerror or exc}.") from None
        yield


def _check_entity_arguments(args: argparse.Namespace) -> int | None:
    """The bound on rows per person, checked before the data is read; the person-id column is checked against
    the table by the core (unknown, rows without an id, also a released column)."""
    if args.entity is None:
        if args.max_rows_per_person is not None or args.truncation_seed is not None:
            raise ParameterError(
                "--max-rows-per-person and --truncation-seed bound the rows of each person: name the person-id "
                "column with --entity."
            )
        return None
    if not str(args.entity).strip():
        raise ParameterError("--entity needs the name of the person-id column.")
    if args.entity == args.column or args.entity in split_columns(args.qi or ""):
        raise ParameterError(
            f"--entity '{args.entity}' is the person-id column: it cannot also be released (--column, --qi); "
            "choose another column."
        )
    if args.max_rows_per_person is None:
        return None  # the core's message gives the table's largest number of rows per person
    try:
        return check_max_rows(args.max_rows_per_person)
    except ParameterError:
        raise ParameterError(
            "--max-rows-per-person takes a whole number of at least 1 (the most rows one person may contribute), "
            f"got '{args.max_rows_per_person}'."
        ) from None


def _check_query_arguments(args: argparse.Namespace) -> None:
    query = args.query
    if query == "count" and (args.column or args.qi or args.bounds or args.domain or args.hierarchies):
        raise ParameterError("--query count counts the rows: --column, --qi, --bounds and --domain do not apply.")
    if query in ("sum", "mean"):
        if not args.column:
            raise ParameterError(f"--query {query} needs the numeric column (--column).")
        if args.bounds is None:
            raise ParameterError(
                f"--query {query} needs declared clamping bounds --bounds L,U (public, not taken from the data)."
            )
        if args.qi or args.domain or args.hierarchies:
            raise ParameterError(f"--query {query} takes --column and --bounds; --qi and --domain are for histograms.")
    if query == "histogram":
        if bool(args.column) == bool(args.qi):
            raise ParameterError("--query histogram needs either --column (one column) or --qi (the class-size table).")
        if args.bounds is not None:
            raise ParameterError("--bounds clamps a sum or mean; a histogram has no bounds.")
        if args.hierarchies is not None and not args.qi:
            raise ParameterError("--hierarchies declares the domains of the --qi columns of a class-size table.")


def _compute(args: argparse.Namespace, data: Any, mechanism: Mechanism) -> DPRelease:
    from privdash.dp.release import dp_class_sizes, dp_count, dp_histogram, dp_mean, dp_sum

    common: dict[str, Any] = {
        "epsilon": args.epsilon,
        "delta": args.delta,
        "mechanism": mechanism,
        "confidence": args.confidence,
        "include_true": args.show_true,
        "entity": args.entity,
        "max_rows_per_person": args.max_rows_per_person,
        "seed": args.truncation_seed,
    }
    if args.query == "count":
        return dp_count(data, **common)
    if args.query in ("sum", "mean"):
        bounds = _bounds(args.bounds)
        function = dp_sum if args.query == "sum" else dp_mean
        return function(data, args.column, bounds, **common)
    if args.column:
        return dp_histogram(data, args.column, domain=_column_domain(args.domain, args.column), **common)
    qis = split_columns(args.qi)
    return dp_class_sizes(data, qis, domains=_qi_domains(args.domain, args.hierarchies, qis), **common)


def _bounds(text: str) -> tuple[float, float]:
    parts = [p.strip() for p in text.split(",")]
    try:
        low, high = (float(p) for p in parts)
    except ValueError:
        raise ParameterError(f"--bounds takes two numbers L,U (e.g. 0,100), got '{text}'.") from None
    return low, high


def _column_domain(values: Sequence[str] | None, column: str) -> list[str] | None:
    if not values:
        return None
    if len(values) > 1:
        raise ParameterError("Give the domain of --column once: comma-separated values or a file.")
    domain = _values(values[0])
    if isinstance(domain, dict):
        if column not in domain:
            raise ParameterError(f"The domain file has no list for column '{column}'.")
        return domain[column]
    return domain


def _qi_domains(
    values: Sequence[str] | None, hierarchies: Path | None, qis: Sequence[str]
) -> dict[str, list[str]] | None:
    if not values and hierarchies is None:
        return None
    from privdash.dp.release import read_domain_file

    domains: dict[str, list[str]] = {}
    for item in values or ():
        if Path(item).is_file():
            loaded = read_domain_file(item)
            if not isinstance(loaded, dict):
                raise ParameterError(f"With --qi, a domain file holds a JSON object of lists per column: {item}.")
            domains.update(loaded)
            continue
        column, sep, text = item.partition("=")
        if not sep or column.strip() not in qis:
            raise ParameterError(
                f"With --qi, give each domain as COL=VALUES for one of {', '.join(qis)}; got '{item}'."
            )
        listed = _values(text)
        if isinstance(listed, dict):
            raise ParameterError(f"The domain of '{column.strip()}' must be a list of values.")
        domains[column.strip()] = listed
    undeclared = [q for q in qis if q not in domains]
    if hierarchies is not None and undeclared:
        loaded_hierarchies = load_hierarchies(hierarchies, undeclared)
        for column, hierarchy in loaded_hierarchies.items():
            domains[column] = [str(v) for v in hierarchy.labels[0]]
    return domains


def _values(text: str) -> list[str] | dict[str, list[str]]:
    """A file of values, or comma-separated values."""
    if Path(text).is_file():
        from privdash.dp.release import read_domain_file

        return read_domain_file(text)
    values = split_columns(text)
    if not values:
        raise ParameterError("A domain needs at least one value.")
    return values


def _write(release: DPRelease, output: Path, source: Path) -> None:
    """The release without true values: JSON with its parameters, or a table with formula cells escaped."""
    if output.suffix.lower() == ".json":
        text = json.dumps(jsonable(release.to_dict()), indent=2, ensure_ascii=False, allow_nan=False) + "\n"
        output.write_text(text, encoding="utf-8")
    else:
        write_table(release.to_frame(), output, overwrite_protect=[source])


def render_text(release: DPRelease, *, show_true: bool = False) -> str:
    """The release as readable text: its parameters, then each value ± its error bar."""
    percent = f"{release.confidence:.0%}"
    lines = [
        f"query: {release.query}" + (f" of {', '.join(release.columns)}" if release.columns else ""),
        f"mechanism: {release.mechanism.value}, ε = {release.epsilon:g}, δ = {release.delta:g}, "
        f"sensitivity = {release.sensitivity:g}, noise scale = {release.scale:g}"
        + (f" (count: {release.count_scale:g})" if release.count_scale is not None else ""),
    ]
    if release.bounds is not None:
        lines.append(f"values clamped into [{release.bounds[0]:g}, {release.bounds[1]:g}]")
    tau = release.key_selection_threshold
    if tau is not None:
        lines.append(f"categories by DP key selection: only noisy counts >= {tau:g} are released")
    contribution = release.contribution
    if contribution is not None:
        c = contribution.max_rows_per_person
        lines.append(
            f"privacy unit: a person of '{contribution.entity}', at most {c} row(s) each (noise for {c} rows); "
            f"{contribution.people:,} people, {contribution.rows_dropped:,} of {contribution.rows:,} rows dropped by "
            f"the truncation (largest: {contribution.most_rows:,} rows per person; exact counts, data owner only)"
        )
    unit = "each person contributes one row"
    if contribution is not None:
        unit = f"each person contributes at most {contribution.max_rows_per_person} row(s) of the table"
    lines.append(f"± is the half-width of the {percent} interval of the noise; {unit}")
    frame = release.to_frame(include_true=show_true)
    keys = [c for c in frame.columns if c not in ("dp_value", "error", "true_value")]
    headers = [*keys, "DP value", f"± ({percent})", *(["true value (owner only)"] if show_true else [])]
    # Digits down to about a tenth of the error bar: more would only show noise.
    digits = min(max(1 - math.floor(math.log10(release.expected_error)), 0), 6) if release.expected_error > 0 else 6
    shown = frame.copy()
    for column in ("dp_value", "error"):
        if shown[column].dtype.kind == "f":
            shown[column] = np.char.mod(f"%.{digits}f", shown[column].to_numpy(dtype=float))
    rows = [list(row) for row in shown.itertuples(index=False)]
    align = "l" * len(keys) + "r" * (len(headers) - len(keys))
    return "\n".join(lines) + "\n\n" + format_table(headers, rows, align=align)


#: The command: ``_run`` with the options a ``--project`` file supplies (the ledger's reference).
run = _project.with_project(_run, "release")
