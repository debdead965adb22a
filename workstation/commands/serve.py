"""``workstation serve -p P``: an OpenAI-compatible API with continuous batching."""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import socket
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from workstation.commands import (
    add_lang_arg,
    add_profile_arg,
    print_load_notes,
    profile_ref,
    texts_of,
)
from workstation.core.audit import DEFAULT_MAX_BYTES as DEFAULT_AUDIT_MAX_BYTES
from workstation.core.file_lock import HeldFile
from workstation.core.invocation import cli
from workstation.core.keys import bearer_before, key_from_file
from workstation.core.paths import typed_path
from workstation.core.profile_lookup import load_profile
from workstation.core.profiles import SERVE_SLOTS
from workstation.core.server.guard import own_names
from workstation.core.server.options import (
    DEFAULT_BODY_TIMEOUT_S,
    DEFAULT_HEADER_TIMEOUT_S,
    DEFAULT_MAX_BODY,
    DEFAULT_MAX_INFLIGHT_BODY,
    DEFAULT_MAX_MESSAGES,
    DEFAULT_MAX_REQUESTS,
    DEFAULT_SHUTDOWN_GRACE_S,
    ServerOptions,
    default_max_connections,
)
from workstation.launch import SERVE_STOPPED

if TYPE_CHECKING:
    from collections.abc import Mapping

    from workstation.core.server.accounts import Accounts
    from workstation.tui.i18n import Texts

