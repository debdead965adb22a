"""``workstation eval -p P ... [--tasks F] [--perplexity TEXT] [--kld DOC...] [--json]``: quality and speed."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import math
import statistics
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from workstation.commands import (
    add_lang_arg,
    add_profile_arg,
    print_json,
    profile_refs,
    text_table,
    texts_of,
)
from workstation.commands.bench import (
    apart,
    clear_progress,
    command_line,
    paired_apart,
    progress_reporter,
    speed_words,
    table_legend,
)
from workstation.commands.parser import threads
from workstation.core.bench import SpeedStat, check_local, writing_speed
from workstation.core.catalog import file_size_text, human_bytes, resolve_model_path
from workstation.core.documents import read_document, told_apart
from workstation.core.engine import Engine
from workstation.core.engine_api import open_engine
from workstation.core.errors import WorkstationError
from workstation.core.evaluate import (
    DEFAULT_WINDOW,
    EXAMPLE_TASKS,
    EvalInputError,
    PerplexityResult,
    TaskSet,
    TasksScore,
    load_task_set,
    read_text,
    run_tasks,
    text_perplexity,
)
from workstation.core.installed_models import installed_name
from workstation.core.invocation import cli, shell_word
from workstation.core.kld import (
    DEFAULT_TOP_K,
    KLDResult,
    ReferenceLogits,
    build_reference,
    cache_budget,
    check_same_vocabulary,
    compare_to_reference,
    key_path,
    load_reference,
    reference_folder,
    reference_key,
    reference_windows,
    time_reference,
)
from workstation.core.model_info import read_model_info
from workstation.core.phrases import Lookup, Phrase, local_numbers, say, share_percent
from workstation.core.profile_variants import load_variant, profile_key
from workstation.core.profiles import KVCache, Profile, kv_words
from workstation.core.results import ResultRow, save_printed_run
from workstation.core.runtime import LoadedModel
from workstation.tui.i18n import Texts


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "eval",
        help="quality (your own tasks, perplexity) and speed, side by side per profile",
        description="Score each profile on a YAML task set (exact / contains / regex / choice "
        "answers, greedy decoding) and/or the perplexity of a text, in one table with speed and "
        "the change against the first profile. Without --tasks or --perplexity the shipped "
        "English/Turkish example task set runs.",
    )
    add_profile_arg(p, multiple=True, variants=True)
    p.add_argument("--tasks", type=Path, metavar="FILE", help="YAML task set to score: each task a prompt, a match (exact, contains, regex or choice) "
                   "and an answer; workstation/data/tasks-example.yaml shows the format")
    p.add_argument("--perplexity", type=Path, metavar="TEXT", help="text file to measure perplexity on")
    p.add_argument("--kld", type=Path, nargs="+", action="extend", metavar="DOC",
                   help="what each profile loses against the reference (the one whose model file has the most "
                   "bits per weight, or --reference): KL divergence, same top token and perplexity change on "
                   f"these documents ({Texts('en').file_kinds()}), one row per document; the reference's logits "
                   "are cached")
    p.add_argument("--reference", metavar="PROFILE",
                   help="--kld: the profile the others are measured against (one of the -p, as typed), instead "
                   "of the one with the most bits per weight")
    p.add_argument("--ctx", type=int, metavar="N",
                   help=f"perplexity and --kld window in tokens (default {DEFAULT_WINDOW}, as llama-perplexity's)")
    p.add_argument("--chunks", type=int, metavar="N", help="score at most N windows per text")
    p.add_argument("--top-k", type=int, default=DEFAULT_TOP_K, metavar="K",
                   help=f"log-probabilities the KLD reference keeps per token (default {DEFAULT_TOP_K})")
    p.add_argument("-t", "--threads", type=threads, metavar="N", help="threads instead of the profile's")
    p.add_argument("-v", "--verbose", action="store_true", help="also list every task's reply")
    p.add_argument("--no-save", action="store_true", help="do not save the results to the history")
    p.add_argument("--json", action="store_true", help="print the figures as JSON")
    add_lang_arg(p)  # the notes under the table
    p.set_defaults(func=run)


@dataclass
class ProfileEval:
    profile: str
    model: str
    type_k: str
    type_v: str
    tasks: TasksScore | None = None
    ppl: PerplexityResult | None = None
    kld: list[KLDResult] = field(default_factory=list)  # a candidate: one per document
    references: list[ReferenceRow] = field(default_factory=list)  # the reference: one per document
    context: int = 0  # the profile's own context (before a window longer than it was made room for)
    # the reference: the documents too short to compare on, each its name and why (a phrase: said in the run's language)
    left_out: list[Phrase] = field(default_factory=list)
    ref: str = ""  # what -p takes to load the profile again (its key, its file's path, a variant's settings)
    writing: SpeedStat | None = None  # --kld: a short tg on the loaded model (the pass times its reading)
    settings: Profile | None = field(default=None, repr=False)  # the profile run (its name said in a language)

    def said(self, lookup: Lookup | None = None) -> str:
        """The profile's name in ``lookup``'s language: a variant's settings in its words
        ("tiny · K/V yarı boy"; ``profile_key``), as F3 says K/V types."""
        return profile_key(self.settings, lookup) if self.settings is not None else self.profile

    @property
    def typed(self) -> str:
        """The profile as a command names it again (-p)."""
        return shell_word(self.ref or self.profile)

    @property
    def speed(self) -> float | None:
        """The speed used for "x faster": generation tok/s on the tasks, else perplexity tok/s,
        else the KL divergence pass's tok/s over all documents."""
        if self.tasks is not None and self.tasks.gen_ts:
            return self.tasks.gen_ts
        if self.ppl is not None:
            return self.ppl.tokens_per_second
        passes = [(k.n_chunks * k.n_ctx, k.decode_seconds) for k in self.kld] or [
            (r.n_tokens, r.decode_seconds) for r in self.references
        ]
        seconds = sum(t for _, t in passes)
        return sum(n for n, _ in passes) / seconds if seconds > 0 else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "profile": self.profile,
            "model_filename": self.model,
            "type_k": self.type_k,
            "type_v": self.type_v,
            "tasks": self.tasks.to_dict() if self.tasks else None,
            "perplexity": self.ppl.to_dict() if self.ppl else None,
            "kld": [k.to_dict() for k in self.kld] if self.kld else None,
            "kld_reference": [r.to_dict() for r in self.references] if self.references else None,
            "kld_left_out": [say([why]) for why in self.left_out] or None,
            "tg_ts": round(self.writing.avg_ts, 2) if self.writing else None,  # --kld: its writing (tg8 x3)
        }


