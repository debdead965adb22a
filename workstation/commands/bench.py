"""``workstation bench [-p P ...] [--json]``: llama-bench-style speed tests, TTFT, acceptance."""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from workstation.commands import (
    add_lang_arg,
    add_profile_arg,
    print_json,
    profile_refs,
    text_table,
    texts_of,
)
from workstation.commands.parser import threads
from workstation.core.bench import (
    BenchConfig,
    BenchInputError,
    ProfileBench,
    PromptTooLong,
    ReplayResult,
    RoundSpeeds,
    SpeedStat,
    bench_profiles,
    check_local,
    document_prompts,
    read_replay_file,
    replay_profiles,
    sampling_differences,
)
from workstation.core.calibration import writing_apart
from workstation.core.catalog import human_bytes, params_text
from workstation.core.documents import told_apart
from workstation.core.engine_api import TOO_LONG
from workstation.core.invocation import cli, shell_word
from workstation.core.letters import shortened
from workstation.core.metrics import TurnMetrics
from workstation.core.phrases import (
    Lookup,
    Phrase,
    about_words,
    local_number,
    local_numbers,
    say,
    writing_said,
)
from workstation.core.profile_check import context_allowed
from workstation.core.profile_variants import load_variant, variant_settings
from workstation.core.profiles import DEFAULT_PROFILE, Profile
from workstation.core.results import save_printed_run
from workstation.core.terminal import redraws_in_place
from workstation.tui.i18n import Texts


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "bench",
        help="speed tests like llama-bench: reading a prompt and writing a reply in tokens a second, the wait "
        "for the first word (TTFT) and how many of a helper model's guesses are kept",
        description="Times reading a prompt (the table's pp512: reading 512 tokens) and writing a reply (tg128: "
        "writing 128 tokens) as llama-bench runs them, plus the wait for the first word of a chat turn (TTFT) "
        "and, for profiles with a helper model that guesses ahead, the share of its guesses kept. A line under "
        "the table says what each column means. Results are saved to the history.",
    )
    add_profile_arg(p, multiple=True, variants=True)
    p.add_argument("--n-prompt", "-n-prompt", dest="n_prompt", type=int, default=512, metavar="N",
                   help="tokens of the reading test (pp: reading a prompt), 0 to skip it (default 512)")
    p.add_argument("--n-gen", "-n-gen", "-n", dest="n_gen", type=int, metavar="N",
                   help="tokens of the writing test (tg: writing a reply), 0 to skip it (default 128)")
    p.add_argument("-r", "--repetitions", type=int, metavar="N",
                   help="timed runs per test (default 5); with --replay, rounds of the prompts (default 1)")
    p.add_argument("--quick", action="store_true", help=QUICK_HELP)
    p.add_argument("-t", "--threads", type=threads, metavar="N", help="threads instead of the profile's")
    p.add_argument("--no-warmup", action="store_true", help="skip the warm-up runs")
    p.add_argument("--no-ttft", action="store_true", help="skip the chat turns (TTFT, acceptance)")
    p.add_argument("--replay", type=Path, metavar="FILE",
                   help="run your own prompts instead (text: blank-line separated; .jsonl: "
                   '{"prompt": ...} or {"messages": [...]} per line)')
    p.add_argument("--document", type=Path, nargs="+", metavar="DOC",
                   help=f"time each profile summarizing your own documents ({Texts('en').file_kinds()}; "
                   "each one part, as F6 reads a document that fits the context): the wait for the first word "
                   "and the writing speed, side by side; then 'eval --kld' on them says what the answers lose")
    p.add_argument("--max-tokens", type=int, default=128, metavar="N",
                   help="longest reply per replayed prompt or document (default 128)")
    p.add_argument("--no-save", action="store_true", help="do not save the results to the history")
    p.add_argument("--json", action="store_true", help="print llama-bench-style JSON records")
    add_lang_arg(p)  # what the figures mean, under the table
    p.set_defaults(func=run)


# a newcomer's first look: the default is llama-bench's own tests (pp512, tg128, 5 repetitions), whose
# figures engineers compare with llama-bench's; a short tg repeated 3 times still says its spread
QUICK_GEN, QUICK_REPETITIONS = 32, 3
QUICK_HELP = (f"a first look in about a third of the time: writing {QUICK_GEN} tokens instead of 128 (tg{QUICK_GEN}), "
              f"{QUICK_REPETITIONS} repetitions instead of 5 (-n and -r, given too, win); without it, llama-bench's own "
              "tests")


def _profiles(args: argparse.Namespace) -> list[Profile]:
    profiles = []
    for ref in profile_refs(args):
        profile = load_variant(ref)
        if args.replay is None:
            check_local(profile)  # pp/tg read llama.cpp directly; a replay runs anywhere
        if args.threads is not None:  # (1 to 512 or auto, as the parser read it: parser.threads)
            profile.threads = args.threads or "auto"
        profiles.append(profile)
    return profiles


LOG_EVERY_S = 10.0  # off a terminal, a progress line at most this often (a log that stays alive)


