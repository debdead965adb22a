"""Summarize documents far longer than the context: token-aware chunks, map-reduce.

1. **Chunk.** The document is cut at paragraph, then sentence, then word boundaries into
   contiguous character spans (nothing is lost between chunks) so that every chunk's whole
   prompt — the chat template, the instruction, the chunk and the answer budget — fits the
   profile's context. Sizes are measured with the engine's own tokenizer and chat template
   (``engine.count_prompt``), so they are exact, not estimated (a remote server that cannot
   count for us gets a conservative estimate: see ``core/remote.py``).
2. **Map.** Every chunk is submitted at once (``engine.run_many``) and decoded in parallel in
   the profile's slots (``parallel``). Each chunk is summarized with the *same* instruction
   placed *before* the text, so every chunk's prompt starts with identical tokens and the
   engine's KV prefix reuse serves them: a chunk after the first has ``cache_n`` >= the prefix
   length and only prefills its own text.
3. **Reduce.** The partial summaries, in order, a paragraph each (no labels: a small model
   copied "Part N:" into the summary), are summarized into one; when they do not fit the context together they are reduced in
   groups first (hierarchically) until they do.

The result is Markdown: an overall summary, then one point per part citing its pages or
sections. Progress reports chunks done / total and an ETA from the measured prompt speed.
Cancelling keeps every finished part. Works with every ``ChatEngine`` (``core/engine_api.py``):
in this process, in a child process, or a remote server (``backend: openai``).
"""

from __future__ import annotations

import dataclasses
import math
import re
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workstation.core.catalog import params_text
from workstation.core.documents import Document, read_document
from workstation.core.engine_api import IN_A_SUMMARY, ChatEngine, answer_reserve, least_answer
from workstation.core.errors import WorkstationError
from workstation.core.events import (
    SERVER_STOPPING,
    Message,
    PromptRead,
    ServerWaiting,
    StepEvent,
    TokenDelta,
    TurnFinished,
)
from workstation.core.kv_state import NOT_KEPT
from workstation.core.loops import SENTENCE_ENDS, cut_loop
from workstation.core.metrics import TurnMetrics
from workstation.core.phrases import Lookup, rounded_words, say, words_in
from workstation.core.profiles import Profile, Sampling
from workstation.core.reply_check import unchecked_figures, unchecked_phrases, unchecked_record
from workstation.core.speed_estimate import profile_decode_tps
from workstation.core.summary_chunks import (
    MAP_SUFFIX,
    Chunk,
    chunk_messages,
    make_chunks,
    map_instruction,
    neutralize,
    prompt_messages,
    prompt_room,
    with_facts,
)
from workstation.core.summary_options import SummarizeError, SummarizeOptions
from workstation.core.table_facts import facts_record, facts_text

REDUCE_INSTRUCTION = (
    "Here are summaries of consecutive parts of one document. Write a short summary of the "
    "whole document in a few sentences, in the language of the summaries.\n\nSUMMARIES:\n"
)
REDUCE_SUFFIX = "\n\nEND OF SUMMARIES. Write the summary of the whole document."
REDUCE_FACTS_INSTRUCTION = REDUCE_INSTRUCTION.replace(
    "in the language of the summaries.", "in the language of the summaries. Keep their figures exactly as "
    "written and do not work out any other figure.")


@dataclass
class ReduceStep:
    level: int  # 1 = first reduce over chunk summaries
    inputs: int
    cite: str
    prompt_tokens: int
    summary: str
    metrics: TurnMetrics

    def to_dict(self) -> dict[str, Any]:
        data = {k: v for k, v in dataclasses.asdict(self).items() if k != "metrics"}
        data["metrics"] = self.metrics.to_dict()
        return data


@dataclass
class SummaryProgress:
    stage: str  # chunking | kept (parts of a stopped run, not done again) | map | reduce | done | cancelled
    done: int  # model calls finished
    total: int  # model calls expected (chunks + reduce steps, estimated)
    chunks_done: int
    chunks_total: int
    eta_s: float | None  # from the measured prompt and generation speeds
    prompt_per_second: float | None
    message: str = ""
    # the parts under way (not in ``done``): the model calls' worth of their work done so far,
    # so that ``done + working`` moves while a part is read and written (a 9-part document on a
    # busy CPU showed 0 for minutes); and the first of them: its number (1-based, 0: none), the
    # fraction of its prompt read and the tokens of its summary written
    working: float = 0.0
    part: int = 0
    part_read: float = 0.0
    part_written: int = 0
    inside_part: bool = False  # said while a part is under way (not as one ends): a log leaves it out
    # a desk PC's office server silent before a part's first word (behind the person's own chat
    # request: ``own``) or in the middle of it: said as the chat says it (F6 showed nothing)
    waiting: ServerWaiting | None = None
    # the time left is rough (no part of this run has ended): said as a range up to this (``TimeLeft``);
    # revised: a confident one just went up (said in words, not held still)
    eta_high_s: float | None = None
    eta_revised: bool = False


TIME_LEFT_RISE = 0.1  # a confident time left revised up by more than this share of itself says so in words
TIME_LEFT_RISE_FLOOR = 3.0  # (or this many seconds: "4 s" to "7 s" bothers nobody)
TIME_LEFT_REVISED_S = 10.0  # how long a time left revised up says so ("longer than first thought")
ROUGH_LOW = 0.9  # a rough time left (no part of this run ended yet) said as a range from this share of its estimate
# up to (1 + this share unread of a part's worth) of it: the first part's first tokens read faster than its last
# (measured: 75 s said, 166 s taken, on this PC's busy 2 cores; F6 said 55 s of 1 min 40 s)
ROUGH_SPREAD = 1.0


class TimeLeft:
    """A time left as it is said, from estimates revised as a run goes. While rough (before a part
    of this run has ended: ``high`` given, the range's top as a share of the estimate) it is said
    as a range of minutes ("about 1–2 min"; F6 said "55 s" of a run that took 1 min 40 s). Once
    confident it counts down by the second from the last estimate, and a new one is taken as it
    is: a lower one at once, a higher one openly (``revised`` for ``TIME_LEFT_REVISED_S``: "longer
    than first thought"). Blended in gently, a higher estimate held the figure still ("44 s" for
    20 s read as frozen). The one place F6, the command line's bar and batch's line say a
    summary's time left from."""

    def __init__(self) -> None:
        self.said: float | None = None
        self.high: float | None = None  # rough: the range's top, in seconds; None: confident
        self.at = 0.0
        self.revised_at: float | None = None

    def update(self, estimate: float | None, now: float, high: float | None = None,
               at_most: float | None = None) -> float | None:
        """What to say at ``now`` (seconds, any clock) given the latest ``estimate`` (None: no new
        one; what was said counts down, "…" once it has run out: a part longer than foreseen);
        ``high``: the estimate is rough, its range up to ``high`` times it. ``at_most``: counting
        down, the most the call under way can still take (a combining step's budget left at this
        run's pace of writing): what is said is no more than it, and where the countdown has run
        out, it is said as gone up (a step writing its whole budget said "…" for 20 s of its 35)."""
        elapsed = max(0.0, now - self.at)
        self.at = now
        if estimate is None:
            had = self.said is not None
            if self.said is not None:
                self.said = self.said - elapsed if self.said - elapsed > 0 else None
                if self.high is not None and self.said is not None:
                    self.high = max(self.said, self.high - elapsed)
            if at_most is not None and at_most > 0 and (self.said is None or self.said > at_most):
                if self.said is None and had:
                    self.revised_at = now  # ("longer than first thought", not "…")
                self.said, self.high = at_most, None
            if self.said is None:
                self.high = None
            return self.said
        if high is not None:  # rough: said as a range, as it is (the minutes' words do not jitter)
            self.said, self.high, self.revised_at = estimate, estimate * high, None
            return self.said
        # (from rough to confident: above the range's top said as gone up, "about 1–2 min" then "2 min 40 s" as is)
        counted = self.said if self.high is None else max(self.said or 0.0, self.high - elapsed)
        if counted is not None and estimate > counted + max(counted * TIME_LEFT_RISE, TIME_LEFT_RISE_FLOOR):
            self.revised_at = now
        self.said, self.high = estimate, None
        return self.said

    @property
    def revised(self) -> bool:
        """Whether the time left said was revised up in the last ``TIME_LEFT_REVISED_S``."""
        return self.revised_at is not None and self.at - self.revised_at < TIME_LEFT_REVISED_S


