"""A horizontal bar chart in text: one labelled bar per row, eighth-block precision."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from textual.widgets import Static

from workstation.tui.glyphs import UNICODE, Glyphs


def bar(value: float, top: float, width: int = 16, shapes: Glyphs = UNICODE) -> str:
    """A bar of ``value`` where ``top`` fills ``width`` cells, to an eighth of a cell (never
    less than an eighth for a value above zero), drawn with ``shapes`` (``app.glyphs``)."""
    if top <= 0 or value <= 0 or width <= 0:
        return ""
    eighths = max(1, round(value / top * width * 8))
    full, part = divmod(min(eighths, width * 8), 8)
    return shapes.full * full + (shapes.eighths[part] if part else "")


def bar_lines(rows: Sequence[tuple[str, int]], width: int, unit: str = "",
              number: Callable[[str], str] = str, shapes: Glyphs = UNICODE) -> list[str]:
    """``label  ████▌ 1,234 unit`` per row (the figure as ``number`` writes it: the UI
    language's separators); the largest value fills the bar width."""
    if not rows:
        return []
    label_w = min(24, max(len(label) for label, _ in rows))
    figures = [number(f"{value:,}") for _, value in rows]
    value_w = max(len(f) for f in figures)
    top = max(value for _, value in rows)
    room = max(4, width - label_w - value_w - len(unit) - 4)
    return [
        f"{label[:label_w]:<{label_w}}  {bar(value, top, room, shapes):<{room}} {figure:>{value_w}}{unit}"
        for (label, value), figure in zip(rows, figures, strict=True)
    ]


class BarChart(Static):
    """A titled bar chart; ``show(rows)`` redraws it at the widget's width."""

    def __init__(self, title: str, unit: str = "", number: Callable[[str], str] = str,
                 **kwargs: object) -> None:
        super().__init__("", markup=False, **kwargs)  # type: ignore[arg-type]
        self.title = title
        self.unit = unit
        self.number = number  # a figure in the UI's language (Texts.number)
        self.rows: list[tuple[str, int]] = []

    def show(self, rows: Sequence[tuple[str, int]], empty: str = "") -> None:
        self.rows = list(rows)
        self._draw(empty)

    def _draw(self, empty: str = "") -> None:
        width = max(30, self.size.width or 80)
        lines = bar_lines(self.rows, width, self.unit, self.number, getattr(self.app, "glyphs", UNICODE)) or [empty]
        self.update("\n".join([self.title, *lines]))

    def on_resize(self) -> None:
        if self.rows:
            self._draw()
