"""The generalization search judged on people (several rows per person) against a brute-force evaluation of every
node, and the published table diagnosed on people."""

from __future__ import annotations

import itertools
import math
from collections import Counter, defaultdict
from typing import Any

import numpy as np
import pandas as pd
import pytest

from privdash.errors import ColumnError, ParameterError
from privdash.measure.diagnose import diagnose
from privdash.search.entities import people_generalization
from privdash.search.lattice import NoSolutionError, optimal_generalization
from privdash.transform.generalization import generalize
from privdash.transform.hierarchy import Hierarchy
from privdash.utility.metrics import information_loss

QIS = ["age", "sex", "region"]
HIERARCHIES = {
    "age": Hierarchy.from_rows([[str(a), f"{a // 10 * 10}s", "*"] for a in range(20, 50, 5)]),
    "sex": Hierarchy.from_rows([["F", "*"], ["M", "*"]]),
    "region": Hierarchy.from_rows([["north", "*"], ["south", "*"], ["east", "*"]]),
}


def visits(seed: int, rows: int = 120, people: int = 60) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    pid = rng.integers(0, people, rows)
    frame = pd.DataFrame(
        {
            "pid": pid,
            "age": rng.choice(np.arange(20, 50, 5), rows),
            "sex": rng.choice(["F", "M"], rows),
            "region": rng.choice(
                np.array(["north", "south", "east", None], dtype=object), rows, p=[0.6, 0.25, 0.1, 0.05]
            ),
            "dx": rng.choice(["flu", "cold", "asthma"], rows),
        }
    )
    return frame


def _cell(value: Any) -> Any:
    return "<missing>" if value is None or (isinstance(value, float) and math.isnan(value)) else str(value)


def brute_force(
    data: pd.DataFrame,
    k: int,
    max_suppression: float,
    key: str = "set",
    l: int | None = None,  # noqa: E741
) -> tuple[Any, ...] | None:
    """Every node: generalize, form each person's key in Python, suppress the people of classes under k, and keep
    the least loss (ties: total level, then levels)."""
    best = None
    for node in itertools.product(*(range(HIERARCHIES[name].n_levels) for name in QIS)):
        published = generalize(data, dict(zip(QIS, node, strict=True)), HIERARCHIES).data
        tuples: dict[Any, list[tuple[Any, ...]]] = defaultdict(list)
        for person, *values in published[["pid", *QIS]].itertuples(index=False):
            tuples[person].append(tuple(_cell(v) for v in values))
        keys = {p: frozenset(t) if key == "set" else frozenset(Counter(t).items()) for p, t in tuples.items()}
        people_per_key = Counter(keys.values())
        values: dict[Any, set[Any]] = defaultdict(set)
        for person, value in data[["pid", "dx"]].itertuples(index=False):
            values[keys[person]].add(value)
        removed = {
            p for p, person_key in keys.items() if people_per_key[person_key] < k or len(values[person_key]) < (l or 0)
        }
        if len(removed) > math.floor(max_suppression * len(keys)) or len(removed) == len(keys):
            continue
        kept = np.flatnonzero(~data["pid"].isin(removed).to_numpy())
        loss = information_loss(data, published.iloc[kept], HIERARCHIES, quasi_identifiers=QIS, kept_rows=kept).loss
        candidate = (loss, sum(node), node, len(removed), len(data) - len(kept))
        if best is None or candidate[:3] < best[:3]:
            best = candidate
    return best


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("key", ["set", "multiset"])
@pytest.mark.parametrize("max_suppression", [0.0, 0.1])
def test_search_equals_brute_force(seed: int, key: str, max_suppression: float) -> None:
    data = visits(seed)
    expected = brute_force(data, 2, max_suppression, key)
    if expected is None:  # no node meets k=2 on people within the limit: the search says so
        with pytest.raises(NoSolutionError):
            people_generalization(data, HIERARCHIES, entity="pid", entity_key=key, k=2, max_suppression=max_suppression)
        return
    result = people_generalization(
        data, HIERARCHIES, entity="pid", entity_key=key, k=2, max_suppression=max_suppression
    )
    assert tuple(result.levels.values()) == expected[2]
    assert result.value == pytest.approx(expected[0], rel=1e-12)
    assert (result.people_suppressed, result.rows_suppressed) == (expected[3], expected[4])
    assert result.people == data["pid"].nunique() and result.rows == len(data)
    # The published rows, diagnosed on people, meet k; whole people were removed.
    published = result.transform.data
    assert diagnose(published, QIS, entity="pid", entity_key=key).k >= 2
    removed = set(data["pid"]) - set(published["pid"])
    assert len(removed) == result.people_suppressed
    kept = result.transform.kept_rows if result.transform.kept_rows is not None else np.arange(len(data))
    assert not data.iloc[kept]["pid"].isin(removed).any() and len(kept) == len(data) - result.rows_suppressed
    assert result.nodes == 3 * 2 * 2 and 0 < result.nodes_counted <= result.nodes


