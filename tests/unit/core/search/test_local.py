"""Local recoding (top-down specialization over the hierarchies) against independent checks: the published table's
classes formed by the ordinary diagnosis, the loss measured cell by cell here, the global optimum, and a brute-force
optimum over every per-record assignment of levels on a tiny table."""

from __future__ import annotations

import time
from collections.abc import Mapping
from itertools import product
from typing import Any

import numpy as np
import pandas as pd
import pytest

from privdash.errors import ParameterError
from privdash.measure.classes import equivalence_classes
from privdash.measure.diagnose import diagnose
from privdash.search.lattice import NoSolutionError, optimal_generalization, suppression_limit
from privdash.search.local import LocalRecodingResult, anonymize, local_recoding
from privdash.targets import PrivacyTargets
from privdash.transform.hierarchy import Hierarchy, HierarchyError
from privdash.transform.local_recoding import apply_local_recoding
from privdash.transform.steps import Recipe, Step, apply_recipe, apply_step

AGE = Hierarchy.from_rows(
    [[str(a), f"{a // 2 * 2}-{a // 2 * 2 + 1}", f"{a // 4 * 4}-{a // 4 * 4 + 3}", "*"] for a in range(16)]
)
JOB = Hierarchy.from_rows(
    [
        ["nurse", "health", "*"],
        ["doctor", "health", "*"],
        ["clerk", "office", "*"],
        ["manager", "office", "*"],
        ["cook", "service", "*"],
        ["driver", "service", "*"],
    ]
)
SEX = Hierarchy.from_rows([["M", "*"], ["F", "*"]])
HIERARCHIES = {"age": AGE, "job": JOB, "sex": SEX}
QIS = ["age", "job", "sex"]


def random_table(seed: int, n: int = 160, missing: bool = False) -> pd.DataFrame:
    """Skewed values, so that some combinations are frequent and others rare."""
    rng = np.random.default_rng(seed)
    age = np.minimum(rng.geometric(0.15, n) - 1, 15)
    job = rng.choice(JOB.leaves.to_numpy(), n, p=[0.4, 0.1, 0.25, 0.1, 0.1, 0.05])
    table = pd.DataFrame(
        {
            "age": [str(a) for a in age],
            "job": job,
            "sex": rng.choice(["M", "F"], n, p=[0.7, 0.3]),
            "disease": rng.choice(["flu", "cold", "covid", "asthma"], n, p=[0.4, 0.3, 0.2, 0.1]),
        }
    )
    if missing:
        table.loc[rng.random(n) < 0.05, "job"] = None
    return table


def cell_loss(original: pd.DataFrame, published: pd.DataFrame, kept: Any, qis: list[str]) -> float:
    """ARX's loss measured here cell by cell: per record and QI, the share of the hierarchy's leaves under the
    published value (the lowest level at which the original's ancestor has that label), normalized
    ``(x - 1/D) / (1 - 1/D)``; a suppressed record counts 1 in every QI; the mean over records and QIs."""
    positions = np.arange(len(original)) if kept is None else np.asarray(kept)
    n = len(original)
    total = 0.0
    for column in qis:
        hierarchy = HIERARCHIES[column]
        rows = hierarchy.matrix().astype(str)
        domain = hierarchy.n_leaves
        column_total = float(n - len(positions))
        for position, value in zip(positions, published[column].tolist(), strict=True):
            leaf_value = original[column].iloc[position]
            if pd.isna(leaf_value):
                assert pd.isna(value)
                continue
            row = rows[list(rows[:, 0]).index(str(leaf_value))]
            level = list(row).index(str(value))  # raises when the value is not an ancestor
            share = (rows[:, level] == str(value)).sum() / domain
            column_total += (share - 1 / domain) / (1 - 1 / domain)
        total += column_total / n
    return total / len(qis)


