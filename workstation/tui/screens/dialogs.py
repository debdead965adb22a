"""Small modal dialogs that return a value with ``dismiss``: confirm, ask for text, and the
keys (F1)."""

from __future__ import annotations

from collections.abc import Callable

from rich.cells import cell_len
from rich.console import Group
from rich.padding import Padding
from rich.table import Table
from rich.text import Text
from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Static

from workstation.tui.widgets.line_input import LineInput

NARROW = 72  # terminal columns below which layouts narrow: the chat's list put away
KEYS_STACKED = 100  # …and below which F1 says what a key does under it, not in a third column


class ConfirmDialog(ModalScreen[bool | None]):
    """Yes or no; ``keys`` answer it from the keyboard in the UI's language (y/n, e/h)."""

    BINDINGS = [Binding("escape", "cancel", "cancel", show=False)]

    def __init__(self, question: str, yes: str, no: str, keys: tuple[str, str] = ("y", "n"),
                 enter_is_yes: bool = False) -> None:
        super().__init__(classes="dialog-screen")
        self.question = question
        self.yes = yes
        self.no = no
        self.keys = keys
        self.enter_is_yes = enter_is_yes  # Enter goes on (a download); else it answers no (a delete)

    def on_key(self, event: events.Key) -> None:
        if event.key in self.keys:
            event.stop()
            self.dismiss(event.key == self.keys[0])

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label(self.question, classes="dialog-title", markup=False)
            with Horizontal(classes="dialog-buttons"):
                yield Button(f"{self.yes} ({self.keys[0]})", variant="error", id="yes")  # the key says itself
                yield Button(f"{self.no} ({self.keys[1]})", id="no")

    def on_mount(self) -> None:
        self.query_one("#yes" if self.enter_is_yes else "#no", Button).focus()

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")

    def action_confirm(self) -> None:
        self.dismiss(True)

    def action_cancel(self) -> None:
        self.dismiss(None)  # (Esc: left, where n says no; both are no to the question)


class TextPrompt(ModalScreen[str | None]):
    """Ask for one line of text (a title, a path); Enter accepts, Esc cancels."""

    BINDINGS = [Binding("escape", "cancel", "cancel", show=False)]

    def __init__(self, title: str, value: str = "", placeholder: str = "", hint: str = "",
                 check: Callable[[str], str | None] | None = None, empty: str | None = None,
                 whole: Callable[[str], str] | None = None) -> None:
        """``hint``: the keys, under the line (F2's rename said nothing of Enter or Esc).
        ``check(text)``: why the text cannot be taken (None: it can), said under the line with
        the dialog left open to correct it (F7's folder that is not there closed it, the path
        to be typed again). ``empty``: said so of an empty line, left open (None: Enter on an
        empty line is Esc). ``whole(text)``: the line said whole, wrapped under it, while it is
        longer than the box shows (a path: at 80 columns F7's showed "ment/Meeting-notes.md",
        the folder it goes to cut off); the dialog is a wide one then."""
        super().__init__(classes="dialog-screen")
        self.title_text = title
        self.value = value
        self.placeholder = placeholder
        self.hint = hint
        self.check = check
        self.empty = empty
        self.whole = whole

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog wide" if self.whole else "dialog"):
            yield Label(self.title_text, classes="dialog-title", markup=False)
            yield LineInput(self.value, placeholder=self.placeholder, id="answer")
            if self.whole:
                yield Label("", id="whole", classes="dialog-whole", markup=False)
            yield Label("", id="problem", classes="dialog-problem", markup=False)
            if self.hint:
                yield Label(self.hint, classes="dialog-hint", markup=False)

    def on_mount(self) -> None:
        self.query_one("#problem", Label).display = False
        if self.whole:
            self.query_one("#whole", Label).display = False
            self.call_after_refresh(self._say_whole)  # (once the box has its width)

    @on(Input.Changed, "#answer")
    def _say_whole(self) -> None:
        if self.whole is None:
            return
        box, said = self.query_one("#answer", Input), self.query_one("#whole", Label)
        text = box.value.strip()
        longer = bool(text) and cell_len(box.value) + 1 > box.content_region.width  # (+1: the cursor after it)
        if longer:
            said.update(self.whole(text))
        said.display = longer

    def on_resize(self) -> None:
        self.call_after_refresh(self._say_whole)

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        answer = event.value.strip() or None
        problem = self.check(answer) if answer is not None and self.check is not None else \
            self.empty if answer is None else None
        if problem:
            said = self.query_one("#problem", Label)
            said.update(problem)
            said.display = True
            return
        self.dismiss(answer)

    def typed(self) -> bool:
        """Whether the line holds something typed that closing the dialog would lose (Ctrl+Q asks)."""
        return self.query_one("#answer", Input).value.strip() != self.value.strip()

    def action_cancel(self) -> None:
        self.dismiss(None)


class KeysDialog(ModalScreen[None]):
    """Every key of the screen it opened over and what it does (F1): the footer has room for a
    few. ``rows``: (key as shown, name, what it does); Esc or F1 closes it."""

    BINDINGS = [Binding("escape,f1", "close", "close", show=False)]

    def __init__(self, title: str, rows: list[tuple[str, str, str]], hint: str) -> None:
        super().__init__(classes="dialog-screen")
        self.title_text = title
        self.rows = rows
        self.hint = hint


    def _table(self, width: int) -> Table:
        table = Table(show_header=False, box=None, padding=(0, 1), expand=True)
        if width < KEYS_STACKED:
            # each key and its name on a line, what it does under them across the dialog: at 80x24
            # a third column left it 30 letters a line, each key 5 to 7 lines ("Attach a document
            # (text, / Word (.docx), …"), at 60 columns 9 letters
            table.add_column(ratio=1)
            for key, name, what in self.rows:
                table.add_row(Group(Text.assemble((key, "bold"), "  ", name),
                                    Padding(Text(what, style="dim"), (0, 0, 0, 2))))
            return table
        # a long name (Language: Türkçe (Turkish)) wraps in its column rather than squeezing
        # every description onto two or three lines
        table.add_column(style="bold", no_wrap=True)
        table.add_column(max_width=20)
        table.add_column(style="dim", ratio=1)
        for key, name, what in self.rows:
            table.add_row(key, name, what)
        return table

    def compose(self) -> ComposeResult:
        self._width = self.app.size.width
        with Vertical(classes="dialog wide"):
            yield Label(self.title_text, classes="dialog-title", markup=False)
            with VerticalScroll(id="keys"):
                self.table = self._table(self._width)
                yield Static(self.table, id="keys-table")
            yield Label(self.hint, classes="dialog-hint", markup=False)

    def on_resize(self, event: events.Resize) -> None:
        narrow = event.size.width < KEYS_STACKED
        if narrow != (self._width < KEYS_STACKED):
            self._width = event.size.width
            self.table = self._table(self._width)
            self.query_one("#keys-table", Static).update(self.table)

    def action_close(self) -> None:
        self.dismiss(None)
