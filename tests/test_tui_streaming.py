"""Streaming a reply into the chat: the widget that keeps the screen's work small, and the
message view that moves finished paragraphs into Markdown. Real Textual apps (run_test)."""

from __future__ import annotations

import re

from rich.cells import cell_len
from textual.app import App, ComposeResult
from textual.containers import VerticalScroll
from textual.geometry import Region
from textual.widgets import Markdown
from tui_helpers import until

from workstation.core.metrics import TurnMetrics
from workstation.tui import pacing
from workstation.tui.i18n import Texts
from workstation.tui.widgets import streaming_text
from workstation.tui.widgets.message_view import MessageView
from workstation.tui.widgets.streaming_text import StreamingText


class FakeClock:
    """The throttles' clock, moved by the test: no assertion depends on how fast this machine is."""

    def __init__(self, step: float = 0.0) -> None:
        self.now = 1000.0
        self.step = step  # how far each reading moves it (0: it stands still until moved)

    def __call__(self) -> float:
        self.now += self.step
        return self.now


class _TextApp(App[None]):
    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield StreamingText()


async def test_streaming_text_lays_out_only_when_it_needs_more_lines(monkeypatch) -> None:
    app = _TextApp()
    async with app.run_test(size=(40, 20)) as pilot:
        text = app.query_one(StreamingText)
        text.clock = FakeClock(step=60.0)  # every reading a minute later: never throttled here
        assert not text.display and text.size.height == 0
        text.append("Hello")
        await pilot.pause()
        assert text.display and text.size.height >= 1
        layouts = text.layouts
        for word in [" a", " b", " c"]:  # still one line of 40 cells: repaint only
            text.append(word)
            await pilot.pause()
        assert text.layouts == layouts
        text.append(" word" * 12)  # 60 more cells: it needs more lines than it holds
        await pilot.pause()
        assert text.layouts == layouts + 1
        height = text.size.height
        lines = len(text.lines)
        assert text.headroom() == 10  # half the 20 visible lines
        assert lines == 2 and height == lines + 10
        rendered = "".join(strip.text for strip in text.render_lines(text.region.reset_offset))
        assert "Hello a b c word" in rendered
        text.append(" x")  # grows into the held lines without a layout
        await pilot.pause()
        assert text.layouts == layouts + 1 and text.size.height == height
        text.set_text("short", reflow=True)  # cut: it holds one line and the headroom
        await pilot.pause()
        assert text.size.height == 1 + 10
        layouts = text.layouts
        text.set_text("")  # emptied while streaming: it keeps its place
        text.append("next")
        await pilot.pause()
        assert text.display and text.layouts == layouts
        text.clear()  # the stream is over
        await pilot.pause()
        assert not text.display and text.size.height == 0


class _ReplyApp(App[None]):
    """A reply in the chat log: the streaming text inside a message that grows with it."""

    def compose(self) -> ComposeResult:
        from textual.containers import Vertical
        from textual.widgets import Static

        with VerticalScroll(), Vertical(id="message"):
            yield Static("\n".join(f"paragraph {i}" for i in range(60)))
            yield StreamingText()

    def on_mount(self) -> None:
        self.query_one("#message").styles.height = "auto"


async def test_a_long_reply_holds_half_the_visible_chat_not_half_of_itself() -> None:
    """The headroom came from the nearest widget with children (the message, 60 lines and
    growing), so a long reply held 30 blank lines: the whole visible chat went blank while it
    streamed. It is half of what the scrolling log shows."""
    app = _ReplyApp()
    async with app.run_test(size=(40, 20)) as pilot:
        text = app.query_one(StreamingText)
        await pilot.pause()
        assert app.query_one("#message").size.height >= 60
        assert text.headroom() == 10  # half the 20 visible lines
        text.clock = FakeClock(step=60.0)
        text.open()  # a reply is about to stream, as MessageView does
        await pilot.pause()
        assert text.size.height == 10  # held for the reply: 10 lines, not 30
        text.append("the line being written " * 30)  # more lines than it holds: it grows
        await pilot.pause()
        assert text.size.height == len(text.lines) + 10


