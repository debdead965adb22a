"""A conversation grown past the context, turn after turn: three ways of fitting it, measured
side by side in one run.

"now": the oldest messages go half the room at a time (llama.cpp's and Ollama's context
shift), so the turns after a shift start at the same message and begin with the cells the turn
before left; at the turn of a shift the kept messages' cells are moved to where the prompt has
them (llama-server's cache reuse), so only the new message is read. "unmoved": the same halves,
the turn of a shift reading every kept message again (as until 6 December 2026). "before": as
few messages are left out as make room, each turn reading the whole prompt again (the cells are
not moved either: the comparison of the first version of this script).

With ``--reopened``, two more ways close the engine after each turn and load it again before the
next, as ``chat -c`` does and the app after a restart: the cells come from the conversation's
state saved on disk. "reopened": the cells of that state are moved at the turn of a shift;
"reopened-unmoved": that turn reads every kept message again (as until 6 December 2026: 502
tokens read, none cached, at a context of 1,024).

The conversation is the same both ways (each turn's reply is a fixed text; the model's own is
dropped), the ways alternate turn by turn, each with its own engine state. Printed: prompt
tokens read per turn, TTFT medians and their ratio, and how many messages each way left out
on average (what the model no longer saw).

    .venv/bin/python bench/overflow.py [--context 2048] [--turns 24] [--model smollm2-135m-instruct-q4_1] [--reopened]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from workstation.core.engine import Engine  # noqa: E402
from workstation.core.events import TurnFinished, finished_turn  # noqa: E402
from workstation.core.kv_state import KvStateStore  # noqa: E402
from workstation.core.metrics import TurnMetrics  # noqa: E402
from workstation.core.profile_check import profile_from_dict  # noqa: E402
from workstation.core.profiles import Profile, Sampling  # noqa: E402

QUESTION = ("Question {i}: the supplier for floor {i} sent invoice {n} for desks, chairs and lamps, and the "
            "delivery note lists {m} items. Which of these should the office check before paying it? ")
ANSWER = ("For invoice {n}, check that the {m} items on the delivery note match the order, that the prices "
          "are the ones agreed in the contract, and that the floor {i} manager signed the receipt. ") * 2


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--context", type=int, default=2048)
    parser.add_argument("--turns", type=int, default=24)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--model", default="smollm2-135m-instruct-q4_1")
    parser.add_argument("--reopened", action="store_true", help="also load the engine again before each turn")
    args = parser.parse_args()
    profile = profile_from_dict(
        {"name": "overflow", "model": args.model, "context": args.context, "threads": args.threads,
         "gpu_layers": 0, "parallel": 1, "system_prompt": "You help office staff with their paperwork."},
        "<bench>",
    )
    sampling = Sampling(temperature=0.0, max_tokens=16, repeat_penalty=1.0)
    ways: tuple[str, ...] = ("now", "unmoved", "before")
    engines = {way: Engine(profile) for way in ways}
    reopened = ("reopened", "reopened-unmoved") if args.reopened else ()
    folders = {way: tempfile.mkdtemp(prefix=f"overflow-{way}-") for way in reopened}  # each its own states
    ways += reopened
    engines["before"].shift_by_half = False
    for way in ("unmoved", "before"):
        engines[way].core._runs_to_move = lambda slot, action: []  # type: ignore[method-assign]
    talk: list[dict[str, str]] = []
    turns: dict[str, list[TurnMetrics]] = {way: [] for way in ways}
    texts: dict[str, list[str]] = {way: [] for way in ways}  # each way's own reply (not kept in the talk)
    overflowing = 0
    for i in range(args.turns):
        n, m = 4000 + 17 * i, 3 + i % 9
        talk.append({"role": "user", "content": QUESTION.format(i=i, n=n, m=m)})
        for way in ways[i % len(ways):] + ways[: i % len(ways)]:  # (each way first in turn)
            if way in reopened:
                turn = reopened_turn(profile, folders[way], way == "reopened", talk, sampling)
            else:
                turn = engines[way].run_chat(list(talk), sampling)
            turns[way].append(turn.metrics)
            texts[way].append(turn.text)
        talk.append({"role": "assistant", "content": ANSWER.format(i=i, n=n, m=m)})
        if turns["now"][-1].left_out_n and not overflowing:
            overflowing = i
    for engine in engines.values():
        engine.close()
    if not overflowing:
        sys.exit(f"The conversation never outgrew the context of {args.context}: give more --turns.")
    print(f"{args.model}, context {args.context}; the conversation outgrew it at turn {overflowing + 1} "
          f"of {args.turns}; figures of the turns from then on")
    for way in ways:
        after = turns[way][overflowing:]
        print(f"{way:7} prompt tokens read per turn " + " ".join(f"{t.prompt_n:5d}" for t in after))
        print(f"{'':7} TTFT ms per turn            " + " ".join(f"{t.ttft_ms:5.0f}" for t in after))
    rows = {}
    for way in ways:
        after = turns[way][overflowing:]
        rows[way] = (statistics.median(t.ttft_ms for t in after), sum(t.prompt_n for t in after),
                     statistics.mean(t.left_out_n for t in after))
        print(f"{way:7} TTFT median {rows[way][0]:7.0f} ms   prompt tokens read {rows[way][1]:6d}   "
              f"messages left out {rows[way][2]:5.1f} on average")
    pairs = [("now", "unmoved"), ("now", "before")] + ([("reopened", "reopened-unmoved")] if reopened else [])
    for one, other in pairs:
        print(f"{one}/{other}: TTFT {rows[one][0] / rows[other][0]:.2f}x, "
              f"prompt tokens read {rows[one][1] / rows[other][1]:.2f}x, "
              f"messages left out {rows[one][2] / max(rows[other][2], 1e-9):.2f}x")
    shifts = [i for i, t in enumerate(turns["now"]) if i and t.left_out_n != turns["now"][i - 1].left_out_n]
    for i in shifts:  # the turns that left more messages out: what moving the cells buys
        for moved, unmoved in pairs[:1] + pairs[2:]:
            one, other = turns[moved][i], turns[unmoved][i]
            print(f"turn {i + 1} left out {one.left_out_n} messages ({moved}): TTFT {one.ttft_ms:.0f} ms moved, "
                  f"{other.ttft_ms:.0f} ms read again ({one.ttft_ms / other.ttft_ms:.2f}x); read {one.prompt_n} "
                  f"and {other.prompt_n} tokens, {one.cache_n} and {other.cache_n} cached; the same greedy reply: "
                  f"{'yes' if texts[moved][i] == texts[unmoved][i] else 'no'}")
            if texts[moved][i] != texts[unmoved][i]:
                print(f"    moved:      {texts[moved][i]!r}\n    read again: {texts[unmoved][i]!r}")


def reopened_turn(profile: Profile, folder: str, moved: bool, talk: list[dict[str, str]],
                  sampling: Sampling) -> TurnFinished:
    """One turn of an engine loaded for it (its states in ``folder``), closed after it (its
    cells saved), as ``chat -c``; ``moved`` False: a saved state's cells are never moved."""
    os.environ["WORKSTATION_DATA"] = folder
    engine = Engine(profile, keep_state=True)
    store = engine.core.kv_store
    if not moved and store is not None:
        plain = KvStateStore.best
        store.best = lambda key, prompt, at_least, moved=None: plain(store, key, prompt, at_least)  # type: ignore[method-assign]
    try:
        return finished_turn(engine.stream_chat(list(talk), sampling, tag="conversation:bench-overflow:1"))
    finally:
        engine.close()


if __name__ == "__main__":
    main()
