"""Footers that show the keys that matter on their screen, and fit 80 columns.

Every screen but the chat shows its own keys, then Help (F1) and Quit: the full footer ran past
the screen on F4, F6, F11 and F12 (the app's F3, F4 and F5 after the screen's keys, the
palette's key over them), and F4 named itself (F4 Models). The chat shows Esc (stop) while a
reply streams, in the place of Ctrl+N (new). The keys left out still work; F1 lists them all."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from textual.app import ComposeResult
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

if TYPE_CHECKING:
    from workstation.tui.app import WorkstationApp

ELSEWHERE = frozenset({"profiles", "models", "dashboard"})  # the chat's footer shows these


def drop_closed_watchers(*owners: object) -> int:
    """Forget the watchers of widgets that are gone, on ``owners``; how many were dropped.

    Textual keeps a ``(widget, callback)`` for each ``watch``/``data_bind`` on the watched
    object, and drops those of removed widgets only when that value changes. Two never do here:
    the app's title (each screen's ``Header`` watches it) and the chat footer's ``compact``
    (each of its keys, made again on every screen change). They kept every closed Header and
    footer key, with their drawn lines: F11 opened and closed 30 times held ~17 MB more."""
    dropped = 0
    for owner in owners:
        watchers: dict[str, list[tuple[Any, Any]]] = getattr(owner, "__watchers", {})  # Textual's reactive.py
        for entries in watchers.values():
            kept = [(node, callback) for node, callback in entries if not node._closing]
            dropped += len(entries) - len(kept)
            entries[:] = kept
    return dropped


class ScreenFooter(Footer):
    """A screen's footer without the app's keys that the chat's footer shows, nor the palette's,
    nor those the text box in focus keeps as its own (``box_keeps``: the footer follows the focus);
    the keys that do not fit whole are left out from the end (at 60 columns the chat's showed
    'f4 Model' under the palette's key, its 's' and F5 cut off)."""

    def __init__(self, *, show_command_palette: bool = False) -> None:
        super().__init__(show_command_palette=show_command_palette)

    def on_resize(self) -> None:
        self._fit()

    def _fit(self) -> None:
        """Show the keys, in their order, while they fit whole beside the palette's key. A
        key's width is what it draws: one just made is not laid out yet (Esc Stop, put in
        Ctrl+N New's place as a reply starts, ran under the palette's key)."""
        keys = [k for k in self.query(FooterKey) if not k.has_class("-command-palette")]
        room = self.size.width - sum(k.outer_size.width or k.render().cell_len + 1
                                     for k in self.query(FooterKey) if k.has_class("-command-palette"))
        used = 0
        for key in keys:
            used += key.render().cell_len
            key.display = used <= room
        self.styles.grid_size_columns = max(sum(k.display for k in keys), 1)

    def left_out(self) -> frozenset[str]:
        """The actions whose keys are not shown now: the chat's footer's, and the key that opens
        this screen."""
        return ELSEWHERE | {getattr(self.screen, "OPENED_BY", "")}

    def compose(self) -> ComposeResult:
        # runs as each screen opens and as the chat's footer is made again on a screen change
        drop_closed_watchers(self, self.app, *self.app.screen_stack)
        left_out, shown = self.left_out(), 0
        app = cast("WorkstationApp", self.app)
        for widget in super().compose():
            # nor a key the text box in focus keeps (F6's Ctrl+K said "ask in chat" where it
            # deleted the path being mended; a keymap's Ctrl+W, a word in the sidebar's search)
            if isinstance(widget, FooterKey) and (widget.action in left_out or app.box_keeps(widget.key, self.screen)):
                continue
            shown += not widget.has_class("-command-palette")  # docked on the right, not a column
            yield widget
        self.styles.grid_size_columns = max(shown, 1)
        self.call_after_refresh(self._fit)  # (their widths are known once drawn)


class ChatFooter(ScreenFooter):
    """The chat's: the app's keys and the palette's, and Esc (stop) or Ctrl+N (new) as a reply
    streams or not (the app refreshes the bindings when that changes)."""

    def __init__(self) -> None:
        super().__init__(show_command_palette=True)

    def left_out(self) -> frozenset[str]:
        app = cast("WorkstationApp", self.app)
        if app.summarizing is not None and app.reply_view is None:
            # a summary runs (F6's Ctrl+X stops it): Esc here stops no reply, and it showed "Stop"
            return frozenset({"new_conversation", "stop"})
        return frozenset({"new_conversation" if app.generating else "stop"})
