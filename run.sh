#!/usr/bin/env bash
# Sets everything up (first run: a few minutes) and starts the workstation.
# Extra arguments go to the `workstation` command, e.g. ./run.sh chat "Hello".
# It runs in the folder you started it from, so a document's path is read from there
# (~/workstation/run.sh summarize report.pdf works from ~/Documents).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
"$here/scripts/setup.sh"
# advice such as "run './run.sh models list'" names the command as you typed it
export WORKSTATION_COMMAND="${WORKSTATION_COMMAND:-$0}"
exec "$here/.venv/bin/workstation" "$@"
