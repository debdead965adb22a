"""The ``workstation`` command line. Each sub-command lives in ``workstation/commands/``.

Every failure the user can cause ends as one sentence on stderr and a non-zero exit code,
never a traceback (set ``WORKSTATION_DEBUG=1`` to see one).
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import importlib
import importlib.util
import os
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path

from workstation import launch
from workstation.commands import (
    PROFILE_HELP,
    json_run_begins,
    print_json_error,
    said_in,
    stdout_gone,
    texts_of,
)
from workstation.commands.parser import CommandParser, NeedsEveryCommand, line_texts
from workstation.core import invocation
from workstation.core.atomic import WRITE_ERRNOS, cannot_write
from workstation.core.errors import WorkstationError
from workstation.core.invocation import command, shell_word
from workstation.core.phrases import Lookup, logs_said_in, say
from workstation.launch import STOPPED, closed_streams_opened, command_word, interrupted

# Sub-commands in the order `--help` lists them; each module has register(subparsers).
COMMANDS = (
    "tui",
    "chat",
    "conversations",
    "models",
    "profiles",
    "fit",
    "size",
    "hw",
    "summarize",
    "batch",
    "bench",
    "eval",
    "serve",
    "cache",
    "keys",
    "usage",
    "audit",
)

# What an office's IT person sets once per PC (in /etc/environment, ~/.profile or a service's
# unit): it was in the README's long paragraphs only, and WORKSTATION_PROFILES nowhere.
ENVIRONMENT_HELP = f"""\
environment (set in ~/.profile, /etc/environment or a service's Environment=):
  WORKSTATION_DATA        the data folder: conversations, people's keys, usage, the audit
                          trail and your own profiles (default ~/.local/share/workstation)
  WORKSTATION_PROFILE     the profile a command runs without -p (default office-cpu); the
                          app starts with it too (else with the one loaded last)
  WORKSTATION_PROFILES    an office's shared folder of profiles, listed with the shipped
                          ones of profiles/ here; its file of a shipped name is used instead
  WORKSTATION_MODELS      the folder models are kept in (default models/ here)
  WORKSTATION_MODEL_DIRS  more folders whose .gguf files are read, separated by '{os.pathsep}'
  WORKSTATION_API_KEY     a desk PC's key for the office server; serve's operator key
  WORKSTATION_ALLOW_ROOT  1: root may work in another user's data folder (a container
                          whose mounted folder's user does not exist there)
README.md, 'An office on one server', has the steps for a whole office."""


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole command line's parser; with ``only``, that command's alone (the others' modules
    not imported: every command imported all seventeen, a third of a second before any began)."""
    parser = CommandParser(
        prog=command(),
        description="Run local LLMs on this PC: chat, summarize, benchmark and serve.",
        epilog=ENVIRONMENT_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("-p", "--profile", help=PROFILE_HELP)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS if only is None else (only,):
        module_name = f"workstation.commands.{name}"
        if importlib.util.find_spec(module_name) is None:
            continue
        importlib.import_module(module_name).register(sub)
    return parser


def _starts_the_tui(parser: argparse.ArgumentParser, argv: list[str]) -> bool:
    """``./run.sh --lang tr`` and ``./run.sh -p P --no-load``: the app's own options with no
    command before them (the command is optional, the app the default)."""
    words = iter(argv)
    for word in words:
        if word in ("-p", "--profile"):
            next(words, None)
            continue
        if word.startswith("--profile="):
            continue
        if not word.startswith("-") or word in ("-h", "--help"):
            return False
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        return word.split("=", 1)[0] in sub.choices["tui"]._option_string_actions
    return False


def _language_to_the_command(argv: list[str]) -> list[str]:
    """``--lang tr bench --quick``: the language typed before a command is that command's where
    it takes ``--lang`` (it said "'bench' is a command of its own: type it first", of a line a
    Turkish user typed as ``--lang tr`` goes with ``workstation`` itself)."""
    if argv[:1] == ["--lang"] and len(argv) >= 3:
        lang, rest = argv[:2], argv[2:]
    elif argv[:1] and argv[0].startswith("--lang=") and len(argv) >= 2:
        lang, rest = argv[:1], argv[1:]
    else:
        return argv
    if rest[0] not in COMMANDS or rest[0] == "tui":
        return argv
    sub = next(a for a in build_parser(rest[0])._actions if isinstance(a, argparse._SubParsersAction))
    command = sub.choices.get(rest[0])
    if command is None or "--lang" not in command._option_string_actions:
        return argv
    return [rest[0], *lang, *rest[1:]]


def _parsed(argv: list[str]) -> argparse.Namespace:
    """The command line read: by the typed command's parser alone where one is typed, else (and
    for any mistake, whose sentence may name another command) by the whole command line's."""
    CommandParser.line = argv  # (a mistake is said in its --lang, known before it is read)
    argv = _language_to_the_command(argv)
    named = command_word(argv)
    if named in COMMANDS:
        CommandParser.one_command = True
        try:
            return build_parser(named).parse_args(argv)
        except NeedsEveryCommand:
            pass
        finally:
            CommandParser.one_command = False
    parser = build_parser()
    if named is None and {"-h", "--help"} & set(argv[:argv.index("--")] if "--" in argv else argv):
        parser.parse_args(["--help"])  # (`--lang tr --help`: the whole command line's help, as `--help`; it was tui's)
    if _starts_the_tui(parser, argv):
        argv = ["tui", *argv]
    args = parser.parse_args(argv)
    if args.command is None:
        args = parser.parse_args(["tui", *argv])
    return args


def _shown_as_it_can_be() -> None:
    """A character the terminal's encoding lacks (an emoji in a reply, under a latin-1 or ASCII
    locale) is written as "?", not an "unexpected error: UnicodeEncodeError" mid-reply."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None and (getattr(stream, "encoding", "") or "").lower().replace("-", "") != "utf8":
            reconfigure(errors="replace")


def _not_read_as_utf8(argv: Sequence[str]) -> str:
    """Why the command's words cannot be read, or "". Under a language setting that is not
    UTF-8 (LC_ALL=C, with Python's UTF-8 mode off) a word such as "café" arrives as bytes
    Python could not decode, and a chat message with one ended in "unexpected error:
    UnicodeEncodeError: ... surrogates not allowed". (Taken as UTF-8 instead, a file name
    with one could then not be opened under that setting.)"""
    for word in argv:
        if any("\udc80" <= ch <= "\udcff" for ch in word):
            setting = next((f"{name}={os.environ[name]}" for name in ("LC_ALL", "LC_CTYPE", "LANG")
                            if os.environ.get(name)), "none")
            return (f"This terminal's language setting ({setting}) is not UTF-8, so a word of the command with "
                    "a letter outside plain English cannot be read: run it with LC_ALL=C.UTF-8 in front "
                    "(or set LANG=C.UTF-8 in the terminal's settings).")
    return ""


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    invocation.TYPED[:] = argv  # (advice that says the same command with one word changed)
    closed_streams_opened()
    _shown_as_it_can_be()
    args: argparse.Namespace | None = None
    json_run_begins()
    if unreadable := _not_read_as_utf8(argv):
        return _failed(None, unreadable, 1)
    try:
        # (inside: Ctrl-C while the commands' modules are still being imported, just after
        # Enter, printed a traceback from whichever import it fell in)
        args = _parsed(argv)
        _say_setup_problems(args)
        with logs_said_in(_log_lookup(args)):
            code = int(args.func(args) or 0)
        sys.stdout.flush()  # (here, not at exit: a reader gone by then is said below, not by Python)
        return code
    except WorkstationError as err:
        return _failed(args, said_in(err, args), err.exit_code)  # (fit's, summarize's: in the app's language)
    except KeyboardInterrupt:
        return _failed(args, _stopped_said(argv), 130)
    except BrokenPipeError:
        return _reader_gone()
    except OSError as err:
        written = err.filename2 or err.filename  # (a rename's is where it went)
        if err.errno not in WRITE_ERRNOS or os.environ.get("WORKSTATION_DEBUG"):
            return _unexpected(err, args)
        # a full or read-only disk under any command that writes (batch -o, models add/pull,
        # quantize -o, size -o): "unexpected error: OSError: [Errno 28]" before; a write to an
        # open file names none
        said = (say(cannot_write(Path(os.fsdecode(written)), err)) if written else
                f"A disk this command writes to is {'read-only' if err.errno == errno.EROFS else 'full'} "
                f"({err.strerror}); free some space there, or write elsewhere, then run the same command again.")
        return _failed(args, said, 1)
    except Exception as err:  # noqa: BLE001 - the last line of defence against tracebacks
        return _unexpected(err, args)


def _log_lookup(args: argparse.Namespace) -> Lookup | None:
    """The language the core's warnings are said in while the command runs (``logs_said_in``):
    the command's, where it takes --lang and speaks another than English; None: as they are."""
    if not hasattr(args, "lang"):
        return None
    t = texts_of(args)
    return None if t.lang == "en" else t.get


def _say_setup_problems(args: argparse.Namespace) -> None:
    """What in the set-up leaves something out, said once before a command that reads profiles
    runs (the app says it in a toast): an office's profiles folder, or models folder, that is not there."""
    from workstation.core.paths import office_folder_problem

    reads_profiles = hasattr(args, "sub_profile") or hasattr(args, "sub_profiles") or args.command in ("profiles", "models")
    if args.command != "tui" and reads_profiles and (problem := office_folder_problem()):
        print(f"workstation: {say(problem)}", file=sys.stderr)


def _stopped_said(argv: Sequence[str]) -> str:
    """Ctrl-C's sentence, every command's, in the command line's language (``line_texts``: its
    --lang anywhere in it, else F9's, else this PC's; English with --json), known however early
    the key was pressed (it was English under Turkish, but for serve's). Before the command's
    modules are imported, launch.STOPPED says it in English."""
    try:
        return line_texts(argv)("commands.stopped")
    except Exception:  # noqa: BLE001 - (a locale file unreadable: said as before the language is known)
        return STOPPED.removeprefix("workstation: ")


def _reader_gone() -> int:
    """Standard output's reader went away (``| head -1``): exit code 0, quietly, for every
    command. A short output fits in the pipe before the reader goes, and that run cannot tell,
    so 0 is the one code every run can give (it was 1 for some commands, 0 for others). What is
    left unwritten goes nowhere: Python's own "Exception ignored ... BrokenPipeError" at exit
    is not printed. Standard output closed from the start (``>&-``, ``launch.closed_streams_opened``):
    1, as quietly (nothing of it could be written)."""
    stdout_gone()
    return 1 if launch.STDOUT_CLOSED else 0


def _failed(args: argparse.Namespace | None, said: str, code: int) -> int:
    """The run failed: ``said`` on stderr as one sentence, and with --json on stdout too, as
    ``{"error", "exit_code"}``, where the command printed no JSON of its own (a script reading
    stdout as JSON read nothing). A mistyped option is said by the parser alone (exit 2)."""
    print(f"workstation: {said}", file=sys.stderr)
    if getattr(args, "json", False) is True:
        with contextlib.suppress(OSError):  # (stdout closed: the sentence is said already)
            print_json_error(said, code)
    return code


def _unexpected(err: Exception, args: argparse.Namespace | None = None) -> int:
    """The last line of defence against tracebacks (``WORKSTATION_DEBUG=1``: the traceback)."""
    if os.environ.get("WORKSTATION_DEBUG"):
        raise err
    if interrupted(err):
        return _failed(args, _stopped_said(CommandParser.line), 130)
    from workstation.core.address_space import ran_out_of_memory, ran_out_phrase

    if ran_out_of_memory(err):  # ("unexpected error: MemoryError:" under a small ulimit -v)
        try:
            lookup = line_texts(CommandParser.line).get
        except Exception:  # noqa: BLE001 - (memory short for the language's file too: English)
            lookup = None
        return _failed(args, say([ran_out_phrase()], lookup), 1)
    if _from_llama_cpps_loader(err):  # (a library deleted, or built for another machine)
        venv = Path(sys.prefix)
        run = venv.parent / "run.sh"  # (README's install: a .venv beside run.sh, which sets it up)
        said = (("engine.library_broken", {"why": str(err), "venv": shell_word(str(venv)), "run": shell_word(str(run))})
                if sys.prefix != sys.base_prefix and run.is_file() else ("engine.library_broken_pip", {"why": str(err)}))
        return _failed(args, say([said]), 1)
    return _failed(args, f"unexpected error: {type(err).__name__}: {err}", 1)


def _from_llama_cpps_loader(err: BaseException) -> bool:
    """Whether ``err`` is llama-cpp-python failing to load its shared library (raised while its
    modules were imported: a missing file, or one that cannot be loaded here)."""
    frames = traceback.extract_tb(err.__traceback__)
    return isinstance(err, (OSError, RuntimeError)) and any(
        Path(f.filename).name == "_ctypes_extensions.py" and "llama_cpp" in Path(f.filename).parts for f in frames)


if __name__ == "__main__":
    raise SystemExit(main())
