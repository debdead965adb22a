"""A crash in a checked process, said where it happened: the C stack printed by the preloaded
segv_backtrace.so (the device has no gdb) beside Python's faulthandler stack, frames named with
addr2line. The first device run (2026-12-04) had every product step end in "exited -11" with
nothing else to go on."""

from __future__ import annotations

import re
import shutil
import signal
import subprocess
from pathlib import Path

SHIM_SOURCE = Path(__file__).with_name("segv_backtrace.c")
# "/path/libllama.so(+0x1234)[0x7f..]" or "/path/libllama.so(_ZN5llama4loadEv+0x12)[0x7f..]"
_FRAME = re.compile(r"^(?P<lib>[^\s(]+)\((?P<sym>[^)+]*)\+(?P<off>0x[0-9a-fA-F]+)\)\[(?P<addr>0x[0-9a-fA-F]+)\]$")


def build_shim(work: Path) -> Path | None:
    """segv_backtrace.so in ``work``, compiled once with the machine's C compiler (None without one)."""
    out = work / "segv-backtrace.so"
    if out.exists() and out.stat().st_mtime >= SHIM_SOURCE.stat().st_mtime:
        return out
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        return None
    proc = subprocess.run([cc, "-shared", "-fPIC", "-O1", "-o", str(out), str(SHIM_SOURCE)],
                          capture_output=True, text=True, timeout=60)
    return out if proc.returncode == 0 else None


def signal_name(returncode: int) -> str:
    """-11 -> "SIGSEGV" (a return code of a process a signal ended)."""
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return f"signal {-returncode}"


def _name_frame(lib: str, sym: str, off: str) -> str:
    if sym:
        name = sym
        if sym.startswith("_Z") and shutil.which("c++filt"):
            name = subprocess.run(["c++filt", sym], capture_output=True, text=True, timeout=10).stdout.strip() or sym
        return f"{name}+{off} ({Path(lib).name})"
    if shutil.which("addr2line") and Path(lib).exists():
        got = subprocess.run(["addr2line", "-f", "-C", "-e", lib, off], capture_output=True, text=True,
                             timeout=10).stdout.split("\n")
        if got and got[0] and got[0] != "??":
            where = got[1] if len(got) > 1 and not got[1].startswith("??") else ""
            return f"{got[0]} ({Path(lib).name}{' ' + where if where else ''})"
    return f"{Path(lib).name}+{off}"


def excerpt(stderr: str, frames: int = 24) -> str:
    """The crash in ``stderr``: faulthandler's block and the C stack with named frames (the
    handler's own frames left out); empty where stderr has neither. Never raises: it runs where
    something has already gone wrong."""
    try:
        return _excerpt(stderr, frames)
    except Exception as err:  # noqa: BLE001 - the stderr itself is kept beside (crash-N.txt)
        return f"(the crash could not be read: {type(err).__name__}: {err})"


_FATAL = "Fatal Python error"
_C_STACK = "[C stack]"


def _excerpt(stderr: str, frames: int) -> str:
    lines = stderr.splitlines()
    out: list[str] = []
    fatal = [i for i, line in enumerate(lines) if _FATAL in line]
    if fatal:
        # faulthandler writes no line break first: after a log line's piece, it shares its line
        start = fatal[-1]
        head, _, rest = lines[start].partition(_FATAL)
        before = [line for line in [*lines[max(0, start - 6):start], head] if line.strip()]
        if before:  # llama.cpp's last log lines (WORKSTATION_LLAMA_LOG): how far the load got
            out += ["Last lines before it:", *("  " + line for line in before[-4:]), ""]
        block = [_FATAL + rest]
        for line in lines[start + 1:]:
            if line.endswith(_C_STACK) or line.startswith("Extension modules"):
                break
            block.append(line)
        out += block[:40]
    c_stack = [i for i, line in enumerate(lines) if line.endswith(_C_STACK)]
    if c_stack:
        raw: list[tuple[str, str, str, str]] = []
        for line in lines[c_stack[-1] + 1:]:
            m = _FRAME.match(line.strip())
            if not m:
                break
            raw.append((m["lib"], m["sym"], m["off"], m["addr"]))
        # the handler's own frame first, then the kernel's signal trampoline (and, where
        # faulthandler re-raised the signal, its frames and the trampoline again): the crash
        # starts after the trampoline's last frame, told by its address (its name needs libc's
        # debug symbols)
        skip = 0
        if len(raw) > 1:
            tramp = raw[1][3]
            skip = max(i for i, r in enumerate(raw) if r[3] == tramp) + 1
        out.append("C stack (innermost first):")
        out += ["  " + _name_frame(lib, sym, off) for lib, sym, off, _ in raw[skip:skip + frames]]
    return "\n".join(out)
