"""Size the office: the ``size`` charts in the terminal (textual-plotext).

Shows the headline of ``workstation size`` for a workload (the shipped ``office-20`` unless
the app was given another), tokens/s per person against the number of people for the best
options, and the memory stack (weights, K/V cache, compute) of each against its card. The
sizing runs in a thread worker and comes back as a message.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import Footer, Header, Static
from textual_plotext import PlotextPlot

from workstation.tui.messages import Progress, TaskFailed
from workstation.tui.screens.app_screen import AppScreen

if TYPE_CHECKING:
    from workstation.core.sizing import SizingResult


def size_here(workload_ref: str) -> SizingResult:
    """``workstation size`` for ``workload_ref`` on this machine and the GPU table."""
    from workstation.core import calibration, hardware, memory_check
    from workstation.core.sizing import candidate_machines, local_machines, size
    from workstation.core.workload import load_workload

    workload = load_workload(workload_ref)
    speed, cal = calibration.this_machine()
    r = hardware.report()
    local = local_machines(speed, r.gpus, r.memory.available, r.memory.total, r.cpu_bandwidth_gbps)
    return size(workload, candidate_machines(workload, local), cal, memory_check.history_summary())


class SizingReady(Progress):
    """The sizing is done: ``label`` is its headline, ``data`` what the charts draw."""


class SizingScreen(AppScreen, Screen[None]):
    BINDINGS = [Binding("escape", "app.pop_screen", "back", id="sizing.back")]

    def __init__(self, workload_ref: str = "office-20",
                 compute: Callable[[str], SizingResult] | None = None) -> None:
        super().__init__()
        self.workload_ref = workload_ref
        self.compute = compute or size_here
        self.data: dict[str, Any] | None = None  # what the charts draw, once the sizing is done

    def compose(self) -> ComposeResult:
        yield Header()
        with Vertical(id="sizing"):
            yield Static(self.wapp.texts("sizing.working", name=self.workload_ref), id="sizing-headline",
                         markup=False)
            with Horizontal(id="sizing-charts"):
                yield PlotextPlot(id="people-plot")
                yield PlotextPlot(id="memory-plot")
        yield Footer()

    def on_mount(self) -> None:
        self.run_sizing()

    @work(thread=True, exclusive=True, exit_on_error=False, group="sizing")
    def run_sizing(self) -> None:
        from workstation.core.errors import WorkstationError
        from workstation.core.sizing import chart_data

        try:
            result = self.compute(self.workload_ref)
            self.post_message(SizingReady(1, 1, result.headline(), chart_data(result)))
        except WorkstationError as err:
            self.post_message(TaskFailed(str(err)))

    @on(TaskFailed)
    def _failed(self, event: TaskFailed) -> None:
        self.query_one("#sizing-headline", Static).update(event.reason)

    @on(SizingReady)
    def _ready(self, event: SizingReady) -> None:
        t = self.wapp.texts
        self.query_one("#sizing-headline", Static).update(event.label)
        data = self.data = event.data
        people = self.query_one("#people-plot", PlotextPlot)
        plt = people.plt
        plt.clear_data()
        plt.clear_figure()
        plt.title(t("sizing.people_title"))
        plt.xlabel(t("sizing.people_x"))
        plt.ylabel(t("sizing.people_y"))
        for s in data["series"]:
            plt.plot(data["people"], s["values"], label=s["label"], marker="braille")
        plt.hline(data["target_tps"])
        people.refresh()
        memory = self.query_one("#memory-plot", PlotextPlot)
        plt = memory.plt
        plt.clear_data()
        plt.clear_figure()
        plt.title(t("sizing.memory_title"))
        plt.ylabel("GB")
        rows = data["memory"]
        if rows:
            names = [str(i + 1) for i in range(len(rows))]
            plt.stacked_bar(names, [[r["weights"] for r in rows], [r["kv_cache"] for r in rows],
                                    [r["compute"] for r in rows]],
                            labels=[t("sizing.weights"), t("sizing.kv"), t("sizing.compute")])
            plt.xlabel("  ".join(f"{i + 1}: {r['label']} ({r['capacity']:.0f} GB)" for i, r in enumerate(rows)))
        memory.refresh()
