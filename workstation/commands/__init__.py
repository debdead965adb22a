"""One module per sub-command; each defines ``register(subparsers)``."""

from __future__ import annotations

import argparse
import copy
import json
import sys
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from workstation.core.events import ServerWaiting
    from workstation.core.profiles import Profile
    from workstation.tui.i18n import Texts


# what -p takes, as --help says it (the app's, and each command's)
PROFILE_HELP = ("profile name (as 'profiles list' shows it), path to a YAML file, or path to a .gguf model "
                "file (run with the settings a new profile for it would get: 'profiles new' writes those)")


def add_profile_arg(parser: argparse.ArgumentParser, multiple: bool = False, variants: bool = False) -> None:
    """``-p/--profile``; a sub-command's own flag overrides the global one. ``variants``: the
    command reads it with ``profile_variants.load_variant`` (settings may follow the profile)."""
    from workstation.core.profile_variants import VARIANT_HELP

    more = VARIANT_HELP if variants else ""
    if multiple:
        parser.add_argument(
            "-p", "--profile", dest="sub_profiles", action="append", metavar="PROFILE",
            help=f"{PROFILE_HELP}{more}; repeat it for several",
        )
    else:
        parser.add_argument(
            "-p", "--profile", dest="sub_profile", metavar="PROFILE",
            help=f"{PROFILE_HELP}{more}",
        )


LANG_HELP = "the language it is said in (default: the app's, as F9 set it, else this PC's)"


def add_lang_arg(parser: argparse.ArgumentParser) -> None:
    """``--lang``: a command that says its results in the app's language (fit, summarize,
    profiles check) takes another, as the app's own ``--lang`` does."""
    parser.add_argument("--lang", choices=("en", "tr"), help=LANG_HELP)


def texts_of(args: argparse.Namespace) -> Texts:
    """What a command with ``--lang`` says, in that language, else the app's as F9 set it, else
    this PC's; English under ``--json`` (a script reads its words as they are documented)."""
    from workstation.tui.i18n import Texts
    from workstation.tui.settings import ui_language

    if getattr(args, "json", False) is True:
        return Texts("en")
    return Texts(getattr(args, "lang", None) or ui_language())


def said_in(err: BaseException, args: argparse.Namespace | None) -> str:
    """A failure's sentence in the language the command speaks (``texts_of``): one raised
    with phrases in that language, where the command takes ``--lang``; else as it is."""
    said = getattr(err, "said", None)
    if not said or args is None or not hasattr(args, "lang"):
        return str(err)
    from workstation.core.phrases import say

    t = texts_of(args)
    return str(err) if t.lang == "en" else say(said, t.get)


def profile_ref(args: argparse.Namespace) -> str | None:
    return getattr(args, "sub_profile", None) or getattr(args, "profile", None)


def profile_refs(args: argparse.Namespace) -> list[str | None]:
    refs = getattr(args, "sub_profiles", None)
    if refs:
        return list(refs)
    return [getattr(args, "profile", None)]


def default_verb(parent: argparse.ArgumentParser, verb: argparse.ArgumentParser) -> None:
    """``parent`` alone does ``verb``, with ``verb``'s options: ``keys`` lists as ``keys list``
    does, and ``keys --json`` too (it said "--json is not an option of 'keys'"). Called once
    every verb is added: an option given before a verb (``audit --dir D verify``, ``models
    --json inspect X``) is kept, where the verb's own default would write over it."""
    shared: set[str] = set()
    for action in verb._actions:  # argparse has no public way to share an option between parsers
        if action.option_strings and not isinstance(action, argparse._HelpAction):
            parent._add_action(copy.copy(action))
            shared.add(action.dest)
    parent.set_defaults(**verb._defaults)
    for verbs in parent._actions:
        if isinstance(verbs, argparse._SubParsersAction):
            for each in verbs.choices.values():
                for action in each._actions:
                    if action.dest in shared:
                        action.default = argparse.SUPPRESS  # what the parent parsed, or its default, stands


def print_load_notes(profile: Profile, engine: object = None, t: Texts | None = None) -> None:
    """What ``profiles check`` notes of the settings (more threads than cores, a context past
    the model's trained length), on stderr once the model has loaded, as the app says them;
    then what ``engine`` found as it loaded (a server that serves another model). In ``t``'s
    language (English without)."""
    from workstation.core.load_notes import load_notes, unsaid_notes
    from workstation.core.phrases import say
    from workstation.core.profile_plan import memory_held_by

    # the model loaded holds its memory now: counted as free, as before it loaded
    freed = memory_held_by(profile, engine)
    # where the text goes: once for each server, as the app says it (it was said at every run)
    for note in [*unsaid_notes(load_notes(profile, freed=freed)), *getattr(engine, "load_notes", [])]:
        print(say([note], t.get if t is not None and t.lang != "en" else None), file=sys.stderr)


