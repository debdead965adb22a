"""``workstation [tui] [-p PROFILE]``: the terminal app (the default command)."""

from __future__ import annotations

import argparse

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
    from workstation.tui.app import WorkstationApp

    if not 1 <= args.port <= 65535:
        raise SystemExit(f"workstation: --port is {args.port}; allowed values are 1 to 65535.")
    app = WorkstationApp(profile_ref(args), language=args.lang, start_engine=not args.no_load, api_port=args.port,
                         quit_on_signals=True, exit_deadline_s=EXIT_DEADLINE_S)
    app.run()
    return 0