def answer_length(written: list[int], kept: float, budget: int) -> float:
    """The tokens a part's summary takes (a time left's): as long as this run's parts wrote theirs
    (``written``), else as a stopped run's parts kept here did (``kept`` each; 0: none), else half
    its ``budget`` (SmolLM2's parts wrote 44 to 256 of 256, from run to run; all taken as 128, a
    Turkish user's resumed run was said to take 1.5 to 2 times what it took)."""
    if written:
        return max(1.0, sum(written) / len(written))
    return kept or budget / 2


def combining_time(left: int, summaries: float, prefix: int, chunk_budget: int, steps: int,
                   written: list[int], budget: int, pps: float, tps: float | None) -> float:
    """The time of ``left`` combining steps: each reads its share of the parts' ``summaries``
    (tokens, of ``steps`` steps in all) after its instruction (about a part's ``prefix``), at
    most ``chunk_budget``, and writes as long as this run's steps wrote (``written``), else half
    its ``budget``, as a part before one has ended (SmolLM2 wrote 512 of 512 twice, 56 once:
    taken as long as a part's summary, a step was said to take 15 s of its 35, and "…" the rest)."""
    if left <= 0:
        return 0.0
    answer = sum(written) / len(written) if written else budget / 2
    prompt = min(chunk_budget, summaries / max(1, steps) + prefix)
    return left * (prompt / pps + (answer / tps if tps else 0.0))


READ_PER_WRITTEN = 3.0  # a PC reads a prompt at least this many times as fast as it writes (SmolLM2 on this
# PC's busy 2 cores: 84 to 104 tokens a second read, 23 to 31 written; a GPU reads hundreds of times as fast)


def early_write_pace(planned: float, pps: float, written: list[tuple[float, float]]) -> float:
    """The pace the early time left takes a summary to be written at: this run's own (``written``:
    a part's tokens and the seconds since its first, parts side by side a pace each, as reading's),
    else the profile's (``planned``), but no more than a third of this run's pace of reading
    (``pps``): the plan's 78 a second, where this run wrote 31, said "under a minute" while a part
    was read and "about 1–2 min" once it was written (80 s were left)."""
    if written:
        return sum(n for n, _ in written) / max(1e-3, sum(s for _, s in written))
    return min(planned, pps / READ_PER_WRITTEN)


EARLY_WRITTEN = 16  # tokens a part has written before its pace of writing is the early time left's
EARLY_READ = 256  # prompt tokens read in a run before its pace of reading says a time left (``early_eta``)
SMALL_MODEL_PARAMS = 1_000_000_000  # below this, a summary's names, dates and figures go astray


def small_model(profile: Profile, engine: ChatEngine | None = None) -> tuple[str, int] | None:
    """(the model's name, its parameter count) when the profile runs a model too small to trust
    with a document's facts (SmolLM2 135M, the default, swaps names and invents dates); None
    for a larger one. A server's model (``engine`` of a desk PC's profile), as the server's
    ``/models`` counts it: the desk PC said nothing of the same model on the office server."""
    if profile.backend != "llama":
        info = engine.info() if engine is not None else None  # (its model_name: the server's /models meta)
        if info is None or not 0 < info.n_params < SMALL_MODEL_PARAMS:
            return None
        return info.model_name, info.n_params
    from workstation.core.catalog import resolve_model_path
    from workstation.core.installed_models import installed_name
    from workstation.core.model_info import read_model_info

    try:
        info = read_model_info(resolve_model_path(profile.model), check=False)
    except WorkstationError:
        return None
    if not 0 < info.parameter_count < SMALL_MODEL_PARAMS:
        return None
    return installed_name(Path(info.path)), info.parameter_count


def eta_text(seconds: float | None, word: str = "ETA", soon: str | None = None, high: float | None = None,
             revised: bool = False, lookup: Lookup | None = None) -> str:
    """'ETA 1 min 5 s' ('ETA …' before the first part has been measured); ``word``, and a time in
    ``lookup``'s language (``time_formats``, English without: the one way each language says a
    time; 'kalan 1 dk 5 sn'; whole minutes or hours without "0 s" or "0 min": "1 min", not
    "1 min 0 s").
    ``soon`` in place of 'ETA 0 s' (a document's last part done, its summary being written).
    ``high``: a rough time left (``TimeLeft``), said as a range up to it in ``lookup``'s words
    ('about 1–2 min'); ``revised``: a confident one just went up, said so ('(longer than first thought)')."""
    if seconds is None:
        return f"{word} …"
    if high is not None and seconds > 0:
        return f"{word} {rough_time(seconds, high, lookup)}"
    formats = time_formats(lookup)
    total = int(round(seconds))
    if soon is not None and total == 0:
        return soon
    h, m, s = total // 3600, total % 3600 // 60, total % 60
    whole = formats[3:5]
    if total >= 3600:
        said = (whole[0] if m == 0 else formats[0]).format(h=h, m=m, s=s)
    elif total >= 60:
        said = (whole[1] if s == 0 else formats[1]).format(h=h, m=m, s=s)
    else:
        said = formats[2].format(h=h, m=m, s=s)
    if revised:
        said = say([("summarize.eta_revised", {"time": said})], lookup)
    return f"{word} {said}"


def rough_time(low: float, high: float, lookup: Lookup | None = None) -> str:
    """A rough time left in whole minutes, from ``ROUGH_LOW`` of ``low`` up to ``high`` seconds:
    'about 1–2 min', 'about 2–3 h', 'under a minute'."""
    low *= ROUGH_LOW
    if high <= 60:
        return say([("summarize.eta_under_minute", {})], lookup)
    if low >= 7200:
        a = max(1, math.floor(low / 3600))
        return say([("summarize.eta_rough_hours", {"a": a, "b": max(a + 1, math.ceil(high / 3600))})], lookup)
    a = max(1, math.floor(low / 60))
    return say([("summarize.eta_rough", {"a": a, "b": max(a + 1, math.ceil(high / 60))})], lookup)


def time_formats(lookup: Lookup | None = None) -> tuple[str, str, str, str, str]:
    """An hour, a minute and a second in words, in English or ``lookup``'s language, for
    ``eta_text``: 1 h 2 min, 1 min 5 s, 7 s (Turkish 1 sa 2 dk, 1 dk 5 sn, 7 sn), and whole hours
    and minutes: 2 h, 1 min ("1 dk 0 sn geçti" read clumsily)."""
    units = ("hours", "minutes", "seconds", "hours_whole", "minutes_whole")
    hours, minutes, seconds, whole_hours, whole_minutes = (say([(f"summarize.eta_{unit}", {})], lookup) for unit in units)
    return hours, minutes, seconds, whole_hours, whole_minutes


def duration(seconds: float, lookup: Lookup | None = None) -> str:
    """A time taken, in words (``time_formats``): "1 min 1 s" where "61.2 s" made a reader count;
    under half a second, a second at most ("1 s": "0 s" read as nothing done)."""
    return eta_text(max(seconds, 1.0) if seconds > 0 else seconds, "", lookup=lookup).strip()


# what held a summary's reply to its length (``_answer_budget``), each with its advice when a summary
# ends cut short there (``CUT_SHORT_KEYS``)
CUT_BY_REPLY = "reply"  # the profile's longest reply (max_tokens): a larger one lets it finish
CUT_BY_CONTEXT = "context"  # its share of the context: a larger context lets it finish
CUT_BY_LONGEST = "longest"  # the longest a summary is written (PART_MOST, COMBINING_MOST): ask about a point
CUT_SHORT_KEYS = {CUT_BY_REPLY: "summary.cut_short", CUT_BY_CONTEXT: "summary.cut_short_context",
                  CUT_BY_LONGEST: "summary.cut_short_longest"}
