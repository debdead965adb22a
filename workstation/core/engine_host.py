"""The engine an app is using now, and switching it to another profile at runtime.

Switching closes the running engine first, so its memory (weights, KV cache, compute buffers)
goes back to the system before the next model loads; a child process that exits returns all of
it. If the new profile fails to load, the previous one is started again and the error says why.
The conversation lives in the caller, so it simply continues under the new model's template.
"""

from __future__ import annotations

from typing import Any

from workstation.core.engine_api import Progress, open_engine
from workstation.core.errors import EngineError, WorkstationError
from workstation.core.profiles import Profile


class EngineHost:
    """Holds the current engine; ``switch`` replaces it or keeps the old one running."""

    def __init__(self, profile: Profile, *, child_process: bool = True, progress: Progress | None = None) -> None:
        self.child_process = child_process
        self.engine = open_engine(profile, child_process=child_process, progress=progress)
        self.profile = profile

    def switch(self, profile: Profile, progress: Progress | None = None) -> Any:
        previous = self.profile
        self.engine.close()
        try:
            self.engine = open_engine(profile, child_process=self.child_process, progress=progress)
        except WorkstationError as err:
            try:
                self.engine = open_engine(previous, child_process=self.child_process)
            except WorkstationError as again:
                raise EngineError(
                    f"Could not load '{profile.key}' ({err}) and the previous profile "
                    f"'{previous.key}' failed to start again ({again})."
                ) from None
            raise EngineError(
                f"Could not load '{profile.key}': {err} The previous profile '{previous.key}' is running again."
            ) from None
        self.profile = profile
        return self.engine

    def close(self) -> None:
        self.engine.close()
