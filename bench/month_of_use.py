"""A month of daily use, measured: what a person waits for once the data folder has grown.

Builds a data folder with the store's own API (400 conversations in English and Turkish, 20 of
200-260 messages with long Markdown replies, one of 1,500) in a temporary folder, then times
the real app through Textual's Pilot (no model loaded): the start, opening a short and the
long conversation, a key typed while the long one is shown (and the screen layouts it caused),
the layouts an open causes, a delete and the sidebar after it; and the database's size before
and after deleting a quarter of the conversations (what ``auto_vacuum`` gives back).

    .venv/bin/python bench/month_of_use.py [--conversations 400]

Figures are seconds on this machine, which is shared and drifts: compare runs side by side.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import sqlite3
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

WORDS = {
    "en": "the report shows that our quarterly revenue increased while costs stayed within the agreed budget".split(),
    "tr": "rapor bu çeyrekte gelirlerin arttığını ve giderlerin kararlaştırılan bütçe içinde kaldığını gösteriyor".split(),
}


def _para(words: list[str], n: int) -> str:
    return " ".join(random.choice(words) for _ in range(n)).capitalize() + "."


def _long_reply(words: list[str], i: int) -> str:
    table = "| Month | Revenue |\n|---|---:|\n" + "\n".join(f"| {m} | {random.randint(1000, 9999):,} |"
                                                     for m in ("Jan", "Feb", "Mar", "Apr"))
    code = "```python\nimport csv\nfor row in csv.DictReader(open('sales.csv')):\n    print(row['total'])\n```"
    return (f"## Answer {i}\n\n{_para(words, 60)}\n\n- **First**: {_para(words, 12)}\n- Second: {_para(words, 14)}\n\n"
            f"{table}\n\n{code}\n\n{_para(words, 80)}\n\n> {_para(words, 20)}")


def build(data: Path, total: int) -> int:
    """The month's conversations in ``data``; the id of the one of 1,500 messages."""
    from workstation.core.store import DB_NAME, ConversationStore

    random.seed(7)
    store = ConversationStore(data / DB_NAME)
    longest = 0
    for c in range(total):
        words = WORDS["tr" if c % 2 else "en"]
        n = 1500 if c == total // 2 else random.randint(200, 260) if c % 20 == 5 else random.randint(2, 30)
        conv = store.new(f"{_para(words, 3)[:-1]} {c}", "office-cpu")
        longest = conv.id if n == 1500 else longest
        metrics = {"profile": "office-cpu", "ttft_ms": 350.0, "predicted_n": 200, "predicted_per_second": 40.0}
        for i in range(n // 2):
            store.add_message(conv.id, "user", _para(words, random.randint(5, 40)))
            reply = _long_reply(words, i) if n >= 200 or random.random() < 0.3 else _para(words, 50)
            store.add_message(conv.id, "assistant", reply, metrics=metrics)
    store.close()
    return longest


def database_figures(path: Path) -> tuple[float, int]:
    """The file's size in MB and its free pages."""
    with sqlite3.connect(path) as db:
        free = int(db.execute("PRAGMA freelist_count").fetchone()[0])
    return path.stat().st_size / 1e6, free


async def measure(longest: int) -> dict[str, Any]:
    from bench.tui_cpu import count_layouts
    from workstation.tui.app import WorkstationApp

    out: dict[str, Any] = {}
    layouts, undo = count_layouts()
    t0 = time.perf_counter()
    app = WorkstationApp(None, start_engine=False, sample_system=False, language="en")
    async with app.run_test(size=(120, 40)) as pilot:
        while not app.chat_screen.message_views():
            await pilot.pause()
        out["start, to messages drawn (s)"] = time.perf_counter() - t0

        async def timed(label: str, step: Any) -> None:
            await pilot.pause()
            layouts[0] = 0
            started = time.perf_counter()
            await step()
            await app.workers.wait_for_complete()
            await pilot.pause()
            out[f"{label} (s)"] = time.perf_counter() - started
            out[f"{label}: screen layouts"] = layouts[0]

        others = [c.id for c in app.store.list() if c.id != longest]
        await timed("open a short conversation", lambda: app.open_conversation(others[3]))
        await timed("open the 1,500-message one", lambda: app.open_conversation(longest))
        app.chat_screen.focus_prompt()

        async def type_words() -> None:
            for key in "hello there":
                await pilot.press(key)

        await timed("type 11 keys beside it", type_words)
        await timed("delete one, the sidebar after", lambda: _delete(app, others[-1]))
    undo()
    return out


async def _delete(app: Any, conversation: int) -> None:
    app.store.delete(conversation)
    await app.refresh_sidebar()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--conversations", type=int, default=400)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="month-of-use-") as folder:
        data = Path(folder)
        os.environ["WORKSTATION_DATA"] = str(data)
        from workstation.core.store import DB_NAME, ConversationStore

        t0 = time.perf_counter()
        longest = build(data, args.conversations)
        size, free = database_figures(data / DB_NAME)
        print(f"built in {time.perf_counter() - t0:.1f} s: {args.conversations} conversations, "
              f"database {size:.2f} MB ({free} free pages)")
        for label, value in asyncio.run(measure(longest)).items():
            print(f"  {label:45s} {value:.3f}" if isinstance(value, float) else f"  {label:45s} {value}")
        store = ConversationStore(data / DB_NAME)
        gone = [c.id for c in store.list()][: args.conversations // 4]
        for conversation in gone:
            store.delete(conversation)
        store.close()
        after, free = database_figures(data / DB_NAME)
        print(f"after deleting {len(gone)} conversations: {after:.2f} MB ({free} free pages), "
              f"{after / size:.2f}x the size before")
    return 0


if __name__ == "__main__":
    sys.exit(main())