CUT_FINISH_KEYS = {CUT_BY_REPLY: "summary.finish_reply", CUT_BY_CONTEXT: "summary.finish_context",
                   CUT_BY_LONGEST: "summary.finish_longest"}  # what lets it finish, by what held it


def cut_finish(cut_by: str) -> tuple[str, dict[str, Any]]:
    """The phrase that says what lets a summary cut short by ``cut_by`` (``CUT_BY_*``) finish: the
    file's note and the command line say it alike."""
    return CUT_FINISH_KEYS.get(cut_by, "summary.finish_reply"), {}
PART_MOST, COMBINING_MOST = 256, 512  # tokens: a part's summary, the whole's (a combining step's)
SUMMARY_LEAST = 16  # tokens: the shortest a summary step writes (fewer is a few words), whatever the profile says


@dataclass
class SummaryResult:
    source: str
    summary: str  # Markdown
    overall: str  # the model's summary of the whole document ('' when cancelled early)
    chunks: list[Chunk]
    reduce_steps: list[ReduceStep]
    totals: dict[str, float]
    cancelled: bool
    n_ctx: int
    prefix_tokens: int  # prompt tokens identical for every chunk (served by the KV cache)
    chunk_budget: int  # most tokens of text one chunk may hold
    # The conversation the summary's KV cells hold when the document fit in one part: the
    # prompt with the whole document, then the reply. Questions appended to it start from those
    # cells (still in the engine, or restored from disk after a restart) and prefill only
    # themselves. Empty when the document took several parts: only the summary can follow then.
    follow_up: list[Message] = field(default_factory=list)
    # what its Markdown was made of, to write it again in another language (F9): this run's
    # only (a summary kept on disk is shown as it was written)
    document: Document | None = None
    small: tuple[str, int] | None = None
    cut_by: str = CUT_BY_REPLY  # what held its last step's reply to its length (``CUT_BY_*``)

    def in_language(self, lookup: Lookup | None) -> str:
        """The summary's Markdown with its headings and figures in ``lookup``'s language (the
        model's words as they are); as it is where it was not made in this run."""
        if self.document is None:
            return self.summary
        return render_markdown(self.document, self.overall, self.chunks, self.cancelled, self.totals, lookup, self.small,
                               self.cut_by)

    @property
    def cut_short(self) -> bool:
        """Whether the summary stopped at its reply length limit (finish reason "length"): the step
        that wrote it, its one part's or its last combining step's; F6 said "Done." of it."""
        if self.cancelled or not self.overall:
            return False
        last = self.reduce_steps[-1].metrics if self.reduce_steps else (
            self.chunks[0].metrics if len(self.chunks) == 1 else None)
        return last is not None and last.stop_reason == "length"

    @property
    def intro_key(self) -> str:
        """The UI text for the question a conversation about it begins with: a document longer
        than one part is asked about from its summary alone, and the question says so (the
        model answered "8 days" where the contract, which it never saw whole, says 30)."""
        return "summarize.context" if self.follow_up else "summarize.context_from_summary"

    def asked_in(self, ui_lang: str) -> str:
        """The language its conversation's question is put to the model in: the summary's own
        (``language_words.text_language``), else ``ui_lang``. The question in the UI's Turkish
        about an English report had an English question answered in Turkish."""
        from workstation.core.language_words import text_language

        return text_language(self.overall or self.summary) or ui_lang

    def conversation(self, intro: str, sent: str | None = None) -> list[Message]:
        """The conversation for follow-up questions: ``follow_up`` when the document fit in one
        part, else ``intro`` (the user asking for the summary) and the summary as the reply: the
        summary once (it stood in both messages, twice the context for nothing). ``sent``: the
        question as the model reads it, in the document's language (``asked_in``), ``intro``
        shown for it."""
        if self.follow_up:  # the chat shows ``intro`` for the prompt (its "shown"), not the instructions
            return [{**self.follow_up[0], "shown": intro}, *self.follow_up[1:]]
        question: Message = {"role": "user", "content": sent or intro}
        if sent and sent != intro:
            question["shown"] = intro
        return [question, {"role": "assistant", "content": self.summary}]

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "summary": self.summary,
            "overall": self.overall,
            "cancelled": self.cancelled,
            "n_ctx": self.n_ctx,
            "prefix_tokens": self.prefix_tokens,
            "chunk_budget": self.chunk_budget,
            "chunks": [c.to_dict() for c in self.chunks],
            "reduce_steps": [r.to_dict() for r in self.reduce_steps],
            "totals": self.totals,
            "metrics": self.totals,
            **({"facts": [facts_record(f) for f in self.document.facts]} if self.document and self.document.facts else {}),
            **({"notes": [say([n]) for n in self.document.notes]} if self.document and self.document.notes else {}),
            # what a small model's summary names that the document does not have (``summary_unchecked``)
            **({"unchecked": unchecked} if self.small and self.document and
               (unchecked := summary_unchecked(self.document, self.overall, self.chunks)) else {}),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SummaryResult:
        """A result ``to_dict`` wrote (and ``follow_up``, where kept beside it): F6's last
        summary, read back after a restart."""
        def chunk(c: dict[str, Any]) -> Chunk:
            metrics = c.get("metrics")
            return Chunk(**{**c, "metrics": TurnMetrics.from_dict(metrics) if metrics else None})

        def step(r: dict[str, Any]) -> ReduceStep:
            return ReduceStep(**{**r, "metrics": TurnMetrics.from_dict(r["metrics"])})

        return cls(
            str(data["source"]), str(data["summary"]), str(data.get("overall", "")),
            [chunk(c) for c in data.get("chunks", [])], [step(r) for r in data.get("reduce_steps", [])],
            dict(data.get("totals", {})), bool(data.get("cancelled")), int(data.get("n_ctx", 0)),
            int(data.get("prefix_tokens", 0)), int(data.get("chunk_budget", 0)),
            list(data.get("follow_up", [])),
        )


QUESTION_ROOM = 64  # tokens a question about a summarized document is given room for, at the least


def room_to_ask(chunk: Chunk, n_ctx: int, sampling: Sampling) -> bool:
    """Whether a document summarized in one part (``chunk``, its prompt and reply) leaves a question
    and its answer room beside it in ``n_ctx`` (``answer_reserve``): its questions are asked with the
    whole document then (``SummaryResult.follow_up``), else from the summary alone. A 2,400-word
    document's first question filled 3,642 of 4,096 tokens: its answer was cut ("context full"), and
    the next question no longer saw the document. The answer's room is the least the chat keeps a
    conversation whole with (``engine_api.least_answer``, as ``fit_history``): by the whole reply
    room (a quarter of the context, up to max_tokens) a 2,300-word report F6 "read in one go" on a
    4,096-token context was asked about from its summary alone ("the document is longer than you
    can read at once"), though the chat would have kept it whole beside the question."""
    written = chunk.metrics.predicted_n if chunk.metrics is not None else 0
    least = least_answer(answer_reserve(sampling, n_ctx), n_ctx)
    return chunk.prompt_tokens + written + QUESTION_ROOM + least <= n_ctx


