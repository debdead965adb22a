"""Conversation search (Ctrl+F) over a large history: the store's search beside SQLite's plain
LIKE (ASCII case only, what search was before it set Turkish case aside) and beside fold() on
every message (what it was before the LIKE filter), measured side by side in one run.

Usage:
    .venv/bin/python bench/search.py [--conversations 200] [--messages 10] [--words 2500] [--rounds 3]

The history is made up of Turkish and English office words in a temporary file (about 40 MB
with the defaults). Each line: the needle, how many conversations it finds, then the median
seconds per search of each way and the store's over plain LIKE.
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from workstation.core.letters import fold
from workstation.core.store import ConversationStore

WORDS = ("şirket çalışanları toplantı notları proje bütçe planı müşteri sipariş teslim rapor haftalık "
         "the meeting notes budget").split()
NEEDLES = ("çalışan", "ŞİRKET", "Sipariş Takibi", "iş", "meeting notes", "zzz nothing")


def timed(run: Callable[[], int], rounds: int) -> tuple[int, float]:
    found, times = 0, []
    for _ in range(rounds):
        t0 = time.perf_counter()
        found = run()
        times.append(time.perf_counter() - t0)
    return found, statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--conversations", type=int, default=200)
    ap.add_argument("--messages", type=int, default=10)
    ap.add_argument("--words", type=int, default=2500)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    store = ConversationStore(Path(tempfile.mkdtemp(prefix="search-bench-")) / "c.sqlite3")
    rng = random.Random(1)
    for c in range(args.conversations):
        conv = store.new(f"Konuşma {c}")
        for _ in range(args.messages):
            store.add_message(conv.id, "user", " ".join(rng.choice(WORDS) for _ in range(args.words)))
    db = store._db
    size = db.execute("SELECT SUM(LENGTH(content)) FROM messages").fetchone()[0]
    print(f"{args.conversations * args.messages} messages, {size / 1e6:.0f} M characters")
    print(f"{'needle':<16} {'found':>5} {'store s':>8} {'LIKE s':>7} {'fold s':>7} {'store/LIKE':>10}")

    def plain_like(needle: str) -> int:
        return len(db.execute("SELECT DISTINCT conversation_id FROM messages WHERE content LIKE ?",
                              (f"%{needle}%",)).fetchall())

    def fold_all(needle: str) -> int:
        return len(db.execute("SELECT DISTINCT conversation_id FROM messages WHERE instr(fold(content), ?)",
                              (fold(needle),)).fetchall())

    for needle in NEEDLES:
        found, ours = timed(lambda needle=needle: len(store.list(needle)), args.rounds)
        _, like = timed(lambda needle=needle: plain_like(needle), args.rounds)
        _, folded = timed(lambda needle=needle: fold_all(needle), args.rounds)
        print(f"{needle:<16} {found:>5} {ours:>8.3f} {like:>7.3f} {folded:>7.3f} {ours / like:>9.1f}x")
    store.close()


if __name__ == "__main__":
    main()
