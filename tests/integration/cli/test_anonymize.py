from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from privdash.cli import main
from privdash.data.tables import read_table
from privdash.measure.classes import equivalence_classes
from privdash.transform.hierarchy import load_hierarchies

ADULT_QIS = "sex,age,race,marital-status,education,native-country,workclass,salary-class"


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture()
def adult_paths(data_dir: Path) -> tuple[Path, Path]:
    return data_dir / "arx_adult" / "adult.csv", data_dir / "arx_adult" / "hierarchies"


def test_json_output_checked_by_the_core(
    capsys: pytest.CaptureFixture[str], adult_paths: tuple[Path, Path], tmp_path: Path
) -> None:
    source, hierarchies = adult_paths
    out = tmp_path / "out.csv"
    code, stdout, err = run(
        capsys,
        "anonymize", str(source), "--qi", ADULT_QIS, "--hierarchies", str(hierarchies),
        "--k", "5", "--suppression", "0.02", "--metric", "loss", "--json", "-o", str(out),
    )  # fmt: skip
    assert code == 0, err
    payload = json.loads(stdout)
    qis = ADULT_QIS.split(",")
    assert list(payload["levels"]) == qis and all(isinstance(v, int) for v in payload["levels"].values())
    assert payload["metric"] == "loss" and payload["k"] >= 5
    assert 0 < payload["suppressed"] <= 603
    original = read_table(source)
    published = read_table(out)
    assert len(published) == len(original) - payload["suppressed"]
    classes = equivalence_classes(published, qis)
    assert classes.k == payload["k"] >= 5 and classes.n_classes == payload["classes"]
    assert payload["metrics"]["loss"] == pytest.approx(payload["loss"])
    assert payload["nodes_checked"] <= payload["lattice_size"] == 4320
    # Every published value is a label of its column's hierarchy at the reported level.
    hierarchy_map = load_hierarchies(hierarchies, qis)
    for column in qis:
        level = payload["levels"][column]
        codes = hierarchy_map[column].codes_for(published[column], level, strict=False)
        assert (codes >= 0).all(), column


def test_text_output(capsys: pytest.CaptureFixture[str], adult_paths: tuple[Path, Path]) -> None:
    source, hierarchies = adult_paths
    code, stdout, err = run(
        capsys, "anonymize", str(source), "--qi", "sex,age,race", "--hierarchies", str(hierarchies), "--k", "10",
        "--max-suppression", "0",
    )  # fmt: skip
    assert code == 0, err
    assert "Targets: k=10; suppression limit 0.00% (0 records); metric loss" in stdout
    assert "Suppressed records: 0 (0.00%)" in stdout
    assert "No output" not in stdout and "Searched" in stdout
    assert "age" in stdout and "->" in stdout


def test_recipe_round_trip(
    capsys: pytest.CaptureFixture[str], adult_paths: tuple[Path, Path], data_dir: Path, tmp_path: Path
) -> None:
    source, hierarchies = adult_paths
    first, recipe = tmp_path / "first.parquet", tmp_path / "recipe.json"
    code, _, err = run(
        capsys,
        "anonymize", str(source), "--qi", ADULT_QIS, "--hierarchies", str(hierarchies),
        "--k", "5", "--suppression", "0.02", "-o", str(first), "--save-recipe", str(recipe),
    )  # fmt: skip
    assert code == 0, err
    saved = json.loads(recipe.read_text())
    assert saved["steps"][0]["kind"] == "generalize" and saved["steps"][0]["params"]["suppress"]["k"] == 5
    again = tmp_path / "again.parquet"
    code, stdout, err = run(capsys, "anonymize", str(source), "--recipe", str(recipe), "-o", str(again), "--json")
    assert code == 0, err
    pd.testing.assert_frame_equal(pd.read_parquet(first), pd.read_parquet(again))
    assert json.loads(stdout)["rows_out"] == len(pd.read_parquet(first))
    # New data with the same schema: the 10% subset.
    subset = data_dir / "arx_adult" / "adult_subset.csv"
    code, stdout, err = run(capsys, "anonymize", str(subset), "--recipe", str(recipe))
    assert code == 0, err
    assert "Applied 1 step(s)" in stdout and "No output written" in stdout


