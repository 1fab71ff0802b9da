"""The privacy budget ledger: how much of each dataset's (ε, δ) budget its releases have spent.

Basic sequential composition (Dwork et al. 2006; Dwork and Roth 2014, Theorem 3.16): releases of (ε₁, δ₁), ...,
(ε_k, δ_k) about the same people are together (Σ εᵢ, Σ δᵢ)-differentially private. A dataset (keyed by the SHA-256
of its file, or of its cells for a table in memory) has one total budget; a release whose cost would take the
spent total over it is refused before anything is computed or written. The ledger is a JSON file written
atomically (a temporary file in the same folder, then renamed over the old one), so a crash leaves either the old
or the new ledger, never half of one.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd

from dashboard.core.errors import DataReadError, ParameterError
from dashboard.core.privacy.mechanisms import PrivacyBudget

__all__ = ["BudgetExceededError", "BudgetLedger", "DatasetAccount", "LedgerEntry", "file_sha256", "frame_sha256"]

LEDGER_VERSION = 1
#: Relative slack when comparing sums of floats (0.1 + 0.2 must fit a budget of 0.3).
_TOLERANCE = 1e-9


class BudgetExceededError(ParameterError):
    """A release would spend more of a dataset's privacy budget than is left."""


def file_sha256(path: str | os.PathLike[str]) -> str:
    """The SHA-256 of a file's bytes (hex), the ledger key of a dataset read from that file."""
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    except OSError as exc:
        raise DataReadError(f"Cannot read {path} to fingerprint it: {exc.strerror or exc}.") from None
    return digest.hexdigest()


def frame_sha256(data: pd.DataFrame) -> str:
    """The SHA-256 of a table's column names and cells (hex), the ledger key of a table held in memory."""
    digest = hashlib.sha256(json.dumps([str(c) for c in data.columns]).encode("utf-8"))
    digest.update(pd.util.hash_pandas_object(data, index=False).to_numpy().tobytes())
    return digest.hexdigest()


@dataclass(frozen=True)
class LedgerEntry:
    """One release charged to a dataset: what was released, when, and its privacy loss."""

    query: str
    columns: tuple[str, ...]
    mechanism: str
    epsilon: float
    delta: float
    time: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "query": self.query,
            "columns": list(self.columns),
            "mechanism": self.mechanism,
            "epsilon": self.epsilon,
            "delta": self.delta,
            "time": self.time,
        }


@dataclass(frozen=True)
class DatasetAccount:
    """A dataset's total budget and the releases charged to it."""

    budget: PrivacyBudget
    entries: tuple[LedgerEntry, ...] = ()

    @property
    def spent(self) -> tuple[float, float]:
        """(Σ ε, Σ δ) over the releases so far (basic sequential composition)."""
        return (sum(e.epsilon for e in self.entries), sum(e.delta for e in self.entries))

    @property
    def remaining(self) -> tuple[float, float]:
        """The budget left: (ε, δ), never below 0."""
        epsilon, delta = self.spent
        return (max(self.budget.epsilon - epsilon, 0.0), max(self.budget.delta - delta, 0.0))

    def check(self, cost: PrivacyBudget) -> None:
        """Raise :class:`BudgetExceededError` when ``cost`` does not fit in the remaining budget."""
        epsilon, delta = self.spent
        over_epsilon = epsilon + cost.epsilon > self.budget.epsilon * (1 + _TOLERANCE)
        over_delta = delta + cost.delta > self.budget.delta * (1 + _TOLERANCE) + 1e-300
        if over_epsilon or over_delta:
            left_epsilon, left_delta = self.remaining
            raise BudgetExceededError(
                f"Privacy budget exhausted: this release costs ε={cost.epsilon:g}, δ={cost.delta:g} but only "
                f"ε={left_epsilon:g}, δ={left_delta:g} of the dataset's budget (ε={self.budget.epsilon:g}, "
                f"δ={self.budget.delta:g}) is left after {len(self.entries)} release(s). Nothing was released."
            )