@dataclass
class ReferenceRow:
    """The reference profile's own figures on one document (from its cached pass)."""

    document: str
    ppl: float
    ppl_stderr: float
    n_ctx: int
    n_chunks: int
    seconds: float
    decode_seconds: float
    top_k: int
    cache_path: str
    cache_bytes: int
    cache_bytes_per_1k_tokens: float
    cache_reused: bool
    speed_windows: int  # the windows timed in this run: all of them, or a cached one's first window timed again
    cache_kept: bool = True  # False: measured in a folder of the run's own, removed after it (no folder for it)
    window_seconds: list[float] = field(default_factory=list)  # each window timed in this run (``ref.window_seconds``)

    @property
    def n_tokens(self) -> int:
        return self.n_ctx * self.n_chunks

    @property
    def tokens_per_second(self) -> float:
        """Prompt-processing speed over the windows (llama_decode time, as for a candidate)."""
        return self.n_tokens / self.decode_seconds if self.decode_seconds > 0 else 0.0

    @classmethod
    def of(cls, document: str, ref: ReferenceLogits) -> ReferenceRow:
        m = ref.meta
        return cls(
            document=document, ppl=float(m["ppl"]), ppl_stderr=float(m["ppl_stderr"]), n_ctx=ref.n_ctx,
            n_chunks=ref.n_chunks, seconds=float(m["seconds"]), decode_seconds=float(m["decode_seconds"]),
            top_k=int(m["top_k"]),
            cache_path=str(ref.path), cache_bytes=ref.size_bytes,
            cache_bytes_per_1k_tokens=ref.bytes_per_1k_tokens, cache_reused=ref.reused,
            speed_windows=ref.timed_windows, window_seconds=list(ref.window_seconds),
        )

    def to_dict(self) -> dict[str, Any]:
        d = dict(self.__dict__)
        d["tokens_per_second"] = round(self.tokens_per_second, 3)
        return d


def compare(base: ProfileEval, other: ProfileEval) -> dict[str, Any]:
    """``other`` against ``base``: accuracy points, perplexity change, speed ratio."""
    out: dict[str, Any] = {"accuracy_delta_pts": None, "perplexity_delta_pct": None, "speed_ratio": None}
    if base.tasks and other.tasks:
        out["accuracy_delta_pts"] = round((other.tasks.accuracy - base.tasks.accuracy) * 100, 3)
        out["accuracy_sure"] = tasks_apart(base.tasks, other.tasks)
    if base.ppl and other.ppl:
        out["perplexity_delta_pct"] = round((other.ppl.ppl / base.ppl.ppl - 1) * 100, 3)
    if base.speed and other.speed:
        ratio = other.speed / base.speed
        if believable(ratio, base, other):
            out["speed_ratio"] = round(ratio, 4)
            out["speed_sure"] = same_or_apart(ratio, ratio_sure(base, other))
        else:  # a busy moment's, not the settings': kept in --json, said nowhere
            out["speed_ratio_unbelievable"] = round(ratio, 4)
    return out


def speeds_apart(xs: list[float], ys: list[float], paired: bool = False) -> bool:
    """Whether two profiles' speeds (tok/s, one figure per task or window) of this run differ by
    more than the figures vary: bench's test (``paired_apart`` where figure i of each was measured
    on the same work, else ``apart``). Under two figures each: not sure (one pass each, which a
    busy moment can sway; "reads 1.20x faster" came out "1.03x slower" 30 seconds later)."""
    xs, ys = [x for x in xs if x > 0], [y for y in ys if y > 0]
    if len(xs) < 2 or len(ys) < 2:
        return False
    if paired and len(xs) == len(ys):
        return paired_apart(list(zip(xs, ys, strict=True)))
    return apart(*(SpeedStat(1, [round(1e9 / x) for x in v]) for v in (xs, ys)))


def same_or_apart(ratio: float, told_apart: bool) -> bool:
    """Whether a ratio may be said as it is: told apart from the noise, or "as fast" within
    rounding (as bench says a replay's)."""
    return told_apart or f"{ratio:.2f}" == "1.00"


def ratio_sure(base: ProfileEval, other: ProfileEval, document: int | None = None) -> bool:
    """Whether ``other``'s speed against ``base`` (``ProfileEval.speed``: its tasks' writing, its
    perplexity pass's or its KL divergence pass's reading; ``document``: that document's alone)
    is told apart from the run's own noise (``speeds_apart``). A perplexity pass keeps no figure
    per window: its ratio is said as before."""
    if other.tasks is not None and other.tasks.gen_ts:
        if base.tasks is None:
            return False
        mine = {t.id: t.predicted_n / t.predicted_ms * 1000 for t in base.tasks.results if t.predicted_ms > 0}
        pairs = [(t.predicted_n / t.predicted_ms * 1000, mine[t.id]) for t in other.tasks.results
                 if t.predicted_ms > 0 and t.id in mine]
        return speeds_apart([a for a, _ in pairs], [b for _, b in pairs], paired=True)
    if other.ppl is not None or not other.kld or not base.references:
        return True
    docs = range(len(other.kld)) if document is None else [document]
    xs = [k.n_ctx / s for j in docs for k in [other.kld[j]] for s in k.window_seconds if s > 0]
    refs = [base.references[j] for j in docs if j < len(base.references)]
    ys = [ref.n_ctx / s for ref in refs for s in ref.window_seconds if s > 0]
    return speeds_apart(xs, ys, paired=not any(ref.cache_reused for ref in refs))


SPEED_BOUND = 3.0  # one model's quantizations or K/V types: never further apart in speed than this


def speed_bound(a: ProfileEval, b: ProfileEval) -> float:
    """How far apart two profiles' speeds can be for their settings: 3x, or their model files'
    size ratio where larger (a model read for each token takes as long as its bytes, give or
    take); no bound for a server's model (its size unknown here). "Writes replies 44.35x faster"
    was said of two K/V types of one file, from tg8 runs a busy moment slowed."""
    sizes = [Path(r.model).stat().st_size if Path(r.model).is_file() else 0 for r in (a, b)]
    if not all(sizes):
        return math.inf
    return max(SPEED_BOUND, max(sizes) / min(sizes))


def believable(ratio: float, a: ProfileEval, b: ProfileEval) -> bool:
    """Whether a speed ratio between ``a`` and ``b`` can be their settings' (``speed_bound``)."""
    bound = speed_bound(a, b)
    return ratio > 0 and 1 / bound <= ratio <= bound


def tasks_apart(base: TasksScore, other: TasksScore) -> bool:
    """Whether two profiles' answers to the same tasks differ by more than chance: an exact
    sign test (McNemar's) on the tasks one got right and the other wrong, two-sided at 5%.
    "+33.3 pts" had been said of 1 task in 3; below 6 such tasks no difference is sure."""
    got = {r.id: r.correct for r in base.results}
    gained = lost = 0
    for r in other.results:
        if r.id in got and r.correct != got[r.id]:
            gained += r.correct
            lost += not r.correct
    n = gained + lost
    if n == 0:
        return False
    tail = sum(math.comb(n, k) for k in range(min(gained, lost) + 1)) / 2**n
    return min(1.0, 2 * tail) < 0.05


