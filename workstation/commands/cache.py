"""``workstation cache list|clear [--json]``: the KV states kept on disk (core/kv_state.py)."""

from __future__ import annotations

import argparse
import sqlite3
import time
from pathlib import Path

from workstation.commands import default_verb, print_json
from workstation.core.errors import WorkstationError
from workstation.core.invocation import cli
from workstation.core.kv_state import STORE, KvStateStore, SavedState, tagged_conversation
from workstation.core.letters import shortened
from workstation.core.paths import data_dir
from workstation.core.store import DB_NAME as STORE_FILE
from workstation.core.store import ConversationStore


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("cache", help="the KV caches kept on disk (conversations, documents, serve's long prompts): list or clear them")
    verbs = p.add_subparsers(dest="verb", metavar="list|clear")
    for verb, text in (("list", "each saved state: tokens, size, last used"), ("clear", "delete them all")):
        v = verbs.add_parser(verb, help=text)
        v.add_argument("--json", action="store_true", help="print it as JSON")
        if verb == "clear":
            v.add_argument("--damaged", action="store_true", help="only the damaged ones (cut short, unreadable)")
        v.set_defaults(func=run)
    default_verb(p, verbs.choices["list"])  # 'cache' alone lists, as 'models' alone does


def run(args: argparse.Namespace) -> int:
    store = KvStateStore()
    if args.verb == "clear":
        if args.damaged:
            gone = store.damaged()
            for path in gone:
                path.unlink(missing_ok=True)
            n = len(gone)
        else:
            n = store.clear()
        if args.json:
            print_json({"removed": n, "folder": str(store.folder)})
        else:
            print(f"Removed {n}{' damaged' if args.damaged else ''} saved KV state{'' if n == 1 else 's'} "
                  f"from {store.folder}.")
        return 0
    damaged = store.damaged()
    entries = sorted((e for e in store.entries() if e.path not in damaged), key=lambda e: e.last_used, reverse=True)
    total = sum(e.n_bytes for e in entries)
    titles = _conversation_titles(entries)
    if args.json:
        print_json({
            "folder": str(store.folder), "budget_bytes": store.budget, "bytes": total,
            "states": [{"file": e.path.name, "tokens": len(e.tokens), "bytes": e.n_bytes,
                        "last_used": e.last_used, "model": e.model, "kv_types": e.kv_types,
                        "conversation": titles.get(e.tag)} for e in entries],
            "damaged": [p.name for p in damaged],
        })
        return 0
    if entries:
        width = max(5, *(len(e.model) for e in entries))
        print(f"{'TOKENS':>7}  {'SIZE':>12}  {'LAST USED':<16}  {'MODEL':<{width}}  {'K/V':<9}  CONVERSATION")
    for e in entries:
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(e.last_used))
        title = titles.get(e.tag) or "-"
        print(f"{len(e.tokens):>7}  {e.n_bytes / 2**20:8.1f} MiB  {when:<16}  {e.model:<{width}}  {e.kv_types:<9}  "
              f"{shortened(title, 40)}")
    for path in damaged:
        print(f"damaged: {path.name} is cut short or unreadable and is never used "
              f"('{cli('cache clear --damaged')}' removes it)")
    print(f"{len(entries)} saved state{'' if len(entries) == 1 else 's'}, {total / 2**20:.1f} of {store.budget / 2**20:.0f} MiB, in {store.folder}; "
          f"the least recently used go first when it is full ('{cli('cache clear')}' empties it)")
    return 0


def _conversation_titles(entries: list[SavedState]) -> dict[str | None, str]:
    """Each conversation tag's title ('-' in the list: a summary's or a server's prompt;
    "(deleted)" for a conversation no longer there, or a database that cannot be read)."""
    titles: dict[str | None, str] = {}
    stores: dict[str, ConversationStore | None] = {}
    for e in entries:
        found = tagged_conversation(e.tag)
        if found is None or e.tag in titles:
            continue
        where, conversation_id, created = found
        if where not in stores:
            stores[where] = _store_named(where)
        store = stores[where]
        titles[e.tag] = "(deleted)"
        if store is not None:
            try:
                titles[e.tag] = store.title_of(conversation_id, created) or "(deleted)"
            except (WorkstationError, sqlite3.Error):
                continue
    for store in stores.values():
        if store is not None:
            store.close()
    return titles


def _store_named(where: str) -> ConversationStore | None:
    """The conversation database a tag names: the data folder's, when the identity is its own
    (``store=...``), or the path an older build wrote; None when it is not there."""
    db = data_dir() / STORE_FILE if where.startswith(STORE) else Path(where)
    try:
        store = ConversationStore(db, read_only=True) if db.is_file() else None
    except (WorkstationError, OSError):
        return None
    if store is not None and where.startswith(STORE) and STORE + store.identity != where:
        store.close()
        return None
    return store
