"""How long a generating client stalls while another client's saved KV state is restored.

serve keeps long prompts' cells on disk (core/kv_state.py). Reading and checking such a file
(hundreds of MB for a few thousand tokens) used to happen in the decode thread, so every other
slot stopped meanwhile. Now a reader thread reads it while the other slots decode; only
llama.cpp's own ``llama_state_seq_set_data`` runs in the decode thread.

One saved state of about ``--tokens`` tokens, then ``--rounds`` rounds alternating two ways in
fresh 2-slot schedulers: slot A generates; after its 20th token B arrives with a prompt the state
covers. Printed per way: A's longest gap between two tokens while B was being restored and
prefilled, A's median gap, and B's TTFT; and the longest gap's ratio, reader thread over decode
thread (the old way, kept here by making the decode thread wait for the read).

    .venv/bin/python bench/restore_stall.py [--tokens 3500] [--rounds 3] [--threads 2]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from workstation.core.catalog import resolve_model_path  # noqa: E402
from workstation.core.events import SchedulerEvent, TokenDelta, TurnFinished  # noqa: E402
from workstation.core.kv_state import KvStateStore  # noqa: E402
from workstation.core.profile_check import profile_from_dict  # noqa: E402
from workstation.core.profiles import Sampling  # noqa: E402
from workstation.core.scheduler import Scheduler  # noqa: E402
from workstation.core.slots import Slot  # noqa: E402

PARAGRAPH = ("The office moves to the third floor in May. Desks are assigned by team, printers need a "
             "staff card, and the kitchen is shared with the legal department until June. ")
GREEDY = Sampling(temperature=0.0, max_tokens=8, repeat_penalty=1.0)


class DecodeThreadReads(Scheduler):
    """The old way: the decode thread waits for the file before any slot decodes again."""

    def _others_have_work(self, slot: Slot) -> bool:
        return False


def one_round(cls: type[Scheduler], profile: Any, store: KvStateStore, long_prompt: list[int]) -> dict[str, float]:
    times: list[float] = []
    done = threading.Event()
    b_done = threading.Event()
    b_times: dict[str, float] = {}

    def sink_a(event: SchedulerEvent) -> None:
        if isinstance(event, TokenDelta):
            times.append(time.perf_counter())
        else:
            done.set()

    def sink_b(event: SchedulerEvent) -> None:
        if isinstance(event, TokenDelta) and "first" not in b_times:
            b_times["first"] = time.perf_counter()
        if not isinstance(event, TokenDelta):
            b_times["end"] = time.perf_counter()
            b_times["restored"] = float(event.metrics.restored_n) if isinstance(event, TurnFinished) else -1.0
            b_done.set()

    with cls(profile, n_parallel=2, kv_store=store) as sched:
        count = sched.chat_tokens([{"role": "user", "content": "Count from one to two hundred in words."}])
        sched.submit(count, Sampling(temperature=0.0, max_tokens=160, repeat_penalty=1.0), sink_a, ignore_eos=True)
        while len(times) < 20:
            time.sleep(0.005)
        t_b = time.perf_counter()
        sched.submit(long_prompt, GREEDY, sink_b)
        b_done.wait(600)
        done.wait(600)
    pairs = list(zip(times, times[1:], strict=False))
    gaps = [b - a for a, b in pairs]
    # the gaps that overlap B's wait for its first token (restore and prefill)
    stall = max((b - a for a, b in pairs if b >= t_b and a <= b_times["first"]), default=0.0)
    return {"stall_ms": stall * 1000, "median_gap_ms": statistics.median(gaps) * 1000,
            "b_ttft_ms": (b_times["first"] - t_b) * 1000, "restored": b_times["restored"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tokens", type=int, default=3500)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    path = resolve_model_path("smollm2-135m-instruct-q4_1")
    profile = profile_from_dict({"name": "stall", "model": str(path), "context": args.tokens + 600,
                                 "threads": args.threads, "kv_cache": {"k": "f16", "v": "f16"}})
    store = KvStateStore(Path(tempfile.mkdtemp(prefix="restore-stall-")))
    with Scheduler(profile, n_parallel=2, kv_store=store) as first:
        text = ""
        while len(first.text_tokens(text)) < args.tokens:
            text += PARAGRAPH
        notes = first.chat_tokens([{"role": "user", "content": text + "\n\nWhere does the office move?"}])
        long_prompt = first.chat_tokens([{"role": "user", "content": text + "\n\nWho shares the kitchen?"}])
        done = threading.Event()
        first.submit(notes, GREEDY, lambda e: done.set() if not isinstance(e, TokenDelta) else None)
        done.wait(1200)
    (state,) = store.entries()
    print(f"saved state: {len(state.tokens)} tokens, {state.n_bytes / 2**20:.1f} MiB (f16 K/V)")
    results: dict[str, list[dict[str, float]]] = {"reader thread": [], "decode thread": []}
    for r in range(args.rounds):
        order = [("reader thread", Scheduler), ("decode thread", DecodeThreadReads)]
        for name, cls in order if r % 2 == 0 else order[::-1]:
            results[name].append(one_round(cls, profile, store, long_prompt))
    for name, rows in results.items():
        med = {k: statistics.median(row[k] for row in rows) for k in rows[0]}
        print(f"{name:>14}: A's longest gap {med['stall_ms']:7.1f} ms, A's median gap {med['median_gap_ms']:5.1f} ms, "
              f"B's TTFT {med['b_ttft_ms']:7.1f} ms, B restored {med['restored']:.0f} tokens")
    ratio = (statistics.median(r["stall_ms"] for r in results["reader thread"])
             / statistics.median(r["stall_ms"] for r in results["decode thread"]))
    print(f"longest gap while B's state is restored, reader thread / decode thread: {ratio:.2f}x")


if __name__ == "__main__":
    main()
