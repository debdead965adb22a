"""Profiles: one YAML file per way of running a model.

A profile says which model to run and how: context size, GPU layers, threads, flash attention,
K and V cache types, speculative decoding, sampling and the system prompt. This module holds
the settings (``Profile`` and its sections); its parts: reading and checking a profile's file
(``profile_check.py``: validation names the file, the field, the bad value and what is allowed,
in one sentence), finding one (``profile_lookup.py``), where the files are
(``profile_folders.py``), -p's variants (``profile_variants.py``), saving one
(``profile_saving.py``) and a settings file's YAML (``settings_file.py``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from workstation.core.phrases import Lookup, local_number, say
from workstation.core.profile_folders import link_path, named_profile_file

# GGML type ids llama.cpp accepts for the K and V caches.
KV_CACHE_TYPES: dict[str, int] = {
    "f32": 0,
    "f16": 1,
    "q4_0": 2,
    "q4_1": 3,
    "q5_0": 6,
    "q5_1": 7,
    "q8_0": 8,
    "iq4_nl": 20,
    "bf16": 30,
}
BACKENDS = ("llama", "openai")
FLASH_ATTN = ("auto", "on", "off")
SPEC_MODES = ("off", "draft", "lookup")
DEFAULT_PROFILE = "office-cpu"


@dataclass
class KVCache:
    k: str = "f16"
    v: str = "f16"

    @property
    def quantized_v(self) -> bool:
        return self.v not in ("f16", "f32", "bf16")


def under_file_of(profile: Profile, other: Profile) -> Profile:
    """``profile``'s settings under ``other``'s file and names: a profile loading while F3's E
    saved it as the user's own copy ("… (my copy)"), or Ctrl+R put the copy back to the shipped
    one, is that file now; the copy's name stayed on the status bar until it loaded again."""
    return dataclasses.replace(profile, source=other.source, name=other.name, name_tr=other.name_tr)


def kv_words(kv: KVCache, lookup: Lookup | None = None, usual: bool = False) -> str:
    """The K/V cache types in plain words, as E's help says them ("half size" for q8_0/q8_0,
    "K half size, V full size"): F3's list and the status bar said "KV q8_0/q8_0", and
    'profiles list' "q8_0/q8_0". Nothing for the usual f16/f16 (the default: nothing to tell;
    "memory exact" read as the PC's memory, and cut the model's name on the status bar at 80
    columns), but where a column or a sentence names each one's (``usual``: "full size";
    'profiles list' left its cell empty). ``lookup``: the app's language (``Texts.get``); none: English."""
    if kv == KVCache() and not usual:
        return ""
    k, v = (say([(f"kv.{c}", {})], lookup) if c in KV_CACHE_TYPES else c for c in (kv.k, kv.v))
    return k if k == v else say([("kv.pair", {"k": k, "v": v})], lookup)


def kv_said(kv: KVCache, lookup: Lookup | None = None) -> str:
    """'profiles show''s "context memory half size" (``kv_words``); nothing for f16/f16."""
    words = kv_words(kv, lookup)
    return say([("kv.said", {"kv": words})], lookup) if words else ""


@dataclass
class Speculative:
    mode: str = "off"
    draft_model: str | None = None
    draft_tokens: int = 8
    draft_gpu_layers: int | str = "auto"
    ngram: int = 3  # prompt lookup: longest n-gram to match


@dataclass
class Sampling:
    temperature: float = 0.7
    top_p: float = 0.95
    top_k: int = 40
    min_p: float = 0.05
    repeat_penalty: float = 1.1
    # OpenAI's: subtracted from a token's logit once it appeared in the last 64 tokens (the
    # prompt's end, then the reply: llama-server's window) (presence), or for each time it did
    # (frequency); llama.cpp's penalties sampler
    presence_penalty: float = 0.0
    frequency_penalty: float = 0.0
    max_tokens: int = 1024
    seed: int | None = None
    # the reply ends before any of these texts (a request's own ``stop`` replaces them)
    stop: list[str] = field(default_factory=list)
    ignore_eos: bool = False  # benchmarks: always generate max_tokens
    # a reply that began repeating itself (the same sentence or list item again and again) ends
    # there, its first copy kept (core/loops.py; stop_reason "loop")
    stop_on_loop: bool = True
    # a request's, never a profile's: the copies its message asked for ("write it 10 times"), that
    # many allowed before the loop stop (``loops.watched``)
    loop_copies: int = 0
    # a request's too: the things its message lists or counts out ("each of F-011, F-012 and F-013"), as
    # many copies alike but for their numbers allowed (``loops.items_asked``)
    loop_items: int = 0


