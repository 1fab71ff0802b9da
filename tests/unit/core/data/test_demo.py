from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from privdash.data.demo import demo_datasets, people_contract, people_table, uniform_column_names, uniform_table
from privdash.data.tables import read_table
from privdash.errors import ParameterError

DATA = Path(__file__).resolve().parents[4] / "data"


def test_uniform_follows_the_reference_recipe_exactly() -> None:
    frame = uniform_table(1000, seed=7)
    np.random.seed(7)
    for name in ["A", "B", "C", "I", "J", "K", "X", "Y"]:
        levels = [f"{name.lower()}{i}" for i in (1, 2, 3)]
        assert frame[name].tolist() == np.random.choice(levels, 1000).tolist()
    assert list(frame.columns) == ["A", "B", "C", "I", "J", "K", "X", "Y"]


def test_uniform_options_and_global_state() -> None:
    np.random.seed(123)
    expected_next = np.random.random()
    np.random.seed(123)
    frame = uniform_table(200, columns=10, levels=5, seed=1, missing_share=0.1)
    assert np.random.random() == expected_next  # the caller's numpy state is untouched
    assert list(frame.columns) == [*"ABCIJKXY", "D", "E"]
    assert set(frame["D"].dropna()) <= {f"d{i}" for i in range(1, 6)}
    assert 0.05 < frame.isna().to_numpy().mean() < 0.15
    base = uniform_table(200, columns=10, levels=5, seed=1)
    kept = frame.notna()
    assert (frame[kept] == base[kept]).sum().sum() == kept.sum().sum()
    with pytest.raises(ParameterError):
        uniform_column_names(27)
    with pytest.raises(ParameterError):
        uniform_table(10, missing_share=1.0)
    with pytest.warns(DeprecationWarning, match="missing_share"):  # the old keyword, read for one release
        old = uniform_table(200, columns=10, levels=5, seed=1, missing=0.1)
    pd.testing.assert_frame_equal(old, frame)


def test_people_table_is_deterministic_and_matches_its_contract() -> None:
    first, second = people_table(500, seed=3), people_table(500, seed=3)
    pd.testing.assert_frame_equal(first, second)
    assert not first.equals(people_table(500, seed=4))
    people_contract().validate(first)
    assert first["customer_id"].is_unique
    assert first["hair_colour"].isna().any()


def test_committed_demo_files_are_the_generated_ones() -> None:
    committed = read_table(DATA / "people.csv")
    generated = people_table()
    pd.testing.assert_frame_equal(committed, generated, check_dtype=False)
    assert (DATA / "people.contract.json").read_text().strip() == people_contract().to_json()


def test_demo_registry() -> None:
    datasets = demo_datasets()
    assert next(iter(datasets)) == "people"
    for dataset in datasets.values():
        frame = dataset.load()
        dataset.contract().validate(frame)
