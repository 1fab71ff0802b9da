"""The privacy budget ledger: how much of each population's (ε, δ) budget its releases have spent.

Basic sequential composition (Dwork et al. 2006; Dwork and Roth 2014, Theorem 3.16): releases of (ε₁, δ₁), ...,
(ε_k, δ_k) about the same people are together (Σ εᵢ, Σ δᵢ)-differentially private. The budget belongs to the
people, not to a file: an account is keyed by the **dataset identity**, a name the data owner declares for the
population the records describe, and a release whose cost would take the spent total over the budget is refused
before anything is written.

Copies of a table are recognised by its **fingerprint** (:class:`TableFingerprint`), which does not depend on the
order of rows or columns or on how numbers are typed (``30`` and ``30.0`` are one value):

- ``digest``: the SHA-256 of the sorted column names and the sorted row hashes (a row hash combines the hashes of
  its cells' category text, see :func:`row_hashes`). Equal digests are the same multiset of rows.
- ``sketch``: the :data:`SKETCH_SIZE` smallest hashes of the rows, each row hashed with its occurrence number among
  equal rows (a bottom-k sketch of the row multiset; Broder 1997, Cohen and Kaplan 2007). Two sketches estimate the
  Jaccard similarity J of the row multisets, hence the rows in common |A ∩ B| = J/(1 + J) · (|A| + |B|) and the
  **overlap** |A ∩ B| / min(|A|, |B|): the share of the smaller table's rows that are rows of the other. It is
  exact for tables of at most :data:`SKETCH_SIZE` rows; otherwise its standard error is about
  sqrt(J(1 - J)/SKETCH_SIZE), and it cannot see a small table inside a much larger one.

Every release records the fingerprint of its table under the account it was charged to. A table whose digest is
recorded under one identity cannot be released under another (its budget cannot be reset by a copy, however its
rows are sorted); a table whose overlap with a table of another identity is at least :data:`NEAR_COPY` (a corrected,
extended or sampled copy) is charged to that identity when none is declared, and is refused under a new identity
until the data owner confirms that it describes other people. Rows hash as whole rows: two tables of different
people over a few coarse columns share many equal rows and may look like near copies (hence a confirmation, not a
refusal).

The ledger is a JSON file written atomically (a temporary file in the same folder, then renamed over the old one),
so a crash leaves either the old or the new ledger, never half of one. Callers that load, charge and save hold a
lock for the whole sequence (the command line and the dashboard use ``exclusive_lock``).
"""

from __future__ import annotations

import json
import math
import os
import tempfile
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from privdash.data.fingerprint import SKETCH_SIZE, TableFingerprint, file_sha256, frame_sha256, row_hashes
from privdash.dp.mechanisms import PrivacyBudget
from privdash.errors import DataReadError, ParameterError

__all__ = [
    "NEAR_COPY",
    "SKETCH_SIZE",
    "BudgetExceededError",
    "BudgetLedger",
    "DatasetAccount",
    "IdentityResolution",
    "LedgerEntry",
    "TableFingerprint",
    "TableRecord",
    "check_identity",
    "file_sha256",
    "frame_sha256",
    "is_read_only",
    "row_hashes",
]

LEDGER_VERSION = 2
#: Relative slack when comparing sums of floats (0.1 + 0.2 must fit a budget of 0.3).
_TOLERANCE = 1e-9
#: The estimated overlap from which a table is a near copy of another (half the smaller table's rows in common).
NEAR_COPY = 0.5
#: The longest dataset identity.
MAX_IDENTITY = 200


class BudgetExceededError(ParameterError):
    """A release would spend more of a dataset's privacy budget than is left."""


@dataclass(frozen=True)
class TableRecord:
    """A table released under an account: its fingerprint and the time of its first release."""

    fingerprint: TableFingerprint
    time: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "digest": self.fingerprint.digest,
            "rows": self.fingerprint.rows,
            "sketch": list(self.fingerprint.sketch),
            "time": self.time,
        }


