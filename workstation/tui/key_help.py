"""Keys and the palette: F1's list of this screen's keys, Ctrl+P's commands (the app's, in the
UI's language, with their keys and other words), which actions are on now (``check_action``),
and an action's key as people write it (``key_for``)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from textual._node_list import DuplicateIds
from textual.app import SystemCommand
from textual.binding import Binding
from textual.command import CommandPalette
from textual.screen import ModalScreen, Screen
from textual.widgets import Input, TextArea

from workstation.core.invocation import cli
from workstation.tui.actions import (
    ACTIONS,
    ALWAYS,
    BASICS,
    BY_ID,
    CHAT_ONLY,
    PALETTE_ONLY,
    keys_now,
)
from workstation.tui.app_part import AppPart
from workstation.tui.palette import LocalPalette, fold
from workstation.tui.screens.dialogs import KeysDialog

if TYPE_CHECKING:
    from workstation.tui.app import WorkstationApp

# a text box's editing keys (Textual's Input and TextArea bind them) that the app's and the
# screens' priority keys leave to the box in focus: F6's Ctrl+K (ask in chat) took the path box's
# delete-to-the-end, opened the chat, and the path typed next was sent to the model
BOX_KEYS = frozenset({"ctrl+a", "ctrl+e", "ctrl+k", "ctrl+u", "ctrl+w", "ctrl+d", "ctrl+f", "ctrl+b",
                      "left", "right", "home", "end"})
# the chat's message box and editor, whose Ctrl+U (empty it; Ctrl+Z brings it back) is the chat's,
# as F1 lists it
MESSAGE_BOXES = frozenset({"prompt", "editor"})
# …and the keys that move along the line there while it holds text (Ctrl+E to its end, as in a
# terminal and Emacs: a first user typing a message got the sampling settings), the chat's (Ctrl+E's
# sampling) from the empty box, where there is no line to move along
MESSAGE_BOX_MOVES = frozenset({"ctrl+a", "ctrl+e"})


class KeyHelp(AppPart):
    """F1, Ctrl+P and the actions on now. Before Textual's ``App`` in the app's bases:
    ``check_action``, ``get_system_commands`` and ``action_command_palette`` take the place of App's,
    and ``get_system_commands``' ``super()`` reaches App's own commands."""

    def action_help(self: WorkstationApp) -> None:
        """F1: every key of this screen and what it does, the screen's own first, in the UI's
        language (the footer has room for a few; Textual's keys panel began with thirty of the
        text box's editing keys)."""
        rows: list[tuple[str, str, str]] = []  # the app's keys
        basics: dict[str, tuple[str, str, str]] = {}  # …those a newcomer needs first (the chat's), by action id
        own: dict[str, list[str]] = {}  # the screen's, by binding id: a binding of several keys is one row (Left/Right)
        said: dict[str, tuple[str, str]] = {}
        # the keys a dialog's fields and choices take (Tab to the next, Enter to open a choice), no
        # bindings of its own: ``PART_KEYS``, (key, binding id), said as its own are and before them
        parts: tuple[tuple[str, str], ...] = getattr(self.screen, "PART_KEYS", ())
        for key, name in parts:
            own.setdefault(name, []).append(self.texts.key(key))
            said[name] = (self.texts.capital(self.texts(f"binding.{name}")), self.texts(f"binding.{name}.help"))
        order = [name for _, name in parts] + [b.id for b in getattr(self.screen, "BINDINGS", []) if isinstance(b, Binding)]
        chat = self.screen is self.chat_screen
        for key, active in self.screen.active_bindings.items():  # the keymap and check_action applied
            b = active.binding
            if not active.enabled or b.system:
                continue
            if b.id in BY_ID:
                label = BY_ID[b.id].label
                row = (self.texts.key(key), self.texts(label), self.texts(f"{label}.help"))
                if chat and b.id in BASICS and b.id not in basics:
                    basics[b.id] = row
                else:
                    rows.append(row)
            elif b.action == "command_palette":
                rows.append((self.texts.key(key), self.texts.capital(self.texts("binding.palette")), self.texts("keys.palette")))
            elif active.node is self.screen and b.description and (b.show or b.id):  # the screen's own
                # (F4's p, pull; not Textual's Tab, focus next); named as the app's are, with what it does
                what = self.texts(f"binding.{b.id}.help") if b.id else ""
                what = "" if what == f"binding.{b.id}.help" else what
                name = b.id or f"{b.action}:{key}"
                own.setdefault(name, []).append(self.texts.key(key))
                said[name] = (self.texts.capital(b.description), what)
        # the screen's own first, in the order it declares them (a priority key, as F6's
        # Ctrl+X, came first of all or, put after the rest, after the app's)
        first = sorted(own, key=lambda n: order.index(n) if n in order else len(order))
        rows = [("/".join(own[n]), *said[n]) for n in first] + rows
        if chat:  # keys of the chat's parts, which F1 never named
            t = self.texts
            if basics:  # a newcomer's few before all, then a blank line (the list began with Ctrl+E's
                # sampling settings, and sending was found twelfth, as Ctrl+S alone: Enter sends)
                if "chat.send" in basics:
                    key, name, what = basics["chat.send"]
                    basics["chat.send"] = (f"{t.key('enter')}/{key}", name, what)
                rows = [basics[i] for i in BASICS if i in basics] + [("", "", "")] + rows
            up = BY_ID["chat.edit_last"]  # (the message box's own Up comes first in the keys: listed here)
            if not any(label == t(up.label) for _, label, _ in rows):
                rows += [("/".join(map(self.texts.key, keys_now(self._keymap)[up.id])), t(up.label), t(f"{up.label}.help"))]
            rows += [("PgUp/PgDn", t("keys.scroll"), t("keys.scroll.help")), ("Tab", t("keys.tab"), t("keys.tab.help")),
                     ("Shift+Enter/Ctrl+J", t("keys.new_line"), t("keys.new_line.help"))]
            # the palette's commands without a key: found only by those who thought to look there
            rows += [(t.key("ctrl+p"), t(label), t(f"{label}.help")) for label in PALETTE_ONLY.values()]
            # what the figures under each reply mean (TTFT … tok/s): a mouse's tooltip said it, and
            # a keyboard's user never learnt it
            rows += [("", "", ""), ("", t("keys.figures"), t("metric.help", bench=cli("bench")))]
        elif figures := getattr(self.screen, "FIGURES_HELP", ""):  # a screen of figures and terms (F5, F4): what each is
            said = getattr(self.screen, "figures_help", None)  # (a screen whose terms have figures of its own)
            rows += [("", "", ""), ("", self.texts("keys.dash_figures"), said() if callable(said) else self.texts(figures))]
        self.push_screen(KeysDialog(self.texts("keys.title"), rows, self.texts("keys.hint")))

    # --- the command palette ---------------------------------------------------------------
    def action_command_palette(self: WorkstationApp) -> None:
        """Textual's palette, its search box in the app's language."""
        if self.use_command_palette and not CommandPalette.is_open(self):
            try:
                self.push_screen(LocalPalette(self.texts("palette.no_matches"), id="--command-palette",
                                              placeholder=self.texts("palette.search")))
            except DuplicateIds:  # (the one closed a moment ago still going: Ctrl+P, Esc, Ctrl+P at once)
                pass

    def get_system_commands(self: WorkstationApp, screen: Screen[Any]) -> Iterable[SystemCommand]:
        for action in ACTIONS:
            if action.action in CHAT_ONLY and screen is not self.chat_screen:
                continue  # as their keys: the chat's own (see check_action)
            if isinstance(screen, ModalScreen) and action.action not in ALWAYS:
                continue  # as their keys: a dialog owns them (Profiles behind Ctrl+E lost its change)
            if self._does_nothing(action.action):
                continue  # nothing attached: nothing to remove (it was listed, and did nothing)
            method = getattr(self, f"action_{action.action}")
            # written as F1 writes them (Esc, not escape); none where the keymap gave its key away
            keys = "/".join(map(self.texts.key, keys_now(self._keymap)[action.id]))
            yield SystemCommand(
                f"{self.texts(action.label)} ({keys})" if keys else self.texts(action.label),
                self.texts(f"{action.label}.help"),
                method,
            )
        if not isinstance(screen, ModalScreen):  # the palette's commands without a key of their own
            for name, label in PALETTE_ONLY.items():
                if name not in CHAT_ONLY or screen is self.chat_screen:
                    yield SystemCommand(self.texts(label), self.texts(f"{label}.help"), getattr(self, f"action_{name}"))
        # Textual's own, less its Quit and Keys (ours above show the key), in the app's language
        for c in super().get_system_commands(screen):
            if c.callback != self.action_quit and c.title != "Keys":
                yield self._translated(c)

    def other_words(self: WorkstationApp, callback: Any) -> list[str]:
        """The palette's other words for the command ``callback`` runs (``<label>.also`` in the
        locale, comma-separated): F7's Export is what a person looking to "save" a conversation
        types, and Ctrl+P said "No command matches" to it."""
        name = getattr(callback, "__name__", "").removeprefix("action_")
        action = next((a for a in ACTIONS if a.action == name), None)
        label = action.label if action is not None else PALETTE_ONLY.get(name)
        said = self.texts.get(f"{label}.also") if label is not None else None
        return [word.strip() for word in said.split(",") if word.strip()] if said else []

    def filler_words(self: WorkstationApp) -> set[str]:
        """The words the palette passes over in a query of several (``palette.filler`` in the
        locale, comma-separated, folded as it folds them): "daha" (more) in "daha büyük model"
        names no command, and with it the palette found none."""
        said = self.texts.get("palette.filler") or ""
        return {fold(word.strip()) for word in said.split(",") if word.strip()}

    def _translated(self: WorkstationApp, command: SystemCommand) -> SystemCommand:
        """One of Textual's palette commands in the app's language (``palette.<Title>`` and its
        ``.help``); as Textual words it where the
        locale has no text for it (English, a command a later Textual adds)."""
        title = command.title
        key = f"palette.{title}"
        if self.texts(key) == key or self.texts.lang == "en":
            return command
        return SystemCommand(self.texts(key), self.texts(f"{key}.help"), command.callback, command.discover)

    async def _check_bindings(self: WorkstationApp, key: str, priority: bool = False) -> bool:
        """Textual's key dispatch (priority keys first, then from the focused widget up), less the
        priority keys a text box in focus keeps (``box_keeps``): the key goes on to the box."""
        if priority and self.box_keeps(key):
            return False
        return await super()._check_bindings(key, priority)  # type: ignore[misc]

    def box_keeps(self: WorkstationApp, key: str, screen: Screen[Any] | None = None) -> bool:
        """Whether ``key`` is the focused text box's own editing key (``BOX_KEYS``, which it binds)
        rather than an app's or a screen's priority key: in every box but the chat's message box
        (there, only Ctrl+A and Ctrl+E while it holds text: ``MESSAGE_BOX_MOVES``): F6's Ctrl+K
        (ask in chat) too, which asks from its summary. On ``screen`` (the one shown where none is
        named): its footer leaves such a key out, as it does not do there what the footer says."""
        screen = self.screen if screen is None else screen
        box = screen.focused
        if not isinstance(box, Input | TextArea) or key not in BOX_KEYS:
            return False
        if box.id in MESSAGE_BOXES:  # (its moves while it holds text: MESSAGE_BOX_MOVES)
            return key in MESSAGE_BOX_MOVES and bool(box.value if isinstance(box, Input) else box.text)
        return key in box._bindings.key_to_bindings

    def check_action(self: WorkstationApp, action: str, parameters: tuple[object, ...]) -> bool | None:
        """App actions wait while a dialog is open (the dialog owns the keys). The chat's own
        (stop a reply, a new conversation) are off elsewhere, and out of those screens' footers:
        F4's footer was cut at 100 columns, and showed Esc twice (back, and stop)."""
        if isinstance(self.screen, ModalScreen) and action in {a.action for a in ACTIONS} - ALWAYS \
                and not (action == "help" and getattr(self.screen, "FIGURES_HELP", "")):  # (F3's E: what K, q8_0 are)
            return False
        if action in CHAT_ONLY and self.screen is not getattr(self, "chat_screen", None):
            return False
        if self._does_nothing(action):  # out of the footer and F1's list, as out of Ctrl+P's
            return False
        return True

    def _does_nothing(self: WorkstationApp, action: str) -> bool:
        """An action with nothing to act on now: Ctrl+R with no document attached (listed in the
        footer, F1 and Ctrl+P, it did nothing)."""
        return action == "detach" and getattr(self, "pending_document", None) is None

    def key_for(self: WorkstationApp, action_id: str) -> str:
        """The key of an action as people write it (Alt+I), as the keymap has it now; for a
        screen's own binding (F6's summarize.stop), as its screen has it."""
        if action_id not in BY_ID:
            keys = [key for key, active in self.screen.active_bindings.items() if active.binding.id == action_id]
            if not keys:  # (its screen not the one shown, or the key hidden there now: F6's "{ask} asks about
                # them in the chat" said "  asks" in the chat after Ctrl+K: newuser21) its screen's own key
                screens = [*self.screen_stack, *getattr(self, "_kept", {}).values()]
                keys = [b.key.split(",")[0] for s in screens for b in type(s).BINDINGS
                        if isinstance(b, Binding) and b.id == action_id][:1]
            return self.texts.key(keys[0]) if keys else ""
        keys = keys_now(self._keymap)[action_id]
        return self.texts.key(keys[0]) if keys else ""
