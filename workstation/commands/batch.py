"""``workstation batch DIR [-p P] [-o OUTDIR]``: the overnight summarization queue.

Resumable: run it again after any stop (Ctrl-C, kill -9, power cut) and it continues where
it stopped; finished documents are never redone, summaries are never half-written. When the
server cannot be reached the run stops the same way, with that reason and exit status 75,
and fails no document; a model that cannot be loaded stops it so too, with exit status 1. A document
with no text (an empty file) is skipped, not failed. A run that ends with failed documents says what
to do for each: fix the document where it is at fault (damaged, not what its name says: saved again,
the next run takes it by itself), ``--retry-failed`` only where another try can help (the PC's or the
server's reason); it exits with status 3 (``SOME_FAILED``), so a script tells it from a run that could
not start. ``--status`` is a report: it exits 0 whatever the queue holds (``EXIT_HELP``).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workstation.commands import (
    MAX_TOKENS_HELP,
    add_lang_arg,
    add_profile_arg,
    print_json,
    print_load_notes,
    said_in,
    stdout_gone,
    summary_profile,
    texts_of,
    waiting_line,
)
from workstation.commands.stopping import first_signal, stop_signals, stopped, stopped_by
from workstation.core.batch_queue import (
    DB_NAME,
    OUTPUT_FOLDER,
    BatchError,
    BatchEvent,
    BatchLock,
    BatchQueue,
    BatchStopped,
    QueueRow,
    all_summaries_path,
    check_folder,
    queue_rows,
    run_batch,
)
from workstation.core.documents import SUPPORTED_SUFFIXES, the_documents_own
from workstation.core.errors import WorkstationError
from workstation.core.events import SERVER_STOPPING, ServerWaiting
from workstation.core.invocation import cli, shell_word
from workstation.core.summarize import eta_text

if TYPE_CHECKING:
    from workstation.core.phrases import Phrase
    from workstation.tui.i18n import Texts

SOME_FAILED = 3  # the run finished, and some documents failed (1: it could not run; 75: the server is away)
EXIT_HELP = """\
exit status:
  0         every document is summarized or skipped (it has no text); --status always 0
  1         the batch could not start or go on (the folder, the profile or the model)
  2         the command line is wrong
  3         the run ended, but some documents failed: its last lines say which and what to do
  75        the office server could not be reached: nothing failed, run the same command later
  130, 143  stopped (Ctrl-C, or by the system): run the same command again to go on
  141       stopped as the program reading its words (| tee, | head) ended: run it again to go on"""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("batch", help="summarize a whole folder (overnight queue, resumable)", epilog=EXIT_HELP,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
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
    add_lang_arg(p)  # what it says on stderr as it goes (it was English on a Turkish PC)
    p.set_defaults(func=run)


def engine_factory(profile: Any, t: Texts | None = None) -> Any:
    """The engine a batch runs on, its load notes said in ``t``'s language (English without)."""
    from workstation.core.engine_api import open_engine
    from workstation.tui.i18n import Texts

    engine = open_engine(profile, child_process=False, concurrent=profile.parallel > 1)
    print_load_notes(profile, engine, t or Texts("en"))  # once it loaded: a refusal says it alone
    return engine


def _eta(t: Texts, seconds: float | None, word: str, soon: str | None = None, revised: bool = False,
         high: float | None = None) -> str:
    """Time left as ``eta_text`` says it, in F6's words: 'about 1 min 5 s', in Turkish 'yaklaşık
    1 dk 5 sn' (English said 'about 1m05s'); the ``soon`` key's words where it rounds to none;
    ``high``: rough, a range up to it ('about 2–5 min')."""
    return eta_text(seconds, t(word), t(soon) if soon else None, high=high, revised=revised, lookup=t.get)


def time_left(t: Texts, seconds: float | None, left: int, high: float | None = None) -> str:
    """What a document done says of the ``left`` documents after it: ' (3 documents left, about
    1 min 5 s at this run's pace)'; 'nearly finished' where the estimate rounds to none (it said
    'about 0s for the 1 document left'); nothing where none are left or no pace is known yet.
    ``high``: rough (``Pace.estimate``), the range's top as a share of ``seconds``: ' (3 documents
    left, about 2–5 min at this run's pace)'."""
    if seconds is None or not left:
        return ""
    eta = _eta(t, seconds, "batch_cmd.about", "summarize.eta_soon", high=seconds * high if high else None)
    if high and eta.startswith(t("batch_cmd.about") + " "):  # ("about about 2–5 min")
        eta = eta[len(t("batch_cmd.about")) + 1:]
    return t("batch_cmd.time_left", eta=eta, n=left)


