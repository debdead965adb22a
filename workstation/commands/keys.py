"""``workstation keys add|list|revoke``: one API key per person for ``workstation serve``."""

from __future__ import annotations

import argparse
import datetime as dt
import sys

from workstation.commands import default_verb, print_json, text_table
from workstation.core.invocation import cli


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("keys", help="API keys per person for serve: add, list, revoke")
    verbs = p.add_subparsers(dest="verb", metavar="VERB")
    add = verbs.add_parser("add", help="make a key for a person and print it (once)")
    add.add_argument("name", help="the person's name, as usage and the audit trail show it")
    add.add_argument("--tokens-per-day", type=int, metavar="N", help="prompt + generated tokens a day (default: no limit)")
    add.add_argument("--max-parallel", type=int, metavar="K", help="slots the key may hold at once (default: the server's --key-max-parallel, one fewer than its slots)")
    add.add_argument("--profiles", metavar="A,B", default="", help="profiles the key may use (default: any)")
    add.add_argument("--json", action="store_true", help="print it as JSON")
    add.set_defaults(func=run_add)
    ls = verbs.add_parser("list", help="keys with their limits and last use (never the key)")
    ls.add_argument("--all", action="store_true", help="revoked keys too")
    ls.add_argument("--json", action="store_true", help="print it as JSON")
    ls.set_defaults(func=run_list)
    rv = verbs.add_parser("revoke", help="revoke a person's key; a running server refuses it at once")
    rv.add_argument("name")
    rv.set_defaults(func=run_revoke)
    default_verb(p, ls)  # 'keys' alone lists, as 'models' alone does


def _when(t: float | None) -> str:
    return dt.datetime.fromtimestamp(t).strftime("%Y-%m-%d %H:%M") if t else "never"


def run_add(args: argparse.Namespace) -> int:
    from workstation.core.errors import WorkstationError
    from workstation.core.keys import KeyRing
    from workstation.core.profiles import close_profile, profile_paths

    profiles = [p.strip() for p in args.profiles.split(",") if p.strip()]
    known = {p.stem for p in profile_paths()}
    for name in profiles:  # a typo made a key that could never be used, and a key's profiles cannot be changed
        guess = close_profile(name, sorted(known)) if name not in known else ""
        if guess:
            raise WorkstationError(f"There is no profile '{name}' in the profiles folder.{guess} No key was made.")
    ring = KeyRing()
    try:
        first = not ring.any_keys()
        key, secret = ring.add(
            args.name, tokens_per_day=args.tokens_per_day, max_parallel=args.max_parallel, profiles=profiles
        )
    finally:
        ring.close()
    for name in key.profiles:
        if name not in known:
            print(f"workstation: note: there is no profile '{name}' in the profiles folder (yet).", file=sys.stderr)
    if args.json:
        print_json({**key.to_dict(), "key": secret})
        return 0
    print(secret)
    print(
        f"workstation: the key for '{key.name}' is above; hand it over now, it is not shown again.",
        file=sys.stderr,
    )
    if first:  # a running server wanted no key a moment ago: the desk PCs it served now get 401
        print(FIRST_KEY, file=sys.stderr)
    return 0


FIRST_KEY = (
    "workstation: this is the first key, so from now on serve (a running one too) answers only "
    "requests that carry a key: on each desk PC set WORKSTATION_API_KEY to that person's key "
    "(the office-server profile reads it from there)."
)


def run_list(args: argparse.Namespace) -> int:
    from workstation.core.keys import KeyRing

    ring = KeyRing()
    try:
        keys = ring.list(include_revoked=args.all)
        revoked = len(ring.list(include_revoked=True)) - len(ring.list())
    finally:
        ring.close()
    today = _used_today()
    if args.json:
        print_json({"keys": [{**k.to_dict(), "tokens_today": today.get(k.name, 0)} for k in keys]})
        return 0
    if not keys and not revoked:
        print(f"No keys yet; make one with: {cli('keys add NAME')}")
        return 0
    if not keys:  # revoked ones still count: serve is closed, not open to all (and said nowhere)
        print(f"No key is in use ({revoked} revoked: {cli('keys list --all')}). {_all_revoked()}")
        return 0
    header = ["name", "created", "last used", "today", "tokens/day", "max parallel", "profiles"]
    if args.all:
        header.append("revoked")
    rows = []
    for k in keys:
        used = today.get(k.name, 0)
        over = " (over)" if k.tokens_per_day and used > k.tokens_per_day else ""
        row = [
            k.name, _when(k.created), _when(k.last_used), f"{used:,}{over}",
            f"{k.tokens_per_day:,}" if k.tokens_per_day else "no limit",
            str(k.max_parallel) if k.max_parallel else "server default",
            ",".join(k.profiles) or "any",
        ]
        if args.all:
            row.append(_when(k.revoked) if k.revoked else "")
        rows.append(row)
    print(text_table(header, rows, {3, 4, 5}))
    return 0


def _used_today() -> dict[str, int]:
    """Tokens each key used today (local day), from the server's usage file (none: empty)."""
    import time

    from workstation.core.errors import WorkstationError
    from workstation.core.quota import day_start
    from workstation.core.usage import open_usage_if_present

    try:
        log = open_usage_if_present()
        if log is None:
            return {}
        try:
            return {r.group: r.tokens for r in log.summary("person", day_start(time.time()))}
        finally:
            log.close()
    except WorkstationError:  # a damaged usage file is the usage command's to say: keys still list
        return {}


def run_revoke(args: argparse.Namespace) -> int:
    from workstation.core.keys import KeyRing

    ring = KeyRing()
    try:
        key = ring.revoke(args.name)
        left = len(ring.list())
    finally:
        ring.close()
    print(f"Revoked the key of '{key.name}'; a running server refuses it from its next request.")
    if not left:
        print(f"That was the last key in use. {_all_revoked()}")
    return 0


def _all_revoked() -> str:
    return ("serve now refuses every request (but those with the operator's --api-key, if it has one) "
            "until a key is made: revoked keys still count, so the server is not opened to everyone. "
            f"Make one with: {cli('keys add NAME')}")
