"""The attribute-inference attack: guess a target's sensitive value from the released records matching its QIs.

The attacker knows the target's original QI values, collects the released records covering them and guesses their
most frequent sensitive value (a tie: one of the tied values at random, scored by its exact expected success);
with no match, the most frequent value of the whole release. Released sensitive values with the same coverage
count as one value (perturbed numbers rounding to the same original value); a guess is right when it stands for
exactly the target's original value (a generalized ``<=50K`` is right for ``<=50K``; ``*`` is never right).

For an unchanged table and every record attacked, the rate is the mean share of the most frequent sensitive value
of each record's class: the ``majority_share`` predicted from the release alone. Without a control set the
baseline is the population guess: the release's most frequent value for everyone.
"""

from __future__ import annotations

import numpy as np

from privdash.attack.matching import ranges
from privdash.attack.results import AttackResult, Rate, residual_risk
from privdash.attack.setup import AttackSetup

__all__ = ["inference_attack"]


def inference_attack(setup: AttackSetup) -> AttackResult:
    """The inference attack on ``setup.sensitive`` (which must be set)."""
    if setup.sensitive is None:
        raise ValueError("inference_attack needs a sensitive attribute")
    position = setup.sensitive_position
    coverage = setup.coverages[position]
    n_groups = coverage.n_groups
    width = len(coverage.domain) + 1
    index = setup.qi_index()
    guessed = setup.released[:, position]
    keys, counts = np.unique(index.combo_of_row * n_groups + guessed, return_counts=True)
    key_combo, key_group = keys // n_groups, keys % n_groups
    combo_start = np.searchsorted(key_combo, np.arange(index.n_combos))
    combo_length = np.bincount(key_combo, minlength=index.n_combos)
    population = np.bincount(guessed, minlength=n_groups)
    population_modes = np.flatnonzero(population == population.max())
    population_values = coverage.group_value[population_modes]

    def population_guess(truth: np.ndarray) -> np.ndarray:
        return np.isin(truth, population_values[population_values >= 0]) / len(population_modes)

    def successes(codes: np.ndarray, rows: np.ndarray) -> np.ndarray:
        targets = codes[rows]
        truth = targets[:, position]
        combos, inverse = np.unique(targets[:, setup.qi_positions], axis=0, return_inverse=True)
        inverse = inverse.reshape(-1)
        query, combo = index.pairs(combos)
        # Every (query, sensitive group) pair with the records behind it, summed over the matching combinations.
        picked = ranges(combo_start[combo], combo_length[combo])
        pair = np.repeat(query, combo_length[combo]) * n_groups + key_group[picked]
        unique_pairs, pair_inverse = np.unique(pair, return_inverse=True)
        votes = np.bincount(pair_inverse.reshape(-1), weights=counts[picked])
        pair_query, pair_group = unique_pairs // n_groups, unique_pairs % n_groups
        best = np.zeros(len(combos))
        np.maximum.at(best, pair_query, votes)
        mode = votes == best[pair_query]
        n_modes = np.bincount(pair_query[mode], minlength=len(combos))
        value = coverage.group_value[pair_group[mode]]
        right = np.sort(pair_query[mode][value >= 0] * width + value[value >= 0])
        hit = np.isin(inverse * width + truth, right)
        return np.where(n_modes[inverse] > 0, hit / np.maximum(n_modes[inverse], 1), population_guess(truth)).astype(
            np.float64
        )

    attack = Rate.of(successes(setup.original, setup.targets))
    if setup.control is not None and setup.control_targets is not None:
        baseline, kind = Rate.of(successes(setup.control, setup.control_targets)), "control"
    else:
        truth = setup.original[setup.targets, position]
        baseline, kind = Rate.of(population_guess(truth).astype(np.float64)), "population guess"
    raw = setup.released_raw[:, [*setup.qi_positions, position]]
    _, class_of = np.unique(raw[:, :-1], axis=0, return_inverse=True)
    class_of = class_of.reshape(-1)
    _, pair_of, pair_counts = np.unique(
        np.column_stack([class_of, raw[:, -1]]), axis=0, return_inverse=True, return_counts=True
    )
    largest = np.zeros(int(class_of.max()) + 1)
    pair_class = np.zeros(len(pair_counts), dtype=np.int64)
    pair_class[pair_of.reshape(-1)] = class_of
    np.maximum.at(largest, pair_class, pair_counts)
    predicted = {"majority_share": float(largest.sum() / len(raw))}
    return AttackResult("inference", attack, baseline, kind, residual_risk(attack, baseline), predicted, {})
