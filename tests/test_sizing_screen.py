"""The sizing screen (F10) and the dashboard's axes, in the real TUI."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest
from conftest import table_only as _table_only
from rich.style import Style
from textual_plotext import PlotextPlot
from tui_helpers import make_app, settle, until, workers_done

from workstation.core.phrases import say
from workstation.tui.app import WorkstationApp
from workstation.tui.i18n import Texts
from workstation.tui.screens.dashboard import MetricRow, axis_value
from workstation.tui.screens.sizing import SizingScreen

# the shipped table's sizing, made once for this file's tests (1.5 s of CPU each time, and the same
# answer on every machine: four tests drew it, one asked it twice)
table_only = cache(_table_only)


@pytest.fixture
def app(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, smollm2_path: Path) -> WorkstationApp:
    return make_app(tmp_path, monkeypatch)


def test_sizing_screen_snapshot(snap_compare, app: WorkstationApp) -> None:
    async def open_sizing(pilot) -> None:
        await pilot.app.push_screen(SizingScreen(compute=table_only))
        await settle(pilot)

    assert snap_compare(app, run_before=open_sizing, terminal_size=(120, 36))


async def test_f10_opens_the_sizing_screen_and_draws_both_charts(app: WorkstationApp) -> None:
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("f10")
        await workers_done(pilot)
        await pilot.pause()
        screen = pilot.app.screen
        assert isinstance(screen, SizingScreen)
        headline = str(screen.query_one("#sizing-headline").content)
        assert "Sizing the workload" not in headline and ("tokens a second" in headline or "Nothing meets" in headline)
        assert screen.data is not None and screen.data["series"] and screen.data["memory"]
        assert all(len(s["values"]) == len(screen.data["people"]) for s in screen.data["series"])
        plots = list(screen.query(PlotextPlot))
        assert len(plots) == 2
        await pilot.press("escape")
        assert not isinstance(pilot.app.screen, SizingScreen)
        # its two charts let go of the app's theme signal, which held them and all they drew
        await until(pilot, lambda: not any(plot.is_running for plot in plots))
        assert not [p for p in plots if p in pilot.app.theme_changed_signal._subscriptions]


async def test_f9_draws_the_sizing_again_in_the_new_language(app: WorkstationApp) -> None:
    """F9 on F10 changed the footer only: the headline, the axes and the legend stayed in the
    language they were drawn in."""
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.app.push_screen(SizingScreen(compute=table_only))
        await workers_done(pilot)
        await pilot.pause()
        screen = pilot.app.screen
        english = str(screen.query_one("#sizing-headline").content)
        result = table_only("office-20")  # the shipped table's answer, said in each language
        assert english == say(result.headline_phrases(), Texts("en").get)
        assert english.startswith("Buy a GeForce ") and "gemma-2-9b-it" in english, english
        pilot.app.action_toggle_language()
        await pilot.pause()
        turkish = str(screen.query_one("#sizing-headline").content)
        assert turkish == say(result.headline_phrases(), Texts("tr").get) != english
        assert turkish.startswith("Bir GeForce ") and " alın (" in turkish and "gemma-2-9b-it" in turkish, turkish
        assert "ağırlıklar" in str(screen.query_one("#sizing-legend").render())


async def test_a_bad_workload_shows_its_error(app: WorkstationApp) -> None:
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.app.push_screen(SizingScreen("no-such-office"))
        await workers_done(pilot)
        await pilot.pause()
        assert "No workload file or shipped workload named 'no-such-office'" in str(
            pilot.app.screen.query_one("#sizing-headline").content)


async def test_dashboard_sparklines_have_axes_with_units(app: WorkstationApp) -> None:
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("f5")
        await pilot.pause()
        row = pilot.app.screen.query_one("#row-decode", MetricRow)
        row.set("Decode tok/s", [12.0, 80.5, 40.0], "40.0 tok/s", "tok/s", "last 3 turns")
        await pilot.pause()
        assert str(row.query_one(".metric-axis").content) == "max 80 tok/s\nmin 12 tok/s"
        assert str(row.query_one(".metric-name").content) == "Decode tok/s\nlast 3 turns"
        row.set("TTFT per turn", [5439.0, 300.0], "300 ms", "ms", "last 2 turns")  # thousands separated
        await pilot.pause()
        assert str(row.query_one(".metric-axis").content) == "max 5,439 ms\nmin 300 ms"
        row.set("Decode tok/s", [], "–", "tok/s", "last 0 turns")
        await pilot.pause()
        assert str(row.query_one(".metric-axis").content) == ""
    assert axis_value(3.14) == "3.1" and axis_value(123.4) == "123" and axis_value(5439.2) == "5,439"


async def test_f10_at_80x24_keeps_its_charts_readable_and_names_each_option_once(app: WorkstationApp) -> None:
    """At 80x24 the charts were 4 rows high under the headline and two legends (each option
    named twice, the speed legend wrapping mid-name). The charts keep 14 rows and the screen
    scrolls to one legend: each option once, numbered as the memory chart's bars."""
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.app.push_screen(SizingScreen(compute=table_only))
        await workers_done(pilot)
        await pilot.pause()
        screen = pilot.app.screen
        assert isinstance(screen, SizingScreen) and screen.data is not None
        assert screen.query_one("#people-plot").region.height >= 14
        legend = str(screen.query_one("#sizing-legend").content)
        labels = [s["label"] for s in screen.data["series"]]
        for i, label in enumerate(labels, 1):
            assert legend.count(label) == 1 and f"━━ {i}  {label} (" in legend, legend
        assert "target" in legend and "weights" in legend
        assert "K/V cache: the memory that holds each conversation" in legend and "Slots: " in legend  # the headline's words
        people = str(screen.query_one("#people-plot").render())
        assert "per person people" not in people and "people GB" not in str(screen.query_one("#sizing-charts").render())
        memory = str(screen.query_one("#memory-plot").render())  # its x axis is the options, not gigabytes
        assert "Memory, GB" in memory and "option" in memory and not any(
            line.strip() == "GB" for line in memory.splitlines()), memory
        floor = [line for line in people.splitlines() if "┤" in line][-1]  # the lowest tick: 0, the target above it
        assert floor.split("┤")[0].strip() == "0", people
        # each key in its line's or bar's colour: "yellow" keyed option 3 in orange beside a purple
        # line, the weights' own purple
        drawn = {span.style.color.triplet for plot in ("#people-plot", "#memory-plot")
                 for span in screen.query_one(plot).render().spans
                 if not isinstance(span.style, str) and span.style.color is not None}
        keys = [Style.parse(str(span.style)).color for span in screen.query_one("#sizing-legend").content.spans
                if str(span.style) != "dim"]
        assert len(keys) == len(labels) + 3 and all(k is not None and k.triplet is not None and k.triplet in drawn
                                                   for k in keys), [k for k in keys if k is None or k.triplet not in drawn]
        scroll = screen.query_one("#sizing")
        scroll.scroll_end(animate=False)
        await pilot.pause()
        assert scroll.scroll_y > 0  # the legend is below, reached by scrolling


