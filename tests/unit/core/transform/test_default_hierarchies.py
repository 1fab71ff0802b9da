"""Default hierarchies keep information: every level strictly coarsens the one below it (checked by brute force over
many generated columns), the groups are the ones the documented rules give (against independent re-implementations),
rules re-apply exactly, and on Adult without hierarchy files the least-lossy search comes within 1.2x of ARX's
hand-built hierarchies."""

from __future__ import annotations

import math
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privdash.data.contract import StatisticalType, infer_statistical_type, suggest_contract
from privdash.data.tables import read_table
from privdash.search.lattice import optimal_generalization
from privdash.transform.hierarchy import (
    TOP,
    Hierarchy,
    HierarchyError,
    build_hierarchy,
    canonical_text,
    default_rule,
    frequency_hierarchy,
    hierarchy_from_rule,
    interval_hierarchy,
    load_hierarchies,
    looks_like_codes,
    pointless_levels,
    prefix_hierarchy,
    search_hierarchy,
)

ADULT_QIS = ["sex", "age", "race", "marital-status", "education", "native-country", "workclass", "occupation"]


# --- brute-force checks ------------------------------------------------------------------------------------------


def partition(hierarchy: Hierarchy, level: int) -> set[frozenset[str]]:
    """The groups of leaves (as text) at ``level``, one leaf at a time."""
    groups: dict[Any, set[str]] = {}
    for leaf, code in zip(hierarchy.leaves, hierarchy.codes[level], strict=True):
        groups.setdefault(int(code), set()).add(str(leaf))
    return {frozenset(group) for group in groups.values()}


def assert_every_level_coarsens(hierarchy: Hierarchy, values: pd.Series) -> None:
    """Each level merges groups of the level below (every group inside one group above) and has fewer of them; and
    published on the data, each level has fewer distinct values than the level below."""
    assert pointless_levels(hierarchy) == []
    for level in range(1, hierarchy.n_levels):
        finer, coarser = partition(hierarchy, level - 1), partition(hierarchy, level)
        assert all(sum(1 for group in coarser if part <= group) == 1 for part in finer)
        assert len(coarser) < len(finer), (level, hierarchy.rule)
        before = hierarchy.generalize(values, level - 1).astype(str).nunique()
        after = hierarchy.generalize(values, level).astype(str).nunique()
        assert after < before


def reference_frequency_groups(values: pd.Series, ratio: float = 2.0, max_levels: int = 5) -> list[set[frozenset]]:
    """The documented frequency rule, naively: merge the two groups of fewest records (ties: the group whose most
    frequent member comes later in the order most frequent first, then by text) until ``ceil(g / r)`` are left."""
    counts = Counter(str(v) for v in canonical_text(pd.Index(values.dropna())))
    order = sorted(counts, key=lambda v: (-counts[v], v))
    m = len(order)
    step = max(ratio, m ** (1 / max_levels))
    groups: list[list[str]] = [[v] for v in order]
    out = []
    while True:
        target = math.ceil(len(groups) / step)
        if target < 2 or target >= len(groups):
            break
        while len(groups) > target:
            ranked = sorted(groups, key=lambda g: (sum(counts[v] for v in g), -min(order.index(v) for v in g)))
            first, second = ranked[0], ranked[1]
            groups = [g for g in groups if g is not first and g is not second] + [first + second]
        out.append({frozenset(g) for g in groups})
    return out


# --- generated columns -------------------------------------------------------------------------------------------

categories = st.lists(
    st.sampled_from([f"c{i}" for i in range(30)]) | st.sampled_from(["x", "y", "Other", "a/b"]),
    min_size=1,
    max_size=150,
)
whole_numbers = st.lists(st.integers(-50, 400), min_size=1, max_size=150) | st.lists(
    st.integers(0, 5), min_size=1, max_size=60
)
decimals = st.lists(
    st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False).map(lambda x: round(x, 2)), min_size=1, max_size=120
)
skewed = st.lists(st.integers(0, 40), min_size=5, max_size=200).map(lambda xs: [int(1.25**x) for x in xs])
codes = st.lists(
    st.builds(
        lambda letter, a, b: f"{letter}{a:02d}.{b}",
        st.sampled_from("ABCK"),
        st.integers(0, 30),
        st.integers(0, 9),
    ),
    min_size=1,
    max_size=120,
)
dates = st.lists(
    st.dates(min_value=pd.Timestamp("2019-01-01").date(), max_value=pd.Timestamp("2024-12-31").date()).map(str),
    min_size=1,
    max_size=100,
)


