"""Distance to the closest record (Gower) on hand-made tables: the definitions, the control comparison, the
sample of released records and bad input."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from privdash.attack import DistanceReport, distance_to_closest_record
from privdash.errors import ColumnError, ParameterError


def test_gower_distances_by_hand() -> None:
    training = pd.DataFrame({"age": [20, 30, 60], "sex": ["f", "m", "f"]})
    released = pd.DataFrame({"age": [20, 45, 60], "sex": ["f", "m", "m"]})
    report = distance_to_closest_record(training, released)
    # range of age 40: row 1 is a copy (0); row 2: to (30, m) |45-30|/40 = 0.375, sex equal -> 0.1875;
    # row 3: to (60, f) 0 + 1 -> 0.5, to (30, m) 0.75 + 0 -> 0.375: closest 0.375.
    assert isinstance(report, DistanceReport)
    assert math.isclose(report.exact_copies, 1 / 3)
    assert math.isclose(report.median_training, 0.1875)
    assert report.median_control is None and report.closer_to_training is None
    assert report.columns == ("age", "sex") and report.rows == 3 and "Gower" in report.metric


def test_missing_equals_missing_and_is_far_from_a_value() -> None:
    training = pd.DataFrame({"x": [1.0, np.nan], "c": ["a", None]})
    released = pd.DataFrame({"x": [np.nan, 1.0], "c": [None, None]})
    report = distance_to_closest_record(training, released)
    # row 1 equals training row 2 (both missing); row 2: to row 1 (0 + 1)/2, to row 2 (1 + 0)/2.
    assert report.exact_copies == 0.5
    assert math.isclose(report.median_training, 0.25)


def test_copies_of_the_training_records_are_closer_to_them_than_to_the_control() -> None:
    rng = np.random.default_rng(1)
    table = pd.DataFrame({"a": rng.normal(size=600), "b": rng.choice(list("xyz"), 600)})
    training, control = table.iloc[:400], table.iloc[400:]
    copies = distance_to_closest_record(training, training.sample(200, random_state=1), control=control)
    assert copies.exact_copies == 1.0 and copies.median_training == 0.0
    # Half of the copies are in the random training subset of the control's size (distance 0, closer), the other
    # half tie or lose against it: 0.75 expected, 0.5 for a release that learned nothing particular.
    assert copies.closer_to_training is not None and copies.closer_to_training > 0.65
    fresh = pd.DataFrame({"a": rng.normal(size=200), "b": rng.choice(list("xyz"), 200)})
    new = distance_to_closest_record(training, fresh, control=control)
    assert new.exact_copies == 0.0
    assert new.closer_to_training is not None and abs(new.closer_to_training - 0.5) < 0.1
    assert new.median_control is not None and new.median_training > 0


def test_at_most_max_rows_are_measured_in_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    import privdash.attack.distance as distance

    monkeypatch.setattr(distance, "CHUNK_CELLS", 50)  # chunks of 1 row against 50 training records
    rng = np.random.default_rng(2)
    training = pd.DataFrame({"a": rng.integers(0, 100, 50)})
    released = pd.DataFrame({"a": rng.integers(0, 100, 300)})
    small = distance_to_closest_record(training, released, max_rows=40, seed=3)
    assert small.rows == 40
    whole = distance_to_closest_record(training, released, max_rows=1000)
    values = released["a"].to_numpy()[:, None]
    expected = np.median(np.abs(values - training["a"].to_numpy()[None, :]).min(axis=1) / np.ptp(training["a"]))
    assert math.isclose(whole.median_training, expected, rel_tol=1e-6)


def test_bad_input_is_refused() -> None:
    training = pd.DataFrame({"a": [1, 2]})
    with pytest.raises(ColumnError, match="Unknown compared column"):
        distance_to_closest_record(training, pd.DataFrame({"b": [1]}))
    with pytest.raises(ParameterError, match="no records"):
        distance_to_closest_record(training, pd.DataFrame({"a": []}))
    with pytest.raises(ParameterError, match="max_rows"):
        distance_to_closest_record(training, training, max_rows=0)
