"""``privdash diagnose --qi ...`` reads only the columns it analyses: the same diagnosis as the table read whole, the
same messages for unknown columns."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from privdash.cli import main
from privdash.data.tables import read as tables_read
from privdash.measure.diagnose import diagnose


def _wide(path: Path) -> None:
    rng = np.random.default_rng(11)
    n = 2_000
    frame = pd.DataFrame({f"c{j}": rng.integers(0, 1_000, n) for j in range(120)})
    frame.insert(3, "sex", np.array(["F", "M", "NA"])[rng.integers(0, 3, n)])
    frame.insert(40, "zip", np.array(["02134", "10001", "94110"])[rng.integers(0, 3, n)])
    frame.insert(90, "income", np.round(rng.normal(5e4, 1e4, n), 2).astype(str))
    frame.insert(100, "weight", rng.uniform(1, 50, n).round(3))
    frame.to_csv(path, index=False)


def test_a_wide_file_is_diagnosed_from_its_named_columns(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    path = tmp_path / "wide.csv"
    _wide(path)
    asked: list[Any] = []
    original = tables_read._read_text_arrow

    def recording(*args: Any) -> Any:
        asked.append(args[4] if len(args) > 4 else None)
        return original(*args)

    monkeypatch.setattr(tables_read, "_read_text_arrow", recording)
    args = ["diagnose", str(path), "--qi", "zip,sex", "--sensitive", "income", "--weights", "weight"]
    code = main([*args, "--json", "--engine", "pandas"])
    out = capsys.readouterr()
    assert code == 0, out.err
    assert asked == [["zip", "sex", "income", "weight"]]
    payload = json.loads(out.out)
    whole = tables_read.read_table(path)
    expected = diagnose(whole, ["zip", "sex"], sensitive=["income"], weights="weight").to_dict()
    for key in ("rows", "classes", "k", "sample_uniques", "records_below_k", "class_size_counts", "prosecutor"):
        assert payload[key] == json.loads(json.dumps(expected[key])), key


def test_an_unknown_column_is_named_with_its_close_match(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "wide.csv"
    _wide(path)
    code = main(["diagnose", str(path), "--qi", "zip,sexx", "--engine", "pandas"])
    err = capsys.readouterr().err
    assert code == 2
    assert "Unknown quasi-identifier: 'sexx' (did you mean 'sex'?)" in err
