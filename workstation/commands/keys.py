"""``workstation keys add|list|set|revoke``: one API key per person for ``workstation serve``."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from workstation.commands import default_verb, print_json, text_table
from workstation.core.invocation import cli, shell_word

if TYPE_CHECKING:
    from workstation.core.keys import ApiKey


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("keys", help="API keys per person for serve: add, list, set, revoke")
    verbs = p.add_subparsers(dest="verb", metavar="VERB")
    add = verbs.add_parser("add", help="make a key for a person and print it (once)")
    add.add_argument("name", help="the person's name, as usage and the audit trail show it")
    _limit_options(add, "left out: what the person's revoked key had, else {none}")
    add.add_argument("--json", action="store_true", help="print it as JSON")
    add.set_defaults(func=run_add)
    ls = verbs.add_parser("list", help="keys with their limits and last use (never the key)")
    ls.add_argument("--all", action="store_true", help="revoked keys too")
    ls.add_argument("--json", action="store_true", help="print it as JSON")
    ls.set_defaults(func=run_list)
    st = verbs.add_parser("set", help="change a person's limits; a running server applies them at the next request")
    st.add_argument("name")
    _limit_options(st, "left out: as it is")
    st.set_defaults(func=run_set)
    rv = verbs.add_parser("revoke", help="revoke a person's key; a running server refuses it at once")
    rv.add_argument("name")
    rv.set_defaults(func=run_revoke)
    default_verb(p, ls)  # 'keys' alone lists, as 'models' alone does


def _limit_options(verb: argparse.ArgumentParser, left_out: str) -> None:
    """A key's limits, as ``add`` and ``set`` take them alike: 0 is none (no daily limit, the
    server's default at once) and ``any`` every profile (``keys add`` could not say either:
    a person's revoked key's limits were kept, or "--tokens-per-day is 0; it must be 1 or more")."""
    verb.add_argument("--tokens-per-day", type=int, metavar="N",
                      help=f"prompt + generated tokens a day (0: no limit; {left_out.format(none='no limit')})")
    verb.add_argument("--max-parallel", type=int, metavar="K",
                      help=f"slots the key may hold at once (0: the server's --key-max-parallel, one fewer than its "
                           f"slots; {left_out.format(none='that')})")
    verb.add_argument("--profiles", metavar="A,B",
                      help=f"profiles the key may use ('any': any; {left_out.format(none='any')})")


def _profiles_given(typed: str | None, not_done: str) -> list[str] | None:
    """``--profiles`` as ``add`` and ``set`` take it: None left out, [] any, else the names (``_profiles_named``)."""
    if typed is None:
        return None
    return [] if typed.strip().lower() == "any" else _profiles_named(typed, not_done)


def _when(t: float | None) -> str:
    from workstation.core.moments import local_text

    return local_text(t) if t is not None else "never"


def _profiles_named(typed: str, not_done: str) -> list[str]:
    """The profiles a key may use, as typed (a,b); a close miss of a profile's name is refused
    (a typo made a key that could never be used), and so is none (``--profiles ""`` made a key
    for every profile without a word: it says how to ask for that). One not there yet is noted."""
    from workstation.core.errors import WorkstationError
    from workstation.core.phrases import say
    from workstation.core.profile_folders import profile_paths
    from workstation.core.profile_lookup import close_profile

    profiles = [p.strip() for p in typed.split(",") if p.strip()]
    if not profiles:
        raise WorkstationError(f"--profiles names no profile, so {not_done[0].lower()}{not_done[1:-1]}; to let "
                               "it use every profile, give --profiles any.")
    known = {p.stem for p in profile_paths()}
    for name in profiles:
        guess = close_profile(name, sorted(known)) if name not in known else ""
        if guess:
            raise WorkstationError(f"There is no profile '{name}' in the profiles folder.{say([guess])} {not_done}")
    for name in profiles:
        if name not in known:
            print(f"workstation: note: there is no profile '{name}' in the profiles folder (yet).", file=sys.stderr)
    return profiles


def run_add(args: argparse.Namespace) -> int:
    from workstation.core.keys import KeyRing

    profiles = _profiles_given(args.profiles, "No key was made.")
    ring = KeyRing()
    try:
        first = not ring.any_keys()
        before = ring.last_revoked(args.name)  # a person given a key again keeps the limits they had
        key, secret = ring.add(
            args.name, tokens_per_day=args.tokens_per_day, max_parallel=args.max_parallel, profiles=profiles
        )
    finally:
        ring.close()
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
    if before is None:
        return 0
    kept = [option for option, given, had in (
        ("--tokens-per-day", args.tokens_per_day, before.tokens_per_day),
        ("--max-parallel", args.max_parallel, before.max_parallel),
        ("--profiles", args.profiles, before.profiles)) if given is None and had]
    if kept:  # (the new key had no limits: a day's budget set before was lost without a word)
        # (those given here are said as the key's now, not as kept: "keeps … (90,000 tokens a day" of a 90,000 just given)
        value = {"--tokens-per-day": "N (0: no limit)", "--max-parallel": "K (0: the server's default)",
                 "--profiles": "a,b (any: every profile)"}[kept[0]]
        none = " ".join(f"{option} {'any' if option == '--profiles' else 0}" for option in kept)
        print(f"workstation: '{key.name}' keeps the limits of their revoked key that were not given here; it now "
              f"has {_limits_said(key)}. To change them: "
              f"{cli('keys set ' + shell_word(key.name, readable=True) + ' ' + kept[0])} {value}; to add a key "
              f"without them, give keys add {none}.", file=sys.stderr)
    elif before.tokens_per_day or before.max_parallel or before.profiles:  # all cleared or given: said as they are now
        print(f"workstation: '{key.name}' now has {_limits_said(key)}, not the limits of their revoked key.",
              file=sys.stderr)
    return 0


def _limits_said(key: ApiKey) -> str:
    """A key's limits in words: "3,000 tokens a day; 2 at once; any profile"."""
    return "; ".join([f"{key.tokens_per_day:,} tokens a day" if key.tokens_per_day else "no daily limit",
                      f"{key.max_parallel} at once" if key.max_parallel else "the server's default at once",
                      f"profiles {', '.join(key.profiles)}" if key.profiles else "any profile"])


