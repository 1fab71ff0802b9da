"""Which original values each kind of released label covers (the matching rules of docs/attacks.md)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
import pytest

from privdash.attack.matching import ReleasedIndex, column_coverage, ranges
from privdash.transform.hierarchy import Hierarchy


def covered(domain: Sequence[object], label: object, **options: Any) -> set[object]:
    """The domain values a single released value covers (None stands for a missing original value)."""
    coverage, _, groups = column_coverage(
        "c", [pd.Series(domain, dtype=object)], pd.Series([label], dtype=object), **options
    )
    group = groups[0]
    values = [*coverage.domain, None]
    return {
        values[d] for d in range(len(values)) if group in coverage.groups[coverage.indptr[d] : coverage.indptr[d + 1]]
    }


AGES = [18, 19, 20, 39, 40, 64, 65, 70]


@pytest.mark.parametrize(
    ("label", "expected"),
    [
        ("20-39", {20, 39}),  # ARX style, both ends inclusive
        ("[20, 40)", {20, 39}),  # half-open
        ("<20", {18, 19}),
        ("<= 19", {18, 19}),  # bottom coding written as a label
        (">=65", {65, 70}),
        (">= 65", {65, 70}),  # top coding written as a label
        ("> 64", {65, 70}),
        (39, {39}),  # an unchanged number
        ("39", {39}),  # the same number read as text
        (39.4, {39}),  # a perturbed number: the nearest original value
        (39.5, {39, 40}),  # half way: both neighbours
        (200, {70}),  # out of range: the nearest (largest) value
        ("*", {*AGES, None}),  # the top of every hierarchy
        (None, {*AGES, None}),  # a suppressed cell
        ("twenty", set()),  # a value no rule explains covers nothing
    ],
)
def test_numeric_labels(label: object, expected: set[object]) -> None:
    assert covered([*AGES, None], label) == expected


@pytest.mark.parametrize(
    ("label", "expected"),
    [
        ("123**", {"12345", "12399"}),  # masking hierarchy: trailing characters hidden, length kept
        ("1****", {"12345", "12399", "13000"}),
        ("*****", {"12345", "12399", "13000"}),  # every 5-character value, not the 4-character one
        ("1**4", {"1234"}),  # masked identifier: first and last characters kept
        ("12345", {"12345"}),
        ("Other", {"1234"}),  # rare-category label: every value not published as itself
    ],
)
def test_text_labels(label: object, expected: set[object]) -> None:
    domain = ["12345", "12399", "13000", "1234"]
    released = [label, "12345", "12399", "13000"] if label == "Other" else [label]
    coverage, _, groups = column_coverage("c", [pd.Series(domain, dtype=object)], pd.Series(released, dtype=object))
    found = {
        coverage.domain[d]
        for d in range(len(coverage.domain))
        if groups[0] in coverage.groups[coverage.indptr[d] : coverage.indptr[d + 1]]
    }
    assert found == expected


def test_date_and_postcode_labels() -> None:
    dates = ["2024-03-15", "2024-04-01", "2023-12-31"]
    assert covered(dates, "2024-03") == {"2024-03-15"}
    assert covered(dates, "2024-Q2") == {"2024-04-01"}
    assert covered(dates, "2024") == {"2024-03-15", "2024-04-01"}
    postcodes = ["SW1A 1AA", "SW1A 2BB", "SE1 7PB", "EC1A 1BB"]
    assert covered(postcodes, "SW1A 1") == {"SW1A 1AA"}
    assert covered(postcodes, "SW1A") == {"SW1A 1AA", "SW1A 2BB"}
    assert covered(postcodes, "SW") == {"SW1A 1AA", "SW1A 2BB"}


def test_hierarchy_labels_are_authoritative() -> None:
    # ARX's Adult age hierarchy files 40 under "20-39"; the hierarchy, not the text of the label, decides.
    hierarchy = Hierarchy.from_rows([["39", "20-39", "*"], ["40", "20-39", "*"], ["41", "40-59", "*"]])
    assert covered([39, 40, 41], "20-39", hierarchy=hierarchy) == {39, 40}
    assert covered([39, 40, 41], "20-39") == {39}
    regions = Hierarchy.from_rows([["Canada", "North America"], ["Mexico", "North America"], ["Peru", "South"]])
    assert covered(["Canada", "Mexico", "Peru"], "North America", hierarchy=regions) == {"Canada", "Mexico"}


def test_top_code_from_a_recipe_covers_the_tail() -> None:
    assert covered(AGES, 65, top_bottom=(None, 65.0)) == {65, 70}
    assert covered(AGES, 19, top_bottom=(19.0, None)) == {18, 19}


def test_values_with_the_same_coverage_share_a_group() -> None:
    coverage, _, groups = column_coverage(
        "age", [pd.Series([30, 40])], pd.Series([30.1, 29.8, 40.2, np.nan, "*"], dtype=object)
    )
    assert groups[0] == groups[1] != groups[2]
    assert groups[3] == groups[4]  # missing and "*" are both wildcards
    assert coverage.group_value[groups[0]] == 0 and coverage.group_value[groups[3]] == -1


def test_ranges_and_index_match_counts() -> None:
    assert ranges(np.array([5, 0]), np.array([2, 3])).tolist() == [5, 6, 0, 1, 2]
    original = pd.DataFrame({"a": ["x", "x", "y"], "b": [1, 2, 2]})
    released = pd.DataFrame({"a": ["x", None, "y"], "b": ["1-2", "2", "*"]})
    coverages, known, groups = [], [], []
    for column in ("a", "b"):
        coverage, codes, group = column_coverage(column, [original[column]], released[column])
        coverages.append(coverage)
        known.append(codes[0])
        groups.append(group)
    index = ReleasedIndex.build(coverages, np.column_stack(groups))
    # (x, 1): released rows 0 (x, 1-2) only; (x, 2): rows 0 and 1 (any, 2); (y, 2): rows 1 and 2.
    assert index.match_counts(np.column_stack(known)).tolist() == [1, 2, 2]
