"""``privdash attack``: the JSON report, hierarchies and recipes as the attacker's knowledge, and bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from privdash import Hierarchy, Recipe, generalize
from privdash.cli import main
from privdash.transform import write_arx_hierarchy

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


def test_without_hierarchies_labels_are_refused(capsys: pytest.CaptureFixture[str], files: dict[str, Path]) -> None:
    # 'North' and 'South' mean nothing without the hierarchy: the attacks cannot be measured, and a 0% would lie.
    args = ["attack", str(files["original"]), str(files["released"]), "--qi", "region,age"]
    for extra in ([], ["--json"]):
        code, out, err = run(capsys, *args, *extra)
        assert code == 2 and out == "" and "Traceback" not in err
        assert "released values match no original value in 'region' (2 values: 'North', 'South')" in err
        assert "--hierarchies DIR" in err and "--allow-unmatched" in err
    # Declared to stand for no one, they match nothing: no target matches any released record, and it says why.
    code, out, err = run(capsys, *args, "--allow-unmatched")
    assert code == 0 and "prosecutor average 50.00%" in out
    assert "Note: 2 released value(s) of 'region' match no original value and count as standing for no one" in out
    code, out, err = run(capsys, *args, "--allow-unmatched", "--json")
    payload = json.loads(out)
    assert payload["linkage"]["success_rate"] == 0.0 and payload["matching"]["region"]["unmatched"] == 2
    assert payload["unmatched"] == {"region": {"values": 2, "examples": ["North", "South"]}}
    assert "2 released value(s) of 'region' match no original value" in err


def test_recipe_and_control(capsys: pytest.CaptureFixture[str], files: dict[str, Path], tmp_path: Path) -> None:
    fix = generalize(ORIGINAL, {"region": 1}, {"region": REGIONS})
    released, recipe, control = tmp_path / "fix.csv", tmp_path / "fix.recipe.json", tmp_path / "control.csv"
    fix.data.to_csv(released, index=False)
    Recipe((fix.step,)).save(recipe)
    ORIGINAL.assign(age=[60, 61, 62, 63, 64, 65]).to_csv(control, index=False)
    args = ["attack", str(files["original"]), str(released), "--qi", "region,age", "--recipe", str(recipe)]
    code, out, err = run(capsys, *args, "--control", str(control), "--n-targets", "4", "--seed", "3", "--json")
    assert code == 0, err
    payload = json.loads(out)
    # --targets is the old spelling (elsewhere --targets are the release targets): read, with a warning.
    old = run(capsys, *args, "--control", str(control), "--targets", "4", "--seed", "3", "--json")
    assert old[0] == 0 and "--targets is deprecated" in old[2] and "use --n-targets" in old[2]
    assert json.loads(old[1])["linkage"] == payload["linkage"]
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
        ("same", ["--n-targets", "0"], "--n-targets must be a whole number >= 1"),
        ("same", ["--n-targets", "-3"], "--n-targets must be a whole number >= 1"),
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


@pytest.mark.parametrize(
    ("hierarchy", "args", "words"),
    [
        (b"Canada;North;*\nCanada;South;*\nMexico;North;*\nPeru;South;*\nChile;South;*\n", [], "leaves more than once"),
        (b"", [], "is empty"),
        # A file of other labels: 'North' and 'South' stay unexplained, so nothing is measured.
        (b"Canada;America;*\nMexico;America;*\nPeru;America;*\nChile;America;*\n", [], "'region' (2 values"),
        (REGIONS_CSV := b"Canada;North;*\nMexico;North;*\nPeru;South;*\nChile;South;*\n", ["--seed", "9" * 30], "seed"),
        (REGIONS_CSV, ["--seed", "-1"], "--seed must be a whole number >= 0"),
        (REGIONS_CSV, ["--recipe", "missing.json"], "Cannot read the recipe"),
    ],
)
def test_bad_hierarchies_and_options_exit_2(
    capsys: pytest.CaptureFixture[str], files: dict[str, Path], hierarchy: bytes, args: list[str], words: str
) -> None:
    (files["hierarchies"] / "region.csv").write_bytes(hierarchy)
    full = ["attack", str(files["original"]), str(files["released"]), "--qi", "region,age"]
    code, out, err = run(capsys, *full, "--hierarchies", str(files["hierarchies"]), *args)
    assert code == 2 and out == "" and "Traceback" not in err
    assert words in err


def test_a_release_of_other_people_is_not_measured(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    original, released = tmp_path / "original.csv", tmp_path / "other.csv"
    ORIGINAL.to_csv(original, index=False)
    pd.DataFrame({"region": ["Brazil", "Chile"], "age": [30, 44], "income": ["mid", "low"]}).to_csv(
        released, index=False
    )
    args = ["attack", str(original), str(released), "--qi", "region,age", "--sensitive", "income"]
    code, out, err = run(capsys, *args, "--json")
    assert code == 2 and out == ""
    assert "'region' (1 value: 'Brazil')" in err and "'income' (1 value: 'mid')" in err
    code, out, err = run(capsys, *args, "--json", "--allow-unmatched")
    payload = json.loads(out)
    # Only the 44-year-old from Chile is published; the others stand for no one: 1 target in 6 is linked.
    assert code == 0 and payload["linkage"]["success_rate"] == pytest.approx(1 / 6)
    assert set(payload["unmatched"]) == {"region", "income"}