#: Ordered categories (declared in reverse text order, so the order is not the text's).
ordinals = st.lists(st.sampled_from([f"q{i:02d}" for i in range(20)]), min_size=1, max_size=200).map(
    lambda items: pd.Series(pd.Categorical(items, categories=[f"q{i:02d}" for i in range(20)][::-1], ordered=True))
)


@settings(max_examples=120, deadline=None)
@given(
    st.one_of(
        categories.map(lambda v: (v, StatisticalType.NOMINAL)),
        whole_numbers.map(lambda v: (v, StatisticalType.NUMERICAL)),
        decimals.map(lambda v: (v, StatisticalType.NUMERICAL)),
        skewed.map(lambda v: (v, StatisticalType.NUMERICAL)),
        codes.map(lambda v: (v, StatisticalType.NOMINAL)),
        dates.map(lambda v: (v, StatisticalType.DATE)),
        whole_numbers.map(lambda v: (v, StatisticalType.NOMINAL)),
        ordinals.map(lambda v: (v, StatisticalType.ORDINAL)),
    ),
    st.booleans(),
)
def test_no_default_level_is_pointless(column: tuple[Any, StatisticalType], with_missing: bool) -> None:
    items, kind = column
    if isinstance(items, pd.Series):  # ordered categories
        values = pd.concat([items, pd.Series([None], dtype=items.dtype)], ignore_index=True) if with_missing else items
    else:
        values = pd.Series([*items, None] if with_missing else items)
    hierarchy = search_hierarchy(values, kind, 5)
    assert hierarchy.rule is not None and hierarchy.rule["builder"] != "masking"
    assert_every_level_coarsens(hierarchy, values)
    # The resolved rule re-applies to the same values exactly, also after a JSON round trip.
    assert hierarchy.for_values(values).equals(hierarchy)
    assert Hierarchy.from_dict(hierarchy.to_dict(), values).equals(hierarchy)
    # The settings the default suggests build that same hierarchy.
    assert build_hierarchy(default_rule(values, kind), values).equals(hierarchy)


@settings(max_examples=150, deadline=None)
@given(categories, st.sampled_from([2.0, 3.0]))
def test_frequency_groups_follow_the_documented_rule(items: list[str], ratio: float) -> None:
    values = pd.Series(items)
    hierarchy = frequency_hierarchy(values, ratio=ratio)
    expected = reference_frequency_groups(values, ratio)
    levels = [partition(hierarchy, level) for level in range(1, hierarchy.n_levels)]
    if len(partition(hierarchy, 0)) > 1:
        assert levels.pop() == {frozenset(str(v) for v in hierarchy.leaves)}  # the top, *
    assert levels == expected
    assert_every_level_coarsens(hierarchy, values)


def reference_neighbour_groups(values: pd.Series, ratio: float = 2.0, max_levels: int = 5) -> list[set[frozenset]]:
    """The documented rule for ordered categories, naively: the group of fewest records (ties: the later) merges
    with its neighbour of fewer records (ties: the one before it)."""
    counts = Counter(str(v) for v in values.dropna())
    order = [str(c) for c in values.cat.categories if str(c) in counts]
    step = max(ratio, len(order) ** (1 / max_levels))
    groups: list[list[str]] = [[v] for v in order]
    out = []
    while True:
        target = math.ceil(len(groups) / step)
        if target < 2 or target >= len(groups):
            break
        while len(groups) > target:
            weights = [sum(counts[v] for v in g) for g in groups]
            smallest = max(i for i in range(len(groups)) if weights[i] == min(weights))
            neighbours = [i for i in (smallest - 1, smallest + 1) if 0 <= i < len(groups)]
            other = min(neighbours, key=lambda i: (weights[i], i))
            first = min(smallest, other)
            groups = [*groups[:first], groups[first] + groups[first + 1], *groups[first + 2 :]]
        out.append({frozenset(g) for g in groups})
    return out


@settings(max_examples=150, deadline=None)
@given(ordinals)
def test_ordered_groups_merge_neighbours_as_documented(values: pd.Series) -> None:
    hierarchy = search_hierarchy(values, StatisticalType.ORDINAL, 5)
    assert hierarchy.rule is not None and hierarchy.rule["ordered"] is True
    levels = [partition(hierarchy, level) for level in range(1, hierarchy.n_levels)]
    if len(partition(hierarchy, 0)) > 1:
        levels.pop()  # the top, *
    assert levels == reference_neighbour_groups(values)
    assert_every_level_coarsens(hierarchy, values)
    assert hierarchy.for_values(values).equals(hierarchy)


