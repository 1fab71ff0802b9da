from __future__ import annotations

import itertools
import math
from collections import defaultdict
from pathlib import Path
from types import ModuleType

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privdash.data.tables import read_table
from privdash.errors import ColumnError, ParameterError
from privdash.measure.classes import EquivalenceClasses, equivalence_classes
from privdash.measure.models import (
    AlphaKResult,
    TDistance,
    all_sensitive_models,
    alpha_k_anonymity,
    basic_beta_likeness,
    delta_disclosure,
    distinct_l_diversity,
    enhanced_beta_likeness,
    entropy_l_diversity,
    grassberger,
    k_anonymity,
    recursive_cl_diversity,
    sensitive_models,
    t_closeness,
    worst_of,
)

EULER_GAMMA = float(np.euler_gamma)


def worked_example() -> pd.DataFrame:
    """peers.md §4: ten records, QIs (age_band, sex), SAs diag and income."""
    return pd.DataFrame(
        {
            "age": ["30-39"] * 7 + ["40-49"] * 3,
            "sex": ["M"] * 4 + ["F"] * 3 + ["M"] * 3,
            "diag": ["flu", "flu", "flu", "cancer", "flu", "cancer", "hiv", "hiv", "hiv", "flu"],
            "income": [30, 30, 40, 50, 40, 60, 100, 50, 60, 100],
        }
    )


@pytest.fixture(scope="module")
def example() -> tuple[EquivalenceClasses, np.ndarray]:
    """The worked example's classes and the indices of its classes in the table's order (30M, 30F, 40M)."""
    classes = equivalence_classes(worked_example(), ["age", "sex"], sensitive=["diag", "income"])
    keys = list(classes.keys().itertuples(index=False, name=None))
    order = np.array([keys.index(key) for key in [("30-39", "M"), ("30-39", "F"), ("40-49", "M")]])
    return classes, order


# --- the worked example (peers.md §4, ARX column) ----------------------------------------------------------------


def test_worked_example_k_and_alpha(example) -> None:
    classes, order = example
    k = k_anonymity(classes)
    assert k.value == 3 and k.per_class[order].tolist() == [4, 3, 3]
    assert k.satisfies(3) and not k.satisfies(4)
    assert k.violating_records(4) == 6 and sorted(k.violating_classes(4).tolist()) == sorted(order[1:].tolist())
    alpha = alpha_k_anonymity(classes, "diag")
    assert isinstance(alpha, AlphaKResult)
    assert alpha.value == 0.75 and alpha.k == 3
    np.testing.assert_allclose(alpha.per_class[order], [3 / 4, 1 / 3, 2 / 3])
    assert alpha.satisfies(0.75) and not alpha.satisfies(0.74)
    assert alpha.satisfies(0.75, k=3) and not alpha.satisfies(0.75, k=4)
    assert alpha.violating_records(0.7) == 4


def test_worked_example_l_diversity(example) -> None:
    classes, order = example
    distinct = distinct_l_diversity(classes, "diag")
    assert distinct.value == 2 and distinct.per_class[order].tolist() == [2, 3, 2]
    assert distinct.satisfies(2) and not distinct.satisfies(3)
    assert distinct.violating_records(3) == 7
    entropy = entropy_l_diversity(classes, "diag")
    assert entropy.value == pytest.approx(1.7548, abs=5e-5)
    np.testing.assert_allclose(entropy.per_class[order], [1.7548, 3.0, 1.8899], atol=5e-5)
    # exp(-(0.75 ln 0.75 + 0.25 ln 0.25)) = 4 / 3^0.75
    assert entropy.value == pytest.approx(4 / 3**0.75, rel=1e-12)
    assert entropy.satisfies(1.75) and not entropy.satisfies(1.76)
    # The uniform class over three values is entropy-3-diverse, despite exp(ln 3) rounding.
    assert entropy.class_satisfies(3.0)[order].tolist() == [False, True, False]


def test_worked_example_recursive_cl_diversity(example) -> None:
    classes, order = example
    result = recursive_cl_diversity(classes, "diag", l=2)
    assert result.c == 4 and result.per_class_c[order].tolist() == [4, 1, 3]
    assert result.value == 3.0 and result.per_class[order].tolist() == [3.0, 0.5, 2.0]
    # r1 < c * tail is strict: c = 3 fails on the (flu 3, cancer 1) class, any c > 3 passes.
    assert not result.satisfies(3) and result.satisfies(3.01) and result.satisfies(4)
    assert result.violating_classes(3).tolist() == [order[0]]
    # With l = 3 the classes with two values cannot satisfy any c.
    three = recursive_cl_diversity(classes, "diag", l=3)
    assert three.per_class[order].tolist() == [math.inf, 1.0, math.inf] and three.c == math.inf
    assert not three.satisfies(1e9)


