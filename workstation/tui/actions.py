"""Every user action in one registry, so key bindings are data.

Each action has an id (the key of ``keymap`` in settings.yaml, to remap it), a default key,
the app action it runs and the locale key of its label. The app builds its bindings and its
command-palette entries from this list, so every action has both a key and a palette entry.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from textual.binding import Binding

from workstation.tui.i18n import Texts


@dataclass(frozen=True)
class UserAction:
    id: str
    key: str
    action: str  # method name on the app without the ``action_`` prefix
    label: str  # locale key; the help text is ``<label>.help``
    show: bool = False  # shown in the footer
    priority: bool = True  # wins over the focused widget's own binding (TextArea uses f5-f7)


ACTIONS: tuple[UserAction, ...] = (
    UserAction("app.help", "f1", "help", "action.help", show=True),
    UserAction("chat.send", "ctrl+s", "send", "action.send"),
    UserAction("chat.stop", "escape", "stop", "action.stop", show=True, priority=False),
    UserAction("chat.editor", "ctrl+t", "toggle_editor", "action.editor"),
    UserAction("chat.attach", "ctrl+o", "attach", "action.attach"),
    UserAction("chat.detach", "ctrl+r", "detach", "action.detach"),
    UserAction("chat.focus", "ctrl+l", "focus_prompt", "action.focus"),
    # over the boxes' own Ctrl+U (delete to the line's start): a long paste had no way out
    UserAction("chat.clear", "ctrl+u", "clear_message", "action.clear"),
    UserAction("conv.new", "ctrl+n", "new_conversation", "action.new", show=True),
    UserAction("conv.rename", "f2", "rename_conversation", "action.rename"),
    UserAction("conv.delete", "f8", "delete_conversation", "action.delete"),
    UserAction("conv.search", "ctrl+f", "search_conversations", "action.search"),
    UserAction("conv.export", "f7", "export_conversation", "action.export"),
    # not over the multi-line editor's own Ctrl+Y (redo); the palette has it there
    UserAction("chat.copy", "ctrl+y", "copy_reply", "action.copy", priority=False),
    UserAction("chat.copy_code", "alt+y", "copy_code", "action.copy_code"),
    # Up in the message box's empty line alone (the editor's, the list's and the chat's Up move)
    UserAction("chat.edit_last", "up", "edit_last", "action.edit_last", priority=False),
    UserAction("chat.again", "alt+r", "ask_again", "action.again"),
    UserAction("chat.continue", "alt+c", "continue_reply", "action.continue"),
    UserAction("chat.versions", "alt+v", "other_reply", "action.versions"),
    # over a box's own Ctrl+E (line end), but in the message box only once it is empty: with text
    # there Ctrl+E goes to the line's end (key_help.MESSAGE_BOX_MOVES)
    UserAction("chat.sampling", "ctrl+e", "sampling", "action.sampling"),
    UserAction("chat.instructions", "alt+i", "instructions", "action.instructions"),
    UserAction("conv.sidebar", "ctrl+b", "toggle_sidebar", "action.sidebar"),
    UserAction("profile.menu", "f3", "profiles", "action.profiles", show=True),
    UserAction("models.open", "f4", "models", "action.models", show=True),
    UserAction("dashboard.toggle", "f5", "dashboard", "action.dashboard", show=True),
    # in the order of their keys: F1 lists them so (it went F6, F12, F10, Ctrl+G, F11, F9)
    UserAction("summarize.open", "f6", "summarize", "action.summarize", show=True),
    UserAction("lang.toggle", "f9", "toggle_language", "action.language"),
    UserAction("sizing.open", "f10", "sizing", "action.sizing"),
    UserAction("usage.open", "f11", "usage", "action.usage"),
    UserAction("quality.open", "f12", "quality", "action.quality"),
    UserAction("api.serve", "ctrl+g", "serve", "action.serve"),
    UserAction("app.quit", "ctrl+q", "quit", "action.quit", show=True),
)
# what a newcomer needs first, in this order: F1 on the chat lists them before the rest
BASICS = ("chat.send", "conv.new", "chat.attach", "profile.menu", "models.open", "app.quit")
ALWAYS = frozenset({"quit"})  # actions a dialog does not hold back
# the chat's own: off on other screens, and out of their footer, F1 list and palette (F1 on F6
# listed F2 rename and F8 delete, which act on the chat's conversation)
CHAT_ONLY = frozenset({"stop", "new_conversation", "send", "toggle_editor", "attach", "detach", "focus_prompt",
                       "clear_message",
                       "rename_conversation", "delete_conversation", "search_conversations",
                       "export_conversation", "toggle_sidebar", "copy_reply", "copy_code", "sampling", "edit_last",
                       "ask_again", "continue_reply", "other_reply", "instructions", "new_instructions"})

BY_ID = {a.id: a for a in ACTIONS}
# the palette's commands without a key of their own (Ctrl+P finds them; F1 says so): the app
# action each runs, its label's locale key (``.help`` and ``.also`` after it, as an action's)
PALETTE_ONLY: dict[str, str] = {
    "summarize_folder": "action.summarize_folder",  # (F6, then its dialog)
    "new_instructions": "action.new_instructions",  # (the chat's: CHAT_ONLY)
    "dark_theme": "action.dark_theme",  # Textual's own themes, at once ("Theme" lists them all)
    "light_theme": "action.light_theme",
}


def bindings(texts: Texts) -> list[Binding]:
    return [
        Binding(a.key, a.action, texts(a.label), show=a.show, id=a.id, priority=a.priority)
        for a in ACTIONS
    ]


def _split(keys: str) -> list[str]:
    return [k.strip() for k in keys.split(",") if k.strip()]


def keys_now(keymap: Mapping[str, str]) -> dict[str, list[str]]:
    """Each action's keys with settings.yaml's ``keymap`` over the defaults. A key the keymap
    gives one action is no longer its default owner's (Textual takes it from that binding too):
    a keymap written for an older version, giving Ctrl+E to rename, left the palette and F1
    naming Ctrl+E for a newer action that the key no longer opened. An action left with no key
    has an empty list (the palette still has it)."""
    taken = {key for action_id, keys in keymap.items() for key in _split(keys)}
    return {a.id: _split(keymap[a.id]) if a.id in keymap else [k for k in _split(a.key) if k not in taken]
            for a in ACTIONS}


def keys_lost(keymap: Mapping[str, str]) -> dict[str, str]:
    """Actions whose default key the keymap gave another (id -> the other's id), for a notice."""
    now = keys_now(keymap)
    return {a.id: next(other for other, keys in keymap.items() if set(_split(keys)) & set(_split(a.key)))
            for a in ACTIONS if a.id not in keymap and not now[a.id]}
