"""Quality on the user's own work: scored task sets and perplexity.

Task sets are YAML::

    name: Office tasks
    tasks:
      - id: capital-fr          # optional; default task-N
        lang: en                # optional; results are also grouped by language
        prompt: What is the capital of France? Answer with one word.
        match: contains         # exact | contains | regex | choice
        answer: Paris           # text, or a list of accepted texts (any one counts)
      - prompt: "Which is a fruit? A) car B) apple C) chair. Answer with the letter."
        match: choice
        choices: [A, B, C]
        answer: B
      - id: invoice
        prompt: "Extract the invoice number and total from: Invoice 4711, total 99.50 EUR."
        json_schema:            # the answer is generated under this schema's grammar
          type: object
          properties: {number: {type: string}, total: {type: number}}
          required: [number, total]

Scoring rules (``score``):

* exact: the reply equals an answer after normalizing both (Unicode NFKC, Turkish dotted I
  folded, case folded unless ``case_sensitive``, whitespace collapsed, surrounding quotes,
  asterisks and final punctuation removed);
* contains: a normalized answer occurs anywhere in the normalized reply;
* regex: ``re.search`` of the answer pattern in the raw reply (ignoring case unless
  ``case_sensitive``);
* choice: the first of ``choices`` the reply names as a whole word is the model's pick, and
  it must be ``answer``; one-character labels (A, B, C) match case-sensitively so the article
  "a" is not read as choice A;
* json_schema (a task with a ``json_schema``, ``core/structured_output.py``): the reply is
  generated under the schema's grammar and is correct when it parses and validates against the
  schema (``valid``); ``match`` and ``answer`` are then optional, and when given the reply must
  also match them.

Perplexity follows llama.cpp's ``llama-perplexity`` (tools/perplexity/perplexity.cpp): the
text is tokenized once (BOS added when the model adds one, special tokens not parsed),
split into non-overlapping chunks of ``n_ctx`` tokens; each chunk is evaluated from an empty
KV cache with its first token replaced by BOS, and only the second half of each chunk is
scored (positions n_ctx/2 .. n_ctx-2 predicting the next token). PPL = exp(mean NLL).
"""

from __future__ import annotations

import math
import re
import time
import unicodedata
from collections.abc import Callable, Iterator, Sequence
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import llama_cpp
import numpy as np

from workstation.core.atomic import read_text_file
from workstation.core.engine_api import ChatEngine
from workstation.core.errors import WorkstationError
from workstation.core.letters import fold
from workstation.core.phrases import Phrase
from workstation.core.profile_check import short_repr
from workstation.core.profiles import Constraints, Sampling
from workstation.core.runtime import Batch, LoadedModel
from workstation.core.settings_file import YamlError, load_yaml
from workstation.core.structured_output import SchemaError, check_reply, schema_constraints

MATCH_KINDS = ("exact", "contains", "regex", "choice")
TASK_FIELDS = (
    "id", "lang", "prompt", "match", "answer", "choices", "case_sensitive", "max_tokens", "system", "json_schema",
)
SCHEMA_MATCH = "json_schema"  # the match rule of a task scored by its schema alone
DEFAULT_MAX_TOKENS = 64
EXAMPLE_TASKS = Path(__file__).resolve().parent.parent / "data" / "tasks-example.yaml"

Progress = Callable[[str], None]


class TaskSetError(WorkstationError):
    """A task set file is missing, not YAML, or has a wrong field."""


class EvalInputError(WorkstationError):
    """A perplexity text or an eval option cannot be used."""


@dataclass
class Task:
    id: str
    prompt: str
    match: str
    answer: list[str]
    lang: str = ""
    choices: list[str] = field(default_factory=list)
    case_sensitive: bool = False
    max_tokens: int = DEFAULT_MAX_TOKENS
    system: str | None = None
    constraints: Constraints | None = None  # from the task's json_schema


@dataclass
class TaskSet:
    name: str
    source: str
    tasks: list[Task]


