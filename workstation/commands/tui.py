"""``workstation [tui] [-p PROFILE]``: the terminal app (the default command)."""

from __future__ import annotations

import argparse
import os
import signal
import sys

from workstation.commands import add_profile_arg, profile_ref


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("tui", help="the terminal chat app (the default command)")
    add_profile_arg(p)
    p.add_argument("--lang", choices=("en", "tr"), help="interface language (default: from the locale)")
    p.add_argument("--no-load", action="store_true", help="start without loading a model")
    p.add_argument("--port", type=int, default=8088,
                   help="port of the API that Ctrl+G serves on 127.0.0.1 (default 8088)")
    p.set_defaults(func=run)


EXIT_DEADLINE_S = 30.0  # after a SIGTERM or a closed terminal; keeping a reply takes 5 s at most


def run(args: argparse.Namespace) -> int:
    if not 1 <= args.port <= 65535:
        raise SystemExit(f"workstation: --port is {args.port}; allowed values are 1 to 65535.")
    problem = terminal_problem()
    if problem:
        # said where a person looks: with 2> to a file the screen stayed blank, and so would this
        sys.stderr.write(f"workstation: {problem}\n")
        if not sys.stderr.isatty() and sys.stdout.isatty():
            sys.stdout.write(f"workstation: {problem}\n")
        return 1
    from workstation.core.address_space import app_room_problem

    if short := app_room_problem():  # (before the screen is taken: said on a clean terminal)
        from workstation.core.errors import WorkstationError

        raise WorkstationError(said=[short])
    from workstation.tui.app import WorkstationApp
    from workstation.tui.paste_guard import guard_pastes

    guard_pastes()  # pasted escape codes stay text, never keys
    app = WorkstationApp(profile_ref(args), language=args.lang, start_engine=not args.no_load, api_port=args.port,
                         quit_on_signals=True, exit_deadline_s=EXIT_DEADLINE_S)
    app.run()
    if app.quit_signal == signal.SIGQUIT:  # (a quit signal's own code; after SIGTERM or SIGHUP it quit as asked: 0)
        return 128 + signal.SIGQUIT
    return app.return_code or 0  # (1 after an error that ended it: it said 0)


def terminal_problem() -> str:
    """Why the app cannot run here, or "". Without a terminal to read keys from (< /dev/null, a
    pipe, nohup, setsid) it drew its screen, took no key, Ctrl+Q included, and spun a core until
    killed; with its screen (drawn on standard error) sent to a file, the window stayed blank;
    with standard output sent to one (> out.txt, | cat), it drew an 80x24 screen that never
    followed the window's size; in a terminal that cannot place text (TERM=dumb: Emacs' shell) it drew escape codes."""
    from workstation.core.invocation import cli

    instead = "use the command line instead, e.g. " + cli('chat "Hello"')
    if not sys.stdin.isatty():
        return ("The app reads its keys from a terminal, and its input here is not one (a file, a pipe "
                f"or /dev/null): start it in a terminal window, or {instead}.")
    if not sys.stderr.isatty():
        return ("The app draws its screen on standard error, which goes to a file or a pipe here: start "
                f"it without 2> (or 2>&1), or {instead}.")
    if not sys.stdout.isatty():  # (Textual takes the screen's size from it: 80x24, and never followed a resize)
        return ("The app needs a terminal on its standard output, which goes to a file or a pipe here: start "
                "it without > (or |), or, to save a reply to a file, use "
                + cli('chat "Hello" > reply.txt') + ".")
    if os.environ.get("TERM", "") == "dumb":
        return ("This terminal (TERM=dumb) cannot show the app's screen: start it in a terminal window "
                f"(or set TERM, e.g. TERM=xterm-256color), or {instead}.")
    return ""
