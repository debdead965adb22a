"""Whether a command may redraw a line in place on the stream it writes to (its progress)."""

from __future__ import annotations

import os


def redraws_in_place(stream: object) -> bool:
    """True where ``stream`` is a terminal that can move its cursor: a progress line is then
    redrawn in place (``\\r`` and an erase), thinking dimmed. Off a terminal (a pipe, a log) and
    on one that says it cannot (``TERM=dumb``: Emacs' shell, where a screen reader such as
    Emacspeak reads the output; each redraw showed as ``^[[K`` and was read out again) each step
    is a line of its own, with no escape codes."""
    isatty = getattr(stream, "isatty", None)
    try:
        tty = bool(isatty()) if callable(isatty) else False
    except (OSError, ValueError):  # (a stream closed meanwhile)
        tty = False
    return tty and os.environ.get("TERM", "") != "dumb"
