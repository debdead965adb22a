"""Summarize a document: pick a file, watch progress per chunk, read the result, then ask
follow-up questions about it in the chat."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.screen import Screen
from textual.widgets import Button, Footer, Header, Input, Label, Markdown, ProgressBar

from workstation.core.errors import WorkstationError
from workstation.tui import integrations
from workstation.tui.messages import Progress, TaskFailed
from workstation.tui.screens.app_screen import AppScreen

if TYPE_CHECKING:
    from workstation.core.summarize import SummaryResult


class SummaryReady(Progress):
    pass


class SummarizeScreen(AppScreen, Screen[None]):
    BINDINGS = [
        Binding("escape", "back", "back", id="summarize.back"),
        Binding("ctrl+r", "run", "summarize", id="summarize.run"),
        # priority: the path field keeps the focus, and a text field's own Ctrl+K deletes to the
        # end of the line (the key did nothing a user could see)
        Binding("ctrl+k", "ask", "ask in chat", id="summarize.ask", priority=True),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.path: Path | None = None
        self.summary = ""
        self.result: SummaryResult | None = None
        self.running = False
        self._cancel = threading.Event()

    def compose(self) -> ComposeResult:
        t = self.wapp.texts
        yield Header()
        with Horizontal(id="summarize-bar"):
            yield Input(placeholder=t("summarize.path"), id="summarize-path")
            yield Button(t("summarize.run"), id="summarize-run", variant="primary")
            yield Button(t("summarize.ask"), id="summarize-ask", disabled=True)
        yield Label("", id="summarize-state", markup=False)
        yield ProgressBar(total=1, id="summarize-progress")
        with VerticalScroll(id="summarize-result"):
            yield Markdown("", id="summary")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#summarize-progress").display = False
        self.query_one("#summarize-path", Input).focus()

    def relabel(self) -> None:
        pass

    @on(Input.Submitted, "#summarize-path")
    @on(Button.Pressed, "#summarize-run")
    def _run_pressed(self) -> None:
        self.action_run()

    @on(Button.Pressed, "#summarize-ask")
    async def _ask_pressed(self) -> None:
        await self.action_ask()

    def action_run(self) -> None:
        t = self.wapp.texts
        raw = self.query_one("#summarize-path", Input).value.strip()
        if not raw or self.running:
            return
        if self.wapp.engine is None or self.wapp.generating:
            self.notify(t("chat.no_engine"), severity="warning")
            return
        self.path = Path(raw).expanduser()
        self.running = True
        self._cancel.clear()
        self.query_one("#summarize-state", Label).update(t("summarize.reading", name=self.path.name))
        bar = self.query_one("#summarize-progress", ProgressBar)
        bar.display = True
        bar.update(total=None, progress=0)
        self.wapp.generating = True  # the engine is busy: the chat waits
        self._summarize(self.path)

    @work(thread=True, exclusive=True, exit_on_error=False, group="summarize")
    def _summarize(self, path: Path) -> None:
        app = self.wapp
        try:
            result = integrations.summarize(
                path, app.profile, app.engine,  # type: ignore[arg-type]
                lambda done, total: self.post_message(Progress(done, total)), self._cancel,
            )
        except WorkstationError as err:
            self.post_message(TaskFailed(str(err)))
            return
        except Exception as err:  # noqa: BLE001 - one sentence, the screen stays usable
            self.post_message(TaskFailed(f"The summary failed: {type(err).__name__}: {err}"))
            return
        self.post_message(SummaryReady(1, 1, data=result))

    @on(Progress)
    async def _progress(self, event: Progress) -> None:
        t = self.wapp.texts
        bar = self.query_one("#summarize-progress", ProgressBar)
        if isinstance(event, SummaryReady):
            self.running = False
            self.wapp.generating = False
            self.result = event.data
            self.summary = event.data.summary
            bar.display = False
            self.query_one("#summarize-state", Label).update(t("summarize.done"))
            await self.query_one("#summary", Markdown).update(self.summary)
            self.query_one("#summarize-ask", Button).disabled = False
            return
        bar.update(total=event.total or None, progress=event.done)
        self.query_one("#summarize-state", Label).update(
            t("summarize.chunk", done=int(event.done), total=int(event.total or 0))
        )

    @on(TaskFailed)
    def _failed(self, event: TaskFailed) -> None:
        event.stop()
        self.running = False
        self.wapp.generating = False
        self.query_one("#summarize-progress").display = False
        self.query_one("#summarize-state", Label).update("")
        self.notify(event.reason, severity="error", timeout=10)

    async def action_ask(self) -> None:
        if not self.summary or self.path is None:
            return
        if self.result is None:
            return
        intro = self.wapp.texts("summarize.context", name=self.path.name)
        await self.wapp.start_document_chat(self.path, self.result.conversation(intro))

    def action_back(self) -> None:
        if self.running:
            self._cancel.set()
        self.app.pop_screen()
