"""The bad-file corpus (:mod:`tests.badfiles`) through ``POST /api/upload``, and the bombs against the defaults.

Every uploadable case must get either a 4xx answer whose message matches the case, or a 200 answer whose dataset
reads back as the case says; never a 500, never a traceback in the log, each within 30 seconds. The corpus states
what the reader does with given limits, or with the reader's defaults; the server reads with the limits of its
settings. So a case with limits is uploaded to an app whose settings carry exactly those limits (the others set
out of reach), and the server cites its own setting names (``PRIVDASH_MAX_PARSE_SECONDS`` ...) in place of those
the case's limits cite. A case without limits is uploaded to an app with the default settings (and the reader's
own decompression limit, which the corpus's messages quote): a table the reader reads must then be stored, unless
its shape is over a default limit, when the answer must be that limit's message.
"""

from __future__ import annotations

import logging
import math
import re
import secrets
import time
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from dash import Dash

from dashboard.app import SESSION_COOKIE, create_app
from privdash.application.settings import READ_LIMIT_VARIABLES, Settings
from privdash.data.tables import DEFAULT_MAX_DECOMPRESSED_BYTES, ReadLimits
from tests.badfiles import Case, write_corpus

CASE_SECONDS = 30.0
#: Settings limits standing for "no limit" (Settings holds numbers; the reader's own default stays in force).
UNLIMITED = {
    "max_rows": 10**12,
    "max_columns": 10**12,
    "max_cells": 10**15,
    "max_decompressed_bytes": DEFAULT_MAX_DECOMPRESSED_BYTES,
    "max_parse_seconds": 10**6,
}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> list[Case]:
    return [case for case in write_corpus(tmp_path_factory.mktemp("badfiles")) if case.upload]


class AppsByLimits(dict[ReadLimits | None, Dash]):
    """Apps by the reading limits of their settings, built when first asked for."""

    def __init__(self, root: Path) -> None:
        super().__init__()
        self.root = root

    def __missing__(self, limits: ReadLimits | None) -> Dash:
        values: dict[str, Any] = {"max_decompressed_bytes": DEFAULT_MAX_DECOMPRESSED_BYTES}
        if limits is not None:
            values = dict(UNLIMITED)
            for name in ("max_rows", "max_columns", "max_cells", "max_decompressed_bytes"):
                if getattr(limits, name) is not None:
                    values[name] = getattr(limits, name)
            if limits.max_seconds is not None:
                values["max_parse_seconds"] = limits.max_seconds
        folder = self.root / f"app{len(self)}"
        app = create_app(Settings(store_dir=folder / "store", cache_dir=folder / "cache", **values))
        self[limits] = app
        return app


@pytest.fixture(scope="module")
def apps(tmp_path_factory: pytest.TempPathFactory) -> AppsByLimits:
    return AppsByLimits(tmp_path_factory.mktemp("apps"))


def expected_error(case: Case) -> str:
    """The case's message pattern, with the server's setting names in place of those the case's limits cite."""
    assert case.error is not None
    pattern = case.error
    if case.limits is not None:
        for limit, name in case.limits.setting_names.items():
            pattern = pattern.replace(name, READ_LIMIT_VARIABLES[limit])
    return pattern


def over_a_default_limit(case: Case) -> bool:
    """Whether the table a case reads is larger than the server's default limits allow."""
    if case.shape is None:
        return False
    rows, columns = case.shape
    defaults = Settings()
    return rows > defaults.max_rows or columns > defaults.max_columns or rows * columns > defaults.max_cells


def leading(values: pd.Series, count: int) -> list[object]:
    return [None if isinstance(v, float) and math.isnan(v) else v for v in values.head(count).tolist()]


def test_the_corpus_is_there(corpus: list[Case]) -> None:
    assert len(corpus) >= 35
    assert any(case.reads for case in corpus) and any(not case.reads for case in corpus)


