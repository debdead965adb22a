"""``workstation keys add|list|set|rename|revoke``: one API key per person for ``workstation serve``.
What it says is in ``--lang``'s language, else the app's (F9), else this PC's: its lines under
``keys_cmd.*`` in the locale files, its mistakes (and the key ring's) ``keys.*`` phrases."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from workstation.commands import add_lang_arg, default_verb, print_json, text_table, texts_of
from workstation.core.invocation import cli, shell_word

if TYPE_CHECKING:
    from workstation.core.keys import ApiKey
    from workstation.tui.i18n import Texts


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("keys", help="API keys per person for serve: add, list, set, rename, revoke")
    verbs = p.add_subparsers(dest="verb", metavar="VERB")
    add = verbs.add_parser("add", help="make a key for a person and print it (once)")
    add.add_argument("name", help="the person's name, as usage and the audit trail show it")
    _limit_options(add, "left out: what the person's revoked key had, else {none}")
    add.add_argument("--json", action="store_true", help="print it as JSON")
    add_lang_arg(add)  # (each verb's words were English on a Turkish PC)
    add.set_defaults(func=run_add)
    ls = verbs.add_parser("list", help="keys with their limits and last use (never the key)")
    ls.add_argument("--all", action="store_true", help="revoked keys too")
    ls.add_argument("--json", action="store_true",
                    help="print it as JSON (tokens_today: a person's, once, on their key in use; not on their revoked ones)")
    add_lang_arg(ls)
    ls.set_defaults(func=run_list)
    st = verbs.add_parser("set", help="change a person's limits; a running server applies them at the next request")
    st.add_argument("name")
    _limit_options(st, "left out: as it is")
    add_lang_arg(st)
    st.set_defaults(func=run_set)
    rn = verbs.add_parser("rename", help="give a person's key another name; the key, its limits, today's tokens and "
                          "its usage go with it")
    rn.add_argument("name")
    rn.add_argument("new_name", metavar="NEW_NAME")
    add_lang_arg(rn)
    rn.set_defaults(func=run_rename)
    rv = verbs.add_parser("revoke", help="revoke a person's key; a running server refuses it at once")
    rv.add_argument("name")
    add_lang_arg(rv)
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


def _profiles_given(typed: str | None, adding: bool, t: Texts) -> list[str] | None:
    """``--profiles`` as ``add`` and ``set`` take it: None left out, [] any, else the names (``_profiles_named``)."""
    if typed is None:
        return None
    return [] if typed.strip().lower() == "any" else _profiles_named(typed, adding, t)


def _profiles_named(typed: str, adding: bool, t: Texts) -> list[str]:
    """The profiles a key may use, as typed (a,b); a close miss of a profile's name is refused
    (a typo made a key that could never be used), and so is none (``--profiles ""`` made a key
    for every profile without a word: it says how to ask for that). One not there yet is noted."""
    from workstation.core.errors import WorkstationError
    from workstation.core.profile_folders import profile_paths
    from workstation.core.profile_lookup import close_profile

    profiles = [p.strip() for p in typed.split(",") if p.strip()]
    if not profiles:
        raise WorkstationError(said=[("keys.no_profiles_add" if adding else "keys.no_profiles_set", {})])
    known = {p.stem for p in profile_paths()}
    for name in profiles:
        guess = close_profile(name, sorted(known)) if name not in known else ""
        if guess:
            raise WorkstationError(said=[("keys.no_such_profile", {
                "profile": name, "guess": guess, "then": ("keys.no_key_made" if adding else "keys.left_as_it_was", {})})])
    for name in profiles:
        if name not in known:
            print(t("keys_cmd.no_profile_yet", profile=name), file=sys.stderr)
    return profiles


def run_add(args: argparse.Namespace) -> int:
    from workstation.core.keys import KeyRing

    t = texts_of(args)
    profiles = _profiles_given(args.profiles, True, t)
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
    print(t("keys_cmd.hand_over", name=key.name), file=sys.stderr)
    if first:  # a running server wanted no key a moment ago: the desk PCs it served now get 401
        print(t("keys_cmd.first_key"), file=sys.stderr)
    if before is None:
        return 0
    kept = [option for option, given, had in (
        ("--tokens-per-day", args.tokens_per_day, before.tokens_per_day),
        ("--max-parallel", args.max_parallel, before.max_parallel),
        ("--profiles", args.profiles, before.profiles)) if given is None and had]
    if kept:  # (the new key had no limits: a day's budget set before was lost without a word)
        # (those given here are said as the key's now, not as kept: "keeps … (90,000 tokens a day" of a 90,000 just given)
        value = {"--tokens-per-day": "keys_cmd.value_tokens", "--max-parallel": "keys_cmd.value_parallel",
                 "--profiles": "keys_cmd.value_profiles"}[kept[0]]
        print(t("keys_cmd.kept", name=key.name, limits=_limits_said(key, t),
                command=cli("keys set " + shell_word(key.name, readable=True) + " " + kept[0]), value=t(value),
                none=" ".join(f"{option} {'any' if option == '--profiles' else 0}" for option in kept)),
              file=sys.stderr)
    elif before.tokens_per_day or before.max_parallel or before.profiles:  # all cleared or given: said as they are now
        print(t("keys_cmd.not_kept", name=key.name, limits=_limits_said(key, t)), file=sys.stderr)
    return 0


def _limits_said(key: ApiKey, t: Texts) -> str:
    """A key's limits in words: "3,000 tokens a day; 2 at once; any profile"."""
    return "; ".join([
        t("keys_cmd.tokens_a_day", n=f"{key.tokens_per_day:,}") if key.tokens_per_day else t("keys_cmd.no_daily_limit"),
        t("keys_cmd.at_once", n=str(key.max_parallel) if key.max_parallel else t("keys_cmd.server_allows")),
        t("keys_cmd.these_profiles", names=", ".join(key.profiles)) if key.profiles else t("keys_cmd.any_profile")])


