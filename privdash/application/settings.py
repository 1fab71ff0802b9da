"""Settings of the dashboard and the command line, read from the environment (all optional).

:meth:`Settings.from_env` is the one place that reads the environment; the entry points (``app.py``,
``privdash``, ``python -m dashboard``) call it once and pass the settings, or values from them, down. The core
never reads the environment.

====================================  ===================================================  =========================
variable                              meaning                                              default
====================================  ===================================================  =========================
``HOST``                              address ``python app.py`` / ``privdash serve``       ``127.0.0.1``
                                      listens on
``PORT``                              port ``python app.py`` / ``privdash serve`` listens  ``8050``
                                      on
``PRIVDASH_STORE_DIR``                folder of uploaded datasets (shared by all workers)  ``./var/store``
``PRIVDASH_STORE_TTL``                lifetime of an upload (and of a long link): seconds, ``24h``
                                      or with ``m``/``h``/``d``
``PRIVDASH_SWEEP_INTERVAL``           how often each server process deletes expired        ``5m``
                                      uploads and leftovers of interrupted writes
``PRIVDASH_MAX_UPLOAD_MB``            largest accepted upload, in MB (10^6 bytes)          ``100``
``PRIVDASH_SESSION_MAX_MB``           stored uploads one browser session may keep, in MB   ``500``
``PRIVDASH_SESSION_MAX_DATASETS``     uploads one browser session may keep                 ``20``
``PRIVDASH_STORE_MAX_MB``             stored uploads of all sessions together, in MB       ``20000``
``PRIVDASH_CLIENT_MAX_MB``            stored uploads of one client address (all its        ``2000``
                                      sessions: a new cookie does not reset it), in MB
``PRIVDASH_CLIENT_MAX_DATASETS``      uploads one client address may keep                  ``60``
``PRIVDASH_CLIENT_UPLOADS_PER_HOUR``  uploads one client address may send in an hour       ``60``
                                      (refused files too: reading them costs as much)
``PRIVDASH_CLIENT_MAX_LINKS``         long share links one client address may add within   ``500``
                                      their lifetime
``PRIVDASH_MAX_REQUEST_MB``           largest request body other than an upload (a         ``10``
                                      callback), in MB; at least what a file of
                                      ``PRIVDASH_MAX_UPLOAD_MB`` takes in a callback (4/3
                                      of it, plus 1 MB)
``PRIVDASH_READ_TIMEOUT``             seconds a client may take to send a request's head   ``10``
                                      (and a small body) to the gunicorn worker of
                                      ``gunicorn.conf.py``; a larger body must keep
                                      arriving at 16 KB/s on average after that
``PRIVDASH_MAX_ROWS``                 rows of an uploaded table                            ``2000000``
``PRIVDASH_MAX_COLUMNS``              columns of an uploaded table                         ``2000``
``PRIVDASH_MAX_CELLS``                cells (rows x columns) of an uploaded table          ``50000000``
``PRIVDASH_MAX_DECOMPRESSED_MB``      data an uploaded Excel or Parquet file may expand    ``1000``
                                      to when unpacked, in MB
``PRIVDASH_MAX_PARSE_SECONDS``        time reading one uploaded file may take              ``20``
``PRIVDASH_SECURE_COOKIES``           ``1``: the app is served over HTTPS, so the session  ``0``
                                      cookie is marked ``Secure``
``PRIVDASH_TRUSTED_PROXIES``          reverse proxies in front of the app whose            ``0``
                                      ``X-Forwarded-*`` headers are trusted (scheme, host,
                                      client address); a request forwarded as HTTPS then
                                      gets a ``Secure`` cookie too
``PRIVDASH_CACHE_DIR``                folder of the background-job cache; also of the      ``./var/cache`` (jobs),
                                      processed postcode polygons                          see ``XDG_CACHE_HOME``
``XDG_CACHE_HOME``                    processed postcode polygons go to                    ``~/.cache/privdash``
                                      ``$XDG_CACHE_HOME/privdash`` when
                                      ``PRIVDASH_CACHE_DIR`` is not set
``PRIVDASH_CACHE_ITEMS``              parsed tables each worker keeps in memory            ``4``
``PRIVDASH_CACHE_MB``                 memory a worker's result cache may hold (diagnoses,  ``1024``
                                      fixed tables, per-class tables), in MB
``PRIVDASH_DATA_DIR``                 shared reference data (census populations,           ``../shared/data``
                                      polygons)                                            (from the working folder)
``PRIVDASH_PSEUDONYM_KEY``            secret key of the HMAC-SHA256 pseudonyms (at least   none: pseudonymisation
                                      16 bytes); never printed, never stored in a recipe   is refused
``PRIVDASH_JOB_SECONDS``              wall time of one background job (QI combinations,    ``300``
                                      slow Fix previews), in seconds
``PRIVDASH_JOB_MEMORY_MB``            memory one background job may allocate, in MB        half the physical memory
                                                                                           / jobs per server
``PRIVDASH_JOBS_PER_SERVER``          background jobs running at once on the server (all   number of CPU cores
                                      workers together); one per browser session, the
                                      rest wait in a queue
``PRIVDASH_JOB_ABANDON_SECONDS``      a background job whose page stopped asking for it    ``10``
                                      for 3 polling intervals plus this long is stopped
``PRIVDASH_SOURCES``                  JSON file of server-side sources (Parquet folders,   none
                                      PostgreSQL tables, Spark) that users may open and
                                      diagnose in place (:mod:`~privdash.application.
                                      sources`)
``PRIVDASH_DP_BUDGET``                total differential-privacy budget of a dataset:      ``1,1e-6``
                                      ``EPS`` or ``EPS,DELTA``, fixed when its first
                                      release is charged (the Fix page's ledger)
====================================  ===================================================  =========================

The reading limits are sized for a server with 24 GiB of memory and 4 workers (about 6 GiB each, of which the
result cache may take ``PRIVDASH_CACHE_MB``): a table at the cell limit holds 0.4 GB as 8-byte numbers and about
1 GB as short texts once read, several times that while it is parsed; the time limit answers inside gunicorn's
default 30 s worker timeout (a step of the reader is not interrupted, so it may overrun by a fraction of a second).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from privdash.dp.mechanisms import DEFAULT_TOTAL_DELTA, PrivacyBudget
from privdash.errors import ParameterError
from privdash.geo.postcodes import default_data_dir

__all__ = ["READ_LIMIT_VARIABLES", "Settings", "parse_duration", "parse_flag"]

_UNITS = {"": 1.0, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def parse_duration(text: str) -> float:
    """Seconds in ``"90"``, ``"90s"``, ``"15m"``, ``"24h"`` or ``"7d"``."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*", str(text).lower())
    if not match or float(match.group(1)) <= 0:
        raise ParameterError(f"Not a positive duration: {text!r} (use e.g. 3600, 90m, 24h or 7d).")
    return float(match.group(1)) * _UNITS[match.group(2)]


