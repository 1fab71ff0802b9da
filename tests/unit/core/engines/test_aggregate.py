"""Every engine gives the same diagnosis to the last digit: pandas in memory, and DuckDB over the same file.

The comparison is on ``Diagnosis.to_dict()`` (every number of ``privdash diagnose --json``) and on the per-class
arrays of every model, for the three missing-value policies, on four public datasets read from the files users have.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from dashboard.core.data.tables import read_table
from dashboard.core.engines.aggregate import COUNT, aggregate_table, resolve_engine, source_paths
from dashboard.core.errors import ColumnError, DataReadError, ParameterError
from dashboard.core.measure.diagnose import Diagnosis, diagnose

CASES = {
    "adult": ("arx_adult/adult.csv", ["sex", "age", "race", "marital-status", "education"], ["occupation"], None),
    "testdata": (
        "sdcmicro_testdata/testdata.csv",
        ["urbrur", "roof", "walls", "water", "electcon", "relat", "sex"],
        ["income"],
        "sampling_weight",
    ),
    "fars": ("arx_fars_subset/fars_subset.csv", ["iage", "irace", "isex", "ihispanic", "istatenum"], ["iinjury"], None),
    "cup": ("arx_cup/cup.csv", ["ZIP", "AGE", "GENDER", "STATE"], ["INCOME"], None),
}


def same(left: Any, right: Any, path: str = "") -> list[str]:
    """Where two JSON-like values differ (floats compared exactly; NaN equals NaN)."""
    if isinstance(left, dict) and isinstance(right, dict):
        keys = set(left) | set(right)
        return [d for key in sorted(keys, key=str) for d in same(left.get(key), right.get(key), f"{path}.{key}")]
    if isinstance(left, list | tuple) and isinstance(right, list | tuple):
        if len(left) != len(right):
            return [f"{path}: lengths {len(left)} != {len(right)}"]
        return [d for i, (a, b) in enumerate(zip(left, right, strict=True)) for d in same(a, b, f"{path}[{i}]")]
    if isinstance(left, float) and isinstance(right, float) and math.isnan(left) and math.isnan(right):
        return []
    return [] if left == right else [f"{path}: {left!r} != {right!r}"]


def per_class(diagnosis: Diagnosis) -> dict[str, Any]:
    out: dict[str, Any] = {"sizes": diagnosis.classes.sizes.tolist(), "counts": diagnosis.classes.counts.tolist()}
    for name, models in diagnosis.sensitive_models.items():
        out[name] = models.per_class_table().to_dict(orient="list")
    out["prosecutor"] = diagnosis.risk.prosecutor.class_risk.tolist()
    out["journalist"] = diagnosis.risk.journalist.class_risk.tolist()
    return out


@pytest.mark.parametrize("missing", ["value", "wildcard", "drop"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_duckdb_equals_pandas_to_the_last_digit(data_dir: Path, case: str, missing: str) -> None:
    relative, qis, sensitive, weights = CASES[case]
    path = data_dir / relative
    options = {"sensitive": sensitive, "missing": missing, "weights": weights, "population": 10 * 78_000}
    if weights:
        options.pop("population")
    memory = diagnose(read_table(path), qis, **options, engine="pandas")
    streamed = diagnose(path, qis, **options, engine="duckdb")
    assert memory.engine == "pandas" and streamed.engine == "duckdb"
    left, right = memory.to_dict(), streamed.to_dict()
    left.pop("engine"), right.pop("engine")
    assert same(left, right) == []
    if missing != "wildcard" or case != "cup":  # cup under wildcard: the same, and slower; once is enough
        assert same(per_class(memory), per_class(streamed)) == []


def test_parquet_dataset_in_several_files(data_dir: Path, tmp_path: Path) -> None:
    adult = read_table(data_dir / "arx_adult" / "adult.csv")
    for i, part in enumerate(np.array_split(np.arange(len(adult)), 3)):
        adult.iloc[part].to_parquet(tmp_path / f"part-{i}.parquet", index=False)
    qis = ["sex", "age", "race", "education"]
    memory = diagnose(adult, qis, sensitive=["occupation"])
    lake = diagnose(str(tmp_path / "*.parquet"), qis, sensitive=["occupation"])  # auto: a glob goes to DuckDB
    assert lake.engine == "duckdb" and lake.rows == len(adult)
    left, right = memory.to_dict(), lake.to_dict()
    left.pop("engine"), right.pop("engine")
    assert same(left, right) == []


def test_csv_text_rules_match_the_reader(tmp_path: Path) -> None:
    # Leading zeros stay text; "1" and "1.0" are one number; NA markers and blanks are missing; spaces after the
    # delimiter are dropped; a column with any text stays text.
    path = tmp_path / "t.csv"
    path.write_text("zip;n;m;t\n02134; 1;NA;a\n02134;1.0;;b\n2134;2;-;1\n02134; 1;3;a\n", encoding="utf-8")
    pandas_frame = read_table(path)
    for engine in ("pandas", "duckdb"):
        aggregate = aggregate_table(path, ["zip", "n", "m", "t"], engine=engine)
        frame = aggregate.frame.sort_values(["zip", "n", "t"], na_position="first").reset_index(drop=True)
        assert aggregate.rows == 4
        assert set(frame["zip"]) == set(pandas_frame["zip"]) == {"02134", "2134"}
        assert set(frame["n"].tolist()) == {1.0, 2.0}
        missing_m = frame.loc[frame["m"].isna(), COUNT].sum()
        assert missing_m == pandas_frame["m"].isna().sum() == 2  # "NA" and the empty field
        assert pd.api.types.is_numeric_dtype(frame["n"]) and not pd.api.types.is_numeric_dtype(frame["t"])
    both = [diagnose(path, ["zip", "n"], engine=engine).to_dict() for engine in ("pandas", "duckdb")]
    both[0].pop("engine"), both[1].pop("engine")
    assert same(*both) == []


def test_quoted_leading_spaces_are_refused_not_merged(tmp_path: Path) -> None:
    # The reader keeps the space inside quotes (" x" is its own value) and skips it before an unquoted value
    # ( x is x). Parsed text cannot tell them apart: the text engines refuse the file rather than merge the values.
    quoted = tmp_path / "quoted.csv"
    quoted.write_text('a,b\n" x",1\nx,2\n y,3\ny,4\n', encoding="utf-8")
    assert read_table(quoted)["a"].tolist() == [" x", "x", "y", "y"]
    with pytest.raises(DataReadError, match="quoted value that starts with a space"):
        aggregate_table(quoted, ["a"], engine="duckdb")
    with pytest.raises(DataReadError, match="engine='pandas'"):
        diagnose(quoted, ["a", "b"], engine="duckdb")
    spaced = tmp_path / "spaced.csv"
    spaced.write_text('a,b\nz,1\n  "z",2\n', encoding="utf-8")
    assert read_table(spaced)["a"].tolist() == ["z", "z"]
    with pytest.raises(DataReadError, match="spaces before an opening quote"):
        aggregate_table(spaced, ["a"], engine="duckdb")
    # Spaces before unquoted values only, and inside quotes but not first: the engines agree.
    unquoted = tmp_path / "unquoted.csv"
    unquoted.write_text('a,b\n"x y",1\nx,2\n y,3\ny,4\n', encoding="utf-8")
    counts = [
        aggregate_table(unquoted, ["a"], engine=engine).frame.groupby("a")[COUNT].sum().to_dict()
        for engine in ("pandas", "duckdb")
    ]
    assert counts[0] == counts[1] == {"x y": 1, "x": 1, "y": 2}


def test_engine_choice_and_errors(tmp_path: Path) -> None:
    small = tmp_path / "small.csv"
    small.write_text("a,b\n1,2\n", encoding="utf-8")
    assert resolve_engine("auto", small).value == "pandas"
    assert resolve_engine("auto", pd.DataFrame({"a": [1]})).value == "pandas"
    with pytest.raises(ParameterError, match="Unknown engine 'spork'"):
        resolve_engine("spork", small)
    with pytest.raises(DataReadError, match="No file matches"):
        source_paths(str(tmp_path / "none-*.parquet"))
    with pytest.raises(DataReadError, match="File not found"):
        diagnose(tmp_path / "missing.parquet", ["a"], engine="duckdb")
    with pytest.raises(ColumnError, match="Unknown column"):
        aggregate_table(small, ["a", "zz"], engine="duckdb")
    with pytest.raises(ParameterError, match="Invalid memory_limit"):
        aggregate_table(small, ["a"], engine="duckdb", memory_limit="lots")
    pd.DataFrame({"a": [1], "b": [2]}).to_parquet(tmp_path / "one.parquet")
    pd.DataFrame({"a": [1], "c": [2]}).to_parquet(tmp_path / "two.parquet")
    with pytest.raises(DataReadError):
        aggregate_table(str(tmp_path / "*.parquet"), ["a", "b"], engine="duckdb")
    table = pd.DataFrame({"a": [1, 1, 2]})
    assert aggregate_table(table, ["a"], engine="duckdb").frame.set_index("a")[COUNT].to_dict() == {1: 2, 2: 1}


def test_missing_markers_are_pandas_own() -> None:
    from pandas._libs.parsers import STR_NA_VALUES

    from dashboard.core.engines.aggregate import PANDAS_NA_VALUES

    assert set(STR_NA_VALUES) == PANDAS_NA_VALUES


@pytest.mark.parametrize("missing", ["value", "drop"])
@pytest.mark.parametrize("case", ["adult", "testdata", "cup"])
def test_qi_combinations_from_the_aggregate_equal_those_of_the_rows(data_dir: Path, case: str, missing: str) -> None:
    """Every subset's classes counted in records from the engine's aggregate (one row per combination)."""
    relative, qis, sensitive, _ = CASES[case]
    path = data_dir / relative
    memory = diagnose(read_table(path), qis, sensitive=sensitive, missing=missing, combinations=True)
    streamed = diagnose(path, qis, sensitive=sensitive, missing=missing, combinations=True, engine="duckdb")
    assert memory.combinations is not None and streamed.combinations is not None
    pd.testing.assert_frame_equal(streamed.combinations.table, memory.combinations.table)
    pd.testing.assert_frame_equal(streamed.combinations.qi_contributions, memory.combinations.qi_contributions)
    assert (streamed.combinations.n_records, streamed.combinations.n_dropped) == (
        memory.combinations.n_records,
        memory.combinations.n_dropped,
    )


@pytest.mark.parametrize(
    "query",
    [
        "SELECT * FROM (VALUES (1::BIGINT, 1::INTEGER, 1.5::DOUBLE, true, 'a', 1::TINYINT, 2::UBIGINT, 1.5::FLOAT), "
        "(NULL, 2, NULL, NULL, NULL, NULL, NULL, NULL)) t(a, b, c, d, e, f, g, h)",
        "SELECT * FROM (VALUES (9223372036854775807::BIGINT, -1::SMALLINT, false, 'x')) t(a, b, c, d)",
        "SELECT range AS n, range::VARCHAR AS s, CASE WHEN range % 3 = 0 THEN NULL ELSE range % 7 END AS m "
        "FROM range(100000)",
        "SELECT DATE '2020-01-01' AS d, 1.5::DECIMAL(5, 2) AS x, NULL::INTEGER AS n",
    ],
)
def test_results_fetched_through_arrow_equal_duckdbs_own(query: str) -> None:
    import duckdb

    from dashboard.core.engines.aggregate import _fetch_frame

    connection = duckdb.connect()
    pd.testing.assert_frame_equal(_fetch_frame(connection.sql(query)), connection.sql(query).df(), check_exact=True)
