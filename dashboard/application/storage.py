"""Server-side storage of uploaded tables: the browser only ever holds a dataset id.

Each dataset is two files in the store folder: ``<id>.parquet`` (the table) and ``<id>.json`` (its metadata:
owner, creation time, file name, shape, the suggested data contract). The id is ``secrets.token_urlsafe(16)``
(128 random bits), so it cannot be guessed.

Access model
    The id is a capability: whoever holds it (the uploader, or anyone the uploader sends a share link to) can
    read that dataset. Everything else is per browser session: a session only lists and deletes the datasets it
    uploaded (the owner is stored as a SHA-256 digest of the session token, never the token itself).
Expiry
    A dataset expires ``ttl`` seconds after its upload; expired datasets are deleted when touched and by a sweep
    that runs at most once a minute per process on any access.
Several processes
    All state is in the folder (files are written to a temporary name, then renamed, so readers never see half
    a file); each process keeps a small LRU cache of parsed tables keyed by id and file modification time.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
import threading
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from dashboard.application.cache import BoundedCache
from dashboard.core.errors import PrivdashError

__all__ = ["DatasetExpired", "DatasetInfo", "DatasetNotFound", "DatasetStore", "owner_digest"]

_ID_PATTERN = re.compile(r"^[A-Za-z0-9_-]{22}$")
_SWEEP_INTERVAL = 60.0


class DatasetNotFound(PrivdashError):
    """The dataset id is unknown (never stored, deleted, or malformed)."""


class DatasetExpired(DatasetNotFound):
    """The dataset existed but is past its expiry time."""


def owner_digest(session: str) -> str:
    """The digest stored as a dataset's owner, so metadata files do not hold session tokens."""
    return hashlib.sha256(session.encode()).hexdigest()


@dataclass(frozen=True)
class DatasetInfo:
    """Metadata of a stored dataset."""

    id: str
    filename: str
    owner: str
    created: float
    expires: float
    rows: int
    columns: tuple[str, ...]
    contract: Mapping[str, Any] = field(default_factory=dict)
    reasons: Mapping[str, str] = field(default_factory=dict)

    def to_json(self) -> str:
        obj = asdict(self)
        obj["columns"] = list(self.columns)
        return json.dumps(obj, ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str) -> DatasetInfo:
        obj = json.loads(text)
        obj["columns"] = tuple(obj["columns"])
        return cls(**obj)


class DatasetStore:
    """Datasets stored as Parquet under ``root``, expiring ``ttl`` seconds after upload.

    Parameters
    ----------
    root
        Folder of the store (created if missing).
    ttl
        Lifetime of a dataset in seconds.
    cache_items
        Parsed tables kept in memory by this process.
    """

    def __init__(self, root: str | os.PathLike[str], *, ttl: float = 24 * 3600, cache_items: int = 4) -> None:
        if ttl <= 0:
            raise ValueError("ttl must be positive")
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.ttl = float(ttl)
        self.cache_items = int(cache_items)
        self._cache = BoundedCache(self.cache_items)
        self._lock = threading.Lock()
        self._last_sweep = 0.0

    # --- paths ----------------------------------------------------------------------------------------------------

    def _paths(self, dataset_id: str) -> tuple[Path, Path]:
        if not isinstance(dataset_id, str) or not _ID_PATTERN.match(dataset_id):
            raise DatasetNotFound("This link does not name a valid dataset.")
        return self.root / f"{dataset_id}.parquet", self.root / f"{dataset_id}.json"

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
    ) -> DatasetInfo:
        """Store ``frame`` for the browser session ``session`` and return its metadata (with the new id)."""
        self.sweep(now=now)
        created = time.time() if now is None else now
        dataset_id = secrets.token_urlsafe(16)
        data_path, meta_path = self._paths(dataset_id)
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
        )
        table = parquet_safe(frame)
        tmp = data_path.with_suffix(".parquet.tmp")
        table.to_parquet(tmp, index=False)
        os.replace(tmp, data_path)
        tmp_meta = meta_path.with_suffix(".json.tmp")
        tmp_meta.write_text(info.to_json(), encoding="utf-8")
        os.replace(tmp_meta, meta_path)
        return info

    def delete(self, dataset_id: str, *, session: str) -> None:
        """Delete a dataset; only the session that uploaded it may."""
        info = self.info(dataset_id)
        if info.owner != owner_digest(session):
            raise DatasetNotFound("Only the browser that uploaded a dataset can delete it.")
        self._remove(dataset_id)

    def _remove(self, dataset_id: str) -> None:
        for path in self._paths(dataset_id):
            path.unlink(missing_ok=True)
        self._cache.discard(lambda key: key[1] == dataset_id)

    # --- reading ----------------------------------------------------------------------------------------------------

    def info(self, dataset_id: str, *, now: float | None = None) -> DatasetInfo:
        """Metadata of a dataset; raises :class:`DatasetNotFound` or :class:`DatasetExpired`."""
        _, meta_path = self._paths(dataset_id)
        try:
            info = DatasetInfo.from_json(meta_path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise DatasetNotFound(
                "This dataset is not on the server (it expired or was deleted); upload the file again."
            ) from None
        except (ValueError, TypeError, KeyError) as exc:
            raise DatasetNotFound("This dataset's metadata is damaged; upload the file again.") from exc
        if (time.time() if now is None else now) >= info.expires:
            self._remove(dataset_id)
            hours = self.ttl / 3600
            raise DatasetExpired(f"This dataset has expired (uploads are kept {hours:g} h); upload the file again.")
        self.sweep(now=now)
        return info

    def load(self, dataset_id: str, *, now: float | None = None) -> pd.DataFrame:
        """The stored table (from this process's cache when the file is unchanged)."""
        self.info(dataset_id, now=now)
        data_path, _ = self._paths(dataset_id)
        try:
            mtime = data_path.stat().st_mtime_ns
        except FileNotFoundError:
            raise DatasetNotFound("This dataset is not on the server; upload the file again.") from None
        frame: pd.DataFrame = self._cache.get_or_build(
            ("stored-table", dataset_id, mtime), lambda: pd.read_parquet(data_path)
        )
        return frame

    def owned(self, session: str, *, now: float | None = None) -> list[DatasetInfo]:
        """Datasets uploaded by ``session`` that have not expired, newest first."""
        self.sweep(now=now)
        digest = owner_digest(session)
        current = time.time() if now is None else now
        found = []
        for meta_path in self.root.glob("*.json"):
            try:
                info = DatasetInfo.from_json(meta_path.read_text(encoding="utf-8"))
            except (OSError, ValueError, TypeError, KeyError):
                continue
            if info.owner == digest and info.expires > current:
                found.append(info)
        return sorted(found, key=lambda item: item.created, reverse=True)

    def sweep(self, *, now: float | None = None, force: bool = False) -> int:
        """Delete expired datasets (at most once a minute unless ``force``); returns how many were deleted."""
        current = time.time() if now is None else now
        if not force and now is None and current - self._last_sweep < _SWEEP_INTERVAL:
            return 0
        self._last_sweep = current
        removed = 0
        for meta_path in self.root.glob("*.json"):
            try:
                info = DatasetInfo.from_json(meta_path.read_text(encoding="utf-8"))
            except (OSError, ValueError, TypeError, KeyError):
                continue
            if info.expires <= current:
                self._remove(info.id)
                removed += 1
        for tmp in self.root.glob("*.tmp"):
            # Leftovers of a writer that died mid-write; give live writers an hour.
            try:
                if current - tmp.stat().st_mtime > 3600:
                    tmp.unlink(missing_ok=True)
            except OSError:
                pass
        return removed


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
