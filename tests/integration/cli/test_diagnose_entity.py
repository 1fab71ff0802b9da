"""``privdash diagnose --entity``: several rows per person, counted in people (text, JSON, --record-risk, exits)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from privdash.cli import main
from privdash.data.tables import read_table
from privdash.measure.diagnose import diagnose
from tests.unit.core.measure.test_entities import VISITS


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture()
def visits(tmp_path: Path) -> Path:
    path = tmp_path / "visits.csv"
    VISITS.to_csv(path, index=False)
    return path


def test_text_says_people_and_rows(capsys: pytest.CaptureFixture[str], visits: Path) -> None:
    code, out, _ = run(capsys, "diagnose", str(visits), "--qi", "age,sex", "--entity", "pid")
    assert code == 0
    assert "counted in people (4 people, 8 rows)" in out
    assert "equivalence classes: 2   k = 1   sample uniques: 1 (25.0%)" in out
    code, out, _ = run(capsys, "diagnose", str(visits), "--qi", "age,sex")
    assert code == 0 and "counted in people" not in out and "equivalence classes: 3" in out


@pytest.mark.parametrize("engine", ["pandas", "duckdb"])
def test_json_counts_people(capsys: pytest.CaptureFixture[str], visits: Path, engine: str) -> None:
    args = ["diagnose", str(visits), "--qi", "age,sex", "--sensitive", "dx", "--entity", "pid", "--engine", engine]
    code, out, _ = run(capsys, *args, "--json")
    assert code == 0
    result = json.loads(out)
    assert result["entity"] == "pid" and result["entity_key"] == "set" and result["entities"] == 4
    assert result["rows"] == 8 and result["records"] == 4 and result["class_size_counts"] == {"1": 1, "3": 1}
    code, out, _ = run(capsys, *args, "--entity-key", "multiset", "--json")
    result = json.loads(out)
    assert code == 0 and result["entity_key"] == "multiset" and result["class_size_counts"] == {"1": 2, "2": 1}


def test_targets_are_judged_on_people(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    # Every visit's tuple occurs twice (2-anonymous in rows), but each person's pair of tuples is unique.
    path = tmp_path / "pairs.csv"
    pd.DataFrame({"pid": [1, 1, 2, 2, 3, 3], "ward": ["x", "y", "x", "z", "y", "z"]}).to_csv(path, index=False)
    code, _, _ = run(capsys, "diagnose", str(path), "--qi", "ward", "--targets", "k=2")
    assert code == 0
    code, out, _ = run(capsys, "diagnose", str(path), "--qi", "ward", "--entity", "pid", "--targets", "k=2")
    assert code == 1 and "counted in people (3 people, 6 rows)" in out and "sample uniques: 3 (100.0%)" in out


def test_record_risk_gives_each_row_its_persons_class_size(
    capsys: pytest.CaptureFixture[str], visits: Path, tmp_path: Path
) -> None:
    out_path = tmp_path / "risk.csv"
    code, _, err = run(
        capsys, "diagnose", str(visits), "--qi", "age,sex", "--entity", "pid", "--entity-key", "multiset",
        "--record-risk", str(out_path),
    )  # fmt: skip
    assert code == 0 and "its person's class" in err
    written = read_table(out_path)
    assert written["class_size"].tolist() == [2, 2, 2, 2, 1, 1, 1, 1]
    assert written["prosecutor_risk"].tolist() == [0.5, 0.5, 0.5, 0.5, 1.0, 1.0, 1.0, 1.0]


@pytest.mark.parametrize("missing", ["value", "drop"])
def test_record_risk_streamed_by_duckdb_equals_pandas(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, missing: str
) -> None:
    from tests.unit.core.measure.test_entities import QIS, random_table

    path = tmp_path / "visits.csv"
    random_table(7).to_csv(path, index=False)
    args = ["diagnose", str(path), "--qi", ",".join(QIS), "--entity", "pid", "--missing", missing, "--json"]
    outputs = {}
    for engine in ("pandas", "duckdb"):
        outputs[engine] = tmp_path / f"{engine}.parquet"
        code, _, err = run(capsys, *args, "--engine", engine, "--record-risk", str(outputs[engine]))
        assert code == 0 and "its person's class" in err
    memory, streamed = read_table(outputs["pandas"]), read_table(outputs["duckdb"])
    assert len(streamed) == len(memory) == 200
    pd.testing.assert_frame_equal(memory, streamed, check_dtype=False)
    assert memory["class_size"].notna().all() or missing == "drop"


def test_bad_inputs_exit_2(capsys: pytest.CaptureFixture[str], visits: Path, tmp_path: Path) -> None:
    base = ["diagnose", str(visits), "--qi", "age,sex"]
    cases = [
        (["--entity", "patient"], "patient"),
        (["--entity", "pid", "--missing", "wildcard"], "not defined with a person id"),
        (["--entity", "age"], "cannot also be a quasi-identifier"),
        (["--entity-key", "multiset"], "name the person id with --entity"),
        (["--entity", "pid", "--combinations"], "QI-combination analysis"),
    ]  # fmt: skip
    for extra, message in cases:
        code, _, err = run(capsys, *base, *extra)
        assert code == 2, extra
        assert message in err, (extra, err)
    no_ids = tmp_path / "no_ids.csv"
    VISITS.assign(pid=["p1", "", "p2", "p2", "p3", "", "p3", "p4"]).to_csv(no_ids, index=False)
    code, _, err = run(capsys, "diagnose", str(no_ids), "--qi", "age,sex", "--entity", "pid")
    assert code == 2 and "2 row(s) have no value in the person-id column 'pid'" in err
    varying = tmp_path / "varying.csv"
    VISITS.assign(w=[1, 2, 1, 1, 1, 1, 1, 1]).to_csv(varying, index=False)
    code, _, err = run(capsys, "diagnose", str(varying), "--qi", "age,sex", "--entity", "pid", "--weights", "w")
    assert code == 2 and "person 'p1' has rows with weights 1 and 2" in err


def test_contract_entity_is_used(capsys: pytest.CaptureFixture[str], visits: Path, tmp_path: Path) -> None:
    from privdash.data.contract import DataContract

    contract = DataContract.for_columns(pd.read_csv(visits), quasi_identifiers=["age", "sex"], entity="pid")
    path = tmp_path / "contract.json"
    contract.save(path)
    code, out, _ = run(capsys, "diagnose", str(visits), "--contract", str(path), "--json")
    assert code == 0 and json.loads(out)["entity"] == "pid" and json.loads(out)["records"] == 4


def test_report_counts_people_with_a_contract_person_id(
    capsys: pytest.CaptureFixture[str], visits: Path, tmp_path: Path
) -> None:
    from privdash.data.contract import DataContract

    contract = DataContract.for_columns(pd.read_csv(visits), quasi_identifiers=["age", "sex"], entity="pid")
    path = tmp_path / "contract.json"
    contract.save(path)
    report = tmp_path / "report.html"
    code, _, err = run(capsys, "report", str(visits), "-o", str(report), "--contract", str(path))
    assert code in (0, 1), err  # the verdict's exit status; the report is written either way
    people = diagnose(pd.read_csv(visits), ["age", "sex"], entity="pid")
    text = report.read_text(encoding="utf-8")
    assert "Every count of this report is of people" in text
    assert f"{people.entities:,} people in {people.rows:,} rows" in text
