"""Saving a profile (F3's E, a shipped profile's copy, profiles new): its file written again with
only the changed settings, the rest line for line as the user wrote it, notes kept; and how a
setting is set by its dotted name (kv_cache.k)."""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from workstation.core.atomic import read_text_file
from workstation.core.errors import ProfileError
from workstation.core.profile_check import PROFILE_SECTIONS, profile_from_dict
from workstation.core.profile_lookup import load_profile_file
from workstation.core.profiles import Profile
from workstation.core.settings_file import YamlError, load_yaml, read_settings_file


class _ProfileDumper(yaml.SafeDumper):
    """A profile as a person writes one: a text of several lines (a system prompt) as a block
    (``|``), not one quoted line of ``\\n``."""


def _text_block(dumper: yaml.SafeDumper, text: str) -> yaml.ScalarNode:
    style = "|" if "\n" in text and all(line == line.rstrip() for line in text.splitlines()) else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", text, style=style)


class _Settings(dict[str, Any]):
    """Top-level settings, written one a line whatever their values (``key: value``, not
    ``{key: value}``)."""


_ProfileDumper.add_representer(str, _text_block)
_ProfileDumper.add_representer(
    _Settings, lambda dumper, data: dumper.represent_mapping("tag:yaml.org,2002:map", data, flow_style=False))


def words_kept(data: dict[str, Any], cls: type = Profile) -> None:
    """A word YAML read as a boolean (``mode: off``, ``flash_attn: on``) where the setting is a
    word: the word again, as the file had it (written back it said ``mode: false``)."""
    fields = {f.name: f for f in dataclasses.fields(cls)}
    for key, value in data.items():
        if key in PROFILE_SECTIONS and isinstance(value, dict) and cls is Profile:
            words_kept(value, PROFILE_SECTIONS[key])
        elif isinstance(value, bool) and key in fields and str(fields[key].type).startswith("str"):
            data[key] = "on" if value else "off"


def set_dotted(data: dict[str, Any], dotted: str, value: Any) -> None:
    """``data["kv_cache"]["k"] = value`` for ``kv_cache.k``: a section the file does not have is made."""
    *sections, name = dotted.split(".")
    for section in sections:
        inner = data.get(section)
        data[section] = inner = dict(inner) if isinstance(inner, dict) else {}
        data = inner
    data[name] = value


def _top_level_blocks(text: str, keys: list[str]) -> tuple[dict[str, tuple[str, str]], str]:
    """A profile file's text by its top-level settings: each key's (comment and blank lines
    above it, its own lines), and the lines after the last; nothing (``{}``) where the text is
    not laid out so plainly (a ``---``, a key in quotes, keys not as YAML read them)."""
    blocks: dict[str, tuple[str, str]] = {}
    pending: list[str] = []
    key: str | None = None
    for line in text.splitlines(keepends=True):
        line = line if line.endswith(("\n", "\r")) else line + "\n"  # (a last line without its end)
        bare = line.strip()
        if not bare or bare.startswith("#"):
            pending.append(line)
        elif line[0] in " \t" or line.startswith("- "):  # the setting above goes on (pending lines in it)
            if key is None:
                return {}, ""
            before, own = blocks[key]
            blocks[key] = (before, own + "".join(pending) + line)
            pending = []
        elif key is not None and (len(blocks) == len(keys) or line.partition(":")[0].rstrip() not in keys):
            # no setting's own line: the one above goes on at the line's start (a flow map's "}", a
            # quoted text's next line), as YAML reads it; every note in the file was lost on saving
            before, own = blocks[key]
            blocks[key] = (before, own + "".join(pending) + line)
            pending = []
        else:
            key = line.partition(":")[0].rstrip()
            if key not in keys or key in blocks or not line.partition(":")[1]:
                return {}, ""
            blocks[key] = ("".join(pending), line)
            pending = []
    if list(blocks) != keys:
        return {}, ""
    return blocks, "".join(pending)


def _same_setting(read: Any, value: Any) -> bool:
    """Whether a value YAML read (``off`` as False) is the setting ``value`` (``"off"``)."""
    if isinstance(read, bool) and isinstance(value, str):
        return value == ("on" if read else "off")
    if isinstance(read, dict) and isinstance(value, dict):  # (a section: each of its settings)
        return list(read) == list(value) and all(_same_setting(read[k], value[k]) for k in read)
    return repr(read) == repr(value)


def _dumped(key: str, value: Any) -> str:
    """``key: value`` as saving writes a setting (a section's in flow style: ``{k: q8_0, v: f16}``)."""
    return yaml.dump(_Settings({key: value}), Dumper=_ProfileDumper, sort_keys=False, allow_unicode=True,
                     default_flow_style=None, width=100)


def _line_set(line: str, key: str, old: Any, new: Any) -> str | None:
    """One line ``key: old  # note`` (indented or not) as ``key: new  # note``: the note at its end
    kept; None where the line is not that plainly one setting (a value over several lines)."""
    body = line.rstrip("\r\n")
    end = line[len(body):]
    indent = body[: len(body) - len(body.lstrip())]
    head, colon, rest = body.lstrip().partition(":")
    if head != key or not colon:
        return None
    # where its note starts: a # after a space that is not inside the value (a quoted "#" is text)
    starts = [i for i, c in enumerate(rest) if c == "#" and i and rest[i - 1] in " \t"] + [len(rest)]
    for i in starts:
        try:
            read = load_yaml(f"{key}:{rest[:i]}")
        except YamlError:
            continue
        if isinstance(read, dict) and key in read and _same_setting(read[key], old):
            written = _dumped(key, new)
            if written.count("\n") != 1:  # (a text of several lines: the whole setting is written again)
                return None
            value = rest[:i]
            gap = value[len(value.rstrip()):] if i < len(rest) else ""
            return indent + written.rstrip("\n") + gap + rest[i:] + end
    return None


