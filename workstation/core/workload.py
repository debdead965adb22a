"""A workload: what an office asks of its machine, the input of ``workstation size``.

A workload says how many people, how often each starts a chat, how long prompts and replies
are, how many documents arrive per day and how long they are, the latency wanted (time to
first token, tokens per second per person) and a quality floor (an ``eval`` task set and the
largest acceptable loss of accuracy against the best model measured on it). It is a YAML file;
the shipped ones (``workstation/data/workloads/``) are found by name (``size office-20``).
Fields are checked as profile fields are: one sentence naming the file, the field and what is
allowed.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from workstation.core.errors import ProfileError
from workstation.core.gpu_table import cards_named, gpu_specs
from workstation.core.phrases import Phrase
from workstation.core.profile_check import build_settings
from workstation.core.profiles import KV_CACHE_TYPES
from workstation.core.settings_file import read_settings_file

WORKLOADS_DIR = Path(__file__).resolve().parent.parent / "data" / "workloads"


class WorkloadError(ProfileError):
    """A workload file is missing or has a wrong field."""


@dataclass
class Latency:
    ttft_s: float = 3.0  # time to first token a person waits at most, at the busy hour
    tokens_per_second: float = 10.0  # reply speed each person gets at least (reading speed ~5-8)


@dataclass
class Quality:
    tasks: str | None = None  # the eval task set's name (as `eval --tasks` saved it), or none
    max_loss: float = 0.05  # accuracy points below the best model measured on that set
    min_params_b: float = 0.0  # smallest model proposed (billions of weights): a proxy where eval measured nothing


@dataclass
class Candidates:
    """What ``size`` may propose; empty lists mean the defaults."""

    models: list[str] = field(default_factory=list)  # catalog names; default: the chat models
    quantizations: list[str] = field(default_factory=list)  # default: Q4_K_M, Q5_K_M, Q8_0
    kv_types: list[str] = field(default_factory=list)  # default: f16, q8_0, q4_0
    slots: list[int] = field(default_factory=list)  # default: 1, 2, 4, 8
    gpus: list[str] = field(default_factory=list)  # names from the GPU table; default: all


@dataclass
class Workload:
    name: str = "workload"
    description: str = ""
    people: int = 10
    chats_per_person_per_hour: float = 4.0  # at the busy hour
    prompt_tokens: int = 800  # a typical chat request: history, pasted text and question
    reply_tokens: int = 300
    context: int = 0  # tokens per slot; 0: prompt + reply, rounded up, at least 4096
    documents_per_day: int = 0  # summarized overnight (`workstation batch`)
    document_tokens: int = 6000
    summary_tokens: int = 400
    night_hours: float = 10.0
    latency: Latency = field(default_factory=Latency)
    quality: Quality = field(default_factory=Quality)
    candidates: Candidates = field(default_factory=Candidates)
    source: str = ""

    @property
    def slot_context(self) -> int:
        if self.context:
            return self.context
        need = self.prompt_tokens + self.reply_tokens
        return max(4096, (need + 1023) // 1024 * 1024)

    @property
    def chats_per_second(self) -> float:
        return self.people * self.chats_per_person_per_hour / 3600.0

    def with_people(self, people: int) -> Workload:
        data = asdict(self)
        data["people"] = people
        data.pop("source", None)
        return workload_from_dict(data, self.source or "<workload>")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


_SECTIONS: dict[str, type] = {"latency": Latency, "quality": Quality, "candidates": Candidates}
QUANTIZATIONS = ("Q4_0", "Q4_1", "Q4_K_M", "Q5_K_M", "Q6_K", "Q8_0", "F16")


def _positive(src: str, name: str, value: float, zero_ok: bool = False) -> None:
    if value < 0 or (value == 0 and not zero_ok):
        more = "0 or more" if zero_ok else "more than 0"
        raise WorkloadError(f"{src}: field '{name}' is {value}; it must be {more}.")


def _list_of(src: str, name: str, values: list[Any], kind: type, allowed: tuple[Any, ...] | None = None) -> None:
    if not isinstance(values, list) or not all(isinstance(v, kind) and not isinstance(v, bool) for v in values):
        word = "whole numbers" if kind is int else "names"
        raise WorkloadError(f"{src}: field '{name}' must be a list of {word}.")
    for v in values:
        if allowed is not None and v not in allowed:
            raise WorkloadError(
                f"{src}: field '{name}' has {v!r}; allowed values are {', '.join(map(str, allowed))}."
            )


def workload_from_dict(data: Any, src: str = "<workload>") -> Workload:
    if not isinstance(data, dict):
        raise WorkloadError(f"{src}: a workload must be a YAML mapping of settings.")
    try:
        w: Workload = build_settings(Workload, data, src, "", _SECTIONS)
    except WorkloadError:
        raise
    except ProfileError as err:
        raise WorkloadError(str(err)) from None
    w.source = src
    _positive(src, "people", w.people)
    _positive(src, "chats_per_person_per_hour", w.chats_per_person_per_hour, zero_ok=True)
    _positive(src, "prompt_tokens", w.prompt_tokens)
    _positive(src, "reply_tokens", w.reply_tokens)
    _positive(src, "context", w.context, zero_ok=True)
    _positive(src, "documents_per_day", w.documents_per_day, zero_ok=True)
    _positive(src, "document_tokens", w.document_tokens)
    _positive(src, "summary_tokens", w.summary_tokens)
    _positive(src, "night_hours", w.night_hours)
    if w.night_hours > 24:  # (30 was taken: more documents "fit in a night" than a day holds)
        raise WorkloadError(f"{src}: field 'night_hours' is {w.night_hours:g}; allowed values are up to 24 hours.")
    _positive(src, "latency.ttft_s", w.latency.ttft_s)
    _positive(src, "latency.tokens_per_second", w.latency.tokens_per_second)
    _positive(src, "quality.min_params_b", w.quality.min_params_b, zero_ok=True)
    if not 0 <= w.quality.max_loss <= 1:
        raise WorkloadError(f"{src}: field 'quality.max_loss' is {w.quality.max_loss}; allowed values are 0 to 1.")
    if w.context and w.context < w.prompt_tokens + w.reply_tokens:
        raise WorkloadError(
            f"{src}: field 'context' is {w.context} but a chat needs prompt_tokens + reply_tokens = "
            f"{w.prompt_tokens + w.reply_tokens}."
        )
    c = w.candidates
    _list_of(src, "candidates.models", c.models, str)
    _list_of(src, "candidates.quantizations", c.quantizations, str, QUANTIZATIONS)
    _list_of(src, "candidates.kv_types", c.kv_types, str, tuple(KV_CACHE_TYPES))
    _list_of(src, "candidates.slots", c.slots, int)
    _list_of(src, "candidates.gpus", c.gpus, str)
    unknown = cards_named(c.gpus)[1]
    if unknown:  # (a typo was dropped without a word, the other cards sized alone)
        known = ", ".join(s.match for s in gpu_specs())
        raise WorkloadError(f"{src}: field 'candidates.gpus' names {', '.join(map(repr, unknown))}, which is no card "
                            f"this program knows; known: {known}.")
    if any(not 1 <= s <= 64 for s in c.slots):
        raise WorkloadError(f"{src}: field 'candidates.slots' holds {c.slots}; allowed values are 1 to 64.")
    return w


def shipped_workloads() -> list[Path]:
    return sorted(WORKLOADS_DIR.glob("*.yaml"))


DEFAULT_WORKLOAD = "office-20"  # what ``size --people N`` scales when no workload is named


def load_workload(ref: str | None, people: int | None = None) -> Workload:
    """A workload from a YAML path, or a shipped one by name (``office-20``); ``people``: the
    same workload for that many people (``size --people 6``: an office of 6 had to write a file),
    the shipped ``office-20`` where ``ref`` is None."""
    if people is not None and people < 1:
        raise WorkloadError(said=[("size.people_min", {"n": people})])
    ref = ref or DEFAULT_WORKLOAD
    path = Path(ref)
    if not path.exists() and not ref.endswith((".yaml", ".yml")):
        shipped = WORKLOADS_DIR / f"{ref}.yaml"
        if shipped.exists():
            path = shipped
        else:
            raise WorkloadError(said=[_no_such_workload(ref)])
    data = read_settings_file(path, "file.what_workload", WorkloadError, ("yaml.few_lines_workload", {}))
    w = workload_from_dict(data, str(path))
    if people is None or people == w.people:
        return w
    scaled = w.with_people(people)
    scaled.name = f"{w.name}, scaled to {people:,} {'person' if people == 1 else 'people'}"
    return scaled


def _no_such_workload(ref: str) -> Phrase:
    """The sentence for a workload name that is neither a file nor shipped: where the shipped
    ones are, ``--people N`` for another office's size, and how to copy one to edit ("size
    office-6" named neither); in the command's language (``size --lang``)."""
    from workstation.core.invocation import cli, shell_word

    names = ", ".join(p.stem for p in shipped_workloads())
    counted = re.fullmatch(r"\D*?(\d+)\D*", Path(ref).name)
    n = counted.group(1) if counted and 0 < int(counted.group(1)) <= 100_000 else "N"
    base = WORKLOADS_DIR / f"{DEFAULT_WORKLOAD}.yaml"
    return ("size.no_such_workload", {"ref": ref, "names": names, "dir": str(WORKLOADS_DIR),
                                      "people": cli(f"size --people {n}"), "copy": f"cp {shell_word(str(base))} my-office.yaml",
                                      "own": cli("size my-office.yaml")})