def test_ordered_groups_by_hand() -> None:
    order = ["none", "primary", "secondary", "college", "degree"]
    values = pd.Series(pd.Categorical([*["none"] * 2, *["primary"] * 9, *["secondary"] * 10, "college", "degree"],
                                      categories=order, ordered=True))  # fmt: skip
    assert default_rule(values, StatisticalType.ORDINAL) == {"builder": "frequency", "ordered": True}
    hierarchy = search_hierarchy(values, StatisticalType.ORDINAL, 5)
    # degree (1, the later of the two rarest) joins college, its only neighbour; then that group (2, later than
    # none) joins secondary; then none (2) joins primary. 5 -> 3 -> 2 groups.
    assert hierarchy.to_frame().to_numpy().tolist() == [
        ["none", "none", "none to primary", TOP],
        ["primary", "primary", "none to primary", TOP],
        ["secondary", "secondary to degree", "secondary to degree", TOP],
        ["college", "secondary to degree", "secondary to degree", TOP],
        ["degree", "secondary to degree", "secondary to degree", TOP],
    ]
    # A category no row holds needs no leaf.
    unused = values.cat.add_categories(["doctorate"])
    assert hierarchy.generalize(unused, 1).tolist()[-1] == "secondary to degree"
    with pytest.raises(HierarchyError, match="ordinal column"):
        build_hierarchy({"builder": "frequency", "ordered": True}, pd.Series(order))


def test_frequency_groups_by_hand() -> None:
    values = pd.Series([*"aaaaaaaa", *"bbbb", *"ccc", "d", "d", "e", None])
    hierarchy = frequency_hierarchy(values)
    # 5 values -> 3 groups (e+d, then c+de) -> 2 groups (b+cde); a, the most frequent, stays itself.
    assert hierarchy.to_frame().to_numpy().tolist() == [
        ["a", "a", "a", TOP],
        ["b", "b", "b/c/d/... (4 values)", TOP],
        ["c", "c/d/e", "b/c/d/... (4 values)", TOP],
        ["d", "c/d/e", "b/c/d/... (4 values)", TOP],
        ["e", "c/d/e", "b/c/d/... (4 values)", TOP],
    ]
    rule = hierarchy.rule
    assert rule is not None and rule["builder"] == "frequency" and rule["order"] == ["a", "b", "c", "d", "e"]
    assert rule["groups"] == [[[0], [1], [2, 3, 4]], [[0], [1, 2, 3, 4]]]
    # Re-applied to new data: the same groups; a value never seen joins the group of the rarest one (e).
    new = pd.Series(["e", "z", "a"])
    again = hierarchy.for_values(new)
    assert again.generalize(new, 1).tolist() == ["c/d/e", "c/d/e", "a"]
    # Integer codes get their text as labels; one or two values have nothing to merge but the top.
    assert frequency_hierarchy([1, 1, 2]).to_frame().to_numpy().tolist() == [[1, TOP], [2, TOP]]
    assert frequency_hierarchy(["x", "x"]).n_levels == 1
    with pytest.raises(HierarchyError, match="above 1"):
        frequency_hierarchy(["x"], ratio=1)


def test_merged_labels_never_repeat_a_value() -> None:
    from privdash.transform.hierarchy import _group_labels

    names = np.array(["x/y", "x", "y", "a", "b", "c", "d"], dtype=object)
    labels = _group_labels(names, [[0], [1, 2], [3, 4, 5, 6]])
    assert labels.tolist() == ["x/y", "x/y (group)", "a/b/c/... (4 values)"]


def test_frequency_groups_many_categories_keep_few_levels() -> None:
    rng = np.random.default_rng(3)
    values = pd.Series(rng.zipf(1.3, 20_000).astype(str))
    hierarchy = frequency_hierarchy(values)
    assert hierarchy.n_levels <= 7  # leaves, at most 5 levels of groups, *
    assert_every_level_coarsens(hierarchy, values)


# --- numbers -----------------------------------------------------------------------------------------------------


