from __future__ import annotations

import math
from collections.abc import Mapping
from itertools import product
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privdash.data.tables import read_table
from privdash.errors import ColumnError, ParameterError
from privdash.measure.classes import equivalence_classes
from privdash.measure.models import distinct_l_diversity, t_closeness
from privdash.measure.risk import prosecutor_risk
from privdash.search.lattice import (
    GeneralizationLattice,
    NoSolutionError,
    optimal_generalization,
    suppression_limit,
)
from privdash.targets import PrivacyTargets
from privdash.transform.generalization import generalize
from privdash.transform.hierarchy import Hierarchy, HierarchyError, load_hierarchies
from privdash.transform.steps import apply_step
from privdash.utility.metrics import Metric, information_loss

ADULT_QIS = ["sex", "age", "race", "marital-status", "education", "native-country", "workclass", "salary-class"]

SEX = Hierarchy.from_rows([["M", "*"], ["F", "*"]])
ZIP = Hierarchy.from_rows([["1301", "130*", "1***"], ["1302", "130*", "1***"], ["1410", "141*", "1***"]])


def tiny() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "sex": ["M", "M", "F", "F", "M", "M", "F", "F"],
            "zip": ["1301", "1302", "1301", "1302", "1410", "1410", "1410", "1301"],
        }
    )


# --- brute force, independent of the roll-up: generalize the rows, classify, measure ------------------------------


def brute_force(
    data: pd.DataFrame,
    hierarchies: Mapping[str, Hierarchy],
    qis: list[str],
    targets: PrivacyTargets,
    suppression: float,
    metric: Metric,
) -> tuple[float, list[tuple[int, ...]]]:
    """Minimum metric over every satisfying node, and the nodes reaching it (within 1e-9).

    A node satisfies the targets when the records of its violating classes fit the limit and the table published
    without them meets the targets, judged by its own diagnosis (t against the distribution of the records
    published, as the search judges it)."""
    limit = suppression_limit(suppression, len(data))
    values: dict[tuple[int, ...], float] = {}
    for node in product(*(range(hierarchies[c].n_levels) for c in qis)):
        published = generalize(data, dict(zip(qis, node, strict=True)), hierarchies).data
        classes = equivalence_classes(published.reset_index(drop=True), qis, sensitive=list(targets.sensitive))
        assert classes.record_class is not None
        violating = targets.class_violations(classes)[classes.record_class]
        # suppression moves the reference distribution of t: the classes of the records left that are now too far
        # from it go too, round after round, while the limit holds
        while targets.t is not None and violating.any() and not violating.all() and violating.sum() <= limit:
            left = np.flatnonzero(~violating)
            again = equivalence_classes(
                published.iloc[left].reset_index(drop=True), qis, sensitive=list(targets.sensitive)
            )
            assert again.record_class is not None
            farther = targets.class_violations(again)[again.record_class]
            if not farther.any():
                break
            violating[left[farther]] = True
        if violating.sum() > limit:
            continue
        kept = np.flatnonzero(~violating)
        loss = information_loss(data, published.iloc[kept], hierarchies, quasi_identifiers=qis, kept_rows=kept)
        values[node] = loss.value(metric)
    if not values:
        return math.nan, []
    best = min(values.values())
    return best, [n for n, v in values.items() if math.isclose(v, best, rel_tol=1e-9, abs_tol=1e-12)]


