"""The chat with a long history: opening a long conversation and redrawing the conversation
list, each drawn the way the app does now beside drawing everything (what it did before),
measured side by side in one run, in the real app headless (Textual's run_test).

Usage:
    .venv/bin/python bench/long_history.py [--exchanges 300] [--conversations 500] [--rounds 3]

Prints, for each, the median seconds of each way and their ratio. "now" opens a conversation
with its last ``SHOWN_AT_ONCE`` messages (the earlier ones behind a button) and lists
``ConversationList.PAGE`` conversations, keeping the list's lines while they are the same;
"all" draws every message and every line, each time.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time


async def _measure(exchanges: int, conversations: int, rounds: int, everything: bool) -> tuple[float, float]:
    from workstation.tui import app as app_module
    from workstation.tui.screens import chat
    from workstation.tui.widgets.conversation_list import ConversationList

    chat.SHOWN_AT_ONCE = 10**9 if everything else 30
    ConversationList.PAGE = 10**9 if everything else 100
    store = app_module.ConversationStore()
    long_one = store.new("Very long")
    for i in range(exchanges):
        store.add_message(long_one.id, "user", f"Question {i}: what about **item {i}**?")
        store.add_message(long_one.id, "assistant", f"Answer {i}:\n\n- point one\n- point two\n\nSome `code`.")
    short = store.new("Short")
    store.add_message(short.id, "user", "hi")
    for i in range(conversations):
        store.new(f"Note {i} about the invoices")
    store.close()
    opened, listed = [], []
    app = app_module.WorkstationApp(None, start_engine=False, sample_system=False, language="en")
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        for _ in range(rounds):
            await app.open_conversation(short.id)
            await pilot.pause()
            t0 = time.perf_counter()
            await app.open_conversation(long_one.id)
            await pilot.pause()
            opened.append(time.perf_counter() - t0)
            if everything:  # what the list did at every turn, search key and open: all of it again
                app.chat_screen.sidebar._shown = []
            t0 = time.perf_counter()
            await app.refresh_sidebar("")
            await pilot.pause()
            listed.append(time.perf_counter() - t0)
    return statistics.median(opened), statistics.median(listed)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--exchanges", type=int, default=300)
    parser.add_argument("--conversations", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    results = {}
    for way in ("now", "all"):
        os.environ["WORKSTATION_DATA"] = tempfile.mkdtemp(prefix=f"long-history-{way}-")
        results[way] = asyncio.run(_measure(args.exchanges, args.conversations, args.rounds, way == "all"))
    print(f"{args.exchanges} exchanges in one conversation, {args.conversations} conversations; median of {args.rounds}")
    for i, what in enumerate(("open the long conversation", "redraw the conversation list")):
        now, everything = results["now"][i], results["all"][i]
        print(f"{what:30} now {now:6.2f} s   all {everything:6.2f} s   all/now {everything / now:5.1f}x")


if __name__ == "__main__":
    main()
