"""Synthesis of a table where a person may have several rows: the person id is never modelled, control records are
held out by person, and a dp release truncates each person to c rows and calibrates every measurement at c."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest

import privdash.dp.release as dp_release_module
import privdash.synthesis.mst as mst
from privdash.dp.mechanisms import Calibrated
from privdash.errors import ColumnError, ParameterError
from privdash.synthesis import SynthesisSettings, split_control, synthesize


def _visits(people: int = 600, seed: int = 0) -> pd.DataFrame:
    """Each person has 1 to 6 visits; sex is the person's, the ward varies by visit."""
    rng = np.random.default_rng(seed)
    visits = rng.integers(1, 7, people)
    pid = np.repeat([f"P{i:04d}" for i in range(people)], visits)
    sex = np.repeat(rng.choice(["f", "m"], people), visits)
    ward = rng.choice(["a", "b", "c"], len(pid))
    age = np.repeat(rng.integers(20, 80, people), visits)
    return pd.DataFrame(
        {"pid": pid, "sex": pd.Series(sex, dtype="string"), "ward": pd.Series(ward, dtype="string"), "age": age}
    )


def test_the_person_id_is_never_modelled() -> None:
    table = _visits()
    full = synthesize(table, SynthesisSettings("full", seed=1, entity="pid"))
    assert list(full.table.columns) == ["sex", "ward", "age"]
    partial = synthesize(
        table, SynthesisSettings("partial", rows="all", seed=1, entity="pid"), quasi_identifiers=["age"]
    )
    # Copied as it is, not drawn and not a predictor.
    assert partial.table["pid"].equals(table["pid"]) and "pid" not in partial.model
    with pytest.raises(ParameterError, match="'pid' is the person-id column"):
        synthesize(table, SynthesisSettings("full", columns=("pid", "sex"), entity="pid"))
    with pytest.raises(ColumnError, match="pidd"):
        synthesize(table, SynthesisSettings("full", entity="pidd"))


def test_control_records_are_held_out_by_person() -> None:
    table = _visits()
    training, control = split_control(table, share=0.25, seed=3, entity="pid")
    assert set(training["pid"]).isdisjoint(set(control["pid"]))
    assert len(training) + len(control) == len(table)
    assert control["pid"].nunique() == round(0.25 * table["pid"].nunique())
    by_record = split_control(table, share=0.25, seed=3)[1]
    # Held out by record, most people with several visits would be on both sides.
    assert not set(by_record["pid"]).isdisjoint(set(table.drop(by_record.index)["pid"]))


def test_a_dp_release_needs_the_bound_on_rows_per_person() -> None:
    with pytest.raises(ParameterError, match=r"several rows \('pid'\).*--max-rows-per-person"):
        SynthesisSettings("dp", epsilon=1.0, entity="pid")
    with pytest.raises(ParameterError, match="needs the person-id column"):
        SynthesisSettings("full", max_rows_per_person=2)
    with pytest.raises(ParameterError, match="at least 1"):
        SynthesisSettings("dp", epsilon=1.0, entity="pid", max_rows_per_person=0)


def test_every_dp_measurement_is_calibrated_at_c_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    """The real OpenDP measurements run; the spies only record the distance each one was calibrated at."""
    seen: list[tuple[str, Any]] = []
    real_calibrate, real_histogram, real_max = mst.calibrate, dp_release_module.dp_histogram, mst._noisy_max

    def calibrate(transformation: Any, mechanism: Any, budget: Any, d_in: int = 1) -> Calibrated:
        seen.append(("count", d_in))
        return real_calibrate(transformation, mechanism, budget, d_in=d_in)

    def dp_histogram(data: pd.DataFrame, column: str, **kwargs: Any) -> Any:
        seen.append(("keys", kwargs.get("max_rows_per_person")))
        # The table given to key selection is already truncated to c rows per person.
        assert data.groupby(kwargs["entity"]).size().max() <= kwargs["max_rows_per_person"]
        return real_histogram(data, column, **kwargs)

    def noisy_max(scores: np.ndarray, epsilon: float, d_in: int = 1) -> int:
        seen.append(("select", d_in))
        return real_max(scores, epsilon, d_in)

    monkeypatch.setattr(mst, "calibrate", calibrate)
    monkeypatch.setattr(mst, "_noisy_max", noisy_max)
    monkeypatch.setattr(dp_release_module, "dp_histogram", dp_histogram)
    table = _visits(people=3000)
    settings = SynthesisSettings(
        "dp", epsilon=4.0, delta=1e-5, bounds={"age": (20, 80)}, bins=6, entity="pid", max_rows_per_person=3, seed=5
    )
    release = synthesize(table, settings)
    assert list(release.table.columns) == ["sex", "ward", "age"]
    # 2 key selections (sex, ward), 3 one-way marginals, 2 rounds of the tree's selection and its 2 two-way
    # marginals, every one at c = 3.
    assert sorted(seen) == sorted([("keys", 3)] * 2 + [("count", 3)] * 5 + [("select", 3)] * 2)
    # The release's size follows the truncated table (at most 3 rows of each of 3,000 people), not the original.
    truncated = int(np.minimum(table.groupby("pid").size(), 3).sum())
    assert abs(len(release.table) - truncated) < 0.05 * truncated < abs(len(table) - truncated)
