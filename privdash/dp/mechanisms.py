"""Noise mechanisms of differential privacy, calibrated and run by OpenDP.

Definitions (Dwork, McSherry, Nissim and Smith 2006, "Calibrating noise to sensitivity in private data analysis"):
two tables are *neighbours* when one is the other with one person's rows added or removed. By default every person
contributes at most one row, so OpenDP's symmetric distance between neighbours is d_in = 1; with a person-id column
and a declared bound of c rows per person (:mod:`privdash.dp.contributions`, which truncates to it), it
is d_in = c and every measurement is calibrated by OpenDP's maps at c. A
randomised release M is (ε, δ)-differentially private when P[M(x) ∈ S] <= e^ε P[M(x') ∈ S] + δ for all neighbours
x, x' and every set of outputs S. The *sensitivity* Δ of a query is the largest change of its value between
neighbours (the L1 norm for Laplace noise, the L2 norm for Gaussian noise):

- count: Δ = 1; a histogram over fixed categories: Δ = 1 (one row moves one count by one);
- sum with every value clamped into [L, U]: Δ = max(|L|, |U|) (OpenDP adds a tiny allowance for floating-point
  rounding of float sums, e.g. 1.0000000093 for [0, 1]).

Mechanisms (the scale b is chosen so that OpenDP's privacy map of the whole measurement meets the budget):

- ``laplace``: continuous Laplace noise of density exp(-|z|/b)/(2b), b = Δ/ε; ε-DP, δ = 0.
- ``geometric``: the discrete Laplace (two-sided geometric) noise on integers, P[z] ∝ exp(-|z|/b), b = Δ/ε
  (Ghosh, Roughgarden and Sundararajan 2009; sampled exactly as in Canonne, Kamath and Steinke 2020); ε-DP with
  integer outputs; the query and the bounds must be integers.
- ``gaussian``: Gaussian noise N(0, σ²) of scale σ, which is ρ-zCDP with ρ = Δ₂²/(2σ²), converted by OpenDP to the
  smallest ε at the requested δ > 0 (Canonne, Kamath and Steinke 2020 for the exact conversion and sampler).

The expected error is the half-width a of the interval that holds the noise with probability ``confidence``:
P[|noise| <= a] >= confidence, from OpenDP's ``*_scale_to_accuracy`` helpers (for Laplace a = b·ln(1/α),
α = 1 - confidence). Noise is never drawn here: OpenDP draws it from the operating system's randomness.

OpenDP's "contrib" features: privdash's measurements are built from OpenDP's contributed (not yet vetted)
constructors, which OpenDP refuses until ``enable_features("contrib")`` is called, a choice OpenDP leaves to the
user. privdash does not make it for the whole process: :func:`contrib` (and the :func:`uses_contrib` decorator on
:func:`calibrate`, :func:`accuracy` and the queries of :mod:`.release`) enables the feature only while privdash
builds its own measurements and restores OpenDP's setting afterwards (``disable_features``), so a program that
imports privdash and uses OpenDP itself sees the features it enabled itself. While a privdash query runs, another
thread of the same process sees "contrib" enabled. OpenDP itself (and scikit-learn, which it pulls in) is imported
on the first DP call, not with this module.
"""

from __future__ import annotations

import contextlib
import functools
import math
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, ParamSpec, TypeVar

from privdash.errors import ParameterError, check_finite

__all__ = [
    "DEFAULT_CONFIDENCE",
    "Calibrated",
    "Mechanism",
    "PrivacyBudget",
    "accuracy",
    "calibrate",
    "out_of_range",
    "uses_contrib",
]

_P = ParamSpec("_P")
_R = TypeVar("_R")

# The privdash calls inside contrib() (nested or in several threads) and whether the outermost one enabled the
# feature (then the last one to leave disables it again).
_CONTRIB_LOCK = threading.Lock()
_contrib_users = 0
_contrib_enabled_here = False


@contextlib.contextmanager
def contrib() -> Iterator[None]:
    """OpenDP's "contrib" features enabled inside the block, and OpenDP's setting as it was after it: a user who
    enabled them keeps them, one who did not gets them disabled again. Re-entrant and thread-safe."""
    global _contrib_users, _contrib_enabled_here
    import privdash.dp._opendp as dp

    with _CONTRIB_LOCK:
        if _contrib_users == 0:
            _contrib_enabled_here = "contrib" not in dp.GLOBAL_FEATURES
            if _contrib_enabled_here:
                dp.enable_features("contrib")
        _contrib_users += 1
    try:
        yield
    finally:
        with _CONTRIB_LOCK:
            _contrib_users -= 1
            if _contrib_users == 0 and _contrib_enabled_here:
                dp.disable_features("contrib")
                _contrib_enabled_here = False