def test_intervals_with_top_and_bottom_codes() -> None:
    values = pd.Series(range(0, 101))
    hierarchy = interval_hierarchy(values, widths=[10, 20], low=20, high=80)
    frame = hierarchy.to_frame().set_index("level_0")
    assert frame.loc[[0, 19, 20, 35, 79, 80, 100], "level_1"].tolist() == ["<20", "<20", "20-29", "30-39", "70-79",
                                                                           ">=80", ">=80"]  # fmt: skip
    assert sorted(set(frame["level_2"])) == ["20-39", "40-59", "60-79", "<20", ">=80"]
    assert hierarchy.rule == {"builder": "intervals", "widths": [10, 20], "origin": 20, "top": True, "low": 20,
                              "high": 80}  # fmt: skip
    assert hierarchy_from_rule(hierarchy.rule, values).equals(hierarchy)
    with pytest.raises(HierarchyError, match="whole multiple of the coarsest width"):
        interval_hierarchy(values, widths=[10, 20], low=20, high=90)
    with pytest.raises(HierarchyError, match="low must be below high"):
        interval_hierarchy(values, widths=[10], low=50, high=50)
    with pytest.raises(HierarchyError, match="fixed-width intervals"):
        interval_hierarchy(values, cuts=[[50]], high=50)


def test_old_recipes_rules_still_apply() -> None:
    values = pd.Series(["a", "a", "b", "c"])
    old_rare = {"builder": "rare", "keep": ["a"], "other": "Other", "top": True, "min_count": 2}
    assert hierarchy_from_rule(old_rare, values).generalize(values, 1).tolist() == ["a", "a", "Other", "Other"]
    old_masking = {"builder": "masking", "steps": 1, "char": "*", "top": True}
    assert hierarchy_from_rule(old_masking, values).generalize(values, 1).tolist() == ["*"] * 4
    old_intervals = {"builder": "intervals", "widths": [5], "origin": 0, "top": True}
    assert hierarchy_from_rule(old_intervals, pd.Series([3, 7])).generalize(pd.Series([3, 7]), 1).tolist() == [
        "0-4",
        "5-9",
    ]


def test_number_defaults_choose_round_widths_and_code_the_tails() -> None:
    rng = np.random.default_rng(11)
    ages = pd.Series(np.clip(rng.normal(40, 14, 20_000).round(), 17, 96).astype(int))
    rule = default_rule(ages, StatisticalType.NUMERICAL)
    assert rule["builder"] == "intervals" and rule["widths"] == [5, 10, 20]
    hierarchy = build_hierarchy(rule, ages)
    # The top (and any bottom) code holds at most 1% of the records, and only values beyond the 99th percentile.
    published = hierarchy.generalize(ages, 1)
    top = published.astype(str).str.startswith(">=")
    assert 0 < top.mean() <= 0.01 and ages[top].min() > ages.quantile(0.99, interpolation="lower")
    assert rule["high"] % 20 == 0 and "low" not in rule  # 17 is the smallest age: nothing below 0
    # Amounts: whole round bands (1, 2 or 5 times a power of ten, nesting).
    amounts = pd.Series(rng.normal(50_000, 9_000, 5_000).round(2))
    widths = default_rule(amounts, StatisticalType.NUMERICAL)["widths"]
    assert widths == [5000, 10000, 20000]
    # A long right tail: quantile bands with round boundaries, the first and last open.
    incomes = pd.Series(np.exp(rng.normal(10, 1.2, 5_000)).round())
    rule = default_rule(incomes, StatisticalType.NUMERICAL)
    assert rule == {"builder": "quantiles", "bins": [16, 8, 4], "digits": 2}
    hierarchy = build_hierarchy(rule, incomes)
    labels = list(hierarchy.labels[1])
    assert any(str(label).startswith("<") for label in labels) and any(str(label).startswith(">=") for label in labels)
    cuts = hierarchy.rule["cuts"][0]  # type: ignore[index]
    assert all(float(f"{c:.2g}") == c for c in cuts)
    shares = hierarchy.generalize(incomes, 1).value_counts(normalize=True)
    assert shares.between(0.03, 0.10).all()


