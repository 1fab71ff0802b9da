"""A synthetic release judged like every other fix: the measured attacks against held-out control records, the
same attacks on the training table itself (the "no protection" row), the distance to the closest record, the
steward's estimates before and after, and a verdict in plain words. Definitions: docs/synthesis.md.

The verdict rule: k-anonymity does not describe a synthetic table (its records are drawn from a model, so the size
of a class says nothing about whether a person can be found), so the verdict reads the attacks' risk beyond the
control records (Giomi et al. 2023: the part of the success that the release gives about the records it was made
from, not about the population). With ``r`` the risk and ``[lo, hi]`` its 95% interval, per attack:

- **high** when ``lo > MAX_RESIDUAL_RISK`` (the attack does better on the training records than on the control
  records, beyond doubt);
- **uncertain** when ``r > MAX_RESIDUAL_RISK`` but ``lo`` is not (to decide: attack more targets, or, when every
  training record is attacked already, hold out more control records);
- **near control** otherwise.

The release is "not safe as is" when any attack is high, "not decided" when none is high and some is uncertain, and
"near its control baseline" when every attack is near control. Nothing here imports Dash.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from privdash.attack import AttackReport, AttackResult, DistanceReport, attack_release, distance_to_closest_record
from privdash.errors import ParameterError, check_columns
from privdash.synthesis import SyntheticRelease
from privdash.utility.estimates import EstimateComparison, compare_estimates

__all__ = [
    "K_ANONYMITY_NOTE",
    "MAX_RESIDUAL_RISK",
    "SyntheticEvaluation",
    "attack_levels",
    "evaluate_synthetic",
    "synthetic_verdict",
]

#: The largest risk beyond the control baseline (normalised, Giomi et al.) the verdict accepts as "near control".
MAX_RESIDUAL_RISK = 0.05
#: The sentence every verdict of a synthetic release starts with.
K_ANONYMITY_NOTE = (
    "k-anonymity does not describe a synthetic table: its records are drawn from a model, so class sizes say "
    "nothing about whether a person can be found; this verdict reads the measured attacks instead."
)

Progress = Callable[[float, str], None]


@dataclass(frozen=True, eq=False)
class SyntheticEvaluation:
    """A synthetic release with its measured risk, distances, estimates and verdict.

    ``attacks``: the attacks on the release (training records as targets, control records as the baseline).
    ``original_attacks``: the same attacks on the training table itself, published as is. ``estimates``: the
    steward's estimates on the training table and on the release (None when none were asked).
    """

    release: SyntheticRelease
    attacks: AttackReport
    original_attacks: AttackReport | None
    distance: DistanceReport
    estimates: tuple[EstimateComparison, ...] | None
    verdict: str
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        """The evaluation as JSON values (the release's seed is recorded; the table itself is not)."""
        release = self.release
        return {
            "method": release.settings.method,
            "settings": release.settings.to_dict(),
            "model": release.model,
            "rows": len(release.table),
            "rows_replaced": release.rows_replaced,
            "cells_replaced": release.cells_replaced,
            "privacy": None
            if release.privacy is None
            else {"epsilon": release.privacy.epsilon, "delta": release.privacy.delta},
            "seconds_synthesis": release.seconds,
            "attacks": self.attacks.to_dict(),
            "original_attacks": None if self.original_attacks is None else self.original_attacks.to_dict(),
            "attack_levels": attack_levels(self.attacks),
            "distance": self.distance.to_dict(),
            "estimates": None if self.estimates is None else [e.to_dict() for e in self.estimates],
            "verdict": self.verdict,
            "seconds": self.seconds,
        }


def _results(report: AttackReport) -> list[AttackResult]:
    return [r for r in (report.linkage, report.singling_out, report.inference) if r is not None]


def attack_levels(report: AttackReport, limit: float = MAX_RESIDUAL_RISK) -> dict[str, str]:
    """Each attack's level: ``high``, ``uncertain`` or ``near control`` (module docstring); ``no risk measure``
    when the baseline always succeeds."""
    levels = {}
    for result in _results(report):
        if result.risk is None:
            levels[result.attack] = "no risk measure"
            continue
        value, low, _ = result.risk
        levels[result.attack] = "high" if low > limit else "uncertain" if value > limit else "near control"
    return levels


_NAMES = {"linkage": "linkage", "singling_out": "singling-out", "inference": "inference"}


def _baseline(kind: str) -> str:
    return "control records" if kind == "control" else f"the baseline ({kind})"


def _pct(value: float) -> str:
    return f"{100 * value:.1f}%"


def synthetic_verdict(attacks: AttackReport, distance: DistanceReport, original: AttackReport | None = None) -> str:
    """The verdict in plain words (module docstring for the rule)."""
    levels = attack_levels(attacks)
    parts = [K_ANONYMITY_NOTE]
    against = "the control records" if attacks.rows_control is not None else "the baseline guesses (no control set)"
    details = []
    for result in _results(attacks):
        text = (
            f"{_NAMES.get(result.attack, result.attack)} succeeds on {_pct(result.targets.rate)} of the training "
            f"records vs {_pct(result.baseline.rate)} on {_baseline(result.baseline_kind)}"
        )
        if result.risk is not None:
            text += f" (risk beyond it {_pct(result.risk[0])}, 95% up to {_pct(result.risk[2])})"
        details.append(text)
    high = [_NAMES.get(a, a) for a, level in levels.items() if level == "high"]
    uncertain = [_NAMES.get(a, a) for a, level in levels.items() if level == "uncertain"]
    if high:
        parts.append(
            f"Not safe to release as is: the {', '.join(high)} attack(s) do better on the records the model learned "
            f"from than on {against}, by more than {_pct(MAX_RESIDUAL_RISK)} of the remaining success."
        )
    elif uncertain:
        sampled = any(
            result.targets.n < attacks.rows_original
            for result in _results(attacks)
            if levels.get(result.attack) == "uncertain"
        )
        # Every training record attacked already: only more control records narrow the interval of the baseline.
        remedy = "attack more targets" if sampled or attacks.rows_control is None else "hold out more control records"
        parts.append(
            f"Not decided: the {', '.join(uncertain)} attack(s) may do better on the training records than on "
            f"{against}, but the interval is wide; {remedy}."
        )
    else:
        parts.append(
            f"Near its {'control baseline' if attacks.rows_control is not None else 'baselines'}: every attack "
            f"succeeds on the training records about as often as on {against} (risk beyond it at most "
            f"{_pct(MAX_RESIDUAL_RISK)})."
        )
    joined = "; ".join(details)
    parts.append(joined[:1].upper() + joined[1:] + ".")
    if original is not None:
        before = [
            f"{_NAMES.get(r.attack, r.attack)} {_pct(r.risk[0])}" for r in _results(original) if r.risk is not None
        ]
        if before:
            beyond = "control" if original.rows_control is not None else "the baselines"
            parts.append(f"Published as is, the training table's risk beyond {beyond} would be: {', '.join(before)}.")
    parts.append(
        f"{_pct(distance.exact_copies)} of the released records equal a training record in every column"
        + (
            f"; {_pct(distance.closer_to_training)} lie closer to the training records than to the control records "
            "(50% when the model learned nothing particular to them)."
            if distance.closer_to_training is not None
            else "."
        )
    )
    return " ".join(parts)


def evaluate_synthetic(
    training: pd.DataFrame,
    release: SyntheticRelease,
    *,
    control: pd.DataFrame | None,
    quasi_identifiers: Sequence[str],
    sensitive: str | None = None,
    estimates: Sequence[Any] = (),
    n_targets: int | None = None,
    seed: int = 0,
    progress: Progress | None = None,
    weights: str | None = None,
    distance_rows: int | None = None,
    original_attacks: bool = True,
) -> SyntheticEvaluation:
    """Judge ``release`` (made from ``training``) against the held-out ``control`` records (module docstring).

    ``n_targets``: targets attacked (default every record); ``estimates``: the steward's estimates (text, JSON or
    :class:`~privdash.utility.estimates.Estimate`); ``original_attacks``: also attack the training table itself.
    """
    started = time.perf_counter()

    def report(fraction: float, text: str) -> None:
        if progress is not None:
            progress(fraction, text)

    qis = check_columns(training, quasi_identifiers, role="quasi-identifier")
    missing = [c for c in (*qis, *([sensitive] if sensitive else [])) if c not in release.table.columns]
    if missing:
        raise ParameterError(
            f"The synthetic table has no column {', '.join(missing)}: synthesize the quasi-identifiers and the "
            "sensitive attribute too (--columns), or attack fewer columns."
        )
    report(0.0, "attacking the synthetic table")
    attacks = attack_release(
        training,
        release.table,
        qis,
        sensitive=sensitive,
        control=control,
        n_targets=n_targets,
        seed=seed,
        allow_unmatched=True,
    )
    before = None
    if original_attacks:
        report(0.4, "attacking the training table as is")
        before = attack_release(
            training, training, qis, sensitive=sensitive, control=control, n_targets=n_targets, seed=seed
        )
    report(0.7, "measuring the distance to the closest record")
    options: Mapping[str, Any] = {"max_rows": distance_rows} if distance_rows is not None else {}
    distance = distance_to_closest_record(
        training[list(release.table.columns)], release.table, control=control, seed=seed, **options
    )
    compared = None
    if estimates:
        report(0.9, "computing the estimates")
        compared = compare_estimates(training, release.table, list(estimates), weights=weights)
    report(1.0, "done")
    verdict = synthetic_verdict(attacks, distance, before)
    return SyntheticEvaluation(release, attacks, before, distance, compared, verdict, time.perf_counter() - started)
