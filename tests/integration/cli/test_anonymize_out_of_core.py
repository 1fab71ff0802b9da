"""``privdash anonymize --engine duckdb``: the search on the per-class aggregate and the fix streamed to the output
give what the in-memory command gives, on Adult as a CSV and as a Parquet dataset."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from privdash.cli import main
from privdash.data.tables import read_table

ADULT_QIS = "sex,age,race,marital-status,education,native-country,workclass,salary-class"


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture(scope="module")
def adult(data_dir: Path) -> tuple[Path, Path]:
    return data_dir / "arx_adult" / "adult.csv", data_dir / "arx_adult" / "hierarchies"


def search(capsys, source: Path | str, hierarchies: Path, out: Path, recipe: Path, engine: str) -> dict:
    code, stdout, err = run(
        capsys,
        "anonymize", str(source), "--qi", ADULT_QIS, "--hierarchies", str(hierarchies), "--k", "5",
        "--l", "2", "--sensitive", "occupation", "--max-suppression", "0.05", "--engine", engine,
        "-o", str(out), "--save-recipe", str(recipe), "--json",
    )  # fmt: skip
    assert code == 0, err
    return json.loads(stdout)


def test_the_out_of_core_search_and_fix_equal_the_in_memory_ones(capsys, adult, tmp_path: Path) -> None:
    source, hierarchies = adult
    memory = search(capsys, source, hierarchies, tmp_path / "m.parquet", tmp_path / "m.json", "pandas")
    streamed = search(capsys, source, hierarchies, tmp_path / "s.parquet", tmp_path / "s.json", "duckdb")
    for key in ("levels", "suppressed", "loss", "k", "classes", "nodes_checked"):
        assert streamed[key] == memory[key], key
    assert streamed["engine"] == "duckdb" and streamed["streamed"]["rows_out"] == 30_162 - memory["suppressed"]
    assert json.loads((tmp_path / "s.json").read_text()) == json.loads((tmp_path / "m.json").read_text())
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "s.parquet"), pd.read_parquet(tmp_path / "m.parquet"))


def test_a_recipe_streamed_over_a_parquet_dataset(capsys, adult, tmp_path: Path) -> None:
    source, hierarchies = adult
    search(capsys, source, hierarchies, tmp_path / "m.csv", tmp_path / "r.json", "pandas")
    lake = tmp_path / "lake"
    lake.mkdir()
    table = read_table(source)
    for i in range(3):
        table.iloc[i::3].to_parquet(lake / f"part-{i}.parquet", index=False)
    code, stdout, err = run(
        capsys, "anonymize", str(lake / "*.parquet"), "--recipe", str(tmp_path / "r.json"), "-o",
        str(tmp_path / "lake.csv"), "--batch-rows", "5000", "--json",
    )  # fmt: skip
    assert code == 0, err
    streamed = json.loads(stdout)["streamed"]
    assert streamed["batches"] >= 7 and streamed["rows_in"] == 30_162  # batches of at most 5,000 rows
    published = read_table(tmp_path / "lake.csv")
    reference = read_table(tmp_path / "m.csv")
    assert len(published) == len(reference) == streamed["rows_out"]
    # The same records, in the dataset's row order (file by file).
    key = list(reference.columns)
    assert published.sort_values(key).reset_index(drop=True).equals(reference.sort_values(key).reset_index(drop=True))


def test_a_recipe_that_removes_more_than_its_limit_warns_or_fails_with_strict(capsys, adult, tmp_path: Path) -> None:
    source, hierarchies = adult
    search(capsys, source, hierarchies, tmp_path / "m.csv", tmp_path / "r.json", "pandas")
    small = tmp_path / "small.parquet"
    read_table(source).head(2_000).to_parquet(small, index=False)
    arguments = ["anonymize", str(small), "--recipe", str(tmp_path / "r.json"), "--engine", "duckdb"]
    code, _, err = run(capsys, *arguments, "-o", str(tmp_path / "strict.parquet"), "--strict")
    assert code == 1 and "suppression limit" in err and "Nothing was written" in err
    assert not (tmp_path / "strict.parquet").exists() and not list(tmp_path.glob(".*partial"))
    code, _, err = run(capsys, *arguments, "-o", str(tmp_path / "loose.parquet"))
    assert code == 0 and "warning" in err and (tmp_path / "loose.parquet").exists()


def test_bad_out_of_core_requests(capsys, adult, tmp_path: Path) -> None:
    source, hierarchies = adult
    code, _, err = run(capsys, "anonymize", str(source), "--qi", ADULT_QIS, "--engine", "duckdb")
    assert code == 2 and "give --hierarchies" in err
    recipe = tmp_path / "r.json"
    search(capsys, source, hierarchies, tmp_path / "m.csv", recipe, "pandas")
    code, _, err = run(capsys, "anonymize", str(source), "--recipe", str(recipe), "--engine", "duckdb")
    assert code == 2 and "give -o OUT" in err
    code, _, err = run(capsys, "anonymize", str(tmp_path / "none-*.parquet"), "--recipe", str(recipe), "-o", "x.csv")
    assert code == 2 and "No file matches" in err
