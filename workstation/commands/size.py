"""``workstation size WORKLOAD [--json] [-o report.md] [--measure]``: size the office.

From a workload (people, chats per hour, prompt and reply lengths, documents, latency and
quality wanted) to ranked options: which GPU, which model and quantization, which K/V type,
how many slots, and the speed each person gets. ``--measure`` first runs the short benches
that calibrate this machine (with a progress bar and an ETA).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from workstation.commands import add_lang_arg, print_json, profile_ref, texts_of
from workstation.commands.parser import threads
from workstation.commands.progress_bar import ProgressBar
from workstation.core.errors import ModelFileError, WorkstationError
from workstation.core.invocation import cli

if TYPE_CHECKING:
    from workstation.core.phrases import Lookup
    from workstation.core.profiles import Profile


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "size",
        help="from a workload to a machine, model and quantization, with expected speeds",
        description="Rank every candidate GPU (and this machine) x catalog model x quantization x "
        "K/V type x slots for a workload: fits or not, tokens/s per person and time to first token "
        "at the busy hour, documents per night, quality where eval measured it. WORKLOAD is a YAML "
        "file or a shipped one by name (office-20, in workstation/data/workloads/: copy it to make your "
        "own); --people N sizes it for an office of N people.",
    )
    p.add_argument("workload", nargs="?", metavar="WORKLOAD", help="workload YAML, or a shipped name (office-20)")
    p.add_argument("--people", type=int, metavar="N",
                   help="the number of people in the office: the workload (office-20 where none is named) for N")
    p.add_argument("--json", action="store_true", help="print the ranking as JSON")
    p.add_argument("-o", "--output", metavar="REPORT.md",
                   help="write a Markdown report with PNG charts (in REPORT-charts/)")
    p.add_argument("--top", type=int, metavar="N", help="options listed (default 10; 15 in the -o report)")
    p.add_argument("--measure", action="store_true",
                   help="first measure this machine (decode with 1, 2 and 4 slots, prompt speed, "
                   "memory at 3 contexts x 3 K/V types) for both packaged models")
    p.add_argument("-t", "--threads", type=threads, metavar="N",
                   help="threads for --measure (default: the physical cores)")
    add_lang_arg(p)  # its answer, headline and table's words (it was refused: "--lang is not an option")
    p.set_defaults(func=run)


def _packaged_paths() -> list[Path]:
    from workstation.core.catalog import resolve_model_path
    from workstation.core.packaged_models import PACKAGED_MODELS

    paths = []
    for name in PACKAGED_MODELS:
        path = resolve_model_path(name)
        if not path.exists():
            raise ModelFileError(f"The packaged model {name} is not installed; run '{cli(f'models pull {name}')}'.")
        paths.append(path)
    return paths


def served_profile(ref: str | None) -> Profile | None:
    """The profile 'serve' would run here (-p, else the default), for the slots it serves with
    and the model it runs; None where it cannot be read (the sizing goes by serve's defaults)."""
    from workstation.core.profile_lookup import load_profile

    try:
        return load_profile(ref)
    except WorkstationError:
        return None


def run(args: argparse.Namespace) -> int:
    from workstation.core import calibration, hardware, memory_check
    from workstation.core.sizing import candidate_machines, local_machines, size
    from workstation.core.workload import load_workload

    if args.workload is None and args.people is None and not args.measure:
        raise WorkstationError(said=[("size.nothing", {"command": cli("size --people 6")})])
    if args.top is not None and args.top < 1:  # (bench's sentence for its own options; --threads: the parser's)
        raise WorkstationError(said=[("bench.at_least", {"name": "--top", "low": 1, "value": args.top})])
    workload = load_workload(args.workload, args.people) if args.workload or args.people is not None else None
    if args.measure:
        bar = ProgressBar()
        try:
            calibration.measure(_packaged_paths(), threads=args.threads, progress=bar)
        finally:
            bar.finish()
    speed, cal = calibration.this_machine()
    if workload is None:  # --measure alone: what was measured and how far off the model is
        if args.json:
            print_json({"calibration": calibration.for_json(cal), "memory_estimates_here": memory_check.history_summary()})
        else:
            print(format_calibration(cal, lookup=texts_of(args).get))
            print(memory_check.describe_history(memory_check.history_summary(), texts_of(args).get))
        return 0
    report = hardware.report()
    local = local_machines(speed, report.gpus, report.memory.available, report.memory.total,
                           report.cpu_bandwidth_gbps)
    result = size(workload, candidate_machines(workload, local), cal, memory_check.history_summary(),
                  hardware.is_laptop(), served_profile(profile_ref(args)))
    if args.output is not None:
        from workstation.core.phrases import say
        from workstation.core.size_report import markdown_report

        lookup = texts_of(argparse.Namespace(lang=getattr(args, "lang", None))).get  # (its words, --json or not)
        written = markdown_report(result, args.output, args.top or 15, lookup)  # as typed: "reports/" is a folder
        print(say([("size.wrote", {"paths": ", ".join(str(p) for p in written)})], lookup), file=sys.stderr)
    if args.json:
        print_json(result.to_dict(top=args.top or 10))
    else:
        from workstation.core.size_report import text_report

        if args.measure and cal.get("checks"):  # (what the figures mean: the report's own line says it once)
            print(format_calibration(cal, said=False, lookup=texts_of(args).get) + "\n")
        print(text_report(result, args.top or 10, texts_of(args).get))
    return 0 if result.meeting else 2


def format_calibration(cal: dict, said: bool = True, lookup: Lookup | None = None) -> str:
    """What --measure measured beside each prediction; ``said``: with the line on what the speed
    model goes by (not where the report under it says it); in ``lookup``'s language."""
    from workstation.core.calibration import source_said
    from workstation.core.phrases import local_number, say

    lines = [say([("size.speed_model", {"source": source_said(cal)})], lookup)] if said else []
    if cal.get("checks"):
        header = [say([(f"size.col.{c}", {})], lookup)
                  for c in ("model", "slots", "measured", "predicted", "error")]
        rows = [[c["model"], str(c["slots"]), local_number(f"{c['measured_tps']:.1f}", lookup),
                 local_number(f"{c['predicted_tps']:.1f}", lookup), local_number(f"{c['error_pct']:+5.1f}%", lookup)]
                for c in cal["checks"]]
        # (the widths as they were in English, wider for a longer word: model 30, slots 5, measured 14, predicted 20)
        widths = [max(least, len(h)) for least, h in zip((30, 5, 14, 20), header, strict=False)]

        def line(cells: list[str]) -> str:
            return (f"{cells[0]:<{widths[0]}} {cells[1]:>{widths[1]}}  {cells[2]:>{widths[2]}}  "
                    f"{cells[3]:>{widths[3]}}  {cells[4]}")

        lines += [line(header), *(line(r) for r in rows)]
        lines.append(say([("size.mean_error", {"off": f"{cal['mean_abs_error_pct']}%"})], lookup))
    return "\n".join(lines)
