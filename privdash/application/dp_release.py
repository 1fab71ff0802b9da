"""Differentially private releases of the open dataset (the Fix page's "Differential privacy" section), each charged
to the dataset's privacy-budget ledger.

The queries, noise, sensitivities and error bars are the core's (:mod:`privdash.dp`): a count, a
histogram of one column, and the sum and mean of a numeric column clamped into declared bounds [L, U], with
Laplace, geometric (discrete Laplace) or Gaussian noise at a privacy loss (ε, δ). Every person must contribute one
row, unless the dataset's contract marks a person-id column (``is_entity_id``): then the user declares the most rows
one person may contribute (c), each person keeps at most c rows chosen at random, and every measurement is calibrated
to c rows (:mod:`privdash.dp.contributions`); the ledger is charged the person-level (ε, δ). The
categories of a histogram are a public domain the user types, or, with δ > 0, chosen by DP key selection;
never the data's own values (a rare value shown as a category would reveal its holder).

The ledger
    Basic sequential composition (Dwork and Roth 2014, Theorem 3.16): a population's releases of (ε₁, δ₁), ...,
    (ε_k, δ_k) together cost (Σ εᵢ, Σ δᵢ), charged against one total budget (``Settings.dp_budget``, fixed when the
    population's first release is charged). A release that does not fit is refused and nothing is recorded. The
    ledger is the core's :class:`~privdash.dp.ledger.BudgetLedger`, one JSON file in the store folder,
    ``<store>/privacy/ledger.json``: beside the uploads but outside their expiring folders, because the people in a
    table do not regain privacy when its upload expires.
Whose budget
    Accounts are keyed by the **dataset identity**, the population the data owner names in the form's "Population"
    field. Left empty, a release is charged to the population this table's rows (in any order, under any file name
    or link) were released under before, else to the population of a near copy (with a warning), else to the
    table's name. Naming another population for the same rows is refused, and for a near copy it needs the
    "other people" box ticked (:meth:`~privdash.dp.ledger.BudgetLedger.resolve`). The table's
    fingerprint is computed once per dataset version and process (:func:`table_keys`). Resolve, check, release,
    charge and save run under a lock shared by the server's processes, so two releases cannot both spend the last
    of a budget.
True values
    The exact values are computed beside the DP ones for the data owner's eyes only: they are never in
    :func:`release_csv` (the download) and never in the ledger.
"""

from __future__ import annotations

import contextlib
import math
import re
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Generic, TypeVar

import pandas as pd

from privdash.application.services import LoadedDataset, Services
from privdash.application.storage import exclusive_lock
from privdash.data.tables import csv_text
from privdash.dp import (
    BudgetLedger,
    DatasetAccount,
    DPRelease,
    IdentityResolution,
    Mechanism,
    PrivacyBudget,
    TableFingerprint,
    check_identity,
    check_max_rows,
    dp_count,
    dp_histogram,
    dp_mean,
    dp_sum,
    frame_sha256,
    most_rows_per_person,
)
from privdash.dp.release import DP_ERROR, DP_TRUE_VALUE, DP_VALUE
from privdash.errors import ColumnError, ParameterError, check_finite

__all__ = [
    "CATEGORY_SOURCES",
    "MAX_ROWS_FIELD",
    "QUERIES",
    "ReleaseLedger",
    "ReleaseOutcome",
    "ReleaseRequest",
    "SpentOutcome",
    "TableKeys",
    "describe",
    "display_digits",
    "download_name",
    "ledger_for",
    "parse_domain",
    "release_csv",
    "result_rows",
    "table_keys",
]

#: The queries offered: value -> label.
QUERIES: Mapping[str, str] = {
    "count": "Count of records",
    "histogram": "Histogram of a column",
    "sum": "Sum of a numeric column",
    "mean": "Mean of a numeric column",
}
#: Where a histogram's categories come from: value -> label.
CATEGORY_SOURCES: Mapping[str, str] = {
    "domain": "A public domain I declare",
    "keys": "DP key selection (needs δ > 0)",
}
#: The ledger file inside the store folder.
LEDGER_FOLDER, LEDGER_FILE = "privacy", "ledger.json"
#: Serialises the releases of this process's threads (``flock`` does it across processes).
_THREAD_LOCK = threading.Lock()
#: How the form's fields are named in the ledger's messages.
IDENTITY_FIELD, DISTINCT_BOX = "the Population field", "the box 'Other people than the similar table'"
#: The form's field of the bound on rows per person.
MAX_ROWS_FIELD = "Most rows per person"


