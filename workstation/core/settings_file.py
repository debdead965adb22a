"""A settings file's YAML (profiles, workloads, the model catalog): safe types only, no aliases,
no key written twice, at most MAX_YAML_BYTES; a problem is said in one sentence naming the file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from workstation.core.atomic import FileWhat, read_text_file
from workstation.core.errors import ProfileError
from workstation.core.phrases import Phrase, say


def read_settings_file(path: Path, what: FileWhat = "file.what_profile", error: type[ProfileError] = ProfileError,
                       hint: Phrase | str = ("yaml.few_lines_profile", {})) -> Any:
    """The YAML data of a settings file (a profile, a workload); ``error`` with one sentence
    naming the file (``what``: its phrase, as ``read_text_file`` takes it) when it is missing, unreadable, too large or not valid YAML."""
    src = str(path)
    try:
        too_large = path.stat().st_size > MAX_YAML_BYTES
    except OSError:
        too_large = False  # said in one sentence by read_text_file
    if too_large:
        raise error(said=[("yaml.too_large_hint", {"what": (what, {}),
                                                   "src": src, "kib": MAX_YAML_BYTES // 1024, "hint": hint})])
    text = read_text_file(path, what, error)
    try:
        return load_yaml(text)
    except YamlError as err:
        raise error(said=err.said_of(src)) from None


MAX_YAML_BYTES = 1024 * 1024


class YamlError(ValueError):
    """A YAML text that is refused: the message completes "FILE ..." as one sentence;
    ``said_of(FILE)`` is the whole sentence as phrases (core/phrases.py: said in the app's language)."""

    def __init__(self, phrase: str, **values: object) -> None:
        self.phrase: Phrase = (phrase, values)
        super().__init__(say(self.said_of("")).lstrip())

    def said_of(self, src: str) -> list[Phrase]:
        return [(self.phrase[0], {**self.phrase[1], "src": src})]


class _Refused(yaml.MarkedYAMLError):
    """One of the loader's own refusals, as a phrase (``key``, ``values``) said with its line."""

    def __init__(self, mark: Any, phrase: str, **values: object) -> None:
        super().__init__(problem=phrase, problem_mark=mark)
        self.phrase, self.values = phrase, values


class _PlainLoader(yaml.SafeLoader):
    """PyYAML's safe loader without aliases: ``*name`` can make a few lines expand to
    gigabytes (an alias bomb), and a settings file has no use for them."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            mark = self.peek_event().start_mark
            raise _Refused(mark, "yaml.alias")
        return super().compose_node(parent, index)

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        """A key written twice is refused: YAML keeps the last one, so a second ``sampling:``
        block dropped every setting of the first without a word."""
        seen: set[Any] = set()
        for key_node, _value in node.value:
            key = self.construct_object(key_node, deep=deep)
            try:
                twice = key in seen
                seen.add(key)
            except TypeError:  # a key that is no scalar: PyYAML's own error follows
                continue
            if twice:
                raise _Refused(key_node.start_mark, "yaml.twice", key=str(key))
        return super().construct_mapping(node, deep)


def load_yaml(text: str) -> Any:
    """Settings YAML (profiles, the model catalog): safe types only, no aliases, at most
    MAX_YAML_BYTES; YamlError (one sentence, with the line) otherwise."""
    if len(text) > MAX_YAML_BYTES:
        raise YamlError("yaml.too_large", kib=MAX_YAML_BYTES // 1024)
    try:
        return yaml.load(text, Loader=_PlainLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        lines = max(1, len(text.splitlines()))  # a problem found at the end is on the last line, not after it
        where: Phrase | str = ("yaml.at_line", {"line": min(mark.line + 1, lines)}) if mark else ""
        if isinstance(err, _Refused):  # our own refusals
            raise YamlError(err.phrase, **err.values, where=where) from None
        line = text.splitlines()[min(mark.line, lines - 1)] if mark and text.strip() else ""
        if "\t" in line[: len(line) - len(line.lstrip())]:  # indented with a tab ("not valid YAML" said nothing)
            raise YamlError("yaml.tab", where=where) from None
        raise YamlError("yaml.invalid", where=where) from None
