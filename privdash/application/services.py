"""What the pages need from the server: datasets (uploaded or built-in) and contracts built from the view state.

A :class:`Services` object is made once per app by the factory; page callbacks receive it, so there is no module
state and several apps (tests) can live in one process.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import diskcache
import pandas as pd

from privdash.application.cache import BoundedCache, disk_cache
from privdash.application.links import LinkStore
from privdash.application.postcodes import PostcodeReference
from privdash.application.settings import READ_LIMIT_VARIABLES, Settings
from privdash.application.sources import SOURCE_PREFIX, ServerSource, SourceError, load_sources, preview
from privdash.application.state import (
    DATASET_ID,
    StateError,
    ViewState,
    apply_order_permutation,
    order_permutation,
    sorted_labels,
)
from privdash.application.storage import (
    ClientLedger,
    DatasetInfo,
    DatasetNotFound,
    DatasetStore,
    Quota,
    RateLimited,
    owner_digest,
)
from privdash.data.contract import (
    ColumnRole,
    DataContract,
    FieldMetadata,
    StatisticalType,
    suggest_contract,
    suggest_roles,
)
from privdash.data.demo import demo_datasets
from privdash.data.tables import ReadLimits, read_table_with_info
from privdash.errors import ContractError, PrivdashError
from privdash.measure.diagnose import Diagnosis, diagnose

__all__ = ["DEMO_PREFIX", "LoadedDataset", "Services", "clean_filename", "too_large_message"]

DEMO_PREFIX = "demo:"
#: Rows of a server-side source read for its preview and role suggestions.
PREVIEW_ROWS = 5_000
#: Ordinal columns may list at most this many values (the order editor shows them all).
MAX_ORDINAL_VALUES = 200


@dataclass(frozen=True, eq=False)
class LoadedDataset:
    """A table ready for the pages, with the contract it came with (suggested or shipped)."""

    id: str
    title: str
    frame: pd.DataFrame
    contract: DataContract
    reasons: Mapping[str, str] = field(default_factory=dict)
    is_demo: bool = False
    expires: float | None = None
    #: What distinguishes this content from an earlier one under the same id (an upload's creation time; a demo's
    #: is fixed): part of every cache key that depends on the table.
    version: str = "builtin"
    #: For an uploaded workbook: the sheet that was read, and all of its sheets (another can be read while the
    #: upload is kept). Empty for other files.
    sheet: str | None = None
    sheets: tuple[str, ...] = ()
    #: What the reader reported about the file (e.g. which sheet of several it read).
    notes: tuple[str, ...] = ()
    #: For a server-side source: where it lives. ``frame`` then holds only a preview of its first rows, and the
    #: numbers are computed by the source's engine (:meth:`Services.diagnosis`).
    source: ServerSource | None = None

    def require_rows(self, action: str) -> None:
        """Raise :class:`SourceError` when ``action`` needs every row in memory and this is a server-side source."""
        if self.source is not None:
            raise SourceError(
                f"{action} needs every row in the server's memory; '{self.title}' is a server-side source that is "
                "diagnosed where it lives. Fix it out of core with: privdash anonymize SOURCE --engine duckdb ... "
                "-o fixed.parquet"
            )

    @property
    def columns(self) -> tuple[str, ...]:
        return tuple(str(c) for c in self.frame.columns)


class Services:
    """Datasets and contracts for one app."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.store = DatasetStore(
            settings.store_dir,
            ttl=settings.store_ttl,
            cache_items=settings.cache_items,
            quota=Quota(
                settings.session_max_bytes,
                settings.session_max_datasets,
                settings.store_max_bytes,
                client_bytes=settings.client_max_bytes,
                client_datasets=settings.client_max_datasets,
            ),
            sweep_interval=settings.sweep_interval,
        )
        #: What each client address did recently (uploads, new long links), for the per-client limits; the web
        #: app sets :attr:`client` to the digest of the current request's address.
        self.clients = ClientLedger(settings.store_dir / "clients", threading.Lock(), keep=settings.store_ttl)
        self.client: Callable[[], str] = lambda: ""
        #: Long view states of share links, kept beside the uploads with the same lifetime and swept with them.
        self.links = LinkStore(
            settings.store_dir / "links",
            ttl=settings.store_ttl,
            ledger=self.clients,
            client_max_links=settings.client_max_links,
            client=lambda: self.client(),
        )
        self.store.companions.append(self.links)
        self.store.companions.append(self.clients)
        #: The worker's one result cache (see :mod:`privdash.application.cache`): demo tables, column profiles,
        #: diagnoses, per-class tables, fix runs, postcode reference data. Keys start with a namespace and name the
        #: dataset by its id and version, never by ``id()`` of an object.
        self.cache = BoundedCache(256, max_bytes=settings.cache_bytes)
        #: Server-side sources the administrator allows (``PRIVDASH_SOURCES``), by name.
        self.sources = load_sources(settings.sources_file)
        #: The Postcodes page's census populations, polygons and mappings, kept in :attr:`cache`.
        self.postcodes = PostcodeReference(settings.data_dir, self.cache, polygon_cache=settings.geo_cache_dir)

    # --- datasets ---------------------------------------------------------------------------------------------------

    def demo_choices(self) -> list[dict[str, str]]:
        """The built-in datasets and the server-side sources for a picker: ``value`` is the dataset id, ``label`` its
        title."""
        builtin = demo_datasets(self.settings.data_dir)
        demos = [{"value": DEMO_PREFIX + name, "label": demo.title} for name, demo in builtin.items()]
        sources = [
            {"value": source.dataset_id, "label": f"{source.title} (server source: {source.describe()})"}
            for source in self.sources.values()
        ]
        return demos + sources

    def dataset(self, dataset_id: str) -> LoadedDataset:
        """The dataset with this id; raises :class:`DatasetNotFound` with a message for the page.

        An id that has neither form (``demo:<name>``, an upload's token) is refused before anything is looked up.
        """
        if not isinstance(dataset_id, str) or not DATASET_ID.fullmatch(dataset_id):
            raise DatasetNotFound("This link does not name a valid dataset; open one from the Data page.")
        if dataset_id.startswith(DEMO_PREFIX):
            return self._demo(dataset_id)
        if dataset_id.startswith(SOURCE_PREFIX):
            return self._source(dataset_id)
        info = self.store.info(dataset_id)
        frame = self.store.load(dataset_id)
        try:
            contract = DataContract.from_dict(info.contract)
        except ContractError:
            contract = suggest_contract(frame)
        return LoadedDataset(
            id=dataset_id,
            title=info.filename,
            frame=frame,
            contract=contract,
            reasons=dict(info.reasons),
            expires=info.expires,
            version=repr(info.created),
            sheet=info.sheet,
            sheets=info.sheets,
            notes=info.notes,
        )

    def _demo(self, dataset_id: str) -> LoadedDataset:
        name = dataset_id[len(DEMO_PREFIX) :]
        demos = demo_datasets(self.settings.data_dir)
        if name not in demos:
            raise DatasetNotFound(f"There is no built-in dataset '{name[:80]}'; pick one from the list.")
        demo = demos[name]

        def build() -> LoadedDataset:
            frame = demo.load()
            reasons = {s.name: s.reason for s in suggest_roles(frame)}
            return LoadedDataset(
                id=dataset_id, title=demo.title, frame=frame, contract=demo.contract(), reasons=reasons, is_demo=True
            )

        loaded: LoadedDataset = self.cache.get_or_build(("demo", dataset_id), build)
        return loaded

    def _source(self, dataset_id: str) -> LoadedDataset:
        name = dataset_id[len(SOURCE_PREFIX) :]
        source = self.sources.get(name)
        if source is None:
            raise DatasetNotFound(f"There is no server-side source '{name[:80]}'; pick one from the list.")

        def build() -> LoadedDataset:
            frame = preview(source, PREVIEW_ROWS)
            suggestions = suggest_roles(frame)
            return LoadedDataset(
                id=dataset_id,
                title=source.title,
                frame=frame,
                contract=contract_from_suggestions(frame, suggestions),
                reasons={s.name: s.reason for s in suggestions},
                version="source",
                notes=(f"Preview of the first {len(frame):,} rows; every number is computed over the whole source.",),
                source=source,
            )

        loaded: LoadedDataset = self.cache.get_or_build(("source", dataset_id), build)
        return loaded

    def ingest(
        self,
        raw: bytes,
        *,
        filename: str,
        session: str,
        sheet: str | None = None,
        replaces: str | None = None,
    ) -> DatasetInfo:
        """Read an uploaded file, suggest its contract and store it.

        ``sheet`` picks a workbook's sheet (default: the first). ``replaces`` names a dataset of the same session
        that the new one replaces (another sheet of the same workbook): it is deleted once the new one is stored,
        and does not count against the session's quota meanwhile. Raises ``DataReadError`` for bad files (over a
        reading limit too) and :class:`~privdash.application.storage.QuotaExceeded` when the store is full.
        """
        filename = clean_filename(filename)
        client = self.client()
        self.store.check_quota(session, replaces=replaces, client=client)
        if client and not self.clients.admit(
            client, "upload", limit=self.settings.client_uploads_per_hour, window=3600.0
        ):
            raise RateLimited(
                f"Your network address sent {self.settings.client_uploads_per_hour:,} uploads in the last hour, the "
                "most one address may (PRIVDASH_CLIENT_UPLOADS_PER_HOUR); try again later."
            )
        frame, info = read_table_with_info(
            raw, filename=filename, max_bytes=self.settings.max_upload_bytes, sheet=sheet, limits=self.read_limits
        )
        suggestions = suggest_roles(frame)
        return self.store.save(
            frame,
            session=session,
            filename=filename,
            contract=contract_from_suggestions(frame, suggestions).to_dict(),
            reasons={s.name: s.reason for s in suggestions},
            original=raw,
            sheet=info.sheet,
            sheets=info.sheets,
            notes=info.notes,
            replaces=replaces,
            client=client,
        )

    @property
    def read_limits(self) -> ReadLimits:
        """The reading limits of an upload (from the settings; their variables are cited in the messages)."""
        settings = self.settings
        return ReadLimits(
            max_rows=settings.max_rows,
            max_columns=settings.max_columns,
            max_cells=settings.max_cells,
            max_decompressed_bytes=settings.max_decompressed_bytes,
            max_seconds=settings.max_parse_seconds,
            setting_names=READ_LIMIT_VARIABLES,
        )

    def read_sheet(self, dataset_id: str, sheet: str, *, session: str) -> DatasetInfo:
        """Read another sheet of an uploaded workbook (its bytes are kept when it has several sheets).

        The new dataset replaces the old one when this session uploaded it; opened from someone else's link, the
        session gets its own copy.
        """
        info = self.store.info(dataset_id)
        if sheet not in info.sheets:
            raise DatasetNotFound(f"{info.filename} has no sheet '{sheet[:80]}'.")
        original = self.store.original(dataset_id)
        mine = info.owner == owner_digest(session)
        return self.ingest(
            original, filename=info.filename, session=session, sheet=sheet, replaces=dataset_id if mine else None
        )

    def profile(self, loaded: LoadedDataset) -> dict[str, dict[str, str]]:
        """Per-column display statistics (missing, distinct, examples), computed once per dataset and process."""
        profile: dict[str, dict[str, str]] = self.cache.get_or_build(
            ("profile", loaded.id, loaded.version), lambda: column_profile(loaded.frame)
        )
        return profile

    # --- diagnosis ---------------------------------------------------------------------------------------------

    def diagnosis(self, state: ViewState, *, k_values: tuple[int, ...] | None = None) -> Diagnosis:
        """The core diagnosis of the state's dataset, roles, missing-value policy and risk threshold.

        Kept in a small per-process cache keyed by everything the result depends on, so callbacks that read
        the same view (page, class table blocks) compute it once. Raises ``PrivdashError`` subclasses with a
        message for the page (no quasi-identifier, a contract that does not fit the data, ...).
        """
        if not state.dataset:
            raise DatasetNotFound("No dataset is open.")
        loaded = self.dataset(state.dataset)
        contract = self.contract(loaded, state)
        ks = k_values or default_k_values(state.k)
        key = self._diagnosis_key(loaded, contract, state, ks)

        def build() -> Diagnosis:
            if loaded.source is not None:  # counted where the source lives; only the aggregate comes back
                return self._source_diagnosis(key, loaded.source, contract, state, ks)
            return diagnose(
                loaded.frame,
                contract=contract,
                missing=state.missing,
                max_risk=state.max_risk,
                k_values=ks,
                model_risk=state.model_risk,
            )

        result: Diagnosis = self.cache.get_or_build(key, build)
        return result

    def diagnosis_ready(self, state: ViewState) -> bool:
        """Whether :meth:`diagnosis` of ``state`` answers at once: always for tables in memory; for a server-side
        source, once a worker or a background job has counted it (kept on disk, shared by every process)."""
        if not state.dataset or not state.dataset.startswith(SOURCE_PREFIX):
            return True
        try:
            loaded = self.dataset(state.dataset)
            key = self._diagnosis_key(loaded, self.contract(loaded, state), state, default_k_values(state.k))
        except PrivdashError:
            return True  # the page shows the error at once
        return self.cache.get(key) is not None or self._source_disk_key(key) in self._source_disk

    @property
    def _source_disk(self) -> diskcache.Cache:
        return disk_cache(Path(self.settings.cache_dir) / "source-diagnoses")

    @staticmethod
    def _source_disk_key(key: tuple[Any, ...]) -> str:
        return hashlib.sha256(json.dumps(key, default=str).encode()).hexdigest()

    def _source_diagnosis(
        self,
        key: tuple[Any, ...],
        source: ServerSource,
        contract: DataContract,
        state: ViewState,
        ks: tuple[int, ...],
    ) -> Diagnosis:
        """A source's diagnosis from the disk cache, or counted by its engine and kept there for ``store_ttl``."""
        disk_key = self._source_disk_key(key)
        kept = self._source_disk.get(disk_key)
        if isinstance(kept, Diagnosis):
            return kept
        result = diagnose(
            source.location,
            contract=contract,
            missing=state.missing,
            max_risk=state.max_risk,
            k_values=ks,
            model_risk=state.model_risk,
            **source.engine_options(),
        )
        self._source_disk.set(disk_key, result, expire=self.settings.store_ttl)
        return result

    @staticmethod
    def _diagnosis_key(
        loaded: LoadedDataset, contract: DataContract, state: ViewState, ks: tuple[int, ...]
    ) -> tuple[Any, ...]:
        return (
            "diagnosis",
            loaded.id,
            loaded.version,
            contract.to_json(indent=None),
            state.missing.value,
            state.max_risk,
            ks,
            state.model_risk,
        )

    # --- state <-> contract -----------------------------------------------------------------------------------

    def initial_state(self, loaded: LoadedDataset, base: ViewState | None = None) -> ViewState:
        """The view state of a freshly opened dataset: its contract's roles and types, other settings kept."""
        return state_from_contract(loaded, loaded.contract, base or ViewState())

    def contract(self, loaded: LoadedDataset, state: ViewState) -> DataContract:
        """The data contract the state describes for ``loaded`` (columns the state does not name keep theirs)."""
        return contract_from_state(loaded, state)


