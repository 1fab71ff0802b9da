"""Server-side storage of uploaded tables: the browser only ever holds a dataset id.

Layout of the store folder (folders ``0700``, files ``0600``: only the server's user can read them)::

    <id>/               one dataset, published by a single rename of a complete folder
        data.parquet    the table
        meta.json       owner, creation and expiry times, file name, shape, size, the suggested data contract
        original        the uploaded bytes, kept only for workbooks with several sheets (to read another sheet)
    .tmp-<random>/      a dataset being written (left behind by a writer that was killed: swept)
    .trash-<random>/    a dataset being deleted
    links/              long view states of share links (:mod:`privdash.application.links`)
    .lock               serialises the quota check and the publication of datasets across processes

The id is ``secrets.token_urlsafe(16)`` (128 random bits), so it cannot be guessed; anything else offered as an id is
refused before the file system is touched (:func:`is_upload_id`).

Access model
    The id is a capability: whoever holds it (the uploader, or anyone the uploader sends a share link to) can
    read that dataset. Everything else is per browser session: a session only lists and deletes the datasets it
    uploaded (the owner is stored as a SHA-256 digest of the session token, never the token itself).
Atomicity
    A dataset's files are written into a temporary folder, which one ``rename`` publishes under the id: a reader
    (in any process) sees a complete dataset or none, and a writer killed at any point leaves only a temporary
    folder, which the sweep deletes once it is :data:`TEMP_GRACE` seconds old. Deleting renames the folder away
    first, so a dataset never appears half-deleted either.
Expiry
    A dataset expires ``ttl`` seconds after its upload. Reading an expired dataset deletes it; every server
    process also sweeps the folder on a timer (:class:`Sweeper`), deleting expired datasets, leftovers of
    interrupted writes and anything malformed that has the store's naming pattern (nothing else is touched).
Quotas
    :class:`Quota`: bytes and number of datasets one browser session may keep, and bytes of all sessions together.
    Checked against the stored size of the new dataset, under a lock shared by all processes, before it is
    published; a refused upload gets a message that says what to do (:class:`QuotaExceeded`).
Several processes
    All state is in the folder; each process keeps a small LRU cache of parsed tables keyed by id and file
    modification time.
"""

from __future__ import annotations

import contextlib
import hashlib
import ipaddress
import json
import logging
import os
import re
import secrets
import shutil
import threading
import time
import weakref
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any, ClassVar, Protocol

import pandas as pd

from privdash.application.cache import BoundedCache
from privdash.errors import PrivdashError

try:  # the lock between processes; without fcntl (Windows) only the threads of one process are serialised
    import fcntl
except ImportError:  # pragma: no cover - not on Linux
    fcntl = None  # type: ignore[assignment]

__all__ = [
    "TEMP_GRACE",
    "ClientLedger",
    "DatasetExpired",
    "DatasetInfo",
    "DatasetNotFound",
    "DatasetStore",
    "Quota",
    "QuotaExceeded",
    "RateLimited",
    "Sweeper",
    "client_digest",
    "exclusive_lock",
    "is_upload_id",
    "owner_digest",
    "private_file",
]

log = logging.getLogger(__name__)

_ID_PATTERN = re.compile(r"[A-Za-z0-9_-]{22}")
_DATA = "data.parquet"
_META = "meta.json"
_ORIGINAL = "original"
_TMP_PREFIX = ".tmp-"
_TRASH_PREFIX = ".trash-"
_LEGACY = re.compile(r"(?P<id>[A-Za-z0-9_-]{22})\.(?:parquet|json)(?:\.tmp)?")
#: Seconds a temporary folder may exist before the sweep takes it for the leftover of a killed writer (a live
#: writer needs seconds: the table is parsed before its folder is created).
TEMP_GRACE = 600.0
_MB = 1e6


class DatasetNotFound(PrivdashError):
    """The dataset id is unknown (never stored, deleted, or malformed)."""


class DatasetExpired(DatasetNotFound):
    """The dataset existed but is past its expiry time."""


class QuotaExceeded(PrivdashError):
    """Storing a dataset would exceed a quota of the session or of the whole store."""