def uses_contrib(function: Callable[_P, _R]) -> Callable[_P, _R]:
    """``function`` run inside :func:`contrib`: for the privdash functions that build OpenDP measurements."""

    @functools.wraps(function)
    def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        with contrib():
            return function(*args, **kwargs)

    return wrapper


#: The probability that an error bar holds the noise (the 95% accuracy interval).
DEFAULT_CONFIDENCE = 0.95

#: One person adds or removes one row: the symmetric distance between neighbouring tables (c with c rows per person).
D_IN = 1


class Mechanism(StrEnum):
    """The noise distribution of a release."""

    LAPLACE = "laplace"
    GEOMETRIC = "geometric"
    GAUSSIAN = "gaussian"

    @classmethod
    def parse(cls, value: str | Mechanism) -> Mechanism:
        """The mechanism named ``value``; :class:`ParameterError` lists the choices for an unknown name."""
        try:
            return cls(str(value).strip().lower())
        except ValueError:
            choices = ", ".join(m.value for m in cls)
            raise ParameterError(f"Unknown mechanism '{value}': choose one of {choices}.") from None

    @property
    def discrete(self) -> bool:
        """True when the noise (and the released value) are integers."""
        return self is Mechanism.GEOMETRIC


#: δ of a dataset's total budget given as ε alone (``--budget 1``, ``PRIVDASH_DP_BUDGET=1``, the page's default
#: budget of (1, 1e-6)): room for Gaussian noise and key selection, far below 1/n for any table privdash reads.
#: The cost of one release stays pure ε-DP (δ = 0) unless its δ is given.
DEFAULT_TOTAL_DELTA = 1e-6


@dataclass(frozen=True)
class PrivacyBudget:
    """A privacy loss (ε, δ): ε > 0 finite and 0 <= δ < 1 (the cost of a release, or a dataset's total budget)."""

    epsilon: float
    delta: float = 0.0

    def __post_init__(self) -> None:
        epsilon, delta = check_finite(self.epsilon, "ε (epsilon)"), check_finite(self.delta, "δ (delta)")
        if not epsilon > 0:
            raise ParameterError(f"ε (epsilon) must be a finite number above 0, got {self.epsilon!r}.")
        if not 0 <= delta < 1:
            raise ParameterError(f"δ (delta) must be in [0, 1), got {self.delta!r}.")
        object.__setattr__(self, "epsilon", epsilon)
        object.__setattr__(self, "delta", delta)

    @classmethod
    def parse(cls, text: str, *, delta: float = DEFAULT_TOTAL_DELTA) -> PrivacyBudget:
        """Read a dataset's total budget, ``EPS`` or ``EPS,DELTA`` (e.g. ``1.0`` or ``2,1e-6``); δ is ``delta``
        (:data:`DEFAULT_TOTAL_DELTA`) when only ε is given."""
        parts = [p.strip() for p in str(text).split(",")]
        if not 1 <= len(parts) <= 2 or not all(parts):
            raise ParameterError(f"A budget is EPS or EPS,DELTA (e.g. 1.0 or 2,1e-6), got '{text}'.")
        values = []
        for part in parts:
            try:
                values.append(float(part))
            except ValueError:
                raise ParameterError(f"A budget is EPS or EPS,DELTA with numbers, got '{text}'.") from None
        return cls(values[0], values[1] if len(values) == 2 else delta)

    def split(self, parts: int) -> PrivacyBudget:
        """An equal share of this budget for each of ``parts`` sequentially composed measurements."""
        return PrivacyBudget(self.epsilon / parts, self.delta / parts)


@dataclass(frozen=True)
class Calibrated:
    """A measurement with its noise scale, the query's sensitivity and the privacy loss OpenDP proves for it."""

    measurement: Any
    scale: float
    sensitivity: float
    cost: PrivacyBudget


@contextlib.contextmanager
def out_of_range(parameter: str) -> Iterator[None]:
    """Turn OpenDP's refusals (``OpenDPException``) and float overflows inside the block into a
    :class:`ParameterError` that names ``parameter``, the input whose value OpenDP cannot compute with."""
    import privdash.dp._opendp as dp

    try:
        yield
    except (dp.OpenDPException, OverflowError, ZeroDivisionError) as exc:
        reason = getattr(exc, "message", None) or getattr(exc, "variant", None) or str(exc)
        reason = " ".join(str(reason).split())
        raise ParameterError(f"Out of the range OpenDP can compute with: {parameter} ({reason}).") from None