@dataclass(frozen=True)
class BudgetLedger:
    """The accounts of every dataset, keyed by the dataset's SHA-256 (see :func:`file_sha256`)."""

    accounts: Mapping[str, DatasetAccount] = field(default_factory=dict)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> BudgetLedger:
        """Read a ledger file; a file that does not exist yet is an empty ledger."""
        target = Path(path)
        if not target.exists():
            return cls()
        try:
            payload = json.loads(target.read_text(encoding="utf-8"))
            accounts = {
                str(key): DatasetAccount(
                    PrivacyBudget(float(value["budget"]["epsilon"]), float(value["budget"]["delta"])),
                    tuple(
                        LedgerEntry(
                            str(e["query"]),
                            tuple(str(c) for c in e["columns"]),
                            str(e["mechanism"]),
                            float(e["epsilon"]),
                            float(e["delta"]),
                            str(e["time"]),
                        )
                        for e in value["releases"]
                    ),
                )
                for key, value in payload["datasets"].items()
            }
        except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError, AttributeError) as exc:
            raise DataReadError(f"The budget ledger {target} is not a privdash ledger file ({exc}).") from None
        return cls(accounts)

    def account(self, dataset: str, budget: PrivacyBudget | None = None) -> DatasetAccount:
        """The account of ``dataset``; a new one with ``budget`` when the ledger has none yet.

        A dataset's total budget is fixed when its account opens: a different ``budget`` later is refused.
        """
        existing = self.accounts.get(dataset)
        if existing is None:
            if budget is None:
                raise ParameterError(
                    f"The ledger has no budget for this dataset (SHA-256 {dataset[:12]}...): give its total budget "
                    "with --budget EPS[,DELTA]."
                )
            return DatasetAccount(budget)
        if budget is not None and budget != existing.budget:
            raise ParameterError(
                f"The ledger already holds a total budget of ε={existing.budget.epsilon:g}, "
                f"δ={existing.budget.delta:g} for this dataset; a budget cannot be changed once releases are charged "
                f"to it (got ε={budget.epsilon:g}, δ={budget.delta:g})."
            )
        return existing

    def charge(
        self,
        dataset: str,
        cost: PrivacyBudget,
        *,
        query: str,
        columns: tuple[str, ...],
        mechanism: str,
        budget: PrivacyBudget | None = None,
        time: datetime | None = None,
    ) -> BudgetLedger:
        """A new ledger with ``cost`` charged to ``dataset``; :class:`BudgetExceededError` when it does not fit."""
        account = self.account(dataset, budget)
        account.check(cost)
        stamp = (time or datetime.now(UTC)).isoformat(timespec="seconds")
        entry = LedgerEntry(query, columns, mechanism, cost.epsilon, cost.delta, stamp)
        return BudgetLedger({**self.accounts, dataset: replace(account, entries=(*account.entries, entry))})

    def to_dict(self) -> dict[str, Any]:
        return {
            "version": LEDGER_VERSION,
            "composition": "basic sequential: the costs (epsilon, delta) of a dataset's releases add up",
            "datasets": {
                key: {
                    "budget": {"epsilon": account.budget.epsilon, "delta": account.budget.delta},
                    "spent": dict(zip(("epsilon", "delta"), account.spent, strict=True)),
                    "releases": [entry.to_dict() for entry in account.entries],
                }
                for key, account in self.accounts.items()
            },
        }

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the ledger atomically: a temporary file beside ``path``, flushed to disk, renamed over it."""
        target = Path(path)
        text = json.dumps(self.to_dict(), indent=2, ensure_ascii=False, allow_nan=False) + "\n"
        try:
            descriptor, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
        except OSError as exc:
            raise DataReadError(f"Cannot write the budget ledger {target}: {exc.strerror or exc}.") from None
        try:
            with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
                handle.write(text)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(temporary, target)
        except OSError as exc:
            Path(temporary).unlink(missing_ok=True)
            raise DataReadError(f"Cannot write the budget ledger {target}: {exc.strerror or exc}.") from None
        return target