# --- small cases by hand ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("metric", "levels", "value"),
    [
        # (sex 0, zip 1) suppresses the lone (F, 141*): sex (7/2 + 1)/8 -> 0.125, zip (5*2/3 + 2/3 + 1)/8 -> 0.4375.
        (Metric.LOSS, (0, 1), (0.125 + 0.4375) / 2),
        # sex (0 + 1)/8, zip (7 * 1/2 + 1)/8.
        (Metric.PRECISION, (0, 1), (0.125 + 0.5625) / 2),
        # (sex *, zip leaf): 3^2 + 2^2 + 3^2, nothing suppressed; (0, 1) gives 2^2 + 3^2 + 2^2 + 8 * 1 = 25.
        (Metric.DISCERNIBILITY, (1, 0), 22.0),
        # (0, 1): 8 / (3 classes + 1 suppressed group).
        (Metric.AECS, (0, 1), 2.0),
        # (0, 1): zip 1301 x3 -> 130* (5 records), 1302 x2 -> 130*, 1410 x3 -> 141* (3); the suppressed record adds 0.
        (Metric.ENTROPY, (0, 1), 3 * math.log2(5 / 3) + 2 * math.log2(5 / 2)),
    ],
)
def test_tiny_optimum_by_hand(metric: Metric, levels: tuple[int, int], value: float) -> None:
    result = optimal_generalization(tiny(), {"sex": SEX, "zip": ZIP}, k=2, max_suppression=0.125, metric=metric)
    assert tuple(result.levels.values()) == levels
    assert result.value == pytest.approx(value, rel=1e-12)
    assert result.suppressed == (1 if levels == (0, 1) else 0)
    assert result.k >= 2 and result.lattice_size == 6


def test_tiny_without_suppression() -> None:
    # (1, 0) and (0, 2) both lose 0.5; the tie goes to the lower total level.
    result = optimal_generalization(tiny(), {"sex": SEX, "zip": ZIP}, k=2, max_suppression=0.0, metric="loss")
    assert result.levels == {"sex": 1, "zip": 0} and result.value == 0.5 and result.suppressed == 0
    assert result.transform.kept_rows is None and "suppress" not in result.transform.step.params


def test_suppression_limit_is_floor_of_fraction() -> None:
    assert suppression_limit(0.02, 30162) == 603
    assert suppression_limit(0.125, 8) == 1
    assert suppression_limit(0.3, 10) == 3  # 0.3 * 10 = 2.9999999999999996 in binary
    with pytest.raises(ParameterError):
        suppression_limit(1.5, 10)
    from privdash.search import lattice

    with pytest.warns(DeprecationWarning, match="suppression_limit"):
        assert lattice.suppression_budget(0.02, 30162) == 603  # the old name, read for one release


# --- brute force on random small tables ---------------------------------------------------------------------------

AGE = Hierarchy.from_rows([[str(a), f"{a // 10 * 10}s", "*"] for a in range(20, 50)])


@settings(max_examples=40, deadline=None)
@given(
    rows=st.lists(
        st.tuples(
            st.integers(20, 49),
            st.sampled_from(["M", "F"]),
            st.sampled_from(["1301", "1302", "1410"]),
            st.sampled_from(["flu", "hiv", "cancer"]),
            st.integers(0, 3),
        ),
        min_size=4,
        max_size=30,
    ),
    k=st.integers(1, 4),
    suppression=st.sampled_from([0.0, 0.1, 0.25]),
    metric=st.sampled_from(list(Metric)),
    extra=st.sampled_from(["none", "l", "t", "risk"]),
)
def test_search_equals_brute_force(
    rows: list[tuple[int, str, str, str, int]], k: int, suppression: float, metric: Metric, extra: str
) -> None:
    data = pd.DataFrame(rows, columns=["age", "sex", "zip", "disease", "score"])
    hierarchies = {"age": AGE, "sex": SEX, "zip": ZIP}
    qis = ["age", "sex", "zip"]
    options: dict = {}
    if extra == "l":
        options = {"l": 2, "sensitive": ("disease",)}
    elif extra == "t":
        options = {"t": 0.3, "sensitive": ("score",)}  # ordered distance, not monotone with suppression
    elif extra == "risk":
        options = {"max_risk": 0.34}
    targets = PrivacyTargets(k=k, **options)
    expected, nodes = brute_force(data, hierarchies, qis, targets, suppression, metric)
    if not nodes:
        with pytest.raises(NoSolutionError):
            optimal_generalization(
                data, hierarchies, quasi_identifiers=qis, k=k, max_suppression=suppression, metric=metric, **options
            )
        return
    result = optimal_generalization(
        data, hierarchies, quasi_identifiers=qis, k=k, max_suppression=suppression, metric=metric, **options
    )
    assert result.value == pytest.approx(expected, rel=1e-9, abs=1e-12)
    assert tuple(result.levels.values()) in nodes


