"""``privdash release`` on Adult: DP counts, histograms, class-size tables, sums and means with error bars; the
budget ledger; the domain rule; formula-safe files; and exit 2 with nothing written on bad input.

Noise comes from OpenDP's OS randomness; each statistical assertion says its (negligible) failure probability.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from privdash.cli import main
from privdash.data.tables import read_table


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture(scope="module")
def adult_path(data_dir: Path) -> Path:
    return data_dir / "arx_adult" / "adult.csv"


def test_count_json_with_true_value_only_on_request(capsys: pytest.CaptureFixture[str], adult_path: Path) -> None:
    code, out, err = run(capsys, "release", str(adult_path), "--query", "count", "--epsilon", "0.5", "--json")
    assert code == 0, err
    payload = json.loads(out)
    assert payload["mechanism"] == "laplace" and payload["scale"] == 2.0 and payload["epsilon"] == 0.5
    assert payload["expected_error"] == pytest.approx(2 * math.log(20))
    (cell,) = payload["cells"]
    assert "true_value" not in cell
    assert abs(cell["value"] - 30162) < 60  # |Laplace(2)| > 60 has probability e^-30
    code, out, err = run(capsys, "release", str(adult_path), "--query", "count", "--epsilon", "0.5", "--show-true")
    assert code == 0, err
    assert "true value (owner only)" in out and "30162" in out and "95%" in out


def test_mean_and_sum_text(capsys: pytest.CaptureFixture[str], adult_path: Path, adult: pd.DataFrame) -> None:
    code, out, err = run(
        capsys, "release", str(adult_path), "--query", "mean", "--column", "age", "--bounds", "0,100",
        "--epsilon", "1", "--delta", "1e-6", "--mechanism", "gaussian", "--json", "--show-true",
    )  # fmt: skip
    assert code == 0, err
    payload = json.loads(out)
    assert payload["cells"][0]["true_value"] == pytest.approx(adult["age"].clip(0, 100).mean())
    assert payload["epsilon"] <= 1 and payload["delta"] <= 1e-6 and payload["bounds"] == [0, 100]
    code, out, err = run(
        capsys, "release", str(adult_path), "--query", "sum", "--column", "age", "--bounds", "17,90",
        "--epsilon", "1", "--mechanism", "geometric",
    )  # fmt: skip
    assert code == 0, err
    assert "clamped into [17, 90]" in out and "noise scale = 90" in out


def test_class_size_table_with_hierarchy_domains_and_csv(
    capsys: pytest.CaptureFixture[str], adult_path: Path, adult: pd.DataFrame, data_dir: Path, tmp_path: Path
) -> None:
    out_path = tmp_path / "classes.csv"
    code, _, err = run(
        capsys, "release", str(adult_path), "--query", "histogram", "--qi", "sex,race",
        "--hierarchies", str(data_dir / "arx_adult" / "hierarchies"), "--epsilon", "1", "--mechanism", "geometric",
        "-o", str(out_path),
    )  # fmt: skip
    assert code == 0, err
    released = read_table(out_path)
    expected = adult.groupby(["sex", "race"]).size()
    assert len(released) == adult["sex"].nunique() * adult["race"].nunique() == len(expected)
    assert list(released.columns) == ["sex", "race", "dp_value", "error"]
    merged = released.set_index(["sex", "race"])["dp_value"]
    # Discrete Laplace of scale 1: an error above 40 has probability below e^-40 per cell.
    assert (merged.reindex(expected.index) - expected).abs().max() < 40


def test_histogram_domain_rule_and_key_selection(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "people.csv"
    towns = ["Leeds"] * 300 + ["York"] * 200 + ["=HYPERLINK(1)"]
    pd.DataFrame({"town": towns, "n": range(len(towns))}).to_csv(path, index=False)
    code, out, err = run(
        capsys, "release", str(path), "--query", "histogram", "--column", "town", "--domain", "Leeds,York,Bath",
        "--epsilon", "1", "--json",
    )  # fmt: skip
    assert code == 0, err
    assert [c["key"]["town"] for c in json.loads(out)["cells"]] == ["Leeds", "York", "Bath"]
    out_path = tmp_path / "towns.csv"
    code, out, err = run(
        capsys, "release", str(path), "--query", "histogram", "--column", "town", "--epsilon", "1",
        "--delta", "1e-6", "-o", str(out_path),
    )  # fmt: skip
    assert code == 0, err
    assert "DP key selection" in out
    # The one-row key passes the threshold (>= 14) with probability below 1e-6.
    text = out_path.read_text(encoding="utf-8")
    assert "HYPERLINK" not in text and "Leeds" in text and "York" in text
    code, _, err = run(capsys, "release", str(path), "--query", "histogram", "--column", "town", "--epsilon", "1")
    assert code == 2 and "public domain" in err


def test_formula_cells_are_escaped(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    pd.DataFrame({"kind": ["=cmd", "=cmd", "ok"], "n": [1, 2, 3]}).to_csv(path, index=False)
    out_path = tmp_path / "out.csv"
    code, _, err = run(
        capsys, "release", str(path), "--query", "histogram", "--column", "kind", "--domain", "=cmd,ok",
        "--epsilon", "1", "-o", str(out_path),
    )  # fmt: skip
    assert code == 0, err
    assert "'=cmd" in out_path.read_text(encoding="utf-8")


def test_ledger_composes_and_refuses(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    pd.DataFrame({"x": range(50), "y": 1}).to_csv(path, index=False)
    ledger = tmp_path / "ledger.json"
    base = ["release", str(path), "--query", "count", "--ledger", str(ledger), "--budget", "1,1e-6"]
    code, _, err = run(capsys, *base, "--epsilon", "0.5")
    assert code == 2 and "--dataset-identity NAME" in err and not ledger.exists()  # asked at the first release
    base += ["--dataset-identity", "t-people"]
    for _ in range(2):
        code, out, err = run(capsys, *base, "--epsilon", "0.5")
        assert code == 0, err
    assert "budget of 't-people'" in out and "left ε=0, δ=1e-06" in out
    before = ledger.read_bytes()
    out_path = tmp_path / "third.json"
    code, out, err = run(capsys, *base, "--epsilon", "0.1", "-o", str(out_path))
    assert code == 2 and "budget exhausted" in err.lower()
    assert ledger.read_bytes() == before and not out_path.exists() and out == ""
    payload = json.loads(before)
    assert payload["version"] == 2 and list(payload["datasets"]) == ["t-people"]
    account = payload["datasets"]["t-people"]
    assert [r["epsilon"] for r in account["releases"]] == [0.5, 0.5]
    assert len(account["tables"]) == 1 and account["tables"][0]["rows"] == 50
    # Later releases of the same rows need neither --budget nor --dataset-identity: the recorded ones apply.
    code, _, err = run(capsys, "release", str(path), "--query", "count", "--ledger", str(ledger), "--epsilon", "0.1")
    assert code == 2 and "exhausted" in err


def write(path: Path, frame: pd.DataFrame) -> Path:
    frame.to_csv(path, index=False)
    return path


def test_copies_of_a_table_cannot_reset_its_budget(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    people = pd.DataFrame({"id": [f"p{i}" for i in range(400)], "age": [20 + i % 60 for i in range(400)]})
    original = write(tmp_path / "people.csv", people)
    ledger = tmp_path / "ledger.json"

    def release(path: Path, *extra: str) -> tuple[int, str, str]:
        args = ["release", str(path), "--query", "count", "--epsilon", "0.25", "--ledger", str(ledger), "--json"]
        return run(capsys, *args, *extra)

    code, out, err = release(original, "--dataset-identity", "people-2024", "--budget", "1")
    assert code == 0, err
    assert json.loads(out)["ledger"]["identity_from"] == "declared"
    # Re-sorted rows, reversed columns, ages written as 20.0: the same table, recognised without an identity.
    resorted = people.sample(frac=1, random_state=4).iloc[:, ::-1].astype({"age": float})
    copy = write(tmp_path / "copy.csv", resorted)
    code, out, err = release(copy)
    assert code == 0, err
    assert json.loads(out)["ledger"]["dataset_identity"] == "people-2024"
    assert json.loads(out)["ledger"]["spent"]["epsilon"] == 0.5
    # The same rows under a new identity would open a fresh budget: refused, and the ledger is unchanged.
    before = ledger.read_bytes()
    code, _, err = release(copy, "--dataset-identity", "fresh", "--budget", "1")
    assert code == 2 and "were released under the dataset identity 'people-2024'" in err
    assert ledger.read_bytes() == before
    # One corrected cell: a near copy. Without an identity it is charged to the original's budget, with a warning.
    corrected = write(tmp_path / "corrected.csv", people.assign(age=people["age"].where(people.index != 7, 99)))
    code, out, err = release(corrected)
    assert code == 0, err
    assert "warning: Charged to 'people-2024'" in err and "100% of its rows" in err
    assert json.loads(out)["ledger"]["identity_from"] == "near-copy"
    # That copy is now recorded under the original. Another near copy (80 rows dropped) under a new identity is
    # refused unless the owner confirms other people, and warned even then.
    sample = write(tmp_path / "sample.csv", people.iloc[80:])
    code, _, err = release(sample, "--dataset-identity", "other", "--budget", "1")
    assert code == 2 and "--distinct-population" in err and "people-2024" in err
    code, out, err = release(sample, "--dataset-identity", "other", "--budget", "1", "--distinct-population")
    assert code == 0 and "warning: This table shares about" in err and "people-2024" in err
    accounts = json.loads(ledger.read_text(encoding="utf-8"))["datasets"]
    assert accounts["people-2024"]["spent"]["epsilon"] == 0.75 and accounts["other"]["spent"]["epsilon"] == 0.25
    # A table of other people (no row in common) is no near copy.
    others = write(tmp_path / "others.csv", people.assign(id=people["id"] + "x"))
    code, _, err = release(others, "--dataset-identity", "neighbours", "--budget", "1")
    assert code == 0 and "warning" not in err


def test_a_version_1_ledger_keeps_counting(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    import hashlib

    path = write(tmp_path / "t.csv", pd.DataFrame({"x": range(30), "y": 1}))
    key = hashlib.sha256(path.read_bytes()).hexdigest()
    ledger = tmp_path / "ledger.json"
    release = {"query": "count", "columns": [], "mechanism": "laplace", "epsilon": 0.75, "delta": 0.0, "time": "t"}
    v1 = {"version": 1, "datasets": {key: {"budget": {"epsilon": 1.0, "delta": 0.0}, "releases": [release]}}}
    ledger.write_text(json.dumps(v1), encoding="utf-8")
    args = ["release", str(path), "--query", "count", "--ledger", str(ledger)]
    code, _, err = run(capsys, *args, "--epsilon", "0.5")
    assert code == 2 and "exhausted" in err and "only ε=0.25" in err
    code, _, err = run(capsys, *args, "--epsilon", "0.25")
    assert code == 0, err
    (account,) = json.loads(ledger.read_text(encoding="utf-8"))["datasets"].values()
    assert account["spent"]["epsilon"] == 1.0 and account["aliases"] == [key] and len(account["tables"]) == 1


def test_parallel_releases_cannot_overspend(tmp_path: Path) -> None:
    """Six real processes release at once against a budget of 1 at ε = 0.4: exactly floor(1/0.4) = 2 succeed."""
    path = write(tmp_path / "people.csv", pd.DataFrame({"age": range(200), "sex": ["F", "M"] * 100}))
    ledger = tmp_path / "L.json"
    command = [
        sys.executable, "-c", "import sys; from privdash.cli import main; sys.exit(main())",
        "release", str(path), "--query", "count", "--epsilon", "0.4", "--ledger", str(ledger), "--budget", "1",
        "--dataset-identity", "people",
    ]  # fmt: skip
    processes = [subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(6)]
    results = [(p.wait(timeout=120), *p.communicate()) for p in processes]
    codes = sorted(code for code, _, _ in results)
    assert codes == [0, 0, 2, 2, 2, 2], [err for _, _, err in results]
    for code, out, err in results:
        assert "Traceback" not in err
        if code == 2:
            assert "Privacy budget exhausted" in err and "only ε=0.2" in err and out == ""
    account = json.loads(ledger.read_text(encoding="utf-8"))["datasets"]["people"]
    assert account["spent"]["epsilon"] == pytest.approx(0.8) and len(account["releases"]) == 2


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--query", "count", "--epsilon", "0"], "ε"),
        (["--query", "count", "--epsilon", "1", "--delta", "1"], "δ"),
        (["--query", "count", "--epsilon", "1", "--delta", "-0.5"], "δ"),
        (["--query", "sum", "--column", "x", "--bounds", "5,1", "--epsilon", "1"], "L < U"),
        (["--query", "sum", "--column", "x", "--epsilon", "1"], "--bounds"),
        (["--query", "mean", "--column", "name", "--bounds", "0,1", "--epsilon", "1"], "not numeric"),
        (["--query", "mean", "--column", "nope", "--bounds", "0,1", "--epsilon", "1"], "nope"),
        (["--query", "count", "--epsilon", "1", "--mechanism", "gaussian"], "δ > 0"),
        (["--query", "count", "--epsilon", "1", "--mechanism", "cauchy"], "laplace, geometric, gaussian"),
        (["--query", "count", "--epsilon", "1", "--budget", "2"], "--ledger"),
        (["--query", "count", "--epsilon", "1", "--ledger", "L.json"], "--dataset-identity NAME"),
        (["--query", "count", "--epsilon", "1", "--ledger", "L.json", "--dataset-identity", "t"], "--budget"),
        (
            ["--query", "count", "--epsilon", "3", "--ledger", "L.json", "--budget", "2", "--dataset-identity", "t"],
            "exhausted",
        ),
        (["--query", "histogram", "--qi", "name", "--domain", "x=1", "--epsilon", "1"], "COL=VALUES"),
    ],
)
def test_bad_input_exits_2_and_writes_nothing(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, args: list[str], message: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "t.csv"
    pd.DataFrame({"x": [1, 2, 3], "name": ["a", "b", "c"]}).to_csv(path, index=False)
    code, _, err = run(capsys, "release", str(path), *args, "-o", "out.csv")
    assert code == 2
    assert message in err and "Traceback" not in err
    # Only the ledger's lock file may be left (it must stay: removing it would let two releases lock two files).
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != ".L.json.lock") == ["t.csv"]


def _ledger_text(text: str) -> dict[str, str]:
    return {"L.json": text}


LEDGER = ["--ledger", "L.json", "--dataset-identity", "t", "--budget", "2"]
V2_NEGATIVE = (
    '{"version": 2, "datasets": {"t": {"budget": {"epsilon": 1, "delta": 0}, "releases": [{"query": "count", '
    '"columns": [], "mechanism": "laplace", "epsilon": -5, "delta": 0, "time": "t"}]}}}'
)


@pytest.mark.parametrize(
    ("args", "files", "message"),
    [
        (["--query", "count", "--epsilon", "nan"], {}, "--epsilon"),
        (["--query", "count", "--epsilon", "inf"], {}, "--epsilon"),
        (["--query", "count", "--epsilon", "5e-324"], {}, "ε = 4.94066e-324"),
        (["--query", "count", "--epsilon", "1", "--delta", "nan"], {}, "--delta"),
        (["--query", "sum", "--column", "x", "--bounds=-1e308,1e308", "--epsilon", "1"], {}, "bounds [-1e+308"),
        (["--query", "mean", "--column", "x", "--bounds", "nan,1", "--epsilon", "1"], {}, "finite"),
        (["--query", "sum", "--column", "x", "--bounds", "1", "--epsilon", "1"], {}, "two numbers"),
        (["--query", "count", "--epsilon", "1", "--confidence", "1"], {}, "confidence"),
        (["--query", "count", "--epsilon", "1", "--confidence", "nan"], {}, "confidence"),
        (["--query", "histogram", "--column", "name", "--epsilon", "1e-9", "--delta", "1e-300"], {}, "2^31"),
        (
            ["--query", "histogram", "--column", "name", "--domain", "blank.txt", "--epsilon", "1"],
            {"blank.txt": "\n \n"},
            "holds no values",
        ),
        (
            [
                "--query",
                "histogram",
                "--qi",
                "x,name",
                "--domain",
                "x=big.txt",
                "--domain",
                "name=big.txt",
                "--epsilon",
                "1",
            ],
            {"big.txt": "\n".join(str(i) for i in range(1_500))},
            "2,250,000 cells",
        ),
        (
            ["--query", "count", "--epsilon", "1", "--ledger", "L.json", "--dataset-identity", "t", "--budget", "0"],
            {},
            "ε (epsilon) must be",
        ),
        (
            ["--query", "count", "--epsilon", "1", "--ledger", "L.json", "--dataset-identity", "t", "--budget", "2,1"],
            {},
            "δ (delta)",
        ),
        (
            [
                "--query",
                "count",
                "--epsilon",
                "1",
                "--ledger",
                "L.json",
                "--dataset-identity",
                "t",
                "--budget",
                "1,2,3",
            ],
            {},
            "EPS,DELTA",
        ),
        (["--query", "count", "--epsilon", "1", *LEDGER], _ledger_text("{not json"), "not a privdash ledger"),
        (["--query", "count", "--epsilon", "1", *LEDGER], _ledger_text("[]"), "not a privdash ledger"),
        (["--query", "count", "--epsilon", "1", *LEDGER], _ledger_text('{"version": 99, "datasets": {}}'), "version"),
        (["--query", "count", "--epsilon", "1", *LEDGER], _ledger_text(V2_NEGATIVE), "not a privdash ledger"),
        (["--query", "count", "--epsilon", "1", *LEDGER], _ledger_text("[" * 100_000 + "]" * 100_000), "ledger"),
        (
            ["--query", "count", "--epsilon", "1", "--ledger", "folder", "--dataset-identity", "t", "--budget", "2"],
            {"folder/keep.txt": "x"},
            "is a folder",
        ),
        (
            [
                "--query",
                "count",
                "--epsilon",
                "1",
                "--ledger",
                "missing/L.json",
                "--dataset-identity",
                "t",
                "--budget",
                "2",
            ],
            {},
            "does not exist",
        ),
        (
            ["--query", "count", "--epsilon", "1", "--ledger", "L.json", "--dataset-identity", "", "--budget", "2"],
            {},
            "identity is empty",
        ),
        (
            [
                "--query",
                "count",
                "--epsilon",
                "1",
                "--ledger",
                "L.json",
                "--dataset-identity",
                "a\x07b",
                "--budget",
                "2",
            ],
            {},
            "control character",
        ),
        (
            [
                "--query",
                "count",
                "--epsilon",
                "1",
                "--ledger",
                "L.json",
                "--dataset-identity",
                "n" * 300,
                "--budget",
                "2",
            ],
            {},
            "300 characters",
        ),
        (["--query", "count", "--epsilon", "1", "--distinct-population"], {}, "--ledger"),
    ],
)
def test_more_bad_input_exits_2_and_changes_nothing(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    args: list[str],
    files: dict[str, str],
    message: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "t.csv"
    pd.DataFrame({"x": [1, 2, 3], "name": ["a", "b", "c"]}).to_csv(path, index=False)
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    code, out, err = run(capsys, "release", str(path), *args, "-o", "out.csv")
    assert code == 2, err
    assert message in err and "Traceback" not in err and out == ""
    after = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file() and not p.name.endswith(".lock")}
    assert after == before


def test_a_read_only_ledger_is_refused_before_anything_is_computed(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = write(tmp_path / "t.csv", pd.DataFrame({"x": range(10), "y": 2}))
    ledger = tmp_path / "L.json"
    args = ["release", str(path), "--query", "count", "--epsilon", "0.5", "--ledger", str(ledger)]
    code, _, err = run(capsys, *args, "--dataset-identity", "t", "--budget", "1")
    assert code == 0, err
    before = ledger.read_bytes()
    ledger.chmod(0o400)  # marked read-only (also refused as root, whom the permission does not bind)
    try:
        code, out, err = run(capsys, *args)
        assert code == 2 and "read-only" in err and out == ""
        assert ledger.read_bytes() == before
    finally:
        ledger.chmod(0o600)


def test_a_total_budget_given_as_epsilon_alone_has_the_dashboards_delta(
    capsys: pytest.CaptureFixture[str], adult_path: Path, tmp_path: Path
) -> None:
    """One default everywhere: ``--budget 1`` opens the account with the dashboard's default budget (1, 1e-6)."""
    from privdash.application.settings import Settings

    ledger = tmp_path / "L.json"
    args = ["release", str(adult_path), "--query", "count", "--epsilon", "0.1", "--ledger", str(ledger), "--json"]
    code, out, err = run(capsys, *args, "--dataset-identity", "adult", "--budget", "1")
    assert code == 0, err
    budget = json.loads(out)["ledger"]["budget"]
    default = Settings().dp_budget
    assert (budget["epsilon"], budget["delta"]) == (default.epsilon, default.delta) == (1.0, 1e-6)
    args[args.index(str(ledger))] = str(tmp_path / "L2.json")
    code, out, err = run(capsys, *args, "--dataset-identity", "adult", "--budget", "1,0")
    assert code == 0, err
    assert json.loads(out)["ledger"]["budget"]["delta"] == 0.0  # given explicitly, kept
