"""The verdict against privacy targets, on a table small enough to judge by hand."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from privdash.errors import ParameterError
from privdash.measure.diagnose import diagnose
from privdash.targets import PrivacyTargets, parse_targets


def table() -> pd.DataFrame:
    # Classes on zip: A = {flu, flu, hiv} (3 records), B = {flu, cancer} (2), C = {flu} (1).
    return pd.DataFrame(
        {"zip": ["A", "A", "A", "B", "B", "C"], "disease": ["flu", "flu", "hiv", "flu", "cancer", "flu"]}
    )


def test_every_target_judged_by_hand() -> None:
    diagnosis = diagnose(table(), ["zip"], sensitive=["disease"])
    verdict = diagnosis.check(PrivacyTargets(k=2, l=2, t=0.2, max_risk=0.4))
    checks = {check.target: check for check in verdict.checks}
    assert list(checks) == ["k", "l", "t", "max_risk"]
    # k: C has one record, below 2.
    assert (checks["k"].achieved, checks["k"].passed, checks["k"].records_failing) == (1.0, False, 1)
    # l: C has one distinct value.
    assert (checks["l"].achieved, checks["l"].passed, checks["l"].records_failing) == (1.0, False, 1)
    assert checks["l"].attribute == "disease"
    # t (equal distance, table: flu 4/6, hiv 1/6, cancer 1/6): A 1/6, B 1/3, C 1/3; B and C fail 0.2.
    assert checks["t"].achieved == pytest.approx(1 / 3)
    assert (checks["t"].passed, checks["t"].records_failing) == (False, 3)
    # Prosecutor risk 1/f: A 1/3 <= 0.4, B 1/2 and C 1 above it.
    assert (checks["max_risk"].achieved, checks["max_risk"].records_failing) == (1.0, 3)
    assert not verdict.passed and verdict.status == "fail"
    assert verdict.records == 6 and verdict.sample_uniques == 1
    assert verdict.records_at_risk == 3  # B and C: every record whose class fails at least one target
    sentence = verdict.sentence()
    assert sentence.startswith("Not safe to release: 1 of 6 records (16.7%) are unique on this attribute")
    assert "3 records (50.0%) at risk" in sentence
    assert verdict.to_dict()["checks"][0]["reason"] == checks["k"].reason


def test_a_table_that_meets_its_targets() -> None:
    diagnosis = diagnose(table(), ["zip"], sensitive=["disease"])
    verdict = diagnosis.check(PrivacyTargets(k=1, l=1, max_risk=1.0))
    assert verdict.passed and verdict.status == "pass" and verdict.records_at_risk == 0
    assert verdict.sentence().startswith("Meets every target on this attribute: k = 1 meets k ≥ 1")


def test_l_and_t_cannot_pass_without_a_diagnosed_sensitive_attribute() -> None:
    verdict = diagnose(table(), ["zip"]).check(PrivacyTargets(k=1, l=2))
    (l_check,) = [c for c in verdict.checks if c.target == "l"]
    assert not l_check.passed and math.isnan(l_check.achieved)
    assert l_check.reason == "l cannot be judged: no sensitive attribute was diagnosed"
    assert not verdict.passed


def test_verdict_agrees_with_the_models_on_adult(adult: pd.DataFrame) -> None:
    diagnosis = diagnose(adult, ["sex", "age", "race", "education"], sensitive=["occupation"])
    verdict = diagnosis.check(PrivacyTargets(k=5, l=2, max_risk=0.2))
    checks = {check.target: check for check in verdict.checks}
    model = diagnosis.sensitive_models["occupation"].l_distinct
    assert checks["k"].records_failing == diagnosis.classes.records_below(5)
    assert checks["l"].records_failing == model.violating_records(2)
    assert checks["l"].achieved == model.value
    assert (
        checks["max_risk"].records_failing
        == diagnose(adult, ["sex", "age", "race", "education"], max_risk=0.2).risk.prosecutor.n_records_at_risk
    )


def test_parse_targets() -> None:
    assert parse_targets("k=5,l=2,t=0.2,risk=0.2") == PrivacyTargets(k=5, l=2, t=0.2, max_risk=0.2)
    assert parse_targets(" max_risk = 0.1 ") == PrivacyTargets(k=1, max_risk=0.1)
    for text, message in (
        ("", "No target given"),
        ("k", "write name=value"),
        ("q=3", "write name=value"),
        ("k=2.5", "whole number"),
        ("k=x", "must be a number"),
        ("k=2,k=3", "given twice"),
        ("t=2", "between 0 and 1"),
        ("max_risk=0", "max_risk"),
    ):
        with pytest.raises(ParameterError, match=message):
            parse_targets(text)
