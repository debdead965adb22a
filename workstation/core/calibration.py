"""This machine's decode and prompt speed, measured, and the speed model fitted to it.

``measure`` (``workstation size --measure``) loads each packaged model once with 4 sequences
and decodes with 1, 2 and 4 of them together (``bench.run_tg``, llama-bench's tg on several
sequences), reads one prompt (``bench.run_pp``) and saves the figures in the history (kind
``calibrate``). It also makes a context over each model's weights (loaded once) at 3 contexts
x 3 K/V types, so the history holds the planner's estimate beside llama.cpp's allocation for
each (every load records it).
``this_machine`` fits ``speed_model`` to the saved figures, plus ``bench``'s tg/pp figures of a
single sequence, and reports each point's error with that point left out of the fit.
``replies_scale`` measures this PC against the estimate by its own last replies (office staff do
not run bench), and ``slower_reason`` says why those replies wrote well below it.
"""

from __future__ import annotations

import dataclasses
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from workstation.core.errors import WorkstationError
from workstation.core.installed_models import installed_name
from workstation.core.invocation import cli
from workstation.core.metrics import REPLY_RATE_MIN, ReplyTiming
from workstation.core.model_info import ModelInfo, read_model_info
from workstation.core.model_shapes import active_params
from workstation.core.phrases import Phrase, say
from workstation.core.results import HistoryEntry, ResultRow, history, save_run
from workstation.core.speed_estimate import quantized_kv
from workstation.core.speed_model import (
    DecodePoint,
    SpeedConstants,
    default_cpu,
    fit_cpu,
    leave_one_out,
    reference_said,
)

Progress = Callable[[float, str], None]  # (fraction done, what is running)
SLOTS = (1, 2, 4)
# the mean error (each figure predicted with it left out of the fit) above which the figures are
# too unsteady to fit: a moment's other programs, not this PC's speed (quiet runs: about 10%)
NOISY_PCT = 30.0
MEMORY_CONTEXTS = (1024, 4096, 8192)
MEMORY_KV = ("f16", "q8_0", "q4_0")


def cpu_cost(info: ModelInfo) -> tuple[float, int, float]:
    from workstation.core.planner import plan

    p = plan(info, context=512, gpu_layers=0, gpus=[], ram_available=2**40, ram_total=2**40)
    return float(p.decode_bytes_per_token), info.n_layer, float(active_params(info))


@dataclass
class Measured:
    model: str
    path: str
    n_seq: int
    tps: float  # aggregate tokens/s (tg) or prompt tokens/s (pp)
    test: str


def measure(paths: list[Path], *, n_gen: int = 24, repetitions: int = 2, n_prompt: int = 256,
            memory: bool = True, threads: int | None = None, progress: Progress | None = None) -> list[Measured]:
    """Decode with 1, 2 and 4 sequences and read one prompt per model; save; return the figures."""
    from workstation.core.bench import run_pp, run_tg
    from workstation.core.hardware import count_physical_cores
    from workstation.core.profiles import KV_CACHE_TYPES
    from workstation.core.runtime import Batch, LoadedModel, RuntimeSettings

    say = progress or (lambda _f, _m: None)
    threads = threads or count_physical_cores()
    # work units: a decode step of n_seq sequences ~ (1 + n_seq / 4); a load ~ 4 steps, a context ~ 1
    per_model = 4 + n_prompt / 64 + sum(repetitions * n_gen * (1 + b / 4) for b in SLOTS)
    mem_units = 1.0 * len(MEMORY_CONTEXTS) * len(MEMORY_KV) if memory else 0.0
    total = len(paths) * (per_model + mem_units)
    done = 0.0
    out: list[Measured] = []
    rng = np.random.default_rng(1234)
    for path in paths:
        name = installed_name(path)  # as memory-check rows and `models list` name it
        say(done / total, f"{name}: loading")
        settings = RuntimeSettings(n_ctx=max(SLOTS) * max(256, n_gen + 16), n_threads=threads,
                                   n_seq_max=max(SLOTS), n_batch=max(n_prompt, 32))
        model = LoadedModel(path, settings)
        batch = Batch(max(model.n_batch, max(SLOTS)), max(SLOTS))
        try:
            done += 4
            say(done / total, f"{name}: prompt {n_prompt}")
            run_pp(model, batch, min(n_prompt, model.n_batch), rng)  # warm-up
            ns = run_pp(model, batch, min(n_prompt, model.n_batch), rng)
            out.append(Measured(name, str(path), 1, min(n_prompt, model.n_batch) * 1e9 / ns, f"pp{n_prompt}"))
            done += n_prompt / 64
            for b in SLOTS:
                run_tg(model, batch, 2, rng, b)  # warm-up
                rates = []
                for r in range(repetitions):
                    say(done / total, f"{name}: decode x{b}, run {r + 1}/{repetitions}")
                    ns = run_tg(model, batch, n_gen, rng, b)
                    rates.append(n_gen * b * 1e9 / ns)
                    done += n_gen * (1 + b / 4)
                out.append(Measured(name, str(path), b, float(np.mean(rates)), f"tg{n_gen}x{b}"))
            for ctx in MEMORY_CONTEXTS if memory else ():
                for kv in MEMORY_KV:
                    say(done / total, f"{name}: memory at {ctx} tokens, K/V {kv}")
                    # over the weights loaded above: the allocations are the same as a load's
                    LoadedModel(path, RuntimeSettings(n_ctx=ctx, n_threads=threads, type_k=KV_CACHE_TYPES[kv],
                                                      type_v=KV_CACHE_TYPES[kv]),
                                weights_of=model).close()  # it recorded estimate and allocation
                    done += 1
        finally:
            batch.close()
            model.close()
    say(1.0, "done")
    rows = [ResultRow(m.model, m.test, m.tps, "tok/s", m.path, {"n_seq": m.n_seq, "threads": threads})
            for m in out]
    save_run("calibrate", rows, "size --measure")
    return out


