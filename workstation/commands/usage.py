"""``workstation usage``: what each person, profile or day used of ``workstation serve``."""

from __future__ import annotations

import argparse
import sys

from workstation.commands import print_json, text_table
from workstation.core.invocation import cli


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("usage", help="requests and tokens served, by person, profile or day")
    p.add_argument("--since", metavar="DATE", help="from this day (YYYY-MM-DD or DD.MM.YYYY) or time (YYYY-MM-DDTHH:MM)")
    p.add_argument("--by", choices=("person", "profile", "day"), default="person", help="one row per (default person)")
    p.add_argument("--json", action="store_true", help="print it as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from workstation.core.usage import SHARED, UNKNOWN, open_usage_if_present, parse_since

    since = parse_since(args.since) if args.since else None
    log = open_usage_if_present()
    rows = []
    if log is not None:
        try:
            folded = log.fold_in()
            if folded:
                print(f"workstation: {folded} request{'' if folded == 1 else 's'} that a stopped server could not "
                      f"write {'were' if folded != 1 else 'was'} kept aside; {'they are' if folded != 1 else 'it is'} "
                      "in the usage file now.", file=sys.stderr)
            rows = log.summary(args.by, since)
        finally:
            log.close()
    if args.json:
        print_json({"by": args.by, "since": since, "rows": [r.to_dict() for r in rows]})
        return 0
    if not rows:
        # (on a desk PC it said only this: what the person used is on the office server)
        print("No requests recorded" + (f" since {args.since}" if args.since else "") + " by this PC's server: "
              f"it records what {cli('serve')} answers here. On a desk PC, what your key used today on the "
              "office server is on the app's F11.")
        return 0
    header = [args.by, "requests", "errors", "prompt", "cached", "generated", "total tokens", "TTFT ms", "tok/s"]
    table = [
        [r.group, f"{r.requests:,}", f"{r.errors:,}", f"{r.prompt_tokens:,}", f"{r.cached_tokens:,}",
         f"{r.completion_tokens:,}", f"{r.tokens:,}", *r.speed_texts()]
        for r in rows
    ]
    total = [
        "all", f"{sum(r.requests for r in rows):,}", f"{sum(r.errors for r in rows):,}",
        f"{sum(r.prompt_tokens for r in rows):,}", f"{sum(r.cached_tokens for r in rows):,}",
        f"{sum(r.completion_tokens for r in rows):,}", f"{sum(r.tokens for r in rows):,}", "", "",
    ]
    print(text_table(header, [*table, total], set(range(1, 9))))
    for r in rows:  # (the key's day leaves them out: `usage` said 626 where `keys list` said 425)
        if r.cut_requests:
            one = r.cut_requests == 1
            print(f"{r.group}: {r.cut_requests:,} {'reply' if one else 'replies'} cut off when the server stopped "
                  f"({r.cut_tokens:,} tokens) {'is' if one else 'are'} not charged: not in these totals, nor in the "
                  "day's limit.")
    groups = {r.group for r in rows}
    for name, meaning in ((SHARED, "the operator's --api-key, or a server without people's keys"),
                          (UNKNOWN, "requests refused for a missing or wrong key (a revoked key's are its owner's)")):
        if name in groups:  # named nowhere else
            print(f"{name}: {meaning}")
    return 0
