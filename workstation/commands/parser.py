"""argparse with one sentence for a mistake: what is wrong, the likely intent, where help is.

argparse prints its usage block and a technical line ("argument COMMAND: invalid choice:
'sumarize' (choose from 'tui', 'chat', ...)"); a person gets "There is no command 'sumarize';
did you mean 'summarize'? ('./run.sh --help' lists them)." and exit code 2, as before.
"""

from __future__ import annotations

import argparse
import ast
import difflib
import re
import sys
from collections.abc import Sequence
from gettext import gettext as _
from gettext import ngettext
from typing import TYPE_CHECKING, Any, NoReturn

from workstation.core.invocation import command
from workstation.core.phrases import read_number

if TYPE_CHECKING:
    from workstation.tui.i18n import Texts

_FIELD = re.compile(r"%(?:\((?P<name>\w+)\))?(?P<kind>[sr])")
_REPR = r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|.*?"  # a %r: a string's repr, else any (a number's)


class _Form:
    """One of argparse's messages, read by its own format string (as its gettext ``_()`` gives
    it, the same call argparse makes): ``read`` gives what argparse filled in, by the field's
    name (a lone %s as "s", a lone %r as "text"), a %r one as the value it wrote the repr of;
    None for another message. (A mistake's words are taken from where argparse put them, not
    guessed from its English.)"""

    def __init__(self, format_: str) -> None:
        parts: list[str] = []
        self.reprs: set[str] = set()
        at = 0
        for field in _FIELD.finditer(format_):
            name = field["name"] or ("text" if field["kind"] == "r" else "s")
            parts += [re.escape(format_[at:field.start()]), f"(?P<{name}>{_REPR if field['kind'] == 'r' else '.*?'})"]
            if field["kind"] == "r":
                self.reprs.add(name)
            at = field.end()
        self.pattern = re.compile("".join([*parts, re.escape(format_[at:])]), re.S)

    def read(self, message: str) -> dict[str, str] | None:
        found = self.pattern.fullmatch(message)
        if found is None:
            return None
        return {name: _unrepr(value) if name in self.reprs else value for name, value in found.groupdict().items()}


def _unrepr(text: str) -> str:
    try:
        return str(ast.literal_eval(text))
    except (ValueError, SyntaxError):
        return text


_ARGUMENT = _Form(_("argument %(argument_name)s: %(message)s"))  # an argument's mistake: its name, then which
# (Python 3.14's with its guess first, where the parser's suggest_on_error is on, its default from
# 3.15: the plain one read it whole as the value; the guess said is ours, made below)
_CHOICES = (_Form(_("invalid choice: %(value)r, maybe you meant %(closest)r? (choose from %(choices)s)")),
            _Form(_("invalid choice: %(value)r (choose from %(choices)s)")))
_TYPED = _Form(_("invalid %(type)s value: %(value)r"))
_REQUIRED = _Form(_("the following arguments are required: %s"))
_UNKNOWN = _Form(_("unrecognized arguments: %s"))
# argparse's other messages, each said by its key with what argparse filled in ({name}: the argument's,
# "" for none); another is said as argparse has it
_OTHERS = (
    (_Form(_("expected one argument")), "parser.expected_one"),
    (_Form(_("expected at most one argument")), "parser.expected_at_most_one"),
    (_Form(_("expected at least one argument")), "parser.expected_at_least_one"),
    (_Form(ngettext("expected %s argument", "expected %s arguments", 1)), "parser.expected_one"),  # (nargs=1: "expected 1 argument")
    (_Form(ngettext("expected %s argument", "expected %s arguments", 2)), "parser.expected_n"),
    (_Form(_("not allowed with argument %s")), "parser.not_with"),
    (_Form(_("ignored explicit argument %r")), "parser.no_value"),
    (_Form(_("one of the arguments %s is required")), "parser.one_of"),
    (_Form(_("ambiguous option: %(option)s could match %(matches)s")), "parser.ambiguous"),
)
# the most other commands an option is said to belong to: a list read at a glance (-o/--output's five);
# one many commands share (-p's ten, --json's thirty) is their help's list, no hint. (It was --lang's count
# of owners, raised with it from 3 to 4, and -o of five commands was then named nowhere.)
_OWNERS_NAMED = 6
# the commands' Turkish words, as a Turkish user may type one (`workstation özetle belge.docx`): said
# as the command they mean, as a misspelt English one is; read without Turkish letters too ("ozetle")
_COMMAND_WORDS = {
    "özetle": "summarize", "özet": "summarize", "sohbet": "chat", "konuş": "chat", "modeller": "models",
    "model": "models", "profiller": "profiles", "profil": "profiles", "sığar": "fit", "sığar mı": "fit",
    "sığarmı": "fit", "boyut": "size", "boyutlandır": "size", "donanım": "hw", "toplu": "batch",
    "sunucu": "serve", "sun": "serve", "önbellek": "cache", "anahtarlar": "keys", "anahtar": "keys",
    "kullanım": "usage", "ölç": "bench", "ölçüm": "bench", "hız": "bench", "değerlendir": "eval",
    "konuşmalar": "conversations", "sohbetler": "conversations", "denetim": "audit", "arayüz": "tui",
}
_PLAIN_LETTERS = str.maketrans("çğıöşüâîû", "cgiosuaiu")


