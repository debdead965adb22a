"""The live performance dashboard: per-turn timings, the KV cache, CPU, RAM and GPUs."""

from __future__ import annotations

import statistics
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, cast

from rich.console import Console, ConsoleOptions, RenderableType
from rich.segment import Segment
from textual import work
from textual.app import ComposeResult, RenderResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import Header, Label, ProgressBar, Sparkline, Static

from workstation.core.catalog import human_bytes
from workstation.core.gpu_layers import offloadable_layers
from workstation.core.metrics import (
    REPLIES_TIMED,
    REPLY_RATE_MIN,
    TTFT_SECONDS_FROM_MS,
    TurnMetrics,
    began_busy,
    quiet_median,
    read_turns,
    reread,
    switch_reading,
    timed_replies,
    ttft_said,
)
from workstation.core.phrases import (
    about_words,
    rounded_words,
    words_in,
    words_per_token,
    writing_said,
)
from workstation.core.profiles import KVCache, kv_words
from workstation.core.speed_estimate import keeps_pace
from workstation.core.summarize import duration
from workstation.core.thread_policy import choose_threads
from workstation.tui.glyphs import UNICODE
from workstation.tui.screens.app_screen import AppScreen
from workstation.tui.screens.models import server_model
from workstation.tui.widgets.progress import LocalProgressBar
from workstation.tui.widgets.screen_footer import ScreenFooter
from workstation.tui.widgets.status_bar import StatusBar

if TYPE_CHECKING:
    from workstation.tui.app import WorkstationApp
    from workstation.tui.i18n import Texts


def axis_value(v: float) -> str:
    """A number for an axis label: whole above 10, one decimal below."""
    return f"{v:,.0f}" if abs(v) >= 10 else f"{v:.1f}"


AXIS_WIDTH = 14  # .metric-axis in workstation.tcss



def ttft_value(ms: float, texts: Texts) -> str:
    """The TTFT row's figure, as the line under the reply says it (``ttft_said``): "904 ms", from
    1 s on "1.9 s", "20 s" (the row said "19,865 ms" where the reply said "TTFT 20 s")."""
    key, values = ttft_said(ms)
    return texts("unit.ms", n=values["ms"]) if key == "metric.ttft" else texts("unit.s", n=values["s"])


def replies_said(recent: list[TurnMetrics], texts: Texts, terms: bool = False,
                 per_token: float | None = None) -> tuple[str, dict[str, Any]]:
    """Replies' speed as a person pictures it (a phrase): the median wait for the first words,
    then the words a second after it (``about_words``), beside the speed people read
    (``keeps_pace``: by the words a second said); the writing speed of the replies long enough to time
    (``REPLY_RATE_MIN``, as F4 says a model's). ``terms``: each figure's term after it, "(TTFT
    900 ms)", "(70.0 tok/s)", where the rows' figures are to be compared with it, in place of
    the speed people read (F5's line after a profile switch said "median 70.0 tok/s, TTFT 900 ms"
    alone; with both it took four lines at 80 columns). ``recent``: not empty. ``per_token``: the
    words a token of the replies themselves (``MetricsHistory.words_per_token``). Where the last
    of them began while other programs kept this PC busy (``began_busy``), it says so after the
    figures (``busy_said``): F5 said a busy reply's half speed as this PC's own. The wait is the
    median of the replies that did not read the whole conversation again (``reread``: their wait
    is apart, ``rereads_said``), of all where each did: after a switch, "about 4.2 s" was the
    median of a 0.3 s wait and an 8 s one."""
    ordinary = [turn for turn in recent if not reread(turn)] or recent
    wait_ms = statistics.median(turn.ttft_ms for turn in ordinary)
    wait = wait_said(wait_ms / 1000, texts)
    ttft = ("dash.ttft_term", {"ms": f"{wait_ms:,.0f}"}) if terms else ""
    rates = [turn.predicted_per_second for turn in timed_replies(recent)]
    if not rates:  # (short replies only: "Yes." is timed by its first word's wait)
        return "dash.first_words", {"wait": wait, "ttft": ttft, "busy": busy_said(recent)}
    tps = statistics.median(rates)
    return "dash.first_words_then", {
        "wait": wait, "ttft": ttft, "writing": writing_said(tps, texts.get, per_token, terms),
        "pace": "" if terms else ("dash.pace_fast" if keeps_pace(tps, texts.get, per_token) else "dash.pace_slow", {}),
        "busy": busy_said(recent)}


