"""The app's one-line text box: keys bound to something (its own Backspace, End and arrows, the
dialog's Down, the app's Up) act in turn with the characters typed around them.

Textual runs a key's binding only once the key has bubbled up from the box to the app (a
message queue for each container on the way), while a character goes into the box at once:
keys that came fast (End, six Backspaces then "0,3" sent by tmux, or a fast typist) were done
out of order, the characters first, and Ctrl+E's temperature box was left empty or holding
"0". Here the box runs a bound key's binding when it reads the key, as the app would have, and
hands the keys read after one that moved the focus on to the box in focus.
"""

from __future__ import annotations

from textual import events
from textual.geometry import Size
from textual.reactive import Reactive
from textual.widgets import Input


class LineInput(Input):
    # Input sets its virtual size at every key, and a widget's virtual size asks for a layout of
    # the whole screen: with a long conversation shown (1,300 widgets) each key typed cost the
    # app 0.15 s. A box's own text never changes the size of anything around it (one line of a
    # fixed height; an auto-width box asks for its layout itself): a repaint is enough.
    virtual_size = Reactive(Size(0, 0), layout=False)

    def put(self, text: str) -> None:
        """``text`` in the box, the cursor after it: its end in sight. A path set from code kept
        the cursor at the start, and a box narrower than the path showed its folders, the
        document's name cut off (F6 at 80 columns: "/tmp/docs/Quarterly ")."""
        self.value = text
        self.cursor_position = len(text)
        # (Textual brings the cursor into sight as it moves, but not on a box's first value)
        self.scroll_to(x=self.max_scroll_x, animate=False, force=True, immediate=True)

    async def _on_key(self, event: events.Key) -> None:
        focused = self.app.focused
        if focused is not None and focused is not self and focused.screen is self.screen:
            # a key before it in the same burst (Tab, a dialog's Down) moved the focus on: the
            # keys typed after it are the next box's, in their order. Here they ran the next
            # box's binding (Ctrl+K emptied Top-p) but typed into this one ("0,9" in the
            # temperature)
            event.stop()
            event.prevent_default()
            focused._forward_event(events.Key(event.key, event.character))
            return
        # (the app's own check, from the focused widget up, non-priority bindings: the
        # priority ones ran before the key was handed here). An Alt key is a key, not its
        # letter: a terminal sends Alt+R as ESC r, which the box typed as "r" (F6's Alt+R,
        # start over, put an r after the document's path)
        alt = event.key.startswith("alt+")
        if (alt or not event.is_printable) and await self.app._check_bindings(event.key):
            event.stop()
            event.prevent_default()
            return
        if alt:
            event.prevent_default()  # (bound to nothing here: not typed either)
            return
        await super()._on_key(event)
