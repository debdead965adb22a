"""``workstation summarize FILE... [-p P] [-o OUT] [--json]``: summarize whole documents."""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any, TextIO

from workstation.commands import (
    MAX_TOKENS_HELP,
    add_lang_arg,
    add_profile_arg,
    asked_yes,
    print_json,
    print_load_notes,
    said_in,
    summary_profile,
    texts_of,
    waiting_line,
)
from workstation.commands.stopping import first_signal, stop_signals, stopped, stopped_by
from workstation.core.atomic import named_output, write_named_file
from workstation.core.catalog import params_text
from workstation.core.conversation_titles import clean_title
from workstation.core.documents import Document, DocumentError, read_document
from workstation.core.errors import BackendUnreachable, WorkstationError
from workstation.core.events import SERVER_STOPPING
from workstation.core.invocation import cli, shell_word
from workstation.core.kept_parts import parts_for, summarizing
from workstation.core.kv_state import conversation_tag
from workstation.core.phrases import say
from workstation.core.profiles import Profile
from workstation.core.store import ConversationStore
from workstation.core.summarize import (
    SummaryProgress,
    SummaryResult,
    cut_finish,
    eta_text,
    small_model,
    summarize_document,
)
from workstation.core.summary_file import earlier_summary, summary_heads, whole_summary
from workstation.core.summary_options import SummarizeError, SummarizeOptions
from workstation.core.terminal import redraws_in_place
from workstation.tui.i18n import Texts


def register(sub: argparse._SubParsersAction) -> None:
    documents = Texts("en").file_kinds()  # (what the reader reads, as Ctrl+O, Ctrl+P and F1 list it)
    p = sub.add_parser("summarize", help=f"summarize documents longer than the context ({documents})")
    add_profile_arg(p)
    p.add_argument("files", nargs="+", metavar="FILE", help="documents to summarize")
    p.add_argument("-o", "--output", metavar="OUT", help="write the Markdown (or the JSON) to this file")
    p.add_argument("--json", action="store_true", help="print summary, chunks, source and metrics as JSON")
    p.add_argument("--max-tokens", type=int, help=MAX_TOKENS_HELP)
    p.add_argument("--quiet", action="store_true", help="no progress bar on stderr")
    p.add_argument("--all-rows", action="store_true",
                   help="read every row of a long table (a sheet or CSV of more than 100 rows) after its "
                        "facts; by default the model gets the facts the program counted from every row "
                        "(totals, dates, most common values) and the first 10 rows: quicker, and its "
                        "figures are true")
    p.add_argument("--start-over", action="store_true",
                   help="summarize every part again, not going on from the parts a stopped run finished")
    p.add_argument("--yes", "-y", action="store_true", help="replace the -o file if it is there, without asking")
    conversation = p.add_argument(
        "-c", "--conversation", metavar="NAME",
        help="save a conversation NAME holding the document and its summary, for "
             "follow-up questions (%(chat)s -c NAME \"...\"; the app lists it "
             "too); a document that fits in one part keeps its KV cache on disk, so a "
             "question reads only itself")
    conversation.chat = cli("chat")  # type: ignore[attr-defined]  # (argparse fills %(chat)s in: the command as run)
    add_lang_arg(p)  # the summary's headings and what it says on the way (it was English on a Turkish PC)
    p.set_defaults(func=run)


STAGE_WORDS = {"map": "summarize_cmd.stage_map", "reduce": "summarize_cmd.stage_reduce"}


