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
_FRAME = re.compile(r"^(?P<lib>[^\s(]+)\((?P<sym>[^)+]*)\+(?P<off>0x[0-9a-fA-F]+)\)\[0x[0-9a-fA-F]+\]$")


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
    handler's own frames left out); empty where stderr has neither."""
    lines = stderr.splitlines()
    out: list[str] = []
    if "Fatal Python error" in stderr:
        start = max(i for i, line in enumerate(lines) if line.startswith("Fatal Python error"))
        before = [line for line in lines[max(0, start - 6):start] if line.strip()]
        if before:  # llama.cpp's last log lines (WORKSTATION_LLAMA_LOG): how far the load got
            out += ["Last lines before it:", *("  " + line for line in before[-4:]), ""]
        block = []
        for line in lines[start:]:
            if line.startswith(("[C stack]", "Extension modules")):
                break
            block.append(line)
        out += block[:40]
    if "[C stack]" in lines:
        start = max(i for i, line in enumerate(lines) if line == "[C stack]")
        named: list[str] = []
        for line in lines[start + 1:]:
            m = _FRAME.match(line.strip())
            if not m:
                break
            named.append(_name_frame(m["lib"], m["sym"], m["off"]))
        # the handler and the re-raised signal first: the crash starts after the last signal frame
        last = max((i for i, n in enumerate(named) if n.startswith("__restore_rt")), default=-1)
        out.append("C stack (innermost first):")
        out += ["  " + n for n in named[last + 1:last + 1 + frames]]
    return "\n".join(out)
