"""``workstation chat -p PROFILE "text"``: one turn, streamed to stdout.

``--json-schema FILE``: the reply is generated under the schema's grammar and checked against
the schema afterwards; a reply that does not validate (cut short by ``--max-tokens``) is still
printed, then one sentence on stderr says why it does not, and the exit code is 1."""

from __future__ import annotations

import argparse
import dataclasses
import os
import re
import stat
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workstation.commands import (
    add_lang_arg,
    add_profile_arg,
    print_json,
    print_load_notes,
    profile_ref,
    said_in,
    stdout_gone,
    texts_of,
    waiting_line,
)
from workstation.commands.parser import decimal
from workstation.commands.progress_bar import ProgressBar
from workstation.commands.stopping import first_signal, stop_signals, stopped, stopped_by
from workstation.core.conversation_titles import clean_title
from workstation.core.engine_api import open_engine, too_long
from workstation.core.errors import EngineError, TurnCancelled, WorkstationError
from workstation.core.events import (
    SERVER_STOPPING,
    PromptRead,
    ServerWaiting,
    TokenDelta,
    TurnFinished,
)
from workstation.core.invocation import cli, shell_word
from workstation.core.kv_state import conversation_tag
from workstation.core.letters import fold
from workstation.core.metrics import turn_record
from workstation.core.pasted_tables import counted_pasted, for_the_model
from workstation.core.phrases import say
from workstation.core.profile_check import (
    check_sampling,
    option_name,
    sampling_changes,
    with_own_sampling,
)
from workstation.core.profile_lookup import load_profile, model_file
from workstation.core.profiles import Profile
from workstation.core.store import ConversationStore
from workstation.core.structured_output import check_reply, load_schema_file
from workstation.core.table_facts import counted_phrases
from workstation.core.terminal import redraws_in_place
from workstation.tui.attachment import conversation_tables, follow_up_counted

if TYPE_CHECKING:
    from workstation.tui.i18n import Texts

# the sampling settings chat's options set for one turn (each as its profile field)
SAMPLING_OPTIONS = ("max_tokens", "temperature", "seed", "top_p", "top_k", "min_p", "repeat_penalty",
                    "presence_penalty", "frequency_penalty", "stop")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("chat", help="one chat turn, streamed to stdout")
    add_profile_arg(p)
    p.add_argument("text", nargs="?", help="your message ('-', or none with a pipe: read from stdin; with a pipe and a "
                                                  "message, the piped text comes first, the message after it)")
    p.add_argument("--json", action="store_true", help="print {text, metrics} as JSON")
    p.add_argument("--max-tokens", type=int, help="longest reply in tokens")
    p.add_argument("--temperature", type=decimal, help="0 for greedy (repeatable) output")
    p.add_argument("--seed", type=int,
                   help="random seed for sampling: the same seed and settings, the same reply (-1: a new one each turn)")
    # the profile's other sampling settings, for one turn (as llama-cli's options)
    p.add_argument("--top-p", type=decimal, help="sample from the likeliest tokens up to this probability (0-1)")
    p.add_argument("--top-k", type=int, help="sample from the K likeliest tokens (0: all)")
    p.add_argument("--min-p", type=decimal, help="leave out tokens below this fraction of the likeliest's (0-1)")
    p.add_argument("--repeat-penalty", type=decimal, help="discourage repeating recent tokens (1: off)")
    p.add_argument("--presence-penalty", type=decimal, help="-2 to 2: above 0 favours new topics (0: off)")
    p.add_argument("--frequency-penalty", type=decimal, help="-2 to 2: above 0 repeats words less (0: off)")
    p.add_argument("--stop", action="append", metavar="TEXT",
                   help="end the reply before this text (again for more; replaces the profile's)")
    p.add_argument("--system", help="system prompt for this turn, instead of the profile's (and of the "
                   "conversation's own instructions, the app's Alt+I)")
    p.add_argument("--json-schema", metavar="FILE", type=Path,
                   help="a JSON schema file: the reply is JSON that follows it (exit 1 if it does not)")
    p.add_argument("-c", "--conversation", metavar="NAME",
                   help="continue (or start) the saved conversation NAME (its title, or its number as "
                        "'conversations' lists it), then your message; the app lists it too; its KV cache is kept "
                        "on disk, so the next turn reads only the new message; a name close to a saved one is "
                        "refused as a likely typo")
    p.add_argument("--new", action="store_true",
                   help="with -c: start a new conversation NAME even if one of a similar name exists, or with "
                        "only piped text as its first message")
    add_lang_arg(p)  # what it says on stderr (Ctrl-C, a cut reply, a conversation): it was English on a Turkish PC
    p.set_defaults(func=run)


