"""Profiles: one YAML file per way of running a model.

A profile says which model to run and how: context size, GPU layers, threads, flash attention,
K and V cache types, speculative decoding, sampling and the system prompt. Validation names
the file, the field, the bad value and what is allowed, in one sentence.
"""

from __future__ import annotations

import dataclasses
import itertools
import reprlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from workstation.core.errors import ProfileError
from workstation.core.letters import alphabetical
from workstation.core.paths import given_profile_folders, profile_folders, typed_path
from workstation.core.phrases import Lookup, Phrase, say

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


# a profile's settings that are sections of their own: a dataclass each
PROFILE_SECTIONS: dict[str, type] = {
    "kv_cache": KVCache,
    "speculative": Speculative,
    "sampling": Sampling,
    "remote": Remote,
}


NOT_SETTINGS = ("source", "written", "variant", "variant_words")  # what loading a profile records, never written in one


def profile_file_problem(src: str, key: str, **values: Any) -> ProfileError:
    """A profile file's problem as phrases (core/phrases.py), so the app says it in its own
    language: the file first (``profile.in``, left out where several are said together), then
    the sentence ``key`` (its English in phrases.ENGLISH) with ``values``."""
    return ProfileError(said=[("profile.in", {"src": src}), (key, values)])


MAX_QUOTED_CHARS = 60  # an error message quotes at most this much of a bad value
_SHORT_REPR = reprlib.Repr()
_SHORT_REPR.maxstring = _SHORT_REPR.maxother = MAX_QUOTED_CHARS
_SHORT_REPR.maxlist = _SHORT_REPR.maxdict = 4


def short_repr(value: Any) -> str:
    """``repr(value)`` for an error message, cut short if long (a bad value can be huge)."""
    text = _SHORT_REPR.repr(value)
    return text if len(text) <= 2 * MAX_QUOTED_CHARS else text[: 2 * MAX_QUOTED_CHARS] + "..."


def _check_type(src: str, dotted: str, value: Any, expected: Any) -> Any:
    """Coerce/validate one scalar against the dataclass annotation (as a string)."""
    exp = str(expected)
    if value is None and "None" in exp:
        return None
    if "int | str" in exp:
        if isinstance(value, bool) or not isinstance(value, int | str):
            raise profile_file_problem(src, "profile.whole_or_word", field=dotted, value=short_repr(value))
        return value
    if exp.startswith("int"):
        if isinstance(value, bool) or not isinstance(value, int):
            raise profile_file_problem(src, "profile.whole", field=dotted, value=short_repr(value))
        return value
    if exp.startswith("float"):
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise profile_file_problem(src, "profile.number", field=dotted, value=short_repr(value))
        return float(value)
    if exp.startswith("str"):
        if isinstance(value, bool):  # YAML 1.1 reads a bare on/off as a boolean
            return "on" if value else "off"
        if not isinstance(value, str):
            raise profile_file_problem(src, "profile.text", field=dotted, value=short_repr(value))
        return value
    if exp.startswith("list[str]"):
        if isinstance(value, str):  # one text: the list of it
            return [value]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise profile_file_problem(src, "profile.texts", field=dotted, value=short_repr(value))
        return list(value)
    if exp.startswith("bool") and not isinstance(value, bool):
        raise profile_file_problem(src, "profile.true_false", field=dotted, value=short_repr(value))
    return value


def _field_hint(key: str, value: Any, names: list[str], sections: dict[str, type],
                data: dict[Any, Any]) -> Phrase | None:
    """What a misspelt field (contex) or one that belongs in a section (temperature, or
    temprature, at the top: it goes under sampling) was meant to be, as a phrase; None for no guess."""
    import difflib

    close = difflib.get_close_matches(key, names, n=1, cutoff=0.8)
    if close:
        return ("profile.hint_close", {"name": close[0]})
    for section, cls in sections.items():
        close = difflib.get_close_matches(key, [f.name for f in dataclasses.fields(cls)], n=1, cutoff=0.8)
        if close:
            said = {"name": close[0], "value": short_repr(value), "section": section}
            if section in data:  # a second sampling: block would replace the first (refused, too)
                return ("profile.hint_belongs_in_block" if close[0] == key else "profile.hint_meant_in_block", said)
            return ("profile.hint_belongs_under" if close[0] == key else "profile.hint_meant_under", said)
    return None


