"""The status line: profile, model, GPU layers, KV types, and what the engine is doing."""

from __future__ import annotations

from textual.visual import VisualType
from textual.widgets import Static


class StatusBar(Static):
    DEFAULT_CLASSES = "status-bar"

    def __init__(self, text: str = "", id: str | None = None) -> None:  # noqa: A002
        super().__init__(text, markup=False, id=id)

    def update(self, content: VisualType = "", *, layout: bool = False) -> None:
        """The line's text; the same again does nothing. One line of a fixed height: a new text
        repaints the line only (a layout pass of the chat screen, which Textual's ``update``
        does by default, cost 20-100 ms with a conversation open, and the line was set again
        on every event of a turn)."""
        if content == self.content:
            return
        super().update(content, layout=layout)

    def on_resize(self) -> None:
        """A long model name is cut only where the line has no room for it: said again."""
        update = getattr(self.app, "update_status", None)
        if callable(update):
            update()
