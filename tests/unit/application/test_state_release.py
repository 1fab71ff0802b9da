"""The release targets beyond k travel in the share link's view state (wire key ``q``) under their target names."""

from __future__ import annotations

import pytest

from privdash.application.state import DEFAULTS, RELEASE_KEYS, StateError, ViewState


def test_release_targets_round_trip_through_the_link() -> None:
    state = DEFAULTS.updated(
        release={"global_risk": 0.03, "k_map": 3, "population_uniques": 0.01, "population_uniques_estimator": "pitman"}
    )
    assert state.to_dict()["q"] == {
        "global_risk": 0.03,
        "k_map": 3,
        "population_uniques": 0.01,
        "population_uniques_estimator": "pitman",
    }
    decoded = ViewState.decode(state.encode())
    assert decoded == state
    targets = decoded.targets
    assert targets.global_risk == 0.03 and targets.k_map == 3 and targets.estimator == "pitman"
    assert "q" not in DEFAULTS.to_dict()
    assert set(RELEASE_KEYS) == {
        "global_risk",
        "household_risk",
        "average_risk",
        "k_map",
        "delta_presence",
        "population_uniques",
        "population_uniques_estimator",
    }


@pytest.mark.parametrize(
    "release",
    [
        {"global_risk": 3},
        {"k_map": 0},
        {"bogus": 1},
        {"population_uniques_estimator": "pitman"},
        {"delta_presence": "a lot"},
    ],
)
def test_bad_release_targets_in_a_link_are_refused(release: dict) -> None:
    with pytest.raises(StateError):
        ViewState.from_dict({"v": 1, "q": release})