async def test_streaming_text_throttles_layouts_but_shows_every_line(monkeypatch) -> None:
    monkeypatch.setattr(streaming_text, "LAYOUT_HZ", 0.001)  # a held layout waits 1000 s of the clock
    monkeypatch.setattr(streaming_text, "HEADROOM", 0)
    monkeypatch.setattr(streaming_text, "HEADROOM_SHARE", 0.0)
    app = _TextApp()
    async with app.run_test(size=(20, 30)) as pilot:
        text = app.query_one(StreamingText)
        clock = text.clock = FakeClock()
        text.append("line 0")  # the first text lays out at once
        await pilot.pause()
        assert text.layouts == 1 and text.size.height == 1
        for i in range(1, 6):  # five new lines within the interval: no layout, one held
            text.append(f"\nline {i}")
            await pilot.pause()
        assert text.layouts == 1 and text.size.height == 1 and text._layout_timer is not None
        assert len(text.lines) == 6  # the text itself is all there, wrapped
        clock.now += 1000.0  # the interval is over: the next text lays out at once
        text.append("\nline 6")
        await pilot.pause()
        assert text.layouts == 2 and text._layout_timer is None
        assert text.size.height == 7  # every line shows
        rendered = [strip.text.rstrip() for strip in text.render_lines(text.region.reset_offset)]
        assert rendered == [f"line {i}" for i in range(7)]


class _ChatApp(App[None]):
    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield MessageView("assistant", "", Texts("en"))


async def test_message_view_moves_finished_paragraphs_into_markdown() -> None:
    app = _ChatApp()
    async with app.run_test(size=(60, 30)) as pilot:
        view = app.query_one(MessageView)
        view.markdown_every_s = 0.0
        await view.write("# Title\n\nFirst para")
        await pilot.pause()
        assert view.tail.text == "First para"
        await view.write("graph **bold**.\n\nSecond")
        await pilot.pause(0.2)
        assert view.tail.text == "Second"
        body = app.query_one(Markdown)
        await until(pilot, lambda: "First paragraph" in body.source)  # the Markdown stream appends from a task of its own
        assert "First paragraph **bold**." in body.source and "Second" not in body.source
        tail_height = view.tail.size.height
        # the tail gave back the moved lines: its line, a blank row, "generating…" and the headroom
        assert tail_height == 1 + 2 + view.tail.headroom()
        await view.finish("# Title\n\nFirst paragraph **bold**.\n\nSecond one.", TurnMetrics(predicted_n=9))
        await pilot.pause()
        assert not view.tail.display and view.tail.text == ""
        assert body.source.endswith("Second one.") and view.content.endswith("Second one.")


async def test_paragraphs_move_into_markdown_at_most_every_few_seconds() -> None:
    app = _ChatApp()
    async with app.run_test(size=(60, 30)) as pilot:
        view = app.query_one(MessageView)
        clock = view.clock = FakeClock()
        view.markdown_every_s = 10.0
        await view.write("One.\n\nTwo")
        clock.now += 9.9
        await view.write(".\n\nThree")  # within the interval: stays plain text
        await pilot.pause()
        assert view.tail.text == "One.\n\nTwo.\n\nThree"
        body = app.query_one(Markdown)
        clock.now += 0.2  # 10.1 s after the first text: the finished paragraphs move
        await view.write(" more")
        await until(pilot, lambda: bool(body.source))  # the Markdown stream appends from a task of its own
        assert view.tail.text == "Three more" and body.source.strip() == "One.\n\nTwo."
        await view.finish("One.\n\nTwo.\n\nThree more.", TurnMetrics(predicted_n=6))
        await pilot.pause()
        assert body.source == "One.\n\nTwo.\n\nThree more." and not view.tail.display


def test_wrapping_words_and_long_words() -> None:
    line = "The keeper climbed the stairs again, counting each step."
    starts = streaming_text.wrap_starts(line, 20)
    pieces = [line[a:b] for a, b in zip(starts, [*starts[1:], len(line)], strict=True)]
    assert "".join(pieces) == line
    assert pieces == ["The keeper climbed ", "the stairs again, ", "counting each step."]
    assert streaming_text.wrap_starts("x" * 45, 20) == [0, 20, 40]  # a long word is cut
    assert streaming_text.wrap_starts("", 20) == [0]