def progress_reporter(args: argparse.Namespace) -> Callable[[str], None]:
    """What bench, eval and quantize --kld are at, on stderr: rewritten in place on a terminal;
    off one (``2>&1 | tee bench.log``, where nothing was printed for minutes) a line for the
    first step and then at most one each ``LOG_EVERY_S`` seconds."""
    if redraws_in_place(sys.stderr):
        def say(msg: str) -> None:
            sys.stderr.write(f"\r\033[K{msg}")
            sys.stderr.flush()

        return say
    last: list[float] = []

    def log(msg: str) -> None:
        now = time.monotonic()
        if not last or now - last[0] >= LOG_EVERY_S:
            last[:] = [now]
            sys.stderr.write(f"{msg}\n")
            sys.stderr.flush()

    return log


def clear_progress() -> None:
    if redraws_in_place(sys.stderr):
        sys.stderr.write("\r\033[K")
        sys.stderr.flush()


def run(args: argparse.Namespace) -> int:
    profiles = _profiles(args)
    command = command_line("bench", args)
    t = texts_of(args)
    lookup = t.get if t.lang != "en" else None  # (the progress on stderr too; English under --json)
    if args.replay is not None and args.document:
        raise BenchInputError(said=[("bench.replay_or_document", {})])
    if args.replay is not None or args.document:
        prompts = read_replay_file(args.replay) if args.replay is not None else document_prompts(args.document)
        if args.max_tokens < 1:
            raise BenchInputError(said=[("bench.at_least", {"name": "--max-tokens", "low": 1, "value": args.max_tokens})])
        try:
            replays = replay_profiles(profiles, prompts, args.max_tokens, progress_reporter(args),
                                      rounds=1 if args.repetitions is None else args.repetitions, lookup=lookup,
                                      documents=bool(args.document))
        except PromptTooLong as err:
            if not args.document:
                raise
            raise BenchInputError(said=document_too_long(err, args.document[err.index - 1],
                                                         told_apart(args.document)[err.index - 1])) from None
        finally:
            clear_progress()
        if args.document:  # named by their files (two of one name by their folders too), not by the instruction
            names = told_apart(args.document)
            for res in replays:
                res.documents = names
                for item in res.items:
                    item.prompt = names[item.index - 1]
        if args.json:
            print_json([r.to_dict() for r in replays])
        else:
            print(format_replay(replays, sampling_differences(profiles, lookup, greedy=len(profiles) > 1), lookup))
            if args.document and len(profiles) > 1:  # (it said speed alone: the memory and the loss are eval's)
                print(document_costs(profiles, args.document, lookup))
        if not args.no_save:
            save_printed_run("bench", [r for res in replays for r in res.result_rows()], command)
        return 0

    config = bench_config(args)
    try:
        results = bench_profiles(profiles, config, progress_reporter(args), lookup)
    finally:
        clear_progress()
    if args.json:
        print_json([rec for r in results for rec in r.records()])
    else:
        print(format_bench(results, lookup))
    if not args.no_save:
        save_printed_run("bench", [row for r in results for row in r.result_rows()], command)
    return 0


def bench_config(args: argparse.Namespace) -> BenchConfig:
    """The pp/tg tests the options ask for: llama-bench's (pp512, tg128, 5 repetitions), or
    ``--quick``'s shorter ones, -n and -r given winning over either."""
    return BenchConfig(
        n_prompt=args.n_prompt,
        n_gen=args.n_gen if args.n_gen is not None else QUICK_GEN if args.quick else 128,
        repetitions=args.repetitions if args.repetitions is not None else QUICK_REPETITIONS if args.quick else 5,
        warmup=not args.no_warmup,
        ttft=not args.no_ttft,
    )


def document_too_long(err: PromptTooLong, path: Path, name: str) -> list[Phrase]:
    """A --document the profile's context cannot hold as one message, named (the engine's
    sentence named no file): how long it is, what holds it (summarize: part by part), and the
    profile with a context that holds it, as -p takes it."""
    said = err.said[0][1] if err.said and err.said[0][0] == TOO_LONG else {}
    if not said:  # (the profile's instructions leave it no room: the engine's own sentence)
        return [("profile.in", {"src": name}), *(err.said or [("file.os_says", {"reason": str(err)})])]
    need = int(said["n"].replace(",", "")) + int(said["reserve"].replace(",", ""))
    longer = 1 << max(0, need - 1).bit_length()  # (the next power of two: 4096 for 3,100)
    base, settings = variant_settings(err.profile.ref)
    with_longer = " ".join([base or DEFAULT_PROFILE, *(f"{k}={v}" for k, v in settings if k != "context"),
                            f"context={longer}"])
    longer_said = [("bench.document_longer", {"profile": shell_word(with_longer)})] if context_allowed(longer) else []
    return [("bench.document_too_long", {"name": name, "n": said["n"], "profile": err.profile.key, "ctx": said["ctx"],
                                         "reserve": said["reserve"], "command": cli("summarize " + shell_word(str(path))),
                                         "longer": longer_said})]


def command_line(name: str, args: argparse.Namespace) -> str:
    """The options a run used, for the history (``bench {"n_prompt": 512, ...}``)."""
    opts = {k: v for k, v in vars(args).items() if k not in ("func", "command") and v not in (None, False)}
    return f"{name} {json.dumps(opts, default=str, ensure_ascii=False)}"


