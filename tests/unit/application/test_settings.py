"""Settings from the environment."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from privdash.application.settings import Settings, parse_duration
from privdash.errors import ParameterError

ROOT = Path(__file__).resolve().parents[3]
KEY = "a-test-key-of-enough-length-123"


def test_defaults(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    settings = Settings.from_env({})
    assert settings == Settings()
    assert settings.max_upload_bytes == 100_000_000 and settings.store_ttl == 24 * 3600
    assert settings.pseudonym_key is None and (settings.host, settings.port) == ("127.0.0.1", 8050)
    assert settings.geo_cache_dir == Path.home() / ".cache" / "privdash"
    # The reference data defaults to ../shared/data seen from the working folder, as an absolute path.
    monkeypatch.chdir(tmp_path)
    assert Settings.from_env({}).data_dir == tmp_path.resolve().parent / "shared" / "data"
    assert Settings().data_dir.is_absolute()


def test_values_from_the_environment(tmp_path: Path) -> None:
    settings = Settings.from_env(
        {
            "PRIVDASH_STORE_DIR": "/srv/store",
            "PRIVDASH_STORE_TTL": "90m",
            "PRIVDASH_MAX_UPLOAD_MB": "2.5",
            "PRIVDASH_CACHE_DIR": "/srv/cache",
            "PRIVDASH_CACHE_ITEMS": "2",
            "PRIVDASH_DATA_DIR": str(tmp_path / "data" / ".." / "data"),
            "PRIVDASH_PSEUDONYM_KEY": KEY,
            "HOST": "0.0.0.0",
            "PORT": "9000",
        }
    )
    assert settings == Settings(
        Path("/srv/store"),
        5400.0,
        2_500_000,
        Path("/srv/cache"),
        2,
        data_dir=tmp_path.resolve() / "data",
        geo_cache_dir=Path("/srv/cache"),
        pseudonym_key=KEY,
        host="0.0.0.0",
        port=9000,
    )


def test_polygon_cache_folder() -> None:
    assert Settings.from_env({"XDG_CACHE_HOME": "/tmp/xdg"}).geo_cache_dir == Path("/tmp/xdg/privdash")
    both = Settings.from_env({"XDG_CACHE_HOME": "/tmp/xdg", "PRIVDASH_CACHE_DIR": "/srv/c"})
    assert both.geo_cache_dir == both.cache_dir == Path("/srv/c")


def test_empty_variables_count_as_unset() -> None:
    settings = Settings.from_env({"PRIVDASH_PSEUDONYM_KEY": "", "PRIVDASH_DATA_DIR": "", "PORT": ""})
    assert settings == Settings()


def test_the_key_is_never_shown() -> None:
    settings = Settings(pseudonym_key=KEY)
    assert KEY not in repr(settings) and KEY not in str(settings)
    assert settings.pseudonym_key == KEY


def test_os_environ_is_read_only_by_the_settings() -> None:
    """The core reads nothing from the environment; in the package only ``Settings.from_env`` does."""
    readers = sorted(
        path.relative_to(ROOT).as_posix()
        for package in ("privdash", "dashboard")
        for path in (ROOT / package).rglob("*.py")
        if re.search(r"os\.environ|getenv", path.read_text(encoding="utf-8"))
    )
    assert readers == ["privdash/application/settings.py"]


@pytest.mark.parametrize(
    ("text", "seconds"), [("3600", 3600), ("90s", 90), ("15m", 900), ("24h", 86400), ("7d", 604800)]
)
def test_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize(
    "env",
    [
        {"PRIVDASH_STORE_TTL": "soon"},
        {"PRIVDASH_STORE_TTL": "0"},
        {"PRIVDASH_MAX_UPLOAD_MB": "lots"},
        {"PRIVDASH_MAX_UPLOAD_MB": "-1"},
        {"PRIVDASH_CACHE_ITEMS": "0"},
        {"PORT": "http"},
        {"PORT": "70000"},
    ],
)
def test_bad_values_are_reported(env: dict[str, str]) -> None:
    with pytest.raises(ParameterError):
        Settings.from_env(env)


def test_store_quota_limit_and_web_settings_from_the_environment() -> None:
    settings = Settings.from_env(
        {
            "PRIVDASH_SWEEP_INTERVAL": "2m",
            "PRIVDASH_SESSION_MAX_MB": "250",
            "PRIVDASH_SESSION_MAX_DATASETS": "5",
            "PRIVDASH_STORE_MAX_MB": "1000",
            "PRIVDASH_MAX_ROWS": "1000",
            "PRIVDASH_MAX_COLUMNS": "50",
            "PRIVDASH_MAX_CELLS": "20000",
            "PRIVDASH_MAX_DECOMPRESSED_MB": "64",
            "PRIVDASH_MAX_PARSE_SECONDS": "7.5",
            "PRIVDASH_SECURE_COOKIES": "true",
            "PRIVDASH_TRUSTED_PROXIES": "1",
        }
    )
    assert settings.sweep_interval == 120
    assert (settings.session_max_bytes, settings.session_max_datasets) == (250_000_000, 5)
    assert settings.store_max_bytes == 1_000_000_000
    assert (settings.max_rows, settings.max_columns, settings.max_cells) == (1000, 50, 20000)
    assert settings.max_decompressed_bytes == 64_000_000 and settings.max_parse_seconds == 7.5
    assert settings.secure_cookies is True and settings.trusted_proxies == 1
    assert Settings.from_env({"PRIVDASH_SECURE_COOKIES": "off"}).secure_cookies is False


def test_defaults_for_a_server_of_24_gib_and_4_workers() -> None:
    settings = Settings()
    assert settings.secure_cookies is False and settings.trusted_proxies == 0  # plain HTTP, no proxy trusted
    assert settings.max_parse_seconds < 30  # gunicorn's default worker timeout
    assert settings.max_cells * 8 * 4 < 24 * 2**30 / 2  # four tables of 8-byte numbers take under half the memory
    assert settings.session_max_bytes <= settings.store_max_bytes


@pytest.mark.parametrize(
    "env",
    [
        {"PRIVDASH_SESSION_MAX_DATASETS": "0"},
        {"PRIVDASH_SESSION_MAX_DATASETS": "2.5"},
        {"PRIVDASH_MAX_ROWS": "many"},
        {"PRIVDASH_MAX_COLUMNS": "-3"},
        {"PRIVDASH_MAX_PARSE_SECONDS": "0"},
        {"PRIVDASH_MAX_DECOMPRESSED_MB": "inf"},
        {"PRIVDASH_SWEEP_INTERVAL": "often"},
        {"PRIVDASH_SECURE_COOKIES": "maybe"},
        {"PRIVDASH_TRUSTED_PROXIES": "-1"},
    ],
)
def test_bad_store_limit_and_web_values_are_reported(env: dict[str, str]) -> None:
    name = next(iter(env))
    with pytest.raises(ParameterError, match=name if name != "PRIVDASH_SWEEP_INTERVAL" else "duration"):
        Settings.from_env(env)


def test_the_per_client_limits_and_the_request_limits_are_read() -> None:
    settings = Settings.from_env(
        {
            "PRIVDASH_CLIENT_MAX_MB": "300",
            "PRIVDASH_CLIENT_MAX_DATASETS": "7",
            "PRIVDASH_CLIENT_UPLOADS_PER_HOUR": "9",
            "PRIVDASH_CLIENT_MAX_LINKS": "11",
            "PRIVDASH_MAX_REQUEST_MB": "2.5",
            "PRIVDASH_READ_TIMEOUT": "4",
        }
    )
    assert (settings.client_max_bytes, settings.client_max_datasets, settings.client_uploads_per_hour) == (
        300_000_000,
        7,
        9,
    )
    assert (settings.client_max_links, settings.max_request_bytes, settings.read_timeout) == (11, 2_500_000, 4.0)
    with pytest.raises(ParameterError, match="PRIVDASH_CLIENT_MAX_LINKS must be a whole number"):
        Settings.from_env({"PRIVDASH_CLIENT_MAX_LINKS": "2.5"})
