"""The status line: profile, model, GPU layers, KV types, and what the engine is doing."""

from __future__ import annotations

from textual.widgets import Static


class StatusBar(Static):
    DEFAULT_CLASSES = "status-bar"

    def __init__(self, text: str = "", id: str | None = None) -> None:  # noqa: A002
        super().__init__(text, markup=False, id=id)

    def on_resize(self) -> None:
        """A long model name is cut only where the line has no room for it: said again."""
        update = getattr(self.app, "update_status", None)
        if callable(update):
            update()
