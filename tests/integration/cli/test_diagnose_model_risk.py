"""``privdash diagnose --model-risk``: sdcMicro's model-based risk in the text and JSON output, and its bad inputs.

Reference values: sdcMicro's R/modRisk.R run by scripts/sdcmicro_modrisk_reference.R (see
tests/unit/core/measure/test_model_risk.py).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from privdash.cli import main
from privdash.data.tables import read_table
from privdash.measure.diagnose import diagnose

KEYS = "urbrur,roof,walls,water,electcon,relat,sex"
R_TESTDATA = {
    "default": (0.2249330480973577, 0.28042216626930527),
    "CE": (0.22076640073977957, 0.2775107655086067),
    "PML": (0.2249330480973577, 0.28042216626930527),
    "weightedLLM": (0.2270992437481581, 0.28425126614730128),
    "IPF": (0.22493304810014997, 0.28042216627070216),
}
R_INTERACTION_CE = (0.22804828273665226, 0.28393246920007043)  # + water:electcon


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture(scope="module")
def testdata(data_dir: Path) -> str:
    return str(data_dir / "sdcmicro_testdata" / "testdata.csv")


def test_json_every_method(capsys: pytest.CaptureFixture[str], testdata: str) -> None:
    code, out, err = run(
        capsys,
        "diagnose",
        testdata,
        "--qi",
        KEYS,
        "--weights",
        "sampling_weight",
        "--model-risk",
        "default,CE,PML,weightedLLM,IPF",
        "--json",
    )
    assert code == 0, err
    payload = json.loads(out)["model_risk"]
    assert list(payload) == list(R_TESTDATA)
    for method, (r1, r2) in R_TESTDATA.items():
        entry = payload[method]
        assert entry["risk1"] == pytest.approx(r1, rel=1e-6)
        assert entry["risk2"] == pytest.approx(r2, rel=1e-6)
        assert entry["risk1_percent"] == pytest.approx(100 * r1, rel=1e-6)
        assert entry["risk2_percent"] == pytest.approx(100 * r2, rel=1e-6)
        assert entry["bound"] is None  # inf is written as null
        assert entry["model"].count("+") >= 6 and entry["risk_cells"] == 412


def test_text_table_and_interactions(capsys: pytest.CaptureFixture[str], testdata: str) -> None:
    code, out, err = run(
        capsys,
        "diagnose",
        testdata,
        "--qi",
        KEYS,
        "--weights",
        "sampling_weight",
        "--model-risk",
        "ce",
        "--model-interactions",
        "water:electcon",
    )
    assert code == 0, err
    assert "Model-based risk (sdcMicro modRisk" in out
    line = next(line for line in out.splitlines() if line.startswith("CE "))
    assert f"{R_INTERACTION_CE[0]:.4f}" in line and f"{R_INTERACTION_CE[1]:.4f}" in line
    assert "water:electcon" in line
    code, out, err = run(capsys, "diagnose", testdata, "--qi", KEYS, "--model-risk", "IPF", "--json")
    assert code == 0, err
    ipf = json.loads(out)["model_risk"]["IPF"]
    assert ipf["risk2"] is None and ipf["warnings"][0].startswith("No sampling weights")
    # Without --model-risk the section is not there.
    code, out, _ = run(capsys, "diagnose", testdata, "--qi", KEYS)
    assert code == 0 and "Model-based risk" not in out


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--model-risk", "default,loglin"], "choose among default, CE, PML, weightedLLM, IPF"),
        (["--model-risk", "IPF", "--model-interactions", "water:electcon"], "IPF fits the main effects only"),
        (["--model-risk", "default", "--model-interactions", "water-electcon"], "pairs of QIs such as sex:age"),
        (["--model-risk", "default", "--model-interactions", "water:age"], "not a key variable"),
    ],
)
def test_bad_input_exits_2(
    capsys: pytest.CaptureFixture[str], testdata: str, arguments: list[str], message: str
) -> None:
    code, _, err = run(capsys, "diagnose", testdata, "--qi", KEYS, *arguments)
    assert code == 2
    assert message in err


@pytest.mark.parametrize("engine", ["pandas", "duckdb"])
def test_record_risk_gives_each_sample_unique_its_probability_of_population_uniqueness(
    capsys: pytest.CaptureFixture[str], data_dir: Path, tmp_path: Path, engine: str
) -> None:
    source = data_dir / "sdcmicro_testdata" / "testdata.csv"
    keys = "urbrur,roof,walls,water,electcon,relat,sex"
    out = tmp_path / f"records-{engine}.csv"
    args = ["diagnose", str(source), "--qi", keys, "--weights", "sampling_weight", "--model-risk", "IPF,default"]
    assert main([*args, "--engine", engine, "--record-risk", str(out)]) == 0, capsys.readouterr().err
    written = read_table(out)
    result = diagnose(read_table(source), keys.split(","), weights="sampling_weight", model_risk=["IPF", "default"])
    for method in ("IPF", "default"):
        column = written[f"population_unique_{method}"]
        uniques = written["class_size"] == 1
        # every sample unique in a cell of the model has its probability; the other records none
        assert column[~uniques].isna().all() and column[uniques].notna().sum() == len(
            result.model_risk[method].sample_uniques
        )
        # the per-record values add up to sdcMicro's gr1 times the cells of its denominator
        model = result.model_risk[method]
        assert column.sum() == pytest.approx(model.risk1 * model.risk_cells, rel=1e-9)
        assert ((column[uniques] > 0) & (column[uniques] <= 1)).all()
