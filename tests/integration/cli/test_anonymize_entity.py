"""``privdash anonymize --entity``: the search judged on people (output, JSON, refused combinations)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from privdash.cli import main
from privdash.data.tables import read_table
from privdash.measure.diagnose import diagnose


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture()
def wards(tmp_path: Path) -> Path:
    # Person 1 visits x twice; 2 and 12 visit {x, z}; 3 and 13 {y, z}; 11 and 14 {x, y}. Every ward has at least
    # two rows, so the rows are 2-anonymous as they are; on people, person 1 is unique at level 0.
    path = tmp_path / "wards.csv"
    frame = pd.DataFrame(
        {
            "pid": [1, 1, 2, 2, 3, 3, 11, 11, 12, 12, 13, 13, 14, 14],
            "ward": ["x", "x", "x", "z", "y", "z", "x", "y", "x", "z", "y", "z", "x", "y"],
        }
    )
    frame.to_csv(path, index=False)
    (tmp_path / "hierarchies").mkdir()
    pd.DataFrame([["x", "xy", "*"], ["y", "xy", "*"], ["z", "z", "*"]]).to_csv(
        tmp_path / "hierarchies" / "ward.csv", index=False, header=False, sep=";"
    )
    return path


def test_people_search_writes_whole_people(capsys: pytest.CaptureFixture[str], wards: Path, tmp_path: Path) -> None:
    out_path = tmp_path / "out.csv"
    args = ["anonymize", str(wards), "--qi", "ward", "--hierarchies", str(tmp_path / "hierarchies"), "--k", "2"]
    code, out, _ = run(capsys, *args, "--entity", "pid", "--max-suppression", "0.2", "-o", str(out_path))
    assert code == 0, out
    assert "14 rows of 7 people" in out and "Suppressed: 1 people (2 rows)" in out
    published = read_table(out_path)
    # Level 0 with person 1 removed (both rows) loses 2/14 = 0.14; level 1 (x, y -> xy) loses 10 x 0.5 / 14 = 0.36.
    assert sorted(set(published["pid"])) == [2, 3, 11, 12, 13, 14] and len(published) == 12
    assert published["ward"].tolist() == ["x", "z", "y", "z", "x", "y", "x", "z", "y", "z", "x", "y"]
    assert diagnose(published, ["ward"], entity="pid").k == 2
    code, out, _ = run(capsys, *args, "--entity", "pid", "--max-suppression", "0", "--json")
    result = json.loads(out)
    assert code == 0 and result["levels"] == {"ward": 1} and result["people_suppressed"] == 0 and result["k"] == 3
    assert result["entity"] == "pid" and result["people"] == 7 and result["rows"] == 14
    # Counted in rows, the same table needs nothing.
    code, out, _ = run(capsys, *args, "--max-suppression", "0", "--json")
    assert code == 0 and json.loads(out)["levels"] == {"ward": 0}


def test_refused_combinations_exit_2(capsys: pytest.CaptureFixture[str], wards: Path, tmp_path: Path) -> None:
    base = ["anonymize", str(wards), "--qi", "ward", "--hierarchies", str(tmp_path / "hierarchies")]
    cases = [
        (["--entity", "pid", "--solutions", "2"], "does not combine with --solutions"),
        (["--entity", "pid", "--recoding", "local"], "does not combine with --recoding local"),
        (["--entity", "pid", "--engine", "duckdb", "-o", str(tmp_path / "o.csv")], "use --engine pandas"),
        (["--entity-key", "multiset"], "name the person id with --entity"),
        (["--entity", "nobody"], "nobody"),
        (["--entity", "pid", "--k", "50", "--max-suppression", "0"], "on people"),
    ]
    for extra, message in cases:
        code, _, err = run(capsys, *base, *extra)
        assert code == 2, (extra, err)
        assert message in err, (extra, err)


def test_saved_recipe_removes_the_same_people(capsys: pytest.CaptureFixture[str], wards: Path, tmp_path: Path) -> None:
    recipe, first, second = tmp_path / "recipe.json", tmp_path / "first.csv", tmp_path / "second.csv"
    args = ["anonymize", str(wards), "--qi", "ward", "--hierarchies", str(tmp_path / "hierarchies"), "--k", "2"]
    code, out, _ = run(capsys, *args, "--entity", "pid", "--max-suppression", "0.2", "-o", str(first),
                       "--save-recipe", str(recipe))  # fmt: skip
    assert code == 0 and "Saved the recipe" in out
    step = json.loads(recipe.read_text())["steps"][0]
    assert step["params"]["entity"] == {"column": "pid", "key": "set"} and step["params"]["suppress"]["k"] == 2
    code, _, err = run(capsys, "anonymize", "--recipe", str(recipe), str(wards), "-o", str(second))
    assert code == 0, err
    pd.testing.assert_frame_equal(read_table(first), read_table(second))
    code, _, err = run(capsys, "anonymize", "--recipe", str(recipe), str(wards), "-o", str(tmp_path / "third.csv"),
                       "--engine", "duckdb")  # fmt: skip
    assert code == 2 and "suppresses whole people" in err


def test_entity_refuses_release_targets_it_cannot_judge_on_people(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    source = tmp_path / "visits.csv"
    pd.DataFrame({"pid": [1, 1, 2, 3, 3, 4], "age": [30, 31, 30, 40, 41, 40], "sex": list("FFMMMF")}).to_csv(
        source, index=False
    )
    for extra in (["--targets", "k=2,average_risk=0.5"], ["--household", "sex"], ["--population-size", "100"]):
        code = main(["anonymize", str(source), "--qi", "age,sex", "--entity", "pid", *extra])
        err = capsys.readouterr().err
        assert code == 2, extra
        assert "--entity" in err and "does not combine" in err, err