def _points(entries: list[Any]) -> tuple[list[DecodePoint], list[tuple[float, float]], list[str]]:
    """Decode points and prompt figures from history entries (newest first: the first of each
    model, test and sequence count wins)."""
    seen: set[tuple[str, str, int]] = set()
    points: list[DecodePoint] = []
    pp: list[tuple[float, float]] = []
    used: list[str] = []
    for e in entries:
        if e.value is None or not e.value > 0:
            continue
        test = e.test
        n_seq = int(e.data.get("n_seq", 1)) if e.kind == "calibrate" else 1
        if not (test.startswith("tg") or test.startswith("pp")):
            continue
        record = (e.data.get("records") or [{}])[0] if e.kind == "bench" else {}
        if record.get("n_gpu_layers", 0):
            continue  # a GPU run is not this CPU
        if quantized_kv(record.get("type_k", "f16"), record.get("type_v", "f16")):
            continue  # nor the CPU's own speed: the planner slows a quantized K/V on top (CPU_QUANTIZED_KV_SPEED)
        path = Path(e.model)
        key = (path.name, test[:2], n_seq)
        if key in seen or not path.exists():
            continue
        seen.add(key)
        info = read_model_info(path, check=False)
        w, n_layer, act = cpu_cost(info)
        if test.startswith("tg"):
            points.append(DecodePoint(installed_name(path), w, n_layer, act, n_seq, float(e.value) / n_seq))
        else:
            pp.append((act, float(e.value)))
        used.append(f"{installed_name(path)} {test}" + (f" x{n_seq}" if n_seq > 1 else ""))
    return points, pp, used


_MEASURED: dict[tuple[str, int, int, int, int], SpeedConstants | None] = {}


def measured_cpu() -> SpeedConstants | None:
    """This CPU's constants where they were fitted to figures measured here (``size
    --measure``, or benches of 3 or more model and sequence counts); None before (the planner
    then scales the reference PC's figures to this one's cores and memory speed,
    ``speed_model.default_cpu``). Read again when the history file changes (``profiles list``
    plans every profile)."""
    from workstation.core.results import db_path

    try:
        path = db_path()
        st = path.stat()
    except (OSError, WorkstationError):  # none yet, or a data folder that cannot be used: the estimate
        return None
    wal = path.with_name(path.name + "-wal")  # (a write may be there alone until a checkpoint)
    wal_st = wal.stat() if wal.exists() else None
    key = (str(path), st.st_mtime_ns, st.st_size, wal_st.st_mtime_ns if wal_st else 0, wal_st.st_size if wal_st else 0)
    if key not in _MEASURED:
        try:
            constants, report = this_machine()
        except WorkstationError:  # a history that cannot be read: the estimate from the cores
            constants, report = None, {"source": ""}
        _MEASURED.clear()
        _MEASURED[key] = constants if str(report["source"]).startswith("fitted") else None
    return _MEASURED[key]


