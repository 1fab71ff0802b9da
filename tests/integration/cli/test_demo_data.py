from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from privdash.cli import main
from privdash.data.demo import uniform_table


def test_missing_share_and_its_old_spelling(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """demo-data's share of missing cells is --missing-share (--missing is the missing-value policy everywhere else);
    the old spelling is read with a deprecation message and gives the same table."""
    new, old = tmp_path / "new.csv", tmp_path / "old.csv"
    assert main(["demo-data", "uniform", "--rows", "60", "--missing-share", "0.2", "-o", str(new)]) == 0
    assert "deprecated" not in capsys.readouterr().err
    assert main(["demo-data", "uniform", "--rows", "60", "--missing", "0.2", "-o", str(old)]) == 0
    err = capsys.readouterr().err
    assert "--missing is deprecated" in err and "use --missing-share" in err
    written = pd.read_csv(new, keep_default_na=True)
    pd.testing.assert_frame_equal(written, pd.read_csv(old))
    expected = uniform_table(60, missing_share=0.2)
    assert written.isna().to_numpy().sum() == expected.isna().to_numpy().sum() > 0