# --- Adult --------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def adult_hierarchies(data_dir: Path) -> dict[str, Hierarchy]:
    columns = [*ADULT_QIS, "occupation"]
    return load_hierarchies(data_dir / "arx_adult" / "hierarchies", columns)


def test_adult_few_qis_equals_brute_force(adult: pd.DataFrame, adult_hierarchies: dict[str, Hierarchy]) -> None:
    qis = ["sex", "age", "race", "marital-status"]
    hierarchies = {c: adult_hierarchies[c] for c in qis}
    targets = PrivacyTargets(k=5)
    for metric in (Metric.LOSS, Metric.DISCERNIBILITY):
        expected, nodes = brute_force(adult, hierarchies, qis, targets, 0.02, metric)
        result = optimal_generalization(adult, hierarchies, k=5, max_suppression=0.02, metric=metric)
        assert result.value == pytest.approx(expected, rel=1e-12)
        assert tuple(result.levels.values()) in nodes


def test_adult_all_metrics_equal_exhaustive_lattice(
    adult: pd.DataFrame, adult_hierarchies: dict[str, Hierarchy]
) -> None:
    """The pruned search against every one of the 4,320 nodes evaluated (k = 5, 2% suppression)."""
    hierarchies = {c: adult_hierarchies[c] for c in ADULT_QIS}
    lattice = GeneralizationLattice(adult, hierarchies)
    targets = PrivacyTargets(k=5)
    nodes = lattice.nodes()
    assert len(nodes) == lattice.size == 2 * 5 * 2 * 3 * 4 * 3 * 3 * 2
    for metric in Metric:
        evaluated = [
            lattice.evaluate(node.tolist(), targets=targets, max_suppression=0.02, metric=metric) for node in nodes
        ]
        values = np.array([r.value for r in evaluated])
        bounds = np.array([r.bound for r in evaluated])
        satisfied = np.array([r.satisfied for r in evaluated])
        assert (values[satisfied] >= bounds[satisfied] - 1e-9 * np.abs(bounds[satisfied])).all()
        result = optimal_generalization(adult, hierarchies, k=5, max_suppression=0.02, metric=metric)
        assert result.value == pytest.approx(values[satisfied].min(), rel=1e-12)
        assert result.nodes_checked < lattice.size / 2
        best = evaluated[int(np.nanargmin(np.where(satisfied, values, np.nan)))]
        assert result.value == pytest.approx(best.value, rel=1e-12)


def test_adult_result_passes_the_core_diagnosis(adult: pd.DataFrame, adult_hierarchies: dict[str, Hierarchy]) -> None:
    hierarchies = {c: adult_hierarchies[c] for c in ADULT_QIS}
    result = optimal_generalization(adult, hierarchies, k=5, max_suppression=0.02, metric="loss")
    published = result.transform.data
    assert len(published) == len(adult) - result.suppressed
    assert 0 < result.suppressed <= 603
    classes = equivalence_classes(published, ADULT_QIS)
    assert classes.k >= 5 and classes.k == result.k and classes.n_classes == result.classes.n_classes
    assert prosecutor_risk(classes).highest <= 1 / 5
    kept = result.transform.kept_rows
    assert kept is not None and len(kept) == len(published)
    pd.testing.assert_frame_equal(published, adult.iloc[kept].assign(**{c: published[c] for c in ADULT_QIS}))
    metrics = information_loss(adult, published, hierarchies, kept_rows=kept)
    assert metrics.loss == pytest.approx(result.value, rel=1e-12)
    assert metrics.suppressed == result.suppressed
    # The step in the result reproduces the published table.
    again = apply_step(adult, result.transform.step)
    pd.testing.assert_frame_equal(again.data, published)
    summary = result.summary()
    assert summary["levels"] == result.levels and summary["loss"] == result.value and summary["k"] == result.k
    assert summary["metric"] == "loss" and summary["suppressed"] == result.suppressed


