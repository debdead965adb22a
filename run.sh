#!/usr/bin/env bash
# Sets everything up (first run: a few minutes) and starts the workstation.
# Extra arguments go to the `workstation` command, e.g. ./run.sh chat "Hello".
set -euo pipefail
cd "$(dirname "$0")"
scripts/setup.sh
exec .venv/bin/workstation "$@"
