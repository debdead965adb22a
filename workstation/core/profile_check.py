"""A profile's settings checked as it is read (profile_from_dict): unknown fields, wrong types and
values out of range, each named in one sentence and every one said at once; the sampling bounds
a profile, chat's options, Ctrl+E and serve's requests share (check_sampling)."""

from __future__ import annotations

import dataclasses
import reprlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from workstation.core.errors import ProfileError
from workstation.core.paths import typed_path
from workstation.core.phrases import Phrase
from workstation.core.profiles import (
    BACKENDS,
    FLASH_ATTN,
    KV_CACHE_TYPES,
    SPEC_MODES,
    KVCache,
    Profile,
    Remote,
    Sampling,
    Speculative,
)

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


# llama.cpp starts a thread per count asked for: 100000 of them ended in "Segmentation fault"
MAX_THREADS = 512


def threads_allowed(value: object) -> bool:
    """Whether a profile's ``threads`` (or a command's ``--threads``) may be ``value``: auto,
    or 1 to ``MAX_THREADS``."""
    return value == "auto" or isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= MAX_THREADS


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
        if not threads_allowed(th):
            raise profile_file_problem(src, "profile.threads", value=short_repr(th), high=str(MAX_THREADS))
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
        raise ProfileError(said=[("profile.empty", {"src": src})])
    if not isinstance(data, dict):
        raise ProfileError(said=[("profile.not_settings", {"src": src})])
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


# The same checks for other settings files (workloads): a YAML mapping into a dataclass.
build_settings = _build