@pytest.mark.parametrize("seed", [4, 5])
def test_search_with_l_equals_brute_force(seed: int) -> None:
    data = visits(seed, rows=80, people=60)
    expected = brute_force(data, 2, 0.1, l=2)
    assert expected is not None
    result = people_generalization(data, HIERARCHIES, entity="pid", k=2, l=2, sensitive=["dx"], max_suppression=0.1)
    assert (tuple(result.levels.values()), result.people_suppressed) == (expected[2], expected[3])
    assert result.value == pytest.approx(expected[0], rel=1e-12)
    published = diagnose(result.transform.data, QIS, sensitive=["dx"], entity="pid")
    assert published.k >= 2 and published.sensitive_models["dx"].summary()["l_distinct"] >= 2


def test_t_closeness_is_met_on_the_published_people() -> None:
    data = visits(6, rows=80, people=60)
    result = people_generalization(data, HIERARCHIES, entity="pid", k=2, t=0.3, sensitive=["dx"], max_suppression=0.2)
    published = diagnose(result.transform.data, QIS, sensitive=["dx"], entity="pid", t_distance="equal")
    assert published.k >= 2 and published.sensitive_models["dx"].summary()["t_closeness"] <= 0.3


def test_rows_anonymous_but_people_unique() -> None:
    # Every ward occurs in two rows (2-anonymous in rows, no generalization needed); every person's pair of wards is
    # unique, so on people the wards must be generalized.
    data = pd.DataFrame({"pid": [1, 1, 2, 2, 3, 3], "ward": ["x", "y", "x", "z", "y", "z"]})
    hierarchies = {"ward": Hierarchy.from_rows([["x", "xy"], ["y", "xy"], ["z", "z"]])}
    hierarchies["ward"] = Hierarchy.from_rows([["x", "xy", "*"], ["y", "xy", "*"], ["z", "z", "*"]])
    rows = optimal_generalization(data, hierarchies, k=2, max_suppression=0.0)
    assert rows.levels == {"ward": 0}
    people = people_generalization(data, hierarchies, entity="pid", k=2, max_suppression=0.0)
    # Level 1: keys {xy}, {xy, z}, {xy, z}: person 1 unique. Level 2: everyone {*}.
    assert people.levels == {"ward": 2} and people.people_suppressed == 0
    allowed = people_generalization(data, hierarchies, entity="pid", k=2, max_suppression=0.34)
    assert allowed.levels == {"ward": 1} and allowed.people_suppressed == 1 and allowed.rows_suppressed == 2
    assert allowed.transform.data["pid"].tolist() == [2, 2, 3, 3]
    assert allowed.transform.data["ward"].tolist() == ["xy", "z", "xy", "z"]


def test_bad_inputs() -> None:
    data = visits(1)
    with pytest.raises(NoSolutionError, match="on people"):
        people_generalization(data, HIERARCHIES, entity="pid", k=1000, max_suppression=0.0)
    with pytest.raises(ColumnError, match=r"3 row\(s\) have no value in the person-id column 'pid'"):
        people_generalization(data.assign(pid=data["pid"].where(data.index >= 3)), HIERARCHIES, entity="pid")
    with pytest.raises(ParameterError, match="counts at most 5:"):
        people_generalization(data, HIERARCHIES, entity="pid", max_nodes=5)
    with pytest.raises(ColumnError, match="cannot also be a quasi-identifier"):
        people_generalization(data.assign(age2=data["age"]), {**HIERARCHIES, "pid": HIERARCHIES["age"]}, entity="pid")


def test_the_step_reproduces_the_search_and_needs_suppress() -> None:
    from privdash.transform.steps import apply_recipe

    data = visits(2)
    result = people_generalization(data, HIERARCHIES, entity="pid", k=2, max_suppression=0.1)
    assert result.people_suppressed > 0
    again, _ = apply_recipe(data, result.recipe)
    pd.testing.assert_frame_equal(again, result.transform.data)
    with pytest.raises(ParameterError, match="give suppress"):
        generalize(data, {"age": 1}, HIERARCHIES, entity="pid")