def _plain(word: str) -> str:
    """``word`` in small letters without Turkish ones ("Özetle", "ozetle": "ozetle")."""
    return word.replace("İ", "i").replace("I", "ı").lower().translate(_PLAIN_LETTERS)


def close_command(typed: Sequence[str], commands: Sequence[str]) -> tuple[str, int] | None:
    """The command of ``commands`` the first of the words ``typed`` likely means, and how many of
    them it takes ("sığar mı": 2): a close spelling of one (difflib's), else one's Turkish word
    (``_COMMAND_WORDS``), the word exactly before a close spelling of it; None for neither."""
    if not typed:
        return None
    words = {_plain(word): name for word, name in _COMMAND_WORDS.items() if name in commands}
    if len(typed) > 1 and (name := words.get(_plain(f"{typed[0]} {typed[1]}"))):
        return name, 2
    if name := words.get(_plain(typed[0])):
        return name, 1
    if guess := difflib.get_close_matches(typed[0], list(commands), n=1, cutoff=0.6):
        return guess[0], 1
    if guess := difflib.get_close_matches(_plain(typed[0]), list(words), n=1, cutoff=0.7):
        return words[guess[0]], 1
    return None


def decimal(typed: str) -> float:
    """An option's number written the English way or the Turkish (0.7 or 0,7), as Ctrl+E takes
    it: ``chat --temperature 0,7`` on a Turkish PC said it "must be a number"."""
    return float(read_number(typed, False))


def threads(typed: str) -> int:
    """``--threads``, every command's, by a profile's rule (``threads_allowed``): auto (given as
    0: the command's default, all cores) or 1 to 512; 100000 ended in "Segmentation fault"."""
    from workstation.core.profile_check import threads_allowed

    value = "auto" if typed.strip().lower() == "auto" else int(typed)
    if not threads_allowed(value):
        raise ValueError(typed)  # (said by its name: "invalid threads value", below)
    return 0 if value == "auto" else int(value)


class NeedsEveryCommand(Exception):
    """A mistake found by a parser made with one command only (``CommandParser.one_command``):
    its sentence may name another command's option, so every command's parser says it."""