MAX_TOKENS_HELP = "longest summary of one part, in tokens (16 at least)"


def summary_profile(args: Any) -> Any:
    """The profile -p names, with ``--max-tokens`` (a part's longest summary) as given, checked
    as the profile's own setting is (summarize and batch)."""
    from workstation.core.errors import ProfileError
    from workstation.core.profile_check import check_sampling, option_name
    from workstation.core.profile_lookup import load_profile
    from workstation.core.summarize import SUMMARY_LEAST

    profile = load_profile(profile_ref(args))
    if args.max_tokens is not None:
        profile.sampling.max_tokens = args.max_tokens
        check_sampling(profile.sampling, option_name)
        if args.max_tokens < SUMMARY_LEAST:  # (it was taken as 16 without a word: "length limit of 16 tokens")
            raise ProfileError(said=[("summary.max_tokens_least", {"value": str(args.max_tokens),
                                                                   "least": str(SUMMARY_LEAST)})])
    return profile


def asked_yes(question: str, without_terminal: str, t: Texts | None = None) -> bool:
    """``question`` answered y or n on the terminal (Ctrl-D or Ctrl-C there: no), in ``t``'s
    language (Turkish: e or h; it asked "[y/N]" after a Turkish question). Without a terminal
    to ask on (a script, a pipe), ``without_terminal`` is the error: say what was left as it
    was, and the option that does it without asking."""
    from workstation.core.errors import WorkstationError
    from workstation.tui.i18n import Texts

    if not (sys.stdin.isatty() and sys.stderr.isatty()):  # (2>log: the question went into the log, unseen)
        raise WorkstationError(without_terminal)
    t = t or Texts("en")
    try:  # (asked on stderr: input()'s prompt went to stdout, into a file the output was sent to)
        print(f"{question} {t('commands.yes_no')} ", end="", file=sys.stderr, flush=True)
        answer = input()
    except (EOFError, KeyboardInterrupt):
        answer = ""
        print(file=sys.stderr)
    # (English's y and yes understood in every language: a keyboard's habit)
    return answer.strip().lower() in {"y", "yes", *(w.strip() for w in t("commands.yes_words").split(","))}


def waiting_line(event: ServerWaiting, t: Texts | None = None) -> str:
    """What a silent office server is doing (``ServerWaiting``), a line on stderr: before the
    first word, behind the person's own other request, every slot taken by others, the server
    starting, or slow; in the middle of a reply. In
    ``t``'s language (English without)."""
    from workstation.core.events import SERVER_STOPPING
    from workstation.tui.i18n import Texts

    t = t or Texts("en")
    if event.stalled:
        return t("commands.waiting_stalled")
    if event.own:
        return t("commands.waiting_own")
    return t({"server_busy": "commands.waiting_busy", "loading": "commands.waiting_loading",
              SERVER_STOPPING: "commands.waiting_stopping"}.get(event.held, "commands.waiting_slow"))


_json_out = [False]  # whether this run printed its JSON (a failure after it adds none)


def print_json(data: Any) -> None:
    json.dump(data, sys.stdout, ensure_ascii=False, indent=2, default=str)
    sys.stdout.write("\n")
    _json_out[0] = True


def json_run_begins() -> None:
    """A run of a command begins: it has printed no JSON yet."""
    _json_out[0] = False


def print_json_error(message: str, exit_code: int) -> None:
    """A ``--json`` run that failed before its JSON: ``{"error": …, "exit_code": …}`` on stdout
    (the sentence is on stderr too), so that a script reading stdout as JSON reads why (it
    read nothing). Not after the run's own JSON: stdout stays one JSON document."""
    if not _json_out[0]:
        print_json({"error": message, "exit_code": exit_code})


def text_table(header: list[str], rows: list[list[str]], right: set[int]) -> str:
    """A Markdown-style table; columns in ``right`` are right-aligned. Every column is at least 3
    wide, so that its separator has a dash (a lone ":" under a one-letter column is not Markdown)."""
    widths = [max(3, len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]

    def line(cells: list[str]) -> str:
        return "| " + " | ".join(
            c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        ) + " |"

    sep = "| " + " | ".join(("-" * (w - 1) + ":") if i in right else "-" * w for i, w in enumerate(widths)) + " |"
    return "\n".join([line(header), sep, *(line(r) for r in rows)])


def stdout_gone(stream: TextIO | None = None) -> None:
    """Standard output's reader went away (``| head -1``): what is written there from now on
    goes nowhere (no BrokenPipeError, nor Python's own "Exception ignored" at exit). ``stream``:
    another one whose reader went away (stderr)."""
    import contextlib
    import os

    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, (stream or sys.stdout).fileno())
        os.close(devnull)
