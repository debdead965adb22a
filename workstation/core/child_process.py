"""Starting a helper process (the engine, a document reader) that Ctrl-C does not reach.

Ctrl-C in a terminal goes to every process of the command at once, the helpers included. A
helper ignores it (the command stops it), but only once its own code runs: a Ctrl-C during
the second or so a new interpreter takes to start printed that interpreter's
``KeyboardInterrupt`` traceback under the command's "stopped". So Ctrl-C is blocked in the
starting thread while the helper is made: the helper is born with it blocked (a signal mask
is kept across fork and exec) and never sees it, and one pressed meanwhile reaches the
command as soon as the helper is started.
"""

from __future__ import annotations

import signal
from multiprocessing.process import BaseProcess


def start_child(proc: BaseProcess) -> None:
    """``proc.start()``, the new process never receiving Ctrl-C (SIGINT)."""
    if not hasattr(signal, "pthread_sigmask"):  # (Windows: Ctrl-C reaches a console's processes otherwise)
        proc.start()
        return
    before = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        proc.start()
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)
