"""A settings file's YAML (profiles, workloads, the model catalog): safe types only, no aliases,
no key written twice, at most MAX_YAML_BYTES; a problem is said in one sentence naming the file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from workstation.core.atomic import read_text_file
from workstation.core.errors import ProfileError


def read_settings_file(path: Path, what: str = "Profile file", error: type[ProfileError] = ProfileError,
                       hint: str = "a profile is a few lines") -> Any:
    """The YAML data of a settings file (a profile, a workload); ``error`` with one sentence
    naming the file when it is missing, unreadable, too large or not valid YAML."""
    src = str(path)
    try:
        too_large = path.stat().st_size > MAX_YAML_BYTES
    except OSError:
        too_large = False  # said in one sentence by read_text_file
    if too_large:
        raise error(f"{what} {src} is larger than {MAX_YAML_BYTES // 1024} KiB; {hint}.")
    text = read_text_file(path, what, error)
    try:
        return load_yaml(text)
    except YamlError as err:
        raise error(f"{src} {err}") from None


MAX_YAML_BYTES = 1024 * 1024


class YamlError(ValueError):
    """A YAML text that is refused: the message completes "FILE ..." as one sentence."""


class _PlainLoader(yaml.SafeLoader):
    """PyYAML's safe loader without aliases: ``*name`` can make a few lines expand to
    gigabytes (an alias bomb), and a settings file has no use for them."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            mark = self.peek_event().start_mark
            raise yaml.composer.ComposerError(
                None, None, "uses a YAML alias (*name; a settings file may not use one)", mark
            )
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
                raise yaml.constructor.ConstructorError(
                    None, None, f"has '{key}' twice (the second would replace the first)", key_node.start_mark
                )
        return super().construct_mapping(node, deep)


def load_yaml(text: str) -> Any:
    """Settings YAML (profiles, the model catalog): safe types only, no aliases, at most
    MAX_YAML_BYTES; YamlError (one sentence, with the line) otherwise."""
    if len(text) > MAX_YAML_BYTES:
        raise YamlError(f"is larger than {MAX_YAML_BYTES // 1024} KiB, too large for a settings file.")
    try:
        return yaml.load(text, Loader=_PlainLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        lines = max(1, len(text.splitlines()))  # a problem found at the end is on the last line, not after it
        where = f" at line {min(mark.line + 1, lines)}" if mark else ""
        problem = getattr(err, "problem", None) or ""
        if problem.startswith(("uses a YAML alias", "has '")):  # our own refusals, said as they are
            raise YamlError(f"{problem}{where}.") from None
        line = text.splitlines()[min(mark.line, lines - 1)] if mark and text.strip() else ""
        if "\t" in line[: len(line) - len(line.lstrip())]:  # indented with a tab ("not valid YAML" said nothing)
            raise YamlError(f"is not valid YAML{where}: it is indented with a tab, and YAML takes spaces only.") from None
        raise YamlError(f"is not valid YAML{where}.") from None