def state_from_contract(loaded: LoadedDataset, contract: DataContract, base: ViewState) -> ViewState:
    """``base`` with roles, types and orders taken from ``contract`` (columns it does not list keep theirs)."""
    roles: dict[str, ColumnRole] = {}
    types: dict[str, StatisticalType] = {}
    orders: dict[str, tuple[int, ...]] = {}
    current = contract_from_state(loaded, base) if base.dataset == loaded.id else loaded.contract
    for name in loaded.columns:
        item = contract[name] if name in contract else (current[name] if name in current else FieldMetadata(name))
        roles[name] = item.role
        types[name] = item.statistical_type
        if item.statistical_type == StatisticalType.ORDINAL and item.ordinal_values is not None:
            reference = reference_values(loaded, name)
            declared = {str(v) for v in item.ordinal_values}
            known = {str(v) for v in reference}
            order = [v for v in item.ordinal_values if str(v) in known]
            order += [v for v in sorted_labels(reference) if str(v) not in declared]
            orders[name] = order_permutation(order, reference)
    return base.updated(dataset=loaded.id, roles=roles, types=types, orders=orders)


def contract_from_state(loaded: LoadedDataset, state: ViewState) -> DataContract:
    """Build the data contract of ``state``; raises :class:`StateError` when it does not fit the data."""
    fields = []
    for name in loaded.columns:
        base = loaded.contract[name] if name in loaded.contract else FieldMetadata(name)
        role = state.roles.get(name, base.role)
        kind = state.types.get(name, base.statistical_type)
        ordinal: tuple[Any, ...] | None = None
        if kind == StatisticalType.ORDINAL:
            values = reference_values(loaded, name)
            if name in state.orders:
                ordinal = tuple(apply_order_permutation(state.orders[name], values))
            elif base.ordinal_values is not None:
                ordinal = tuple(base.ordinal_values)
            else:
                ordinal = tuple(default_order(values, name))
        fields.append(FieldMetadata(name, ColumnRole(role), StatisticalType(kind), ordinal))
    try:
        return DataContract(tuple(fields))
    except ContractError as exc:
        raise StateError(str(exc)) from exc


