#!/usr/bin/env bash
# Install everything the tests need into .venv and run the full suite: lint, types, unit, integration and
# browser tests (headless Chromium from the system packages).
set -euo pipefail
cd "$(dirname "$0")/.."

# System packages the tests start for real: Chromium (browser tests, axe), a Java runtime (Spark in local[2]),
# a PostgreSQL server (started by a fixture with initdb + pg_ctl) and poppler (pdftotext / pdftoppm on reports).
missing=()
command -v chromium >/dev/null 2>&1 || missing+=(chromium chromium-driver)
command -v java >/dev/null 2>&1 || missing+=(default-jre-headless)
compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null || missing+=(postgresql)
command -v pdftotext >/dev/null 2>&1 || missing+=(poppler-utils)
if [ "${#missing[@]}" -gt 0 ]; then
    if [ "$(id -u)" -eq 0 ]; then
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
    elif command -v sudo >/dev/null 2>&1; then
        sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
    else
        echo "The tests need these system packages: ${missing[*]}" >&2
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
