"""Errors that reach the user as one plain sentence (never a traceback)."""

from __future__ import annotations

from workstation.core.phrases import Phrase, say

# the exit status of a command that stopped because the office server cannot take its requests
# now (not reached, gone mid-way, busy, over the key's quota): sysexits.h's EX_TEMPFAIL, "try
# again later", as a mail queue reads it; chat, summarize and batch alike (summarize said 1,
# as for a document that cannot be read, where batch said 75)
EX_TEMPFAIL = 75


class WorkstationError(Exception):
    """A problem the user can act on; ``str(err)`` is one clear sentence.

    Raised with ``said=[(key, values), ...]`` (core/phrases.py) instead of a message, the
    sentence is in English for the command line and the TUI says it in its own language."""

    exit_code: int = 1
    # what was finished before it (summarize: the parts done, as a stopped run's result)
    partial: object = None

    def __init__(self, *args: object, said: list[Phrase] | None = None) -> None:
        super().__init__(*(args or ((say(said),) if said else ())))
        self.said = said or []


class ModelFileError(WorkstationError):
    """A model file is missing, truncated, or not a GGUF file llama.cpp can load."""


class ProfileError(WorkstationError):
    """A profile file has a wrong field or value."""


class EngineError(WorkstationError):
    """The engine could not run a turn (bad prompt, context full, engine stopped)."""


class BackendUnreachable(EngineError):
    """The engine's server cannot take the request now: the connection was refused, could not
    be made in time or was lost, or the server said it is busy, over its quota or down behind a
    proxy (429, 502, 503, 504). Not the fault of what was asked; it may work later: exit status
    ``EX_TEMPFAIL``."""

    exit_code = EX_TEMPFAIL

    @property
    def connection_lost(self) -> bool:
        """The server could not be reached or went away mid-reply (not: it answered busy or
        over the key's quota)."""
        return bool(self.said) and self.said[0][0] in ("remote.unreachable", "remote.lost")


class TurnCancelled(WorkstationError):
    """The user stopped a turn."""

    exit_code = 130
