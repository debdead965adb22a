"""``workstation cache list|clear [--json]``: the KV states kept on disk (core/kv_state.py)."""

from __future__ import annotations

import argparse
import sqlite3
from pathlib import Path

from workstation.commands import add_lang_arg, default_verb, print_json, texts_of
from workstation.core.catalog import human_bytes
from workstation.core.errors import WorkstationError
from workstation.core.installed_models import installed_name
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
        add_lang_arg(v)  # (it was English on a Turkish PC)
        v.set_defaults(func=run)
    default_verb(p, verbs.choices["list"])  # 'cache' alone lists, as 'models' alone does


def run(args: argparse.Namespace) -> int:
    store = KvStateStore()
    if args.verb == "clear":
        if args.damaged:
            gone = store.damaged()
            for path in gone:
                path.unlink(missing_ok=True)
            n, half = len(gone), []
        else:
            n, half = store.clear()
        if args.json:
            print_json({"removed": n, "folder": str(store.folder), "half_written_removed": len(half),
                        "half_written_bytes": sum(half)})
            return 0
        t = texts_of(args)
        print(t("cache_cmd.removed_damaged" if args.damaged else "cache_cmd.removed", n=n, folder=str(store.folder)))
        if half:  # ('cache list' sent the person here for them: "Removed 0 saved KV states" said nothing of them)
            print(t("cache_cmd.removed_half_written", n=len(half), size=t.number(human_bytes(sum(half)))))
        return 0
    damaged = store.damaged()
    entries = sorted((e for e in store.entries() if e.path not in damaged), key=lambda e: e.last_used, reverse=True)
    leftovers = store.leftovers()  # half-written: counted (they were never listed, tens of MiB each)
    total = sum(e.n_bytes for e in entries) + sum(size for _, size, _ in leftovers)
    t = texts_of(args)
    titles = _conversation_titles(entries, t("cache_cmd.deleted"))
    # each state's model as 'models list' names it (its file name, "SmolLM2-135M-Instruct.Q4_1.gguf", beside
    # "smollm2-135m-instruct-q4_1" there); an empty one (a state written before it was kept) stays empty
    names = {e.model: installed_name(Path(e.model)) if e.model else "" for e in entries}
    if args.json:
        print_json({
            "folder": str(store.folder), "budget_bytes": store.budget, "bytes": total,
            "states": [{"file": e.path.name, "tokens": len(e.tokens), "bytes": e.n_bytes,
                        "last_used": e.last_used, "model": e.model, "model_name": names[e.model], "kv_types": e.kv_types,
                        "context": e.n_ctx or None, "flash_attn": e.flash_attn,
                        "conversation": titles.get(e.tag)} for e in entries],
            "damaged": [p.name for p in damaged],
            "half_written": [{"file": p.name, "bytes": size, "being_written": writing} for p, size, writing in leftovers],
        })
        return 0
    # the context each was saved in: two "f16/f16 kvtest" rows of 4,096 and 2,048 read as one state
    # twice; flash attention too where the rows differ in it (a state is used only as it was saved)
    flash = len({e.flash_attn for e in entries}) > 1
    contexts = {e.path: t.number(f"{e.n_ctx:,}") if e.n_ctx else "?" for e in entries}
    switches = {e.path: "?" if e.flash_attn is None else t("cache_cmd.on" if e.flash_attn else "cache_cmd.off")
                for e in entries}
    if entries:
        heads = {k: t(f"cache_cmd.col.{k}") for k in ("tokens", "size", "last", "model", "context", "flash",
                                                      "conversation")}
        width = max(5, len(heads["model"]), *(len(names[e.model]) for e in entries))
        cwidth = max(len(heads["context"]), *(len(c) for c in contexts.values()))
        fwidth = max(len(heads["flash"]), *(len(f) for f in switches.values()))
        print(f"{heads['tokens']:>7}  {heads['size']:>12}  {heads['last']:<16}  {heads['model']:<{width}}  "
              f"{'K/V':<9}  {heads['context']:>{cwidth}}  " + (f"{heads['flash']:<{fwidth}}  " if flash else "")
              + heads["conversation"])
    for e in entries:
        title = titles.get(e.tag) or "-"
        print(f"{t.number(f'{len(e.tokens):,}'):>7}  {t.number(human_bytes(e.n_bytes)):>12}  "
              f"{t.moment(e.last_used):<16}  {names[e.model]:<{width}}  {e.kv_types:<9}  {contexts[e.path]:>{cwidth}}  "
              + (f"{switches[e.path]:<{fwidth}}  " if flash else "") + shortened(title, 40))
    for path in damaged:
        print(t("cache_cmd.damaged", file=path.name, command=cli("cache clear --damaged")))
    left = [size for _, size, writing in leftovers if not writing]
    if left:
        print(t("cache_cmd.half_written", n=len(left), size=t.number(human_bytes(sum(left))),
                command=cli("cache clear")))
    writing = [size for _, size, writing in leftovers if writing]
    if writing:
        print(t("cache_cmd.being_written", n=len(writing), size=t.number(human_bytes(sum(writing)))))
    print(t("cache_cmd.total", n=len(entries), used=human_bytes(total), budget=human_bytes(store.budget),
            folder=str(store.folder), command=cli("cache clear")))
    return 0


def _conversation_titles(entries: list[SavedState], deleted: str = "(deleted)") -> dict[str | None, str]:
    """Each conversation tag's title ('-' in the list: a summary's or a server's prompt;
    ``deleted`` for a conversation no longer there, or a database that cannot be read)."""
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
        titles[e.tag] = deleted
        if store is not None:
            try:
                titles[e.tag] = store.title_of(conversation_id, created) or deleted
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
