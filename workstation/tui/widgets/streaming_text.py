"""Plain text that grows while a reply streams, redrawn a line at a time.

Each screen update while the engine decodes is CPU taken from it, so this widget does as
little as it can per update. The text is wrapped once: when more text arrives only the last
line is wrapped again (greedy word wrapping does not change the lines before it), and only
the lines that changed are painted again. Painting the whole paragraph, as a ``Static`` does,
cost 1.3 ms an update here; a line costs a tenth of that.

A layout pass of the chat screen costs more than a whole paint (every widget is measured
again and the anchored log scrolls), so the widget holds blank lines under its text while it
streams (half the visible chat, at least ``HEADROOM``) and lays out only when the text
needs more lines than it holds, at most ``LAYOUT_HZ`` times a second: a new line shows at most
a quarter of a second late, the line being written never waits. Measured with SmolLM2 on 2
cores: a layout pass 9 ms, a paint 3 ms.

What is said of the stream ("generating… (Esc stops)", the wait for the first word) is drawn by
this widget too, a blank row under the text (``set_note``), where the reply's figures come when
it ends: said by the line under the message, it stood under the held lines, eleven blank rows
below the text at 110x32.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable

from rich.cells import cell_len
from rich.segment import Segment
from textual.geometry import Region, Size
from textual.strip import Strip
from textual.timer import Timer
from textual.widget import Widget

LAYOUT_HZ = 4.0
HEADROOM = 3  # the fewest lines held under the text
HEADROOM_SHARE = 0.5  # of the visible height of the scrolling container around it

_WORD = re.compile(r"\S+\s*|\s+")


def wrap_starts(line: str, width: int) -> list[int]:
    """Where each wrapped piece of ``line`` (no newlines) starts: greedy by words, trailing
    spaces stay on their line, a word wider than ``width`` is cut. Always starts with 0."""
    starts = [0]
    used = 0
    for match in _WORD.finditer(line):
        word = match.group()
        word_cells = cell_len(word.rstrip())
        if used and used + word_cells > width:
            starts.append(match.start())
            used = 0
        if word_cells > width:  # fold a long word into pieces of ``width`` cells
            offset, cells = match.start(), 0
            for i, char in enumerate(word.rstrip()):
                w = cell_len(char)
                if cells and cells + w > width:
                    starts.append(offset + i)
                    cells = 0
                cells += w
            used = cells
        else:
            used += cell_len(word)
    return starts


class StreamingText(Widget):
    """Unformatted text with ``append``: paints the lines that changed, lays out only when
    its height must change."""

    COMPONENT_CLASSES = {"streaming-text--note"}

    DEFAULT_CSS = """
    StreamingText {
        height: auto;
    }
    StreamingText > .streaming-text--note {
        color: $text-muted;
        text-style: italic;
    }
    """

    def __init__(self, *, classes: str | None = None) -> None:
        super().__init__(classes=classes)
        self.text = ""
        self.layouts = 0  # layout passes asked for (tests and benchmarks read it)
        self._lines: list[str] = []  # ``text`` wrapped to ``_width``
        self._wrapped = ""  # the text ``_lines`` holds
        self._width = 0
        self._open = 0  # where the last line starts in ``_wrapped``
        self._reserved = 0  # lines held for the text to grow into
        self.note = ""  # said on the rows under the text while it streams (``set_note``)
        self._note_lines: list[str] = []  # ``note`` wrapped to ``_width``
        self._painted = 0  # rows drawn with text or the note at the last paint asked for
        self._last_layout = -1e9  # the first layout is never held back
        self._layout_timer: Timer | None = None
        self.clock: Callable[[], float] = time.perf_counter  # seconds; tests drive their own
        self.display = False

    @property
    def lines(self) -> list[str]:
        """The text as it is wrapped on screen."""
        return list(self._lines)

    def _wrap(self, width: int) -> int:
        """Wrap ``text`` (and the note) to ``width``; the first line that changed."""
        if width != self._width or not self._note_lines:
            self._note_lines = self._wrap_note(width)
        text = self.text
        if width == self._width and self._lines and text.startswith(self._wrapped):
            first, start = len(self._lines) - 1, self._open
        else:
            first, start = 0, 0
        del self._lines[first:]
        offset = start
        for line in text[start:].split("\n"):
            starts = wrap_starts(line, width)
            for a, b in zip(starts, [*starts[1:], len(line)], strict=True):
                self._lines.append(line[a:b])
                self._open = offset + a
            offset += len(line) + 1
        self._wrapped, self._width = text, width
        return first

    def _size_updated(
        self, size: Size, virtual_size: Size, container_size: Size, layout: bool = True
    ) -> bool:
        # Textual lays the whole screen out again when a widget's size changed in a layout
        # pass (its virtual_size is a layout-reactive); this widget and the message around it
        # do not scroll, so the pass that sized them already placed everything.
        return super()._size_updated(size, virtual_size, container_size, layout=False)

    def _wrap_note(self, width: int) -> list[str]:
        if not self.note or width <= 0:
            return []
        starts = wrap_starts(self.note, width)
        return [self.note[a:b].rstrip() for a, b in zip(starts, [*starts[1:], len(self.note)], strict=True)]

    def _note_top(self) -> int:
        """The row the note starts on: one blank row under the text's last line (where the
        finished reply's figures come, under its last paragraph's margin), row 0 before any text."""
        if not self.text or not self._lines:
            return 0
        return len(self._lines) + (1 if self._lines[-1].strip() else 0)

    def _rows(self) -> int:
        """Rows the text and the note under it take."""
        if not self._note_lines:
            return len(self._lines) if self.text else 0
        return self._note_top() + len(self._note_lines)

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        if self.text:
            self._wrap(width)
        else:
            self._note_lines = self._wrap_note(width)
            if width != self._width:  # (lines of another width: wrapped again with the next text)
                self._lines.clear()
                self._wrapped, self._width = "", width
        return max(self._rows(), self._reserved)

    def render_line(self, y: int) -> Strip:
        style = self.visual_style.rich_style  # cached by Textual (rich_style is worked out per call)
        width = self.size.width
        lines, top = len(self._lines) if self.text else 0, self._note_top()
        if y < lines:
            line = self._lines[y]
        elif 0 <= y - top < len(self._note_lines):
            style = style + self.get_component_rich_style("streaming-text--note", partial=True)
            line = self._note_lines[y - top]
        else:
            return Strip.blank(width, style)
        return Strip([Segment(line, style)], cell_len(line)).crop_extend(0, width, style)

    def headroom(self) -> int:
        """Lines to hold under the text when it grows: a share of what the scrolling container
        around it shows. (Textual's ``is_scrollable`` is true of any widget with children: the
        message around this one, whose height grows with the reply; half of that held a long
        reply's whole screen blank.)"""
        for node in self.ancestors:
            if isinstance(node, Widget) and node.styles.overflow_y in ("auto", "scroll"):
                return max(HEADROOM, int(node.scrollable_content_region.height * HEADROOM_SHARE))
        return HEADROOM

    def set_text(self, text: str, *, reflow: bool = False) -> None:
        """Show ``text``. A layout pass only when it needs more lines than it has, or when
        ``reflow`` (the text was cut: hold only its lines and the headroom; lays out at once).
        The widget shows from its first text on, empty or not, until ``clear``."""
        self.text = text
        if text and not self.display:
            self.display = True  # a layout pass anyway
        width = self.content_region.width
        if width <= 0:  # not laid out yet
            self._layout()
            return
        first = self._wrap(width) if text else 0
        self._place(first, reflow=reflow)

    def set_note(self, note: str) -> None:
        """Say ``note`` (one line, wrapped where it is longer than the width) under the text, a
        blank row between (``_note_top``), "" for none; it moves down with the text and goes with ``clear``. Paints its rows
        only (a layout pass where the text and the note need more rows than are held)."""
        if note == self.note:
            return
        self.note = note
        width = self.content_region.width
        if width <= 0:  # not laid out yet: wrapped when it is
            self._note_lines = []
            return
        self._note_lines = self._wrap_note(width)
        self._place(self._note_top(), note=True)

    def _place(self, first: int, *, reflow: bool = False, note: bool = False) -> None:
        """Rows from ``first`` on changed (``note``: the note's too): painted again, or laid out
        where the widget must hold more (at most ``LAYOUT_HZ`` times a second) or the text was
        cut (``reflow``: at once). The note is painted again only where it changed or moved."""
        width = self.content_region.width
        needed = self._rows()
        if reflow:
            self._reserved = needed + self.headroom()
            self._painted = needed
            self._layout()
            return
        if needed > self.content_region.height:
            self._reserved = needed + self.headroom()
            wait = self._last_layout + 1.0 / LAYOUT_HZ - self.clock()
            if wait <= 0:
                self._painted = needed
                self._layout()
                return
            if self._layout_timer is None:
                self._layout_timer = self.set_timer(wait, self._layout)
        # (the rows painted before too: a note that moved down, or text emptied, leaves none behind)
        moved = note or needed != self._painted
        last = max(needed, self._painted) if moved else len(self._lines) if self.text else 0
        last = max(last, first + 1)
        self._painted = needed
        self.refresh(Region(0, first, width, last - first))

    def open(self) -> None:
        """Show the widget with its headroom before any text (a reply is about to stream): the
        first text then only paints."""
        self._reserved = self.headroom()
        self.display = True

    def append(self, piece: str) -> None:
        self.set_text(self.text + piece)

    def clear(self) -> None:
        """No text and no lines held: the widget hides (the stream is over)."""
        self.text = ""
        self._lines.clear()
        self._wrapped = ""
        self._reserved = 0
        self.note = ""
        self._note_lines = []
        self._painted = 0
        self.display = False

    def _layout(self) -> None:
        if self._layout_timer is not None:
            self._layout_timer.stop()
            self._layout_timer = None
        self._last_layout = self.clock()
        self.layouts += 1
        self.refresh(layout=True)