TASKS_UNSURE = say([("eval.tasks_unsure", {})])


def describe(delta: dict[str, Any], lookup: Lookup | None = None) -> str:
    """A profile against the first in a few words (the table's last column), in ``lookup``'s language."""
    parts = []
    if delta["accuracy_delta_pts"] is not None:
        sure = delta.get("accuracy_sure", True) or delta["accuracy_delta_pts"] == 0
        parts.append(say([("eval.pts_accuracy", {"d": _signed(delta["accuracy_delta_pts"])})], lookup)
                     + ("" if sure else f" ({say([('eval.tasks_unsure', {})], lookup)})"))
    if delta["perplexity_delta_pct"] is not None:
        parts.append(say([("eval.pct_perplexity", {"d": _signed(delta["perplexity_delta_pct"])})], lookup))
    r = delta["speed_ratio"]
    if r and not delta.get("speed_sure", True):  # within the run's own noise: neither faster nor slower
        parts.append(say([("eval.about_same", {})], lookup))
    elif r:
        parts.append(speed_words(r, say([("eval.same_speed", {})], lookup), say([("eval.x_faster", {})], lookup),
                                 lookup))
    return ", ".join(parts) or "-"


def _signed(x: float) -> str:
    return ("+" if x > 0 else "−" if x < 0 else "±") + f"{abs(x):.1f}"


def _profiles(args: argparse.Namespace) -> list[Profile]:
    refs = profile_refs(args)
    named = getattr(args, "reference", None)
    if named is not None and named not in refs:
        raise EvalInputError(said=[("eval.reference_not_given", {"name": named, "given": ", ".join(map(str, refs))})])
    out = []
    for ref in refs:
        profile = load_variant(ref)
        if args.perplexity is not None or args.kld:
            check_local(profile)  # perplexity and KLD read the model's logits; task sets run anywhere
        if args.threads is not None:  # (1 to 512 or auto, as the parser read it: parser.threads)
            profile.threads = args.threads or "auto"
        out.append(profile)
    if args.kld:  # the reference first: the one named, else the file with the most bits per weight
        out = reference_first(out, refs.index(named) if named is not None else None)
    return out


def bits_per_weight(profile: Profile) -> float:
    """Its model file's bits per weight (its tensors' bytes over its weights, as the GGUF's
    tensor table says), 0 where the file cannot be read."""
    try:
        info = read_model_info(resolve_model_path(profile.model), check=False)
    except (OSError, WorkstationError):
        return 0.0
    return info.weights_bytes * 8 / info.parameter_count if info.parameter_count else 0.0


def reference_first(profiles: list[Profile], named: int | None = None) -> list[Profile]:
    """``profiles`` with the reference first: the one at ``named``, else the one whose file has
    the most bits per weight, of equal files the one whose K/V cache keeps the most bits (f16
    before q8_0: the one that loses least, and takes most memory), then the first given.
    Q4_0 given first, as bench's suggested command keeps them, was the yardstick that the
    better Q8_0 was called "noticeably worse" against; and a q8_0 K/V given first was the
    yardstick of the f16 K/V of its own file."""
    from workstation.core.sizing import KV_BITS

    def kv_bits(p: Profile) -> float:
        return KV_BITS.get(p.kv_cache.k, 0.0) + KV_BITS.get(p.kv_cache.v, 0.0)

    i = named if named is not None else max(
        range(len(profiles)), key=lambda j: (bits_per_weight(profiles[j]), kv_bits(profiles[j]), -j))
    return [profiles[i], *profiles[:i], *profiles[i + 1:]]


@dataclass
class KLDPlan:
    """What ``--kld`` compares on: the documents (name, text), the window and what is cached."""

    documents: list[tuple[str, str]]
    n_ctx: int = DEFAULT_WINDOW
    max_chunks: int | None = None
    top_k: int = DEFAULT_TOP_K
    folder: Path | None = None  # where the reference passes are kept (a temporary one where none can be)
    not_kept: list[Phrase] = field(default_factory=list)  # why they were not kept: said after the table


def read_kld_documents(paths: list[Path]) -> list[tuple[str, str]]:
    """Each document's text through the readers (isolated: the files come from outside), named
    as its rows say it (two of one name by their folders too: ``told_apart``)."""
    names = told_apart([Path(p) for p in paths])
    return [(name, read_document(Path(p), isolate=True).text) for name, p in zip(names, paths, strict=True)]


ModelWork = Callable[[LoadedModel, "ProfileEval"], None]


def evaluate_profile(
    profile: Profile,
    task_set: TaskSet | None,
    text: str | None,
    ctx: int | None,
    chunks: int | None,
    progress: Any = None,
    model_work: ModelWork | None = None,
    window: int | None = None,
) -> ProfileEval:
    """Load ``profile`` once and run what was asked: tasks, perplexity, then ``model_work``
    (a KLD pass) on the loaded model; ``window`` is the KLD window the context must hold."""
    needed = max(ctx or 0, window or 0)
    context = profile.context
    if needed > profile.context:
        profile.context = needed  # the perplexity / KLD window must fit the loaded context
    engine = open_engine(profile, child_process=False)
    try:
        info = engine.info()
        # a server's model is named with its host ("office-cpu@office-pc:8088"), a file by its name
        model = info.model_path if profile.backend == "llama" else (
            f"{info.model_name}@{urlsplit(info.model_path).netloc or info.model_path}")
        result = ProfileEval(profile.key, model, info.type_k, info.type_v, context=context, ref=profile.ref,
                             settings=profile)
        if task_set is not None:
            result.tasks = run_tasks(engine, task_set, progress)
        if text is not None or model_work is not None:
            assert isinstance(engine, Engine)  # checked when the profiles were read
            engine.reset()
            if text is not None:
                result.ppl = text_perplexity(engine.model, text, ctx, chunks, progress)
                engine.reset()
            if model_work is not None:
                model_work(engine.model, result)
                engine.reset()
                result.writing = writing_speed(engine.model)  # (the pass times reading; a choice weighs both)
        return result
    finally:
        engine.close()