def test_adult_l_diversity_and_risk_targets(adult: pd.DataFrame, adult_hierarchies: dict[str, Hierarchy]) -> None:
    qis = ["sex", "age", "race", "marital-status", "education"]
    hierarchies = {c: adult_hierarchies[c] for c in qis}
    result = optimal_generalization(
        adult, hierarchies, k=3, l=3, sensitive=["occupation"], max_risk=0.1, max_suppression=0.01, metric="loss"
    )
    published = result.transform.data
    classes = equivalence_classes(published, qis, sensitive=["occupation"])
    assert distinct_l_diversity(classes, "occupation").value >= 3
    assert classes.k >= 10 and prosecutor_risk(classes).highest <= 0.1
    assert result.suppressed <= suppression_limit(0.01, len(adult))


def test_adult_t_closeness_with_suppression(adult: pd.DataFrame, adult_hierarchies: dict[str, Hierarchy]) -> None:
    qis = ["sex", "age", "race", "marital-status"]
    hierarchies = {c: adult_hierarchies[c] for c in qis}
    result = optimal_generalization(adult, hierarchies, k=2, t=0.2, sensitive=["occupation"], max_suppression=0.05)
    # t is checked against all records before suppression (ARX's reference distribution).
    generalized = generalize(adult, dict(result.levels), hierarchies).data
    classes = equivalence_classes(generalized, qis, sensitive=["occupation"])
    distance = t_closeness(classes, "occupation").per_class
    assert classes.record_class is not None
    removed = np.ones(len(adult), dtype=bool)
    kept = result.transform.kept_rows
    removed[kept if kept is not None else np.arange(len(adult))] = False
    violating = ((distance > 0.2) | (classes.sizes < 2))[classes.record_class]
    assert (removed == violating).all()
    assert result.suppressed == int(violating.sum()) <= suppression_limit(0.05, len(adult))


def test_arx_reference_optima_on_adult(adult: pd.DataFrame, adult_hierarchies: dict[str, Hierarchy]) -> None:
    """ARX's TestAnonymizationKAnonymity: Adult, all 9 attributes as QIs, non-uniform entropy, no suppression."""
    qis = list(adult.columns)
    for k, value, levels in (
        (5, 407289.5388925293, (1, 2, 1, 1, 3, 2, 2, 1, 1)),
        (100, 453196.8932458743, (0, 4, 1, 1, 3, 2, 2, 1, 1)),
    ):
        result = optimal_generalization(
            adult, adult_hierarchies, quasi_identifiers=qis, k=k, metric="entropy", max_suppression=0
        )
        assert tuple(result.levels.values()) == levels
        assert result.value == pytest.approx(value, rel=1e-12)
    # The same file's 4%-suppression case uses the monotone entropy (suppression ignored): its value at ARX's
    # optimum (1,0,1,1,3,2,2,0,1) is our entropy with nothing suppressed.
    node = dict(zip(qis, (1, 0, 1, 1, 3, 2, 2, 0, 1), strict=True))
    lattice = GeneralizationLattice(adult, adult_hierarchies, quasi_identifiers=qis)
    assert lattice.evaluate(node, targets=PrivacyTargets(k=1), metric="entropy").value == pytest.approx(
        255559.85455731067, rel=1e-12
    )