def check_identity(name: object) -> str:
    """A dataset identity: the name of a population, 1 to :data:`MAX_IDENTITY` characters without control
    characters, spaces at the ends removed; :class:`ParameterError` otherwise."""
    text = str(name).strip() if name is not None else ""
    if not text:
        raise ParameterError(
            "The dataset identity is empty: name the population the records describe, e.g. 'Adult census 1994'."
        )
    if len(text) > MAX_IDENTITY:
        raise ParameterError(f"The dataset identity is {len(text):,} characters long; at most {MAX_IDENTITY} allowed.")
    if any(unicodedata.category(ch).startswith("C") for ch in text):
        raise ParameterError("The dataset identity holds a control character; use a plain name.")
    return text


@dataclass(frozen=True)
class LedgerEntry:
    """One release charged to a dataset: what was released, when, its privacy loss, and the digest of its table."""

    query: str
    columns: tuple[str, ...]
    mechanism: str
    epsilon: float
    delta: float
    time: str
    table: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "query": self.query,
            "columns": list(self.columns),
            "mechanism": self.mechanism,
            "epsilon": self.epsilon,
            "delta": self.delta,
            "time": self.time,
            **({"table": self.table} if self.table else {}),
        }


@dataclass(frozen=True)
class DatasetAccount:
    """A population's total budget, the releases charged to it, the tables released under it and (from version-1
    ledgers) the SHA-256 keys it was known by."""

    budget: PrivacyBudget
    entries: tuple[LedgerEntry, ...] = ()
    tables: tuple[TableRecord, ...] = ()
    aliases: tuple[str, ...] = ()

    @property
    def spent(self) -> tuple[float, float]:
        """(Σ ε, Σ δ) over the releases so far (basic sequential composition)."""
        return (sum(e.epsilon for e in self.entries), sum(e.delta for e in self.entries))

    @property
    def remaining(self) -> tuple[float, float]:
        """The budget left: (ε, δ), never below 0."""
        epsilon, delta = self.spent
        return (max(self.budget.epsilon - epsilon, 0.0), max(self.budget.delta - delta, 0.0))

    def holds(self, fingerprint: TableFingerprint) -> bool:
        """Whether a table with this digest was released under the account."""
        return any(record.fingerprint.digest == fingerprint.digest for record in self.tables)

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
class IdentityResolution:
    """The account a release of a table is charged to, and why.

    ``how`` is ``declared`` (the identity given), ``recognised`` (the same rows were released under it),
    ``near-copy`` (none given; the table shares ``overlap`` of its rows with a table released under it) or
    ``default`` (none given, a new table: the caller's default name). ``warnings`` are to be shown before spending.
    """

    identity: str
    how: str
    warnings: tuple[str, ...] = ()
    overlap: float | None = None


