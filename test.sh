#!/usr/bin/env bash
# Sets everything up (venv, llama-cpp-python build, test models) and runs lint and the tests:
# in two processes (pytest-xdist, a test file to a process), then the tests marked `alone`
# (they measure other programs' CPU load) in one, with nothing beside them.
set -euo pipefail
cd "$(dirname "$0")"
scripts/setup.sh --dev
.venv/bin/ruff check workstation tests bench
for arg in "$@"; do  # a marker of one's own: those tests, as asked, in one process
  case "$arg" in -m*) exec .venv/bin/python -m pytest "$@" ;; esac
done
set +e
.venv/bin/python -m pytest -n 2 --dist loadfile -m "not alone" "$@"
together=$?
.venv/bin/python -m pytest -m alone "$@"
alone=$?
set -e
# 5 is "no tests": a failure only where neither part ran any (as pytest alone would say)
if [ "$together" = 5 ] && [ "$alone" = 5 ]; then exit 5; fi
for rc in "$together" "$alone"; do
  if [ "$rc" != 0 ] && [ "$rc" != 5 ]; then exit "$rc"; fi
done
exit 0