class ProgressBar:
    """One line on stderr, redrawn in place on a terminal; plain lines otherwise."""

    def __init__(self, name: str, stream: TextIO | None = None, width: int = 24, t: Texts | None = None) -> None:
        # sys.stderr as it is now (a default bound at import kept a stream closed since)
        self.name, self.stream, self.width = name, stream or sys.stderr, width
        self.t = t or Texts("en")  # what it says, in the app's language (``--lang``)
        self.tty = redraws_in_place(self.stream)
        self.last = ""
        # the office server's silence said (own, stalled, held)
        self.waiting_said: tuple[bool, bool, str] | None = None

    def __call__(self, p: SummaryProgress) -> None:
        if p.waiting is not None:  # a desk PC's office server silent: a line of its own, once
            said = (p.waiting.own, p.waiting.stalled, p.waiting.held)
            if said != self.waiting_said:
                self.waiting_said = said
                self.stream.write(("\r\x1b[2K" if self.tty else "") + f"{self.name}: {waiting_line(p.waiting, self.t)}\n")
                self.stream.flush()
                self.last = ""
            if p.waiting.held != SERVER_STOPPING:  # (stopping: it still writes the summary; the bar goes on)
                return
        if p.inside_part and not self.tty:  # a log (stderr to a file): a line a part, not one each half second
            return
        t = self.t
        total = max(p.total, 1)
        filled = int(self.width * min(p.done + p.working, total) / total)
        bar = "#" * filled + "-" * (self.width - filled)
        speed = t("summarize_cmd.bar_speed", n=f"{p.prompt_per_second:.0f}") if p.prompt_per_second else ""
        if p.stage == "chunking":
            line = t("summarize_cmd.bar_reading", name=self.name)
        elif p.stage == "kept":  # a line of its own: the bar goes on from there
            line = t("summarize_cmd.bar_kept", name=self.name, done=p.chunks_done, total=p.chunks_total)
            self.stream.write(("\r\x1b[2K" if self.tty else "") + line + "\n")
            self.stream.flush()
            self.last = line
            return
        elif p.stage == "done":
            line = t("summarize_cmd.bar_done", name=self.name, bar="#" * self.width, done=p.chunks_done,
                     total=p.chunks_total)
        elif p.stage == "cancelled":  # the bar as far as the parts got (its calls all ended: done == total)
            part = int(self.width * min(p.chunks_done, p.chunks_total) / max(p.chunks_total, 1))
            line = t("summarize_cmd.bar_stopped", name=self.name, bar="#" * part + "-" * (self.width - part),
                     done=p.chunks_done, total=p.chunks_total)
        else:
            under_way = ""  # the part under way: a long one takes minutes on a CPU
            if p.part and p.part_read < 1.0:
                under_way = t("summarize_cmd.bar_part_read", part=p.part, percent=int(p.part_read * 100))
            elif p.part:
                under_way = t("summarize_cmd.bar_part_written", part=p.part, n=f"{p.part_written:,}")
            stage = t("summarize_cmd.bar_stage", stage=t(STAGE_WORDS[p.stage]) if p.stage in STAGE_WORDS else p.stage)
            # as F6 says it (not "ETA 0s"; English said "ETA 1m05s" where F6 said "time left: 1 min 5 s")
            eta = eta_text(p.eta_s, t("summarize.eta"), t("summarize.eta_soon"), p.eta_high_s, p.eta_revised, t.get)
            line = t("summarize_cmd.bar", name=self.name, bar=bar, done=p.chunks_done, total=p.chunks_total,
                     stage=stage, speed=speed, under_way=under_way, eta=eta)
            if self.tty:  # a line longer than the terminal wraps, and "\r" redraws only its last row: each
                columns = self._columns()  # update left a copy of itself; the least needed words go first
                for spare in (speed, stage, f"[{bar}] ", under_way):  # (the time left last)
                    if len(line) >= columns and spare:
                        line = line.replace(spare, "", 1)
        if self.tty and len(line) >= (columns := self._columns()):
            over = len(line) - columns + 1  # then the document's name gives way, then the end
            if line.startswith(self.name) and len(self.name) - over - 1 >= 4:
                line = self.name[: len(self.name) - over - 1] + "…" + line[len(self.name):]
            else:
                line = line[: max(columns - 2, 1)] + "…"
        if line == self.last:
            return
        self.last = line
        if self.tty:
            self.stream.write("\r\x1b[2K" + line)
            if p.stage in ("done", "cancelled"):
                self.stream.write("\n")
        else:
            self.stream.write(line + "\n")
        self.stream.flush()

    def _columns(self) -> int:
        """The terminal's width now (a window resized meanwhile too)."""
        try:
            return os.get_terminal_size(self.stream.fileno()).columns or 80
        except (OSError, ValueError, AttributeError):
            return 80


def _result_json(result: SummaryResult, profile_key: str) -> dict[str, Any]:
    data = result.to_dict()
    data["profile"] = profile_key
    return data


