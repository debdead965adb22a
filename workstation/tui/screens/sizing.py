"""Size the office: the ``size`` charts in the terminal (textual-plotext).

Shows the headline of ``workstation size`` for a workload (the shipped ``office-20`` unless
the app was given another) for the office's number of people (+ and -, as ``size --people N``
takes it, remembered for the next start), what this PC's own processor would do
(``SizingResult.here_beside``, as ``size`` says it), tokens/s per person against the number
of people for the best options, and the memory stack (weights, K/V cache, compute) of each
against its card. The sizing runs in a thread worker and comes back as a message.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.screen import Screen
from textual.widgets import Header, Static
from textual_plotext import PlotextPlot

from workstation.core.phrases import say
from workstation.tui.messages import Progress, TaskFailed
from workstation.tui.screens.app_screen import AppScreen
from workstation.tui.widgets.screen_footer import ScreenFooter

if TYPE_CHECKING:
    from workstation.core.profiles import Profile
    from workstation.core.sizing import SizingResult


PEOPLE_KEY = "sizing_people"  # the store's app_state: the office's number of people F10 was last given
PEOPLE_MAX = 100_000
RESIZE_AFTER_S = 0.4  # + and - pressed in a row size once, after the last


def size_here(workload_ref: str, people: int | None = None, profile: Profile | None = None) -> SizingResult:
    """``workstation size`` for ``workload_ref`` (for ``people``, as ``size --people N``: None, the
    workload's own) on this machine and the GPU table, for ``profile`` (the app's: the slots
    'serve' would run it with; a desk PC's says this sizing is not its office server's)."""
    from workstation.core import calibration, hardware, memory_check
    from workstation.core.sizing import candidate_machines, local_machines, size
    from workstation.core.workload import load_workload

    workload = load_workload(workload_ref, people)
    speed, cal = calibration.this_machine()
    r = hardware.report()
    local = local_machines(speed, r.gpus, r.memory.available, r.memory.total, r.cpu_bandwidth_gbps)
    return size(workload, candidate_machines(workload, local), cal, memory_check.history_summary(),
                hardware.is_laptop(), profile)


def _ticks(lo: float, hi: float, n: int = 5, whole: bool = False) -> list[float]:
    """About ``n`` round figures from ``lo`` to ``hi`` for an axis (1, 2 or 5 times a power
    of ten apart; whole numbers only where ``whole``)."""
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return []  # nothing to mark on an axis of no size
    if hi <= lo:
        return [lo + 0.0]  # (+ 0.0: not -0)
    raw = (hi - lo) / max(n - 1, 1)
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    if whole:
        step = max(1.0, math.ceil(step))
    first = math.ceil(lo / step) * step
    return [first + i * step + 0.0 for i in range(int((hi - first) / step + 1e-9) + 1)]


def _tick_text(value: float) -> str:
    return f"{value:.0f}" if value == int(value) else f"{value:g}"


# RGB, given alike to plotext (the lines, the bars) and to Rich (the legend): by name the two
# drew apart, "yellow" an orange key beside a purple line (textual-plotext maps it to plotext's
# orange), the weights' purple bar that same purple
RGB = tuple[int, int, int]
SERIES_COLORS: tuple[RGB, ...] = ((0, 180, 216), (214, 92, 214), (236, 166, 0), (80, 200, 80), (232, 80, 80),
                                  (110, 130, 255))
STACK_COLORS: tuple[RGB, ...] = ((70, 110, 230), (60, 170, 90), (210, 70, 70))  # weights, K/V cache, compute
# with NO_COLOR every line and bar is the terminal's one colour, and the Linux console draws no
# braille: each option's line, and each part of a bar, is then drawn (and keyed) with a mark of
# its own (app.glyphs: marks, stacks)


def _style(color: RGB) -> str:
    return "rgb({},{},{})".format(*color)


class Plot(PlotextPlot):
    """A plotext chart that lets go of the app's theme signal when its screen closes: it
    subscribes as it mounts and never unsubscribes, and the signal's callback holds the chart,
    so every F10 kept its two charts with all they had drawn (~0.5 MB an opening)."""

    def on_unmount(self) -> None:
        self.app.theme_changed_signal.unsubscribe(self)


class SizingReady(Progress):
    """The sizing is done: ``label`` is its headline, ``data`` what the charts draw."""


class SizingScreen(AppScreen, Screen[None]):
    OPENED_BY = "sizing"
    BINDINGS = [Binding("escape", "app.pop_screen", "back", id="sizing.back"),
                Binding("plus,equals_sign", "people(1)", "more people", id="sizing.more"),
                Binding("minus", "people(-1)", "fewer people", id="sizing.fewer")]

    def __init__(self, workload_ref: str = "office-20",
                 compute: Callable[..., SizingResult] | None = None) -> None:
        """``compute``: (workload_ref, people=N or None) to the sizing (``size_here``)."""
        super().__init__()
        self.workload_ref = workload_ref
        self.compute = compute or (lambda ref, people=None: size_here(ref, people, self.wapp.profile))
        self.people: int | None = None  # the office's number of people (None: the workload's own)
        self.data: dict[str, Any] | None = None  # what the charts draw, once the sizing is done
        self._result: SizingResult | None = None  # the sizing, once done: F9 draws it again in words of its own

    def compose(self) -> ComposeResult:
        yield Header()
        with VerticalScroll(id="sizing"):  # a short terminal scrolls to the legend; the charts keep their height
            yield Static("", id="sizing-people", markup=False)
            yield Static(self.wapp.texts("sizing.working", name=self.workload_ref), id="sizing-headline",
                         markup=False)
            with Horizontal(id="sizing-charts"):
                yield Plot(id="people-plot")
                yield Plot(id="memory-plot")
            yield Static("", id="sizing-legend")
        yield ScreenFooter()

    def on_mount(self) -> None:
        kept = self.wapp.store.recalled(PEOPLE_KEY)  # (as F10 was last given it: a 6-person firm saw 20 each time)
        self.people = int(kept) if kept is not None and kept.isdigit() and 1 <= int(kept) <= PEOPLE_MAX else None
        self._resize: Any = None  # the timer of + or - pressed (``action_people``)
        self._say_people()
        self.run_sizing(self.people)

    def _say_people(self) -> None:
        t = self.wapp.texts
        n = self.people if self.people is not None else self._result.workload.people if self._result else None
        self.query_one("#sizing-people", Static).update(
            t("sizing.people", n=t.number(f"{n:,}")) if n is not None else t("sizing.people_unknown"))

    def action_people(self, step: int) -> None:
        """+ and -: the office's number of people, one more or fewer (1 at least), remembered for
        the next start; sized again once the keys rest (``RESIZE_AFTER_S``)."""
        now = self.people if self.people is not None else self._result.workload.people if self._result else None
        if now is None:
            return  # (the workload's own not known yet: it could not be read)
        self.people = min(PEOPLE_MAX, max(1, now + step))
        self.wapp.store.remember(PEOPLE_KEY, str(self.people))
        self._say_people()
        self.query_one("#sizing-headline", Static).update(self.wapp.texts("sizing.working", name=self.workload_ref))
        if self._resize is not None:
            self._resize.stop()
        self._resize = self.set_timer(RESIZE_AFTER_S, lambda: self.run_sizing(self.people))

    @work(thread=True, exclusive=True, exit_on_error=False, group="sizing")
    def run_sizing(self, people: int | None) -> None:
        from workstation.core.errors import WorkstationError

        try:
            result = self.compute(self.workload_ref, people=people)
        except WorkstationError as err:
            self.post_message(TaskFailed(self.wapp.texts.error(err)))
            return
        if people != self.people:
            return  # (+ or - pressed since: the newer sizing draws)
        self._result = result
        self._draw()

    def _draw(self) -> None:
        """This PC's plain answer and the headline (as ``size`` says them), the charts and their legend, in the UI's language (a message: from
        the sizing's thread, or from F9)."""
        from workstation.core.sizing import chart_data

        if self._result is not None:
            # this PC's plain answer first (as 'size' says it), then the card to buy
            said = "\n".join(line for line in (say(self._result.answer_phrases(), self.wapp.texts.get).strip(),
                                                say(self._result.headline_phrases(), self.wapp.texts.get).strip())
                             if line)
            self.post_message(SizingReady(1, 1, said, chart_data(self._result)))

    def relabel(self) -> None:
        """F9: the headline, the axes and the legend stayed in the language they were drawn in."""
        self._say_people()
        if self._result is None:
            self.query_one("#sizing-headline", Static).update(self.wapp.texts("sizing.working", name=self.workload_ref))
        self._draw()

    @on(TaskFailed)
    def _failed(self, event: TaskFailed) -> None:
        self.query_one("#sizing-headline", Static).update(event.reason)

    @on(SizingReady)
    def _ready(self, event: SizingReady) -> None:
        t = self.wapp.texts
        self._say_people()
        self.query_one("#sizing-headline", Static).update(event.label)
        data = self.data = event.data
        people = self.query_one("#people-plot", PlotextPlot)
        plt = people.plt
        plt.clear_data()
        plt.clear_figure()
        plt.title(t("sizing.people_title"))
        # the x axis' name only: plotext writes both names on one row under the charts, and
        # "tok/s per person people GB" read as one phrase (the title says what the y axis is)
        plt.xlabel(t("sizing.people_x"))
        # one legend, as text below the charts (plotext drops its own when a chart is narrow and
        # draws it over the top line when it is not): each option once, numbered as the memory
        # chart's bars, in its line's colour
        legend = Text()
        capacities = [r["capacity"] for r in data["memory"]]
        shapes = self.wapp.glyphs
        plain = self.app.no_color or shapes.plain
        for i, s in enumerate(data["series"]):
            color = SERIES_COLORS[i % len(SERIES_COLORS)]
            mark = shapes.marks[i % len(shapes.marks)] if plain else "braille"
            plt.plot(data["people"], s["values"], marker=mark, color=color)
            legend.append(f"{mark * 2 if plain else shapes.line} {i + 1}  ", style=_style(color))
            legend.append(s["label"])
            if i < len(capacities):
                legend.append(f" ({t.number(f'{capacities[i]:.0f} GB')})")
            legend.append("\n")
        plt.hline(data["target_tps"])
        # the axes' figures as the UI writes numbers; people are whole (plotext wrote 11.5)
        xs = _ticks(min(data["people"], default=0), max(data["people"], default=1), whole=True)
        plt.xticks(xs, [t.number(f"{x:.0f}") for x in xs])
        values = [v for s in data["series"] for v in s["values"]] + [data["target_tps"]]
        ys = _ticks(0, max(values))  # from 0: the target drawn on the chart's floor read as its border
        plt.ylim(0, max(values) * 1.05)
        plt.yticks(ys, [t.number(_tick_text(y)) for y in ys])
        target = f"{data['target_tps']:g}"
        legend.append(f"{shapes.rule} {t('sizing.target', tps=target)}", style="dim")
        people.refresh()
        memory = self.query_one("#memory-plot", PlotextPlot)
        plt = memory.plt
        plt.clear_data()
        plt.clear_figure()
        plt.title(t("sizing.memory_title"))  # its unit there: plotext wrote a ylabel "GB" under the
        plt.xlabel(t("sizing.memory_x"))  # x axis, and the options' numbers read as gigabytes
        rows = data["memory"]
        if rows:
            names = [str(i + 1) for i in range(len(rows))]
            plt.stacked_bar(names, [[r["weights"] for r in rows], [r["kv_cache"] for r in rows],
                                    [r["compute"] for r in rows]],
                            color=list(STACK_COLORS), marker=list(shapes.stacks) if plain else None)
            ys = _ticks(0, max(r["weights"] + r["kv_cache"] + r["compute"] for r in rows))
            plt.yticks(ys, [t.number(_tick_text(y)) for y in ys])
            legend.append(f"    {t('sizing.memory_key')}: ")
            for color, mark, part in zip(STACK_COLORS, shapes.stacks,
                                         (t("sizing.weights"), t("sizing.kv"), t("sizing.compute")), strict=True):
                legend.append(f"{mark * 2 if plain else shapes.full * 2} ", style=_style(color))
                legend.append(f"{part}  ")
        legend.append("\n" + t("sizing.glossary"), style="dim")  # the headline's words, for a non-engineer
        memory.refresh()
        self.query_one("#sizing-legend", Static).update(legend)
