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


def test_a_release_loads_neither_opendps_extras_nor_scikit_learn() -> None:
    # opendp.prelude imports opendp.extras (scikit-learn, SciPy, ...: about 1,700 modules, seconds on a first run
    # without bytecode); privdash's releases use OpenDP's core modules only, the same objects.
    out = run(
        """
        import sys
        import pandas as pd
        from privdash.dp import dp_count, dp_histogram
        import privdash.dp._opendp as ours
        import opendp.mod
        frame = pd.DataFrame({"a": ["x", "y", "x"]})
        dp_count(frame, epsilon=1.0)
        dp_histogram(frame, "a", domain=["x", "y"], epsilon=1.0)
        loaded = [name for name in ("opendp.prelude", "opendp.extras", "sklearn", "scipy") if name in sys.modules]
        print(loaded, ours.GLOBAL_FEATURES is opendp.mod.GLOBAL_FEATURES)
        """
    )
    assert out == "[] True"
