"""``privdash anonymize --recipe``: bad recipe files exit with 2 and a one-line message, write nothing, and never
print a traceback; a UTF-16 recipe (as Windows editors save "Unicode" text) is applied."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest

from privdash.cli import main

TABLE = pd.DataFrame({"age": [23, 45, 67, 81, 34, 52], "zip": ["12345", "12346", "2234", "22345", "1", "12"]})


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def recipe(*steps: dict) -> bytes:
    return json.dumps({"privdash_recipe": 1, "steps": list(steps)}).encode()


TOP_CODE = {"kind": "top_bottom_coding", "params": {"column": "age", "top": 60}}
BAD = {
    "utf16": (recipe(TOP_CODE).decode().encode("utf-16"), None),
    "latin1": (
        '{"steps": [{"kind": "drop_identifiers", "params": {"columns": ["prénom"]}}]}'.encode("latin-1"),
        "is not UTF-8 text: byte 0xe9",
    ),
    "deep": (b"[" * 100_000 + b"]" * 100_000, "levels deep"),
    "digits": (
        b'{"steps": [{"kind": "top_bottom_coding", "params": {"column": "age", "top": ' + b"9" * 5000 + b"}}]}",
        "(5,000 digits)",
    ),
    "nan": (b'{"steps": [{"kind": "add_noise", "params": {"columns": ["age"], "share": NaN}}]}', "NaN, which is not"),
    "share": (recipe({"kind": "add_noise", "params": {"columns": ["age"], "share": 1e308, "seed": 1}}), r"\[0, 100\]"),
    "steps-object": (json.dumps({"steps": {"kind": "add_noise"}}).encode(), "'steps' is an object"),
    "unknown-kind": (recipe({"kind": "rankswap", "params": {}}), "did you mean 'rank_swap'"),
    "unknown-column": (recipe({"kind": "rank_swap", "params": {"columns": ["agee"], "p": 5}}), "did you mean 'age'"),
    "p-fraction": (recipe({"kind": "rank_swap", "params": {"columns": ["age"], "p": 500}}), r"p = 100 \* x"),
    "many-steps": (recipe(*[TOP_CODE] * 1001), "1,001 steps"),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_recipe_files(capsys: pytest.CaptureFixture[str], tmp_path: Path, name: str) -> None:
    content, words = BAD[name]
    source, path, out = tmp_path / "table.csv", tmp_path / f"{name}.json", tmp_path / "out.csv"
    TABLE.to_csv(source, index=False)
    path.write_bytes(content)
    code, _, err = run(capsys, "anonymize", "--recipe", str(path), str(source), "-o", str(out))
    if words is None:
        assert code == 0, err
        assert pd.read_csv(out)["age"].max() == 60
        return
    assert code == 2 and "Traceback" not in err and not out.exists()
    lines = [line for line in err.splitlines() if line.startswith("privdash anonymize: error:")]
    assert len(lines) == 1 and re.search(words, lines[0]), err


def test_masking_steps_of_a_billion_apply_at_once(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    rule = {"builder": "masking", "steps": 1e9, "char": "*", "top": True}
    source, path, out = tmp_path / "table.csv", tmp_path / "mask.json", tmp_path / "out.csv"
    TABLE.to_csv(source, index=False)
    path.write_bytes(
        recipe({"kind": "generalize", "params": {"columns": {"zip": {"level": 3, "hierarchy": {"rule": rule}}}}})
    )
    code, _, err = run(capsys, "anonymize", "--recipe", str(path), str(source), "-o", str(out))
    assert code == 0, err
    assert pd.read_csv(out, dtype=str)["zip"].tolist() == ["12***", "12***", "2***", "22***", "*", "**"]
