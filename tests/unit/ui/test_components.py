"""Shared component builders, checked as data (no browser)."""

from __future__ import annotations

import json
import math

import plotly

from dashboard.pages.data import ROLE_HELP, ROLE_OPTIONS
from dashboard.ui.components import (
    NAV_ITEMS,
    error_alert,
    fmt_count,
    fmt_number,
    fmt_share,
    progress_panel,
    shell,
    stat_card,
)


def as_json(component: object) -> str:
    return json.dumps(component, cls=plotly.utils.PlotlyJSONEncoder)


def test_formats() -> None:
    assert fmt_count(1234567) == "1,234,567"
    assert fmt_count(None) == "-"
    assert fmt_number(2.0) == "2"
    assert fmt_number(0.12345) == "0.123"
    assert fmt_number(math.inf) == "∞"
    assert fmt_number(float("nan")) == "-"
    assert fmt_share(0.056) == "5.6%"
    assert fmt_share(1.0, 0) == "100%"


def test_stat_card_shows_the_verdict() -> None:
    passed = as_json(stat_card("k-anonymity", "7", passed=True, detail="target k ≥ 5", card_id="card-k"))
    failed = as_json(stat_card("k-anonymity", "1", passed=False))
    neutral = as_json(stat_card("t-closeness", "-", passed=None))
    assert '"pass"' in passed and '"green"' in passed and '"card-k"' in passed and "target k" in passed
    assert '"fail"' in failed and '"red"' in failed
    assert '"pass"' not in neutral and '"fail"' not in neutral


def test_error_alert_carries_the_message() -> None:
    alert = error_alert("people.csv is empty.", alert_id="upload-error")
    assert alert.children == "people.csv is empty."
    assert alert.id == "upload-error" and alert.color == "red"


def test_shell_has_navigation_header_and_share() -> None:
    text = as_json(shell("PAGE"))
    for path, label, _ in NAV_ITEMS:
        assert f'"{path}"' in text and f'"{label}"' in text
    for component_id in ('"url"', '"redirect"', '"header-dataset"', '"share-button"', '"share-link"', '"copy-link"'):
        assert component_id in text
    assert "PAGE" in text
    assert "http" not in text  # nothing is fetched from the internet


def test_progress_panel_ids_and_status() -> None:
    text = as_json(progress_panel("combo"))
    for suffix in ("progress", "status", "cancel"):
        assert f'"combo-{suffix}"' in text
    assert "Waiting ..." in text and "dimmed" in text
    plain = as_json(progress_panel("upload", status="", dimmed=False))
    assert '"upload-status"' in plain and "dimmed" not in plain


def test_the_role_help_explains_every_role_the_control_offers() -> None:
    labels = [label for _, label in ROLE_OPTIONS]
    assert {"Household", "Person id", "Weight"} <= set(labels)
    for label in labels:
        assert f"{label}: " in ROLE_HELP, label
