"""The linkage attack: find a target's record in the release from the target's original quasi-identifiers.

The attacker knows the original QI values of each target and how the release was made. The records whose released
QI values cover the target's values are the *matches* (``m`` of them); the attacker picks one at random. The
expected success is ``1 / m`` when the target's own record is among the matches, else 0: for an unchanged table it
is ``1 / f`` for a record in a class of ``f``, so the mean over every record is the prosecutor average risk
(classes / records, El Emam 2013) exactly.

Without a record identifier, a released record *is* the target's when its released values cover every original
value of the target (all released columns, not only the QIs); ``d`` original records identical in those columns
share their ``c`` covering released records, so the target's record is published with probability
``min(c / d, 1)``. A suppressed record is never published, so it is never linked; a synthetic record counts only
when it reproduces a real person's values in every column.
"""

from __future__ import annotations

import numpy as np

from privdash.attack.matching import ReleasedIndex
from privdash.attack.results import AttackResult, Rate, residual_risk
from privdash.attack.setup import AttackSetup

__all__ = ["linkage_attack", "linkage_successes"]


def linkage_successes(
    setup: AttackSetup, codes: np.ndarray, rows: np.ndarray, qi_index: ReleasedIndex, full_index: ReleasedIndex
) -> tuple[np.ndarray, np.ndarray]:
    """Per target (``rows`` of the encoded records ``codes``): the expected success and whether (with what
    probability) its record is published."""
    _, inverse, duplicates = np.unique(codes, axis=0, return_inverse=True, return_counts=True)
    identical = duplicates[inverse.reshape(-1)][rows]
    targets = codes[rows]
    qi_combos, qi_inverse = np.unique(targets[:, setup.qi_positions], axis=0, return_inverse=True)
    matches = qi_index.match_counts(qi_combos)[qi_inverse.reshape(-1)]
    full_combos, full_inverse = np.unique(targets, axis=0, return_inverse=True)
    covering = full_index.match_counts(full_combos)[full_inverse.reshape(-1)]
    published = np.minimum(covering / identical, 1.0)
    return np.where(matches > 0, published / np.maximum(matches, 1), 0.0), published


def linkage_attack(setup: AttackSetup) -> AttackResult:
    """The linkage attack on the targets and its baseline: the control records, else a random guess among all
    released records (``published / n_released``)."""
    qi_index = setup.qi_index()
    full_index = ReleasedIndex.build(setup.coverages, setup.released)
    success, published = linkage_successes(setup, setup.original, setup.targets, qi_index, full_index)
    attack = Rate.of(success)
    if setup.control is not None and setup.control_targets is not None:
        control, _ = linkage_successes(setup, setup.control, setup.control_targets, qi_index, full_index)
        baseline, kind = Rate.of(control), "control"
    else:
        baseline, kind = Rate.of(published / len(setup.released)), "random guess"
    raw = setup.released_raw[:, setup.qi_positions]
    _, sizes = np.unique(raw, axis=0, return_counts=True)
    predicted = {
        "prosecutor_average": len(sizes) / len(raw),
        "prosecutor_highest": 1.0 / float(sizes.min()),
    }
    details = {"published_share": float(published.mean()) if len(published) else 0.0}
    return AttackResult("linkage", attack, baseline, kind, residual_risk(attack, baseline), predicted, details)
