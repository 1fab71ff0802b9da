"""Batch anonymisation jobs described by a JSON file (``privdash anonymize --config job.json``).

A job file looks like::

    {"source": {"path": "in.csv"},
     "target": {"path": "out.csv"},
     "contract": "contract.json",
     "aggregation_config": {"minimum_k_anonymity": 3}}

* ``source.path``: the table to read (CSV, Excel or Parquet; :func:`privdash.data.tables.read_table`).
* ``target.path``: where to write the result (``.csv``, ``.tsv``, ``.txt``, ``.parquet`` or ``.pq``). It must not be
  the source, the contract or the job file itself; its folder must exist. An existing other file is replaced.
* ``contract``: the data contract (:mod:`privdash.data.contract`), as a path or inline as a JSON object. Its
  quasi-identifiers, typed ``NUMERICAL``, ``ORDINAL`` (with ``ordinal_values``) or ``NOMINAL`` (``POSTCODE`` counts
  as nominal), are microaggregated.
* ``aggregation_config.minimum_k_anonymity``: k, at least 2. Optional ``aggregation_config.decimals`` rounds the
  published means.

Relative paths are relative to the folder of the job file. The job runs k-member MDAV microaggregation
(:func:`privdash.transform.microaggregation.microaggregate`) over the quasi-identifiers; every other column, and
the row order, are kept. ``source`` and ``target`` may also be plain path strings. Unknown keys are errors, so a
misspelt option is never silently ignored.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from difflib import get_close_matches
from pathlib import Path
from typing import Any

from privdash.data.contract import DataContract
from privdash.data.tables import read_table, write_table
from privdash.errors import ContractError, ParameterError, PrivdashError, check_positive_int
from privdash.transform.microaggregation import microaggregate_with_contract

__all__ = [
    "BatchJob",
    "BatchJobError",
    "BatchJobResult",
    "load_batch_job",
    "parse_batch_job",
    "run_batch_file",
    "run_batch_job",
]

_TOP_KEYS = ("source", "target", "contract", "aggregation_config", "description")
_PATH_KEYS = ("path",)
_AGGREGATION_KEYS = ("minimum_k_anonymity", "decimals")
_OUTPUT_SUFFIXES = (".csv", ".tsv", ".txt", ".parquet", ".pq")


class BatchJobError(ParameterError):
    """A job file is missing, malformed, or names impossible inputs or outputs."""


@dataclass(frozen=True)
class BatchJob:
    """A validated job: absolute paths, the parsed contract and k."""

    source: Path
    target: Path
    contract: DataContract
    k: int
    decimals: int | None = None
    contract_path: Path | None = None
    config_path: Path | None = None


@dataclass(frozen=True)
class BatchJobResult:
    """What a job did: rows and columns written, k asked for and reached, which columns changed, and where."""

    source: Path
    target: Path
    rows: int
    columns: int
    k_requested: int
    k_achieved: int
    quasi_identifiers: tuple[str, ...]
    columns_changed: tuple[str, ...]
    cells_changed: Mapping[str, int] = field(default_factory=dict)
    clusters: int = 0
    summary: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready description (paths as strings)."""
        return {
            "source": str(self.source),
            "target": str(self.target),
            "rows": self.rows,
            "columns": self.columns,
            "k_requested": self.k_requested,
            "k_achieved": self.k_achieved,
            "quasi_identifiers": list(self.quasi_identifiers),
            "columns_changed": list(self.columns_changed),
            "cells_changed": dict(self.cells_changed),
            "clusters": self.clusters,
        }


def _check_keys(obj: Mapping[str, Any], allowed: tuple[str, ...], where: str) -> None:
    unknown = [key for key in obj if key not in allowed]
    if unknown:
        hints = []
        for key in unknown:
            close = get_close_matches(str(key), allowed, n=1)
            hints.append(f"'{key}'" + (f" (did you mean '{close[0]}'?)" if close else ""))
        raise BatchJobError(f"Unknown key in {where}: {', '.join(hints)}. Allowed: {', '.join(allowed)}.")


def _path(obj: Mapping[str, Any], key: str, base: Path) -> Path:
    if key not in obj:
        raise BatchJobError(f'The job has no \'{key}\'; add "{key}": {{"path": "..."}}.')
    entry = obj[key]
    if isinstance(entry, Mapping):
        _check_keys(entry, _PATH_KEYS, f"'{key}'")
        entry = entry.get("path")
    if not isinstance(entry, str) or not entry.strip():
        raise BatchJobError(f"'{key}' needs a non-empty \"path\" string.")
    path = Path(entry.strip()).expanduser()
    return (path if path.is_absolute() else base / path).resolve()


