"""``privdash anonymize FILE --step 'TECHNIQUE NAME=VALUE ...'``: fix techniques applied in order, as the Fix page's
steps, from the technique descriptions; the recipe re-applies them."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from privdash.cli import main
from privdash.data.tables import read_table
from privdash.measure.classes import equivalence_classes


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture()
def testdata(data_dir: Path) -> Path:
    return data_dir / "sdcmicro_testdata" / "testdata.csv"


def test_steps_apply_in_order_and_their_recipe_reapplies_them(
    capsys: pytest.CaptureFixture[str], testdata: Path, tmp_path: Path
) -> None:
    out, recipe, again = tmp_path / "out.csv", tmp_path / "recipe.json", tmp_path / "again.csv"
    code, text, err = run(
        capsys,
        "anonymize",
        str(testdata),
        "--qi",
        "sex,urbrur,roof",
        "--step",
        "generalize column=age rule=intervals:10,20 level=1",
        "--step",
        "record_suppression k=3 max_suppression=5%",
        "--step",
        "add_noise columns=income share=0.1 seed=3",
        "-o",
        str(out),
        "--save-recipe",
        str(recipe),
        "--json",
    )
    assert code == 0, err
    payload = json.loads(text)
    assert [s["kind"] for s in payload["steps"]] == ["generalize", "record_suppression", "add_noise"]
    saved = json.loads(recipe.read_text(encoding="utf-8"))
    assert [s["kind"] for s in saved["steps"]] == ["generalize", "record_suppression", "add_noise"]
    assert saved["max_suppression"] == 0.05
    published = read_table(out)
    assert equivalence_classes(published, ["sex", "urbrur", "roof"]).k >= 3
    assert published["age"].nunique() < read_table(testdata)["age"].nunique() / 4  # ages in intervals of 10
    code, _, err = run(capsys, "anonymize", str(testdata), "--recipe", str(recipe), "-o", str(again))
    assert code == 0, err
    pd.testing.assert_frame_equal(read_table(again), published)


def test_old_names_help_and_bad_steps(capsys: pytest.CaptureFixture[str], testdata: Path) -> None:
    code, text, err = run(
        capsys, "anonymize", str(testdata), "--qi", "sex,urbrur", "--step", "suppress_records k=3", "--json"
    )
    assert code == 0, err
    assert [s["kind"] for s in json.loads(text)["steps"]] == ["record_suppression"]  # an old name, read as the new
    code, text, _ = run(capsys, "anonymize", str(testdata), "--step", "microaggregation help")
    assert code == 0 and "k: k (a whole number of at least 2; default 2)" in text and "decimals" in text
    code, _, err = run(capsys, "anonymize", str(testdata), "--qi", "sex", "--step", "record_suppression k=1")
    assert code == 2 and "k must be a whole number of at least 2, got 1" in err
    code, _, err = run(capsys, "anonymize", str(testdata), "--step", "blurring k=5")
    assert code == 2 and "Unknown technique 'blurring'" in err and "record_suppression" in err
    code, _, err = run(capsys, "anonymize", str(testdata), "--step", "local_suppression depth=3")
    assert code == 2 and "has no setting 'depth'; its settings: k, importance" in err
    code, _, err = run(capsys, "anonymize", str(testdata), "--qi", "nope", "--step", "local_suppression")
    assert code == 2 and "nope" in err