def _build(cls: type, data: Any, src: str, prefix: str, sections: dict[str, type] | None = None,
           problems: list[ProfileError] | None = None, failed: set[str] | None = None) -> Any:
    """A dataclass from a YAML mapping: unknown fields and wrong types are refused in one
    sentence; ``sections`` names the fields that are nested dataclasses (a profile's by default).
    With ``problems``, each field's problem is added to it and the field left at its default
    (so that a file's every mistake is said at once: three typos took three runs)."""
    sections = PROFILE_SECTIONS if sections is None else sections
    if not isinstance(data, dict):
        raise profile_file_problem(src, "profile.mapping", field=prefix, value=short_repr(data))
    fields = {f.name: f for f in dataclasses.fields(cls)}
    kwargs: dict[str, Any] = {}
    for key, value in data.items():
        dotted = f"{prefix}.{key}" if prefix else str(key)
        before = len(problems) if problems is not None else 0
        with _noted(problems):
            if dotted == "remote.api_key":  # a key is a person's secret: not in a file others read
                raise profile_file_problem(src, "profile.api_key")
            if key not in fields or key in NOT_SETTINGS:
                names = [n for n in fields if n not in NOT_SETTINGS]
                said = _field_hint(str(key), value, names, sections if not prefix else {}, data)
                raise profile_file_problem(src, "profile.unknown", field=dotted,
                               hint=said or ("profile.hint_fields", {"names": ", ".join(names)}))
            if key in sections:
                kwargs[key] = _build(sections[key], value, src, dotted, sections, problems, failed)
            else:
                kwargs[key] = _check_type(src, dotted, value, fields[key].type)
        if failed is not None and problems is not None and len(problems) > before:
            failed.add(dotted)  # (left at its default: not said again as missing)
    if problems:  # a field it cannot be without (a name) that had a problem: a stand-in, the rest still checked
        for f in dataclasses.fields(cls):
            if f.name not in kwargs and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                kwargs[f.name] = ""
    return cls(**kwargs)


@contextmanager
def _noted(problems: list[ProfileError] | None) -> Iterator[None]:
    """A check whose ProfileError is added to ``problems`` (None: raised as it is)."""
    try:
        yield
    except ProfileError as err:
        if problems is None:
            raise
        problems.append(err)


def _together(src: str, problems: list[ProfileError]) -> ProfileError:
    """One error for a file's problems: the one as it is, several numbered in one sentence;
    in phrases, the file said once, so the app says all of it in its own language."""
    if len(problems) == 1:
        return problems[0]
    items: list[Phrase] = []
    for i, problem in enumerate(problems, 1):
        said = [phrase for phrase in problem.said if phrase[0] != "profile.in"]
        text: str | list[Phrase] = said or str(problem).removeprefix(f"{src}: ").strip()
        if isinstance(text, str) and not text.endswith((".", "?", "!")):
            text += "."
        items += [("profile.next", {})] * (i > 1) + [("profile.item", {"i": str(i), "text": text})]
    return ProfileError(said=[("profile.problems", {"src": src, "n": str(len(problems)), "list": items})])


def check_choice(src: str, dotted: str, value: Any, allowed: tuple[str, ...] | list[str]) -> None:
    """ProfileError where ``value`` is none of ``allowed``: the field, the value and what it may be."""
    if value not in allowed:
        raise profile_file_problem(src, "profile.choice", field=dotted, value=short_repr(value), allowed=", ".join(allowed))


# llama.cpp runs any context of 1 cell and up (it keeps at least 256 cells per sequence in
# memory, padded); a slot needs one prompt token and one reply token, so 2 is the floor here.
MIN_CONTEXT = 2
MAX_CONTEXT = 1_048_576
CONTEXT_RANGE = (f"allowed values are {MIN_CONTEXT} to {MAX_CONTEXT:,} tokens (a context must hold a prompt "
                 "token and a reply token)")


def context_allowed(n: int) -> bool:
    """Whether a profile (or fit --context) may plan ``n`` cells of context."""
    return MIN_CONTEXT <= n <= MAX_CONTEXT