async def test_streaming_text_wraps_and_paints_only_the_lines_that_changed() -> None:
    app = _TextApp()
    words = ("Bir deniz feneri bekçisi şişede bir mektup buldu; ünlü kıyılarda 🌊 yürüdü.\n" * 4).split(" ")
    async with app.run_test(size=(30, 40)) as pilot:
        text = app.query_one(StreamingText)
        for word in words:  # as the engine streams: a word at a time
            text.append(word + " ")
        await pilot.pause()
        streamed = text.lines
        width = text.content_region.width
        whole = []  # the whole text wrapped at once
        for line in text.text.split("\n"):
            starts = streaming_text.wrap_starts(line, width)
            whole += [line[a:b] for a, b in zip(starts, [*starts[1:], len(line)], strict=True)]
        assert streamed == whole and len(streamed) >= 12
        assert all(cell_len(line.rstrip()) <= width for line in streamed)
        rendered = [strip.text.rstrip() for strip in text.render_lines(text.region.reset_offset)]
        assert rendered[: len(streamed)] == [line.rstrip() for line in streamed]

        painted: list[Region] = []
        original = text.refresh

        def spy(*regions: Region, **kwargs: bool) -> StreamingText:
            painted.extend(regions)
            return original(*regions, **kwargs)

        text.refresh = spy  # type: ignore[method-assign]
        text.append("son")
        assert painted and painted[-1].y == len(streamed) - 1 and painted[-1].height == 1


def test_the_screen_gives_way_to_an_engine_on_every_core() -> None:
    assert pacing.pace(2, True, cores=2) is pacing.BUSY_CPU
    assert pacing.pace(4, True, cores=2) is pacing.BUSY_CPU
    assert pacing.pace(1, True, cores=2) is pacing.FREE_CPU  # a core left for the screen
    assert pacing.pace(8, False, cores=8) is pacing.FREE_CPU  # every layer on the GPU
    busy, free = pacing.BUSY_CPU, pacing.FREE_CPU
    assert busy.updates_hz < free.updates_hz and busy.markdown_every_s > free.markdown_every_s


