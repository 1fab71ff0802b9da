#!/usr/bin/env bash
# Install everything the tests need into .venv and run the full suite: lint, types, unit, integration and
# browser tests (headless Chromium from the system packages).
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v chromium >/dev/null 2>&1; then
    if [ "$(id -u)" -eq 0 ]; then
        apt-get update -qq && apt-get install -y -qq chromium chromium-driver
    elif command -v sudo >/dev/null 2>&1; then
        sudo apt-get update -qq && sudo apt-get install -y -qq chromium chromium-driver
    else
        echo "The browser tests need Chromium: install the 'chromium' package first." >&2
        exit 1
    fi
fi

PYTHON="${PYTHON:-python3}"
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
. .venv/bin/activate
python -m pip install -q --upgrade pip
# The test extra holds the test tools and pyCANON, the independent oracle of the privacy models (a release without
# exact pins on old numpy/pandas). tests/integration/test_wheel.py also builds the wheel and installs it, with its
# dependencies, into a fresh virtual environment.
python -m pip install -q -e ".[test]"

ruff check .
ruff format --check .
mypy
pytest "$@"
