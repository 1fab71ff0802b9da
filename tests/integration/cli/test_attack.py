"""``privdash attack``: the JSON report, hierarchies and recipes as the attacker's knowledge, and bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from dashboard.cli import main
from dashboard.core import Hierarchy, Recipe, generalize, write_arx_hierarchy

ORIGINAL = pd.DataFrame(
    {
        "region": ["Canada", "Canada", "Mexico", "Peru", "Peru", "Chile"],
        "age": [31, 35, 38, 52, 57, 44],
        "income": ["low", "high", "low", "high", "high", "low"],
    }
)
REGIONS = Hierarchy.from_rows(
    [["Canada", "North", "*"], ["Mexico", "North", "*"], ["Peru", "South", "*"], ["Chile", "South", "*"]]
)


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    paths = {"original": tmp_path / "original.csv", "released": tmp_path / "released.csv"}
    ORIGINAL.to_csv(paths["original"], index=False)
    # Regions to North/South and ages to decades: classes (North, 30-39) x3, (South, 50-59) x2, (South, 40-49).
    released = ORIGINAL.assign(
        region=REGIONS.generalize(ORIGINAL["region"], 1), age=["30-39", "30-39", "30-39", "50-59", "50-59", "40-49"]
    )
    released.to_csv(paths["released"], index=False)
    folder = tmp_path / "hierarchies"
    folder.mkdir()
    write_arx_hierarchy(REGIONS, folder / "region.csv")
    paths["hierarchies"] = folder
    return paths


def test_json_report_with_hierarchies(capsys: pytest.CaptureFixture[str], files: dict[str, Path]) -> None:
    code, out, err = run(
        capsys,
        "attack",
        str(files["original"]),
        str(files["released"]),
        "--qi",
        "region,age",
        "--sensitive",
        "income",
        "--hierarchies",
        str(files["hierarchies"]),
        "--json",
    )
    assert code == 0, err
    payload = json.loads(out)
    for attack in ("linkage", "singling_out", "inference"):
        part = payload[attack]
        assert {"success_rate", "ci_low", "ci_high", "baseline", "risk", "predicted"} <= set(part)
        assert 0 <= part["ci_low"] <= part["success_rate"] <= part["ci_high"] <= 1
    # Linkage: (North, 30-39) holds three people, 1/3 each; (South, 50-59) two, 1/2 each; (South, 40-49) one:
    # (1 + 1 + 1) / 6, the number of classes over the number of records.
    assert payload["linkage"]["success_rate"] == pytest.approx(3 / 6)
    assert payload["predicted"]["prosecutor_average"] == pytest.approx(3 / 6)
    # (South, 50-59) holds two people, (South, 40-49) one: one released record in six singles out.
    assert payload["singling_out"]["success_rate"] == pytest.approx(1 / 6)
    assert payload["linkage"]["baseline"]["kind"] == "random guess"
    assert payload["matching"]["region"]["hierarchy"] == 2


def test_without_hierarchies_labels_stay_unmatched(capsys: pytest.CaptureFixture[str], files: dict[str, Path]) -> None:
    args = ["attack", str(files["original"]), str(files["released"]), "--qi", "region,age"]
    code, out, err = run(capsys, *args)
    assert code == 0 and "linkage" in out and "prosecutor average 50.00%" in out
    assert "2 released value(s) of 'region' match no original value" in err
    code, out, _ = run(capsys, *args, "--json")
    payload = json.loads(out)
    # 'North' and 'South' mean nothing without the hierarchy: no target matches any released record.
    assert payload["linkage"]["success_rate"] == 0.0 and payload["matching"]["region"]["unmatched"] == 2


def test_recipe_and_control(capsys: pytest.CaptureFixture[str], files: dict[str, Path], tmp_path: Path) -> None:
    fix = generalize(ORIGINAL, {"region": 1}, {"region": REGIONS})
    released, recipe, control = tmp_path / "fix.csv", tmp_path / "fix.recipe.json", tmp_path / "control.csv"
    fix.data.to_csv(released, index=False)
    Recipe((fix.step,)).save(recipe)
    ORIGINAL.assign(age=[60, 61, 62, 63, 64, 65]).to_csv(control, index=False)
    args = ["attack", str(files["original"]), str(released), "--qi", "region,age", "--recipe", str(recipe)]
    code, out, err = run(capsys, *args, "--control", str(control), "--targets", "4", "--seed", "3", "--json")
    assert code == 0, err
    payload = json.loads(out)
    # Ages are unchanged and all distinct: every sampled target is found; no control record shares an age.
    assert payload["linkage"]["success_rate"] == 1.0 and payload["linkage"]["n_targets"] == 4
    assert payload["linkage"]["baseline"] == {
        "kind": "control",
        "success_rate": 0.0,
        "ci_low": 0.0,
        "ci_high": pytest.approx(0.4899, abs=1e-4),
        "n_targets": 4,
    }
    assert payload["control"] is True and payload["rows_control"] == 6


@pytest.mark.parametrize(
    ("make", "args", "words"),
    [
        ("extra", [], "columns the original does not: 'zip'"),
        ("same", ["--qi", "region,agee"], "did you mean 'age'"),
        ("empty", [], "no data rows"),
        ("same", ["--targets", "0"], "--targets must be a whole number >= 1"),
        ("same", ["--targets", "-3"], "--targets must be a whole number >= 1"),
        ("same", ["--sensitive", "incme"], "did you mean 'income'"),
    ],
)
def test_bad_input_exits_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, make: str, args: list[str], words: str
) -> None:
    original = tmp_path / "original.csv"
    ORIGINAL.to_csv(original, index=False)
    released = tmp_path / "released.csv"
    if make == "extra":
        ORIGINAL.assign(zip="12345").to_csv(released, index=False)
    elif make == "empty":
        ORIGINAL.iloc[:0].to_csv(released, index=False)
    else:
        ORIGINAL.to_csv(released, index=False)
    before = sorted(tmp_path.iterdir())
    full = ["attack", str(original), str(released), *(args if "--qi" in args else ["--qi", "region,age", *args])]
    code, out, err = run(capsys, *full)
    assert code == 2 and out == ""
    assert words in err and "Traceback" not in err
    assert sorted(tmp_path.iterdir()) == before