def _build_references(
    plan: KLDPlan, keys: list[dict[str, Any]], cached: list[ReferenceLogits | None],
    refs: list[ReferenceLogits], progress: Any, model: LoadedModel, result: ProfileEval,
) -> None:
    short: list[int] = []  # each one short of a window found before any is read (the last was, after the others)
    for i, ((name, text), key, ref) in enumerate(zip(plan.documents, keys, cached, strict=True)):
        if ref is None:
            try:
                reference_windows(model, text, key)
            except EvalInputError as err:  # which document is too short
                result.left_out.append(("eval.document_why", {"name": name, "why": err.said}))
                short.append(i)
    if short and len(short) == len(plan.documents):  # nothing to compare on
        raise EvalInputError(said=[p for i, why in enumerate(result.left_out) for p in [("eval.sep", {})] * bool(i) + [why]])
    for i in reversed(short):  # the others are compared on (one short note stopped a folder's run)
        del plan.documents[i], keys[i], cached[i]
    for (name, text), key, ref in zip(plan.documents, keys, cached, strict=True):
        if ref is None:
            ref = build_reference(model, text, key, plan.folder, progress)
        else:
            time_reference(model, ref, progress)
        refs.append(ref)
        result.references.append(ReferenceRow.of(name, ref))
        result.references[-1].cache_kept = not plan.not_kept


def _compare_candidate(
    plan: KLDPlan, refs: list[ReferenceLogits], progress: Any, model: LoadedModel, result: ProfileEval
) -> None:
    for (name, _), ref in zip(plan.documents, refs, strict=True):
        result.kld.append(compare_to_reference(model, ref, name, progress))


def evaluate_profiles(
    profiles: list[Profile],
    task_set: TaskSet | None = None,
    text: str | None = None,
    ctx: int | None = None,
    chunks: int | None = None,
    plan: KLDPlan | None = None,
    progress: Any = None,
) -> list[ProfileEval]:
    """Every profile in turn, one loaded at a time. With a KLD plan the first profile is the
    reference: its pass is read from the cache when there is one (its speed then measured
    again over one window, so that "x faster" compares two figures of this run), and each later
    profile is compared with it."""
    if plan is None:
        return [evaluate_profile(p, task_set, text, ctx, chunks, progress) for p in profiles]
    if len(profiles) < 2:
        raise EvalInputError(said=[("eval.kld_needs_two", {})])
    reference = profiles[0]
    ref_path = resolve_model_path(reference.model)
    for candidate in profiles[1:]:  # refuse a mismatch before any model is loaded
        check_same_vocabulary(ref_path, resolve_model_path(candidate.model))
    cache_budget()  # and a bad WORKSTATION_KLD_CACHE_MB (it was read after the reference pass)
    plan.folder, plan.not_kept = reference_folder()
    with contextlib.ExitStack() as stack:
        if plan.folder is None:  # measured and printed all the same, then said (it stopped before measuring)
            plan.folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="workstation-kld-")))
        kv = (reference.kv_cache.k, reference.kv_cache.v)
        keys = [reference_key(ref_path, kv, t, plan.n_ctx, plan.max_chunks, plan.top_k) for _, t in plan.documents]
        cached = [load_reference(key_path(k, plan.folder), k) for k in keys]
        refs: list[ReferenceLogits] = []
        results = []
        # loaded even when every document's pass is cached: its speed is measured in this run
        work = partial(_build_references, plan, keys, cached, refs, progress)
        first = evaluate_profile(reference, task_set, text, ctx, chunks, progress, work, plan.n_ctx)
        results.append(first)
        for candidate in profiles[1:]:
            work = partial(_compare_candidate, plan, refs, progress)
            results.append(evaluate_profile(candidate, task_set, text, ctx, chunks, progress, work, plan.n_ctx))
        refs.clear()  # (their files mapped: let go before a temporary folder is removed)
    return results


def run(args: argparse.Namespace) -> int:
    # (said with bench's phrase: they were English under --lang tr)
    for name, value, low in (("--ctx", args.ctx, 16), ("--chunks", args.chunks, 1), ("--top-k", args.top_k, 1)):
        if value is not None and value < low:
            raise EvalInputError(said=[("bench.at_least", {"name": name, "low": low, "value": value})])
    task_path = args.tasks
    if task_path is None and args.perplexity is None and not args.kld:
        task_path = EXAMPLE_TASKS
    task_set = load_task_set(task_path) if task_path is not None else None
    text = read_text(args.perplexity) if args.perplexity is not None else None
    plan = None
    if args.kld:
        plan = KLDPlan(read_kld_documents(args.kld), args.ctx or DEFAULT_WINDOW, args.chunks, args.top_k)
    profiles = _profiles(args)
    try:
        results = evaluate_profiles(profiles, task_set, text, args.ctx, args.chunks, plan, progress_reporter(args))
    finally:
        clear_progress()
    deltas = [compare(results[0], r) for r in results]
    if args.json:
        print_json([{**r.to_dict(), "memory": _memory_dict(r), "vs_first": d}
                    for r, d in zip(results, deltas, strict=True)])
        _say_not_kept(plan)
        _keep(args, results, deltas)
        return 0
    t = texts_of(args)
    lookup = t.get if t.lang != "en" else None
    print(format_eval(results, deltas, args.kld, lookup))
    if args.verbose:
        for r in results:
            if r.tasks:
                print(f"\n{r.said(lookup)}:")
                print(text_table(
                    [say([(f"eval.col_{c}", {})], lookup) for c in ("task", "lang", "ok", "expected", "reply")],
                    [[task.id, task.lang, say([("eval.yes" if task.correct else "eval.no", {})], lookup),
                      " / ".join(task.expected)[:30], " ".join(task.reply.split())[:60]] for task in r.tasks.results],
                    set(),
                ))
    _say_not_kept(plan)
    _keep(args, results, deltas)
    return 0


def _say_not_kept(plan: KLDPlan | None) -> None:
    """The reference pass measured in a folder of this run's own, once the results are printed."""
    if plan is not None and plan.not_kept:
        print(f"workstation: {say([('kld.not_kept', {'why': plan.not_kept})])}", file=sys.stderr)


def _keep(args: argparse.Namespace, results: list[Any], deltas: list[dict[str, Any]]) -> None:
    if not args.no_save:
        save_printed_run("eval", [row for r, d in zip(results, deltas, strict=True) for row in result_rows(r, d)],
                         command_line("eval", args))


def _model_facts(r: ProfileEval) -> dict[str, Any]:
    """File type and size of a profile's model, and its K/V cache at the profile's context, for
    the quality-vs-memory chart (K/V types compared showed one memory: the file's)."""
    try:
        info = read_model_info(r.model, check=False)
    except (OSError, WorkstationError):
        return {}
    facts = {"file_type": info.file_type, "model_bytes": info.file_size, "weights_bytes": info.weights_bytes}
    if r.context:
        from workstation.core.planner import plan

        try:
            # the one plan F4 and fit make: the weights, this CPU's repacked copy of them, the
            # compute buffers and the K/V cache (eval said 177 MB where F4 said 423 MB)
            planned = plan(info, context=r.context, type_k=r.type_k, type_v=r.type_v, gpus=[])
            facts.update(context=r.context, kv_bytes=planned.kv_cache_bytes, total_bytes=planned.total_bytes,
                         repack_bytes=planned.repack_bytes, compute_bytes=planned.compute_bytes)
        except (ValueError, WorkstationError):  # a K/V type the planner does not know: the file alone
            pass
    return facts


