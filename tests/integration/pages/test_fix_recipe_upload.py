"""The Fix page's recipe upload reads a recipe as the command line does: UTF-8 or UTF-16 files are applied, anything
else gives the page a message (no browser)."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from dashboard.pages import fix as page
from privdash.application.fixruns import FixRuns
from privdash.application.services import Services
from privdash.application.settings import Settings
from privdash.application.state import ViewState
from privdash.errors import PrivdashError

TOP_CODE = {"kind": "top_bottom_coding", "params": {"column": "age", "top": 60}}


@pytest.fixture
def runs(tmp_path: Path) -> FixRuns:
    return FixRuns(Services(Settings(store_dir=tmp_path / "store", cache_dir=tmp_path / "cache")))


@pytest.fixture
def state(runs: FixRuns) -> ViewState:
    return runs.services.initial_state(runs.services.dataset("demo:people"), ViewState())


def upload(content: bytes) -> str:
    return "data:application/json;base64," + base64.b64encode(content).decode("ascii")


@pytest.mark.parametrize("encoding", ["utf-8", "utf-8-sig", "utf-16"])
def test_unicode_recipes_are_applied(runs: FixRuns, state: ViewState, encoding: str) -> None:
    text = json.dumps({"privdash_recipe": 1, "steps": [TOP_CODE]})
    outcome = page.recipe_outcome(runs, state, upload(text.encode(encoding)))
    assert outcome.rows_out == outcome.rows_in and int(outcome.data["age"].max()) == 60


@pytest.mark.parametrize(
    ("content", "words"),
    [
        (
            '{"steps": [{"kind": "drop_identifiers", "params": {"columns": ["é"]}}]}'.encode("latin-1"),
            "not UTF-8 text: byte 0xe9",
        ),
        (b"[" * 100_000 + b"]" * 100_000, "levels deep"),
        (
            b'{"steps": [{"kind": "rank_swap", "params": {"columns": ["age"], "p": ' + b"9" * 5000 + b"}}]}",
            "5,000 digits",
        ),
        (
            json.dumps({"steps": [{"kind": "add_noise", "params": {"columns": ["age"], "share": 1e308}}]}).encode(),
            r"share must lie in \[0, 100\]",
        ),
        (json.dumps({"steps": {"kind": "add_noise"}}).encode(), "'steps' is an object"),
        (
            json.dumps({"steps": [{"kind": "top_bottom_coding", "params": {"column": "agee", "top": 1}}]}).encode(),
            "did you mean 'age'",
        ),
    ],
)
def test_bad_recipes_give_the_page_a_message(runs: FixRuns, state: ViewState, content: bytes, words: str) -> None:
    with pytest.raises(PrivdashError, match=words):
        page.recipe_outcome(runs, state, upload(content))


def test_a_broken_upload_is_refused(runs: FixRuns, state: ViewState) -> None:
    with pytest.raises(PrivdashError, match="could not be decoded"):
        page.recipe_outcome(runs, state, "data:application/json;base64,@@@")
