"""How long the scheduler's thread spends finding a slot's cells again further on in a prompt
(``slots.moved_runs``, llama-server's ``--cache-reuse`` search), against the cell-by-cell search
it replaced (kept here only, for the comparison). No model: made-up token ids, 32K cells.

Cases: a conversation past its context (its oldest messages left out, so its kept messages are
found again nearer the start), a prompt that shares nothing past its instructions, a prompt
made of many short pieces of the cache in another order, one of 500 pieces just long enough
to move, and the worst inputs a reviewer found
for the old search (one token repeated in the cells; the prompt holds it a little under
``MIN_MOVED_RUN`` times). Both searches must give the same runs; a few hundred random small
inputs check that too
(ids past 2**28 and below zero among them). Printed: the median of ``--repeat`` calls, old and new, and the ratio.

    PYTHONPATH=. .venv/bin/python bench/moved_runs.py [--cells 32768] [--repeat 5]
"""

from __future__ import annotations

import argparse
import functools
import random
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from workstation.core.slots import MIN_MOVED_RUN, moved_runs  # noqa: E402


def old_moved_runs(cached: Sequence[int], prompt: Sequence[int], start: int,
                   min_run: int = MIN_MOVED_RUN) -> list[tuple[int, int, int]]:
    """The search before: at each cell, count how far the cells and the prompt go on alike."""
    runs: list[tuple[int, int, int]] = []
    limit = len(prompt) - 1
    head_c = head_p = start
    while head_c < len(cached) and head_p < limit:
        n = 0
        while head_c + n < len(cached) and head_p + n < limit and cached[head_c + n] == prompt[head_p + n]:
            n += 1
        if n >= min_run:
            runs.append((head_c, head_p, n))
            head_c += n
            head_p += n
        else:
            head_c += 1
    return runs


def cases(cells: int) -> list[tuple[str, list[int], list[int], int]]:
    """(name, cached, prompt, start)."""
    rng = random.Random(1)
    words = lambda n: [rng.randrange(49152) for _ in range(n)]  # noqa: E731
    sys_ = words(300)
    old, kept = words(cells // 4), words(cells - 300 - cells // 4 - 2)
    overflow = sys_ + old + kept + [5, 6]
    pieces = [kept[i:i + 80] for i in range(0, 80 * 200, 80)]
    rng.shuffle(pieces)
    shuffled = sys_ + [t for p in pieces for t in p[:70]] + words(50)
    same = [7] * cells
    runs = [t for i in range(300, cells - 65, 65) for t in overflow[i:i + 64]]
    return [
        ("overflow: oldest messages left out", overflow, sys_ + kept + [5, 6] + words(200), 300),
        ("nothing shared past the instructions", overflow, sys_ + words(cells // 2), 300),
        ("200 short pieces in another order", overflow, shuffled, 300),
        ("many runs: the cells' 64-token pieces, one apart", overflow, sys_ + runs, 300),
        ("worst: one token repeated, prompt 63 of it", same, [7] * (MIN_MOVED_RUN - 1) + [1] * 500, 0),
        ("worst: one token repeated, pattern breaks at 63", same,
         ([7] * (MIN_MOVED_RUN - 1) + [1]) * (cells // MIN_MOVED_RUN), 0),
        ("one token repeated, prompt the same", same, same + [8], 1),
    ]


def median_ms(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1000


def check_random(n: int) -> None:
    rng = random.Random(2)
    for _ in range(n):
        ids = rng.choice(([0, 1], [0, 1, 2], list(range(50)), [-1, 0, 2**28 - 1, 2**28, 2**31, 5]))
        cached = [rng.choice(ids) for _ in range(rng.randrange(0, 300))]
        prompt = cached[: rng.randrange(0, 40)]
        while len(prompt) < rng.randrange(0, 400):
            a = rng.randrange(0, len(cached) + 1)
            prompt += cached[a:a + rng.randrange(0, 60)] + [rng.choice(ids) for _ in range(rng.randrange(3))]
        start = rng.randrange(0, 50)
        min_run = rng.choice((1, 2, 5, 8, 20))
        got, want = moved_runs(cached, prompt, start, min_run), old_moved_runs(cached, prompt, start, min_run)
        assert got == want, (cached, prompt, start, min_run, got, want)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cells", type=int, default=32768)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    check_random(300)
    print(f"{'case':52} {'old ms':>9} {'new ms':>9} {'ratio':>8}  runs")
    for name, cached, prompt, start in cases(args.cells):
        got, want = moved_runs(cached, prompt, start), old_moved_runs(cached, prompt, start)
        assert got == want, name
        old = median_ms(functools.partial(old_moved_runs, cached, prompt, start), args.repeat)
        new = median_ms(functools.partial(moved_runs, cached, prompt, start), args.repeat)
        print(f"{name:52} {old:9.1f} {new:9.2f} {old / new:7.0f}x  {len(got)}")


if __name__ == "__main__":
    main()
