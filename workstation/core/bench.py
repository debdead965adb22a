"""llama-bench-style speed tests on our own decode path, plus TTFT, acceptance and replay.

``pp`` and ``tg`` follow llama.cpp's ``llama-bench`` (tools/llama-bench/llama-bench.cpp):

* pp: clear the KV cache, decode ``n_prompt`` random tokens (BOS first when the model adds
  one) in ``n_batch`` chunks of one sequence, logits only for the last token of each chunk;
* tg: from an empty cache, decode ``n_gen`` tokens one at a time, each with logits;
* a warm-up (one pp run, one single-token tg run) before ``repetitions`` timed runs; the
  figure is the mean of the per-run rates (tokens / seconds) with its sample standard deviation.

Both run through ``runtime.LoadedModel`` (the engine's own model and context, so the profile's
context, threads, K/V types, flash attention and GPU layers apply). TTFT is a real chat turn
through ``Engine`` from a cold cache; for speculative profiles the same turns give the
drafted / accepted counts. ``replay`` runs a user's real prompts through the engine.
"""

from __future__ import annotations

import ctypes
import json
import statistics
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import llama_cpp
import numpy as np

from workstation.core.atomic import read_text_file
from workstation.core.engine import Engine
from workstation.core.engine_api import ChatEngine, open_engine, too_long
from workstation.core.errors import EngineError, WorkstationError
from workstation.core.events import TurnFinished
from workstation.core.metrics import TurnMetrics, draft_acceptance
from workstation.core.phrases import Lookup, Phrase, say
from workstation.core.profiles import Profile, Sampling, sampling_name, sampling_number
from workstation.core.results import ResultRow, build_info, machine_info
from workstation.core.runtime import Batch, LoadedModel

DEFAULT_TTFT_PROMPT = (
    "Write a short paragraph for office staff explaining why regular backups of their "
    "documents matter and how often they should make them."
)

Progress = Callable[[str], None]


class BenchInputError(WorkstationError):
    """A replay file or a bench option the user gave cannot be used."""


class PromptTooLong(BenchInputError):
    """A replayed prompt (a document) the profile's context cannot hold as one message: which
    one (``index``, from 1), in which profile, and the engine's sentence (its ``said``: the
    tokens, the context, the reply's reserve), so that the command names the document."""

    def __init__(self, err: EngineError, index: int, profile: Profile) -> None:
        super().__init__(str(err), said=err.said)
        self.index, self.profile = index, profile


@dataclass
class BenchConfig:
    n_prompt: int = 512
    n_gen: int = 128
    repetitions: int = 5
    warmup: bool = True
    ttft: bool = True
    ttft_prompt: str = DEFAULT_TTFT_PROMPT
    seed: int = 1234


@dataclass
class SpeedStat:
    """One timed test over several repetitions (llama-bench's ``samples_ns`` and rates)."""

    n_tokens: int
    samples_ns: list[int] = field(default_factory=list)

    @property
    def samples_ts(self) -> list[float]:
        return [1e9 * self.n_tokens / ns for ns in self.samples_ns if ns > 0]

    @property
    def avg_ts(self) -> float:
        ts = self.samples_ts
        return statistics.fmean(ts) if ts else 0.0

    @property
    def stddev_ts(self) -> float:
        ts = self.samples_ts
        return statistics.stdev(ts) if len(ts) > 1 else 0.0

    @property
    def avg_ns(self) -> int:
        return int(statistics.fmean(self.samples_ns)) if self.samples_ns else 0

    @property
    def stddev_ns(self) -> int:
        return int(statistics.stdev(self.samples_ns)) if len(self.samples_ns) > 1 else 0


def mean_std(values: list[float]) -> tuple[float, float]:
    if not values:
        return 0.0, 0.0
    return statistics.fmean(values), statistics.stdev(values) if len(values) > 1 else 0.0


