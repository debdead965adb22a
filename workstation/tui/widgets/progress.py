"""Textual's progress bar with its percentage written as the UI's language writes it (Turkish
%12: Textual's own says 12%, beside a line above it that said %23), and its line drawn as the
terminal can (``app.glyphs``: ASCII on the Linux console)."""

from __future__ import annotations

from rich.console import RenderableType
from textual.app import ComposeResult
from textual.renderables.bar import Bar as BarRenderable
from textual.widgets import ProgressBar
from textual.widgets._progress_bar import Bar, ETAStatus, PercentageStatus

from workstation.tui.glyphs import UNICODE


class PlainBar(BarRenderable):
    """The bar's line in ASCII (its half cells too)."""

    HALF_BAR_LEFT = BAR = HALF_BAR_RIGHT = "="


class LocalPercentage(PercentageStatus):
    def render(self) -> RenderableType:
        texts = getattr(self.app, "texts", None)
        if self.percentage is None or texts is None:
            return super().render()
        return str(texts.number(f"{self.percentage}%"))


class LocalProgressBar(ProgressBar):
    def compose(self) -> ComposeResult:
        if self.show_bar:
            plain = getattr(self.app, "glyphs", UNICODE).plain
            yield (Bar(id="bar", clock=self._clock, bar_renderable=PlainBar if plain else self.BAR_RENDERABLE)
                   .data_bind(ProgressBar.percentage).data_bind(ProgressBar.gradient))
        if self.show_percentage:
            yield LocalPercentage(id="percentage").data_bind(ProgressBar.percentage)
        if self.show_eta:
            yield ETAStatus(id="eta").data_bind(eta=ProgressBar._display_eta)
