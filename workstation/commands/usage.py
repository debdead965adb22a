"""``workstation usage``: what each person, profile or day used of ``workstation serve``."""

from __future__ import annotations

import argparse
import datetime as dt
import sys
from typing import TYPE_CHECKING

from workstation.commands import add_lang_arg, print_json, text_table, texts_of
from workstation.core.invocation import cli

if TYPE_CHECKING:
    from workstation.tui.i18n import Texts


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("usage", help="requests and tokens served, by person, profile or day")
    p.add_argument("--since", metavar="DATE", help="from this day (YYYY-MM-DD or DD.MM.YYYY, today, yesterday, 7d: the last 7 days) or time "
                   "(YYYY-MM-DDTHH:MM)")
    p.add_argument("--by", choices=("person", "profile", "day"), default="person", help="one row per (default person)")
    p.add_argument("--json", action="store_true", help="print it as JSON")
    add_lang_arg(p)  # its table and lines (it was refused: "--lang is not an option of 'usage'")
    p.set_defaults(func=run)


def since_said(t: Texts, since: float | None) -> str:
    """``--since``'s moment as the language writes it: its day where it is a day's start (``today``,
    ``dün``, ``7d``: "since dün" was the word typed, where the day was meant), else day and time."""
    if since is None:
        return ""
    at = dt.datetime.fromtimestamp(since)
    return t.day(at.date().isoformat()) if at.time() == dt.time() else t.moment(since)


COLUMNS = ("requests", "errors", "prompt", "cached", "generated", "tokens", "ttft", "tps")


def run(args: argparse.Namespace) -> int:
    from workstation.core.usage import SHARED, UNKNOWN, open_usage_if_present, parse_since

    t = texts_of(args)
    since = parse_since(args.since) if args.since else None
    log = open_usage_if_present()
    rows = []
    if log is not None:
        try:
            folded = log.fold_in()
            if folded:
                print(t("usage_cmd.folded_one" if folded == 1 else "usage_cmd.folded", n=f"{folded:,}"),
                      file=sys.stderr)
            rows = log.summary(args.by, since)
        finally:
            log.close()
    if args.json:
        print_json({"by": args.by, "since": since, "rows": [r.to_dict() for r in rows]})
        return 0
    if not rows:
        # (on a desk PC it said only this: what the person used is on the office server)
        print(t("usage_cmd.none_since" if since is not None else "usage_cmd.none", since=since_said(t, since),
                command=cli("serve")))
        return 0
    names = {SHARED: t("usage_cmd.shared"), UNKNOWN: t("usage_cmd.unknown")}
    if args.by == "day":  # a day as the language writes one (Turkish 07.12.2026)
        names.update({r.group: t.day(r.group) for r in rows})
    header = [t(f"usage_cmd.by.{args.by}"), *(t(f"usage_cmd.col.{c}") for c in COLUMNS)]

    def number(n: int) -> str:
        return t.number(f"{n:,}")

    table = [
        [names.get(r.group, r.group), number(r.requests), number(r.errors), number(r.prompt_tokens),
         number(r.cached_tokens), number(r.completion_tokens), number(r.tokens), *map(t.number, r.speed_texts())]
        for r in rows
    ]
    total = [
        t("usage_cmd.all"), number(sum(r.requests for r in rows)), number(sum(r.errors for r in rows)),
        number(sum(r.prompt_tokens for r in rows)), number(sum(r.cached_tokens for r in rows)),
        number(sum(r.completion_tokens for r in rows)), number(sum(r.tokens for r in rows)), "", "",
    ]
    print(text_table(header, [*table, total], set(range(1, 9))))
    for r in rows:  # (the key's day leaves them out: `usage` said 626 where `keys list` said 425)
        if r.cut_requests:
            print(t("usage_cmd.cut_one" if r.cut_requests == 1 else "usage_cmd.cut", group=names.get(r.group, r.group),
                    n=f"{r.cut_requests:,}", tokens=f"{r.cut_tokens:,}"))
    groups = {r.group for r in rows}
    for name, meaning in ((SHARED, "usage_cmd.shared_means"), (UNKNOWN, "usage_cmd.unknown_means")):
        if name in groups:  # named nowhere else
            print(f"{names[name]}: {t(meaning)}")
    return 0