# --- tables ----------------------------------------------------------------------------------
def model_size_text(info: dict[str, Any]) -> str:
    """The model's size as ``models list`` says it: its file's, in ``human_bytes`` (94 MB); the
    table said llama-bench's weights in MiB ("92.10 MiB") beside fit's "92 MB" and the list's
    "94 MB" of the one file. Its weights' where the file cannot be read now; the JSON keeps
    llama-bench's ``model_size`` (the weights, in bytes)."""
    try:
        return human_bytes(Path(info["model_filename"]).stat().st_size)
    except (KeyError, OSError):
        return human_bytes(info["model_size"])


def model_label(info: dict[str, Any]) -> str:
    """llama.cpp's description of the model (``llama 256M Q4_1``) with the size class it
    guesses from the layer count replaced by the parameter count, as ``models inspect`` says it
    (SmolLM2-135M is "256M" to llama.cpp); the JSON keeps llama-bench's string."""
    parts = str(info["model_type"]).split(" ", 2)
    if len(parts) < 3:
        return str(info["model_type"])
    return f"{parts[0]} {params_text(int(info['model_n_params']))} {parts[2]}"


def figure_text(stat: SpeedStat) -> str:
    """A test's speed as the table says it: with its spread over the repetitions, and over one run
    the figure alone (a "± 0.00" read as sure where nothing was known of the spread)."""
    spread = f" ± {stat.stddev_ts:.2f}" if len(stat.samples_ts) > 1 else ""
    return f"{stat.avg_ts:.2f}{spread} tok/s"


def format_bench(results: list[ProfileBench], lookup: Lookup | None = None) -> str:
    """The table, then the notes under it in ``lookup``'s language (the command line's); the
    table's columns and figures as llama-bench's (engineers compare them)."""
    header = ["profile", "model", "size", "params", "ngl", "threads", "K/V", "fa", "test", "result"]
    rows = []
    for r in results:
        mi = r.model_info
        base = [
            r.profile, model_label(mi), model_size_text(mi), params_text(mi["model_n_params"]),
            str(mi["n_gpu_layers"]), str(mi["n_threads"]), f"{mi['type_k']}/{mi['type_v']}",
            str(mi["flash_attn"]),
        ]
        for name, stat in (("pp", r.pp), ("tg", r.tg)):
            if stat is not None:
                rows.append([*base, f"{name}{stat.n_tokens}", figure_text(stat)])
        ttft = r.ttft_ms
        if ttft is not None:
            rows.append([*base, "ttft", f"{ttft[0]:.1f} ± {ttft[1]:.1f} ms" if len(r.turns) > 1 else f"{ttft[0]:.1f} ms"])
            if r.chat_ts is not None:
                rows.append([*base, "chat tg", f"{r.chat_ts:.2f} tok/s"])
        if r.acceptance is not None:
            rows.append([*base, "accepted", f"{r.acceptance * 100:.1f}% of {r.draft_n} drafted"])
        elif mi.get("speculative", "off") != "off" and r.turns:  # (it read as a fault: "no drafts reported")
            rows.append([*base, "accepted", "none drafted (see below)"])
    rounds = max((r.rounds for r in results), default=1)
    order = [say([("bench.rounds", {"rounds": rounds})], lookup)] if rounds > 1 else []
    return "\n".join([text_table(header, rows, {2, 3, 4, 5, 9}), bench_legend(results, lookup), *order,
                      *plain_words(results, lookup),
                      *drafting_notes(results, lookup), *spread_notes(results, lookup),
                      *same_run_notes(results, lookup)])


def table_legend(columns: list[Phrase], lookup: Lookup | None = None) -> str:
    """What a table's columns and tests mean, in plain words, one line under it: bench's table
    ("ngl", "fa", "pp512", "tg32", "chat tg" said nothing to an office manager) and the
    --replay/--document table alike; each of ``columns`` a ``bench.legend_*`` phrase."""
    return say([("bench.legend_sep", {})], lookup).join(say([c], lookup) for c in columns) + "."


def bench_legend(results: list[ProfileBench], lookup: Lookup | None = None) -> str:
    """``table_legend`` of bench's table: its settings' columns, then the tests it shows."""
    columns: list[Phrase] = [("bench.legend_ngl", {}), ("bench.legend_kv", {}), ("bench.legend_fa", {})]
    for name, key in (("pp", "bench.legend_pp"), ("tg", "bench.legend_tg")):
        for n in dict.fromkeys(s.n_tokens for r in results if (s := getattr(r, name)) is not None):
            columns.append((key, {"n": n}))
    if any(r.ttft_ms is not None for r in results):
        columns.append(("bench.legend_ttft", {"name": "ttft"}))
    if any(r.ttft_ms is not None and r.chat_ts is not None for r in results):
        columns.append(("bench.legend_chat_tg", {}))
    if any(r.acceptance is not None or (r.model_info.get("speculative", "off") != "off" and r.turns) for r in results):
        columns.append(("bench.legend_accepted", {}))
    return table_legend([*columns, ("bench.legend_tok_s", {})], lookup)