def parse_batch_job(obj: Any, *, base_dir: str | os.PathLike[str] = ".", config_path: Path | None = None) -> BatchJob:
    """Validate a job description (the parsed JSON) and resolve its paths against ``base_dir``.

    Raises
    ------
    BatchJobError
        Missing or unknown keys, empty paths, k below 2, a target that is an input, a missing target folder,
        an unsupported output format.
    ContractError
        A contract that cannot be read or marks no quasi-identifier.
    """
    if not isinstance(obj, Mapping):
        raise BatchJobError("A job is a JSON object with 'source', 'target', 'contract' and 'aggregation_config'.")
    _check_keys(obj, _TOP_KEYS, "the job")
    base = Path(base_dir).resolve()
    source = _path(obj, "source", base)
    target = _path(obj, "target", base)

    if "contract" not in obj:
        raise BatchJobError("The job has no 'contract'; give the path of a data contract JSON file.")
    raw_contract = obj["contract"]
    contract_path: Path | None = None
    if isinstance(raw_contract, Mapping):
        contract = DataContract.from_dict(raw_contract)
    elif isinstance(raw_contract, str) and raw_contract.strip():
        contract_path = Path(raw_contract.strip()).expanduser()
        contract_path = (contract_path if contract_path.is_absolute() else base / contract_path).resolve()
        if not contract_path.is_file():
            raise ContractError(f"Contract file not found: {contract_path}.")
        contract = DataContract.load(contract_path)
    else:
        raise BatchJobError("'contract' must be the path of a contract JSON file or the contract object itself.")
    if not contract.quasi_identifiers:
        raise ContractError(
            'The contract marks no column as a quasi-identifier ("is_quasi_id": true); there is nothing to '
            "microaggregate."
        )

    if "aggregation_config" not in obj:
        raise BatchJobError(
            'The job has no \'aggregation_config\'; add "aggregation_config": {"minimum_k_anonymity": 3}.'
        )
    aggregation = obj["aggregation_config"]
    if not isinstance(aggregation, Mapping):
        raise BatchJobError("'aggregation_config' must be an object such as {\"minimum_k_anonymity\": 3}.")
    _check_keys(aggregation, _AGGREGATION_KEYS, "'aggregation_config'")
    if "minimum_k_anonymity" not in aggregation:
        raise BatchJobError("'aggregation_config' needs 'minimum_k_anonymity' (k, at least 2).")
    k = check_positive_int(aggregation["minimum_k_anonymity"], "minimum_k_anonymity", minimum=2)
    decimals = aggregation.get("decimals")
    if decimals is not None:
        decimals = check_positive_int(decimals, "decimals", minimum=0)

    inputs = {"source": source, "contract": contract_path, "job file": config_path}
    for label, path in inputs.items():
        if path is not None and target == path.resolve():
            raise BatchJobError(
                f"The target {target} is the {label}; inputs are never overwritten. Choose another path."
            )
    if target.suffix.lower() not in _OUTPUT_SUFFIXES:
        raise BatchJobError(f"Cannot write '{target.name}': use one of {', '.join(_OUTPUT_SUFFIXES)}.")
    if not target.parent.is_dir():
        raise BatchJobError(f"The target folder {target.parent} does not exist.")
    if target.is_dir():
        raise BatchJobError(f"The target {target} is a folder; give a file name.")
    return BatchJob(source, target, contract, k, decimals, contract_path, config_path)


def load_batch_job(path: str | os.PathLike[str]) -> BatchJob:
    """Read and validate a job file; relative paths inside it are relative to its folder."""
    config_path = Path(path).expanduser().resolve()
    try:
        text = config_path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise BatchJobError(f"Job file not found: {config_path}.") from None
    except OSError as exc:
        raise BatchJobError(f"Cannot read the job file {config_path}: {exc.strerror or exc}.") from exc
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise BatchJobError(f"The job file {config_path} is not valid JSON: {exc.msg} (line {exc.lineno}).") from exc
    return parse_batch_job(obj, base_dir=config_path.parent, config_path=config_path)


def run_batch_job(job: BatchJob) -> BatchJobResult:
    """Read the source, microaggregate the contract's quasi-identifiers, write the target; see the module docs."""
    data = read_table(job.source)
    try:
        job.contract.validate(data)
    except ContractError as exc:
        raise ContractError(f"The contract does not fit {job.source.name}: {exc}") from exc
    result = microaggregate_with_contract(data, job.contract, k=job.k, decimals=job.decimals)
    protected = [path for path in (job.source, job.contract_path, job.config_path) if path is not None]
    try:
        write_table(result.data, job.target, overwrite_protect=protected)
    except OSError as exc:
        raise PrivdashError(f"Cannot write {job.target}: {exc.strerror or exc}.") from exc
    summary = dict(result.summary)
    cells = {name: int(count) for name, count in summary.get("cells_changed", {}).items()}
    return BatchJobResult(
        source=job.source,
        target=job.target,
        rows=len(result.data),
        columns=result.data.shape[1],
        k_requested=job.k,
        k_achieved=int(summary.get("k_achieved", 0)),
        quasi_identifiers=job.contract.quasi_identifiers,
        columns_changed=tuple(name for name, count in cells.items() if count > 0),
        cells_changed=cells,
        clusters=int(summary.get("clusters", 0)),
        summary=summary,
    )


def run_batch_file(path: str | os.PathLike[str]) -> BatchJobResult:
    """Load the job file at ``path`` and run it (the ``privdash anonymize --config`` entry point)."""
    return run_batch_job(load_batch_job(path))
