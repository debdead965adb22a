"""Summarize a document: pick a file, watch progress per part, read the result, then ask
follow-up questions about it in the chat.

The app keeps one of these screens for its life: Esc goes back to the chat while a summary goes
on (the status line says so, and a notice says when it is ready); F6 comes back to it. Only
Ctrl+X (or the Stop button) stops a summary, keeping the parts already done."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.message import Message
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import Button, Header, Input, Label, Markdown, ProgressBar

from workstation.core.batch_queue import (
    OUTPUT_FOLDER,
    BatchEvent,
    BatchStopped,
    QueueRow,
    all_summaries_path,
    queue_rows,
    written_all_summaries,
)
from workstation.core.errors import BackendUnreachable, WorkstationError
from workstation.core.events import ServerWaiting
from workstation.core.kept_parts import document_version, forget_parts, kept_count
from workstation.core.kept_summary import (
    KEPT,
    KEPT_FOLDER,
    KeptSummary,
    content_hash,
    forget_summary_asked_in,
    kept_whole,
    profile_key,
)
from workstation.core.paths import typed_path
from workstation.core.phrases import say
from workstation.core.remote import DAY_LIMIT
from workstation.core.summarize import (
    CUT_BY_CONTEXT,
    CUT_BY_LONGEST,
    CUT_BY_REPLY,
    SummaryProgress,
    SummaryResult,
    duration,
    eta_text,
)
from workstation.tui import integrations
from workstation.tui.i18n import LANGUAGES, Texts
from workstation.tui.line_breaks import broken_at, held
from workstation.tui.messages import Progress, TaskFailed
from workstation.tui.screens.app_screen import AppScreen
from workstation.tui.screens.dialogs import ConfirmDialog
from workstation.tui.widgets.line_input import LineInput
from workstation.tui.widgets.message_view import ChatMarkdown, waiting_key
from workstation.tui.widgets.progress import LocalProgressBar
from workstation.tui.widgets.screen_footer import ScreenFooter

if TYPE_CHECKING:
    from workstation.core.summarize import SummaryResult


class SummaryReady(Progress):
    """A run's end: its result, and why it ended early where it failed (the server gone, a key's
    day over) after some parts."""

    def __init__(self, data: SummaryResult, error: WorkstationError | None = None) -> None:
        super().__init__(1, 1, data=data)
        self.error = error


class FolderEvent(Message):
    """What the queue summarizing a folder says as it goes (``BatchEvent``, from its threads)."""

    def __init__(self, event: BatchEvent) -> None:
        super().__init__()
        self.event = event


@dataclass
class FolderRun:
    """A folder summarized (``integrations.summarize_folder``): the queue as it ended, the file
    of every summary (None where it could not be written) and what stopped it early."""

    root: Path
    counts: dict[str, int]
    rows: list[QueueRow] = field(default_factory=list)
    every: Path | None = None
    text: str = ""
    stopped: bool = False  # Ctrl+X: the document in hand waits in the queue
    error: BatchStopped | None = None  # the engine could not go on (nothing failed for it)


class FolderDone(Message):
    def __init__(self, run: FolderRun) -> None:
        super().__init__()
        self.run = run


FOLDER_NAMED = 3  # the documents skipped or failed named, with why, on the state line after a folder


# F6's word on a summary that ends cut short, by what held it (``SummaryResult.cut_by``)
DONE_CUT_KEYS = {CUT_BY_REPLY: "summarize.done_cut", CUT_BY_CONTEXT: "summarize.done_cut_context",
                 CUT_BY_LONGEST: "summarize.done_cut_longest"}
NARROW_BAR = 100  # columns: narrower, the path has a line of its own above the buttons (beside them at
# 80 it had 30 columns: a document's name in a folder or two was cut off)


def waiting_text(waiting: ServerWaiting, t: Texts) -> str:
    """A desk PC's office server silent during a summary, in the chat's words (F6 showed nothing
    while the server ran the person's chat request first, or sent nothing)."""
    return t(waiting_key("summarize", waiting.own, waiting.held), s=f"{waiting.seconds:.0f}")


class RunningFooter(ScreenFooter):
    """While a summary runs, without Ctrl+R, Ctrl+O and Alt+R (they wait): at 80 columns they had
    pushed Help and Quit out of the footer. Where Alt+R (start over) shows, without Ctrl+O (the
    Choose… button beside the path does the same), for the same reason."""

    def left_out(self) -> frozenset[str]:
        # Ctrl+K (ask in chat) only with a summary to ask about: stopped before a part was done, the
        # footer offered it beside "nothing to show or to ask about" (the key says so, ``action_ask``)
        nothing = frozenset() if getattr(self.screen, "has_summary", True) else frozenset({"ask"})
        if getattr(self.screen, "running", False):
            return super().left_out() | nothing | {"run", "browse", "start_over"}
        if getattr(self.screen, "_parts_kept", False) or getattr(self.screen, "_retry", False):
            return super().left_out() | nothing | {"browse"}
        return super().left_out() | nothing


class SummarizeScreen(AppScreen, Screen[None]):
    OPENED_BY = "summarize"
    KEEP_ALIVE = True  # the app pushes the same screen each time: a summary outlives leaving it
    BINDINGS = [
        Binding("escape", "back", "back", id="summarize.back"),
        Binding("ctrl+r", "run", "summarize", id="summarize.run"),
        # every part again where a stopped run's are kept (summarize --start-over); in the footer
        # only then. The chat's Alt+R (ask again) is off here, so the key passes to this screen.
        Binding("alt+r", "start_over", "start over", id="summarize.start_over"),
        # priority: the path field keeps the focus and has Ctrl+X (cut); while nothing runs the
        # stop is not allowed (check_action), so the key is the field's again
        Binding("ctrl+x", "stop", "stop the summary", id="summarize.stop", priority=True),
        # priority, but never in the path box: there Ctrl+K is the box's own (delete to the end,
        # ``box_keeps``), as in every text box; it asks from the summary (it took a path being
        # cleared to the chat, and the next path typed went to the model as a message)
        Binding("ctrl+k", "ask", "ask in chat", id="summarize.ask", priority=True),
        Binding("ctrl+o", "browse", "choose a file", id="summarize.browse"),  # in the footer too: the main way to pick
        # beside the document, as batch names it (the only way was Ctrl+K, then F7 of the whole chat)
        Binding("ctrl+s", "save", "save beside the document", id="summarize.save", show=False),
        # the summary shown, kept for the next start with the document's text it was made of, and
        # a stopped run's parts of that document: a client's letter summarized stayed in the data
        # folder until another document was summarized, with no way to delete it
        Binding("f8", "forget", "delete this summary", id="summarize.forget", show=False),
        # the summary scrolled from the path box, which keeps the focus (they did nothing there: a
        # long summary seemed to stop at its screen's last line until Tab had reached it, four presses)
        Binding("pageup", "page(-1)", show=False), Binding("pagedown", "page(1)", show=False),
        Binding("ctrl+home", "page(-2)", show=False), Binding("ctrl+end", "page(2)", show=False),
        # the path box and the summary one Tab apart, either way (the buttons between them have their
        # keys): Ctrl+K asks from the summary, and Tab past the three buttons took four presses
        Binding("tab", "between(1)", show=False), Binding("shift+tab", "between(-1)", show=False),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.path: Path | None = None
        # the document as it was when the summary shown was made of it (``document_version``)
        self.version: str | None = None
        self.summary = ""
        self.result: SummaryResult | None = None
        self._cut: WorkstationError | None = None  # why the last run ended early, failing after some parts
        # why the last run failed before any part was done (a server stopping, a key's day over, a
        # document that cannot be read), and of which document: said where the state stays (it was
        # said only in a toast, then the earlier summary's "The last summary, of …" as if this run's)
        self._failed: tuple[WorkstationError | str, Path | None] | None = None
        self._offered: Path | None = None  # the chat's attached document last put in the box
        self.running = False
        self._cancel = threading.Event()
        self._said = ""  # the state line while a summary runs, without the time so far
        self._whole = ""  # a phrase of it kept on one line (the time left)
        self._started = 0.0
        self._clock: Timer | None = None
        self._kept_at: float | None = None  # the summary shown is the last run's, read back after a restart
        self._asked: int | None = None  # the conversation Ctrl+K made of this summary
        self._made_at = 0.0  # when this summary was made
        self._parts_kept = False  # a stopped run's parts are kept for the box's document (Alt+R shows)
        self._retry = False  # Ctrl+R on the folder shown tries its failed documents again (``_retries``)
        self._written: dict[str, str] = {}  # a summary read back: its Markdown in each UI language, as kept
        self._last: SummaryProgress | None = None  # how far the running summary has got (Ctrl+Q's question says it)
        # a folder summarized (every document in it, by batch's queue): shown until the next run
        self._folder: FolderRun | None = None
        self._folder_counts: tuple[int, int] | None = None  # a folder's run: its documents done, of how many
        self._document = ""  # the folder's document in hand, as the state line says it ("Document 3 of 8: …")
        # the folder's time left, as batch's Pace said it at the last document done: when, its seconds, its range's
        # top as a share of them (rough), the documents left; counted down on the state line (it said none)
        self._folder_left: tuple[float, float, float | None, int] | None = None
        self._work: tuple[float, float] | None = None  # the folder's work in tokens, done and all (``Pace.work``)
        self._share = 0.0  # the share of the folder's run the bar shows: it never goes back (an estimate revised)

    def compose(self) -> ComposeResult:
        t = self.wapp.texts
        yield Header()
        with Horizontal(id="summarize-bar"):
            yield LineInput(placeholder=t("summarize.path"), id="summarize-path")
            yield Button(t("summarize.browse"), id="summarize-browse")
            yield Button(t("summarize.run"), id="summarize-run", variant="primary")
            yield Button(t("summarize.ask"), id="summarize-ask", disabled=True)
        yield Label(t("summarize.idle"), id="summarize-state", markup=False)  # what to do, until a run says more
        yield LocalProgressBar(total=1, show_eta=False, id="summarize-progress")  # its ETA is in the line above (it showed --:--:-- beside it)
        with VerticalScroll(id="summarize-result"):
            yield ChatMarkdown("", id="summary")
        yield RunningFooter()

    async def on_mount(self) -> None:
        self.query_one("#summarize-progress").display = False
        box = self.query_one("#summarize-path", Input)
        box.focus()
        await self._read_back()
        self._offer_attached()
        self._note_parts_kept()

    def on_screen_resume(self) -> None:
        self._offer_attached()
        self._note_parts_kept()  # (another profile loaded meanwhile keeps none of them)
        if not self.running and self.result is not None:  # what Ctrl+K does follows the chat's attachment
            self.query_one("#summarize-state", Label).update(self._result_text())

    def _for_attached(self) -> bool:
        """The summary shown is of the document attached in the chat, as it is now, and that
        document is too long for a message (``attached_summary``): the chat's next message
        asks about this summary in its place, and Ctrl+K sends it there (``action_ask``)."""
        attached = self.wapp.pending_document
        found = self.wapp.attached_summary(attached) if attached is not None else None
        return found is not None and found[1]

    @on(Input.Changed, "#summarize-path")
    def _path_changed(self) -> None:
        self._note_parts_kept()
        self._forget_failure()

    def _forget_failure(self) -> None:
        """A run that failed said why on the state line until the next run: another document in the
        box (typed, picked, or the chat's attachment offered) still read "Nothing of School Letters was
        summarized: … is a folder" under it. The failure goes once the box names another path."""
        if self._failed is None or self.running:
            return
        raw = self.query_one("#summarize-path", Input).value.strip()
        if raw and typed_path(raw) == self._failed[1]:
            return  # (the path that failed, put back to be mended: why stays said)
        self._failed = None
        self.query_one("#summarize-state", Label).update(self._result_text())

    def _note_parts_kept(self) -> None:
        """Whether Alt+R (start over) is offered now: a stopped run's parts are kept for the box's
        document; and whether Ctrl+R tries a folder's failed documents again; the footer follows."""
        kept, retry = self._resumable(), self._retries()
        if (kept, retry) != (self._parts_kept, self._retry):
            self._parts_kept, self._retry = kept, retry
            self._label_run()
            self.translate_bindings()  # (Ctrl+R's words: it goes on from them)

    def _retries(self) -> bool:
        """Whether Ctrl+R now summarizes the folder shown again, its failed documents too (batch
        leaves them failed, and does not do again those done): the box names it, some failed."""
        run = self._folder
        if self.running or run is None or not run.counts.get("failed", 0):
            return False
        raw = self.query_one("#summarize-path", Input).value.strip()
        return bool(raw) and typed_path(raw) == run.root

    def _label_run(self) -> None:
        """The run button's words: stop while a summary runs, go on where a stopped run's parts
        are kept (it said "Summarize" beside "Ctrl+R goes on from them"), else summarize."""
        label = "summarize.stop" if self.running else "summarize.run_on" if self._parts_kept else \
            "summarize.run_retry" if self._retry else "summarize.run"
        self.query_one("#summarize-run", Button).label = self.wapp.texts(label)

    def words_of(self, binding_id: str) -> str:
        # Ctrl+R goes on from a stopped run's kept parts: the footer said "summarize" beside the
        # line "Ctrl+R goes on from them"
        if binding_id == "summarize.run" and self._retry:  # a folder shown with documents that failed
            return "summarize.retry_failed"
        return "summarize.go_on" if binding_id == "summarize.run" and self._parts_kept else binding_id

    def on_resize(self, event: events.Resize) -> None:
        self.query_one("#summarize-bar").set_class(event.size.width < NARROW_BAR, "narrow")

    def _offer_attached(self) -> None:
        """The document attached in the chat, in the box, once: the chat said "F6 summarizes it"
        of one too long for a message, and F6 opened with the box empty (or the last summary's)."""
        document = self.wapp.pending_document
        if document is None or self.running or document[0] == self._offered or not document[0].is_file() \
                or self._resumable():  # (a stopped run's document stays in the box, for Ctrl+R to go on with)
            return
        self._offered = document[0]
        self.query_one("#summarize-path", LineInput).put(str(document[0]))

    def made_of(self, document: Path) -> bool | None:
        """Whether the summary shown (whole, not running) is of ``document`` as the file is now
        (True), of an older version of it (False: changed since it was summarized), or of
        another document, or none (None). The chat asks about it in a long document's place
        only while True: it sent the summary of a file edited after F6 had summarized it."""
        if self.running or self.result is None or self.result.cancelled or not self.summary or self.path is None \
                or self.path.absolute() != document.absolute():
            return None
        if self.version is not None:
            return document_version(document) == self.version
        try:  # kept before its version was: the file not written since it was made
            return document.stat().st_mtime <= self._made_at
        except OSError:
            return False

    def _keep(self) -> None:
        """The finished summary, kept for the next start (it was gone when the app closed,
        minutes of work with it); one summary, the last."""
        if self.result is None or self.path is None:
            return
        # its Markdown in every language of the UI: the document it was made of is not kept, and
        # F9 after a restart left the headings, notes and figures in the language it was made in
        # (every part the app writes follows F9; the model's words stay as written)
        written = {lang: self.result.in_language(Texts(lang).in_app) for lang in LANGUAGES} \
            if self.result.document is not None else self._written
        data = {"path": str(self.path), "version": self.version, "at": self._made_at or time.time(), "asked": self._asked,
                "result": {**self.result.to_dict(), "follow_up": self.result.follow_up}, "written": written}
        profile = self.wapp.profile
        if self.result.document is not None and profile is not None and document_version(self.path) == self.version:
            # the document's content and the profile: a folder run holding it takes this summary (``kept_for``)
            data |= {"sha256": content_hash(self.path), "profile": profile_key(profile)}
        self.wapp.store_write(lambda: self.wapp.store.remember(KEPT, json.dumps(data, ensure_ascii=False)))

    async def _read_back(self) -> None:
        """The last summary kept, shown as it was left (Ctrl+K asks about it again)."""
        from workstation.core.summarize import SummaryResult

        kept = self.wapp.store.recalled(KEPT)
        if self.result is not None or self._folder is not None:
            return
        if await self._read_back_folder(kept):
            return
        if not kept:
            return
        try:
            data = json.loads(kept)
            result = SummaryResult.from_dict(data["result"])
            path, at = Path(data["path"]), float(data["at"])
            asked = int(data["asked"]) if data.get("asked") is not None else None
            version = str(data["version"]) if data.get("version") is not None else None  # (kept before it was: None)
            written = {str(lang): str(text) for lang, text in dict(data.get("written") or {}).items()}
        except (ValueError, KeyError, TypeError):  # an older or damaged record: nothing shown, nothing lost
            return
        self._written = written
        result.summary = written.get(self.wapp.texts.lang, result.summary)
        self.path, self.result, self.summary, self._kept_at = path, result, result.summary, at
        self._asked, self._made_at, self.version = asked, at, version
        self.query_one("#summarize-path", LineInput).put(str(path))
        self.query_one("#summarize-ask", Button).disabled = not result.summary
        self.refresh_bindings()  # (the footer's Ctrl+K: has_summary)
        self.query_one("#summarize-state", Label).update(self._result_text())
        await self.query_one("#summary", Markdown).update(result.summary)

    async def _read_back_folder(self, kept: str | None) -> bool:
        """The last folder's run shown again, where it is the last thing F6 did (after the summary
        ``kept``, if any): its counts and the file of every summary, read from the folder (the pane
        was empty after a restart, the files there). False where none is, or its folder is gone."""
        folder = self.wapp.store.recalled(KEPT_FOLDER)
        if not folder:
            return False
        try:
            data = json.loads(folder)
            root, at = Path(data["root"]), float(data["at"])
            if kept and float(json.loads(kept)["at"]) > at:  # a document summarized since
                return False
        except (ValueError, KeyError, TypeError):
            return False
        run = await asyncio.to_thread(self._folder_as_left, root)
        if run is None:
            return False
        self._folder, self.path, self.summary, self._kept_at = run, run.every or run.root, run.text, at
        self.query_one("#summarize-path", LineInput).put(str(root))
        self.query_one("#summarize-ask", Button).disabled = not run.text
        self._note_parts_kept()
        self.refresh_bindings()
        self.query_one("#summarize-state", Label).update(self._result_text())
        await self.query_one("#summary", Markdown).update(run.text)
        return True

    def _folder_as_left(self, root: Path) -> FolderRun | None:
        """A folder's run as its queue and its file of every summary are now (None: not there)."""
        outdir = root / OUTPUT_FOLDER
        try:
            rows = queue_rows(outdir)
            if not rows:
                return None
            counts: dict[str, int] = {}
            for row in rows:
                counts[row.status] = counts.get(row.status, 0) + 1
            run = FolderRun(root, counts, rows=rows)
            every = written_all_summaries(outdir, self.wapp.texts.get)
            if every is not None:
                run.every, run.text = every, every.read_text(encoding="utf-8")
        except (OSError, WorkstationError):
            return None
        return run

    def _keep_folder(self, run: FolderRun) -> None:
        """The folder just summarized, kept for the next start (``_read_back_folder``)."""
        data = {"root": str(run.root), "at": time.time()}
        self.wapp.store_write(lambda: self.wapp.store.remember(KEPT_FOLDER, json.dumps(data, ensure_ascii=False)))

    async def forget_if_asked_in(self, conversation_id: int) -> None:
        """The conversation Ctrl+K made of the last summary was deleted (F8): the summary and
        the document's text kept with it go too (they stayed, shown here and in the file)."""
        forget_summary_asked_in(self.wapp.store, conversation_id)
        if self._asked == conversation_id and not self.running:
            await self._clear_shown()

    def action_forget(self) -> None:
        """F8: the summary shown deleted, once asked: the one kept for the next start (with the
        document's text it was made of) and the parts a stopped run kept of that document. The
        document itself, a copy saved with Ctrl+S and a conversation Ctrl+K made stay."""
        if self.running or self.path is None or self.result is None:
            return
        path = self.path

        async def answered(yes: bool | None) -> None:
            if not yes or self.running or self.path != path:
                return
            self.wapp.store_write(lambda: self.wapp.store.forget_value(KEPT))
            forget_parts(path)
            await self._clear_shown()
            self.notify(self.wapp.texts("summarize.forgotten", name=path.name))

        t = self.wapp.texts
        self.app.push_screen(ConfirmDialog(t("summarize.forget_q", name=path.name), t("dialog.delete"),
                                           t("dialog.cancel"), t.yes_no_keys()), answered)

    async def _clear_shown(self) -> None:
        self.path, self.summary, self.result, self._kept_at, self._asked = None, "", None, None, None
        self._written, self.version, self._failed = {}, None, None
        if self.is_mounted:
            self.query_one("#summarize-path", Input).value = ""
            self.query_one("#summarize-ask", Button).disabled = True
            self.refresh_bindings()
            self.query_one("#summarize-state", Label).update(self.wapp.texts("summarize.idle"))
            await self.query_one("#summary", Markdown).update("")

    def relabel(self) -> None:
        """F9: the app keeps this screen, so it takes the new language itself."""
        t = self.wapp.texts
        self.query_one("#summarize-path", Input).placeholder = t("summarize.path")
        self._label_run()
        self.query_one("#summarize-ask", Button).label = t("summarize.ask")
        self.query_one("#summarize-browse", Button).label = t("summarize.browse")
        if not self.running:  # what to do, or how the last summary ended (its text is the model's)
            self.query_one("#summarize-state", Label).update(self._result_text())
        if not self.running and self.result is not None and self.summary:  # its headings and figures too
            # (they stayed in the old one); one read back after a restart: as kept in each language
            self.summary = self.result.summary = (self.result.in_language(t.in_app) if self.result.document is not None
                                                  else self._written.get(t.lang, self.summary))
            self.query_one("#summary", Markdown).update(self.summary)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "stop":
            return self.running  # in the footer only while a summary runs
        if action == "forget":
            return not self.running and self.result is not None
        if action == "start_over":
            return self._parts_kept and not self.running  # only where there are parts to do again
        return True  # Ctrl+R and Ctrl+O while one runs: out of the footer (RunningFooter), they say why they wait

    def action_page(self, way: int) -> None:
        """The summary a page up (``way`` -1) or down (1), or to its start (-2) or end (2)."""
        shown = self.query_one("#summarize-result", VerticalScroll)
        {-2: shown.scroll_home, -1: shown.scroll_page_up, 1: shown.scroll_page_down, 2: shown.scroll_end}[way](
            animate=False)

    def action_between(self, way: int) -> None:
        """Tab (``way`` 1) or Shift+Tab (-1): from the path box to the summary and back; from a
        button (clicked), on as Tab goes."""
        box, shown = self.query_one("#summarize-path", Input), self.query_one("#summarize-result")
        if self.focused is box or self.focused is shown:
            (shown if self.focused is box else box).focus()
        elif way > 0:
            self.focus_next()
        else:
            self.focus_previous()

    def _to_summary(self, ran: Path) -> None:
        """A summary done: the focus on it, where Ctrl+K asks about it as the state line says (the
        path box keeps Ctrl+K as its delete key, ``box_keeps``, and kept the focus: the key did nothing).
        Not while the box names another path than ``ran``: the next one is being typed there."""
        box = self.query_one("#summarize-path", Input)
        raw = box.value.strip()
        if self.focused not in (None, box) or (raw and typed_path(raw) != ran):
            return
        self.query_one("#summarize-result").focus()

    def _set_running(self, running: bool) -> None:
        self.running = running
        if self._clock is not None:
            self._clock.stop()
            self._clock = None
        if running:  # the time so far, each second: a part takes a while and nothing else moves
            self._started, self._last = time.monotonic(), None
            self._clock = self.set_interval(1.0, self._tick)
        self._parts_kept = self._resumable()  # (none while it runs; after, those it kept)
        self._retry = self._retries()
        self.wapp.generating = running  # the engine is busy: the chat waits
        self.wapp.summarizing = self.path.name if running and self.path else None
        self._label_run()
        self.query_one("#summarize-run", Button).variant = "error" if running else "primary"
        self.translate_bindings()  # (Ctrl+R's words follow the parts kept)
        self.wapp.update_status()

    @on(Button.Pressed, "#summarize-browse")
    def _browse_pressed(self) -> None:
        self.action_browse()

    def action_browse(self, folder: bool = False) -> None:
        """Ctrl+O or the button: the Open dialog; the file chosen, or the folder (its button), is
        summarized. ``folder``: the dialog asks for a folder (Ctrl+P's "Summarize a folder")."""
        if self.running or self.wapp.generating:  # said before a file is looked for, not after
            self.notify(self._busy_text(), severity="warning")
            return

        async def chosen(path: Path) -> None:
            self.query_one("#summarize-path", LineInput).put(str(path))
            await self.action_run()

        title = "summarize.browse_folder_title" if folder else "summarize.browse_title"
        self.wapp.pick_file(self.wapp.texts(title), "document", chosen, folders=True)

    @on(Input.Submitted, "#summarize-path")
    async def _path_submitted(self) -> None:
        await self.action_run()

    @on(Button.Pressed, "#summarize-run")
    async def _run_pressed(self) -> None:
        if self.running:
            self.action_stop()
        else:
            await self.action_run()

    @on(Button.Pressed, "#summarize-ask")
    async def _ask_pressed(self) -> None:
        await self.action_ask()

    async def action_start_over(self) -> None:
        """Alt+R: the document in the box summarized from its first part, the parts a stopped
        run kept forgotten (``summarize --start-over``); asked first, naming how many go (one
        key dropped minutes of finished parts without a word)."""
        raw = self.query_one("#summarize-path", Input).value.strip()
        profile = self.wapp.profile
        kept = kept_count(typed_path(raw), profile) if raw and profile is not None and not self.running else 0
        if not kept:  # (nothing to lose: as Ctrl+R, which says why it waits where it must)
            await self.action_run(start_over=True)
            return
        t = self.wapp.texts

        async def answered(yes: bool | None) -> None:
            if yes:
                await self.action_run(start_over=True)

        question = t("summarize.start_over_q_one" if kept == 1 else "summarize.start_over_q",
                     name=typed_path(raw).name, n=f"{kept:,}")
        self.app.push_screen(ConfirmDialog(question, t("dialog.start_over"), t("dialog.cancel"), t.yes_no_keys()),
                             answered)

    async def action_run(self, start_over: bool = False) -> None:
        t = self.wapp.texts
        raw = self.query_one("#summarize-path", Input).value.strip()
        if self.running or self.wapp.generating:  # this summary, or a reply in the chat: busy, not missing
            self.notify(self._busy_text(), severity="warning")
            return
        if not raw:
            return
        if self.wapp.engine is None:
            if self.wapp.server_to_try_again():
                self.wapp.summarize_when_connected(start_over)
            else:
                self.notify(self.wapp.not_ready_text(), severity="warning")
            return
        retry = self._retries()  # (Ctrl+R on the folder shown: its failed documents again)
        self.path = typed_path(raw)
        self._folder = None
        if self.path.is_dir():  # every document in it, as `batch` does (it said "run: …run.sh batch …")
            await self._run_folder(self.path, retry)
            return
        self.version = document_version(self.path)  # (read from here on: an edit after is a newer version)
        if self.path.is_file():  # typed, not picked: the folder counts as one opened from (F7 offers it)
            self.wapp.remember_folder(self.path)
        self.running = True  # before the first await: Enter, the button and Ctrl+R start one run
        self._cancel.clear()
        self.summary, self.result, self._kept_at, self._asked = "", None, None, None
        self._failed = None
        self._folder_counts = None
        self.query_one("#summarize-ask", Button).disabled = True
        await self.query_one("#summary", Markdown).update("")  # not the last document's under the new one
        self._said = t("summarize.reading", name=self.path.name)
        bar = self.query_one("#summarize-progress", ProgressBar)
        bar.display = True
        bar.update(total=None, progress=0)
        self._set_running(True)
        self._say(self._said)
        if not start_over and self.wapp.profile is not None and kept_count(self.path, self.wapp.profile, other=True):
            # (it began at part 1 without a word, Ctrl+R having gone on before)
            self.notify(t("summarize.parts_not_used", name=self.path.name))
        self._summarize(self.path, start_over)

    async def _run_folder(self, root: Path, retry_failed: bool = False) -> None:
        """Every document in the folder ``root`` summarized by batch's queue with the app's model
        (``integrations.summarize_folder``): one after the other, each summary in ROOT/summaries and
        all of them in one file, shown here at the end. Ctrl+X stops it as Ctrl+C stops `batch`: the
        document in hand waits, and the folder again goes on where it stopped."""
        self.running = True  # before the first await: Enter, the button and Ctrl+R start one run
        self._cancel.clear()
        self.summary, self.result, self._kept_at, self._asked, self.version = "", None, None, None, None
        self._failed, self._document, self._folder_left, self._work, self._share = None, "", None, None, 0.0
        self._folder_counts = (0, 0)  # (its documents finished, of how many: Ctrl+Q's question says them)
        self.query_one("#summarize-ask", Button).disabled = True
        await self.query_one("#summary", Markdown).update("")
        bar = self.query_one("#summarize-progress", ProgressBar)
        bar.display = True
        bar.update(total=None, progress=0)
        self._set_running(True)
        self._say(self.wapp.texts("summarize.folder_reading", name=root.name))
        # F6's last summary, read here (the store is this thread's): a document of the folder it is of is not done again
        self._summarize_folder(root, retry_failed, kept_whole(self.wapp.store.recalled(KEPT)))

    @work(thread=True, exclusive=True, exit_on_error=False, group="summarize")
    def _summarize_folder(self, root: Path, retry_failed: bool = False, kept: KeptSummary | None = None) -> None:
        app, t = self.wapp, self.wapp.texts
        error: BatchStopped | None = None
        try:
            counts = integrations.summarize_folder(root, app.profile, app.engine,  # type: ignore[arg-type]
                                                   lambda event: self.post_message(FolderEvent(event)),
                                                   self._cancel, t, retry_failed=retry_failed, kept=kept)
        except BatchStopped as err:  # the model or the office server, not a document: nothing failed
            counts, error = err.counts, err
        except WorkstationError as err:  # (another run holds the folder; the folder cannot be written in)
            self.post_message(TaskFailed(t.error(err), err))
            return
        except Exception as err:  # noqa: BLE001 - one sentence, the screen stays usable
            self.post_message(TaskFailed(t("error.summary_failed", what=t.error(err, foreign=True))))
            return
        outdir = root / OUTPUT_FOLDER
        run = FolderRun(root, counts, stopped=self._cancel.is_set(), error=error)
        every = all_summaries_path(outdir, t.get)
        try:
            run.rows = queue_rows(outdir)
            if every.is_file():
                run.every, run.text = every, every.read_text(encoding="utf-8")
        except (OSError, WorkstationError):  # (the folder gone meanwhile: the counts are said all the same)
            pass
        self.post_message(FolderDone(run))

    @on(FolderEvent)
    def _folder_event(self, message: FolderEvent) -> None:
        """The folder's queue as it goes: the document in hand, which of how many, and its part,
        on the state line ("Document 3 of 8: letter3 trip.docx, part 1 of 2"), with the time left of
        the whole folder as `batch` says it (``time_left``: "(16 documents left, about 2–5 min at this
        run's pace)"); the bar by the work done of the whole (tokens, ``Pace.work``) once a document
        is done, by documents before."""
        from workstation.commands.batch import time_left

        t, event = self.wapp.texts, message.event
        bar = self.query_one("#summarize-progress", ProgressBar)
        counts = event.counts or {}
        finished = counts.get("done", 0) + counts.get("failed", 0) + counts.get("skipped", 0)
        total = sum(counts.values())
        if total:
            self._folder_counts = (counts.get("done", 0), total)
        if event.kind == "file-done":
            left = counts.get("pending", 0) + counts.get("running", 0)
            self._folder_left = (time.monotonic(), event.eta_s, event.eta_high, left) \
                if event.eta_s is not None and time_left(t, event.eta_s, left, event.eta_high) else None
            self._work = event.work or self._work
            self._tick()
        shown: tuple[float, float] | None = None  # (done, of all)
        if self._work is not None:  # (by documents, a report of 90 s was 5% of the bar and 19 notes of 20 s the rest)
            shown = self._work[0], max(1.0, self._work[1])
        elif event.kind in ("start", "file-start", "file-done", "file-failed", "file-skipped", "file-pending"):
            shown = finished, max(1, total)
        if shown is not None:  # never back: by documents a skipped one counts, by work it does not
            done = max(shown[0], self._share * shown[1])
            self._share = done / shown[1]
            bar.update(total=shown[1], progress=done)
        if event.kind == "start":
            if finished and counts.get("pending", 0):  # a run before stopped: said, as `batch` says its counts
                said = t("summarize.folder_going_on", name=self.path.name if self.path else "", done=finished,
                         total=total)
                self.notify(said, timeout=10)
                self._say(said)
        elif event.kind == "file-start" and event.path is not None:
            self._document = t("summarize.folder_document", at=finished + counts.get("running", 0), total=total,
                               name=event.path)
            if not self._cancel.is_set():
                self._say(self._document)
        elif event.kind == "progress" and isinstance(event.progress, SummaryProgress) and self._document \
                and not self._cancel.is_set():
            p = event.progress
            self._last = p
            if p.stage == "map" and p.chunks_total:
                part = p.part or min(p.chunks_total, p.chunks_done + 1)
                self._say(t("summarize.folder_part", document=self._document, part=part, total=p.chunks_total))
            elif p.stage == "kept":
                self._say(t("summarize.folder_kept", document=self._document, done=p.chunks_done,
                            total=p.chunks_total))
            elif p.stage not in ("chunking", "done", "cancelled") and p.chunks_total > 1:
                self._say(t("summarize.folder_combining", document=self._document, total=p.chunks_total))
        self.wapp.update_status()

    @on(FolderDone)
    async def _folder_done(self, message: FolderDone) -> None:
        """The folder's run ended: how many were summarized, skipped and failed (and why), where
        the file of them all is; that file shown below, for Ctrl+K to ask about."""
        run = self._folder = message.run
        self._kept_at = None
        self._keep_folder(run)
        self._set_running(False)
        self.query_one("#summarize-progress").display = False
        self.path, self.summary, self._document = run.every or run.root, run.text, ""
        self.query_one("#summarize-state", Label).update(self._result_text())
        self.query_one("#summarize-ask", Button).disabled = not run.text
        self.refresh_bindings()
        if run.text and not run.stopped and run.error is None:  # (stopped: "press Enter on the folder again")
            self._to_summary(run.root)
        if self.app.screen is not self:
            self.app.notify(self.wapp.texts("summarize.folder_ready", name=run.root.name), timeout=10)
        await self.query_one("#summary", Markdown).update(run.text)

    def _folder_text(self) -> str:
        """The state line after a folder's run: its counts, the documents skipped and failed with
        why, what stopped it, and where the file of every summary is."""
        t, run = self.wapp.texts, self._folder
        assert run is not None

        def named(status: str) -> str:
            rows = [r for r in run.rows if r.status == status]
            if not rows:
                return ""
            whys = [" ".join((say(r.said, t.get) if r.said else (r.reason or "")).split()).rstrip(".")
                    for r in rows[:FOLDER_NAMED]]
            whys = [why if r.path in why else f"{r.path}: {why}" for r, why in zip(rows, whys, strict=False)]
            more = t("summarize.folder_more", n=len(rows) - FOLDER_NAMED) if len(rows) > FOLDER_NAMED else ""
            return " (" + " · ".join(whys) + more + ")"  # (a reason's own "; " told none apart)

        counts = run.counts
        if not any(counts.values()):
            return t("summarize.folder_none", name=run.root.name)
        said = t("summarize.folder_counts", name=run.root.name, done=counts.get("done", 0),
                 skipped=counts.get("skipped", 0), skipped_why=named("skipped"), failed=counts.get("failed", 0),
                 failed_why=named("failed"))
        for row in [r for r in run.rows if r.taken is not None and r.status == "done"][:FOLDER_NAMED]:
            # (a document F6 had summarized: its summary taken, not made again)
            said += " " + t("summarize.folder_taken", path=row.path, name=row.taken[0], when=t.moment(row.taken[1]))
        waiting = counts.get("pending", 0) + counts.get("running", 0)
        if run.error is not None:
            reason = (t.error(run.error.__cause__) if isinstance(run.error.__cause__, WorkstationError)
                      else run.error.reason).rstrip()
            said += " " + t("summarize.folder_cut", reason=reason if reason.endswith((".", "!", "?")) else reason + ".",
                            n=waiting)
        elif waiting:
            said += " " + t("summarize.folder_stopped", n=waiting)
        if counts.get("failed", 0) and not waiting:  # (the key that goes on with a stopped one, else)
            said += " " + t("summarize.folder_retry", run=self.wapp.key_for("summarize.run"))
        if run.every is not None and run.text:
            said += " " + t("summarize.folder_every", path=str(run.every), ask=self.wapp.key_for("summarize.ask"))
        return said

    def _resumable(self) -> bool:
        """Whether Ctrl+R now goes on from a stopped run's parts: kept for the box's document as
        it is now (unchanged since) and this profile, by this run or one before a restart."""
        profile = self.wapp.profile
        if self.running or profile is None:
            return False
        raw = self.query_one("#summarize-path", Input).value.strip()
        return bool(raw) and kept_count(typed_path(raw), profile) > 0

    def _busy_text(self) -> str:
        """Why Ctrl+R and Ctrl+O wait: this screen's summary (its stop key), or the chat's reply."""
        if self.running and self.path is not None:
            return self.wapp.texts("summarize.busy", name=self.path.name, stop=self.wapp.key_for("summarize.stop"))
        return self.wapp.busy_text()

    @property
    def state_said(self) -> str:
        """How far the running summary has got, as its state line says it (the dashboard's too)."""
        return self._said

    def quit_question(self) -> str:
        """Ctrl+Q's question while a summary runs, true to how far it has got: it said "its parts
        done so far are kept" before any was done."""
        t, p = self.wapp.texts, self._last
        if self._folder_counts is not None:  # a folder's: its documents done are kept, whatever the one in hand
            done, total = self._folder_counts  # (it said "no part of it is done yet" with letter 1 done: review29)
            return t("summarize.quit_q_folder", done=done, total=total, name=self.path.name if self.path else "")
        if p is None or not p.chunks_done:
            return t("summarize.quit_q_none")
        if p.chunks_done == p.chunks_total > 1:
            return t("summarize.quit_q_combining", total=p.chunks_total)
        return t("summarize.quit_q")

    def _say(self, text: str, whole: str = "") -> None:
        """The state line while a summary runs, with the time it has taken so far; ``whole``, a
        phrase of ``text`` (the time left), is kept on one line as that time is."""
        self._said, self._whole = text, whole
        self._tick()

    def _tick(self) -> None:
        if not self.running:
            return
        t = self.wapp.texts
        state = self.query_one("#summarize-state", Label)
        said = self._said.replace(self._whole, held(self._whole)) if self._whole else self._said
        if self._folder_left is not None and self._document and not self._cancel.is_set():
            from workstation.commands.batch import time_left

            at, seconds, high, left = self._folder_left
            said += time_left(t, max(0.0, seconds - (time.monotonic() - at)), left, high)  # (counted down)
        so_far = held(t("summarize.so_far", time=duration(time.monotonic() - self._started, t.get)))
        state.update(broken_at(f"{said} · {so_far}", state.content_size.width))

    def action_stop(self) -> None:
        """Stop the running summary; the parts already done are kept and shown."""
        if not self.running or self._cancel.is_set():
            return
        self._cancel.set()
        engine = self.wapp.engine
        if engine is not None:
            engine.cancel()  # at once, even in the middle of reading a part
        self._say(self.wapp.texts("summarize.stopping"))

    @work(thread=True, exclusive=True, exit_on_error=False, group="summarize")
    def _summarize(self, path: Path, start_over: bool = False) -> None:
        app = self.wapp
        try:
            result = integrations.summarize(
                path, app.profile, app.engine,  # type: ignore[arg-type]
                lambda p: self.post_message(Progress(p.done + p.working, p.total, data=p)), self._cancel, app.texts,
                start_over=start_over,
            )
        except WorkstationError as err:
            if isinstance(err.partial, SummaryResult):  # the parts done before it (a server gone, a key's day over)
                self.post_message(SummaryReady(err.partial, err))
                self.app.call_from_thread(self.notify, self.wapp.texts.error(err), severity="error", timeout=10)
                return
            self.post_message(TaskFailed(self.wapp.texts.error(err), err))
            return
        except Exception as err:  # noqa: BLE001 - one sentence, the screen stays usable
            self.post_message(TaskFailed(self.wapp.texts("error.summary_failed", what=self.wapp.texts.error(err, foreign=True))))
            return
        self.post_message(SummaryReady(result))

    def _result_text(self) -> str:
        """The state line once a summary has ended, in the UI's language (F9 says it again)."""
        t, result = self.wapp.texts, self.result
        if self._failed is not None:
            return self._failed_text()
        if self._folder is not None:
            return self._folder_text()
        if result is None:
            return t("summarize.idle")
        done = sum(1 for c in result.chunks if c.summary is not None)
        if result.cancelled and not done:
            return t("summarize.stopped_none")
        # Ctrl+R goes on from the parts done only for the same file, unchanged, and profile: said
        # where it will, never where it would begin at part 1
        go_on = " " + t("summarize.go_on") if self._resumable() else ""
        if result.cancelled and self._cut is not None:  # said where it stays (it said "Stopped", as if by Ctrl+X)
            reason = t.error(self._cut).rstrip()  # (in the language of now: F9 draws it again)
            if not reason.endswith((".", "!", "?")):
                reason += "."
            return t("summarize.cut", done=done, total=len(result.chunks), reason=reason) + go_on
        if result.cancelled and done == len(result.chunks) > 1:  # stopped while they were put together (it
            # said "Stopped after 2 of 2 parts", as if parts were left)
            return t("summarize.stopped_combining", total=len(result.chunks)) + (
                " " + t("summarize.go_on_combining") if go_on else "")
        if result.cancelled:
            return t("summarize.stopped", done=done, total=len(result.chunks)) + go_on
        # (a model too small to trust with facts: the summary says so under its title)
        # its last step stopped at the reply length limit: not "Done." of a summary ending mid-sentence
        # (its advice by what held it: the profile's longest reply, the context, or a summary's longest)
        done_said = t(DONE_CUT_KEYS.get(result.cut_by, "summarize.done_cut") if result.cut_short else "summarize.done_word")
        if self._for_attached() and self.path is not None:  # what Ctrl+K does there: said (action_ask)
            # (a box with nothing typed: nothing is sent, the next message asks it; "sends your message" was not so)
            typed = bool(self.wapp.chat_screen.input_text().strip())
            return t("summarize.done_attached" if typed else "summarize.done_attached_empty", name=self.path.name,
                     done=done_said)
        return t("summarize.done", done=done_said) if self._kept_at is None else t(
            "summarize.kept", name=self.path.name if self.path else Path(result.source).name,
            when=t.moment(self._kept_at))

    def _failed_text(self) -> str:
        """A run that failed before any part was done: why, in the language of now, and the
        summary still shown said to be the earlier one (it read as this run's result)."""
        assert self._failed is not None
        t, (err, path) = self.wapp.texts, self._failed
        reason = (t.error(err) if isinstance(err, WorkstationError) else err).rstrip()
        if not reason.endswith((".", "!", "?")):
            reason += "."
        first = err.said[0] if isinstance(err, WorkstationError) and err.said else ("", {})
        # a folder: its own sentence, as `summarize` says it ("Nothing of School Letters was summarized:
        # '/…/School Letters' is a folder" read awkwardly)
        # (another run holding the folder: "Nothing of School Letters was summarized" before it said the same)
        # (a path that is not there: "Nothing of Kasım Faturaları was summarized" called a folder a document)
        own = first[0] in ("doc.folder", "batch.busy", "doc.missing")
        said = reason if own else t("summarize.failed", name=path.name if path else "?", reason=reason)
        if first[0] in DAY_LIMIT:  # the key's day ran out: the server never went away
            said += " " + t("summarize.failed_day", resets=first[1].get("resets", "00:00"))
        elif first[0] == "remote.over_whole_day_in_summary":  # a step larger than the whole day: no reset helps
            said += " " + t("summarize.failed_raised")
        elif isinstance(err, BackendUnreachable) or first[0] == "remote.cut_by_stopping_in_summary":
            said += " " + t("summarize.failed_later")
        if self.result is not None and self._kept_at is not None and self.path is not None:
            said += " " + t("summarize.earlier_below", name=self.path.name, when=t.moment(self._kept_at))
        return said

    @on(Progress)
    async def _progress(self, event: Progress) -> None:
        t = self.wapp.texts
        bar = self.query_one("#summarize-progress", ProgressBar)
        state = self.query_one("#summarize-state", Label)
        if isinstance(event, SummaryReady):
            self._set_running(False)
            self.result, self._cut = event.data, event.error
            if event.error is not None:  # the server's stop (the key's day run out) said on the status line too
                self.wapp.summary_stopped(event.error)
            bar.display = False
            done = sum(1 for c in event.data.chunks if c.summary is not None)
            # stopped before a part was done: nothing to show or to ask about (the Markdown
            # said "the points below cover nothing", and Ctrl+K made a conversation of it)
            self.summary = event.data.summary if done else ""
            state.update(self._result_text())
            self.query_one("#summarize-ask", Button).disabled = done == 0
            self.refresh_bindings()  # (nor the footer's Ctrl+K: has_summary)
            if done:
                self._made_at = time.time()
                self._keep()
                if self.path is not None and not event.data.cancelled:  # (stopped: Enter or Ctrl+R goes on, from the box)
                    self._to_summary(self.path)
            if self.wapp.pending_document is not None:  # its line says whether the summary goes in its place
                self.wapp._attach_document(self.wapp.pending_document)
            if self.app.screen is not self and self.path is not None:
                self.app.notify(t("summarize.ready", name=self.path.name), timeout=10)
            # last: behind another screen the Markdown's blocks mount only once it shows again
            await self.query_one("#summary", Markdown).update(self.summary)
            if not done:  # the summary made before is shown again (it was gone until a restart)
                await self._bring_back()
                self.notify(t("summarize.stopped_none_kept" if self.result is not None else "summarize.stopped_none"))
            return
        bar.update(total=event.total or None, progress=event.done)
        if self._cancel.is_set():
            return  # "stopping…" stays until it has
        p = event.data
        if isinstance(p, SummaryProgress):
            self._last = p
        if isinstance(p, SummaryProgress) and p.stage == "map":
            eta = eta_text(p.eta_s, t("summarize.eta"), t("summarize.eta_soon"), p.eta_high_s, p.eta_revised, t.get)
            # (the bar counts the step that puts the parts' summaries together: the words say it too)
            said = t("summarize.parts" if p.chunks_total == 1 else "summarize.parts_then",
                     done=p.chunks_done, total=p.chunks_total, eta=eta)
            if p.waiting is not None:  # a desk PC's office server silent: said as the chat says it
                said += " · " + waiting_text(p.waiting, t)
            elif p.part and p.part_read < 1.0:  # the part under way: a long one takes minutes on a CPU
                said += " · " + t("summarize.part_reading", part=p.part, percent=int(p.part_read * 100))
            elif p.part:
                said += " · " + (t("summarize.part_writing_one", part=p.part) if p.part_written == 1 else
                                 t("summarize.part_writing", part=p.part, tokens=f"{p.part_written:,}"))
            self._say(said, eta)
        elif isinstance(p, SummaryProgress) and p.stage == "kept":  # (it said "combining summaries")
            self._say(t("summarize.parts_kept", done=p.chunks_done, total=p.chunks_total, rest=p.chunks_total - p.chunks_done))
        elif isinstance(p, SummaryProgress) and p.stage not in ("chunking", "done", "cancelled"):
            eta = eta_text(p.eta_s, t("summarize.eta"), t("summarize.eta_soon"), p.eta_high_s, p.eta_revised, t.get)
            said = t("summarize.combining", total=p.chunks_total, eta=eta)
            self._say(said + (" · " + waiting_text(p.waiting, t) if p.waiting is not None else ""), eta)
        self.wapp.update_status()

    @on(TaskFailed)
    async def _failed(self, event: TaskFailed) -> None:
        event.stop()
        self._set_running(False)
        self.query_one("#summarize-progress").display = False
        self._failed = (event.error if isinstance(event.error, WorkstationError) else event.reason, self.path)
        if isinstance(event.error, WorkstationError):  # the server's refusal (the key's day used up), as a chat's
            self.wapp.summary_stopped(event.error)
        self.query_one("#summarize-state", Label).update(self._result_text())  # what went wrong stays said
        self.notify(event.reason, severity="error", timeout=10)
        await self._bring_back()

    async def _bring_back(self) -> None:
        """A run that summarized nothing (stopped, or a document that cannot be read) leaves the
        last summary on the screen, as it was before the run (Ctrl+K asks about it)."""
        self.result = None
        path, box = self.path, self.query_one("#summarize-path", LineInput)
        typed = box.value
        await self._read_back()
        box.put(typed)  # the path typed stays in the box, to be mended
        if self.result is None:  # none kept
            self.path = path

    @property
    def has_summary(self) -> bool:
        """A finished summary is shown, for Ctrl+K to ask about (the footer offers the key only then)."""
        return bool(self.summary) and self.path is not None and (self.result is not None or self._folder is not None)

    async def action_ask(self) -> None:
        if self._folder is not None and self.has_summary and not self.running and self.path is not None:
            await self._ask_about_folder(self._folder, self.path)
            return
        if not self.has_summary or self.path is None or self.result is None:  # (it did nothing, said nothing)
            self.notify(self.wapp.texts("summarize.nothing_to_ask"), severity="warning")
            return
        attached = self.wapp.pending_document
        if attached is not None and self.made_of(attached[0]) is not None and self.wapp.attachment_measuring(attached):
            # whether this summary goes in its place is not known yet: said (it opened a new
            # conversation, "About NAME", where once measured it went back to the one waiting)
            self.notify(self.wapp.texts("summarize.ask_measuring", name=attached[0].name,
                                        ask=self.wapp.key_for("summarize.ask")), severity="warning")
            return
        if self._for_attached():
            # the chat's attached document, too long for a message: back to the conversation the
            # question was typed in, sent there with this summary in the document's place, as the
            # refused message and the line under the box promised (it opened a new conversation,
            # "About NAME", the question carried into its box, to be sent again)
            self.wapp._back_to_chat()
            self.wapp.chat_screen.focus_prompt()
            if self.wapp.chat_screen.input_text().strip():
                self.wapp.action_send()
            self.wapp.notify(self.wapp.texts("summarize.asked_from_summary", name=self.path.name), timeout=10)
            return
        t = self.wapp.texts
        intro = t(self.result.intro_key, name=self.path.name)
        lang = self.result.asked_in(t.lang)  # (the model asked in the document's language: it answers in it)
        sent = intro if lang == t.lang else Texts(lang)(self.result.intro_key, name=self.path.name)
        asked = await self.wapp.start_document_chat(self.path, self.result.conversation(intro, sent), made=self._asked)
        if asked is not None and not self.result.follow_up:  # said where it is read, not only in the question
            self.wapp.notify(self.wapp.texts("summarize.asked_from_summary", name=self.path.name), timeout=10)
        if asked is not None and asked != self._asked:
            self._asked = asked
            self._keep()  # after a restart Ctrl+K opens it again too

    async def _ask_about_folder(self, run: FolderRun, every: Path) -> None:
        """Ctrl+K on a folder's summaries: a conversation about the file of them all, as about any
        summary of a document longer than a part (the question, and the summaries as the reply);
        where that file is more than a message of this profile holds, said as for a document too
        long (how many words, how many a message holds), and what to do: summarize the file itself."""
        t, engine = self.wapp.texts, self.wapp.engine
        if self.wapp.generating:  # (the chat's reply: said as start_document_chat says it)
            self.notify(self.wapp.busy_text(), severity="warning")
            return
        intro = t("summarize.folder_intro", name=run.root.name)
        messages: list[dict[str, str]] = [{"role": "user", "content": intro},
                                          {"role": "assistant", "content": self.summary}]
        if engine is not None:
            from workstation.core.engine_api import answer_reserve
            from workstation.core.phrases import rounded_words, words_in
            from workstation.tui.attaching import _message_words

            try:
                n_ctx = engine.info().n_ctx
                tokens = await asyncio.to_thread(engine.count_prompt, messages)
                bare = await asyncio.to_thread(engine.count_prompt, [messages[0], {"role": "assistant", "content": ""}])
            except Exception:  # noqa: BLE001 (not measured: asked all the same, as a document's summary is)
                n_ctx = tokens = bare = 0
            sampling = self.wapp.session_sampling or (self.wapp.profile.sampling if self.wapp.profile else None)
            reserve = answer_reserve(sampling, n_ctx) if sampling is not None and n_ctx else 0
            if n_ctx and tokens > n_ctx - reserve:
                words = words_in(self.summary)
                self.notify(t("summarize.folder_too_long", name=every.name, n=rounded_words(words),
                              ask=self.wapp.key_for("summarize.ask"),
                              ctx=_message_words((tokens, n_ctx, max(1, tokens - bare)), words, reserve, t)),
                            severity="warning", timeout=15)
                return
        asked = await self.wapp.start_document_chat(run.root, messages, made=self._asked)  # ("About School Letters")
        if asked is not None:
            self._asked = asked
            self.wapp.notify(t("summarize.folder_asked", name=run.root.name), timeout=10)

    def action_save(self) -> None:
        """The summary shown, written beside its document as NAME.summary.md (batch's name), in
        the UI's language; an earlier summary of the same document there is replaced, any other
        file there is left as it was, the summary written as NAME.summary-2.md, and said."""
        from workstation.core.atomic import write_text_atomic
        from workstation.core.batch_queue import SUMMARY_SUFFIX
        from workstation.core.summary_file import earlier_summary

        t = self.wapp.texts
        if self.running or not self.summary or self.path is None:
            self.notify(t("summarize.nothing_to_save"), severity="warning")
            return
        if self._folder is not None:  # (a folder's are saved as they are made: the file of them all is shown)
            self.notify(t("summarize.folder_saved", path=str(self.path)))
            return
        out = first = self.path.with_name(self.path.name + SUMMARY_SUFFIX)
        n = 2
        while out.exists() and not earlier_summary(out, of=[self.path.name]):  # a file of the person's: another
            out, n = self.path.with_name(f"{self.path.name}.summary-{n}.md"), n + 1  # name (it stopped there)
        try:
            write_text_atomic(out, self.summary)
        except OSError as err:
            self.notify(t("summarize.not_saved", name=out.name, why=err.strerror or str(err)), severity="error",
                        timeout=10)
            return
        said = t("summarize.saved", path=str(out))
        if out != first:
            said = t("summarize.saved_beside_theirs", name=first.name, path=str(out))
        self.notify(said)  # (it asks nothing: the app's reading time)

    def action_back(self) -> None:
        """Back to the chat; a running summary goes on (F6 shows it again)."""
        self.app.pop_screen()
        if self.running and self.path is not None:
            self.app.notify(self.wapp.texts("summarize.goes_on", name=self.path.name))