# --- loading and validation ------------------------------------------------------------------
def _text_list(value: Any) -> list[str] | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, str | int | float):
        return [str(value)]
    if isinstance(value, list) and value and all(
        isinstance(v, str | int | float) and not isinstance(v, bool) for v in value
    ):
        return [str(v) for v in value]
    return None


def _problem(where: Phrase, key: str, **values: Any) -> TaskSetError:
    """A task set's problem as phrases (core/phrases.py), so ``eval --lang tr`` says it in
    Turkish: where (the file, the task) first, then the sentence ``key`` with ``values``; a
    field's wrong type or value is said with the profile file's sentences."""
    return TaskSetError(said=[where, (key, values)])


def _task_from_dict(data: Any, src: str, index: int) -> Task:
    named = ""
    if isinstance(data, dict) and isinstance(data.get("id"), str | int) and not isinstance(data.get("id"), bool):
        named = str(data["id"])
    where: Phrase = ("tasks.where_named" if named else "tasks.where", {"src": src, "index": str(index), "id": named})
    if not isinstance(data, dict):
        raise _problem(where, "tasks.not_mapping", value=short_repr(data))
    for key in data:
        if key not in TASK_FIELDS:
            raise _problem(where, "profile.unknown", field=str(key),
                           hint=("profile.hint_fields", {"names": ", ".join(TASK_FIELDS)}))
    constraints = None
    if data.get("json_schema") is not None:
        try:
            constraints = schema_constraints(data["json_schema"])
        except SchemaError as err:
            raise _problem(where, "tasks.schema", why=str(err)) from None
        if data.get("match") is None and data.get("answer") is None:
            data = {**data, "match": SCHEMA_MATCH, "answer": "valid JSON"}
    for key in ("prompt", "match", "answer"):
        if key not in data or data[key] is None:
            raise _problem(where, "tasks.missing", field=key, kinds=", ".join(MATCH_KINDS), example=str(EXAMPLE_TASKS))
    prompt = data["prompt"]
    if not isinstance(prompt, str) or not prompt.strip():
        raise _problem(where, "tasks.prompt_empty")
    match = data["match"]
    if match not in MATCH_KINDS and not (match == SCHEMA_MATCH and constraints is not None):
        raise _problem(where, "profile.choice", field="match", value=short_repr(match), allowed=", ".join(MATCH_KINDS))
    answers = _text_list(data["answer"])
    if answers is None:
        raise _problem(where, "profile.texts", field="answer", value=short_repr(data["answer"]))
    if any(not a.strip() for a in answers):
        raise _problem(where, "tasks.answer_empty")
    case_sensitive = data.get("case_sensitive", False)
    if not isinstance(case_sensitive, bool):
        raise _problem(where, "profile.true_false", field="case_sensitive", value=short_repr(case_sensitive))
    if match == "regex":
        for pattern in answers:
            try:
                re.compile(pattern)
            except re.error as err:
                raise _problem(where, "tasks.bad_regex", why=str(err)) from None
    choices: list[str] = []
    if match == "choice":
        if "choices" not in data:
            raise _problem(where, "tasks.choices_missing")
        got = _text_list(data["choices"])
        if got is None or len(got) < 2:
            raise _problem(where, "tasks.choices_short")
        choices = got
        if len(answers) != 1 or answers[0] not in choices:
            raise _problem(where, "profile.choice", field="answer", value=short_repr(data["answer"]),
                           allowed=", ".join(choices))
    elif "choices" in data:
        raise _problem(where, "tasks.choices_unused", value=short_repr(match))
    max_tokens = data.get("max_tokens", DEFAULT_MAX_TOKENS)
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or not 1 <= max_tokens <= 4096:
        raise _problem(where, "tasks.max_tokens", value=short_repr(max_tokens))
    lang = data.get("lang", "")
    if not isinstance(lang, str):
        raise _problem(where, "tasks.lang", value=short_repr(lang))
    system = data.get("system")
    if system is not None and not isinstance(system, str):
        raise _problem(where, "profile.text", field="system", value=short_repr(system))
    return Task(
        id=str(data.get("id", f"task-{index}")),
        prompt=prompt,
        match=match,
        answer=answers,
        lang=lang,
        choices=choices,
        case_sensitive=case_sensitive,
        max_tokens=max_tokens,
        system=system,
        constraints=constraints,
    )