def sampling_name(name: str, lookup: Lookup | None = None) -> str:
    """A sampling setting's name: in English the profile file's (temperature, top_p), in another
    language Ctrl+E's (Turkish "Sıcaklık", "Tohum"), as 'profiles check' and bench say them."""
    return (lookup(f"sampling.{name}") if lookup is not None else None) or name


def sampling_number(value: float | int, lookup: Lookup | None = None) -> str:
    """A sampling setting's value: in English as a profile's file writes it (0.7, 1024), in
    another language as Ctrl+E shows it (Turkish 0,7 and 1.024)."""
    if lookup is None:
        return f"{value:g}" if isinstance(value, float) else str(value)
    return local_number(f"{value:g}" if isinstance(value, float) else f"{value:,}", lookup)


@dataclass
class Constraints:
    """What one request asks beyond the profile's sampling settings (the API's fields, never a
    profile's): a GBNF grammar the reply must match (``""``: none), a bias added to chosen
    tokens' logits, and how many most likely tokens to report with each reply token.
    ``json_schema``: the schema ``grammar`` was made from (``core/structured_output.py``), so a
    remote server can be asked for it as ``response_format``. ``preserved_tokens``: control
    tokens streamed as their text (a tool-call format's markers, llama.cpp's
    ``preserved_tokens``); other control tokens stream as nothing."""

    grammar: str = ""
    logit_bias: dict[int, float] = field(default_factory=dict)
    n_probs: int = 0
    json_schema: dict[str, Any] | None = None
    preserved_tokens: frozenset[int] = frozenset()

    @property
    def active(self) -> bool:
        """True when the reply's tokens depend on more than the sampling settings (drafting
        and the argmax shortcut are off then)."""
        return bool(self.grammar or self.logit_bias)


@dataclass
class Remote:
    """Settings for ``backend: openai``."""

    base_url: str = "http://127.0.0.1:8088/v1"
    model: str = ""
    api_key_env: str | None = None
    # a file whose first line is the key (``~/.config/workstation/api-key``, chmod 600): kept out
    # of the environment every program of the session sees; a file others may read is refused
    api_key_file: str | None = None
    timeout_s: float = 600.0

    @property
    def server_name(self) -> str:
        """The office server as the app names it: its host and port (``10.0.0.5:8088``), else the
        address as written."""
        return urlsplit(self.base_url).netloc or self.base_url


SERVE_SLOTS = 4


