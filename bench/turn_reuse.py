"""What keeping a reply's cells as it was generated buys the next turn (``slots.aligned_prompt``).

A reply comes back as text, and its text tokenized again need not give the tokens it was
generated as; without taking the cells' tokens for that text, the next turn kept the
conversation only up to the first such token and read the rest of the reply again ("cache
72/191" on a third turn). One conversation of ``--turns`` turns (office-cpu's settings, a fixed
seed and thread count, replies of up to ``--reply`` tokens; seeds tried until a reply reads as
other tokens, else its last reply's cells written a character a token) is held; then the next turn's prompt is read
``--rounds`` times each way, alternating on the same cells: with the alignment (as the engine
runs) and without it (``aligned_prompt`` replaced by the prompt as its text reads). Printed per
way: the tokens kept and read, the median wait for the first token, and their ratio.

    PYTHONPATH=. .venv/bin/python bench/turn_reuse.py [--turns 3] [--reply 200] [--rounds 3]
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from workstation.core import slots  # noqa: E402
from workstation.core.engine import Engine  # noqa: E402
from workstation.core.events import TurnFinished  # noqa: E402
from workstation.core.metrics import TurnMetrics  # noqa: E402
from workstation.core.profile_lookup import load_profile  # noqa: E402
from workstation.core.profiles import Profile, Sampling  # noqa: E402
from workstation.core.slots import common_prefix  # noqa: E402

QUESTIONS = [
    "Write a short note to my team about the printer on floor 2 being broken.",
    "Make it more formal.",
    "Now translate it to Turkish.",
    "Give it a subject line.",
    "Add a line about who to call.",
]


@contextmanager
def without_alignment() -> Iterator[None]:
    """``admit`` as it was: the prompt as its text reads, whatever the cells hold."""
    kept = slots.aligned_prompt
    slots.aligned_prompt = lambda cells, prompt, piece, most=None: prompt  # type: ignore[assignment]
    try:
        yield
    finally:
        slots.aligned_prompt = kept


def finished(events: Iterator[object]) -> TurnFinished:
    final = None
    for event in events:
        if isinstance(event, TurnFinished):
            final = event
    assert final is not None
    return final


def conversation(engine: Engine, profile: Profile, seed: int, turns: int) -> tuple[list[dict[str, str]], list[int]]:
    """``turns`` turns of one conversation at ``seed``: its messages and the cells it leaves."""
    engine.reset()
    sampling = dataclasses.replace(profile.sampling, seed=seed)
    messages: list[dict[str, str]] = []
    for question in QUESTIONS[:turns]:
        messages.append({"role": "user", "content": question})
        reply = finished(engine.stream_chat(messages, sampling, tag="bench"))
        m = reply.metrics
        print(f"  turn {len(messages) // 2 + 1}: kept {m.cache_n:,} of {m.prompt_n + m.cache_n:,} prompt tokens, "
              f"wrote {m.predicted_n}")
        messages.append({"role": "assistant", "content": reply.text})
    return messages, list(engine.tokens)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=3, help="turns held before the one timed")
    parser.add_argument("--reply", type=int, default=200, help="most tokens a reply writes")
    parser.add_argument("--rounds", type=int, default=3, help="times the next turn is read each way")
    parser.add_argument("--seed", type=int, default=1, help="the first seed tried")
    parser.add_argument("--tries", type=int, default=6, help="seeds tried for a reply that reads as other tokens")
    parser.add_argument("--threads", type=int, default=2, help="threads (a reply's tokens follow them)")
    args = parser.parse_args()

    profile = load_profile("office-cpu")
    profile = dataclasses.replace(profile, threads=args.threads,
                                  sampling=dataclasses.replace(profile.sampling, max_tokens=args.reply))
    engine = Engine(profile, keep_state=False)
    try:
        for seed in range(args.seed, args.seed + args.tries):
            messages, held = conversation(engine, profile, seed, args.turns)
            kept = common_prefix(held, engine.chat_prompt(messages))
            if kept < len(held) - 2:  # (its last tokens: the reply's end, the turn's end)
                print(f"seed {seed}: a reply's text reads as other tokens from token {kept:,} of {len(held):,}")
                break
            print(f"seed {seed}: every reply's text reads as the tokens it was generated as; next seed")
        else:  # the reply's cells written a character a token, as a sampled reply may write it (" Ab" "on")
            head = engine.chat_prompt(messages[:-1])
            written = [t for ch in messages[-1]["content"]
                       for t in engine.model.tokenize(ch, add_special=False, parse_special=False)]
            held = head + written
            print(f"no reply of seeds {args.seed}-{seed} read as other tokens: the last reply's cells made of "
                  f"{len(written):,} tokens a character each")
        messages.append({"role": "user", "content": QUESTIONS[args.turns % len(QUESTIONS)]})
        prompt = engine.chat_prompt(messages)
        one = Sampling(temperature=0.0, max_tokens=1)
        ways: dict[str, list[TurnMetrics]] = {"kept as generated": [], "as its text reads": []}
        for _ in range(args.rounds):
            for way, runs in ways.items():
                # the cells as the conversation left them (a prompt they start: nothing read again),
                # not aligned to the cells the run before left (its text's tokens put back in them)
                with without_alignment():
                    finished(engine.stream_tokens(held[:-1], one, tag="bench"))
                if way == "as its text reads":
                    with without_alignment():
                        runs.append(finished(engine.stream_tokens(prompt, one, tag="bench")).metrics)
                else:
                    runs.append(finished(engine.stream_tokens(prompt, one, tag="bench")).metrics)
        waits = {}
        for way, runs in ways.items():
            waits[way] = statistics.median(m.ttft_ms for m in runs)
            m = runs[-1]
            print(f"next turn, {way}: kept {m.cache_n:,}, read {m.prompt_n:,} tokens; "
                  f"first token after {waits[way]:,.0f} ms (median of {len(runs)})")
        print(f"ratio: the wait as its text reads over kept as generated = "
              f"{waits['as its text reads'] / waits['kept as generated']:.2f}x")
    finally:
        engine.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
