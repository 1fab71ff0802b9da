"""``privdash diagnose --household``: the JSON keys, the text line, the per-record risks of --record-risk on both
engines, and bad input (exit 2)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from privdash.cli import main
from tests.unit.core.measure.test_household import REFERENCE, ROWS, RTOL

FIVE = "urbrur,roof,walls,water,sex"


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture(scope="module")
def testdata_path(data_dir: Path) -> Path:
    return data_dir / "sdcmicro_testdata" / "testdata.csv"


def test_json_keys_equal_sdcmicro(capsys: pytest.CaptureFixture[str], testdata_path: Path) -> None:
    ref = REFERENCE["five keys, weighted (measure_risk example)"]
    code, out, err = run(
        capsys,
        "diagnose",
        str(testdata_path),
        "--qi",
        FIVE,
        "--weights",
        "sampling_weight",
        "--household",
        "ori_hid",
        "--json",
    )
    assert code == 0, err
    payload = json.loads(out)
    assert payload["household"] == "ori_hid"
    households = payload["household_risk"]
    assert set(households) == {
        "expected_reidentifications",
        "global_risk",
        "highest",
        "households",
        "records_without_household",
        "weighted",
    }
    assert households["expected_reidentifications"] == pytest.approx(ref["hier_risk_ER"], rel=RTOL)
    assert households["global_risk"] == pytest.approx(ref["hier_risk"], rel=RTOL)
    assert households["highest"] == pytest.approx(ref["highest"], rel=RTOL)
    assert households["households"] == 1000
    assert households["records_without_household"] == 0
    assert households["weighted"] is True


def test_without_household_the_keys_are_null(capsys: pytest.CaptureFixture[str], testdata_path: Path) -> None:
    code, out, err = run(capsys, "diagnose", str(testdata_path), "--qi", FIVE, "--json")
    assert code == 0, err
    payload = json.loads(out)
    assert payload["household"] is None and payload["household_risk"] is None


def test_text_line(capsys: pytest.CaptureFixture[str], testdata_path: Path) -> None:
    code, out, err = run(capsys, "diagnose", str(testdata_path), "--qi", FIVE, "--household", "ori_hid")
    assert code == 0, err
    lines = [line for line in out.splitlines() if line.startswith("Household risk:")]
    # unweighted: r = 1/f (sdcMicro survey = FALSE)
    assert len(lines) == 1
    assert lines[0].startswith("Household risk: expected re-identifications ")
    assert ", 1,000 households" in lines[0] and "(column 'ori_hid')" in lines[0]
    assert "no sampling weights" in lines[0]


@pytest.mark.parametrize("weights", [["--weights", "sampling_weight"], []])
def test_record_risk_on_both_engines(
    capsys: pytest.CaptureFixture[str], testdata_path: Path, tmp_path: Path, weights: list[str]
) -> None:
    written = {}
    for engine in ("pandas", "duckdb"):
        out = tmp_path / f"records-{engine}.csv"
        code, _, err = run(
            capsys,
            "diagnose",
            str(testdata_path),
            "--qi",
            "urbrur,roof,walls,water,electcon,relat,sex",
            *weights,
            "--household",
            "ori_hid",
            "--engine",
            engine,
            "--record-risk",
            str(out),
        )
        assert code == 0, err
        written[engine] = out.read_bytes()
    assert written["pandas"] == written["duckdb"]
    records = pd.read_csv(tmp_path / "records-duckdb.csv")
    assert list(records.columns[-4:]) == ["class_size", "prosecutor_risk", "individual_risk", "household_risk"]
    case = "seven keys, weighted" if weights else "seven keys, unweighted"
    ref = REFERENCE[case]
    household = records["household_risk"].to_numpy()
    np.testing.assert_allclose(household[[r - 1 for r in ROWS]], ref["per_record"], rtol=RTOL, atol=0)
    assert household.sum() == pytest.approx(ref["hier_risk_ER"], rel=RTOL)
    assert records["individual_risk"].sum() == pytest.approx(ref["global_risk_ER"], rel=RTOL)
    if not weights:
        np.testing.assert_array_equal(records["individual_risk"], records["prosecutor_risk"])


def test_record_risk_missing_ids_and_dropped_records(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    source = tmp_path / "small.csv"
    source.write_text("k,hid\na,1\nb,1\nb,2\n,2\nb,\n", encoding="utf-8")
    written = {}
    for engine in ("pandas", "duckdb"):
        out = tmp_path / f"small-{engine}.csv"
        code, _, err = run(
            capsys,
            "diagnose",
            str(source),
            "--qi",
            "k",
            "--missing",
            "drop",
            "--household",
            "hid",
            "--engine",
            engine,
            "--record-risk",
            str(out),
        )
        assert code == 0, err
        written[engine] = out.read_text(encoding="utf-8")
    assert written["pandas"] == written["duckdb"]
    records = pd.read_csv(tmp_path / "small-pandas.csv")
    # a (r = 1) makes household 1 certain; b has r = 1/3; the record without a household keeps its own risk
    np.testing.assert_allclose(records["household_risk"].to_numpy(), [1, 1, 1 / 3, np.nan, 1 / 3], rtol=1e-15)
    assert records["individual_risk"].isna().tolist() == [False, False, False, True, False]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--household", "nope"], "nope"),
        (["--household", "roof"], "cannot also be a quasi-identifier"),
        (["--household", "sampling_weight", "--weights", "sampling_weight"], "cannot also be a weight column"),
        (["--household", "income", "--sensitive", "income"], "cannot also be a sensitive attribute"),
    ],
)
@pytest.mark.parametrize("engine", ["pandas", "duckdb"])
def test_bad_household_exits_2(
    capsys: pytest.CaptureFixture[str], testdata_path: Path, extra: list[str], message: str, engine: str
) -> None:
    code, _, err = run(capsys, "diagnose", str(testdata_path), "--qi", FIVE, "--engine", engine, *extra)
    assert code == 2
    assert message in err and "Traceback" not in err


def test_record_risk_stays_spreadsheet_safe(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    source = tmp_path / "formulas.csv"
    source.write_text("k,hid\na,=1+1\nb,=1+1\nb,@x\n", encoding="utf-8")
    written = {}
    for engine in ("pandas", "duckdb"):
        out = tmp_path / f"formulas-{engine}.csv"
        code, _, err = run(
            capsys,
            "diagnose",
            str(source),
            "--qi",
            "k",
            "--household",
            "hid",
            "--engine",
            engine,
            "--record-risk",
            str(out),
        )
        assert code == 0, err
        written[engine] = out.read_text(encoding="utf-8")
    assert written["pandas"] == written["duckdb"]
    lines = written["pandas"].splitlines()
    assert lines[1].startswith("a,'=1+1,1,1.0,1.0,1.0") and lines[3].startswith("b,'@x,2,0.5,0.5,0.5")