FIRST_KEY = (
    "workstation: this is the first key, so from now on serve (a running one too) answers only "
    "requests that carry a key: on each desk PC put that person's key on the first line of a file "
    "only they can read (chmod 600) and name it in the profile's remote.api_key_file "
    "(api_key_file: ~/.config/workstation/api-key), or set WORKSTATION_API_KEY to it "
    "(the shipped office-server profile reads it from there)."
)


def run_list(args: argparse.Namespace) -> int:
    from workstation.core.keys import KeyRing

    ring = KeyRing(read_only=True)
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
    from workstation.core.usage import open_usage_if_present

    try:
        log = open_usage_if_present()
        if log is None:
            return {}
        try:
            return log.tokens_on_day(time.time())
        finally:
            log.close()
    except WorkstationError:  # a damaged usage file is the usage command's to say: keys still list
        return {}


def run_set(args: argparse.Namespace) -> int:
    """New limits for a person's key, the rest as they were: an admin had to revoke the key and
    hand the person a new one to give them more tokens a day."""
    from workstation.core.errors import WorkstationError
    from workstation.core.keys import KeyRing, canonical_name, fold

    if args.tokens_per_day is None and args.max_parallel is None and args.profiles is None:
        raise WorkstationError("Say what to change: --tokens-per-day, --max-parallel or --profiles.")
    profiles = _profiles_given(args.profiles, "The key was left as it was.")
    ring = KeyRing()
    try:
        now = next((k for k in ring.list() if fold(k.name) == fold(canonical_name(args.name))), None)
        key = ring.change(  # (0: none, as for add: ``_checked_limits``)
            args.name,
            tokens_per_day=(now.tokens_per_day if now else None) if args.tokens_per_day is None
            else args.tokens_per_day,
            max_parallel=(now.max_parallel if now else None) if args.max_parallel is None else args.max_parallel,
            profiles=(now.profiles if now else ()) if profiles is None else profiles,
        )
    finally:
        ring.close()
    print(f"'{key.name}' now has {_limits_said(key)}; a running server applies it at the key's next request.")
    return 0


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