_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def parse_flag(name: str, text: str) -> bool:
    """``1``/``true``/``yes``/``on`` or ``0``/``false``/``no``/``off`` (any case) as a bool."""
    value = str(text).strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ParameterError(f"{name} must be 1 or 0 (true/false, yes/no, on/off), got {text!r}.")


#: The numeric settings: (attribute, variable, what one unit of the variable is worth (1e6 for MB), smallest value).
_LIMITS: tuple[tuple[str, str, float, float], ...] = (
    ("max_upload_bytes", "PRIVDASH_MAX_UPLOAD_MB", 1e6, 1e-6),
    ("cache_bytes", "PRIVDASH_CACHE_MB", 1e6, 1e-6),
    ("session_max_bytes", "PRIVDASH_SESSION_MAX_MB", 1e6, 1e-6),
    ("store_max_bytes", "PRIVDASH_STORE_MAX_MB", 1e6, 1e-6),
    ("max_decompressed_bytes", "PRIVDASH_MAX_DECOMPRESSED_MB", 1e6, 1e-6),
    ("max_parse_seconds", "PRIVDASH_MAX_PARSE_SECONDS", 1.0, 1e-3),
    ("cache_items", "PRIVDASH_CACHE_ITEMS", 1.0, 1),
    ("session_max_datasets", "PRIVDASH_SESSION_MAX_DATASETS", 1.0, 1),
    ("max_rows", "PRIVDASH_MAX_ROWS", 1.0, 1),
    ("max_columns", "PRIVDASH_MAX_COLUMNS", 1.0, 1),
    ("max_cells", "PRIVDASH_MAX_CELLS", 1.0, 1),
    ("trusted_proxies", "PRIVDASH_TRUSTED_PROXIES", 1.0, 0),
    ("client_max_bytes", "PRIVDASH_CLIENT_MAX_MB", 1e6, 1e-6),
    ("client_max_datasets", "PRIVDASH_CLIENT_MAX_DATASETS", 1.0, 1),
    ("client_uploads_per_hour", "PRIVDASH_CLIENT_UPLOADS_PER_HOUR", 1.0, 1),
    ("client_max_links", "PRIVDASH_CLIENT_MAX_LINKS", 1.0, 1),
    ("max_request_bytes", "PRIVDASH_MAX_REQUEST_MB", 1e6, 1e-3),
    ("read_timeout", "PRIVDASH_READ_TIMEOUT", 1.0, 1e-3),
)