def speed_words(r: float, same: str, faster: str, lookup: Lookup | None = None) -> str:
    """A speed ratio in words: ``same`` within rounding (0.998 said "1.00x slower"), else
    "2.93``faster``" or "1.20x slower" (its figure and "slower" in ``lookup``'s language)."""
    if f"{max(r, 1 / r):.2f}" == "1.00":
        return same
    return f"{local_number(f'{r:.2f}', lookup)}{faster}" if r > 1 else say(
        [("bench.times_slower", {"r": f"{1 / r:.2f}"})], lookup)


def as_fast_words(r: float, lookup: Lookup | None = None) -> str:
    """``speed_words`` as bench says a speed against another's: "as fast", "2.93x as fast",
    "1.20x slower", in ``lookup``'s language."""
    return speed_words(r, say([("bench.as_fast", {})], lookup), say([("bench.x_as_fast", {})], lookup), lookup)


def wait_words(r: float, lookup: Lookup | None = None) -> str:
    """A wait's ratio (TTFT) in words, as ``speed_words`` says speeds: "as long" within rounding,
    "13% less", "48% longer", "2.50x as long" ("0.87x as long" left the reader to work it out);
    a tenth as long or less, as a fraction: "1/400 as long" (a wait near zero, a cached prompt's,
    was "100% less", as if there were none). In ``lookup``'s language."""
    if f"{abs(r - 1):.0%}" == "0%":
        return say([("bench.as_long", {})], lookup)
    if r < 0.1:
        return say([("bench.fraction_as_long", {"n": f"{1 / r:,.0f}"})], lookup)
    return say([("bench.less", {"p": f"{1 - r:.0%}"}) if r < 1 else ("bench.longer", {"p": f"{r - 1:.0%}"}) if r < 2
                else ("bench.times_as_long", {"r": f"{r:.2f}"})], lookup)


def drafting(r: ProfileBench) -> bool:
    return r.model_info.get("speculative", "off") != "off"


def by_chat(results: list[ProfileBench]) -> bool:
    """Whether the sentences under the table say writing by the 'chat tg' rows: where a profile
    drafts (tg is timed without drafting, as llama-bench times it; a chat turn with its drafts) or
    its tg is in doubt (``tg_in_doubt``), and each profile has that row. A draft pair's chat tg of
    85 tok/s sat above "writes about 10 words a second" (its tg's) and "Fastest at writing here:
    not sure" (of two tg's without drafting); a busy PC's tg32 of 1.65 ± 0.64 tok/s beside a chat
    tg of 40.71 said "writes about 0.7 words a second" of a profile that chats at 19."""
    return any(drafting(r) or tg_in_doubt(r) for r in results) and all(r.chat_ts for r in results)


def tg_in_doubt(r: ProfileBench) -> bool:
    """Whether ``r``'s tg is not to be said as its writing speed: its repetitions disagree
    (``NOISY``) or it and the chat turns' writing, the same work, are ``BUSY_APART``."""
    if r.tg is None or not r.tg.avg_ts:
        return False
    return spread(r.tg) > NOISY or busy_apart(r) is not None


def busy_apart(r: ProfileBench) -> float | None:
    """``writing_apart`` of ``r``'s tg and chat tg: how many times apart, where the PC was busy."""
    return writing_apart(r.tg.avg_ts if r.tg is not None else None, r.chat_ts, r.model_info.get("speculative", "off"))


def spread(stat: Any) -> float:
    """A test's repetitions' standard deviation over their mean (0: one run, or none)."""
    return stat.stddev_ts / stat.avg_ts if stat is not None and stat.avg_ts else 0.0


def writing(r: ProfileBench, chat: bool) -> tuple[float, SpeedStat] | None:
    """The writing speed the sentences say of ``r`` (``by_chat``: its chat tg, else its tg) and
    the repetitions that tell it apart from another's."""
    stat = r.chat_stat if chat else r.tg
    speed = r.chat_ts if chat else r.tg.avg_ts if r.tg is not None else None
    return (speed, stat) if stat is not None and speed else None


