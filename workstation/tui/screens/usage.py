"""The Usage screen: what the office's server answered, from the usage file ``serve`` writes:
tokens per day and per person as bar charts, and a table by person. On a desk PC (a profile
with ``backend: openai``) it says first what the person's key used today on the office server
and what is left of its daily quota (the server's ``/usage/today``)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.message import Message
from textual.screen import Screen
from textual.widgets import DataTable, Header, Static

from workstation.core.errors import WorkstationError
from workstation.core.profiles import Profile
from workstation.core.quota import day_start
from workstation.core.usage import SHARED, UNKNOWN, UsageRow, open_usage_if_present
from workstation.tui.i18n import Texts
from workstation.tui.messages import TaskFailed
from workstation.tui.screens.app_screen import AppScreen
from workstation.tui.widgets.bar_chart import BarChart
from workstation.tui.widgets.screen_footer import ScreenFooter

if TYPE_CHECKING:
    pass

DAYS = 14  # the charts and the table cover this many days, today included


@dataclass
class UsageOverview:
    by_day: list[tuple[str, int]]  # (YYYY-MM-DD, tokens), oldest first
    by_person: list[tuple[str, int]]  # (key, tokens), most first
    rows: list[UsageRow]  # one per person


def read_overview(days: int = DAYS, now: float | None = None) -> UsageOverview:
    """The last ``days`` local days of the usage file (empty when there is none)."""
    log = open_usage_if_present()
    if log is None:
        return UsageOverview([], [], [])
    since = day_start((now or time.time()) - (days - 1) * 86400)
    try:
        daily = log.daily_by_person(since)
        rows = log.summary("person", since)
    finally:
        log.close()
    per_day: dict[str, int] = {}
    for day, _key, tokens in daily:
        per_day[day] = per_day.get(day, 0) + tokens
    people = sorted(((r.group, r.tokens) for r in rows), key=lambda kv: (-kv[1], kv[0]))
    return UsageOverview(sorted(per_day.items()), people, rows)


class UsageRead(Message):
    def __init__(self, overview: UsageOverview, server: str = "") -> None:
        super().__init__()
        self.overview = overview
        self.server = server  # a desk PC: what the office server says this key used today


def server_today(engine: Any, profile: Profile, texts: Texts) -> str:
    """A desk PC's line: what its key used today on the office server, in a sentence."""
    server = profile.remote.server_name
    if engine is None or not hasattr(engine, "usage_today"):
        return texts("usage.server_down", server=server)
    try:
        data = engine.usage_today()
    except WorkstationError as err:  # the key refused, the server gone: as the chat says it
        return texts.error(err)
    if data is None:
        return texts("usage.server_unknown", server=server)
    until = str(data.get("resets_at") or "")[11:16]  # HH:MM of its local ISO time
    if "keys" in data:  # the server's own key: everyone's
        def tokens(n: int) -> str:
            return texts.number(f"{n:,}")

        people = ", ".join(
            f"{k['key']} {tokens(k['tokens'])}" + (f"/{tokens(k['tokens_per_day'])}" if k.get("tokens_per_day") else "")
            for k in data["keys"]) or "–"
        return texts("usage.server_all", server=server, people=people)
    held = texts("usage.server_held", held=f"{data['held']:,}") if data.get("held") else ""
    if data.get("tokens_per_day"):
        return texts("usage.server_today_limit", server=server, tokens=f"{data['tokens']:,}",
                     limit=f"{data['tokens_per_day']:,}", left=f"{data['left']:,}", resets=until) + held
    return texts("usage.server_today", server=server, tokens=f"{data.get('tokens', 0):,}") + held