async def test_f10_without_colour_tells_its_lines_and_bars_apart_by_their_marks(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, smollm2_path: Path) -> None:
    """With NO_COLOR every line was the same braille in the terminal's one colour, every bar
    part the same block, and the legend's keys alike: nothing told the options apart."""
    monkeypatch.setenv("NO_COLOR", "1")
    app = make_app(tmp_path, monkeypatch)
    async with app.run_test(size=(100, 36)) as pilot:
        await pilot.app.push_screen(SizingScreen(compute=table_only))
        await workers_done(pilot)
        await pilot.pause()
        screen = pilot.app.screen
        assert isinstance(screen, SizingScreen) and screen.data is not None
        legend = str(screen.query_one("#sizing-legend").content)
        marks = ["•", "x", "+", "o", "*", "#"][:len(screen.data["series"])]
        assert len(marks) >= 2 and all(f"{m}{m} {i}  " in legend for i, m in enumerate(marks, 1)), legend
        lines = screen.query_one("#people-plot").render().plain
        assert all(m in lines for m in marks[:2])
        bars = screen.query_one("#memory-plot").render().plain
        assert "█" in bars and "▒" in bars and "▒▒ " in legend and "░░ " in legend


async def test_f10_takes_the_offices_number_of_people_remembers_it_and_says_this_pcs_processor(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, smollm2_path: Path) -> None:
    """F10 sized 20 people whatever the office (a 6-person firm could not say 6): + and - change
    the number as ``size --people N`` takes it (the same workload, scaled), kept for the next
    start; and it says what this PC's own processor would do, as ``size`` does beside the cards."""
    from workstation.core.sizing import candidate_machines, local_machines, size
    from workstation.core.workload import load_workload

    app = make_app(tmp_path, monkeypatch)
    async with app.run_test(size=(110, 32)) as pilot:
        await pilot.press("f10")
        await until(pilot, lambda: isinstance(app.screen, SizingScreen) and app.screen.data is not None)
        screen = app.screen
        assert str(screen.query_one("#sizing-people").content) == "People in the office: 20 (+ and - change it)"
        headline = str(screen.query_one("#sizing-headline").content)
        # (office-20 asks for a 7B model: the 135M one is fast enough, and not said "Yes" for real work)
        assert "20 people" in headline and ("this PC can" in headline or "this PC is fast enough" in headline), headline
        await pilot.press("minus", "minus", "minus")
        assert str(screen.query_one("#sizing-people").content) == "People in the office: 17 (+ and - change it)"
        await until(pilot, lambda: "each of 17 people" in str(screen.query_one("#sizing-headline").content))
        await pilot.press("plus")
        await until(pilot, lambda: "each of 18 people" in str(screen.query_one("#sizing-headline").content))
        headline = str(screen.query_one("#sizing-headline").content)
        # the same sizing as 'size --people 18' (load_workload's scaling, this PC's processor beside)
        from workstation.core import calibration, hardware, memory_check

        w = load_workload("office-20", 18)
        speed, cal = calibration.this_machine()
        r = hardware.report()
        result = size(w, candidate_machines(w, local_machines(speed, r.gpus, r.memory.available, r.memory.total,
                                                              r.cpu_bandwidth_gbps)), cal, memory_check.history_summary(),
                      hardware.is_laptop())
        assert say(result.headline_phrases(), Texts("en").get).strip() in headline
        assert say(result.answer_phrases(), Texts("en").get).strip() in headline
    # the next start sizes for 18 again: the sizing asked for is recorded and answered with the one
    # just checked (this PC's sizing is the same; sizing it once more cost 1.5 s of CPU)
    from workstation.tui.screens import sizing

    asked: list[tuple[str, int | None]] = []
    monkeypatch.setattr(sizing, "size_here", lambda ref, people=None, profile=None: asked.append((ref, people)) or result)
    (tmp_path / "again").mkdir()
    app = make_app(tmp_path / "again", monkeypatch)  # (the same data folder: the store keeps it)
    async with app.run_test(size=(110, 32)) as pilot:
        await pilot.press("f10")
        await until(pilot, lambda: isinstance(app.screen, SizingScreen) and app.screen.data is not None)
        assert str(app.screen.query_one("#sizing-people").content) == "People in the office: 18 (+ and - change it)"
        assert asked == [("office-20", 18)]
        assert "each of 18 people" in str(app.screen.query_one("#sizing-headline").content)
