"""The installed ``workstation`` command's first step: a Ctrl-C while the command's own modules
are still being imported (just after Enter) ends as one sentence, like every later Ctrl-C,
not as a traceback from whichever import it fell in."""

from __future__ import annotations

import sys

STOPPED = "workstation: stopped."


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


def main() -> int:
    try:
        from workstation import cli
    except BaseException as err:
        if not interrupted(err):
            raise
        print(STOPPED, file=sys.stderr)
        return 130
    return cli.main()
