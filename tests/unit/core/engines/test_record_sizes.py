"""Every record with its class size, streamed through DuckDB from the engine's aggregate, equals the per-record
sizes of the classes built in memory, for each missing-value policy."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from privdash.cli import main
from privdash.data.tables import read_table
from privdash.engines.streaming import CLASS_SIZE, RECORD_RISK, with_record_sizes, write_record_sizes
from privdash.errors import DataReadError, ParameterError
from privdash.measure.classes import equivalence_classes
from privdash.measure.diagnose import diagnose

ADULT_QIS = ["sex", "age", "race", "marital-status", "education", "native-country", "workclass", "salary-class"]

# Rows: (x,1) (x,1) (y,2) (?,2) (y,?) (x,1); "?" is missing.
SMALL = "a,b,note\nx,1,p\nx,1,q\ny,2,r\n,2,s\ny,,t\nx,1,u\n"
#  value:    (x,1) is a class of 3; (y,2), (?,2) and (y,?) are classes of their own.
#  drop:     the two records with a missing QI are in no class.
#  wildcard: a missing value matches any value, so (y,2), (?,2) and (y,?) are each compatible with all three;
#            (x,1) matches neither (?,2) (b differs) nor (y,?) (a differs).
EXPECTED = {
    "value": [3, 3, 1, 1, 1, 3],
    "drop": [3, 3, 1, None, None, 3],
    "wildcard": [3, 3, 3, 3, 3, 3],
}


@pytest.fixture()
def small_csv(tmp_path: Path) -> Path:
    path = tmp_path / "small.csv"
    path.write_text(SMALL, encoding="utf-8")
    return path


@pytest.mark.parametrize("policy", sorted(EXPECTED))
def test_hand_computed_sizes_in_batches_of_two(small_csv: Path, tmp_path: Path, policy: str) -> None:
    classes = diagnose(small_csv, ["a", "b"], missing=policy, engine="duckdb").classes
    assert classes.record_class is None  # built from the aggregate: no per-record list
    streamed = write_record_sizes(small_csv, classes, tmp_path / "sizes.parquet", batch_rows=2)
    written = pd.read_parquet(streamed.output)
    expected = pd.array(EXPECTED[policy], dtype="Int64")
    assert written[CLASS_SIZE].tolist() == list(expected)
    risk = written[RECORD_RISK].to_numpy(dtype=float)
    np.testing.assert_array_equal(np.isnan(risk), pd.isna(expected))
    np.testing.assert_allclose(risk[~np.isnan(risk)], 1 / expected[~pd.isna(expected)].to_numpy(dtype=float))
    assert written["note"].tolist() == list("pqrstu")  # every column kept, in the source's order
    assert streamed.batches == 3 and streamed.rows == 6
    assert streamed.dropped == sum(value is None for value in EXPECTED[policy])
    # The same as the sizes of the classes built from the rows in memory.
    rows = read_table(small_csv)
    in_memory = with_record_sizes(rows, equivalence_classes(rows, ["a", "b"], missing=policy))
    assert in_memory[CLASS_SIZE].tolist() == written[CLASS_SIZE].tolist()


def test_adult_streamed_equals_in_memory(data_dir: Path, tmp_path: Path) -> None:
    path = data_dir / "arx_adult" / "adult.csv"
    classes = diagnose(path, ADULT_QIS, engine="duckdb").classes
    streamed = write_record_sizes(path, classes, tmp_path / "adult.csv", batch_rows=7_000)
    assert streamed.batches == 5 and streamed.dropped == 0
    written = pd.read_csv(streamed.output)
    adult = read_table(path)
    expected = equivalence_classes(adult, ADULT_QIS).record_sizes()
    np.testing.assert_array_equal(written[CLASS_SIZE].to_numpy(), expected)
    assert (written[CLASS_SIZE] == 1).sum() == diagnose(adult, ADULT_QIS).classes.sample_uniques


def test_refusals(small_csv: Path, tmp_path: Path) -> None:
    classes = diagnose(small_csv, ["a", "b"], engine="duckdb").classes
    with pytest.raises(ParameterError, match="overwrite the input"):
        write_record_sizes(small_csv, classes, small_csv)
    with pytest.raises(ParameterError, match=r"\.parquet, \.csv or \.tsv"):
        write_record_sizes(small_csv, classes, tmp_path / "sizes.xlsx")
    clashing = tmp_path / "clash.csv"
    clashing.write_text("a,b,class_size\nx,1,9\n", encoding="utf-8")
    with pytest.raises(ParameterError, match="already has a column 'class_size'"):
        write_record_sizes(clashing, diagnose(clashing, ["a", "b"], engine="duckdb").classes, tmp_path / "o.csv")
    changed = tmp_path / "changed.csv"
    changed.write_text(SMALL + "z,1,v\n", encoding="utf-8")
    with pytest.raises(DataReadError, match=r"'z'.*changed since"):
        write_record_sizes(changed, classes, tmp_path / "out.parquet")
    assert not (tmp_path / "out.parquet").exists()
    assert not list(tmp_path.glob(".out.parquet.*"))  # no partial file left behind


@pytest.mark.parametrize("engine", ["pandas", "duckdb"])
def test_cli_writes_the_records_with_their_risk(
    small_csv: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], engine: str
) -> None:
    before = small_csv.read_bytes()
    out = tmp_path / f"risk-{engine}.csv"
    code = main(["diagnose", str(small_csv), "--qi", "a,b", "--engine", engine, "--record-risk", str(out), "--json"])
    assert code == 0
    assert json.loads(capsys.readouterr().out)["sample_uniques"] == 3
    assert pd.read_csv(out)[CLASS_SIZE].tolist() == EXPECTED["value"]
    assert small_csv.read_bytes() == before


def test_streamed_records_are_written_as_the_pandas_engine_writes_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Integers stay integers (DuckDB's streamed CSV once wrote 30 as 30.0), and a named pandas index of a Parquet
    file is a column of the records written, by either engine."""
    people = tmp_path / "people.csv"
    people.write_text("age,sex,n\n30,f,1\n30,m,\n41,f,3\n30,f,4\n", encoding="utf-8")
    folder = tmp_path / "lake"
    folder.mkdir()
    frame = pd.DataFrame({"region": ["n", "s", "n", "n"], "age": [30, 30, 41, 30]}).set_index("region")
    frame.to_parquet(folder / "part.parquet")
    for source, qis, source_name in ((people, "age,sex", "people"), (folder / "part.parquet", "age,region", "lake")):
        written = {}
        for engine in ("pandas", "duckdb"):
            out = tmp_path / f"{source_name}-{engine}.csv"
            code = main(["diagnose", str(source), "--qi", qis, "--engine", engine, "--record-risk", str(out)])
            assert code == 0, capsys.readouterr().err
            written[engine] = out.read_text(encoding="utf-8")
        assert written["duckdb"] == written["pandas"], source_name
    capsys.readouterr()
    # the CLI adds sdcMicro's individual risk, 1/f without weights
    assert (tmp_path / "people-duckdb.csv").read_text().splitlines()[1] == "30,f,1.0,2,0.5,0.5"
    assert (tmp_path / "lake-duckdb.csv").read_text().splitlines()[:2] == [
        "age,region,class_size,prosecutor_risk,individual_risk",
        "30,n,2,0.5,0.5",
    ]