def _piped() -> bool:
    """Whether standard input is a pipe or a file (not a terminal, nor /dev/null)."""
    try:
        mode = os.fstat(sys.stdin.fileno()).st_mode
    except (OSError, ValueError):
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISREG(mode)


PIPE_WAIT_S = 5.0  # how long a pipe beside a typed question may take to bring its first bytes
TURN_WAIT_S = 600  # chat -c waits this long for a reply written elsewhere in its conversation


def _piped_beside() -> bool | None:
    """Whether a typed question has text piped in beside it (``cat notes.txt | chat "Sum it
    up"``: the notes were dropped without a word). True for a file, or a pipe with something (or
    its end) to read within PIPE_WAIT_S (a command before it, ``chat … | chat``, loads its
    model first); None for a pipe that brought nothing in that time, which is then left unread
    (a script's own standard input, held open) and said; False for no pipe at all."""
    if not _piped():
        return False
    try:
        if stat.S_ISREG(os.fstat(sys.stdin.fileno()).st_mode):
            return True
        import select

        return True if select.select([sys.stdin.fileno()], [], [], PIPE_WAIT_S)[0] else None
    except (OSError, ValueError):
        return False


def _read_pipe(t: Texts) -> str:
    """The message from standard input, in whatever encoding a text file has (as summarize
    reads one); a document or a picture is refused in one sentence that says where it goes."""
    from workstation.core.documents import DocumentError, plain_text

    try:
        return plain_text(sys.stdin.buffer.read(), "standard input")[0]
    except DocumentError:
        raise WorkstationError(t("chat_cmd.pipe_not_text", summarize=cli(f"summarize {t('cli.file')} -c {t('cli.name')}"),
                                 chat=cli(f"chat -c {t('cli.name')}"))) from None


def _show(text: str, kept: bool) -> None:
    """Part of the reply on standard output. A reader gone from its pipe ends the command (exit
    0, cli.main) unless the reply is ``kept`` in a conversation (``chat -c … | head``): it is
    written whole then, and kept (it was lost, the question left without one)."""
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        if not kept:
            raise
        stdout_gone()


def _looped_said(kept: str, shown: str, t: Texts) -> str:
    """A reply stopped where it began repeating itself: where it ends, and that the repeats the
    terminal showed after that (they streamed before the loop was sure: core/loops.py) are no part of
    it (the conversation, ``--json`` and a desk PC's reply keep it without them)."""
    if len(shown.rstrip()) <= len(kept):
        return t("chat_cmd.looped")
    words = kept.split()
    end = " ".join(words[-8:])
    if len(words) > 8 or len(end) > 60:  # its last words, as the terminal shows them
        end = "…" + end[-59:]
    return t("chat_cmd.looped_shown", end=end)