def task_set_from_data(data: Any, src: str) -> TaskSet:
    name = Path(src).stem
    in_file: Phrase = ("profile.in", {"src": src})
    if isinstance(data, dict):
        for key in data:
            if key not in ("name", "tasks"):
                raise _problem(in_file, "profile.unknown", field=str(key),
                               hint=("profile.hint_fields", {"names": "name, tasks"}))
        name = str(data.get("name") or name)
        items = data.get("tasks")
    else:
        items = data
    if not isinstance(items, list) or not items:
        raise _problem(in_file, "tasks.none")
    tasks = [_task_from_dict(item, src, i) for i, item in enumerate(items, 1)]
    seen: set[str] = set()
    for i, task in enumerate(tasks, 1):
        if task.id in seen:
            raise _problem(("tasks.where", {"src": src, "index": str(i), "id": ""}), "tasks.id_repeats", id=task.id)
        seen.add(task.id)
    return TaskSet(name=name, source=src, tasks=tasks)


def load_task_set(path: Path) -> TaskSet:
    src = str(path)
    text = read_text_file(path, "file.what_task_set", TaskSetError)
    try:
        data = load_yaml(text)  # task sets get passed around an office: no alias bombs
    except YamlError as err:
        raise TaskSetError(said=err.said_of(src)) from None
    return task_set_from_data(data, src)


# --- scoring -----------------------------------------------------------------------------------
_EDGE = " \t\n\"'`*_.,;:!?()[]{}«»“”‘’"


def normalize(text: str, case_sensitive: bool = False) -> str:
    text = unicodedata.normalize("NFKC", text)
    if not case_sensitive:
        text = fold(text)  # as search does: İSTANBUL, Istanbul and istanbul are one answer
    text = " ".join(text.split())
    return text.strip(_EDGE)


def picked_choice(reply: str, choices: list[str], case_sensitive: bool = False) -> str | None:
    """The choice the reply names first (whole words only), or None."""
    best: tuple[int, int, str] | None = None
    for choice in choices:
        flags = 0 if case_sensitive or len(choice.strip()) == 1 else re.IGNORECASE
        m = re.search(rf"(?<!\w){re.escape(choice.strip())}(?!\w)", reply, flags)
        if m and (best is None or (m.start(), -len(choice)) < best[:2]):
            best = (m.start(), -len(choice), choice)
    return best[2] if best else None


def score(task: Task, reply: str) -> bool:
    """Whether ``reply`` answers ``task`` correctly under its match rule (and, with a schema,
    is valid against it)."""
    if task.constraints is not None and not check_reply(reply, task.constraints.json_schema).valid:
        return False
    cs = task.case_sensitive
    if task.match == SCHEMA_MATCH:
        return True
    if task.match == "exact":
        got = normalize(reply, cs)
        return any(got == normalize(a, cs) for a in task.answer)
    if task.match == "contains":
        got = normalize(reply, cs)
        return any(normalize(a, cs) in got for a in task.answer)
    if task.match == "regex":
        flags = re.MULTILINE | (0 if cs else re.IGNORECASE)
        return any(re.search(a, reply, flags) for a in task.answer)
    if task.match == "choice":
        return picked_choice(reply, task.choices, cs) == task.answer[0]
    raise TaskSetError(f"unknown match rule {task.match!r}")