def is_upload_id(value: object) -> bool:
    """Whether ``value`` has the form of an upload's id (22 characters of the URL-safe base64 alphabet)."""
    return isinstance(value, str) and _ID_PATTERN.fullmatch(value) is not None


def owner_digest(session: str) -> str:
    """The digest stored as a dataset's owner, so metadata files do not hold session tokens."""
    return hashlib.sha256(session.encode()).hexdigest()


@contextlib.contextmanager
def exclusive_lock(lock_file: Path, threads: threading.Lock) -> Iterator[None]:
    """Hold ``threads`` (this process's threads) and, through ``flock`` on ``lock_file`` (created, owner only),
    every other process; both are released on leaving."""
    with threads:
        if fcntl is None:  # pragma: no cover - not on Linux
            yield
            return
        fd = os.open(lock_file, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing releases the lock


def private_file(path: Path, data: bytes) -> None:
    """Write ``data`` to a new file only the server's user can read (``0600``), flushed to disk."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())


def _remove_tree(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)


@dataclass(frozen=True)
class Quota:
    """What the store may hold: per browser session (bytes, datasets), per client address (bytes, datasets: a
    client that drops its cookie gets a new session but keeps its address) and for everyone together (bytes)."""

    session_bytes: int = 500_000_000
    session_datasets: int = 20
    total_bytes: int = 20_000_000_000
    client_bytes: int = 2_000_000_000
    client_datasets: int = 60


def client_digest(address: str | None) -> str:
    """The digest a client address is counted under: an IPv6 address by its /64 network (one subscriber's), an IPv4
    address as it is; never the address itself in a file."""
    text = str(address or "unknown")
    try:
        parsed = ipaddress.ip_address(text)
    except ValueError:
        key = text[:100]
    else:
        if isinstance(parsed, ipaddress.IPv6Address) and parsed.ipv4_mapped is not None:
            key = str(parsed.ipv4_mapped)
        elif isinstance(parsed, ipaddress.IPv6Address):
            key = str(ipaddress.IPv6Network((parsed, 64), strict=False))
        else:
            key = str(parsed)
    return hashlib.sha256(b"privdash-client:" + key.encode()).hexdigest()


class RateLimited(QuotaExceeded):
    """A client address did something more often than a limit allows in its window."""


class ClientLedger:
    """Per client address, when it last did each limited thing (uploads, long links), shared by every worker.

    One small JSON file per client digest in ``root`` (``0600`` in a ``0700`` folder), read and written under the
    store's lock; :meth:`sweep` deletes the files whose events are all older than the longest window.
    """

    def __init__(self, root: str | os.PathLike[str], lock: threading.Lock, *, keep: float = 24 * 3600) -> None:
        self.root = Path(root)
        self._lock = lock
        self.keep = float(keep)

    def admit(self, client: str, kind: str, *, limit: int, window: float, now: float | None = None) -> bool:
        """Count one ``kind`` event of ``client`` and return True, or False (nothing counted) when ``limit`` events
        happened in the last ``window`` seconds."""
        current = time.time() if now is None else now
        if not re.fullmatch(r"[0-9a-f]{64}", client):
            raise ValueError("not a client digest")
        self.root.mkdir(parents=True, exist_ok=True, mode=0o700)
        path = self.root / f"{client}.json"
        with exclusive_lock(self.root / ".lock", self._lock):
            try:
                events = json.loads(path.read_text(encoding="utf-8"))
                if not isinstance(events, dict):
                    events = {}
            except (OSError, ValueError):
                events = {}
            times = [t for t in events.get(kind, []) if isinstance(t, int | float) and current - t < window]
            if len(times) >= limit:
                return False
            events[kind] = [*times, current]
            temp = self.root / f"{_TMP_PREFIX}{secrets.token_hex(8)}"
            try:
                private_file(temp, json.dumps(events).encode())
                os.replace(temp, path)
            finally:
                temp.unlink(missing_ok=True)
        return True

    def sweep(self, *, now: float | None = None, force: bool = False) -> int:
        """Delete the files of clients with no event in the last :attr:`keep` seconds; returns how many."""
        current = time.time() if now is None else now
        removed = 0
        try:
            entries = list(os.scandir(self.root))
        except FileNotFoundError:
            return 0
        for entry in entries:
            try:
                if entry.name.startswith(_TMP_PREFIX) and current - entry.stat().st_mtime > TEMP_GRACE:
                    os.unlink(entry.path)
                    continue
                if not entry.name.endswith(".json"):
                    continue
                if current - entry.stat().st_mtime >= self.keep:
                    os.unlink(entry.path)
                    removed += 1
            except OSError:
                continue
        return removed


@dataclass(frozen=True)
class DatasetInfo:
    """Metadata of a stored dataset.

    ``bytes`` is the size of the dataset's files (what the quotas count); ``sheet`` the workbook sheet that was read
    and ``sheets`` all of the workbook's sheets (empty for other formats); ``notes`` what the reader reported.
    """

    id: str
    filename: str
    owner: str
    created: float
    expires: float
    rows: int
    columns: tuple[str, ...]
    contract: Mapping[str, Any] = field(default_factory=dict)
    reasons: Mapping[str, str] = field(default_factory=dict)
    bytes: int = 0
    sheet: str | None = None
    sheets: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    #: The digest of the uploader's address (:func:`client_digest`), which the per-client quota counts.
    client: str = ""

    @property
    def has_original(self) -> bool:
        """Whether the uploaded file is kept (a workbook with several sheets), so another sheet can be read."""
        return len(self.sheets) > 1

    def to_json(self) -> str:
        obj = asdict(self)
        for key in ("columns", "sheets", "notes"):
            obj[key] = list(obj[key])
        return json.dumps(obj, ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str) -> DatasetInfo:
        obj = json.loads(text)
        if not isinstance(obj, dict):
            raise ValueError("dataset metadata is not an object")
        known = {f.name for f in fields(cls)}
        obj = {key: value for key, value in obj.items() if key in known}
        for key in ("columns", "sheets", "notes"):
            if key in obj:
                obj[key] = tuple(str(v) for v in obj[key])
        info = cls(**obj)
        if not is_upload_id(info.id) or not isinstance(info.owner, str) or not isinstance(info.client, str):
            raise ValueError("dataset metadata has no valid id or owner")
        numbers = (info.created, info.expires, info.bytes, info.rows)
        if not all(isinstance(value, int | float) and not isinstance(value, bool) for value in numbers):
            raise ValueError("dataset metadata has times, sizes or counts that are not numbers")
        return info


@dataclass(frozen=True)
class _Usage:
    session_bytes: int
    session_datasets: int
    total_bytes: int
    client_bytes: int = 0
    client_datasets: int = 0


class DatasetStore:
    """Datasets stored as Parquet under ``root``, expiring ``ttl`` seconds after upload.

    Parameters
    ----------
    root
        Folder of the store (created if missing, and made ``0700``).
    ttl
        Lifetime of a dataset in seconds.
    cache_items
        Parsed tables kept in memory by this process.
    quota
        Bytes and datasets a session may keep, and bytes of the whole store.
    sweep_interval
        Seconds between two sweeps started by writes (the background :class:`Sweeper` sweeps on its own timer).
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        ttl: float = 24 * 3600,
        cache_items: int = 4,
        quota: Quota | None = None,
        sweep_interval: float = 300.0,
    ) -> None:
        if ttl <= 0:
            raise ValueError("ttl must be positive")
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True, mode=0o700)
        with contextlib.suppress(OSError):  # a folder the operator made and owns by another user stays as it is
            os.chmod(self.root, 0o700)
        self.ttl = float(ttl)
        self.cache_items = int(cache_items)
        self.quota = quota or Quota()
        self.sweep_interval = float(sweep_interval)
        self._cache = BoundedCache(self.cache_items)
        self._lock = threading.Lock()
        self._last_sweep = 0.0
        #: Other sweepable contents of the folder (the link store), swept with the datasets.
        self.companions: list[_Sweepable] = []

    # --- paths ----------------------------------------------------------------------------------------------------

    def _folder(self, dataset_id: str) -> Path:
        if not is_upload_id(dataset_id):
            raise DatasetNotFound("This link does not name a valid dataset.")
        return self.root / dataset_id

    # --- writing ----------------------------------------------------------------------------------------------------

    def save(
        self,
        frame: pd.DataFrame,
        *,
        session: str,
        filename: str,
        contract: Mapping[str, Any] | None = None,
        reasons: Mapping[str, str] | None = None,
        now: float | None = None,
        original: bytes | None = None,
        sheet: str | None = None,
        sheets: Sequence[str] = (),
        notes: Sequence[str] = (),
        replaces: str | None = None,
        client: str = "",
    ) -> DatasetInfo:
        """Store ``frame`` for the browser session ``session`` and return its metadata (with the new id).

        ``client`` is the digest of the uploader's address (:func:`client_digest`), counted by the per-client quota.

        ``original`` (the uploaded bytes) is kept when ``sheets`` lists more than one workbook sheet. ``replaces``
        names a dataset of the same session that is deleted once this one is stored (and is not counted against the
        quota). Raises :class:`QuotaExceeded` when the stored dataset would not fit the session's or the store's
        quota.
        """
        self.sweep(now=now)
        created = time.time() if now is None else now
        dataset_id = secrets.token_urlsafe(16)
        temp = self._temp_folder()
        try:
            data_path = temp / _DATA
            fd = os.open(data_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as handle:
                parquet_safe(frame).to_parquet(handle, index=False)
                handle.flush()
                os.fsync(handle.fileno())
            size = data_path.stat().st_size
            keep_original = original is not None and len(tuple(sheets)) > 1
            if keep_original:
                private_file(temp / _ORIGINAL, bytes(original or b""))
                size += len(original or b"")
            info = DatasetInfo(
                id=dataset_id,
                filename=filename,
                owner=owner_digest(session),
                created=created,
                expires=created + self.ttl,
                rows=len(frame),
                columns=tuple(str(c) for c in frame.columns),
                contract=dict(contract or {}),
                reasons=dict(reasons or {}),
                sheet=sheet,
                sheets=tuple(str(s) for s in sheets),
                notes=tuple(str(n) for n in notes),
                client=client,
            )
            # The recorded size counts the metadata too, whose length depends on the size written into it.
            total = size
            for _ in range(4):
                total, previous = size + len(replace(info, bytes=total).to_json().encode()), total
                if total == previous:
                    break
            info = replace(info, bytes=total)
            private_file(temp / _META, info.to_json().encode())
            with self._exclusive():
                self._check_quota(info.owner, info.bytes, now=created, exclude=replaces, client=client)
                os.rename(temp, self.root / dataset_id)
        except BaseException:
            _remove_tree(temp)
            raise
        if replaces is not None and is_upload_id(replaces):
            with contextlib.suppress(DatasetNotFound):
                if self.info(replaces, now=now).owner == info.owner:
                    self._remove(replaces)
        return info

    def check_quota(
        self,
        session: str,
        *,
        incoming: int = 0,
        replaces: str | None = None,
        now: float | None = None,
        client: str = "",
    ) -> None:
        """Raise :class:`QuotaExceeded` when the session (or the store) cannot take ``incoming`` more bytes.

        Called before a file is read, with ``incoming=0``, so a session at its quota is told at once; :meth:`save`
        checks again with the stored size. A dataset the new one ``replaces`` does not count.
        """
        self._check_quota(owner_digest(session), incoming, now=now, exclude=replaces, client=client)

    def _check_quota(
        self, digest: str, incoming: int, *, now: float | None = None, exclude: str | None = None, client: str = ""
    ) -> None:
        usage = self._usage(digest, now=now, exclude=exclude, client=client)
        quota = self.quota
        # Before reading (incoming 0) the question is whether anything more fits: at least one byte.
        needed = max(int(incoming), 1)
        if usage.session_datasets + 1 > quota.session_datasets:
            raise QuotaExceeded(
                f"You have {usage.session_datasets} uploads, the most a session may keep; "
                "delete one or wait until they expire."
            )
        if usage.session_bytes + needed > quota.session_bytes:
            need = f"This table needs {_mb(incoming)} MB, but y" if incoming else "Y"
            raise QuotaExceeded(
                f"{need}our uploads use {_mb(usage.session_bytes)} MB of the {_mb(quota.session_bytes)} MB a session "
                "may keep; delete one or wait until they expire."
            )
        if client and usage.client_datasets + 1 > quota.client_datasets:
            raise QuotaExceeded(
                f"Your network address keeps {usage.client_datasets} uploads, the most one address may keep "
                "(PRIVDASH_CLIENT_MAX_DATASETS); delete some or wait until they expire."
            )
        if client and usage.client_bytes + needed > quota.client_bytes:
            raise QuotaExceeded(
                f"Uploads from your network address use {_mb(usage.client_bytes)} MB of the {_mb(quota.client_bytes)} "
                "MB one address may keep (PRIVDASH_CLIENT_MAX_MB); delete some or wait until they expire."
            )
        if usage.total_bytes + needed > quota.total_bytes:
            raise QuotaExceeded(
                f"The server's upload store is full ({_mb(usage.total_bytes)} of {_mb(quota.total_bytes)} MB); "
                "try again later, when older uploads have expired."
            )

    def _usage(self, digest: str, *, now: float | None = None, exclude: str | None = None, client: str = "") -> _Usage:
        current = time.time() if now is None else now
        mine = mine_count = total = theirs = theirs_count = 0
        for info in self._all_infos():
            if info.expires <= current or (info.id == exclude and info.owner == digest):
                continue  # expired: the sweep deletes it; replaced: deleted once the new one is stored
            total += info.bytes
            if info.owner == digest:
                mine += info.bytes
                mine_count += 1
            if client and info.client == client:
                theirs += info.bytes
                theirs_count += 1
        return _Usage(mine, mine_count, total, theirs, theirs_count)

    def _temp_folder(self) -> Path:
        path = self.root / f"{_TMP_PREFIX}{secrets.token_hex(8)}"
        path.mkdir(mode=0o700)
        return path

    def _exclusive(self) -> contextlib.AbstractContextManager[None]:
        """Hold the store's lock: this process's threads and every other process."""
        return exclusive_lock(self.root / ".lock", self._lock)

    def delete(self, dataset_id: str, *, session: str) -> None:
        """Delete a dataset; only the session that uploaded it may."""
        info = self.info(dataset_id)
        if info.owner != owner_digest(session):
            raise DatasetNotFound("Only the browser that uploaded a dataset can delete it.")
        self._remove(dataset_id)

    def _remove(self, dataset_id: str) -> None:
        self._discard(self._folder(dataset_id))
        self._cache.discard(lambda key: key[1] == dataset_id)

    def _discard(self, folder: Path) -> bool:
        """Rename ``folder`` out of the way (atomic), then delete it; False when another process was first."""
        trash = self.root / f"{_TRASH_PREFIX}{secrets.token_hex(8)}"
        try:
            os.rename(folder, trash)
        except FileNotFoundError:
            return False
        except OSError:
            _remove_tree(folder)
            return True
        _remove_tree(trash)
        return True

    # --- reading ----------------------------------------------------------------------------------------------------

    def info(self, dataset_id: str, *, now: float | None = None) -> DatasetInfo:
        """Metadata of a dataset; raises :class:`DatasetNotFound` or :class:`DatasetExpired`."""
        folder = self._folder(dataset_id)
        try:
            info = DatasetInfo.from_json((folder / _META).read_text(encoding="utf-8"))
        except (FileNotFoundError, NotADirectoryError):
            raise DatasetNotFound(
                "This dataset is not on the server (it expired or was deleted); upload the file again."
            ) from None
        except (OSError, ValueError, TypeError, KeyError) as exc:
            raise DatasetNotFound("This dataset's metadata is damaged; upload the file again.") from exc
        if info.id != dataset_id:
            raise DatasetNotFound("This dataset's metadata is damaged; upload the file again.")
        if (time.time() if now is None else now) >= info.expires:
            self._remove(dataset_id)
            hours = self.ttl / 3600
            raise DatasetExpired(f"This dataset has expired (uploads are kept {hours:g} h); upload the file again.")
        return info

    def load(self, dataset_id: str, *, now: float | None = None) -> pd.DataFrame:
        """The stored table (from this process's cache when the file is unchanged)."""
        self.info(dataset_id, now=now)
        data_path = self._folder(dataset_id) / _DATA
        try:
            mtime = data_path.stat().st_mtime_ns
        except FileNotFoundError:
            raise DatasetNotFound("This dataset is not on the server; upload the file again.") from None

        def read() -> pd.DataFrame:
            try:
                return pd.read_parquet(data_path)
            except FileNotFoundError:
                raise DatasetNotFound("This dataset is not on the server; upload the file again.") from None
            except (OSError, ValueError) as exc:
                raise DatasetNotFound("This dataset's table is damaged; upload the file again.") from exc

        frame: pd.DataFrame = self._cache.get_or_build(("stored-table", dataset_id, mtime), read)
        return frame

    def original(self, dataset_id: str, *, now: float | None = None) -> bytes:
        """The uploaded file's bytes (kept only for workbooks with several sheets)."""
        info = self.info(dataset_id, now=now)
        try:
            return (self._folder(dataset_id) / _ORIGINAL).read_bytes()
        except FileNotFoundError:
            raise DatasetNotFound(
                f"The uploaded file {info.filename} is no longer kept; upload it again to read another sheet."
            ) from None

    def owned(self, session: str, *, now: float | None = None) -> list[DatasetInfo]:
        """Datasets uploaded by ``session`` that have not expired, newest first."""
        digest = owner_digest(session)
        current = time.time() if now is None else now
        found = [info for info in self._all_infos() if info.owner == digest and info.expires > current]
        return sorted(found, key=lambda item: item.created, reverse=True)

    def _all_infos(self) -> Iterator[DatasetInfo]:
        """The metadata of every readable dataset in the folder (expired ones included)."""
        try:
            entries = list(os.scandir(self.root))
        except FileNotFoundError:
            return
        for entry in entries:
            if not is_upload_id(entry.name):
                continue
            try:
                info = DatasetInfo.from_json(Path(entry.path, _META).read_text(encoding="utf-8"))
            except (OSError, ValueError, TypeError, KeyError):
                continue
            if info.id == entry.name:
                yield info

    # --- sweeping ---------------------------------------------------------------------------------------------------

    def sweep(self, *, now: float | None = None, force: bool = False) -> int:
        """Delete expired datasets, leftovers and malformed entries; returns how many datasets expired.

        Runs at most once per ``sweep_interval`` unless ``force`` (or a ``now`` is given, as tests do). What is
        deleted, all only when it has one of the store's own names:

        * ``<id>/`` folders that are expired, or lack a readable ``meta.json`` or ``data.parquet``;
        * ``.tmp-*`` folders older than :data:`TEMP_GRACE` (a writer killed mid-write) and any ``.trash-*``;
        * files of the store's earlier layout (``<id>.parquet`` with ``<id>.json``): moved into the current
          layout when both are there and unexpired, deleted otherwise;
        * what the companions (the link store) sweep.
        """
        current = time.time() if now is None else now
        if not force and now is None and current - self._last_sweep < self.sweep_interval:
            return 0
        self._last_sweep = current
        removed = 0
        try:
            entries = list(os.scandir(self.root))
        except FileNotFoundError:
            return 0
        legacy: set[str] = set()
        for entry in entries:
            name = entry.name
            try:
                if is_upload_id(name):
                    removed += self._sweep_dataset(Path(entry.path), current)
                elif name.startswith(_TRASH_PREFIX) or (
                    name.startswith(_TMP_PREFIX) and current - entry.stat(follow_symlinks=False).st_mtime > TEMP_GRACE
                ):
                    _remove_tree(Path(entry.path))
                elif (match := _LEGACY.fullmatch(name)) is not None:
                    legacy.add(match["id"])
            except OSError:
                continue  # another process got there first
        for dataset_id in legacy:
            self._migrate_legacy(dataset_id, current)
        for companion in self.companions:
            companion.sweep(now=current)
        return removed

    def _sweep_dataset(self, folder: Path, current: float) -> int:
        if not folder.is_dir() or folder.is_symlink():
            folder.unlink(missing_ok=True)
            return 0
        try:
            info = DatasetInfo.from_json((folder / _META).read_text(encoding="utf-8"))
            damaged = info.id != folder.name or not (folder / _DATA).is_file()
        except FileNotFoundError:
            damaged = True
        except (OSError, ValueError, TypeError, KeyError):
            damaged = True
        if damaged:
            self._discard(folder)
            return 0
        if info.expires <= current and self._discard(folder):
            self._cache.discard(lambda key: key[1] == folder.name)
            return 1
        return 0

    def _migrate_legacy(self, dataset_id: str, current: float) -> None:
        """Move a dataset of the earlier layout (two files beside each other) into a folder, or delete it."""
        data, meta = self.root / f"{dataset_id}.parquet", self.root / f"{dataset_id}.json"
        try:
            info = DatasetInfo.from_json(meta.read_text(encoding="utf-8"))
            keep = info.id == dataset_id and info.expires > current and data.is_file()
        except (OSError, ValueError, TypeError, KeyError):
            keep = False
        if keep:
            temp = self._temp_folder()
            try:
                info = replace(info, bytes=data.stat().st_size + meta.stat().st_size)
                os.rename(data, temp / _DATA)
                private_file(temp / _META, info.to_json().encode())
                os.chmod(temp / _DATA, 0o600)
                os.rename(temp, self.root / dataset_id)
            except OSError:
                _remove_tree(temp)
        for path in (data, meta, data.with_suffix(".parquet.tmp"), meta.with_suffix(".json.tmp")):
            path.unlink(missing_ok=True)


class _Sweepable(Protocol):
    def sweep(self, *, now: float | None = None, force: bool = False) -> int: ...


def _mb(size: int) -> str:
    return f"{size / _MB:,.0f}" if size >= 10 * _MB else f"{size / _MB:,.1f}"


class Sweeper:
    """The background sweep of a process: one daemon thread that sweeps every registered store on a timer.

    At most one thread runs per process (a second :meth:`start` only registers its store); it is a daemon, so it
    stops with the process. The thread waits the shortest interval of the registered stores between two rounds.
    Stores are held weakly: an app that is gone is no longer swept. A forked child (a gunicorn worker of a
    preloaded app) starts with no thread and no stores; the parent's thread keeps sweeping the same folder.
    """

    _lock: ClassVar[threading.Lock] = threading.Lock()
    _stores: ClassVar[weakref.WeakKeyDictionary[_Sweepable, float]] = weakref.WeakKeyDictionary()
    _thread: ClassVar[threading.Thread | None] = None
    _wake: ClassVar[threading.Event] = threading.Event()

    @classmethod
    def start(cls, store: _Sweepable, interval: float) -> threading.Thread:
        """Sweep ``store`` every ``interval`` seconds; returns the process's sweeper thread."""
        with cls._lock:
            shorter = interval < cls.interval()
            cls._stores[store] = float(interval)
            if cls._thread is not None and cls._thread.is_alive():
                if shorter:
                    cls._wake.set()  # the running thread waits the shorter interval from now on
                return cls._thread
            cls._wake = threading.Event()
            cls._thread = threading.Thread(target=cls._run, name="privdash-store-sweeper", daemon=True)
            cls._thread.start()
            return cls._thread

    @classmethod
    def forget(cls, store: _Sweepable) -> None:
        """Stop sweeping ``store`` (the thread keeps running for the others)."""
        with cls._lock:
            cls._stores.pop(store, None)

    @classmethod
    def interval(cls) -> float:
        """Seconds between two rounds: the shortest interval of the registered stores (300 without any)."""
        return min(list(cls._stores.values()), default=300.0)

    @classmethod
    def _run(cls) -> None:
        while True:
            if cls._wake.wait(cls.interval()):
                cls._wake.clear()
                continue
            for store in list(cls._stores.keys()):
                try:
                    store.sweep(force=True)
                except Exception:  # a sweep must never end the thread; the next one tries again
                    log.exception("sweeping the upload store failed")

    @classmethod
    def _after_fork(cls) -> None:
        # The child has no sweeper thread (threads do not survive fork) and must not inherit a held lock.
        cls._lock = threading.Lock()
        cls._thread = None
        cls._stores = weakref.WeakKeyDictionary()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=Sweeper._after_fork)


def parquet_safe(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy Parquet can store: string column names, and text for object columns that mix types."""
    out = frame.copy(deep=False)
    out.columns = [str(c) for c in out.columns]
    for name in out.columns:
        column = out[name]
        if column.dtype == object:
            kinds = {type(v) for v in column.dropna().head(10_000)}
            if len(kinds) > 1 or (kinds and not kinds <= {str, bool, int, float}):
                out[name] = column.astype("str")
    return out
