"""What the app sends its terminal at rest: bytes a second down an SSH link.

The app runs in a real terminal (a pty, 80x24, no model loaded) with an empty data folder;
once it has drawn its first screen, everything it writes is counted for a while with the
chat open and idle, then with the dashboard (F5) open. Each case runs as a terminal over SSH
(SSH_CONNECTION set: the message box's cursor does not blink) and as a local one; with
``--plain`` also under LANG=C (the screen sent as ASCII).

    .venv/bin/python bench/terminal_bytes.py [--seconds 10] [--plain]
"""

from __future__ import annotations

import argparse
import os
import pty
import select
import signal
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _count(fd: int, seconds: float) -> int:
    """Bytes the terminal is sent in ``seconds``."""
    total, end = 0, time.monotonic() + seconds
    while time.monotonic() < end:
        if select.select([fd], [], [], 0.1)[0]:
            try:
                total += len(os.read(fd, 65536))
            except OSError:
                break
    return total


def measure(env: dict[str, str], seconds: float) -> tuple[int, int]:
    """(bytes a second with the chat idle, with the dashboard open) for the app under ``env``."""
    with tempfile.TemporaryDirectory() as data:
        pid, fd = pty.fork()
        if pid == 0:
            os.environ.update({"TERM": "xterm-256color", "COLUMNS": "80", "LINES": "24", "WORKSTATION_DATA": data,
                               "PYTHONPATH": str(ROOT), **env})
            os.execv(sys.executable, [sys.executable, "-m", "workstation", "tui", "--no-load", "--lang", "en"])
        try:
            _count(fd, 8)  # the first screen
            idle = _count(fd, seconds)
            os.write(fd, b"\x1b[15~")  # F5
            _count(fd, 2)  # its first drawing
            dashboard = _count(fd, seconds)
        finally:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            os.close(fd)
    return round(idle / seconds), round(dashboard / seconds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--plain", action="store_true", help="also under LANG=C (ASCII)")
    args = parser.parse_args()
    ssh = {"SSH_CONNECTION": "192.168.1.20 51234 192.168.1.10 22"}
    cases: list[tuple[str, dict[str, str]]] = [("local", {"SSH_CONNECTION": "", "SSH_CLIENT": "", "SSH_TTY": ""}),
                                               ("over SSH", ssh)]
    if args.plain:
        cases.append(("over SSH, LANG=C", {**ssh, "LANG": "C", "LC_ALL": "", "LC_CTYPE": ""}))
    print(f"{'terminal':<20} {'chat idle B/s':>14} {'dashboard B/s':>14}")
    for name, env in cases:
        idle, dashboard = measure(env, args.seconds)
        print(f"{name:<20} {idle:>14,} {dashboard:>14,}")


if __name__ == "__main__":
    main()