def parse_domain(text: str | None) -> tuple[str, ...]:
    """The categories typed by the user: one per line when there are several lines (so a category may hold a
    comma), else separated by commas; blanks dropped, repeats kept once, order kept."""
    raw = str(text or "")
    parts = raw.splitlines() if len(raw.strip().splitlines()) > 1 else raw.split(",")
    values = (part.strip() for part in parts)
    return tuple(dict.fromkeys(value for value in values if value))


def _number(value: Any, what: str, example: str) -> float:
    """A finite number from a form field (a number, or text such as ``1e-6``); a message naming the field."""
    if value is None or (isinstance(value, str) and not value.strip()):
        raise ParameterError(f"Give {what}, e.g. {example}.")
    name = what[:1].upper() + what[1:] if what[:1].isascii() else what  # "ε ..." stays lower case
    return check_finite(value, name, example=example)


@dataclass(frozen=True)
class ReleaseRequest:
    """One release as the form describes it, checked: the query, its column, the declared domain (None: DP key
    selection) or bounds, the privacy loss (ε, δ) and the mechanism; with a person-id column (``entity``, from the
    dataset's contract), the declared bound on rows per person (None until the user gives it)."""

    query: str
    epsilon: float
    delta: float = 0.0
    mechanism: Mechanism = Mechanism.LAPLACE
    column: str | None = None
    domain: tuple[str, ...] | None = None
    bounds: tuple[float, float] | None = None
    identity: str | None = None
    distinct: bool = False
    entity: str | None = None
    max_rows_per_person: int | None = None

    @classmethod
    def from_form(
        cls,
        columns: Sequence[str],
        *,
        query: Any,
        epsilon: Any,
        delta: Any = 0.0,
        mechanism: Any = Mechanism.LAPLACE.value,
        column: Any = None,
        categories: Any = "domain",
        domain: Any = None,
        low: Any = None,
        high: Any = None,
        identity: Any = None,
        distinct: Any = False,
        entity: str | None = None,
        max_rows: Any = None,
    ) -> ReleaseRequest:
        """Check the form's values against the dataset's ``columns``; :class:`ParameterError` (or
        :class:`ColumnError`) with a message that names the field to correct. An empty ``identity`` is None (the
        ledger recognises the table, or uses its name); ``distinct`` confirms other people than a near copy.
        ``entity`` is the contract's person-id column (None: one row per person) and ``max_rows`` the declared
        bound on rows per person (empty: asked for when the release runs, with the table's largest number)."""
        population = check_identity(identity) if identity is not None and str(identity).strip() else None
        request = cls._checked(columns, query, epsilon, delta, mechanism, column, categories, domain, low, high)
        request = replace(request, identity=population, distinct=bool(distinct))
        if entity is None:
            return request
        if entity not in columns:
            raise ColumnError(f"The person-id column '{entity}' of the contract is not in the dataset.")
        if request.column == entity:
            raise ParameterError(
                f"'{entity}' is the person-id column: releasing it would publish the ids. Choose another column."
            )
        bound = None
        if max_rows is not None and str(max_rows).strip():
            try:
                bound = check_max_rows(max_rows)
            except ParameterError:
                raise ParameterError(
                    f"{MAX_ROWS_FIELD} must be a whole number of at least 1, got {max_rows!r}: the most rows one "
                    "person may contribute."
                ) from None
        return replace(request, entity=entity, max_rows_per_person=bound)

    @classmethod
    def _checked(
        cls,
        columns: Sequence[str],
        query: Any,
        epsilon: Any,
        delta: Any,
        mechanism: Any,
        column: Any,
        categories: Any,
        domain: Any,
        low: Any,
        high: Any,
    ) -> ReleaseRequest:
        if query not in QUERIES:
            raise ParameterError("Choose what to release: a count, a histogram, a sum or a mean.")
        eps = _number(epsilon, "ε (epsilon)", "0.5")
        if eps <= 0:
            raise ParameterError(f"ε (epsilon) must be above 0, got {eps:g}: it is the privacy loss of the release.")
        dlt = _number(delta if delta not in (None, "") else 0.0, "δ (delta)", "0 or 1e-6")
        if not 0 <= dlt < 1:
            raise ParameterError(f"δ (delta) must be at least 0 and below 1, got {dlt:g}; e.g. 0 or 1e-6.")
        kind = Mechanism.parse(mechanism or Mechanism.LAPLACE.value)
        if kind is Mechanism.GAUSSIAN and dlt <= 0:
            raise ParameterError("The Gaussian mechanism needs δ > 0 (e.g. 1e-6); or choose Laplace or geometric.")
        budget = PrivacyBudget(eps, dlt)
        if query == "count":
            return cls("count", budget.epsilon, budget.delta, kind)
        if not column:
            raise ParameterError(f"Choose the column of the {query}.")
        if str(column) not in columns:
            raise ColumnError(f"The dataset has no column '{column}'.")
        name = str(column)
        if query == "histogram":
            if categories == "keys":
                if dlt <= 0:
                    raise ParameterError(
                        "DP key selection needs δ > 0 (e.g. 1e-6): without it, the categories must be a declared "
                        "public domain, never the data's own values, which would reveal the people with rare ones."
                    )
                if kind is Mechanism.GAUSSIAN:
                    raise ParameterError(
                        "DP key selection adds discrete Laplace noise: choose Laplace or geometric, or declare a "
                        "public domain for the Gaussian mechanism."
                    )
                return cls("histogram", budget.epsilon, budget.delta, kind, name, None)
            values = parse_domain(domain)
            if not values:
                raise ParameterError(
                    f"The declared domain of '{name}' is empty: type its public categories, separated by commas or "
                    "one per line (e.g. F, M). With δ > 0 you may choose DP key selection instead."
                )
            return cls("histogram", budget.epsilon, budget.delta, kind, name, values)
        lower = _number(low, "the lower bound L", "0")
        upper = _number(high, "the upper bound U", "100")
        if lower >= upper:
            raise ParameterError(f"The bounds need L < U, got L = {lower:g} and U = {upper:g}.")
        return cls(str(query), budget.epsilon, budget.delta, kind, name, None, (lower, upper))

    def run(self, data: pd.DataFrame) -> DPRelease:
        """The release on ``data`` with the core's functions, true values included (for the data owner)."""
        common: dict[str, Any] = {
            "epsilon": self.epsilon,
            "delta": self.delta,
            "mechanism": self.mechanism,
            "include_true": True,
            "entity": self.entity,
            "max_rows_per_person": self.max_rows_per_person,
        }
        if self.entity is not None and self.max_rows_per_person is None:
            most = most_rows_per_person(data, self.entity)
            raise ParameterError(
                f"Give the {MAX_ROWS_FIELD.lower()}: in this table a person of '{self.entity}' has up to {most:,} "
                "row(s). Each person keeps at most that many (chosen at random) and the noise grows with it."
            )
        if self.query == "count":
            return dp_count(data, **common)
        if self.column is None:  # from_form never makes one; a hand-made request may
            raise ParameterError(f"A {self.query} needs a column.")
        if self.query == "histogram":
            return dp_histogram(data, self.column, domain=self.domain, **common)
        if self.bounds is None:
            raise ParameterError(f"A {self.query} needs the bounds L < U.")
        function = dp_sum if self.query == "sum" else dp_mean
        return function(data, self.column, self.bounds, **common)


