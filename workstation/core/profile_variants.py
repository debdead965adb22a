"""A profile's variant for one run: -p "office-cpu kv_cache=q8_0 context=8192", the profile with
those settings changed, its file left as it is, and what they change in words ("K/V half size")."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any

from workstation.core.errors import ProfileError
from workstation.core.letters import shortened
from workstation.core.paths import typed_path
from workstation.core.phrases import Lookup, Phrase, say
from workstation.core.profile_check import (
    NOT_SETTINGS,
    PROFILE_SECTIONS,
    check_choice,
    profile_file_problem,
    profile_from_dict,
)
from workstation.core.profile_folders import named_profile_file
from workstation.core.profile_lookup import load_profile
from workstation.core.profile_saving import set_dotted, words_kept
from workstation.core.profiles import KV_CACHE_TYPES, Profile, kv_words
from workstation.core.settings_file import YamlError, load_yaml

# "office-cpu kv_cache=q8_0 context=8192": a setting starts at a word followed by "=", after a space
_VARIANT_SETTING = re.compile(r"\s+(?=[A-Za-z_][\w.]*=)")
# a section given one value on the command line: the settings of it the value is for
_SECTION_SHORTHANDS: dict[str, tuple[str, ...]] = {"kv_cache": ("k", "v"), "speculative": ("mode",)}
SPEC_WORDS = {"off": "no drafting", "lookup": "prompt lookup", "draft": "a draft model"}
VARIANT_HELP = ('; settings after it, as NAME=VALUE, change them for this run only, its file left as it is '
                '("office-cpu kv_cache=q8_0", "office-cpu context=8192 speculative=lookup")')


def variant_settings(ref: str) -> tuple[str | None, list[tuple[str, str]]]:
    """-p's profile and the settings after it: ``("office-cpu", [("kv_cache", "q8_0")])`` of
    "office-cpu kv_cache=q8_0"; settings alone are the default profile's (None)."""
    base, *settings = _VARIANT_SETTING.split(ref.strip())
    if re.match(r"[A-Za-z_][\w.]*=", base):  # (no profile before them)
        base, settings = "", [base, *settings]
    pairs = [(name, text) for name, _, text in (s.partition("=") for s in settings)]
    return base or None, pairs


def load_variant(ref: str | None) -> Profile:
    """``load_profile``, where settings may follow the profile ("office-cpu kv_cache=q8_0
    context=8192"): the profile with those changed for this run, its file left as it is, so that
    bench, eval and fit compare one setting without a second profile written by hand. Each is set
    as F3's E saves a setting (by dotted name, ``set_dotted``; ``kv_cache=q8_0`` sets K and V,
    ``speculative=lookup`` the mode) and the profile checked as its file is; a bad name or value
    is a ProfileError naming it and what it may be. Its key says what differs ("office-cpu · K/V
    half size"); its ref is ``ref`` (what loads it again)."""
    if ref is None or typed_path(ref).exists():
        return load_profile(ref)
    base_ref, settings = variant_settings(ref)
    if not settings:
        try:
            return load_profile(ref)
        except ProfileError:
            first, *rest = ref.split(maxsplit=1)
            if not rest or named_profile_file(f"{first}.yaml") is None and not typed_path(first).is_file():
                raise
            raise ProfileError(f"'{' '.join(ref.split())}': '{rest[0]}' has no value; a setting after the profile "
                               "is written NAME=VALUE, as kv_cache=q8_0.") from None
    base = load_profile(base_ref)
    src = f"'{' '.join(ref.split())}'"
    data = base.to_dict()
    data.pop("source", None)
    names: list[str] = []
    for name, text in settings:
        value = _typed_value(text)
        for dotted in _setting_names(src, name, value):
            set_dotted(data, dotted, value)
        names.append(name)
    words_kept(data)
    variant = profile_from_dict(data, src, source=base.source)
    variant.written = base.written | {name.partition(".")[0] for name in names}
    variant.variant = " ".join(f"{name}={text}" for name, text in settings)
    variant.variant_words = _variant_words(variant, names)
    return variant


