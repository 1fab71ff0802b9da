"""``privdash release --entity COL --max-rows-per-person N``: person-level releases of sdcMicro's testdata (4,580
rows of 1,000 households, ori_hid, 1 to 12 rows each), the truncation reported, the same ledger charge as a one-row
release, and exit 2 with nothing written on bad input.

Noise comes from OpenDP's OS randomness; each statistical assertion says its (negligible) failure probability.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from privdash.cli import main


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture(scope="module")
def testdata(data_dir: Path) -> Path:
    return data_dir / "sdcmicro_testdata" / "testdata.csv"


def kept_rows(path: Path, c: int) -> int:
    """The rows any truncation to c rows per household keeps: Σ min(rows, c) (a pandas oracle)."""
    return int(pd.read_csv(path).groupby("ori_hid").size().clip(upper=c).sum())


def test_count_json_reports_the_bound_and_the_truncation(
    capsys: pytest.CaptureFixture[str], testdata: Path, tmp_path: Path
) -> None:
    output = tmp_path / "count.json"
    code, out, err = run(
        capsys, "release", str(testdata), "--query", "count", "--epsilon", "0.5", "--entity", "ori_hid",
        "--max-rows-per-person", "3", "--json", "--show-true", "-o", str(output),
    )  # fmt: skip
    assert code == 0, err
    payload = json.loads(out)
    assert payload["sensitivity"] == 3 and payload["scale"] == 6 and payload["epsilon"] == 0.5
    assert payload["entity"] == "ori_hid" and payload["max_rows_per_person"] == 3
    assert payload["contribution"] == "at most 3 rows per person (person id 'ori_hid')"
    kept = kept_rows(testdata, 3)
    seed = payload["truncation"].pop("seed")  # drawn fresh and recorded: --truncation-seed keeps the same rows
    assert isinstance(seed, int) and seed >= 0
    assert payload["truncation"] == {
        "entity": "ori_hid",
        "max_rows_per_person": 3,
        "people": 1000,
        "rows": 4580,
        "rows_kept": kept,
        "rows_dropped": 4580 - kept,
        "most_rows_per_person": 12,
    }
    (cell,) = payload["cells"]
    assert cell["true_value"] == kept
    assert abs(cell["value"] - kept) < 180  # |Laplace(6)| > 180 has probability e^-30
    # The released file holds the bound, never the exact counts of the truncation.
    written = json.loads(output.read_text(encoding="utf-8"))
    assert written["max_rows_per_person"] == 3 and "truncation" not in written
    assert "true_value" not in written["cells"][0]


def test_text_names_the_privacy_unit(capsys: pytest.CaptureFixture[str], testdata: Path) -> None:
    code, out, err = run(
        capsys, "release", str(testdata), "--query", "histogram", "--column", "sex", "--domain", "1,2",
        "--epsilon", "1", "--entity", "ori_hid", "--max-rows-per-person", "2",
    )  # fmt: skip
    assert code == 0, err
    dropped = 4580 - kept_rows(testdata, 2)
    assert "sensitivity = 2, noise scale = 2" in out
    assert f"1,000 people, {dropped:,} of 4,580 rows dropped by the truncation" in out
    assert "largest: 12 rows per person" in out and "a person of 'ori_hid', at most 2 row(s) each" in out
    assert "each person contributes at most 2 row(s) of the table" in out


def test_the_seed_reproduces_the_truncation(capsys: pytest.CaptureFixture[str], testdata: Path) -> None:
    def true_sum(seed: str) -> float:
        code, out, err = run(
            capsys, "release", str(testdata), "--query", "sum", "--column", "age", "--bounds", "0,100",
            "--epsilon", "1", "--entity", "ori_hid", "--max-rows-per-person", "2", "--truncation-seed", seed,
            "--json", "--show-true",
        )  # fmt: skip
        assert code == 0, err
        return float(json.loads(out)["cells"][0]["true_value"])

    first = true_sum("1")
    assert true_sum("1") == first
    assert true_sum("2") != first  # 2,635 rows dropped at random: another seed keeps other ages


def test_the_ledger_charges_what_a_one_row_release_charges(
    capsys: pytest.CaptureFixture[str], testdata: Path, tmp_path: Path
) -> None:
    charged = []
    for name, extra in (("one-row", []), ("person", ["--entity", "ori_hid", "--max-rows-per-person", "4"])):
        ledger = tmp_path / f"{name}.json"
        for query in (["--query", "count"], ["--query", "histogram", "--column", "sex", "--delta", "1e-6"]):
            code, _, err = run(
                capsys, "release", str(testdata), *query, "--epsilon", "0.3", "--ledger", str(ledger),
                "--budget", "2,1e-5", "--dataset-identity", "households", *extra,
            )  # fmt: skip
            assert code == 0, err
        charged.append(json.loads(ledger.read_text(encoding="utf-8")))
    one_row, person = charged
    assert one_row.keys() == person.keys() and one_row["version"] == person["version"] == 2
    entries = [ledger["datasets"]["households"]["releases"] for ledger in charged]
    assert [set(e) for e in entries[0]] == [set(e) for e in entries[1]]  # the same format, no new field
    for one, several in zip(*entries, strict=True):
        for field in ("query", "columns", "mechanism"):
            assert one[field] == several[field]
        assert one["epsilon"] == several["epsilon"] == pytest.approx(0.3)
    # Key selection: each charge is its exact δ within 1e-6 (another threshold for 4 rows per person).
    assert 0 < one_row["datasets"]["households"]["releases"][1]["delta"] <= 1e-6
    assert 0 < person["datasets"]["households"]["releases"][1]["delta"] <= 1e-6
    spent = [ledger["datasets"]["households"]["spent"]["epsilon"] for ledger in charged]
    assert spent[0] == spent[1] == pytest.approx(0.6)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--entity", "pid"], "--max-rows-per-person"),
        (["--entity", "pid"], "has up to 3 row(s)"),
        (["--entity", "pid", "--max-rows-per-person", "0"], "contribute), got '0'"),
        (["--entity", "pid", "--max-rows-per-person", "-2"], "contribute), got '-2'"),
        (["--entity", "pid", "--max-rows-per-person", "2.5"], "contribute), got '2.5'"),
        (["--entity", "pid", "--max-rows-per-person", "two"], "contribute), got 'two'"),
        (["--max-rows-per-person", "2"], "--entity"),
        (["--truncation-seed", "2"], "--entity"),
        (["--entity", "person", "--max-rows-per-person", "2"], "Unknown person-id column: 'person'"),
        (["--entity", "gap", "--max-rows-per-person", "2"], "'gap' has 1 row(s) without an id"),
        (["--entity", "", "--max-rows-per-person", "2"], "--entity needs"),
    ],
)
def test_bad_person_level_input_exits_2_and_writes_nothing(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, args: list[str], message: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    pd.DataFrame({"pid": ["a", "a", "a", "b"], "gap": ["a", None, "b", "b"], "x": [1, 2, 3, 4]}).to_csv(
        "t.csv", index=False
    )
    ledger = ["--ledger", "L.json", "--dataset-identity", "t", "--budget", "2"]
    code, out, err = run(
        capsys, "release", "t.csv", "--query", "count", "--epsilon", "1", *args, *ledger, "-o", "o.csv"
    )
    assert code == 2 and out == ""
    assert message in err and "Traceback" not in err
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != ".L.json.lock") == ["t.csv"]


@pytest.mark.parametrize(
    "query",
    [
        ["--query", "histogram", "--column", "pid", "--delta", "0.1"],
        ["--query", "histogram", "--qi", "x,pid", "--delta", "0.1"],
        ["--query", "sum", "--column", "pid", "--bounds", "0,1"],
    ],
)
def test_the_person_id_cannot_be_released(capsys: pytest.CaptureFixture[str], tmp_path: Path, query: list[str]) -> None:
    path = tmp_path / "t.csv"
    pd.DataFrame({"pid": [1, 1, 2], "x": [1, 2, 3]}).to_csv(path, index=False)
    code, _, err = run(
        capsys, "release", str(path), *query, "--epsilon", "1", "--entity", "pid", "--max-rows-per-person", "2"
    )
    assert code == 2 and "is the person-id column: it cannot also be released" in err