def run_list(args: argparse.Namespace) -> int:
    from workstation.core.keys import KeyRing

    t = texts_of(args)
    ring = KeyRing(read_only=True)
    try:
        keys = ring.list(include_revoked=args.all)
        revoked = len(ring.list(include_revoked=True)) - len(ring.list())
    finally:
        ring.close()
    today = _used_today()
    carries = _day_said_on(keys)
    if args.json:  # (the table's blank: no "tokens_today" on a revoked key of a person with one in use)
        print_json({"keys": [{**k.to_dict(), **({"tokens_today": today.get(k.name, 0)} if said else {})}
                             for k, said in zip(keys, carries, strict=True)]})
        return 0
    if not keys and not revoked:
        print(t("keys_cmd.no_keys", command=cli("keys add " + t("cli.name"))))
        return 0
    if not keys:  # revoked ones still count: serve is closed, not open to all (and said nowhere)
        print(t("keys_cmd.none_in_use", n=str(revoked), command=cli("keys list --all"), all_revoked=_all_revoked(t)))
        return 0
    columns = ["name", "created", "last_used", "today", "tokens_per_day", "max_parallel", "profiles"]
    header = [t(f"keys_cmd.col.{c}") for c in columns + (["revoked"] if args.all else [])]

    def when(moment: float | None) -> str:
        return t.moment(moment) if moment is not None else t("keys_cmd.never")

    rows = []
    for k, carries_day in zip(keys, carries, strict=True):
        used = today.get(k.name, 0)
        over = t("keys_cmd.over") if k.tokens_per_day and used > k.tokens_per_day else ""
        said = t.number(f"{used:,}") + over if carries_day else ""
        row = [
            k.name, when(k.created), when(k.last_used), said,
            t.number(f"{k.tokens_per_day:,}") if k.tokens_per_day else t("keys_cmd.no_limit"),
            str(k.max_parallel) if k.max_parallel else t("keys_cmd.server_allows"),  # (as `keys set` says it)
            ",".join(k.profiles) or t("keys_cmd.any"),
        ]
        if args.all:
            row.append(when(k.revoked) if k.revoked else "")
        rows.append(row)
    print(text_table(header, rows, {3, 4, 5}))
    return 0


def _day_said_on(keys: list[ApiKey]) -> list[bool]:
    """Which of ``keys`` (`keys list`'s rows) say their person's tokens today, in the table and in
    ``--json``: the day's tokens are the person's (kept by name), said once, on their key in use,
    else (every key of theirs revoked) on the one revoked last; not on the others (the table
    read as twice them, and the JSON gave them on both of Mehmet's keys)."""
    carrier: dict[str, int] = {}
    for i, k in enumerate(keys):
        held = carrier.get(k.name)
        if held is None or (keys[held].revoked is not None
                            and (k.revoked is None or k.revoked >= keys[held].revoked)):
            carrier[k.name] = i
    return [carrier[k.name] == i for i, k in enumerate(keys)]


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

    t = texts_of(args)
    if args.tokens_per_day is None and args.max_parallel is None and args.profiles is None:
        raise WorkstationError(said=[("keys.say_what", {})])
    profiles = _profiles_given(args.profiles, False, t)
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
    print(t("keys_cmd.set_done", name=key.name, limits=_limits_said(key, t)))
    return 0


def run_rename(args: argparse.Namespace) -> int:
    """A person's keys (in use and revoked) under a new name, the same secrets and limits, and
    their usage rows too (kept by name, and by key for rows written later): ``usage --by person``
    and today's tokens go on under it. A running server takes the new name at the key's next
    request; a reply of theirs it still writes is written under the new name."""
    from workstation.core.keys import KeyRing
    from workstation.core.paths import data_dir
    from workstation.core.usage import DB_NAME, UsageLog

    t = texts_of(args)
    ring = KeyRing()
    try:
        old, key = ring.rename(args.name, args.new_name)
        # (their keys, by id: a reply a running server still writes goes under the new name too)
        ids = [k.id for k in ring.list(include_revoked=True) if k.name == key.name and k.id is not None]
    finally:
        ring.close()
    if old != key.name and (data_dir() / DB_NAME).exists():
        usage = UsageLog()
        try:
            usage.rename(old, key.name, ids)
        finally:
            usage.close()
    print(t("keys_cmd.renamed", old=old, name=key.name))
    return 0


def run_revoke(args: argparse.Namespace) -> int:
    from workstation.core.keys import KeyRing

    t = texts_of(args)
    ring = KeyRing()
    try:
        key = ring.revoke(args.name)
        left = len(ring.list())
    finally:
        ring.close()
    print(t("keys_cmd.revoked", name=key.name))
    if not left:
        print(t("keys_cmd.last_key", all_revoked=_all_revoked(t)))
    return 0


def _all_revoked(t: Texts) -> str:
    return t("keys_cmd.all_revoked", command=cli("keys add " + t("cli.name")))