def plain_words(results: list[ProfileBench], lookup: Lookup | None = None) -> list[str]:
    """What each profile's two figures mean in words a second (in ``lookup``'s language), then
    each profile against the first in words, the figures of one run side by side (a table of
    pp512 and tg128 said nothing to a non-engineer, nor that the default was the slowest). Its
    writing is the table's tg, or its chat tg where a profile drafts (``by_chat``)."""
    chat = by_chat(results)
    lines = []
    for r in results:
        wrote = writing(r, chat)
        read = about_words(r.pp.avg_ts, lookup) if r.pp is not None and r.pp.avg_ts else None
        write = about_words(wrote[0], lookup) if wrote else None
        # its two writing figures far apart (a busy moment in one of them): the range, not one of
        # them picked (tg32 10.83 beside chat tg 159.16 said "writes about 120 words a second" of
        # a model whose chat wrote 43)
        far = busy_apart(r) if r.tg is not None and r.chat_ts else None
        low, high = sorted((r.tg.avg_ts, r.chat_ts)) if far is not None and r.tg is not None and r.chat_ts else (0.0, 0.0)
        if read or write:
            key = "bench.means_both" if read and write else "bench.means_read" if read else "bench.means_write"
            lines.append(say([(key + ("_range" if far is not None and write else ""), {
                "profile": r.profile, "read": read, "write": write, "low": about_words(low, lookup),
                "high": about_words(high, lookup)})], lookup))
    if len(results) < 2:
        return lines
    first = results[0]

    same = say([("bench.as_fast", {})], lookup)

    def ratio(a: tuple[float, SpeedStat] | None, b: tuple[float, SpeedStat] | None, paired: bool) -> str | None:
        if a is None or b is None:
            return None
        words = as_fast_words(a[0] / b[0], lookup)
        return words if words == same or apart(a[1], b[1], paired) else f"{words} ({say([('bench.unsure', {})], lookup)})"

    def reading(r: ProfileBench) -> tuple[float, SpeedStat] | None:
        return (r.pp.avg_ts, r.pp) if r.pp is not None and r.pp.avg_ts else None

    for r in results[1:]:
        in_rounds = r.rounds > 1 and first.rounds > 1  # (repetition i of each in round i)
        read_said, write_said = ratio(reading(r), reading(first), in_rounds), ratio(writing(r, chat), writing(first, chat),
                                                                                  in_rounds)
        drafts = any(drafting(x) for x in (r, first))  # (notes say why)
        key = (("bench.writes_chat" if drafts else "bench.writes_chat_plain") if chat else
               "bench.writes_no_drafts" if drafts else "bench.writes")
        said = [say([("bench.reads", {"how": read_said})], lookup) if read_said else "",
                say([(key, {"how": write_said})], lookup) if write_said else ""]
        if any(said):
            # -r 1 said "writes a reply 4.62x slower" with nothing to doubt it (the same run, twice)
            stats = [x[1] for x in (reading(r), reading(first), writing(r, chat), writing(first, chat)) if x]
            once = min(len(s.samples_ts) for s in stats)
            # (not where both are "as fast": "2.00x as fast" ends so too, and was left without it)
            doubt = (f" ({say([('bench.one_repetition', {})], lookup)})"
                     if once < 2 and {read_said, write_said} - {None, same} else "")
            lines.append(say([("bench.against_first", {
                "name": first.profile, "profile": r.profile, "said": and_word(lookup).join(x for x in said if x),
                "doubt": doubt})], lookup))
    timed = sorted(((r, w) for r in results if (w := writing(r, chat))), key=lambda rw: -rw[1][0])
    best = timed[0][0] if timed else None
    if best is not None and best is not first and len(timed) > 1:
        runner = timed[1][0]  # the next fastest: the one it must be told apart from
        if apart(timed[0][1][1], timed[1][1][1], paired=best.rounds > 1 and runner.rounds > 1):
            lines.append(say([("bench.fastest", {"profile": best.profile,
                                                 "costs": what_it_costs(first, best, lookup)})], lookup))
        else:  # (a draft pair said "1.47x as fast", then "2.82x slower" a minute later, on a busy PC)
            lines.append(say([("bench.fastest_unsure", {"profile": best.profile, "name": runner.profile})], lookup))
    return lines


def and_word(lookup: Lookup | None) -> str:
    """What joins two sayings in ``lookup``'s language: " and ", Turkish " ve " (``list.and``)."""
    return (lookup("list.and") if lookup else None) or " and "

# two-sided 95% points of Student's t by degrees of freedom: with 2 to 5 repetitions a spread is
# itself a guess, and two standard errors called two equal profiles apart 8-18% of the time
T95 = (12.71, 4.30, 3.18, 2.78, 2.57, 2.45, 2.36, 2.31, 2.26, 2.23)


def t95(df: float) -> float:
    if df < 1:
        return T95[0]
    return T95[int(df) - 1] if df <= len(T95) else 2.13 if df <= 15 else 2.06 if df <= 25 else 1.96


def apart(a: SpeedStat, b: SpeedStat, paired: bool = False) -> bool:
    """Whether two tests' speeds differ by more than their repetitions vary (a 95% test on the
    log of their ratio). ``paired``: repetition i of each ran in the same round (profiles run
    in rounds), so each round's ratio is one figure and a busy round slows both alike; else
    Welch's test on the two sets. One repetition each: apart (nothing says otherwise)."""
    xs, ys = a.samples_ts, b.samples_ts
    if not a.avg_ts or not b.avg_ts:
        return True
    if paired and len(xs) == len(ys) >= 2:
        return paired_apart(list(zip(xs, ys, strict=True)))
    if len(xs) < 2 or len(ys) < 2:
        return True
    ea, eb = (a.stddev_ts / a.avg_ts) ** 2 / len(xs), (b.stddev_ts / b.avg_ts) ** 2 / len(ys)
    if ea + eb == 0:
        return a.avg_ts != b.avg_ts
    df = (ea + eb) ** 2 / (ea**2 / (len(xs) - 1) + eb**2 / (len(ys) - 1))  # Welch-Satterthwaite
    return abs(math.log(a.avg_ts / b.avg_ts)) > t95(df) * math.sqrt(ea + eb)


