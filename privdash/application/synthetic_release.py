"""The Fix page's synthetic releases: the form read into the core's
:class:`~privdash.synthesis.SynthesisSettings`, the synthesis and its evaluation run as one job, the comparison
with the original table and the page's generalized fix, and the files the steward downloads. Nothing here imports
Dash.

What a run does (:func:`synthesize_state`)
    The open dataset is split into *training* records, from which the model is fitted, and *control* records,
    held out of it (:func:`~privdash.synthesis.split_control`): the same attacks on the control records are the
    baseline that separates what the release reveals about the people in it from what it reveals about the
    population (docs/attacks.md). The core makes the release (:func:`~privdash.synthesis.synthesize`) and judges
    it (:func:`~privdash.application.synthesis.evaluate_synthetic`: attacks against the control records, the same
    attacks on the training table itself, the distance to the closest record, the steward's estimates before and
    after, the verdict). When the page has fix steps, their recipe is re-applied to the training records and that
    generalized table is attacked with the same control records, so the three rows (no protection, the
    generalized fix, the synthetic table) read on one scale.
DP synthetic
    A differentially private synthetic release is charged to the dataset's privacy-budget ledger, the one the
    page's "Differential privacy" section charges (:class:`~privdash.application.dp_release.ReleaseLedger`,
    :meth:`~privdash.application.dp_release.ReleaseLedger.spend`): the population is resolved from the whole
    table's fingerprint, the ε asked for is checked against what is left before the model is fitted, and the cost
    the core reports is charged after; a refusal or a failure leaves the ledger as it was.
Files
    The synthetic table (CSV, formula cells escaped as every CSV download of the app) and its recipe (the step
    ``synthesize`` with the seed recorded, so that it re-runs) wait in a disk cache under a random token
    (:class:`SyntheticFiles`), with the section the release report prints (seed withheld).
"""

from __future__ import annotations

import math
import re
import secrets
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from privdash.application.attack import AttackRow, attack_rows, fix_release
from privdash.application.dp_release import ledger_for, table_keys
from privdash.application.fixes import FixError
from privdash.application.fixruns import FixRuns
from privdash.application.formats import fmt_count
from privdash.application.report.synthetic import METHOD_NAMES
from privdash.application.services import LoadedDataset, Services
from privdash.application.state import ViewState
from privdash.attack import AttackReport, attack_release
from privdash.constants import SYNTHESIS_METHODS
from privdash.data.contract import ColumnRole
from privdash.data.tables import csv_text
from privdash.dp import DatasetAccount, PrivacyBudget, check_identity
from privdash.errors import ColumnError, ParameterError, PrivdashError
from privdash.transform.steps import Recipe, apply_recipe
from privdash.utility.estimates import Estimate

if TYPE_CHECKING:
    from privdash.application.report.synthetic import SyntheticSection
    from privdash.application.synthesis import SyntheticEvaluation
    from privdash.synthesis import SynthesisSettings, SyntheticRelease

__all__ = [
    "METHODS",
    "ROWS",
    "ComparedRelease",
    "SyntheticFiles",
    "SyntheticOutcome",
    "SyntheticRequest",
    "default_columns",
    "parse_bounds",
    "recipe_json",
    "synthesize_state",
]

#: The methods offered: value -> label (the values are the core's :data:`~privdash.constants.SYNTHESIS_METHODS`).
METHODS: Mapping[str, str] = {
    "partial": "Partially synthetic: new values for the records at risk, or for chosen columns",
    "full": "Fully synthetic: every record drawn from a model",
    "hybrid": "Hybrid: a share of the records replaced by synthetic ones",
    "dp": "Differentially private synthetic (charged to the privacy budget)",
}
#: Which records a partially synthetic release changes: value -> label.
ROWS: Mapping[str, str] = {"at_risk": "Records at risk (in classes smaller than k)", "all": "Every record"}
#: The share of the records held out as control records by default, and the range accepted.
CONTROL_SHARE, CONTROL_RANGE = 0.2, (0.05, 0.5)
#: The seed of the training / control split and of the attacks' sampling: fixed, as ``privdash synthesize`` fixes
#: it, so that the page and the command line measure the same release alike.
MEASUREMENT_SEED = 0
#: How the ledger names a synthetic release.
LEDGER_QUERY = "synthetic table"
ProgressFn = Callable[[int, str], None]