@dataclass(frozen=True)
class TableKeys:
    """How the ledger knows a table: its order-independent ``fingerprint``, its ``legacy`` key (the SHA-256 of its
    cells in row order, the key of version-1 ledgers) and its ``title``, the population's name by default."""

    fingerprint: TableFingerprint
    legacy: str
    title: str

    @classmethod
    def of(cls, data: pd.DataFrame, title: str) -> TableKeys:
        return cls(TableFingerprint.of(data), frame_sha256(data), title)


@dataclass(frozen=True)
class ReleaseOutcome:
    """A release that was charged, the population it was charged to, its account after the charge and the warnings
    given before spending (a near copy)."""

    release: DPRelease
    identity: str
    account: DatasetAccount
    warnings: tuple[str, ...] = ()


_T = TypeVar("_T")


@dataclass(frozen=True)
class SpentOutcome(Generic[_T]):
    """What :meth:`ReleaseLedger.spend` computed, the population it was charged to, its account after the charge
    and the warnings given before spending (a near copy)."""

    result: _T
    identity: str
    account: DatasetAccount
    warnings: tuple[str, ...] = ()


class ReleaseLedger:
    """The budget ledger of every population, in ``folder``/ledger.json; new accounts open with ``total``."""

    def __init__(self, folder: str | Path, total: PrivacyBudget) -> None:
        self.folder = Path(folder)
        self.total = total

    @property
    def path(self) -> Path:
        return self.folder / LEDGER_FILE

    def load(self) -> BudgetLedger:
        """The ledger as it is on disk (empty before the first release)."""
        return BudgetLedger.load(self.path)

    def account(self, identity: str) -> DatasetAccount:
        """The account of the population ``identity``; an empty one with the total budget before its first release."""
        return self.load().accounts.get(identity) or DatasetAccount(self.total)

    def known(self, table: TableKeys) -> tuple[str, DatasetAccount] | None:
        """The population and account this table would be charged to with no identity given, when the ledger
        knows it (the same rows, or a near copy); None for a table never released."""
        ledger = self.load()
        try:
            resolution = self._resolve(ledger, table, None, False, default=None)
        except ParameterError:
            return None
        return resolution.identity, ledger.accounts[resolution.identity]

    def release(self, data: pd.DataFrame, table: TableKeys, request: ReleaseRequest) -> ReleaseOutcome:
        """Compute ``request`` on ``data`` and charge its cost to the population the table resolves to.

        Raises :class:`~privdash.dp.ledger.BudgetExceededError` when the cost does not fit in what is
        left (checked before the computation against the request's ε, and after it against the cost OpenDP proves),
        :class:`ParameterError` when the table belongs to another population than the one named (or is a near copy
        of one and other people were not confirmed), or the core's errors for bad input; in every case the ledger is
        left as it was.
        """
        with self._locked():
            ledger = self.load()
            resolution = self._resolve(ledger, table, request.identity, request.distinct, default=table.title)
            identity = resolution.identity
            opening = identity not in ledger.accounts
            account = ledger.accounts.get(identity) or DatasetAccount(self.total)
            account.check(PrivacyBudget(request.epsilon, 0.0))  # refuse before computing when ε alone is too much
            release = request.run(data)
            ledger = ledger.charge(
                identity,
                release.cost,
                query=release.query,
                columns=release.columns,
                mechanism=release.mechanism.value,
                budget=self.total if opening else None,
                fingerprint=table.fingerprint,
            )
            ledger.save(self.path)
        return ReleaseOutcome(release, identity, ledger.accounts[identity], resolution.warnings)

    def spend(
        self,
        table: TableKeys,
        asked: PrivacyBudget,
        compute: Callable[[], _T],
        *,
        cost: Callable[[_T], PrivacyBudget],
        query: str,
        columns: Callable[[_T], tuple[str, ...]],
        mechanism: Callable[[_T], str],
        identity: str | None = None,
        distinct: bool = False,
    ) -> SpentOutcome[_T]:
        """Any other DP computation charged like :meth:`release` (a DP synthetic table): the population is resolved
        from ``table``, ``asked`` (its ε alone) is checked against what is left before ``compute()`` runs, and
        ``cost(result)`` is charged after, recorded as ``query`` with ``columns(result)`` and
        ``mechanism(result)``. Every step under the ledger's lock; a refusal or an error leaves the ledger as it
        was."""
        with self._locked():
            ledger = self.load()
            resolution = self._resolve(ledger, table, identity, distinct, default=table.title)
            name = resolution.identity
            opening = name not in ledger.accounts
            account = ledger.accounts.get(name) or DatasetAccount(self.total)
            account.check(PrivacyBudget(asked.epsilon, 0.0))
            result = compute()
            ledger = ledger.charge(
                name,
                cost(result),
                query=query,
                columns=columns(result),
                mechanism=mechanism(result),
                budget=self.total if opening else None,
                fingerprint=table.fingerprint,
            )
            ledger.save(self.path)
        return SpentOutcome(result, name, ledger.accounts[name], resolution.warnings)

    @staticmethod
    def _resolve(
        ledger: BudgetLedger, table: TableKeys, identity: str | None, distinct: bool, *, default: str | None
    ) -> IdentityResolution:
        return ledger.resolve(
            table.fingerprint,
            identity,
            aliases=(table.legacy,),
            default=default,
            confirm_distinct=distinct,
            option=IDENTITY_FIELD,
            confirm_option=DISTINCT_BOX,
        )

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        with exclusive_lock(self.folder / ".lock", _THREAD_LOCK):
            yield


