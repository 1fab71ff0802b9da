from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from privdash.cli import main

EW = ("uk_postcode_population_ew2011_outward", "ew2011_outward_code_population.csv")
DOOGAL = ("uk_postcode_districts_doogal", "postcode_districts.csv")
ZCTA = ("us_zcta2010_population", "2010-pop-by-zcta.csv")


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["postcodes", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cli-cache")


def check_payload(payload: dict, total: int) -> None:
    assert {"strategy", "threshold", "units", "below_threshold", "mapping"} <= payload.keys()
    units = {u["code"]: u["population"] for u in payload["units"]}
    assert sum(units.values()) == payload["total_population"] == total
    assert set(payload["mapping"].values()) == set(units)
    below = [b["population"] for b in payload["below_threshold"]]
    assert below == sorted(below)
    for item in payload["below_threshold"]:
        assert units[item["code"]] == item["population"]


@pytest.mark.parametrize(
    ("strategy", "n_below", "first"),
    [("area", 2, {"code": "DG", "population": 65}), ("outward", 1010, {"code": "UB11", "population": 2}),
     ("mixed", 12, {"code": "DG", "population": 65})],
)  # fmt: skip
def test_json_per_strategy_on_ew(
    capsys: pytest.CaptureFixture[str], data_dir: Path, strategy: str, n_below: int, first: dict
) -> None:
    code, out, err = run(capsys, "--population", str(data_dir.joinpath(*EW)), "--strategy", strategy, "--json")
    assert code == 0, err
    payload = json.loads(out)
    assert payload["strategy"] == strategy and payload["comparison"] == "<"
    assert payload["threshold"] == payload["min_population"] == 20_000  # threshold: the old key, kept
    assert len(payload["below_threshold"]) == n_below and payload["below_threshold"][0] == first
    assert len(payload["mapping"]) == 2297
    check_payload(payload, 56_075_912)


def test_merge_with_default_polygons(capsys: pytest.CaptureFixture[str], data_dir: Path, cache: Path) -> None:
    path = str(data_dir.joinpath(*EW))
    code, out, err = run(capsys, "--population", path, "--strategy", "merge", "--json", "--cache-dir", str(cache))
    assert code == 0, err
    payload = json.loads(out)
    assert payload["below_threshold"] == [] and payload["neighbours"].startswith("shared boundaries")
    assert payload["mapping"]["DG14"] == "CA+DG+TD" and len(payload["merges"]) == 11
    check_payload(payload, 56_075_912)
    code, out, err = run(capsys, "--population", path, "--strategy", "merge", "--cache-dir", str(cache))
    assert code == 0, err
    assert "under the threshold: 0" in out and "CA+DG+TD" in out and "every published unit holds at least" in out


def test_merge_with_doogal_neighbours(capsys: pytest.CaptureFixture[str], data_dir: Path) -> None:
    code, out, err = run(
        capsys,
        "--population", str(data_dir.joinpath(*EW)), "--strategy", "merge", "--json",
        "--neighbours", str(data_dir.joinpath(*DOOGAL)),
    )  # fmt: skip
    assert code == 0, err
    payload = json.loads(out)
    assert payload["below_threshold"] == [] and payload["neighbours"].startswith("nearby districts")
    assert payload["mapping"]["DG14"] == "CA7+DG"


def test_us_defaults_to_zip3(capsys: pytest.CaptureFixture[str], data_dir: Path) -> None:
    code, out, err = run(capsys, "--population", str(data_dir.joinpath(*ZCTA)), "--json")
    assert code == 0, err
    payload = json.loads(out)
    assert payload["strategy"] == "zip3" and payload["comparison"] == "<="
    assert len(payload["original_below_threshold"]) == 18 and payload["below_threshold"] == []
    assert payload["mapping"]["036"] == "000" and payload["mapping"]["021"] == "021"
    check_payload(payload, 308_739_931)
    code, out, _ = run(capsys, "--population", str(data_dir.joinpath(*ZCTA)))
    assert code == 0
    assert "recoded to 000" in out and "ZIP3 areas under the threshold on their own: 18" in out
    assert "every published unit holds more than 20,000 people" in out


def test_table_output_and_threshold(capsys: pytest.CaptureFixture[str], data_dir: Path) -> None:
    code, out, err = run(
        capsys, "--population", str(data_dir.joinpath(*EW)), "--strategy", "area", "--min-population", "18,000"
    )
    assert code == 0, err
    assert "rule: a unit fails when population < 18,000" in out
    assert "published units: 106; under the threshold: 1" in out
    lines = out.splitlines()
    header = lines.index("published units under the threshold (smallest first):")
    assert lines[header + 3].split() == ["DG", "65", "2"]


def test_doogal_population_with_warning(capsys: pytest.CaptureFixture[str], data_dir: Path) -> None:
    code, out, err = run(capsys, "--population", str(data_dir.joinpath(*DOOGAL)), "--strategy", "outward", "--json")
    assert code == 0
    assert "1 invalid codes" in err and "'NPT'" in err
    payload = json.loads(out)
    assert len(payload["below_threshold"]) == 1375 and payload["source_format"] == "doogal"


def test_census_unit_file_and_output(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    census = tmp_path / "units.csv"
    census.write_text(
        "Postcode,Total,Males,Females,Occupied_Households\n"
        "AL1 1AG,14,6,8,6\nAL1 1AH,20,10,10,9\nAL101AA,30,14,16,12\nB1  1BA,7,4,3,3\nEC1A1BB,12,5,7,4\n",
        encoding="utf-8",
    )
    output = tmp_path / "mapping.csv"
    code, out, err = run(capsys, "--population", str(census), "--threshold", "20", "--json", "--output", str(output))
    assert code == 0
    assert "warning: --threshold is deprecated" in err and "use --min-population" in err  # the old spelling is read
    payload = json.loads(out)
    assert payload["strategy"] == "mixed" and payload["source_format"] == "census-unit"
    assert payload["mapping"] == {"AL1": "AL1", "AL10": "AL10", "B1": "B", "EC1A": "EC"}
    assert payload["below_threshold"] == [{"code": "B", "population": 7}, {"code": "EC", "population": 12}]
    written = pd.read_csv(output)
    assert written.to_dict("list") == {
        "original": ["AL1", "AL10", "B1", "EC1A"],
        "original_population": [34, 30, 7, 12],
        "published": ["AL1", "AL10", "B", "EC"],
        "published_population": [34, 30, 7, 12],
    }


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--strategy", "sector"], "Unknown postcode strategy 'sector'"),
        (["--strategy", "zip3"], "does not apply"),
        (["--min-population", "many"], "--min-population must be a whole number"),
        (["--min-population", "-5"], "--min-population must be a whole number of people >= 0"),
        (["--min-population", "2.5"], "--min-population must be a whole number"),
        (["--strategy", "merge", "--polygons", "/nonexistent/polygons"], "polygon folder"),
    ],
)
def test_bad_arguments(capsys: pytest.CaptureFixture[str], data_dir: Path, args: list[str], message: str) -> None:
    code, out, err = run(capsys, "--population", str(data_dir.joinpath(*EW)), *args)
    assert code == 2 and out == ""
    assert message in err and "Traceback" not in err
    assert err.startswith("privdash postcodes: error:")


def test_bad_files(capsys: pytest.CaptureFixture[str], tmp_path: Path, data_dir: Path) -> None:
    code, _, err = run(capsys, "--population", str(tmp_path / "missing.csv"))
    assert code == 2 and "Population file not found" in err and "Traceback" not in err
    wrong = tmp_path / "wrong.csv"
    wrong.write_text("name,age\nann,3\nbob,4\n", encoding="utf-8")
    code, _, err = run(capsys, "--population", str(wrong))
    assert code == 2 and "Cannot tell the format of wrong.csv" in err
    code, _, err = run(capsys, "--population", str(data_dir.joinpath(*ZCTA)), "--strategy", "merge")
    assert code == 2 and "use zip3" in err
    code, _, err = run(
        capsys, "--population", str(data_dir.joinpath(*EW)), "--strategy", "merge", "--neighbours", str(wrong)
    )
    assert code == 2 and "Cannot tell the format" in err
    source = data_dir.joinpath(*EW)
    code, _, err = run(capsys, "--population", str(source), "--output", str(source))
    assert code == 2 and "Refusing to overwrite" in err


def test_population_is_required(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["postcodes"])
    assert exit_info.value.code == 2
    assert "--population" in capsys.readouterr().err