class UsageScreen(AppScreen, Screen[None]):
    OPENED_BY = "usage"
    BINDINGS = [
        Binding("escape", "app.pop_screen", "back", id="usage.back"),
        Binding("r", "reload", "refresh", id="usage.refresh"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.overview: UsageOverview | None = None

    def compose(self) -> ComposeResult:
        t = self.wapp.texts
        yield Header()
        with VerticalScroll(id="usage"):
            yield Static("", id="usage-server", markup=False)
            yield Static(t("usage.loading"), id="usage-total", markup=False)
            yield BarChart(t("usage.per_day", days=DAYS), number=t.number, id="usage-days")
            yield BarChart(t("usage.per_person", days=DAYS), number=t.number, id="usage-people")
            yield DataTable(id="usage-table", cursor_type="row", zebra_stripes=True)
        yield ScreenFooter()

    def on_mount(self) -> None:
        self._columns()
        self.action_reload()

    def _columns(self) -> None:
        t = self.wapp.texts
        table = self.query_one("#usage-table", DataTable)
        table.clear(columns=True)
        table.add_columns(
            t("usage.col_person"), t("usage.col_requests"), t("usage.col_errors"), t("usage.col_prompt"),
            t("usage.col_generated"), t("usage.col_ttft"), t("usage.col_tps"),
        )

    def relabel(self) -> None:
        """F9: said again in the new language (its totals and charts stayed in the old one, and
        their figures too, until r)."""
        if not self.is_mounted:
            return
        t = self.wapp.texts
        for chart_id, key in (("#usage-days", "usage.per_day"), ("#usage-people", "usage.per_person")):
            chart = self.query_one(chart_id, BarChart)
            chart.title, chart.number = t(key, days=DAYS), t.number
        self._columns()
        self.action_reload()

    @work(thread=True, exclusive=True, exit_on_error=False, group="usage-read")
    def action_reload(self) -> None:
        app = self.wapp
        try:
            overview = read_overview(now=app.clock())
        except WorkstationError as err:
            self.post_message(TaskFailed(app.texts.error(err)))
            return
        desk = app.profile is not None and app.profile.backend == "openai" and app.api is None
        try:
            server = server_today(app.engine, app.profile, app.texts) if desk and app.profile else ""
        except Exception:  # noqa: BLE001 - an odd answer or an engine closed by a profile switch
            server = app.texts("usage.server_unknown", server=app.profile.remote.base_url if app.profile else "")
        self.post_message(UsageRead(overview, server))

    @on(UsageRead)
    def _read(self, event: UsageRead) -> None:
        event.stop()
        t = self.wapp.texts
        ov = self.overview = event.overview
        total = sum(tokens for _, tokens in ov.by_day)
        requests = sum(r.requests for r in ov.rows)
        # a desk PC that serves no one itself: its server's line, then that, not "0 requests"
        # above two empty charts and an empty table
        served = bool(requests) or not event.server
        self.query_one("#usage-total", Static).update(
            t("usage.total", days=DAYS, requests=f"{requests:,}", tokens=f"{total:,}") if served
            else t("usage.desk_none")
        )
        for part in ("#usage-days", "#usage-people", "#usage-table"):
            self.query_one(part).display = served
        server = self.query_one("#usage-server", Static)
        server.update(event.server)
        server.display = bool(event.server)
        none = t("usage.desk_none") if event.server else t("usage.none")
        self.query_one("#usage-days", BarChart).show([(t.day(day), n) for day, n in ov.by_day], none)
        def who(key: str) -> str:  # the shared key (or a server without keys), a refused one, in this language
            return t("usage.shared") if key == SHARED else t("usage.unknown") if key == UNKNOWN else key

        self.query_one("#usage-people", BarChart).show([(who(k), n) for k, n in ov.by_person], none)
        table = self.query_one("#usage-table", DataTable)
        table.clear()
        for r in ov.rows:
            table.add_row(who(r.group), *(t.number(f) for f in (
                f"{r.requests:,}", f"{r.errors:,}", f"{r.prompt_tokens:,}",
                f"{r.completion_tokens:,}", *r.speed_texts())))

    @on(TaskFailed)
    def _failed(self, event: TaskFailed) -> None:
        event.stop()
        self.notify(event.reason, title=self.wapp.texts("error.title"), severity="error")