def validate(profile: Profile, src: str, problems: list[ProfileError] | None = None) -> Profile:
    """Check values that the types alone do not catch; returns the profile. With ``problems``,
    each check's problem is added to it (every one said at once), else the first is raised."""
    with _noted(problems):
        check_choice(src, "backend", profile.backend, BACKENDS)
    if profile.backend == "llama" and not profile.model:
        with _noted(problems):
            raise profile_file_problem(src, "profile.no_model")
    with _noted(problems):
        if not context_allowed(profile.context):
            raise profile_file_problem(src, "profile.context", value=str(profile.context), low=str(MIN_CONTEXT),
                           high=f"{MAX_CONTEXT:,}")
    gl = profile.gpu_layers
    with _noted(problems):
        if isinstance(gl, str) and gl not in ("auto", "all") or isinstance(gl, bool) or (
            isinstance(gl, int) and gl < 0
        ):
            raise profile_file_problem(src, "profile.gpu_layers", value=short_repr(gl))
    th = profile.threads
    with _noted(problems):
        if isinstance(th, str) and th != "auto" or isinstance(th, bool) or (
            isinstance(th, int) and not 1 <= th <= 512
        ):
            raise profile_file_problem(src, "profile.threads", value=short_repr(th))
    with _noted(problems):
        if not 1 <= profile.parallel <= 64:
            raise profile_file_problem(src, "profile.parallel", value=str(profile.parallel))
    profile.remote.base_url = profile.remote.base_url.strip()  # a paste's spaces
    parts = urlsplit(profile.remote.base_url)
    with _noted(problems):
        if profile.backend == "openai" and (parts.scheme.lower() not in ("http", "https") or not parts.netloc):
            raise profile_file_problem(src, "profile.base_url", value=short_repr(profile.remote.base_url))
    for field_name, value, allowed in (("flash_attn", profile.flash_attn, FLASH_ATTN),
                                       ("kv_cache.k", profile.kv_cache.k, list(KV_CACHE_TYPES)),
                                       ("kv_cache.v", profile.kv_cache.v, list(KV_CACHE_TYPES))):
        with _noted(problems):
            check_choice(src, field_name, value, allowed)
    with _noted(problems):
        if profile.kv_cache.quantized_v and profile.flash_attn == "off":
            raise profile_file_problem(src, "profile.v_needs_flash", v=profile.kv_cache.v)
    spec = profile.speculative
    with _noted(problems):
        check_choice(src, "speculative.mode", spec.mode, SPEC_MODES)
    with _noted(problems):
        if spec.mode == "draft" and not spec.draft_model:
            raise profile_file_problem(src, "profile.draft_missing")
    with _noted(problems):
        if not 1 <= spec.draft_tokens <= 64:
            raise profile_file_problem(src, "profile.draft_tokens", value=str(spec.draft_tokens))
    with _noted(problems):
        try:
            check_sampling(profile.sampling, lambda name: ("profile.field", {"field": f"sampling.{name}"}))
        except ProfileError as err:  # named as the file's other fields are
            raise ProfileError(said=[("profile.in", {"src": src}), *err.said]) from None
    return profile


MAX_STOPS = 16  # as many stop texts as serve takes in a request
# the bounds a profile, chat's options, Ctrl+E and serve's requests share (a desk PC's setting
# that its server refuses was a turn that failed with HTTP 400)
MAX_TOP_K = 1_000_000
MIN_REPEAT_PENALTY, MAX_REPEAT_PENALTY = 0.01, 10.0
MAX_PREDICT = 10_000_000


RANDOM_SEED = 0xFFFFFFFF  # llama.cpp's LLAMA_DEFAULT_SEED: a new seed each time (-1 as a request sends it)


def fixed_seed(s: Sampling) -> int | None:
    """The seed a reply is drawn with, None for a new one each time: none set, or -1 (llama.cpp's
    and llama-server's "random", 0xFFFFFFFF unsigned). Another negative one is its unsigned
    32 bits, as serve takes it. numpy refused -1 (a speculative profile failed every turn) and
    took 0xFFFFFFFF as fixed where llama.cpp does not."""
    if s.seed is None:
        return None
    seed = s.seed & 0xFFFFFFFF
    return None if seed == RANDOM_SEED else seed