def _save_conversation(name: str, profile_ref: str, result: SummaryResult, doc_name: str, engine: Any) -> None:
    """The conversation ``chat -c NAME`` continues (saved before the engine closes and keeps
    the summary's KV cells on disk, as that conversation's: deleted with it)."""
    store = ConversationStore()
    try:
        conv = store.new(title=name, profile=profile_ref)
        # the chat shows this line for the document's prompt: in the app's language (it is read
        # in the app), as the app's own Ctrl+K writes it
        from workstation.tui.i18n import Texts
        from workstation.tui.settings import ui_language

        messages = result.conversation(Texts(ui_language())(result.intro_key, name=doc_name))
        for message in messages:
            store.add_message(conv.id, message["role"], message["content"], shown=message.get("shown", ""))
        try:  # only what a later delete removes: never worth the summary
            engine.claim_cells(conversation_tag(store.identity, conv.id, conv.created), messages[:1])
        except WorkstationError:
            pass
    finally:
        store.close()


def _read_all(files: list[str], args: argparse.Namespace) -> list[Document]:
    """Every document, or one ``DocumentError`` that names each file that cannot be read (it
    stopped at the first, so a list of ten took ten runs to fix)."""
    documents: list[Document] = []
    errors: list[DocumentError] = []
    for name in files:
        try:
            documents.append(read_document(Path(name), isolate=True))
        except DocumentError as err:
            errors.append(err)
    if not errors:
        return documents
    if len(files) == 1:
        raise errors[0]
    t = texts_of(args)
    problems = [said_in(err, args).rstrip(".") for err in errors]
    advice = "" if len(problems) == len(files) else t(
        "summarize_cmd.leave_it_out" if len(problems) == 1 else "summarize_cmd.leave_them_out", command=cli("batch FOLDER"))
    raise DocumentError(t("summarize_cmd.unreadable", n=len(problems), total=len(files), problems="; ".join(problems),
                          advice=advice))


def _put_out(args: argparse.Namespace, results: list[SummaryResult], profile_key: str, t: Texts) -> None:
    """The summaries, Markdown or JSON, into -o (atomically) or on standard output."""
    if args.json:
        items = [_result_json(r, profile_key) for r in results]
        payload: Any = items[0] if len(items) == 1 else {"documents": items}
        if args.output:
            _write_output(Path(args.output), json.dumps(payload, ensure_ascii=False, indent=2, default=str) + "\n")
        else:
            print_json(payload)
        return
    markdown = "\n".join(r.summary for r in results)
    if args.output:
        _write_output(Path(args.output), markdown)
        if not args.quiet:
            print(t("summarize_cmd.wrote", path=str(Path(args.output).resolve())), file=sys.stderr)
    else:
        sys.stdout.write(markdown)


def closing_line(r: SummaryResult, wall: float, t: Texts | None = None) -> str:
    """What a document's summary took, on stderr at the end: its parts, the tokens read in this
    run (parts a stopped run finished are said apart: it said the whole document was read), the
    speeds and the time; in ``t``'s language (English without)."""
    t = t or Texts("en")
    totals = r.totals
    done = sum(1 for c in r.chunks if c.summary is not None)
    kept = sum(1 for c in r.chunks if c.summary is not None and c.metrics is None)
    parts = t("summarize_cmd.parts", n=len(r.chunks))
    now = sum(c.tokens for c in r.chunks if c.summary is not None and c.metrics is not None)
    read = (t("summarize_cmd.read_kept", kept=kept, tokens=f"{now:,}") if kept and done == len(r.chunks) else
            t("summarize_cmd.read", tokens=f"{int(totals['document_tokens']):,}") if done == len(r.chunks)
            else t("summarize_cmd.read_stopped", done=done, parts=parts, total=len(r.chunks)))  # (Ctrl-C: not "read and summarized")
    return t("summarize_cmd.closing", name=Path(r.source).name, parts=parts, read=read,
             speed=f"{totals['document_tokens_per_second']:,.0f}", prompt=f"{int(totals['prompt_n']):,}",
             cached=f"{int(totals['cache_n']):,}", generated=f"{int(totals['predicted_n']):,}", wall=f"{wall:,.1f}")


def _write_output(path: Path, text: str) -> None:
    """The finished summary into ``-o``; where that cannot be written after all (the disk filled
    while the model worked), on standard output instead: minutes of work were thrown away."""
    try:
        write_named_file(path, text, WorkstationError)
    except WorkstationError as err:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
        sys.stdout.flush()
        raise WorkstationError(f"{err} The summary is printed above instead, so that it is not lost.") from None