@uses_contrib
def calibrate(transformation: Any, mechanism: Mechanism, budget: PrivacyBudget, d_in: int = D_IN) -> Calibrated:
    """Chain ``transformation`` (a query whose output is a number or a vector of numbers) with the noise of
    ``mechanism`` at the smallest scale whose privacy loss for one person (OpenDP's privacy map at ``d_in``, the
    rows one person adds or removes: 1, or the bound c on rows per person) fits ``budget``.

    For Laplace and geometric noise the scale is Δ/ε (Δ from OpenDP's stability map) and δ = 0; for Gaussian noise
    the scale is found by OpenDP's binary search over the zCDP measurement converted to (ε, δ) at ``budget.delta``.
    """
    with out_of_range(f"ε = {budget.epsilon:g}" + (f", δ = {budget.delta:g}" if budget.delta else "")):
        calibrated = _calibrate(transformation, mechanism, budget, d_in)
    # A scale so large (tiny ε) or so small (huge ε) that the noise or its error bar is not a finite number.
    try:
        error = accuracy(mechanism, calibrated.scale)
    except ParameterError:
        error = math.inf
    if not (math.isfinite(calibrated.scale) and calibrated.scale > 0 and math.isfinite(error) and error >= 0):
        side = "small" if calibrated.scale >= 1 else "large"
        raise ParameterError(
            f"ε = {budget.epsilon:g} is too {side}: the noise scale {calibrated.scale:g} (sensitivity "
            f"{calibrated.sensitivity:g} / ε) gives an error bar of {error:g}, not a finite number."
        )
    return calibrated


def _calibrate(transformation: Any, mechanism: Mechanism, budget: PrivacyBudget, d_in: int) -> Calibrated:
    import privdash.dp._opendp as dp

    sensitivity = float(transformation.map(d_in))
    if not math.isfinite(sensitivity):
        raise OverflowError(f"the sensitivity is {sensitivity:g}")
    if mechanism is Mechanism.GAUSSIAN:
        if budget.delta <= 0:
            raise ParameterError("The Gaussian mechanism needs δ > 0 (--delta), e.g. 1e-6; or use laplace.")

        def gaussian(scale: float) -> Any:
            noisy = transformation >> dp.m.then_gaussian(scale)
            return dp.c.make_fix_delta(dp.c.make_zCDP_to_approxDP(noisy), budget.delta)

        scale = float(dp.binary_search_param(gaussian, d_in=d_in, d_out=(budget.epsilon, budget.delta)))
        measurement = gaussian(scale)
        epsilon, delta = (float(v) for v in measurement.map(d_in))
        if not (0 < epsilon < math.inf and 0 <= delta < 1):
            raise OverflowError(f"the proven loss is ε = {epsilon:g}, δ = {delta:g}")
        return Calibrated(measurement, scale, sensitivity, PrivacyBudget(epsilon, delta))
    # Laplace noise on an integer domain is OpenDP's discrete Laplace; on a float domain the continuous one.
    scale = sensitivity / budget.epsilon
    measurement = transformation >> dp.m.then_laplace(scale)
    # Δ/ε may round to a scale whose proven loss is one ulp above ε: step up until OpenDP's map agrees.
    while float(measurement.map(d_in)) > budget.epsilon:
        scale = math.nextafter(scale, math.inf)
        measurement = transformation >> dp.m.then_laplace(scale)
    return Calibrated(measurement, scale, sensitivity, PrivacyBudget(float(measurement.map(d_in)), 0.0))


@uses_contrib
def accuracy(mechanism: Mechanism, scale: float, confidence: float = DEFAULT_CONFIDENCE) -> float:
    """Half-width a with P[|noise| <= a] >= ``confidence`` for the noise of ``mechanism`` at ``scale``; a
    :class:`ParameterError` when a is not a finite number >= 0 (a noise scale near the float limits)."""
    confidence = check_confidence(confidence)
    alpha = 1.0 - confidence
    what = f"The {confidence:.6g} error bar of noise of scale {scale:g}"
    import privdash.dp._opendp as dp

    with out_of_range(what):
        if mechanism is Mechanism.GEOMETRIC:
            value = float(dp.discrete_laplacian_scale_to_accuracy(scale, alpha))
        elif mechanism is Mechanism.GAUSSIAN:
            value = float(dp.gaussian_scale_to_accuracy(scale, alpha))
        else:
            value = float(dp.laplacian_scale_to_accuracy(scale, alpha))
    if not (math.isfinite(value) and value >= 0):
        raise ParameterError(f"{what} is {value:g}, not a finite number: choose ε (or the confidence) nearer to 1.")
    return value


def check_confidence(confidence: float) -> float:
    """``confidence`` as a float strictly between 0 and 1 (the coverage of an error bar)."""
    value = check_finite(confidence, "The confidence of the error bars")
    if not 0 < value < 1:
        raise ParameterError(f"The confidence of the error bars must be in (0, 1), e.g. 0.95; got {confidence!r}.")
    return value
