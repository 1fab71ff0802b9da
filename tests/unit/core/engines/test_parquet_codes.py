"""Counting a Parquet file from its dictionary codes gives the pandas engine's numbers to the last digit.

Files are written with small row groups, each with its own set of values (so each row group has its own
dictionary, in its own order), with missing values; ``engine="auto"`` is made to choose DuckDB for these small files
so that the code path runs, and the DuckDB GROUP BY is made to fail where it must not be used.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from privdash.data.tables import read_table
from privdash.engines import aggregate as aggregate_module
from privdash.engines import parquet_codes
from privdash.engines.aggregate import COUNT, Engine, aggregate_table
from privdash.engines.parquet_codes import dictionary_encoded_text, parquet_codes_aggregate, possible_classes
from privdash.measure.diagnose import diagnose

QIS = ["sex", "region", "job", "age_band"]


def table(rows: int = 6000, seed: int = 3) -> pd.DataFrame:
    """Text columns whose values change from one block of rows to the next, with missing values."""
    rng = np.random.default_rng(seed)
    block = np.arange(rows) // 700
    frame = pd.DataFrame(
        {
            "sex": rng.choice(["F", "M"], rows),
            "region": np.array([f"r{i}" for i in range(40)], dtype=object)[(block * 3 + rng.integers(0, 6, rows)) % 40],
            "job": rng.choice(["clerk", "nurse", "smith", "é-accent", ""], rows),
            "age_band": np.array([f"{10 * i}-{10 * i + 9}" for i in range(9)], dtype=object)[
                (block + rng.integers(0, 3, rows)) % 9
            ],
            "disease": rng.choice(["flu", "cold", "none"], rows),
            "age": rng.integers(18, 90, rows),
        }
    )
    for name in ["region", "job", "age_band"]:
        frame.loc[rng.random(rows) < 0.05, name] = None
    frame.loc[block == 2, "sex"] = None  # a row group where one column is all missing
    return frame


def write(frame: pd.DataFrame, path: Path, **options: Any) -> Path:
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), path, row_group_size=700, **options)
    return path


@pytest.fixture
def auto_picks_duckdb(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """``auto`` chooses DuckDB for every file, as for a large one; the list counts DuckDB GROUP BYs."""
    calls: list[int] = []
    resolve = aggregate_module.resolve_engine
    duckdb_aggregate = aggregate_module._duckdb_aggregate

    def counted(*args: Any, **kwargs: Any) -> pd.DataFrame:
        calls.append(1)
        return duckdb_aggregate(*args, **kwargs)

    monkeypatch.setattr(
        aggregate_module,
        "resolve_engine",
        lambda engine, source: Engine.DUCKDB if Engine.parse(engine) == Engine.AUTO else resolve(engine, source),
    )
    monkeypatch.setattr(aggregate_module, "_duckdb_aggregate", counted)
    monkeypatch.setattr(parquet_codes, "MIN_POSSIBLE_CLASSES", 0)  # these small files have few classes
    return calls


def sorted_rows(frame: pd.DataFrame, columns: list[str]) -> list[tuple[Any, ...]]:
    """The aggregate's rows as tuples (missing as None), sorted: comparable whatever the engine's order."""
    rows = frame[[*columns, COUNT]].astype(object).where(frame[[*columns, COUNT]].notna(), None)
    return sorted(map(tuple, rows.itertuples(index=False)), key=repr)


def test_codes_equal_duckdb_with_per_row_group_dictionaries(tmp_path: Path, auto_picks_duckdb: list[int]) -> None:
    path = write(table(), tmp_path / "t.parquet")
    metadata = pq.read_metadata(path)
    assert metadata.num_row_groups == 9
    assert dictionary_encoded_text(path, QIS)
    codes = aggregate_table(path, QIS)
    assert auto_picks_duckdb == []  # counted from the codes
    duck = aggregate_table(path, QIS, engine="duckdb")
    assert auto_picks_duckdb == [1]  # an engine asked for by name is the one that counts
    assert codes.rows == duck.rows == 6000
    assert list(codes.frame.dtypes) == list(duck.frame.dtypes)
    assert sorted_rows(codes.frame, QIS) == sorted_rows(duck.frame, QIS)
    assert codes.frame[QIS].isna().any().all()  # missing values are classes of their own
    pandas_counts = table().groupby(QIS, dropna=False).size()
    assert sorted(codes.frame[COUNT]) == sorted(pandas_counts)


def test_big_key_space_is_counted_with_a_hash_table(tmp_path: Path) -> None:
    # Unique values: 6000^2 possible keys, beyond bincount.
    frame = pd.DataFrame({"a": [f"a{i}" for i in range(6000)], "b": [f"b{i % 3001}" for i in range(6000)]})
    frame.loc[::7, "b"] = None
    path = write(frame, tmp_path / "u.parquet")
    codes = parquet_codes_aggregate(path, ["a", "b"])
    assert codes is not None
    duck = aggregate_table(path, ["a", "b"], engine="duckdb").frame
    assert sorted_rows(codes, ["a", "b"]) == sorted_rows(duck, ["a", "b"])


def test_a_chunk_that_leaves_its_dictionary(tmp_path: Path) -> None:
    # A small dictionary page limit: the writer falls back to plain pages inside a row group.
    frame = pd.DataFrame({"a": [f"long-value-{i % 900:04d}" * 3 for i in range(5000)], "b": ["x", "y"] * 2500})
    path = tmp_path / "p.parquet"
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), path, dictionary_pagesize_limit=2048)
    codes = parquet_codes_aggregate(path, ["a", "b"])
    assert codes is not None
    duck = aggregate_table(path, ["a", "b"], engine="duckdb").frame
    assert sorted_rows(codes, ["a", "b"]) == sorted_rows(duck, ["a", "b"])


def test_columns_not_dictionary_encoded_go_to_duckdb(tmp_path: Path, auto_picks_duckdb: list[int]) -> None:
    frame = table()
    plain = write(frame, tmp_path / "plain.parquet", use_dictionary=["sex", "region", "job"])  # age_band plain
    assert not dictionary_encoded_text(plain, QIS)
    assert parquet_codes_aggregate(plain, QIS) is None
    mixed = write(frame, tmp_path / "mixed.parquet")
    assert not dictionary_encoded_text(mixed, ["sex", "age"])  # a number
    for path, columns in [(plain, QIS), (mixed, ["sex", "age", "region"])]:
        before = len(auto_picks_duckdb)
        result = aggregate_table(path, columns)
        assert len(auto_picks_duckdb) == before + 1
        expected = frame.groupby(columns, dropna=False).size()
        assert sorted(result.frame[COUNT]) == sorted(expected)
    assert not dictionary_encoded_text(mixed, ["sex", "nope"])
    assert not dictionary_encoded_text(tmp_path / "missing.parquet", ["sex"])


def same(left: Any, right: Any) -> bool:
    """Two JSON-like values equal, floats to the last digit (NaN equals NaN)."""
    if isinstance(left, dict) and isinstance(right, dict):
        return left.keys() == right.keys() and all(same(left[k], right[k]) for k in left)
    if isinstance(left, list | tuple) and isinstance(right, list | tuple):
        return len(left) == len(right) and all(same(a, b) for a, b in zip(left, right, strict=True))
    if isinstance(left, float) and isinstance(right, float) and math.isnan(left) and math.isnan(right):
        return True
    return bool(left == right)


@pytest.mark.parametrize("missing", ["value", "wildcard", "drop"])
def test_diagnosis_from_codes_equals_pandas(tmp_path: Path, auto_picks_duckdb: list[int], missing: str) -> None:
    path = write(table(), tmp_path / "t.parquet")
    memory = diagnose(read_table(path), QIS, sensitive=["disease"], missing=missing, engine="pandas")
    codes = diagnose(path, QIS, sensitive=["disease"], missing=missing)
    assert auto_picks_duckdb == []
    assert codes.engine == "duckdb" and memory.engine == "pandas"
    left, right = memory.to_dict(), codes.to_dict()
    left.pop("engine"), right.pop("engine")
    assert same(left, right)
    assert codes.classes.sizes.tolist() == memory.classes.sizes.tolist()
    # A numeric QI beside the text ones: DuckDB counts, with the same numbers.
    memory = diagnose(read_table(path), ["sex", "age"], missing=missing, engine="pandas")
    mixed = diagnose(path, ["sex", "age"], missing=missing)
    assert auto_picks_duckdb == [1]
    left, right = memory.to_dict(), mixed.to_dict()
    left.pop("engine"), right.pop("engine")
    assert same(left, right)


@pytest.mark.parametrize("threads", [1, 2])
def test_spans_counted_in_threads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, threads: int) -> None:
    # Small spans: several spans per thread, dictionaries that grow between and within spans.
    from privdash.engines import parquet_codes

    monkeypatch.setattr(parquet_codes, "SPAN_ROWS", 1500)
    path = write(table(12_000, seed=5), tmp_path / "t.parquet")
    codes = parquet_codes_aggregate(path, QIS, threads=threads)
    assert codes is not None
    duck = aggregate_table(path, QIS, engine="duckdb").frame
    assert sorted_rows(codes, QIS) == sorted_rows(duck, QIS)


def test_the_cli_counts_a_large_parquet_file_from_its_codes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    from privdash import cli

    rows = 260_000  # x 16 columns: over the 4M cells that make auto choose DuckDB
    rng = np.random.default_rng(1)
    frame = pd.DataFrame({f"c{i}": rng.choice(["x", "y", "z", None], rows) for i in range(16)})
    path = tmp_path / "big.parquet"
    frame.to_parquet(path, index=False)
    argv = ["diagnose", str(path), "--qi", "c0,c1,c2,c3", "--json"]
    assert cli.main([*argv, "--engine", "pandas"]) == 0
    memory = json.loads(capsys.readouterr().out)

    def refused(*args: Any, **kwargs: Any) -> pd.DataFrame:
        raise AssertionError("counted by DuckDB")

    monkeypatch.setattr(aggregate_module, "_duckdb_aggregate", refused)
    monkeypatch.setattr(parquet_codes, "MIN_POSSIBLE_CLASSES", 0)  # 4^4 possible classes: few, but counted here
    assert cli.main(argv) == 0
    codes = json.loads(capsys.readouterr().out)
    assert codes.pop("engine") == "duckdb" and memory.pop("engine") == "pandas"
    assert codes["classes"] == 256 and same(codes, memory)


def test_a_damaged_file_is_left_to_duckdb(tmp_path: Path) -> None:
    path = write(table(), tmp_path / "t.parquet")
    data = bytearray(path.read_bytes())
    data[200:3000] = b"\x07" * 2800  # pages damaged, footer intact
    path.write_bytes(bytes(data))
    assert dictionary_encoded_text(path, QIS)
    assert parquet_codes_aggregate(path, QIS) is None


def test_a_column_of_too_many_values_is_left_to_duckdb(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from privdash.engines import parquet_codes

    path = write(table(), tmp_path / "t.parquet")
    monkeypatch.setattr(parquet_codes, "MAX_VALUES", 20)  # region has 30 values, job 5
    assert parquet_codes_aggregate(path, ["sex", "job"]) is not None
    assert parquet_codes_aggregate(path, ["sex", "region"]) is None


def test_few_possible_classes_are_left_to_duckdb_and_many_are_counted_from_the_codes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The choice reads the first row group's dictionaries: 2 x 3 values (+ missing) are few classes, 60^3 many."""
    calls: list[int] = []
    resolve = aggregate_module.resolve_engine
    duckdb_aggregate = aggregate_module._duckdb_aggregate
    monkeypatch.setattr(
        aggregate_module,
        "resolve_engine",
        lambda engine, source: Engine.DUCKDB if Engine.parse(engine) == Engine.AUTO else resolve(engine, source),
    )
    monkeypatch.setattr(
        aggregate_module, "_duckdb_aggregate", lambda *a, **k: calls.append(1) or duckdb_aggregate(*a, **k)
    )
    rng = np.random.default_rng(5)
    few = write(
        pd.DataFrame({"a": rng.choice(["x", "y"], 1400), "b": rng.choice(["p", "q", "r"], 1400)}),
        tmp_path / "few.parquet",
    )
    assert possible_classes(few, ["a", "b"]) == 3 * 4
    values = np.array([f"v{i}" for i in range(60)], dtype=object)
    many_frame = pd.DataFrame({name: values[rng.permutation(np.arange(1400) % 60)] for name in "abc"})
    many = write(many_frame, tmp_path / "many.parquet")
    assert possible_classes(many, list("abc")) == 61**3 > parquet_codes.MIN_POSSIBLE_CLASSES
    aggregate_table(few, ["a", "b"], engine="auto")
    assert calls == [1]
    counted = aggregate_table(many, list("abc"), engine="auto")
    assert calls == [1]  # counted from the codes
    expected = aggregate_table(many, list("abc"), engine="pandas")
    assert sorted_rows(counted.frame, list("abc")) == sorted_rows(expected.frame, list("abc"))
