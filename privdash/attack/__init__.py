"""Measured attacks on a release: linkage, singling out and attribute inference, against a baseline.

:func:`attack_release` attacks a released table (privdash's own generalized or suppressed fix, a perturbed table, a
synthetic table) with the original records as targets and reports each success rate with a 95% interval next to
the risk the models predict from the release (prosecutor risk, sample uniques, majority share);
:func:`distance_to_closest_record` measures how near released records lie to the originals (DCR). Following Giomi et
al. ("A Unified Framework for Quantifying Privacy Risk in Synthetic Data", PoPETs 2023), the same attack on
*control* records, which did not go into the release, separates what the release reveals about individuals from
what it reveals about the population; without a control set each attack names the baseline guess it uses
instead. The attacker knows how the release was made (:mod:`.matching`). Released values that match no original
value make the attacks refuse (:class:`UnmatchedValuesError`) unless they are declared to stand for no one: a
measurement that could not be made is never reported as a rate of 0%. Definitions: docs/attacks.md.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence

import pandas as pd

from privdash.attack.distance import DistanceReport, distance_to_closest_record
from privdash.attack.inference import inference_attack
from privdash.attack.linkage import linkage_attack
from privdash.attack.results import AttackReport, AttackResult, Rate, residual_risk, wilson_interval
from privdash.attack.setup import UnmatchedValuesError, prepare
from privdash.attack.singling_out import singling_out_attack
from privdash.transform.hierarchy import Hierarchy
from privdash.transform.steps import Recipe

__all__ = [
    "AttackReport",
    "AttackResult",
    "DistanceReport",
    "Rate",
    "UnmatchedValuesError",
    "attack_release",
    "distance_to_closest_record",
    "residual_risk",
    "wilson_interval",
]


def attack_release(
    original: pd.DataFrame,
    released: pd.DataFrame,
    quasi_identifiers: Sequence[str],
    *,
    sensitive: str | None = None,
    control: pd.DataFrame | None = None,
    hierarchies: Mapping[str, Hierarchy] | None = None,
    recipe: Recipe | None = None,
    n_targets: int | None = None,
    seed: int = 0,
    allow_unmatched: bool = False,
) -> AttackReport:
    """Run the three attacks on ``released``, made from ``original``.

    Parameters
    ----------
    original
        The records the release was made from: the targets.
    released
        The release; its columns must be columns of ``original`` (some may have been dropped).
    quasi_identifiers
        The columns the attacker knows about a target.
    sensitive
        The attribute the inference attack guesses (no inference attack without it).
    control
        Original records that were *not* used to make the release, with the same columns: the baseline.
    hierarchies, recipe
        What the attacker knows of the generalization (hierarchies per column; a recipe also gives top/bottom
        codes). Labels privdash writes are recognised without them (:mod:`.matching`).
    n_targets
        Targets attacked (sampled without replacement from the original and from the control records) and
        singling-out predicates drawn; default every record.
    seed
        Seed of the sampling and of the shuffled-columns baseline.
    allow_unmatched
        Released values that match no original value stand for no one (a synthetic release's new categories): the
        attacks are measured with them matching nothing, and the report lists them. Without it such values raise
        :class:`UnmatchedValuesError`, naming the columns: a rate measured through them would be near 0% and mean
        nothing (labels of a hierarchy the attacker was not given).
    """
    start = time.perf_counter()
    setup = prepare(
        original,
        released,
        quasi_identifiers,
        sensitive=sensitive,
        control=control,
        hierarchies=hierarchies,
        recipe=recipe,
        n_targets=n_targets,
        seed=seed,
        allow_unmatched=allow_unmatched,
    )
    linkage = linkage_attack(setup)
    singling_out = singling_out_attack(setup)
    inference = inference_attack(setup) if sensitive is not None else None
    predicted = {**linkage.predicted, **singling_out.predicted, **(inference.predicted if inference else {})}
    return AttackReport(
        quasi_identifiers=setup.quasi_identifiers,
        sensitive=sensitive,
        rows_original=len(original),
        rows_released=len(released),
        rows_control=None if control is None else len(control),
        seed=setup.seed,
        linkage=linkage,
        singling_out=singling_out,
        inference=inference,
        predicted=predicted,
        matching={coverage.name: dict(coverage.rules) for coverage in setup.coverages},
        seconds=time.perf_counter() - start,
        unmatched={c.name: list(c.unmatched_values) for c in setup.coverages if c.unmatched},
    )