def result_rows(r: ProfileEval, delta: dict[str, Any] | None = None) -> list[ResultRow]:
    """The history's rows of ``r``; ``delta`` (``compare``'s against the first) keeps with them a
    speed eval left out as beyond the settings, so F12 leaves it out too (it drew "741 tok/s"
    beside 175 that eval had said was a busy moment's)."""
    rows = []
    if r.tasks:
        rows.append(ResultRow(r.profile, "accuracy", r.tasks.accuracy, "ratio", r.model, r.tasks.to_dict()))
        if r.tasks.gen_ts is not None:
            rows.append(ResultRow(r.profile, "eval_gen_ts", r.tasks.gen_ts, "tok/s", r.model, {}))
    if r.ppl:
        rows.append(ResultRow(r.profile, "perplexity", r.ppl.ppl, "ppl", r.model, r.ppl.to_dict()))
        rows.append(ResultRow(r.profile, "ppl_ts", r.ppl.tokens_per_second, "tok/s", r.model, {}))
    if r.kld or r.references:
        # (its ref: F12 tells two of one name apart by it, kld.run_key)
        facts = {**_model_facts(r), "type_k": r.type_k, "type_v": r.type_v, "ref": r.ref or r.profile,
                 **({"speed_left_out": True} if delta and delta.get("speed_ratio_unbelievable") else {})}
        for ref in r.references:  # the reference loses nothing against itself
            rows.append(ResultRow(r.profile, "kld_mean", 0.0, "nats", r.model,
                                  {**ref.to_dict(), **facts, "reference": True}))
        for k in r.kld:
            rows.append(ResultRow(r.profile, "kld_mean", k.kld_mean, "nats", r.model,
                                  {**k.to_dict(), **facts, "reference": False}))
    return rows


def _kld_cells(r: ProfileEval, j: int, lookup: Lookup | None = None) -> list[str]:
    """document, KLD mean, KLD p99, same top, perplexity, Δppl, KLD tok/s for document ``j``."""
    if r.references:
        ref = r.references[j]
        return [ref.document, say([("eval.reference_cell", {})], lookup), "-", "-",
                f"{ref.ppl:.4f} ± {ref.ppl_stderr:.4f}", "-",
                f"{ref.tokens_per_second:.1f}" + (say([("eval.timed_again_cell", {})], lookup) if ref.cache_reused else "")]
    if r.kld:
        k = r.kld[j]
        return [k.document, f"{k.kld_mean:.6f} ± {k.kld_stderr:.6f}", f"{k.kld_p99:.4f}",
                f"{k.same_top * 100:.2f} ± {k.same_top_stderr * 100:.2f}%", f"{k.ppl:.4f} ± {k.ppl_stderr:.4f}",
                f"{_signed(k.ppl_delta_pct)}%", f"{k.tokens_per_second:.1f}"]
    return ["-"] * 7


def _kld_timed(r: ProfileEval) -> bool:
    """Whether the profile's speed ("x faster") is its KL divergence pass's (no tasks, no perplexity)."""
    return bool(r.kld) and not (r.tasks is not None and r.tasks.gen_ts) and r.ppl is None