TARGETS = [
    {"k": 3},
    {"k": 5},
    {"k": 4, "l": 2, "sensitive": ["disease"]},
    {"k": 3, "t": 0.35, "sensitive": ["disease"]},
    {"k": 2, "max_risk": 0.25},
]


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("targets", TARGETS, ids=lambda t: ",".join(f"{k}={v}" for k, v in t.items()))
def test_targets_hold_as_published_and_the_loss_is_at_most_the_global_optimum(
    seed: int, targets: dict[str, Any]
) -> None:
    data = random_table(seed, missing=seed == 2)
    options: dict[str, Any] = {"quasi_identifiers": QIS, "max_suppression": 0.05, **targets}
    result = local_recoding(data, HIERARCHIES, **options)
    wanted = PrivacyTargets(**{k: v if k != "sensitive" else tuple(v) for k, v in targets.items()})
    published = result.data
    # The ordinary diagnosis of the published table, over its values as published (mixed levels included).
    classes = equivalence_classes(published, QIS, sensitive=list(wanted.sensitive))
    assert not wanted.class_violations(classes).any()
    verdict = diagnose(published, QIS, sensitive=list(wanted.sensitive) or None).check(wanted)
    assert verdict.passed, verdict.sentence()
    assert result.k == classes.k >= wanted.k and result.classes.n_classes == classes.n_classes
    assert result.suppressed == len(data) - len(published) <= suppression_limit(0.05, len(data))
    # The loss, measured independently cell by cell, is the one reported, and never above the global optimum.
    assert cell_loss(data, published, result.transform.kept_rows, QIS) == pytest.approx(result.value, abs=1e-12)
    glob = optimal_generalization(data, HIERARCHIES, **options)
    assert result.global_value == pytest.approx(glob.value, abs=1e-12)
    assert result.value <= glob.value + 1e-12


ONE_LEVEL = Hierarchy.from_rows([["u"], ["v"]])


@pytest.mark.parametrize("seed", range(25))
def test_random_configurations(seed: int) -> None:
    """Random QI subsets (a hierarchy of one level among them), missing values, metrics, targets and limits: the
    targets hold as published, the recipe reproduces the table, loss and precision are at most the global ones."""
    rng = np.random.default_rng(100 + seed)
    n = int(rng.integers(5, 120))
    data = random_table(seed, n=n, missing=bool(rng.random() < 0.5)).assign(one=rng.choice(["u", "v"], n))
    if rng.random() < 0.3:
        data.loc[rng.random(n) < 0.1, "age"] = None
    hierarchies = {**HIERARCHIES, "one": ONE_LEVEL}
    qis = [str(c) for c in rng.permutation(["age", "job", "sex", "one"])[: int(rng.integers(1, 5))]]
    metric = str(rng.choice(["loss", "precision", "entropy", "discernibility", "aecs"]))
    options: dict[str, Any] = {
        "quasi_identifiers": qis,
        "k": int(rng.integers(2, 6)),
        "max_suppression": float(rng.choice([0.0, 0.05, 0.2])),
        "metric": metric,
    }
    draw = rng.random()
    if draw < 0.25:
        options.update(l=2, sensitive=["disease"])
    elif draw < 0.5:
        options.update(t=float(rng.choice([0.2, 0.4])), sensitive=["disease"])
    elif draw < 0.6:
        options.update(max_risk=0.3)
    try:
        glob = optimal_generalization(data, hierarchies, **options)
    except NoSolutionError:
        with pytest.raises(NoSolutionError):
            local_recoding(data, hierarchies, **options)
        return
    result = local_recoding(data, hierarchies, **options)
    targets = PrivacyTargets(
        k=options["k"],
        l=options.get("l"),
        t=options.get("t"),
        sensitive=tuple(options.get("sensitive", ())),
        max_risk=options.get("max_risk"),
    )
    if len(result.data):
        classes = equivalence_classes(result.data, qis, sensitive=list(targets.sensitive))
        assert not targets.class_violations(classes).any()
    assert result.suppressed <= suppression_limit(options["max_suppression"], n)
    if metric in ("loss", "precision"):
        assert result.value <= glob.value + 1e-12
    again, _ = apply_recipe(data, result.recipe)
    pd.testing.assert_frame_equal(again, result.data)