def test_worked_example_t_closeness(example) -> None:
    classes, order = example
    equal = t_closeness(classes, "diag")
    assert equal.distance == TDistance.EQUAL
    assert equal.value == pytest.approx(0.3667, abs=5e-5) and equal.value == pytest.approx(11 / 30, rel=1e-15)
    np.testing.assert_allclose(equal.per_class[order], [0.3, 1 / 6, 11 / 30], rtol=1e-15)
    assert equal.satisfies(11 / 30) and not equal.satisfies(0.36)  # t-closeness is <= t
    ordered = t_closeness(classes, "income")
    assert ordered.distance == TDistance.ORDERED
    assert ordered.value == 0.3125
    np.testing.assert_allclose(ordered.per_class[order], [0.3125, 1 / 6, 0.25], rtol=1e-15)


def test_worked_example_delta_and_beta(example) -> None:
    classes, order = example
    delta = delta_disclosure(classes, "diag")
    assert delta.base == 2 and delta.value == pytest.approx(1.152, abs=5e-4)
    assert delta.value == pytest.approx(math.log2(20 / 9), rel=1e-14)
    np.testing.assert_allclose(delta.per_class[order], [math.log2(1.5), math.log2(5 / 3), math.log2(20 / 9)])
    assert not delta.satisfies(delta.value) and delta.satisfies(1.16)  # delta-disclosure is strict
    natural = delta_disclosure(classes, "diag", base=math.e)
    assert natural.value == pytest.approx(0.7985, abs=5e-5)
    basic = basic_beta_likeness(classes, "diag")
    assert basic.value == pytest.approx(1.2222, abs=5e-5) and basic.value == pytest.approx(11 / 9, rel=1e-14)
    np.testing.assert_allclose(basic.per_class[order], [0.5, 2 / 3, 11 / 9])
    assert basic.satisfies(11 / 9) and not basic.satisfies(1.2)
    enhanced = enhanced_beta_likeness(classes, "diag")
    # hiv: (2/3 - 0.3) / 0.3 = 1.2222 > -ln 0.3 = 1.2040, so no beta satisfies the enhanced condition.
    np.testing.assert_allclose(enhanced.per_class[order], [0.5, 2 / 3, math.inf])
    assert enhanced.value == math.inf and not enhanced.satisfies(1000)
    assert enhanced.violating_classes(1000).tolist() == [order[2]]


def test_sensitive_models_bundle_and_worst_case(example) -> None:
    classes, order = example
    diag = sensitive_models(classes, "diag")
    summary = diag.summary()
    assert summary["l_distinct"] == 2 and summary["recursive_c"] == 4 and summary["t_distance"] == "equal"
    assert summary["alpha_k"] == {"alpha": 0.75, "k": 3} and summary["beta_enhanced"] == math.inf
    assert summary["delta_disclosure"] == pytest.approx(1.152, abs=5e-4)
    table = diag.per_class_table()
    assert len(table) == classes.n_classes
    assert table["recursive_c"].to_numpy()[order].tolist() == [4, 1, 3]
    assert sensitive_models(classes, "income").summary()["t_distance"] == "ordered"
    both = all_sensitive_models(classes)
    assert both.attributes == ("diag", "income")
    np.testing.assert_allclose(both.t_closeness.per_class[order], [0.3125, 1 / 6, 11 / 30])
    assert both.t_closeness.value == pytest.approx(11 / 30) and both.t_closeness.attribute == "diag, income"
    assert both.l_distinct.per_class[order].tolist() == [2, 3, 2] and both.l_distinct.value == 2
    assert both.alpha_k.value == 0.75 and both.alpha_k.k == 3 and not both.alpha_k.satisfies(0.75, k=4)
    assert both.beta_enhanced.value == math.inf


# --- hand tables -------------------------------------------------------------------------------------------------


def test_single_value_class_and_single_value_table() -> None:
    data = pd.DataFrame({"q": ["a", "a", "b", "b", "b"], "s": ["x", "x", "x", "y", "z"]})
    classes = equivalence_classes(data, ["q"], sensitive=["s"])
    a = int(np.flatnonzero(classes.keys()["q"] == "a")[0])
    models = sensitive_models(classes, "s")
    assert models.l_distinct.per_class[a] == 1 and models.l_entropy.per_class[a] == 1.0
    assert models.recursive.per_class[a] == math.inf and models.alpha_k.per_class[a] == 1.0
    # p(x) = 3/5 and the class is all x: delta = log2(5/3); beta = 2/3 exceeds -ln 0.6 = 0.511, so enhanced is inf.
    assert models.delta_disclosure.per_class[a] == pytest.approx(math.log2(5 / 3))
    assert models.beta_basic.per_class[a] == pytest.approx(2 / 3)
    assert models.beta_enhanced.per_class[a] == math.inf
    assert models.t_closeness.per_class[a] == pytest.approx(0.4)  # 1/2 (0.4 + 0.2 + 0.2)
    # m = 1: the SA takes one value in the whole table; every distance is 0, l = 1.
    flat = equivalence_classes(data.assign(s="x", n=7), ["q"], sensitive=["s", "n"])
    assert t_closeness(flat, "n").value == 0.0 and t_closeness(flat, "n").distance == TDistance.ORDERED
    assert t_closeness(flat, "s").value == 0.0
    assert delta_disclosure(flat, "s").value == 0.0 and enhanced_beta_likeness(flat, "s").value == 0.0
    assert entropy_l_diversity(flat, "s").value == 1.0


