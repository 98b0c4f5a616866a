#!/usr/bin/env bash
# Runs the Python bridge's tests in agents/python/.venv (created if missing),
# against the real gateway binary ($TRADETERM_BIN, or
# $CARGO_TARGET_DIR/debug/tradeterm, built if missing). Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")"
PY="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
    "$PY" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --disable-pip-version-check -r requirements-test.txt
.venv/bin/python -m pip install --quiet --disable-pip-version-check --no-deps -e .
exec .venv/bin/python -m pytest -q "$@"
