"""Settings from the environment."""

from __future__ import annotations

from pathlib import Path

import pytest

from dashboard.application.settings import Settings, parse_duration
from dashboard.core.errors import ParameterError


def test_defaults() -> None:
    settings = Settings.from_env({})
    assert settings == Settings()
    assert settings.max_upload_bytes == 100_000_000 and settings.store_ttl == 24 * 3600


def test_values_from_the_environment() -> None:
    settings = Settings.from_env(
        {
            "PRIVDASH_STORE_DIR": "/srv/store",
            "PRIVDASH_STORE_TTL": "90m",
            "PRIVDASH_MAX_UPLOAD_MB": "2.5",
            "PRIVDASH_CACHE_DIR": "/srv/cache",
            "PRIVDASH_CACHE_ITEMS": "2",
        }
    )
    assert settings == Settings(Path("/srv/store"), 5400.0, 2_500_000, Path("/srv/cache"), 2)


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
    ],
)
def test_bad_values_are_reported(env: dict[str, str]) -> None:
    with pytest.raises(ParameterError):
        Settings.from_env(env)