def run(args: argparse.Namespace) -> int:
    t = texts_of(args)  # (English under --json; the two mistakes below were English on a Turkish PC)
    if args.new and args.conversation is None:  # (it was dropped without a word: a reply not kept as meant)
        print("workstation: " + t("chat_cmd.new_without_c", name=t("cli.name")), file=sys.stderr)
        raise SystemExit(2)  # as the command line's other mistakes
    if args.conversation is not None and args.text is None and not args.new and not _piped():
        # (with text piped in, `-c NAME` continues or starts NAME, as its help says: a script's
        # `… | chat -c "Project X"` was refused on its first run, and --new starts one each run)
        _name_first(args.conversation, t)
    if args.text is None and not _piped():  # (`echo hi | chat` said "needs text": it reads the pipe now)
        named = f" -c {shell_word(args.conversation)}" if args.conversation is not None else ""
        print("workstation: " + t("chat_cmd.needs_text", command=cli("chat" + named), help=cli("chat --help")),
              file=sys.stderr)
        raise SystemExit(2)  # as the command line's other mistakes
    text = _read_pipe(t) if args.text in ("-", None) else args.text
    beside = _piped_beside() if args.text not in ("-", None) else False
    if beside:  # the piped text, then the question about it (as Ollama)
        piped = _read_pipe(t).strip("\n")
        text = f"{piped}\n\n{args.text}" if piped.strip() else args.text
    elif beside is None:  # (dropped without a word when it came late)
        print("workstation: " + t("chat_cmd.pipe_late", s=f"{PIPE_WAIT_S:.0f}"), file=sys.stderr)
    if not text.strip():
        raise EngineError(t("chat_cmd.empty"))
    if args.stop and args.json_schema is not None:  # (locally dropped, a desk PC's cut the JSON)
        raise EngineError(t("chat_cmd.stop_with_schema"))
    constraints = load_schema_file(args.json_schema) if args.json_schema is not None else None
    profile = load_profile(profile_ref(args))
    conversation = None
    if args.conversation is not None:
        conversation = _conversation(args.conversation, t, new=args.new)
        conversation.claim()
        profile = _conversation_profile(conversation, profile, args, chosen=profile_ref(args) is not None)
    s = profile.sampling
    file_sampling = dataclasses.replace(s, stop=list(s.stop))  # the profile's own, for the reply's record
    own_limit = False  # the reply's length limit is the conversation's own (the app's Ctrl+E)
    if conversation is not None and conversation.id is not None:  # its own (the app's Ctrl+E), under the options
        its_own = conversation.store.get(conversation.id, with_messages=False).sampling
        own = with_own_sampling(s, its_own)
        s = profile.sampling = own or s
        own_limit = "max_tokens" in its_own and args.max_tokens is None
    for name in SAMPLING_OPTIONS:
        if getattr(args, name) is not None:
            setattr(s, name, getattr(args, name))
    check_sampling(s, option_name)
    counted: list[dict[str, Any]] = []  # what the program counted for it of the table the conversation last had
    said_for_model = ""
    if conversation is not None and conversation.id is not None:  # attached (the app's): as the app counts a follow-up
        followed = conversation_tables(conversation.store.messages(conversation.id))
        counted = follow_up_counted(text, followed)
        said_for_model = for_the_model(followed, counted) if counted else ""
    # a table pasted (or piped) in the message's own words: its figures and arithmetic counted, as the app
    # counts them (`cat invoices.txt | chat "total of the unpaid ones?"` had no counted line, the app's had)
    pasted, counted_there = counted_pasted(text)
    counted += counted_there
    for said in (said_for_model, for_the_model(pasted, counted_there) if counted_there else ""):
        if said:  # (for the model too, after the message, as the app gives it)
            text = f"{text}\n\n{said}"

    def prompt() -> list[dict[str, str]]:
        messages = [{"role": "system", "content": args.system}] if args.system is not None else []
        if conversation is not None and conversation.id is not None:
            said = conversation.store.prompt_messages(conversation.id, then=text)
            if args.system is not None:  # --system, for this turn, in place of the conversation's own instructions too
                said = [m for m in said if m["role"] != "system"]
            return messages + said
        return [*messages, {"role": "user", "content": text}]

    messages = prompt()

    # a model that cannot be loaded (not downloaded, moved, a server down) leaves the
    # conversation as it was: no question without an answer, and -p's profile not made its own
    engine = open_engine(profile, child_process=False, keep_state=conversation is not None)
    print_load_notes(profile, engine, t)  # once it loaded: a refusal says it alone
    asked: tuple[int, int] | None = None  # (conversation, message) of the question kept
    if conversation is not None:  # kept even if the turn fails (but not one the context cannot hold)
        had_none = conversation.id is None
        conv_id = conversation.begin(profile)
        if had_none:  # made now, or by another command started with this one (`… & done`): whichever
            conversation.claim()  # writes first ends its turn first, and the next one reads it
            messages = prompt()
        asked = (conv_id, conversation.store.add_message(conv_id, "user", text).id)
    stop_asked = threading.Event()
    turn_over = threading.Event()  # from then on a signal waits until the reply is kept

    def _on_stop(_sig: int) -> None:
        """The turn stops and the reply so far is kept (SIGTERM and SIGHUP ended the process
        mid-reply, the question left unanswered); a signal that comes while the reply is being
        kept (a logout's SIGTERM after the terminal's SIGHUP) waits for it."""
        stop_asked.set()
        if not turn_over.is_set():
            engine.cancel()  # llama.cpp's abort callback stops even a long prefill

    reading = _ReadingBar(t, t("chat_cmd.reading_conversation" if conversation is not None else "chat_cmd.reading_message"))
    arrived: list[str] = []  # the reply's text so far, and its thinking: kept if the turn fails
    thought: list[str] = []
    final: TurnFinished | None = None
    not_kept: WorkstationError | None = None
    with stop_signals(_on_stop) as signals:
        try:
            try:
                tag = None
                if conversation is not None:
                    created = conversation.store.get(conversation.id, with_messages=False).created
                    tag = conversation_tag(conversation.store.identity, conversation.id, created)
                thinking = _ThinkingOut(t)
                waiting_said: bool | None = None
                stall_said = False  # this silence in the middle of the reply said on the terminal
                for event in engine.stream_chat(messages, s, constraints=constraints, tag=tag, reading=not args.json):
                    if stop_asked.is_set():  # a Ctrl-C before the turn began, whose start clears the stop
                        engine.cancel()
                    if conversation is not None and conversation.note:  # the message is being read: it is kept
                        print(conversation.note, file=sys.stderr)
                        conversation.note = ""
                    if isinstance(event, PromptRead):
                        reading.show(event)
                        continue
                    if isinstance(event, ServerWaiting):  # said once (the TTFT after it holds the wait)
                        if event.held == SERVER_STOPPING:
                            # the server began to stop (once a turn): the reply may be cut off, said as
                            # a silence mid-reply is, on a terminal, on a line of its own below the reply
                            if sys.stderr.isatty():
                                print(("\n" if sys.stdout.isatty() else "") + waiting_line(event, t),
                                      file=sys.stderr, flush=True)
                        elif not event.stalled and event.own != waiting_said:
                            waiting_said = event.own
                            print(waiting_line(event, t), file=sys.stderr, flush=True)
                        elif event.stalled and not stall_said and sys.stderr.isatty():
                            # silent mid-reply: once a silence, on a terminal only (a reply piped on
                            # or a log is left whole), on a line of its own below the reply so far
                            stall_said = True
                            print(("\n" if sys.stdout.isatty() else "") + waiting_line(event, t), file=sys.stderr,
                                  flush=True)
                        continue
                    stall_said = False
                    reading.done()
                    if isinstance(event, TokenDelta):
                        arrived.append(event.text)
                        thought.append(event.reasoning)
                        if not args.json:
                            thinking.write(event.reasoning, answer=bool(event.text))
                            _show(event.text, kept=conversation is not None)
                    else:
                        final = event
                if not args.json:
                    thinking.write("", answer=True)
                    # the reply's line ends now: what is said on stderr from here on (closing the
                    # engine saves its KV cells: "Could not save a KV state: ...") ran on after it
                    _show("\n", kept=conversation is not None)
            except EngineError as err:
                if conversation is not None and asked is not None and too_long(err):
                    # joined to every later question (roles alternate), it made each of them too long
                    conversation.store.forget_messages(asked[0], [asked[1]])
                    if conversation.made and not conversation.store.messages(asked[0]):  # (nothing else in it)
                        conversation.store.delete(asked[0])
                        conversation.note = ""
                    else:
                        raise EngineError(f"{said_in(err, args)} {t('chat_cmd.message_not_kept')}") from None
                if "".join(arrived + thought) and not args.json:  # the server went away mid-reply: the reply's
                    # line ends, kept or not (the error ran on after its last word: "made for Maxworkstation: …")
                    thinking.write("", answer=True)  # (a reply cut while it thought: not left dimmed)
                    _show("\n", kept=conversation is not None)
                if conversation is not None and "".join(arrived + thought):  # what was read on screen stays,
                    try:  # as the app and Ctrl-C keep it
                        conversation.store.add_message(conversation.id, "assistant", "".join(arrived),
                                                       {"stop_reason": "failed", "stop_said": said_in(err, args)},
                                                       reasoning="".join(thought))
                    except WorkstationError:
                        raise err from None  # (a full disk): the error that stopped the reply says it
                    kept = t("chat_cmd.reply_so_far_kept" if args.json else "chat_cmd.reply_above_kept")
                    raise type(err)(f"{said_in(err, args)} {kept}") from None
                raise
            finally:
                turn_over.set()
                reading.done()  # (a turn that failed mid-read: its error on a line of its own, not after the bar)
            assert final is not None
            if conversation is not None:  # a reply stopped before its first token too, as the app keeps it
                record = turn_record(final.metrics, profile.ref, profile.name,
                                     sampling_changes(s, file_sampling, SAMPLING_OPTIONS), model_file(profile))
                if counted:  # (the program's figures, kept with the reply: the app says them under it)
                    record["counted"] = counted
                try:  # (before the engine keeps its cells on disk, which takes seconds)
                    conversation.store.add_message(conversation.id, "assistant", final.text, record,
                                                   reasoning=final.reasoning)
                except WorkstationError as err:  # (a full disk): said once the reply is out (--json's too)
                    not_kept = WorkstationError(f"{said_in(err, args)} {t('chat_cmd.reply_not_saved')}")
                finally:
                    conversation.store.close()
        finally:
            engine.close()
            if conversation is not None and conversation.note:  # failed before it was read: kept all the same
                print(conversation.note, file=sys.stderr)
    assert final is not None
    m = final.metrics
    check = check_reply(final.text, constraints.json_schema) if constraints is not None else None
    if args.json:
        out = {"text": final.text, "reasoning": final.reasoning, "profile": profile.key, "metrics": m.to_dict()}
        if counted:
            out["counted"] = counted
        if check is not None:
            out["valid"] = check.valid
            out["schema_error"] = check.error or None
        print_json(out)
    else:
        if m.predicted_n or m.stop_reason != "cancelled":  # (stopped before the reply began: said below, not "0 tokens")
            print(m.summary_line(t.get), file=sys.stderr)
        if counted:  # "Counted by the program: 2 rows where Client is Birlik AS (INV-102, INV-105)", as under the app's reply
            print(say(counted_phrases(counted), t.get), file=sys.stderr)
        if m.left_out_n:  # (the app says it in words; here the model answered as if it had read them)
            print(t("chat_cmd.left_out", n=f"{m.left_out_n:,}"), file=sys.stderr)
        if m.stop_reason == "length" and final.text.strip():  # (the plain reply read as finished, mid-sentence)
            allows = t("chat_cmd.longer_own" if own_limit else "chat_cmd.longer")
            print(t("chat_cmd.at_limit", n=f"{m.predicted_n:,}", allows=allows), file=sys.stderr)
        if m.stop_reason == "loop":  # (its figures' line does not say how it ended; the repeats streamed above it)
            print(_looped_said(final.text, "".join(arrived), t), file=sys.stderr)
        if check is not None and check.valid:  # (said only when it did not: README says it says)
            print(t("chat_cmd.follows_schema", name=args.json_schema.name), file=sys.stderr)
    if not_kept is not None:
        raise not_kept
    if m.stop_reason == "quota":  # (as the refusal of the next run: exit 75, "at 00:00"; it said 1, "tomorrow")
        from workstation.core.remote import day_cut

        raise day_cut(engine, "remote.quota_cut")
    if m.stop_reason == "cancelled" or signals:  # (a signal while the reply was kept: it ends now)
        raise turn_stopped(first_signal(signals), t, began=bool(final.text or final.reasoning),
                       kept=conversation is not None)
    if not final.text.strip() and final.reasoning and m.stop_reason in ("length", "context"):
        if m.stop_reason == "length":
            raise WorkstationError(t("chat_cmd.thought_only", n=f"{m.predicted_n:,}",
                                     raise_it=t("chat_cmd.raise_own" if own_limit else "chat_cmd.raise_limit")))
        raise WorkstationError(t("chat_cmd.thought_context"))
    if check is not None and not check.valid:
        raise_it = t("chat_cmd.raise_own" if own_limit else "chat_cmd.raise_max_tokens")
        why = t("chat_cmd.cut_short", raise_it=raise_it) if m.stop_reason in ("length", "context") else ""
        raise WorkstationError(t("chat_cmd.not_schema", name=args.json_schema.name, error=check.error, why=why))
    return 0


