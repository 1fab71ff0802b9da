"""Success rates with Wilson intervals, the risk beyond the baseline (Giomi et al. 2023), and the result records.

A success rate is the mean, over attacked targets, of a success in ``[0, 1]``: 0 or 1 for a guess that is right or
wrong, or the exact *expected* success of a guess drawn at random among equally good candidates (``1 / m`` when
the target's record is one of ``m`` matching records). Its 95% interval is the Wilson score interval (Wilson 1927)
at ``p = successes / n``; a ``[0, 1]``-valued success with mean ``p`` has a variance of at most ``p (1 - p)``, so
the interval is conservative for expected successes.

The *risk* is the part of the success due to the release rather than to what anyone knows about the population
(Giomi et al., "A Unified Framework for Quantifying Privacy Risk in Synthetic Data", PoPETs 2023, section 4):
``risk = (rate - baseline) / (1 - baseline)``, with ``rate`` the success on the targets (records used to make the
release) and ``baseline`` the success of the same attack on control records (not used), or, without a control
set, of the baseline guess the attack names. Its interval propagates both half-widths to first order, as
anonymeter's ``residual_success`` does, and is clipped to ``[0, 1]`` like anonymeter's ``PrivacyRisk``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["AttackReport", "AttackResult", "Rate", "residual_risk", "wilson_interval"]

#: The normal quantile of a two-sided 95% interval.
Z_95 = 1.959963984540054


def wilson_interval(successes: float, n: int, z: float = Z_95) -> tuple[float, float]:
    """The Wilson score interval of a proportion ``successes / n`` (``(0, 1)`` when ``n == 0``)."""
    if n <= 0:
        return 0.0, 1.0
    p = min(max(successes / n, 0.0), 1.0)
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


@dataclass(frozen=True)
class Rate:
    """A success rate over ``n`` targets and its 95% Wilson interval."""

    rate: float
    ci_low: float
    ci_high: float
    n: int

    @classmethod
    def of(cls, successes: np.ndarray) -> Rate:
        """The mean of per-target successes in ``[0, 1]`` with its interval."""
        n = len(successes)
        total = float(np.sum(successes))
        low, high = wilson_interval(total, n)
        return cls(total / n if n else 0.0, low, high, n)

    def to_dict(self) -> dict[str, Any]:
        return {"success_rate": self.rate, "ci_low": self.ci_low, "ci_high": self.ci_high, "n_targets": self.n}


def residual_risk(attack: Rate, baseline: Rate) -> tuple[float, float, float] | None:
    """``(risk, low, high)``: the success beyond the baseline, normalised (None when the baseline is 1)."""
    if baseline.rate >= 1:
        return None
    value = (attack.rate - baseline.rate) / (1 - baseline.rate)
    attack_error = (attack.ci_high - attack.ci_low) / 2
    baseline_error = (baseline.ci_high - baseline.ci_low) / 2
    error = math.hypot(
        attack_error / (1 - baseline.rate), baseline_error * (1 - attack.rate) / (1 - baseline.rate) ** 2
    )
    return max(0.0, value), max(0.0, value - error), min(1.0, max(0.0, value + error))


@dataclass(frozen=True)
class AttackResult:
    """One attack: the success on the targets, the baseline, the risk beyond it and the model's prediction.

    Attributes
    ----------
    attack
        ``"linkage"``, ``"singling_out"`` or ``"inference"``.
    targets
        The success on the targets (original records) with its 95% interval.
    baseline
        The success of the baseline: the same attack on control records, or the baseline guess.
    baseline_kind
        ``"control"`` or the name of the baseline guess used without a control set.
    risk
        ``(risk, low, high)`` from :func:`residual_risk`, or None when the baseline always succeeds.
    predicted
        The model figures to read the measured rate against (e.g. ``prosecutor_average``).
    details
        Further counts (e.g. the share of targets whose record is published).
    """

    attack: str
    targets: Rate
    baseline: Rate
    baseline_kind: str
    risk: tuple[float, float, float] | None
    predicted: Mapping[str, float] = field(default_factory=dict)
    details: Mapping[str, Any] = field(default_factory=dict)

    @property
    def success_rate(self) -> float:
        return self.targets.rate

    def to_dict(self) -> dict[str, Any]:
        out = self.targets.to_dict()
        out["baseline"] = {"kind": self.baseline_kind, **self.baseline.to_dict()}
        out["risk"] = (
            None if self.risk is None else {"value": self.risk[0], "ci_low": self.risk[1], "ci_high": self.risk[2]}
        )
        out["predicted"] = dict(self.predicted)
        out.update(self.details)
        return out


@dataclass(frozen=True)
class AttackReport:
    """The three attacks on one release (``inference`` is None without a sensitive attribute).

    ``unmatched`` lists, per column, the first released values that match no original value and were allowed to
    stand for no one (empty unless the attack was run with ``allow_unmatched``); ``matching`` counts them.
    """

    quasi_identifiers: tuple[str, ...]
    sensitive: str | None
    rows_original: int
    rows_released: int
    rows_control: int | None
    seed: int
    linkage: AttackResult
    singling_out: AttackResult
    inference: AttackResult | None
    predicted: Mapping[str, float]
    matching: Mapping[str, Mapping[str, int]]
    seconds: float
    unmatched: Mapping[str, list[str]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "quasi_identifiers": list(self.quasi_identifiers),
            "sensitive": self.sensitive,
            "rows_original": self.rows_original,
            "rows_released": self.rows_released,
            "rows_control": self.rows_control,
            "control": self.rows_control is not None,
            "seed": self.seed,
            "linkage": self.linkage.to_dict(),
            "singling_out": self.singling_out.to_dict(),
            "inference": None if self.inference is None else self.inference.to_dict(),
            "predicted": dict(self.predicted),
            "matching": {column: dict(rules) for column, rules in self.matching.items()},
            "unmatched": {
                column: {"values": int(self.matching[column].get("unmatched", 0)), "examples": list(examples)}
                for column, examples in self.unmatched.items()
            },
            "seconds": self.seconds,
        }
