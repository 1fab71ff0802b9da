"""The entry points read the settings once and pass them down: ``privdash serve``, ``python -m dashboard``,
``app.py``, the data folder of ``privdash postcodes`` and the key of a re-applied recipe."""

from __future__ import annotations

import json
import runpy
import sys
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from dash import Dash

from privdash.cli import main
from privdash.transform.identifiers import KEY_ENV, pseudonymize
from privdash.transform.steps import Recipe

ROOT = Path(__file__).resolve().parents[3]
EW = ("uk_postcode_population_ew2011_outward", "ew2011_outward_code_population.csv")
KEY = "a-test-key-of-enough-length-123"


@pytest.fixture
def served(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[dict[str, Any]]:
    """Dash's server replaced by a record of how it was started; the folders of the app in ``tmp_path``."""
    calls: list[dict[str, Any]] = []

    def run(self: Dash, **kwargs: Any) -> None:
        calls.append({"assets": self.config.assets_folder, **kwargs})

    monkeypatch.setattr(Dash, "run", run)
    monkeypatch.setenv("PRIVDASH_STORE_DIR", str(tmp_path / "store"))
    monkeypatch.setenv("PRIVDASH_CACHE_DIR", str(tmp_path / "cache"))
    for name in ("HOST", "PORT"):
        monkeypatch.delenv(name, raising=False)
    return calls


def test_serve_uses_the_settings_and_the_options(served: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch) -> None:
    assert main(["serve"]) == 0
    assert served[-1]["host"] == "127.0.0.1" and served[-1]["port"] == 8050 and served[-1]["debug"] is False
    assert Path(served[-1]["assets"], "privdash.css").is_file()
    monkeypatch.setenv("HOST", "0.0.0.0")
    monkeypatch.setenv("PORT", "9001")
    assert main(["serve"]) == 0
    assert (served[-1]["host"], served[-1]["port"]) == ("0.0.0.0", 9001)
    assert main(["serve", "--host", "127.0.0.2", "--port", "9002"]) == 0
    assert (served[-1]["host"], served[-1]["port"]) == ("127.0.0.2", 9002)


def test_python_m_dashboard_is_serve(served: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "argv", ["dashboard", "--port", "9003"])
    with pytest.raises(SystemExit) as exit_info:
        runpy.run_module("dashboard", run_name="__main__")
    assert exit_info.value.code == 0
    assert (served[-1]["host"], served[-1]["port"]) == ("127.0.0.1", 9003)


def test_app_py_builds_the_app_from_the_environment(
    served: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PORT", "9004")
    module = runpy.run_path(str(ROOT / "app.py"))
    assert module["settings"].port == 9004 and module["server"] is module["app"].server
    module["main"](["--host", "127.0.0.3"])
    assert (served[-1]["host"], served[-1]["port"]) == ("127.0.0.3", 9004)


def test_a_bare_population_name_is_looked_up_in_the_data_folder(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path, data_dir: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PRIVDASH_DATA_DIR", str(data_dir))
    name = EW[-1]
    assert main(["postcodes", "--population", name, "--strategy", "area", "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["population_file"] == str(data_dir.joinpath(*EW)) and payload["below_threshold"][0]["code"] == "DG"
    # A file of that name in the working folder comes first.
    local = pd.read_csv(data_dir.joinpath(*EW), dtype={"postcode": str}).head(40)
    local.to_csv(tmp_path / name, index=False)
    assert main(["postcodes", "--population", name, "--strategy", "outward", "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["population_file"] == name and len(payload["mapping"]) == 40
    # Nowhere to be found: the message names both places.
    assert main(["postcodes", "--population", "nothing.csv"]) == 2
    err = capsys.readouterr().err
    assert "Population file not found: nothing.csv" in err and str(data_dir) in err and "PRIVDASH_DATA_DIR" in err


def test_the_recipe_gets_the_key_from_the_settings(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    table = pd.DataFrame({"email": ["ann@example.org", "bob@example.org", "ann@example.org"], "age": [30, 41, 30]})
    source = tmp_path / "people.csv"
    table.to_csv(source, index=False)
    step = pseudonymize(table, columns=["email"], key=KEY).step
    recipe = tmp_path / "recipe.json"
    Recipe((step,)).save(recipe)
    assert KEY not in recipe.read_text()
    out = tmp_path / "out.csv"
    monkeypatch.delenv(KEY_ENV, raising=False)
    assert main(["anonymize", str(source), "--recipe", str(recipe), "-o", str(out)]) == 2
    assert KEY_ENV in capsys.readouterr().err and not out.exists()
    monkeypatch.setenv(KEY_ENV, KEY)
    assert main(["anonymize", str(source), "--recipe", str(recipe), "-o", str(out)]) == 0
    published = pd.read_csv(out)
    expected = pseudonymize(table, columns=["email"], key=KEY).data["email"]
    assert published["email"].tolist() == expected.tolist() and KEY not in capsys.readouterr().out
    monkeypatch.setenv(KEY_ENV, "another-key-of-enough-length-456")
    assert main(["anonymize", str(source), "--recipe", str(recipe), "-o", str(tmp_path / "other.csv")]) == 2
    assert "not the one this step was recorded with" in capsys.readouterr().err


def test_the_default_data_folder_is_beside_the_working_folder(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path, data_dir: Path
) -> None:
    """The README's ``privdash postcodes --population ew2011_outward_code_population.csv``, run in a clone with
    ``shared/data`` beside it and no ``PRIVDASH_DATA_DIR``."""
    (tmp_path / "shared").mkdir()
    (tmp_path / "shared" / "data").symlink_to(data_dir, target_is_directory=True)
    clone = tmp_path / "clone"
    clone.mkdir()
    monkeypatch.chdir(clone)
    monkeypatch.delenv("PRIVDASH_DATA_DIR", raising=False)
    assert main(["postcodes", "--population", EW[-1], "--strategy", "mixed", "--json"]) == 0
    found = Path(json.loads(capsys.readouterr().out)["population_file"])
    assert found.samefile(data_dir.joinpath(*EW))


def test_python_dash_m_privdash_is_the_command(tmp_path: Path) -> None:
    import subprocess

    done = subprocess.run(
        [sys.executable, "-m", "privdash", "--version"], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert done.stdout.strip() == "privdash 0.1.0"
    bad = subprocess.run(
        [sys.executable, "-m", "privdash", "diagnose", str(tmp_path / "missing.csv"), "--qi", "a"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert bad.returncode == 2 and "missing.csv" in bad.stderr


def test_a_reader_that_closes_the_pipe_early_gets_no_traceback() -> None:
    """``privdash demo-data uniform --rows 200000 | head -c 20``: the command stops quietly when its reader goes
    away. The table (4.8 MB) is far larger than a pipe's buffer, so the command is still writing when the reader
    leaves: status 141, as Unix tools end, where the system reports the broken pipe (some sandboxes' pipes accept
    the writes and the command ends with 0); never a traceback."""
    import subprocess

    command = [sys.executable, "-m", "privdash", "demo-data", "uniform", "--rows", "200000"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
    assert process.stdout is not None and process.stderr is not None
    assert process.stdout.read(20).startswith(b"A,B,C")
    process.stdout.close()  # the reader leaves before the rest of the table is written
    error = process.stderr.read().decode()
    assert process.wait(timeout=120) in (0, 141) and "Traceback" not in error and "BrokenPipe" not in error


def test_a_broken_pipe_ends_the_command_with_status_141(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The handler itself: a write that finds the reader gone ends the command with 141 and standard output
    pointed at nothing, so that the interpreter's flush at exit cannot fail again."""
    import io

    from privdash.cli import EXIT_BROKEN_PIPE

    class GoneReader(io.TextIOWrapper):
        def write(self, text: str) -> int:
            raise BrokenPipeError(32, "Broken pipe")

    # A real descriptor (a file) for the handler to point at nothing.
    with open(tmp_path / "stdout", "wb") as target, capsys.disabled():
        monkeypatch.setattr(sys, "stdout", GoneReader(target))
        assert main(["demo-data", "uniform", "--rows", "10"]) == EXIT_BROKEN_PIPE
