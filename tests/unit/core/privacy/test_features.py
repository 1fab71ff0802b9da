"""privdash enables OpenDP's "contrib" features only around its own measurements and leaves OpenDP's setting as
the user chose it (privdash/dp/mechanisms.py)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[4]


def run(code: str) -> str:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], cwd=ROOT, capture_output=True, text=True, check=True, timeout=120
    ).stdout.strip()


def test_privdash_does_not_enable_contrib_for_the_user() -> None:
    # In a fresh process: importing privdash's DP modules and running a release leave "contrib" disabled.
    out = run(
        """
        import opendp.prelude as dp
        import pandas as pd
        from privdash.dp import dp_count
        import privdash.dp.release
        before = "contrib" in dp.GLOBAL_FEATURES
        release = dp_count(pd.DataFrame({"a": [1, 2, 3]}), epsilon=1.0)
        print(before, "contrib" in dp.GLOBAL_FEATURES, release.value == release.value)
        """
    )
    assert out == "False False True"


def test_a_user_who_enabled_contrib_keeps_it() -> None:
    out = run(
        """
        import opendp.prelude as dp
        import pandas as pd
        dp.enable_features("contrib")
        from privdash.dp import dp_count
        dp_count(pd.DataFrame({"a": [1, 2, 3]}), epsilon=1.0)
        print("contrib" in dp.GLOBAL_FEATURES)
        """
    )
    assert out == "True"