def run(args: argparse.Namespace) -> int:
    from workstation.tui.i18n import LANGUAGES, Texts

    t = texts_of(args)  # (English under --json)
    root = Path(args.directory)
    outdir = Path(args.output) if args.output else root / OUTPUT_FOLDER
    check_folder(root)
    if args.status:
        ran = (outdir / DB_NAME).is_file()
        lock: BatchLock | None = None
        if not ran:  # nothing is made (it made DIR/summaries and an empty queue): what a run would take
            # (on stderr: --json's output stays JSON)
            print(t("batch_cmd.not_run", folder=str(root), path=str(outdir)), file=sys.stderr)
            for other in sorted(db.parent for db in root.rglob(DB_NAME)):  # a run with -o DIR/elsewhere
                command = cli(f"batch {shell_word(str(root))} -o {shell_word(str(other))} --status")
                print(t("batch_cmd.queue_elsewhere", folder=str(other), command=command), file=sys.stderr)
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
            # (why a document failed in English alone: its phrases are the text's words)
            print_json({"counts": counts, "files": [{**{k: v for k, v in r.__dict__.items() if k != "said"},
                                                     "output": r.output if r.status == "done" else None}
                                                    for r in rows]})
        else:
            if ran:  # which output folder this queue is of (-o names another, with a queue of its own)
                print(t("batch_cmd.status_of", folder=str(root), path=str(outdir)))
            width = max(8, *(len(t(f"batch_cmd.status.{status}")) for status in {r.status for r in rows}))
            for r in rows:
                why = _why(r.reason, r.said, args) if r.reason else ""
                if r.parts_kept:  # Ctrl-C in the middle of it: the parts it finished are not done again
                    why = t("batch_cmd.kept_parts", n=r.parts_kept)
                print(f"{t(f'batch_cmd.status.{r.status}'):{width}} {r.path}" + (f" — {why}" if why else ""))
            print(_counts_line(counts, t))
            for line in _what_to_do([r for r in rows if r.status == "failed"], t, see_why=False):
                print(line)
        return 0  # (a report, whatever the queue holds: EXIT_HELP)

    profile = summary_profile(args)  # (before the queue is touched: a bad --max-tokens is said alone)
    cancel = threading.Event()

    def _on_stop(_sig: int) -> None:  # Ctrl-C, a kill, a closed terminal: the document in hand goes back in the queue
        cancel.set()

    under_way_said: dict[str, int] = {}  # the documents whose part under way was said (once each)
    waiting_said: list[tuple[str | None, bool, bool, str] | None] = [None]  # the office server's silence said, for which document

    def said_waiting(path: str | None, waiting: ServerWaiting) -> bool:
        """The office server's silence said, once a document; whether the report is that alone:
        a server that began to stop still writes the summary (``SERVER_STOPPING`` is said with
        every report from then on), whose parts are said as they end (they were not)."""
        said = (path, waiting.own, waiting.stalled, waiting.held)
        if said != waiting_said[0]:
            waiting_said[0] = said
            print(f"batch:   {path}: {waiting_line(waiting, t)}", file=sys.stderr)
        return waiting.held != SERVER_STOPPING  # (silent: nothing more to say of this report)

    def on_event(ev: BatchEvent) -> None:
        if ev.kind == "progress" and ev.progress is not None and ev.progress.waiting is not None \
                and said_waiting(ev.path, ev.progress.waiting):
            return
        if ev.kind == "start" and ev.counts is not None:
            if profile.backend == "llama" and not args.full_priority:  # (a remote profile's work is on the server)
                _yield_to_people(t)  # once this run holds the folder (a refused run says one sentence)
            skipped = ev.detail.splitlines()
            if skipped:
                print("batch: " + t("batch_cmd.skipped", n=len(skipped), shown=_first_five(skipped, t),
                                    kinds=", ".join(SUPPORTED_SUFFIXES)), file=sys.stderr)
            if ev.unnamed:
                one = len(ev.unnamed) == 1
                print("batch: " + t("batch_cmd.unnamed_one" if one else "batch_cmd.unnamed", n=len(ev.unnamed),
                                    shown=_first_five(ev.unnamed, t)), file=sys.stderr)
            if ev.exports:  # (F7 writes beside the documents: not one of them)
                print("batch: " + t("batch_cmd.exports", n=len(ev.exports), shown=_first_five(ev.exports, t)),
                      file=sys.stderr)
            if not any(ev.counts.values()):
                print("batch: " + t("batch_cmd.none_found", folder=str(root)), file=sys.stderr)
            print(f"batch: {_counts_line(ev.counts, t)}", file=sys.stderr)
        elif ev.kind == "file-start":
            c = ev.counts or {}
            at = c.get("done", 0) + c.get("failed", 0) + c.get("skipped", 0) + c.get("running", 0)  # (this one is running)
            print("batch: " + t("batch_cmd.summarizing", path=ev.path, at=at, total=sum(c.values())), file=sys.stderr)
        elif ev.kind == "file-done":
            left = (ev.counts or {}).get("pending", 0) + (ev.counts or {}).get("running", 0)
            print("batch: " + t("batch_cmd.done", path=ev.path, file=ev.detail, rest=time_left(t, ev.eta_s, left, ev.eta_high)),
                  file=sys.stderr)
        elif ev.kind == "file-failed":
            print("batch: " + t("batch_cmd.failed", path=ev.path, why=_why(ev.detail, ev.said, args)), file=sys.stderr)
        elif ev.kind == "file-skipped":  # (no text in it: nothing to summarize, nothing to try again)
            print("batch: " + t("batch_cmd.skipped_one", path=ev.path, why=_why(ev.detail, ev.said, args)),
                  file=sys.stderr)
        elif ev.kind == "file-pending":
            print("batch: " + t("batch_cmd.back_in_queue", path=ev.path), file=sys.stderr)
        elif ev.kind == "progress" and ev.progress is not None and ev.progress.stage == "chunking":
            # before its parts are known (a long document is measured for seconds): said, not a count
            print(f"batch:   {ev.path}: " + t("batch_cmd.measuring"), file=sys.stderr)
        elif ev.kind == "progress" and ev.progress is not None and ev.progress.stage == "map" \
                and ev.progress.inside_part and ev.progress.part \
                and (ev.progress.waiting is None or ev.progress.waiting.held == SERVER_STOPPING) \
                and (ev.progress.eta_s is not None or ev.progress.part_read >= 1.0) \
                and under_way_said.get(ev.path or "") is None:
            # a document's first part under way, once its time left is known (a few seconds in) or it is read: the part,
            # how much of it is read, the time left; a resumed one said nothing for 75 s after its parts kept
            p = ev.progress
            under_way_said[ev.path or ""] = p.part
            print(f"batch:   {ev.path}: " + t("batch_cmd.reading_part", part=p.part, total=p.chunks_total,
                                             read=int(p.part_read * 100),
                                             eta=_eta(t, p.eta_s, "batch_cmd.eta", "summarize.eta_soon",
                                                      p.eta_revised, p.eta_high_s) if p.eta_s is not None
                                             # (read, its time not known: "time left …")
                                             else t("batch_cmd.writing_summary")), file=sys.stderr)
        elif ev.kind == "progress" and ev.progress is not None and ev.progress.stage == "kept":
            p = ev.progress
            print(f"batch:   {ev.path}: " + t("batch_cmd.parts_kept", done=p.chunks_done, total=p.chunks_total),
                  file=sys.stderr)
        elif ev.kind == "progress" and ev.progress is not None and ev.progress.stage == "map" \
                and not ev.progress.inside_part:  # a line a part, as it ends (a log, not a live bar)
            p = ev.progress
            # a document's last part done, its summary being written: said so, not a time left ("2 of 2
            # parts done, ETA 42s"; "ETA 0s"): the parts' summaries put together, or the one part's done
            if p.chunks_done >= p.chunks_total:
                eta = t("batch_cmd.putting_together") if p.chunks_total > 1 else f", {t('summarize.eta_soon')}"
            else:
                eta = f", {_eta(t, p.eta_s, 'batch_cmd.eta', 'summarize.eta_soon', p.eta_revised)}" if p.eta_s is not None else ""
            print(f"batch:   {ev.path}: " + t("batch_cmd.parts_done", done=p.chunks_done, total=p.chunks_total, eta=eta),
                  file=sys.stderr)

    reader_gone = threading.Event()

    def said(ev: BatchEvent) -> None:
        """``on_event``, where the window or program reading the run's words went away (Ctrl-C in
        ``batch … | tee log`` ends tee too): a stop as Ctrl-C's, the document in hand back in the
        queue. It was that document's failure ("failed: BrokenPipeError"), to be tried again
        with --retry-failed alone."""
        try:
            on_event(ev)
        except BrokenPipeError:
            stdout_gone(sys.stderr)  # (what is said from now on goes nowhere)
            reader_gone.set()
            cancel.set()

    stopped_for: BatchStopped | None = None
    with stop_signals(_on_stop) as signals:
        try:
            counts = run_batch(root, outdir, profile, lambda profile: engine_factory(profile, t), said,
                               retry_failed=args.retry_failed, cancel=cancel, lookup=t.get,
                               languages=[Texts(lang).get for lang in LANGUAGES])
        except BatchStopped as err:
            stopped_for, counts = err, err.counts
    if args.json:
        print_json({"counts": counts, "output": str(outdir)})
    else:  # (a path to open: `batch .` said "summaries in summaries")
        every = all_summaries_path(outdir, t.get)  # (one file to read them all, where the run could write it)
        print("batch: " + t("batch_cmd.summaries_in" if every.is_file() else "batch_cmd.summaries_in_folder",
                            counts=_counts_line(counts, t), path=os.path.abspath(outdir), file=every.name),
              file=sys.stderr)
    failed = _failed(outdir, args) if counts.get("failed") else []
    again = t("batch_cmd.again") + _also_retry(failed, t)
    if stopped_for is not None:  # the server (or the engine), not the documents: nothing failed for it
        # (the engine's own sentence, in the command's language)
        reason = said_in(stopped_for.__cause__, args) if stopped_for.__cause__ is not None else stopped_for.reason
        raise BatchStopped(
            t("batch_cmd.stopped_for", reason=reason, n=counts["pending"],
              fix="" if stopped_for.temporary else t("batch_cmd.fix_that"), again=again),
            counts, stopped_for.temporary,
        )
    if cancel.is_set():  # (no signal, its reader gone alone: 141, the shell's code for a closed pipe)
        sig = signal.SIGPIPE if reader_gone.is_set() and not signals else first_signal(signals)
        raise stopped(t("batch_cmd.stopped_by", by=stopped_by(sig, t), again=again), sig)
    if failed:
        for row, why in failed[:FAILED_NAMED]:  # named where the night's log ends (--status alone did)
            print("batch:   " + t("batch_cmd.failed", path=row.path, why=why), file=sys.stderr)
        if len(failed) > FAILED_NAMED:
            print("batch:   " + t("batch_cmd.more_failed", n=len(failed) - FAILED_NAMED), file=sys.stderr)
        for line in _what_to_do([row for row, _why in failed], t, see_why=len(failed) > FAILED_NAMED):
            print(f"batch: {line}", file=sys.stderr)
        return SOME_FAILED
    return 0