class CommandParser(argparse.ArgumentParser):
    """The command line's parser; sub-commands' parsers are of this class too."""

    one_command = False  # the parser knows the typed command only: a mistake is said by the whole one

    def error(self, message: str) -> NoReturn:
        if CommandParser.one_command:
            raise NeedsEveryCommand(message)
        sys.stderr.write(f"workstation: {self.sentence(message)}\n")  # one line, no usage block
        raise SystemExit(2)

    def sentence(self, message: str) -> str:
        """argparse's ``message`` as one plain sentence, in the command line's language (``line_texts``)."""
        t = line_texts(CommandParser.line)
        help_ = f"{self.prog} --help"
        argument = _ARGUMENT.read(message) or {"argument_name": "", "message": message}
        name, inner = argument["argument_name"], argument["message"]
        if found := next((read for form in _CHOICES if (read := form.read(inner)) is not None), None):
            value = found["value"]
            action = self._action(name)
            choices = [str(c) for c in action.choices] if action is not None and action.choices else []
            if isinstance(action, argparse._SubParsersAction):  # a command, or a command's verb
                before = self.prog.removeprefix(command()).strip()  # 'models' of './run.sh models'
                guess = close_command([value], choices)  # (a verb's has no Turkish words: none is a command)
                typed = f"{before} {value}" if before else value
                if guess:
                    return t("parser.no_command_guess", name=typed, help=help_,
                             what=f"{before} {guess[0]}" if before else guess[0])
                return t("parser.no_command", name=typed, help=help_)
            guess = difflib.get_close_matches(value, choices, n=1, cutoff=0.6)
            if guess:
                return t("parser.choice_guess", name=name, text=value, what=guess[0])
            if len(choices) <= 8:
                return t("parser.choice_from", name=name, text=value, names=", ".join(choices))
            return t("parser.choice_see", name=name, text=value, help=help_)
        if (found := _TYPED.read(inner)) and found["type"] == threads.__name__:
            from workstation.core.profile_check import MAX_THREADS

            return t("parser.threads", name=name, text=found["value"], high=MAX_THREADS)
        if (found := _TYPED.read(inner)) and found["type"] in ("int", "float", "decimal"):
            return t("parser.not_whole" if found["type"] == "int" else "parser.not_number", name=name,
                     text=found["value"], help=help_)
        if found := _REQUIRED.read(message):  # as written: '-t/--type', 'list|clear', 'text' (as --help names it)
            return t("parser.needs", command=self.prog, names=placeholders(found["s"], t.lang), help=help_)
        if found := _UNKNOWN.read(message):
            return self._unknown(found["s"].split(), t)
        for form, key in _OTHERS:
            if (found := form.read(inner)) is not None:
                return t(key, **found, name=name, help=help_)
        text = message.removeprefix("argument ")
        return f"{text[:1].upper()}{text[1:].rstrip('.')} (see '{help_}')."

    def format_help(self) -> str:
        """``--help`` in the command line's language (``line_texts``): argparse's own in English; in
        another, each text it shows (argparse's headings, as its gettext ``_()`` gives them, as the
        mistakes above are read; a command's description; an option's help) as that language's help
        file has it (``help_texts``, keyed by the English text)."""
        from workstation.core.locales import help_texts

        texts = help_texts(line_texts(CommandParser.line).lang)
        if not texts:
            return super().format_help()

        def said(text: str | None) -> str | None:
            return texts.get(text, text) if text else text

        formatter = self._get_formatter()

        class Said(type(formatter)):  # type: ignore[misc]  # (its own kind: the top parser's keeps its lines)
            def _get_help_string(self, action: argparse.Action) -> str | None:
                return said(super()._get_help_string(action))  # (before argparse fills in %(default)s)

            def _metavar_formatter(self, action: argparse.Action, default: str) -> Any:
                # what is typed in a place, in the usage lines and the list alike (`keys add` listed
                # "name" under "sırayla yazılanlar"): its word in the help file, where it has one
                names = super()._metavar_formatter(action, default)
                return lambda size: tuple(said(name) or name for name in names(size))

        formatter.__class__ = Said
        formatter.add_usage(self.usage, self._actions, self._mutually_exclusive_groups, prefix=said(_("usage: ")))
        formatter.add_text(said(self.description))
        for group in self._action_groups:
            formatter.start_section(said(group.title))
            formatter.add_text(said(group.description))
            formatter.add_arguments(group._group_actions)
            formatter.end_section()
        formatter.add_text(said(self.epilog))
        return str(formatter.format_help())

    line: Sequence[str] = ()  # the command line's words, as the whole of it was given to be read
    entered: CommandParser | None = None  # the innermost parser argparse ran: the command typed
    typed: Sequence[str] = ()  # the words each parser was given

    def parse_known_args(self, args: Sequence[str] | None = None, namespace: Any = None) -> Any:  # type: ignore[override]
        CommandParser.entered = self  # a sub-command's parser runs after its parent's
        self.typed = list(sys.argv[1:] if args is None else args)  # what it was given, in order
        return super().parse_known_args(args, namespace)

    def _unknown(self, extra: list[str], t: Texts) -> str:
        """Options argparse did not take, said against the command they were typed to (argparse
        reports a sub-command's from the top parser): a near miss among its own options, else
        the one command that has it, else what the command takes."""
        entered = CommandParser.entered
        here = entered if entered is not None and entered in self._parsers() else self
        first = extra[0] if extra else ""
        own = [o for a in here._actions for o in a.option_strings]
        guess = difflib.get_close_matches(first, [o for o in own if o != first], n=1, cutoff=0.6)
        owners = [p.prog for p in self._parsers() if first in {o for a in p._actions for o in a.option_strings}
                  and p is not here]
        takes = placeholders(" ".join(str(a.metavar or a.dest).upper() for a in here._actions if not a.option_strings
                                      and not isinstance(a, argparse._SubParsersAction)), t.lang)
        command = self._subcommands().get(first)
        if command is not None and command is not here:  # `--lang tr fit`: it said "fit is not an option of 'tui'"
            return t("parser.own_command", name=first, command=command.prog, before=here.prog)
        # the exact option of another command before a close spelling of one of this one's
        # (`summarize --gpu` is fit's, not a misspelt --output)
        if len(owners) == 1:
            hint = t("parser.hint_owner", command=owners[0], name=first)
        elif 1 < len(owners) <= _OWNERS_NAMED:  # (said for one only, two said nothing); before what the
            # command takes, as one owner is ("it takes TEXT" for chat)
            names = sorted(o.removeprefix(f"{self.prog} ") for o in owners)
            hint = t("parser.hint_owners", name=first, names=t.series(names, _OWNERS_NAMED))
        elif guess:
            hint = t("parser.hint_guess", what=guess[0])
        elif takes:  # and its options: "it takes WORKLOAD" of size read as if that were all (--people, --top…)
            options = [a.option_strings[-1] for a in here._actions if a.option_strings
                       and a.help is not argparse.SUPPRESS and not isinstance(a, argparse._HelpAction)]
            hint = t("parser.hint_takes", names=t.series([*takes.split(), *options], most=6))
        else:
            hint = ""
        commands = self._subcommands()
        if here is commands.get("tui") and not first.startswith("-") and (guess := close_command(extra, list(commands))):
            # a command misspelt or in Turkish after the app's options (`--lang tr özetle belge.docx`): said
            # as a command, not as "'özetle belge.docx' was not expected: 'workstation tui' takes options only"
            return t("parser.no_command_guess", name=" ".join(extra[:guess[1]]), what=guess[0], help=f"{self.prog} --help")
        if not first.startswith("-"):  # a word, not an option: "x is not an option" named no option
            if not takes:
                return t("parser.not_expected", text=" ".join(extra), command=here.prog)
            return t("parser.too_many", text=" ".join(extra), command=here.prog, names=takes)
        return t("parser.not_option", text=" ".join(_typed_together(extra, here.typed)), command=here.prog, hint=hint)

    def _subcommands(self) -> dict[str, CommandParser]:
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction):
                return {k: v for k, v in action.choices.items() if isinstance(v, CommandParser)}
        return {}

    def _parsers(self) -> list[CommandParser]:
        """This parser and every sub-command's, depth first."""
        out: list[CommandParser] = [self]
        for sub in dict.fromkeys(self._subcommands().values()):  # aliases share a parser
            out += sub._parsers()
        return out

    def _action(self, name: str) -> argparse.Action | None:
        """The argument argparse names ``name`` in its message ('COMMAND', '--kv', '-p/--profile')."""
        names = set(name.split("/"))
        for action in self._actions:
            if name in (action.metavar, action.dest) or names & set(action.option_strings):
                return action
        return None


