"""The footer of every screen but the chat: the screen's own keys, then Help (F1) and Quit.

At 80 columns the full footer ran past the screen on F4, F6, F11 and F12 (the app's F3, F4 and
F5 after the screen's keys, the palette's key over them), and F4 named itself (F4 Models). The
keys still work there; F1 lists every one of them, with the palette's."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

ELSEWHERE = frozenset({"profiles", "models", "dashboard"})  # the chat's footer shows these


class ScreenFooter(Footer):
    def __init__(self) -> None:
        super().__init__(show_command_palette=False)

    def compose(self) -> ComposeResult:
        shown = 0
        for widget in super().compose():
            if isinstance(widget, FooterKey) and widget.action in ELSEWHERE:
                continue
            shown += 1
            yield widget
        if shown:
            self.styles.grid_size_columns = shown