def wait_said(wait_s: float, texts: Texts) -> tuple[str, dict[str, Any]]:
    """A wait for the first words as F5's headline says it: tenths of a second below 10 s."""
    return ("unit.s", {"n": f"{max(wait_s, 0.1):.1f}"}) if wait_s < 10 else duration(wait_s, texts.get)


def rereads_said(recent: list[TurnMetrics], texts: Texts) -> str:
    """Of ``recent``, those that read the whole conversation again first (``reread``), in a
    sentence after the headline: how many, and their median wait, which the headline's leaves
    out; "" where none did."""
    again = [turn for turn in recent if reread(turn)]
    if not again:
        return ""
    if len(again) == len(recent):
        return texts("dash.rereads_all_one" if len(again) == 1 else "dash.rereads_all")
    wait = wait_said(statistics.median(turn.ttft_ms for turn in again) / 1000, texts)
    return texts("dash.rereads_one" if len(again) == 1 else "dash.rereads", n=len(again), wait=wait)


def busy_said(recent: list[TurnMetrics]) -> tuple[str, dict[str, Any]] | str:
    """Where the last of ``recent`` began while other programs kept this PC busy (``began_busy``:
    another app, a summary or batch run in another window): a clause that says so, of it alone
    ("the PC was busy … as it began"), of the last of several, or of every one; "" otherwise."""
    if not recent or not began_busy(recent[-1].cpu_others):
        return ""
    if len(recent) == 1:
        return "dash.busy_one", {}
    return ("dash.busy_all" if all(began_busy(turn.cpu_others) for turn in recent) else "dash.busy_last"), {}


AS_FAST = 0.1  # medians closer than this share of each other: "about as fast"


def faster_said(now: tuple[str, list[TurnMetrics]], before: tuple[str, list[TurnMetrics]], texts: Texts,
                per_token: float | None = None) -> str:
    """Which of two profiles of one model file wrote faster here, in one sentence: the medians of
    each one's last replies long enough to time (``timed_replies``, ``REPLY_RATE_MIN``); "" where
    either has none. ``now``, ``before``: (the profile's name, its turns). F5 said only the profile
    before's figures after a switch: a reply at 32.8 tok/s against 47.6 before said nothing of
    slower, while "guesses kept 100%" read as success. Only where each has enough replies begun
    with no other program keeping a core busy (``quiet_median``): "about 26 against 13 words a
    second" compared 6 replies with 1 written while other programs kept 2 cores busy."""
    a, b = (quiet_median((t.predicted_per_second, t.cpu_others) for t in timed_replies(turns)) for _, turns in (now, before))
    if a is None or b is None:
        return ""
    (now_name, _), (before_name, _) = now, before
    if abs(a - b) <= AS_FAST * max(a, b):
        return texts("dash.as_fast", now=now_name, before=before_name, words=about_words(a, texts.get, per_token))
    (fast, fast_name), (slow, slow_name) = sorted([(a, now_name), (b, before_name)], reverse=True)
    return texts("dash.faster", faster=fast_name, slower=slow_name, fast=about_words(fast, texts.get, per_token),
                 slow=about_words(slow, texts.get, per_token))


def recent_replies(turns: list[TurnMetrics]) -> list[TurnMetrics]:
    """The replies F5 says: the last ``REPLIES_TIMED`` that time a model (``timed_replies``, as F3
    and F4 count them); where none does (short replies only), the last ones, for their wait."""
    return timed_replies(turns)[-REPLIES_TIMED:] or turns[-REPLIES_TIMED:]


def last_ones(some: list[TurnMetrics], turns: list[TurnMetrics]) -> bool:
    """Whether ``some`` of ``turns`` are their last ones, none left out between (F5 says them
    "last 2" so; else by what they are: "long enough to time", "long prompts")."""
    return len(some) <= len(turns) and all(a is b for a, b in zip(some, turns[len(turns) - len(some):], strict=True))


