"""``privdash release`` on Adult: DP counts, histograms, class-size tables, sums and means with error bars; the
budget ledger; the domain rule; formula-safe files; and exit 2 with nothing written on bad input.

Noise comes from OpenDP's OS randomness; each statistical assertion says its (negligible) failure probability.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest

from dashboard.cli import main
from dashboard.core.data.tables import read_table


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
    for _ in range(2):
        code, out, err = run(capsys, *base, "--epsilon", "0.5")
        assert code == 0, err
    assert "left ε=0, δ=1e-06" in out
    before = ledger.read_bytes()
    out_path = tmp_path / "third.json"
    code, out, err = run(capsys, *base, "--epsilon", "0.1", "-o", str(out_path))
    assert code == 2 and "budget exhausted" in err.lower()
    assert ledger.read_bytes() == before and not out_path.exists() and out == ""
    payload = json.loads(before)
    (account,) = payload["datasets"].values()
    assert [r["epsilon"] for r in account["releases"]] == [0.5, 0.5]
    # The key is the file's SHA-256: a changed file has its own account.
    import hashlib

    assert list(payload["datasets"]) == [hashlib.sha256(path.read_bytes()).hexdigest()]
    code, _, err = run(capsys, *base[:-2], "--epsilon", "0.1")  # no --budget: the recorded one applies
    assert code == 2 and "exhausted" in err


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
        (["--query", "count", "--epsilon", "1", "--ledger", "L.json"], "--budget"),
        (["--query", "count", "--epsilon", "3", "--ledger", "L.json", "--budget", "2"], "exhausted"),
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
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.csv"]