def test_local_beats_global_where_levels_differ() -> None:
    """Mixed levels are used: some records of a column published finer than others."""
    data = random_table(3, n=400)
    result = local_recoding(data, HIERARCHIES, quasi_identifiers=QIS, k=5, max_suppression=0.0)
    glob = optimal_generalization(data, HIERARCHIES, quasi_identifiers=QIS, k=5, max_suppression=0.0)
    assert result.value < glob.value
    assert any(len(levels) > 1 for levels in result.levels.values())
    assert sum(result.levels["age"].values()) == len(result.data)


@pytest.mark.parametrize("metric", ["precision", "entropy", "discernibility", "aecs"])
def test_other_metrics(metric: str) -> None:
    data = random_table(4)
    result = local_recoding(data, HIERARCHIES, quasi_identifiers=QIS, k=4, metric=metric)
    assert equivalence_classes(result.data, QIS).k >= 4
    assert result.value == pytest.approx(result.information_loss.value(metric))
    if metric == "precision":  # a sum of per-cell costs, like loss: never worse than the global optimum
        glob = optimal_generalization(data, HIERARCHIES, quasi_identifiers=QIS, k=4, metric=metric)
        assert result.value <= glob.value + 1e-12


# --- a brute-force optimum over every per-record level assignment ------------------------------------------------

TINY_A = Hierarchy.from_rows([["a1", "A", "*"], ["a2", "A", "*"], ["a3", "B", "*"], ["a4", "B", "*"]])
TINY_B = Hierarchy.from_rows([["x", "*"], ["y", "*"]])


def brute_force_local(data: pd.DataFrame, hierarchies: Mapping[str, Hierarchy], k: int) -> float:
    """Least loss over every assignment of a level vector to each record (no suppression) whose published table has
    every class, over the published values, of at least k records."""
    qis = list(hierarchies)
    vectors = list(product(*(range(hierarchies[c].n_levels) for c in qis)))
    matrices = {c: hierarchies[c].matrix().astype(str) for c in qis}
    cells = []  # per record and vector: (published values, loss)
    for _, row in data.iterrows():
        options = []
        for vector in vectors:
            values, loss = [], 0.0
            for column, level in zip(qis, vector, strict=True):
                matrix = matrices[column]
                label = matrix[list(matrix[:, 0]).index(str(row[column])), level]
                values.append(label)
                domain = len(matrix)
                share = (matrix[:, level] == label).sum() / domain
                loss += (share - 1 / domain) / (1 - 1 / domain)
            options.append((tuple(values), loss))
        cells.append(options)
    best = np.inf
    for choice in product(*cells):
        counts: dict[tuple[str, ...], int] = {}
        for values, _ in choice:
            counts[values] = counts.get(values, 0) + 1
        if min(counts.values()) >= k:
            best = min(best, sum(loss for _, loss in choice))
    return float(best / (len(data) * len(qis)))


@pytest.mark.parametrize("seed", range(4))
def test_tiny_tables_against_brute_force(seed: int) -> None:
    """The loss lies between the brute-force optimum over all per-record level assignments (the method does not
    claim to reach it) and the global optimum."""
    rng = np.random.default_rng(seed)
    data = pd.DataFrame(
        {"a": rng.choice(["a1", "a2", "a3", "a4"], 7, p=[0.4, 0.2, 0.3, 0.1]), "b": rng.choice(["x", "y"], 7)}
    )
    hierarchies = {"a": TINY_A, "b": TINY_B}
    optimum = brute_force_local(data, hierarchies, k=2)
    result = local_recoding(data, hierarchies, k=2, max_suppression=0.0)
    glob = optimal_generalization(data, hierarchies, k=2, max_suppression=0.0)
    assert equivalence_classes(result.data, ["a", "b"]).k >= 2
    assert optimum - 1e-12 <= result.value <= glob.value + 1e-12