def test_errors_exit_2(
    capsys: pytest.CaptureFixture[str], adult_paths: tuple[Path, Path], data_dir: Path, tmp_path: Path
) -> None:
    source = data_dir / "arx_adult" / "adult_subset.csv"
    hierarchies = adult_paths[1]
    copy = tmp_path / "adult.csv"
    shutil.copy(source, copy)
    cases = [
        (["--hierarchies", str(hierarchies)], "Give the quasi-identifiers with --qi"),
        (["--qi", "sex,income"], "Unknown quasi-identifier column(s): income"),
        (["--qi", "sex,income", "--hierarchies", str(hierarchies)], "No hierarchy file for 'income'"),
        (["--qi", "sex", "--hierarchies", str(hierarchies), "--metric", "speed"], "Unknown metric 'speed'"),
        (["--qi", "sex", "--hierarchies", str(hierarchies), "--k", "100000"], "No generalization meets k=100000"),
        (["--qi", "sex", "--hierarchies", str(hierarchies), "--l", "2"], "need at least one sensitive"),
        (["--qi", "sex", "--hierarchies", str(hierarchies), "--suppression", "2"], "suppression must lie in"),
        (["--qi", "sex", "--hierarchies", str(hierarchies), "-o", str(copy)], "Refusing to overwrite the input"),
        (["--recipe", str(tmp_path / "none.json")], "Cannot read the recipe"),
        (["--recipe", str(copy), "--qi", "sex"], "cannot be combined with --qi"),
    ]
    for extra, message in cases:
        code, _, err = run(capsys, "anonymize", str(copy), *extra)
        assert code == 2, (extra, err)
        assert message in err, (extra, err)
        assert "Traceback" not in err
    assert copy.read_bytes() == source.read_bytes()


def test_config_job_runs_microaggregation(capsys: pytest.CaptureFixture[str], data_dir: Path, tmp_path: Path) -> None:
    source = data_dir / "sdcmicro_testdata" / "testdata.csv"
    shutil.copy(source, tmp_path / "in.csv")
    contract = {
        "field_metadata": [
            {"field_name": "sex", "personal_data_config": {"is_quasi_id": True}, "statistical_data_type": "NOMINAL"},
            {"field_name": "age", "personal_data_config": {"is_quasi_id": True}, "statistical_data_type": "NUMERICAL"},
            {
                "field_name": "relat",
                "personal_data_config": {"is_quasi_id": True},
                "statistical_data_type": "ORDINAL",
                "ordinal_values": [1, 2, 3, 4, 5, 6, 7, 8, 9],
            },
        ]
    }
    (tmp_path / "contract.json").write_text(json.dumps(contract))
    job = {
        "source": {"path": "in.csv"},
        "target": {"path": "out.csv"},
        "contract": "contract.json",
        "aggregation_config": {"minimum_k_anonymity": 3},
    }
    (tmp_path / "job.json").write_text(json.dumps(job))
    code, out, err = run(capsys, "anonymize", "--config", str(tmp_path / "job.json"), "--json")
    assert code == 0, err
    payload = json.loads(out)
    assert payload["k_requested"] == 3 and payload["k_achieved"] >= 3
    original = read_table(tmp_path / "in.csv")
    published = read_table(tmp_path / "out.csv")
    assert list(published.columns) == list(original.columns) and len(published) == len(original)
    assert payload["rows"] == len(original)
    assert equivalence_classes(published, ["sex", "age", "relat"]).k >= 3
    assert (tmp_path / "in.csv").read_bytes() == source.read_bytes()

    code, out, _ = run(capsys, "anonymize", "--config", str(tmp_path / "job.json"))
    assert code == 0 and "k = " in out and "out.csv" in out

    code, _, err = run(capsys, "anonymize", str(tmp_path / "in.csv"), "--config", str(tmp_path / "job.json"))
    assert code == 2 and "drop FILE" in err
    code, _, err = run(capsys, "anonymize", "--config", str(tmp_path / "missing.json"))
    assert code == 2 and "Job file not found" in err and "Traceback" not in err
    code, _, err = run(capsys, "anonymize")
    assert code == 2 and "--config job.json" in err


def test_output_cells_that_a_spreadsheet_would_run_are_escaped(
    capsys: pytest.CaptureFixture[str], adult_paths: tuple[Path, Path], tmp_path: Path
) -> None:
    source, hierarchies = adult_paths
    adult = read_table(source).head(400)
    payloads = ["=cmd|' /C calc'!A0", "@SUM(A1:A2)", '=HYPERLINK("http://127.0.0.1/x","y")', "+1", "-2+3"]
    adult["occupation"] = [payloads[i % len(payloads)] if i % 7 == 0 else "Sales" for i in range(len(adult))]
    table = tmp_path / "adult.csv"
    adult.to_csv(table, index=False)
    before = table.read_bytes()
    escaped, raw = tmp_path / "escaped.csv", tmp_path / "raw.csv"
    args = ["anonymize", str(table), "--qi", "sex,age", "--hierarchies", str(hierarchies), "--k", "2"]
    assert run(capsys, *args, "--max-suppression", "0.5", "-o", str(escaped))[0] == 0
    assert run(capsys, *args, "--suppression", "0.5", "--no-escape-formulas", "-o", str(raw))[0] == 0
    assert table.read_bytes() == before  # the input is never modified
    published = pd.read_csv(escaped, dtype=str, keep_default_na=False)
    risky = published["occupation"][published["occupation"] != "Sales"]
    assert len(risky) and all(value.startswith("'") for value in risky)
    assert {value[1:] for value in risky} <= set(payloads)
    assert published["age"].str.match(r"^[0-9'*]").all()  # generalized ages such as 30-39 are not formulas
    plain = pd.read_csv(raw, dtype=str, keep_default_na=False)
    assert set(plain["occupation"]) - {"Sales"} <= set(payloads)