def test_class_equal_to_the_table_is_zero_distance() -> None:
    data = pd.DataFrame({"q": ["a"] * 7, "s": [3, 1, 2, 2, 5, 1, 1], "c": list("xyzxxyw")})
    classes = equivalence_classes(data, ["q"], sensitive=["s", "c"])
    hierarchy = {"x": ("A", "*"), "y": ("A", "*"), "z": ("B", "*"), "w": ("B", "*")}
    assert t_closeness(classes, "s").value == 0.0
    assert t_closeness(classes, "s", distance="equal").value == 0.0
    assert t_closeness(classes, "c", hierarchy=hierarchy).value == 0.0
    assert delta_disclosure(classes, "c").value == 0.0
    assert basic_beta_likeness(classes, "c").value == 0.0 and enhanced_beta_likeness(classes, "c").value == 0.0


def test_hierarchical_distance_by_hand() -> None:
    # Leaves a, b under X and c under Y, root *; H = 2. p = (1/4, 1/4, 1/2).
    hierarchy = {"a": ("X", "*"), "b": ("X", "*"), "c": ("Y", "*")}
    data = pd.DataFrame(
        {
            "q": ["1", "1", "2", "2", "3", "3", "3", "3"],
            "s": ["a", "b", "a", "c", "c", "c", "c", "b"],
        }
    )
    # Overall: a 2, b 2, c 4 -> p = (1/4, 1/4, 1/2).
    classes = equivalence_classes(data, ["q"], sensitive=["s"])
    result = t_closeness(classes, "s", hierarchy=hierarchy)
    assert result.distance == TDistance.HIERARCHICAL
    by_class = dict(zip(classes.keys()["q"], result.per_class, strict=True))
    # Class 1: q = (1/2, 1/2, 0): extras a -1/4, b -1/4, c +1/2; X moves nothing, the root moves 1/2 at cost 2/2.
    assert by_class["1"] == pytest.approx(0.5)
    # Class 2: q = (1/2, 0, 1/2): extras a -1/4, b +1/4, c 0; X moves 1/4 at cost 1/2; the root nets cancel.
    assert by_class["2"] == pytest.approx(0.125)
    # Class 3: q = (0, 1/4, 3/4): extras a +1/4, b 0, c -1/4; X nets +1/4, Y -1/4: the root moves 1/4.
    assert by_class["3"] == pytest.approx(0.25)
    # A flat hierarchy (everything under the root) is the equal distance.
    flat = t_closeness(classes, "s", hierarchy=dict.fromkeys("abc", ("*",)))
    np.testing.assert_allclose(flat.per_class, t_closeness(classes, "s", distance="equal").per_class)
    # The ARX CSV layout (a table whose first column is the leaf) gives the same result.
    frame = pd.DataFrame([["a", "X", "*"], ["b", "X", "*"], ["c", "Y", "*"], ["d", "Y", "*"]])
    np.testing.assert_allclose(t_closeness(classes, "s", hierarchy=frame).per_class, result.per_class)


def test_grassberger_by_hand() -> None:
    base = -EULER_GAMMA - math.log(2)
    np.testing.assert_allclose(
        grassberger(np.array([1, 2, 3, 4, 5, 6])),
        [base, base + 2, base + 2, base + 2 + 2 / 3, base + 2 + 2 / 3, base + 2 + 2 / 3 + 2 / 5],
        rtol=1e-13,
    )
    terms = np.sum(2 / (2 * np.arange(1, 51) - 1))
    assert grassberger(101) == pytest.approx(base + terms, rel=1e-13)
    assert grassberger(10**6) == pytest.approx(math.log(10**6), abs=1e-6)
    with pytest.raises(ParameterError):
        grassberger(np.array([0, 1]))
    # Classes with counts (2, 1), (3, 1) and (1, 1, 1):
    # H = G(3) - (2 G(2) + G(1)) / 3 = 2/3;  G(4) - (3 G(3) + G(1)) / 4 = 7/6;  G(3) - G(1) = 2.
    data = pd.DataFrame({"q": list("aaabbbbccc"), "s": list("xxyxxxyxyz")})
    classes = equivalence_classes(data, ["q"], sensitive=["s"])
    result = entropy_l_diversity(classes, "s", estimator="grassberger")
    by_class = dict(zip(classes.keys()["q"], result.entropy, strict=True))
    assert by_class["a"] == pytest.approx(2 / 3, rel=1e-12)
    assert by_class["b"] == pytest.approx(7 / 6, rel=1e-12)
    assert by_class["c"] == pytest.approx(2.0, rel=1e-12)
    # The largest l is capped by the number of distinct values, as ARX requires ceil(l) distinct values.
    levels = dict(zip(classes.keys()["q"], result.per_class, strict=True))
    assert levels == pytest.approx({"a": math.exp(2 / 3), "b": 2.0, "c": 3.0})
    assert result.value == pytest.approx(math.exp(2 / 3))


