"""DP key selection charges the exact δ: the chance that a key held by one person is released.

The noise is OpenDP's, drawn from the operating system's randomness (it cannot be seeded), so the rate is measured
on many independent draws: a table of distinct one-row keys gives one draw per key and release. The charge must lie
in the exact (Clopper-Pearson) binomial interval of the measured rate at confidence 1 - 1e-6, so each case fails
wrongly with probability below 1e-6; the charge of OpenDP 0.16's own map (a factor e^ε lower) must lie outside it.
"""

from __future__ import annotations

import math

import pandas as pd
import pytest
from scipy.stats import binomtest

from privdash.dp.release import (
    DP_VALUE,
    MAX_THRESHOLD,
    dp_class_sizes,
    dp_histogram,
    key_selection_delta,
    key_selection_threshold,
)
from privdash.errors import ParameterError

#: Distinct keys of one row each: one draw of "is this person's key released?" per key and release.
KEYS = 40_000
RELEASES = 2
SINGLETONS = pd.DataFrame({"key": [f"person-{i}" for i in range(KEYS)]})


def exact_delta(epsilon: float, threshold: int) -> float:
    """P[1 + Z >= τ] for discrete Laplace noise Z of scale 1/ε: r^(τ-1)/(1 + r) with r = e^-ε."""
    r = math.exp(-epsilon)
    return r ** (threshold - 1) / (1 + r)


@pytest.mark.parametrize(("epsilon", "delta"), [(1.0, 0.05), (0.5, 0.2), (2.0, 0.01)])
def test_the_charged_delta_is_the_measured_rate_of_releasing_a_one_person_key(epsilon: float, delta: float) -> None:
    kept, draws = 0, 0
    for _ in range(RELEASES):
        release = dp_histogram(SINGLETONS, "key", epsilon=epsilon, delta=delta)
        assert release.key_selection_threshold is not None
        threshold = int(release.key_selection_threshold)
        assert (release.table[DP_VALUE] >= threshold).all()
        kept += len(release.table)
        draws += KEYS
    # The charge is the closed form, within the budget, at the smallest threshold that fits.
    assert release.delta == pytest.approx(exact_delta(epsilon, threshold), rel=1e-9)
    assert release.delta <= delta < exact_delta(epsilon, threshold - 1)
    assert release.epsilon == pytest.approx(epsilon)
    interval = binomtest(kept, draws).proportion_ci(confidence_level=1 - 1e-6, method="exact")
    assert interval.low <= release.delta <= interval.high, (kept / draws, release.delta)
    # OpenDP 0.16's map at the same threshold charges P[Z >= τ]: e^ε too little, and the draws tell it apart.
    assert not interval.low <= release.delta * math.exp(-epsilon) <= interval.high


def test_issue_example_epsilon_1_delta_005() -> None:
    # The threshold 3 that OpenDP's map allowed keeps a one-row key with probability 0.0989 > δ: τ is now 4.
    assert exact_delta(1.0, 3) == pytest.approx(0.098938, abs=1e-6)
    assert key_selection_threshold(1.0, 0.05) == 4
    assert key_selection_delta(1.0, 4) == pytest.approx(0.036397, abs=1e-6)
    assert key_selection_delta(1.0, 4) >= exact_delta(1.0, 4)  # rounded up, never down


def test_threshold_is_the_smallest_that_fits_and_the_charge_never_rounds_down() -> None:
    for epsilon in (0.01, 0.1, 0.7, 1.0, 3.0, 10.0):
        for delta in (0.3, 1e-3, 1e-6, 1e-12):
            threshold = key_selection_threshold(1 / epsilon, delta)
            assert key_selection_delta(1 / epsilon, threshold) <= delta
            assert threshold == 1 or key_selection_delta(1 / epsilon, threshold - 1) > delta
            assert key_selection_delta(1 / epsilon, threshold) >= exact_delta(epsilon, threshold)
    assert key_selection_threshold(1.0, 0.9) == 1  # 1/(1 + e^-1) = 0.73 <= 0.9: every key is released
    with pytest.raises(ParameterError, match="2\\^31"):
        key_selection_threshold(1e7, 1e-300)
    assert MAX_THRESHOLD == 2**31 - 1


def test_class_sizes_by_key_selection_charge_the_same_delta() -> None:
    data = pd.DataFrame({"a": ["x"] * 50 + ["y"], "b": ["1"] * 51})
    release = dp_class_sizes(data, ["a", "b"], epsilon=1.0, delta=0.05)
    assert release.key_selection_threshold == 4 and release.delta == pytest.approx(exact_delta(1.0, 4), rel=1e-9)
