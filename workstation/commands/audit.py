"""``workstation audit verify``: check the server's audit trail (a hash chain of JSON lines);
``workstation audit show``: its lines in plain columns (when, who, what, status, tokens, cut)."""

from __future__ import annotations

import argparse
import shlex
from typing import TYPE_CHECKING, Any

from workstation.commands import add_lang_arg, default_verb, print_json, text_table, texts_of
from workstation.core.invocation import cli
from workstation.core.phrases import say

if TYPE_CHECKING:
    from workstation.core.audit import AuditReport
    from workstation.tui.i18n import Texts


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("audit", help="check the server's audit trail")
    verbs = p.add_subparsers(dest="verb", metavar="VERB")
    v = verbs.add_parser("verify", help="find changed, inserted or removed lines; exit 1 if any")
    v.add_argument("--dir", help="the audit folder (default: audit/ in the data folder)")
    v.add_argument("--json", action="store_true", help="print it as JSON")
    add_lang_arg(v)  # what it found (it was refused: "--lang is not an option")
    v.set_defaults(func=run_verify)
    s = verbs.add_parser("show", help="list the trail's lines: when, who, what, status, tokens, cut or not")
    s.add_argument("--since", metavar="DATE", help="from this day (YYYY-MM-DD or DD.MM.YYYY, today, yesterday, 7d: the last "
                   "7 days) or time (YYYY-MM-DDTHH:MM)")
    s.add_argument("--key", metavar="NAME", help="only this person's lines (the key's name)")
    s.add_argument("--dir", help="the audit folder (default: audit/ in the data folder)")
    s.add_argument("--json", action="store_true", help="print the lines as JSON")
    add_lang_arg(s)
    s.set_defaults(func=run_show)
    default_verb(p, v)  # 'audit' alone verifies, as 'models' alone lists


def run_verify(args: argparse.Namespace) -> int:
    from pathlib import Path

    from workstation.core.audit import AuditError, audit_dir, verify
    from workstation.core.usage import open_usage_if_present

    t = texts_of(args)
    directory = Path(args.dir) if args.dir else audit_dir()
    log = open_usage_if_present() if not args.dir else None
    try:
        head = log.last_audit() if log is not None else None
        known = log.audit_lines() if log is not None else None
    finally:
        if log is not None:
            log.close()
    try:
        report = verify(directory, head, known)
    except OSError as err:
        raise AuditError(t("audit_cmd.cannot_read", dir=str(directory), why=str(err.strerror or err))) from None
    if args.json:
        print_json({"dir": str(directory), **report.to_dict()})
        return 0 if report.ok else 1
    if not report.files:
        print(t("audit_cmd.none", dir=str(directory)))
        return 0
    if report.ok:
        print(t("audit_cmd.intact", lines=f"{report.lines:,}", files=f"{report.files:,}", dir=str(directory)))
        print(t("audit_cmd.show_hint", command=cli("audit show") + (f" --dir {shlex.quote(args.dir)}" if args.dir else "")))
        if report.unrecorded:  # (said, not a fault: the server writes the trail first)
            print(t("audit_cmd.unrecorded_one" if report.unrecorded == 1 else "audit_cmd.unrecorded",
                    n=f"{report.unrecorded:,}"))
        _say_cut_short(report, t)
        return 0
    print(t("audit_cmd.tampered", dir=str(directory), n=f"{len(report.problems):,}"))
    for problem in report.said:
        print(f"  {say([problem], t.get)}")
    _say_cut_short(report, t)
    return 1


def _say_cut_short(report: AuditReport, t: Texts) -> None:
    """Entries a crash or power cut cut short as they were written: said, not a fault."""
    for where in report.cut_short_said:
        last = report.ends_cut and where == report.cut_short_said[-1]
        print(t("audit_cmd.cut_last" if last else "audit_cmd.cut", where=where))


def run_show(args: argparse.Namespace) -> int:
    """The trail's lines as ``usage`` shows its rows: a table in local time, filtered by
    ``--since`` and ``--key`` (to answer "who used it at 23:31" without reading the JSON)."""
    import datetime as dt
    from pathlib import Path

    from workstation.core.audit import AuditError, audit_dir, entries
    from workstation.core.usage import SHARED, UNKNOWN, parse_since

    t = texts_of(args)
    since = parse_since(args.since) if args.since else None
    directory = Path(args.dir) if args.dir else audit_dir()

    def when(entry: dict[str, Any]) -> float | None:
        try:
            return dt.datetime.fromisoformat(str(entry.get("time"))).timestamp()
        except ValueError:
            return None

    who = args.key.casefold() if args.key else None
    try:
        lines = [e for e in entries(directory)
                 if (since is None or (when(e) or 0) >= since) and (who is None or str(e.get("who", "")).casefold() == who)]
    except OSError as err:
        raise AuditError(t("audit_cmd.cannot_read", dir=str(directory), why=str(err.strerror or err))) from None
    if args.json:
        print_json({"dir": str(directory), "since": since, "lines": lines})
        return 0
    if not lines:
        print(t("audit_cmd.show_none" if args.since or args.key else "audit_cmd.none", dir=str(directory)))
        return 0
    names = {SHARED: t("usage_cmd.shared"), UNKNOWN: t("usage_cmd.unknown")}

    def number(value: Any) -> str:
        return t.number(f"{value:,}") if isinstance(value, int) else ""

    def status(value: Any) -> str:
        words = t.get(f"audit_cmd.status.{value}")
        return t("audit_cmd.status_said", words=words, status=str(value)) if words else t("audit_cmd.status_other",
                                                                                        status=str(value))

    def cut(value: Any) -> str:
        return "" if not value else (t.get(f"audit_cmd.cut_why.{value}") or str(value).replace("_", " "))

    header = [t(f"audit_cmd.col.{c}") for c in ("when", "who", "what", "status", "prompt", "generated", "cut")]
    rows = [[t.moment(when(e)), names.get(str(e.get("who")), str(e.get("who", ""))), str(e.get("route", "")),
             status(e.get("status")), number(e.get("prompt_tokens")), number(e.get("completion_tokens")), cut(e.get("cut"))]
            for e in lines]
    print(text_table(header, rows, {4, 5}))
    return 0
