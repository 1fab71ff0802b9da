"""``--targets`` with the release targets beyond k on diagnose, anonymize and report: exit status 1 when one fails,
2 for bad targets, and anonymize releases a table whose diagnosis meets them."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from privdash.cli import main
from privdash.data.tables import read_table
from privdash.measure.diagnose import diagnose
from privdash.measure.household import household_risk
from privdash.targets import parse_targets

KEYS = "urbrur,roof,walls,water,electcon,relat,sex"
# sdcMicro's global risk of these 7 keys with sampling_weight (scripts/release_targets_reference.R)
GLOBAL_RISK = 0.002353340375


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture(scope="module")
def testdata_path(data_dir: Path) -> Path:
    return data_dir / "sdcmicro_testdata" / "testdata.csv"


def test_diagnose_global_risk_exit_status(capsys: pytest.CaptureFixture[str], testdata_path: Path) -> None:
    base = ("diagnose", str(testdata_path), "--qi", KEYS, "--weights", "sampling_weight")
    code, out, err = run(capsys, *base, "--targets", "global_risk=0.002")
    assert code == 1, err
    assert "global_risk" in out and "0.002353" in out and "FAIL" in out
    code, out, err = run(capsys, *base, "--targets", "global_risk=0.003")
    assert code == 0, err
    code, out, _ = run(capsys, *base, "--targets", "global_risk=0.003", "--json")
    (check,) = [c for c in json.loads(out)["verdict"]["checks"] if c["target"] == "global_risk"]
    assert check["achieved"] == pytest.approx(GLOBAL_RISK, rel=1e-9) and check["passed"]


def test_diagnose_lists_every_target_with_its_value(capsys: pytest.CaptureFixture[str], testdata_path: Path) -> None:
    code, out, _ = run(
        capsys,
        "diagnose",
        str(testdata_path),
        "--qi",
        KEYS,
        "--weights",
        "sampling_weight",
        "--targets",
        "global_risk=0.03,household_risk=0.05,average_risk=0.1,k_map=3,delta_presence=0.5,population_uniques=0.01,"
        "population_uniques_estimator=pitman",
    )
    assert code == 1  # household_risk is not measured without a household column
    for name in ("global_risk", "household_risk", "average_risk", "k_map", "delta_presence", "population_uniques"):
        assert name in out
    assert "no household column" in out


def test_anonymize_global_risk_releases_a_table_that_meets_it(
    capsys: pytest.CaptureFixture[str], testdata_path: Path, tmp_path: Path
) -> None:
    output = tmp_path / "released.csv"
    code, out, err = run(
        capsys,
        "anonymize",
        str(testdata_path),
        "--qi",
        KEYS,
        "--weights",
        "sampling_weight",
        "--targets",
        "global_risk=0.001",
        "-o",
        str(output),
    )
    assert code == 0, err
    assert "global_risk" in out
    released = read_table(output)
    assert len(released) < 4580  # the risk was lowered
    verdict = diagnose(released, KEYS.split(","), weights="sampling_weight").check(parse_targets("global_risk=0.001"))
    assert verdict.passed, verdict.sentence()
    code, _, _ = run(
        capsys,
        "diagnose",
        str(output),
        "--qi",
        KEYS,
        "--weights",
        "sampling_weight",
        "--targets",
        "global_risk=0.001",
    )
    assert code == 0


def test_anonymize_population_targets(capsys: pytest.CaptureFixture[str], testdata_path: Path, tmp_path: Path) -> None:
    output = tmp_path / "released.csv"
    code, out, err = run(
        capsys,
        "anonymize",
        str(testdata_path),
        "--qi",
        KEYS,
        "--targets",
        "k_map=60,population_uniques=0.0001",
        "--sampling-fraction",
        "0.05",
        "-o",
        str(output),
        "--json",
    )
    assert code == 0, err
    payload = json.loads(out)
    assert payload["verdict"]["passed"]
    assert payload["targets"]["k_map"] == 60 and payload["targets"]["population_uniques"] == 0.0001
    released = read_table(output)
    verdict = diagnose(released, KEYS.split(","), sampling_fraction=0.05).check(
        parse_targets("k_map=60,population_uniques=0.0001")
    )
    assert verdict.passed, verdict.sentence()


@pytest.mark.parametrize(
    ("command", "targets", "extra", "message"),
    [
        ("diagnose", "global_rsk=0.1", (), "Cannot read the target"),
        ("diagnose", "global_risk=1.5", (), "global_risk must lie in (0, 1]"),
        ("diagnose", "k_map=0", (), "k_map"),
        ("diagnose", "population_uniques_estimator=pitman", (), "without a population_uniques target"),
        ("anonymize", "average_risk=0", (), "average_risk"),
        ("anonymize", "household_risk=0.05", (), "household_risk needs the household"),
        ("anonymize", "k_map=3", (), "need(s) the population"),
        ("anonymize", "global_risk=0.01,k=2", ("--k", "3"), "give each target once"),
        ("report", "delta_presence=-1", (), "delta_presence"),
    ],
)
def test_bad_targets_exit_2(
    capsys: pytest.CaptureFixture[str],
    testdata_path: Path,
    tmp_path: Path,
    command: str,
    targets: str,
    extra: tuple[str, ...],
    message: str,
) -> None:
    args = [command, str(testdata_path), "--qi", KEYS, "--targets", targets, *extra]
    if command == "report":
        args += ["-o", str(tmp_path / "report.html")]
    code, _, err = run(capsys, *args)
    assert code == 2
    assert message in err


def test_report_fix_meets_global_risk(capsys: pytest.CaptureFixture[str], testdata_path: Path, tmp_path: Path) -> None:
    code, out, err = run(
        capsys,
        "report",
        str(testdata_path),
        "--qi",
        KEYS,
        "--weights",
        "sampling_weight",
        "--targets",
        "global_risk=0.001",
        "--fix",
        "least-lossy",
        "-o",
        str(tmp_path / "report.html"),
    )
    assert code == 0, err
    assert "global_risk ≤ 0.001" in out + err


def test_recipe_of_a_release_target_fix_replays(
    capsys: pytest.CaptureFixture[str], testdata_path: Path, tmp_path: Path
) -> None:
    first, recipe, second = tmp_path / "a.csv", tmp_path / "recipe.json", tmp_path / "b.csv"
    base = ("anonymize", str(testdata_path))
    code, _, err = run(
        capsys,
        *base,
        "--qi",
        KEYS,
        "--weights",
        "sampling_weight",
        "--targets",
        "global_risk=0.001",
        "-o",
        str(first),
        "--save-recipe",
        str(recipe),
    )
    assert code == 0, err
    params = json.loads(recipe.read_text())["steps"][0]["params"]
    assert params["suppress"]["global_risk"] == 0.001 and params["weights"] == "sampling_weight"
    code, _, err = run(capsys, *base, "--recipe", str(recipe), "-o", str(second))
    assert code == 0, err
    assert first.read_bytes() == second.read_bytes()
    # out of core, the records' weights are not in the aggregate: refused, not judged without them
    code, _, err = run(capsys, *base, "--recipe", str(recipe), "-o", str(tmp_path / "c.csv"), "--engine", "duckdb")
    assert code == 2 and "global and population targets" in err


def test_anonymize_household_risk(capsys: pytest.CaptureFixture[str], testdata_path: Path, tmp_path: Path) -> None:
    output = tmp_path / "released.csv"
    base = ["anonymize", str(testdata_path), "--qi", KEYS, "--weights", "sampling_weight"]
    code, _, err = run(capsys, *base, "--targets", "household_risk=0.002")
    assert code == 2 and "household_risk needs the household" in err
    code, out, err = run(
        capsys, *base, "--household", "ori_hid", "--targets", "household_risk=0.002", "-o", str(output), "--json"
    )
    assert code == 0, err
    payload = json.loads(out)
    (check,) = [c for c in payload["verdict"]["checks"] if c["target"] == "household_risk"]
    assert check["passed"] and 0 < check["achieved"] <= 0.002
    # the oracle: the household risk of the table written, from its own diagnosis
    released = read_table(output)
    found = diagnose(released, KEYS.split(","), weights="sampling_weight")
    assert found.individual_risk is not None and found.classes.record_class is not None
    codes = pd.factorize(released["ori_hid"])[0]
    assert household_risk(found.individual_risk, codes, found.classes.record_class).global_risk == pytest.approx(
        check["achieved"], rel=1e-12
    )