def test_wildcard_distributions_use_compatible_records() -> None:
    data = pd.DataFrame({"q": ["x", "x", None, "y"], "s": ["1", "2", "2", "3"]})
    classes = equivalence_classes(data, ["q"], sensitive=["s"], missing="wildcard")
    keys = classes.keys()["q"]
    order = [
        int(np.flatnonzero(keys == "x")[0]),
        int(np.flatnonzero(keys.isna())[0]),
        int(np.flatnonzero(keys == "y")[0]),
    ]
    # x matches rows 0, 1, 2; the missing pattern matches all four rows; y matches rows 2 and 3.
    assert classes.sizes[order].tolist() == [3, 4, 2]
    assert distinct_l_diversity(classes, "s").per_class[order].tolist() == [2, 3, 2]
    np.testing.assert_allclose(alpha_k_anonymity(classes, "s").per_class[order], [2 / 3, 1 / 2, 1 / 2])
    # The missing pattern's class holds every record, so its distribution is the table's.
    assert t_closeness(classes, "s").per_class[order[1]] == 0.0
    assert k_anonymity(classes).violating_records(3) == 1  # only the y record's own class is smaller than 3


def test_recursive_definition_for_other_l() -> None:
    # One class with counts 5, 3, 2, 1: l = 2 -> 5 / 6; l = 3 -> 5 / 3; l = 4 -> 5 / 1; l = 5 -> impossible.
    data = pd.DataFrame({"q": ["a"] * 11, "s": list("aaaaabbbccd")})
    classes = equivalence_classes(data, ["q"], sensitive=["s"])
    assert [recursive_cl_diversity(classes, "s", l=level).value for level in (1, 2, 3, 4, 5)] == [
        5 / 11,
        5 / 6,
        5 / 3,
        5.0,
        math.inf,
    ]
    assert [recursive_cl_diversity(classes, "s", l=level).c for level in (2, 3, 4)] == [1, 2, 6]


def test_bad_input_raises_clear_errors(example) -> None:
    classes, _ = example
    with pytest.raises(ColumnError, match="not a sensitive attribute"):
        distinct_l_diversity(classes, "salary")
    with pytest.raises(ParameterError, match="no order"):
        t_closeness(classes, "diag", distance="ordered")
    with pytest.raises(ParameterError, match="Unknown t-closeness distance"):
        t_closeness(classes, "diag", distance="wasserstein")
    with pytest.raises(ParameterError, match="needs a hierarchy"):
        t_closeness(classes, "diag", distance="hierarchical")
    with pytest.raises(ParameterError, match="no leaf for the values 'hiv'"):
        t_closeness(classes, "diag", hierarchy={"flu": ("*",), "cancer": ("*",)})
    with pytest.raises(ParameterError, match="same number"):
        t_closeness(classes, "diag", hierarchy={"flu": ("a", "*"), "cancer": ("*",), "hiv": ("*",)})
    with pytest.raises(ParameterError, match="not a tree"):
        t_closeness(classes, "diag", hierarchy={"flu": ("a", "*"), "cancer": ("a", "+"), "hiv": ("b", "*")})
    with pytest.raises(ParameterError, match="must be a sequence"):
        t_closeness(classes, "diag", hierarchy={"flu": "*", "cancer": "*", "hiv": "*"})
    with pytest.raises(ParameterError, match="Unknown entropy estimator"):
        entropy_l_diversity(classes, "diag", estimator="miller")
    with pytest.raises(ParameterError, match="l must be"):
        recursive_cl_diversity(classes, "diag", l=0)
    with pytest.raises(ParameterError, match="base"):
        delta_disclosure(classes, "diag", base=1)
    with pytest.raises(ParameterError, match="threshold"):
        t_closeness(classes, "diag").satisfies(-0.1)
    with pytest.raises(ParameterError, match="k must be"):
        alpha_k_anonymity(classes, "diag").satisfies(0.5, k=0)
    with pytest.raises(ParameterError, match="same kind"):
        worst_of([k_anonymity(classes), t_closeness(classes, "diag")])
    with pytest.raises(ColumnError, match="not evaluated"):
        all_sensitive_models(classes, ["diag"], t_distances={"income": "equal"})
    empty = equivalence_classes(
        pd.DataFrame({"q": [None, None], "s": ["a", "b"]}), ["q"], sensitive=["s"], missing="drop"
    )
    with pytest.raises(ParameterError, match="No records"):
        k_anonymity(empty)
    with pytest.raises(ParameterError, match="No records"):
        sensitive_models(empty, "s")


