"""The TUI's Usage screen (F11) over a real usage file: tokens per day and per person as bar
charts, and the table by person; and the bar chart's drawing."""

from __future__ import annotations

import re
import time
from pathlib import Path

from textual.widgets import DataTable
from textual.widgets._footer import FooterKey
from tui_helpers import until

from workstation.core.paths import data_dir
from workstation.core.quota import day_start
from workstation.core.usage import SHARED, UsageLog, UsageRecord
from workstation.tui.app import WorkstationApp
from workstation.tui.screens.usage import UsageScreen
from workstation.tui.widgets.bar_chart import BarChart, bar, bar_lines
from workstation.tui.widgets.screen_footer import ChatFooter


def test_bars_scale_to_the_largest_value() -> None:
    assert bar(10, 10, 8) == "█" * 8
    assert bar(5, 10, 8) == "█" * 4
    assert bar(8, 16, 1) == "▌"  # half a cell: the four-eighths block
    assert bar(1, 1000, 1) == "▏"  # never less than an eighth for a value above zero
    assert bar(0, 10, 8) == "" and bar(3, 0, 8) == ""
    lines = bar_lines([("alice", 3000), ("bob", 1000)], width=40, unit=" tok")
    assert lines[0].startswith("alice") and lines[0].endswith("3,000 tok")
    # 40 columns less the label, the value, the unit and the gaps leave 22 cells for a bar;
    # 1000 of 3000 is 7 1/3 cells: 7 full blocks and the three-eighths block
    assert lines[0].count("█") == 22
    assert lines[1].count("█") == 7 and "▍" in lines[1]
    assert len({len(x) for x in lines}) == 1  # aligned


def _record(t: float, key: str, prompt: int, completion: int) -> UsageRecord:
    return UsageRecord(t=t, key=key, profile="office", route="chat", prompt_tokens=prompt,
                       completion_tokens=completion, ttft_ms=120.0, decode_tps=30.0)


async def test_usage_screen_charts_days_and_people(tmp_path: Path) -> None:
    # the days by the app's clock, one moment taken once (the screen's 14 days and the test's
    # "today" differed in a run across midnight): a day of a past month, at 10:00
    now = day_start(time.time() - 60 * 86400) + 10 * 3600
    today = day_start(now) + 9 * 3600
    log = UsageLog(data_dir() / "usage.sqlite3")
    log.add([
        _record(today - 2 * 86400, "alice", 1000, 200),
        _record(today, "alice", 300, 100),
        _record(today, "bob", 50, 25),
        _record(today, SHARED, 10, 5),  # the server's single key
        _record(today - 40 * 86400, "carol", 9999, 1),  # older than the screen's window
    ])
    log.close()
    app = WorkstationApp(None, start_engine=False, sample_system=False, language="en",
                         store_path=tmp_path / "conversations.sqlite3", clock=lambda: now)
    async with app.run_test(size=(100, 40)) as pilot:
        await pilot.press("f11")
        await until(pilot, lambda: isinstance(app.screen, UsageScreen) and app.screen.overview is not None)
        screen = app.screen
        assert isinstance(screen, UsageScreen) and screen.overview is not None
        days = screen.query_one("#usage-days", BarChart)
        people = screen.query_one("#usage-people", BarChart)
        assert [n for _, n in days.rows] == [1200, 490]
        assert people.rows == [("alice", 1600), ("bob", 75), ("(no personal key)", 15)]
        drawn = str(people.content)
        assert "alice" in drawn and "1,600" in drawn and "carol" not in drawn
        table = screen.query_one("#usage-table", DataTable)
        assert table.row_count == 3
        rows = {str(table.get_row_at(i)[0]): str(table.get_row_at(i)[1]) for i in range(3)}
        assert rows == {"alice": "2", "bob": "1", "(no personal key)": "1"}
        # F9 here: the screen is said again in Turkish (its totals and charts stayed English until r)
        await pilot.press("f9")
        await until(pilot, lambda: ("(kişisel anahtar yok)", 15) in people.rows)
        assert all(re.fullmatch(r"\d\d\.\d\d\.\d{4}", day) for day, _ in days.rows), days.rows  # 05.12.2026
        assert "1.600" in str(people.content) and people.title.startswith("Kişi başına token")
        assert str(table.columns[next(iter(table.columns))].label) == app.texts("usage.col_person") == "Kişi"
        await pilot.press("f9")
        await until(pilot, lambda: ("(no personal key)", 15) in people.rows)
        await pilot.press("escape")
        assert app.screen is app.chat_screen
        await pilot.press("f9")  # Turkish: the shared key too
        await until(pilot, lambda: app.texts.lang == "tr")
        await pilot.press("f11")
        await until(pilot, lambda: isinstance(app.screen, UsageScreen) and app.screen.overview is not None)
        assert ("(kişisel anahtar yok)", 15) in app.screen.query_one("#usage-people", BarChart).rows
        # each opening let go of what it drew: the closed screens' headers and footer keys were
        # kept by the app's title and the chat footer's watchers (+0.6 MB an F11 in a long day)
        for _ in range(4):
            await pilot.press("escape")
            await until(pilot, lambda: app.screen is app.chat_screen)
            await pilot.press("f11")
            await until(pilot, lambda: isinstance(app.screen, UsageScreen))
        kept = getattr(app, "__watchers")
        assert len(kept["title"]) <= 2 and len(kept["sub_title"]) <= 2, kept  # the chat's header and this one's
        chat_footer = app.chat_screen.query_one(ChatFooter)
        assert len(getattr(chat_footer, "__watchers")["compact"]) <= len(chat_footer.query(FooterKey))