def sampling_changes(sampling: Sampling, base: Sampling, names: Iterable[str]) -> dict[str, Any]:
    """The settings among ``names`` that ``sampling`` has other than ``base`` (the profile's),
    by field, as a reply's record keeps them; the seed compared as drawn (-1 and none are both
    "a new seed each time")."""
    mine, its = (dataclasses.replace(s, seed=fixed_seed(s)) for s in (sampling, base))
    return {name: getattr(mine, name) for name in names if getattr(mine, name) != getattr(its, name)}


def with_own_sampling(base: Sampling, own: Mapping[str, Any]) -> Sampling | None:
    """``base`` (a profile's sampling) with a conversation's own settings (a record of
    ``sampling_changes``) in their place; None where they change nothing, or where any of them
    cannot be used (a damaged record, a field unknown here, a value out of range): the profile's
    then, as they are."""
    if not own:
        return None
    fields = {f.name: f for f in dataclasses.fields(Sampling)}
    try:
        values = {name: _check_type("<conversation>", f"sampling.{name}", value, fields[name].type)
                  for name, value in own.items()}
        sampling = dataclasses.replace(base, **values)
        check_sampling(sampling, str)
    except (KeyError, TypeError, ProfileError):
        return None
    return sampling if sampling_changes(sampling, base, values) else None


def check_sampling(s: Sampling, name_of: Callable[[str], str | Phrase]) -> None:
    """ProfileError where a sampling setting is out of range; ``name_of("temperature")`` names it
    as the person set it (a profile's field, ``--temperature``, or Ctrl+E's "Sıcaklık": chat took
    -1 and 0 tokens). Said in phrases, so the app says it in its own language."""

    def refuse(key: str, name: str, value: object = "", **bounds: object) -> None:
        raise ProfileError(said=[(key, {"name": name_of(name), "value": str(value),
                                        **{k: str(v) for k, v in bounds.items()}})])

    if not 0.0 <= s.temperature <= 5.0:
        refuse("check.between", "temperature", s.temperature, low=0, high=5)
    if not 0.0 < s.top_p <= 1.0:
        refuse("check.above_zero", "top_p", s.top_p, high=1)
    if not 0.0 <= s.min_p <= 1.0:
        refuse("check.between", "min_p", s.min_p, low=0, high=1)
    if not 0 <= s.top_k <= MAX_TOP_K:
        refuse("check.between_off", "top_k", s.top_k, low=0, high=f"{MAX_TOP_K:,}", off=0)
    if not MIN_REPEAT_PENALTY <= s.repeat_penalty <= MAX_REPEAT_PENALTY:
        refuse("check.between_off", "repeat_penalty", s.repeat_penalty, low=MIN_REPEAT_PENALTY,
               high=f"{MAX_REPEAT_PENALTY:g}", off=1)
    for name in ("presence_penalty", "frequency_penalty"):
        if not -2.0 <= getattr(s, name) <= 2.0:
            refuse("check.between_off", name, getattr(s, name), low=-2, high=2, off=0)
    if len(s.stop) > MAX_STOPS or not all(s.stop):
        refuse("check.stops", "stop", most=MAX_STOPS)
    if not 1 <= s.max_tokens <= MAX_PREDICT:
        refuse("check.between", "max_tokens", s.max_tokens, low=1, high=f"{MAX_PREDICT:,}")


def option_name(field: str) -> str:
    """A sampling field as the command line's option: max_tokens -> --max-tokens."""
    return "--" + field.replace("_", "-")


def profile_from_dict(data: Any, src: str = "<profile>", source: Path | None = None) -> Profile:
    if data is None:  # ("a profile must be a YAML mapping of settings" was jargon for an empty file)
        raise ProfileError(f"{src} is empty; a profile holds settings, one a line, such as 'model: NAME'.")
    if not isinstance(data, dict):
        raise ProfileError(f"{src}: a profile holds settings, one a line, such as 'model: NAME' "
                           "(this file holds something else).")
    data = dict(data)
    data.setdefault("name", source.stem if source else "profile")
    problems: list[ProfileError] = []  # every one said at once (three typos took three runs)
    failed: set[str] = set()  # the fields whose own problem was said
    profile = _build(Profile, data, src, "", problems=problems, failed=failed)
    profile.source = source
    profile.written = frozenset(str(k) for k in data)
    if source is not None:
        profile.model = _beside(profile.model, source)
        if profile.speculative.draft_model:
            profile.speculative.draft_model = _beside(profile.speculative.draft_model, source)
    validate(profile, src, problems)
    # (a field left out for its own problem is not said again as "missing"; one written empty is)
    problems = [p for p in problems if not ("field 'model' is missing" in str(p) and "model" in failed)]
    if problems:
        raise _together(src, problems)
    return profile


