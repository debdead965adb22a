"""The installed ``workstation`` command's first step: a Ctrl-C while the command's own modules
are still being imported (just after Enter) ends as one sentence, like every later Ctrl-C,
not as a traceback from whichever import it fell in."""

from __future__ import annotations

import os
import signal
import sys
from types import FrameType

STOPPED = "workstation: stopped."
# serve stopped (SIGTERM: systemd's stop or restart) before it answered anything, at any moment
# of its start: its modules' import, the options read, the model's load (commands/serve.py)
SERVE_STOPPED = "workstation: stopped (SIGTERM) while starting; nothing was served."


def command_word(argv: list[str]) -> str | None:
    """The command typed (``chat`` of ``-p office-cpu chat -``); None where an option comes
    first (``--help``, the app's own ``--lang tr``) or nothing is typed."""
    words = iter(argv)
    for word in words:
        if word in ("-p", "--profile"):
            next(words, None)
        elif not word.startswith("--profile="):
            return None if word.startswith("-") else word
    return None


def serve_stopped_at_start(sig: int, frame: FrameType | None) -> None:
    """SIGTERM while ``serve`` has nothing open yet (its modules imported, llama.cpp's first):
    the one line of a stop while it starts, and exit 0 (SystemExit: no traceback, from an
    import too). ``serve`` takes SIGTERM over once it opens files and sockets."""
    try:
        print(SERVE_STOPPED, file=sys.stderr, flush=True)
    except (OSError, ValueError):
        pass
    raise SystemExit(0)


def take_sigterm_if_serving() -> None:
    """In the ``serve`` command's process (``workstation serve``, ``python -m workstation serve``,
    ``python -m workstation.cli serve``), SIGTERM from the first line of Python on: it killed a
    server stopped in its first second (systemd's restart right after a start) with status 143
    and not a word, before the code that takes it was imported. Called by the package's
    ``__init__`` before llama.cpp's import (a fifth of a second). Only where SIGTERM does what
    it does by default, from the main thread."""
    program = sys.argv[0] if sys.argv else ""  # ("-m" while ``python -m`` imports the package)
    if program != "-m" and os.path.basename(program) != "workstation":
        return
    if "--multiprocessing-fork" in getattr(sys, "orig_argv", ()):  # a spawned child of serve's (its argv is a
        return  # copy of serve's): its parent's terminate() must end it, mid llama.cpp call too
    if command_word(sys.argv[1:]) != "serve" or signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        return
    signal.signal(signal.SIGTERM, serve_stopped_at_start)


STDOUT_CLOSED = False  # the command was started with no standard output at all (``>&-``)


def closed_streams_opened() -> None:
    """Standard input, output or error closed by the shell (``<&-``, ``>&-``, ``2>&-``): Python
    leaves ``sys.stdin`` (or the other) None, and ``chat hi <&-`` ended in "unexpected error:
    AttributeError: 'NoneType' object has no attribute 'fileno'" (``models list >&-``: 'flush').
    Each is opened again, before any module opens a file that would take its number (llama.cpp's
    log lines, written to the number 2, would go into it): standard input as /dev/null (``chat``
    with nothing to read says it needs text, as with ``</dev/null``); standard error as
    /dev/null; standard output as a pipe no one reads, a reader gone from the start, said where
    one gone from ``| head -1`` is (``cli._reader_gone``), with exit code 1: nothing could be written."""
    global STDOUT_CLOSED
    for number, name in ((0, "stdin"), (1, "stdout"), (2, "stderr")):
        if getattr(sys, name) is not None:
            continue
        if number == 1:
            read, opened = os.pipe()
            os.close(read)
            STDOUT_CLOSED = True
        else:
            opened = os.open(os.devnull, os.O_RDONLY if number == 0 else os.O_WRONLY)
        try:
            os.fstat(number)  # (taken already by a file opened since: that one is left alone)
        except OSError:
            os.dup2(opened, number)
            os.close(opened)
            opened = number
        setattr(sys, name, open(opened, "r" if number == 0 else "w", closefd=opened != number))  # noqa: SIM115


def interrupted(err: BaseException) -> bool:
    """Ctrl-C, also where Python wrapped it: a KeyboardInterrupt in a class body's
    ``__set_name__`` reaches the import as "RuntimeError: Error calling __set_name__", caused by
    it (only a cause: an error raised while handling a Ctrl-C is an error of its own)."""
    seen: BaseException | None = err
    for _ in range(8):
        if seen is None:
            return False
        if isinstance(seen, KeyboardInterrupt):
            return True
        seen = seen.__cause__
    return False


def stop_if_interrupted(err: BaseException) -> None:
    """Where ``err`` is a Ctrl-C: the one sentence, and exit 130 (SystemExit: no traceback,
    from inside an import too); otherwise nothing, for the caller to raise ``err`` again."""
    if interrupted(err):
        print(STOPPED, file=sys.stderr)
        raise SystemExit(130) from None


def main() -> int:
    closed_streams_opened()  # (first: before an import opens a file)
    try:
        from workstation import cli
    except BaseException as err:
        stop_if_interrupted(err)
        raise
    return cli.main()