#: The background jobs' limits (see privdash.application.jobs): attribute, variable, unit, smallest value.
_JOB_LIMITS: tuple[tuple[str, str, float, float], ...] = (
    ("job_seconds", "PRIVDASH_JOB_SECONDS", 1.0, 1e-3),
    ("job_memory_bytes", "PRIVDASH_JOB_MEMORY_MB", 1e6, 1e-6),
    ("jobs_per_server", "PRIVDASH_JOBS_PER_SERVER", 1.0, 1),
    ("job_abandon_seconds", "PRIVDASH_JOB_ABANDON_SECONDS", 1.0, 1e-3),
)
_LIMITS += _JOB_LIMITS


def cpu_cores() -> int:
    """CPU cores this process may run on (the default number of background jobs running at once)."""
    try:
        return max(len(os.sched_getaffinity(0)), 1)
    except AttributeError:  # not Linux
        return max(os.cpu_count() or 1, 1)


#: The variable that sets each reading limit (by the name of the core's ``ReadLimits`` field), cited in messages.
READ_LIMIT_VARIABLES: Mapping[str, str] = {
    "max_rows": "PRIVDASH_MAX_ROWS",
    "max_columns": "PRIVDASH_MAX_COLUMNS",
    "max_cells": "PRIVDASH_MAX_CELLS",
    "max_decompressed_bytes": "PRIVDASH_MAX_DECOMPRESSED_MB",
    "max_seconds": "PRIVDASH_MAX_PARSE_SECONDS",
}


def _default_cache_dir() -> Path:
    """:func:`privdash.geo.geography.default_cache_dir`, imported when asked for: the geography module loads
    geopandas and shapely, which a command that only reads its settings does not need."""
    from privdash.geo.geography import default_cache_dir

    return default_cache_dir()