def _beside(model: str, source: Path) -> str:
    """A model file named relative to its profile (``model: only-here.gguf`` beside
    ~/Downloads/desk.yaml) is that file wherever the command is started from: it was read
    relative to the current folder, and from another one said that models/only-here.gguf did
    not exist, a path the user never wrote. A name that is no file beside the profile is left
    to the catalog and models/."""
    if not model or not (model.endswith(".gguf") or "/" in model):
        return model
    path = typed_path(model)  # (~nosuchuser/m.gguf: as typed, not a RuntimeError that broke every profile list)
    if path.is_absolute():
        return model
    beside = source.parent / path
    return str(beside.resolve()) if beside.is_file() else model


def profile_paths(directory: Path | None = None) -> list[Path]:
    """The profile files of ``directory``, else of every profile folder by name: a user's own
    file hides a shipped one of the same name, as ``-p NAME`` loads the user's."""
    found: dict[str, Path] = {}
    for folder in [directory] if directory else profile_folders():
        for path in folder.glob("*.yaml"):
            if path.is_file():
                found.setdefault(path.stem, path)
    return sorted(found.values(), key=lambda p: alphabetical(p.name))


def named_profile_file(name: str) -> Path | None:
    """The file ``name`` (``fast.yaml``) in the first profile folder holding one: the user's
    own, then the shipped ones."""
    for folder in profile_folders():
        if (folder / name).is_file():
            return folder / name
    return None


def free_path(folder: Path, name: str) -> Path:
    """``folder / name``, or where a file of that name is there already ``stem-2.yaml``,
    ``stem-3.yaml``...: the first that is no file yet (nothing of the user's is written over)."""
    stem, suffix = Path(name).stem, Path(name).suffix
    for n in itertools.count(1):
        path = folder / (name if n == 1 else f"{stem}-{n}{suffix}")
        if not path.exists() and not path.is_symlink():
            return path
    raise AssertionError  # (unreachable)


REMOVED_FOLDER = "removed"  # in the user's profiles folder: copies put aside, listed as no profile


def set_aside(path: Path) -> Path:
    """A profile file of the user's moved into the ``removed`` folder beside it, where it is no
    profile any longer but is kept (moved back, it is used again); where it went. OSError as it is."""
    folder = path.parent / REMOVED_FOLDER
    folder.mkdir(exist_ok=True)
    kept = free_path(folder, path.name)
    path.rename(kept)
    return kept


# The same checks for other settings files (workloads): a YAML mapping into a dataclass.
build_settings = _build


def link_path(path: Path) -> Path:
    """A link's own path, one way however it was typed ("../desk/m.gguf", a folder reached by a
    link): its folder resolved, its name as it is (not the file it points to)."""
    return path.absolute().parent.resolve() / path.name


def whose(profile: Profile) -> dict[str, object]:
    """Whether the profile is the user's own (in the data folder, which an update leaves alone)
    and the shipped file of its name it stands in for: a user's file of a shipped name is the
    one ``-p NAME`` loads, and nothing else in the listing said the shipped one was hidden.
    ``from``: whose it is, "yours", "office" (the office's folder, ``WORKSTATION_PROFILES``) or
    "shipped": the listing did not say which came from the office's folder (``profiles list``
    and F3 say it from this)."""
    folder = profile.source.parent.resolve() if profile.source else None
    given = given_profile_folders()
    own = folder is not None and all(folder != f.resolve() for f in given) and any(
        folder == f.resolve() for f in profile_folders())
    office = folder is not None and len(given) > 1 and folder == given[0].resolve()
    hidden = next((f / profile.source.name for f in given if (f / profile.source.name).is_file()), None) \
        if own and profile.source else None
    return {"own": own, "from": "yours" if own else "office" if office else "shipped",
            "hides_shipped": str(hidden) if hidden else None}
