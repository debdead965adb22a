"""threads: auto against fixed thread counts while other programs keep cores busy.

With 0, 1 and 2 cores kept busy by plain busy loops in other processes (as a browser or a
spreadsheet recalculating would), each configuration runs the same chat turns: ``threads: auto``
(the engine picks its decode threads from the load, core/thread_policy.py) and every fixed count
from 1 to the physical cores. Configurations alternate within each round. Printed per load:
decode and prompt tok/s (medians), auto over the best fixed count, and the decision log.

Goal (issue): auto >= 0.9x of the best fixed count at every load, and >= 0.97x of all cores
when idle. Run it on an otherwise quiet machine: the load it measures is the machine's.
``--fresh`` loads a new engine for every turn, as a one-shot ``workstation chat`` does: its first
turn must already give way (the load it loaded in is its window).

    .venv/bin/python bench/threads.py [--rounds 3] [--tokens 128] [--loads 0,1,2] [--fresh]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from workstation.core.engine import Engine  # noqa: E402
from workstation.core.hardware import count_physical_cores  # noqa: E402
from workstation.core.profile_check import profile_from_dict  # noqa: E402
from workstation.core.profiles import Sampling  # noqa: E402

PROMPT = ("Here is a note from a colleague. " * 30) + "Write a friendly reply in a few sentences."


def profile(threads: int | str):  # noqa: ANN201
    return profile_from_dict(
        {"name": f"threads-{threads}", "model": "smollm2-135m-instruct-q4_1", "context": 2048,
         "threads": threads, "gpu_layers": 0, "system_prompt": ""},
        "<bench>",
    )


def turn(engine: Engine, tokens: int, r: int) -> tuple[float, float, str]:
    engine.reset()
    sampling = Sampling(temperature=0.0, max_tokens=tokens, repeat_penalty=1.0, ignore_eos=True)
    m = engine.run_chat([{"role": "user", "content": f"({r}) {PROMPT}"}], sampling).metrics
    return m.predicted_per_second, m.prompt_per_second, f"{m.n_threads} ({m.threads_reason}, others {m.cpu_others:.1f})"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--tokens", type=int, default=128)
    ap.add_argument("--loads", default="0,1,2", help="busy cores to try")
    ap.add_argument("--fresh", action="store_true", help="a new engine for every turn (a one-shot chat)")
    args = ap.parse_args()
    physical = count_physical_cores()
    names: list[int | str] = ["auto", *range(1, physical + 1)]
    engines = {} if args.fresh else {n: Engine(profile(n)) for n in names}

    def one_turn(n: int | str, r: int) -> tuple[float, float, str]:
        if not args.fresh:
            return turn(engines[n], args.tokens, r)
        with Engine(profile(n)) as engine:  # loaded beside the busy loops, then one turn
            return turn(engine, args.tokens, r)

    print(f"{physical} physical cores; {args.tokens} tokens a turn, {args.rounds} rounds per load"
          + ("; a fresh engine every turn" if args.fresh else ""))
    for load in (int(x) for x in args.loads.split(",")):
        loops = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(load)]
        try:
            time.sleep(1.0)
            decode: dict[int | str, list[float]] = {n: [] for n in names}
            prompt: dict[int | str, list[float]] = {n: [] for n in names}
            decisions: list[str] = []
            for r in range(args.rounds):
                order = names[r % len(names):] + names[: r % len(names)]
                for n in order:
                    d, p, note = one_turn(n, r)
                    decode[n].append(d)
                    prompt[n].append(p)
                    if n == "auto":
                        decisions.append(note)
        finally:
            for proc in loops:
                proc.kill()
                proc.wait()
        med_d = {n: statistics.median(v) for n, v in decode.items()}
        med_p = {n: statistics.median(v) for n, v in prompt.items()}
        fixed = [n for n in names if n != "auto"]
        best_d = max(fixed, key=lambda n: med_d[n])
        best_p = max(fixed, key=lambda n: med_p[n])
        print(f"\n{load} busy core(s):")
        for n in names:
            print(f"  threads {n!s:>4}: decode {med_d[n]:6.1f} tok/s   prompt {med_p[n]:6.1f} tok/s")
        print(f"  auto / best fixed ({best_d}) decode: {med_d['auto'] / med_d[best_d]:.2f}x   "
              f"prompt (best {best_p}): {med_p['auto'] / med_p[best_p]:.2f}x")
        if load == 0:
            print(f"  auto / all cores, idle: decode {med_d['auto'] / med_d[physical]:.2f}x")
        print(f"  auto's decisions (decode threads at the end of each turn): {'; '.join(decisions)}")
    gov = engines["auto"].core.governor if "auto" in engines else None
    if gov is not None:
        print("\ndecision log: " + "; ".join(f"{time.strftime('%H:%M:%S', time.localtime(t))} "
                                             f"{c.describe()}" for t, c in gov.log))
    for eng in engines.values():
        eng.close()


if __name__ == "__main__":
    main()