def turn_stopped(sig: int, t: Texts, began: bool, kept: bool) -> TurnCancelled:
    """The sentence for a turn a signal stopped, in ``t``'s language, with the shell's exit code
    for that signal (130 for Ctrl-C, 143 for SIGTERM, 129 for SIGHUP)."""
    key = "chat_cmd.stopped_kept" if kept else "chat_cmd.stopped_above"
    return stopped(t(key if began else "chat_cmd.stopped_before", by=stopped_by(sig, t)), sig)


class _ReadingBar:
    """How far a long message has been read, on stderr, until the reply begins: on a CPU a
    pasted contract took a minute before the first word, with nothing on the screen (the app
    showed the percentage; llama-server's ``prompt_progress``). Drawn from the first part that
    leaves more to read: a message read in one part shows none."""

    def __init__(self, t: Texts, what: str) -> None:
        self.t = t
        self.what = what  # "your message", "the conversation" (chat -c: the earlier turns, a document's summary)
        self.bar: ProgressBar | None = None

    def show(self, event: PromptRead) -> None:
        if self.bar is None:
            if event.fraction >= 1.0:
                return
            self.bar = ProgressBar(started_s_ago=event.ms / 1000)
        self.bar(event.fraction, self.t("chat_cmd.reading", what=self.what, read=f"{event.read - event.cached:,}",
                                        total=f"{event.total - event.cached:,}"))

    def done(self) -> None:
        if self.bar is not None:
            self.bar.finish()
            self.bar = None


