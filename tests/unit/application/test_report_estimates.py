"""The steward's estimates in the release report: the core's numbers in the fix section, weighted by the contract's
weight column, numbers about fewer than k records withheld, and a spec that does not fit said instead of failing."""

from __future__ import annotations

import re
from html import unescape
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from privdash.application.estimates import fmt_interval
from privdash.application.report import build_report, search_fix, table_fingerprint
from privdash.application.report.render import render_html
from privdash.cli import main
from privdash.data.contract import DataContract
from privdash.targets import PrivacyTargets
from privdash.utility.estimates import compare_estimates


def survey() -> tuple[pd.DataFrame, DataContract]:
    rng = np.random.default_rng(7)
    n = 600
    data = pd.DataFrame(
        {
            "age": rng.integers(18, 90, n),
            "sex": rng.choice(["F", "M"], n),
            "region": rng.choice(["North", "South", "East", "Islands"], n, p=[0.4, 0.35, 0.245, 0.005]),
            "income": rng.gamma(2.0, 15000.0, n).round(),
            "w": rng.uniform(50, 150, n).round(1),
        }
    )
    contract = DataContract.for_columns(data, quasi_identifiers=["age", "sex"], weight="w", sensitive=["income"])
    return data, contract


def text_of(html: str) -> str:
    body = re.sub(r"<style>.*?</style>|<svg.*?</svg>", " ", html, flags=re.S)
    return re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", " ", body)))


def test_estimates_in_the_fix_section() -> None:
    data, contract = survey()
    targets = PrivacyTargets(k=5)
    fix = search_fix(data, contract, targets, max_suppression=0.05)
    specs = ["mean:income by sex", "share:region"]
    report = build_report(data, contract, targets, table_fingerprint("survey", data), fix=fix, estimates=specs)
    assert report.fix is not None
    expected = compare_estimates(data, fix.data, specs, weights="w")
    assert [c.to_dict() for c in report.fix.estimates] == [c.to_dict() for c in expected]
    text = text_of(render_html(report))
    assert "Estimates before and after" in text and "weighted by w" in text
    for comparison in expected:
        for row in comparison.rows:
            shown = fmt_interval(row.before)
            if row.before is not None and row.before.records < 5:
                assert shown not in text  # the Islands: a handful of records
            else:
                assert shown in text and fmt_interval(row.after) in text
    assert "numbers about fewer than 5 records" in text


def test_a_spec_that_does_not_fit_is_said() -> None:
    data, contract = survey()
    targets = PrivacyTargets(k=3)
    fix = search_fix(data, contract, targets, max_suppression=0.05)
    report = build_report(
        data, contract, targets, table_fingerprint("survey", data), fix=fix, estimates=["mean:region"]
    )
    assert report.fix is not None and report.fix.estimates == ()
    assert "not numeric" in (report.fix.estimates_note or "")
    assert "The estimates could not be computed" in text_of(render_html(report))


def test_no_estimates_no_section() -> None:
    data, contract = survey()
    targets = PrivacyTargets(k=3)
    fix = search_fix(data, contract, targets, max_suppression=0.05)
    report = build_report(data, contract, targets, table_fingerprint("survey", data), fix=fix)
    assert "Estimates before and after" not in text_of(render_html(report))


def test_cli_report_with_estimates(capsys: pytest.CaptureFixture[str], data_dir: Path, tmp_path: Path) -> None:
    page = tmp_path / "report.html"
    code = main(
        [
            "report", str(data_dir / "sdcmicro_testdata" / "testdata.csv"), "--qi", "age,sex,urbrur",
            "--weights", "sampling_weight", "--fix", "least-lossy", "--k", "3", "--max-suppression", "0.05",
            "--estimate", "mean:income by sex", "-o", str(page),
        ]
    )  # fmt: skip
    assert code == 0, capsys.readouterr().err
    text = text_of(page.read_text(encoding="utf-8"))
    assert "mean of income (sex = 1)" in text and "weighted by sampling_weight" in text
