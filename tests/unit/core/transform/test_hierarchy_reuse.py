"""Work done once: the text of each distinct value, and a hierarchy built for a step's check and for its applying."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from privdash.transform import hierarchy as module
from privdash.transform.hierarchy import _canonical, build_hierarchy, canonical_text, hierarchy_from_rule

N = 2_000  # above the size from which canonical_text works once per distinct value
RNG = np.random.default_rng(7)
COLUMNS = {
    "integers": pd.Index(RNG.integers(0, 40, N)),
    "halves": pd.Index(RNG.integers(-6, 6, N) / 2),
    "floats with nan": pd.Index(np.where(RNG.random(N) < 0.1, np.nan, RNG.integers(0, 9, N) * 1.0)),
    "signed zeros": pd.Index(np.array([0.0, -0.0] * (N // 2))),
    "text": pd.Index(RNG.choice([" a", "b ", "30.0"], N).astype(object)),
    "text with none": pd.Index(np.where(RNG.random(N) < 0.1, None, RNG.choice([" a", "b "], N)).astype(object)),
    "arrow text": pd.Index(
        pd.array(np.where(RNG.random(N) < 0.1, None, RNG.choice([" a", "b"], N)), "string[pyarrow]")
    ),
    "booleans": pd.Index(RNG.random(N) < 0.5),
    "nullable integers": pd.Index(pd.array(np.where(RNG.random(N) < 0.1, None, RNG.integers(0, 5, N)), "Int64")),
    "dates": pd.Index(pd.to_datetime(RNG.choice(["2020-01-01T00:00:00", "2020-01-02T10:30:00"], N))),
    "categories": pd.CategoricalIndex(RNG.choice([" x", "y"], N)),
    "mixed objects": pd.Index([1, 1.0, True, "1", " q"] * (N // 5), dtype=object),
    "float32": pd.Index((RNG.integers(0, 9, N) / 4).astype(np.float32)),
}


@pytest.mark.parametrize("name", sorted(COLUMNS))
def test_canonical_text_is_the_per_value_rule(name: str) -> None:
    values = COLUMNS[name]
    assert list(canonical_text(values)) == [_canonical(v) for v in values]


def test_a_rule_over_the_same_values_is_built_once() -> None:
    module._BUILT.clear()
    ages = pd.Series(RNG.integers(18, 90, 10_000), name="age")
    first = build_hierarchy({"builder": "intervals", "widths": [5, 10]}, ages)
    # applying the step rebuilds it from its resolved rule: the same hierarchy, not built again
    assert first.rule is not None
    assert hierarchy_from_rule(first.rule, ages.copy()) is first
    assert build_hierarchy({"builder": "intervals", "widths": [5, 10]}, ages) is first
    # other values or another rule: another hierarchy, equal to one built afresh
    older = ages + 1
    other = hierarchy_from_rule(first.rule, older)
    assert other is not first
    module._BUILT.clear()
    assert other.equals(hierarchy_from_rule(first.rule, older))
    assert build_hierarchy({"builder": "intervals", "widths": [10]}, ages) is not first


def test_mixed_object_values_are_not_taken_for_each_other() -> None:
    module._BUILT.clear()
    numbers = pd.Series([1, 2, 3] * 2_000, dtype=object)
    texts = numbers.astype(str).astype(object)  # pandas hashes 1 and "1" alike in object columns
    rule = {"builder": "prefix", "lengths": [1]}
    from_numbers = build_hierarchy(rule, numbers)
    assert not module._BUILT  # numbers in an object column are not remembered
    from_texts = build_hierarchy(rule, texts)
    assert from_texts is not from_numbers
    assert build_hierarchy(rule, texts) is from_texts
