"""Fixes out of core: the least-lossy search on an aggregate and a recipe streamed through DuckDB give exactly what
the in-memory search and ``apply_recipe`` give on the whole table."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pandas as pd
import pytest

from privdash.data.tables import read_table, write_table
from privdash.engines.aggregate import COUNT, aggregate_table
from privdash.engines.streaming import apply_recipe_streaming
from privdash.errors import DataReadError, ParameterError
from privdash.search.lattice import optimal_generalization
from privdash.transform.hierarchy import interval_hierarchy, load_hierarchies
from privdash.transform.identifiers import pseudonymize
from privdash.transform.microaggregation import microaggregation
from privdash.transform.steps import Recipe, apply_recipe
from privdash.transform.suppression import top_bottom_coding

ADULT_QIS = ["sex", "age", "race", "marital-status", "education", "native-country", "workclass", "salary-class"]
SEARCHES = {
    "k5-2%": {"k": 5, "max_suppression": 0.02},
    "k5-l2-5%": {"k": 5, "l": 2, "sensitive": ["occupation"], "max_suppression": 0.05},
    "k10-none": {"k": 10, "max_suppression": 0.0},
}


@pytest.fixture(scope="module")
def adult_setup(data_dir: Path) -> tuple[Path, pd.DataFrame, dict]:
    folder = data_dir / "arx_adult"
    return folder / "adult.csv", read_table(folder / "adult.csv"), load_hierarchies(folder / "hierarchies", ADULT_QIS)


@pytest.mark.parametrize("name", sorted(SEARCHES))
def test_search_on_the_aggregate_equals_the_search_on_the_rows(adult_setup, name: str) -> None:
    path, adult, hierarchies = adult_setup
    options = SEARCHES[name]
    rows = optimal_generalization(adult, hierarchies, quasi_identifiers=ADULT_QIS, **options)
    aggregate = aggregate_table(path, [*ADULT_QIS, *options.get("sensitive", [])], engine="duckdb")
    assert len(aggregate.frame) < len(adult)  # the search sees combinations, not records
    summary = optimal_generalization(aggregate.frame, hierarchies, quasi_identifiers=ADULT_QIS, counts=COUNT, **options)
    assert summary.summary() == rows.summary()
    assert summary.recipe.to_dict() == rows.recipe.to_dict()
    assert summary.classes.sizes.tolist() == rows.classes.sizes.tolist()
    # The published aggregate holds exactly the published records.
    assert int(summary.data[COUNT].sum()) == len(rows.data)


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _same_output(streamed: Path, expected: pd.DataFrame, tmp_path: Path) -> None:
    reference = write_table(expected.reset_index(drop=True), tmp_path / f"memory{streamed.suffix}")
    if streamed.suffix == ".parquet":
        pd.testing.assert_frame_equal(pd.read_parquet(streamed), pd.read_parquet(reference))
    else:
        assert streamed.read_text(encoding="utf-8") == reference.read_text(encoding="utf-8")


@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
def test_the_searched_recipe_streams_to_the_in_memory_result(adult_setup, tmp_path: Path, suffix: str) -> None:
    path, adult, hierarchies = adult_setup
    search = optimal_generalization(adult, hierarchies, quasi_identifiers=ADULT_QIS, **SEARCHES["k5-l2-5%"])
    before = _sha256(path)
    result = apply_recipe_streaming(path, search.recipe, tmp_path / f"out{suffix}", batch_rows=4_000)
    assert _sha256(path) == before
    assert result.batches == 8 and result.passes == 1
    assert (result.rows_in, result.rows_out) == (len(adult), len(search.data))
    assert result.steps[0]["records_suppressed"] == search.suppressed
    _same_output(result.output, apply_recipe(adult, search.recipe)[0], tmp_path)
    assert not list(tmp_path.glob(".*partial"))


def test_a_multi_step_recipe_over_a_parquet_dataset(data_dir: Path, tmp_path: Path) -> None:
    """Top coding, then a rule-based age hierarchy with k=3 suppression decided after the top coding (a pass over
    the data through the earlier step), then pseudonyms: over three Parquet files, in batches of 500 rows."""
    data = read_table(data_dir / "sdcmicro_testdata" / "testdata.csv")
    coded = top_bottom_coding(data, column="income", top_quantile=0.95)
    qis = ["urbrur", "roof", "sex", "age", "income"]
    hierarchies = {
        "age": interval_hierarchy(coded.data["age"], widths=[5, 20]),
        "income": interval_hierarchy(coded.data["income"], widths=[10_000_000]),
        **{name: interval_hierarchy(coded.data[name], widths=[100]) for name in ("urbrur", "roof", "sex")},
    }
    search = optimal_generalization(coded.data, hierarchies, quasi_identifiers=qis, k=3, max_suppression=0.1)
    assert search.suppressed > 0
    key = "a secret key of the data owner"
    pseudonyms = pseudonymize(search.data, columns=["ori_hid"], key=key)
    recipe = Recipe((coded.step, search.transform.step, pseudonyms.step))
    parts = [data.iloc[i::3] for i in range(3)]
    folder = tmp_path / "lake"
    folder.mkdir()
    for i, part in enumerate(parts):
        part.to_parquet(folder / f"part-{i}.parquet", index=False)
    expected = apply_recipe(pd.concat(parts, ignore_index=True), recipe, secrets={"key": key})[0]
    result = apply_recipe_streaming(folder, recipe, tmp_path / "out.parquet", batch_rows=500, secrets={"key": key})
    assert result.passes == 2  # one to count the classes after top coding, one to write
    _same_output(result.output, expected, tmp_path)
    assert result.rows_in - result.rows_out == result.steps[1]["records_suppressed"] > 0


def test_steps_that_need_the_whole_table_are_refused(adult_setup, tmp_path: Path) -> None:
    path, adult, _ = adult_setup
    step = microaggregation(adult.head(50), quasi_identifiers=["age"], k=3).step
    with pytest.raises(ParameterError, match=r"microaggregation.*cannot be streamed"):
        apply_recipe_streaming(path, Recipe((step,)), tmp_path / "out.parquet")


def test_bad_outputs_and_sources(adult_setup, tmp_path: Path) -> None:
    path, adult, hierarchies = adult_setup
    recipe = optimal_generalization(adult, hierarchies, quasi_identifiers=ADULT_QIS, k=2).recipe
    copy = tmp_path / "adult.csv"
    copy.write_bytes(path.read_bytes())
    with pytest.raises(ParameterError, match="Refusing to overwrite the input"):
        apply_recipe_streaming(copy, recipe, copy)
    with pytest.raises(ParameterError, match=r"\.parquet, \.csv or \.tsv"):
        apply_recipe_streaming(copy, recipe, tmp_path / "out.xlsx")
    with pytest.raises(ParameterError, match="batch_rows"):
        apply_recipe_streaming(copy, recipe, tmp_path / "out.csv", batch_rows=0)
    with pytest.raises(DataReadError, match="No file matches"):
        apply_recipe_streaming(tmp_path / "nothing-*.parquet", recipe, tmp_path / "out.csv")
    assert copy.read_bytes() == path.read_bytes()
    assert not (tmp_path / "out.csv").exists()


@pytest.mark.parametrize("rows", [1, 3, 7, 10, 50])
def test_batches_hold_the_rows_asked_for_however_duckdb_cuts_them(rows: int) -> None:
    """DuckDB hands some batches over short where its scan's parts end: the streamed batches are cut again to
    ``batch_rows`` rows each (the last one what is left), the rows in their order."""
    import itertools

    import numpy as np
    import pyarrow as pa

    from privdash.engines.streaming import _rebatched

    sizes = [7, 3, 7, 0, 1, 7, 7, 2]
    values = np.arange(sum(sizes))
    edges = np.cumsum([0, *sizes])
    batches = [pa.record_batch({"v": values[a:b]}) for a, b in itertools.pairwise(edges)]
    out = list(_rebatched(batches, rows))
    assert [batch.num_rows for batch in out] == [rows] * (len(values) // rows) + (
        [len(values) % rows] if len(values) % rows else []
    )
    assert np.concatenate([batch.column(0).to_numpy() for batch in out]).tolist() == values.tolist()