class _Suggested(Protocol):
    """A role suggestion of :func:`~privdash.data.contract.suggest_roles`."""

    @property
    def name(self) -> str: ...

    @property
    def role(self) -> ColumnRole: ...


def contract_from_suggestions(frame: pd.DataFrame, suggestions: Sequence[_Suggested]) -> DataContract:
    """The contract :func:`~privdash.data.contract.suggest_contract` gives, from suggestions already made
    (suggesting roles looks at every column: on a wide table, doing it once instead of twice saves seconds)."""
    names: dict[ColumnRole, list[str]] = {role: [] for role in ColumnRole}
    for suggestion in suggestions:
        names[suggestion.role].append(suggestion.name)
    if any(len(names[role]) > 1 for role in (ColumnRole.WEIGHT, ColumnRole.HOUSEHOLD, ColumnRole.ENTITY)):
        return suggest_contract(frame)
    return DataContract.for_columns(
        frame,
        quasi_identifiers=names[ColumnRole.QUASI_IDENTIFIER],
        sensitive=names[ColumnRole.SENSITIVE],
        identifiers=names[ColumnRole.IDENTIFIER],
        weight=next(iter(names[ColumnRole.WEIGHT]), None),
        household=next(iter(names[ColumnRole.HOUSEHOLD]), None),
        entity=next(iter(names[ColumnRole.ENTITY]), None),
    )