@dataclass
class ProfileBench:
    """Everything ``bench`` measured for one profile."""

    profile: str
    model_info: dict[str, Any]
    pp: SpeedStat | None = None
    tg: SpeedStat | None = None
    turns: list[TurnMetrics] = field(default_factory=list)  # the TTFT / acceptance chat turns
    test_time: str = ""
    rounds: int = 1  # runs in rounds with other profiles (bench_profiles), one repetition each
    drafting_off: list[Phrase] = field(default_factory=list)  # why the speculation drafted no more this session
    ref: str = ""  # what -p takes to load the profile again (its key, or its file's path)

    def add_round(self, other: ProfileBench) -> None:
        """Another round's repetitions of the same tests."""
        for mine, theirs in ((self.pp, other.pp), (self.tg, other.tg)):
            if mine is not None and theirs is not None:
                mine.samples_ns.extend(theirs.samples_ns)
        self.turns.extend(other.turns)
        self.drafting_off = self.drafting_off or other.drafting_off
        self.rounds += 1

    @property
    def ttft_ms(self) -> tuple[float, float] | None:
        return mean_std([t.ttft_ms for t in self.turns]) if self.turns else None

    @property
    def chat_ts(self) -> float | None:
        n = sum(t.predicted_n for t in self.turns)
        ms = sum(t.predicted_ms for t in self.turns)
        return n / ms * 1000 if ms > 0 else None

    @property
    def chat_stat(self) -> SpeedStat | None:
        """The chat turns' writing as a test's repetitions (each turn's tok/s, its drafts included),
        for telling two profiles' chat tg apart as ``tg``'s repetitions are."""
        samples = [round(t.predicted_ms * 1e6 / t.predicted_n) for t in self.turns if t.predicted_n and t.predicted_ms > 0]
        return SpeedStat(1, samples) if samples else None

    @property
    def draft_n(self) -> int:
        return sum(t.draft_n for t in self.turns)

    @property
    def draft_n_accepted(self) -> int:
        return sum(t.draft_n_accepted for t in self.turns)

    @property
    def acceptance(self) -> float | None:
        return draft_acceptance(self.draft_n_accepted, self.draft_n)

    def records(self) -> list[dict[str, Any]]:
        """llama-bench's JSON records (one per pp/tg test) with our own fields added."""
        out = []
        ttft = self.ttft_ms
        ours = {
            "profile": self.profile,
            "ttft_ms": round(ttft[0], 2) if ttft else None,
            "ttft_stddev_ms": round(ttft[1], 2) if ttft else None,
            "chat_ts": round(self.chat_ts, 2) if self.chat_ts is not None else None,
            # each chat turn's writing (tok/s): the spread of the figure fit says (calibration.decode_figure)
            "chat_samples_ts": [round(x, 6) for x in self.chat_stat.samples_ts] if self.chat_stat else [],
            "speculative": self.model_info.get("speculative", "off"),
            "draft_n": self.draft_n,
            "draft_n_accepted": self.draft_n_accepted,
            "acceptance": round(self.acceptance, 4) if self.acceptance is not None else None,
            "drafting_off": say(self.drafting_off) or None,  # why drafting stopped for the session (None: it did not)
            "rounds": self.rounds,  # > 1: its repetitions ran in rounds with other profiles (bench_profiles)
        }
        for name, stat, n_prompt, n_gen in (
            ("pp", self.pp, self.pp.n_tokens if self.pp else 0, 0),
            ("tg", self.tg, 0, self.tg.n_tokens if self.tg else 0),
        ):
            if stat is None:
                continue
            rec = dict(self.model_info)
            rec.pop("speculative", None)
            rec.update(
                test=f"{name}{stat.n_tokens}",
                n_prompt=n_prompt,
                n_gen=n_gen,
                n_depth=0,
                test_time=self.test_time,
                avg_ns=stat.avg_ns,
                stddev_ns=stat.stddev_ns,
                avg_ts=round(stat.avg_ts, 6),
                stddev_ts=round(stat.stddev_ts, 6),
                samples_ns=list(stat.samples_ns),
                samples_ts=[round(x, 6) for x in stat.samples_ts],
            )
            rec.update(ours)
            out.append(rec)
        if not out:  # TTFT only
            rec = dict(self.model_info)
            rec.pop("speculative", None)
            rec.update(test="ttft", n_prompt=0, n_gen=0, n_depth=0, test_time=self.test_time)
            rec.update(ours)
            out.append(rec)
        return out

    def result_rows(self) -> list[ResultRow]:
        model = self.model_info.get("model_filename", "")
        data = {"records": self.records()}
        rows = []
        for name, stat in (("pp", self.pp), ("tg", self.tg)):
            if stat is not None:
                rows.append(ResultRow(self.profile, f"{name}{stat.n_tokens}", stat.avg_ts, "tok/s",
                                      model, {"stddev": stat.stddev_ts, **data}))
        ttft = self.ttft_ms
        if ttft is not None:
            rows.append(ResultRow(self.profile, "ttft", ttft[0], "ms", model, {"stddev": ttft[1]}))
            if self.chat_ts is not None:
                rows.append(ResultRow(self.profile, "chat", self.chat_ts, "tok/s", model, {}))
        if self.acceptance is not None:
            rows.append(ResultRow(self.profile, "acceptance", self.acceptance, "ratio", model,
                                  {"draft_n": self.draft_n, "draft_n_accepted": self.draft_n_accepted}))
        return rows