def reference_number_levels(values: list[int]) -> list[set[frozenset[str]]] | None:
    """The documented default for whole numbers, as partitions of the distinct values (None when skewed)."""
    x = np.asarray(values, dtype=float)
    p1, p50, p99 = np.quantile(x, [0.01, 0.5, 0.99], method="inverted_cdf")
    if max(p50 - p1, p99 - p50) > 3 * min(p50 - p1, p99 - p50):
        return None
    raw = ((p99 - p1) or (x.max() - x.min())) / 20
    w = max(min(m * 10.0**e for m in (1, 2, 5) for e in range(0, 12) if m * 10.0**e >= raw), 1.0)
    widths = [w, 5 * w, 10 * w] if str(int(w))[0] in "12" else [w, 2 * w, 4 * w]
    coarsest = widths[-1]
    low, high = coarsest * math.floor(p1 / coarsest), coarsest * (math.floor(p99 / coarsest) + 1)
    levels: list[set[frozenset[str]]] = [{frozenset([str(v)]) for v in set(values)}]
    for width in widths:
        groups: dict[Any, set[str]] = {}
        for v in set(values):
            key = "low" if v < low else "high" if v >= high else math.floor(v / width)
            groups.setdefault(key, set()).add(str(v))
        level = {frozenset(g) for g in groups.values()}
        if len(level) < len(levels[-1]):
            levels.append(level)
    return levels[1:]


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.integers(0, 100), min_size=2, max_size=200)
    | st.lists(st.integers(-3_000, 3_000), min_size=2, max_size=200)
    | st.lists(st.integers(15, 95), min_size=50, max_size=400).map(lambda xs: [*xs, 17, 99, 100])
)
def test_number_groups_follow_the_documented_rule(values: list[int]) -> None:
    series = pd.Series(values)
    hierarchy = search_hierarchy(series, StatisticalType.NUMERICAL, 5)
    expected = reference_number_levels(values)
    assert hierarchy.rule is not None
    if expected is None:
        assert hierarchy.rule["builder"] in ("cuts", "frequency")  # quantile bands (resolved), or nothing to cut
        return
    if not expected:  # no interval level groups anything (few, spread values): frequency groups
        assert hierarchy.rule["builder"] == "frequency"
        return
    levels = [partition(hierarchy, level) for level in range(1, hierarchy.n_levels)]
    if len(partition(hierarchy, hierarchy.max_level)) == 1 and len(expected) < len(levels):
        levels.pop()  # the top, *
    assert levels == expected


@settings(max_examples=100, deadline=None)
@given(codes)
def test_prefix_groups_follow_the_documented_rule(items: list[str]) -> None:
    values = pd.Series(items)
    hierarchy = prefix_hierarchy(values)
    stripped = {v: v.replace(".", "") for v in set(items)}
    levels = [partition(hierarchy, level) for level in range(1, hierarchy.n_levels)]
    longest = max(len(code) for code in stripped.values())
    for level, length in enumerate(range(longest - 1, 0, -1)):
        groups: dict[str, set[str]] = {}
        for value, code in stripped.items():
            groups.setdefault(code[:length], set()).add(value)
        assert levels[level] == {frozenset(g) for g in groups.values()}


def test_a_dominant_value_is_a_band_of_its_own() -> None:
    rng = np.random.default_rng(5)
    gains = pd.Series(np.where(rng.random(5_000) < 0.9, 0, np.round(np.exp(rng.normal(8, 1, 5_000)))))
    rule = default_rule(gains, StatisticalType.NUMERICAL)
    assert rule == {"builder": "quantiles", "bins": [16, 8, 4], "digits": 2}
    hierarchy = build_hierarchy(rule, gains)
    for level in range(1, hierarchy.max_level):
        published = hierarchy.generalize(gains, level)
        # The zeros, and only they, share the first band; the other values are in bands of about equal frequency.
        assert published[gains == 0].nunique() == 1 and not published[gains > 0].isin(published[gains == 0]).any()
        shares = published[gains > 0].value_counts(normalize=True)
        assert len(shares) == [16, 8, 4][level - 1] and (shares < 2.5 / len(shares)).all()


def test_constant_and_binary_numbers() -> None:
    assert search_hierarchy(pd.Series([7] * 30), StatisticalType.NUMERICAL, 5).n_levels == 1
    binary = pd.Series([0.0, 1.0] * 5)
    hierarchy = search_hierarchy(binary, StatisticalType.NUMERICAL, 5)
    assert [len(level) for level in hierarchy.labels] == [2, 1]
    # Infinities fit no interval: the values are grouped as categories.
    infinite = pd.Series([1.0, 2.0, np.inf, 5.0, -np.inf])
    assert default_rule(infinite, StatisticalType.NUMERICAL) == {"builder": "frequency"}


# --- codes -------------------------------------------------------------------------------------------------------