def placeholders(names: str, lang: str) -> str:
    """Places to type in, as argparse names them ("name", "NAME, NEW_NAME"), in ``lang``'s words
    as its ``--help`` says them (``help_texts``: Turkish "isim", "İSİM, YENİ_İSİM")."""
    from workstation.core.locales import help_texts

    texts = help_texts(lang)
    return re.sub(r"[^\s,]+", lambda name: texts.get(name[0], name[0]), names) if texts else names


def line_texts(line: Sequence[str]) -> Texts:
    """The language a mistake in the command line ``line`` is said in, known before it is read
    (``commands.texts_of`` of what it would have given): its ``--lang`` (``--lang tr`` or
    ``--lang=tr``, the last; a word after ``--`` is a text), else the app's as F9 set it, else
    this PC's; English with ``--json``."""
    from workstation.commands import texts_of
    from workstation.tui.i18n import LANGUAGES

    words = list(line)[:list(line).index("--")] if "--" in line else list(line)
    lang = None
    for at, word in enumerate(words):
        typed = word.removeprefix("--lang=") if word.startswith("--lang=") else \
            words[at + 1] if word == "--lang" and at + 1 < len(words) else None
        if typed in LANGUAGES:
            lang = typed
    return texts_of(argparse.Namespace(lang=lang, json="--json" in words))


def _typed_together(extra: list[str], typed: Sequence[str]) -> list[str]:
    """The first word argparse did not take, with those typed right after it that it did not
    take either (``--lang tr``): in ``chat --temprature 1 hi`` the 1 went as the text and the
    sentence said "--temprature hi is not an option"."""
    typed = list(typed)
    if not extra or extra[0] not in typed:
        return extra[:1]
    start = typed.index(extra[0])
    together = [extra[0]]
    for offset, word in enumerate(extra[1:], 1):
        if start + offset >= len(typed) or typed[start + offset] != word or _an_option(word):
            break  # (the next option typed is another, said on its own: "--lang tr --temprature 1")
        together.append(word)
    return together


def _an_option(word: str) -> bool:
    """``--name`` or ``-x``, not a negative number (``--top-k -1``'s value)."""
    if not word.startswith("-") or word == "-":
        return False
    try:
        float(word)
    except ValueError:
        return True
    return False
