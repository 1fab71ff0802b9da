"""``privdash synthesize``: partial, full, hybrid and dp synthetic tables of Adult from the command line, judged
against held-out control records; the dp release charged to the ledger (a second one over budget refused, nothing
written); the recipe re-runs the release; bad input exits 2 with its message and writes nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from privdash.cli import main
from privdash.data.tables import read_table
from privdash.dp.ledger import BudgetLedger

QIS = "age,sex,race,marital-status"


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture(scope="module")
def adult_small(adult: pd.DataFrame, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("synth") / "adult3000.csv"
    table = adult.sample(3000, random_state=1).reset_index(drop=True)
    table.loc[0, "occupation"] = "=cmd|' /C calc'!A0"  # a cell a spreadsheet would run
    table.to_csv(path, index=False)
    return path


def test_full_synthesis_writes_a_safe_table_and_a_recipe_that_reproduces_it(
    capsys: pytest.CaptureFixture[str], adult_small: Path, tmp_path: Path
) -> None:
    out, recipe = tmp_path / "synthetic.csv", tmp_path / "synthetic.json"
    code, text, err = run(
        capsys, "synthesize", str(adult_small), "--method", "full", "--qi", QIS, "--sensitive", "salary-class",
        "--seed", "5", "--n-targets", "500", "--estimate", "mean:age by sex", "-o", str(out),
        "--recipe-out", str(recipe),
    )  # fmt: skip
    assert code == 0, err
    assert "k-anonymity does not describe a synthetic table" in text
    assert "the training table as is" in text and "distance to the closest record" in text
    assert "mean:age by sex" in text
    written = out.read_text(encoding="utf-8")
    assert "=cmd" not in written.replace("'=cmd", "")  # escaped when drawn: never a bare formula
    synthetic = read_table(out)
    assert len(synthetic) == 2400 and list(synthetic.columns) == list(read_table(adult_small).columns)
    step = json.loads(recipe.read_text(encoding="utf-8"))["steps"][0]
    assert step["kind"] == "synthesize" and step["params"]["seed"] == 5
    again = tmp_path / "again.csv"
    code, _, err = run(capsys, "synthesize", str(adult_small), "--recipe", str(recipe), "-o", str(again), "--json")
    assert code == 0, err
    assert again.read_text(encoding="utf-8") == written


def test_partial_json_reports_what_was_replaced(capsys: pytest.CaptureFixture[str], adult_small: Path) -> None:
    code, text, err = run(
        capsys, "synthesize", str(adult_small), "--method", "partial", "--qi", QIS, "--k", "5", "--seed", "1",
        "--control-share", "0", "--n-targets", "300", "--json",
    )  # fmt: skip
    assert code == 0, err
    payload = json.loads(text)
    assert payload["method"] == "partial" and payload["rows"] == 3000
    assert 0 < payload["rows_replaced"] < 3000 and payload["cells_replaced"] == 4 * payload["rows_replaced"]
    assert payload["attacks"]["control"] is False  # no control: the attacks' baseline guesses
    assert payload["distance"]["median_control"] is None


def test_hybrid_replaces_its_share(capsys: pytest.CaptureFixture[str], adult_small: Path) -> None:
    code, text, err = run(
        capsys, "synthesize", str(adult_small), "--method", "hybrid", "--share", "0.25", "--qi", QIS, "--seed", "2",
        "--n-targets", "300", "--json",
    )  # fmt: skip
    assert code == 0, err
    assert json.loads(text)["rows_replaced"] == 600  # a quarter of the 2,400 training records


def test_dp_release_is_charged_to_the_ledger_and_a_second_over_budget_is_refused(
    capsys: pytest.CaptureFixture[str], data_dir: Path, tmp_path: Path
) -> None:
    adult_path = data_dir / "arx_adult" / "adult.csv"
    ledger, out = tmp_path / "ledger.json", tmp_path / "dp.csv"
    args = ["synthesize", str(adult_path), "--method", "dp", "--epsilon", "1", "--delta", "1e-6", "--bounds",
            "age=17:90", "--qi", "age,sex,race", "--n-targets", "300", "--ledger", str(ledger)]  # fmt: skip
    code, text, err = run(capsys, *args, "--budget", "1.5", "--dataset-identity", "adult", "-o", str(out), "--json")
    assert code == 0, err
    payload = json.loads(text)
    assert payload["privacy"] == {"epsilon": 1.0, "delta": 1e-6}
    account = BudgetLedger.load(ledger).account("adult")
    assert account.spent == pytest.approx((1.0, 1e-6), rel=0, abs=0)
    (entry,) = account.entries
    assert (entry.epsilon, entry.delta, entry.query) == (1.0, 1e-6, "synthesize")
    assert payload["ledger"]["remaining"]["epsilon"] == pytest.approx(0.5)
    # The noisy total of age's 20 bins: discrete Laplace of scale 36 per bin, standard deviation about 230.
    assert abs(len(read_table(out)) - round(0.8 * 30162)) < 1200
    second = tmp_path / "dp2.csv"
    code, _, err = run(capsys, *args, "--dataset-identity", "adult", "-o", str(second))
    assert code == 2 and "Privacy budget exhausted" in err
    assert not second.exists()
    assert len(BudgetLedger.load(ledger).account("adult").entries) == 1


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--method", "full"], "needs at least 10 records"),
        (["--method", "dp", "--epsilon", "1"], "bounds age=LOW:HIGH"),
        (["--method", "dp", "--epsilon", "0.001", "--bounds", "age=17:90"], "budget is too small for the domain"),
        (["--method", "hybrid", "--share", "0"], "must lie in (0, 1]"),
        (["--method", "full", "--columns", "agee"], "Unknown column to synthesize: 'agee'"),
        (["--method", "partial", "--columns", "country", "--rows", "all"], "one value"),
        (["--method", "full", "--control-share", "0.97"], "holding out 194 as control records leaves 6"),
        (["--method", "dp", "--epsilon", "1", "--bounds", "age=17:90", "--bins", "5"], "total budget with --budget"),
    ],
)
def test_bad_input_exits_2_with_its_message_and_writes_nothing(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, extra: list[str], message: str
) -> None:
    rows = 8 if extra == ["--method", "full"] else 200
    table = pd.DataFrame(
        {
            "age": [20 + i % 50 for i in range(rows)],
            "sex": ["f", "m"] * (rows // 2),
            "race": ["a", "b", "c", "d"] * (rows // 4),
            "country": ["NL"] * rows,
        }
    )
    source, out = tmp_path / "t.csv", tmp_path / "out.csv"
    table.to_csv(source, index=False)
    code, _, err = run(
        capsys,
        "synthesize",
        str(source),
        "--qi",
        "age,sex",
        "--control-share",
        "0",
        *extra,
        "-o",
        str(out),
        *(["--ledger", str(tmp_path / "ledger.json"), "--dataset-identity", "t"] if "--bins" in extra else []),
    )
    assert code == 2, err
    assert message in err
    assert not out.exists()


def test_anonymize_recipe_refuses_a_dp_step_and_points_at_synthesize(
    capsys: pytest.CaptureFixture[str], adult_small: Path, tmp_path: Path
) -> None:
    recipe, out = tmp_path / "dp.json", tmp_path / "out.csv"
    step = {"kind": "synthesize", "params": {"method": "dp", "epsilon": 1.0, "bounds": {"age": [17, 90]}}}
    recipe.write_text(json.dumps({"steps": [step]}), encoding="utf-8")
    code, _, err = run(capsys, "anonymize", str(adult_small), "--recipe", str(recipe), "-o", str(out))
    assert code == 2 and "privdash synthesize DATA --recipe" in err
    assert not out.exists()


def test_people_with_several_rows_and_direct_identifiers(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """A visits table: the patient id is never modelled and the control patients are held out whole; the name, a
    direct identifier, is left out with a note; a dp release charges the ledger at the bound on rows per person."""
    import numpy as np

    rng = np.random.default_rng(0)
    visits = rng.integers(1, 5, 800)
    pid = np.repeat([f"P{i:04d}" for i in range(800)], visits)
    table = pd.DataFrame(
        {
            "patient_id": pid,
            "name": np.repeat([f"Person {i}" for i in range(800)], visits),
            "sex": np.repeat(rng.choice(["f", "m"], 800), visits),
            "ward": rng.choice(["a", "b", "c"], len(pid)),
        }
    )
    source, out = tmp_path / "visits.csv", tmp_path / "out.csv"
    table.to_csv(source, index=False)
    common = ["synthesize", str(source), "--qi", "sex,ward", "--entity", "patient_id", "-o", str(out)]
    code, stdout, err = run(capsys, *common, "--method", "full", "--seed", "1", "--json")
    assert code == 0, err
    assert "not modelled or released: name" in err
    assert list(read_table(out).columns) == ["sex", "ward"]
    from privdash.synthesis import split_control

    # 20% of the 800 patients held out with all their visits (the split the command makes, by patient).
    training, control = split_control(read_table(source), share=0.2, seed=0, entity="patient_id")
    assert control["patient_id"].nunique() == 160 and set(training["patient_id"]).isdisjoint(control["patient_id"])
    attacks = json.loads(stdout)["attacks"]
    assert (attacks["rows_original"], attacks["rows_control"]) == (len(training), len(control))
    code, _, err = run(capsys, *common, "--method", "dp", "--epsilon", "2", "--domain", "sex=f,m")
    assert code == 2 and "--max-rows-per-person" in err
    ledger = tmp_path / "ledger.json"
    code, _, err = run(
        capsys, *common, "--method", "dp", "--epsilon", "2", "--domain", "sex=f,m", "--domain", "ward=a,b,c",
        "--max-rows-per-person", "2", "--ledger", str(ledger), "--dataset-identity", "visits", "--budget", "3",
    )  # fmt: skip
    assert code == 0, err
    (entry,) = BudgetLedger.load(ledger).account("visits").entries
    assert (entry.epsilon, entry.query) == (2.0, "synthesize")


def test_bounds_separated_by_commas_or_repeated_and_a_release_without_control(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    import numpy as np

    rng = np.random.default_rng(2)
    table = pd.DataFrame({"age": rng.integers(18, 90, 600), "income": rng.uniform(0, 1e5, 600).round(2)})
    source = tmp_path / "t.csv"
    table.to_csv(source, index=False)
    recipes = []
    for bounds in (["--bounds", "age=18:90,income=0:100000"], ["--bounds", "age=18:90", "--bounds", "income=0:100000"]):
        recipe = tmp_path / f"r{len(recipes)}.json"
        code, stdout, err = run(
            capsys, "synthesize", str(source), "--method", "dp", "--epsilon", "2", "--qi", "age", *bounds,
            "--control-share", "0", "--seed", "4", "-o", str(tmp_path / "o.csv"), "--recipe-out", str(recipe),
        )  # fmt: skip
        assert code == 0, err
        recipes.append(json.loads(recipe.read_text())["steps"][0]["params"]["bounds"])
        # No control records: the verdict reads the baseline guesses, and says so.
        assert "beyond control" not in stdout and "risk beyond the baselines would be" in stdout
    assert recipes[0] == recipes[1] == {"age": [18.0, 90.0], "income": [0.0, 100000.0]}