def test_a_reply_cut_off_shows_the_figures_it_has_and_no_row_of_zeros() -> None:
    """A reply stopped before any figure was known (the server went away) said "TTFT 0 ms ·
    0.0 tok/s · 0 tokens · cache 0/0"; one Esc-stopped before the server sent its counts said
    "cache 0/0". Only what is known is shown."""
    from workstation.tui.widgets.message_view import metrics_line

    t = Texts("en")
    assert metrics_line(TurnMetrics(stop_reason="cancelled"), t) == "stopped"
    # Esc while the prompt was read: its "TTFT" was only the time until Esc, and no token came
    early = TurnMetrics(ttft_ms=501, prompt_n=0, cache_n=66, stop_reason="cancelled")
    assert metrics_line(early, t) == "stopped"
    cut = TurnMetrics(ttft_ms=320, predicted_n=40, predicted_per_second=40.0, stop_reason="cancelled")
    assert metrics_line(cut, t) == "TTFT 320 ms · 40.0 tok/s · 40 tokens · stopped"
    assert "prompt" not in cut.summary_line()
    whole = TurnMetrics(ttft_ms=320, predicted_n=40, predicted_per_second=40.0, prompt_n=10, cache_n=30)
    assert metrics_line(whole, t) == "TTFT 320 ms · 40.0 tok/s · 40 tokens · 30 of 40 already read"
    assert "prompt 10 (+30 cached)" in whole.summary_line()
    # a reply's own settings as the UI names and writes them: a random seed, 1,200 tokens, a stop text
    own = {**whole.to_dict(), "sampling": {"seed": None, "max_tokens": 1200, "temperature": 0.2, "stop": ["END"]}}
    assert metrics_line(own, t).endswith(" · own settings: Seed random, Longest reply 1,200, Temperature 0.2, stop 'END'")
    assert metrics_line(own, Texts("tr")).endswith(" · kendi ayarları: Tohum rastgele, En uzun yanıt 1.200, Sıcaklık 0,2, "
                                                   "stop 'END'")
    # the command line's line separates thousands as the app's does (it wrote "TTFT 1261 ms")
    long = TurnMetrics(ttft_ms=1261, predicted_n=1200, predicted_per_second=40.0, prompt_n=1500, cache_n=2048,
                       prompt_ms=1000.0)
    assert long.summary_line().startswith("TTFT 1.3 s · 40.0 tok/s · 1,200 tokens · prompt 1,500 (+2,048 cached)")
    assert long.summary_line(Texts("tr").get).startswith("TTFT 1,3 sn · 40,0 token/sn · 1.200 token · istem 1.500 "
                                                         "(+2.048 önbellekten), ")
    # a wait from 10 s on in whole seconds, in both languages ("TTFT 19.865 ms" made a Turkish user count digits)
    slow = TurnMetrics(ttft_ms=19_865, predicted_n=40, predicted_per_second=48.9, prompt_n=35, cache_n=153)
    assert metrics_line(slow, Texts("tr")) == "TTFT 20 sn · 48,9 token/sn · 40 token · 153/188 zaten okunmuştu"
    assert metrics_line(slow, t).startswith("TTFT 20 s · ") and slow.summary_line().startswith("TTFT 20 s · ")
    assert metrics_line(TurnMetrics(ttft_ms=999, predicted_n=1), t).startswith("TTFT 999 ms")
    # from 1 s on in seconds, a tenth below 10 s ("TTFT 7,211 ms" beside "TTFT 13 s" read as two units)
    assert metrics_line(TurnMetrics(ttft_ms=999.6, predicted_n=1), t).startswith("TTFT 1.0 s")
    assert metrics_line(TurnMetrics(ttft_ms=7_211, predicted_n=1), t).startswith("TTFT 7.2 s")
    assert metrics_line(TurnMetrics(ttft_ms=9_940, predicted_n=1), t).startswith("TTFT 9.9 s")
    assert metrics_line(TurnMetrics(ttft_ms=9_999.6, predicted_n=1), t).startswith("TTFT 10 s")  # (not "10,000 ms")
    assert "below one second, in seconds from there" in t("metric.help")  # F1's explanation of the line says so
    # one sentence for each figure of the line, by the name the line shows
    for lang, names in (("en", ("TTFT: the wait for the first word", "tok/s: ", "in word pieces a second",
                                "a of b already read: ", "read before and were not read again")),
                        ("tr", ("TTFT: yanıtın ilk sözcüğü için beklenen", "token/sn: ", "a/b zaten okunmuştu: ",
                                "önceden okunmuştu ve yeniden okunmadı"))):
        assert all(name in Texts(lang)("metric.help") for name in names), lang
        assert "cache a/b" not in Texts(lang)("metric.help") and "önbellek a/b" not in Texts(lang)("metric.help")
    # the share of guesses kept is not a speed gain: "speed-up 72% (55/76)" stood under a reply slower than without
    for lang, kept, not_gain in (("en", "guesses kept: ", "not a speed gain"), ("tr", "doğru çıkan tahmin: ", "hız kazancı değildir")):
        assert kept in Texts(lang)("metric.help") and not_gain in Texts(lang)("metric.help"), lang
        assert "speed-up" not in metrics_line(TurnMetrics(predicted_n=2, draft_n=76, draft_n_accepted=55), Texts(lang))
    # the rates are counts over times (tok/s, TPOT in ms); one token has no rate to show
    rates = TurnMetrics(prompt_n=500, prompt_ms=250.0, predicted_n=40, predicted_ms=1000.0, draft_n=10, draft_n_accepted=7)
    rates.finish_rates()
    assert (rates.prompt_per_second, rates.predicted_per_second, rates.predicted_per_token_ms) == (2000.0, 40.0, 25.0)
    assert rates.acceptance_rate == 0.7
    one = TurnMetrics(ttft_ms=90, predicted_n=1, predicted_per_second=11.1)
    assert one.summary_line() == "TTFT 90 ms · 1 token" and metrics_line(one, t) == "TTFT 90 ms · 1 token"


