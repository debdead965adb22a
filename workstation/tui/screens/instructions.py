"""A conversation's own instructions to the model (Alt+I), read in place of its profile's
system prompt: LM Studio's system prompt per chat, Ollama's ``/set system``. "Answer in Turkish,
in two sentences" for one conversation, without a profile of its own. Kept with the
conversation (``ConversationStore.set_instructions``); a new conversation's are kept by the app
until its first message makes it."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Label, TextArea

from workstation.core.letters import shortened
from workstation.tui.i18n import Texts


class InstructionsDialog(ModalScreen[str | None]):
    """The instructions in a text box; Ctrl+S keeps them (``dismiss(text)``, '' for none), Esc
    leaves them as they were (``None``), Ctrl+R empties the box."""

    BINDINGS = [Binding("escape", "cancel", "cancel", show=False),
                Binding("ctrl+s", "keep", "keep", show=False),
                Binding("ctrl+r", "empty", "empty", show=False)]

    def __init__(self, texts: Texts, now: str, profile_prompt: str) -> None:
        super().__init__(classes="dialog-screen")
        self.texts = texts
        self.now = now
        self.profile_prompt = profile_prompt

    def compose(self) -> ComposeResult:
        t = self.texts
        with Vertical(classes="dialog wide", id="instructions-dialog"):
            yield Label(t("instructions.title"), classes="dialog-title", markup=False)
            yield Label(t("instructions.profile", prompt=shortened(" ".join(self.profile_prompt.split()), 200))
                        if self.profile_prompt.strip() else t("instructions.no_profile_prompt"),
                        id="instructions-profile", markup=False)
            yield TextArea(self.now, id="instructions-text", soft_wrap=True, show_line_numbers=False)
            yield Label(t("instructions.hint"), classes="dialog-hint", markup=False)

    def on_mount(self) -> None:
        box = self.query_one("#instructions-text", TextArea)
        box.focus()
        box.move_cursor(box.document.end)

    def action_keep(self) -> None:
        self.dismiss(self.query_one("#instructions-text", TextArea).text.strip())

    def typed(self) -> bool:
        """Whether the box holds something typed that closing the dialog would lose (Ctrl+Q asks)."""
        return self.query_one("#instructions-text", TextArea).text.strip() != self.now.strip()

    def action_empty(self) -> None:
        self.query_one("#instructions-text", TextArea).text = ""

    def action_cancel(self) -> None:
        self.dismiss(None)
