"""Browser tests: the dashboard served on a free local port, driven by Playwright in Debian's headless Chromium.

No browser is downloaded: ``browser_type_launch_args`` points Playwright at ``/usr/bin/chromium`` (override with
``PRIVDASH_CHROMIUM``). Every test in this folder is marked ``e2e``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from werkzeug.serving import make_server

from dashboard.app import create_app
from privdash.application.settings import Settings

CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-quic",
    "--no-first-run",
]
SCREENSHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.e2e)


def _chromium() -> str:
    path = os.environ.get("PRIVDASH_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
    if not Path(path).exists():
        pytest.fail("The browser tests need Chromium: install Debian's 'chromium' package (see scripts/test.sh).")
    return path


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args: dict) -> dict:
    return {**browser_type_launch_args, "executable_path": _chromium(), "headless": True, "args": CHROMIUM_FLAGS}


@pytest.fixture(scope="session")
def browser_context_args(browser_context_args: dict) -> dict:
    # Playwright's wait_for_function evaluates its text with eval(), which the app's Content-Security-Policy forbids;
    # the tests' pages ignore the policy, and test_dashboard.py checks it in a context of its own.
    return {**browser_context_args, "bypass_csp": True}


def fresh_settings(tmp_path_factory: pytest.TempPathFactory, data_dir: Path, name: str = "privdash") -> Settings:
    """Settings with a store, a cache and a ledger of their own."""
    root = tmp_path_factory.mktemp(name)
    return Settings(store_dir=root / "store", cache_dir=root / "cache", max_upload_bytes=5_000_000, data_dir=data_dir)


@contextlib.contextmanager
def serving(settings: Settings) -> Iterator[str]:
    """The app of ``settings`` on ``http://127.0.0.1:<free port>`` while the block runs."""
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    app = create_app(settings)
    server = make_server("127.0.0.1", 0, app.server, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        thread.join(timeout=5)


@pytest.fixture(scope="session")
def live_settings(tmp_path_factory: pytest.TempPathFactory, data_dir: Path) -> Settings:
    return fresh_settings(tmp_path_factory, data_dir)


@pytest.fixture(scope="session")
def live_server(live_settings: Settings) -> Iterator[str]:
    """The app on ``http://127.0.0.1:<free port>``, for the whole session."""
    with serving(live_settings) as url:
        yield url


def server_of_its_own(name: str) -> tuple[object, object]:
    """``live_settings`` and ``live_server`` fixtures for one module (``live_settings, live_server =
    server_of_its_own("privdash-x")``): a store, a ledger and a server of its own, so that the demo's budget and the
    job queue are as a fresh server has them, whatever the session's other browser tests spent or left running."""

    @pytest.fixture(scope="module", name="live_settings")
    def module_settings(tmp_path_factory: pytest.TempPathFactory, data_dir: Path) -> Settings:
        return fresh_settings(tmp_path_factory, data_dir, name)

    @pytest.fixture(scope="module", name="live_server")
    def module_server(live_settings: Settings) -> Iterator[str]:
        with serving(live_settings) as url:
            yield url

    return module_settings, module_server


@pytest.fixture(scope="session")
def screenshots() -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    return SCREENSHOTS
