"""``workstation eval -p P ... [--tasks F] [--perplexity TEXT] [--json]``: quality and speed."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workstation.commands import add_profile_arg, print_json, profile_refs
from workstation.commands.bench import _clear_progress, _progress, _table, command_line
from workstation.core.bench import check_local
from workstation.core.engine import Engine
from workstation.core.engine_api import open_engine
from workstation.core.evaluate import (
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
from workstation.core.profiles import Profile, load_profile
from workstation.core.results import ResultRow, save_run


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "eval",
        help="quality (your own tasks, perplexity) and speed, side by side per profile",
        description="Score each profile on a YAML task set (exact / contains / regex / choice "
        "answers, greedy decoding) and/or the perplexity of a text, in one table with speed and "
        "the change against the first profile. Without --tasks or --perplexity the shipped "
        "English/Turkish example task set runs.",
    )
    add_profile_arg(p, multiple=True)
    p.add_argument("--tasks", type=Path, metavar="FILE", help="YAML task set to score")
    p.add_argument("--perplexity", type=Path, metavar="TEXT", help="text file to measure perplexity on")
    p.add_argument("--ctx", type=int, metavar="N",
                   help="perplexity window in tokens (default: the profile's context)")
    p.add_argument("--chunks", type=int, metavar="N", help="score at most N perplexity windows")
    p.add_argument("-t", "--threads", type=int, metavar="N", help="threads instead of the profile's")
    p.add_argument("-v", "--verbose", action="store_true", help="also list every task's reply")
    p.add_argument("--no-save", action="store_true", help="do not save the results to the history")
    p.add_argument("--json", action="store_true", help="print the figures as JSON")
    p.set_defaults(func=run)


@dataclass
class ProfileEval:
    profile: str
    model: str
    type_k: str
    type_v: str
    tasks: TasksScore | None = None
    ppl: PerplexityResult | None = None

    @property
    def speed(self) -> float | None:
        """The speed used for "x faster": generation tok/s on the tasks, else perplexity tok/s."""
        if self.tasks is not None and self.tasks.gen_ts:
            return self.tasks.gen_ts
        return self.ppl.tokens_per_second if self.ppl is not None else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "profile": self.profile,
            "model_filename": self.model,
            "type_k": self.type_k,
            "type_v": self.type_v,
            "tasks": self.tasks.to_dict() if self.tasks else None,
            "perplexity": self.ppl.to_dict() if self.ppl else None,
        }


def compare(base: ProfileEval, other: ProfileEval) -> dict[str, Any]:
    """``other`` against ``base``: accuracy points, perplexity change, speed ratio."""
    out: dict[str, Any] = {"accuracy_delta_pts": None, "perplexity_delta_pct": None, "speed_ratio": None}
    if base.tasks and other.tasks:
        out["accuracy_delta_pts"] = round((other.tasks.accuracy - base.tasks.accuracy) * 100, 3)
    if base.ppl and other.ppl:
        out["perplexity_delta_pct"] = round((other.ppl.ppl / base.ppl.ppl - 1) * 100, 3)
    if base.speed and other.speed:
        out["speed_ratio"] = round(other.speed / base.speed, 4)
    return out


def describe(delta: dict[str, Any]) -> str:
    parts = []
    if delta["accuracy_delta_pts"] is not None:
        parts.append(f"{_signed(delta['accuracy_delta_pts'])} pts accuracy")
    if delta["perplexity_delta_pct"] is not None:
        parts.append(f"{_signed(delta['perplexity_delta_pct'])}% perplexity")
    r = delta["speed_ratio"]
    if r:
        parts.append(f"{r:.2f}x faster" if r >= 1 else f"{1 / r:.2f}x slower")
    return ", ".join(parts) or "-"


def _signed(x: float) -> str:
    return ("+" if x > 0 else "−" if x < 0 else "±") + f"{abs(x):.1f}"


def _profiles(args: argparse.Namespace) -> list[Profile]:
    out = []
    for ref in profile_refs(args):
        profile = load_profile(ref)
        if args.perplexity is not None:
            check_local(profile)  # perplexity reads the model's logits; task sets run anywhere
        if args.threads is not None:
            if args.threads < 1:
                raise EvalInputError(f"--threads must be 1 or more, not {args.threads}.")
            profile.threads = args.threads
        out.append(profile)
    return out


def evaluate_profile(
    profile: Profile,
    task_set: TaskSet | None,
    text: str | None,
    ctx: int | None,
    chunks: int | None,
    progress: Any = None,
) -> ProfileEval:
    if ctx is not None and ctx > profile.context:
        profile.context = ctx  # the perplexity window must fit the loaded context
    engine = open_engine(profile, child_process=False)
    try:
        info = engine.info()
        result = ProfileEval(profile.key, info.model_path, info.type_k, info.type_v)
        if task_set is not None:
            result.tasks = run_tasks(engine, task_set, progress)
        if text is not None:
            assert isinstance(engine, Engine)  # checked when the profiles were read
            engine.reset()
            result.ppl = text_perplexity(engine.model, text, ctx, chunks, progress)
            engine.reset()
        return result
    finally:
        engine.close()


def run(args: argparse.Namespace) -> int:
    if args.ctx is not None and args.ctx < 16:
        raise EvalInputError(f"--ctx must be 16 or more, not {args.ctx}.")
    if args.chunks is not None and args.chunks < 1:
        raise EvalInputError(f"--chunks must be 1 or more, not {args.chunks}.")
    task_path = args.tasks
    if task_path is None and args.perplexity is None:
        task_path = EXAMPLE_TASKS
    task_set = load_task_set(task_path) if task_path is not None else None
    text = read_text(args.perplexity) if args.perplexity is not None else None
    profiles = _profiles(args)
    results = []
    try:
        for profile in profiles:
            results.append(evaluate_profile(profile, task_set, text, args.ctx, args.chunks, _progress(args)))
    finally:
        _clear_progress()
    deltas = [compare(results[0], r) for r in results]
    if not args.no_save:
        save_run("eval", [row for r in results for row in result_rows(r)], command_line("eval", args))
    if args.json:
        print_json([{**r.to_dict(), "vs_first": d} for r, d in zip(results, deltas, strict=True)])
        return 0
    print(format_eval(results, deltas))
    if args.verbose:
        for r in results:
            if r.tasks:
                print(f"\n{r.profile}:")
                print(_table(
                    ["task", "lang", "ok", "expected", "reply"],
                    [[t.id, t.lang, "yes" if t.correct else "no", " / ".join(t.expected)[:30],
                      " ".join(t.reply.split())[:60]] for t in r.tasks.results],
                    set(),
                ))
    return 0


def result_rows(r: ProfileEval) -> list[ResultRow]:
    rows = []
    if r.tasks:
        rows.append(ResultRow(r.profile, "accuracy", r.tasks.accuracy, "ratio", r.model, r.tasks.to_dict()))
        if r.tasks.gen_ts is not None:
            rows.append(ResultRow(r.profile, "eval_gen_ts", r.tasks.gen_ts, "tok/s", r.model, {}))
    if r.ppl:
        rows.append(ResultRow(r.profile, "perplexity", r.ppl.ppl, "ppl", r.model, r.ppl.to_dict()))
        rows.append(ResultRow(r.profile, "ppl_ts", r.ppl.tokens_per_second, "tok/s", r.model, {}))
    return rows


def format_eval(results: list[ProfileEval], deltas: list[dict[str, Any]]) -> str:
    langs: list[str] = []
    for r in results:
        if r.tasks:
            for lang in r.tasks.by_lang():
                if lang not in langs:
                    langs.append(lang)
    has_tasks = any(r.tasks for r in results)
    has_ppl = any(r.ppl for r in results)
    header = ["profile", "model", "K/V"]
    if has_tasks:
        header += ["accuracy", *langs, "gen tok/s", "TTFT ms"]
    if has_ppl:
        header += ["perplexity", "ppl tok/s"]
    header.append(f"vs {results[0].profile}")
    rows = []
    for r, d in zip(results, deltas, strict=True):
        row = [r.profile, Path(r.model).name, f"{r.type_k}/{r.type_v}"]
        if has_tasks:
            if r.tasks:
                by = r.tasks.by_lang()
                row.append(f"{r.tasks.accuracy * 100:.1f}% ({r.tasks.correct}/{len(r.tasks.results)})")
                row += [f"{by[lang][0]}/{by[lang][1]}" if lang in by else "-" for lang in langs]
                row.append(f"{r.tasks.gen_ts:.1f}" if r.tasks.gen_ts else "-")
                row.append(f"{r.tasks.ttft_ms:.0f}" if r.tasks.ttft_ms is not None else "-")
            else:
                row += ["-"] * (3 + len(langs))
        if has_ppl:
            if r.ppl:
                row += [f"{r.ppl.ppl:.4f} ± {r.ppl.ppl_stderr:.4f}", f"{r.ppl.tokens_per_second:.1f}"]
            else:
                row += ["-", "-"]
        row.append("(baseline)" if r is results[0] else describe(d))
        rows.append(row)
    right = {i for i, h in enumerate(header) if h not in ("profile", "model", "K/V") and not h.startswith("vs ")}
    table = _table(header, rows, right)
    notes = []
    for r in results:
        if r.ppl:
            notes.append(
                f"{r.profile}: perplexity over {r.ppl.n_chunks} window(s) of {r.ppl.n_ctx} tokens "
                f"({r.ppl.n_scored} tokens scored)."
            )
            break
    return "\n".join([table, *notes])