def test_the_dashboards_history_keeps_what_was_measured_by_profile() -> None:
    """The dashboard plots the turns since the last switch and compares them with the profile
    before: a reply stopped with tokens counts, one that measured nothing (stopped before its
    first token, failed, cut by the app ending) is no zero in the plots; a turn saved before
    turns said their profile joins the run beside it, and a run is named as its newest turn."""
    from workstation.core.metrics import MetricsHistory

    h = MetricsHistory(10)
    h.add(TurnMetrics(predicted_n=5, predicted_per_second=10.0), "a.yaml", "A")
    h.add(TurnMetrics(predicted_n=5, predicted_per_second=20.0), "", "")  # (an older version's turn)
    h.add(TurnMetrics(predicted_n=5, predicted_per_second=90.0), "b.yaml", "B old")
    h.add(TurnMetrics(predicted_n=3, predicted_per_second=30.0, stop_reason="cancelled"), "b.yaml", "B")
    for nothing in ("cancelled", "failed", "interrupted"):
        h.add(TurnMetrics(stop_reason=nothing), "b.yaml", "B")
    now, before = h.runs("b.yaml")
    assert (now.name, [t.predicted_per_second for t in now.turns]) == ("B", [20.0, 90.0, 30.0])
    assert before is not None and (before.name, len(before.turns)) == ("A", 1)
    h.add(TurnMetrics(predicted_n=5, predicted_per_second=33.0), "b.yaml", "B")
    assert [t.predicted_per_second for t in h.runs("b.yaml")[0].turns] == [20.0, 90.0, 30.0, 33.0]


def test_a_replys_figures_have_thousands_separators_in_the_uis_language() -> None:
    """A long prompt's figures read 1904 ms and cache 693/1003; they are written as the UI's
    language writes them: 1,904 in English, 1.904 in Turkish (and 1.234,5 token/sn)."""
    from workstation.tui.widgets.message_view import metrics_line

    m = TurnMetrics(ttft_ms=1904, predicted_n=1500, predicted_per_second=1234.5, prompt_n=310, cache_n=693,
                    restored_n=1200, draft_n=2000, draft_n_accepted=1500)
    assert metrics_line(m, Texts("en")) == ("TTFT 1.9 s · 1,234.5 tok/s · 1,500 tokens · 693 of 1,003 already read "
                                            "(1,200 from disk) · guesses kept 75% (1,500/2,000)")
    assert m.acceptance_rate == 0.75 and TurnMetrics().acceptance_rate is None  # (the one rate the bench says too)
    tr = metrics_line(m, Texts("tr"))
    assert "TTFT 1,9 sn" in tr and "1.234,5 token/sn" in tr and "1.500 token" in tr, tr
    # what "cache 693/1003" was, said in a few words (office staff could not read it)
    assert "693/1.003 zaten okunmuştu (1.200 diskten)" in tr, tr
    # the first reply after a profile switch (F3) says why it waited, or did not: the conversation read
    # again, or kept on disk from before the switch (in words, the language's words a token)
    m.after_switch = True
    assert metrics_line(m, Texts("en")).endswith("(1,200 from disk) · kept from before the switch: 520 of 750 words "
                                                 "· guesses kept 75% (1,500/2,000)")
    assert "geçiş öncesinden saklandı: 400 sözcüğün 280 tanesi" in metrics_line(m, Texts("tr"))
    m.prompt_n = 2000
    assert "· read the conversation again after the switch: 1,500 words ·" in metrics_line(m, Texts("en"))
    # the conversation before the new message only (read in any case: a long question was counted in)
    m.new_n = 800
    assert "· read the conversation again after the switch: 900 words ·" in metrics_line(m, Texts("en"))
    m.new_n = 1500  # (the question most of it: the part kept from before the switch is what is said)
    assert "· kept from before the switch: 520 of 890 words ·" in metrics_line(m, Texts("en"))