# --- agreement with pyCANON --------------------------------------------------------------------------------------


def _pycanon_values(pycanon: ModuleType, data: pd.DataFrame, qis: list[str], sa: str) -> dict[str, float]:
    return {
        "k": pycanon.k_anonymity(data, qis),
        "l": pycanon.l_diversity(data, qis, [sa]),
        "entropy": pycanon.entropy_l_diversity(data, qis, [sa]),
        "t": float(pycanon.t_closeness(data, qis, [sa])),
        "delta": float(pycanon.delta_disclosure(data, qis, [sa])),
        "beta": float(pycanon.basic_beta_likeness(data, qis, [sa])),
        "alpha": pycanon.alpha_k_anonymity(data, qis, [sa])[0],
    }


def _assert_same(ours: dict[str, float], expected: dict[str, float]) -> None:
    """Compare with pyCANON, which floors entropy l after computing ``np.exp(1) ** H``: for a class uniform over
    n values that power can land just below n (4 -> 3.9999999999999996), and its floor one below."""
    ours, expected = dict(ours), dict(expected)
    entropy, floored = ours.pop("entropy"), expected.pop("entropy")
    assert floored == math.floor(entropy) or (entropy == round(entropy) and floored == entropy - 1)
    assert ours == pytest.approx(expected, rel=1e-12)


def _ours(data: pd.DataFrame, qis: list[str], sa: str, distance: str) -> dict[str, float]:
    classes = equivalence_classes(data, qis, sensitive=[sa])
    return {
        "k": k_anonymity(classes).value,
        "l": distinct_l_diversity(classes, sa).value,
        "entropy": entropy_l_diversity(classes, sa).value,
        "t": t_closeness(classes, sa, distance=distance).value,
        "delta": delta_disclosure(classes, sa, base=math.e).value,  # pyCANON uses ln
        "beta": basic_beta_likeness(classes, sa).value,
        "alpha": alpha_k_anonymity(classes, sa).value,
    }


@pytest.mark.parametrize(
    ("qis", "sa", "distance"),
    [
        (["sex", "race"], "occupation", "equal"),  # string SA: pyCANON uses the equal distance
        (["sex", "race", "salary-class"], "age", "ordered"),  # numeric SA: pyCANON uses the ordered distance
    ],
)
def test_agrees_with_pycanon_on_adult(
    pycanon: ModuleType, adult: pd.DataFrame, qis: list[str], sa: str, distance: str
) -> None:
    data = adult[[*qis, sa]].reset_index(drop=True)
    expected, ours = _pycanon_values(pycanon, data, qis, sa), _ours(data, qis, sa, distance)
    _assert_same(ours, expected)
    assert expected["l"] > 1 and expected["t"] > 0  # the comparison is not between trivial values


def test_agrees_with_pycanon_on_adult_subset_with_age_as_qi(pycanon: ModuleType, data_dir: Path) -> None:
    data = read_table(data_dir / "arx_adult" / "adult_subset.csv")
    qis, sa = ["sex", "age", "race", "marital-status"], "occupation"
    data = data[[*qis, sa]].reset_index(drop=True)
    classes = equivalence_classes(data, qis, sensitive=[sa])
    assert classes.n_classes == data.groupby(qis).ngroups
    assert k_anonymity(classes).value == pycanon.k_anonymity(data, qis)
    assert distinct_l_diversity(classes, sa).value == pycanon.l_diversity(data, qis, [sa])
    alpha, k = pycanon.alpha_k_anonymity(data, qis, [sa])
    result = alpha_k_anonymity(classes, sa)
    assert (result.value, result.k) == (alpha, k)


