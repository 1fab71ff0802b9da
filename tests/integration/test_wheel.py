"""The wheel runs the dashboard: build it, install it into a fresh virtual environment, serve, fetch.

The wheel is built from a copy of the sources (so the working tree gets no build folders) and installed with its
dependencies as pip is configured on the machine. The server runs in a folder outside the repository, so every file
it serves, the stylesheet of ``assets/`` included, comes from the installed package.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
START_TIMEOUT = 60.0


def _source_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file() and "__pycache__" not in p.parts)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    source = tmp_path_factory.mktemp("source")
    for name in ("pyproject.toml", "README.md", *(p.name for p in ROOT.glob("LICEN[CS]E*"))):
        shutil.copy2(ROOT / name, source / name)
    for folder in ("privdash", "dashboard", "assets"):
        shutil.copytree(ROOT / folder, source / folder, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    out = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "--wheel-dir", str(out), str(source)],
        check=True,
        timeout=300,
    )
    (built,) = out.glob("privdash-*.whl")
    return built


@pytest.fixture(scope="module")
def venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    folder = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", str(folder)], check=True, timeout=120)
    python = folder / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", str(wheel)], check=True, timeout=600, env=_env())
    yield folder
    shutil.rmtree(folder, ignore_errors=True)  # about 1 GB of dependencies


def _env(**extra: str) -> dict[str, str]:
    """The environment without this interpreter's virtual environment or any privdash setting."""
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME") and not key.startswith("PRIVDASH_")
    }
    return {**env, **extra}


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _get(url: str) -> tuple[int, str]:
    with urllib.request.urlopen(url, timeout=10) as response:
        return response.status, response.read().decode("utf-8")


def test_the_wheel_holds_every_source_file_and_asset(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    expected = {
        p.relative_to(ROOT).as_posix()
        for package in ("privdash", "dashboard")
        for p in _source_files(ROOT / package)
        if p.suffix in (".py", ".typed")
    }
    expected |= {
        f"dashboard/assets/{p.relative_to(ROOT / 'assets').as_posix()}" for p in _source_files(ROOT / "assets")
    }
    assert {
        "dashboard/assets/privdash.css",
        "dashboard/assets/upload.js",
        "privdash/py.typed",
        "privdash/cli.py",
    } <= expected
    assert sorted(expected - names) == []


def test_the_installed_wheel_serves_the_dashboard(venv: Path, tmp_path: Path) -> None:
    work = tmp_path / "elsewhere"
    work.mkdir()
    env = _env(PRIVDASH_STORE_DIR=str(tmp_path / "store"), PRIVDASH_CACHE_DIR=str(tmp_path / "cache"))
    bin_dir = venv / "bin"
    # The package and its assets come from the virtual environment, not from the repository.
    where = subprocess.run(
        [str(bin_dir / "python"), "-c", "import dashboard.app as a; print(a.__file__); print(a.assets_folder())"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout.split()
    assert len(where) == 2 and all(Path(p).resolve().is_relative_to(venv.resolve()) for p in where), where
    usage = subprocess.run(
        [str(bin_dir / "python"), "-m", "dashboard", "--help"], cwd=work, env=env, capture_output=True, text=True
    )
    assert usage.returncode == 0 and "--port" in usage.stdout

    port = _free_port()
    log = tmp_path / "server.log"
    with log.open("w") as output:
        server = subprocess.Popen(
            [str(bin_dir / "privdash"), "serve", "--port", str(port)],
            cwd=work,
            env=env,
            stdout=output,
            stderr=subprocess.STDOUT,
        )
        try:
            base = f"http://127.0.0.1:{port}"
            deadline = time.monotonic() + START_TIMEOUT
            while True:
                assert server.poll() is None, f"the server stopped:\n{log.read_text()}"
                try:
                    if _get(f"{base}/api/health")[0] == 200:
                        break
                except (urllib.error.URLError, ConnectionError, TimeoutError):
                    pass
                assert time.monotonic() < deadline, f"no answer within {START_TIMEOUT:.0f} s:\n{log.read_text()}"
                time.sleep(0.5)
            status, page = _get(f"{base}/")
            assert status == 200 and "privdash" in page
            links = re.findall(r'href="(/assets/privdash\.css[^"]*)"', page)
            assert links, page
            status, css = _get(base + links[0])
            assert status == 200 and ".upload-zone" in css
            status, script = _get(f"{base}/assets/clientside.js")
            assert status == 200 and "shareLink" in script
        finally:
            server.terminate()
            try:
                server.wait(timeout=15)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait(timeout=15)
