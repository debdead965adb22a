"""Binding and running: the loopback rule (a key off loopback), the listening socket, uvicorn
with this server's connection guard, and the server in a thread (BackgroundServer) or a child
process (ServeProcess)."""

from __future__ import annotations

import asyncio
import contextlib
import copy
import errno
import logging
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any

from workstation.core.addresses import is_loopback
from workstation.core.engine_process import killed_by_system
from workstation.core.errors import WorkstationError
from workstation.core.invocation import cli
from workstation.core.phrases import Phrase
from workstation.core.scheduler import Scheduler
from workstation.core.server.accounts import Accounts
from workstation.core.server.app import OpenAIServer
from workstation.core.server.connections import guarded_protocol
from workstation.core.server.options import ServerOptions
from workstation.launch import serve_stopped_at_start

STOP_REPLIES_S = 10.0  # at shutdown, the longest wait for the replies being written to end
ACCEPT_BACKLOG = 128  # connections accepted in one go (uvicorn's default, 2048, can exhaust descriptors)
log = logging.getLogger("uvicorn.error")


class ServeError(WorkstationError):
    """The server cannot start (port in use, unsafe host)."""


MIN_OPERATOR_KEY = 16  # characters of the operator's key off loopback (people's keys: 43, made by keys add)


def check_host(host: str, api_key: str | None, person_keys: bool = False) -> None:
    """Off loopback a key is required: the shared ``--api-key`` or people's keys. A port written
    into the host (``--host 127.0.0.1:8080``) is said first: it was refused for want of a key."""
    name, colon, port = host.rpartition(":")
    if colon and port.isdigit() and name and (":" not in name or name.startswith("[") and name.endswith("]")):
        raise ServeError(said=[("serve.host_with_port", {"host": host, "name": name, "port": port})])
    off_loopback = not is_loopback(host, names_under_localhost=False)
    if off_loopback and api_key and len(api_key) < MIN_OPERATOR_KEY:  # ('secret', 'office1': the whole API)
        raise ServeError(said=[("serve.short_key", {"n": len(api_key), "host": host, "least": MIN_OPERATOR_KEY})])
    if off_loopback and not api_key and not person_keys:
        _resolve(host, 0)  # a host that is no address is told so, not asked for a key
        raise ServeError(said=[("serve.no_key", {"host": host, "command": cli("keys add NAME")})])


