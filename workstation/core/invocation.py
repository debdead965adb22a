"""The command a person typed to start workstation, for advice that names a command.

``./run.sh`` exports ``WORKSTATION_COMMAND`` as the user typed it (``./run.sh``,
``~/workstation/run.sh``), so "run './run.sh models list'" works when pasted back into the
same terminal; ``workstation`` alone is not on the PATH after set-up. Run as
``.venv/bin/workstation`` it names that path; as an installed ``workstation`` on the PATH
(or from Python), ``workstation``.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

ENV = "WORKSTATION_COMMAND"


def command() -> str:
    """The words that start workstation in the user's terminal, ready to paste."""
    chosen = os.environ.get(ENV, "").strip()
    if chosen:
        return chosen  # run.sh quoted it for the shell already (printf %q)
    typed = sys.argv[0] if sys.argv else ""
    if Path(typed).name != "workstation":
        return "workstation"
    on_path = shutil.which("workstation")
    if on_path and Path(on_path).resolve() == Path(typed).resolve():
        return "workstation"
    return shell_word(typed)


def shell_word(text: str, readable: bool = False) -> str:
    """``text`` as one shell word, its spaces and quotes escaped with backslashes (as bash's
    ``printf %q`` writes it), so advice around it can stay in single quotes. ``readable``: in
    single quotes instead where it has none of its own ('Ayşe Yılmaz', as people read a name;
    `Ayşe\\ Yılmaz` read as a typo), for a command said where no quotes are around it."""
    escaped = "".join(c if c.isalnum() or c in "-_./+=:,@%^" else "\\" + c for c in text)
    if readable and escaped != text and "'" not in text:
        return f"'{text}'"
    return escaped


TYPED: list[str] = []  # the words after the command, as main() was given them


def typed_again(old: str, new: str) -> str | None:
    """The command the person typed with the word ``old`` put as ``new`` (``fit -p MODEL`` ->
    ``./run.sh fit -p PROFILE``), ready to paste; None where ``old`` was not one of its words."""
    if old not in TYPED:
        return None
    return cli(" ".join(shell_word(new if word == old else word) for word in TYPED))


def cli(rest: str = "") -> str:
    """``cli("models list")`` -> ``./run.sh models list`` (or whatever started us)."""
    return f"{command()} {rest}".rstrip()
