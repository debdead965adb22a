"""argparse with one sentence for a mistake: what is wrong, the likely intent, where help is.

argparse prints its usage block and a technical line ("argument COMMAND: invalid choice:
'sumarize' (choose from 'tui', 'chat', ...)"); a person gets "There is no command 'sumarize';
did you mean 'summarize'? ('./run.sh --help' lists them)." and exit code 2, as before.
"""

from __future__ import annotations

import argparse
import difflib
import re
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from workstation.core.invocation import command
from workstation.core.phrases import read_number

_CHOICE = re.compile(r"argument (?P<name>[^:]+): invalid choice: '?(?P<value>[^'\s]*)'?")
_TYPED = re.compile(r"argument (?P<name>[^:]+): invalid (?P<kind>int|float|decimal) value: '(?P<value>[^']*)'")
_REQUIRED = "the following arguments are required: "
_UNKNOWN = "unrecognized arguments: "
# the most other commands an option is said to belong to: a list read at a glance (-o/--output's five);
# one many commands share (-p's ten, --json's thirty) is their help's list, no hint. (It was --lang's count
# of owners, raised with it from 3 to 4, and -o of five commands was then named nowhere.)
_OWNERS_NAMED = 6


def decimal(typed: str) -> float:
    """An option's number written the English way or the Turkish (0.7 or 0,7), as Ctrl+E takes
    it: ``chat --temperature 0,7`` on a Turkish PC said it "must be a number"."""
    return float(read_number(typed, False))


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
        """argparse's ``message`` as one plain sentence."""
        help_ = f"'{self.prog} --help'"
        if found := _CHOICE.match(message):
            name, value = found["name"], found["value"]
            action = self._action(name)
            choices = [str(c) for c in action.choices] if action is not None and action.choices else []
            if isinstance(action, argparse._SubParsersAction):  # a command, or a command's verb
                before = self.prog.removeprefix(command()).strip()  # 'models' of './run.sh models'
                what = f"There is no command '{f'{before} ' if before else ''}{value}'"
                guess = difflib.get_close_matches(value, choices, n=1, cutoff=0.6)
                if guess:
                    return f"{what}; did you mean '{f'{before} ' if before else ''}{guess[0]}'? ({help_} lists them)."
                return f"{what} ({help_} lists them)."
            guess = difflib.get_close_matches(value, choices, n=1, cutoff=0.6)
            what = f"{name} cannot be '{value}'"
            if guess:
                return f"{what}; did you mean '{guess[0]}'?"
            return f"{what}; choose from {', '.join(choices)}." if len(choices) <= 8 else f"{what} (see {help_})."
        if found := _TYPED.match(message):
            kind = "a whole number" if found["kind"] == "int" else "a number"
            return f"{found['name']} must be {kind}, not '{found['value']}' (see {help_})."
        if message.startswith(_REQUIRED):
            missing = message.removeprefix(_REQUIRED)  # as written: '-t/--type', 'list|clear', 'text'
            return f"'{self.prog}' needs {missing} (see {help_})."
        if message.startswith(_UNKNOWN):
            return self._unknown(message.removeprefix(_UNKNOWN).split())
        text = message.removeprefix("argument ")
        return f"{text[:1].upper()}{text[1:].rstrip('.')} (see {help_})."

    entered: CommandParser | None = None  # the innermost parser argparse ran: the command typed
    typed: Sequence[str] = ()  # the words each parser was given

    def parse_known_args(self, args: Sequence[str] | None = None, namespace: Any = None) -> Any:  # type: ignore[override]
        CommandParser.entered = self  # a sub-command's parser runs after its parent's
        self.typed = list(sys.argv[1:] if args is None else args)  # what it was given, in order
        return super().parse_known_args(args, namespace)

    def _unknown(self, extra: list[str]) -> str:
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
        takes = [a.metavar or a.dest for a in here._actions if not a.option_strings
                 and not isinstance(a, argparse._SubParsersAction)]
        command = self._subcommands().get(first)
        if command is not None and command is not here:  # `--lang tr fit`: it said "fit is not an option of 'tui'"
            return (f"'{first}' is a command of its own: type it first, as '{command.prog} …' (the options "
                    f"before a command go to '{here.prog}').")
        # the exact option of another command before a close spelling of one of this one's
        # (`summarize --gpu` is fit's, not a misspelt --output)
        if len(owners) == 1:
            hint = f"; did you mean '{owners[0]} {first}'?"
        elif 1 < len(owners) <= _OWNERS_NAMED:  # (said for one only, two said nothing); before what the
            # command takes, as one owner is ("it takes TEXT" for chat)
            names = sorted(o.removeprefix(f"{self.prog} ") for o in owners)
            hint = f"; {first} is an option of {', '.join(names[:-1])} and {names[-1]}"
        elif guess:
            hint = f"; did you mean '{guess[0]}'?"
        elif takes:
            hint = f"; it takes {' '.join(str(t).upper() for t in takes)}"
        else:
            hint = ""
        if not first.startswith("-"):  # a word, not an option: "x is not an option" named no option
            if not takes:
                return f"'{' '.join(extra)}' was not expected: '{here.prog}' takes options only (see '{here.prog} --help')."
            return (f"'{' '.join(extra)}' is more than '{here.prog}' takes ({' '.join(str(t).upper() for t in takes)}); "
                    f"a text with spaces goes in quotes (see '{here.prog} --help').")
        return f"{' '.join(_typed_together(extra, here.typed))} is not an option of '{here.prog}'{hint} (see '{here.prog} --help')."

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