def format_eval(results: list[ProfileEval], deltas: list[dict[str, Any]], documents: list[Path] | None = None,
                lookup: Lookup | None = None) -> str:
    """The table and the notes under it, in ``lookup``'s language (the command line's: they were
    English under --lang tr); ``documents``: the --kld files as typed, which the command to time
    them whole names."""
    langs: list[str] = []
    for r in results:
        if r.tasks:
            for lang in r.tasks.by_lang():
                if lang not in langs:
                    langs.append(lang)
    if len(langs) < 2:  # one group: its column would repeat the accuracy
        langs = []
    has_tasks = any(r.tasks for r in results)
    has_ppl = any(r.ppl for r in results)
    n_docs = max((len(r.kld) or len(r.references) for r in results), default=0)
    if lookup is not None:  # each profile by its name in the run's language ("tiny · K/V yarı boy")
        results = [dataclasses.replace(r, profile=r.said(lookup)) for r in results]

    def col(key: str) -> str:
        return say([(f"eval.col_{key}", {})], lookup)

    header = [col("profile"), col("model"), "K/V"]
    left = {0, 1, 2}
    if has_tasks:
        header += [col("accuracy"), *(lang if lang != "-" else col("other") for lang in langs), col("gen_ts"), "TTFT ms"]
    if has_ppl:
        header += ["perplexity", col("ppl_ts")]
    if n_docs:
        left.add(len(header))
        header += [col("document"), col("kld_mean"), "KLD p99", col("same_top"), "KLD ppl", "Δppl", col("kld_ts")]
    header.append(say([("eval.col_vs", {"name": results[0].profile})], lookup))
    rows = []
    for r, d in zip(results, deltas, strict=True):
        for j in range(max(1, n_docs)):
            # a file as 'models list' names it; a server's model with its host, whole ("…@127.0.0.1:8088": its
            # stem cut it to "…@127.0.0")
            model = installed_name(Path(r.model)) if Path(r.model).is_file() else r.model
            row = [r.profile, model, f"{r.type_k}/{r.type_v}"]
            if has_tasks:
                if r.tasks and j == 0:
                    by = r.tasks.by_lang()
                    row.append(f"{r.tasks.accuracy * 100:.1f}% ({r.tasks.correct}/{len(r.tasks.results)})")
                    row += [f"{by[lang][0]}/{by[lang][1]}" if lang in by else "-" for lang in langs]
                    row.append(f"{r.tasks.gen_ts:.1f}" if r.tasks.gen_ts else "-")
                    row.append(f"{r.tasks.ttft_ms:.0f}" if r.tasks.ttft_ms is not None else "-")
                else:
                    row += ["-" if j == 0 else ""] * (3 + len(langs))
            if has_ppl:
                if r.ppl and j == 0:
                    row += [f"{r.ppl.ppl:.4f} ± {r.ppl.ppl_stderr:.4f}", f"{r.ppl.tokens_per_second:.1f}"]
                else:
                    row += ["-" if j == 0 else ""] * 2
            if n_docs:
                row += _kld_cells(r, j, lookup)
            if r is results[0]:
                row.append(say([("eval.baseline", {})], lookup))
            elif j == 0 and not (n_docs > 1 and _kld_timed(r)):
                row.append(describe(d, lookup))
            else:  # a document's own speed: the first row said all documents' ("1.81x slower" beside 1.56x)
                ratio = r.kld[j].tokens_per_second / results[0].references[j].tokens_per_second \
                    if r.kld and results[0].references and results[0].references[j].decode_seconds > 0 else 0.0
                ratio = ratio if believable(ratio, results[0], r) else 0.0
                row.append(describe({"accuracy_delta_pts": None, "perplexity_delta_pct": None, "speed_ratio": ratio,
                                     "speed_sure": same_or_apart(ratio, ratio_sure(results[0], r, j))}, lookup))
            rows.append(row)
    right = set(range(len(header) - 1)) - left  # (the last: the words against the first)
    # (its figures in the run's language: "45,0%" beside Turkish notes that wrote 45,0)
    rows = [[local_numbers(c, lookup) if i in right else c for i, c in enumerate(row)] for row in rows]
    table = text_table(header, rows, right)
    pts = any(d.get("accuracy_delta_pts") is not None for d in deltas[1:])
    notes = [eval_legend(has_tasks, has_ppl, bool(n_docs), pts, lookup)]
    for r in results:
        if r.ppl:
            notes.append(say([("eval.ppl_windows", {"profile": r.profile, "n": r.ppl.n_chunks, "ctx": r.ppl.n_ctx,
                                                    "scored": r.ppl.n_scored})], lookup))
            break
    if results[0].references:
        refs = results[0].references
        reused = sum(ref.cache_reused for ref in refs)
        # (sizes in the units every size is said in, human_bytes: it said "MiB" and "KiB" here alone)
        notes.append(say([("eval.reference_windows", {
            "profile": results[0].profile, "ctx": refs[0].n_ctx, "top_k": refs[0].top_k,
            "size": human_bytes(sum(ref.cache_bytes for ref in refs)),
            "kept": ("eval.cached" if refs[0].cache_kept else "eval.not_kept", {}),
            "per_1k": human_bytes(refs[0].cache_bytes_per_1k_tokens), "reused": reused, "n": len(refs),
            "tokens": f"{sum(ref.n_tokens for ref in refs):,}",
            "again": [("eval.timed_again", {})] if reused else []})], lookup))
    notes += [say([("eval.left_out", {"why": why})], lookup) for why in results[0].left_out]
    if n_docs > 1:  # the whole run's speed, the rows being each document's
        notes += [say([("eval.all_documents", {"profile": r.profile, "name": results[0].profile, "n": n_docs,
                                               "said": describe(d, lookup)})], lookup)
                  for r, d in zip(results[1:], deltas[1:], strict=True) if _kld_timed(r) and describe(d) != "-"]
    if results[0].references:  # before what is read by it: the plain words and the pick ("Which to pick" came first)
        from workstation.core.weight_levels import four_bit_levels, four_bit_phrase, reference_note

        levels = four_bit_levels(Path(results[0].model))
        if levels is not None:  # "Q4_1 loses nothing" against a Q8_0 made from it
            notes.append(say(reference_note(results[0].profile, levels), lookup))
        for r in results[1:]:  # (one named with --reference, or of fewer bits per weight: said all the same)
            levels = four_bit_levels(Path(r.model)) if r.model != results[0].model else None
            if levels is not None:
                notes.append(say([("eval.note", {"said": [four_bit_phrase(r.profile, levels)]})], lookup))
    notes += plain_kld_notes(results, lookup)
    notes += choice_notes(results, deltas, documents, lookup)
    notes += kld_speed_notes(results, lookup)
    notes += unbelievable_notes(results, deltas, lookup)
    return "\n".join([table, *notes])


def eval_legend(tasks: bool, ppl: bool, kld: bool, pts: bool, lookup: Lookup | None = None) -> str:
    """The line under eval's table (bench's ``table_legend``): its columns in plain words, in
    ``lookup``'s language ("KLD mean | KLD p99 | same top | KLD ppl | Δppl" were explained nowhere)."""
    def named(key: str) -> Phrase:
        return (f"eval.legend_{key}", {"name": say([(f"eval.col_{key}", {})], lookup)})

    columns: list[Phrase] = [("bench.legend_kv", {})]
    if tasks:
        columns += [named("accuracy"), *([("eval.legend_pts", {})] if pts else []), named("gen_ts"),
                    ("bench.legend_ttft", {"name": "TTFT ms"})]
    if ppl:
        columns += [("eval.legend_perplexity", {}), named("ppl_ts")]
    if kld:
        columns += [named("kld_mean"), ("eval.legend_kld_p99", {}), named("same_top"), ("eval.legend_kld_ppl", {}),
                    ("eval.legend_dppl", {}), named("kld_ts")]
    return table_legend([*columns, ("bench.legend_tok_s", {})], lookup)


# KL divergence (nats per token) up to which a quantization's text reads so, in plain words: near
# llama.cpp's published figures (Q8_0 about 0.001, Q6_K 0.004, Q4_K_M 0.02-0.03, Q2_K 0.3 and up)
KLD_WORDS = ((0.005, "eval.kld_practically"),  # "writes practically as well" (not "the same text": 1 word in 20 may differ)
             (0.02, "eval.kld_very_nearly"),
             (0.1, "eval.kld_little_worse"), (0.3, "eval.kld_noticeably_worse"), (float("inf"), "eval.kld_clearly_worse"))


def kld_words(kld: float, lookup: Lookup | None = None) -> tuple[str, str]:
    """What a KL divergence means, in words (``KLD_WORDS``): its phrase's key and its words."""
    key = next(k for limit, k in KLD_WORDS if kld < limit)
    return key, say([(key, {})], lookup)


def kld_speed_notes(results: list[ProfileEval], lookup: Lookup | None = None) -> list[str]:
    """A sentence for a profile whose speed against the reference went one way on one document
    and the other way on another (1.23x slower, then 1.51x faster): one pass of each is timed,
    and a busy moment decides it; ``bench`` times them side by side, repeated."""
    refs = results[0].references if results else []
    notes = []
    for r in results[1:]:
        ratios = [k.tokens_per_second / ref.tokens_per_second for k, ref in zip(r.kld, refs, strict=False)
                  if ref.decode_seconds > 0 and ref.tokens_per_second > 0]
        if len(ratios) >= 2 and max(ratios) > SPEED_APART and min(ratios) < 1 / SPEED_APART:
            notes.append(say([("eval.both_ways", {
                "profile": r.profile, "name": results[0].profile, "low": f"{min(ratios):.2f}", "high": f"{max(ratios):.2f}",
                "command": cli(f"bench -p {results[0].typed} -p {r.typed}")})], lookup))
    return notes


SPEED_APART = 1.1  # a tenth faster on one document and a tenth slower on another: not the profile's own


