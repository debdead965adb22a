"""``workstation audit verify``: check the server's audit trail (a hash chain of JSON lines)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from workstation.commands import add_lang_arg, default_verb, print_json, texts_of
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