# --- running tasks -----------------------------------------------------------------------------
@dataclass
class TaskResult:
    id: str
    lang: str
    correct: bool
    reply: str
    expected: list[str]
    match: str
    ttft_ms: float
    predicted_n: int
    predicted_ms: float
    prompt_n: int
    prompt_ms: float
    schema_error: str | None = None  # a task with a json_schema: why the reply is not valid

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class TasksScore:
    task_set: str
    results: list[TaskResult]

    @property
    def correct(self) -> int:
        return sum(r.correct for r in self.results)

    @property
    def accuracy(self) -> float:
        return self.correct / len(self.results) if self.results else 0.0

    def by_lang(self) -> dict[str, tuple[int, int]]:
        out: dict[str, tuple[int, int]] = {}
        for r in self.results:
            c, n = out.get(r.lang or "-", (0, 0))
            out[r.lang or "-"] = (c + r.correct, n + 1)
        return out

    @property
    def gen_ts(self) -> float | None:
        n = sum(r.predicted_n for r in self.results)
        ms = sum(r.predicted_ms for r in self.results)
        return n / ms * 1000 if ms > 0 else None

    @property
    def prompt_ts(self) -> float | None:
        n = sum(r.prompt_n for r in self.results)
        ms = sum(r.prompt_ms for r in self.results)
        return n / ms * 1000 if ms > 0 else None

    @property
    def ttft_ms(self) -> float | None:
        return sum(r.ttft_ms for r in self.results) / len(self.results) if self.results else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "task_set": self.task_set,
            "n_tasks": len(self.results),
            "correct": self.correct,
            "accuracy": round(self.accuracy, 6),
            "by_lang": {k: {"correct": c, "n": n, "accuracy": round(c / n, 6)} for k, (c, n) in self.by_lang().items()},
            "gen_ts": round(self.gen_ts, 3) if self.gen_ts is not None else None,
            "prompt_ts": round(self.prompt_ts, 3) if self.prompt_ts is not None else None,
            "ttft_ms": round(self.ttft_ms, 2) if self.ttft_ms is not None else None,
            "tasks": [r.to_dict() for r in self.results],
        }


def run_tasks(engine: ChatEngine, task_set: TaskSet, progress: Progress | None = None) -> TasksScore:
    """Each task as a fresh conversation, greedy (temperature 0, no repeat penalty), after an
    untimed warm-up turn on the first task's prompt (bench's ``warm_up``)."""
    from workstation.core.bench import (
        warm_up,  # (bench reads the engine's modules; loaded when tasks run)
    )

    results = []
    if task_set.tasks:
        first = task_set.tasks[0]
        warm_up(engine, [*([{"role": "system", "content": first.system}] if first.system is not None else []),
                         {"role": "user", "content": first.prompt}])
    for i, task in enumerate(task_set.tasks, 1):
        if progress:
            progress(f"{engine.profile.key}: task {i}/{len(task_set.tasks)} ({task.id})")
        messages = []
        if task.system is not None:
            messages.append({"role": "system", "content": task.system})
        messages.append({"role": "user", "content": task.prompt})
        sampling = Sampling(temperature=0.0, max_tokens=task.max_tokens, repeat_penalty=1.0, seed=0)
        engine.reset()
        final = engine.run_chat(messages, sampling, constraints=task.constraints)
        m = final.metrics
        schema_error = None
        if task.constraints is not None:
            schema_error = check_reply(final.text, task.constraints.json_schema).error or None
        results.append(
            TaskResult(
                id=task.id, lang=task.lang, correct=score(task, final.text), reply=final.text,
                expected=task.answer if task.match != "choice" else [task.answer[0]], match=task.match,
                ttft_ms=m.ttft_ms, predicted_n=m.predicted_n, predicted_ms=m.predicted_ms,
                prompt_n=m.prompt_n, prompt_ms=m.prompt_ms, schema_error=schema_error,
            )
        )
    engine.reset()
    return TasksScore(task_set.name, results)