def plain_kld_notes(results: list[ProfileEval], lookup: Lookup | None = None) -> list[str]:
    """What each quantization's KL divergence means, in a sentence an office reads."""
    if not results or not results[0].references:
        return []
    ref = results[0].profile
    notes = []
    for r in results[1:]:
        for k in r.kld:
            key, words = kld_words(k.kld_mean, lookup)
            if _scored_better(k) and key in WORSE:  # (Q8_0 "writes noticeably worse" at Δppl −17.2%)
                words = say([("eval.differs_but", {"better": better_phrase(r, ref, k)})], lookup)
            notes.append(say([("eval.plain_kld", {"document": k.document, "profile": r.profile, "name": ref,
                                                  "share": share_percent(k.same_top), "words": words})], lookup))
    return notes


WORSE = {w for _, w in KLD_WORDS[2:]}  # the words that call a candidate worse than the reference


def _scored_better(k: KLDResult) -> bool:
    """Whether the candidate's perplexity on the document came out lower than the reference's
    (as the table's Δppl shows it: −0.1% or less)."""
    return round(k.ppl_delta_pct, 1) < 0


def better_phrase(r: ProfileEval, reference: str, k: KLDResult, key: str = "kld.better_than_reference") -> Phrase:
    """That ``r`` scored better than the reference on ``k``'s document (``key``: said of it by name,
    or, "eval.it_scored_better", as "it" in a sentence that named it)."""
    return (key, {"name": r.profile, "reference": reference, "document": k.document,
                                          "delta": f"{_signed(k.ppl_delta_pct)}%"})


MEMORY_APART = 0.05  # a twentieth of the memory, or less: the same memory, in the choice's words


def _memory(r: ProfileEval) -> tuple[int, int, int, int, int] | None:
    """What the planner counts at the profile's context, as F4 and fit do: the model (its
    weights, this CPU's repacked copy of them, the compute buffers), its context memory (the
    K/V cache), and of the model the repacked copy, the weights and the compute buffers (fit's
    parts: "the model 192 MB" was fit's weights 92 MB and compute 100 MB together)."""
    facts = _model_facts(r)
    if "total_bytes" not in facts or "kv_bytes" not in facts:
        return None
    kv = int(facts["kv_bytes"])
    return (int(facts["total_bytes"]) - kv, kv, int(facts["repack_bytes"]), int(facts["weights_bytes"]),
            int(facts["compute_bytes"]))


def _memory_dict(r: ProfileEval) -> dict[str, int] | None:
    """``--json``'s memory of a profile: what 'Side by side' says (a server's model: none)."""
    facts = _model_facts(r) if r.context else {}
    if "total_bytes" not in facts:
        return None
    return {"model_bytes": int(facts["model_bytes"]), "kv_bytes": int(facts["kv_bytes"]),
            "total_bytes": int(facts["total_bytes"]), "repack_bytes": int(facts["repack_bytes"]),
            "context": r.context}


def choice_notes(results: list[ProfileEval], deltas: list[dict[str, Any]],
                 documents: list[Path] | None = None, lookup: Lookup | None = None) -> list[str]:
    """Each profile against the reference on the person's documents, memory, speed and what the
    answers lose in one sentence, then which to pick and why: the table's KLD, Δppl and tok/s
    left a team lead choosing K/V types to work the choice out, and said nothing of the memory
    that a "half size" context memory is chosen for. In ``lookup``'s language (English f-strings
    were left under --lang tr)."""
    if not results or not results[0].references:
        return []
    first = results[0]
    mine = _memory(first)
    notes = []
    for r, d in zip(results[1:], deltas[1:], strict=True):
        if not r.kld:
            continue
        worst = max(k.kld_mean for k in r.kld)
        key, words = kld_words(worst, lookup)
        better = [k for k in r.kld if _scored_better(k)] if key in WORSE else []
        if better:  # the reference is no yardstick: nothing is called worse than it, nothing picked by it
            words = say([better_phrase(r, first.profile, better[0], "eval.it_scored_better")], lookup)
        verb = "eval.reads_documents" if _kld_timed(r) else "eval.writes_replies"
        ratio = d.get("speed_ratio")
        if ratio and not d.get("speed_sure", True):  # within the run's noise: said so, chosen by neither way
            speed, ratio, doubt = say([(verb, {"how": say([("eval.about_same_how", {})], lookup)})], lookup), None, ""
        else:
            doubt = speed_doubt(r, first, lookup) if _kld_timed(r) else ""
            speed = say([(verb, {"how": _as_fast(ratio, lookup)})], lookup) + doubt if ratio else ""
        wrote = writing_ratio(r, first) if _kld_timed(r) else None
        if wrote is not None:  # (the same words for the writing: "2.46x slower (not sure…)" was weighed by nothing)
            how = _as_fast(wrote[0], lookup) if wrote[1] else say([("eval.about_same_how", {})], lookup)
            writing = say([("eval.writes_replies", {"how": how})], lookup)
            speed = say([("eval.sep", {})], lookup).join(x for x in (speed, writing) if x)
        theirs = _memory(r)
        said, saved = [], 0
        if mine is not None and theirs is not None:
            saved = sum(mine[:2]) - sum(theirs[:2])
            said.append(say([("eval.needs_memory", {
                "total": file_size_text(sum(theirs[:2])), "context": f"{r.context:,}", "against": file_size_text(sum(mine[:2])),
                "weights": file_size_text(theirs[3]), "compute": file_size_text(theirs[4]),
                "copy": [("eval.second_copy", {"size": file_size_text(theirs[2])})] if theirs[2] else [],
                "kv": file_size_text(theirs[1]), "kv_words": kv_words(KVCache(r.type_k, r.type_v), lookup, usual=True),
                "command": cli("fit")})], lookup))
        said += [words, speed]
        notes.append(say([("eval.side_by_side", {"profile": r.profile, "name": first.profile,
                                                 "said": say([("eval.sep", {})], lookup).join(x for x in said if x)})],
                         lookup))
        writes = wrote[0] if wrote is not None and wrote[1] else None  # (runs that overlap decide nothing)
        if better:
            pick = say([("kld.pick_unsure", {"better": [better_phrase(r, first.profile, better[0])]})], lookup)
        else:
            pick = _pick(first.profile, r.profile, worst, words, saved, mine, ratio, verb, doubt, writes, lookup)
        notes.append(say([("eval.which_to_pick", {"said": pick})], lookup))
    timed = [r for r in results[1:] if r.kld and _kld_timed(r)]
    if timed:  # (q8_0 K/V read 512-token windows 1.13x slower, a 2,900-token sheet 2.2x, and wrote 1.8x slower)
        profiles = " ".join(f"-p {r.typed}" for r in [first, *timed])
        # the documents just given, as typed (it said YOUR_DOCUMENTS to someone who had named them)
        named = " ".join(shell_word(str(path)) for path in documents) if documents else "YOUR_DOCUMENTS"
        notes.append(say([("eval.window_speeds", {"ctx": first.references[0].n_ctx,
                                                  "command": cli(f"bench {profiles} --document {named}")})], lookup))
    return notes