def _typed_value(text: str) -> Any:
    """A setting's value as the profile's YAML would read it (8192 a number, ``off`` a word, ``null``
    none); a text YAML reads otherwise ("Be brief: one line", a mapping) as it was typed."""
    if not text.strip():
        return ""
    try:
        value = load_yaml(text)
    except YamlError:
        return text
    return text if isinstance(value, dict) else value


def _setting_names(src: str, name: str, value: Any) -> list[str]:
    """The dotted settings ``name`` sets (``kv_cache``: kv_cache.k and kv_cache.v); ProfileError
    for a name that is no profile setting, with the one meant where it is close to one."""
    import difflib

    top = [f.name for f in dataclasses.fields(Profile) if f.name not in NOT_SETTINGS]
    inner = {section: [f"{section}.{f.name}" for f in dataclasses.fields(cls)] for section, cls in PROFILE_SECTIONS.items()}
    head, _, rest = name.partition(".")
    if head in PROFILE_SECTIONS and not rest:
        if head not in _SECTION_SHORTHANDS:
            raise ProfileError(f"{src}: '{head}' holds several settings: give one as {head}.NAME=VALUE "
                               f"({', '.join(inner[head])}).")
        if head == "kv_cache":  # (one sentence for the value, not one for K and one for V)
            check_choice(src, head, value, list(KV_CACHE_TYPES))
        return [f"{head}.{part}" for part in _SECTION_SHORTHANDS[head]]
    if name in inner.get(head, []) or (name in top and head not in PROFILE_SECTIONS):
        return [name]
    names = inner[head] if head in PROFILE_SECTIONS else [n for n in top if n not in PROFILE_SECTIONS] + list(PROFILE_SECTIONS)
    # the shorthands too: "kvcache" was meant as kv_cache (K and V), not the 'kv_cache.v' it was offered
    everything = [n for n in top if n not in PROFILE_SECTIONS] + list(_SECTION_SHORTHANDS) + [
        n for dotted in inner.values() for n in dotted]
    meant = [n for n in everything if n.rpartition(".")[2] == name] or difflib.get_close_matches(
        name, everything, n=1, cutoff=0.75)
    hint: Phrase = ("profile.hint_close", {"name": meant[0]}) if meant else \
        ("profile.hint_fields", {"names": ", ".join(names)})
    raise profile_file_problem(src, "profile.unknown", field=name, hint=hint)


def profile_key(profile: Profile, lookup: Lookup | None = None) -> str:
    """``Profile.key`` in ``lookup``'s language: a variant's settings in its words ("office-cpu ·
    K/V yarı boy"); eval --lang tr said "K/V half size" in a Turkish table."""
    if not profile.variant or lookup is None:
        return profile.key
    names = [name for name, _ in variant_settings(profile.variant)[1]]
    return f"{profile._file_key} · {_variant_words(profile, names, lookup)}"


def _variant_words(profile: Profile, names: list[str], lookup: Lookup | None = None) -> str:
    """What a variant's settings change, in words: "K/V half size", "context 8,192", "prompt lookup"
    (K/V and context in ``lookup``'s language: ``kv_words``)."""
    said: list[str] = []
    for name in names:
        head = name.partition(".")[0]
        if head == "kv_cache":  # ("K full size, V a quarter" for two types)
            words = kv_words(profile.kv_cache, lookup, usual=True)
            words = say([("variant.kv", {"kv": words})], lookup) if profile.kv_cache.k == profile.kv_cache.v else words
        elif head == "context":
            words = say([("variant.context", {"n": f"{profile.context:,}"})], lookup)
        elif name in ("speculative", "speculative.mode"):
            words = SPEC_WORDS.get(profile.speculative.mode, profile.speculative.mode)
        elif name in ("model", "speculative.draft_model"):  # whole: two quantizations of one model differ
            # at the end of their names ("office-cpu · model SmolLM2-135M-Instruct.Q…" named Q8_0 and Q4_0 alike)
            file = Path(str(getattr(profile, name) if name == "model" else profile.speculative.draft_model))
            words = file.stem if file.suffix.lower() == ".gguf" else file.name
            words = words if name == "model" else f"draft {words}"
        else:
            value: Any = profile
            for part in name.split("."):
                value = getattr(value, part)
            words = f"{name.rpartition('.')[2]} {shortened(' '.join(str(value).split()), 24)}"
        if words not in said:
            said.append(words)
    return ", ".join(said)
