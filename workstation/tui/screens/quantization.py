"""What each quantization costs, as a chart: KL divergence against the reference beside the
model's memory and speed, from the newest saved ``eval --kld`` (or ``models quantize --kld``)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.message import Message
from textual.screen import Screen
from textual.widgets import DataTable, Header, Static

from workstation.core.catalog import file_size_text
from workstation.core.kld import QuantizationPoint, kld_runs, quantization_points, run_key
from workstation.core.phrases import say
from workstation.core.results import HistoryEntry, history
from workstation.core.weight_levels import WeightLevels, four_bit_levels, reference_note
from workstation.tui.glyphs import UNICODE, Glyphs
from workstation.tui.i18n import Texts
from workstation.tui.screens.app_screen import AppScreen
from workstation.tui.widgets.bar_chart import bar
from workstation.tui.widgets.screen_footer import ScreenFooter

if TYPE_CHECKING:
    pass

BAR_WIDTH = 16


def loss_chart(points: list[QuantizationPoint], texts: Texts, width: int = 120, shapes: Glyphs = UNICODE) -> str:
    """One line per quantization: memory, speed and KL divergence as bars on shared scales,
    the bars as wide as ``width`` columns allow (16 cells at most: at 100 columns the lines
    wrapped)."""
    top_mem = max(p.memory_bytes for p in points)
    top_speed = max((p.tokens_per_second for p in points if not p.speed_left_out), default=0.0)
    top_kld = max(p.kld_mean for p in points)
    name_w = max(len(f"{p.profile} {p.file_type}") for p in points)
    same_top = texts("quality.same_top")
    fixed = name_w + 2 + 9 + 2 + 9 + 2 + 10 + 2 + max(7, len(same_top)) + 2  # names, figures, gaps, margin
    # the planner's total, as F4 and fit say it (K/V types compared showed one memory: the file's; then the file
    # and K/V alone, less than fit's); a run saved before it was kept: what it has
    memory = ("quality.memory_needed" if all(p.total_bytes for p in points) else
              "quality.memory_kv" if any(p.kv_bytes for p in points) else "quality.memory")
    titles = (texts(memory), texts("quality.speed"), texts("quality.kld"))
    # a bar column is as wide as its title at least (Turkish's "en olası token aynı" and
    # "bellek (dosya)" over a 3-cell bar wrapped every line at 80 columns)
    bw = max(3, *(len(title) - 9 for title in titles), min(BAR_WIDTH, (width - fixed) // 3))
    head = (
        f"{'':<{name_w}}  {titles[0]:<{bw + 9}}  {titles[1]:<{bw + 9}}  {titles[2]:<{bw + 10}}  {same_top}"
    ).rstrip()
    lines = [head]
    num = texts.number
    for p in points:
        loss = texts("quality.reference") if p.reference else num(f"{p.kld_mean:.4f}")
        # a speed eval left out (beyond what the settings can make: a busy moment's) is not drawn either
        speed = (f"{texts('quality.speed_left_out'):>{bw + 9}}" if p.speed_left_out else
                 f"{num(f'{p.tokens_per_second:.0f}'):>8} {bar(p.tokens_per_second, top_speed, bw, shapes):<{bw}}")
        lines.append(
            f"{p.profile + ' ' + p.file_type:<{name_w}}  "
            f"{num(file_size_text(p.memory_bytes)):>8} {bar(p.memory_bytes, top_mem, bw, shapes):<{bw}}  "
            f"{speed}  "
            f"{loss:>9} {bar(p.kld_mean, top_kld, bw, shapes):<{bw}}  "
            f"{num(f'{p.same_top * 100:.1f}%'):>7}"
        )
    return "\n".join(lines)


def local_time(created: str, texts: Texts) -> str:
    """A run's UTC time as the history keeps it (2026-12-05T03:38:44Z) in this machine's local
    time, as F6 says its summary's: 2026-12-05 06:38 (Turkish 05.12.2026 06:38)."""
    import datetime as dt

    try:
        when = dt.datetime.fromisoformat(created.replace("Z", "+00:00"))
    except ValueError:
        return created
    return texts.moment(when)


class QualityLoaded(Message):
    def __init__(self, created: str, points: list[QuantizationPoint], entries: list[HistoryEntry],
                 run: int = 0, runs: int = 1, four_bits: WeightLevels | None = None) -> None:
        super().__init__()
        self.four_bits = four_bits  # the reference holds no more than a 4-bit file: what it looked at
        self.created = created
        self.points = points
        self.entries = entries
        self.run = run  # 0: the newest
        self.runs = runs


