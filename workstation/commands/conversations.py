"""``workstation conversations [--json]``: the saved conversations, the names ``chat -c`` and
``summarize -c`` continue (the app lists the same ones)."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from workstation.commands import print_json, text_table
from workstation.core.invocation import cli
from workstation.core.store import ConversationStore


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("conversations", help="the saved conversations (names for chat -c NAME)")
    p.add_argument("--json", action="store_true", help="print them as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    store = ConversationStore()
    try:
        convs = store.list()
        counts = store.message_counts()
    finally:
        store.close()
    if args.json:
        print_json({"conversations": [{"id": c.id, "title": c.title, "profile": c.profile,
                                       "messages": counts.get(c.id, 0), "updated": c.updated}
                                      for c in convs]})
        return 0
    follow = cli('chat -c NAME "..."')
    if not convs:
        print(f"No saved conversations yet; '{follow}' starts one.")
        return 0
    home = str(Path.home())
    rows = [[c.title, str(counts.get(c.id, 0)), time.strftime("%Y-%m-%d %H:%M", time.localtime(c.updated)),
             # a profile file's path with ~ for the home folder, as a shell takes it back (narrower)
             ("~" + c.profile[len(home):] if c.profile.startswith(home + "/") else c.profile) or "-"] for c in convs]
    print(text_table(["conversation", "messages", "last message", "profile"], rows, right={1}))
    print(f"Continue one with '{follow}' (the newest of a name is continued).")
    return 0
