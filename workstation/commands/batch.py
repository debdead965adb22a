"""``workstation batch DIR [-p P] [-o OUTDIR]``: the overnight summarization queue.

Resumable: run it again after any stop (Ctrl-C, kill -9, power cut) and it continues where
it stopped; finished documents are never redone, summaries are never half-written. When the
server cannot be reached the run stops the same way, with that reason and exit status 75,
and fails no document; a model that cannot be loaded stops it so too, with exit status 1. A run that ends with failed documents says
how to try them again (``--retry-failed``) and exits with status 3 (``SOME_FAILED``), so a script
tells it from a run that could not start.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
from pathlib import Path
from typing import Any

from workstation.commands import (
    MAX_TOKENS_HELP,
    add_profile_arg,
    print_json,
    print_load_notes,
    summary_profile,
    waiting_line,
)
from workstation.commands.stopping import first_signal, stop_signals, stopped, stopped_by
from workstation.core.batch_queue import (
    DB_NAME,
    BatchError,
    BatchEvent,
    BatchLock,
    BatchQueue,
    BatchStopped,
    check_folder,
    run_batch,
)
from workstation.core.documents import SUPPORTED_SUFFIXES
from workstation.core.invocation import cli, shell_word
from workstation.core.summarize import eta_text

SOME_FAILED = 3  # the run finished, and some documents failed (1: it could not run; 75: the server is away)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("batch", help="summarize a whole folder (overnight queue, resumable)")
    add_profile_arg(p)
    p.add_argument("directory", metavar="DIR", help="folder of documents (searched recursively)")
    p.add_argument("-o", "--output", metavar="OUTDIR", help="where summaries go (default DIR/summaries)")
    p.add_argument("--retry-failed", action="store_true", help="try the documents that failed before again")
    p.add_argument("--status", action="store_true", help="only show the queue, run nothing")
    p.add_argument("--json", action="store_true", help="print the final queue state as JSON")
    p.add_argument("--max-tokens", type=int, help=MAX_TOKENS_HELP)
    p.add_argument("--full-priority", action="store_true",
                   help="run at normal priority, on a computer no one is using (by default a batch "
                        "yields to the people using this one)")
    p.set_defaults(func=run)


def _engine_factory(profile: Any) -> Any:
    from workstation.core.engine_api import open_engine

    engine = open_engine(profile, child_process=False, concurrent=profile.parallel > 1)
    print_load_notes(profile, engine)  # once it loaded: a refusal says it alone
    return engine


def run(args: argparse.Namespace) -> int:
    root = Path(args.directory)
    outdir = Path(args.output) if args.output else root / "summaries"
    check_folder(root)
    if args.status:
        ran = (outdir / DB_NAME).is_file()
        lock: BatchLock | None = None
        if not ran:  # nothing is made (it made DIR/summaries and an empty queue): what a run would take
            # (on stderr: --json's output stays JSON)
            print(f"No batch has run on {root} with its summaries in {outdir}; a run would take these:",
                  file=sys.stderr)
            for other in sorted(db.parent for db in root.rglob(DB_NAME)):  # a run with -o DIR/elsewhere
                command = cli(f"batch {shell_word(str(root))} -o {shell_word(str(other))} --status")
                print(f"(A queue of its documents is in {other}: '{command}' shows it.)", file=sys.stderr)
        else:
            try:
                lock = BatchLock(outdir)  # no run is working: a "running" row is a killed run's
            except BatchError:
                pass  # a run is working: its rows are as they are
        queue = BatchQueue(outdir / DB_NAME if ran else Path(":memory:"))
        try:
            if lock is not None:
                queue.recover(outdir)  # as the next run will: pending again, or done if it was written
            queue.scan(root, outdir)  # as the next run will see it: documents added since are listed too
            rows = queue.rows()
            counts = queue.counts()
        finally:
            queue.close()
            if lock is not None:
                lock.release()
        if args.json:
            # a summary's file only where one was written (a failed document's named a file that was not there)
            print_json({"counts": counts, "files": [{**r.__dict__, "output": r.output if r.status == "done" else None}
                                                    for r in rows]})
        else:
            for r in rows:
                print(f"{r.status:8} {r.path}" + (f" — {r.reason}" if r.reason else ""))
            print(_counts_line(counts))
            if counts.get("failed"):
                print(_retry_line(counts["failed"], see_why=False))
        return 0

    profile = summary_profile(args)  # (before the queue is touched: a bad --max-tokens is said alone)
    cancel = threading.Event()

    def _on_stop(_sig: int) -> None:  # Ctrl-C, a kill, a closed terminal: the document in hand goes back in the queue
        cancel.set()

    waiting_said: list[tuple[str, bool, bool] | None] = [None]  # the office server's silence said, for which document

    def on_event(ev: BatchEvent) -> None:
        if ev.kind == "start" and ev.counts is not None:
            if profile.backend == "llama" and not args.full_priority:  # (a remote profile's work is on the server)
                _yield_to_people()  # once this run holds the folder (a refused run says one sentence)
            skipped = ev.detail.splitlines()
            if skipped:
                shown = ", ".join(skipped[:5]) + (f" and {len(skipped) - 5} more" if len(skipped) > 5 else "")
                print(f"batch: left alone {len(skipped)} file{'s' if len(skipped) != 1 else ''} of kinds it does "
                      f"not read ({shown}); it reads {', '.join(SUPPORTED_SUFFIXES)}", file=sys.stderr)
            if ev.unnamed:
                shown = ", ".join(ev.unnamed[:5]) + (f" and {len(ev.unnamed) - 5} more" if len(ev.unnamed) > 5 else "")
                one = len(ev.unnamed) == 1
                print(f"batch: left alone {len(ev.unnamed)} document{'' if one else 's'} whose "
                      f"name{' is' if one else 's are'} not UTF-8 text ({shown}): probably from another computer "
                      f"or an old zip archive; rename {'it' if one else 'them'}, then run the same command again",
                      file=sys.stderr)
            if not any(ev.counts.values()):
                print(f"batch: found no documents in {root}", file=sys.stderr)
            print(f"batch: {_counts_line(ev.counts)}", file=sys.stderr)
        elif ev.kind == "file-start":
            c = ev.counts or {}
            at = c.get("done", 0) + c.get("failed", 0) + c.get("running", 0)  # (this one is running)
            print(f"batch: summarizing {ev.path} (document {at} of {sum(c.values())})", file=sys.stderr)
        elif ev.kind == "file-done":
            left = (ev.counts or {}).get("pending", 0) + (ev.counts or {}).get("running", 0)
            rest = (f" ({eta_text(ev.eta_s, 'about')} for the {_documents(left)} left, at this run's pace)"
                    if ev.eta_s is not None and left else "")
            print(f"batch: done {ev.path} -> {ev.detail}{rest}", file=sys.stderr)
        elif ev.kind == "file-failed":
            print(f"batch: failed {ev.path}: {ev.detail}", file=sys.stderr)
        elif ev.kind == "file-pending":
            print(f"batch: {ev.path} is back in the queue (not failed)", file=sys.stderr)
        elif ev.kind == "progress" and ev.progress is not None and ev.progress.waiting is not None:
            said = (ev.path, ev.progress.waiting.own, ev.progress.waiting.stalled)  # once a document
            if said != waiting_said[0]:
                waiting_said[0] = said
                print(f"batch:   {ev.path}: {waiting_line(ev.progress.waiting)}", file=sys.stderr)
        elif ev.kind == "progress" and ev.progress is not None and ev.progress.stage == "chunking":
            # before its parts are known (a long document is measured for seconds): said, not a count
            print(f"batch:   {ev.path}: measuring it to cut it into parts", file=sys.stderr)
        elif ev.kind == "progress" and ev.progress is not None and ev.progress.stage == "kept":
            p = ev.progress
            print(f"batch:   {ev.path}: {p.chunks_done} of {p.chunks_total} parts kept from the run that stopped",
                  file=sys.stderr)
        elif ev.kind == "progress" and ev.progress is not None and ev.progress.stage == "map" \
                and not ev.progress.inside_part:  # a line a part, as it ends (a log, not a live bar)
            p = ev.progress
            eta = f", {eta_text(p.eta_s)}" if p.eta_s is not None else ""
            print(f"batch:   {ev.path}: {p.chunks_done} of {p.chunks_total} parts done{eta}", file=sys.stderr)

    stopped_for: BatchStopped | None = None
    with stop_signals(_on_stop) as signals:
        try:
            counts = run_batch(root, outdir, profile, _engine_factory, on_event,
                               retry_failed=args.retry_failed, cancel=cancel)
        except BatchStopped as err:
            stopped_for, counts = err, err.counts
    if args.json:
        print_json({"counts": counts, "output": str(outdir)})
    else:
        print(f"batch: {_counts_line(counts)}; summaries in {outdir}", file=sys.stderr)
    again = "run the same command again to continue where it stopped" + _also_retry(counts)
    if stopped_for is not None:  # the server (or the engine), not the documents: nothing failed for it
        fix = "" if stopped_for.temporary else "fix that, then "
        raise BatchStopped(
            f"stopped: {stopped_for.reason} {_documents(counts['pending'], 'is', 'are')} still pending "
            f"(none was marked failed); {fix}{again}.",
            counts, stopped_for.temporary,
        )
    if cancel.is_set():
        raise stopped(f"stopped by {stopped_by(first_signal(signals))}; {again}.", first_signal(signals))
    if counts.get("failed"):
        for name, why in _failed(outdir)[:FAILED_NAMED]:  # named where the night's log ends (--status alone did)
            print(f"batch:   failed {name}: {why}", file=sys.stderr)
        if counts["failed"] > FAILED_NAMED:
            print(f"batch:   and {counts['failed'] - FAILED_NAMED} more (--status lists them)", file=sys.stderr)
        print(f"batch: {_retry_line(counts['failed'], see_why=counts['failed'] > FAILED_NAMED)}", file=sys.stderr)
        return SOME_FAILED
    return 0


FAILED_NAMED = 5  # the failed documents named at the end of a run, with why


def _failed(outdir: Path) -> list[tuple[str, str]]:
    """The queue's failed documents and why, each reason cut to a line."""
    queue = BatchQueue(outdir / DB_NAME)
    try:
        rows = [r for r in queue.rows() if r.status == "failed"]
    finally:
        queue.close()
    said = [(r.path, " ".join((r.reason or "").split())) for r in rows]  # (one line each)
    return [(path, why[:300] + ("…" if len(why) > 300 else "")) for path, why in said]