def ledger_for(services: Services) -> ReleaseLedger:
    """The app's ledger: in the store folder, new accounts opening with the settings' total budget."""
    return ReleaseLedger(services.settings.store_dir / LEDGER_FOLDER, services.settings.dp_budget)


def table_keys(services: Services, loaded: LoadedDataset) -> TableKeys:
    """The ledger's keys of ``loaded`` (fingerprint, version-1 key, title), computed once per dataset version and
    process."""
    keys: TableKeys = services.cache.get_or_build(
        ("dp-table", loaded.id, loaded.version), lambda: TableKeys.of(loaded.frame, loaded.title)
    )
    return keys


def release_csv(release: DPRelease) -> str:
    """The release as CSV (the keys, ``dp_value`` and ``error``), formula cells escaped; never the true values."""
    return csv_text(release.to_frame(include_true=False))


def display_digits(error: float) -> int:
    """Decimals worth showing for values whose error bar is ``error``: down to about a tenth of it (more digits
    would only show noise), 0 to 6."""
    if not error > 0 or not math.isfinite(error):
        return 6
    return min(max(1 - math.floor(math.log10(error)), 0), 6)


def result_rows(release: DPRelease) -> pd.DataFrame:
    """One row per released value: its label (the category, or the query), the DP value, its error bar and the true
    value (data owner only)."""
    frame = release.to_frame(include_true=True)
    keys = [c for c in frame.columns if c not in (DP_VALUE, DP_ERROR, DP_TRUE_VALUE)]
    if keys:
        labels = frame[keys].astype(str).agg(" · ".join, axis=1)
    else:
        labels = pd.Series([release.query + (f" of {release.columns[0]}" if release.columns else "")])
    return pd.DataFrame(
        {
            "label": labels.to_numpy(dtype=object),
            DP_VALUE: frame[DP_VALUE].to_numpy(dtype=float),
            DP_ERROR: frame[DP_ERROR].to_numpy(dtype=float),
            DP_TRUE_VALUE: frame[DP_TRUE_VALUE].to_numpy(dtype=float),
        }
    )