def _as_fast(ratio: float, lookup: Lookup | None) -> str:
    """A speed ratio as the choice says it: "as fast", "1.50x faster", "1.20x slower"."""
    return speed_words(ratio, say([("bench.as_fast", {})], lookup), say([("eval.x_faster", {})], lookup), lookup)


ROUGH_WINDOWS = 3  # a KL divergence pass's speed timed over fewer windows than this is one moment's
ROUGH_SPREAD = 1.3  # its documents' speeds against the reference further apart than this: not one speed


def speed_doubt(r: ProfileEval, first: ProfileEval, lookup: Lookup | None = None) -> str:
    """Why ``r``'s speed against ``first`` (its KL divergence pass's) is rough, in brackets after
    the ratio, or "": timed over one or two windows (a 512-token window on a busy PC said "1.32x
    faster" as a fact), or its documents' ratios far apart (both ways: ``kld_speed_notes``)."""
    windows = sum(k.n_chunks for k in r.kld)
    if 0 < windows < ROUGH_WINDOWS:
        return say([("eval.rough_windows", {"n": windows, "ctx": r.kld[0].n_ctx})], lookup)
    ratios = [k.tokens_per_second / ref.tokens_per_second for k, ref in zip(r.kld, first.references, strict=False)
              if ref.decode_seconds > 0 and ref.tokens_per_second > 0 and k.tokens_per_second > 0]
    if len(ratios) >= 2 and max(ratios) / min(ratios) > ROUGH_SPREAD:
        return say([("eval.rough_spread", {"low": f"{min(ratios):.2f}", "high": f"{max(ratios):.2f}"})], lookup)
    return ""


def writing_ratio(r: ProfileEval, first: ProfileEval) -> tuple[float, bool] | None:
    """How fast ``r`` writes against ``first`` (their tg runs, --kld) and whether the runs tell
    them apart (bench's test), or None where either was not timed."""
    if r.writing is None or first.writing is None or not r.writing.samples_ts or not first.writing.samples_ts:
        return None
    # the median run of each (one run a busy moment stalled moved the mean), and none beyond what
    # their settings allow (``believable``)
    ratio = statistics.median(r.writing.samples_ts) / statistics.median(first.writing.samples_ts)
    return (ratio, same_or_apart(ratio, apart(r.writing, first.writing))) if believable(ratio, first, r) else None


def unbelievable_notes(results: list[ProfileEval], deltas: list[dict[str, Any]],
                       lookup: Lookup | None = None) -> list[str]:
    """A sentence for each speed left unsaid as beyond what the settings allow (``believable``)."""
    if not results:
        return []
    first, notes = results[0], []
    for r, d in zip(results[1:], deltas[1:], strict=False):
        # each with which speed it is ("hızı dışarıda bırakıldı: 5,66 kat daha yavaş" beside a cell's 1,88: which?)
        ratios = [(d["speed_ratio_unbelievable"], "eval.speed_reading" if r.ppl is not None or _kld_timed(r)
                   else "eval.speed_writing")] if d.get("speed_ratio_unbelievable") else []
        if r.writing is not None and first.writing is not None and r.writing.samples_ts and first.writing.samples_ts:
            wrote = statistics.median(r.writing.samples_ts) / statistics.median(first.writing.samples_ts)
            ratios += [] if believable(wrote, first, r) else [(wrote, "eval.speed_writing")]
        for ratio, what in ratios:
            notes.append(say([("eval.unbelievable", {
                "profile": r.profile, "name": first.profile, "what": (what, {}),
                "how": speed_words(ratio, say([("bench.as_fast", {})], lookup), say([("eval.x_faster", {})], lookup),
                                   lookup),
                "most": f"{speed_bound(first, r):.1f}", "command": cli(f"bench -p {first.typed} -p {r.typed}")})], lookup))
    return notes


def _pick(first: str, other: str, worst: float, words: str, saved: int, mine: tuple[int, int, int] | None,
          ratio: float | None, verb: str, doubt: str = "", writes: float | None = None,
          lookup: Lookup | None = None) -> str:
    """The choice between the reference and ``other`` in a clause: quality first (a KL divergence
    under 0.02 writes very nearly as well), then the trade of memory, reading (``ratio``, said
    with ``doubt``: ``speed_doubt``; ``verb`` its phrase) and writing (``writes``, where measured),
    each a tenth apart or more: "prefer Q8_0, as office-cpu reads your documents 1.36x slower" said
    nothing of office-cpu writing faster. In ``lookup``'s language."""
    near = worst < KLD_WORDS[1][0]
    less = mine is not None and saved > MEMORY_APART * sum(mine[:2])
    more = mine is not None and -saved > MEMORY_APART * sum(mine[:2])
    size = file_size_text(abs(saved))
    if not near:
        return say([("eval.pick_reference", {
            "name": first, "profile": other, "words": words,
            "though": [("eval.pick_though_less", {"size": size, "name": first})] if less else []})], lookup)
    wheres, gains, better, worse = [], [], [], []  # where other is the pick, why (in full and short), what it loses
    if less:
        wheres.append(say([("eval.where_memory", {})], lookup))
        gains.append(say([("eval.gain_memory", {"size": size})], lookup))
        better.append(say([("eval.less_memory", {"size": size})], lookup))
    for speed, what, where, said in ((ratio, verb, "eval.where_reading", doubt),
                                     (writes, "eval.writes_replies", "eval.where_writing", "")):
        if speed is None or said:  # a rough speed (one window, once) is said beside, never chosen by
            continue
        how = say([(what, {"how": _as_fast(speed, lookup)})], lookup)
        if speed >= SPEED_APART:
            wheres.append(say([(where, {})], lookup))
            gains.append(say([("eval.gain_it", {"how": how})], lookup))
            better.append(how)
        elif speed <= 1 / SPEED_APART:
            worse.append(how)
    both, either = say([("eval.and", {})], lookup), say([("eval.or", {})], lookup)
    if not better:
        return say([("eval.pick_no_gain", {
            "name": first, "profile": other, "memory": ("eval.more_memory" if more else "eval.no_memory_saved", {}),
            "speed": ("eval.and_worse", {"worse": both.join(worse)}) if worse else ("eval.no_faster", {})})], lookup)
    if worse:  # a trade: where each is the pick
        return say([("eval.pick_trade", {
            "name": first, "profile": other, "where": either.join(wheres),
            "gains": say([("eval.and_list", {})], lookup).join(gains), "words": words, "worse": both.join(worse)})],
            lookup)
    return say([("eval.pick_other", {
        "profile": other, "better": both.join(better), "words": words,
        "more": [("eval.if_more_memory", {"size": size})] if more else []})], lookup)