# --- the engine side -----------------------------------------------------------------------
class Runner:
    def __init__(self, engine: ChatEngine, cancel: Any) -> None:
        self.engine = engine
        self.cancel = cancel
        self.calls: list[TurnMetrics] = []
        self.tag: str | None = None  # NOT_KEPT for a long document's parts and reduce steps
        self.prefix = 0  # the prompt tokens every part's prompt begins with (cached after the first)
        # an office server silent (``run``), and None once it speaks again (its wait is over)
        self.on_waiting: Callable[[ServerWaiting | None], None] | None = None
        self.on_token: Callable[[int], None] | None = None  # a token of ``run``'s reply written (its tokens so far)

    def cancelled(self) -> bool:
        c = self.cancel
        if c is None:
            return False
        if callable(c) and not hasattr(c, "is_set"):
            return bool(c())
        return bool(c.is_set())

    def count(self, messages: list[Message]) -> int:
        return int(self.engine.count_prompt(messages))

    def tokens(self, messages: list[Message]) -> list[int] | None:
        """The prompt's token ids where the engine has them locally (for the shared prefix)."""
        chat_prompt = getattr(self.engine, "chat_prompt", None)
        return list(chat_prompt(messages)) if chat_prompt is not None else None

    def run(self, messages: list[Message], sampling: Sampling) -> tuple[str, TurnMetrics]:
        final: TurnFinished | None = None
        asked = False
        written = 0  # the reply's tokens so far (``on_token``)
        waited = False  # a silence said: its end is said too (F6 said "the server is slow to answer:
        # nothing from it for 6 s" to the end of a combining step the server had taken up long before)
        for event in self.engine.stream_chat(messages, sampling, tag=self.tag, reading=self.on_waiting is not None):
            if isinstance(event, ServerWaiting) and self.on_waiting is not None:
                waited = True
                self.on_waiting(event)
                continue
            if waited and self.on_waiting is not None and isinstance(event, PromptRead | TokenDelta):
                waited = False
                self.on_waiting(None)
            if isinstance(event, TurnFinished):
                final = event
            elif isinstance(event, TokenDelta) and not asked and self.cancelled():
                self.engine.cancel()
                asked = True
            elif isinstance(event, TokenDelta) and self.on_token is not None:
                written += event.tokens
                self.on_token(written)
        if final is None:
            raise SummarizeError("The engine stopped without finishing a turn.")
        self.calls.append(final.metrics)
        _refuse_a_cut_day(final.metrics, self.engine)
        return final.text.strip(), final.metrics

    def run_many(
        self,
        conversations: list[list[Message]],
        sampling: Sampling,
        on_finished: Callable[[int, TurnFinished], None],
        on_step: Callable[[int, StepEvent], None] | None = None,
    ) -> list[TurnFinished]:
        """Every conversation at once; a watcher passes a cancel on to the engine meanwhile."""
        done = threading.Event()

        def watch() -> None:
            # again every 0.1 s while it holds: a turn that starts after the first cancel (the
            # engine clears its flag when no turn runs) must still see it
            while not done.wait(0.1):
                if self.cancelled():
                    self.engine.cancel()

        watcher = threading.Thread(target=watch, name="summarize-cancel", daemon=True)
        watcher.start()

        def finished(i: int, final: TurnFinished) -> None:
            self.calls.append(final.metrics)
            on_finished(i, final)

        try:
            finals = self.engine.run_many(conversations, sampling, finished, tag=self.tag, on_step=on_step)
        finally:
            done.set()
            watcher.join()
        for final in finals:
            _refuse_a_cut_day(final.metrics, self.engine)
        return finals


def _refuse_a_cut_day(metrics: TurnMetrics, engine: object) -> None:
    """A reply the office server stopped where the key's tokens for the day ran out: the server
    cannot take more today, as when it refuses a request over the quota (429), so the summary
    stops as it does then (``batch`` leaves the document pending, exit 75; ``summarize`` writes
    nothing). It was written as if whole, cut mid-sentence, and batch marked it done."""
    if metrics.stop_reason == "quota":
        from workstation.core.remote import day_cut

        raise day_cut(engine, "remote.quota_cut_part")


def reading_calls(calls: list[TurnMetrics], prefix: int = 0) -> list[TurnMetrics]:
    """The calls that read most of their own text (past the ``prefix`` every part's prompt
    shares): the pace of reading. A part a stopped run had begun, gone on with from the cells
    it left (a summary resumed with Ctrl+R), read a token or two of its prompt: counted, it made
    reading look free (the next part's "reading part 3: 74%" moved the bar by 0.02 of a part)
    and a part a second's work (the time left said 3 s where 15 were left)."""
    return [m for m in calls if m.cache_n - prefix <= m.prompt_n]


def part_under_way(parts: dict[int, list[float]], calls: list[TurnMetrics], max_answer: int,
               prefix: int = 0) -> tuple[float, int | None]:
    """The model calls' worth of work the parts under way have done, each part at most 0.95 of
    one until it ends, and the first of them (None: none). A part is its prompt read, then its
    summary written, each weighed by the time the calls so far spent on it (half and half before
    one has ended); a summary is taken to be as long as those so far (half its budget before).
    The calls that read their prompts weigh the two (``reading_calls``)."""
    if not parts:
        return 0.0, None
    read = reading_calls(calls, prefix)
    p_ms = sum(m.prompt_ms for m in read)
    g_ms = sum(m.predicted_ms for m in read)
    reading = p_ms / (p_ms + g_ms) if p_ms + g_ms > 0 else 0.5
    written = [m.predicted_n for m in calls]
    answer = max(1.0, sum(written) / len(written) if written else max_answer / 2)
    working = sum(min(0.95, reading * read + (1 - reading) * min(1.0, tokens / answer))
                  for read, tokens in parts.values())
    return working, min(parts)


def whole_document_messages(document: Document) -> list[Message]:
    """What a summary of ``document`` in one part asks the model (a table's facts first), for
    'bench --document', which times a profile reading the person's own document as F6 does."""
    read = with_facts(document)
    return prompt_messages(map_instruction(read), neutralize(read.text), MAP_SUFFIX)


_LEADIN = re.compile(
    r"^\s*(?:(?:the |a |here is (?:a |the )?)?(?:(?:text|document|letter|brief|short|executive) )?"
    r"summary[^:\n]{0,40}(?:is)?\s*:|summaries\s*:|text\s*:|(?:metnin |belgenin |kısa )?özet(?:i|ler)?\s*:"
    r"|end of (?:text|summaries)\.?|-\s*|part \d+\s*:|\((?:p|pp|lines?|section|§)[^)]{0,40}\))\s*",
    re.IGNORECASE,
)


# the prompt's closing markers, echoed anywhere in a reply ("… the 19th. END OF SUMMARIES. The
# …"): in capitals as the prompt writes them (a sentence of the document's own is not one), and
# its closing request in any case; its "TEXT:" label only at the start (_LEADIN): "the FULL
# TEXT: the parties agree" is the document's
_ECHO = re.compile(
    r"\s*(?:\bEND OF (?:TEXT|SUMMARIES)\b\.?|(?i:\bwrite the summary of (?:this text|the whole document)\.))\s*"
)


# a label alone on a reply's last line, nothing after it: a summary ended "… next Friday.\n\nSummary:"
_LONE_LABEL = re.compile(
    r"^[*_#\s]*(?:summary|summaries|özet|answer|cevap|yanıt|question|soru|text|metin|note|not)\s*:[*_\s]*$",
    re.IGNORECASE,
)




def clean_summary(text: str, metrics: TurnMetrics | None = None) -> str:
    """One paragraph without the lead-ins small models like to echo ("Summary:", "- (p. 3)"),
    ending in "…" where its token limit cut it in the middle of a sentence (its citation
    followed the cut word: "compared to the (lines 1–179)")."""
    lines = [line.strip() for line in text.splitlines()
             if line.strip() and line.strip() not in ("TEXT:", "SUMMARIES:")]  # the prompt's labels, echoed
    while lines and _LONE_LABEL.match(lines[-1]):  # a label it began, then stopped ("…\n\nSummary:")
        lines.pop()
    text = _as_prose(lines)
    text = re.sub(r"\s{2,}", " ", _ECHO.sub(" ", text)).strip()
    for _ in range(6):
        cleaned = _LEADIN.sub("", text, count=1)
        if cleaned == text:
            break
        text = cleaned
    text = text.strip()
    looped = cut_loop(text)
    if looped != text:  # what came after said nothing new
        looped = looped.rstrip(" ,;:-–—*#")
        return looped if looped and looped[-1] in SENTENCE_ENDS else looped + "…"
    if text and metrics is not None and metrics.stop_reason in ("length", "context", "quota") and text[-1] not in SENTENCE_ENDS:
        text = text.rstrip(" ,;:-–—") + "…"
    return text