# --- what the model and settings are (llama-bench's descriptive fields) -----------------------
def model_info(engine: Engine) -> dict[str, Any]:
    model = engine.model
    buf = ctypes.create_string_buffer(128)
    llama_cpp.llama_model_desc(model.model.model, buf, ctypes.sizeof(buf))
    machine = machine_info()
    build = build_info()
    info = engine.info()
    return {
        "build_commit": "",
        "build_number": 0,
        "llama_cpp_python": build["llama_cpp_python"],
        "cpu_info": machine["cpu_model"],
        "gpu_info": ", ".join(machine["gpus"]),
        "backends": "GPU" if build["gpu_offload"] else "CPU",
        "model_filename": str(model.path),
        "model_type": buf.value.decode("utf-8", errors="replace"),
        "model_size": int(llama_cpp.llama_model_size(model.model.model)),
        "model_n_params": int(llama_cpp.llama_model_n_params(model.model.model)),
        "n_ctx": model.n_ctx,
        "n_batch": model.n_batch,
        "n_ubatch": model.n_batch,
        "n_threads": info.threads,
        "type_k": info.type_k,
        "type_v": info.type_v,
        "n_gpu_layers": info.gpu_layers,
        "flash_attn": int(info.flash_attn),
        "speculative": info.speculative,
    }


# --- the llama-bench tests ---------------------------------------------------------------------
def _first_token(model: LoadedModel, rng: np.random.Generator) -> int:
    return model.bos_token if model.add_bos and model.bos_token >= 0 else int(rng.integers(model.n_vocab))


def run_pp(model: LoadedModel, batch: Batch, n_prompt: int, rng: np.random.Generator) -> int:
    """One prompt-processing run from an empty cache; returns nanoseconds."""
    tokens = rng.integers(0, model.n_vocab, size=n_prompt).tolist()
    tokens[0] = _first_token(model, rng)
    model.clear_memory()
    t0 = time.perf_counter_ns()
    done = 0
    while done < n_prompt:
        n = min(n_prompt - done, model.n_batch)
        batch.clear()
        for k in range(n):
            batch.add(tokens[done + k], done + k, 0, k == n - 1)
        model.decode(batch)
        done += n
    llama_cpp.llama_synchronize(model.ctx)
    return time.perf_counter_ns() - t0


TG_STEPS = 8  # a tg run says how far it is this many times (tg128 at 6.8 tok/s was 19 s of silence)


