"""``privdash anonymize --estimate``: the steward's estimates before and after the fix, checked against the core
on the written output."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from privdash.cli import main
from privdash.data.tables import read_table


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture()
def testdata(data_dir: Path) -> Path:
    return data_dir / "sdcmicro_testdata" / "testdata.csv"


def test_json_estimates_match_the_published_table(
    capsys: pytest.CaptureFixture[str], testdata: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out.csv"
    code, stdout, err = run(
        capsys,
        "anonymize", str(testdata), "--qi", "age,sex,urbrur", "--k", "3", "--max-suppression", "0.02", "-o", str(out),
        "--json", "--estimate", "mean:income by sex", "--estimate", "coef:income~age+C(sex)",
        "--weights", "sampling_weight",
    )  # fmt: skip
    assert code == 0, err
    payload = json.loads(stdout)
    means, coef = payload["estimates"]
    assert means["estimate"] == "mean:income by sex" and means["weights"] == "sampling_weight"
    original, published = read_table(testdata), read_table(out)
    for row in means["rows"]:
        sex = int(row["group"].split(" = ")[1])
        for frame, side in ((original, "before"), (published, "after")):
            chosen = frame[frame["sex"] == sex]
            expected = np.average(chosen["income"], weights=chosen["sampling_weight"])
            assert row[side]["value"] == pytest.approx(expected)
            assert row[side]["low"] < row[side]["value"] < row[side]["high"]
        assert 0 <= row["overlap"] <= 1
    assert [row["term"] for row in coef["rows"]] == [
        "coefficient of intercept",
        "coefficient of age",
        "coefficient of sex = 2",
    ]
    assert any("midpoint" in note for note in coef["notes"])  # age is published as intervals


def test_text_output_and_recipe(capsys: pytest.CaptureFixture[str], testdata: Path, tmp_path: Path) -> None:
    recipe = tmp_path / "recipe.json"
    code, stdout, err = run(
        capsys, "anonymize", str(testdata), "--qi", "age,sex", "--k", "3", "--save-recipe", str(recipe),
        "--estimate", "share:urbrur=1 by sex",
    )  # fmt: skip
    assert code == 0, err
    assert "Estimates before and after (95% intervals, unweighted" in stdout
    assert "share of urbrur = 1 | sex = 1" in stdout
    code, stdout, err = run(
        capsys, "anonymize", str(testdata), "--recipe", str(recipe), "--json", "--estimate", "mean:age",
    )  # fmt: skip
    assert code == 0, err
    (estimate,) = json.loads(stdout)["estimates"]
    assert estimate["rows"][0]["after"]["value"] != estimate["rows"][0]["before"]["value"]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--estimate", "median:income"], "Unknown estimate"),
        (["--estimate", "mean:nope"], "nope"),
        (["--estimate", "coef:income"], "coef:outcome~x1+x2"),
        (["--weights", "sampling_weight"], "add at least one --estimate"),
        (["--estimate", "mean:income", "--weights", "nope"], "nope"),
    ],
)
def test_bad_estimates_exit_2(
    capsys: pytest.CaptureFixture[str], testdata: Path, extra: list[str], message: str
) -> None:
    code, _stdout, err = run(capsys, "anonymize", str(testdata), "--qi", "age,sex", *extra)
    assert code == 2
    assert message in err