@dataclass
class Profile:
    name: str
    model: str = ""
    backend: str = "llama"
    context: int = 4096
    gpu_layers: int | str = "auto"
    threads: int | str = "auto"
    parallel: int = 1  # slots: requests decoded together in one context (serve's --parallel wins)
    flash_attn: str = "auto"
    kv_cache: KVCache = field(default_factory=KVCache)
    speculative: Speculative = field(default_factory=Speculative)
    sampling: Sampling = field(default_factory=Sampling)
    system_prompt: str = ""
    # false: a reasoning model is asked not to think (its template's enable_thinking, as
    # Qwen3's has; llama-server's reasoning budget 0); models that always think still do
    thinking: bool = True
    remote: Remote = field(default_factory=Remote)
    description: str = ""
    name_tr: str = ""  # the name and description the Turkish UI shows (empty: the English ones)
    description_tr: str = ""
    source: Path | None = None  # the YAML file it came from
    written: frozenset[str] = frozenset()  # the settings its file wrote (the rest are defaults)
    # a variant of the file's profile for one run (``load_variant``): the settings -p changed, as
    # typed ("kv_cache=q8_0"), and what they change in words ("K/V half size")
    variant: str = ""
    variant_words: str = ""

    def slots_to_serve(self) -> int:
        """The slots ``serve`` (and the app's Ctrl+G) runs without ``--parallel``: the profile's
        ``parallel`` where its file sets it, else SERVE_SLOTS (a server is for several people)."""
        return self.parallel if "parallel" in self.written else SERVE_SLOTS

    def title(self, lang: str = "en") -> str:
        """The profile's name in the UI's language (``name_tr`` in Turkish where it has one)."""
        return (self.name_tr if lang == "tr" else "") or self.name

    def about(self, lang: str = "en") -> str:
        """What the profile is for, in the UI's language, on one line."""
        return " ".join(((self.description_tr if lang == "tr" else "") or self.description).split())

    def template_variables(self) -> dict[str, Any]:
        """What the chat template is given besides the messages (llama.cpp passes the same)."""
        return {"enable_thinking": self.thinking}

    @property
    def key(self) -> str:
        """Short name used on the command line (the file stem); a variant's says what differs
        ("office-cpu · K/V half size")."""
        own = self._file_key
        return f"{own} · {self.variant_words}" if self.variant else own

    @property
    def _file_key(self) -> str:
        return self.source.stem if self.source else self.name

    @property
    def ref(self) -> str:
        """What ``load_profile`` takes to load this profile again, as a saved conversation keeps
        it: its key where the key finds this file (in the user's profiles or the shipped ones),
        else the file's whole path (a desk PC's own desk.yaml, given as ``-p ~/desk.yaml``, or
        a shipped file the user's own of the same name hides: by its key alone it could not be
        found again; a model file given to -p, by its path). A variant's: that, then its settings
        (what ``load_variant`` takes)."""
        if self.variant:
            return f"{dataclasses.replace(self, variant='').ref} {self.variant}"
        if self.source is None:
            return self.name
        if self.source.suffix.lower() == ".gguf":  # a model file run as it is: by its path (a link's own)
            return str(link_path(self.source))
        source = self.source.resolve()
        found = named_profile_file(self._file_key + source.suffix)
        return self._file_key if found is not None and found.resolve() == source else str(source)

    def resolved_threads(self) -> int:
        if isinstance(self.threads, int):
            return self.threads
        from workstation.core.hardware import count_physical_cores

        return count_physical_cores()

    def resolved_flash_attn(self) -> bool:
        """Flash attention on or off; ``auto`` turns it on (the CPU and CUDA builds support it)."""
        if self.flash_attn == "off":
            return False
        return True

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["source"] = str(self.source) if self.source else None
        for name in ("written", "variant", "variant_words"):
            data.pop(name, None)
        return data


# the most columns a profile's shown name takes on the status line (the model, its state and the
# GPU share beside it at 80 columns); a longer one ends in "…"
PROFILE_SAID_MOST = 28


def profile_said(profile: Profile, lang: str, most: int | None = PROFILE_SAID_MOST) -> str:
    """A profile as the status line names it: its shown name in the UI's language, as F3 lists it
    (``Profile.title``; it said the file's id "long-documents" where F3 said "Uzun belgeler
    (kopyam)"), cut to ``most`` (None: whole, where the line has room for it), with what a variant (-p NAME:...) changes. The
    one naming of a profile: the office server says its own so (``/v1/models``' meta), for a
    desk PC's ``profiles check`` and F3 ("serving office-cpu" named the file)."""
    from workstation.core.letters import shortened

    title = profile.title(lang)
    if most is None:
        return f"{title} · {profile.variant_words}" if profile.variant else title
    # a copy's mark ("… (my copy)", "(kopyam)") is kept whole: cut from the name before it, or
    # the status line showed "Ofis CPU'su — SmolLM2 135M …" of the user's copy and of the app's
    head, mark = (title[: title.rindex(" (")], title[title.rindex(" ("):]) if title.endswith(")") and " (" in title \
        else (title, "")
    if len(title) > most and mark and len(mark) <= most // 2:
        said = shortened(head, most - len(mark)) + mark
    else:
        said = shortened(title, most)
    return f"{said} · {profile.variant_words}" if profile.variant else said