assert set(METHODS) == set(SYNTHESIS_METHODS), "a synthesis method without its label"


# --- the form ------------------------------------------------------------------------------------------------------


def _number(value: Any, what: str, example: str) -> float:
    """A finite number from a form field (a number, or text such as ``1e-6``); a message naming the field."""
    if isinstance(value, bool) or value is None or (isinstance(value, str) and not value.strip()):
        raise ParameterError(f"Give {what} (e.g. {example}).")
    try:
        number = float(str(value).strip()) if isinstance(value, str) else float(value)
    except (TypeError, ValueError):
        raise ParameterError(f"{what[0].upper()}{what[1:]} must be a number (e.g. {example}), got {value!r}.") from None
    if not math.isfinite(number):
        raise ParameterError(f"{what[0].upper()}{what[1:]} must be a finite number, got {value!r}.")
    return number


def _whole(value: Any, what: str, example: str, *, low: int) -> int:
    number = _number(value, what, example)
    if not number.is_integer() or number < low:
        raise ParameterError(f"{what[0].upper()}{what[1:]} must be a whole number of at least {low}, got {value!r}.")
    return int(number)


_BOUND = re.compile(r"^\s*(?P<column>.+?)\s*=\s*(?P<low>[^:]+?)\s*:\s*(?P<high>[^:]+?)\s*$")


def parse_bounds(text: str | None, columns: Sequence[str]) -> dict[str, tuple[float, float]]:
    """The declared bounds typed by the steward, ``column=low:high``, one a line or separated by commas (the CLI's
    ``--bounds`` syntax); :class:`ParameterError` naming the entry that cannot be read, :class:`ColumnError` for a
    column the dataset does not have."""
    bounds: dict[str, tuple[float, float]] = {}
    raw = str(text or "")
    parts = [part for line in raw.splitlines() for part in line.split(",")]
    for part in (part.strip() for part in parts):
        if not part:
            continue
        match = _BOUND.match(part)
        if match is None:
            raise ParameterError(f"Cannot read the bounds {part!r}: write column=low:high, e.g. age=17:90.")
        column = match["column"]
        if column not in columns:
            raise ColumnError(f"The bounds name a column the dataset does not have: '{column}'.")
        low = _number(match["low"], f"the lower bound of '{column}'", "17")
        high = _number(match["high"], f"the upper bound of '{column}'", "90")
        if low >= high:
            raise ParameterError(f"The bounds of '{column}' need low < high, got {low:g}:{high:g}.")
        bounds[column] = (low, high)
    return bounds