class _ThinkingOut:
    """A reasoning model's thinking goes to stderr (dimmed on a terminal), so that stdout is
    the answer alone (``workstation chat "..." > answer.txt``)."""

    def __init__(self, t: Texts) -> None:
        self.t = t
        self.open = False
        self.dim = redraws_in_place(sys.stderr)

    def write(self, text: str, answer: bool) -> None:
        if text:
            if not self.open:
                self.open = True
                sys.stderr.write("\x1b[2m" if self.dim else "")
                sys.stderr.write(self.t("chat_cmd.thinking") + " ")
            sys.stderr.write(text)
            sys.stderr.flush()
        if answer and self.open:
            self.open = False
            sys.stderr.write("\x1b[0m\n" if self.dim else "\n")
            sys.stderr.flush()


@dataclass
class _Conversation:
    store: ConversationStore
    id: int | None  # None: a new one, made once its model has loaded
    title: str
    t: Texts  # what it says, in the command's language
    new_profile: bool = False  # -p chose another profile: the conversation's from the first turn on
    fresh: bool = False  # --new: a conversation of its own even where one has the name

    note: str = ""  # a new conversation, and how to go on with it: said once the message is kept
    made: bool = False  # begin() made it (not one another command made meanwhile)

    def claim(self) -> None:
        """The reply is this command's to write (held until it ends): while the app, or another
        command, writes one in the conversation, this one waits its turn, saying so once
        (`for i in 1 2 3; do chat -c NAME …& done` answers the three in turn), for at most
        TURN_WAIT_S (core/turn_lock.py)."""
        if self.id is None or self.store.claim_turn(self.id):
            return
        print("workstation: " + self.t("chat_cmd.waiting_turn", title=self.title), file=sys.stderr, flush=True)
        deadline = time.monotonic() + TURN_WAIT_S
        while not self.store.claim_turn(self.id):
            if time.monotonic() > deadline:
                raise EngineError(self.t("chat_cmd.turn_timeout", title=self.title, minutes=TURN_WAIT_S // 60))
            time.sleep(0.2)

    def begin(self, profile: Profile) -> int:
        """The model has loaded: a new conversation is made, and -p's profile kept as its own."""
        started = self.t("chat_cmd.started", title=self.title)
        if self.id is None and not self.fresh:  # one made meanwhile by a command started with this one
            conv, self.made = self.store.titled_or_new(self.title, profile.ref)
            self.id = conv.id
            self.note = started if self.made else self.t("chat_cmd.continuing_other", title=self.title)
        elif self.id is None:  # --new: a new one in any case
            self.id = self.store.new(title=self.title, profile=profile.ref).id
            self.made = True
            self.note = started
        elif self.new_profile:
            self.store.set_profile(self.id, profile.ref)
        return self.id


def _conversation_profile(conversation: _Conversation, profile: Profile, args: argparse.Namespace,
                          chosen: bool) -> Profile:
    """The profile a saved conversation goes on with: its own when no -p is given (it went on
    with the default one, unsaid: a desk PC's conversation with the office server ran on the
    local model); -p's when given, kept as the conversation's from then on. Each change said."""
    if conversation.id is None:
        return profile
    t = texts_of(args)
    saved = conversation.store.get(conversation.id, with_messages=False).profile
    if not saved or saved in (profile.ref, profile.key):
        return profile
    if chosen:
        conversation.new_profile = True
        print(t("chat_cmd.other_profile", profile=profile.key, saved=saved), file=sys.stderr)
        return profile
    try:
        own = load_profile(saved)
    except WorkstationError as err:
        print(t("chat_cmd.own_unusable", saved=saved, error=said_in(err, args).rstrip("."), profile=profile.key),
              file=sys.stderr)
        return profile
    print(t("chat_cmd.own_profile", profile=own.key), file=sys.stderr)
    return own


def _name_first(name: str, t: Texts) -> None:
    """``chat -c WORDS`` with no message after them, WORDS no saved conversation's name nor a
    likely typo of one, and no text piped in: a message meant for the last conversation
    (``llm -c "…"`` continues it), said with the command that continues that one; it said
    "needs text". --new begins one of that name."""
    from workstation.commands.conversations import find_conversation, likely_meant

    store = ConversationStore(read_only=True)
    try:
        if find_conversation(store, name) is not None:
            return
        titles = store.list()
    finally:
        store.close()
    if likely_meant(titles, name, cutoff=0.75) is not None:  # a mistyped name: said as one (_conversation)
        return
    said = f"'{name}'" if "'" not in name else shell_word(name)  # (as it would be typed, pasted back)
    if titles:
        line = t("chat_cmd.name_first", name=name, title=titles[0].title,
                 command=cli(f"chat -c {titles[0].id} {said}"))
    else:
        line = t("chat_cmd.name_first_none", name=name, command=cli(f"chat -c {t('cli.name')} {said}"))
    print("workstation: " + line, file=sys.stderr)
    raise SystemExit(2)  # as "needs text" and the command line's other mistakes


def _conversation(name: str, t: Texts, new: bool = False) -> _Conversation:
    """The saved conversation titled ``name`` (the newest such; case aside), or a new one. A
    name close to a saved one is refused unless ``new``: a typo would start an empty
    conversation, and the question would be answered without what it was about."""
    from workstation.commands.conversations import (
        NUMBER,
        NUMBERED,
        find_conversation,
        find_saved,
        meant_name,
    )

    store = ConversationStore()
    found = find_conversation(store, name) if not new else None  # by its title, or its number (12, #12)
    if found is not None:
        return _Conversation(store, found.id, found.title, t)
    # a number no conversation has: said, not begun as a title (--new: a title "12", not "#12")
    if NUMBER.fullmatch(name.strip()) or (NUMBERED.fullmatch(name.strip()) and not new):
        try:
            if new:
                raise EngineError(t("chat_cmd.number_name", name=name.strip()))
            find_saved(store, name)
        finally:
            store.close()
    name = clean_title(name)  # as the store keeps titles, so the same name finds it again
    if not name:
        store.close()
        raise EngineError(t("chat_cmd.no_name"))
    titles = [c for c in store.list() if not new]

    def numbered(title: str) -> bool:  # report-2 beside report-1, monday2 beside monday: a series, no typo
        return re.sub(r"[\s_-]*\d+", "", fold(title)) == re.sub(r"[\s_-]*\d+", "", fold(name))

    series = any(char.isdigit() for char in name) and any(numbered(c.title) for c in titles)
    # the start of a longer title (its first words: it began another), or a typo: as `conversations show` says it
    meant = None if series else meant_name(titles, name, 0.75)
    if meant is not None:
        store.close()
        raise EngineError(t("chat_cmd.did_you_mean", name=name, meant=meant, command=cli("conversations")))
    return _Conversation(store, None, name, t, fresh=new)