def measured_decode(model_path: str, gpu_layers: int, type_k: str = "f16", type_v: str = "f16",
                    speculative: str = "off") -> HistoryEntry | None:
    """The newest ``bench`` decode figure (tg) of this model file with as many layers on the
    GPU, the same K/V types and the same speculation, measured here: fit said "about 207
    tokens/s" after bench had measured 80 (one bench is too little to fit this machine's
    constants: ``measured_cpu``). Any profile's: a q4_0 K/V cache's 19 tokens/s is not f16's 96.
    A ``bench --document`` or ``--replay`` run's writing speed (its rounds' median) counts as
    much as a tg's: fit said only its estimate after bench had timed the profile on a document."""
    if not model_path:
        return None
    wanted = Path(model_path).resolve()
    try:
        entries = history(kind="bench", limit=500)
    except WorkstationError:  # a data folder or history that cannot be read: nothing measured to say
        return None
    for e in entries:
        if not (e.test.startswith("tg") or e.test == REPLAY_TEST) or not e.value or not e.model \
                or Path(e.model).resolve() != wanted:
            continue
        if e.test == REPLAY_TEST and not e.data.get("records"):  # (an older bench's: what it ran with, unsaid)
            continue
        record = (e.data.get("records") or [{}])[0]
        if (int(record.get("n_gpu_layers", 0)), record.get("type_k", "f16"), record.get("type_v", "f16"),
                record.get("speculative", "off")) == (gpu_layers, type_k, type_v, speculative):
            return decode_figure(e)
    return None


BUSY_APART = 3.0  # tg and a chat turn's writing (no drafts) further apart than this many times: not the model's


def writing_apart(tg_ts: float | None, chat_ts: float | None, speculative: str = "off") -> float | None:
    """How many times apart a run's two writing figures are (its tg and its chat turns' writing,
    the same work) where that is over ``BUSY_APART``: the PC was busy during one of them and
    neither is the model's (bench's note, its plain-words line and fit's doubt all go by it; a
    tg32 of 10.83 beside a chat tg of 159.16, -r 1, made fit say "go by the measured figure" of
    159 while the chat wrote at 55); None where they agree, one is missing or the profile drafts
    (its chat turns' drafts count, its tg's do not)."""
    if not tg_ts or not chat_ts or speculative != "off":
        return None
    times = max(chat_ts / tg_ts, tg_ts / chat_ts)
    return times if times > BUSY_APART else None


REPLAY_TEST = "replay_tg"  # bench --replay/--document's writing speed in the history (ReplayResult.result_rows)
UNSURE_SPREAD = 0.25  # a measured figure whose runs' standard deviation is over this share of it: said unsure


def decode_figure(e: HistoryEntry) -> HistoryEntry:
    """A bench run's decode figure as fit and the estimates go by it: its chat turns' writing
    (``chat_ts``, the work the app's chat does) with their spread where it has them, else the
    median of its tg runs with their spread (``test`` "chat", or "tg32 median"), else the tg's
    mean as saved. A busy PC's tg32 of 12.35 ± 3.78 beside its chat tg of 48.58 made fit say
    "measured: 12 tokens/s ± 4 … go by the measured figure", of a model that chatted at 20."""
    record = next((r for r in e.data.get("records") or [] if str(r.get("test", "")).startswith("tg")), None)
    if record is None:
        return e
    chat = record.get("chat_ts")
    samples = [float(x) for x in (record.get("chat_samples_ts") if chat else record.get("samples_ts")) or []]
    if chat:
        value, test = float(chat), "chat"
    elif len(samples) > 1:
        value, test = statistics.median(samples), f"{e.test} median"
    else:
        return e
    return dataclasses.replace(e, value=value, test=test, data={
        **e.data, "stddev": statistics.stdev(samples) if len(samples) > 1 else None, "runs": len(samples)})


def unsure(e: HistoryEntry) -> bool:
    """Whether a measured figure (``decode_figure``'s) is too unsteady to go by (``unsure_why``)."""
    return bool(unsure_why(e))


