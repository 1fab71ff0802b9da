"""Short share links for long view states: the state is kept on the server and the URL carries ``?l=<id>``.

A view of a wide table (hundreds of columns, each with a role and a type) encodes to more characters than a URL
should hold: gunicorn refuses request lines over 4,094 bytes (HTTP 414) and some proxies allow less. When the
encoded state (the ``s`` query parameter of :mod:`privdash.application.state`) is longer than
:data:`LINK_THRESHOLD` characters, :meth:`LinkStore.search` stores it in the upload store's ``links/`` folder and the
URL carries ``?l=<id>`` instead; opening such a URL reads the state back (:meth:`LinkStore.load`).

The stored text is the same encoded view state as a ``?s=`` link (column names and settings, never a data value).
The id is an HMAC-SHA256 of that text under a random key kept in the folder (``links/.key``, created once and
shared by all workers): 128 bits that cannot be guessed without the key, and the same for the same state in every
worker, so the address bar does not change when another worker answers and a state is stored once. A link lives
``ttl`` seconds (the store's lifetime of an upload) from when it was last written; a view that is opened again after
half of that is written again, so a link in use does not expire. Files are ``0600`` in a ``0700`` folder.

Bounds: a state is stored only when it is no longer than a link may be read back (:data:`MAX_STORED`, the limit of
:meth:`ViewState.decode`); the folder keeps at most ``max_links`` links; and one client address may add at most
``client_max_links`` new links within their lifetime (counted in a :class:`~privdash.application.storage.
ClientLedger`, so dropping the session cookie does not reset it). A refused state raises :class:`LinkRefused` with a
message, and the address bar keeps its previous link.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
import json
import os
import re
import secrets
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from privdash.application.state import DEFAULTS, MAX_ENCODED, QUERY_KEY, StateError, ViewState
from privdash.application.storage import ClientLedger

__all__ = ["LINK_KEY", "LINK_THRESHOLD", "MAX_STORED", "LinkNotFound", "LinkRefused", "LinkStore"]

#: The query parameter of a stored view state.
LINK_KEY = "l"
#: Encoded states longer than this many characters are stored and linked by id.
LINK_THRESHOLD = 1_500
#: Stored links kept at most; past it, new long states stay in the URL (``?s=``) instead of filling the disk.
MAX_LINKS = 20_000
#: The longest encoded state that is stored (a longer one could not be read back).
MAX_STORED = MAX_ENCODED
#: New long links one client address may add within their lifetime.
CLIENT_MAX_LINKS = 500
_ID = re.compile(r"[A-Za-z0-9_-]{22}")
_VERSION = 1


class LinkNotFound(StateError):
    """A ``?l=`` link is malformed, expired or unknown."""


class LinkRefused(StateError):
    """A view state is not stored: too long, or its client address made too many links."""


class LinkStore:
    """View states stored under ids, in ``root`` (the upload store's ``links`` folder).

    Parameters
    ----------
    root
        Folder of the links (created ``0700`` if missing).
    ttl
        Seconds a link lives after it was last written.
    threshold
        Encoded states longer than this are stored; shorter ones stay in the URL.
    max_links
        Stored links kept at most (see :data:`MAX_LINKS`).
    ledger, client_max_links
        Where new links are counted per client address, and how many one address may add within ``ttl``.
    client
        Returns the digest of the current request's client address ("" outside a request); set by the web app.
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        ttl: float = 24 * 3600,
        threshold: int = LINK_THRESHOLD,
        max_links: int = MAX_LINKS,
        ledger: ClientLedger | None = None,
        client_max_links: int = CLIENT_MAX_LINKS,
        client: Callable[[], str] | None = None,
    ) -> None:
        if ttl <= 0:
            raise ValueError("ttl must be positive")
        self.root = Path(root)
        self.ttl = float(ttl)
        self.threshold = int(threshold)
        self.max_links = int(max_links)
        self.ledger = ledger
        self.client_max_links = int(client_max_links)
        self.client = client
        self._key: bytes | None = None

    # --- URLs -------------------------------------------------------------------------------------------------------

    def search(self, state: ViewState, *, now: float | None = None) -> str:
        """The URL search part for ``state``: ``""``, ``?s=<state>`` or, for a long state, ``?l=<id>``."""
        if state == DEFAULTS:
            return ""
        encoded = state.encode()
        link_id = self.save(encoded, now=now) if len(encoded) > self.threshold else None
        if link_id is None:
            return "?" + urlencode({QUERY_KEY: encoded})
        return "?" + urlencode({LINK_KEY: link_id})

    def href(self, state: ViewState, path: str, *, now: float | None = None) -> str:
        """A link to ``path`` carrying ``state`` (by id when it is long)."""
        return path + self.search(state, now=now)

    def state_from_query(self, query: Mapping[str, Any]) -> ViewState:
        """The state named by a page's query parameters: ``l`` (a stored state) or ``s``; raises StateError."""
        link = _first(query.get(LINK_KEY))
        if link:
            return self.load(link)
        return ViewState.decode(_first(query.get(QUERY_KEY)))

    # --- storage ----------------------------------------------------------------------------------------------------

    def link_id(self, encoded: str) -> str:
        """The id of an encoded state: the first 128 bits of its HMAC-SHA256 under the folder's key."""
        digest = hmac.new(self._secret(), encoded.encode("utf-8"), hashlib.sha256).digest()[:16]
        return base64.urlsafe_b64encode(digest).decode().rstrip("=")

    def save(self, encoded: str, *, now: float | None = None) -> str | None:
        """Store an encoded state and return its id (None when the folder holds :attr:`max_links` links).

        Raises :class:`LinkRefused` for a state longer than :data:`MAX_STORED` characters, and for a new link of a
        client address that added :attr:`client_max_links` links within their lifetime.
        """
        if len(encoded) > MAX_STORED:
            raise LinkRefused(
                f"This view's settings take {len(encoded):,} characters, more than a link may hold "
                f"({MAX_STORED:,}); the address bar keeps the previous link. Give fewer columns a role or fewer "
                "fix steps, or use the command line."
            )
        current = time.time() if now is None else now
        link_id = self.link_id(encoded)
        path = self.root / f"{link_id}.json"
        try:
            stored = json.loads(path.read_text(encoding="utf-8"))
            if stored.get("s") == encoded and current - float(stored["created"]) < self.ttl / 2:
                return link_id
        except (OSError, ValueError, TypeError, KeyError, AttributeError):
            if self._count() >= self.max_links:
                return None
            client = self.client() if self.client is not None else ""
            if self.ledger is not None and client:
                admitted = self.ledger.admit(client, "link", limit=self.client_max_links, window=self.ttl, now=now)
                if not admitted:
                    raise LinkRefused(
                        f"Your network address made {self.client_max_links:,} long links in the last "
                        f"{self.ttl / 3600:g} h, the most one address may (PRIVDASH_CLIENT_MAX_LINKS); the address "
                        "bar keeps the previous link."
                    ) from None
        body = json.dumps({"v": _VERSION, "s": encoded, "created": current}, separators=(",", ":")).encode()
        temp = self.root / f".tmp-{secrets.token_hex(8)}"
        try:
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as handle:
                handle.write(body)
            os.replace(temp, path)
        finally:
            temp.unlink(missing_ok=True)
        return link_id

    def load(self, link_id: str, *, now: float | None = None) -> ViewState:
        """The state stored under ``link_id``; raises :class:`LinkNotFound` for a bad, unknown or expired id."""
        if not isinstance(link_id, str) or not _ID.fullmatch(link_id):
            raise LinkNotFound("This link is damaged (its id is not valid); it may have been cut when copied.")
        path = self.root / f"{link_id}.json"
        gone = LinkNotFound(
            f"This link has expired or is unknown (long links are kept {self.ttl / 3600:g} h after their last use); "
            "ask its sender for a new one."
        )
        try:
            stored = json.loads(path.read_text(encoding="utf-8"))
            encoded, created = str(stored["s"]), float(stored["created"])
        except FileNotFoundError:
            raise gone from None
        except (OSError, ValueError, TypeError, KeyError, AttributeError) as exc:
            raise LinkNotFound("This link's stored view is damaged; ask its sender for a new one.") from exc
        if (time.time() if now is None else now) - created >= self.ttl:
            path.unlink(missing_ok=True)
            raise gone
        return ViewState.decode(encoded)

    def sweep(self, *, now: float | None = None, force: bool = False) -> int:
        """Delete expired and damaged links and leftovers of interrupted writes; returns how many links expired."""
        current = time.time() if now is None else now
        removed = 0
        try:
            entries = list(os.scandir(self.root))
        except FileNotFoundError:
            return 0
        for entry in entries:
            path = Path(entry.path)
            try:
                if entry.name.startswith(".tmp-"):
                    if current - entry.stat().st_mtime > 600:
                        path.unlink(missing_ok=True)
                    continue
                if not entry.name.endswith(".json") or not _ID.fullmatch(entry.name[:-5]):
                    continue  # the key, or not ours
                try:
                    created = float(json.loads(path.read_text(encoding="utf-8"))["created"])
                except (ValueError, TypeError, KeyError):
                    created = -float("inf")  # damaged: delete
                if current - created >= self.ttl:
                    path.unlink(missing_ok=True)
                    removed += 1
            except OSError:
                continue
        return removed

    def _count(self) -> int:
        try:
            return sum(1 for entry in os.scandir(self.root) if entry.name.endswith(".json"))
        except FileNotFoundError:
            return 0

    def _secret(self) -> bytes:
        """The folder's HMAC key, made once (atomically, so concurrent workers agree on one key)."""
        if self._key is not None:
            return self._key
        self.root.mkdir(parents=True, exist_ok=True, mode=0o700)
        with contextlib.suppress(OSError):
            os.chmod(self.root, 0o700)
        path = self.root / ".key"
        try:
            key = path.read_bytes()
        except FileNotFoundError:
            key = b""
        if len(key) < 32:
            temp = self.root / f".tmp-{secrets.token_hex(8)}"
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as handle:
                handle.write(secrets.token_bytes(32))
                handle.flush()
                os.fsync(handle.fileno())
            try:
                os.link(temp, path)  # fails when another worker made the key first: then use that one
            except FileExistsError:
                pass
            finally:
                temp.unlink(missing_ok=True)
            key = path.read_bytes()
            if len(key) < 32:
                raise StateError("The link store's key is damaged; delete links/.key in the upload store.")
        self._key = key
        return key


def _first(value: Any) -> str | None:
    if isinstance(value, list | tuple):
        value = value[0] if value else None
    return value if isinstance(value, str) else None