@dataclass(frozen=True)
class SyntheticRequest:
    """The section's form, checked: the core's settings and what the page adds (the share of control records, the
    population a DP release is charged to)."""

    settings: SynthesisSettings
    control_share: float = CONTROL_SHARE
    identity: str | None = None
    distinct: bool = False
    max_rows_per_person: int | None = None

    @classmethod
    def from_form(
        cls,
        columns: Sequence[str],
        *,
        method: Any,
        chosen: Any = None,
        rows: Any = "at_risk",
        k: Any = 5,
        share: Any = 0.5,
        epsilon: Any = None,
        delta: Any = 1e-6,
        bounds: Any = None,
        control_share: Any = CONTROL_SHARE,
        seed: Any = None,
        identity: Any = None,
        distinct: Any = False,
        max_rows: Any = None,
    ) -> SyntheticRequest:
        """Check the form's values against the dataset's ``columns``; :class:`ParameterError` (or
        :class:`ColumnError`) with a message that names the field to correct. The core checks the rest (a table
        too small for the model, columns of one value, a budget too small) when the release is made."""
        from privdash.synthesis import SynthesisSettings

        if method not in SYNTHESIS_METHODS:
            raise ParameterError("Choose a method: partially, fully, hybrid or differentially private synthetic.")
        picked = tuple(str(name) for name in (chosen or ()))
        unknown = [name for name in picked if name not in columns]
        if unknown:
            raise ColumnError(f"The dataset has no column {', '.join(repr(name) for name in unknown)}.")
        if rows not in ROWS:
            raise ParameterError("Choose which records a partially synthetic release changes: at risk, or all.")
        control = _number(control_share, "the share of control records", "0.2")
        if not CONTROL_RANGE[0] <= control <= CONTROL_RANGE[1]:
            raise ParameterError(
                f"The share of control records must be between {CONTROL_RANGE[0]:g} and {CONTROL_RANGE[1]:g}, got "
                f"{control:g}: they are held out of the model to measure the attacks' baseline."
            )
        options: dict[str, Any] = {"method": str(method), "columns": picked or None}
        if seed is not None and str(seed).strip():
            options["seed"] = _whole(seed, "the seed", "42", low=0)
        if method == "partial":
            options["rows"] = str(rows)
            options["k"] = _whole(k, "k (the records at risk are in classes smaller than k)", "5", low=2)
        if method == "hybrid":
            value = _number(share, "the share of records replaced", "0.5")
            if not 0 < value <= 1:
                raise ParameterError(f"The share of records replaced must be above 0 and at most 1, got {value:g}.")
            options["share"] = value
        population = bound = None
        if method == "dp":
            if max_rows is not None and str(max_rows).strip():
                bound = _whole(max_rows, "the rows kept per person", "3", low=1)
            eps = _number(epsilon, "ε (epsilon)", "1")
            if eps <= 0:
                raise ParameterError(
                    f"ε (epsilon) must be above 0, got {eps:g}: it is the privacy loss of the release."
                )
            dlt = _number(delta if delta not in (None, "") else 0.0, "δ (delta)", "1e-6")
            if not 0 <= dlt < 1:
                raise ParameterError(f"δ (delta) must be at least 0 and below 1, got {dlt:g}; e.g. 1e-6.")
            options |= {"epsilon": eps, "delta": dlt, "bounds": parse_bounds(bounds, columns) or None}
            if identity is not None and str(identity).strip():
                population = check_identity(identity)
        return cls(SynthesisSettings(**options), control, population, bool(distinct), bound)


#: Roles never modelled: a name or an e-mail address is not data to model, a household id drawn record by record
#: describes no household, and a person id is no synthetic record's (the person id still splits the control
#: records and bounds a DP release's rows per person).
NOT_MODELLED = (ColumnRole.IDENTIFIER, ColumnRole.HOUSEHOLD, ColumnRole.ENTITY)


def default_columns(loaded: LoadedDataset, services: Services, state: ViewState) -> list[str]:
    """The columns a synthetic table models by default: every column but direct identifiers, the household id and
    the person id (:data:`NOT_MODELLED`); they are left out of the release."""
    try:
        contract = services.contract(loaded, state)
    except PrivdashError:
        return list(map(str, loaded.columns))
    return [f.name for f in contract.fields if f.role not in NOT_MODELLED and f.name in loaded.columns]


# --- the outcome ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class ComparedRelease:
    """One release of the comparison: its name, its attacks (against the same control records) and the page's
    rows for them."""

    key: str
    label: str
    report: AttackReport
    rows: tuple[AttackRow, ...]