def unsure_why(e: HistoryEntry) -> str:
    """Why a measured figure (``decode_figure``'s) is not one to go by, "" where it is: "spread"
    (its runs' spread over ``UNSURE_SPREAD`` of it), "busy" (its bench's tg and chat turns'
    writing were ``BUSY_APART``: bench itself said the PC was busy) or "once" (its tg ran once,
    ``-r 1``: nothing tells a steady figure from a busy moment). README says fit calls a figure
    unsure where runs differ by over a quarter; a -r 1 run's tg32 of 10.83 beside its chat tg of
    159.16 (14.7x) made fit say "go by the measured figure" of the 159, where the chat wrote 55."""
    spread = e.data.get("stddev")
    if e.value and spread and spread > UNSURE_SPREAD * e.value:
        return "spread"
    record = _tg_record(e)
    if record is None or e.test == REPLAY_TEST:  # (an older bench's, a replay's rounds: nothing more to tell)
        return ""
    if writing_apart(record.get("avg_ts"), record.get("chat_ts"), record.get("speculative", "off")) is not None:
        return "busy"
    return "once" if len(record.get("samples_ts") or []) == 1 else ""


def _tg_record(e: HistoryEntry) -> dict[str, Any] | None:
    """The record of ``e``'s bench's writing test (its first tg run), None where it has none."""
    return next((r for r in e.data.get("records") or [] if str(r.get("test", "")).startswith("tg")), None)


def busy_times(e: HistoryEntry) -> float:
    """How many times apart the two writing figures of ``e``'s bench were (``writing_apart``; 0: not so)."""
    record = _tg_record(e) or {}
    return writing_apart(record.get("avg_ts"), record.get("chat_ts"), record.get("speculative", "off")) or 0.0


SAID = "source_said"  # this_machine's report: its source as phrases


