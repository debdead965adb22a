"""``workstation audit verify``: check the server's audit trail (a hash chain of JSON lines)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from workstation.commands import default_verb, print_json

if TYPE_CHECKING:
    from workstation.core.audit import AuditReport


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("audit", help="check the server's audit trail")
    verbs = p.add_subparsers(dest="verb", metavar="VERB")
    v = verbs.add_parser("verify", help="find changed, inserted or removed lines; exit 1 if any")
    v.add_argument("--dir", help="the audit folder (default: audit/ in the data folder)")
    v.add_argument("--json", action="store_true", help="print it as JSON")
    v.set_defaults(func=run_verify)
    default_verb(p, v)  # 'audit' alone verifies, as 'models' alone lists


def run_verify(args: argparse.Namespace) -> int:
    from pathlib import Path

    from workstation.core.audit import AuditError, audit_dir, verify
    from workstation.core.usage import open_usage_if_present

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
        raise AuditError(f"The audit trail in {directory} cannot be read ({err.strerror or err}).") from None
    if args.json:
        print_json({"dir": str(directory), **report.to_dict()})
        return 0 if report.ok else 1
    if not report.files:
        print(f"No audit trail in {directory} yet.")
        return 0
    if report.ok:
        files = f"{report.files} file" + ("s" if report.files != 1 else "")
        lines = f"{report.lines:,} line" + ("s" if report.lines != 1 else "")
        print(f"The audit trail is intact: {lines} in {files}, in {directory}.")
        if report.unrecorded:  # (said, not a fault: the server writes the trail first)
            print(f"note: its last {report.unrecorded:,} line{'s' if report.unrecorded != 1 else ''} ha"
                  f"{'ve' if report.unrecorded != 1 else 's'} no request in the usage file yet: a server still writing "
                  "them, or one that could not write its usage file; lines added by hand would look so too.")
        _say_cut_short(report)
        return 0
    n = len(report.problems)
    print(f"The audit trail in {directory} was tampered with ({n} problem{'s' if n != 1 else ''}):")
    for problem in report.problems:
        print(f"  {problem}")
    _say_cut_short(report)
    return 1


def _say_cut_short(report: AuditReport) -> None:
    """Entries a crash or power cut cut short as they were written: said, not a fault."""
    for where in report.cut_short:
        last = report.ends_cut and where == report.cut_short[-1]
        print(f"note: {'its last entry' if last else 'an entry'} ({where}) was cut short when the server stopped "
              f"(a crash or a power cut){'' if last else ', and the trail goes on after it'}; that is not tampering.")