def test_tiny_table_where_the_optimum_is_reached() -> None:
    """Here the greedy splits reach the brute-force optimum, half the global optimum's loss."""
    data = pd.DataFrame({"a": ["a2", "a3", "a4", "a4", "a1", "a1", "a4"], "b": ["y", "x", "x", "y", "x", "x", "y"]})
    hierarchies = {"a": TINY_A, "b": TINY_B}
    result = local_recoding(data, hierarchies, k=2, max_suppression=0.0)
    assert result.value == pytest.approx(brute_force_local(data, hierarchies, k=2)) == pytest.approx(11 / 42)
    assert optimal_generalization(data, hierarchies, k=2, max_suppression=0.0).value == pytest.approx(0.5)


def test_remainder_keeps_the_parent_label_and_the_class_order_decides() -> None:
    """a1 (3 records) is split off from A; a2 and a3 (2 records) stay together as A. The step lists a1 before A, so
    an a1 record is published as a1, not as A."""
    hierarchy = Hierarchy.from_rows([["a1", "A", "*"], ["a2", "A", "*"], ["a3", "A", "*"], ["b1", "B", "*"]])
    data = pd.DataFrame({"a": ["a1", "a1", "a1", "a2", "a3", "b1", "b1"]})
    result = local_recoding(data, {"a": hierarchy}, k=2, max_suppression=0.0)
    assert result.data["a"].tolist() == ["a1", "a1", "a1", "A", "A", "b1", "b1"]
    classes = result.transform.step.params["classes"]
    assert classes["values"].index(["a1"]) < classes["values"].index(["A"])
    again = apply_local_recoding(
        pd.DataFrame({"a": ["a1", "a3", "b1"]}), {"a": hierarchy}, classes, quasi_identifiers=["a"]
    )
    assert again.data["a"].tolist() == ["a1", "A", "b1"]
    reversed_order = {key: list(reversed(value)) for key, value in classes.items()}
    swapped = apply_local_recoding(data, {"a": hierarchy}, reversed_order, quasi_identifiers=["a"])
    assert swapped.data["a"].tolist()[:3] == ["A", "A", "A"]


# --- the recipe ----------------------------------------------------------------------------------------------------


def test_recipe_reproduces_the_table_and_applies_to_new_data() -> None:
    data = random_table(5, missing=True)
    result = local_recoding(data, HIERARCHIES, quasi_identifiers=QIS, k=4, l=2, sensitive=["disease"])
    recipe = Recipe.from_json(result.recipe.to_json())
    assert recipe.max_suppression == 0.05 and recipe.steps[0].kind == "local_recoding"
    again, _ = apply_recipe(data, recipe)
    pd.testing.assert_frame_equal(again, result.data)
    # Other data of the same schema: every record follows the tree; the targets hold on the result.
    other = random_table(6, n=300, missing=True)
    published, results = apply_recipe(other, recipe)
    summary = results[0].summary
    assert summary["rows_in"] == 300 and summary["rows_out"] == len(published)
    classes = equivalence_classes(published, QIS, sensitive=["disease"])
    assert not PrivacyTargets(k=4, l=2, sensitive=("disease",)).class_violations(classes).any()
    allowed = set(map(tuple, np.asarray(result.transform.step.params["classes"]["values"], dtype=object).tolist()))
    kept = published[QIS].astype(object).where(published[QIS].notna(), None)
    assert set(map(tuple, kept.to_numpy().tolist())) <= allowed


def test_step_refuses_bad_parameters() -> None:
    data = random_table(7, n=40)
    result = local_recoding(data, HIERARCHIES, quasi_identifiers=QIS, k=2)
    params = dict(result.transform.step.params)
    with pytest.raises(ParameterError, match="unknown parameter"):
        apply_step(data, Step("local_recoding", {**params, "levels": 1}))
    with pytest.raises(ParameterError, match="one list of 3 entries"):
        apply_step(data, Step("local_recoding", {**params, "classes": {"levels": [[0, 0]], "values": [["1", "M"]]}}))
    with pytest.raises(HierarchyError, match="not a label"):
        apply_step(
            data, Step("local_recoding", {**params, "classes": {"levels": [[1, 0, 0]], "values": [["7", "x", "M"]]}})
        )
    with pytest.raises(HierarchyError):
        apply_step(
            data, Step("local_recoding", {**params, "classes": {"levels": [[9, 0, 0]], "values": [["7", "x", "M"]]}})
        )


