"""The three attacks: hand-computed numbers on small tables, and the identities on Adult."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from privdash import PrivacyTargets, attack_release, generalize, load_hierarchies
from privdash.attack.linkage import linkage_successes
from privdash.attack.matching import ReleasedIndex
from privdash.attack.results import Rate, residual_risk, wilson_interval
from privdash.attack.setup import UnmatchedValuesError, prepare
from privdash.errors import ColumnError, DataReadError, ParameterError
from privdash.measure.classes import equivalence_classes

# Five people; quasi-identifiers a and b, sensitive s. Classes over (a, b): (x,1) x2, (x,2), (y,2), (y,3).
ORIGINAL = pd.DataFrame({"a": ["x", "x", "x", "y", "y"], "b": [1, 1, 2, 2, 3], "s": ["p", "q", "p", "q", "p"]})
QIS = ["a", "b"]


def test_unchanged_hand_table() -> None:
    report = attack_release(ORIGINAL, ORIGINAL, QIS, sensitive="s")
    # Linkage: 1/2 + 1/2 for the pair, 1 for each of the three uniques: 4/5 = classes / rows.
    assert report.linkage.success_rate == pytest.approx(4 / 5)
    assert report.predicted["prosecutor_average"] == pytest.approx(4 / 5)
    assert report.predicted["prosecutor_highest"] == 1.0
    # Singling out: the three uniques' records isolate one person, the pair's do not: 3/5.
    assert report.singling_out.success_rate == pytest.approx(3 / 5)
    assert report.predicted["sample_unique_share"] == pytest.approx(3 / 5)
    # Inference: the pair (p, q) is a tie, worth 1/2 to each; the uniques are always right: (1/2+1/2+3)/5.
    assert report.inference is not None
    assert report.inference.success_rate == pytest.approx(4 / 5)
    assert report.predicted["majority_share"] == pytest.approx(4 / 5)
    # Baselines without a control set: a random guess among 5 records; the population guess 'p' (3 of 5).
    assert report.linkage.baseline.rate == pytest.approx(1 / 5) and report.linkage.baseline_kind == "random guess"
    assert report.inference.baseline.rate == pytest.approx(3 / 5)
    assert report.inference.baseline_kind == "population guess"


def test_generalized_and_suppressed_hand_table() -> None:
    released = ORIGINAL.assign(b=["1-2", "1-2", "1-2", "1-2", "3-4"])
    report = attack_release(ORIGINAL, released, QIS, sensitive="s")
    # (x, 1), (x, 1), (x, 2) each match the three (x, 1-2) records: 1/3 each; (y, 2) and (y, 3) are alone: 1.
    assert report.linkage.success_rate == pytest.approx((3 * (1 / 3) + 2) / 5)
    assert report.predicted["prosecutor_average"] == pytest.approx(3 / 5)
    # (x, 1-2) covers three people; (y, 1-2) and (y, 3-4) one each.
    assert report.singling_out.success_rate == pytest.approx(2 / 5)
    # The three x's see p, q, p and guess p: right for 2 of them; the y's are right: 4/5.
    assert report.inference is not None and report.inference.success_rate == pytest.approx(4 / 5)
    # The fifth record suppressed: nobody's values lead to a released (y, 3-4) any more, so it is never linked.
    suppressed = attack_release(ORIGINAL, released.iloc[:4], QIS)
    assert suppressed.linkage.success_rate == pytest.approx(2 / 5)
    assert suppressed.linkage.details["published_share"] == pytest.approx(4 / 5)


def test_control_set_hand_table() -> None:
    control = pd.DataFrame({"a": ["x", "z", "z", "y", "w"], "b": [1, 5, 5, 2, 9], "s": ["p", "q", "q", "p", "q"]})
    report = attack_release(ORIGINAL, ORIGINAL, QIS, sensitive="s", control=control)
    # Linkage on control records: (x,1,p) matches two released records, one of which reproduces it: 1/2;
    # (y,2,p) matches (y,2,q), which is not them: 0; the rest match nothing. 0.5 / 5.
    assert report.linkage.baseline.rate == pytest.approx(0.1) and report.linkage.baseline_kind == "control"
    assert report.linkage.risk is not None
    assert report.linkage.risk[0] == pytest.approx((0.8 - 0.1) / (1 - 0.1))
    # Singling out (same sizes, so no subsampling): (x,1) x2 and (y,2) isolate one control record: 3/5.
    assert report.singling_out.baseline.rate == pytest.approx(3 / 5)
    assert report.singling_out.success_rate == pytest.approx(3 / 5)
    assert report.singling_out.risk is not None and report.singling_out.risk[0] == 0.0
    # Inference on control: (x,1,p) ties p/q: 1/2; (y,2,p) sees q: 0; no match: the release's mode p, wrong
    # for the three q's. 0.5 / 5.
    assert report.inference is not None and report.inference.baseline.rate == pytest.approx(0.1)


def test_wilson_and_residual_risk() -> None:
    # Wilson (1927) for 8 successes in 10 at z = 1.96: centre (0.8 + 0.19208) / 1.38416, half-width below.
    z = 1.959963984540054
    centre = (0.8 + z * z / 20) / (1 + z * z / 10)
    half = z * math.sqrt(0.8 * 0.2 / 10 + z * z / 400) / (1 + z * z / 10)
    assert wilson_interval(8, 10) == pytest.approx((centre - half, centre + half))
    assert wilson_interval(0, 10)[0] == 0.0
    attack, baseline = Rate(0.5, 0.4, 0.6, 100), Rate(0.2, 0.1, 0.3, 100)
    risk = residual_risk(attack, baseline)
    assert risk is not None and risk[0] == pytest.approx(0.3 / 0.8)
    assert risk[2] - risk[0] == pytest.approx(math.hypot(0.1 / 0.8, 0.1 * 0.5 / 0.64))
    assert residual_risk(attack, Rate(1.0, 1.0, 1.0, 5)) is None


def test_perturbed_numbers_link_by_nearest_value() -> None:
    original = pd.DataFrame({"age": [20, 20, 30, 40, 50], "sex": ["f", "m", "f", "f", "m"]})
    released = original.assign(age=[20.3, 19.6, 31.0, 39.2, 50.4])
    report = attack_release(original, released, ["age", "sex"])
    # Every perturbed age rounds back to its own original value: the same as the unchanged table (all unique).
    assert report.linkage.success_rate == pytest.approx(1.0)
    # 26 is nearer 30 than 20: the first person (20, f) now matches nobody (0), and (30, f) matches two released
    # records, one of them theirs (1/2); the other three stay unique (1 each): 3.5 / 5.
    shifted = original.assign(age=[26.0, 19.6, 31.0, 39.2, 50.4])
    assert attack_release(original, shifted, ["age", "sex"]).linkage.success_rate == pytest.approx(3.5 / 5)


@pytest.mark.parametrize(
    ("change", "error", "words"),
    [
        ({"released": ORIGINAL.assign(extra=1)}, ColumnError, "columns the original does not: 'extra'"),
        ({"quasi_identifiers": ["aa"]}, ColumnError, "did you mean 'a'"),
        ({"released": ORIGINAL.iloc[:0]}, DataReadError, "released table is empty"),
        ({"original": ORIGINAL.iloc[:0]}, DataReadError, "original table is empty"),
        ({"n_targets": 0}, ParameterError, "at least 1"),
        ({"sensitive": "a"}, ColumnError, "both a quasi-identifier and the sensitive"),
        ({"control": ORIGINAL[["a", "b"]]}, ColumnError, "column of the control table"),
    ],
)
def test_bad_input(change: dict[str, object], error: type[Exception], words: str) -> None:
    arguments: dict[str, object] = {"original": ORIGINAL, "released": ORIGINAL, "quasi_identifiers": QIS}
    arguments.update(change)
    with pytest.raises(error, match=words):
        attack_release(**arguments)  # type: ignore[arg-type]


ADULT_QIS = ["sex", "age", "race", "marital-status", "education", "native-country", "workclass"]
#: The levels the least-lossy search chooses for these QIs at k=5 with 2% suppression (an input here).
K5_LEVELS = {"age": 3, "marital-status": 1, "education": 2, "native-country": 1, "workclass": 1}


def test_unchanged_adult_linkage_is_prosecutor_risk(adult: pd.DataFrame) -> None:
    classes = equivalence_classes(adult, ADULT_QIS)
    expected = classes.n_classes / len(adult)
    report = attack_release(adult, adult, ADULT_QIS, sensitive="salary-class")
    assert report.linkage.success_rate == pytest.approx(expected, rel=1e-12)
    assert report.singling_out.success_rate == pytest.approx(classes.sample_uniques / len(adult), rel=1e-12)
    sampled = attack_release(adult, adult, ADULT_QIS, n_targets=3000, seed=7)
    assert sampled.linkage.targets.n == 3000
    assert sampled.linkage.targets.ci_low <= expected <= sampled.linkage.targets.ci_high


def test_adult_k5_release_respects_the_bound(adult: pd.DataFrame, data_dir: Path) -> None:
    hierarchies = load_hierarchies(data_dir / "arx_adult" / "hierarchies", ADULT_QIS)
    fix = generalize(adult, K5_LEVELS, hierarchies, suppress=PrivacyTargets(k=5), quasi_identifiers=ADULT_QIS)
    assert fix.kept_rows is not None and len(fix.kept_rows) < len(adult)
    report = attack_release(adult, fix.data, ADULT_QIS, sensitive="salary-class", hierarchies=hierarchies)
    assert report.predicted["prosecutor_highest"] <= 1 / 5
    assert report.linkage.targets.ci_low <= 1 / 5
    # Each published target is found with exactly 1 / (its released class size); the suppressed ones never.
    setup = prepare(adult, fix.data, ADULT_QIS, hierarchies=hierarchies)
    success, published = linkage_successes(
        setup, setup.original, setup.targets, setup.qi_index(), ReleasedIndex.build(setup.coverages, setup.released)
    )
    kept = np.zeros(len(adult), dtype=bool)
    kept[fix.kept_rows] = True
    assert (success[~kept] == 0).all() and (published[~kept] == 0).all()
    sizes = equivalence_classes(fix.data, ADULT_QIS)
    assert success[kept].max() <= 1 / 5
    assert success.sum() == pytest.approx(sizes.n_classes)
    assert report.singling_out.success_rate == 0.0
    # Without the hierarchies, 'spouse present' means nothing to the attacker: the attack is not measured ...
    with pytest.raises(UnmatchedValuesError, match="'marital-status' \\(2 values: 'spouse not present'") as refused:
        attack_release(adult, fix.data, ADULT_QIS)
    assert refused.value.unmatched["marital-status"][0] == 2 and "education" in refused.value.unmatched
    assert isinstance(refused.value, ColumnError)
    # ... unless the labels are declared to stand for no one: then nobody is linked, and the report says why.
    blind = attack_release(adult, fix.data, ADULT_QIS, allow_unmatched=True)
    assert blind.linkage.success_rate == 0.0 and blind.matching["marital-status"]["unmatched"] == 2
    assert blind.to_dict()["unmatched"]["marital-status"] == {
        "values": 2,
        "examples": ["spouse not present", "spouse present"],
    }


def test_adult_generalization_labels_without_hierarchies(adult: pd.DataFrame) -> None:
    # Ages as ARX-style intervals, built by the interval builder: the label text is enough.
    released = adult.assign(age=(adult["age"] // 10 * 10).astype(str) + "-" + (adult["age"] // 10 * 10 + 9).astype(str))
    report = attack_release(adult, released, ["sex", "age", "race"])
    decades = adult.assign(age=adult["age"] // 10)
    assert report.linkage.success_rate == pytest.approx(
        equivalence_classes(decades, ["sex", "age", "race"]).n_classes / len(adult)
    )