def test_streamed_decimals_are_typed_by_the_whole_column(tmp_path: Path) -> None:
    """A batch of short decimals alone would be floats, and one of 20-digit decimals text: every batch takes the
    whole column's type, the reader's (text here), so each record finds its class."""
    import decimal

    import pyarrow as pa
    import pyarrow.parquet as pq

    values = ["1.50", "2.25", "1.50", "123456789012345678.12", "1.50", "2.25"]
    table = pa.table({"d": pa.array([decimal.Decimal(v) for v in values], pa.decimal128(20, 2)), "n": [1] * 6})
    source = tmp_path / "decimals.parquet"
    pq.write_table(table, source)
    expected = read_table(source)
    assert expected["d"].tolist()[:2] == ["1.50", "2.25"]  # text: one value has more digits than a float keeps
    classes = diagnose(source, ["d"], engine="duckdb").classes
    out = tmp_path / "sizes.parquet"
    written = write_record_sizes(source, classes, out, batch_rows=2)
    assert written.batches == 3
    result = pd.read_parquet(out)
    assert result["d"].tolist() == expected["d"].tolist()
    assert result[CLASS_SIZE].tolist() == [3, 2, 3, 1, 3, 2]


def test_cli_refuses_record_risk_on_an_aggregate_engine(
    small_csv: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "risk.csv"
    code = main(["diagnose", str(small_csv), "--qi", "a,b", "--engine", "spark", "--record-risk", str(out)])
    assert code == 2
    assert "--record-risk streams the records of a file" in capsys.readouterr().err
    assert not out.exists()


def test_the_class_lookup_by_integer_keys_equals_the_multiindex_lookup() -> None:
    from privdash.engines.streaming import _class_finder

    rng = np.random.default_rng(3)
    n_categories = [3, 5, 2, 7]
    class_codes = np.unique(np.column_stack([rng.integers(-1, n, 300) for n in n_categories]), axis=0)
    records = [rng.integers(-1, n, 5_000) for n in n_categories]
    by_keys = _class_finder(class_codes, n_categories)(records)  # a dense table of the 1,152 possible keys
    # More possible keys than a dense table holds (binary search), and too many for 62 bits (a MultiIndex).
    np.testing.assert_array_equal(by_keys, _class_finder(class_codes, [*n_categories[:3], 2**23])(records))
    np.testing.assert_array_equal(by_keys, _class_finder(class_codes, [2**20] * 4)(records))
    found = by_keys >= 0
    assert found.any() and (~found).any()
    np.testing.assert_array_equal(class_codes[by_keys[found]], np.column_stack(records)[found])
    assert (_class_finder(class_codes[:0], n_categories)(records) == -1).all()
