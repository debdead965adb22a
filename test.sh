#!/usr/bin/env bash
# Sets everything up (venv, llama-cpp-python build, test models) and runs lint and the tests.
set -euo pipefail
cd "$(dirname "$0")"
scripts/setup.sh --dev
.venv/bin/ruff check workstation tests bench
exec .venv/bin/python -m pytest "$@"
