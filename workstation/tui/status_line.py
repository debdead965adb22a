"""The status bar and the line under the message box: the model and its state, a download,
what the app is busy with, how full the model's context is, the pace of a streaming reply."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual import on, work

from workstation.core.errors import WorkstationError
from workstation.core.events import SERVER_STOPPING
from workstation.core.gpu_layers import offloadable_layers
from workstation.core.letters import shortened
from workstation.core.phrases import Lookup, WordsBasis, context_basis, part_percent
from workstation.core.profiles import PROFILE_SAID_MOST, Profile, profile_said
from workstation.core.remote import again_at, resets_text
from workstation.tui import pacing
from workstation.tui.app_part import AppPart
from workstation.tui.messages import ServerWaited

if TYPE_CHECKING:
    from workstation.tui.app import WorkstationApp


def fitted_line(candidates: list[str], width: int) -> str:
    """The first of ``candidates`` (longest first) that fits ``width`` columns, else the last
    cut to it with "…": a line cut at the terminal's edge showed a word's first letters."""
    for text in candidates:
        if len(text) <= width:
            return text
    return shortened(candidates[-1], width) if width > 0 else candidates[-1]


# the open conversation's tokens over which saving a change to the profile in use says the next
# reply reads it again first (``reread_note``): a short one is read again in a second or two
REREAD_NOTE_TOKENS = 1000

# a server's refusal of every request for now (the phrase its error says): until its admin acts, it
# restarts or loads its model, or the key's day resets; the status line says it (it said "ready"
# while each message came back refused) until a request succeeds. (A server gone: ``unreachable``)
NOT_ANSWERING = {"remote.model_changed": "status.server_model_changed",
                 "remote.stopping": "status.server_stopping", "remote.cut_by_stopping": "status.server_stopping",
                 "remote.cut_by_stopping_in_summary": "status.server_stopping",
                 "remote.loading": "status.server_loading", "remote.key_revoked": "status.key_revoked",
                 "remote.day_used": "status.day_used",
                 # a key the server no longer knows, refuses, or lets use neither this profile nor from here
                 "remote.key_unknown": "status.key_refused", "remote.key_refused": "status.key_refused",
                 "remote.key_not_here": "status.key_refused", "remote.key_for_others": "status.key_refused"}

# a reply (a chat's, a summary part's) the server stopped where the key's tokens for the day ran out:
# the day used up, as a refusal of the next request says it
DAY_CUT = frozenset({"remote.quota_cut", "remote.quota_cut_part"})

# how often a desk PC whose key's tokens for today are used up asks its server (/usage/today) whether
# they still are: raised by the admin (keys set … --tokens-per-day), the status bar said "used up" until
# the next message was sent
DAY_RECHECK_S = 30.0

# the fewest columns the status line's message is cut to, before the profile's name is cut
STATE_LEAST = 16

CONTEXT_NEARLY_FULL = 85  # percent of the context past which the line under the box warns


class StatusLine(AppPart):
    """The app's status bar and the line under the box, in words."""

    def show_download(self: WorkstationApp, name: str | None, pct: int | None = None) -> None:
        """Say in the status bar that F4 downloads ``name`` (``pct`` done; None: not known yet);
        ``name`` None: the download has ended."""
        now = (name, pct) if name is not None else None
        if now != self.downloading:  # (a progress comes per MB: the line is redrawn per percent)
            self.downloading = now
            self.update_status()

    def server_answered(self: WorkstationApp, phrase: str = "") -> None:
        """What the office server's last answer, a chat turn's or F6's, leaves the status line
        saying: ``phrase``, the first phrase of its refusal or stop ("": it answered). A reply or a
        summary's part cut where the key's day ran out is the day used up ("used up" and when it
        answers again; a summary stopped so left the line saying "ready")."""
        self.not_answering = "remote.day_used" if phrase in DAY_CUT else phrase
        self.update_status()

    def summary_stopped(self: WorkstationApp, err: WorkstationError) -> None:
        """F6's run ended on ``err``: where the server refuses what follows (the key's day used
        up, the server stopping), the status line says so as after a chat turn that ended so
        (``server_answered``); another failure (a document that cannot be read) leaves it be."""
        phrase = err.said[0][0] if err.said else ""
        if phrase in NOT_ANSWERING or phrase in DAY_CUT:
            self.server_answered(phrase)

    def _recheck_day(self: WorkstationApp) -> None:
        """While the status bar says the key's tokens for today are used up, the office server
        is asked now and then (every ``DAY_RECHECK_S``) whether they still are; the words go once
        it has some left again (the limit raised, or a new day)."""
        engine = self.engine
        if self.not_answering == "remote.day_used" and not self.generating and hasattr(engine, "usage_today"):
            self._ask_day_left(engine)

    @work(thread=True, exclusive=True, exit_on_error=False, group="day")
    def _ask_day_left(self: WorkstationApp, engine: Any) -> None:
        try:
            data = engine.usage_today()
        except WorkstationError:  # the server gone, the key refused: the next message says so
            return
        if data is not None and "tokens" in data and (not data.get("tokens_per_day") or data.get("left")):
            self.call_from_thread(self._day_left, engine)

    def _day_left(self: WorkstationApp, engine: Any) -> None:
        if self.not_answering == "remote.day_used" and self.engine is engine:
            self.not_answering = ""
            self.update_status()

    @on(ServerWaited)
    def _server_stopping(self: WorkstationApp, event: ServerWaited) -> None:
        """The office server began to stop while it writes the reply (its grace, then the cut):
        said on the status line for the rest of the turn; it said "generating" to the cut."""
        if event.held == SERVER_STOPPING and self.generating:
            self._turn_server_stopping = self._turn
            self.update_status()

    def status_text(self: WorkstationApp) -> str:
        t = self.texts
        bar = self.glyphs.between  # (the line's own mark: ASCII on the Linux console)
        profile = self.profile
        download = ""
        if self.downloading is not None:
            name, pct = self.downloading
            download = f" {bar} " + (t("status.downloading", name=name, pct=pct) if pct is not None
                                      else t("status.downloading_wait", name=name))
        if profile is None:
            return t("status.no_profile") + download
        # the profile's name whole where the line has room for it with the model beside it, else cut
        # to its share (``PROFILE_SAID_MOST``): at 110 columns it said "Long documents — SmolLM2 13…"
        # (the name alone, no model, whole before cut too)
        width = self.size.width
        whole, cut = (self._status_lines(profile, most, width, download) for most in (None, PROFILE_SAID_MOST))
        # none fits (a long message: "your key has used its tokens for today; …"): the message is cut,
        # not the profile's name (it ended "Office server (OpenAI-compa… · the se…")
        shorter = []
        for most in (None, PROFILE_SAID_MOST):
            named = f" {bar} {profile_said(profile, t.lang, most)}"
            room = width - 1 - len(named)
            if room >= STATE_LEAST:
                shorter.append(" " + shortened(self._state_said(profile, most, download), room) + named)
        return fitted_line([*whole[:-1], *cut[:-1], whole[-1], cut[-1], *shorter], width)

    def _status_lines(self: WorkstationApp, profile: Profile, most: int | None, width: int,
                      download: str) -> list[str]:
        """The status line's candidates, longest first (``fitted_line``), the profile named cut to
        ``most`` characters (None: whole, with the model's name or the API's address whole beside it,
        or alone last); ``download``: what is said of F4's download."""
        t = self.texts
        bar = self.glyphs.between
        named = profile_said(profile, t.lang, most)
        info = self.engine_info
        model = info.model_name if info else (profile.model or profile.remote.model)
        # the share of the model on the GPU, and no K/V types: "context memory half size" told a
        # newcomer nothing (F3 says a profile's "in half the usual memory", F5 the loaded types)
        layers = self.gpu_share_said(info.gpu_layers, offloadable_layers(info.n_layer)) if info else \
            ("", "")  # (loading: the share is known once it has loaded)
        state = self._state_said(profile, most, download)
        if self.api is not None:  # the API's address whole before the words around it
            return [f" {state} {bar} {named} · {t('status.api', url=self.api.url)}",
                    f" {state} {bar} {named} · {t('status.api_short', url=self.api.url)}",
                    f" {state} {bar} {t('status.api_short', url=self.api.url)}"]
        server = profile.remote.server_name

        def line(model: str, layers: str) -> str:
            if profile.backend != "llama":  # a server's model: no layers or K/V of ours to show
                if not model:  # remote.model left out: the server's first, once it has said
                    return f" {state} {bar} {named} · {t('status.remote_any', server=server)}"
                return f" {state} {bar} {named} · {t('status.remote', model=model, server=server)}"
            return " · ".join(part for part in (f" {state} {bar} {named}", model, layers) if part)

        if profile.backend == "llama" and model.casefold() in (profile.key.casefold(), named.casefold()):
            model = ""  # a profile made for a model (F4's U) is named as it: said once, not "gemma · gemma"
        # too long for the line (80 columns, a longer state word: "generating", "own sampling"),
        # in turn: the model's name loses its middle, the layers their word ("GPU 0/31"), the
        # layers go, then the model; never a cut in the middle of a figure (the line ended "· KV";
        # at 40 columns "· GPU", whose U stayed beside every dialog)
        if most is None:  # the name whole: with the model whole beside it, or alone
            return [*(line(model, on_gpu) for on_gpu in layers), line("", "")]
        tried: list[str] = []
        for on_gpu in layers + ("",):
            tried.append(line(model, on_gpu))
            if len(model) > 12:
                keep = max(width - (len(tried[-1]) - len(model)), 12)
                tail = min(13, keep - 5)  # the end says the quantization (….Q4_1 / ….Q8_0): kept
                tried.append(line(model[: keep - 1 - tail] + "…" + model[-tail:], on_gpu))
        return [*tried, line("", "")]

    def _state_said(self: WorkstationApp, profile: Profile, most: int | None, download: str) -> str:
        """What the app is doing or why the server does not answer, the status line's first part
        (a profile loading named cut to ``most``); ``download``: what is said of F4's download."""
        t = self.texts
        bar = self.glyphs.between
        if self.loading is not None:
            pct = str(part_percent(self.load_fraction))
            # a share only while llama.cpp reads the file: before, the engine's process starts (most
            # of a small model's load), after, the context is made (a large one's); "0%" and "100%"
            # stood still for seconds, and a switch looked stuck
            if 0 < self.load_fraction < 1:
                state = t("status.reloading", pct=pct) if self._reloading else \
                    t("status.loading", name=profile_said(self.loading, t.lang, most), pct=pct)
            else:
                state = t("status.reloading_wait") if self._reloading else \
                    t("status.loading_wait", name=profile_said(self.loading, t.lang, most))
        elif self.summarizing is not None:
            state = t("status.summarizing", name=self.summarizing)
        elif self.generating and self._turn_server_stopping == self._turn:  # until the reply ends or is cut
            state = t("status.server_stopping_reply")
        elif self.generating:
            state = t("status.generating")
        elif self.engine is None and self.engine_problem is not None:  # its process stopped twice
            state = t("status.engine_stopped")
        elif self.engine is None:  # a server's profile is not loaded: it is not connected
            state = t("status.not_loaded" if profile.backend == "llama" else "status.not_connected")
        elif self.unreachable:  # the last turn found the server gone: not "ready"
            state = t("status.unreachable")
        elif self.not_answering in NOT_ANSWERING:  # the last turn refused until the server's admin acts
            state = t(NOT_ANSWERING[self.not_answering], **again_at(resets_text(getattr(self.engine, "day_resets_at", None))))
        else:
            state = t("status.ready")
        if self.session_sampling is not None:  # Ctrl+E's, not the file's
            state = f"{state} {bar} {t('status.session_sampling')}"
        return state + download

    def gpu_share_said(self: WorkstationApp, n: int, total: int) -> tuple[str, str]:
        """What share of the loaded model runs on the GPU, in words (and shorter, for a narrow
        line): "GPU layers 0/31" told an office PC with no GPU nothing, and one with a GPU
        nothing it could picture; F5 counts the layers. Nothing where no GPU is seen and none
        is used (the model runs on the CPU, as on any PC)."""
        t = self.texts
        if n <= 0:
            if self.system is None or not self.system.gpus:
                return "", ""
            return t("status.on_gpu_none"), t("status.on_gpu_none_short")
        if n >= total:
            return t("status.on_gpu_all"), t("status.on_gpu_all_short")
        pct = f"{part_percent(n / total)}%"
        return t("status.on_gpu_part", pct=pct), t("status.on_gpu_part_short", pct=pct)

    def not_ready_text(self: WorkstationApp) -> str:
        """Why nothing can run now: a model loading, a desk PC's server not reached (its load
        failed: F6 said "No model is loaded; press F3", its profile loaded and the server back
        up), or no profile loaded."""
        if self.loading is not None:
            return self.texts("chat.loading")
        if self.load_failed and self.profile is not None and self.profile.backend == "openai":
            return self.texts("chat.not_connected", url=self.profile.remote.base_url)
        if self.engine_problem is not None:  # its process stopped again: why, and what to do
            return self.engine_problem
        return self.texts("chat.no_engine")

    def busy_text(self: WorkstationApp) -> str:
        """Why the chat cannot take a message now (a reply, or a summary going on)."""
        if self.summarizing is not None:
            return self.texts("chat.busy_summary", name=self.summarizing)
        return self.texts("chat.busy")

    def subtitle_text(self: WorkstationApp) -> str:
        """The window title's second part: "local models" said of a desk PC whose profile runs on
        the office server was not so; the server named there instead."""
        profile = self.profile
        if profile is not None and profile.backend != "llama":
            return self.texts("app.subtitle_server", server=profile.remote.server_name)
        return self.texts("app.subtitle")

    def update_status(self: WorkstationApp) -> None:
        self.engine_limits_now()  # (a server's smaller limits of now: the room left is said by them)
        self.sub_title = self.subtitle_text()  # (the profile of now: a server's, or this PC's)
        text = self.status_text()
        for screen in self.screen_stack:
            set_status = getattr(screen, "set_status", None)
            if callable(set_status):
                set_status(text)
        self._show_context_fill()
        self._editing = self._editing  # the box's title in the language of now (F9), and once it is mounted

    def _show_context_fill(self: WorkstationApp) -> None:
        chat = getattr(self, "chat_screen", None)
        if chat is not None:
            fill = self.context_fill_text()
            chat.set_context_fill(fill)
            if self.pending_document is not None and fill != self._fill_shown:
                self._attach_document(self.pending_document)  # how much of the room it takes: the room changed
            self._fill_shown = fill

    def context_left(self: WorkstationApp) -> int | None:
        """The tokens the model's context has left after the open conversation's last turn (None
        before a turn): what the line under the box says in words, and what an attached document
        is measured against."""
        n_ctx = self.engine_info.n_ctx if self.engine_info else 0
        last = self._history.turns[-1] if self._history.turns and self.conversation_id is not None else None
        if not n_ctx or last is None:
            return None
        return n_ctx - (last.prompt_n + last.cache_n + last.predicted_n)

    def reread_note(self: WorkstationApp) -> str:
        """Said as a change to the profile in use is saved (F3 → E): the model loaded again holds
        none of the open conversation, and where that is long (``REREAD_NOTE_TOKENS``) the next
        reply reads it again first, about N s at this conversation's reading speed where measured
        (a user waited 59 s after a K/V change, told nothing until "reading the conversation… 70%");
        "" for a short conversation or none."""
        from workstation.core.metrics import reading_speed
        from workstation.core.summarize import duration

        last = self._history.turns[-1] if self._history.turns and self.conversation_id is not None else None
        tokens = last.prompt_n + last.cache_n + last.predicted_n if last is not None else 0
        if tokens <= REREAD_NOTE_TOKENS:
            return ""
        speed = reading_speed(self._history.turns)
        if speed is None:
            return self.texts("load.reads_again")
        return self.texts("load.reads_again_time", time=duration(tokens / speed, self.texts.get))

    def words_basis(self: WorkstationApp, lang: str | None = None) -> WordsBasis | None:
        """What the open conversation's room is said in words by (``phrases.context_basis``): the UI
        language's figure for the loaded model's tokenizer (measured once a file, in a worker started
        here the first time, the line said once it is read; a desk PC's as its server says it), else
        the language's; None while that figure is being read. One basis for every turn of every
        conversation with this model and language, as F3 and F4 say its context by: by the replies'
        own words a token (measured again after each) the room under the box went up after a reply
        (2,500 to 3,100 after a 120-token one) and changed when the same conversation was opened
        again (910 to 2,500), where the tokens left can only fall as a conversation grows. ``lang``:
        the language of the text it is said of, where known and not the UI's (``conversation_language``:
        an English conversation's room was said in Turkish words, a third of the server's figure)."""
        from workstation.core.language_words import own_figures, words_figures
        from workstation.core.locales import locale_texts
        from workstation.core.profile_lookup import model_file

        profile, lookup = self.profile, self.texts.get
        if lang is None or lang == self.texts.lang or not locale_texts(lang):
            lang = self.texts.lang
        else:
            lookup = locale_texts(lang).get
        model = model_file(profile) if profile is not None and profile.backend == "llama" and own_figures(lookup) else ""
        said = self.engine_info.words_a_token if self.engine_info is not None else None  # (a desk PC's server's)
        figures = words_figures(lookup, lang, model, said, measure=False)
        if model and figures is None and str(model) not in self._words_unread:
            # (its tokenizer read once, in a worker, the line said when it is read: the language's general
            # figure said meanwhile changed under the box; one at a time: each line and attach said while
            # it was read started another, each reading it again)
            if self.is_running and not any(w.group == "words" and not w.is_finished for w in self.workers):
                self.run_worker(lambda: self._read_words_figures(lookup, lang, model), thread=True,
                                exit_on_error=False, group="words")
            return None
        return context_basis(lookup, figures)

    def conversation_language(self: WorkstationApp) -> str | None:
        """The language the open conversation is written in (``language_words.text_language`` of its
        person's messages as sent, a document asked about with them: a small model's replies to a
        Turkish question are often English), None before it has one or where they say too little
        ("Merhaba."); read once a turn."""
        from workstation.core.language_words import text_language

        cid = self.conversation_id
        if cid is None:
            return None
        key = (cid, len(self._history.turns))
        if self._conversation_lang[0] != key:
            try:
                messages = self.store.get(cid).messages
            except Exception:  # noqa: BLE001 (not read: the UI's language, as before it had a message)
                return None
            text = "\n".join(m.content for m in messages if m.role == "user")
            self._conversation_lang = (key, text_language(text))
        return self._conversation_lang[1]

    def _read_words_figures(self: WorkstationApp, lookup: Lookup, lang: str, model: Path | str) -> None:
        """The loaded model's words a token in the UI's language read (``words_figures``, in a
        worker), then the line under the box said by it."""
        from workstation.core.language_words import words_figures

        if words_figures(lookup, lang, model) is None:  # (a file that cannot be read: the language's figure)
            self._words_unread.add(str(model))
        self.call_from_thread(self._show_context_fill)

    def context_fill_text(self: WorkstationApp) -> str:
        """How full the model's context is after the open conversation's last turn, for the line
        under the message box ('' before a turn): it showed on F5 only, and the conversation's
        start was left out with no warning ahead (LM Studio shows it by the box)."""
        left = self.context_left()
        if left is None or self.engine_info is None:
            return ""
        n_ctx = self.engine_info.n_ctx
        pct = min(100, round((n_ctx - left) / n_ctx * 100))
        # in words a newcomer pictures: how much more the conversation holds before the model
        # forgets its start ("context 3% full (120 of 4,096 tokens)" said neither; F5 counts tokens)
        basis = self.words_basis(self.conversation_language())  # (an English conversation's room in English words)
        if basis is None:  # (the model's figure being read: said once read, not by another meanwhile)
            return ""
        key = "chat.context_over" if left * basis.per_token < 1 else \
            "chat.context_full" if pct >= CONTEXT_NEARLY_FULL else "chat.context_fill"
        # (a Turkish word takes more tokens: said where the model spends under half as many words a
        # token as in English, ``costly`` as F3 and F4 say it, ``costly_note``, shorter to fit under
        # the box: the same conversation had "about 680" in Turkish and "about 1,900" after F9 to
        # English, without a word of why)
        if key == "chat.context_fill" and basis.costly:
            key = "chat.context_fill_costly"
        return self.texts(key, words=basis.count(left))

    def stream_pace(self: WorkstationApp) -> pacing.Pace:
        """How much the screen does while a reply streams (see ``pacing``)."""
        profile, info = self.profile, self.engine_info
        if self.api is not None and profile is not None:  # our own server on this machine
            return pacing.pace(profile.resolved_threads(), True)
        if info is None or profile is None or profile.backend != "llama":
            return pacing.FREE_CPU  # decoded on another machine
        return pacing.pace(info.threads, info.gpu_layers < offloadable_layers(info.n_layer))

    def live_rate(self: WorkstationApp) -> float | None:
        if self._t_first is None or self._t_last is None or self.live_tokens < 2:
            return None
        span = self._t_last - self._t_first
        return (self.live_tokens - 1) / span if span > 0 else None
