"""Errors that reach the user as one plain sentence (never a traceback)."""

from __future__ import annotations


class WorkstationError(Exception):
    """A problem the user can act on; ``str(err)`` is one clear sentence."""

    exit_code: int = 1


class ModelFileError(WorkstationError):
    """A model file is missing, truncated, or not a GGUF file llama.cpp can load."""


class ProfileError(WorkstationError):
    """A profile file has a wrong field or value."""


class EngineError(WorkstationError):
    """The engine could not run a turn (bad prompt, context full, engine stopped)."""


class BackendUnreachable(EngineError):
    """The engine's server cannot be reached: the connection was refused, timed out or lost.
    Not the fault of what was asked; the same request may work once the server is back."""


class TurnCancelled(WorkstationError):
    """The user stopped a turn."""

    exit_code = 130