def turn_pairs(a: ReplayResult, b: ReplayResult, figure: Callable[[TurnMetrics], float],
               busy_left_out: bool = False) -> list[tuple[float, float]]:
    """``figure`` of each replayed turn of ``a`` beside the same prompt's in the same round of ``b``;
    ``busy_left_out``: not those of a round either wrote in while the PC was busy (``busy_rounds``)."""
    def by_turn(res: ReplayResult) -> dict[tuple[int, int], float]:
        out = {}
        for k, item in enumerate(res.items):
            out[(item.index, res.round_of(k))] = figure(item.metrics)
        return out

    busy = {r for res in (a, b) for r in res.round_speeds().busy} if busy_left_out else set()
    mine, theirs = by_turn(a), by_turn(b)
    return [(mine[k], theirs[k]) for k in mine if k in theirs and k[1] not in busy]


def paired_apart(pairs: list[tuple[float, float]]) -> bool:
    """Whether the turns of one replay differ from the same turns of another by more than the
    turns' ratios vary: a 95% t-test of their mean log ratio (the same prompt in the same
    round, so a long prompt's slower turn is not taken for noise).
    Under two turns: apart (nothing says otherwise)."""
    logs = [math.log(x / y) for x, y in pairs if x > 0 and y > 0]
    if len(logs) < 2:
        return True
    return abs(statistics.fmean(logs)) > t95(len(logs) - 1) * statistics.stdev(logs) / math.sqrt(len(logs))


def what_it_costs(first: ProfileBench, best: ProfileBench, lookup: Lookup | None = None) -> str:
    """The command that prices the faster profile in quality: the KL divergence on the user's
    own document where both run one model (another quantization, K/V type or offload), the
    example tasks where they run two (a KL divergence between two models is no quantization's
    loss, and one of another vocabulary is refused)."""
    one_model = same_model([r.model_info.get("model_filename") for r in (first, best)])
    command = quality_command([first.ref or first.profile, best.ref or best.profile], one_model, "YOUR_DOCUMENT")
    return say([("bench.costs_quality" if one_model else "bench.another_model", {"command": command})], lookup)


def quality_command(refs: list[str], one_model: bool, documents: str) -> str:
    """The eval that prices these profiles in quality: the KL divergence on ``documents`` where
    they run one model, eval's tasks where they run several."""
    profiles = " ".join(f"-p {shell_word(ref)}" for ref in refs)
    return cli(f"eval {profiles} --kld {documents}" if one_model else f"eval {profiles}")


def same_model(files: list[Path | str | None]) -> bool:
    """Whether these model files hold one model (the same file, or its other quantizations): the
    same architecture, parameter count and vocabulary (its token texts), read from their headers.
    Two fine-tunes of one size with other token texts are two models; a model on a server (None)
    or a file that cannot be read is not known to be the same."""
    from workstation.core.errors import WorkstationError
    from workstation.core.model_info import read_model_info

    models: set[tuple[str, int, int, str]] = set()
    for file in files:
        if not file:
            return False
        try:
            info = read_model_info(Path(file), check=False)
        except (WorkstationError, OSError):
            return False
        models.add((info.architecture, info.parameter_count, info.n_vocab, info.tokenizer_fingerprint))
    return len(models) == 1


def document_costs(profiles: list[Profile], documents: list[Path], lookup: Lookup | None = None) -> str:
    """Under ``bench --document``'s speeds, where the rest of the choice is measured: the memory
    each needs and what its answers lose, by ``eval --kld`` on the same documents (one model's
    quantizations, K/V types or speculation), or by eval's tasks (different models)."""
    from workstation.core.errors import WorkstationError
    from workstation.core.profile_lookup import model_file

    files: list[Path | str | None] = []
    for profile in profiles:
        try:
            files.append(model_file(profile) or None)  # ("": a server's model)
        except (WorkstationError, OSError):
            files.append(None)
    one_model = same_model(files)
    command = quality_command([p.ref for p in profiles], one_model, " ".join(shell_word(str(p)) for p in documents))
    return say([("bench.speeds_one_model" if one_model else "bench.speeds_models", {"command": command})], lookup)


def drafting_notes(results: list[ProfileBench], lookup: Lookup | None = None) -> list[str]:
    """Why a speculative profile drafted nothing, or stopped drafting: its adaptive policy
    drafts only where a draft is expected to pay, and switches a draft model off for the
    session where even a draft always accepted cannot."""
    notes = []
    if any(r.model_info.get("speculative", "off") != "off" for r in results) and any(r.tg for r in results):
        notes.append(say([("bench.tg_without_drafts", {})], lookup))
    for r in results:
        if r.drafting_off:  # (the engine's reason, in English: its figures are an engineer's)
            notes.append(say([("bench.drafting_off", {"profile": r.profile, "reason": r.drafting_off})], lookup))
        elif r.acceptance is None and r.model_info.get("speculative", "off") != "off" and r.turns:
            notes.append(say([("bench.drafted_nothing", {"profile": r.profile})], lookup))
    return notes


RUN_AS = ("model_filename", "n_gpu_layers", "n_threads", "type_k", "type_v", "flash_attn", "speculative", "n_ctx",
          "n_batch")  # what llama.cpp was given: two profiles alike in all of it ran the same


