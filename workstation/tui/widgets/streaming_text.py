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

    DEFAULT_CSS = """
    StreamingText {
        height: auto;
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
        self._last_layout = -1e9  # the first layout is never held back
        self._layout_timer: Timer | None = None
        self.clock: Callable[[], float] = time.perf_counter  # seconds; tests drive their own
        self.display = False

    @property
    def lines(self) -> list[str]:
        """The text as it is wrapped on screen."""
        return list(self._lines)

    def _wrap(self, width: int) -> int:
        """Wrap ``text`` to ``width``; the first line that changed."""
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

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        if self.text:
            self._wrap(width)
            return max(len(self._lines), self._reserved)
        return self._reserved

    def render_line(self, y: int) -> Strip:
        style = self.visual_style.rich_style  # cached by Textual (rich_style is worked out per call)
        width = self.size.width
        if y >= len(self._lines) or not self.text:
            return Strip.blank(width, style)
        line = self._lines[y]
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
        needed = len(self._lines) if text else 0
        if reflow:
            self._reserved = needed + self.headroom()
            self._layout()
            return
        if needed > self.content_region.height:
            self._reserved = needed + self.headroom()
            wait = self._last_layout + 1.0 / LAYOUT_HZ - self.clock()
            if wait <= 0:
                self._layout()
                return
            if self._layout_timer is None:
                self._layout_timer = self.set_timer(wait, self._layout)
        self.refresh(Region(0, first, width, max(1, needed - first)))

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
        self.display = False

    def _layout(self) -> None:
        if self._layout_timer is not None:
            self._layout_timer.stop()
            self._layout_timer = None
        self._last_layout = self.clock()
        self.layouts += 1
        self.refresh(layout=True)