# a slot's cells are saved to disk from this many tokens: long system prompts and documents,
# not every short chat (each save is a file of about 22 KB a token for SmolLM2 at f16)
PROMPT_CACHE_MIN_TOKENS = 256


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("serve", help="serve the profile's model as an OpenAI-compatible API")
    add_profile_arg(p)
    p.add_argument(
        "--host", action="append", default=[], metavar="ADDRESSES",
        help="address to bind (default 127.0.0.1); several: comma-separated or --host repeated",
    )
    p.add_argument("--port", type=int, default=8088, help="port (default 8088; 0 picks a free one)")
    p.add_argument("--parallel", type=int, default=None,
                   help=f"requests decoded together (slots; default: the profile's parallel, else {SERVE_SLOTS})")
    p.add_argument("--queue", type=int, default=16, help="requests that may wait for a slot (default 16)")
    p.add_argument(
        "--key-max-parallel", type=int, metavar="K",
        help="slots one person's key may hold at once unless the key sets its own "
        "(default: --parallel - 1, so someone else always finds a slot; 0: no cap)",
    )
    p.add_argument(
        "--api-key",
        help="the operator's key, which clients send as 'Authorization: Bearer KEY' or 'X-Api-Key: KEY' "
        "(default: env WORKSTATION_API_KEY); off loopback a key is needed, this one or people's keys ('keys add') "
        "(every user of the computer sees it in ps: see --api-key-file)",
    )
    p.add_argument(
        "--api-key-file", metavar="PATH",
        help="the operator's key as the first line of this file, which other users may not read (chmod 600, "
        "or 640 for the service's group); instead of --api-key or WORKSTATION_API_KEY",
    )
    p.add_argument(
        "--allowed-hosts", action="append", default=[], metavar="NAMES",
        help="host names to answer for besides localhost and IP addresses, comma-separated "
        "('.example.com' takes sub-domains, '*' any): a guard against DNS rebinding",
    )
    p.add_argument(
        "--allowed-origins", action="append", default=[], metavar="ORIGINS",
        help="web origins (https://host[:port]) whose pages may call the API besides loopback ones, "
        "comma-separated ('*' any)",
    )
    p.add_argument("--max-body", type=int, default=DEFAULT_MAX_BODY,
                   help=f"largest request body in bytes (default {DEFAULT_MAX_BODY})")
    p.add_argument(
        "--max-inflight-body", type=int, default=DEFAULT_MAX_INFLIGHT_BODY,
        help=f"request body bytes read at once, all requests together (default {DEFAULT_MAX_INFLIGHT_BODY})",
    )
    p.add_argument("--max-messages", type=int, default=DEFAULT_MAX_MESSAGES,
                   help=f"messages per chat request (default {DEFAULT_MAX_MESSAGES})")
    p.add_argument("--max-requests", type=int,
                   help="requests handled at once before 503 (default: 64, or more for a long --queue)")
    p.add_argument("--max-connections", type=int,
                   help="open connections at once (default: 512, fewer under a low open-file limit)")
    p.add_argument("--header-timeout", type=float, default=DEFAULT_HEADER_TIMEOUT_S,
                   help=f"seconds for a request's headers to arrive (default {DEFAULT_HEADER_TIMEOUT_S:g})")
    p.add_argument("--body-timeout", type=float, default=DEFAULT_BODY_TIMEOUT_S,
                   help=f"seconds for a request's body to arrive (default {DEFAULT_BODY_TIMEOUT_S:g})")
    p.add_argument(
        "--shutdown-grace", type=float, default=DEFAULT_SHUTDOWN_GRACE_S, metavar="SECONDS",
        help="at a stop (SIGTERM, Ctrl+C), how long the replies being written may take to finish while new "
        f"requests are refused; a second stop ends them at once (default {DEFAULT_SHUTDOWN_GRACE_S:g}; 0: at once)",
    )
    p.add_argument("--max-prompt-tokens", type=int, help="longest prompt in tokens (default and most: one slot's context - 1)")
    p.add_argument("--model-id", help="model id shown by /v1/models (default: the profile's name)")
    p.add_argument(
        "--alias", action="append", default=[], metavar="NAME",
        help="another model id /v1/models lists for this model (repeatable, or comma-separated)",
    )
    p.add_argument(
        "--no-metrics", action="store_true",
        help="turn GET /metrics off: it answers 501 saying so (on by default; llama-server has it off unless "
        "--metrics)",
    )
    p.add_argument(
        "--slot-save-path", metavar="DIR",
        help="folder for POST /slots/{id}?action=save|restore|erase files (off without it: 501, as in llama-server)",
    )
    p.add_argument(
        "--audit-content", action="store_true",
        help="keep each request's messages and the reply in the audit trail (off: counts only)",
    )
    p.add_argument(
        "--audit-max-bytes", type=int, default=DEFAULT_AUDIT_MAX_BYTES, metavar="N",
        help=f"start a new audit file past this size; the chain runs on (default {DEFAULT_AUDIT_MAX_BYTES})",
    )
    # (a choice: a level uvicorn does not know, "verbose", loaded the model and then ended serve with
    # "unexpected error: KeyError: 'verbose'")
    p.add_argument("--log-level", default="warning", type=str.lower, metavar="LEVEL",
                   choices=("critical", "error", "warning", "info", "debug", "trace"),
                   help="log level: critical, error, warning (default: problems only), info (a line a request, "
                   "who, status and tokens), debug or trace")
    p.add_argument(
        "--no-prompt-cache", action="store_true",
        help="do not keep long prompts' KV cache on disk (by default, once a second request starts "
             f"with the same {PROMPT_CACHE_MIN_TOKENS}+ tokens, that shared part is saved when another "
             "prompt takes the slot and at shutdown, and restored for prompts that start the same way, "
             "also after a restart; prompts asked once are not saved; the folder's budget is "
             "WORKSTATION_KV_CACHE_MB, see workstation cache list)",
    )
    # the sentences it says to a person (where it serves, its refusals, the stop); the access log
    # and the service's log lines (uvicorn's, a signal's) stay English, a format for machines
    add_lang_arg(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from workstation.core.errors import WorkstationError
    from workstation.core.kv_state import kept_store
    from workstation.core.language_words import served_figures
    from workstation.core.scheduler import Scheduler
    from workstation.core.server.process import (
        OpenAIServer,
        answering_while_loading,
        bind_sockets,
        check_host,
        hang_up_taken,
        make_uvicorn,
        run_server,
        stop_kept_until_served,
        terminate_as_ctrl_c,
    )
    from workstation.core.usage import UNSAVED_NAME

    t = texts_of(args)
    if args.api_key and args.api_key_file:
        raise WorkstationError(t("serve_cmd.key_twice"))
    api_key = args.api_key or key_from_file(args.api_key_file, "--api-key-file", service=True) or os.environ.get("WORKSTATION_API_KEY") or None
    if api_key and bearer_before(api_key):  # (--api-key-file's is said by key_from_file)
        raise WorkstationError(said=[("key.bearer", {"named": "--api-key" if args.api_key else "WORKSTATION_API_KEY"})])
    if api_key and (odd := next((c for c in api_key if not (c.isascii() and c.isprintable()) or c.isspace()), None)):
        named_by = "--api-key" if args.api_key else "--api-key-file" if args.api_key_file else "WORKSTATION_API_KEY"
        raise WorkstationError(t("serve_cmd.key_odd_letter", named=named_by, letter=repr(odd)))
    if args.parallel is not None and not 1 <= args.parallel <= 64:
        raise WorkstationError(said=[("check.between", {"name": "--parallel", "value": args.parallel, "low": 1, "high": 64})])
    profile = load_profile(profile_ref(args))
    if args.parallel is None:  # (the profile's own parallel was ignored: 4 slots whatever it said)
        args.parallel = profile.slots_to_serve()
    if not 0 <= args.port <= 65535:
        raise WorkstationError(said=[("check.between", {"name": "--port", "value": args.port, "low": 0, "high": 65535})])
    if args.queue < 0:
        raise WorkstationError(said=[("check.at_least", {"name": "--queue", "value": args.queue, "low": 0})])
    options = server_options(args, api_key, t)
    if args.audit_max_bytes < 4096:
        raise WorkstationError(said=[("check.at_least", {"name": "--audit-max-bytes", "value": args.audit_max_bytes,
                                                          "low": 4096})])
    key_cap = args.parallel - 1 if args.key_max_parallel is None else args.key_max_parallel
    if not 0 <= key_cap <= 64:
        raise WorkstationError(said=[("check.between", {"name": "--key-max-parallel", "value": key_cap, "low": 0,
                                                         "high": 64})])
    terminated: list[int] = []
    accounts: Accounts | None = None
    socks: list[socket.socket] = []
    hosts = list(dict.fromkeys(_names(args.host))) or ["127.0.0.1"]
    lock = data_folder_lock(hosts[0], args.port)  # before the usage file and the keys are opened
    try:
        # SIGTERM until here: launch.serve_stopped_at_start (nothing open yet); from here to the
        # loaded model as Ctrl+C (the load stops at llama.cpp's next step), what is open closed
        with terminate_as_ctrl_c() as terminated:
            accounts = open_accounts(profile.key, api_key, args.audit_content, args.audit_max_bytes, key_cap)
            _not_a_persons_key(accounts, api_key, "--api-key" if args.api_key else
                               "--api-key-file" if args.api_key_file else "WORKSTATION_API_KEY", t)
            for host in hosts:
                check_host(host, api_key, accounts.protected)
            socks = bind_sockets(hosts, args.port)  # fail fast, before loading the model
            if lock is not None:  # (its port, for a second one refused: see data_folder_lock)
                with contextlib.suppress(OSError):
                    lock.write(f"{os.getpid()} {socks[0].getsockname()[1]}")
            # /health: "loading" (503), not a connection left hanging; a service's reload: not its end
            with hang_up_taken(signal.SIG_DFL), answering_while_loading(socks):
                scheduler = Scheduler(
                    profile, n_parallel=args.parallel, max_queue=args.queue,
                    kv_store=None if args.no_prompt_cache else kept_store(),  # (none for a budget of 0)
                    min_save_tokens=PROMPT_CACHE_MIN_TOKENS, save_when_reused=True,
                )
    except BaseException as err:
        for sock in socks:
            sock.close()
        if accounts is not None:
            accounts.close()
        if lock is not None:
            lock.release()
        if isinstance(err, KeyboardInterrupt) and terminated:  # a service stopped as it started: a clean stop
            with contextlib.suppress(OSError):
                print(SERVE_STOPPED, file=sys.stderr)  # (a service's log line: English, as launch says it)
            return 0
        raise
    with stop_kept_until_served() as hand_to:
        port = socks[0].getsockname()[1]
        options.model_id = args.model_id or profile.key
        openai = OpenAIServer(scheduler, options, accounts)
        # its model's words a token by language, read once here (its /models says them to desk PCs)
        openai.words_said = served_figures(scheduler.model.path)
        people = len(accounts.keys.list()) if accounts.keys is not None else 0
        closed = accounts.keys is not None and not people and accounts.keys.any_keys() and not api_key
        print(serving_line(t, profile.key, scheduler.model_name, hosts, port, protected=accounts.protected,
                           people=people, closed=closed, slots=args.parallel, slot_ctx=scheduler.slot_ctx,
                           said=openai.words_said),
              file=sys.stderr, flush=True)
        # after the line that says where it serves (scripts read that first); the model it loaded
        # counted as free, as chat's notes count it (its K/V took the memory that made it "slow")
        print_load_notes(profile, scheduler, t)
        if accounts.folded_in:
            n = accounts.folded_in
            print(t("serve_cmd.folded_in_one" if n == 1 else "serve_cmd.folded_in", n=n), file=sys.stderr, flush=True)
        # llama.cpp reads the weights from the file as it answers (mmap): one overwritten or cut
        # short meanwhile ended the server with a bus error; each request checks it first (a 503)
        print(t("serve_cmd.model_file_read", path=str(scheduler.model.path)), file=sys.stderr, flush=True)
        server = make_uvicorn(openai, options, log_level=args.log_level)
        hand_to(server)  # (a stop since the load: it starts and stops)
        try:
            run_server(server, socks)
        finally:
            scheduler.close()
            for sock in socks:
                sock.close()
            accounts.close()
            if lock is not None:
                lock.release()
    usage_file = accounts.usage.path if accounts.usage is not None else None
    with contextlib.suppress(OSError):
        if accounts.kept_aside and usage_file is not None:
            n = accounts.kept_aside
            print(t("serve_cmd.kept_aside_one" if n == 1 else "serve_cmd.kept_aside", file=str(usage_file), n=n,
                    path=str(usage_file.parent / UNSAVED_NAME)), file=sys.stderr)
        if accounts.lost:
            print(t("serve_cmd.lost_one" if accounts.lost == 1 else "serve_cmd.lost", n=accounts.lost,
                    reason=accounts.lost_because), file=sys.stderr)
    if accounts.lost:
        return 1
    if server.stopped_by is not None:  # after the records are written
        with contextlib.suppress(OSError):  # (a terminal that closed, SIGHUP's cause, takes no line)
            # Ctrl-C: "stopped.", as every command says it (it said "stopped (SIGINT)."), in its language;
            # a service's log names the signal that stopped it (a log line: English)
            print(f"workstation: {t('commands.stopped')}" if server.stopped_by == signal.SIGINT else
                  f"workstation: stopped ({server.stopped_by.name}).", file=sys.stderr)
        # a service stopped (SIGTERM) or its terminal gone (SIGHUP) is a clean stop: 130 made a
        # service manager call every stop a failure; Ctrl+C stays 130, as a shell expects
        return 130 if server.stopped_by == signal.SIGINT else 0
    return 0


def serving_line(
    t: Texts, profile: str, model: str, hosts: list[str], port: int, *, protected: bool, people: int,
    closed: bool, slots: int, slot_ctx: int, said: Mapping[str, float] | None = None,
) -> str:
    """The line serve starts with, in ``t``'s language: where it serves (each address; the ones
    colleagues type where it listens on all; Ollama's), whether a key is needed, how many
    people's keys, and what it holds (``capacity_words``). Scripts read its addresses."""
    urls = t("list.and").join(_url(h, port) for h in hosts)
    others = [_url(h, port) for h in addresses_for(hosts)]
    if others:  # "0.0.0.0" is no address to hand out: the ones colleagues can type
        urls += t("serve_cmd.colleagues", addresses=", ".join(others))
    # Ollama's clients take the address without /v1 (/api/chat, /api/tags, ...)
    urls += t("serve_cmd.ollama", url=(others or [_url(hosts[0], port)])[0].removesuffix("/v1"))
    more = ((t("serve_cmd.key_required") if protected else "")
            + (t("serve_cmd.people_one" if people == 1 else "serve_cmd.people", n=people) if people else "")
            + (t("serve_cmd.all_revoked", command=cli("keys add NAME")) if closed else ""))
    return t("serve_cmd.serving", profile=profile, model=model, urls=urls, more=more,
             capacity=capacity_words(slots, slot_ctx, t, said))


def capacity_words(slots: int, slot_ctx: int, t: Texts | None = None, said: Mapping[str, float] | None = None) -> str:
    """What the server's slots hold, in words (in ``t``'s language, English without): how many
    people it answers at once and how long a conversation each can be ("with 4 slots of 4096
    tokens" meant nothing to office staff). On a desk PC's footing (``context_basis``, without a
    model file there): its model's words a token as the server ``said`` them to desk PCs
    (``served_figures``), else the language's, as a desk PC says its room (it said 3,100 words where
    a desk PC said room for 3,500 of the same context, by the replies' own figure)."""
    from workstation.core.language_words import words_figures
    from workstation.core.phrases import context_basis
    from workstation.tui.i18n import Texts

    t = t or Texts("en")
    at_once = t("serve_cmd.one_at_a_time") if slots == 1 else t("serve_cmd.at_once", n=slots)
    return t("serve_cmd.capacity", at_once=at_once, words=context_basis(t.get, words_figures(t.get, t.lang, said=said)).count(slot_ctx),
             tokens=f"{slot_ctx:,}")


SERVE_LOCK = "serve.lock"  # in the data folder: held by the server using it


def data_folder_lock(host: str, port: int) -> HeldFile | None:
    """The data folder's lock for this server (``core/file_lock.py``): two servers on one data
    folder each counted the day's tokens on their own, which doubled everyone's day limit. One
    sentence where another server holds it: its process and port (or, where this one asked for
    that port, that the port is that server's). None where the folder takes no lock file (its
    files' own problems are said as they are opened)."""
    from workstation.core.errors import WorkstationError
    from workstation.core.file_lock import LockChanging, LockHeld
    from workstation.core.paths import data_dir

    try:
        lock = HeldFile(data_dir() / SERVE_LOCK, 0o600)
    except LockHeld as held:
        pid, _, its_port = held.holder.partition(" ")
        if its_port and its_port == str(port):
            raise WorkstationError(said=[("serve.port_in_use_here", {"port": port, "host": host, "pid": pid})]) from None
        if its_port:
            raise WorkstationError(said=[("serve.running_here", {"pid": pid or "?", "port": its_port})]) from None
        raise WorkstationError(said=[("serve.running_here_starting", {"pid": pid or "?"})]) from None
    except (OSError, LockChanging):
        return None
    with contextlib.suppress(OSError):
        lock.write(str(os.getpid()))
    return lock


def open_accounts(
    profile: str, api_key: str | None, audit_content: bool, audit_max_bytes: int, key_max_parallel: int
) -> Accounts:
    """People's keys, the usage file and the audit trail in the data folder."""
    from workstation.core.audit import AuditTrail
    from workstation.core.keys import KeyRing
    from workstation.core.server.accounts import Accounts
    from workstation.core.usage import UsageLog

    keys = KeyRing()
    try:
        usage = UsageLog()
        audit = AuditTrail(max_bytes=audit_max_bytes)
    except BaseException:
        keys.close()
        raise
    return Accounts(
        profile, shared_key=api_key, keys=keys, usage=usage, audit=audit, audit_content=audit_content,
        default_max_parallel=key_max_parallel,
    )


def _not_a_persons_key(accounts: Accounts, api_key: str | None, named_by: str, t: Texts) -> None:
    """The operator's key may not be a person's: WORKSTATION_API_KEY is also the variable a desk
    PC's person sets to their own key, so a server started in that shell made that person the
    operator, who then saw everyone's usage, their requests counted against no one's limit."""
    person = accounts.keys.find(api_key) if api_key and accounts.keys is not None else None
    if person is None:
        return
    from workstation.core.errors import WorkstationError

    fix = t("serve_cmd.key_a_persons_unset" if named_by == "WORKSTATION_API_KEY" else "serve_cmd.key_a_persons_own")
    raise WorkstationError(t("serve_cmd.key_a_persons", named=named_by, name=person.name, fix=fix))


def _names(values: list[str]) -> tuple[str, ...]:
    return tuple(name.strip() for value in values for name in value.split(",") if name.strip())


def _off_loopback(hosts: list[str]) -> bool:
    """Whether any address serve listens on (--host; none: 127.0.0.1) is reachable from other PCs."""
    import ipaddress

    for host in _names(hosts):
        try:
            if not ipaddress.ip_address(host.strip("[]")).is_loopback:
                return True
        except ValueError:
            if host.lower() != "localhost":
                return True
    return False


def _url(host: str, port: int) -> str:
    return f"http://{f'[{host}]' if ':' in host else host}:{port}/v1"


def addresses_for(hosts: list[str]) -> list[str]:
    """What other PCs can type for a server bound to every address (0.0.0.0, ::): this PC's
    name, then its network addresses (loopback and link-local left out); none for others."""
    import socket

    from workstation.core.addresses import network_addresses

    families = {"0.0.0.0": socket.AF_INET, "::": socket.AF_INET6}
    wanted = {families[h] for h in hosts if h in families}
    if not wanted:
        return []
    return list(dict.fromkeys([*own_names()[:1], *network_addresses(wanted)]))


def server_options(args: argparse.Namespace, api_key: str | None, t: Texts | None = None) -> ServerOptions:
    """The limits and allow-lists from the command line, each checked (one sentence if wrong, in
    ``t``'s language: the command's)."""
    from workstation.core.errors import WorkstationError

    t = t or texts_of(args)

    def at_least(flag: str, value: float, low: float) -> None:
        if value < low:  # (in bytes as given: ':g' wrote --max-body's 4194304 as "4.1943e+06")
            said = [f"{n:,}" if isinstance(n, int) else f"{n:g}" for n in (value, low)]
            raise WorkstationError(said=[("check.at_least", {"name": flag, "value": said[0], "low": said[1]})])

    at_least("--max-body", args.max_body, 1024)
    at_least("--max-inflight-body", args.max_inflight_body, args.max_body)
    at_least("--max-messages", args.max_messages, 1)
    if args.max_prompt_tokens is not None:  # (-5 served, refusing every prompt as over "at most -5 tokens")
        at_least("--max-prompt-tokens", args.max_prompt_tokens, 0)
    at_least("--header-timeout", args.header_timeout, 0.1)
    at_least("--body-timeout", args.body_timeout, 0.1)
    if not 0 <= args.shutdown_grace <= 3600:  # (nan and inf too)
        raise WorkstationError(said=[("check.between_seconds", {"name": "--shutdown-grace",
                                                                 "value": f"{args.shutdown_grace:g}", "low": 0,
                                                                 "high": 3600})])
    slots = args.parallel or SERVE_SLOTS  # (run() has put the profile's there; the default's elsewhere)
    max_requests = args.max_requests or max(DEFAULT_MAX_REQUESTS, slots + args.queue + 16)
    at_least("--max-requests", max_requests, 1)
    max_connections = args.max_connections or default_max_connections()
    at_least("--max-connections", max_connections, 2)
    for origin in _names(args.allowed_origins):
        if origin != "*" and not origin.startswith(("http://", "https://")):
            raise WorkstationError(t("serve_cmd.bad_origin", origin=repr(origin)))
    return ServerOptions(
        model_id="",
        api_key=api_key,
        max_body_bytes=args.max_body,
        max_prompt_tokens=args.max_prompt_tokens,
        max_inflight_body_bytes=args.max_inflight_body,
        max_messages=args.max_messages,
        max_requests=max_requests,
        max_connections=max_connections,
        header_timeout_s=args.header_timeout,
        body_timeout_s=args.body_timeout,
        # the PC's own name, where colleagues can reach it (it was refused, 403); not on loopback
        allowed_hosts=(*_names(args.allowed_hosts), *(own_names() if _off_loopback(args.host) else ())),
        allowed_origins=_names(args.allowed_origins),
        aliases=tuple(dict.fromkeys(_names(args.alias))),
        metrics=not args.no_metrics,
        slot_save_path=slot_folder(args.slot_save_path, t),
        shutdown_grace_s=args.shutdown_grace,
    )


def slot_folder(value: str | None, t: Texts) -> Path | None:
    """The --slot-save-path folder, created if missing; one sentence when it cannot be."""
    from workstation.core.errors import WorkstationError

    if value is None:
        return None
    folder = typed_path(value)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise WorkstationError(t("serve_cmd.slot_folder_unusable", path=value, why=err.strerror)) from None
    if not folder.is_dir():
        raise WorkstationError(t("serve_cmd.slot_not_folder", path=value))
    return folder.resolve()