def describe(release: DPRelease) -> str:
    """The release's parameters in one sentence."""
    what = QUERIES.get(release.query, release.query).split(" of ")[0]
    subject = f" of '{release.columns[0]}'" if release.columns else ""
    parts = [
        f"{what}{subject}, {release.mechanism.value} noise, ε = {release.epsilon:g}, δ = {release.delta:g}",
        f"sensitivity {release.sensitivity:g}, noise scale {release.scale:.4g}",
    ]
    if release.bounds is not None:
        parts.append(f"values clamped into [{release.bounds[0]:g}, {release.bounds[1]:g}]")
    if release.domain_size is not None:
        parts.append(f"{release.domain_size:,} declared categories")
    tau = release.key_selection_threshold
    if tau is not None:
        parts.append(f"categories by DP key selection: only noisy counts ≥ {tau:g} are released")
    bound = release.contribution
    if bound is not None:
        parts.append(
            f"privacy unit: a person of '{bound.entity}', at most {bound.max_rows_per_person} row(s) each "
            f"({bound.people:,} people; {bound.rows_dropped:,} of {bound.rows:,} rows dropped at random)"
        )
    return "; ".join(parts) + "."


_STEM = re.compile(r"[^A-Za-z0-9._-]+")


def download_name(stem: str, release: DPRelease) -> str:
    """The file name of a release's CSV."""
    column = f"-{_STEM.sub('-', release.columns[0]).strip('-')}" if release.columns else ""
    return f"{stem}-dp-{release.query}{column}.csv"
