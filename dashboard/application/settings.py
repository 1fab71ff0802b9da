"""Dashboard settings, read from the environment (all optional).

=========================  ==========================================================  ===================
variable                   meaning                                                     default
=========================  ==========================================================  ===================
``PRIVDASH_STORE_DIR``     folder of uploaded datasets (shared by all workers)          ``./var/store``
``PRIVDASH_STORE_TTL``     lifetime of an upload: seconds, or with ``m``/``h``/``d``    ``24h``
``PRIVDASH_MAX_UPLOAD_MB`` largest accepted upload, in MB (10^6 bytes)                  ``100``
``PRIVDASH_CACHE_DIR``     folder of the background-job cache                           ``./var/cache``
``PRIVDASH_CACHE_ITEMS``   parsed tables each worker keeps in memory                    ``4``
``PRIVDASH_DATA_DIR``      shared reference data (census populations, polygons)         ``../shared/data``
=========================  ==========================================================  ===================
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from dashboard.core.errors import ParameterError

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
    """Where the dashboard keeps its files and how large an upload may be."""

    store_dir: Path = Path("var/store")
    store_ttl: float = 24 * 3600.0
    max_upload_bytes: int = 100_000_000
    cache_dir: Path = Path("var/cache")
    cache_items: int = 4
    #: Folder of the shared reference data; None: :func:`dashboard.core.geo.postcodes.default_data_dir`.
    data_dir: Path | None = None

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        """Settings from ``env`` (default: ``os.environ``)."""
        env = os.environ if env is None else env
        default = cls()
        try:
            max_mb = float(env.get("PRIVDASH_MAX_UPLOAD_MB", default.max_upload_bytes / 1e6))
            cache_items = int(env.get("PRIVDASH_CACHE_ITEMS", default.cache_items))
        except ValueError as exc:
            raise ParameterError(f"PRIVDASH_MAX_UPLOAD_MB and PRIVDASH_CACHE_ITEMS must be numbers: {exc}") from exc
        if max_mb <= 0 or cache_items < 1:
            raise ParameterError("PRIVDASH_MAX_UPLOAD_MB must be positive and PRIVDASH_CACHE_ITEMS at least 1.")
        ttl = env.get("PRIVDASH_STORE_TTL")
        return cls(
            store_dir=Path(env.get("PRIVDASH_STORE_DIR", default.store_dir)),
            store_ttl=parse_duration(ttl) if ttl else default.store_ttl,
            max_upload_bytes=int(max_mb * 1e6),
            cache_dir=Path(env.get("PRIVDASH_CACHE_DIR", default.cache_dir)),
            cache_items=cache_items,
            data_dir=Path(env["PRIVDASH_DATA_DIR"]) if env.get("PRIVDASH_DATA_DIR") else None,
        )