# --- perplexity --------------------------------------------------------------------------------
@dataclass
class PerplexityResult:
    ppl: float
    ppl_stderr: float
    n_ctx: int
    n_chunks: int
    n_scored: int
    n_text_tokens: int
    seconds: float
    chunk_ppl: list[float] = field(default_factory=list)  # running estimate after each chunk

    @property
    def tokens_per_second(self) -> float:
        return self.n_chunks * self.n_ctx / self.seconds if self.seconds > 0 else 0.0

    def to_dict(self) -> dict[str, Any]:
        d = dict(self.__dict__)
        d["tokens_per_second"] = round(self.tokens_per_second, 3)
        return d


def _nll_rows(logits: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """-log softmax(logits)[target] per row (max-subtracted, sums in float64)."""
    m = logits.max(axis=1, keepdims=True)
    sum_exp = np.exp(logits - m).sum(axis=1, dtype=np.float64)
    picked = logits[np.arange(len(targets)), targets].astype(np.float64) - m[:, 0]
    return np.log(sum_exp) - picked


@dataclass
class ScoredLogits:
    """The logits of some scored positions of one window, as ``scored_logits`` yields them."""

    window: int  # 0-based window index
    positions: list[int]  # positions in the window (n_ctx/2 .. n_ctx-2)
    logits: np.ndarray  # [len(positions), n_vocab] float32, a view of llama.cpp's buffer
    targets: np.ndarray  # the token that follows each position (int64)
    last: bool  # the window's last scored rows
    decode_seconds: float  # llama_decode time since the previous item (the model's own speed)


DEFAULT_WINDOW = 512  # llama-perplexity's default -c: --kld's window, and a short text's perplexity's


def count_windows(n_tokens: int, n_ctx: int, model_ctx: int, max_chunks: int | None, what: str) -> int:
    """How many whole windows of ``n_ctx`` tokens a text gives; EvalInputError when none (said
    with phrases: ``what`` is the measure's, "eval.what_perplexity" or "eval.what_kld")."""
    if n_ctx < 16:
        raise EvalInputError(said=[("eval.window_too_small", {"what": (what, {}), "n": n_ctx})])
    if n_ctx > model_ctx:
        raise EvalInputError(said=[("eval.window_over_context", {"what": (what, {}), "n": n_ctx, "ctx": model_ctx})])
    n_chunk = n_tokens // n_ctx
    if max_chunks is not None:
        n_chunk = min(n_chunk, max_chunks)
    if n_chunk < 1:
        raise EvalInputError(said=[("eval.text_too_short", {"what": (what, {}), "n": n_tokens, "ctx": n_ctx})])
    return n_chunk


def scored_logits(
    model: LoadedModel,
    tokens: Sequence[int],
    n_ctx: int,
    n_chunk: int,
    progress: Progress | None = None,
    what: str = "perplexity",
) -> Iterator[ScoredLogits]:
    """llama-perplexity's window loop: each of ``n_chunk`` windows of ``n_ctx`` tokens from an
    empty KV cache, its first token replaced by BOS when the model adds one, logits only for
    the second half (positions n_ctx/2 .. n_ctx-2, each predicting the next token). Yields
    the logits batch by batch; each view is valid only until the next item is asked for.
    Use it inside ``contextlib.closing`` so the batch and the KV cache are released."""
    first = n_ctx // 2
    n_batch = model.n_batch
    bos = model.bos_token if model.add_bos else None
    batch = Batch(n_batch)
    decode_s = 0.0
    try:
        for i in range(n_chunk):
            if progress:
                progress(f"{what} window {i + 1}/{n_chunk}")
            start = i * n_ctx
            chunk = list(tokens[start : start + n_ctx])
            if bos is not None:
                chunk[0] = bos
            model.clear_memory()
            for b0 in range(0, n_ctx, n_batch):
                b1 = min(n_ctx, b0 + n_batch)
                batch.clear()
                out_pos = []
                for pos in range(b0, b1):
                    want = first <= pos < n_ctx - 1  # position n_ctx-1 has no next token to score
                    batch.add(chunk[pos], pos, 0, want)
                    if want:
                        out_pos.append(pos)
                t0 = time.perf_counter()
                model.decode_stoppable(batch)
                decode_s += time.perf_counter() - t0
                if not out_pos:
                    continue
                ptr = llama_cpp.llama_get_logits(model.ctx)
                yield ScoredLogits(
                    window=i,
                    positions=out_pos,
                    logits=np.ctypeslib.as_array(ptr, shape=(len(out_pos), model.n_vocab)),
                    targets=np.array([tokens[start + p + 1] for p in out_pos], dtype=np.int64),
                    last=out_pos[-1] == n_ctx - 2,
                    decode_seconds=decode_s,
                )
                decode_s = 0.0
    finally:
        batch.close()
        model.clear_memory()


def mean_and_uncertainty(total: float, total2: float, count: int) -> tuple[float, float]:
    """The mean of ``count`` values from their sum and sum of squares, and the standard error
    of that mean, as llama-perplexity prints them (no uncertainty from 10 values or fewer)."""
    if count < 1:
        return 0.0, 0.0
    mean = total / count
    var = total2 / count - mean * mean
    return mean, math.sqrt(var / (count - 1)) if var > 0 and count > 10 else 0.0


def perplexity(
    model: LoadedModel,
    tokens: list[int],
    n_ctx: int,
    max_chunks: int | None = None,
    progress: Progress | None = None,
) -> PerplexityResult:
    """llama-perplexity's figure for ``tokens`` (already tokenized with BOS) in windows of n_ctx."""
    n_chunk = count_windows(len(tokens), n_ctx, model.n_ctx, max_chunks, "eval.what_perplexity")
    nll = nll2 = 0.0
    count = 0
    chunk_ppl = []
    t0 = time.perf_counter()
    with closing(scored_logits(model, tokens, n_ctx, n_chunk, progress)) as windows:
        for rows in windows:
            for r0 in range(0, len(rows.targets), 128):
                values = _nll_rows(rows.logits[r0 : r0 + 128], rows.targets[r0 : r0 + 128])
                nll += float(values.sum())
                nll2 += float((values * values).sum())
                count += len(values)
            if rows.last:
                chunk_ppl.append(math.exp(nll / count))
    seconds = time.perf_counter() - t0
    mean = nll / count
    var = nll2 / count - mean * mean
    ppl = math.exp(mean)
    stderr = math.sqrt(var / (count - 1)) * ppl if var > 0 and count > 1 else 0.0
    return PerplexityResult(
        ppl=ppl, ppl_stderr=stderr, n_ctx=n_ctx, n_chunks=n_chunk, n_scored=count,
        n_text_tokens=len(tokens), seconds=seconds, chunk_ppl=chunk_ppl,
    )


def read_text(path: Path) -> str:
    """The text as llama-perplexity's ``-f`` reads it (one trailing newline dropped)."""
    text = read_text_file(path, "file.what_text", EvalInputError, any_encoding=True)  # (a binary file was Python's codec error)
    if text.endswith("\n"):
        text = text[:-1]
    if not text.strip():
        raise EvalInputError(said=[("eval.text_empty", {"path": str(path)})])
    return text


def text_perplexity(
    model: LoadedModel,
    text: str,
    n_ctx: int | None = None,
    max_chunks: int | None = None,
    progress: Progress | None = None,
) -> PerplexityResult:
    """The perplexity of ``text`` in windows of ``n_ctx`` tokens; none given: llama-perplexity's
    512 (at most the loaded context), the same for every profile compared (the profile's own
    context refused a three-page memo of 1,803 tokens: "a window of 4096 needs at least 4096",
    and a window chosen per profile compared two windows as two profiles)."""
    tokens = model.tokenize(text, add_special=True, parse_special=False)
    if n_ctx is None:
        n_ctx = min(model.n_ctx, DEFAULT_WINDOW)
    return perplexity(model, tokens, n_ctx, max_chunks, progress)