@dataclass(frozen=True, eq=False)
class SyntheticOutcome:
    """A synthetic release made from the page, its evaluation and what it is compared with.

    ``compared`` holds the releases side by side: the training table itself (no protection), the page's
    generalized fix when it has steps, and the synthetic table. ``notes`` say what could not be compared and why.
    ``identity`` and ``account`` are the population a DP release was charged to and its account after the charge
    (None for the other methods); ``warnings`` are the ledger's (a near copy).
    """

    evaluation: SyntheticEvaluation
    request: SyntheticRequest
    dataset: str
    training_rows: int
    control_rows: int
    compared: tuple[ComparedRelease, ...]
    notes: tuple[str, ...] = ()
    identity: str | None = None
    account: DatasetAccount | None = None
    warnings: tuple[str, ...] = ()
    fix_label: str | None = None
    columns_left_out: tuple[str, ...] = field(default=())
    quasi_identifiers: tuple[str, ...] = ()

    @property
    def release(self) -> SyntheticRelease:
        return self.evaluation.release

    @property
    def headline(self) -> str:
        release = self.release
        return (
            f"A {METHOD_NAMES.get(release.settings.method, release.settings.method)} release of "
            f"{fmt_count(len(release.table))} records "
            f"made from {fmt_count(self.training_rows)} training records; {fmt_count(self.control_rows)} control "
            f"records were held out of the model to measure the attacks' baseline. {fmt_count(release.rows_replaced)}"
            f" records ({fmt_count(release.cells_replaced)} values) are synthetic; {release.seconds:.1f} s."
        )


def recipe_json(release: SyntheticRelease, quasi_identifiers: Sequence[str] = ()) -> str:
    """The release's recipe: one ``synthesize`` step with the settings, the quasi-identifiers and the seed used, as
    ``privdash synthesize --recipe-out`` writes it (``privdash synthesize --recipe`` re-makes the release)."""
    from privdash.synthesis.step import synthesis_step

    return Recipe((synthesis_step(release.settings, tuple(quasi_identifiers)),)).to_json()


def _dp_charge(
    services: Services, loaded: LoadedDataset, request: SyntheticRequest, run: Callable[[], SyntheticRelease]
) -> tuple[SyntheticRelease, str, DatasetAccount, tuple[str, ...]]:
    """Make a DP release with ``run`` and charge its cost to the dataset's ledger (see the module docstring)."""
    settings = request.settings
    assert settings.epsilon is not None  # from_form asks for it
    ledger = ledger_for(services)
    asked = PrivacyBudget(settings.epsilon, settings.delta)

    def cost(release: SyntheticRelease) -> PrivacyBudget:
        return release.privacy if release.privacy is not None else asked

    def columns(release: SyntheticRelease) -> tuple[str, ...]:
        return tuple(map(str, release.table.columns))

    outcome = ledger.spend(
        table_keys(services, loaded),
        asked,
        run,
        cost=cost,
        query=LEDGER_QUERY,
        columns=columns,
        mechanism=lambda release: release.model.split(",")[0][:60],
        identity=request.identity,
        distinct=request.distinct,
    )
    return outcome.result, outcome.identity, outcome.account, outcome.warnings


def _fix_compared(
    services: Services,
    state: ViewState,
    training: pd.DataFrame,
    control: pd.DataFrame,
    qis: Sequence[str],
    sensitive: str | None,
    seed: int,
) -> tuple[ComparedRelease | None, str | None]:
    """The page's generalized fix re-applied to the training records and attacked with the control records; or why
    it is left out."""
    if not state.fix:
        return None, "The page has no fix step: add generalization steps above to compare a generalized release."
    runs = FixRuns(services)
    try:
        release = fix_release(runs, state)
        if release.recipe is None:
            return None, "The page's fix steps make no recipe to re-apply to the training records."
        published, _results = apply_recipe(training, release.recipe, secrets={"key": services.settings.pseudonym_key})
        kept = [name for name in published.columns if name in training.columns]
        report = attack_release(
            training,
            published[kept],
            [name for name in qis if name in kept],
            sensitive=sensitive if sensitive in kept else None,
            control=control,
            recipe=release.recipe,
            seed=seed,
            allow_unmatched=True,
        )
    except (PrivdashError, FixError) as exc:
        return None, f"The page's fix could not be compared: {exc}"
    label = release.label.replace("The fix previewed above", "The generalized fix of the page")
    return ComparedRelease("fix", label, report, attack_rows(report)), None


