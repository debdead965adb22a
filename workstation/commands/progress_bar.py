"""A command's progress on stderr: ``[#######.......]  45%  what  ETA 0:12``, rewritten in
place on a terminal, one line per step off one (a log keeps them). ``size --measure`` and a
long message that ``chat`` reads draw it."""

from __future__ import annotations

import sys
import time

from workstation.core.terminal import redraws_in_place


class ProgressBar:
    """``[#######.......]  45%  what  ETA 0:12`` on stderr (a terminal), rewritten in place."""

    def __init__(self, stream: object = None, width: int = 28, started_s_ago: float = 0.0) -> None:
        """``started_s_ago``: the work began that long before the bar (its ETA counts from then)."""
        self.stream = stream or sys.stderr
        self.width = width
        self.t0 = time.monotonic() - started_s_ago
        self.tty = redraws_in_place(self.stream)

    def line(self, fraction: float, what: str, now: float | None = None) -> str:
        fraction = min(max(fraction, 0.0), 1.0)
        elapsed = (now if now is not None else time.monotonic()) - self.t0
        filled = int(round(fraction * self.width))
        eta = "ETA --:--"
        if fraction > 0.02:
            left = round(elapsed / fraction * (1 - fraction))  # (t0 + 60) - t0 may be 59.99999
            eta = f"ETA {left // 60}:{left % 60:02d}"
        return f"[{'#' * filled}{'.' * (self.width - filled)}] {fraction * 100:3.0f}%  {what}  {eta}"

    def __call__(self, fraction: float, what: str) -> None:
        text = self.line(fraction, what)
        if self.tty:
            self.stream.write(f"\r\033[K{text}")  # type: ignore[attr-defined]
        else:
            self.stream.write(text + "\n")  # type: ignore[attr-defined]
        self.stream.flush()  # type: ignore[attr-defined]

    def finish(self) -> None:
        if self.tty:
            self.stream.write("\r\033[K")  # type: ignore[attr-defined]
            self.stream.flush()  # type: ignore[attr-defined]