#: Points of the records-at-risk curve at most, whatever the target k: every k up to :data:`DENSE_K`, then k spaced
#: evenly on a log scale up to twice the target (a link with k = 30,000,000 must not build 60 million points).
MAX_K_POINTS = 200
DENSE_K = 100


def default_k_values(target: int) -> tuple[int, ...]:
    """The k of the records-at-risk curve: 1 to at least 20, and past the target k (which is always one of them).

    Every k up to ``2 * target`` while that is at most :data:`MAX_K_POINTS`; beyond, every k up to :data:`DENSE_K`
    and then at most ``MAX_K_POINTS - DENSE_K`` values spaced evenly on a log scale up to ``2 * target``.
    """
    top = max(20, 2 * int(target))
    if top <= MAX_K_POINTS:
        return tuple(range(1, top + 1))
    spread = MAX_K_POINTS - DENSE_K - 2  # the target and the top may fall between two of them
    ratio = (top / DENSE_K) ** (1 / spread)
    sparse = {min(round(DENSE_K * ratio**i), top) for i in range(1, spread + 1)}
    return tuple(sorted({*range(1, DENSE_K + 1), *sparse, int(target), top}))


def column_profile(frame: pd.DataFrame) -> dict[str, dict[str, str]]:
    """Per column: missing cells, distinct values and up to three example values, as display text."""
    out = {}
    n = len(frame)
    for name in frame.columns:
        column = frame[name]
        missing = int(column.isna().sum())
        distinct = int(column.nunique(dropna=True))
        examples = column.dropna().drop_duplicates().head(3).astype(str).tolist()
        out[str(name)] = {
            "missing": f"{missing:,}" + (f" ({100 * missing / n:.1f}%)" if n and missing else ""),
            "distinct": f"{distinct:,}",
            "examples": ", ".join(examples),
        }
    return out