@dataclass(frozen=True)
class BudgetLedger:
    """The accounts of every population, keyed by dataset identity."""

    accounts: Mapping[str, DatasetAccount] = field(default_factory=dict)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> BudgetLedger:
        """Read a ledger file; a file that does not exist yet is an empty ledger. A version-1 ledger (accounts keyed
        by SHA-256) is read with each key as both the identity and an alias, so its spending still counts."""
        target = Path(path)
        try:
            if target.is_dir():
                raise DataReadError(f"The budget ledger {target} is a folder; give a file name such as ledger.json.")
            if not target.exists():
                return cls()
            payload = json.loads(target.read_text(encoding="utf-8"))
            version = payload.get("version", 1)
            if version not in (1, LEDGER_VERSION):
                raise ValueError(f"version {version!r}, this privdash reads 1 and {LEDGER_VERSION}")
            accounts = {str(key): _account(value, str(key), version) for key, value in payload["datasets"].items()}
        except DataReadError:
            raise
        except RecursionError:
            raise DataReadError(f"The budget ledger {target} is nested too deeply to be a privdash ledger.") from None
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
                    f"The ledger has no budget for the dataset '{_short(dataset)}': give its total budget with "
                    "--budget EPS[,DELTA]."
                )
            return DatasetAccount(budget)
        if budget is not None and budget != existing.budget:
            raise ParameterError(
                f"The ledger already holds a total budget of ε={existing.budget.epsilon:g}, "
                f"δ={existing.budget.delta:g} for the dataset '{_short(dataset)}'; a budget cannot be changed once "
                f"releases are charged to it (got ε={budget.epsilon:g}, δ={budget.delta:g})."
            )
        return existing

    def recognise(self, fingerprint: TableFingerprint, aliases: Iterable[str] = ()) -> str | None:
        """The identity under which these rows (in any order) were released, or whose version-1 key is one of
        ``aliases`` (the SHA-256 of the file or of the cells); None for a table the ledger has not seen."""
        keys = set(aliases)
        for identity, account in self.accounts.items():
            if account.holds(fingerprint) or keys.intersection(account.aliases):
                return identity
        return None

    def near_copies(self, fingerprint: TableFingerprint, *, threshold: float = NEAR_COPY) -> list[tuple[str, float]]:
        """(identity, overlap) of the accounts holding a table that shares at least ``threshold`` of its rows with
        this one (see :meth:`TableFingerprint.overlap`), largest overlap first."""
        found: dict[str, float] = {}
        for identity, account in self.accounts.items():
            for record in account.tables:
                share = fingerprint.overlap(record.fingerprint)
                if share >= threshold:
                    found[identity] = max(found.get(identity, 0.0), share)
        return sorted(found.items(), key=lambda item: (-item[1], item[0]))

    def resolve(
        self,
        fingerprint: TableFingerprint,
        identity: str | None = None,
        *,
        aliases: Iterable[str] = (),
        default: str | None = None,
        confirm_distinct: bool = False,
        option: str = "--dataset-identity",
        confirm_option: str = "--distinct-population",
    ) -> IdentityResolution:
        """The account a release of the table ``fingerprint`` is charged to.

        - the same rows were released under an identity: that one; declaring another is refused;
        - ``identity`` declared: that one, except when the table is new to it and shares at least
          :data:`NEAR_COPY` of its rows with a table of another identity: then refused unless ``confirm_distinct``
          (the owner confirms other people, with ``confirm_option``), and warned;
        - none declared: the identity of the nearest near copy, else ``default``, else refused (the first release
          of a table needs its population named with ``option``).
        """
        declared = check_identity(identity) if identity is not None else None
        known = self.recognise(fingerprint, aliases)
        if known is not None:
            if declared is not None and declared != known:
                raise ParameterError(
                    f"These rows (in any order) were released under the dataset identity '{_short(known)}': they draw "
                    f"on its budget. Give '{_short(known)}' in {option} or leave it out; a copy cannot open a new "
                    "budget."
                )
            return IdentityResolution(known, "declared" if declared else "recognised")
        others = [(name, share) for name, share in self.near_copies(fingerprint) if name != declared]
        if declared is not None:
            if not others:
                return IdentityResolution(declared, "declared")
            name, share = others[0]
            warning = (
                f"This table shares about {share:.0%} of its rows with a table released under '{_short(name)}' "
                f"(ε={self.accounts[name].remaining[0]:g} left): if they are the same people, release under "
                f"'{_short(name)}'; '{_short(declared)}' spends a separate budget."
            )
            if not confirm_distinct:
                raise ParameterError(
                    f"{warning} Nothing was released: confirm that '{_short(declared)}' describes other people with "
                    f"{confirm_option} to go on."
                )
            return IdentityResolution(declared, "declared", (warning,), share)
        if others:
            name, share = others[0]
            note = (
                f"Charged to '{_short(name)}': this table shares about {share:.0%} of its rows with a table released "
                f"under it. Name another population with {option} if these are other people."
            )
            return IdentityResolution(name, "near-copy", (note,), share)
        if default is not None:
            return IdentityResolution(check_identity(default), "default")
        raise ParameterError(
            f"The ledger has not seen this table: name the population its records describe with {option} NAME "
            "(e.g. 'adult-census-1994'). Copies and corrected versions of the table are then charged to the same "
            "budget."
        )

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
        fingerprint: TableFingerprint | None = None,
    ) -> BudgetLedger:
        """A new ledger with ``cost`` charged to ``dataset`` (and ``fingerprint`` recorded under it);
        :class:`BudgetExceededError` when the cost does not fit."""
        account = self.account(dataset, budget)
        account.check(cost)
        stamp = (time or datetime.now(UTC)).isoformat(timespec="seconds")
        digest = fingerprint.digest if fingerprint is not None else ""
        entry = LedgerEntry(query, columns, mechanism, cost.epsilon, cost.delta, stamp, digest)
        tables = account.tables
        if fingerprint is not None and not account.holds(fingerprint):
            tables = (*tables, TableRecord(fingerprint, stamp))
        updated = replace(account, entries=(*account.entries, entry), tables=tables)
        return BudgetLedger({**self.accounts, dataset: updated})

    def to_dict(self) -> dict[str, Any]:
        return {
            "version": LEDGER_VERSION,
            "composition": "basic sequential: the costs (epsilon, delta) of a dataset's releases add up",
            "datasets": {
                key: {
                    "budget": {"epsilon": account.budget.epsilon, "delta": account.budget.delta},
                    "spent": dict(zip(("epsilon", "delta"), account.spent, strict=True)),
                    "releases": [entry.to_dict() for entry in account.entries],
                    "tables": [record.to_dict() for record in account.tables],
                    **({"aliases": list(account.aliases)} if account.aliases else {}),
                }
                for key, account in self.accounts.items()
            },
        }

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the ledger atomically: a temporary file beside ``path``, flushed to disk, renamed over it."""
        target = Path(path)
        if target.is_dir() or (target.exists() and is_read_only(target)):
            what = "a folder" if target.is_dir() else "read-only"
            raise DataReadError(f"Cannot write the budget ledger {target}: it is {what}. Nothing was released.")
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


def is_read_only(path: Path) -> bool:
    """Whether ``path`` is marked read-only (no write permission bit) or cannot be written by this user."""
    return not path.stat().st_mode & 0o222 or not os.access(path, os.W_OK)


def _number(value: Any) -> float:
    number = float(value)
    if not math.isfinite(number) or number < 0:
        raise ValueError(f"{value!r} is not a finite number >= 0")
    return number


def _account(value: Mapping[str, Any], key: str, version: int) -> DatasetAccount:
    """An account read from a ledger file (version 1: keyed by SHA-256, no tables)."""
    entries = tuple(
        LedgerEntry(
            str(e["query"]),
            tuple(str(c) for c in e["columns"]),
            str(e["mechanism"]),
            _number(e["epsilon"]),
            _number(e["delta"]),
            str(e["time"]),
            str(e.get("table", "")),
        )
        for e in value["releases"]
    )
    budget = PrivacyBudget(float(value["budget"]["epsilon"]), float(value["budget"]["delta"]))
    if version == 1:
        return DatasetAccount(budget, entries, (), (key,))
    tables = tuple(
        TableRecord(
            TableFingerprint(str(t["digest"]), int(t["rows"]), tuple(int(v) for v in t["sketch"])), str(t["time"])
        )
        for t in value.get("tables", ())
    )
    return DatasetAccount(budget, entries, tables, tuple(str(a) for a in value.get("aliases", ())))


def _short(identity: str) -> str:
    """An identity as shown in messages (a version-1 SHA-256 key shortened)."""
    if len(identity) == 64 and all(ch in "0123456789abcdef" for ch in identity):
        return f"sha256:{identity[:12]}..."
    return identity
