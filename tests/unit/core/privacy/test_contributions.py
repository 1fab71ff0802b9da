"""The truncation to at most c rows per person: what it keeps, that a seed reproduces it, that each person's choice
depends on that person's rows only, and its refusals. Checked against a brute-force pandas oracle."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from privdash.dp.contributions import bound_contributions, check_max_rows, most_rows_per_person
from privdash.errors import ColumnError, ParameterError


@pytest.fixture(scope="module")
def households(data_dir) -> pd.DataFrame:  # type: ignore[no-untyped-def]
    """sdcMicro's testdata: 4,580 rows of 1,000 households (ori_hid), 1 to 12 rows each."""
    return pd.read_csv(data_dir / "sdcmicro_testdata" / "testdata.csv")


def oracle_kept(data: pd.DataFrame, entity: str, c: int) -> int:
    """Σ over people of min(rows, c): how many rows any truncation to c per person keeps."""
    return int(data.groupby(entity).size().clip(upper=c).sum())


@pytest.mark.parametrize("c", [1, 2, 3, 5, 12, 40])
def test_at_most_c_rows_per_person_and_all_rows_of_smaller_people(households: pd.DataFrame, c: int) -> None:
    kept, bound = bound_contributions(households, "ori_hid", c, seed=7)
    sizes_before = households.groupby("ori_hid").size()
    sizes_after = kept.groupby("ori_hid").size()
    assert sizes_after.max() <= c
    # Everyone keeps min(rows, c) rows: people with at most c rows keep them all, nobody vanishes.
    pd.testing.assert_series_equal(sizes_after, sizes_before.clip(upper=c), check_names=False)
    # The kept rows are rows of the table, unchanged and in table order.
    assert kept.index.is_monotonic_increasing and kept.index.isin(households.index).all()
    pd.testing.assert_frame_equal(kept, households.loc[kept.index])
    assert bound.rows == 4580 and bound.people == 1000 and bound.most_rows == 12
    assert bound.rows_kept == len(kept) == oracle_kept(households, "ori_hid", c)
    assert bound.rows_dropped == 4580 - oracle_kept(households, "ori_hid", c)
    assert bound.max_rows_per_person == c and bound.entity == "ori_hid"


def test_hand_computed_counts() -> None:
    data = pd.DataFrame({"pid": ["a", "a", "a", "b", "c", "c"], "x": range(6)})
    kept, bound = bound_contributions(data, "pid", 2, seed=0)
    assert kept["pid"].tolist().count("a") == 2 and kept["pid"].tolist().count("b") == 1
    assert bound.to_dict() == {
        "entity": "pid",
        "max_rows_per_person": 2,
        "people": 3,
        "rows": 6,
        "rows_kept": 5,
        "rows_dropped": 1,
        "most_rows_per_person": 3,
        "seed": 0,
    }
    assert most_rows_per_person(data, "pid") == 3
    # 30 and 30.0 are one person; so are the text "7" and the number 7 in a mixed column.
    mixed = pd.DataFrame({"pid": [30, 30.0, 7, "7", "7"]}, dtype=object)
    assert most_rows_per_person(mixed, "pid") == 3
    assert bound_contributions(mixed, "pid", 1, seed=1)[1].people == 2


def test_reproducible_with_a_seed_and_random_without(households: pd.DataFrame) -> None:
    first, _ = bound_contributions(households, "ori_hid", 3, seed=11)
    again, _ = bound_contributions(households, "ori_hid", 3, seed=11)
    other, _ = bound_contributions(households, "ori_hid", 3, seed=12)
    assert first.index.equals(again.index)
    assert not first.index.equals(other.index)  # 1,800 rows dropped among 434 households: another seed, another choice
    fresh = [bound_contributions(households, "ori_hid", 3) for _ in range(2)]
    assert not fresh[0][0].index.equals(fresh[1][0].index)
    # The fresh seed is recorded: passing it back keeps the same rows.
    recorded = fresh[0][1].seed
    assert recorded is not None and bound_contributions(households, "ori_hid", 3, seed=recorded)[0].index.equals(
        fresh[0][0].index
    )


def test_each_person_keeps_the_same_rows_whoever_else_is_in_the_table(households: pd.DataFrame) -> None:
    # Person-level neighbours: the table without one household. The others' kept rows must not move, so the
    # truncated tables differ by at most c rows (the stability the calibration at d_in = c relies on).
    kept, _ = bound_contributions(households, "ori_hid", 2, seed=5)
    for removed in households["ori_hid"].drop_duplicates().sample(5, random_state=1):
        neighbour = households[households["ori_hid"] != removed]
        kept_neighbour, _ = bound_contributions(neighbour, "ori_hid", 2, seed=5)
        assert kept_neighbour.index.equals(kept.index[kept["ori_hid"] != removed])
    # A re-shuffled copy keeps, per person, the rows at the same occurrence numbers.
    reordered = pd.concat([households.iloc[2000:], households.iloc[:2000]])
    assert len(bound_contributions(reordered, "ori_hid", 2, seed=5)[0]) == len(kept)


def test_the_choice_is_uniform_over_a_persons_rows() -> None:
    # 20,000 people with 10 rows each, c = 3: each occurrence is kept with probability 0.3. The count of 20,000
    # Bernoulli(0.3) is within 6 standard deviations (±389) of 6,000 except with probability 2e-9.
    people, rows = 20_000, 10
    data = pd.DataFrame({"pid": np.repeat(np.arange(people), rows), "occurrence": np.tile(np.arange(rows), people)})
    kept, _ = bound_contributions(data, "pid", 3, seed=3)
    per_occurrence = kept["occurrence"].value_counts().reindex(range(rows), fill_value=0)
    sd = (people * 0.3 * 0.7) ** 0.5
    assert (per_occurrence - people * 0.3).abs().max() < 6 * sd, per_occurrence.tolist()


@pytest.mark.parametrize("value", [0, -1, 2.5, "2.5", "abc", "", None, True, float("nan"), float("inf"), 2**31])
def test_bad_bounds_are_refused(value: object) -> None:
    with pytest.raises(ParameterError, match="rows per person"):
        check_max_rows(value)


def test_good_bounds() -> None:
    assert check_max_rows(3) == check_max_rows("3") == check_max_rows(3.0) == check_max_rows(np.int64(3)) == 3


def test_missing_ids_and_unknown_columns_are_refused() -> None:
    data = pd.DataFrame({"pid": ["a", None, "b", np.nan], "x": range(4)})
    with pytest.raises(ColumnError, match="'pid' has 2 row\\(s\\) without an id"):
        bound_contributions(data, "pid", 2)
    with pytest.raises(ColumnError, match="Unknown person-id column: 'person'"):
        bound_contributions(data, "person", 2)
    with pytest.raises(ParameterError, match="seed"):
        bound_contributions(data.dropna(), "pid", 2, seed="x")  # type: ignore[arg-type]


def test_an_empty_table() -> None:
    empty = pd.DataFrame({"pid": pd.Series([], dtype=object)})
    kept, bound = bound_contributions(empty, "pid", 2, seed=1)
    assert kept.empty and bound.people == 0 and bound.rows_dropped == 0 and most_rows_per_person(empty, "pid") == 0
