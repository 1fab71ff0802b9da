"""The noise distributions match the theory, the scales match the sensitivity, and the error bars the quantiles.

OpenDP draws its noise from the operating system's randomness and cannot be seeded, so the distribution tests
are statistical: under the correct distribution a goodness-of-fit p-value is uniform on [0, 1], so a test that
fails when p < 1e-6 fails wrongly with probability 1e-6 per run. Each also checks that a wrong scale is rejected,
so the test has power: with 10,000 draws the KS distance between Laplace(0, 2) and Laplace(0, 3) is about 0.074,
seven standard errors above the critical value 0.027 at p = 1e-6.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from privdash.dp.mechanisms import Mechanism, PrivacyBudget, accuracy
from privdash.dp.release import sum_measurement
from privdash.errors import ParameterError

DRAWS = 10_000
P_MIN = 1e-6
# A small table whose clamped sum is 2: the draws are 2 + noise.
VALUES = np.array([0.0, 1.0, 1.0, 7.0, -3.0])  # clamped into [0, 1]: 0, 1, 1, 1, 0
TRUE_SUM = 3.0


def draws(mechanism: Mechanism, budget: PrivacyBudget) -> tuple[np.ndarray, float]:
    calibrated = sum_measurement((0, 1), mechanism, budget)
    data = VALUES.astype(np.int64) if mechanism.discrete else VALUES
    noise = np.array([calibrated.measurement(data) for _ in range(DRAWS)], dtype=float) - TRUE_SUM
    return noise, calibrated.scale


def test_laplace_sum_scale_and_distribution() -> None:
    """Sensitivity 1 and ε = 0.5 give scale 2; the draws follow Laplace(0, 2) and not Laplace(0, 3)."""
    noise, scale = draws(Mechanism.LAPLACE, PrivacyBudget(0.5))
    # Δ/ε = 2, up to OpenDP's allowance for the rounding of float sums (about 1e-8 relative).
    assert scale == pytest.approx(2.0, rel=1e-6)
    assert stats.kstest(noise, stats.laplace(scale=2.0).cdf).pvalue > P_MIN
    assert stats.kstest(noise, stats.laplace(scale=3.0).cdf).pvalue < P_MIN


def test_geometric_sum_scale_and_distribution() -> None:
    """Integer sum with sensitivity 1 at ε = 0.5: discrete Laplace P[k] = (1-p)/(1+p) p^|k|, p = exp(-1/2)."""
    noise, scale = draws(Mechanism.GEOMETRIC, PrivacyBudget(0.5))
    assert scale == 2.0
    assert np.array_equal(noise, np.round(noise))

    def chi2_pvalue(b: float) -> float:
        p = math.exp(-1 / b)
        support = np.arange(-12, 13)
        pmf = (1 - p) / (1 + p) * p ** np.abs(support)
        tail = (1 - pmf.sum()) / 2  # P[k < -12] = P[k > 12]
        observed = np.concatenate([[np.sum(noise < -12)], [np.sum(noise == k) for k in support], [np.sum(noise > 12)]])
        expected = DRAWS * np.concatenate([[tail], pmf, [tail]])
        return float(stats.chisquare(observed, expected).pvalue)

    assert chi2_pvalue(2.0) > P_MIN
    assert chi2_pvalue(3.0) < P_MIN


def test_gaussian_sum_scale_and_distribution() -> None:
    """The Gaussian scale meets (ε, δ) by the exact analytic Gaussian bound and the draws follow N(0, σ²)."""
    epsilon, delta = 0.5, 1e-6
    noise, sigma = draws(Mechanism.GAUSSIAN, PrivacyBudget(epsilon, delta))
    sensitivity = 1.0000000093132257  # OpenDP's float-sum allowance on [0, 1]
    # Balle and Wang (2018), Theorem 8: the exact δ of the Gaussian mechanism at ε.
    a, b = sensitivity / (2 * sigma), epsilon * sigma / sensitivity
    exact_delta = stats.norm.cdf(a - b) - math.exp(epsilon) * stats.norm.cdf(-a - b)
    assert exact_delta <= delta
    # Not wastefully large: the classic zCDP bound ε = ρ + 2 sqrt(ρ ln(1/δ)) needs a larger σ.
    rho = (math.sqrt(math.log(1 / delta) + epsilon) - math.sqrt(math.log(1 / delta))) ** 2
    assert sigma <= sensitivity / math.sqrt(2 * rho) * 1.0001
    assert stats.kstest(noise, stats.norm(scale=sigma).cdf).pvalue > P_MIN
    assert stats.kstest(noise, stats.norm(scale=1.5 * sigma).cdf).pvalue < P_MIN


@pytest.mark.parametrize(
    ("mechanism", "expected"),
    [
        (Mechanism.LAPLACE, 2.0 * math.log(1 / 0.05)),  # P[|Z| > a] = exp(-a/b)
        (Mechanism.GAUSSIAN, 2.0 * stats.norm.ppf(0.975)),
    ],
)
def test_error_bars_are_the_noise_quantiles(mechanism: Mechanism, expected: float) -> None:
    assert accuracy(mechanism, 2.0, 0.95) == pytest.approx(expected, rel=1e-6)


def test_discrete_error_bar_covers_the_noise() -> None:
    a = accuracy(Mechanism.GEOMETRIC, 2.0, 0.95)
    p = math.exp(-1 / 2.0)
    inside = sum((1 - p) / (1 + p) * p ** abs(k) for k in range(-math.floor(a), math.floor(a) + 1))
    assert inside >= 0.95
    assert accuracy(Mechanism.GEOMETRIC, 2.0, 0.99) > a


@pytest.mark.parametrize(
    ("epsilon", "delta"),
    [(0, 0), (-1, 0), (float("nan"), 0), (float("inf"), 0), (1, -0.1), (1, 1), (1, 1.5), ("x", 0), (True, 0)],
)
def test_bad_budgets(epsilon: object, delta: object) -> None:
    with pytest.raises(ParameterError, match=r"ε|δ"):
        PrivacyBudget(epsilon, delta)  # type: ignore[arg-type]


def test_budget_parsing_and_split() -> None:
    assert PrivacyBudget.parse("2,1e-6") == PrivacyBudget(2.0, 1e-6)
    assert PrivacyBudget.parse(" 1 ") == PrivacyBudget(1.0, 1e-6)  # a total budget: the one default δ
    assert PrivacyBudget.parse("1", delta=0.0) == PrivacyBudget(1.0, 0.0)
    assert PrivacyBudget.parse("1,0") == PrivacyBudget(1.0, 0.0)
    assert PrivacyBudget(1.0, 1e-6).split(2) == PrivacyBudget(0.5, 5e-7)
    for text in ("", "1,2,3", "a", "1,"):
        with pytest.raises(ParameterError, match="budget"):
            PrivacyBudget.parse(text)
    with pytest.raises(ParameterError, match="laplace, geometric, gaussian"):
        Mechanism.parse("exponential")


def test_gaussian_needs_delta_and_confidence_is_checked() -> None:
    with pytest.raises(ParameterError, match="δ > 0"):
        sum_measurement((0, 1), Mechanism.GAUSSIAN, PrivacyBudget(1.0))
    with pytest.raises(ParameterError, match="confidence"):
        accuracy(Mechanism.LAPLACE, 1.0, 1.0)