def run(args: argparse.Namespace) -> int:
    profile = summary_profile(args)
    t = texts_of(args)
    name = clean_title(args.conversation or "")  # as the store keeps it
    if args.conversation is not None and (not name or len(args.files) != 1):
        raise SummarizeError(t("summarize_cmd.one_document"))
    if name:  # a second conversation of one name: chat -c could reach only the newest
        store = ConversationStore()
        try:
            store.check_title_free(name)
        finally:
            store.close()
    documents = _read_all(args.files, args)  # fail before loading, naming every file that cannot be read
    if args.output:  # before the work, not after it
        args.output = str(named_output(args.output, [Path(f) for f in args.files], SummarizeError))
        there = Path(args.output)
        # an earlier summary is replaced as before (a nightly run to one file); another file is
        # asked about first (a Word file named by mistake was replaced without a word)
        names = [d.name for d in documents]
        heads = summary_heads(there) if there.exists() and not args.yes else None
        if there.exists() and not args.yes and heads is None and not asked_yes(
                t("summarize_cmd.other_file_q", path=str(there)), t("summarize_cmd.other_file_kept", path=str(there)), t):
            print(t("summarize_cmd.nothing"), file=sys.stderr)
            return 1
        if heads is not None and not earlier_summary(there, of=names) and not asked_yes(
                t("summarize_cmd.other_summary_q", path=str(there), heads="; ".join(heads), names=", ".join(names)),
                t("summarize_cmd.other_summary_kept", path=str(there), heads="; ".join(heads)), t):
            print(t("summarize_cmd.nothing"), file=sys.stderr)
            return 1
    # one summary of a document at a time (F6, or another summarize, writing its kept parts too):
    # refused now, not once the model has loaded and the documents before it are done
    with summarizing([Path(d.source) for d in documents if Path(d.source).is_file()]):
        return _summarize_all(args, profile, name, documents, t)


