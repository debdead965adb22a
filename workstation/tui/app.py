"""The workstation's Textual app.

The app owns the state (the loaded engine, the open conversation, the metrics history) and
dispatches; screens render. Blocking work runs in thread workers that only post messages:
the engine itself lives in a child process (``EngineProcess``), so a turn's worker merely
relays the child's tokens. Every message is stored in SQLite the moment it exists.

The app is made of parts, mixins sharing its one ``self`` (``AppPart``, app_part.py: ``@on``
handlers in them are heard); this module keeps the state (``__init__``), the start, the open
conversation, sampling and instructions, the language, the screens, the system samples and
the last nets. The parts: ``Toasts`` (toasts.py, the notices),
``StatusLine`` (status_line.py), ``OtherWindows`` (other_windows.py, what other windows
wrote), ``StoreFallback`` (store_fallback.py, the session in memory on a full disk),
``ConversationActions`` (conversation_actions.py: rename, delete, export, copy),
``Attachments`` (attaching.py), ``Quitting`` (quitting.py, keys and signals),
``ModelLoading`` (model_loading.py: load, switch, serve, the engine lost), ``Turn`` (turn.py,
a message and its reply), ``LastExchange`` (last_exchange.py: Up, Alt+R, Alt+C, Alt+V),
``Drafts`` (drafts.py, a message typed and not sent, kept with its conversation) and
``KeyHelp`` (key_help.py: F1's keys, Ctrl+P's commands, the actions on now, ``key_for``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import os
import signal
import sqlite3
import sys
import threading
import time
import weakref
from collections import deque
from multiprocessing import resource_tracker
from pathlib import Path
from typing import Any

from rich.console import RenderableType
from rich.text import Text
from textual import events, on, work
from textual.app import App
from textual.binding import Binding
from textual.css.query import NoMatches
from textual.dom import NoScreen
from textual.driver import Driver
from textual.notifications import Notification
from textual.screen import Screen
from textual.theme import BUILTIN_THEMES, Theme
from textual.timer import Timer
from textual.widget import Widget
from textual.widgets import Input
from textual.worker import Worker, WorkerState

from workstation.core.address_space import ran_out_of_memory, ran_out_phrase
from workstation.core.conversation_records import Conversation, ConversationGone, TakenOut
from workstation.core.conversation_titles import profile_key
from workstation.core.errors import WorkstationError
from workstation.core.events import EngineInfo
from workstation.core.metrics import MetricsHistory, TurnMetrics, history_of
from workstation.core.paths import data_dir, office_folder_problem
from workstation.core.phrases import (
    Phrase,
    say,
)
from workstation.core.profile_check import with_own_sampling
from workstation.core.profile_lookup import load_profile, profile_title
from workstation.core.profiles import Profile, Sampling
from workstation.core.quota import Clock
from workstation.core.store import DB_NAME, ConversationStore
from workstation.core.table_facts import SheetFacts
from workstation.tui import integrations, status_line
from workstation.tui.actions import (
    BY_ID,
    bindings,
    keys_lost,
)
from workstation.tui.attaching import (
    ATTACHED_KEY,
    Attachments,
    Compared,
    Holder,
    KeptDocument,
    recalled_compared,
    recalled_paths,
)
from workstation.tui.conversation_actions import ConversationActions
from workstation.tui.drafts import Drafts
from workstation.tui.glyphs import glyphs, terminal_charset, terminal_table
from workstation.tui.i18n import LANGUAGES, Texts, detect_language
from workstation.tui.key_help import KeyHelp
from workstation.tui.last_exchange import LastExchange
from workstation.tui.messages import (
    SystemSampled,
    TaskFailed,
)
from workstation.tui.model_loading import ModelLoading
from workstation.tui.other_windows import OUTSIDE_CHANGES_EVERY_S, OtherWindows
from workstation.tui.palette import FoldedCommands
from workstation.tui.quitting import Quitting
from workstation.tui.screens.app_screen import AppScreen
from workstation.tui.screens.chat import ChatScreen
from workstation.tui.screens.dashboard import DashboardScreen
from workstation.tui.screens.instructions import (
    NEW_INSTRUCTIONS_KEY,
    InstructionsChosen,
    InstructionsDialog,
)
from workstation.tui.screens.models import ModelsScreen
from workstation.tui.screens.profile_menu import FitCheck
from workstation.tui.screens.quantization import QuantizationScreen
from workstation.tui.screens.sampling import SamplingDialog, written
from workstation.tui.screens.sampling import changes as sampling_changes
from workstation.tui.screens.sizing import SizingScreen
from workstation.tui.screens.summarize import SummarizeScreen
from workstation.tui.screens.usage import UsageScreen
from workstation.tui.settings import load_settings, save_language, save_setting, settings_path
from workstation.tui.status_line import StatusLine
from workstation.tui.store_fallback import StoreFallback
from workstation.tui.toasts import Toasts
from workstation.tui.turn import Turn
from workstation.tui.typed_bytes import tolerant_decoder
from workstation.tui.widgets.message_view import MessageView

SAMPLE_EVERY_S = 1.0  # CPU, RAM and GPU readings for the dashboard
# textual-light with its footer's keys in its primary blue, dark as its text: they were a pale
# blue on grey, 2.9:1 (another light theme's keys were fine, and a style for all of them made
# solarized-light's 2:1)
LIGHT_THEME = dataclasses.replace(BUILTIN_THEMES["textual-light"], variables={
    **BUILTIN_THEMES["textual-light"].variables, "footer-key-foreground": BUILTIN_THEMES["textual-light"].primary})


class WorkstationApp(Toasts, StatusLine, OtherWindows, StoreFallback, ConversationActions, Attachments,
                     Quitting, ModelLoading, Turn, LastExchange, Drafts, KeyHelp, App[None]):
    # (the parts before Textual's App: Toasts.notify, _on_notify, Quitting's actions and KeyHelp's check_action and
    # get_system_commands take the place of App's)
    CSS_PATH = "workstation.tcss"
    TITLE = "workstation"
    BINDINGS = bindings(Texts("en"))
    COMMANDS = {FoldedCommands}  # the palette's search folds the Turkish I's
    # a screen's class by the terminal's width: under 60 columns dialogs draw closer to their
    # border and their buttons only as wide as their words (at 40, "Cancel (n" was cut)
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (60, "-wide")]

    def __init__(
        self,
        profile: Profile | str | None = None,
        *,
        start_engine: bool = True,
        sample_system: bool = True,
        language: str | None = None,
        store_path: Path | None = None,
        fit_check: FitCheck = integrations.fit_verdict,
        api_port: int = 8088,
        quit_on_signals: bool = False,
        exit_deadline_s: float | None = None,
        clock: Clock = time.time,
    ) -> None:
        """``clock``: now, for the days the app names (Today over a conversation, the usage
        screen's last 14 days): one moment a test takes once (a run across midnight compared the
        app's day with the test's). ``quit_on_signals``: SIGTERM (a logout, ``kill``) and SIGHUP (the terminal closed)
        quit as Ctrl+Q does, keeping a reply being written (``workstation tui`` sets it; tests
        running the app in pytest's process leave those signals alone). ``exit_deadline_s``:
        the process ends this long after such a signal, however far the quitting came."""
        # NO_COLOR (no-color.org): the terminal's own colours only. Textual's filter for it
        # drew the theme in greys unless its colours are the terminal's (ansi_color)
        super().__init__(ansi_color=True if os.environ.get("NO_COLOR") is not None else None)
        self.quit_on_signals = quit_on_signals
        self.exit_deadline_s = exit_deadline_s
        self._quit_signal: list[int] = []  # the signal to quit on, once one came (``_on_quit_signal``)
        self._quit_signalled_event = threading.Event()  # …which the threads ``_watch_the_terminal`` started wait for
        self._signals_before: dict[int, Any] = {}
        # Start multiprocessing's resource tracker now: once the app runs, sys.stderr is
        # Textual's capture (fileno -1) and spawning the tracker then fails.
        if quit_on_signals:  # the tracker outlives a closed terminal's hang-up, as the engine's process does
            # (killed by it, a new one was started on the way out and printed a traceback for
            # each of the old one's semaphores)
            previous = signal.signal(signal.SIGHUP, signal.SIG_IGN)
            try:
                resource_tracker.ensure_running()
            finally:
                signal.signal(signal.SIGHUP, previous)
        else:
            resource_tracker.ensure_running()
        self.register_theme(LIGHT_THEME)
        self.glyphs = glyphs()  # the app's own symbols: ASCII on the Linux console and under LANG=C
        self.settings = load_settings()
        self.texts = Texts(language or self.settings.language or detect_language())
        self.start_engine = start_engine
        self.fit_check = fit_check
        self.sample_system = sample_system
        self.clock = clock
        self.startup_problem: str | None = self._settings_problem()
        self.profile: Profile | None = None
        profile_problem: str | None = None
        if isinstance(profile, Profile):
            self.profile = profile
        else:
            try:
                self.profile = load_profile(profile)
            except WorkstationError as err:
                profile_problem = self.startup_problem = self.texts.error(err)
        self.started_profile = self.profile  # -p PATH outside profiles/ stays in F3 after a switch
        # Ctrl+E's sampling settings of the open conversation (kept with it: ``store.set_sampling``),
        # those other than its profile's, by field ({}: the profile's); they apply on top of
        # whichever profile runs it (F3's other one too), as ``session_sampling``
        self.own_sampling: dict[str, Any] = {}
        self._new_instructions = ""  # Alt+I's for the conversation not made yet (its first message makes it)
        self._open_instructions = ""  # the open one's, as last read (kept if it is deleted elsewhere mid-turn)
        self._code_copied: tuple[str, int] | None = None  # Alt+Y: (the reply's text, the block copied last)
        self._reply_copied: tuple[str, int] | None = None  # Ctrl+Y: (the last reply's text, how far back it copied)
        self._chosen_profile = False  # a profile chosen in F3 is loading
        # when a profile chosen in F3 loaded this session (None: none has): each conversation's next
        # reply after it has its prompt read again or restored from disk, and its figures say so
        # (``TurnMetrics.after_switch``); F5 says so of this session's switch only (``history_of``)
        self._switched_at: float | None = None
        self._answered_since_switch: set[tuple[int, float]] = set()  # (conversation, made) answered since
        self._forget_after_load: list[str] = []  # cells of conversations deleted elsewhere meanwhile
        self.store_problem: str | None = None  # the conversation file could not be used (said at start)
        self._write_back_to: Path | None = None  # the file a session moved to memory goes back to (a full disk)
        try:
            self.store = ConversationStore(store_path)
            drafts = self.store.drafts()
            compared_drafts = self.store.compared_drafts()  # (what each draft's document is compared with)
            remembered = self.store.recalled("folder")  # the last document's folder, for the Open dialog
            attached_before = self.store.recalled(ATTACHED_KEY)  # the documents' paths last attached
        except WorkstationError as err:  # damaged, not a database, from a newer version: left as it is
            self._store_unusable(store_path or data_dir() / DB_NAME, err)
            self.store = ConversationStore(Path(":memory:"))
            self._read_into_memory(store_path or data_dir() / DB_NAME)
            drafts, remembered, attached_before, compared_drafts = {}, None, None, {}
        self._new_instructions = self.instructions_for_new()  # (kept as every new conversation's: Alt+I's choice)
        if profile is None and not os.environ.get("WORKSTATION_PROFILE"):
            self._start_with_last_profile(profile_problem)
        self.engine: Any = None  # EngineProcess or a remote engine with the same interface
        self.api: Any = None  # the API server (ServeProcess) while the chat is one of its clients
        self.api_port = api_port
        self.engine_info: EngineInfo | None = None
        self.loading: Profile | None = None
        # (name, parameters) of the loaded model where it is too small to trust with facts: the
        # empty chat says so (a new user took its confident wrong dates and totals for answers)
        self.small_model: tuple[str, int] | None = None
        self.load_fraction = 0.0
        self.unreachable = False  # the last turn could not reach the engine's server
        self.not_answering = ""  # the phrase of the server's refusal of the last turn, where it refuses every one
        self.load_failed = False  # the last load failed (a desk PC then tries its server again on send)
        # a conversation of another profile opened while one loads: said once that one has loaded ("the
        # profile loaded now" was said of one still loading, and of one that then failed to load)
        self._other_profile_said: tuple[int, str] | None = None
        self._waiting_to_send: str | None = None  # the message sent once the model is ready (its Enter came
        # while it loaded, tried the server again, or came while it was loaded again after its process stopped)
        self._summary_when_connected: bool | None = None  # F6's Ctrl+R (its start_over) that tried the server again
        self._engine_stops = 0  # the model's process stopped (since the last reply): loaded again once
        self._reloading = False  # the model is being loaded again after its process stopped
        self.engine_problem: str | None = None  # why no model is loaded now (it stopped again)
        self._quiet_failure = False  # a retry of a server not reached: its failure is not said again
        self._server_retry: Timer | None = None  # the next try of a server not reached (one at a time)
        self._generating = False
        self._turn_held: tuple[ConversationStore, int] | None = None  # the conversation whose reply this window writes
        # half-typed messages (and attached documents) of the conversations not open; the
        # store keeps them too (and the open one's), so quitting or a closed terminal loses none
        self._drafts: dict[int | None, tuple[str, tuple[Path, str] | None]] = drafts
        self._draft_shown = False  # the box holds the open conversation's draft
        self._draft_timer: Timer | None = None
        self.summarizing: str | None = None  # the document a summary (F6) is being made of
        # the model F4 downloads (its name, and the share done once the server said the size):
        # F4 left, the download went on with nothing in sight until its notice at the end
        self.downloading: tuple[str, int | None] | None = None
        # where the Open dialog starts (pick_file): where the last pick was, also before a
        # restart; at first, Documents (``start_folder``)
        self.last_folder: Path | None = Path(remembered) if remembered else None
        self._kept: dict[type[Screen[Any]], Screen[Any]] = {}  # screens with KEEP_ALIVE
        self._profile_titles: dict[tuple[str, str], str] = {}  # by language and ref (``profile_title``)
        self.conversation_id: int | None = None
        self.open_title = ""  # the open conversation's title (kept should another window delete it)
        self.open_created = 0.0  # and when it was made: SQLite gives a deleted one's number to the next
        self._open_revision: tuple[int, int, str, str, float] = (0, 0, "", "", 0.0)  # store.revision of it when last drawn or written here
        self._partial: int | None = None  # the row the streaming reply is kept in so far
        self._partial_at = 0.0
        self._seen_version = 0  # the store's data_version when other writers were last looked for
        self._store_file: tuple[int, int] | None = None  # the conversation file's (device, inode)
        self._store_fd: int | None = None  # a handle on it: st_nlink 0 once it is deleted
        self._asked = ""  # the user's message of the turn under way
        self._asked_facts: list[dict[str, Any]] = []  # the facts of its attached tables (``facts_record``'s)
        self._sending = False  # Enter's message is on its way (to the box's clearing and the reply's start)
        self._new_after_turn = False  # Ctrl+N stopped the reply: a new conversation once it has stopped
        self._on_cpu: set[str] = set()  # profiles whose engine crashed loading onto a GPU this session
        # its box's text and document, as typed, and what the document was compared with
        self._sent: tuple[str, tuple[Path, str] | None, Compared | None] = ("", None, None)
        # conversations (number, made at) told their start no longer fits the context
        self._left_out_told: set[tuple[int, float]] = set()
        # the question (number, made at: SQLite gives numbers again) put back in the box by Up:
        # sent, the message takes its place (the last) or goes on in a new conversation (an earlier one)
        self._editing = None  # (its property below; first, with the box not there yet)
        # an earlier one's place (its number among the user's messages, how many): its box's title
        self._editing_at: tuple[int, int] | None = None
        # a conversation left with its last question in the box to be changed: taken up again
        # when it is opened again, its draft there (in this session; a draft outlives a restart,
        # not as an edit)
        self._edits: dict[int, tuple[int, float]] = {}
        self._document_sizes: dict[Path, int] = {}  # documents cut to MAX_DOCUMENT_CHARS: their whole length
        self._document_notes: dict[Path, list[Phrase]] = {}  # what a document's reader left out (its hidden sheets)
        self._document_facts: dict[Path, list[SheetFacts]] = {}  # a document's tables' facts, counted by the program
        # the figures the program counted that answer the message sent (``counted_answer``), said under its reply
        self._counted: list[dict[str, Any]] = []
        # each conversation's table last attached this session: a follow-up question without it is
        # counted of it too (only "Hangi müşterinin kaç faturası var?" had a counted line, the next
        # questions of the same table none, and the model invented their figures: newuser19, newuser21)
        self._tables_asked_of: dict[int, list[Any]] = {}
        self._from_summary = ""  # the document whose F6 summary the message being answered went with
        # the earlier version the attached document is compared with (``document_changes``; attached
        # before it to the same message; or the changes found before, where Up put the message back),
        # and the changes found for the message being answered
        self.compared_with: Compared | None = None
        # the earlier version and the document attached after it while the two are weighed (``_weigh_versions``)
        self._weighing: tuple[tuple[Path, str], tuple[Path, str]] | None = None
        # each draft's comparison (``compared_with``), kept with it as ``_drafts`` keeps its document
        self._compared_drafts: dict[int | None, Compared] = {
            key: found for key, value in compared_drafts.items()
            if (found := recalled_compared(value, drafts.get(key, ("", None))[1])) is not None}
        self._changes: dict[str, Any] | None = None
        self._attached_paths: set[Path] = set()  # every document attached this session (F7 writes over none)
        # the documents attached last, this session and before (oldest first): where Up after a restart
        # finds a message's document by its name, to count its tables' facts again (``recalled_paths``)
        self._attached_before: list[KeptDocument] = recalled_paths(attached_before)
        # a message's document put back by Up whose file is being looked for (``attach_again``)
        self.finding_attached: tuple[Path, str] | None = None
        # attached documents, measured: (their tokens as a message of their own, the context then,
        # their text's own tokens)
        self._document_tokens: dict[tuple[Path, str], tuple[int, int, int]] = {}
        # attached documents too long for this profile: another of the user's that holds each whole
        # (``Holder``; None: none does), found once it is measured
        self._holders: dict[tuple[Path, str], Holder | None] = {}
        # attached documents whose measuring failed, and why (the model or the office server failed)
        self._not_measured: dict[tuple[Path, str], BaseException] = {}
        self._fill_shown = ""  # the line under the box, as an attachment's line last measured it against
        # the open conversation's language, by its messages, as of its turns then (``conversation_language``)
        self._conversation_lang: tuple[tuple[int, int] | None, str | None] = (None, None)
        self._words_unread: set[str] = set()  # model files whose words a token could not be read (the language's figure said)
        self._arriving_edit: tuple[int, float] | None = None
        self._replacing: list[int] = []  # the reply a question asked again (Alt+R) replaces once the new one came
        self._edited_away: TakenOut | None = None  # the question a message was sent in place of (Up), and its reply
        self._replacing_question = 0  # that question (the reply replaced is kept as its earlier one: Alt+V)
        self._continued = ""  # the reply's text before "continue" (Alt+C) went on from it
        self._turn_from = "send"  # what began the turn under way: send | again (Alt+R) | continue (Alt+C)
        self.history = MetricsHistory(60)
        self.cpu_history: deque[float] = deque(maxlen=60)
        self.system: SystemSampled | None = None
        self.last_metrics: TurnMetrics | None = None
        self.pending_document: tuple[Path, str] | None = None
        self.reply_view: MessageView | None = None
        self.live_tokens = 0
        # a long prompt's tokens read so far and its total (PromptProgressed), for the reply being written
        self.live_prompt: tuple[int, int] | None = None
        self._t_first: float | None = None
        self._t_last: float | None = None
        self._search = ""
        self._toast_of: dict[str, Notification] = {}  # the last toast of each kind (``notify``'s ``kind``)
        self._toasts_looked_at: weakref.WeakSet[Screen[Any]] = weakref.WeakSet()  # (``Toasts._toasts_laid_out``)
        # the key and values each toast still shown was said with (``Texts.phrase_of``), by its identity:
        # said again in the new language after F9
        self._phrase_of_toast: dict[str, tuple[Notification, Phrase, Phrase | None]] = {}
        self._stop_sampling = threading.Event()
        self._quit_after_turn = False  # Ctrl+Q while a reply streams: quit once it is saved
        self._quit_signalled = False  # a SIGTERM or SIGHUP is being acted on (``_signalled``)
        self._asking_quit = False  # the "quit while a summary runs?" question is up
        self._turn = 0  # the chat turn now (or last) generating, counted
        self._turn_server_stopping = -1  # the chat turn during which its office server began to stop (status_line)
        self._apply_language()

    @property
    def session_sampling(self) -> Sampling | None:
        """The chat's sampling settings now: the profile's with the open conversation's own
        (Ctrl+E) in their place; None where it has none (or none that apply: the profile's)."""
        return with_own_sampling(self.profile.sampling, self.own_sampling) if self.profile is not None else None

    @session_sampling.setter
    def session_sampling(self, sampling: Sampling | None) -> None:
        self.own_sampling = self.changes_from_profile(sampling)

    def changes_from_profile(self, sampling: Sampling | None) -> dict[str, Any]:
        """``sampling``'s settings other than the profile's, by field ({}: none, or no profile):
        what the setter above keeps as ``own_sampling``; of ``session_sampling``, those that
        apply now, as a reply's record keeps them (``own_sampling`` less any this profile has
        itself, or any that cannot be used); and what Ctrl+E's notices name."""
        return sampling_changes(sampling, self.profile.sampling) if sampling is not None and self.profile is not None \
            else {}

    @property
    def generating(self) -> bool:
        """A reply is being generated."""
        return self._generating

    @generating.setter
    def generating(self, value: bool) -> None:
        self._generating = value
        if not value:
            self._release_turn()
        if hasattr(self, "chat_screen"):
            self.chat_screen.set_busy(value)
        self.refresh_bindings()  # Esc (stop) or Ctrl+N (new) in the chat's footer (ChatFooter)

    # --- set-up --------------------------------------------------------------------------
    def today(self) -> dt.date:
        """Today's date by the app's ``clock``."""
        return dt.date.fromtimestamp(self.clock())

    def get_driver_class(self) -> type[Driver]:
        """Textual's driver for this terminal. Its keys: a typed byte that is not UTF-8 is read
        in the language setting's charset (an é from PuTTY set to Latin-1 ended the app with a
        traceback). Its screen: where the terminal cannot show Unicode (the Linux console, a
        language setting that is not UTF-8: ``terminal_charset``) it is sent ASCII in its
        place, or Textual's borders, scroll bars and icons and a model's emoji reached it as
        diamonds, or as two or three letters a character that pushed each line past its end."""
        driver = super().get_driver_class()
        with contextlib.suppress(ImportError):  # (Windows: no termios, a driver of its own)
            from textual.drivers import linux_driver

            # the name its key reader calls for its decoder, strict UTF-8 there (typed_bytes)
            linux_driver.getincrementaldecoder = tolerant_decoder  # type: ignore[attr-defined]
        table = terminal_table(terminal_charset())
        if table is None:
            return driver

        class PlainTerminalDriver(driver):  # type: ignore[valid-type, misc]
            def write(self, data: str) -> None:
                super().write(data.translate(table))

        return PlainTerminalDriver

    def get_default_screen(self) -> Screen[Any]:
        self.chat_screen = ChatScreen()
        return self.chat_screen

    async def on_event(self, event: events.Event) -> None:
        """Every key, wherever it goes, first takes off the marks of the words a search found
        (Ctrl+F's result opened: marked until the next key, as a mail program's find does).
        Keys, clicks and pastes that come once the app is closing (Ctrl+Q, then Esc or F9 before
        it had gone) do nothing: its screens were let go, and Textual's key dispatch stopped the
        app on "No screens on stack" (or F9 relabelled a screen already taken apart), saying
        "the app stopped on an unexpected error" as it quit."""
        if isinstance(event, events.InputEvent) and not self.is_running:
            return
        if isinstance(event, events.Key) and hasattr(self, "chat_screen"):
            self.chat_screen.unmark_found()
        await super().on_event(event)

    def on_mount(self) -> None:
        if self.settings.theme is not None and self.settings.theme in self.available_themes:
            self.theme = self.settings.theme
        elif self.settings.theme is not None:
            self.notify(self.texts("theme.unknown", name=self.settings.theme, path=str(settings_path())),
                        severity="warning")
        self.theme_changed_signal.subscribe(self, self._keep_theme)
        if self.settings.keymap:
            self.set_keymap(self.settings.keymap)
            for lost, other in keys_lost(self.settings.keymap).items():  # (a keymap older than the action)
                self.notify(self.texts("keys.lost", keys=self.texts.key(BY_ID[lost].key.split(",")[0]),
                                       other=self.texts(BY_ID[other].label), action=self.texts(BY_ID[lost].label)),
                            severity="warning", timeout=12)
        if self.sample_system:
            self._sample_loop()
        if self.quit_on_signals:
            self._take_quit_signals()

    async def chat_ready(self) -> None:
        """The chat screen is up: show the conversation open when the app was left (else the
        newest) and start loading the model."""
        self._seen_version = self._store_version()  # before it is read: what is written after shows
        self._watch_store_file()
        self.set_interval(OUTSIDE_CHANGES_EVERY_S, self._follow_outside_changes)
        self.set_interval(status_line.DAY_RECHECK_S, self._recheck_day)  # (read now: a test's shorter wait)
        if not self.store.in_memory:
            self._forget_deleted_cells(self.store.path)
        try:
            convs = self.store.list()
            last = self.store.last_open()
        except WorkstationError as err:  # a damaged file: left as it is, and the chat still works
            self._store_unusable(Path(self.store.path), err)
            self.store = ConversationStore(Path(":memory:"))
            convs, last = [], None
        if self.store_problem:
            self.notify(self.store_problem, severity="error", timeout=20)
        if last is not False and last is not None:
            await self.open_conversation(last)
        elif convs and last is False:
            await self.open_conversation(convs[0].id)
        else:
            self._keep_draft(None)
            await self.chat_screen.show_messages([])
            await self.refresh_sidebar()
        self.update_status()
        if self.startup_problem:
            self.notify(self.startup_problem, severity="error", timeout=10)
        if office := office_folder_problem():  # (an office's profiles folder not there: they were left out unsaid)
            self.notify(say(office, self.texts.get), severity="warning", timeout=15)
        removed = integrations.clear_left_copies()  # (a copy into models/ killed mid-way left GBs nothing showed)
        if removed:
            self.notify(say(removed, self.texts.get), timeout=12)
        if self.start_engine and self.profile is not None:
            self._begin_load(self.profile)

    def _settings_problem(self) -> str | None:
        """What settings.yaml could not give (``TuiSettings.problem``), in the app's language."""
        if self.settings.problem is None:
            return None
        key, values = self.settings.problem
        return self.texts(key, **values)

    def _mark_open(self, conv: Conversation) -> None:
        """``conv`` is the open conversation from now on."""
        self.conversation_id, self.open_title, self.open_created = conv.id, conv.title, conv.created
        self._open_instructions = conv.instructions  # ('' from the list: read again as the chat is drawn)
        self._editing = None
        self._note_revision(settings=True)

    def exit(self, result: None = None, return_code: int = 0, message: RenderableType | None = None) -> None:
        """Every way out keeps what is typed in the box as its conversation's draft, while the
        box is still there (a draft's timer firing later finds no screen and does nothing)."""
        self.save_draft()
        super().exit(result, return_code, message)

    def _handle_exception(self, error: Exception) -> None:
        """A part of a screen looked for that is gone because its screen closed as it opened
        (a key and Esc read together: a fast typist, tmux, a slow link) ends nothing: F3 and Esc
        at once ended the app on "No nodes match 'OptionList'", F10 and Esc on the header's
        title, F4 and Esc on its list, Ctrl+P and Esc inside Textual's palette (an IndexError: it
        looks for the screen under it). Anything else ends it as before."""
        if isinstance(error, NoMatches | IndexError) and self._on_a_closed_screen(error):
            return
        super()._handle_exception(error)

    def _on_a_closed_screen(self, error: BaseException) -> bool:
        """Whether ``error`` came from a part of a screen no longer open (its handler's ``self``)."""
        tb = error.__traceback__
        while tb is not None:
            node = tb.tb_frame.f_locals.get("self")
            if isinstance(node, Widget):
                try:
                    screen = node if isinstance(node, Screen) else node.screen
                except NoScreen:
                    return True
                if screen not in self.screen_stack:
                    return True
            tb = tb.tb_next
        return False

    def _fatal_error(self) -> None:
        """An error no part of the app expected ends it with one sentence, not Textual's
        screen-long traceback with its locals (a person's text among them), and exit code 1
        (``WORKSTATION_DEBUG=1``: the traceback, as before). The messages sent are saved as they
        go, a reply every 2 s, and the draft once typing paused."""
        if os.environ.get("WORKSTATION_DEBUG"):
            super()._fatal_error()
            return
        error = sys.exc_info()[1]
        self.bell()
        if error is not None and ran_out_of_memory(error):  # (a thread it could not start: "can't start new thread")
            self._exit_renderables.append(Text(f"workstation: {say([ran_out_phrase()], self.texts.get)}"))
        else:
            said = self.texts.error(error, foreign=True)
            self._exit_renderables.append(Text(f"workstation: the app stopped on an unexpected error ({said}); "
                                               "WORKSTATION_DEBUG=1 shows where it happened."))
        self._close_messages_no_wait()

    async def on_unmount(self) -> None:
        if self.quit_on_signals:
            self._give_back_signals()
        if self._draft_timer is not None:
            self._draft_timer.stop()
        self._stop_sampling.set()
        engine, self.engine = self.engine, None
        if engine is not None:
            try:
                engine.cancel()
                engine.close()
            except Exception:  # noqa: BLE001 - closing on the way out
                pass
        api, self.api = self.api, None
        if api is not None:
            api.stop()
        if self._write_back_to is not None:  # a session kept in memory on a full disk: a last try
            with contextlib.suppress(Exception):
                self._taken_back(self._write_back_to, at_the_end=True)
        self.store.close()
        if self._store_fd is not None:
            os.close(self._store_fd)
            self._store_fd = None

    # --- language --------------------------------------------------------------------------
    def _apply_language(self) -> None:
        """Relabel the bindings (footer, help) in the current language."""
        for key, items in list(self._bindings.key_to_bindings.items()):
            self._bindings.key_to_bindings[key] = [
                dataclasses.replace(b, description=self.texts(BY_ID[b.id].label)) if b.id in BY_ID
                else dataclasses.replace(b, description=self.texts("binding.palette"))
                if b.action == "command_palette" else b
                for b in items
            ]
        self.sub_title = self.subtitle_text()

    def _keep_theme(self, theme: Theme) -> None:
        """The theme chosen (Ctrl+P, "Theme": a light one for a light terminal, or for eyes that
        read dark on light better) is the one the app starts with next time; it went back to
        the dark one at each start."""
        if theme.name == (self.settings.theme or "textual-dark"):
            return
        self.settings.theme = theme.name
        if not save_setting("theme", theme.name):
            self.notify(self.texts("theme.not_saved", path=str(settings_path())), severity="warning")

    def action_dark_theme(self) -> None:
        """Ctrl+P's "Dark theme": Textual's own (kept for the next start, as "Theme"'s choice)."""
        self.theme = "textual-dark"

    def action_light_theme(self) -> None:
        """Ctrl+P's "Light theme": Textual's own, with its keys readable (``LIGHT_THEME``)."""
        self.theme = "textual-light"

    def action_toggle_language(self) -> None:
        langs = list(LANGUAGES)
        new = langs[(langs.index(self.texts.lang) + 1) % len(langs)]
        self.texts = Texts(new)
        saved = save_language(new)
        self._apply_language()
        self.refresh_bindings()
        kept = [s for s in self._kept.values() if s not in self.screen_stack]  # kept, not shown
        for screen in [*self.screen_stack, *kept]:
            relabel = getattr(screen, "relabel", None)
            if callable(relabel):
                relabel()
            if isinstance(screen, AppScreen):
                screen.translate_bindings()
        self._attach_document(self.pending_document)  # its line says itself in the new language
        self.update_status()
        self._say_toasts_again()
        # (no "The interface is now in Turkish" notice: every line on screen says it, and it stacked over
        # the small model's warning, the two over F3's verdicts)
        if not saved:
            self.notify(self.texts("lang.not_saved", path=str(settings_path())), severity="warning")
        if new != "en" and self.profile is not None and self.engine is not None:
            self._warn_small_for_language(self.profile, self.engine)

    @property
    def history(self) -> MetricsHistory:
        """The open conversation's last turns (F5's figures, the context line under the box)."""
        return self._history

    @history.setter
    def history(self, turns: MetricsHistory) -> None:
        self._history = turns
        self._show_context_fill()  # another conversation's figure stayed under a new one's box

    @property
    def _editing(self) -> tuple[int, float] | None:
        """The question (its number and time) being changed in the box (Up): the last, to be sent
        in its place, or an earlier one (Up again), to go on from in a new conversation; None:
        the box's text is a new message."""
        return self._editing_last

    @_editing.setter
    def _editing(self, question: tuple[int, float] | None) -> None:
        was, self._editing_last = getattr(self, "_editing_last", None), question
        if question != was:  # (where it is: said by ``_say_editing_last``)
            self._editing_at = None
            chat = getattr(self, "chat_screen", None)
            if chat is not None and chat.is_mounted:
                chat.mark_editing(None)
        self._say_box_title()

    @property
    def _send_when_connected(self) -> str | None:
        """The message in the box to be sent once the model is ready (None: none waits)."""
        return self._waiting_to_send

    @_send_when_connected.setter
    def _send_when_connected(self, text: str | None) -> None:
        self._waiting_to_send = text
        self._say_box_title()

    def _say_box_title(self) -> None:
        """Over the message box: that its message waits for the model to load (Enter while it
        loaded said "wait a moment", and the message was never sent), else that it holds the last
        message being changed (Up: a toast went; Ctrl+U ended it unseen)."""
        chat = getattr(self, "chat_screen", None)
        if chat is None or not hasattr(self, "_editing_last") or not hasattr(self, "_waiting_to_send"):
            return  # (not made yet)
        earlier = getattr(self, "_editing_at", None)
        chat.set_editing_title(self.texts("chat.waiting_to_send", stop=self.key_for("chat.stop"))
                               if self._waiting_to_send is not None else
                               self.texts("chat.editing_earlier_title", n=f"{earlier[0]:,}") if earlier is not None
                               else self.texts("chat.editing_title") if self._editing_last is not None else "")

    # --- conversations ---------------------------------------------------------------------
    async def refresh_sidebar(self, search: str | None = None) -> None:
        if search is not None:
            self._search = search
        marks = {k: text.strip() or (f"{self.glyphs.attached} {doc[0].name}" if doc else "") for k, (text, doc) in self._drafts.items()
                 if k is not None or not self._search.strip()}  # the new conversation matches no search
        await self.chat_screen.sidebar.show(self.store.list(self._search), self.conversation_id, marks,
                                            search=self._search)

    async def open_conversation(self, conversation_id: int, found: int | None = None, words: str = "") -> None:
        """``found``: the message a search found (Ctrl+F), shown and marked a moment where the
        conversation opens at its end otherwise (a match in a long one was not to be seen);
        ``words``: what the search was for, marked there until the next key. Refused while a
        reply is written or a message sent is on its way to the chat (Enter's, until the box is
        emptied: opened then, the sent text stayed as a draft and the message went into the one opened)."""
        if self._turn_begun():
            self.notify(self.busy_text(), severity="warning")
            return
        try:
            conv = self.store.get(conversation_id)
        except WorkstationError as err:
            self.notify(self.texts.error(err), severity="error")
            return
        # laid out once, when all is drawn: each reply's Markdown, parsed in a thread, mounted at its
        # own moment and the screen was laid out 4 to 6 times an open (0.5 to 1 s for a short one)
        with self.batch_update():
            self._keep_draft(conv.id)
            self._mark_open(conv)
            self.own_sampling = conv.sampling  # Ctrl+E's, kept with it
            self._editing, self._arriving_edit = self._arriving_edit, None
            self.store_write(lambda: self.store.set_open(conv.id))
            self.history = history_of(conv.messages, self._switched_at)
            await self.chat_screen.show_messages(conv.messages, found=found, words=words)
            if self._editing is not None:  # its question is still in the box, being changed (marked once drawn)
                self._say_editing_last()
            await self.refresh_sidebar()
            self.update_status()
        if self.profile is not None and conv.profile and conv.profile not in (self.profile.ref, self.profile.key):
            # `chat -c` goes on with a conversation's own profile; here the loaded one answers
            saved = profile_key(conv.profile)
            # (at the start the conversation is opened before its load begins)
            if self.loading is not None or (self.start_engine and self.engine is None and not self.load_failed
                                            and self.engine_problem is None):
                self._other_profile_said = (conv.id, saved)
            else:
                self.notify(self.texts("conv.other_profile", saved=saved, now=self.profile.key), timeout=8)

    async def open_first_match(self, search: str) -> None:
        """Enter in the search box: open the newest conversation that matches (the list's
        first), as a quick-open box does; with none, say so and stay in the box."""
        matches = self.store.list(search)
        if not matches:
            self.notify(self.texts("sidebar.no_match", text=search.strip()), severity="warning")
            return
        await self.open_conversation(matches[0].id, found=matches[0].match_id, words=search)
        if self.conversation_id == matches[0].id:  # not while a reply or a summary runs
            await self.clear_search()  # the filter done with: every conversation listed again
            self.chat_screen.focus_prompt()

    async def clear_search(self) -> None:
        """Empty the search box and list every conversation (a filter left on hid the ones
        opened or made next, and a deleted match left the list empty)."""
        self.chat_screen.query_one("#search", Input).value = ""
        await self.refresh_sidebar("")

    async def action_new_conversation(self) -> None:
        """Ctrl+N: a new conversation. While a reply streams, as ChatGPT's and LM Studio's "new
        chat": the reply stops, what arrived is kept in its conversation (as Esc keeps it), and
        the new one opens once it has stopped (Ctrl+N did nothing, and said nothing)."""
        if self.generating and self.summarizing is None and self.engine is not None and not self._sending:
            if not self._new_after_turn:
                self._new_after_turn = True
                self._cancel_turn()
                self.notify(self.texts("chat.new_after_stop"))
            return
        if self.generating or self._sending:  # (a summary's parts, or a message on its way to the chat)
            self.notify(self.busy_text(), severity="warning")
            return
        self._keep_draft(None)
        if self.conversation_id is not None:  # (a new one's own, given before its first message, stay)
            self._new_instructions = self.instructions_for_new()  # those kept for every new one (Alt+I's choice)
        self.conversation_id = None
        self.own_sampling = {}  # a new conversation starts with its profile's
        self.update_status()  # (its "own sampling" stayed in the status line)
        self._editing = None
        self.store_write(lambda: self.store.set_open(None))
        self.history = MetricsHistory(60)
        await self.chat_screen.show_messages([])
        if self._search.strip():  # a search left on hid the new conversation: it looked unsaved
            await self.clear_search()
        else:
            await self.refresh_sidebar()
        self.chat_screen.focus_prompt()

    def action_search_conversations(self) -> None:
        self.chat_screen.sidebar.display = True
        self.chat_screen.query_one("#search").focus()

    def action_toggle_sidebar(self) -> None:
        self.chat_screen.toggle_sidebar()

    def action_sampling(self) -> None:
        """The chat's sampling settings for this session (Ctrl+E), as LM Studio's panel or
        Ollama's ``/set parameter``: before, only by editing the profile's file and loading it
        again. The profile's file is not changed."""
        profile = self.profile
        if profile is None:
            self.notify(self.texts("sampling.no_profile"), severity="warning")
            return

        def chosen(sampling: Sampling | None) -> None:
            if sampling is None or self.profile is not profile:  # Esc, or another profile by now
                return
            self.session_sampling = sampling
            conv_id, created, own = self.conversation_id, self.open_created, self.own_sampling
            if conv_id is not None:  # kept with it (one not made yet gets them with its first message)
                try:
                    self.store_write(lambda: self.store.set_sampling(conv_id, own, created))
                    self._note_revision(settings=True)  # (this window's own change: nothing to draw again)
                except ConversationGone:
                    self.run_worker(self._lost_open_conversation(), exit_on_error=False)
            self.notify(self.texts("sampling.applied", changes=self._sampling_said(sampling)) if own
                        else self.texts("sampling.profiles", name=profile.key))
            self.update_status()

        self.push_screen(SamplingDialog(self.texts, self.session_sampling or profile.sampling, profile.sampling,
                                        profile.key), chosen)

    def _sampling_said(self, sampling: Sampling) -> list[Phrase]:
        """The settings of ``sampling`` other than the profile's, as the notices say them
        ("Temperature 0.2, Longest reply 300"): phrases, said again in Turkish after F9 (the
        words made before it stayed English in the Turkish notice)."""
        return [phrase for i, name in enumerate(self.changes_from_profile(sampling))
                for phrase in ([("list.comma", {})] if i else []) + [
                    ("sampling.change", {"name": (f"sampling.{name}", {}), "value": written(getattr(sampling, name)) or "-"})]]

    def profile_title(self, ref: str, saved: str) -> str:
        """A profile's name in the UI's language (name_tr in Turkish), as F3 says it, by its ref:
        the name its turn ``saved`` where its file cannot be read now. Read once a language (F5's
        profile before a switch, the line under a reply)."""
        key = (self.texts.lang, ref)
        if key not in self._profile_titles:
            self._profile_titles[key] = profile_title(ref, saved, self.texts.lang)
        return self._profile_titles[key]

    def instructions_now(self) -> str:
        """The open conversation's own instructions ('' none: its profile's system prompt); a new
        one's, those Alt+I gave it before its first message."""
        if self.conversation_id is None:
            return self._new_instructions
        try:
            if self._open_gone():  # (its number may be another's now: not theirs shown)
                return ""
            self._open_instructions = self.store.get(self.conversation_id, with_messages=False).instructions
        except WorkstationError:  # (the file unreadable: none shown)
            return ""
        return self._open_instructions

    def instructions_for_new(self) -> str:
        """The instructions every new conversation starts with (Alt+I's "Use for new
        conversations too"; '' none), as last kept; a file that cannot be read: none."""
        try:
            return self.store.recalled(NEW_INSTRUCTIONS_KEY) or ""
        except (sqlite3.Error, WorkstationError):
            return ""

    def _keep_for_new(self, text: str) -> None:
        """``text`` kept as every new conversation's instructions ('' none): Ctrl+N's next starts
        with them (``action_new_conversation``)."""
        if text:
            self.store.remember(NEW_INSTRUCTIONS_KEY, text)
        else:
            self.store.forget_value(NEW_INSTRUCTIONS_KEY)

    def action_new_instructions(self) -> None:
        """Ctrl+P's "Instructions for new conversations": the instructions every new
        conversation starts with (ChatGPT's custom instructions), this one's left as they are."""
        if self.screen is not self.chat_screen:
            return

        def chosen(choice: InstructionsChosen | None) -> None:
            before = self.instructions_for_new()
            if choice is None or choice.text == before:
                return
            self._keep_for_new(choice.text)
            self.notify(self.texts("instructions.saved_for_new" if choice.text else "instructions.cleared_for_new"))
            if self.conversation_id is None and self._new_instructions == before:  # (not its own: Alt+I's)
                self._new_instructions = choice.text
                self.run_worker(self.chat_screen.show_instructions, group="instructions", exclusive=True)

        profile_prompt = self.profile.system_prompt if self.profile is not None else ""
        self.push_screen(InstructionsDialog(self.texts, self.instructions_for_new(), profile_prompt, only_new=True),
                         chosen)

    def action_instructions(self) -> None:
        """The open conversation's own instructions to the model (Alt+I), in place of the
        profile's system prompt: before, one conversation in Turkish or in two sentences took a
        profile of its own. Kept with the conversation; its next replies follow them."""
        if self.screen is not self.chat_screen:
            return
        conv_id = self.conversation_id

        created = self.open_created

        def chosen(choice: InstructionsChosen | None) -> None:
            if choice is None:  # Esc
                return
            text = choice.text
            for_new = choice.for_new and text != self.instructions_for_new()
            if for_new:  # (kept whatever becomes of this conversation's)
                self._keep_for_new(text)
            also = " " + self.texts("instructions.saved_for_new" if text else "instructions.cleared_for_new") \
                if for_new else ""
            if self.conversation_id != conv_id or (conv_id is not None and self._open_gone()):
                # deleted in another window meanwhile (a reply then went on as a new conversation)
                self.notify(self.texts("instructions.gone"), severity="warning")
                return
            if text == self.instructions_now():
                if also:
                    self.notify(also.strip())
                return
            if conv_id is None:
                self._new_instructions = text
            else:
                try:
                    self.store_write(lambda: self.store.set_instructions(conv_id, text, created))
                except ConversationGone:
                    self.notify(self.texts("instructions.gone"), severity="warning")
                    return
                self._open_instructions = text
                self._note_revision(settings=True)
            self.notify(self.texts("instructions.cleared" if not text else
                                   "instructions.saved_new" if conv_id is None else "instructions.saved") + also)
            self.run_worker(self.chat_screen.show_instructions, group="instructions", exclusive=True)

        profile_prompt = self.profile.system_prompt if self.profile is not None else ""
        now = self.instructions_now()
        self.push_screen(InstructionsDialog(self.texts, now, profile_prompt,
                                            for_new=bool(now) and now == self.instructions_for_new()), chosen)

    # --- chat ------------------------------------------------------------------------------
    def action_toggle_editor(self) -> None:
        self.chat_screen.toggle_editor()

    def action_focus_prompt(self) -> None:
        if self.screen is not self.chat_screen:
            self.pop_screen()
        self.chat_screen.focus_prompt()

    def action_clear_message(self) -> None:
        """Ctrl+U: the whole message box emptied. A long paste took a key press per line to
        take out (the editor's select-all is F7, which is the app's); Ctrl+Z brings it back. In
        another box (the conversation search) that box's own Ctrl+U (``box_keeps``)."""
        if self.screen is not self.chat_screen or not self.chat_screen.input_text():
            return
        self.chat_screen.clear_message()
        if self._editing is None:
            self.notify(self.texts("chat.cleared"), timeout=5)
            return
        # a message put back by Up: still the one changed (ChatGPT's users empty the box to type it anew),
        # said so: not "Ctrl+Z brings the text back", which read as a new message's
        self.say_still_editing()

    def say_still_editing(self) -> None:
        """The message put back by Up is still the one changed, though the box is empty (Ctrl+U; Enter
        there with Up's document still attached did nothing, and said nothing)."""
        place, up = self._editing_place(), self.key_for("chat.edit_last")
        self.notify(self.texts("chat.still_editing", up=up) if place is None else
                    self.texts("chat.still_editing_earlier", n=f"{place[0]:,}", up=up), timeout=5, kind="editing")

    # --- documents ------------------------------------------------------------------------
    @on(TaskFailed)
    def _task_failed(self, event: TaskFailed) -> None:
        self.notify(event.reason, title=self.texts("error.title"), severity="error", timeout=10)

    async def start_document_chat(self, path: Path, messages: list[dict[str, str]], made: int | None = None) -> int | None:
        """A new conversation for follow-up questions about a summarized document
        (``SummaryResult.conversation``: the whole document and its summary when it fit in one
        part, whose KV cells are still in the engine and saved with the conversation, so a
        question prefills only itself; else the summary). ``made``: the one made of this
        summary before, opened again while it is there (a second Ctrl+K made a second one,
        without the questions asked in the first). Returns the conversation's id."""
        if self.generating:
            self.notify(self.busy_text(), severity="warning")
            return None
        if made is not None and made in {c.id for c in self.store.list()}:
            await self._show_conversation(made, self._carried_question(made, path))
            return made
        def made_of_it() -> Conversation:
            conv = self.store.new(self.texts("summarize.conv_title", name=path.name),
                                  self.profile.ref if self.profile else "")
            for message in messages:
                self.store.add_message(conv.id, message["role"], message["content"], shown=message.get("shown", ""))
            return conv
        conv = self.store_write(made_of_it)
        if self.engine is not None:  # the summary's cells are this conversation's: deleted with it
            try:
                self.engine.claim_cells(self.cells_tag(conv.id), messages[:1])
            except (WorkstationError, OSError):
                pass  # the engine went away: the next question reads the document again
        await self._show_conversation(conv.id, self._carried_question(conv.id, path))
        return conv.id

    def _carried_question(self, going_to: int, path: Path) -> str:
        """What the message box holds, taken out of it for the conversation about ``path`` that
        Ctrl+K opens (it stayed behind as the open one's "not sent: What doe…", and the new
        one's box was empty); "" where nothing is typed or ``going_to`` has a draft of its own.
        That document attached goes too: the conversation about it holds it."""
        typed = self.chat_screen.input_text()
        if not typed.strip() or self._drafts.get(going_to, ("", None))[0].strip():
            return ""
        self.chat_screen.set_input("")
        if self.pending_document is not None and self.pending_document[0] == path:
            self._attach_document(None)
        return typed

    async def _show_conversation(self, conversation_id: int, typed: str = "") -> None:
        """Back to the chat, on ``conversation_id``, ready to type in (``typed`` in the box)."""
        while self.screen is not self.chat_screen:
            self.pop_screen()
        await self.open_conversation(conversation_id)
        if typed and self.conversation_id == conversation_id:
            self.chat_screen.set_input(typed)
        self.chat_screen.focus_prompt()

    # --- screens --------------------------------------------------------------------------
    def _show(self, screen_type: type[Screen[Any]]) -> None:
        if isinstance(self.screen, screen_type):
            self.pop_screen()
            return
        self._back_to_chat()
        screen = self._kept_screen(screen_type)
        if isinstance(screen, AppScreen):
            screen.translate_bindings()
        self.push_screen(screen)
        self.update_status()

    def _back_to_chat(self) -> None:
        """The F-key screens shown over the chat closed: the one opened next takes their place
        (F3 over F4 stacked the two, and Esc went back to F4, not to the chat)."""
        while self.screen is not self.chat_screen:
            self.pop_screen()

    def _kept_screen(self, screen_type: type[Screen[Any]]) -> Screen[Any]:
        """A new screen, or for a ``KEEP_ALIVE`` one the same screen each time (installed, so
        popping it keeps it and its work)."""
        if not getattr(screen_type, "KEEP_ALIVE", False):
            return screen_type()
        if screen_type not in self._kept:
            screen = screen_type()
            self.install_screen(screen, name=f"kept-{screen_type.__name__}")
            self._kept[screen_type] = screen
        return self._kept[screen_type]

    def summarize_screen(self) -> SummarizeScreen:
        screen = self._kept_screen(SummarizeScreen)
        assert isinstance(screen, SummarizeScreen)
        return screen

    def action_dashboard(self) -> None:
        self._show(DashboardScreen)

    def action_models(self) -> None:
        self._show(ModelsScreen)

    def action_summarize(self) -> None:
        self._show(SummarizeScreen)

    def action_summarize_folder(self) -> None:
        """Ctrl+P's "Summarize a folder": F6, its Open dialog asking for the folder."""
        if not isinstance(self.screen, SummarizeScreen):
            self._show(SummarizeScreen)
        self.summarize_screen().action_browse(folder=True)

    def action_quality(self) -> None:
        self._show(QuantizationScreen)

    def action_sizing(self) -> None:
        self._show(SizingScreen)

    def action_usage(self) -> None:
        self._show(UsageScreen)

    def _refresh_dashboard(self) -> None:
        for screen in self.screen_stack:
            if isinstance(screen, DashboardScreen):
                screen.refresh_view()

    # --- CPU, RAM, GPUs -------------------------------------------------------------------
    @work(thread=True, exclusive=True, exit_on_error=False, group="sample")
    def _sample_loop(self) -> None:
        """Every second for the app's life, in one thread (a worker per sample cost the screen
        three more messages a second, taken from the engine)."""
        # Textual's shutdown (a crash's too) waits for the workers before the app unmounts, so
        # the loop also ends when the app stops running, not only when on_unmount says so
        from workstation.core.thread_policy import LoadSampler

        try:  # each window from the previous second's reading; the engine (a child process) is the app's own
            load: LoadSampler | None = LoadSampler(ticker=False, children=True)
        except OSError:  # (no file left to read /proc with: the readings go on without other programs')
            load = None
        while not self._stop_sampling.is_set() and getattr(self, "_running", True):
            others = load.sample() if load is not None else None
            self.post_message(SystemSampled(*integrations.system_sample(),
                                            cpu_others=None if others is None else others.others))
            self._stop_sampling.wait(SAMPLE_EVERY_S)

    @on(SystemSampled)
    def _sampled(self, event: SystemSampled) -> None:
        seen_gpu = self.system is not None and bool(self.system.gpus)
        self.system = event
        if bool(event.gpus) != seen_gpu:  # the status bar says "GPU not used" only where there is one
            self.update_status()
        self.cpu_history.append(event.cpu)
        stack = self.screen_stack  # empty while the app shuts down; a reading may still come
        if stack and isinstance(stack[-1], DashboardScreen) and not self.generating:
            stack[-1].refresh_view()  # while a reply streams, the dashboard's own pace redraws it

    # --- a last net under every worker ----------------------------------------------------
    @on(Worker.StateChanged)
    def _worker_changed(self, event: Worker.StateChanged) -> None:
        if event.state == WorkerState.ERROR:
            error = event.worker.error
            reason = self.texts.error(error, foreign=True)
            self.notify(reason, title=self.texts("error.title"), severity="error", timeout=12)
            if event.worker.group == "turn" or event.worker.group == "send":
                self.generating = False
                self.reply_view = None
                self._partial, self._partial_at = None, 0.0  # (the next turn's reply is a row of its own)
                self._replacing, self._continued = [], ""
                self.update_status()


__all__ = ["WorkstationApp", "Binding"]