def _documents(n: int, one: str = "", many: str = "") -> str:
    """'1 document is', '3 documents are' (or without the verb)."""
    return f"{n} document{'' if n == 1 else 's'}" + (f" {one if n == 1 else many}" if one else "")


def _retry_line(failed: int, see_why: bool = True) -> str:
    why = " (see why with --status)" if see_why else ""
    return (f"{_documents(failed)} failed{why}; to try {'it' if failed == 1 else 'them'} again, "
            "run the batch with --retry-failed.")


def _also_retry(counts: dict[str, int]) -> str:
    failed = counts.get("failed", 0)
    return f" (add --retry-failed to also try the {_documents(failed)} that failed)" if failed else ""


BATCH_NICENESS = 10


def _yield_to_people() -> None:
    """An overnight queue often runs while people work: it takes the CPU only when they leave
    it (a lower priority; with threads: auto the engine also leaves their busy cores alone)."""
    try:
        now = os.nice(0)
        if now < BATCH_NICENESS:
            os.nice(BATCH_NICENESS - now)
    except (AttributeError, OSError):
        return
    print(f"batch: running at low priority (nice {BATCH_NICENESS}) so people using this computer come first",
          file=sys.stderr)


def _counts_line(counts: dict[str, int]) -> str:
    return ", ".join(f"{n} {status}" for status, n in counts.items())
