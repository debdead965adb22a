"""What every screen of the app shares."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:
    from workstation.tui.app import WorkstationApp


class AppScreen:
    """Mixed into the app's screens (before Textual's ``Screen``): ``wapp`` is the running
    ``WorkstationApp``, typed."""

    @property
    def wapp(self) -> WorkstationApp:
        return cast("WorkstationApp", self.app)  # type: ignore[attr-defined]