def this_machine() -> tuple[SpeedConstants, dict[str, Any]]:
    """The CPU's constants, fitted to this machine's saved figures (or the defaults), and a
    report of how they were calibrated and how far off they are here."""
    from workstation.core.hardware import count_physical_cores, cpu_bandwidth_gbps

    entries = history(kind="calibrate", limit=500) + history(kind="bench", limit=500)
    points, pp, used = _points(entries)
    models = {p.model for p in points}
    cores = count_physical_cores()
    gbps = cpu_bandwidth_gbps(cores)
    constants = default_cpu(cores, gbps)
    said: list[Phrase] = [("speed.not_measured", {"where": reference_said(cores, gbps), "cmd": cli("size --measure")})]
    checks = []
    if len(points) >= 3:
        fitted_said: list[Phrase] = [("speed.fitted", {
            "n": f"{len(points):,}", "models": ", ".join(sorted(models)),
            "by": "size --measure" if any(e.kind == "calibrate" for e in entries) else "bench"})]
        fitted_constants = fit_cpu(points, pp, say(fitted_said))
        checks = leave_one_out(points) if len(points) >= 4 else []
    rows = []
    for p, pred in checks:
        fitted = fitted_constants.decode_tps(p.weights_read, p.n_layer, p.active_params, p.batch)
        rows.append({"model": p.model, "slots": p.batch, "measured_tps": round(p.tps_per_seq * p.batch, 2),
                     "predicted_tps": round(pred * p.batch, 2), "fitted_tps": round(fitted * p.batch, 2),
                     "error_pct": round((pred / p.tps_per_seq - 1) * 100, 1)})
    errs = [abs(r["error_pct"]) for r in rows]
    mean_error = round(float(np.mean(errs)), 1) if errs else None
    noisy = mean_error is not None and mean_error > NOISY_PCT
    if len(points) >= 3 and not noisy:
        constants, said = fitted_constants, fitted_said
    elif noisy:  # one busy moment's figures made every estimate after them: fit said 46 tok/s beside bench's 125
        # the estimate said as one, and when to measure again said once (it said "run 'size --measure'
        # to measure this one" in the same breath as "size --measure again while the PC is idle")
        said = [("speed.too_noisy", {"where": reference_said(cores, gbps), "n": f"{len(points):,}",
                                     "off": f"{mean_error:.0f}%", "cmd": cli("size --measure")})]
        constants = dataclasses.replace(constants, source=say(said))
    report = {
        "source": constants.source,
        SAID: said,  # the source as phrases, for a report in another language (``for_json`` leaves it out)
        "constants": constants.to_dict(),
        "figures_used": used,
        "checks": rows,
        "mean_abs_error_pct": mean_error,
        "too_noisy": noisy,
        "measured_here": bool(points),
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    return constants, report


def for_json(report: dict[str, Any]) -> dict[str, Any]:
    """``this_machine``'s report as ``--json`` gives it: its source in English words, not its phrases."""
    return {k: v for k, v in report.items() if k != SAID}


def source_said(report: dict[str, Any]) -> list[Phrase] | str:
    """What the speeds go by (``this_machine``'s source) as phrases to say in a language; the
    English source where the report has none (one read from a file)."""
    return report.get(SAID) or str(report.get("source", ""))


REPLIES_FAR_BELOW = 2 / 3  # replies under this share of the estimate: why, said (as fit's "go by measured" gap)
SHORT_REPLIES = 2 * REPLY_RATE_MIN  # replies of fewer tokens (median) spend much of their time starting


def slower_reason(replies: Sequence[ReplyTiming], estimate_tps: float | None) -> str:
    """Why this PC's ``replies`` wrote well below the estimate (under ``REPLIES_FAR_BELOW`` of
    it), as the end of a locale key: "busy" where other programs kept a core busy as one of them
    began (``TurnMetrics.cpu_others``, from ``thread_policy.BUSY_SLACK``), "short" where they
    were short, else "here" (this PC ran slower); "" where they did not fall far below it. F3's E
    said "up to about 31 words a second … your last 2 replies: about 11", a 3x gap with no reason."""
    from workstation.core.thread_policy import BUSY_SLACK

    if not replies or not estimate_tps or statistics.median(r.tps for r in replies) >= REPLIES_FAR_BELOW * estimate_tps:
        return ""
    if any(r.cpu_others >= BUSY_SLACK for r in replies):
        return "busy"
    return "short" if statistics.median(r.tokens for r in replies) < SHORT_REPLIES else "here"


@dataclass(frozen=True)
class RepliesScale:
    """This PC measured against the estimate by its own quiet replies: ``share`` of the estimate
    that the last replies with the model file ``model`` wrote at (their median tokens/s over it),
    and ``extra``, the seconds a token those replies took beyond the estimate's (below it: less)."""

    model: Path
    share: float
    words_a_token: float | None = None  # those replies' own (``measured_words_per_token``): said in their words
    extra: float = 0.0

    def footing(self, tps: float, read_seconds: float) -> float:
        """Another model's estimate (``tps``, of which ``read_seconds`` a token is reading its
        weights from memory) on these replies' footing, by the bandwidth rule: what a small
        model's replies took beyond its estimate is this PC's cost per token (its threads, the
        app, a slower core), paid once a token by a bigger model too, not a share of its time;
        and no model writes faster than its weights are read. Scaled by the replies' share, a
        135M model's replies (whose speed is that per-token cost's, not the memory's) made an 8B
        model's "0.2 words a second" where it writes 2 or 3."""
        return 1 / max(1 / tps + self.extra, read_seconds, 1e-9)


def replies_scale(store: Path, estimate: Callable[[Path], float | None], lang: str = "en") -> RepliesScale | None:
    """The model file of this PC's newest timed reply (of a file still there, in the conversations' file ``store``), and
    its last quiet replies' median speed against its ``estimate(path)`` (tokens/s, as the caller
    plans it); None with no such replies or no estimate. F4 said "Q4_0: up to about 32 words a second" beside "Q4_1: your last
    4 replies: about 8": the other models' estimates on this PC are said on that one footing
    (``RepliesScale.footing``). Only replies begun with no other program keeping a core busy
    (``metrics.quiet_median``, ``QUIET_MIN`` of them at least): F4 said 51 minutes a page for an 8B
    model by replies written while other programs kept 2 cores busy (at 36% of the estimate)."""
    import sqlite3

    from workstation.core.metrics import QUIET_MIN, replies_words_a_token
    from workstation.core.profile_lookup import model_file_refs
    from workstation.core.store import ConversationStore
    from workstation.core.thread_policy import BUSY_SLACK

    if not store.is_file():
        return None
    try:
        conversations = ConversationStore(store, read_only=True)  # (its own: a store is for one thread)
        try:
            # (a file since removed, a server's model: the next one's)
            model = next((m for m in conversations.timed_models() if Path(m).is_file()), "")
            replies = conversations.reply_timings(model, model_file_refs(Path(model)), cpu_alone=True) if model else []
        finally:
            conversations.close()
    except (OSError, sqlite3.Error, WorkstationError):
        return None
    quiet = [r for r in replies if r.cpu_others < BUSY_SLACK]  # (as quiet_median picks them)
    if len(quiet) < QUIET_MIN:
        return None
    try:
        tps = estimate(Path(model))
    except (OSError, ValueError, WorkstationError):
        return None
    if not tps:
        return None
    measured = statistics.median(r.tps for r in quiet)
    return RepliesScale(Path(model), measured / tps, replies_words_a_token(quiet, lang),  # (in ``lang``'s words)
                        1 / measured - 1 / tps)