def replies_headline(turns: list[TurnMetrics], texts: Texts, per_token: float | None = None) -> str:
    """The last replies' speed in one sentence a person pictures, at the top of F5
    (``replies_said``): medians of the ``recent_replies``; "" with none. The rows under it
    were jargon to a first user ("TTFT per turn", "Decode tok/s"). Where the last reply was too
    short to time, the sentence says its replies are the last ones long enough to time (it said
    "Your last reply" of the one before a 30-token reply, at another speed), and so where a short
    one came between them ("Your last 2 replies" of 3, beside rows of "last 3 replies")."""
    recent = recent_replies(turns)
    if not recent:
        return ""
    said = replies_said(recent, texts, per_token=per_token)
    key = "dash.headline" if last_ones(recent, turns) else "dash.headline_timed"
    headline = texts(f"{key}_one", said=said) if len(recent) == 1 else texts(key, n=len(recent), said=said)
    return f"{headline} {again}" if (again := rereads_said(recent, texts)) else headline


def live_said(tokens: int, rate: float | None, texts: Texts, words: int | None = None,
              per_token: float | None = None) -> str:
    """F5's line while a reply is written: the words so far and a second (``about_words``, as the
    headline says them), then the engineers' figures ("Generating: 212 tokens so far, 80.1 tok/s"
    was jargon to a first user). One line of 80 columns, in Turkish too. Before the first word
    (the prompt read, the office server's queue) it says so: it said "about 0.0 words so far".
    The words so far are a count, whole ("0.8" after a token): ``words``, those of the reply as
    written (counted), and its rate by the reply's own words a token once it has a few, else by
    ``per_token`` (the earlier replies'), not the UI's language's figure."""
    if not tokens:
        return texts("dash.live_waiting")
    if words is not None and tokens >= REPLY_RATE_MIN and words:
        per_token = words / tokens
    counted = words if words is not None else tokens * (per_token or words_per_token(texts.get))
    said = rounded_words(counted) if counted >= 2 else str(max(round(counted), 1))
    return texts("dash.live", words=said, n=f"{tokens:,}",
                 rate=about_words(rate, texts.get, per_token) if rate else "…", tps=f"{rate:,.1f}" if rate else "…")


class Heights(Sparkline):
    """Textual's sparkline, its heights drawn as the terminal can (``app.glyphs``: ASCII on the
    Linux console, whose font has no eighth blocks)."""

    def render(self) -> RenderResult:
        drawn = super().render()
        shapes = getattr(self.app, "glyphs", UNICODE)
        return _Redrawn(drawn, str.maketrans(UNICODE.spark, shapes.spark)) if shapes.plain else drawn


class _Redrawn:
    """A renderable with its characters swapped (``table``: str.maketrans)."""

    def __init__(self, inner: RenderableType, table: dict[int, int]) -> None:
        self.inner = inner
        self.table = table

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> Iterator[Segment]:
        for segment in console.render(self.inner, options):
            yield Segment(segment.text.translate(self.table), segment.style, segment.control)


class MetricRow(Horizontal):
    """A label (with the span the sparkline covers), the y axis (the largest and smallest value
    shown, with its unit), a sparkline of the last turns, and the latest value."""

    DEFAULT_CLASSES = "metric-row"

    def __init__(self, key: str) -> None:
        super().__init__(id=f"row-{key}")
        self.key = key

    def compose(self) -> ComposeResult:
        yield Label("", classes="metric-name")
        yield Label("", classes="metric-axis")
        yield Heights([], classes="metric-spark")
        yield Label("", classes="metric-value")

    _shown: tuple[object, ...] | None = None  # what the row shows: the same again draws nothing

    def set(self, name: str, values: list[float], value: str, unit: str = "", span: str = "") -> None:
        # every update of a label lays the screen out again; beside a decoding engine only the
        # live row changes, and the others' redraws took CPU from it
        shown = (name, tuple(values), value, unit, span)
        if shown == self._shown:
            return
        self._shown = shown
        # the labels have a fixed size (workstation.tcss): no layout for a new value
        self.query_one(".metric-name", Label).update(f"{name}\n{span}" if span and values else name, layout=False)
        axis = ""
        if values:
            # Textual's Sparkline scales from the smallest value shown to the largest; the axis
            # says so, so that its numbers are not read as the latest value (on the right)
            t = cast("WorkstationApp", self.app).texts

            def lines(with_unit: str) -> list[str]:
                return [t(key, v=f"{axis_value(v)} {with_unit}".rstrip())
                        for key, v in (("dash.axis_max", max(values)), ("dash.axis_min", min(values)))]

            # without the unit where a line would not fit its column (the value on the right
            # says it): "maks 63 token/sn" wrapped and pushed "min …" out of the row's two lines
            shown_lines = lines(unit)
            if max(map(len, shown_lines)) > AXIS_WIDTH:
                shown_lines = lines("")
            axis = "\n".join(shown_lines)
        self.query_one(".metric-axis", Label).update(axis, layout=False)
        self.query_one(Sparkline).data = values  # none yet: a flat line, not a solid bar
        self.query_one(".metric-value", Label).update(value, layout=False)