def _summarize_all(args: argparse.Namespace, profile: Profile, name: str, documents: list[Document], t: Texts) -> int:
    """The documents summarized with ``profile`` and put out as ``args`` say (``name``: the
    conversation to save the first one's summary as), in ``t``'s language."""
    lookup = None if t.lang == "en" else t.get  # (the summary's own English is the core's)
    from workstation.core.engine_api import open_engine

    engine = open_engine(profile, child_process=False, keep_state=bool(name))
    print_load_notes(profile, engine)  # once it loaded: a refusal says it alone
    cancel = threading.Event()

    def _on_stop(_sig: int) -> None:  # Ctrl-C, a kill, a closed terminal: the parts done are written
        cancel.set()
        engine.cancel()  # stops even a long prefill

    results: list[SummaryResult] = []
    opened: list[Any] = []  # each document's kept parts (closed at the end)
    finished: list[Any] = []  # those of documents summarized whole: forgotten once written
    resumable = False  # a document stopped part-way has its finished parts kept for the same command
    not_saved: WorkstationError | None = None
    failed: WorkstationError | None = None  # after some parts were done: those are written, then it is said
    t0 = time.perf_counter()
    with stop_signals(_on_stop) as signals:
        try:
            for doc in documents:
                if cancel.is_set():
                    break
                bar = None if args.quiet else ProgressBar(doc.name, t=t)
                for note in [] if args.quiet else doc.notes:  # (said at once, as well as in the summary: minutes before it)
                    print(f"{doc.name}: {say([note], lookup)}", file=sys.stderr)
                # the parts a stopped run of it finished are not done again; its own are kept as done
                parts = parts_for(Path(doc.source), profile)
                if parts is not None and args.start_over:  # its parts of an earlier run gone; this run's kept
                    parts.start_over()
                elif parts is not None and parts.dropped and not args.quiet:  # (it began at part 1 without a word)
                    print(t("summarize_cmd.parts_not_used", name=doc.name), file=sys.stderr)
                try:
                    results.append(summarize_document(
                        engine, doc, profile, on_progress=bar, cancel=cancel,
                        options=SummarizeOptions(all_rows=args.all_rows), lookup=lookup,
                        done_parts=parts.done if parts is not None else None,
                        on_part=parts.keep if parts is not None else None))
                    if parts is not None and not results[-1].cancelled:
                        finished.append(parts)  # forgotten once its summary is written, not before
                    elif parts is not None:
                        resumable = any(c.summary is not None for c in results[-1].chunks)
                except WorkstationError as err:
                    if not isinstance(err.partial, SummaryResult):
                        raise
                    results.append(err.partial)  # (parts paid for on a server were lost with the error)
                    failed = err
                    resumable = parts is not None and any(c.summary is not None for c in err.partial.chunks)
                    break
                finally:
                    if parts is not None:
                        opened.append(parts)
            if name and results and not results[0].cancelled:
                try:
                    _save_conversation(name, profile.ref, results[0], documents[0].name, engine)
                except WorkstationError as err:  # (a full disk): said after the summary is out, not instead
                    not_saved = err
        except BackendUnreachable as err:
            if not err.connection_lost:  # busy, or the key's day over: said as the server said it
                raise
            raise BackendUnreachable(said=[*err.said, ("summarize.again", {})]) from None  # the server went away
        finally:
            engine.close()
    wall = time.perf_counter() - t0
    # (a signal once every part was done, while the conversation was saved: the summary is whole)
    was_stopped = any(r.cancelled for r in results) or len(results) < len(documents)
    if was_stopped and not any(c.summary is not None for r in results for c in r.chunks):
        # nothing to show: an earlier summary in the output file is worth more than an empty one
        for parts in opened:
            parts.close()
        kept = t("summarize_cmd.left_as_it_was", path=args.output) if args.output and Path(args.output).exists() else ""
        raise stopped(t("summarize_cmd.stopped_nothing", by=stopped_by(first_signal(signals), t), kept=kept),
                      first_signal(signals))

    # stopped part-way: a whole summary of these documents in -o is worth more than this run's parts
    # (kept for the same command, which goes on from them)
    kept_whole = (was_stopped and failed is None and bool(args.output)
                  and whole_summary(Path(args.output), [d.name for d in documents]))
    try:
        if not kept_whole:
            _put_out(args, results, profile.key, t)
            for parts in finished:  # written: a document's parts are not needed again
                parts.forget()
    finally:
        for parts in opened:
            parts.close()
    if not args.quiet:
        for r in results:
            print(closing_line(r, wall, t), file=sys.stderr)
            last = r.reduce_steps[-1].metrics if r.reduce_steps else r.chunks[0].metrics if len(r.chunks) == 1 else None
            if last is not None and last.stop_reason == "length" and not r.cancelled:  # (as chat says a cut reply)
                # (with what lets it finish, as the file's note and F6 say: it gave no way on)
                print(t("summarize_cmd.length_limit", name=Path(r.source).name, n=f"{last.predicted_n:,}",
                        finish=cut_finish(r.cut_by)), file=sys.stderr)
        small = small_model(profile, engine)  # (the summary says it under its title; the file's reader sees it there)
        if args.output and small is not None and any(c.summary for r in results for c in r.chunks):
            larger = (t("summarize_cmd.larger", command=cli("models list")) if profile.backend == "llama" else
                      t("summarize_cmd.larger_on_server"))  # (a desk PC's model is the server's)
            print(t("summarize_cmd.small_model", model=small[0], n=params_text(small[1]), larger=larger),
                  file=sys.stderr)
        if name and results and not results[0].cancelled:
            follow_up = cli(f"chat -c {shell_word(name)} " + '"..."')
            print(t("summarize_cmd.saved_as", title=name, command=follow_up), file=sys.stderr)
    # (--start-over forgets them)
    go_on = t("summarize_cmd.go_on_after_start_over" if args.start_over else "summarize_cmd.go_on") if resumable else ""
    if failed is not None:
        done, parts = sum(1 for c in results[-1].chunks if c.summary is not None), len(results[-1].chunks)
        covers = (t("summarize_cmd.covers_all", parts=parts) if done == parts else
                  t("summarize_cmd.covers_some", done=done, parts=parts))
        raise type(failed)(t("summarize_cmd.failed_in" if args.output else "summarize_cmd.failed_above",
                             error=said_in(failed, args), path=args.output, covers=covers, go_on=go_on))
    by = stopped_by(first_signal(signals), t)
    if was_stopped and kept_whole:
        raise stopped(t("summarize_cmd.stopped_kept_whole", by=by, path=args.output, go_on=go_on), first_signal(signals))
    if was_stopped:
        raise stopped(t("summarize_cmd.stopped_in" if args.output else "summarize_cmd.stopped_above",
                        by=by, path=args.output, go_on=go_on), first_signal(signals))
    if not_saved is not None:  # the summary went out, the conversation did not
        raise WorkstationError(t("summarize_cmd.not_saved_in" if args.output else "summarize_cmd.not_saved_above",
                                 error=said_in(not_saved, args), path=args.output, title=name))
    return 0