def _resolve(host: str, port: int) -> tuple[socket.AddressFamily, tuple]:
    """The address family and socket address to bind, or one sentence when ``host`` is none."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror:
        raise ServeError(said=[("serve.no_address", {"host": host})]) from None
    return infos[0][0], infos[0][4]


def _not_this_pc(host: str, family: socket.AddressFamily) -> Phrase:
    """That ``host`` is another PC's address, and the ones that work here: this PC's own, every
    address (0.0.0.0) and this PC alone (127.0.0.1)."""
    from workstation.core.addresses import network_addresses

    v6 = family == socket.AF_INET6
    values = {"host": host, "every": "::" if v6 else "0.0.0.0", "loopback": "::1" if v6 else "127.0.0.1"}
    own = network_addresses({family})
    if not own:
        return ("serve.not_this_pc_none", values)
    return ("serve.not_this_pc", {**values, "addresses": ", ".join(own)})


def bind_socket(host: str, port: int) -> socket.socket:
    """A listening socket, or one clear sentence when the port is taken or the host is wrong."""
    family, addr = _resolve(host, port)
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(addr)
        sock.listen(2048)
    except OSError as err:
        sock.close()
        if err.errno == errno.EADDRINUSE:
            raise ServeError(said=[("serve.port_in_use", {"port": port, "host": host})]) from None
        if err.errno == errno.EACCES:
            raise ServeError(said=[("serve.port_denied", {"port": port, "host": host})]) from None
        if err.errno == errno.EADDRNOTAVAIL:  # ("Cannot assign requested address": another PC's address)
            raise ServeError(said=[_not_this_pc(host, family)]) from None
        raise ServeError(f"Cannot bind {host}:{port}: {err.strerror}.") from None
    sock.set_inheritable(True)
    return sock


def bind_sockets(hosts: list[str], port: int) -> list[socket.socket]:
    """A listening socket per host, all on one port (``port`` 0: the first host's free port);
    one clear sentence, and none left open, when one cannot be bound."""
    socks: list[socket.socket] = []
    try:
        for host in hosts:
            socks.append(bind_socket(host, port))
            port = socks[0].getsockname()[1]
    except BaseException:
        for sock in socks:
            sock.close()
        raise
    return socks


LOADING_RETRY_S = 5  # Retry-After of the answers given while the model loads
LOADING_AT_ONCE = 64  # connections answered at the same time while it loads
LOADING = "The server is loading its model; send the request again in a moment."


@contextlib.contextmanager
def answering_while_loading(socks: list[socket.socket]) -> Iterator[list[str]]:
    """While the model loads, every connection to ``socks`` is answered at once: 503,
    ``{"status": "loading", "error": ...}`` and ``Retry-After`` (llama-server answers 503
    "Loading model" then). A load balancer's or monitor's ``/health`` hung unanswered until the
    model was loaded (a minute for a large one), indistinguishable from a hung server. Requests
    arriving as this ends wait in the socket's queue for the server proper. Yields the request
    lines answered so far ("GET /health HTTP/1.1")."""
    import selectors

    from workstation.core.server.protocol import json_bytes

    body = json_bytes({"status": "loading", "error": {"message": LOADING, "type": "server_error",
                                                      "param": None, "code": "loading"}})
    answer = (f"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
              f"Content-Length: {len(body)}\r\nRetry-After: {LOADING_RETRY_S}\r\nConnection: close\r\n\r\n"
              ).encode() + body
    done = threading.Event()
    answered: list[str] = []
    # each connection on a thread of its own: one after another, a connection that sent nothing (a
    # browser's, a monitor's kept open) held each one behind it for two seconds (5 of them: /health 10 s)
    at_once = threading.BoundedSemaphore(LOADING_AT_ONCE)

    def answer_one(conn: socket.socket) -> None:
        try:
            with conn:
                answered.append(_answer_once(conn, answer))
        except OSError:
            pass
        finally:
            at_once.release()

    def serve_answers() -> None:
        with selectors.DefaultSelector() as selector:
            for sock in socks:
                selector.register(sock, selectors.EVENT_READ)
            while not done.is_set():
                for key, _ in selector.select(timeout=0.1):
                    with contextlib.suppress(OSError):
                        conn, _ = key.fileobj.accept()  # type: ignore[union-attr]
                        conn.setblocking(True)
                        if at_once.acquire(blocking=False):
                            threading.Thread(target=answer_one, args=(conn,), name="workstation-loading-answer",
                                             daemon=True).start()
                        else:  # (more at once: answered without reading the request)
                            with conn:
                                conn.settimeout(1.0)
                                conn.sendall(answer)

    for sock in socks:  # (a connection reset between select and accept left accept waiting)
        sock.setblocking(False)
    thread = threading.Thread(target=serve_answers, name="workstation-loading", daemon=True)
    thread.start()
    try:
        yield answered
    finally:
        done.set()
        thread.join()
        for sock in socks:
            sock.setblocking(True)


def _answer_once(conn: socket.socket, answer: bytes) -> str:
    """Read the request's head, answer, and read what the client still sends (a body) until it
    closes: closed with unread bytes, the connection was reset under the answer. Returns the
    request line."""
    head = _read_a_while(conn, to_head=True)
    conn.sendall(answer)
    conn.shutdown(socket.SHUT_WR)
    _read_a_while(conn, to_head=False)
    return head.split(b"\r\n", 1)[0].decode("latin-1")


def _read_a_while(conn: socket.socket, to_head: bool) -> bytes:
    """What the client sends for a second at most (so that a slow one holds up the next one's
    answer no longer): up to the end of the request's head, or until it closes."""
    data = b""
    until = time.monotonic() + 1.0
    with contextlib.suppress(OSError):
        while (left := until - time.monotonic()) > 0 and not (to_head and b"\r\n\r\n" in data):
            conn.settimeout(left)
            chunk = conn.recv(65536)
            if not chunk:
                break
            if len(data) < 65536:
                data += chunk
    return data


def make_uvicorn(openai: OpenAIServer, options: ServerOptions, log_level: str = "warning") -> Any:
    """uvicorn over h11 with the header deadline and connection cap of ``options``, which at
    shutdown (Ctrl+C, SIGTERM) first ends the replies still being written, each with a word to
    its client and a line in the usage log, before it closes the connections: uvicorn would
    wait 3 s, then cancel them with a traceback and nothing recorded."""
    import uvicorn

    class Server(uvicorn.Server):
        stopped_by: signal.Signals | None = None  # Ctrl+C, SIGTERM or SIGHUP (serve says which)

        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            """SIGHUP too, from a terminal: it killed the server at once, a stream cut without a
            word and nothing recorded; now it stops as SIGTERM does (``hang_up_taken``)."""
            with hang_up_taken(self.handle_exit), super().capture_signals():
                yield

        stops = 0  # stop signals received

        def handle_exit(self, sig: int, frame: FrameType | None) -> None:
            """A second stop, SIGTERM (``systemctl stop`` again, ``kill``) as Ctrl+C (uvicorn took
            only Ctrl+C twice), ends the replies' grace: those being written are cut at once; one
            once they are being cut stops the waiting for them too."""
            self.stops += 1
            if self.stops == 1:
                super().handle_exit(sig, frame)
            else:  # (not kept to be raised again at the end: it killed the process before its records)
                self.force_exit = openai.cutting

        async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
            # uvicorn raises the signal again once it has stopped: SIGTERM then killed the
            # process before the usage file and the audit trail were written, and a SIGINT that
            # the parent ignores (a job started in the background) did nothing; serve says it
            captured = getattr(self, "_captured_signals", [])
            self.stopped_by = signal.Signals(captured[0]) if captured else None
            captured.clear()
            await openai.stop_serving(STOP_REPLIES_S, give_up=lambda: self.force_exit, cut_now=lambda: self.stops > 1,
                                      why=self.stopped_by.name if self.stopped_by is not None else "")
            await super().shutdown(sockets)

    from uvicorn.config import LOGGING_CONFIG

    logging_config = log_config(LOGGING_CONFIG)
    config = uvicorn.Config(
        openai.app,
        log_config=logging_config,
        http=guarded_protocol(options.header_timeout_s, options.max_connections),
        log_level=log_level,
        access_log=False,
        lifespan="off",
        timeout_graceful_shutdown=3,
        timeout_keep_alive=5,
        backlog=ACCEPT_BACKLOG,
        server_header=False,
    )
    return Server(config)


def log_config(base: dict[str, Any]) -> dict[str, Any]:
    """uvicorn's logging set-up (``base``: its ``LOGGING_CONFIG``) with each line's time (a log
    without one told nothing of when it happened), and colours only where the stream a formatter
    writes to is a terminal: uvicorn asks whether stdout is one, for the log it writes to stderr,
    so ``serve 2> serve.log`` from a terminal wrote "[32mINFO[0m" into the file."""
    config = copy.deepcopy(base)
    streams = {handler["formatter"]: handler.get("stream", "") for handler in config["handlers"].values()}
    for name, formatter in config["formatters"].items():
        formatter["fmt"] = "%(asctime)s " + formatter["fmt"]
        formatter["datefmt"] = "%Y-%m-%d %H:%M:%S"
        stream = sys.stdout if streams.get(name) == "ext://sys.stdout" else sys.stderr
        formatter["use_colors"] = _is_terminal(stream) and not os.environ.get("NO_COLOR")
    return config


def _is_terminal(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # (a closed stream, a stream object without isatty)
        return False


@contextlib.contextmanager
def _signal_taken(sig: int, handler: Callable[[], Any]) -> Iterator[None]:
    """``handler()`` (asked for only then) handles ``sig`` within the block, where this is the
    main thread and ``sig`` does what it does by default (not ignored, as under ``nohup``, nor
    taken by another); the handler before it comes back after. The serve command's own, taken
    from its first line of Python on (``launch.serve_stopped_at_start``), counts as the
    default, handed over for good: what serve has open by then needs closing."""
    before = signal.getsignal(sig)
    take = threading.current_thread() is threading.main_thread() and before in (signal.SIG_DFL, serve_stopped_at_start)
    if take:
        signal.signal(sig, handler())
    try:
        yield
    finally:
        if take:
            signal.signal(sig, signal.SIG_DFL if before is serve_stopped_at_start else before)


@contextlib.contextmanager
def stop_kept_until_served() -> Iterator[Callable[[Any], None]]:
    """SIGTERM between the model's load and uvicorn's own handlers (the start-up lines, uvicorn's
    import) killed the process: 143 and no word in the log. Within the block a SIGTERM is kept
    and handed to the server once it is made (the function yielded takes it), which then starts
    and stops at once, as a stop while it serves does. Main thread only."""
    asked: list[int] = []
    made: list[Any] = []

    def kept(sig: int, frame: FrameType | None) -> None:
        if made:
            made[0].handle_exit(sig, frame)
        else:
            asked.append(sig)

    def hand_to(server: Any) -> None:
        made.append(server)
        for sig in asked:
            server.handle_exit(sig, None)

    with _signal_taken(signal.SIGTERM, lambda: kept):
        yield hand_to


@contextlib.contextmanager
def hang_up_taken(stop: Any) -> Iterator[None]:
    """SIGHUP calls ``stop`` (a signal handler, or ``signal.SIG_DFL``) where it comes from a
    terminal (its window or SSH session closed). Without a terminal (a systemd service,
    ``setsid``, a container) none can close: SIGHUP is an admin's "reload" (``systemctl
    reload``, ``kill -HUP``), which stopped the server with status 0 (killed it while it loaded
    the model), so a service set to restart on failure stayed down. There is nothing to reload
    (keys apply at once), so the log says that and the server goes on. Only on the main thread,
    and not where SIGHUP is ignored (``nohup``)."""
    with _signal_taken(signal.SIGHUP, lambda: stop if has_terminal() else _reload_asked):
        yield


@contextlib.contextmanager
def terminate_as_ctrl_c() -> Iterator[list[int]]:
    """SIGTERM within the block stops what runs as Ctrl+C does (a model's load: at llama.cpp's
    next step, ``runtime.ctrl_c_after_the_call``), raising KeyboardInterrupt; yields the list
    the SIGTERM is put in, so that the caller tells the two apart. ``systemctl stop`` while the
    model loaded killed the process (143, not a word in the log). Main thread only."""
    received: list[int] = []

    def as_ctrl_c(sig: int, frame: Any) -> None:
        received.append(sig)
        during_a_call = signal.getsignal(signal.SIGINT)  # (a load's: it stops it, and raises once it has)
        if callable(during_a_call) and during_a_call is not signal.default_int_handler:
            during_a_call(sig, frame)  # (its number: a call's handler tells it from an ignored Ctrl-C)
        else:
            raise KeyboardInterrupt

    with _signal_taken(signal.SIGTERM, lambda: as_ctrl_c):
        yield received


def has_terminal() -> bool:
    """Whether this process has a controlling terminal (started in a terminal window or an SSH
    session, not by a service manager, ``setsid`` or a container without one)."""
    import os

    try:
        os.close(os.open("/dev/tty", os.O_RDONLY | os.O_NOCTTY))
    except OSError:
        return False
    return True


def _reload_asked(sig: int, frame: object) -> None:
    """SIGHUP without a terminal: an admin's reload, said in the log; the server goes on."""
    log.warning(
        "workstation: SIGHUP received: nothing to reload, so the server goes on serving (keys made, changed "
        "or revoked apply at once; to change the profile or the options, restart it: systemctl restart, or "
        "SIGTERM and start it again)."
    )


def run_server(server: Any, socks: list[socket.socket]) -> None:
    """Run a uvicorn server on ``socks`` (one per address) until it stops, with running out of
    file descriptors logged as one line (asyncio logs a traceback per refused accept, then
    retries in a second)."""

    async def main() -> None:
        asyncio.get_running_loop().set_exception_handler(_loop_error)
        await server.serve(sockets=socks)

    asyncio.run(main())


_last_fd_warning = [0.0]


def _loop_error(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    exc = context.get("exception")
    if isinstance(exc, OSError) and exc.errno in (errno.EMFILE, errno.ENFILE):
        if time.monotonic() - _last_fd_warning[0] > 10:
            _last_fd_warning[0] = time.monotonic()
            log.warning(
                "workstation: out of file descriptors, so new connections wait; raise the open-file "
                "limit (ulimit -n) or lower --max-connections."
            )
        return
    loop.default_exception_handler(context)


class BackgroundServer:
    """The API served from a thread of this process (for an app that wants to serve alongside).

    ``BackgroundServer(scheduler, options, host, port, accounts=...).start()``; ``url``;
    ``stop()``.
    """

    def __init__(
        self,
        scheduler: Scheduler,
        options: ServerOptions,
        host: str = "127.0.0.1",
        port: int = 8088,
        accounts: Accounts | None = None,
    ) -> None:
        import threading

        check_host(host, options.api_key, accounts is not None and accounts.protected)
        self.sock = bind_socket(host, port)
        self.host, self.port = host, self.sock.getsockname()[1]
        self.openai = OpenAIServer(scheduler, options, accounts)
        self.server = make_uvicorn(self.openai, options)
        self._thread = threading.Thread(target=self._run, name="workstation-serve", daemon=True)

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    def _run(self) -> None:
        run_server(self.server, [self.sock])

    def start(self, timeout_s: float = 30.0) -> BackgroundServer:
        """Start serving; returns once uvicorn accepts connections."""
        self._thread.start()
        deadline = time.monotonic() + timeout_s
        while not self.server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise ServeError("The API server did not start.")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        self._thread.join(timeout=STOP_REPLIES_S + 10)  # the replies' end, then uvicorn's own 3 s
        self.sock.close()


def wait_until_healthy(root: str, proc: Any, timeout_s: float, path: str = "/health") -> bool:
    """Poll ``root + path`` until it answers 200 (True), or ``proc`` (a Popen) exits or
    ``timeout_s`` passes (False)."""
    import httpx

    deadline = time.monotonic() + timeout_s
    while True:
        try:
            if httpx.get(f"{root}{path}", timeout=5).status_code == 200:
                return True
        except httpx.HTTPError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            return False
        time.sleep(0.2)


class ServeProcess:
    """``workstation serve`` in a child process, for an app that serves alongside its own chat.

    The TUI keeps its engine in a child process; the API gets a process of its own (its own
    copy of the model, continuous batching over its slots) so neither waits on the other.
    ``ServeProcess(profile_ref, port=8088).url`` once it answers ``/health``; ``stop()``.
    """

    def __init__(
        self,
        profile_ref: str,
        *,
        host: str = "127.0.0.1",
        port: int = 8088,
        parallel: int = 4,
        api_key: str | None = None,
        start_timeout_s: float = 300.0,
    ) -> None:
        import os
        import re
        import subprocess
        import sys
        import threading


        check_host(host, api_key)
        cmd = [sys.executable, "-m", "workstation.cli", "serve", "-p", profile_ref, "--host", host,
               "--port", str(port), "--parallel", str(parallel)]
        env = dict(os.environ)
        if api_key:
            env["WORKSTATION_API_KEY"] = api_key
        self.proc = subprocess.Popen(
            cmd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
        )
        assert self.proc.stderr is not None
        first = self.proc.stderr.readline()
        match = re.search(r"on (http://\S+/v1)", first)
        if not match:  # (its first line comes once the model has loaded)
            self.proc.wait(timeout=30)
            if (killed := killed_by_system(self.proc.returncode, loading=True)) is not None:
                raise ServeError(said=[killed])  # (it said "did not start: it exited")
            line = first.strip()
            if line.startswith("workstation: "):  # its own sentence ("Port 8088 ... is in use")
                raise ServeError(line.removeprefix("workstation: "))
            raise ServeError(f"The API server did not start: {line or 'it exited'}.".replace("..", "."))
        self.url = match.group(1)
        self.log: list[str] = []
        threading.Thread(target=self._drain, daemon=True).start()
        root = self.url.removesuffix("/v1")
        if not wait_until_healthy(root, self.proc, start_timeout_s):
            killed = killed_by_system(self.proc.poll(), loading=False)
            self.stop()
            if killed is not None:  # (it said "did not answer in time")
                raise ServeError(said=[killed])
            raise ServeError("The API server did not answer in time.")
        self.protected = self.needs_key()

    def needs_key(self) -> bool:
        """Whether clients need an API key, as the server itself answers a request without one
        at the moment of asking (False when it cannot be asked)."""
        import httpx

        try:
            return httpx.get(f"{self.url}/models", timeout=5.0).status_code in (401, 403)
        except httpx.HTTPError:
            return False

    def _drain(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.log = [*self.log[-50:], line.rstrip()]

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self) -> None:
        import subprocess

        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