def synthesize_state(
    services: Services,
    state: ViewState,
    request: SyntheticRequest,
    *,
    estimates: Sequence[Estimate | str] = (),
    progress: ProgressFn | None = None,
) -> SyntheticOutcome:
    """Make the synthetic release ``request`` of the state's dataset and judge it (see the module docstring).
    Raises ``PrivdashError`` with a message for the page; a DP release that is refused charges nothing."""
    from privdash.application.synthesis import evaluate_synthetic
    from privdash.synthesis import split_control, synthesize

    say: ProgressFn = progress or (lambda _percent, _text: None)
    if not state.dataset:
        raise FixError("No dataset is open.")
    loaded = services.dataset(state.dataset)
    loaded.require_rows("A synthetic release")
    contract = services.contract(loaded, state)
    qis = list(contract.quasi_identifiers)
    if not qis:
        raise PrivdashError(
            "Mark the quasi-identifiers on the Risk page first: the attacks that judge the release use them."
        )
    sensitive = contract.sensitive[0] if contract.sensitive else None
    entity = contract.entity
    settings = replace(
        request.settings,
        entity=entity,
        max_rows_per_person=request.max_rows_per_person if entity is not None else None,
    )
    modelled = list(settings.columns) if settings.columns and settings.method != "partial" else None
    identifiers = [f.name for f in contract.fields if f.role == ColumnRole.IDENTIFIER]
    if settings.method != "partial" and modelled is None:
        left_out = {f.name for f in contract.fields if f.role in NOT_MODELLED}
        modelled = [name for name in map(str, loaded.columns) if name not in left_out]
        settings = replace(settings, columns=tuple(modelled))
    if modelled is None:  # partial: every other value is kept, but never a direct identifier
        kept = [name for name in map(str, loaded.columns) if name not in identifiers]
        replaced = [name for name in settings.columns or () if name in identifiers]
        if replaced:
            raise ColumnError(
                f"{', '.join(repr(name) for name in replaced)} identifies people directly: it is left out of a "
                "synthetic release, not replaced. Choose other columns."
            )
        table = loaded.frame[kept]
    else:
        # The person id goes along (not modelled): it splits the control records and bounds a DP release.
        table = loaded.frame[[*modelled, *([entity] if entity is not None and entity not in modelled else [])]]
    if settings.bounds and modelled is not None:  # the form's bounds of columns left out of this release
        settings = replace(settings, bounds={c: b for c, b in settings.bounds.items() if c in modelled} or None)
    qis = [name for name in qis if name in table.columns]
    if not qis:
        raise ColumnError("The columns modelled hold no quasi-identifier: the attacks could not be measured.")
    if sensitive is not None and sensitive not in table.columns:
        sensitive = None
    seed = settings.seed if settings.seed is not None else secrets.randbelow(2**31)
    settings = replace(settings, seed=seed)
    say(2, "Holding out the control records ...")
    training, control = split_control(table, share=request.control_share, seed=MEASUREMENT_SEED, entity=entity)

    def fraction(start: int, end: int) -> Callable[[float, str], None]:
        return lambda share, text: say(int(start + (end - start) * max(0.0, min(1.0, share))), text)

    def run() -> SyntheticRelease:
        return synthesize(training, settings, quasi_identifiers=qis, progress=fraction(5, 60))

    identity = account = None
    warnings: tuple[str, ...] = ()
    say(5, "Fitting the model ...")
    if settings.method == "dp":
        release, identity, account, warnings = _dp_charge(services, loaded, replace(request, settings=settings), run)
    else:
        release = run()
    say(60, "Attacking the synthetic table ...")
    evaluation = evaluate_synthetic(
        training,
        release,
        control=control,
        quasi_identifiers=qis,
        sensitive=sensitive,
        estimates=estimates,
        seed=MEASUREMENT_SEED,
        progress=fraction(60, 90),
        weights=contract.weight if contract.weight in table.columns else None,
    )
    compared: list[ComparedRelease] = []
    if evaluation.original_attacks is not None:
        original = evaluation.original_attacks
        compared.append(
            ComparedRelease(
                "original", "The training records themselves (no protection)", original, attack_rows(original)
            )
        )
    say(90, "Attacking the page's generalized fix ...")
    fix, note = _fix_compared(services, state, training, control, qis, sensitive, MEASUREMENT_SEED)
    if fix is not None:
        compared.append(fix)
    compared.append(
        ComparedRelease("synthetic", "The synthetic table", evaluation.attacks, attack_rows(evaluation.attacks))
    )
    say(100, "Done.")
    return SyntheticOutcome(
        evaluation=evaluation,
        request=replace(request, settings=settings),
        dataset=loaded.title,
        training_rows=len(training),
        control_rows=len(control),
        compared=tuple(compared),
        notes=(note,) if note else (),
        identity=identity,
        account=account,
        warnings=warnings,
        fix_label=None if fix is None else fix.label,
        columns_left_out=tuple(name for name in map(str, loaded.columns) if name not in table.columns),
        quasi_identifiers=tuple(qis),
    )