class QuantizationScreen(AppScreen, Screen[None]):
    OPENED_BY = "quality"
    BINDINGS = [
        Binding("escape", "app.pop_screen", "back", id="quality.back"),
        Binding("r", "reload", "refresh", id="quality.refresh"),
        # the runs before the newest (a K/V comparison run after a quantization one hid it for good)
        Binding("o", "older", "older run", id="quality.older"),
        Binding("n", "newer", "newer run", id="quality.newer"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self._points: list[QuantizationPoint] = []
        self._run = 0  # the run shown: 0 the newest, 1 the one before …
        self._runs = 0

    def action_older(self) -> None:
        if self._run + 1 < self._runs:
            self._run += 1
            self.action_reload()

    def action_newer(self) -> None:
        if self._run > 0:
            self._run -= 1
            self.action_reload()

    def on_resize(self) -> None:
        if self._points:  # the bars follow the terminal's width
            self.query_one("#quality-chart", Static).update(loss_chart(self._points, self.wapp.texts, self.size.width, self.wapp.glyphs))

    def compose(self) -> ComposeResult:
        yield Header()
        with VerticalScroll(id="quality"):
            yield Static("", id="quality-title", markup=False)
            yield Static("", id="quality-chart", markup=False)
            yield Static("", id="quality-legend", markup=False)  # what the columns mean, for a non-engineer
            yield DataTable(id="quality-documents", cursor_type="row", zebra_stripes=True)
        yield ScreenFooter()

    def on_mount(self) -> None:
        self._columns()
        self.action_reload()

    def _columns(self) -> None:
        t = self.wapp.texts
        table = self.query_one(DataTable)
        table.clear(columns=True)
        table.add_columns(
            t("quality.col_profile"), t("quality.col_document"), t("quality.kld"), "p99",
            t("quality.same_top"), f"{self.wapp.glyphs.delta}ppl",
        )

    def relabel(self) -> None:
        """F9: said again in the new language (its title, chart and legend stayed in the old one)."""
        if self.is_mounted:
            self._columns()
            self.action_reload()

    @work(thread=True, exclusive=True, exit_on_error=False, group="quality")
    def action_reload(self) -> None:
        entries = history(kind="eval", test="kld_mean", limit=2000)
        runs = kld_runs(entries)
        index = min(self._run, max(0, len(runs) - 1))
        chosen = runs[index] if runs else None
        created, points = quantization_points(entries, chosen)
        shown = [e for e in entries if e.run_id == chosen]
        reference = next((e for e in shown if e.data.get("reference")), None)
        # a reference made from a 4-bit file, as eval --kld says under its table (F12 said nothing)
        four_bits = four_bit_levels(Path(reference.model)) if reference is not None else None
        self.post_message(QualityLoaded(created, points, shown, index, len(runs), four_bits))

    @on(QualityLoaded)
    def _loaded(self, msg: QualityLoaded) -> None:
        t = self.wapp.texts
        title = self.query_one("#quality-title", Static)
        chart = self.query_one("#quality-chart", Static)
        table = self.query_one(DataTable)
        table.clear()
        legend = self.query_one("#quality-legend", Static)
        if not msg.points:
            title.update(t("quality.empty"))
            chart.update("")
            legend.update("")
            return
        reference = next((p.profile for p in msg.points if p.reference), msg.points[0].profile)
        four = msg.four_bits
        legend.update(t("quality.legend") + ("" if four is None else "\n\n" + say(reference_note(reference, four), t.get)))
        self._run, self._runs = msg.run, msg.runs
        title.update(t("quality.title", reference=reference, when=local_time(msg.created, t),
                       n=len(msg.points[0].documents), run=msg.run + 1, runs=msg.runs))
        self._points = msg.points
        chart.update(loss_chart(msg.points, t, self.size.width, self.wapp.glyphs))
        named = {p.key: p.profile for p in msg.points}  # (two of one name: by their refs, as the chart)
        for e in msg.entries:
            d = e.data
            if d.get("reference"):
                continue
            table.add_row(named.get(run_key(e), e.profile), str(d.get("document", "")), *(t.number(f) for f in (
                f"{float(d.get('kld_mean', 0)):.5f}", f"{float(d.get('kld_p99', 0)):.4f}",
                f"{float(d.get('same_top', 0)) * 100:.2f}%", f"{float(d.get('ppl_delta_pct', 0)):+.2f}%")))