@pytest.mark.parametrize("sa", ["roof", "relat"])
def test_agrees_with_pycanon_on_sdcmicro_testdata(pycanon: ModuleType, data_dir: Path, sa: str) -> None:
    table = read_table(data_dir / "sdcmicro_testdata" / "testdata.csv")
    qis = ["urbrur", "water", "sex"]
    data = table[[*qis, sa]].reset_index(drop=True)
    # Numeric SA: ordered distance in both.
    _assert_same(_ours(data, qis, sa, "ordered"), _pycanon_values(pycanon, data, qis, sa))
    # The same SA as text: equal distance in both.
    text = data.assign(**{sa: data[sa].astype(str)})
    ours = _ours(text, qis, sa, "equal")
    expected = {"t": float(pycanon.t_closeness(text, qis, [sa]))}
    assert ours["t"] == pytest.approx(expected["t"], rel=1e-12)
    # Adding age to the QIs: many small classes; k, l and alpha still agree.
    qis4 = [*qis, "age"]
    data4 = table[[*qis4, sa]].reset_index(drop=True)
    classes = equivalence_classes(data4, qis4, sensitive=[sa])
    assert k_anonymity(classes).value == pycanon.k_anonymity(data4, qis4)
    assert distinct_l_diversity(classes, sa).value == pycanon.l_diversity(data4, qis4, [sa])


def test_pycanon_deviations_are_pinned(pycanon: ModuleType, example) -> None:
    """Where pyCANON returns something else on the worked example (peers.md §3.2, §3.3, §3.5, §3.6)."""
    classes, _ = example
    data = worked_example()
    qis = ["age", "sex"]
    # Recursive (c,l): pyCANON sorts ascending and returns c = 1 (with l = 2); the minimal c is 4.
    c, level = pycanon.recursive_c_l_diversity(data, qis, ["diag"])
    assert (c, level) == (1, 2)
    assert recursive_cl_diversity(classes, "diag", l=2).c == 4
    # Enhanced beta: pyCANON max_i min(beta_basic, -ln p_i) = min(11/9, -ln 0.2) = 11/9; no beta satisfies ARX's.
    assert pycanon.enhanced_beta_likeness(data, qis, ["diag"]) == pytest.approx(11 / 9)
    assert enhanced_beta_likeness(classes, "diag").value == math.inf
    # Entropy l: pyCANON floors it to 1; the real value is 1.7548.
    assert pycanon.entropy_l_diversity(data, qis, ["diag"]) == 1
    assert entropy_l_diversity(classes, "diag").value == pytest.approx(1.7548, abs=5e-5)
    # ... and floors exp(H) computed as np.exp(1) ** H, which for a class uniform over 4 values is just below 4.
    uniform = pd.DataFrame({"q": ["a"] * 4 + ["b"] * 4, "r": "r", "s": list("wxyz") * 2})
    assert pycanon.entropy_l_diversity(uniform, ["q", "r"], ["s"]) == 3
    uniform_classes = equivalence_classes(uniform, ["q", "r"], sensitive=["s"])
    assert entropy_l_diversity(uniform_classes, "s").value == 4.0
    assert entropy_l_diversity(uniform_classes, "s").satisfies(4)
    # delta-disclosure: pyCANON uses ln (0.7985), ARX and our default log2 (1.152).
    assert pycanon.delta_disclosure(data, qis, ["diag"]) == pytest.approx(0.7985, abs=5e-5)
    assert delta_disclosure(classes, "diag").value == pytest.approx(1.152, abs=5e-4)
    assert delta_disclosure(classes, "diag", base=math.e).value == pytest.approx(
        pycanon.delta_disclosure(data, qis, ["diag"]), rel=1e-12
    )
    # Where they agree: ordered t on income, equal t on diag, basic beta.
    assert pycanon.t_closeness(data, qis, ["income"]) == pytest.approx(0.3125)
    assert pycanon.t_closeness(data, qis, ["diag"]) == pytest.approx(t_closeness(classes, "diag").value)
    assert pycanon.basic_beta_likeness(data, qis, ["diag"]) == pytest.approx(basic_beta_likeness(classes, "diag").value)


def test_hierarchical_distance_on_adult_occupation(adult: pd.DataFrame, data_dir: Path) -> None:
    hierarchy = pd.read_csv(
        data_dir / "arx_adult" / "hierarchies" / "adult_hierarchy_occupation.csv", sep=";", header=None, dtype=str
    )
    classes = equivalence_classes(adult, ["sex", "race", "marital-status"], sensitive=["occupation"])
    hierarchical = t_closeness(classes, "occupation", hierarchy=hierarchy)
    equal = t_closeness(classes, "occupation", distance="equal")
    # Ground distances of at most 1 can only shorten the earth mover's distance.
    assert (hierarchical.per_class <= equal.per_class + 1e-15).all()
    assert (hierarchical.per_class >= equal.per_class / 2 - 1e-15).all()  # level-1 moves cost 1/2 (H = 2)
    assert 0 < hierarchical.value < equal.value
    mapping = {row[0]: tuple(row[1:]) for row in hierarchy.itertuples(index=False, name=None)}
    reference = _reference_hierarchical(classes, "occupation", mapping)
    np.testing.assert_allclose(hierarchical.per_class, reference, rtol=1e-12, atol=1e-15)