FAILED_NAMED = 5  # the failed documents named at the end of a run, with why


def _why(reason: str, said: list[Phrase], args: argparse.Namespace) -> str:
    """Why a document failed, in the command's language where the queue kept it as phrases
    (``said_in``), else in the English it kept (a queue of an older workstation's)."""
    return said_in(WorkstationError(reason, said=said), args)


def _failed(outdir: Path, args: argparse.Namespace) -> list[tuple[QueueRow, str]]:
    """The queue's failed documents and why (in the command's language), each reason cut to a line."""
    rows = [r for r in queue_rows(outdir) if r.status == "failed"]
    said = [(r, " ".join(_why(r.reason or "", r.said, args).split())) for r in rows]  # (one line each)
    return [(row, why[:300] + ("…" if len(why) > 300 else "")) for row, why in said]


def _first_five(names: list[str], t: Texts) -> str:
    """The first five of ``names``, and how many more."""
    return ", ".join(names[:5]) + (t("batch_cmd.and_more", n=len(names) - 5) if len(names) > 5 else "")


def _what_to_do(failed: list[QueueRow], t: Texts, see_why: bool = True) -> list[str]:
    """What to do about the ``failed`` documents: those at fault themselves (damaged, not what
    their names say: ``the_documents_own``) fixed, after which the next run takes them by itself;
    ``--retry-failed`` for the others alone (it was said for an empty file and a broken PDF, where
    another try cannot help)."""
    why = t("batch_cmd.see_why") if see_why else ""
    own = sum(the_documents_own(r.said) for r in failed)
    retry = len(failed) - own
    lines = [t("batch_cmd.fix_one" if own == 1 else "batch_cmd.fix", n=own, why=why)] if own else []
    if retry:
        lines.append(t("batch_cmd.retry_one" if retry == 1 else "batch_cmd.retry", n=retry, why=why))
    return lines


def _also_retry(failed: list[tuple[QueueRow, str]], t: Texts) -> str:
    """What a stopped run adds to "run the same command again": --retry-failed, where another
    try can help a document that failed (``_what_to_do``)."""
    retry = sum(not the_documents_own(row.said) for row, _why in failed)
    return t("batch_cmd.also_retry", n=retry) if retry else ""


BATCH_NICENESS = 10


def _yield_to_people(t: Texts) -> None:
    """An overnight queue often runs while people work: it takes the CPU only when they leave
    it (a lower priority; with threads: auto the engine also leaves their busy cores alone)."""
    try:
        now = os.nice(0)
        if now < BATCH_NICENESS:
            os.nice(BATCH_NICENESS - now)
    except (AttributeError, OSError):
        return
    print("batch: " + t("batch_cmd.low_priority", nice=BATCH_NICENESS), file=sys.stderr)


def _counts_line(counts: dict[str, int], t: Texts) -> str:
    """'1 pending, 0 running, 2 done, 0 failed', in ``t``'s language."""
    return ", ".join(f"{n} {t(f'batch_cmd.status.{status}')}" for status, n in counts.items())
