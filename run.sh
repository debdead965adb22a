#!/usr/bin/env bash
# Sets everything up (first run: a few minutes) and starts the workstation.
# Extra arguments go to the `workstation` command, e.g. ./run.sh chat "Hello".
# It runs in the folder you started it from, so a document's path is read from there
# (~/workstation/run.sh summarize report.pdf works from ~/Documents).
set -euo pipefail
here=$(CDPATH='' cd -- "$(dirname -- "$0")" >/dev/null && pwd)
"$here/scripts/setup.sh"
# advice such as "run './run.sh models list'" names the command as you typed it, as one
# shell word ('bash run.sh' is pasted back as ./run.sh)
typed=$0
case $typed in */*) ;; *) typed=./$typed ;; esac
export WORKSTATION_COMMAND="${WORKSTATION_COMMAND:-$(printf '%q' "$typed")}"
exec "$here/.venv/bin/workstation" "$@"