# --- reference implementations (one class at a time, straight from the definitions) ------------------------------


def _class_counts(classes: EquivalenceClasses, name: str) -> tuple[list[dict[int, int]], np.ndarray]:
    dist = classes.sensitive[name]
    per_class: list[dict[int, int]] = [{} for _ in range(classes.n_classes)]
    for j, v, c in zip(dist.class_index, dist.value_index, dist.counts, strict=True):
        per_class[int(j)][int(v)] = int(c)
    return per_class, dist.overall / dist.overall.sum()


def _reference_hierarchical(classes: EquivalenceClasses, name: str, mapping: dict) -> np.ndarray:
    labels = list(classes.sensitive[name].labels)
    per_class, p = _class_counts(classes, name)
    height = len(next(iter(mapping.values())))
    children: dict[tuple, set] = defaultdict(set)
    for index, label in enumerate(labels):
        chain = [(0, index)] + [(level + 1, mapping[label][level]) for level in range(height)]
        for child, parent in itertools.pairwise(chain):
            children[parent].add(child)
    out = []
    for counts in per_class:
        size = sum(counts.values())
        extra_of: dict[tuple, float] = {(0, i): p[i] - counts.get(i, 0) / size for i in range(len(labels))}
        cost = 0.0
        for level in range(1, height + 1):
            for node, kids in children.items():
                if node[0] != level:
                    continue
                positive = sum(max(extra_of[k], 0.0) for k in kids)
                negative = sum(max(-extra_of[k], 0.0) for k in kids)
                cost += level / height * min(positive, negative)
                extra_of[node] = positive - negative
        out.append(cost)
    return np.array(out)


def _reference_models(classes: EquivalenceClasses, name: str, l: int) -> dict[str, np.ndarray]:  # noqa: E741
    per_class, p = _class_counts(classes, name)
    m = len(p)
    result: dict[str, list[float]] = defaultdict(list)
    for counts in per_class:
        size = sum(counts.values())
        q = np.array([counts.get(i, 0) / size for i in range(m)])
        present = [i for i in range(m) if counts.get(i, 0) > 0]
        ranked = sorted(counts.values(), reverse=True)
        tail = sum(ranked[l - 1 :])
        result["alpha"].append(max(ranked) / size)
        result["l_distinct"].append(len(present))
        result["l_entropy"].append(math.exp(-sum(q[i] * math.log(q[i]) for i in present)))
        result["recursive"].append(ranked[0] / tail if tail else math.inf)
        result["t_equal"].append(0.5 * np.abs(q - p).sum())
        result["t_ordered"].append(np.abs(np.cumsum(q - p)).sum() / (m - 1) if m > 1 else 0.0)
        result["delta"].append(max(abs(math.log2(q[i] / p[i])) for i in present))
        gains = [(q[i] - p[i]) / p[i] for i in present]
        result["beta_basic"].append(max(gains))
        enhanced_ok = all((q[i] - p[i]) / p[i] <= -math.log(p[i]) + 1e-12 for i in present)
        result["beta_enhanced"].append(max(gains) if enhanced_ok else math.inf)
    return {key: np.array(values) for key, values in result.items()}


# --- properties --------------------------------------------------------------------------------------------------


rows = st.lists(
    st.tuples(st.integers(0, 2), st.integers(0, 2), st.integers(0, 5)),
    min_size=1,
    max_size=40,
)


def _frame(records: list[tuple[int, int, int]]) -> pd.DataFrame:
    a, b, s = zip(*records, strict=True)
    return pd.DataFrame({"a": [f"a{x}" for x in a], "b": [f"b{x}" for x in b], "s": list(s)})