def same_run_notes(results: list[ProfileBench], lookup: Lookup | None = None) -> list[str]:
    """A profile whose setting changed nothing on this PC ("gpu_layers=all" with no GPU llama.cpp
    can use ran on the CPU, as the first did): said so, or its figures read as the setting's cost
    ("writes a reply 4.62x slower" for the same run twice)."""
    notes = []
    for r in results[1:]:
        first = next((o for o in results if o is not r and "model_filename" in o.model_info
                      and all(o.model_info.get(k) == r.model_info.get(k) for k in RUN_AS)), None)
        # (a speculation's mode alone is in RUN_AS, not its draft model or settings, which change the
        # 'chat tg' row: two draft models were said to have "ran exactly as" each other)
        if first is None or results.index(first) > results.index(r) or r.model_info.get("speculative", "off") != "off":
            continue
        mi = r.model_info
        notes.append(say([("bench.ran_as", {"profile": r.profile, "name": first.profile, "layers": mi["n_gpu_layers"],
                                            "threads": mi["n_threads"], "k": mi["type_k"], "v": mi["type_v"]})], lookup))
    return notes


NOISY = 0.15  # repetitions further apart than this (standard deviation over the mean) are not to be trusted


def spread_notes(results: list[ProfileBench], lookup: Lookup | None = None) -> list[str]:
    """A sentence under the table for each test whose repetitions disagree: another program
    took the CPU meanwhile, and the figures (each profile's, even when profiles ran in rounds)
    are less sure than they look. Where a test ran once, that one run cannot tell (said once);
    and where tg and the chat turns' writing, the same work, are ``BUSY_APART`` in one run
    (tg128 6.76 beside chat tg 65.86 tok/s, -r 1), the PC was busy (in ``lookup``'s language)."""
    notes = []
    for r in results:
        for name, stat in (("pp", r.pp), ("tg", r.tg)):
            if spread(stat) <= NOISY:
                continue
            others = [spread(getattr(o, name)) for o in results if o is not r and o.rounds > 1]
            why = (("bench.spread_busy", {}) if not others or max(others) > NOISY else
                   ("bench.spread_own", {}))  # in the same rounds the others held steady: no other program explains it
            notes.append(say([("bench.spread", {"profile": r.profile, "test": f"{name}{stat.n_tokens}",
                                                "spread": f"{spread(stat):.0%}", "why": why})], lookup))
        chat = r.chat_ts
        # (said beside a tg whose repetitions disagree too: tg32 12.35 ± 3.78 beside chat tg 48.58 said only the
        # spread, and fit then went by the 12)
        if r.tg is not None and chat is not None:
            times = busy_apart(r)
            if times is not None:
                notes.append(say([("bench.busy", {"profile": r.profile, "test": f"tg{r.tg.n_tokens}",
                                                  "tg": f"{r.tg.avg_ts:.2f}", "chat": f"{chat:.2f}",
                                                  "times": f"{times:.1f}"})], lookup))
    stats = [s for r in results for s in (r.pp, r.tg) if s is not None and s.samples_ns]
    if any(len(s.samples_ts) < 2 for s in stats) or any(len(r.turns) == 1 for r in results):
        notes.append(say([("bench.once", {})], lookup))
    return notes


def rounds_figure(speeds: RoundSpeeds, lookup: Lookup | None = None) -> str:
    """A profile's writing speed as judged (``RoundSpeeds``: the median of its rounds, busy ones
    left out), with the spread of those rounds as llama-bench says its repetitions' ("38.7 ± 0.4"),
    in ``lookup``'s writing; "-" where nothing was timed."""
    if speeds.median is None:
        return "-"
    spread = f" ± {speeds.stddev:.1f}" if len(speeds.kept) > 1 else ""
    return local_numbers(f"{speeds.median:.1f}{spread}", lookup)


LENGTHS_APART = 2.0  # replies whose tokens differ by more than this many times: their speeds are not compared
REPLAY_COLUMNS: list[Phrase] = [("bench.legend_ttft", {"name": "TTFT"}), ("bench.legend_tok_s", {}),
                                 ("bench.legend_prompt_tok", {}), ("bench.legend_cached", {})]
REPLAY_WORDS = table_legend(REPLAY_COLUMNS)  # what the replay table's columns are (in English)


SAME_SPEED = 1.05  # two writing speeds within this of each other are "about as fast": a PC's drift between rounds


