"""The singling-out attack: claim that a predicate read off the release describes exactly one person.

Each predicate is a released record's QI values, read as the set of original values each covers (Kerckhoffs: a
released ``20-39`` stands for every age from 20 to 39). The predicate *singles out* when exactly one record of the
evaluated original records satisfies it (Giomi et al. 2023, section 5.1; Article 29 Working Party opinion 05/2014).
Predicates are drawn from the released records, so the rate is the share of released records whose QI values
isolate one person; for an unchanged table it is the share of sample uniques.

The baseline evaluates the same predicates on the control records; the original records are then subsampled to
the control's size (or the control to the original's) so that both sets are equally easy to isolate in. Without a
control set the baseline attacker knows only the released *columns*: the predicates of a release whose QI columns
were shuffled independently (the product of its marginal distributions), evaluated on the original records.
"""

from __future__ import annotations

import numpy as np

from privdash.attack.matching import ReleasedIndex
from privdash.attack.results import AttackResult, Rate, residual_risk
from privdash.attack.setup import AttackSetup

__all__ = ["covered_records", "singling_out_attack"]


def covered_records(index: ReleasedIndex, known: np.ndarray) -> np.ndarray:
    """Per released QI combination, the number of records of ``known`` (domain codes over the QIs) it covers."""
    combos, counts = np.unique(known, axis=0, return_counts=True)
    rows, released = index.pairs(combos)
    return np.bincount(released, weights=counts[rows], minlength=index.n_combos).astype(np.int64)


def singling_out_attack(setup: AttackSetup) -> AttackResult:
    """The singling-out attack with ``n_targets`` predicates (default: one per released record)."""
    rng = setup.rng(1)
    n_released = len(setup.released)
    wanted = n_released if setup.n_targets is None else min(setup.n_targets, n_released)
    predicates = np.sort(rng.choice(n_released, size=wanted, replace=False))
    qi = setup.qi_positions
    index = setup.qi_index()
    evaluated = setup.original[:, qi]
    if setup.control is not None:
        control = setup.control[:, qi]
        size = min(len(evaluated), len(control))
        evaluated = evaluated[np.sort(rng.choice(len(evaluated), size=size, replace=False))]
        control = control[np.sort(rng.choice(len(control), size=size, replace=False))]
        combos = index.combo_of_row[predicates]
        attack = Rate.of((covered_records(index, evaluated)[combos] == 1).astype(np.float64))
        baseline, kind = Rate.of((covered_records(index, control)[combos] == 1).astype(np.float64)), "control"
    else:
        combos = index.combo_of_row[predicates]
        attack = Rate.of((covered_records(index, evaluated)[combos] == 1).astype(np.float64))
        shuffled = setup.released[:, qi].copy()
        for column in range(shuffled.shape[1]):
            shuffled[:, column] = rng.permutation(shuffled[:, column])
        marginal = setup.qi_index(shuffled)
        marginal_combos = marginal.combo_of_row[predicates]
        baseline = Rate.of((covered_records(marginal, evaluated)[marginal_combos] == 1).astype(np.float64))
        kind = "shuffled columns"
    raw = setup.released_raw[:, qi]
    _, inverse, sizes = np.unique(raw, axis=0, return_inverse=True, return_counts=True)
    predicted = {"sample_unique_share": float((sizes[inverse.reshape(-1)] == 1).mean())}
    details = {"records_evaluated": len(evaluated)}
    return AttackResult("singling_out", attack, baseline, kind, residual_risk(attack, baseline), predicted, details)
