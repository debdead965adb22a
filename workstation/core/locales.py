"""The UI's phrase files (``tui/locales/<lang>.yaml``), each read once a process.

Read with libyaml's parser where PyYAML has it: the pure-Python one took 0.3 s of CPU for the two
files, in every command that said a phrase and in each test's process, and ``summarize`` read
them a second time for its titles."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from workstation.core.paths import PACKAGE_DIR

LOCALES_DIR = PACKAGE_DIR / "tui" / "locales"
_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # (the same safe types, in C)


@cache
def locale_texts(lang: str) -> dict[str, str]:
    """Each key's text in language ``lang`` (empty where there is no such file)."""
    return _read(LOCALES_DIR / f"{lang}.yaml")


@cache
def help_texts(lang: str) -> dict[str, str]:
    """The command line's ``--help`` in language ``lang`` (``locales/help/<lang>.yaml``): each
    English text it shows (a command's description, an option's help, argparse's own headings as
    its gettext ``_()`` gives them) -> its text in ``lang``; empty for English (no such file)."""
    return _read(LOCALES_DIR / "help" / f"{lang}.yaml")


def _read(path: Path) -> dict[str, str]:
    data: Any = yaml.load(path.read_text(encoding="utf-8"), Loader=_LOADER) if path.exists() else {}  # noqa: S506 - a safe loader
    return {str(k): str(v) for k, v in (data or {}).items()}


def locale_languages() -> list[str]:
    """The languages there are phrase files for ("en", "tr")."""
    return sorted(path.stem for path in LOCALES_DIR.glob("*.yaml"))


def phrase_patterns(keys: tuple[str, ...]) -> list[str]:
    """The texts of ``keys`` in English and each language the app speaks, as regular expressions
    (escaped, each ``{value}`` any text): to know the app's own words in a file it wrote before,
    in whatever language the UI spoke then (a summary's closing line, an export's first lines)."""
    from workstation.core.phrases import ENGLISH

    said = {ENGLISH[key] for key in keys} | {
        text for lang in locale_languages() for key in keys if isinstance(text := locale_texts(lang).get(key), str)}
    return [re.sub(r"\\\{.*?\\\}", ".+", re.escape(text)) for text in sorted(said)]
