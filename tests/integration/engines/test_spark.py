"""Counting in Spark gives the pandas engine's numbers to the last digit, on a real local Spark.

One session on ``local[2]`` serves the module. The GROUP BY runs in Spark over the files users have (the four public
datasets of the engine comparisons, as CSV and as a Parquet dataset in three files), over a Spark DataFrame and over
a table of the session's catalog; the diagnosis must equal pandas' on the CSV (every number of ``--json`` and every
per-class array), through the Python API and the CLI. Typed Parquet columns come back with the pandas engine's
dtypes and values. Bad sources, an unreachable master, a missing pyspark and a missing Java fail with one message
(exit status 2 in the CLI), quickly.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from privdash.cli import main
from privdash.data.tables import read_table
from privdash.engines.aggregate import COUNT, SparkTable, aggregate_table, sample_rows
from privdash.engines.spark import spark_session
from privdash.errors import ColumnError, DataReadError, ParameterError
from privdash.measure.diagnose import diagnose
from tests.unit.core.engines.test_aggregate import CASES, per_class, same

MISSING = ["value", "wildcard", "drop"]
ADULT = CASES["adult"]


@pytest.fixture(scope="module")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """The module's Spark session (two cores, few shuffle partitions: the tables are small; the catalog's warehouse
    in a temporary folder, not in the working directory)."""
    warehouse = str(tmp_path_factory.mktemp("warehouse"))
    session = spark_session(
        "local[2]", config={"spark.sql.shuffle.partitions": "4", "spark.sql.warehouse.dir": warehouse}
    )
    yield session
    session.stop()


@pytest.fixture(scope="module")
def frames(data_dir: Path) -> dict[str, pd.DataFrame]:
    """Each dataset as the pandas reader reads its CSV file."""
    return {case: read_table(data_dir / relative) for case, (relative, *_) in CASES.items()}


@pytest.fixture(scope="module")
def lakes(frames: dict[str, pd.DataFrame], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Each dataset as a folder of three Parquet files (written by pyarrow from the reader's frame)."""
    folders = {}
    for case, frame in frames.items():
        folder = tmp_path_factory.mktemp(f"lake-{case}")
        for i, part in enumerate(np.array_split(np.arange(len(frame)), 3)):
            table = pa.Table.from_pandas(frame.iloc[part], preserve_index=False)
            pq.write_table(table, folder / f"part-{i}.parquet")
        folders[case] = folder
    return folders


def _options(case: str, missing: str) -> dict[str, Any]:
    _, _, sensitive, weights = CASES[case]
    options: dict[str, Any] = {"sensitive": sensitive, "missing": missing, "weights": weights}
    if not weights:
        options["population"] = 10 * 78_000
    return options


def _comparable(diagnosis: Any) -> dict[str, Any]:
    out = diagnosis.to_dict()
    out.pop("engine")
    return dict(out)


def _rows(frame: pd.DataFrame) -> list[tuple[Any, ...]]:
    """An aggregate's rows in a fixed order, missing values as None (order and the NaN/None spelling aside)."""
    values = frame.astype(object).where(frame.notna(), None)
    return sorted(values.itertuples(index=False, name=None), key=repr)


@pytest.mark.parametrize("missing", MISSING)
@pytest.mark.parametrize("case", sorted(CASES))
def test_spark_equals_pandas_on_csv_and_parquet(
    spark: Any, data_dir: Path, frames: dict[str, pd.DataFrame], lakes: dict[str, Path], case: str, missing: str
) -> None:
    relative, qis, _, _ = CASES[case]
    options = _options(case, missing)
    memory = diagnose(frames[case], qis, **options, engine="pandas")
    for source in (data_dir / relative, str(lakes[case] / "*.parquet")):
        counted = diagnose(source, qis, **options, engine="spark")
        assert counted.engine == "spark" and counted.rows == len(frames[case])
        assert same(_comparable(memory), _comparable(counted)) == []
        if missing != "wildcard" or case != "cup":  # cup under wildcard: the same, and slower; once is enough
            assert same(per_class(memory), per_class(counted)) == []


def test_spark_dataframe_and_catalog_table(spark: Any, frames: dict[str, pd.DataFrame], lakes: dict[str, Path]) -> None:
    _, qis, sensitive, _ = ADULT
    memory = _comparable(diagnose(frames["adult"], qis, sensitive=sensitive))
    lake = spark.read.parquet(str(lakes["adult"]))
    counted = diagnose(lake, qis, sensitive=sensitive)  # auto: a Spark DataFrame is counted by Spark
    assert counted.engine == "spark"
    assert same(memory, _comparable(counted)) == []
    lake.createOrReplaceTempView("adult_lake")
    table = diagnose(SparkTable("adult_lake"), qis, sensitive=sensitive)
    assert table.engine == "spark" and same(memory, _comparable(table)) == []
    # A pandas frame handed to Spark (weights and floats included) counts the same too.
    _, qis, sensitive, weights = CASES["testdata"]
    weighted = {"sensitive": sensitive, "weights": weights}
    in_pandas = diagnose(frames["testdata"], qis, **weighted, engine="pandas")
    in_spark = diagnose(frames["testdata"], qis, **weighted, engine="spark")
    assert in_spark.engine == "spark" and same(_comparable(in_pandas), _comparable(in_spark)) == []


