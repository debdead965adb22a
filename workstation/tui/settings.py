"""The TUI's settings: ``settings.yaml`` in the user's data directory.

```yaml
language: tr            # en | tr; absent: from the locale (LANGUAGE, LC_ALL, LANG)
theme: textual-light    # the theme chosen last (Ctrl+P, "Theme"); absent: textual-dark
keymap:                 # action id -> key(s), see workstation/tui/actions.py
  conv.new: ctrl+k
  dashboard.toggle: f10,ctrl+d
```
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from workstation.core.atomic import write_text_atomic
from workstation.core.paths import data_dir
from workstation.core.phrases import Phrase
from workstation.core.settings_file import YamlError, load_yaml
from workstation.tui.i18n import LANGUAGES


@dataclass
class TuiSettings:
    language: str | None = None
    """UI language, ``en`` or ``tr``; ``None`` follows the locale."""
    theme: str | None = None
    """The Textual theme chosen last (Ctrl+P, "Theme"): a light one for a light terminal, or
    for eyes that read dark text better; ``None`` is Textual's default."""
    keymap: dict[str, str] = field(default_factory=dict)
    """Action id to key(s), comma-separated, overriding the defaults."""
    problem: Phrase | None = None
    """Why the file, or a part of it, could not be used (shown once as a notification): a
    sentence of the locale files (``settings.*``) and its values; the first one found."""


def settings_path() -> Path:
    return data_dir() / "settings.yaml"


def load_settings(path: Path | None = None) -> TuiSettings:
    path = path or settings_path()
    if not path.exists():
        return TuiSettings()
    try:
        data: Any = load_yaml(path.read_text(encoding="utf-8")) or {}
    except (OSError, UnicodeDecodeError, YamlError):
        return TuiSettings(problem=("settings.unreadable", {"path": str(path)}))
    if not isinstance(data, dict):
        return TuiSettings(problem=("settings.not_mapping", {"path": str(path)}))
    settings = TuiSettings()
    lang = data.get("language")
    if isinstance(lang, str) and lang.strip().lower() in LANGUAGES:
        settings.language = lang.strip().lower()
    elif lang is not None:  # (``language: 5`` was ignored without a word)
        settings.problem = ("settings.language", {"path": str(path), "what": str(lang)})
    theme = data.get("theme")
    if isinstance(theme, str) and theme:
        settings.theme = theme
    keymap = data.get("keymap") or {}
    if isinstance(keymap, dict) and keymap:  # (the actions import Textual: not for every command's --help language)
        from workstation.tui.actions import BY_ID

        unknown = [k for k in keymap if k not in BY_ID]
        settings.keymap = {str(k): str(v) for k, v in keymap.items() if k in BY_ID}
        if unknown and not settings.problem:
            settings.problem = ("settings.unknown_actions", {"path": str(path), "names": ", ".join(map(str, unknown)),
                                                             "members": ", ".join(BY_ID)})
        # a key no keyboard has ("ctrl+", a list): the action had no key left, and nothing said
        # so; it keeps its own key now
        bad = {action: keys for action, keys in settings.keymap.items()
               if not all(known_key(k.strip()) for k in keys.split(",") if k.strip())}
        for action in bad:
            del settings.keymap[action]
        if bad and not settings.problem:
            said = "; ".join(f"{action}: {keys}" for action, keys in bad.items())
            settings.problem = ("settings.unknown_keys", {"path": str(path), "what": said})
    return settings


_MODIFIERS = ("ctrl", "shift", "alt", "meta", "super", "hyper")


def known_key(key: str) -> bool:
    """Whether ``key`` (as a keymap writes it: ``ctrl+k``, ``f10``, ``alt+shift+left``) is a
    key Textual can report."""
    from textual.keys import Keys, _character_to_key

    *modifiers, name = key.split("+")
    if not name or any(m not in _MODIFIERS for m in modifiers):
        return False
    if len(name) == 1 or name in {k.value for k in Keys}:
        return True
    return name in {_character_to_key(chr(c)) for c in range(32, 127)} or _unicode_name(name)


def _unicode_name(name: str) -> bool:
    import unicodedata

    try:
        unicodedata.lookup(name.replace("_", " "))
    except KeyError:
        return False
    return True


def ui_language() -> str:
    """The app's language as it would start now: the one F9 saved, else the locale's (the
    locale's too where the data folder cannot be used: ``fit`` failed there, for its words)."""
    from workstation.core.errors import WorkstationError
    from workstation.tui.i18n import detect_language

    try:
        saved = load_settings().language
    except WorkstationError:
        saved = None
    return saved or detect_language()


def save_language(lang: str, path: Path | None = None) -> bool:
    """Remember the UI language, keeping the rest of the file; False where it could not be
    written (a full disk, a read-only folder: the choice went unsaid and was gone at the next
    start)."""
    return save_setting("language", lang, path)


def save_setting(key: str, value: str, path: Path | None = None) -> bool:
    """Remember one setting (``language``, ``theme``), keeping the rest of the file; False
    where it could not be written."""
    path = path or settings_path()
    data: dict[str, Any] = {}
    if path.exists():
        try:
            loaded = load_yaml(path.read_text(encoding="utf-8"))
            if isinstance(loaded, dict):
                data = loaded
        except (OSError, UnicodeDecodeError, YamlError):
            return False  # never overwrite a file the user must fix by hand
    data[key] = value
    try:
        write_text_atomic(path, yaml.safe_dump(data, sort_keys=False, allow_unicode=True))
    except OSError:
        return False
    return True