def too_large_message(filename: str | None, size: int | None, limit: int) -> str:
    """The message for a file over the upload limit, worded as :func:`~privdash.data.tables.read_table` words it
    (the browser refuses such files before sending them, so the reader never sees them). ``size`` None (a chunked
    upload, whose length is not declared): "more than" the limit."""
    amount = f"{size / 1e6:.1f} MB" if size else f"more than {limit / 1e6:.0f} MB"
    return (
        f"{filename or 'The file'} is {amount}, over the {limit / 1e6:.0f} MB limit. "
        "Raise the limit or use the command line for large files."
    )


def clean_filename(name: str | None) -> str:
    """An uploaded file's name as shown and stored: its last path part, printable, at most 120 characters."""
    text = str(name or "").replace("\\", "/").rsplit("/", 1)[-1]
    text = "".join(ch for ch in text if ch.isprintable()).strip()
    if len(text) > 120:
        stem, dot, extension = text.rpartition(".")
        text = (stem[: 110 - len(extension)] + "..." + dot + extension) if dot and len(extension) <= 8 else text[:120]
    return text or "upload"


def reference_values(loaded: LoadedDataset, name: str) -> list[Any]:
    """The values an ordinal order of column ``name`` must list: those in the data and those its shipped contract
    declares (a declared level may be absent from the data)."""
    values = loaded.frame[name].dropna().unique().tolist()
    base = next((f for f in loaded.contract.fields if f.name == name), None)
    if base is not None and base.ordinal_values is not None:
        present = {str(v) for v in values}
        values += [v for v in base.ordinal_values if str(v) not in present]
    return values


def default_order(values: list[Any], name: str) -> list[Any]:
    """The starting order of a column newly marked ordinal: numbers ascending, else text order."""
    if len(values) > MAX_ORDINAL_VALUES:
        raise StateError(
            f"Column '{name}' has {len(values):,} distinct values, too many to order by hand "
            f"(at most {MAX_ORDINAL_VALUES}); treat it as numerical or nominal."
        )
    if values and all(isinstance(v, int | float) and not isinstance(v, bool) for v in values):
        return sorted(values)
    return sorted_labels(values)