def test_parquet_columns_keep_the_pandas_engine_types(spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "typed.parquet"
    table = pa.table(
        {
            "i": pa.array([1, 2, 2, 3, 1], pa.int64()),
            "n": pa.array([1, None, 2, 1, 1], pa.int64()),
            "i32": pa.array([1, 2, 2, 1, 1], pa.int32()),
            "f": pa.array([1.5, None, float("nan"), 1.5, 1.5], pa.float64()),
            "s": pa.array(["a", None, "b", "a", "a"], pa.string()),
            "b": pa.array([True, None, False, True, True], pa.bool_()),
        }
    )
    pq.write_table(table, path)
    columns = list(table.column_names)
    expected = aggregate_table(path, columns, engine="pandas").frame
    counted = aggregate_table(path, columns, engine="spark").frame
    assert counted.dtypes.to_dict() == expected.dtypes.to_dict()
    assert _rows(counted) == _rows(expected)
    assert counted[COUNT].sum() == 5 and len(counted) == 4


def test_csv_text_rules_match_the_reader(spark: Any, tmp_path: Path) -> None:
    # Leading zeros stay text; "1" and "1.0" are one number; NA markers and blanks are missing; blanks after the
    # delimiter are dropped, before a quote too; quoted fields may hold the delimiter, quotes and line breaks;
    # CRLF line ends, blank lines, short rows, a BOM, Latin-1 and tab-separated rows of empty fields.
    files = {
        "rules.csv": ("zip;n;m;t\n02134; 1;NA;a\n02134;1.0;;b\n2134;2;-;1\n02134; 1;3;a\n", "utf-8"),
        "quoted.csv": (
            'id,city,note\r\n1, "Paris, FR","a ""b"""\r\n\r\n2,"Line\nbreak",x\r\n3,Oslo\r\n'
            '1, "Paris, FR","a ""b"""\r\n',
            "utf-8-sig",
        ),
        "latin.csv": ("nom;âge\nJosé;30\nZoë;30\nJosé;31\n", "latin-1"),
        "tabs.tsv": ("a\tb\tc\n1\tx\t2\n\t\t\n1\tx\t2\n", "utf-8"),
    }
    for name, (text, encoding) in files.items():
        path = tmp_path / name
        path.write_bytes(text.encode(encoding))
        columns = list(read_table(path).columns)
        expected = aggregate_table(path, columns, engine="pandas").frame
        counted = aggregate_table(path, columns, engine="spark").frame
        assert _rows(counted) == _rows(expected), name
        numeric = [pd.api.types.is_numeric_dtype(counted[c]) for c in columns]
        assert numeric == [pd.api.types.is_numeric_dtype(expected[c]) for c in columns], name
    # A charset outside Spark's standard ones needs spark.sql.legacy.javaCharsets (set in sessions privdash starts).
    spark.conf.set("spark.sql.legacy.javaCharsets", "false")
    try:
        with pytest.raises(ParameterError, match=r"spark\.sql\.legacy\.javaCharsets=true"):
            aggregate_table(tmp_path / "latin.csv", ["nom"], engine="spark")
    finally:
        spark.conf.set("spark.sql.legacy.javaCharsets", "true")
    preview = sample_rows(tmp_path / "rules.csv", 3, engine="spark")
    assert preview.to_dict("list") == sample_rows(tmp_path / "rules.csv", 3, engine="duckdb").to_dict("list")


def test_cli_json_equals_the_pandas_engine(spark: Any, data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    relative, qis, sensitive, _ = ADULT
    outputs = []
    for engine in (["--engine", "spark", "--master", "local[2]"], ["--engine", "pandas"]):
        argv = ["diagnose", str(data_dir / relative), "--qi", ",".join(qis), "--sensitive", ",".join(sensitive)]
        assert main([*argv, *engine, "--json"]) == 0
        outputs.append(json.loads(capsys.readouterr().out))
    assert outputs[0].pop("engine") == "spark" and outputs[1].pop("engine") == "pandas"
    assert same(outputs[0], outputs[1]) == []


def test_bad_sources_fail_with_one_message(spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    small = tmp_path / "small.csv"
    small.write_text("a,b\n1,2\n3,4\n", encoding="utf-8")
    with pytest.raises(DataReadError, match="File not found"):
        aggregate_table(tmp_path / "missing.parquet", ["a"], engine="spark")
    with pytest.raises(DataReadError, match="No file matches"):
        aggregate_table(str(tmp_path / "none-*.parquet"), ["a"], engine="spark")
    with pytest.raises(ColumnError, match=r"Unknown column.*zz"):
        aggregate_table(small, ["a", "zz"], engine="spark")
    pd.DataFrame({"a": [1], "b": [2]}).to_parquet(tmp_path / "one.parquet")
    pd.DataFrame({"a": [1], "c": [2]}).to_parquet(tmp_path / "two.parquet")
    with pytest.raises(DataReadError, match=r"two\.parquet has other columns than one\.parquet"):
        aggregate_table(str(tmp_path / "*.parquet"), ["a"], engine="spark")
    longer = tmp_path / "longer.csv"
    longer.write_text("a,b\n1,2\n3,4,5\n", encoding="utf-8")
    with pytest.raises(DataReadError, match="more fields than the header's 2"):
        aggregate_table(longer, ["a"], engine="spark")
    with pytest.raises(DataReadError, match="Spark cannot read the table 'no_such_table'"):
        aggregate_table(SparkTable("no_such_table"), ["a"], engine="spark")
    with pytest.raises(ParameterError, match="already running"):
        aggregate_table(small, ["a"], engine="spark", spark_master="local[1]")
    started = time.perf_counter()
    with pytest.raises(ParameterError, match=r"Cannot reach the Spark master spark://127\.0\.0\.1:1"):
        aggregate_table(small, ["a"], engine="spark", spark_master="spark://127.0.0.1:1")
    assert time.perf_counter() - started < 30
    with pytest.raises(ParameterError, match="Invalid Spark master URL"):
        aggregate_table(small, ["a"], engine="spark", spark_master="spark://no-port")
    with pytest.raises(ParameterError, match="Invalid Spark master URL 'bogus'"):
        aggregate_table(small, ["a"], engine="spark", spark_master="bogus")
    cases = [
        ([str(tmp_path / "missing.csv"), "--qi", "a"], "File not found"),
        ([str(small), "--qi", "zz"], "Unknown column"),
        ([str(small), "--qi", "a", "--master", "spark://127.0.0.1:1"], "Cannot reach the Spark master"),
    ]
    for argv, message in cases:
        assert main(["diagnose", *argv, "--engine", "spark"]) == 2
        error = capsys.readouterr().err
        assert message in error and "Traceback" not in error
    assert main(["diagnose", str(small), "--qi", "a", "--engine", "duckdb", "--master", "local[2]"]) == 2
    assert "--master chooses the Spark master of --engine spark" in capsys.readouterr().err


def test_without_pyspark_the_message_says_how_to_install(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    small = tmp_path / "small.csv"
    small.write_text("a,b\n1,2\n", encoding="utf-8")
    monkeypatch.setitem(sys.modules, "pyspark", None)  # what "import pyspark" meets when it is not installed
    with pytest.raises(ParameterError, match=r"pip install 'privdash\[spark\]'"):
        aggregate_table(small, ["a"], engine="spark")


def test_without_java_the_cli_says_so(tmp_path: Path) -> None:
    # A PATH holding every command of the system but java, and no JAVA_HOME: Spark's launcher finds no Java.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for folder in ("/usr/local/bin", "/usr/bin", "/bin"):
        for command in Path(folder).glob("*") if Path(folder).is_dir() else []:
            target = bin_dir / command.name
            if command.name != "java" and not target.exists():
                target.symlink_to(command)
    small = tmp_path / "small.csv"
    small.write_text("a,b\n1,2\n", encoding="utf-8")
    env = {key: value for key, value in os.environ.items() if key not in ("JAVA_HOME", "SPARK_HOME")}
    env["PATH"] = str(bin_dir)
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "privdash.cli", "diagnose", str(small), "--qi", "a", "--engine", "spark"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert "needs a Java runtime, 17 or later" in done.stderr and "Traceback" not in done.stderr
    assert time.perf_counter() - started < 60


@pytest.mark.parametrize("weights", ["sampling_weight", None])
def test_household_risk_in_spark_equals_pandas(
    spark: Any, data_dir: Path, frames: dict[str, pd.DataFrame], lakes: dict[str, Path], weights: str | None
) -> None:
    """The aggregate grouped by the QIs and the household column gives pandas' household risk to the last digit."""
    relative, qis, sensitive, _ = CASES["testdata"]
    options = {"sensitive": sensitive, "weights": weights, "household": "ori_hid"}
    memory = diagnose(frames["testdata"], qis, **options, engine="pandas")
    assert memory.household_risk is not None
    for source in (data_dir / relative, str(lakes["testdata"] / "*.parquet")):
        counted = diagnose(source, qis, **options, engine="spark")
        assert counted.engine == "spark" and counted.household_risk is not None
        assert same(_comparable(memory), _comparable(counted)) == []
        assert counted.household_risk.household_risk.tolist() == memory.household_risk.household_risk.tolist()
