#!/usr/bin/env bash
# Sets everything up (venv, llama-cpp-python build, test models) and runs lint and the tests:
# in three processes (pytest-xdist, a test file to a process: on 2 cores two left a sixth of the
# CPU idle while tests waited on other processes, and three took 718 s where two took 794 s),
# then the tests marked `alone`
# (they measure other programs' CPU load) in one, with nothing beside them.
set -euo pipefail
cd "$(dirname "$0")"
scripts/setup.sh --dev
.venv/bin/ruff check workstation tests bench
# Python's compiled files kept (__pycache__, ignored by git) even where the environment says not
# to write them: without them every process compiled the program again (each engine process and
# command a test starts), and pytest rewrote every test file's asserts in each of its processes
unset PYTHONDONTWRITEBYTECODE
for arg in "$@"; do  # a marker or a number of processes of one's own: as asked, in one run
  case "$arg" in -m*|-n*|--numprocesses*|-p) exec .venv/bin/python -m pytest "$@" ;; esac
done
set +e
.venv/bin/python -m pytest -n 3 --dist loadfile -m "not alone" "$@"
together=$?
if [ "$together" = 2 ]; then exit 2; fi  # interrupted (Ctrl+C) or a usage error: not the second part
.venv/bin/python -m pytest -m alone "$@"
alone=$?
set -e
# 5 is "no tests": a failure only where neither part ran any (as pytest alone would say)
if [ "$together" = 5 ] && [ "$alone" = 5 ]; then exit 5; fi
for rc in "$together" "$alone"; do
  if [ "$rc" != 0 ] && [ "$rc" != 5 ]; then exit "$rc"; fi
done
exit 0
