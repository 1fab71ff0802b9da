"""Settings of the dashboard and the command line, read from the environment (all optional).

:meth:`Settings.from_env` is the one place that reads the environment; the entry points (``app.py``,
``privdash``, ``python -m dashboard``) call it once and pass the settings, or values from them, down. The core
never reads the environment.

==========================  ==========================================================  ==========================
variable                    meaning                                                     default
==========================  ==========================================================  ==========================
``HOST``                    address ``python app.py`` / ``privdash serve`` listens on   ``127.0.0.1``
``PORT``                    port ``python app.py`` / ``privdash serve`` listens on      ``8050``
``PRIVDASH_STORE_DIR``      folder of uploaded datasets (shared by all workers)         ``./var/store``
``PRIVDASH_STORE_TTL``      lifetime of an upload: seconds, or with ``m``/``h``/``d``   ``24h``
``PRIVDASH_MAX_UPLOAD_MB``  largest accepted upload, in MB (10^6 bytes)                 ``100``
``PRIVDASH_CACHE_DIR``      folder of the background-job cache; also of the processed   ``./var/cache`` (jobs),
                            postcode polygons                                           see ``XDG_CACHE_HOME``
``XDG_CACHE_HOME``          processed postcode polygons go to ``$XDG_CACHE_HOME/         ``~/.cache/privdash``
                            privdash`` when ``PRIVDASH_CACHE_DIR`` is not set
``PRIVDASH_CACHE_ITEMS``    parsed tables each worker keeps in memory                   ``4``
``PRIVDASH_CACHE_MB``       memory a worker's result cache may hold (diagnoses, fixed   ``1024``
                            tables, per-class tables), in MB
``PRIVDASH_DATA_DIR``       shared reference data (census populations, polygons)        ``../shared/data``
                                                                                        (from the working folder)
``PRIVDASH_PSEUDONYM_KEY``  secret key of the HMAC-SHA256 pseudonyms (at least 16       none: pseudonymisation
                            bytes); never printed, never stored in a recipe             is refused
==========================  ==========================================================  ==========================
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from dashboard.core.errors import ParameterError
from dashboard.core.geo.geography import default_cache_dir
from dashboard.core.geo.postcodes import default_data_dir

__all__ = ["Settings", "parse_duration"]

_UNITS = {"": 1.0, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def parse_duration(text: str) -> float:
    """Seconds in ``"90"``, ``"90s"``, ``"15m"``, ``"24h"`` or ``"7d"``."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*", str(text).lower())
    if not match or float(match.group(1)) <= 0:
        raise ParameterError(f"Not a positive duration: {text!r} (use e.g. 3600, 90m, 24h or 7d).")
    return float(match.group(1)) * _UNITS[match.group(2)]


@dataclass(frozen=True)
class Settings:
    """Where the dashboard keeps its files, how large an upload may be, where the reference data is, and the key.

    Attributes
    ----------
    store_dir, store_ttl, max_upload_bytes
        The upload store: folder, lifetime of an upload in seconds, largest accepted upload in bytes.
    cache_dir, cache_items, cache_bytes
        The background-job cache folder; parsed tables each worker keeps in memory; the memory budget of a worker's
        result cache (:class:`~dashboard.application.cache.BoundedCache`).
    data_dir
        The shared reference data (always an absolute path; default ``../shared/data`` from the working folder).
    geo_cache_dir
        Where processed postcode polygons are cached.
    pseudonym_key
        The secret key of pseudonyms, or None (left out of ``repr`` so that it is never printed or logged).
    host, port
        Where the development server listens.
    """

    store_dir: Path = Path("var/store")
    store_ttl: float = 24 * 3600.0
    max_upload_bytes: int = 100_000_000
    cache_dir: Path = Path("var/cache")
    cache_items: int = 4
    cache_bytes: int = 1_024_000_000
    data_dir: Path = field(default_factory=default_data_dir)
    geo_cache_dir: Path = field(default_factory=default_cache_dir)
    pseudonym_key: str | None = field(default=None, repr=False)
    host: str = "127.0.0.1"
    port: int = 8050

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        """Settings from ``env`` (default: ``os.environ``); empty variables count as unset."""
        env = os.environ if env is None else env
        values = {name: value for name, value in env.items() if value}
        default = cls()
        try:
            max_mb = float(values.get("PRIVDASH_MAX_UPLOAD_MB", default.max_upload_bytes / 1e6))
            cache_items = int(values.get("PRIVDASH_CACHE_ITEMS", default.cache_items))
            cache_mb = float(values.get("PRIVDASH_CACHE_MB", default.cache_bytes / 1e6))
            port = int(values.get("PORT", default.port))
        except ValueError as exc:
            raise ParameterError(
                f"PRIVDASH_MAX_UPLOAD_MB, PRIVDASH_CACHE_ITEMS, PRIVDASH_CACHE_MB and PORT must be numbers: {exc}"
            ) from exc
        if max_mb <= 0 or cache_items < 1 or cache_mb <= 0:
            raise ParameterError(
                "PRIVDASH_MAX_UPLOAD_MB and PRIVDASH_CACHE_MB must be positive and PRIVDASH_CACHE_ITEMS at least 1."
            )
        if not 0 <= port <= 65535:
            raise ParameterError(f"PORT must be between 0 and 65535, got {port}.")
        ttl = values.get("PRIVDASH_STORE_TTL")
        cache = values.get("PRIVDASH_CACHE_DIR")
        xdg = values.get("XDG_CACHE_HOME")
        if cache:
            geo_cache_dir = Path(cache).expanduser()
        elif xdg:
            geo_cache_dir = Path(xdg).expanduser() / "privdash"
        else:
            geo_cache_dir = default.geo_cache_dir
        data = values.get("PRIVDASH_DATA_DIR")
        return cls(
            store_dir=Path(values.get("PRIVDASH_STORE_DIR", default.store_dir)),
            store_ttl=parse_duration(ttl) if ttl else default.store_ttl,
            max_upload_bytes=int(max_mb * 1e6),
            cache_dir=Path(cache) if cache else default.cache_dir,
            cache_items=cache_items,
            cache_bytes=int(cache_mb * 1e6),
            data_dir=Path(data).expanduser().resolve() if data else default.data_dir,
            geo_cache_dir=geo_cache_dir,
            pseudonym_key=values.get("PRIVDASH_PSEUDONYM_KEY"),
            host=values.get("HOST", default.host),
            port=port,
        )
