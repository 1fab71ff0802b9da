from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from privdash.cli import main
from privdash.data.tables import read_table
from privdash.measure.classes import equivalence_classes

ADULT_QIS = "sex,age,race,marital-status,education,native-country,workclass,salary-class"


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_json_schema_on_adult(capsys: pytest.CaptureFixture[str], data_dir: Path) -> None:
    path = data_dir / "arx_adult" / "adult.csv"
    code, out, err = run(capsys, "diagnose", str(path), "--qi", ADULT_QIS, "--sensitive", "occupation", "--json")
    assert code == 0, err
    payload = json.loads(out)
    adult = read_table(path)
    classes = equivalence_classes(adult, ADULT_QIS.split(","))
    assert payload["rows"] == 30162
    assert payload["quasi_identifiers"] == ADULT_QIS.split(",")
    assert payload["classes"] == classes.n_classes and payload["k"] == classes.k
    assert payload["sample_uniques"] == classes.sample_uniques
    assert list(payload["records_below_k"]) == [str(k) for k in range(2, 11)]
    assert payload["records_below_k"]["5"] == classes.records_below(5)
    sizes = classes.size_frequencies()
    assert payload["class_size_counts"] == {
        str(s): int(c) for s, c in zip(sizes["size"], sizes["classes"], strict=True)
    }
    for model in ("prosecutor", "journalist", "marketer"):
        assert set(payload[model]) >= {"highest", "average", "records_at_risk"}
        assert 0 <= payload[model]["records_at_risk"] <= 1
    assert payload["prosecutor"]["records_at_risk"] == pytest.approx(classes.records_below(5) / 30162)
    occupation = payload["sensitive"]["occupation"]
    assert occupation["t_distance"] == "equal"
    assert occupation["recursive_c"] is None  # no c works when a class holds a single occupation
    assert set(occupation["alpha_k"]) == {"alpha", "k"}


def test_threshold_population_and_missing_options(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    data = pd.DataFrame({"a": ["x", "x", None, "y", "y", None], "b": ["1", "1", "1", "2", None, None]})
    path = tmp_path / "t.csv"
    data.to_csv(path, index=False)
    outputs = {}
    for policy in ("value", "wildcard", "drop"):
        code, out, err = run(capsys, "diagnose", str(path), "--qi", "a,b", "--missing", policy, "--json")
        assert code == 0, err
        outputs[policy] = json.loads(out)
    assert outputs["value"]["k"] == 1 and outputs["wildcard"]["k"] == 3
    assert outputs["drop"]["dropped"] == 3 and outputs["drop"]["records"] == 3
    population = tmp_path / "pop.csv"
    pd.DataFrame({"a": ["x", "y", "z"], "b": ["1", "2", "3"], "n": [100, 50, 10]}).to_csv(population, index=False)
    code, out, err = run(
        capsys, "diagnose", str(path), "--qi", "a,b", "--missing", "drop", "--population", str(population),
        "--population-count", "n", "--max-risk", "0.05", "--json",
    )  # fmt: skip
    assert code == 0, err
    payload = json.loads(out)
    assert payload["journalist"]["highest"] == pytest.approx(1 / 50)
    assert payload["population"]["source"] == "table"
    code, out, _ = run(capsys, "diagnose", str(path), "--qi", "a,b", "--population", "1000", "--json")
    assert code == 0 and json.loads(out)["population"]["population_size"] == 1000


def test_contract_and_text_output(capsys: pytest.CaptureFixture[str]) -> None:
    root = Path(__file__).resolve().parents[3]
    code, out, err = run(
        capsys, "diagnose", str(root / "data" / "people.csv"), "--contract", str(root / "data" / "people.contract.json")
    )
    assert code == 0, err
    assert "k = 1" in out and "direct identifiers to remove or mask: customer_id, name, email, phone" in out
    assert "sensitive attribute 'diagnosis'" in out and "t-closeness (ordered distance)" in out


@pytest.mark.parametrize(
    ("make", "args", "message"),
    [
        (lambda p: p.write_text("a,b\n1,2\n"), ["--qi", "c"], "Unknown quasi-identifier: 'c'"),
        (lambda p: p.write_text(""), ["--qi", "a"], "is empty"),
        (lambda p: p.write_bytes(b"\x00\x01\x02\x03"), ["--qi", "a"], "binary"),
        (lambda p: p.write_text("a,b\n1,2\n"), ["--qi", "a", "--max-risk", "2"], "max_risk must lie in [0, 1]"),
        (lambda p: p.write_text("a,b\n1,2\n"), ["--qi", "a", "--population", "lots"], "--population"),
        (lambda p: p.write_text("a,b\n1,2\n"), ["--qi", "a", "--population", "0"], "positive"),
        (lambda p: p.write_text("a,b\n1,2\n"), ["--qi", "a", "--sensitive", "a"], "both"),
        (lambda p: p.write_text("a,b\n1,2\n"), ["--qi", "a", "--contract", "absent.json"], "Cannot read the contract"),
    ],
)
def test_bad_input_gives_a_message_and_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, make: object, args: list[str], message: str
) -> None:
    path = tmp_path / "in.csv"
    make(path)  # type: ignore[operator]
    code, out, err = run(capsys, "diagnose", str(path), *args)
    assert code == 2
    assert message in err and "Traceback" not in err and out == ""


