"""``workstation serve -p P``: an OpenAI-compatible API with continuous batching."""

from __future__ import annotations

import argparse
import os
import sys

from workstation.commands import add_profile_arg, profile_ref
from workstation.core.profiles import load_profile


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("serve", help="serve the profile's model as an OpenAI-compatible API")
    add_profile_arg(p)
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8088, help="port (default 8088; 0 picks a free one)")
    p.add_argument("--parallel", type=int, default=4, help="requests decoded together (slots)")
    p.add_argument("--queue", type=int, default=16, help="requests that may wait for a slot")
    p.add_argument(
        "--api-key",
        help="require 'Authorization: Bearer KEY' (default: env WORKSTATION_API_KEY); "
        "needed to bind anything but loopback",
    )
    p.add_argument("--max-body", type=int, default=4 * 1024 * 1024, help="largest request body in bytes")
    p.add_argument("--max-prompt-tokens", type=int, help="longest prompt in tokens (default: the context)")
    p.add_argument("--model-id", help="model id shown by /v1/models (default: the profile's name)")
    p.add_argument("--log-level", default="warning", help="uvicorn log level (default warning)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from workstation.core.errors import WorkstationError
    from workstation.core.scheduler import Scheduler
    from workstation.core.server import (
        OpenAIServer,
        ServerOptions,
        bind_socket,
        check_host,
        make_uvicorn,
    )

    api_key = args.api_key or os.environ.get("WORKSTATION_API_KEY") or None
    if not 1 <= args.parallel <= 64:
        raise WorkstationError(f"--parallel is {args.parallel}; allowed values are 1 to 64.")
    if not 0 <= args.port <= 65535:
        raise WorkstationError(f"--port is {args.port}; allowed values are 0 to 65535.")
    if args.queue < 0:
        raise WorkstationError(f"--queue is {args.queue}; it must be 0 or more.")
    profile = load_profile(profile_ref(args))
    check_host(args.host, api_key)
    sock = bind_socket(args.host, args.port)  # fail fast, before loading the model
    try:
        scheduler = Scheduler(profile, n_parallel=args.parallel, max_queue=args.queue)
    except BaseException:
        sock.close()
        raise
    port = sock.getsockname()[1]
    options = ServerOptions(
        model_id=args.model_id or profile.key,
        api_key=api_key,
        max_body_bytes=args.max_body,
        max_prompt_tokens=args.max_prompt_tokens,
    )
    app = OpenAIServer(scheduler, options).app
    host = f"[{args.host}]" if ":" in args.host else args.host
    print(
        f"workstation: serving {profile.key} ({scheduler.model_name}) on http://{host}:{port}/v1 "
        f"with {args.parallel} slots of {scheduler.slot_ctx} tokens"
        + (", API key required" if api_key else ""),
        file=sys.stderr,
        flush=True,
    )
    server = make_uvicorn(app, log_level=args.log_level)
    try:
        server.run(sockets=[sock])
    finally:
        scheduler.close()
        sock.close()
    return 0
