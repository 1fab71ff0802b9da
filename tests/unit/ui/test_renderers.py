"""The report's renderers (matplotlib, WeasyPrint) are loaded once in the fork server of background jobs, so that a
Report job starts with them; the web workers never import them."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from dashboard.ui import jobs

ROOT = Path(__file__).resolve().parents[3]


def run(code: str) -> str:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], cwd=ROOT, capture_output=True, text=True, check=True, timeout=120
    ).stdout.strip()


def test_the_fork_server_loads_the_renderers_and_the_web_workers_do_not() -> None:
    assert "dashboard.ui.renderers" in jobs._PRELOAD
    out = run(
        """
        import sys
        import dashboard.app, dashboard.pages
        before = [name for name in ("weasyprint", "matplotlib") if name in sys.modules]
        import dashboard.ui.renderers
        after = [name for name in ("weasyprint", "matplotlib.figure") if name in sys.modules]
        print(before, after, dashboard.ui.renderers.LOADED)
        """
    )
    assert out == "[] ['weasyprint', 'matplotlib.figure'] True"


def test_renderers_that_cannot_load_are_left_to_the_report() -> None:
    # WeasyPrint without its C libraries raises OSError on import: the fork server must start all the same.
    out = run(
        """
        import sys
        sys.modules["weasyprint"] = None  # import weasyprint now fails
        from privdash.application.report.render import load_renderers
        print(load_renderers())
        """
    )
    assert out == "False"