@settings(max_examples=60, deadline=None)
@given(records=rows, level=st.integers(1, 3), parents=st.lists(st.integers(0, 2), min_size=6, max_size=6))
def test_models_match_definitions_and_invariants(records, level, parents) -> None:
    data = _frame(records)
    classes = equivalence_classes(data, ["a", "b"], sensitive=["s"])
    labels = list(classes.sensitive["s"].labels)
    hierarchy = {v: (f"g{parents[v]}", f"h{parents[v] // 2}", "*") for v in range(6)}
    models = sensitive_models(classes, "s", recursive_l=level, t_distance="equal")
    ordered = t_closeness(classes, "s")
    hierarchical = t_closeness(classes, "s", hierarchy=hierarchy)
    reference = _reference_models(classes, "s", level)
    np.testing.assert_allclose(models.alpha_k.per_class, reference["alpha"], rtol=1e-12)
    np.testing.assert_array_equal(models.l_distinct.per_class, reference["l_distinct"])
    np.testing.assert_allclose(models.l_entropy.per_class, reference["l_entropy"], rtol=1e-9)
    np.testing.assert_allclose(models.recursive.per_class, reference["recursive"], rtol=1e-12)
    np.testing.assert_allclose(models.t_closeness.per_class, reference["t_equal"], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(ordered.per_class, reference["t_ordered"], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(models.delta_disclosure.per_class, reference["delta"], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(models.beta_basic.per_class, reference["beta_basic"], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(models.beta_enhanced.per_class, reference["beta_enhanced"], rtol=1e-9, atol=1e-12)
    mapping = {label: hierarchy[label] for label in labels}
    np.testing.assert_allclose(
        hierarchical.per_class, _reference_hierarchical(classes, "s", mapping), rtol=1e-9, atol=1e-12
    )
    # Invariants.
    sizes = classes.sizes
    assert (models.l_distinct.per_class <= sizes).all() and models.l_distinct.value <= sizes.min()
    assert (models.l_entropy.per_class <= models.l_distinct.per_class).all()
    assert models.l_entropy.value <= models.l_distinct.value
    for result in (models.t_closeness, ordered, hierarchical):
        assert ((result.per_class >= 0) & (result.per_class <= 1)).all()
    assert (hierarchical.per_class <= models.t_closeness.per_class + 1e-12).all()
    assert (models.beta_enhanced.per_class >= models.beta_basic.per_class).all()
    c = models.recursive.c
    if math.isfinite(c):
        assert models.recursive.satisfies(c) and (c == 1 or not models.recursive.satisfies(c - 1))
    assert models.l_distinct.satisfies(models.l_distinct.value)
    assert not models.l_distinct.satisfies(models.l_distinct.value + 1)
    assert models.t_closeness.satisfies(models.t_closeness.value)
    assert not models.delta_disclosure.satisfies(models.delta_disclosure.value)


@settings(max_examples=40, deadline=None)
@given(values=st.lists(st.integers(0, 4), min_size=1, max_size=30))
def test_one_class_has_zero_distance(values) -> None:
    data = pd.DataFrame({"q": ["same"] * len(values), "s": values, "c": [f"v{v}" for v in values]})
    classes = equivalence_classes(data, ["q"], sensitive=["s", "c"])
    hierarchy = {f"v{v}": (f"g{v % 2}", "*") for v in range(5)}
    assert t_closeness(classes, "s").value == 0.0
    assert t_closeness(classes, "c").value == 0.0
    assert t_closeness(classes, "c", hierarchy=hierarchy).value == 0.0
    assert delta_disclosure(classes, "c").value == 0.0
    assert enhanced_beta_likeness(classes, "c").value == 0.0


def test_block_processing_matches_a_single_block(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(3)
    data = pd.DataFrame({"a": rng.integers(0, 40, 3000), "b": rng.integers(0, 5, 3000), "s": rng.integers(0, 30, 3000)})
    classes = equivalence_classes(data, ["a", "b"], sensitive=["s"])
    hierarchy = {v: (f"g{v // 3}", f"h{v // 9}", "*") for v in range(30)}
    whole_ordered = t_closeness(classes, "s").per_class
    whole_hier = t_closeness(classes, "s", hierarchy=hierarchy).per_class
    import privdash.measure.models as models_module

    monkeypatch.setattr(models_module, "BLOCK_CELLS", 7 * 30)  # blocks of 7 classes, the last one partial
    np.testing.assert_array_equal(t_closeness(classes, "s").per_class, whole_ordered)
    np.testing.assert_array_equal(t_closeness(classes, "s", hierarchy=hierarchy).per_class, whole_hier)


@pytest.mark.parametrize("missing", ["value", "wildcard", "drop"])
def test_ordered_distance_sparse_path_equals_the_dense_blocks(missing: str) -> None:
    from privdash.measure import models

    rng = np.random.default_rng(11)
    for _ in range(25):
        n = int(rng.integers(2, 300))
        frame = pd.DataFrame(
            {
                "a": rng.integers(0, int(rng.integers(1, 15)), n).astype(float),
                "b": rng.integers(0, 3, n),
                "s": rng.integers(0, int(rng.integers(2, 25)), n).astype(float),
            }
        )
        frame.loc[rng.random(n) < 0.1, "a"] = np.nan
        frame.loc[rng.random(n) < 0.1, "s"] = np.nan
        classes = equivalence_classes(frame, ["a", "b"], sensitive=["s"], missing=missing)
        sparse = models._sparse(classes, "s")
        m = sparse.dist.n_values
        if m <= 1:
            continue
        dense = np.abs(np.cumsum(models._block_differences(sparse, 0, classes.n_classes), axis=1)).sum(axis=1)
        expected = dense / (sparse.sizes * float(sparse.total) * (m - 1))
        fast = models._ordered_distance_sparse(sparse, classes.n_classes)
        assert fast is not None
        np.testing.assert_array_equal(fast, expected)