_HEADING = re.compile(r"^\s*#{1,6}\s+")
_BULLET = re.compile(r"^\s*[-*+•]\s+")
_NUMBERED = re.compile(r"^\s*\d{1,3}[.)]\s+")


def _as_prose(lines: list[str]) -> str:
    """A reply's Markdown lines as one paragraph: a heading ("## Next steps") as a lead-in
    ("Next steps:"), a list item without its mark and ended as a sentence (they showed as "##
    Next steps To ensure … ### Key points - The meeting …"). A number that begins a line is a
    list's only after a sentence, a heading or another item ("listed in section\n3. Each"
    is a wrapped sentence)."""
    out: list[str] = []
    for i, line in enumerate(lines):
        after_sentence = i == 0 or out[-1][-1:] in SENTENCE_ENDS or out[-1].endswith(":")
        if _HEADING.match(line):
            line = _HEADING.sub("", line).strip().rstrip("#").strip()
            if line and i < len(lines) - 1 and line[-1] not in SENTENCE_ENDS and not line.endswith(":"):
                line += ":"
        elif _BULLET.match(line) or (after_sentence and _NUMBERED.match(line)):
            line = _NUMBERED.sub("", _BULLET.sub("", line, count=1), count=1) if after_sentence else _BULLET.sub("", line)
            if not any(c.isalnum() for c in line):  # a rule of "* * * *": no words
                continue
            if line[-1] not in SENTENCE_ENDS and not line.endswith(":"):
                line += "."
        elif i < len(lines) - 1 and _BULLET.match(lines[i + 1]) and line[-1] not in SENTENCE_ENDS \
                and not line.endswith(":"):  # the line that leads a list ("Key points")
            line += ":"
        if line:
            out.append(line)
    return " ".join(out)


# --- map-reduce -------------------------------------------------------------------------------