def test_every_bad_file_gets_its_message_or_a_readable_dataset(
    corpus: list[Case], apps: AppsByLimits, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    problems: list[str] = []
    for number, case in enumerate(corpus):
        app = apps[case.limits]
        client = app.server.test_client()
        client.set_cookie(SESSION_COOKIE, secrets.token_urlsafe(32))  # a browser of its own: quotas do not add up
        # ... at an address of its own: a server limits the uploads of one address too.
        client.environ_base["REMOTE_ADDR"] = f"10.25.{number // 250}.{number % 250 + 1}"
        data: dict[str, Any] = {"file": (case.path.open("rb"), case.path.name)}
        if case.sheet is not None:
            data["sheet"] = str(case.sheet)
        started = time.monotonic()
        response = client.post("/api/upload", data=data, content_type="multipart/form-data")
        seconds = time.monotonic() - started
        body = response.get_json(silent=True) or {}
        text = response.get_data(as_text=True)
        if seconds > CASE_SECONDS:
            problems.append(f"{case.name}: {seconds:.1f} s")
        if "Traceback" in text:
            problems.append(f"{case.name}: a traceback in the answer")
        if case.error is not None or (case.limits is None and over_a_default_limit(case)):
            wanted = expected_error(case) if case.error is not None else r"over the limit of .* \(PRIVDASH_MAX_\w+\)"
            if not 400 <= response.status_code < 500 or not re.search(wanted, body.get("error", "")):
                problems.append(f"{case.name}: {response.status_code} {body.get('error')!r}, wanted {wanted!r}")
            continue
        if response.status_code != 200:
            problems.append(f"{case.name}: {response.status_code} {body.get('error')!r}, wanted a dataset")
            continue
        loaded = app.server.extensions["privdash"].dataset(body["id"])
        frame = loaded.frame
        if case.shape is not None and frame.shape != case.shape:
            problems.append(f"{case.name}: shape {frame.shape}, wanted {case.shape}")
        if case.columns is not None and tuple(frame.columns[: len(case.columns)]) != case.columns:
            problems.append(f"{case.name}: columns {tuple(frame.columns)[:5]}, wanted {case.columns}")
        for column, values in case.values.items():
            found = leading(frame[column], len(values))
            if found != list(values):
                problems.append(f"{case.name}: {column} = {found}, wanted {list(values)}")
        if case.note is not None and not any(re.search(case.note, note) for note in loaded.notes):
            problems.append(f"{case.name}: notes {loaded.notes}, wanted {case.note!r}")
    assert problems == []
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
    assert "Traceback" not in caplog.text


@pytest.fixture(scope="module")
def default_app(tmp_path_factory: pytest.TempPathFactory) -> Dash:
    root = tmp_path_factory.mktemp("defaults")
    return create_app(Settings(store_dir=root / "store", cache_dir=root / "cache"))


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("wide_20000_columns", r"has 20,000 columns, over the limit of 2,000 columns \(PRIVDASH_MAX_COLUMNS\)"),
        ("excel_rows_bomb", r"holds 1,500,001 rows, more than an Excel sheet can"),
        ("excel_zip_bomb", r"expands to .* when decompressed, over the limit of .* \(PRIVDASH_MAX_DECOMPRESSED_MB\)"),
    ],
)
def test_the_default_settings_refuse_the_bombs_in_time(
    corpus: list[Case], default_app: Dash, name: str, message: str
) -> None:
    """A few MB that expand to a huge table are refused with the limit's message, well inside gunicorn's 30 s."""
    case = next(case for case in corpus if case.name == name)
    assert case.path.stat().st_size < 4_000_000
    client = default_app.server.test_client()
    started = time.monotonic()
    response = client.post(
        "/api/upload", data={"file": (case.path.open("rb"), case.path.name)}, content_type="multipart/form-data"
    )
    assert time.monotonic() - started < 25
    assert response.status_code == 400 and re.search(message, response.get_json()["error"])
