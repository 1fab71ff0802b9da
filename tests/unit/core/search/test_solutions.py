"""The steward's estimates of each solution of a search: each solution's table is the one ``pick`` publishes, and
its estimates are those computed on that table directly."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest

from privdash.errors import ParameterError
from privdash.search.lattice import optimal_generalization
from privdash.search.solutions import overlap_summary, solution_estimates, solution_step, solution_table
from privdash.transform.hierarchy import build_hierarchy
from privdash.utility.estimates import compare_estimates

ESTIMATES = ["mean:age", "share:sex by region", "mean:income by sex", "coef:income~age+sex"]


@pytest.fixture(scope="module")
def table() -> pd.DataFrame:
    rng = np.random.default_rng(7)
    n = 600
    age = rng.integers(18, 80, n)
    sex = rng.choice(["F", "M"], n)
    region = rng.choice(["north", "south", "east", "west", "centre"], n, p=[0.4, 0.3, 0.15, 0.1, 0.05])
    income = 1000 + 30 * age + np.where(sex == "F", -200, 0) + rng.normal(0, 300, n)
    return pd.DataFrame({"age": age, "sex": sex, "region": region, "income": income.round(2)})


def test_each_solution_equals_its_table_evaluated_directly(table: pd.DataFrame) -> None:
    hierarchies = {
        "age": build_hierarchy({"builder": "intervals", "widths": [5, 10, 20]}, table["age"]),
        "region": build_hierarchy({"builder": "frequency"}, table["region"]),
        "sex": build_hierarchy({"builder": "masking", "steps": 1}, table["sex"]),
    }
    options: dict[str, Any] = {
        "quasi_identifiers": ["age", "region", "sex"],
        "k": 4,
        "max_suppression": 0.05,
        "solutions": 4,
    }
    result = optimal_generalization(table, hierarchies, **options)
    assert len(result.solutions) == 4
    compared = solution_estimates(table, result, ESTIMATES)
    assert [each.number for each in compared] == [1, 2, 3, 4]
    for number, each in enumerate(compared, start=1):
        picked = optimal_generalization(table, hierarchies, **options, pick=number)
        pd.testing.assert_frame_equal(solution_table(table, result, number).data, picked.data)
        assert each.levels == dict(picked.levels)
        direct = compare_estimates(table, picked.data, ESTIMATES)
        assert [c.to_dict() for c in each.comparisons] == [c.to_dict() for c in direct]
        overlaps = [r.overlap for c in direct for r in c.rows if r.overlap is not None]
        assert each.mean_overlap == pytest.approx(sum(overlaps) / len(overlaps))
        assert each.lowest_overlap == pytest.approx(min(overlaps))
    # The solutions differ, and so do their estimates.
    assert len({each.mean_overlap for each in compared}) > 1
    # The step of a solution is the one the picked search records.
    second = optimal_generalization(table, hierarchies, **options, pick=2)
    assert solution_step(result, 2).to_dict() == second.transform.step.to_dict()
    with pytest.raises(ParameterError):
        solution_step(result, 5)


def test_overlap_summary_without_numbers() -> None:
    assert overlap_summary(()) == (None, None)