def run_tg(model: LoadedModel, batch: Batch, n_gen: int, rng: np.random.Generator, n_seq: int = 1,
           tick: Callable[[int], None] | None = None) -> int:
    """One generation run, one token per decode, from an empty cache; returns nanoseconds.

    With ``n_seq`` > 1 that many sequences decode together (one token each per decode, as the
    scheduler's slots do; the context needs ``n_seq_max`` >= ``n_seq``). ``tick``: told the
    tokens written so far ``TG_STEPS`` times in the run, its own time left out of the figure."""
    tokens = rng.integers(0, model.n_vocab, size=n_gen * n_seq).tolist()
    first = _first_token(model, rng)
    tokens[:n_seq] = [first] * n_seq
    every = max(1, n_gen // TG_STEPS)
    model.clear_memory()
    t0 = time.perf_counter_ns()
    told = 0  # nanoseconds spent telling ``tick``
    for pos in range(n_gen):
        batch.clear()
        for seq in range(n_seq):
            batch.add(tokens[pos * n_seq + seq], pos, seq, True)
        model.decode(batch)
        llama_cpp.llama_synchronize(model.ctx)
        if tick is not None and (pos + 1) % every == 0 and pos + 1 < n_gen:
            t1 = time.perf_counter_ns()
            tick(pos + 1)
            told += time.perf_counter_ns() - t1
    return time.perf_counter_ns() - t0 - told


WRITE_TOKENS, WRITE_REPETITIONS = 8, 3  # eval --kld's writing speed: tg8 three times (under a second on a CPU)


def writing_speed(model: LoadedModel, n_gen: int = WRITE_TOKENS, repetitions: int = WRITE_REPETITIONS,
                  seed: int = 1234) -> SpeedStat:
    """tg``n_gen`` ``repetitions`` times on a loaded model, after a warm-up step, as bench times
    it: eval --kld said "prefer Q8_0" by its reading alone (its KL divergence pass), where the
    other wrote faster."""
    rng = np.random.default_rng(seed)
    batch = Batch(model.n_batch)
    stat = SpeedStat(n_gen)
    try:
        run_tg(model, batch, 1, rng)
        for _ in range(repetitions):
            stat.samples_ns.append(run_tg(model, batch, n_gen, rng))
    finally:
        batch.close()
        model.clear_memory()
    return stat


def _check_sizes(engine: Engine, config: BenchConfig) -> None:
    n_ctx = engine.model.n_ctx
    for name, n in (("n-prompt", config.n_prompt), ("n-gen", config.n_gen)):
        if n < 0:
            raise BenchInputError(said=[("bench.at_least", {"name": f"--{name}", "low": 0, "value": n})])
        if n > n_ctx:
            raise BenchInputError(said=[("bench.over_context", {"name": f"--{name}", "n": n,
                                                                 "profile": engine.profile.key, "ctx": n_ctx})])
    if config.repetitions < 1:
        raise BenchInputError(said=[("bench.at_least", {"name": "--repetitions", "low": 1, "value": config.repetitions})])


def warm_up(engine: ChatEngine, messages: list[dict[str, Any]]) -> None:
    """One untimed turn of one token before timed turns: the first model loaded pays its page-in
    and warm-up in its first turn (bench's warm-up; eval --tasks called the profile listed first
    the slowest by it). The engine is reset after it."""
    engine.run_chat(messages, Sampling(temperature=0.0, max_tokens=1, repeat_penalty=1.0))
    engine.reset()


def bench_engine(
    engine: Engine, config: BenchConfig, progress: Progress | None = None, lookup: Lookup | None = None
) -> ProfileBench:
    """pp / tg / TTFT (and acceptance) for one loaded profile; its progress in ``lookup``'s language."""
    report = progress or (lambda _msg: None)

    def said(key: str, **values: Any) -> None:
        report(say([(f"bench.progress_{key}", {"profile": engine.profile.key, **values})], lookup))

    _check_sizes(engine, config)
    key = engine.profile.key
    result = ProfileBench(
        profile=key,
        ref=engine.profile.ref,
        model_info=model_info(engine),
        test_time=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
    )
    model = engine.model
    rng = np.random.default_rng(config.seed)
    batch = Batch(model.n_batch)
    try:
        engine.reset()
        if config.n_prompt > 0:
            if config.warmup:
                said("warmup_pp", n=config.n_prompt)
                run_pp(model, batch, config.n_prompt, rng)
            result.pp = SpeedStat(config.n_prompt)
            for i in range(config.repetitions):
                said("pp", n=config.n_prompt, i=i + 1, reps=config.repetitions)
                result.pp.samples_ns.append(run_pp(model, batch, config.n_prompt, rng))
        if config.n_gen > 0:
            if config.warmup:
                said("warmup_tg")
                run_tg(model, batch, 1, rng)
            result.tg = SpeedStat(config.n_gen)
            for i in range(config.repetitions):
                run = {"n": config.n_gen, "i": i + 1, "reps": config.repetitions}
                said("tg", **run)
                result.tg.samples_ns.append(run_tg(model, batch, config.n_gen, rng, tick=lambda n, run=run: said(
                    "tg_tokens", **run, done=n)))
    finally:
        batch.close()
        engine.reset()  # the KV cache no longer mirrors engine.tokens
    if config.ttft:
        sampling = Sampling(temperature=0.0, max_tokens=max(1, config.n_gen or 32), seed=config.seed,
                            repeat_penalty=1.0)
        messages = [{"role": "user", "content": config.ttft_prompt}]
        if config.warmup:
            warm_up(engine, messages)
        for i in range(config.repetitions):
            said("chat", i=i + 1, reps=config.repetitions)
            engine.reset()
            result.turns.append(engine.run_chat(messages, sampling).metrics)
        engine.reset()
        result.drafting_off = engine.core.drafting_off()
    return result


def in_rounds(
    n: int, rounds: int, progress: Progress | None, lookup: Lookup | None = None
) -> Iterator[tuple[int, Progress | None]]:
    """(profile index, its progress) for ``rounds`` rounds of ``n`` profiles, the order reversed
    every other round, each round's messages saying which round it is (in ``lookup``'s language)."""
    for r in range(rounds):
        each = progress
        if progress and rounds > 1:
            def each(msg: str, _r: int = r) -> None:
                progress(say([("bench.progress_round", {"r": _r + 1, "rounds": rounds, "what": msg})], lookup))
        for i in (range(n) if r % 2 == 0 else reversed(range(n))):
            yield i, each


def bench_profiles(
    profiles: list[Profile], config: BenchConfig, progress: Progress | None = None, lookup: Lookup | None = None
) -> list[ProfileBench]:
    """Bench each profile, one model in memory at a time. Two or more profiles run in rounds:
    each round loads every profile in turn (the order reversed every other round) and runs one
    repetition of each test, as bench/anchors.py does, so that a program that takes the CPU
    for a while slows every profile alike instead of the one that happened to run then."""
    if config.repetitions < 1:
        raise BenchInputError(said=[("bench.at_least", {"name": "--repetitions", "low": 1, "value": config.repetitions})])
    rounds = config.repetitions if len(profiles) > 1 else 1
    each = replace(config, repetitions=1) if rounds > 1 else config
    results: dict[int, ProfileBench] = {}
    for i, report in in_rounds(len(profiles), rounds, progress, lookup):
        profile = profiles[i]
        if report:
            report(say([("bench.progress_loading", {"profile": profile.key, "model": profile.model})], lookup))
        check_local(profile)
        engine = Engine(profile)  # pp/tg drive llama.cpp directly, as llama-bench does
        try:
            part = bench_engine(engine, each, report, lookup)
        finally:
            engine.close()
        if i in results:
            results[i].add_round(part)
        else:
            results[i] = part
    return [results[i] for i in range(len(profiles))]


# --- replay of the user's own prompts ------------------------------------------------------------
@dataclass
class ReplayItem:
    index: int
    prompt: str
    metrics: TurnMetrics

    def to_dict(self) -> dict[str, Any]:
        m = self.metrics
        return {
            "index": self.index,
            "prompt": self.prompt[:200],
            "prompt_n": m.prompt_n,
            "cache_n": m.cache_n,
            "ttft_ms": round(m.ttft_ms, 2),
            "predicted_n": m.predicted_n,
            "predicted_per_second": round(m.predicted_per_second, 2),
            "prompt_per_second": round(m.prompt_per_second, 2),
            "draft_n": m.draft_n,
            "draft_n_accepted": m.draft_n_accepted,
            "stop_reason": m.stop_reason,
        }


# a round that wrote at under this share of the median of the same profile's other rounds ran
# while the PC was busy: a lookup profile's rounds of 3.5 and 38.7 tok/s were judged as one figure
# (6.4 tok/s, its tokens over its time), "6.02x slower" than a profile writing 38 to 39 in both
BUSY_SHARE = 0.5


def busy_rounds(rates: list[float]) -> list[int]:
    """The rounds (indexes into ``rates``, each round's writing speed) that ran while the PC was
    busy: under ``BUSY_SHARE`` of the median of the other rounds. A busy moment only slows a
    round, so only a slow one is said; with one round nothing tells it apart (none)."""
    return [i for i, rate in enumerate(rates)
            if len(rates) > 1 and rate < BUSY_SHARE * statistics.median(rates[:i] + rates[i + 1:])]


@dataclass
class RoundSpeeds:
    """A profile's writing speed over its rounds, as it is judged: the median of the rounds not
    ``busy`` (``busy_rounds``), with their spread (standard deviation; 0 with one round kept)."""

    rates: list[float]  # each round's writing speed, tok/s
    busy: list[int]  # the rounds left out (indexes into ``rates``)

    @classmethod
    def of(cls, rates: list[float]) -> RoundSpeeds:
        return cls(list(rates), busy_rounds(list(rates)))

    @property
    def kept(self) -> list[float]:
        return [rate for i, rate in enumerate(self.rates) if i not in self.busy]

    @property
    def median(self) -> float | None:
        return statistics.median(self.kept) if self.kept else None

    @property
    def stddev(self) -> float:
        return statistics.stdev(self.kept) if len(self.kept) > 1 else 0.0


@dataclass
class ReplayResult:
    profile: str
    model_filename: str
    items: list[ReplayItem]
    # what llama.cpp was given (bench's records' names: n_gpu_layers, type_k, type_v, speculative,
    # n_threads), saved with the writing speed so that fit goes by it for a profile run alike
    settings: dict[str, Any] = field(default_factory=dict)
    documents: list[str] = field(default_factory=list)  # bench --document's files, as named (else prompts)

    @property
    def rounds(self) -> int:
        """How many times the prompts ran (``replay_profiles``' rounds: the items in order, each
        round's prompts together)."""
        prompts = len({i.index for i in self.items})
        return len(self.items) // prompts if prompts else 0

    def round_of(self, position: int) -> int:
        """The round (from 0) of the item at ``position`` in ``items``."""
        prompts = len({i.index for i in self.items}) or 1
        return position // prompts

    def round_speeds(self) -> RoundSpeeds:
        """Each round's writing speed (its replies' tokens over their writing time) and which of
        them ran while the PC was busy."""
        rates = []
        for r in range(self.rounds):
            turns = [i.metrics for k, i in enumerate(self.items) if self.round_of(k) == r]
            ms = sum(m.predicted_ms for m in turns)
            if ms > 0:
                rates.append(sum(m.predicted_n for m in turns) / ms * 1000)
        return RoundSpeeds.of(rates)

    def summary(self) -> dict[str, Any]:
        ttfts = sorted(i.metrics.ttft_ms for i in self.items)
        n = sum(i.metrics.predicted_n for i in self.items)
        ms = sum(i.metrics.predicted_ms for i in self.items)
        rate = draft_acceptance(sum(i.metrics.draft_n_accepted for i in self.items), sum(i.metrics.draft_n for i in self.items))
        speeds = self.round_speeds()
        return {
            "profile": self.profile,
            "prompts": len({i.index for i in self.items}),
            "turns": len(self.items),  # the prompts once each round
            "ttft_ms_mean": round(statistics.fmean(ttfts), 2) if ttfts else None,
            "ttft_ms_median": round(statistics.median(ttfts), 2) if ttfts else None,
            "ttft_ms_p90": round(ttfts[min(len(ttfts) - 1, int(0.9 * len(ttfts)))], 2) if ttfts else None,
            "predicted_n": n,
            # the writing speed it is judged on: the median of its rounds, busy ones left out (RoundSpeeds)
            "predicted_per_second": round(speeds.median, 2) if speeds.median is not None else None,
            "predicted_per_second_stddev": round(speeds.stddev, 2),
            "rounds_per_second": [round(x, 2) for x in speeds.rates],
            "busy_rounds": [i + 1 for i in speeds.busy],  # (from 1, as said)
            "predicted_per_second_overall": round(n / ms * 1000, 2) if ms > 0 else None,  # all tokens over all time
            "acceptance": round(rate, 4) if rate is not None else None,
        }

    def to_dict(self) -> dict[str, Any]:
        return {
            "profile": self.profile,
            "model_filename": self.model_filename,
            "summary": self.summary(),
            "prompts": [i.to_dict() for i in self.items],
        }

    def result_rows(self) -> list[ResultRow]:
        s = self.summary()
        data = self.to_dict()
        rows = [ResultRow(self.profile, "replay_ttft", s["ttft_ms_mean"], "ms", self.model_filename, data)]
        if s["predicted_per_second"] is not None:
            # with the settings it ran with and its rounds kept, as a tg's record: fit says it
            # (calibration.measured_decode), as it says a tg's ("Up to about 58 words a second (an
            # estimate)" was all it said after bench --document had timed the profile on a document)
            speeds = self.round_speeds()
            record = {**self.settings, "test": "replay", "samples_ts": [round(x, 6) for x in speeds.kept],
                      "documents": self.documents}
            rows.append(ResultRow(self.profile, "replay_tg", s["predicted_per_second"], "tok/s", self.model_filename,
                                  {"records": [record], "stddev": speeds.stddev if len(speeds.kept) > 1 else None,
                                   "runs": len(speeds.kept)}))
        return rows


def read_replay_file(path: Path) -> list[list[dict[str, str]]]:
    """Prompts from a text file (separated by blank lines) or JSONL (``{"prompt": ...}``,
    ``{"messages": [...]}`` or a JSON string per line), each as chat messages."""
    text = read_text_file(path, "file.what_replay", BenchInputError)
    prompts: list[list[dict[str, str]]] = []
    if path.suffix.lower() in (".jsonl", ".ndjson"):
        for n, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                item = json.loads(line)
            except json.JSONDecodeError:
                raise BenchInputError(f"{path}: line {n} is not valid JSON.") from None
            if isinstance(item, str):
                prompts.append([{"role": "user", "content": item}])
            elif isinstance(item, dict) and isinstance(item.get("prompt"), str):
                prompts.append([{"role": "user", "content": item["prompt"]}])
            elif isinstance(item, dict) and isinstance(item.get("messages"), list) and all(
                isinstance(m, dict) and isinstance(m.get("role"), str) and isinstance(m.get("content"), str)
                for m in item["messages"]
            ) and item["messages"]:
                prompts.append([{"role": m["role"], "content": m["content"]} for m in item["messages"]])
            else:
                raise BenchInputError(
                    f"{path}: line {n} needs a 'prompt' text or a 'messages' list of {{role, content}}."
                )
    else:
        for block in text.replace("\r\n", "\n").split("\n\n"):
            if block.strip():
                prompts.append([{"role": "user", "content": block.strip()}])
    if not prompts:
        raise BenchInputError(f"Replay file {path} holds no prompts.")
    return prompts


def document_prompts(paths: list[Path]) -> list[list[dict[str, str]]]:
    """Each document through the readers (isolated: the files come from outside), asked for its
    summary as F6 asks a document of one part: a prompt each. A letter given to --replay was a
    prompt per paragraph, "Yours sincerely," one of them, and no instruction to any."""
    from workstation.core.documents import read_document
    from workstation.core.summarize import whole_document_messages

    return [[dict(m) for m in whole_document_messages(read_document(path, isolate=True))] for path in paths]


COMPARED_SEED = BenchConfig.seed  # every profile of a comparison writes with this seed, at temperature 0
# what temperature 0 (the most likely word each time) leaves without effect: not said as a difference
GREEDY_UNUSED = ("temperature", "top_p", "top_k", "min_p", "seed")


def replay_sampling(profile: Profile, max_tokens: int, compared: bool) -> Sampling:
    """The sampling a replayed prompt is written with: the profile's (max_tokens capped), or, where
    profiles are ``compared``, temperature 0 and one seed for every one of them: sampled at 0.7 with
    no seed, one profile's reply to a document was 12 tokens and the other's 128, and the speeds of
    the two were compared as the settings' ("writes 1.46x slower")."""
    sampling = Sampling(**profile.sampling.__dict__)
    sampling.max_tokens = max_tokens
    if compared:
        sampling.temperature, sampling.seed = 0.0, COMPARED_SEED
    return sampling


def replay_engine(
    engine: ChatEngine,
    prompts: list[list[dict[str, str]]],
    max_tokens: int,
    progress: Progress | None = None,
    lookup: Lookup | None = None,
    compared: bool = False,
    documents: bool = False,
) -> ReplayResult:
    """Each prompt as a new conversation, with ``replay_sampling``'s sampling. The
    KV cache is kept between prompts, as in the app, so a shared prefix counts as ``cache_n``.
    ``documents``: the prompts are bench --document's summaries, said so ("replay prompt 1/1")."""
    sampling = replay_sampling(engine.profile, max_tokens, compared)
    items = []
    for i, messages in enumerate(prompts):
        if progress:
            progress(say([("bench.progress_document" if documents else "bench.progress_replay", {
                "profile": engine.profile.key, "i": i + 1, "n": len(prompts)})], lookup))
        final = None
        try:
            for event in engine.stream_chat(messages, sampling):
                if isinstance(event, TurnFinished):
                    final = event
        except EngineError as err:
            if too_long(err):  # (said as the engine says a message: which prompt, the command says)
                raise PromptTooLong(err, i + 1, engine.profile) from None
            raise
        assert final is not None
        items.append(ReplayItem(i + 1, messages[-1]["content"], final.metrics))
    info = engine.info()
    settings = {"n_gpu_layers": info.gpu_layers, "n_threads": info.threads, "type_k": info.type_k,
                "type_v": info.type_v, "flash_attn": int(info.flash_attn), "speculative": info.speculative}
    return ReplayResult(engine.profile.key, info.model_path, items, settings)


UNTIMED_HIGH = 2.0  # a profile not timed yet in a run may take up to this many times the others' pace


def paced_progress(progress: Progress | None, turns: int | list[int], lookup: Lookup | None = None) -> Progress | None:
    """``progress`` with the time the rest of the run takes at its pace so far ("about 3 min 5 s
    left"), each message being the start of a turn: a team lead's run of three documents with two
    profiles took 5 minutes and said only "replay prompt 2/3" meanwhile. ``turns``: how many, or
    each turn's profile (its index) in the order they run: a profile's turns are paced by its own,
    and one not timed yet by the others', said as a range (``TimeLeft``'s rough time left): the
    second profile's turn (q8_0 K/V) took 70 s where "about 52 s left", the first's, was said."""
    if progress is None:
        return None
    from workstation.core.summarize import TimeLeft, eta_text

    owners = [0] * turns if isinstance(turns, int) else list(turns)
    times: dict[int, list[float]] = {}  # each profile's turns' seconds (its next model's loading too)
    left, at, done = TimeLeft(), [0.0], [0]

    def paced(msg: str) -> None:
        now, k = time.monotonic(), done[0]
        if k:
            times.setdefault(owners[k - 1], []).append(now - at[0])
        at[0], done[0] = now, k + 1
        if not times:
            progress(msg)
            return
        everyone = statistics.fmean(t for ts in times.values() for t in ts)
        rest = owners[k:]
        estimate = sum(statistics.fmean(times[i]) if i in times else everyone for i in rest)
        said = left.update(estimate, now, high=UNTIMED_HIGH if any(i not in times for i in rest) else None)
        if left.high is not None:  # (its range says "about" itself)
            eta = eta_text(said, "", high=left.high, lookup=lookup).strip()
        else:
            eta = eta_text(said, say([("bench.progress_about", {})], lookup), revised=left.revised, lookup=lookup)
        progress(say([("bench.progress_left", {"what": msg, "eta": eta})], lookup))

    return paced


def replay_profiles(
    profiles: list[Profile],
    prompts: list[list[dict[str, str]]],
    max_tokens: int,
    progress: Progress | None = None,
    rounds: int = 1,
    lookup: Lookup | None = None,
    documents: bool = False,
) -> list[ReplayResult]:
    """The prompts through each profile, ``rounds`` times: each round loads every profile in
    turn (the order reversed every other round), as ``bench_profiles`` runs pp/tg, so that a
    busy moment slows them alike (-r was not read, and the first profile ran all its prompts
    before the second began). Two or more write at temperature 0 with one seed (``replay_sampling``)."""
    if rounds < 1:
        raise BenchInputError(said=[("bench.at_least", {"name": "--repetitions", "low": 1, "value": rounds})])
    results: dict[int, ReplayResult] = {}
    owners = [i for i, _ in in_rounds(len(profiles), rounds, None) for _ in prompts]  # each turn's profile
    paced = paced_progress(progress, owners, lookup)
    for i, report in in_rounds(len(profiles), rounds, paced, lookup):
        engine = open_engine(profiles[i], child_process=False)
        try:
            part = replay_engine(engine, prompts, max_tokens, report, lookup, compared=len(profiles) > 1,
                                 documents=documents)
        finally:
            engine.close()
        if i in results:
            results[i].items.extend(part.items)
        else:
            results[i] = part
    return [results[i] for i in range(len(profiles))]


def sampling_differences(profiles: list[Profile], lookup: Lookup | None = None, greedy: bool = False) -> list[str]:
    """The sampling settings in which the profiles differ ("temperature 0.7, 0.2"; in another
    language by Ctrl+E's names, as 'profiles check' says them: "Sıcaklık 0,7 / 0,2"): replies
    sampled differently differ in length and words, and a speed compared between them is
    partly that (a lookup profile's 81.7 against 127.0 tok/s was its lower temperature too).
    ``greedy``: they wrote at temperature 0 with one seed (``replay_sampling``), and only what
    still changes a reply is said."""
    said = []
    for name in ("temperature", "top_p", "top_k", "min_p", "repeat_penalty", "presence_penalty",
                 "frequency_penalty", "seed"):
        if greedy and name in GREEDY_UNUSED:
            continue
        values = [getattr(p.sampling, name) for p in profiles]
        if name == "seed":  # -1 and none are both a new seed each turn
            values = [None if v is None or v < 0 else v for v in values]
        if len(set(values)) > 1:
            said.append(f"{sampling_name(name, lookup)} " + say([("bench.values_sep", {})], lookup).join(
                say([("bench.random", {})], lookup) if v is None else sampling_number(v, lookup) for v in values))
    if len({p.system_prompt for p in profiles}) > 1:
        said.append(say([("bench.system_prompt", {})], lookup))
    return said


def check_local(profile: Profile) -> None:
    if profile.backend != "llama":
        raise EngineError(
            f"Profile '{profile.key}' uses the {profile.backend} backend; pp/tg and perplexity measure "
            "a local model (a remote one can run 'bench --replay FILE' and 'eval --tasks')."
        )