@dataclass(frozen=True)
class Settings:
    """Where the dashboard keeps its files, how large an upload may be, where the reference data is, and the key.

    Attributes
    ----------
    store_dir, store_ttl, max_upload_bytes
        The upload store: folder, lifetime of an upload in seconds, largest accepted upload in bytes.
    cache_dir, cache_items, cache_bytes
        The background-job cache folder; parsed tables each worker keeps in memory; the memory limit of a worker's
        result cache (:class:`~privdash.application.cache.BoundedCache`).
    data_dir
        The shared reference data (always an absolute path; default ``../shared/data`` from the working folder).
    geo_cache_dir
        Where processed postcode polygons are cached.
    pseudonym_key
        The secret key of pseudonyms, or None (left out of ``repr`` so that it is never printed or logged).
    host, port
        Where the development server listens.
    sweep_interval
        Seconds between two sweeps of the store by a server process (expired uploads and links, leftovers).
    session_max_bytes, session_max_datasets, store_max_bytes
        Quotas of the store: bytes and uploads one browser session may keep, bytes of all sessions together.
    max_rows, max_columns, max_cells, max_decompressed_bytes, max_parse_seconds
        Limits of reading one uploaded file (the core's ``ReadLimits``), so that a small file that expands to a
        huge table is refused with a message instead of exhausting a worker's memory or time.
    secure_cookies
        The app is served over HTTPS: the session cookie is marked ``Secure``.
    trusted_proxies
        Reverse proxies in front of the app whose ``X-Forwarded-For/Proto/Host`` headers are trusted (0: none).
        The client address the per-client limits count is the one these proxies forwarded.
    client_max_bytes, client_max_datasets, client_uploads_per_hour, client_max_links
        Limits per client address, which a client cannot shed by dropping its session cookie: bytes and uploads
        it may keep stored, uploads it may send per hour, long share links it may add within their lifetime.
    max_request_bytes
        The largest request body other than an upload (Dash callbacks), in bytes; the app allows at least what a
        file of ``max_upload_bytes`` takes base64-encoded in a callback (a release for the attack section).
    read_timeout
        Seconds the gunicorn worker of ``gunicorn.conf.py`` waits for a request's head and small body before it
        gives the request a thread (:mod:`dashboard.server`).
    sources_file
        The JSON file listing server-side sources (``PRIVDASH_SOURCES``), or None.
    dp_budget
        The total (ε, δ) of differentially private releases of one dataset (``PRIVDASH_DP_BUDGET``).
    job_seconds, job_memory_bytes, jobs_per_server, job_abandon_seconds
        Background jobs: wall time of one job; memory one job may allocate (0: half the physical memory divided by
        ``jobs_per_server``); jobs running at once on the server; seconds past three polling intervals without a
        poll after which a job counts as abandoned (:class:`~privdash.application.jobs.JobLimits`).
    """

    store_dir: Path = Path("var/store")
    store_ttl: float = 24 * 3600.0
    max_upload_bytes: int = 100_000_000
    cache_dir: Path = Path("var/cache")
    cache_items: int = 4
    cache_bytes: int = 1_024_000_000
    data_dir: Path = field(default_factory=default_data_dir)
    geo_cache_dir: Path = field(default_factory=_default_cache_dir)
    pseudonym_key: str | None = field(default=None, repr=False)
    host: str = "127.0.0.1"
    port: int = 8050
    sweep_interval: float = 300.0
    session_max_bytes: int = 500_000_000
    session_max_datasets: int = 20
    store_max_bytes: int = 20_000_000_000
    max_rows: int = 2_000_000
    max_columns: int = 2_000
    max_cells: int = 50_000_000
    max_decompressed_bytes: int = 1_000_000_000
    max_parse_seconds: float = 20.0
    secure_cookies: bool = False
    trusted_proxies: int = 0
    client_max_bytes: int = 2_000_000_000
    client_max_datasets: int = 60
    client_uploads_per_hour: int = 60
    client_max_links: int = 500
    max_request_bytes: int = 10_000_000
    read_timeout: float = 10.0
    job_seconds: float = 300.0
    job_memory_bytes: int = 0
    jobs_per_server: int = field(default_factory=cpu_cores)
    job_abandon_seconds: float = 10.0
    sources_file: Path | None = None
    dp_budget: PrivacyBudget = field(default_factory=lambda: PrivacyBudget(1.0, DEFAULT_TOTAL_DELTA))

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        """Settings from ``env`` (default: ``os.environ``); empty variables count as unset."""
        env = os.environ if env is None else env
        values = {name: value for name, value in env.items() if value}
        default = cls()
        numbers: dict[str, int | float] = {}
        for attribute, variable, unit, smallest in _LIMITS:
            current = getattr(default, attribute)
            if variable not in values:
                numbers[attribute] = current
                continue
            try:
                number = float(values[variable])
            except ValueError:
                raise ParameterError(f"{variable} must be a number, got {values[variable]!r}.") from None
            if not number >= smallest or number == float("inf"):
                raise ParameterError(f"{variable} must be a number of at least {smallest:g}, got {number:g}.")
            if isinstance(current, int) and not isinstance(current, bool):
                if unit == 1.0 and not number.is_integer():
                    raise ParameterError(f"{variable} must be a whole number, got {values[variable]!r}.")
                numbers[attribute] = int(number * unit)
            else:
                numbers[attribute] = number * unit
        try:
            port = int(values.get("PORT", default.port))
        except ValueError as exc:
            raise ParameterError(f"PORT must be a number: {exc}") from exc
        if not 0 <= port <= 65535:
            raise ParameterError(f"PORT must be between 0 and 65535, got {port}.")
        ttl = values.get("PRIVDASH_STORE_TTL")
        sweep = values.get("PRIVDASH_SWEEP_INTERVAL")
        secure = values.get("PRIVDASH_SECURE_COOKIES")
        cache = values.get("PRIVDASH_CACHE_DIR")
        xdg = values.get("XDG_CACHE_HOME")
        if cache:
            geo_cache_dir = Path(cache).expanduser()
        elif xdg:
            geo_cache_dir = Path(xdg).expanduser() / "privdash"
        else:
            geo_cache_dir = default.geo_cache_dir
        data = values.get("PRIVDASH_DATA_DIR")
        try:
            budget = PrivacyBudget.parse(values["PRIVDASH_DP_BUDGET"]) if "PRIVDASH_DP_BUDGET" in values else None
        except ParameterError as exc:
            raise ParameterError(f"PRIVDASH_DP_BUDGET: {exc}") from None
        return cls(
            store_dir=Path(values.get("PRIVDASH_STORE_DIR", default.store_dir)),
            store_ttl=parse_duration(ttl) if ttl else default.store_ttl,
            cache_dir=Path(cache) if cache else default.cache_dir,
            data_dir=Path(data).expanduser().resolve() if data else default.data_dir,
            geo_cache_dir=geo_cache_dir,
            pseudonym_key=values.get("PRIVDASH_PSEUDONYM_KEY"),
            sources_file=Path(values["PRIVDASH_SOURCES"]).expanduser() if "PRIVDASH_SOURCES" in values else None,
            host=values.get("HOST", default.host),
            port=port,
            sweep_interval=parse_duration(sweep) if sweep else default.sweep_interval,
            secure_cookies=parse_flag("PRIVDASH_SECURE_COOKIES", secure) if secure else default.secure_cookies,
            dp_budget=budget or default.dp_budget,
            **numbers,  # type: ignore[arg-type]
        )
