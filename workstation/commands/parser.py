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
from typing import NoReturn

from workstation.core.invocation import command

_CHOICE = re.compile(r"argument (?P<name>[^:]+): invalid choice: '?(?P<value>[^'\s]*)'?")
_TYPED = re.compile(r"argument (?P<name>[^:]+): invalid (?P<kind>int|float) value: '(?P<value>[^']*)'")
_REQUIRED = "the following arguments are required: "
_UNKNOWN = "unrecognized arguments: "


class CommandParser(argparse.ArgumentParser):
    """The command line's parser; sub-commands' parsers are of this class too."""

    def error(self, message: str) -> NoReturn:
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
            extra = message.removeprefix(_UNKNOWN).split()
            guess = difflib.get_close_matches(extra[0], self._options(), n=1, cutoff=0.6) if extra else []
            hint = f"; did you mean '{guess[0]}'?" if guess else ""
            return f"{' '.join(extra)} is not an option of this command{hint} (see its --help)."
        text = message.removeprefix("argument ")
        return f"{text[:1].upper()}{text[1:].rstrip('.')} (see {help_})."

    def _options(self) -> list[str]:
        """Every option string here and in the sub-commands (argparse reports a sub-command's
        unknown option from the top parser)."""
        out: list[str] = []
        for action in self._actions:
            out += action.option_strings
            if isinstance(action, argparse._SubParsersAction):
                for sub in action.choices.values():
                    out += sub._options() if isinstance(sub, CommandParser) else []
        return sorted(set(out))

    def _action(self, name: str) -> argparse.Action | None:
        """The argument argparse names ``name`` in its message ('COMMAND', '--kv', '-p/--profile')."""
        names = set(name.split("/"))
        for action in self._actions:
            if name in (action.metavar, action.dest) or names & set(action.option_strings):
                return action
        return None