async def test_the_wait_for_the_first_word_is_counted_on_screen() -> None:
    """A long conversation read again showed "waiting for the first token…" for 103 s, the same
    all along, and looked frozen: from 3 s on, the seconds are counted; the first word ends it.
    All of it said under the reply's text, where it streams (the line under the message is for its
    figures, once it ends)."""
    clock = FakeClock()

    class Waiting(App[None]):
        def compose(self) -> ComposeResult:
            view = MessageView("assistant", "", Texts("en"), streaming=True)
            view.clock = clock
            yield view

    app = Waiting()
    async with app.run_test(size=(100, 10)) as pilot:
        view = app.query_one(MessageView)
        figures = view.tail  # (its note: ``StreamingText.set_note``)
        assert str(view.query_one(".metrics").render()) == ""
        clock.now += 2.0
        await pilot.pause(1.3)  # a tick: a short wait is left as it is
        assert figures.note == "waiting for the first word…"  # (it said "token": jargon)

        def rows() -> list[str]:
            return [strip.text.rstrip() for strip in figures.render_lines(figures.region.reset_offset)][:3]

        assert rows() == ["waiting for the first word…", "", ""]  # (right under the message's name)
        # (in the app's one Turkish word for a word, as every count of words says it: "sözcük", not "kelime")
        assert Texts("tr")("chat.waiting") == "ilk sözcük bekleniyor…" and "sözcük" in Texts("tr")("chat.cut_at_limit")
        clock.now += 10.0
        await until(pilot, lambda: "12 s" in figures.note)
        assert figures.note.startswith("reading the conversation… 12 s")
        view.read_so_far(0.424)  # the engine read a part of a long prompt: said at once, with the seconds
        assert figures.note == "reading the conversation… 42% · 12 s (Esc stops)"
        await view.write("Hello")
        clock.now += 10.0
        await pilot.pause(1.3)
        assert figures.note == "generating… (Esc stops)"  # the count stopped with the first word
        assert rows() == ["Hello", "", "generating… (Esc stops)"]  # a blank row under the text
        # the office server stops sending in the middle of the reply: said there, until its next word
        view.server_stalled(16.4)
        assert figures.note == "the server is slow to answer: nothing from it for 16 s (Esc stops)"
        await view.write(" there")
        assert figures.note == "generating… (Esc stops)"
    # F6's progress line says a desk PC's silent office server in the chat's words (it showed nothing)
    from workstation.core.events import ServerWaiting
    from workstation.tui.screens.summarize import waiting_text

    assert waiting_text(ServerWaiting(7.2, own=True), Texts("en")) == "waiting: the server is busy with your other request… 7 s"
    assert waiting_text(ServerWaiting(16.0, stalled=True), Texts("tr")).startswith("sunucu yanıt vermekte yavaş: 16 sn")
    # the office server began to stop while it writes the summary: said as the chat's status line says it
    from workstation.core.events import SERVER_STOPPING

    assert waiting_text(ServerWaiting(0.0, held=SERVER_STOPPING), Texts("en")) == ("the office server is stopping: "
                                                                                   "this summary may be cut off")


async def test_a_replys_figures_stay_on_one_line_in_turkish_at_80_columns(profiles) -> None:  # noqa: ANN001
    """The Turkish line under a reply ("TTFT 201 ms · 130,7 token/sn · 69 token · 41'in 0'ı yeniden
    kullanıldı") took two lines at 80x24: written shorter ("0/41 yeniden", F1 says what it means), it is one."""
    from tui_helpers import message_views, send_text

    from workstation.tui.app import WorkstationApp

    app = WorkstationApp("b", sample_system=False, language="tr")  # (400 tokens a reply: figures of 2-3 digits)
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: app.engine is not None)
        await send_text(pilot, app, "Say hello in one short sentence.")
        await until(pilot, lambda: not app.generating and bool(message_views(app)[-1].metrics))
        await pilot.pause()
        line = message_views(app)[-1].query_one(".metrics")
        said = str(line.render())
        assert line.region.height == 1, (said, line.region)
        # (a reply that ended itself; a first reply read nothing before: no "0/41 yeniden")
        assert said.endswith(" token") and "token/sn" in said, said


def test_a_narrow_line_under_a_reply_keeps_the_wait_and_the_speed_longest() -> None:
    """At 110 columns a Turkish reply with guesses kept, cut at its limit, read "512 token · tutan
    tahmin %65 (141/217) · uzunluk sınırı · Alt+C sürdürür": the wait and the speed went first
    (newuser21). The cache's counts, the guesses kept and the length go before them."""
    from workstation.core.metrics import TurnMetrics, figures_line

    m = TurnMetrics(ttft_ms=40, predicted_n=512, predicted_per_second=26.2, prompt_n=300, cache_n=600,
                    draft_n=217, draft_n_accepted=141, stop_reason="length")
    tr = Texts("tr").get
    whole = figures_line(m, tr)
    assert whole.startswith("TTFT 40 ms · 26,2 token/sn · 512 token · 600/900 zaten okunmuştu · doğru çıkan tahmin %65"), whole
    narrow = figures_line(m, tr, width=len(whole) - 30)
    assert narrow.startswith("TTFT 40 ms · 26,2 token/sn · 512 token") and "doğru çıkan tahmin" not in narrow, narrow
    narrower = figures_line(m, tr, width=40)
    assert narrower == "26,2 token/sn · uzunluk sınırı", narrower


