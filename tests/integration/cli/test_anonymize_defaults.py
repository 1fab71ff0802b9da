"""``privdash anonymize`` without ``--hierarchies`` finds what the Fix page finds; a recipe that removes more than its
limit on new data warns, or fails with ``--strict``; the text output says where a kept column's loss comes from."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from privdash.application.fixruns import FixRuns
from privdash.application.services import Services
from privdash.application.settings import Settings
from privdash.application.state import ViewState
from privdash.cli import main
from privdash.data.demo import people_table

ROOT = Path(__file__).resolve().parents[3]
QIS = ["age", "sex", "postcode"]


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_default_hierarchies_are_the_pages(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    source = ROOT / "data" / "people.csv"
    code, out, err = run(
        capsys, "anonymize", str(source), "--qi", ",".join(QIS), "--k", "5", "--max-suppression", "0.05", "--json"
    )
    assert code == 0, err
    assert "no --hierarchies given" in err and "age: intervals" in err
    payload = json.loads(out)
    services = Services(Settings(store_dir=tmp_path / "store", cache_dir=tmp_path / "cache"))
    state = services.initial_state(services.dataset("demo:people"), ViewState()).with_quasi_identifiers(QIS, [])
    search = {"kind": "search", "k": 5, "l": None, "t": None, "max_risk": None, "max_suppression": 0.05}
    page = FixRuns(services).run(state.updated(fix=({**search, "metric": "loss"},)))
    found = page.results[0].summary["search"]
    assert payload["levels"] == found["levels"] and payload["suppressed"] == found["suppressed"] > 0
    assert payload["lattice_size"] == found["lattice_size"]


def test_recipe_over_its_limit_warns_or_fails(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    made_on, other = tmp_path / "made.csv", tmp_path / "other.csv"
    people_table().to_csv(made_on, index=False)
    new = people_table(300, seed=9)
    new.to_csv(other, index=False)
    recipe, first = tmp_path / "recipe.json", tmp_path / "first.csv"
    code, out, err = run(
        capsys, "anonymize", str(made_on), "--qi", ",".join(QIS), "--k", "5", "--max-suppression", "0.05",
        "-o", str(first), "--save-recipe", str(recipe),
    )  # fmt: skip
    assert code == 0, err
    assert json.loads(recipe.read_text())["max_suppression"] == 0.05
    # Its own data: within the limit, no warning.
    code, _, err = run(capsys, "anonymize", "--recipe", str(recipe), str(made_on), "-o", str(tmp_path / "again.csv"))
    assert code == 0 and "warning" not in err
    # New data: more removed than 5%, a warning on stderr, the output written.
    out_path = tmp_path / "out.csv"
    code, out, err = run(capsys, "anonymize", "--recipe", str(recipe), str(other), "-o", str(out_path), "--json")
    assert code == 0
    payload = json.loads(out)
    removed = payload["rows_in"] - payload["rows_out"]
    assert payload["rows_in"] == len(new) and removed > int(0.05 * len(new)) and payload["suppression_exceeded"]
    assert "warning" in err and f"removed {removed:,} of {len(new):,} records" in err and "--strict" in err
    assert len(pd.read_csv(out_path)) == payload["rows_out"]
    # --strict: exit 1, nothing written.
    strict = tmp_path / "strict.csv"
    code, out, err = run(capsys, "anonymize", "--recipe", str(recipe), str(other), "-o", str(strict), "--strict")
    assert code == 1 and not strict.exists() and "error" in err and "Nothing was written" in err and out == ""
    # --strict is for recipes only.
    code, _, err = run(capsys, "anonymize", "--config", str(recipe), "--strict")
    assert code == 2 and "--strict" in err


def test_text_output_says_the_loss_of_kept_columns_comes_from_suppression(
    capsys: pytest.CaptureFixture[str], data_dir: Path
) -> None:
    source = data_dir / "arx_adult" / "adult.csv"
    args = ["anonymize", str(source), "--qi", "sex,age,race", "--k", "5", "--max-suppression", "0.02"]
    code, out, err = run(capsys, *args, "--hierarchies", str(data_dir / "arx_adult" / "hierarchies"), "--json")
    assert code == 0, err
    payload = json.loads(out)
    kept = [name for name, level in payload["levels"].items() if level == 0]
    assert kept and payload["suppressed"] > 0  # the case of the report: a column kept, records suppressed
    code, text, err = run(capsys, *args, "--hierarchies", str(data_dir / "arx_adult" / "hierarchies"))
    assert code == 0, err
    for name in kept:
        line = next(line for line in text.splitlines() if line.startswith(name + " "))
        assert f"values unchanged; loss from the {payload['suppressed']:,} suppressed records" in line
    assert "loses only through suppression" in text
