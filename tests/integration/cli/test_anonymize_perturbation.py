"""``privdash anonymize FILE --recipe R.json -o OUT`` with perturbative steps: the values are changed, the risk is
reported by record linkage and interval disclosure, and bad parameters stop the command before anything is written."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from privdash.cli import main
from privdash.data.tables import read_table
from privdash.measure.perturbed import perturbation_risk

NUMERIC = ["age", "expend", "income", "savings"]


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture()
def testdata(data_dir: Path) -> Path:
    return data_dir / "sdcmicro_testdata" / "testdata.csv"


def write_recipe(path: Path, *steps: dict) -> Path:
    path.write_text(json.dumps({"privdash_recipe": 1, "steps": list(steps)}), encoding="utf-8")
    return path


NOISE = {"kind": "add_noise", "params": {"columns": ["expend", "income"], "share": 0.1, "seed": 3}}
SWAP = {"kind": "rank_swap", "params": {"columns": ["age", "savings"], "p": 5, "seed": 4}}
PRAM = {"kind": "pram", "params": {"columns": ["roof"], "pd": 0.8, "alpha": 0.5, "seed": 5}}
SHUFFLE = {"kind": "shuffling", "params": {"columns": ["relat"], "quasi_identifiers": ["sex", "urbrur"], "seed": 6}}


def test_json_reports_the_perturbed_data_risk(
    capsys: pytest.CaptureFixture[str], testdata: Path, tmp_path: Path
) -> None:
    recipe = write_recipe(tmp_path / "r.json", NOISE, SWAP, PRAM, SHUFFLE)
    out = tmp_path / "out.csv"
    code, stdout, err = run(capsys, "anonymize", str(testdata), "--recipe", str(recipe), "-o", str(out), "--json")
    assert code == 0, err
    payload = json.loads(stdout)
    original, published = read_table(testdata), read_table(out)
    assert len(published) == len(original) == payload["rows_out"]
    for name in NUMERIC:
        assert not published[name].equals(original[name]), name
    assert sorted(published["age"]) == sorted(original["age"])  # swapped, not noisy
    risk = payload["perturbation_risk"]
    assert risk["columns"] == ["expend", "income", "age", "savings"]
    expected = perturbation_risk(original, published, risk["columns"])
    assert risk["linkage"] == pytest.approx(expected.linkage)
    assert risk["interval_disclosure"] == pytest.approx(expected.interval_disclosure)
    assert risk["il1s"] == pytest.approx(expected.il1s)
    assert 0 < risk["linkage"] < 1
    assert [s["kind"] for s in payload["steps"]] == ["add_noise", "rank_swap", "pram", "shuffling"]
    # The same recipe publishes the same values again.
    again = tmp_path / "again.csv"
    assert main(["anonymize", str(testdata), "--recipe", str(recipe), "-o", str(again)]) == 0
    pd.testing.assert_frame_equal(read_table(again), published)


def test_text_output_prints_linkage_instead_of_k(
    capsys: pytest.CaptureFixture[str], testdata: Path, tmp_path: Path
) -> None:
    recipe = write_recipe(tmp_path / "r.json", NOISE)
    code, stdout, err = run(capsys, "anonymize", str(testdata), "--recipe", str(recipe))
    assert code == 0, err
    # The seed undoes the noise for whoever holds it: the user is told to keep the recipe as a key.
    assert "holds the seed of add_noise" in err and "keep the recipe with the data owner" in err
    assert "class sizes and k do not measure its risk" in stdout
    assert "Record linkage:" in stdout and "Interval disclosure (sdcMicro dRisk, k = 0.05)" in stdout
    assert "IL1s" in stdout and "Smallest class" not in stdout


def test_categorical_steps_only_report_no_linkage(
    capsys: pytest.CaptureFixture[str], data_dir: Path, tmp_path: Path
) -> None:
    recipe = write_recipe(
        tmp_path / "r.json",
        {"kind": "pram", "params": {"columns": ["sex"], "matrix": {"Male": {"Male": 0.9, "Female": 0.1},
                                                                     "Female": {"Female": 1.0}}, "seed": 1}},
    )  # fmt: skip
    out = tmp_path / "out.csv"
    source = data_dir / "arx_adult" / "adult.csv"
    code, stdout, err = run(capsys, "anonymize", str(source), "--recipe", str(recipe), "-o", str(out), "--json")
    assert code == 0, err
    payload = json.loads(stdout)
    assert payload["perturbation_risk"] is None
    original, published = read_table(source), read_table(out)
    moved = (original["sex"] == "Male") & (published["sex"] == "Female")
    assert 0.08 < moved.sum() / (original["sex"] == "Male").sum() < 0.12
    assert ((original["sex"] == "Female") <= (published["sex"] == "Female")).all()


@pytest.mark.parametrize(
    ("step", "message"),
    [
        ({"kind": "add_noise", "params": {"columns": ["income"], "share": -0.5}}, "share must lie in [0, 100]"),
        ({"kind": "add_noise", "params": {"columns": ["region"], "share": 0.1}}, "'region' holds"),
        ({"kind": "rank_swap", "params": {"columns": ["income"], "p": 0}}, r"p must be a percentage in (0, 100]"),
        ({"kind": "rank_swap", "params": {"columns": ["income"], "p": 150}}, r"p must be a percentage in (0, 100]"),
        (
            {"kind": "pram", "params": {"columns": ["region"], "matrix": {"n": {"n": 0.5, "s": 0.4}, "s": {"s": 1}}}},
            "Row 'n' of the PRAM matrix sums to 0.9, not 1",
        ),
        (
            {"kind": "pram", "params": {"columns": ["region"], "matrix": {"n": {"n": 1}}}},
            "no row for the value(s) 's'",
        ),
    ],
)
def test_bad_parameters_exit_2_and_write_nothing(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, step: dict, message: str
) -> None:
    source = tmp_path / "people.csv"
    pd.DataFrame({"income": [10.0, 20.0, 30.0, 40.0], "region": ["n", "s", "n", "s"]}).to_csv(source, index=False)
    recipe = write_recipe(tmp_path / "r.json", step)
    out = tmp_path / "out.csv"
    code, _, err = run(capsys, "anonymize", str(source), "--recipe", str(recipe), "-o", str(out))
    assert code == 2
    assert message in err and "Traceback" not in err
    assert not out.exists()


def test_out_of_core_refuses_perturbative_steps(
    capsys: pytest.CaptureFixture[str], testdata: Path, tmp_path: Path
) -> None:
    recipe = write_recipe(tmp_path / "r.json", SWAP)
    out = tmp_path / "out.parquet"
    code, _, err = run(
        capsys, "anonymize", str(testdata), "--recipe", str(recipe), "-o", str(out), "--engine", "duckdb"
    )
    assert code == 2 and "rank_swap" in err
    assert not out.exists()