class DashboardScreen(AppScreen, Screen[None]):
    OPENED_BY = "dashboard"
    FIGURES_HELP = "dash.help"  # F1: what each row's figure is, one sentence each (TPOT was a term alone)
    BINDINGS = [Binding("escape", "app.pop_screen", "back", id="dashboard.back")]
    _memory_for: str | None = "-"  # the model the memory line was read for
    _drawn_at = 0.0  # when the live redraw last ran (time.monotonic)

    def __init__(self) -> None:
        super().__init__()
        self._texts: dict[str, str] = {}  # what each line shows (``_put``)
        self._models: dict[str, str] = {}  # the model file a profile runs, by its ref (``_model_of``)

    def compose(self) -> ComposeResult:
        yield Header()
        with VerticalScroll(id="dashboard"):
            yield Static("", id="headline", markup=False)
            yield Static("", id="live", markup=False)
            yield Static("", id="switch-line", markup=False)
            yield MetricRow("ttft")
            yield MetricRow("decode")
            yield MetricRow("prompt")
            yield MetricRow("tpot")
            with Horizontal(id="kv-row", classes="metric-row"):
                yield Label("", id="kv-name", classes="metric-name")
                yield LocalProgressBar(total=1, show_eta=False, show_percentage=False, id="kv-bar")
                yield Label("", id="kv-value", classes="metric-value")
            yield Static("", id="cache-line", markup=False)
            yield MetricRow("cpu")
            yield Static("", id="ram-line", markup=False)
            yield Static("", id="memory-line", markup=False)
            yield Vertical(id="gpus")
        yield StatusBar(id="status")
        yield ScreenFooter()

    def on_mount(self) -> None:
        self.set_status(self.wapp.status_text())
        self.refresh_view()
        self.set_interval(0.25, self._tick)

    def _tick(self) -> None:
        if not self.wapp.generating:
            return
        now = time.monotonic()
        if now - self._drawn_at >= self.wapp.stream_pace().dashboard_every_s:  # gives way to the engine
            self._drawn_at = now
            self.refresh_view()

    def relabel(self) -> None:
        self._memory_for = "-"  # its line is read again, in the new language (it stayed in the old)
        self.refresh_view()

    def _model_of(self, ref: str) -> str:
        """The model file the profile ``ref`` runs (``model_file``); "" where it cannot be read or
        is a server's. Read once."""
        if ref not in self._models:
            from workstation.core.errors import WorkstationError
            from workstation.core.profile_lookup import load_profile, model_file

            try:
                self._models[ref] = model_file(load_profile(ref)) if ref else ""
            except (WorkstationError, OSError):
                self._models[ref] = ""
        return self._models[ref]

    def set_status(self, text: str) -> None:
        for bar in self.query(StatusBar):
            bar.update(text)

    def _put(self, selector: str, text: str, one_line: bool = False) -> None:
        """Update a label or a line only when its text changes; a ``one_line`` one (a fixed
        height, too short to wrap) without laying the screen out again."""
        if self._texts.get(selector) != text:
            self._texts[selector] = text
            self.query_one(selector, Static).update(text, layout=not one_line)

    def refresh_view(self) -> None:
        if not self.query("#live"):
            return  # a reading can arrive while the screen is put up or taken down
        app = self.wapp
        t = app.texts
        hist = app.history
        # after a profile switch (F3) the rows plot the loaded profile's turns only, and one line
        # compares them with the profile before: one series of two profiles' turns read as a
        # change of speed, not as what the switch bought
        run, before = hist.runs(app.profile.ref if app.profile else "")
        last = run.turns[-1] if run.turns else None

        def series(name: str) -> list[float]:
            return [float(getattr(turn, name)) for turn in run.turns]

        per_token = hist.words_per_token()  # (the replies' own words a token: not the UI's language's)
        headline = replies_headline(run.turns, t, per_token)
        if headline and app.profile is not None and app.profile.backend != "llama":
            # a desk PC's replies are the office server's (shared, over the network): the sentence
            # sat above "This PC's CPU … 100%" as if this PC wrote them
            headline = f"{headline} {t('dash.server_wrote', model=server_model(app))}"
        # the first reply after a switch (F3) waited for the conversation read again, or did not for
        # the part kept on disk: said under the speed it brings down, while it is the last reply
        # (not where the headline's re-reads already count it: ``rereads_said``)
        if last is not None and (switch := switch_reading(last, t.get, "dash")) is not None and not (
                switch[0] == "dash.switch_read" and reread(last) and any(turn is last for turn in recent_replies(run.turns))):
            headline = f"{headline} {t(switch[0], **switch[1])}".strip()
        self._put("#headline", headline)
        if self.query_one("#headline").display != bool(headline):
            self.query_one("#headline").display = bool(headline)
        live = app.live_rate()
        if app.summarizing is not None:  # a summary's model calls, not the last chat turn's figures (stale)
            live = None
            said = app.summarize_screen().state_said
            self._put("#live", t("dash.summarizing", name=app.summarizing, state=said), one_line=True)
        elif app.generating:
            view = app.reply_view  # its words so far, its thinking's with them as its tokens count them
            # (as the history counts a reply's: a reasoning model thinking read "about 1 word so far" of 40 tokens),
            # of a reply gone on with the new part's, as its tokens are (``written``)
            words = sum(map(words_in, view.written())) if view is not None else None
            self._put("#live", live_said(app.live_tokens, live, t, words, per_token), one_line=True)
        else:
            n = len(hist.turns)
            self._put("#live", t("dash.turns_one") if n == 1 else t("dash.turns", n=n), one_line=True)
        switch = self.query_one("#switch-line", Static)
        if switch.display != (before is not None):
            switch.display = before is not None
        if before is not None:
            now_name = app.profile.title(t.lang) if app.profile else run.name
            # said as the headline says the loaded one's replies, each figure's term after it (the rows')
            earlier_turns = recent_replies(before.turns)
            n_before = len(earlier_turns)
            earlier = t("dash.before_one" if n_before == 1 else "dash.before", name=app.profile_title(before.ref, before.name), n=n_before,
                        said=replies_said(earlier_turns, t, terms=True, per_token=per_token))
            n_now = len(run.turns)
            now = ("dash.since_switch_none", "dash.since_switch_one")[n_now] if n_now < 2 else "dash.since_switch"
            said = t(now, name=now_name, n=n_now) + " " + earlier
            if (model := self._model_of(run.ref)) and model == self._model_of(before.ref):  # (one model: the profiles compared)
                said += " " + faster_said((now_name, run.turns), (app.profile_title(before.ref, before.name), before.turns), t, per_token)
            self._put("#switch-line", said.rstrip())
        decode = series("predicted_per_second")
        if app.generating and live:
            decode = [*decode, live]
        n_turns = len(series("ttft_ms"))
        tps = t("unit.tps")
        turns_span = t("dash.axis_turn_one") if n_turns == 1 else t("dash.axis_turns", n=n_turns)
        # the decode row plots the reply being written too: its span counts it (the first reply's
        # live bar said "last 0 turns")
        # (counted as the other rows and the headline count them, this reply apart: "last 3 turns" beside
        # "last 2 turns" and "Your last 2 replies" read as two counts of one conversation's replies)
        decode_span = (turns_span if len(decode) == n_turns else t("dash.axis_this_reply") if len(decode) == 1
                       else t("dash.axis_reply_and_this") if n_turns == 1 else t("dash.axis_replies_and_this", n=n_turns))
        # (its axis in seconds where the waits reach one, as the figure beside it and the line under a
        # reply say them: "3.9 s" beside an axis of "3,883 ms" read as two units)
        waits = series("ttft_ms")
        in_s = max(waits, default=0.0) >= TTFT_SECONDS_FROM_MS
        self.query_one("#row-ttft", MetricRow).set(
            t("dash.ttft"), [w / 1000 for w in waits] if in_s else waits, ttft_value(last.ttft_ms, t) if last else "–",
            t("unit.s", n="").strip() if in_s else "ms", turns_span
        )
        rate = live if app.generating and live else (last.predicted_per_second if last else 0.0)
        self.query_one("#row-decode", MetricRow).set(  # (no rate yet, or a reply of one token: "–", not "0.0")
            t("dash.decode"), decode, t.number(f"{rate:.1f} {tps}") if rate else "–", tps, decode_span,
        )
        # reading speed of turns that read a prompt worth timing (``read_turns``): a follow-up of 19
        # new tokens' "30 tok/s" read as a PC reading slowly
        read = read_turns(run.turns)
        self.query_one("#row-prompt", MetricRow).set(
            t("dash.prompt"), [turn.prompt_per_second for turn in read],
            t.number(f"{read[-1].prompt_per_second:,.0f} {tps}") if read else "–", tps,
            # "last turn" said of the one before a short follow-up: the turns shown, said as what they are
            t("dash.axis_read_turns", n=len(read)) if read and not last_ones(read, run.turns)
            else t("dash.axis_turn_one") if len(read) == 1 else t("dash.axis_turns", n=len(read)),
        )
        self.query_one("#row-tpot", MetricRow).set(
            t("dash.tpot"), series("predicted_per_token_ms"),
            t.number(f"{last.predicted_per_token_ms:.1f} ms") if last else "–", "ms", turns_span,
        )
        # the loaded engine's context; a last turn run with another (a conversation reopened on
        # another profile) says nothing of this cache's use
        # a desk PC's profile runs on the server: this PC holds no KV cache and loaded no model
        local = app.profile is None or app.profile.backend == "llama"
        for selector in ("#kv-row", "#memory-line"):
            widget = self.query_one(selector)
            if widget.display != local:
                widget.display = local
        kv_size = app.engine_info.n_ctx if app.engine_info else (last.kv_size if last else 0)
        kv_used = last.kv_used if last and last.kv_size == kv_size else 0
        if app.generating and app.summarizing is None:  # it fills as the reply is written (it stood still until
            # the reply's end); a summary's (F6) steps are not a reply: its live_prompt is the last reply's
            # with the prompt's tokens as they are read (a prompt of 1,749 showed "129/4,096" till the end):
            # all of it once the reply has begun, else the last turn's cells (a short prompt says nothing)
            read = app.live_prompt
            prompt = (read[1] if app.live_tokens else read[0]) if read else kv_used
            kv_used = min(kv_size, prompt + app.live_tokens)
        self._put("#kv-name", t("dash.kv"), one_line=True)
        bar = self.query_one("#kv-bar", ProgressBar)
        bar.update(total=max(kv_size, 1), progress=kv_used)
        self._put("#kv-value", f"{t.number(f'{kv_used:,}')}/{t.number(f'{kv_size:,}')}" if kv_size else "–", one_line=True)
        if last:
            total = last.prompt_n + last.cache_n
            hits = t("dash.cache", hit=f"{last.cache_n:,}", total=f"{total:,}",
                     pct=f"{(last.cache_n / total * 100) if total else 0:.0f}")
            if last.restored_n:
                hits += " · " + t("dash.restored", n=f"{last.restored_n:,}")
            if (switch := switch_reading(last, t.get)) is not None:
                hits += " · " + t(switch[0], **switch[1])
            draft = (
                t("dash.draft", pct=f"{rate * 100:.0f}", acc=f"{last.draft_n_accepted:,}", n=f"{last.draft_n:,}")
                if (rate := last.acceptance_rate) is not None else t("dash.draft_server")  # a desk PC: the office server's to decide, unknown here
                if app.profile is not None and app.profile.backend == "openai"
                else t("dash.draft_none")  # speculation on, but nothing worth drafting this turn
                if app.profile is not None and app.profile.speculative.mode != "off" else t("dash.draft_off")
            )
            lines = [hits, draft]
            if last.threads_reason:
                cores = app.engine_info.threads if app.engine_info else last.n_threads
                lines.append(t(f"dash.threads.{last.threads_reason}", n=last.n_threads, cores=cores,
                               others=f"{last.cpu_others:.1f}") + self._threads_now(last))
        else:
            # turns before a switch are counted above ("4 turns in this conversation"): not "no turns yet";
            # the first reply being written is said so ("no turns yet" stood while it was written)
            # (not while F6 makes a summary: "the first reply is being written" stood while none was)
            lines = [t("dash.first_reply_writing" if app.generating and app.summarizing is None
                       else "dash.no_turns_since_switch" if before is not None else "dash.no_turns")]
        info = app.engine_info
        if info is not None and local:  # the status bar says the share in words; the count is here
            lines.append(t("dash.layers", n=info.gpu_layers, total=offloadable_layers(info.n_layer)))
            kv = KVCache(info.type_k, info.type_v)
            if said := kv_words(kv, t.get):  # (the status bar's "context memory half size" went; nothing for f16/f16)
                lines.append(t("dash.kv_types", types=f"{kv.k}/{kv.v}", said=said))
        self._put("#cache-line", "\n".join(lines))
        sample = app.system
        cpu_hist = list(app.cpu_history)
        # a desk PC's turns ran on the server: the CPU, RAM and GPUs below are this PC's, said so
        # (beside the server's figures they read as the server's)
        here = "" if local else "_here"
        self.query_one("#row-cpu", MetricRow).set(
            t(f"dash.cpu{here}"), cpu_hist, t.number(f"{sample.cpu:.0f} %") if sample else "–", "%",
            t("dash.axis_seconds", n=len(cpu_hist)),
        )
        self._put("#ram-line", t(f"dash.ram{here}", used=human_bytes(sample.ram_used), total=human_bytes(sample.ram_total))
                  if sample else t(f"dash.ram_unknown{here}"))
        self._show_gpus(here)
        model_path = app.engine_info.model_path if app.engine_info else None
        if model_path != self._memory_for:
            self._memory_for = model_path
            self.load_memory_check(model_path)

    def _threads_now(self, last: TurnMetrics) -> str:
        """Where the last reply took every core (``threads: auto``, the load measured in the second
        before it began, and every ``RECHECK_TOKENS``) and other programs keep cores busy now (the
        CPU row's reading, no reply being written): said, with the count the next reply would take
        by the same rule (``choose_threads``). F5 said "no other program keeps one busy" minutes
        after that second, while other programs kept both cores of a PC busy. Other programs'
        cores are counted as a reply's thread choice counts them (``CpuLoad.others``): the whole
        machine's reading less the app's own (it counted the app's own redraws as another
        program's)."""
        sample = self.wapp.system
        if last.threads_reason != "idle" or self.wapp.generating or sample is None:
            return ""
        others = sample.cpu_others
        if others is None:
            return ""
        now = choose_threads(last.n_threads, others)
        if now.decode >= last.n_threads:
            return ""
        return ". " + self.wapp.texts("dash.threads_now", others=f"{others:.1f}", n=now.decode)

    @work(thread=True, exclusive=True, exit_on_error=False, group="memory-check")
    def load_memory_check(self, model_path: str | None) -> None:
        """The newest load's estimate beside llama.cpp's allocation (the history, SQLite)."""
        from workstation.core.memory_check import latest

        found = latest(model_path) if model_path else None
        self.app.call_from_thread(self._show_memory, found)

    def _show_memory(self, found: dict[str, Any] | None) -> None:
        if not self.query("#memory-line"):
            return
        t = self.wapp.texts
        total = (found or {}).get("components", {}).get("total")
        if not total or not total.get("allocated"):
            self.query_one("#memory-line", Static).update(t("dash.memory_none"))
            return
        pct = total.get("diff_pct")
        self.query_one("#memory-line", Static).update(t(
            "dash.memory", est=human_bytes(total["estimated"]), alloc=human_bytes(total["allocated"]),
            pct=f"{pct:+.1f}%" if pct is not None else "?"))

    def _show_gpus(self, here: str = "") -> None:
        box = self.query_one("#gpus", Vertical)
        sample = self.wapp.system
        gpus = sample.gpus if sample else []
        box.display = bool(gpus)
        if not gpus:
            return
        lines = []
        num = self.wapp.texts.number
        for g in gpus:
            util = f"{g.utilization:.0f}" if g.utilization is not None else "?"
            vram = (
                f"{num(human_bytes(g.vram_used))}/{num(human_bytes(g.vram_total))}"
                if g.vram_used is not None else "?"
            )
            temp = num(f"{g.temperature:.0f}°C") if g.temperature is not None else "?"
            power = num(f"{g.power:.0f} W") if g.power is not None else "?"
            lines.append(self.wapp.texts(f"dash.gpu{here}", i=g.index, name=g.name, util=util,
                                         vram=vram, temp=temp, power=power))
        if not box.children:
            box.mount(Static("\n".join(lines), id="gpu-lines", markup=False))
        else:
            self._put("#gpu-lines", "\n".join(lines))