def format_replay(replays: list[ReplayResult], differences: list[str] | None = None,
                  lookup: Lookup | None = None) -> str:
    """Each profile's table and figures; with several, each against the first (tok/s and TTFT
    median as ratios, measured in the same rounds), and the sampling they differ in. Its
    sentences in ``lookup``'s language; the table's columns as they are (llama-bench's terms).
    bench --document's runs (``ReplayResult.documents``) say documents, not prompts; with rounds,
    a column numbers them (each round's rows read "1" in the "#" column, the prompt's number)."""
    parts = []
    documents = any(r.documents for r in replays)
    rounds = max((r.rounds for r in replays), default=1)
    by_round = ["round"] if rounds > 1 else []
    for res in replays:
        rows = []
        for k, item in enumerate(res.items):
            m = item.metrics
            preview = " ".join(item.prompt.split())
            preview = shortened(preview, 41)
            acc = f"{m.draft_n_accepted}/{m.draft_n}" if m.draft_n else "-"
            rows.append([str(item.index), *([str(res.round_of(k) + 1)] if by_round else []), preview,
                         str(m.prompt_n), str(m.cache_n), f"{m.ttft_ms:.0f}", str(m.predicted_n),
                         f"{m.predicted_per_second:.1f}", acc])
        s = res.summary()
        parts.append(f"{res.profile}:")
        shift = len(by_round)
        parts.append(text_table(["#", *by_round, "document" if documents else "prompt", "prompt tok", "cached",
                                 "TTFT ms", "tokens", "tok/s", "accepted"],
                                rows, {0, *range(1, 1 + shift), *(c + shift for c in (2, 3, 4, 5, 6))}))
        acc = (("bench.replay_accepted", {"p": f"{s['acceptance'] * 100:.1f}%"}) if s["acceptance"] is not None
               else [])
        speeds = res.round_speeds()
        kind = "documents" if documents else "prompts"
        prompts = ((f"bench.{kind}", {"n": s["prompts"]}) if s["turns"] == s["prompts"] else
                   (f"bench.{kind}_rounds", {"n": s["prompts"], "rounds": s["turns"] // s["prompts"]}))
        parts.append(say([("bench.replay_summary", {
            "prompts": prompts, "mean": f"{s['ttft_ms_mean']:.0f}", "median": f"{s['ttft_ms_median']:.0f}",
            "p90": f"{s['ttft_ms_p90']:.0f}", "n": s["predicted_n"], "accepted": acc,
            # in words a second, as fit and F5 say it, its tok/s beside (bench said "6.4 tok/s" alone)
            "writing": writing_said(speeds.median, lookup, figure=rounds_figure(speeds, lookup))
            if speeds.median is not None else "-"})], lookup))
        for r in speeds.busy:  # (a round of 3.5 tok/s beside one of 38.7 made the verdict "6.02x slower")
            parts.append(say([("bench.busy_round", {"r": r + 1, "profile": res.profile,
                                                    "tps": f"{speeds.rates[r]:.1f}"})], lookup))
        parts[-1] += "\n"
    if replays:
        parts.append(table_legend(REPLAY_COLUMNS, lookup))
    first = replays[0].summary() if replays else {}
    compared = False
    for res in replays[1:]:
        s = res.summary()
        said, unsure = [], []
        lengths = (first.get("predicted_n") or 0, s["predicted_n"] or 0)
        # replies over LENGTHS_APART apart in length: their writing speeds are not compared (a 12-token
        # reply beside a 128-token one was said to write "1.46x slower")
        unlike = min(lengths) * LENGTHS_APART < max(lengths)
        if unlike:
            said.append(say([("bench.replay_lengths", {"n": f"{lengths[1]:,}", "first": f"{lengths[0]:,}",
                                                         "name": replays[0].profile})], lookup))
        for key, figure, words in (
                ("predicted_per_second", lambda m: m.predicted_per_second,
                 lambda r: say([("bench.replay_writes", {"how": replay_speed_words(r, lookup), "r": f"{r:.2f}"})],
                               lookup)),
                ("ttft_ms_median", lambda m: m.ttft_ms,
                 lambda r: say([("bench.replay_waits", {"how": wait_words(r, lookup)})], lookup))):
            if s[key] and first.get(key) and not (unlike and key == "predicted_per_second"):
                ratio = s[key] / first[key]
                pairs = turn_pairs(res, replays[0], figure, busy_left_out=key == "predicted_per_second")
                # one round has no spread to judge by: said once, under the comparisons (bench.one_round)
                near = max(ratio, 1 / ratio) < SAME_SPEED if key == "predicted_per_second" else f"{ratio:.2f}" == "1.00"
                if rounds > 1 and not near and not paired_apart(pairs):
                    unsure.append(len(said))
                said.append(words(ratio))
        if len(unsure) == 1:
            said[unsure[0]] += f" ({say([('bench.unsure_rounds', {})], lookup)})"
        if said:  # (a busy moment read "0.04x its tok/s" with nothing to say it was one)
            compared = True
            both = f" ({say([('bench.unsure_both', {})], lookup)})" if len(unsure) > 1 else ""  # (said once)
            parts.append(say([("bench.replay_against", {"profile": res.profile, "name": replays[0].profile,
                                                        "said": and_word(lookup).join(said) + both})], lookup))
    if compared and rounds == 1:  # (it said "one turn each…" after every comparison, "not sure" after each figure)
        parts.append(say([("bench.one_round", {})], lookup))
    if differences:  # (the settings by their names, as a profile writes them)
        parts.append(say([("bench.sample_differently", {"what": "; ".join(differences)})], lookup))
    return "\n".join(parts).rstrip()


def replay_speed_words(r: float, lookup: Lookup | None = None) -> str:
    """A replay's writing speed against another's in words: "about as fast" within ``SAME_SPEED``
    (a PC's drift: "1.01x as fast" was said of two alike), else as ``as_fast_words`` says it."""
    if max(r, 1 / r) < SAME_SPEED:
        return say([("bench.about_as_fast", {})], lookup)
    return as_fast_words(r, lookup)
