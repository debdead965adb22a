#!/usr/bin/env bash
# Sets everything up (first run: a few minutes) and starts the workstation.
# Extra arguments go to the `workstation` command, e.g. ./run.sh chat "Hello".
# It runs in the folder you started it from, so a document's path is read from there
# (~/workstation/run.sh summarize report.pdf works from ~/Documents).
set -euo pipefail
# Ctrl-C before the app has started (set-up included, which leaves the sentence to us): one
# sentence and exit code 130; the app says it from its own first line on
trap 'echo "workstation: stopped." >&2; exit 130' INT
here=$(CDPATH='' cd -- "$(dirname -- "$0")" >/dev/null && pwd)
WORKSTATION_STOP_SAID=1 "$here/scripts/setup.sh"
# advice such as "run './run.sh models list'" names the command as you typed it, as one
# shell word ('bash run.sh' is pasted back as ./run.sh)
typed=$0
case $typed in */*) ;; *) typed=./$typed ;; esac
export WORKSTATION_COMMAND="${WORKSTATION_COMMAND:-$(printf '%q' "$typed")}"
exec "$here/.venv/bin/workstation" "$@"
