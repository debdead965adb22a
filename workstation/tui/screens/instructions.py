"""A conversation's own instructions to the model (Alt+I), read in place of its profile's
system prompt: LM Studio's system prompt per chat, Ollama's ``/set system``. "Answer in Turkish,
in two sentences" for one conversation, without a profile of its own. Kept with the
conversation (``ConversationStore.set_instructions``); a new conversation's are kept by the app
until its first message makes it. Kept as the default too ("Use for new conversations too", or
Ctrl+P's "Instructions for new conversations"), every new conversation starts with them
(ChatGPT's custom instructions): the store's app_state, ``NEW_INSTRUCTIONS_KEY``."""

from __future__ import annotations

from typing import NamedTuple

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Checkbox, Label, TextArea

from workstation.core.letters import shortened
from workstation.tui.i18n import Texts

NEW_INSTRUCTIONS_KEY = "new_instructions"  # the store's app_state: the instructions every new conversation starts with


class InstructionsChosen(NamedTuple):
    text: str  # '' for none
    for_new: bool  # kept as new conversations' too


class InstructionsDialog(ModalScreen[InstructionsChosen | None]):
    """The instructions in a text box; Ctrl+S keeps them (``dismiss(InstructionsChosen)``, ''
    for none), Esc leaves them as they were (``None``), Ctrl+R empties the box. ``for_new``: the
    choice "Use for new conversations too", ticked at first; ``only_new``: the dialog is for new
    conversations' alone (Ctrl+P's command), without the choice."""

    BINDINGS = [Binding("escape", "cancel", "cancel", show=False),
                Binding("ctrl+s", "keep", "keep", show=False),
                Binding("ctrl+r", "empty", "empty", show=False)]

    def __init__(self, texts: Texts, now: str, profile_prompt: str, for_new: bool = False,
                 only_new: bool = False) -> None:
        super().__init__(classes="dialog-screen")
        self.texts = texts
        self.now = now
        self.profile_prompt = profile_prompt
        self.for_new = for_new
        self.only_new = only_new

    def compose(self) -> ComposeResult:
        t = self.texts
        with Vertical(classes="dialog wide", id="instructions-dialog"):
            yield Label(t("instructions.title_new" if self.only_new else "instructions.title"), classes="dialog-title",
                        markup=False)
            yield Label(t("instructions.profile", prompt=shortened(" ".join(self.profile_prompt.split()), 200))
                        if self.profile_prompt.strip() else t("instructions.no_profile_prompt"),
                        id="instructions-profile", markup=False)
            yield TextArea(self.now, id="instructions-text", soft_wrap=True, show_line_numbers=False)
            if not self.only_new:
                yield Checkbox(t("instructions.for_new"), self.for_new, id="instructions-for-new")
            yield Label(t("instructions.hint_new" if self.only_new else "instructions.hint"), classes="dialog-hint",
                        markup=False)

    def on_mount(self) -> None:
        box = self.query_one("#instructions-text", TextArea)
        box.focus()
        box.move_cursor(box.document.end)

    def action_keep(self) -> None:
        for_new = self.only_new or self.query_one("#instructions-for-new", Checkbox).value
        self.dismiss(InstructionsChosen(self.query_one("#instructions-text", TextArea).text.strip(), for_new))

    def typed(self) -> bool:
        """Whether the box holds something typed that closing the dialog would lose (Ctrl+Q asks)."""
        changed = not self.only_new and self.query_one("#instructions-for-new", Checkbox).value != self.for_new
        return changed or self.query_one("#instructions-text", TextArea).text.strip() != self.now.strip()

    def action_empty(self) -> None:
        self.query_one("#instructions-text", TextArea).text = ""

    def action_cancel(self) -> None:
        self.dismiss(None)