def test_missing_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = run(capsys, "diagnose", str(tmp_path / "absent.csv"), "--qi", "a")
    assert code == 2 and "File not found" in err


def test_targets_set_the_exit_status(capsys: pytest.CaptureFixture[str], data_dir: Path) -> None:
    path = str(data_dir / "arx_adult" / "adult.csv")
    code, out, err = run(capsys, "diagnose", path, "--qi", "sex,age,race", "--targets", "k=5,risk=0.2", "--json")
    assert code == 1
    verdict = json.loads(out)["verdict"]
    assert verdict["status"] == "fail" and [c["target"] for c in verdict["checks"]] == ["k", "max_risk"]
    classes = equivalence_classes(read_table(path), ["sex", "age", "race"])
    assert verdict["checks"][0]["records_failing"] == classes.records_below(5)
    assert err.startswith("privdash diagnose: Not safe to release:")
    # The targets' max_risk is the diagnosis's threshold when --max-risk is not given.
    assert json.loads(out)["prosecutor"]["threshold"] == 0.2
    code, out, err = run(capsys, "diagnose", path, "--qi", "sex", "--targets", "k=5")
    assert code == 0 and "verdict: PASS" in out and err == ""
    code, _, err = run(capsys, "diagnose", path, "--qi", "sex", "--targets", "k=five")
    assert code == 2 and "The target k must be a number" in err


def test_old_option_spellings_still_work(capsys: pytest.CaptureFixture[str], data_dir: Path) -> None:
    path = str(data_dir / "arx_adult" / "adult.csv")
    common = ["diagnose", path, "--qi", "sex,age", "--sensitive", "race", "--recursive-l", "3", "--json"]
    old = run(capsys, *common, "--threshold", "0.1")
    new = run(capsys, *common, "--max-risk", "0.1")
    assert old[0] == new[0] == 0 and old[1] == new[1]
    assert json.loads(new[1])["prosecutor"]["threshold"] == 0.1
    assert json.loads(new[1])["prosecutor"]["max_risk"] == json.loads(new[1])["max_risk"] == 0.1
    assert new[2] == ""
    assert "privdash diagnose: warning: --threshold is deprecated" in old[2] and "use --max-risk" in old[2]


def test_l_is_never_recursive_l(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """--l is the distinct l-diversity target everywhere: diagnose refuses it (it used to set recursive_l) and names
    the options to use instead of silently measuring something else."""
    path = tmp_path / "t.csv"
    path.write_text("a,s\n1,x\n1,y\n")
    with pytest.raises(SystemExit) as stopped:
        main(["diagnose", str(path), "--qi", "a", "--sensitive", "s", "--l", "3"])
    err = capsys.readouterr().err
    assert stopped.value.code == 2
    assert "--recursive-l N" in err and "--targets l=N" in err and "Traceback" not in err
    code, out, err = run(capsys, "diagnose", str(path), "--qi", "a", "--sensitive", "s", "--recursive-l", "3", "--json")
    assert code == 0 and json.loads(out)["sensitive"]["s"]["recursive_l"] == 3


def test_sql_names_the_query_of_a_database_and_query_is_deprecated(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "t.csv"
    path.write_text("a\n1\n")
    code, _, err = run(capsys, "diagnose", str(path), "--qi", "a", "--sql", "SELECT 1")
    assert code == 2 and "--table and --sql name the records of a postgresql:// source" in err
    code, _, err = run(capsys, "diagnose", str(path), "--qi", "a", "--query", "SELECT 1")
    assert code == 2 and "warning: --query is deprecated" in err and "use --sql" in err


def test_engines_give_the_same_json(capsys: pytest.CaptureFixture[str], data_dir: Path, tmp_path: Path) -> None:
    path = str(data_dir / "arx_adult" / "adult.csv")
    args = ["--qi", "sex,age,race,education", "--sensitive", "occupation", "--json"]
    outputs = {}
    for engine in ("pandas", "duckdb"):
        code, out, err = run(capsys, "diagnose", path, *args, "--engine", engine, "--memory-limit", "1GB")
        assert code == 0, err
        outputs[engine] = json.loads(out)
        assert outputs[engine].pop("engine") == engine
    assert outputs["pandas"] == outputs["duckdb"]
    read_table(path).to_parquet(tmp_path / "part-0.parquet", index=False)
    code, out, err = run(capsys, "diagnose", str(tmp_path / "*.parquet"), *args)  # auto: a Parquet glob -> duckdb
    assert code == 0, err
    lake = json.loads(out)
    assert lake.pop("engine") == "duckdb" and lake == outputs["pandas"]
    code, out, err = run(capsys, "diagnose", str(tmp_path / "nothing-*.parquet"), "--qi", "sex")
    assert code == 2 and "No file matches" in err and out == ""
    code, _, err = run(capsys, "diagnose", path, "--qi", "sex", "--engine", "duckdb", "--memory-limit", "lots")
    assert code == 2 and "Invalid memory_limit" in err
