"""Does rendering slow generation? Decode tok/s inside the TUI over the engine alone.

The app runs headless (``run_test``) with its engine in a child process (as in real use),
streaming each reply into the chat's Markdown view with the dashboard's sampling on. The
bare side is ``Engine`` in this process with no UI. Both run the same turn (same prompt,
greedy, same max tokens), interleaved, and the medians are compared. Goal: >= 0.95. Rounds
alternate which side goes first (this machine's speed drifts within seconds).

The bench waits for the end of a turn with ``asyncio.sleep``, not ``pilot.pause``: a pause
makes every widget of the screen process a message and repaints, 20 times a second, which is
the test harness's cost, not the app's (it took 0.25 s of CPU per 3-second turn).

With ``--dashboard`` each app turn streams while the dashboard (F5) is open, as a user
watching the figures sees it: its charts redraw (once a second beside an engine on every core).

    .venv/bin/python bench/tui_overhead.py [--runs 5] [--tokens 200] [--threads 2] [--dashboard] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from workstation.core.engine import Engine  # noqa: E402
from workstation.core.packaged_models import ensure  # noqa: E402
from workstation.core.profile_check import profile_from_dict  # noqa: E402

PROMPT = "Write a long story about a lighthouse keeper who finds a message in a bottle."


def _cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _bare_turn(bare: Engine) -> float:
    bare.reset()
    return bare.run_chat([{"role": "user", "content": PROMPT}]).metrics.predicted_per_second


async def measure(args: argparse.Namespace) -> dict[str, object]:
    from workstation.tui.app import WorkstationApp

    model = ensure("smollm2-135m-instruct-q4_1")
    profile = profile_from_dict(
        {
            "name": "bench",
            "model": str(model),
            "context": 2048,
            "threads": args.threads,
            "gpu_layers": 0,
            "sampling": {"temperature": 0.0, "max_tokens": args.tokens, "seed": 1, "repeat_penalty": 1.0},
            "system_prompt": "",
        },
        "<bench>",
    )
    bare = Engine(profile)
    app = WorkstationApp(profile, sample_system=True, language="en")
    in_app: list[float] = []
    alone: list[float] = []
    tokens: list[int] = []
    ui_cpu: list[float] = []
    decode_cpu: list[float] = []
    async with app.run_test(size=(100, 30)) as pilot:
        while app.engine is None:
            if app.loading is None:
                raise SystemExit("the app could not load the model")
            await pilot.pause(0.1)
        if args.dashboard:
            app.action_dashboard()  # F5, open through every round, as a user watching it
            await pilot.pause(0.5)
        for i in range(args.runs):
            # ABBA: the engine alone first in even rounds, the app first in odd ones, so a
            # machine that slows down (or speeds up) through a round favours neither side
            if i % 2 == 0:
                alone.append(_bare_turn(bare))
            await app.action_new_conversation()
            cpu0 = _cpu_s()
            await app.send(PROMPT)
            # this process is the app (the engine is in its child): its CPU is the UI's cost.
            # While decoding: from the first text on screen to the last (the reply's view is let
            # go when the turn ends, before it is rendered as Markdown).
            first: tuple[float, float] | None = None
            last: tuple[float, float] | None = None
            while app.generating:
                if app.live_tokens and app.reply_view is not None:
                    last = (_cpu_s(), time.perf_counter())
                    first = first or last
                await asyncio.sleep(0.1)
            assert app.last_metrics is not None
            ui_cpu.append((_cpu_s() - cpu0) / (app.last_metrics.total_ms / 1000))
            if first and last and last[1] > first[1]:
                decode_cpu.append((last[0] - first[0]) / (last[1] - first[1]))
            in_app.append(app.last_metrics.predicted_per_second)
            tokens.append(app.last_metrics.predicted_n)
            if i % 2 == 1:
                alone.append(_bare_turn(bare))
    bare.close()
    med_app, med_alone = statistics.median(in_app), statistics.median(alone)
    return {
        "runs": args.runs,
        "threads": args.threads,
        "dashboard": args.dashboard,
        "tokens": tokens,
        "app_tok_s": in_app,
        "engine_tok_s": alone,
        "app_median": med_app,
        "engine_median": med_alone,
        "ratio": med_app / med_alone if med_alone else 0.0,
        # each app turn over the engine turn of its round: less sensitive to the machine's drift
        "ui_cpu_share": statistics.median(ui_cpu),
        "ui_cpu_share_decoding": statistics.median(decode_cpu) if decode_cpu else 0.0,
        "paired_ratio": statistics.median([a / b for a, b in zip(in_app, alone, strict=True) if b]),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--tokens", type=int, default=200)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--dashboard", action="store_true", help="the dashboard (F5) open while each reply streams")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    os.environ.setdefault("WORKSTATION_DATA", tempfile.mkdtemp(prefix="tui-bench-"))
    result = asyncio.run(measure(args))
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        where = ", the dashboard (F5) open" if args.dashboard else ""
        print(f"decode tok/s, median of {args.runs} interleaved turns of up to {args.tokens} tokens "
              f"({args.threads} threads{where}):")
        print(f"  engine alone      {result['engine_median']:.1f}")
        print(f"  inside the TUI    {result['app_median']:.1f}")
        print(f"  ratio TUI/engine  {result['ratio']:.3f}  (goal >= 0.95)")
        print(f"  paired ratio      {result['paired_ratio']:.3f}  (median over rounds of app turn / engine turn, order alternating)")
        print(f"  UI CPU            {result['ui_cpu_share'] * 100:.1f}% of one core over a turn, "
              f"{result['ui_cpu_share_decoding'] * 100:.1f}% while it decodes "
              "(the app's process; the engine is in its child)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