def _block_set(block: str, key: str, old: Any, new: Any) -> str | None:
    """A top-level setting's own lines (``_top_level_blocks``) with ``new`` in place of ``old``,
    each line that changes rewritten alone: a note at a line's end, and the notes between a
    section's lines (``# note`` under ``kv_cache:``), kept. None where the lines are not laid out
    so plainly (a value over several lines): the setting is then written again whole."""
    lines = block.splitlines(keepends=True)
    content = [i for i, line in enumerate(lines) if line.strip() and not line.strip().startswith("#")]
    if len(content) == 1:  # (a value on its line: 4096, or {k: f16, v: f16})
        i = content[0]
        line = _line_set(lines[i], key, old, new)
        if line is None:
            return None
        lines[i] = line
    elif isinstance(old, dict) and isinstance(new, dict) and set(old) <= set(new):  # a section, one a line
        first, *inner = content
        if _line_set(lines[first], key, old, old) is not None or not inner:
            return None  # (its first line holds no value: "kv_cache:", or "kv_cache:  # note")
        indent = lines[inner[0]][: len(lines[inner[0]]) - len(lines[inner[0]].lstrip())]
        for name, value in new.items():
            if name in old and _same_setting(old[name], value):
                continue
            at = [i for i in inner if lines[i].startswith(indent + f"{name}:")]
            if name in old:
                line = _line_set(lines[at[0]], name, old[name], value) if len(at) == 1 else None
                if line is None:
                    return None
                lines[at[0]] = line
            else:  # a setting the section did not have: after its last line
                last = lines[inner[-1]]
                newline = last[len(last.rstrip("\r\n")):] or "\n"
                lines.insert(inner[-1] + 1, indent + _dumped(name, value).rstrip("\n") + newline)
                inner.append(inner[-1] + 1)
    else:
        return None
    text = "".join(lines)
    try:
        read = load_yaml(text)
    except YamlError:
        return None
    if isinstance(read, dict):
        words_kept(read)
    return text if isinstance(read, dict) and list(read) == [key] and repr(read[key]) == repr(new) else None


def save_profile(profile: Profile, path: Path, changes: Mapping[str, Any] | None = None) -> Profile:
    """Write a profile to ``path`` atomically; the profile as read back from it.

    With ``changes`` (settings by dotted name: ``{"context": 8192, "kv_cache.k": "q8_0"}``), the
    profile's own file (``profile.source``) is written again with only those set: the rest as the
    user wrote it, line for line (``_top_level_blocks``: its order, its comments, what it leaves
    to the defaults: written out, a ``parallel: 1`` would change what serve runs, a model named
    relative to the file); a setting changed keeps the comment lines above it, and only its lines
    that change are written again (``_block_set``), so a note at a line's end or between a
    section's lines stays (PyYAML keeps no comments, and a save took away every note in the file
    but those at its top). Written to
    another folder (a shipped profile's copy), a model file found beside the original is named
    by its whole path. The
    result is checked as loading it would check it (ProfileError) before anything is written.
    Without ``changes``: every setting of ``profile``."""
    from workstation.core.atomic import cannot_write, write_named_file

    blocks: dict[str, tuple[str, str]] = {}
    tail = ""
    written: dict[str, Any] = {}
    if changes is None or profile.source is None:
        data = profile.to_dict()
        data.pop("source", None)
        for name, value in (changes or {}).items():
            set_dotted(data, name, value)
    else:
        text = read_text_file(profile.source, "file.what_profile", ProfileError)
        written = dict(read_settings_file(profile.source) or {})
        data = copy.deepcopy(written)
        moved = path.absolute().parent != profile.source.absolute().parent
        for name, value in changes.items():
            set_dotted(data, name, value)
        words_kept(data)
        words_kept(written)
        for name, resolved in (("model", profile.model), ("draft_model", profile.speculative.draft_model)):
            section = data.get("speculative") if name == "draft_model" else data
            if moved and isinstance(section, dict) and isinstance(section.get(name), str) \
                    and resolved and section[name] != resolved and Path(resolved).is_absolute():
                section[name] = resolved  # (found beside the original: not beside the copy)
        blocks, tail = _top_level_blocks(text, list(written))
    parts = []
    for key, value in data.items():
        before, block = blocks.get(key, ("", ""))
        if block and repr(value) == repr(written.get(key)):
            parts.append(before + block)  # as the user wrote it
        elif block and (kept := _block_set(block, key, written.get(key), value)) is not None:
            parts.append(before + kept)  # only the lines changed written again: the notes in it kept
        else:
            parts.append(before + _dumped(key, value))
    text = "".join(parts) + tail
    read = load_yaml(text)
    if blocks and isinstance(read, dict):
        words_kept(read)
        if repr(read) != repr(data):  # (lines split otherwise than YAML reads them: every setting written out)
            text = "".join(_dumped(key, value) for key, value in data.items())
            read = load_yaml(text)
    profile_from_dict(read, str(path), source=path)  # (refused as loading it would refuse it)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)  # (the user's profiles folder, for a first copy)
    except OSError as err:
        raise ProfileError(said=cannot_write(path, err)) from err
    write_named_file(path, text, ProfileError)
    return load_profile_file(path)
