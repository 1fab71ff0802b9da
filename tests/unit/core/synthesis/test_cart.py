"""Sequential CART synthesis: partial changes only what was asked, full keeps the schema, hybrid replaces its
share, the same seed gives the same table, and bad input gets a clear message."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from privdash.errors import ColumnError, ParameterError
from privdash.synthesis import SynthesisSettings, split_control, synthesize


def _table(rows: int = 400, seed: int = 3) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    age = rng.integers(18, 90, rows)
    sex = rng.choice(["f", "m"], rows)
    region = pd.Series(rng.choice(["north", "south", "east", "west"], rows)).where(rng.random(rows) > 0.1)
    income = np.where(sex == "m", 3000.0, 2500.0) + age * 10 + rng.normal(0, 100, rows)
    income[rng.random(rows) < 0.05] = np.nan
    return pd.DataFrame(
        {
            "age": age,
            "sex": pd.Series(sex, dtype="string"),
            "region": region.astype("category"),
            "income": income,
            "children": pd.array(rng.integers(0, 4, rows), dtype="Int64"),
        }
    )


def test_partial_changes_only_the_chosen_columns_of_the_records_at_risk() -> None:
    table = _table()
    qis = ["sex", "region", "children"]
    sizes = table.groupby(qis, dropna=False, observed=True)["sex"].transform("size")
    at_risk = (sizes < 5).to_numpy()
    assert 0 < at_risk.sum() < len(table)
    release = synthesize(table, SynthesisSettings("partial", columns=("age",), seed=7), quasi_identifiers=qis)
    out = release.table
    assert list(out.columns) == list(table.columns) and (out.dtypes == table.dtypes).all()
    assert out.index.equals(table.index)
    for column in ("sex", "region", "income", "children"):
        pd.testing.assert_series_equal(out[column], table[column])
    pd.testing.assert_series_equal(out["age"][~at_risk], table["age"][~at_risk])
    assert (out["age"][at_risk] != table["age"][at_risk]).mean() > 0.5  # drawn, so mostly different
    assert release.rows_replaced == at_risk.sum() and release.cells_replaced == at_risk.sum()
    assert set(out["age"]) <= set(table["age"])  # donors: every value is an original value


def test_partial_of_all_records_defaults_to_the_quasi_identifiers() -> None:
    table = _table()
    release = synthesize(table, SynthesisSettings("partial", rows="all", seed=1), quasi_identifiers=["age", "sex"])
    pd.testing.assert_frame_equal(
        release.table[["region", "income", "children"]], table[["region", "income", "children"]]
    )
    assert release.rows_replaced == len(table) and release.cells_replaced == 2 * len(table)
    assert (release.table["age"] != table["age"]).mean() > 0.5


def test_same_seed_same_table_and_another_seed_another() -> None:
    table = _table()
    first = synthesize(table, SynthesisSettings("full", seed=11)).table
    pd.testing.assert_frame_equal(first, synthesize(table, SynthesisSettings("full", seed=11)).table)
    assert not first.equals(synthesize(table, SynthesisSettings("full", seed=12)).table)


def test_a_drawn_seed_is_recorded_and_reproduces_the_table() -> None:
    table = _table()
    release = synthesize(table, SynthesisSettings("hybrid"))
    assert release.settings.seed is not None
    again = synthesize(table, SynthesisSettings("hybrid", seed=release.settings.seed))
    pd.testing.assert_frame_equal(release.table, again.table)


def test_full_keeps_schema_dtypes_row_count_and_missing_values() -> None:
    table = _table()
    release = synthesize(table, SynthesisSettings("full", seed=5))
    out = release.table
    assert out.shape == table.shape and list(out.columns) == list(table.columns)
    assert (out.dtypes == table.dtypes).all()
    assert out["region"].isna().any() and out["income"].isna().any()  # missing is a value that can be drawn
    # The model keeps the main dependence: men earn more in the original and in the synthetic table.
    means = out.groupby("sex")["income"].mean()
    assert means["m"] - means["f"] > 250
    assert release.rows_replaced == len(table) and release.cells_replaced == table.size
    assert "order: age, sex, region, income, children" in release.model


def test_full_of_chosen_columns_releases_those_columns() -> None:
    table = _table()
    out = synthesize(table, SynthesisSettings("full", columns=("sex", "income"), seed=5)).table
    assert list(out.columns) == ["sex", "income"] and len(out) == len(table)


def test_hybrid_replaces_its_share_of_records_at_random_positions() -> None:
    table = _table()
    release = synthesize(table, SynthesisSettings("hybrid", share=0.25, seed=2))
    out = release.table
    assert release.rows_replaced == 100 and release.cells_replaced == 100 * table.shape[1]
    same = (out.eq(table) | (out.isna() & table.isna())).all(axis=1).to_numpy()
    assert same.sum() >= 300  # the 300 originals are kept, a synthetic record may equal an original by chance
    changed = np.flatnonzero(~same)
    assert changed.min() < 100 and changed.max() > 300  # spread over the table, not its head


def test_a_constant_column_is_copied_and_named_in_the_model_line() -> None:
    table = _table().assign(country="NL")
    release = synthesize(table, SynthesisSettings("full", seed=1))
    assert (release.table["country"] == "NL").all()
    assert "one value only, copied as is: country" in release.model
    with pytest.raises(ParameterError, match="country, hold one value only"):
        synthesize(table, SynthesisSettings("partial", columns=("country",), rows="all", seed=1))


def test_a_table_too_small_says_how_many_records_are_needed() -> None:
    with pytest.raises(ParameterError, match="needs at least 10 records"):
        synthesize(_table(6), SynthesisSettings("full", seed=1))
    with pytest.raises(ParameterError, match="at least 40 records"):
        synthesize(_table(30), SynthesisSettings("full", min_leaf=20, seed=1))


def test_bad_settings_and_columns_are_refused_clearly() -> None:
    table = _table()
    with pytest.raises(ColumnError, match="Unknown column to synthesize: 'agee'"):
        synthesize(table, SynthesisSettings("full", columns=("agee",)))
    with pytest.raises(ParameterError, match=r"share \(of records replaced\) must lie in \(0, 1\]"):
        SynthesisSettings("hybrid", share=0)
    with pytest.raises(ParameterError, match=r"share .* must lie in"):
        SynthesisSettings("hybrid", share=1.5)
    with pytest.raises(ParameterError, match="Unknown synthesis method 'copula'"):
        SynthesisSettings("copula")
    with pytest.raises(ParameterError, match="needs the quasi-identifiers"):
        synthesize(table, SynthesisSettings("partial", columns=("age",)))
    with pytest.raises(ParameterError, match="needs its total epsilon"):
        SynthesisSettings("dp")


def test_settings_round_trip_through_their_dict() -> None:
    settings = SynthesisSettings("partial", columns=("age",), rows="all", k=3, seed=4)
    assert SynthesisSettings.from_dict(settings.to_dict()) == settings
    with pytest.raises(ParameterError, match="Unknown synthesis setting"):
        SynthesisSettings.from_dict({"method": "full", "colour": 1})


def test_split_control_holds_out_a_random_share() -> None:
    table = _table()
    training, control = split_control(table, share=0.2, seed=0)
    assert len(control) == 80 and len(training) == 320
    assert set(training.index).isdisjoint(control.index) and set(training.index) | set(control.index) == set(
        table.index
    )
    assert control.index.max() > 300  # at random, not the tail nor the head only
    assert control.index.min() < 100
    _, small = split_control(table, share=0.2, max_rows=10, seed=0)
    assert len(small) == 10
    with pytest.raises(ParameterError, match="control share"):
        split_control(table, share=1.0)