async def test_the_line_under_a_reply_says_what_was_read_before_in_plain_words(profiles) -> None:  # noqa: ANN001
    """A paralegal's reply said "reused 0 of 711" under it: jargon, and of a first reply nothing
    at all of use. A first reply says nothing of it; the next one of the same conversation says
    how much of the conversation was already read ("40 of 52 already read": the wait it saved),
    in English and in Turkish, and F1 says what it means in the same words."""
    from tui_helpers import message_views, send_text

    from workstation.core.metrics import figures_line
    from workstation.tui.app import WorkstationApp

    app = WorkstationApp("a", sample_system=False, language="en")
    async with app.run_test(size=(160, 32)) as pilot:  # (room for all of the line's figures)
        await until(pilot, lambda: app.engine is not None)
        await send_text(pilot, app, "Say hello.")
        await until(pilot, lambda: not app.generating and len(message_views(app)) == 2 and bool(message_views(app)[-1].metrics))
        first = str(message_views(app)[-1].query_one(".metrics").render())
        assert "tok/s" in first and "reused" not in first and "already read" not in first, first
        await send_text(pilot, app, "And goodbye?")
        await until(pilot, lambda: not app.generating and len(message_views(app)) == 4 and bool(message_views(app)[-1].metrics))
        second = str(message_views(app)[-1].query_one(".metrics").render())
        assert re.search(r"· [0-9]+ of [0-9]+ already read", second) and "reused" not in second, second
        assert "a of b already read: " in app.texts("metric.help", bench="workstation bench")
        m = message_views(app)[-1].metrics
    tr = Texts("tr")  # (the same reply's record, said in Turkish)
    assert re.search(r"· [0-9]+/[0-9]+ zaten okunmuştu", figures_line(m, tr.get)), figures_line(m, tr.get)
    assert "a/b zaten okunmuştu: " in tr("metric.help", bench="workstation bench")


async def test_generating_is_said_under_the_text_being_written(profiles) -> None:  # noqa: ANN001
    """While a reply was written, "generating… (Esc stops)" stood under the lines held for the text
    to grow into: eleven blank rows between the text and it at 110x32 (newuser). It is said a blank
    row under the text's last line and moves down with it. When the reply ends, its figures are
    where they were, right under its text."""
    from tui_helpers import message_views, screen_lines, send_text

    from workstation.tui.app import WorkstationApp

    app = WorkstationApp("b", sample_system=False, language="en")  # (greedy, 400 tokens a reply)
    async with app.run_test(size=(110, 32)) as pilot:
        await until(pilot, lambda: app.engine is not None)
        await send_text(pilot, app, "Write a short story about a lighthouse keeper.")
        seen: list[list[str]] = []

        def written_and_said() -> bool:
            """The reply's last line drawn, and "generating…" on screen: the rows from one to the other."""
            view = message_views(app)[-1]
            last = view.tail.lines[-1].strip() if app.generating and view.tail.text else ""
            if not last:
                return False
            rows = [row[view.region.x:view.region.right] for row in screen_lines(app)]
            said = [i for i, row in enumerate(rows) if "generating… (Esc stops)" in row]
            text = [i for i, row in enumerate(rows[:said[-1]] if said else []) if row.strip() == last]
            if text:  # (else not drawn yet since the last words came: looked at again)
                seen.append(rows[text[-1]:said[-1] + 1])
            return bool(text)

        await until(pilot, written_and_said)
        assert len(seen[0]) <= 3 and not "".join(seen[0][1:-1]).strip(), seen[0]  # at most a blank row between
        await until(pilot, lambda: not app.generating and bool(message_views(app)[-1].metrics))
        await pilot.pause()
        view = message_views(app)[-1]
        figures = view.query_one(".metrics")
        assert not view.tail.display and "tok/s" in str(figures.render())
        assert figures.region.y == view.body.region.bottom  # (right under the reply's text, as before)