def test_prefix_levels_for_structured_codes() -> None:
    icd = pd.Series(["A01.1", "A01.2", "A02", "B20.1", None])
    hierarchy = prefix_hierarchy(icd)
    assert hierarchy.to_frame().to_numpy().tolist() == [
        ["A01.1", "A01*", "A0*", "A*", TOP],
        ["A01.2", "A01*", "A0*", "A*", TOP],
        ["A02", "A02*", "A0*", "A*", TOP],
        ["B20.1", "B20*", "B2*", "B*", TOP],
    ]
    assert hierarchy.rule == {"builder": "prefix", "lengths": [3, 2, 1], "top": True}
    new = pd.Series(["C00.0", "A01.9"])
    assert hierarchy.for_values(new).generalize(new, 1).tolist() == ["C00*", "A01*"]
    # NACE classes -> groups -> divisions -> sections of digits; a length that groups as the next does is left out.
    nace = pd.Series(["01.11", "01.12", "01.21", "02.10", "10.11", "10.12"])
    assert default_rule(nace, StatisticalType.NOMINAL) == {"builder": "prefix", "lengths": [3, 2, 1]}
    assert default_rule(nace.drop(2), StatisticalType.NOMINAL) == {"builder": "prefix", "lengths": [3, 1]}
    zips = pd.Series(["02139", "02138", "02142", "10001", "10002"])
    assert default_rule(zips, StatisticalType.NOMINAL) == {"builder": "prefix", "lengths": [4, 3]}  # 021* = 02* = 0*
    with pytest.raises(HierarchyError, match="must decrease"):
        prefix_hierarchy(icd, lengths=[1, 2])


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        (["A01.1", "A01.2", "B20"], True),
        (["01.11", "01.12", "02.10"], True),
        (["2211", "2212", "3115"], True),
        (["HS-grad", "11th", "Bachelors"], False),
        (["11th", "12th", "10th"], False),  # two thirds digits at least
        (["White", "Black", "Other"], False),
        (["1", "2", "3"], False),  # too short
        (["A1", "B2", "C3"], False),  # no shared first character
        ([2211, 2212, 3115], False),  # numbers are not text codes
    ],
)
def test_looks_like_codes(values: list[Any], expected: bool) -> None:
    assert looks_like_codes(pd.Series(values)) is expected


# --- data sets ---------------------------------------------------------------------------------------------------


def test_testdata_coded_categories_are_suggested_nominal(data_dir: Path) -> None:
    testdata = read_table(data_dir / "sdcmicro_testdata" / "testdata.csv")
    types = {field.name: field.statistical_type for field in suggest_contract(testdata).fields}
    for name in ("urbrur", "roof", "walls", "water", "electcon", "relat", "sex", "hhcivil"):
        assert types[name] == StatisticalType.NOMINAL, name
        hierarchy = search_hierarchy(testdata[name], types[name], 3)
        assert hierarchy.rule is not None and hierarchy.rule["builder"] == "frequency"
        assert_every_level_coarsens(hierarchy, testdata[name])
    for name in ("age", "expend", "income", "savings"):
        assert types[name] == StatisticalType.NUMERICAL, name
    # A short integer column stays numerical; so does a constant one (a weight).
    assert infer_statistical_type(pd.Series([1, 2, 3, 1, 2])) == StatisticalType.NUMERICAL
    assert types["sampling_weight"] == StatisticalType.NUMERICAL


def test_adult_without_hierarchy_files_comes_within_1_2x_of_arx(adult: pd.DataFrame, data_dir: Path) -> None:
    """The issue's goal: Adult, 8 QIs, k = 5, 5% suppression, loss metric; ARX's hand-built hierarchies reach
    0.2618, the defaults must reach 0.314 or less, with no pointless level."""
    defaults = {name: search_hierarchy(adult[name], infer_statistical_type(adult[name]), 5) for name in ADULT_QIS}
    for name, hierarchy in defaults.items():
        assert_every_level_coarsens(hierarchy, adult[name])
    arx = load_hierarchies(data_dir / "arx_adult" / "hierarchies", ADULT_QIS)
    options: dict[str, Any] = {"quasi_identifiers": ADULT_QIS, "k": 5, "max_suppression": 0.05, "metric": "loss"}
    reference = optimal_generalization(adult, arx, **options)
    assert reference.value == pytest.approx(0.2618, abs=5e-5)
    result = optimal_generalization(adult, defaults, **options)
    assert result.value <= 1.2 * reference.value <= 0.3142
    assert result.k >= 5 and result.suppressed <= 0.05 * len(adult)
    # Age in 20-year bands with 80 and over top-coded; nothing published as a masked string.
    assert defaults["age"].rule == {"builder": "intervals", "widths": [5, 10, 20], "origin": 0, "top": True,
                                    "high": 80}  # fmt: skip
    published = result.transform.data
    assert not published[ADULT_QIS].astype(str).apply(lambda c: c.str.contains(r"\*\*")).any().any()