def test_anonymize_chooses_the_recoding() -> None:
    """``anonymize(..., recoding=...)``: global is the lattice's optimum, local the top-down search."""
    data = random_table(9)
    options: dict[str, Any] = {"quasi_identifiers": QIS, "k": 3, "max_suppression": 0.05}
    glob = anonymize(data, HIERARCHIES, **options)
    assert not isinstance(glob, LocalRecodingResult)
    assert glob.value == optimal_generalization(data, HIERARCHIES, **options).value
    local = anonymize(data, HIERARCHIES, recoding="local", **options)
    assert isinstance(local, LocalRecodingResult) and local.value <= glob.value
    assert anonymize(data, HIERARCHIES, recoding="global", solutions=3, **options).solutions
    with pytest.raises(ParameterError, match="recoding must be one of global, local"):
        anonymize(data, HIERARCHIES, recoding="cell", **options)
    with pytest.raises(ParameterError, match="solutions belong to the global one"):
        anonymize(data, HIERARCHIES, recoding="local", solutions=3, **options)


def test_no_solution() -> None:
    data = random_table(8, n=20)
    with pytest.raises(NoSolutionError):
        local_recoding(data, HIERARCHIES, quasi_identifiers=QIS, k=30, max_suppression=0.1)


# --- the goal on Adult ---------------------------------------------------------------------------------------------

ADULT_QIS = ["sex", "age", "race", "marital-status", "education", "native-country", "workclass", "occupation"]


def test_adult_goal(adult: pd.DataFrame, data_dir: Any) -> None:
    """ARX's hierarchies, 8 QIs, k = 5, 5% suppression: the global optimum is 0.2618; local recoding must reach
    0.9 times that (0.2356) or less, with k >= 5 on the published table by the ordinary diagnosis."""
    from privdash.transform.hierarchy import load_hierarchies

    hierarchies = load_hierarchies(data_dir / "arx_adult" / "hierarchies", ADULT_QIS)
    started = time.perf_counter()
    result = local_recoding(adult, hierarchies, quasi_identifiers=ADULT_QIS, k=5, max_suppression=0.05)
    seconds = time.perf_counter() - started
    assert result.global_value == pytest.approx(0.2618, abs=5e-5)
    assert result.value <= 0.9 * result.global_value <= 0.2356
    diagnosis = diagnose(result.data, ADULT_QIS)
    assert diagnosis.classes.k >= 5 and diagnosis.check(PrivacyTargets(k=5)).passed
    assert result.suppressed <= suppression_limit(0.05, len(adult))
    assert seconds < 60


def test_adult_t_closeness_holds_against_the_published_records(adult: pd.DataFrame, data_dir: Any) -> None:
    """t compares each class with the distribution of the records published: after the start's suppression that
    distribution moves, and classes within t of the whole table's may not be within t of it."""
    from privdash.transform.hierarchy import load_hierarchies

    hierarchies = load_hierarchies(data_dir / "arx_adult" / "hierarchies", ADULT_QIS)
    result = local_recoding(
        adult, hierarchies, quasi_identifiers=ADULT_QIS, k=5, t=0.2, sensitive=["salary-class"], max_suppression=0.05
    )
    targets = PrivacyTargets(k=5, t=0.2, sensitive=("salary-class",))
    verdict = diagnose(result.data, ADULT_QIS, sensitive=["salary-class"]).check(targets)
    assert verdict.passed, verdict.sentence()
    assert result.value <= result.global_value + 1e-12
    assert result.suppressed <= suppression_limit(0.05, len(adult))