# --- the files -----------------------------------------------------------------------------------------------------


def _stem(title: str) -> str:
    stem = re.sub(r"[^A-Za-z0-9._-]+", "-", Path(title).stem).strip("-.")[:60]
    return stem or "data"


class SyntheticFiles:
    """Synthetic releases made from the page, waiting for their download and for the report, in a disk cache that
    every worker process and background job opens (``<cache_dir>/synthetic``), under a random 128-bit token, for
    ``ttl`` seconds: the CSV, the recipe, and the report's section."""

    def __init__(self, folder: str | Path, *, ttl: float) -> None:
        self.folder = Path(folder)
        self.ttl = ttl

    @classmethod
    def of(cls, services: Services) -> SyntheticFiles:
        return cls(services.settings.cache_dir / "synthetic", ttl=services.settings.store_ttl)

    def _cache(self) -> Any:
        import diskcache

        self.folder.mkdir(parents=True, exist_ok=True)
        return diskcache.Cache(str(self.folder), size_limit=2**30)

    def put(self, outcome: SyntheticOutcome) -> str:
        """Keep the release's files and report section; returns the token that fetches them."""
        from privdash.application.report.synthetic import synthetic_section

        stem = f"{_stem(outcome.dataset)}-synthetic-{outcome.release.settings.method}"
        entry = {
            "csv": (f"{stem}.csv", csv_text(outcome.release.table).encode("utf-8")),
            "recipe": (
                f"{stem}-recipe.json",
                (recipe_json(outcome.release, outcome.quasi_identifiers) + "\n").encode("utf-8"),
            ),
            "section": synthetic_section(outcome),
        }
        token = secrets.token_urlsafe(16)
        with self._cache() as cache:
            cache.set(token, entry, expire=self.ttl)
        return token

    def _entry(self, token: str) -> dict[str, Any]:
        with self._cache() as cache:
            entry = cache.get(str(token))
        if not isinstance(entry, dict):
            raise PrivdashError("This synthetic release has expired; make it again.")
        return entry

    def get(self, token: str, kind: str) -> tuple[str, bytes]:
        """The file name and content of the release's ``csv`` or ``recipe``; ``PrivdashError`` once expired."""
        entry = self._entry(token)
        if kind not in ("csv", "recipe"):
            raise PrivdashError(f"Unknown download {kind!r}.")
        name, content = entry[kind]
        return str(name), bytes(content)

    def section(self, token: str) -> SyntheticSection:
        """The report's section of the release kept under ``token``; ``PrivdashError`` once expired."""
        section: SyntheticSection = self._entry(token)["section"]
        return section
