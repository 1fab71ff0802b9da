"""``privdash anonymize --recoding local``: the published table checked by the core's diagnosis, its recipe re-applied,
and the options it refuses."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from privdash.cli import main
from privdash.data.tables import read_table
from privdash.measure.classes import equivalence_classes
from privdash.transform.hierarchy import load_hierarchies
from privdash.utility.estimates import compare_estimates
from privdash.utility.metrics import information_loss

QIS = "sex,age,race,marital-status,education,workclass"


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture()
def sample(data_dir: Path, tmp_path: Path) -> tuple[Path, Path]:
    """3,000 rows of Adult (a quick search) and ARX's hierarchies."""
    table = read_table(data_dir / "arx_adult" / "adult.csv").head(3000)
    path = tmp_path / "adult.csv"
    table.to_csv(path, index=False)
    return path, data_dir / "arx_adult" / "hierarchies"


def test_local_recoding_json_output_and_recipe(
    capsys: pytest.CaptureFixture[str], sample: tuple[Path, Path], tmp_path: Path
) -> None:
    source, hierarchies = sample
    out, recipe = tmp_path / "out.csv", tmp_path / "recipe.json"
    code, stdout, err = run(
        capsys,
        "anonymize", str(source), "--qi", QIS, "--hierarchies", str(hierarchies), "--k", "5",
        "--max-suppression", "0.05", "--recoding", "local", "--json", "-o", str(out), "--save-recipe", str(recipe),
    )  # fmt: skip
    assert code == 0, err
    payload = json.loads(stdout)
    qis = QIS.split(",")
    assert payload["recoding"] == "local" and payload["metric"] == "loss"
    assert payload["loss"] < payload["global_loss"] and payload["suppressed"] <= 150
    assert any(len(levels) > 1 for levels in payload["levels"].values())  # mixed levels in some column
    original = read_table(source)
    published = read_table(out)
    classes = equivalence_classes(published, qis)
    assert classes.k == payload["k"] >= 5 and classes.n_classes == payload["classes"]
    assert len(published) == len(original) - payload["suppressed"]
    # Nothing suppressed here, so the rows line up: the loss measured on the file is the one reported.
    assert payload["suppressed"] == 0
    measured = information_loss(original, published, load_hierarchies(hierarchies, qis), quasi_identifiers=qis)
    assert measured.loss == pytest.approx(payload["loss"]) == pytest.approx(payload["metrics"]["loss"])
    # The recipe re-applied to the same file gives the same table.
    again = tmp_path / "again.csv"
    code, stdout, err = run(capsys, "anonymize", "--recipe", str(recipe), str(source), "-o", str(again), "--json")
    assert code == 0, err
    assert json.loads(stdout)["steps"][0]["kind"] == "local_recoding"
    pd.testing.assert_frame_equal(read_table(again), published)


def test_text_output(capsys: pytest.CaptureFixture[str], sample: tuple[Path, Path]) -> None:
    source, hierarchies = sample
    code, stdout, err = run(
        capsys, "anonymize", str(source), "--qi", "sex,age,race", "--hierarchies", str(hierarchies), "--k", "10",
        "--recoding", "local",
    )  # fmt: skip
    assert code == 0, err
    assert "local recoding" in stdout and "records per level" in stdout and "global optimum" in stdout


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--search", "exact"], "drop --search"),
        (["--solutions", "3"], "drop --solutions"),
        (["--engine", "duckdb"], "--engine pandas"),
    ],
)
def test_refused_combinations(
    capsys: pytest.CaptureFixture[str], sample: tuple[Path, Path], extra: list[str], message: str
) -> None:
    source, hierarchies = sample
    code, _, err = run(
        capsys, "anonymize", str(source), "--qi", "sex,age", "--hierarchies", str(hierarchies), "--recoding", "local",
        *extra,
    )  # fmt: skip
    assert code == 2 and message in err


def test_local_recoding_with_the_stewards_estimates(
    capsys: pytest.CaptureFixture[str], sample: tuple[Path, Path], tmp_path: Path
) -> None:
    """--recoding local --estimate: the estimates on the published table, as compare_estimates gives them."""
    source, hierarchies = sample
    out = tmp_path / "out.csv"
    base = ["anonymize", str(source), "--qi", QIS, "--hierarchies", str(hierarchies), "--k", "5", "--recoding", "local"]
    code, stdout, err = run(capsys, *base, "--estimate", "share:sex", "--json", "-o", str(out))
    assert code == 0, err
    estimates = json.loads(stdout)["estimates"]
    expected = compare_estimates(read_table(source), read_table(out), ["share:sex"])
    assert [e["rows"] for e in estimates] == [[r.to_dict() for r in c.rows] for c in expected]
    code, stdout, err = run(capsys, *base, "--estimate", "share:sex")
    assert code == 0, err
    assert "Estimates before and after" in stdout and "share of sex = Female" in stdout
