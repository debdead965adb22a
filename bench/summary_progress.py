"""What the live progress inside a summary's parts costs: the same document summarized through
the app's engine process with progress asked (how far each part's prompt is read, each token of
its summary: ``run_many``'s ``on_step``, a pipe message each) and without, in alternating
rounds of one run, so that the machine's drift falls on both alike.

Prints the median wall time of each and their ratio (with over without; 1.00 is free).

Usage: .venv/bin/python bench/summary_progress.py [-p PROFILE] [--rounds N] [FILE] [--json]
Without FILE it summarizes the first 30,000 characters of CPython's LICENSE.txt.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from workstation.core.documents import Document  # noqa: E402
from workstation.core.engine_process import EngineProcess  # noqa: E402
from workstation.core.profile_lookup import load_profile  # noqa: E402
from workstation.core.summarize import SummaryProgress, summarize_document  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("file", nargs="?")
    ap.add_argument("-p", "--profile", default="office-cpu")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if args.file:
        text = Path(args.file).read_text(encoding="utf-8")
    else:
        text = (Path(os.__file__).parent / "LICENSE.txt").read_text(encoding="utf-8")[:30_000]
    document = Document(source="bench.txt", kind="text", text=text)
    profile = load_profile(args.profile)
    times: dict[str, list[float]] = {"with": [], "without": []}
    steps = 0
    with EngineProcess(profile) as engine:
        summarize_document(engine, document, profile)  # a warm-up: the model's pages, the first cells
        for k in range(args.rounds):
            for kind in (("with", "without") if k % 2 == 0 else ("without", "with")):
                seen: list[SummaryProgress] = []
                engine.reset()  # each run reads the document anew (no cells left from the last)
                t0 = time.perf_counter()
                summarize_document(engine, document, profile, on_progress=seen.append if kind == "with" else None)
                times[kind].append(time.perf_counter() - t0)
                steps = max(steps, sum(1 for p in seen if p.inside_part))
    with_s, without_s = statistics.median(times["with"]), statistics.median(times["without"])
    result = {"profile": profile.key, "rounds": args.rounds, "with_s": with_s, "without_s": without_s,
              "ratio": with_s / without_s, "progress_reports_inside_parts": steps}
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(f"{profile.key}: summary with live progress {with_s:.1f} s, without {without_s:.1f} s "
              f"(median of {args.rounds}); ratio {result['ratio']:.3f} ({steps} reports inside parts)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