def test_arx_reference_optimum_on_cup(data_dir: Path) -> None:
    cup = read_table(data_dir / "arx_cup" / "cup.csv")
    qis = list(cup.columns)
    hierarchies = load_hierarchies(data_dir / "arx_cup" / "hierarchies", qis)
    result = optimal_generalization(cup, hierarchies, quasi_identifiers=qis, k=5, metric="entropy", max_suppression=0)
    assert tuple(result.levels.values()) == (4, 4, 1, 1, 1, 4, 4, 4)
    assert result.value == pytest.approx(2445878.424834677, rel=1e-12)


# --- errors -------------------------------------------------------------------------------------------------------


def test_no_solution() -> None:
    data = tiny().assign(disease=["flu"] * 8)
    with pytest.raises(NoSolutionError, match=r"even the most general levels leave 8 records"):
        optimal_generalization(data, {"sex": SEX, "zip": ZIP}, k=2, l=2, sensitive=["disease"])
    with pytest.raises(NoSolutionError):
        optimal_generalization(tiny(), {"sex": SEX, "zip": ZIP}, k=9)


def test_target_validation() -> None:
    with pytest.raises(ParameterError, match="k must be at least 1"):
        PrivacyTargets(k=0)
    with pytest.raises(ParameterError, match="need at least one sensitive"):
        PrivacyTargets(l=2).require_sensitive()
    with pytest.raises(ParameterError, match="t is a distance between 0 and 1"):
        PrivacyTargets(t=2.0, sensitive=("x",))
    with pytest.raises(ParameterError, match="max_risk"):
        PrivacyTargets(max_risk=0.0)
    with pytest.raises(ParameterError, match="t_distance"):
        PrivacyTargets(t=0.2, sensitive=("x",), t_distance="hierarchical")
    assert PrivacyTargets.from_dict(PrivacyTargets(k=3, l=2, sensitive=("d",)).to_dict()) == PrivacyTargets(
        k=3, l=2, sensitive=("d",)
    )


def test_input_errors() -> None:
    data = tiny()
    with pytest.raises(HierarchyError, match="No hierarchy for quasi-identifier"):
        optimal_generalization(data, {"sex": SEX}, quasi_identifiers=["sex", "zip"])
    with pytest.raises(ParameterError, match="Unknown metric 'speed'"):
        optimal_generalization(data, {"sex": SEX}, metric="speed")
    with pytest.raises(ParameterError, match="lattice has 6 nodes"):
        optimal_generalization(data, {"sex": SEX, "zip": ZIP}, max_nodes=5, search="exact")
    with pytest.raises(ParameterError, match="search must be one of"):
        optimal_generalization(data, {"sex": SEX}, search="fast")
    with pytest.raises(ColumnError, match="both quasi-identifier and sensitive"):
        optimal_generalization(data, {"sex": SEX, "zip": ZIP}, l=2, sensitive=["zip"])
    with pytest.raises(HierarchyError, match=r"of column 'zip' are not leaves.*'9999'"):
        optimal_generalization(data.assign(zip=["9999"] * 8), {"zip": ZIP})
    with pytest.raises(ParameterError, match="suppression"):
        optimal_generalization(data, {"sex": SEX}, max_suppression=-0.1)
    with pytest.raises(ParameterError, match="no rows"):
        optimal_generalization(data.iloc[:0], {"sex": SEX})


def test_missing_values_are_a_value_of_their_own() -> None:
    data = pd.DataFrame(
        {"sex": ["M", "M", None, None, "F", "F"], "zip": ["1301", "1302", "1301", "1302", "1410", "1410"]}
    )
    result = optimal_generalization(data, {"sex": SEX, "zip": ZIP}, k=2, metric="loss", max_suppression=0)
    # (sex leaf, zip 130*/141*) gives (M,130*) 2, (NA,130*) 2, (F,141*) 2.
    assert result.levels == {"sex": 0, "zip": 1} and result.suppressed == 0
    published = result.transform.data
    assert published["sex"].isna().sum() == 2
    assert equivalence_classes(published, ["sex", "zip"]).k == 2