def _answer_budget(profile: Profile, n_ctx: int, given: int | None, floor: int, share: int, most: int) -> tuple[int, str]:
    """A summary step's reply budget: ``given`` (an option), else the least of the profile's longest
    reply, ``1/share`` of the context (at least ``floor``) and ``most``; and which of them it is
    (``CUT_BY_*``: a summary stopped there is advised by it; the longest reply only where it is less
    than the others, raising it alone would not let it finish otherwise)."""
    if given:
        return given, CUT_BY_REPLY
    cap, room = max(SUMMARY_LEAST, profile.sampling.max_tokens), max(floor, n_ctx // share)
    budget = min(cap, room, most)
    return budget, CUT_BY_REPLY if cap < min(room, most) else CUT_BY_CONTEXT if room < most else CUT_BY_LONGEST


def _answer_budgets(profile: Profile, n_ctx: int, options: SummarizeOptions) -> tuple[tuple[int, str], tuple[int, str]]:
    """The reply budgets of a part's summary and of a combining step, each with what set it."""
    return (_answer_budget(profile, n_ctx, options.map_tokens, 48, 8, PART_MOST),
            _answer_budget(profile, n_ctx, options.reduce_tokens, 64, 4, COMBINING_MOST))


def _n_ctx(engine: ChatEngine, profile: Profile) -> tuple[int, int]:
    """The context a request may use, and the most prompt tokens it may have where the engine
    says fewer (``EngineInfo.max_prompt_tokens``: a server's; 0: the context's)."""
    try:
        info = engine.info()
        return int(info.n_ctx), int(getattr(info, "max_prompt_tokens", 0) or 0)
    except Exception:  # noqa: BLE001 - a remote engine may not know; trust the profile
        return int(profile.context), 0


def _totals(calls: list[TurnMetrics], chunks: list[Chunk], wall_ms: float) -> dict[str, float]:
    t: dict[str, float] = {
        "calls": len(calls),
        "calls_stopped": sum(1 for m in calls if m.stop_reason == "cancelled"),
        "chunks": len(chunks),
        "chunks_done": sum(1 for c in chunks if c.summary is not None),
        "document_tokens": sum(c.tokens for c in chunks),
        "prompt_n": sum(m.prompt_n for m in calls),
        "cache_n": sum(m.cache_n for m in calls),
        "prompt_ms": sum(m.prompt_ms for m in calls),
        "predicted_n": sum(m.predicted_n for m in calls),
        "predicted_ms": sum(m.predicted_ms for m in calls),
        "total_ms": wall_ms,
    }
    t["prompt_per_second"] = t["prompt_n"] / t["prompt_ms"] * 1000 if t["prompt_ms"] else 0.0
    t["predicted_per_second"] = t["predicted_n"] / t["predicted_ms"] * 1000 if t["predicted_ms"] else 0.0
    done_tokens = sum(c.tokens for c in chunks if c.summary is not None and c.metrics is not None)  # (this run's)
    t["document_tokens_per_second"] = done_tokens / wall_ms * 1000 if wall_ms else 0.0
    return t


def summary_unchecked(document: Document, overall: str, done: list[Chunk]) -> dict[str, Any] | None:
    """What a summary's words (its overall summary and its parts' points) name that its document
    does not have, by the chat's reply check (``reply_check.unchecked_figures``), as its record
    (``unchecked_record``); None: nothing. A small model's summary of a note gave "$5.10" and an
    "estimated $5 million" the note never names, and a report's February became "January 2027",
    with nothing under them: the chat said it of its replies, the summaries not."""
    said = list(dict.fromkeys(s.strip() for s in [overall, *(c.summary or "" for c in done)] if s.strip()))
    counted = [line for facts in document.facts for line in facts_text(facts)]  # (the program's figures, known)
    items = unchecked_figures("\n\n".join(said), "\n".join([document.text, *counted]), document.name)
    return unchecked_record(document.name, items) if items else None


def render_markdown(
    document: Document, overall: str, chunks: list[Chunk], cancelled: bool, totals: dict[str, float],
    lookup: Lookup | None = None, small: tuple[str, int] | None = None, cut_by: str = CUT_BY_REPLY,
) -> str:
    """The summary as Markdown: its title, the overall summary, the points by part and what it
    took, in English or (``lookup``: the TUI's locale) the UI's language. ``small``: the model
    is too small to trust with facts (``small_model``): the summary says so under its title,
    where whoever reads the file the next morning sees it. ``cut_by``: what held its reply to its
    length (``CUT_BY_*``), for the advice when it ends cut short."""
    def t(key: str, **values: Any) -> str:
        return say([(key, values)], lookup)

    def cite(start: int, end: int) -> str:
        return say([document.cite_phrase(start, end)], lookup)

    lines = ["# " + t("summary.title", name=document.name), ""]
    done = [c for c in chunks if c.summary is not None]
    combining_stopped = cancelled and len(done) == len(chunks) > 1  # every part summarized, not put together
    if combining_stopped:  # (it said "the points below cover lines 1–121 only" of a 121-line document)
        lines += ["> " + t("summary.stopped_combining", total=len(chunks)), ""]
    elif cancelled:
        cover = cite(done[0].start, done[-1].end) if done else t("summary.nothing")
        lines += ["> " + t("summary.stopped", done=len(done), total=len(chunks), cover=cover), ""]
    if small is not None and done:
        lines += ["> " + t("summary.small_model", name=small[0], n=params_text(small[1])), ""]
    for note in document.notes:  # what the reader left out (a workbook's hidden sheets, its cells past the limit)
        lines += ["> " + say([note], lookup), ""]
    if overall:  # (it ended "(lines 1–400)": the whole document, a label nobody could place)
        lines += [overall, ""]
        if overall.rstrip().endswith("…") and not cancelled:  # cut by its token limit (clean_summary): said in
            lines += ["> " + t(CUT_SHORT_KEYS.get(cut_by, "summary.cut_short"), finish=cut_finish(cut_by)), ""]  # the file, where batch's reader sees it (the console alone did)
    if document.facts:  # what the program counted, for the reader to check the model's words against
        from workstation.core.table_facts import facts_text

        lines += ["## " + t("summary.facts"), ""]
        for facts in document.facts:
            lines += [*facts_text(facts, lookup), ""]
    if done and not (len(done) == 1 and overall.strip() == (done[0].summary or "").strip()):
        # what a part is, said once: "lines 1–223" under "Points by part" was a label nobody explained
        why = [t("summary.parts_why", n=len(chunks)), ""] if len(chunks) > 1 else []
        lines += ["## " + t("summary.points"), "", *why]
        for c in done:
            lines.append(f"- **{t('summary.part', n=c.index, cite=cite(c.start, c.end))}** — {c.summary or t('summary.none')}")
        lines.append("")
    if small is not None and (unchecked := summary_unchecked(document, overall, done)) is not None:
        # what the model's words name that the document does not have, as the chat says it under a reply
        # ("“$5.10” is not in note_04.txt."; the warning above already says to check them)
        lines += ["> " + say(unchecked_phrases(unchecked)[1:], lookup), ""]
    calls = int(totals["calls"])

    def words_of(parts: list[Chunk]) -> str:  # counted in the text (an English document on a Turkish screen
        # was "about 400 words" of its 619: tokens turned into words at Turkish's rate)
        return rounded_words(sum(words_in(document.text[c.start:c.end]) for c in parts))

    footer, words, whole = "summary.footer" if len(chunks) != 1 else "summary.footer_one", words_of(chunks), {}
    if cancelled:  # the calls that ended (it counted the call stopped)
        calls -= int(totals.get("calls_stopped", 0))
    if cancelled and not combining_stopped:  # the words its parts cover (it said the whole document's)
        footer, whole, words = "summary.footer_stopped", {"all": words}, words_of(done)
    said_calls: Any = ("summary.call_none" if calls <= 0 else "summary.call" if calls == 1 else "summary.calls", {"n": calls})
    kept = sum(1 for c in done if c.metrics is None)  # from a run that stopped: its calls and time not in these
    if kept:
        said_calls = ("summary.calls_and_kept_one" if kept == 1 else "summary.calls_and_kept",
                      {"calls": said_calls, "kept": kept})
    # in words (it said "2,918 document tokens" and "61.2 s"): about 2,200 words (Turkish 1.200), 1 min 1 s
    took = duration(totals["total_ms"] / 1000, lookup)
    if kept:  # this run's time only (the stopped run's is not kept): "…kept from a run that stopped; 2 s" read
        took = t("summary.time_this_run", time=took)  # as the whole summary's time
    lines.append("_" + t(footer, done=len(done), total=len(chunks), words=words, calls=said_calls,
                         time=took, **whole) + "_")
    return "\n".join(lines) + "\n"


def summarize_document(
    engine: ChatEngine,
    document: Document | str | Path,
    profile: Profile,
    on_progress: Callable[[SummaryProgress], None] | None = None,
    cancel: Any = None,
    options: SummarizeOptions | None = None,
    lookup: Lookup | None = None,
    done_parts: Mapping[tuple[int, int], tuple[str, str]] | None = None,
    on_part: Callable[[Chunk], None] | None = None,
) -> SummaryResult:
    """Summarize ``document`` (a Document or a path) with ``engine`` (any ``ChatEngine``).

    ``cancel``: anything with ``is_set()`` (a threading.Event) or a callable returning True to
    stop; finished parts are kept and the result says ``cancelled``. For an instant stop during
    a long prefill, also call ``engine.cancel()``.

    ``done_parts``: parts an earlier, stopped run of the same document and profile finished,
    by their character span: (the reply, its summary); they are not summarized again.
    ``on_part``: called with each part as it is finished (from the engine's thread), so that a
    caller can keep it for such a run (the overnight queue does).
    """
    t0 = time.perf_counter()
    options = options or SummarizeOptions()
    if not isinstance(document, Document):
        document = read_document(document, isolate=True)
    document = with_facts(document, options.all_rows)
    instruction = map_instruction(document)
    runner = Runner(engine, cancel)
    n_ctx, most = _n_ctx(engine, profile)
    (map_tokens, map_cut_by), (reduce_tokens, reduce_cut_by) = _answer_budgets(profile, n_ctx, options)

    # the parts under way: part number -> [the fraction of its prompt read, its tokens written];
    # a desk PC's parts come from several threads at once (its requests in flight): one lock
    under_way: dict[int, list[float]] = {}
    lock = threading.Lock()
    shown = [0.0]  # the calls' worth of work last said: the bar never goes back
    time_left = TimeLeft()
    part_ended = [False]  # a part has ended: the time left counts down inside the next from its estimate
    said_done = [0, 0]  # the calls and parts last said done: a report worked out before another's says no fewer
    # the office server began to stop (a desk PC's): said with every report from then on, to the
    # summary's end or its cut (a word from the server after it ended "waiting")
    stopping: list[ServerWaiting | None] = [None]

    def report(stage: str, done: int, total: int, chunks_done: int, n_chunks: int, eta: float | None,
               message: str = "", inside_part: bool = False, waiting: ServerWaiting | None = None,
               high: float | None = None, at_most: float | None = None) -> None:
        if on_progress is None:
            return
        if waiting is not None and waiting.held == SERVER_STOPPING:
            stopping[0] = waiting
        if stage not in ("done", "cancelled"):
            waiting = waiting or stopping[0]
        pps = None
        if read := reading_calls(runner.calls, runner.prefix):
            n = sum(m.prompt_n for m in read)
            ms = sum(m.prompt_ms for m in read)
            pps = n / ms * 1000 if ms else None
        with lock:  # (and said under it: parts side by side report from their threads, in order)
            parts = {k: list(v) for k, v in under_way.items()} if stage == "map" else {}
            working, first = part_under_way(parts, list(runner.calls), map_tokens, runner.prefix)
            if parts and done + working < shown[0]:  # a part's weight measured anew once a call ended
                working = min(len(parts) * 0.95, shown[0] - done)
            if stage == "map":
                done, chunks_done = max(done, said_done[0]), max(chunks_done, said_done[1])
                said_done[:] = [done, chunks_done]
            shown[0] = max(shown[0], done + working)
            rough = None
            if stage in ("done", "cancelled"):
                pass  # (said as it is: nothing is left)
            elif inside_part and (part_ended[0] or eta is None):  # counted down from the last estimate
                eta = time_left.update(None, time.perf_counter(), at_most=at_most)
            else:
                part_ended[0] = part_ended[0] or (not inside_part and eta is not None)
                eta = time_left.update(eta, time.perf_counter(), None if part_ended[0] else high)
            if eta is not None and stage not in ("done", "cancelled"):
                rough = time_left.high
            on_progress(SummaryProgress(stage, done, total, chunks_done, n_chunks, eta, pps, message, working,
                                        first + 1 if first is not None else 0,
                                        parts[first][0] if first is not None else 0.0,
                                        int(parts[first][1]) if first is not None else 0, inside_part, waiting,
                                        rough, time_left.revised and rough is None))

    report("chunking", 0, 0, 0, 0, None, f"measuring {document.name}")
    chunks, prefix_tokens, budget = make_chunks(runner, document, n_ctx, map_tokens, options, most)
    n = len(chunks)
    runner.prefix = prefix_tokens
    # a document in one part is kept on disk (its questions start from those cells); the parts of
    # a longer one and their reduce steps are not: nobody comes back to them, and each was a
    # state file of up to the whole context (tens of MiB for SmolLM2, GBs for an 8B model)
    runner.tag = None if n == 1 else NOT_KEPT
    est_reduce = 0 if n == 1 else max(1, -(-n * map_tokens // max(1, budget)))
    total_calls = n + est_reduce
    if n == 1:  # its one part's summary is the whole summary: as long as a combined one may be
        # (it was cut at a part's 256 tokens, mid-sentence, on a three-page memo), where it fits
        room = n_ctx - chunks[0].prompt_tokens - options.margin  # (what the context has left after the document)
        if min(reduce_tokens, room) > map_tokens:
            map_tokens, map_cut_by = min(reduce_tokens, room), reduce_cut_by if reduce_tokens <= room else CUT_BY_CONTEXT
    sampling_map = dataclasses.replace(profile.sampling, max_tokens=map_tokens)
    sampling_reduce = dataclasses.replace(profile.sampling, max_tokens=reduce_tokens)

    t_map = time.perf_counter()
    said_at = [0.0]
    # the parts this run has begun to read: part number -> [its tokens read so far, the time taken
    # (ms), its tokens to read]: the pace of reading before a part has ended (``early_eta``)
    pace: dict[int, list[float]] = {}
    # how fast the profile writes (bench's figure, else the plan's estimate): its parts' summaries
    # are timed by it until one has been written here; None: an office server's (its own pace)
    write_tps = profile_decode_tps(profile) if on_progress is not None else None
    # this run's writing so far: part number -> [when its first token came, its tokens since]: the pace
    # the early time left writes at once there is one (the plan's estimate of SmolLM2 said 78 tokens a
    # second; at a part's depth on this PC's busy cores it wrote 12 to 30)
    writing: dict[int, list[float]] = {}

    def early_eta() -> tuple[float, float] | None:
        """The time left before a part of this run has ended (the ETA said "…" for the first
        part's whole reading and writing: 40 s of a 2-part document here, minutes of a long one):
        once ``EARLY_READ`` prompt tokens were read, the rest of the parts' reading at this
        run's pace, their summaries (``part_answer``) at
        the profile's writing speed (a desk PC's: its office server's, as its replies were
        written), and the combining steps; None before. Parts read side by side (``parallel``
        slots, a part's pace each: their times add up) take the time of one in each slot; the
        combining steps one after the other. Said under the lock, with the share of it its range
        goes up to (``TimeLeft``): wide at first, narrower as a part's worth has been read."""
        n_read = sum(p[0] for p in pace.values())
        ms = sum(p[1] for p in pace.values())  # (parts read side by side: a slower pace each)
        if write_tps is None or n_read < EARLY_READ or ms <= 0:
            return None
        answer = part_answer()
        to_read = to_write = 0.0
        left = 0
        for k in todo:
            if chunks[k].summary is not None:
                continue
            left += 1
            read, _, whole = pace.get(k, [0.0, 0.0, chunks[k].prompt_tokens - prefix_tokens])
            to_read += max(0.0, whole - read)
            to_write += max(0.0, answer - under_way.get(k, [0.0, 0.0])[1])
        pps = n_read / ms * 1000
        written = [(n, time.perf_counter() - first) for first, n in writing.values() if n >= EARLY_WRITTEN]
        tps = early_write_pace(write_tps, pps, written)
        side_by_side = max(1, min(profile.parallel, left))
        parts = (to_read / pps + to_write / tps) / side_by_side
        whole = sum(p[2] for p in pace.values()) / len(pace)  # a part's worth
        high = 1.0 + ROUGH_SPREAD * max(0.0, 1.0 - n_read / max(1.0, whole))
        return parts + combining_left(est_reduce, answer, pps, tps), high

    def step(i: int, event: StepEvent) -> None:
        """A part read further or written further: said at most twice a second; the office
        server silent (a desk PC's): said each second, as the chat says it."""
        k = todo[i]
        now = time.perf_counter()
        if isinstance(event, ServerWaiting):
            report("map", len(finished), total_calls, len(finished), n, None, f"part {k + 1} of {n}",
                   inside_part=True, waiting=event)
            return
        with lock:
            state = under_way.setdefault(k, [0.0, 0.0])
            if isinstance(event, PromptRead):
                state[0] = event.fraction
                pace[k] = [event.read - event.cached, event.ms, event.total - event.cached]
            else:
                if not state[1] and not done_parts:  # its first word: its prompt read since the parts began (a short
                    # one says nothing before); not in a run gone on with, whose part may go on from its cells
                    whole = pace[k][2] if k in pace else chunks[k].prompt_tokens - prefix_tokens
                    pace[k] = [whole, (now - t_map) * 1000, whole]
                state[0], state[1] = 1.0, state[1] + event.tokens
                first = writing.setdefault(k, [now, 0.0])
                first[1] = state[1] - 1  # (the tokens since the first one's time)
            due = now - said_at[0] >= 0.5
            if due:
                said_at[0] = now
            early = early_eta() if due else None
        if due:
            report("map", len(finished), total_calls, len(finished), n, early[0] if early else None,
                   f"part {k + 1} of {n}", inside_part=True, high=early[1] if early else None)

    def eta(remaining_chunks: list[Chunk], remaining_reduce: int) -> float | None:
        """The calls left at the prompt and generation speeds measured so far, the parts' never
        more than the wall clock's time per part finished says (the combining steps apart,
        ``combining_time``: one writing its whole budget took a part's time and a half): a
        server's cached prompt made its prompt speed a few tokens a second (24 minutes for one part left of three, 8 s in), and
        parts decoded side by side each counted the time they shared. Both from the calls that
        read their prompts (``reading_calls``): a part gone on with from a stopped run's cells
        is not this run's pace."""
        calls = runner.calls
        read = reading_calls(calls, runner.prefix)
        p_ms = sum(m.prompt_ms for m in read)
        p_n = sum(m.prompt_n for m in read)
        g_ms = sum(m.predicted_ms for m in calls)
        g_n = sum(m.predicted_n for m in calls)
        if not p_n or not p_ms:
            return None
        pps = p_n / p_ms * 1000
        tps = g_n / g_ms * 1000 if g_ms and g_n else None
        answer = part_answer()
        new_prompt = sum(c.prompt_tokens - prefix_tokens for c in remaining_chunks)
        by_speed = new_prompt / pps + (len(remaining_chunks) * answer / tps if tps else 0.0)
        by_clock = (time.perf_counter() - t_map) / len(read) * len(remaining_chunks)
        return min(by_speed, by_clock) + combining_left(remaining_reduce, answer, pps, tps)

    def part_answer() -> float:
        return answer_length([c.metrics.predicted_n for c in chunks if c.metrics is not None and c.summary is not None],
                             kept_answer[0], map_tokens)

    def combining_left(left: int, answer: float, pps: float, tps: float | None) -> float:
        return combining_time(left, n * answer, prefix_tokens, budget, est_reduce,
                              [s.metrics.predicted_n for s in steps], reduce_tokens, pps, tps)

    finished: list[int] = []

    def map_done(k: int, final: TurnFinished) -> None:
        chunk = chunks[k]
        chunk.metrics = final.metrics
        with lock:
            under_way.pop(k, None)
        if final.metrics.stop_reason in ("cancelled", "quota"):  # (quota: not a finished part, nor kept as one)
            return
        chunk.reply = final.text
        nothing = (  # a reasoning model may spend the part's whole budget thinking
            "(the model spent all its tokens for this part thinking and wrote no summary)"
            if final.reasoning else "(the model returned nothing for this part)"
        )
        chunk.summary = clean_summary(final.text, final.metrics) or nothing
        finished.append(k)
        if on_part is not None:
            on_part(chunk)
        left = [c for c in chunks if c.summary is None]
        report("map", len(finished), total_calls, len(finished), n, eta(left, est_reduce),
               f"part {k + 1} of {n} ({chunk.cite})")

    for k, chunk in enumerate(chunks):  # what a stopped run finished is not done again
        kept = (done_parts or {}).get((chunk.start, chunk.end))
        if kept is not None:
            chunk.reply, chunk.summary = kept
            finished.append(k)
    kept_answer = [0.0]  # the tokens a stopped run's parts kept here wrote each (``part_answer``)
    if finished and on_progress is not None:
        replies = runner.count([{"role": "user", "content": "\n".join(chunks[k].reply for k in finished)}])
        kept_answer[0] = max(1.0, (replies - runner.count([{"role": "user", "content": ""}])) / len(finished))
    if finished:
        report("kept", len(finished), total_calls, len(finished), n, None,
               f"{len(finished)} of {n} parts kept from the run that stopped")
    else:
        report("map", 0, total_calls, 0, n, None, f"{n} parts")
    todo = [k for k in range(n) if k not in finished]

    overall = ""
    steps: list[ReduceStep] = []
    follow_up: list[Message] = []

    def result(cancelled: bool) -> SummaryResult:
        wall_ms = (time.perf_counter() - t0) * 1000
        totals = _totals(runner.calls, chunks, wall_ms)
        small = small_model(profile, engine)
        cut_by = reduce_cut_by if steps else map_cut_by  # (what held the step that wrote the summary)
        summary = render_markdown(document, overall, chunks, cancelled, totals, lookup, small, cut_by)
        done_calls = len(runner.calls)
        report("cancelled" if cancelled else "done", done_calls, done_calls, totals["chunks_done"], n, 0.0)
        return SummaryResult(
            source=document.source,
            summary=summary,
            overall=overall,
            chunks=chunks,
            reduce_steps=steps,
            totals=totals,
            cancelled=cancelled,
            n_ctx=n_ctx,
            prefix_tokens=prefix_tokens,
            chunk_budget=budget,
            follow_up=follow_up,
            document=document,
            small=small,
            cut_by=cut_by,
        )

    if on_progress is not None and profile.backend != "llama":  # a combining step's silent server too
        runner.on_waiting = lambda event: report("reduce", len(runner.calls), max(total_calls, len(runner.calls) + 1),
                                                 n, n, None, "", inside_part=True, waiting=event)
    try:
        cancelled = runner.cancelled()
        if not cancelled and todo:
            runner.run_many([chunk_messages(document.text, chunks[k], instruction) for k in todo], sampling_map,
                            lambda i, final: map_done(todo[i], final), step if on_progress is not None else None)
        cancelled = cancelled or len(finished) < n
        if not cancelled:
            if n == 1:
                overall = chunks[0].summary or ""
                if chunks[0].reply.strip() and room_to_ask(chunks[0], n_ctx, profile.sampling):
                    follow_up = [*chunk_messages(document.text, chunks[0], instruction),
                                 {"role": "assistant", "content": chunks[0].reply}]
            else:
                combining: list[Any] = []  # the step under way, said again as it writes: its time left
                # counts down (F6 said "time left: 18 s" all through a 10 s step)

                def combine(level: int, done: int) -> None:
                    combining[:] = [n + done, max(total_calls, n + done + 1), f"combining summaries (level {level})"]
                    report("reduce", *combining[:2], n, n, eta([], 1), combining[2])

                step_writing = [0.0, 0.0]  # the step under way: when its first token came, its tokens since

                def combine_written(written: int) -> None:
                    """A token of a combining step: its time left counts down, but no further than its
                    budget left at this run's pace of writing (the step's own once it has written
                    ``EARLY_WRITTEN`` tokens, else its parts'): a step writing its whole budget was
                    said to take 15 s of its 35, then "…"."""
                    now = time.perf_counter()
                    if written <= step_writing[1] or not step_writing[0]:  # (a step begun)
                        step_writing[0] = now
                    step_writing[1] = written
                    if not combining or on_progress is None or now - said_at[0] < 0.5:
                        return
                    said_at[0] = now
                    g_n = sum(m.predicted_n for m in runner.calls)
                    g_ms = sum(m.predicted_ms for m in runner.calls)
                    tps = g_n / g_ms * 1000 if g_n and g_ms else None
                    if written >= EARLY_WRITTEN and now > step_writing[0]:
                        tps = (written - 1) / (now - step_writing[0])
                    at_most = max(1, reduce_tokens - written) / tps if tps else None
                    report("reduce", *combining[:2], n, n, None, combining[2], inside_part=True, at_most=at_most)

                runner.on_token = combine_written
                overall, cancelled = _reduce(
                    runner, document, chunks, steps, n_ctx, reduce_tokens, sampling_reduce, options, combine, most)
    except WorkstationError as err:  # (a server gone, a key's day over): the parts finished go with it
        if err.said and err.said[0][0] in IN_A_SUMMARY:  # a step over what the engine reads: the summary's
            # own problem, not a message to shorten or a document to summarize
            err = type(err)(said=[(IN_A_SUMMARY[err.said[0][0]], err.said[0][1]), *err.said[1:]])
        if any(c.summary is not None for c in chunks):  # (they were paid for; they were lost)
            overall = ""
            err.partial = result(True)
        raise err from None
    return result(cancelled)


@dataclass
class PartSummary:
    start: int
    end: int
    text: str
    cite: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


def reduce_body(items: list[PartSummary]) -> str:
    """The parts' summaries, a paragraph each, in order. Labelled "Part 1: …", SmolLM2 wrote
    the labels into the summary ("Part 3: The goal of this text…" of a document read in 2
    parts): greedy, 2 of 3 reduce prompts, 0 of 3 without them."""
    return "\n\n".join(neutralize(it.text) for it in items)


def _reduce(
    runner: Runner,
    document: Document,
    chunks: list[Chunk],
    steps: list[ReduceStep],
    n_ctx: int,
    answer: int,
    sampling: Sampling,
    options: SummarizeOptions,
    report: Callable[[int, int], None],
    most: int = 0,
) -> tuple[str, bool]:
    """Reduce the chunk summaries to one; hierarchical when they do not fit together (``most``:
    the prompt tokens the engine reads a request where fewer than the context's)."""
    items = [PartSummary(c.start, c.end, c.summary or "", c.cite) for c in chunks]
    instruction = REDUCE_FACTS_INSTRUCTION if document.facts else REDUCE_INSTRUCTION
    limit = prompt_room(n_ctx, answer, options, most)
    if options.reduce_prompt_tokens:
        limit = min(limit, options.reduce_prompt_tokens)
    level = 1
    while True:
        messages = prompt_messages(instruction, reduce_body(items), REDUCE_SUFFIX)
        n_prompt = runner.count(messages)
        if n_prompt <= limit:
            if runner.cancelled():
                return "", True
            report(level, len(steps))  # combining now (the words said "4 of 4 parts done" all along it)
            text, metrics = runner.run(messages, sampling)
            if metrics.stop_reason == "cancelled":
                return "", True
            overall = clean_summary(text, metrics)
            steps.append(ReduceStep(level, len(items), document.cite(0, len(document.text)), n_prompt, overall, metrics))
            # not said: "3 of 4", combining, with a combining step's time left (none is), before "done"
            return overall, False
        # group consecutive items so that each group's prompt fits, then reduce each group
        groups: list[list[PartSummary]] = []
        current: list[PartSummary] = []
        for it in items:
            trial = [*current, it]
            fits = runner.count(prompt_messages(instruction, reduce_body(trial), REDUCE_SUFFIX)) <= limit
            if fits or not current:
                current = trial
            else:
                groups.append(current)
                current = [it]
        if current:
            groups.append(current)
        if len(groups) >= len(items):  # nothing could be combined: truncate the summaries
            for it in items:
                it.text = it.text[: max(40, len(it.text) // 2)]
            continue
        merged: list[PartSummary] = []
        for group in groups:
            if len(group) == 1:
                merged.append(group[0])
                continue
            if runner.cancelled():
                return "", True
            messages = prompt_messages(instruction, reduce_body(group), REDUCE_SUFFIX)
            n_prompt = runner.count(messages)
            report(level, len(steps))
            text, metrics = runner.run(messages, sampling)
            if metrics.stop_reason == "cancelled":
                return "", True
            start, end = group[0].start, group[-1].end
            cite = document.cite(start, end)
            merged_text = clean_summary(text, metrics)
            steps.append(ReduceStep(level, len(group), cite, n_prompt, merged_text, metrics))
            report(level, len(steps))
            merged.append(PartSummary(start, end, merged_text or group[0].text, cite))
        items = merged
        level += 1
