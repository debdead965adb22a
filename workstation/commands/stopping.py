"""Ctrl-C, a plain ``kill`` (SIGTERM: a logout, a service manager) and a closed terminal
(SIGHUP) stop a command's work the same way: what is done is kept, one sentence says so, and
the exit code is the shell's for that signal (130, 143, 129). SIGTERM and SIGHUP ended
``chat -c``, ``summarize`` and ``batch`` mid-work before, with no word and the work lost."""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Callable, Iterator
from types import FrameType
from typing import TYPE_CHECKING

from workstation.core.errors import TurnCancelled

if TYPE_CHECKING:
    from workstation.tui.i18n import Texts

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@contextlib.contextmanager
def stop_signals(on_stop: Callable[[int], None]) -> Iterator[list[int]]:
    """Within the block, each of STOP_SIGNALS calls ``on_stop(signal)`` (from the main thread,
    as Python runs handlers) instead of ending the process; yields the signals received, in
    order. After a hang-up, what is written to the terminal that closed goes nowhere."""
    received: list[int] = []

    def handler(sig: int, _frame: FrameType | None) -> None:
        if sig == signal.SIGHUP:
            say_nothing_more()
        received.append(sig)
        on_stop(sig)

    # a signal the user chose to ignore stays ignored (`nohup workstation batch …`: SIGHUP)
    previous = {sig: signal.signal(sig, handler) for sig in STOP_SIGNALS if signal.getsignal(sig) is not signal.SIG_IGN}
    try:
        yield received
    finally:
        for sig, before in previous.items():
            signal.signal(sig, before)


def say_nothing_more() -> None:
    """stdout and stderr, where they are the terminal that closed, to /dev/null: writing to it
    failed (EIO). A file or a pipe still gets what is said."""
    with contextlib.suppress(OSError):
        nowhere = os.open(os.devnull, os.O_WRONLY)
        for fd in (1, 2):
            if os.isatty(fd):
                os.dup2(nowhere, fd)
        os.close(nowhere)


def first_signal(received: list[int]) -> int:
    """The signal that stopped the work (Ctrl-C's where none came: the engine stopped it)."""
    return received[0] if received else signal.SIGINT


def stopped_by(sig: int, t: Texts | None = None) -> str:
    """What stopped the work, in words: "Ctrl-C", "its terminal closing", "a request to end
    (SIGTERM)", the program reading its words ending (SIGPIPE: a closed pipe); in ``t``'s
    language (English without)."""
    from workstation.tui.i18n import Texts as Words

    t = t or Words("en")
    key = {signal.SIGINT: "stop.ctrl_c", signal.SIGHUP: "stop.terminal", signal.SIGPIPE: "stop.reader_gone"}.get(
        signal.Signals(sig), "stop.request")
    return t(key, name=signal.Signals(sig).name)


def stopped(sentence: str, sig: int) -> TurnCancelled:
    """``sentence`` as the error that ends the command, with the shell's exit code for ``sig``."""
    error = TurnCancelled(sentence)
    error.exit_code = 128 + sig
    return error
