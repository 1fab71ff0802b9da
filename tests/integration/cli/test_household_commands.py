"""``--household`` on ``privdash report`` (the household table in the PDF and HTML) and ``privdash anonymize`` (the
household risk before and after the fix, in memory and out of core), and their bad input (exit 2)."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from privdash.cli import main
from privdash.data.tables import read_table
from privdash.measure.diagnose import diagnose
from tests.unit.core.measure.test_household import REFERENCE, RTOL

FIVE = "urbrur,roof,walls,water,sex"


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture(scope="module")
def testdata_path(data_dir: Path) -> Path:
    return data_dir / "sdcmicro_testdata" / "testdata.csv"


def test_report_pdf_has_the_household_table(
    capsys: pytest.CaptureFixture[str], testdata_path: Path, tmp_path: Path
) -> None:
    ref = REFERENCE["five keys, weighted (measure_risk example)"]
    out = tmp_path / "report.pdf"
    code, _, err = run(
        capsys,
        "report",
        str(testdata_path),
        "-o",
        str(out),
        "--qi",
        FIVE,
        "--weights",
        "sampling_weight",
        "--household",
        "ori_hid",
    )
    assert code == 0, err
    text = subprocess.run(["pdftotext", "-layout", str(out), "-"], capture_output=True, text=True, check=True).stdout
    flat = re.sub(r"\s+", " ", text)
    assert "Household risk" in flat and "Households are given by the column ori_hid" in flat
    assert f"expected re-identifications {ref['hier_risk_ER']:.2f}" in flat
    assert f"global risk {100 * ref['hier_risk']:.3f}%" in flat
    assert f"highest household risk {100 * ref['highest']:.2f}%" in flat
    assert "households 1,000" in flat
    assert "--household ori_hid" in flat  # the command line the report was made with


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--household", "nope"], "no column 'nope'"),
        (["--household", "roof"], "cannot also be a quasi-identifier"),
        (["--household", "sampling_weight", "--weights", "sampling_weight"], "cannot also be a weight column"),
    ],
)
def test_report_bad_household_exits_2(
    capsys: pytest.CaptureFixture[str], testdata_path: Path, tmp_path: Path, extra: list[str], message: str
) -> None:
    out = tmp_path / "report.html"
    code, _, err = run(capsys, "report", str(testdata_path), "-o", str(out), "--qi", FIVE, *extra)
    assert code == 2 and message in err and not out.exists()


def test_anonymize_reports_household_risk_before_and_after(
    capsys: pytest.CaptureFixture[str], testdata_path: Path, tmp_path: Path
) -> None:
    published = tmp_path / "published.csv"
    recipe = tmp_path / "recipe.json"
    code, out, err = run(
        capsys,
        "anonymize",
        str(testdata_path),
        "--qi",
        FIVE,
        "--k",
        "3",
        "--household",
        "ori_hid",
        "-o",
        str(published),
        "--save-recipe",
        str(recipe),
        "--json",
    )
    assert code == 0, err
    households = json.loads(out)["household_risk"]
    assert households["column"] == "ori_hid"
    before = diagnose(read_table(testdata_path), FIVE.split(","), household="ori_hid").household_risk
    after = diagnose(read_table(published), FIVE.split(","), household="ori_hid").household_risk
    assert before is not None and after is not None
    assert households["before"] == before.to_dict() and households["after"] == after.to_dict()
    assert households["after"]["expected_reidentifications"] < households["before"]["expected_reidentifications"]
    # the text output: a before/after table
    code, out, err = run(capsys, "anonymize", str(testdata_path), "--qi", FIVE, "--k", "3", "--household", "ori_hid")
    assert code == 0, err
    assert "Household risk (households in 'ori_hid'" in out
    assert re.search(r"^before\s+1,000\s", out, flags=re.M) and re.search(r"^after\s", out, flags=re.M)
    # the recipe re-applied, in memory and streamed by DuckDB, gives the same numbers
    for engine, output in (("pandas", tmp_path / "again.csv"), ("duckdb", tmp_path / "again.parquet")):
        code, out, err = run(
            capsys,
            "anonymize",
            str(testdata_path),
            "--recipe",
            str(recipe),
            "--qi",
            FIVE,
            "--household",
            "ori_hid",
            "--engine",
            engine,
            "-o",
            str(output),
            "--json",
        )
        assert code == 0, err
        assert json.loads(out)["household_risk"] == households, engine


def test_anonymize_weighted_household_risk_is_sdcmicros(
    capsys: pytest.CaptureFixture[str], testdata_path: Path
) -> None:
    ref = REFERENCE["five keys, weighted (measure_risk example)"]
    code, out, err = run(
        capsys,
        "anonymize",
        str(testdata_path),
        "--qi",
        FIVE,
        "--household",
        "ori_hid",
        "--weights",
        "sampling_weight",
        "--estimate",
        "mean:income",
        "--json",
    )
    assert code == 0, err
    before = json.loads(out)["household_risk"]["before"]
    assert before["weighted"] is True
    assert before["expected_reidentifications"] == pytest.approx(ref["hier_risk_ER"], rel=RTOL)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--qi", FIVE, "--household", "nope"], "no column 'nope'"),
        (["--qi", FIVE, "--household", "roof"], "cannot also be a quasi-identifier"),
        (["--qi", FIVE, "--household", "income", "--sensitive", "income"], "cannot also be a sensitive attribute"),
        (["--recipe", "RECIPE", "--household", "ori_hid"], "--qi"),
    ],
)
def test_anonymize_bad_household_exits_2(
    capsys: pytest.CaptureFixture[str], testdata_path: Path, tmp_path: Path, extra: list[str], message: str
) -> None:
    recipe = tmp_path / "recipe.json"
    recipe.write_text('{"privdash_recipe": 1, "steps": []}\n', encoding="utf-8")
    arguments = [str(recipe) if part == "RECIPE" else part for part in extra]
    code, _, err = run(capsys, "anonymize", str(testdata_path), *arguments)
    assert code == 2 and message in err and "Traceback" not in err


def test_report_html_has_the_model_based_risk_of_the_released_table(
    capsys: pytest.CaptureFixture[str], testdata_path: Path, tmp_path: Path
) -> None:
    out = tmp_path / "report.html"
    args = ["report", str(testdata_path), "-o", str(out), "--qi", FIVE, "--weights", "sampling_weight"]
    code, _, err = run(capsys, *args, "--model-risk", "ipf,default")
    assert code == 0, err
    flat = re.sub(r"<[^>]+>", " ", out.read_text(encoding="utf-8"))
    flat = re.sub(r"\s+", " ", flat)
    expected = diagnose(
        read_table(testdata_path), FIVE.split(","), weights="sampling_weight", model_risk=["IPF", "default"]
    )
    assert "Model-based risk" in flat
    for method in ("IPF", "default"):
        model = expected.model_risk[method]
        assert f"{method} {model.model} {100 * model.risk1:.2f}% {100 * model.risk2:.2f}%" in flat
    code, _, err = run(capsys, *args, "--model-risk", "poisson")
    assert code == 2 and "poisson" in err and "weightedLLM" in err
