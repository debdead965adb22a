"""The checks every HTTP request passes before a route sees it, as one ASGI middleware.

A keyless server on loopback must not be usable by web pages the user happens to visit (what
Ollama learnt): a foreign ``Host`` header (DNS rebinding) gets 403, a foreign ``Origin`` gets
403 (allowed ones get proper CORS answers, preflight included), and a POST to a route that
takes one must be ``application/json``, which a page cannot send cross-origin without a
preflight (on Ollama's routes, whose own examples send JSON as curl's form type, the Origin
check alone refuses a page, as Ollama's does). It also caps
the requests handled at once, so a crowd of slow clients cannot starve ``/health``.
"""

from __future__ import annotations

import ipaddress
import logging
import re
import time
import traceback
from collections.abc import Iterable
from urllib.parse import quote, urlsplit

from starlette.datastructures import Headers, MutableHeaders
from starlette.responses import Response
from starlette.routing import BaseRoute, Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from workstation.core.addresses import is_loopback
from workstation.core.keys import logged_name
from workstation.core.server.options import ServerOptions
from workstation.core.server.protocol import ApiError, busy

CORS_METHODS = "GET, POST, OPTIONS"
CORS_HEADERS = "Authorization, Content-Type, X-Api-Key"
# a preflight's requested headers that are header names (RFC 9110 tokens), this many at most:
# an allowed origin may send them (the openai JS client adds x-stainless-* to every request)
_HEADER_NAME = re.compile(r"[A-Za-z0-9!#$%&'*+.^_`|~-]{1,64}")
MAX_REQUESTED_HEADERS = 32
ACCOUNTED = "workstation.accounted"  # in a request's scope: its line is the accounts' (Accounts.finish)
WHO = "workstation.who"  # in a request's scope: the key's name it was authenticated as
PERSON = "workstation.person"  # in a request's scope: that name where it is a person's key (None: the shared)
REASON = "workstation.reason"  # in a request's scope: why it was refused, for its log line (ApiError.reason)
CLIENT_GONE = 499  # nginx's status for a client that closed the connection before its answer
# answered even when the request cap is reached (and a 200 not logged): probes
HEALTH = frozenset({"/health", "/v1/health"})  # (llama-server answers both, without a key)
UNMETERED = HEALTH | {"/metrics", "/", "/api/version"}
# Ollama's routes: a JSON body is read whatever its Content-Type says, as Ollama reads it (its own
# documented examples, `curl http://host:11434/api/chat -d '{...}'`, send it as a form)
OLLAMA_PATHS = "/api/"
log = logging.getLogger("uvicorn.error")


def host_name(host_header: str) -> str:
    """The name in a Host header, without port, brackets or a trailing dot, lower case."""
    host = host_header.strip().lower()
    if host.startswith("["):  # [v6] or [v6]:port, nothing else after it ("[::1].evil.com" passed as ::1)
        end = host.find("]")
        if end < 0 or not re.fullmatch(r"(:\d{1,5})?", host[end + 1 :]):
            return host
        return host[1:end]
    if host.count(":") == 1:
        host = host.split(":", 1)[0]
    return host.rstrip(".")


def _name_listed(name: str, allowed: Iterable[str]) -> bool:
    for entry in allowed:
        entry = entry.strip().lower().rstrip(".")
        if entry == "*" or entry == name or (entry.startswith(".") and (name.endswith(entry) or name == entry[1:])):
            return True
    return False


def own_names() -> tuple[str, ...]:
    """This machine's own names (vm, vm.office.lan, vm.local) as it names itself: the names
    colleagues type for a server bound off loopback (which needs a key anyway). Not the name
    the network's DNS gives it (getfqdn): on a hostile network that is the attacker's."""
    import socket

    name = socket.gethostname().strip().lower().rstrip(".")
    if not name or is_loopback(name):
        return ()
    short = name.split(".")[0]
    return tuple(dict.fromkeys([name, short, f"{short}.local"]))


def host_allowed(host_header: str | None, allowed: Iterable[str]) -> bool:
    """Loopback names, any IP literal (DNS rebinding needs a name) and the listed names."""
    if host_header is None:  # HTTP/1.0 without Host: not a browser
        return True
    name = host_name(host_header)
    if is_loopback(name):
        return True
    try:
        ipaddress.ip_address(name)
        return True
    except ValueError:
        pass
    return _name_listed(name, allowed)


def origin_allowed(origin: str, allowed: Iterable[str]) -> bool:
    """Origins on loopback (any port, http or https) and the listed ones; never ``null``."""
    origin = origin.strip().lower().rstrip("/")
    listed = [a.strip().lower().rstrip("/") for a in allowed]
    if "*" in listed or origin in listed:
        return True
    try:
        parts = urlsplit(origin)
        name = parts.hostname
        parts.port  # noqa: B018 - "http://[::1]x" has a port that is none: ValueError
    except ValueError:
        return False
    if parts.netloc.startswith("[") and not re.fullmatch(r"\[[^\]]+\](:\d{1,5})?", parts.netloc):
        return False
    return parts.scheme in ("http", "https") and name is not None and is_loopback(name)


class InflightBodies:
    """Bytes of request bodies being read or parsed at once, across all requests, and a person's
    key's share of them (a quarter, or one body at the most a body may be): eight bodies dribbled
    a byte every 5 s from one key held every other person's POST at 503 for a minute. The event
    loop is the only user, so no lock."""

    def __init__(self, limit: int, max_body: int = 0) -> None:
        self.limit = limit
        self.share = max(limit // 4, max_body)
        self.used = 0
        self.by_person: dict[str, int] = {}

    def take(self, n: int, person: str | None = None) -> bool:
        if self.used + n > self.limit:
            return False
        if person is not None:
            if self.by_person.get(person, 0) + n > self.share:
                return False
            self.by_person[person] = self.by_person.get(person, 0) + n
        self.used += n
        return True

    def give(self, n: int, person: str | None = None) -> None:
        self.used -= n
        if person is not None and person in self.by_person:
            left = self.by_person[person] - n
            if left > 0:
                self.by_person[person] = left
            else:
                del self.by_person[person]


class RequestGuard:
    """Host, Origin (CORS), content type and the request cap, before the app; an exception
    that escapes the app is one line in the log (its traceback at debug level only)."""

    def __init__(self, app: ASGIApp, options: ServerOptions, routes: Iterable[BaseRoute]) -> None:
        self.app = app
        self.options = options
        self.routes = list(routes)  # the app's: which take the request's method at its path
        self.in_flight = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        scope = _without_trailing_slash(scope)
        if not log.isEnabledFor(logging.INFO):
            await self._guarded(scope, receive, send)
            return
        # --log-level info: a line a request. A generation's is the accounts' (with who and its
        # tokens); every other's is here, a refusal of ours too: a 403 for a browser tool's
        # origin, a 401 on /v1/models or a 404 had left no line for the operator to go on
        t0, said = time.perf_counter(), [0]

        async def noted(message: Message) -> None:
            if message["type"] == "http.response.start":
                said[0] = message["status"]
            await send(message)

        try:
            await self._guarded(scope, receive, noted)
        finally:
            # (probes: quiet; /health's own 503s too, "stopping" or "error", polled each second by a load
            # balancer: the app logs the change of its answer once)
            if not scope.get(ACCOUNTED) and not (said[0] == 200 and scope["path"] in UNMETERED) and \
                    not (said[0] == 503 and scope["path"] in HEALTH):
                client = scope.get("client")
                log.info(f"{logged_name(scope.get(WHO) or '-')} {client_text(client[0]) if client else '-'} {scope['method']} "
                         f"{logged_path(scope)} "
                         f"{said[0] or CLIENT_GONE} in {time.perf_counter() - t0:.2f} s"
                         f"{f' ({scope[REASON]})' if scope.get(REASON) else ''}")

    async def _guarded(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = Headers(scope=scope)
        method = scope["method"]
        origin = headers.get("origin")
        refusal = self._refusal(scope, headers, origin)
        if refusal is not None:
            await self._answer(refusal.response(), scope, receive, send)
            return
        if origin is not None and method == "OPTIONS" and "access-control-request-method" in headers:
            await self._answer(self._preflight(origin, headers.get("access-control-request-headers", "")),
                               scope, receive, send)
            return
        metered = scope["path"] not in UNMETERED
        if metered and self.in_flight >= self.options.max_requests:
            await self._answer(
                busy(f"This server is handling {self.in_flight} requests, its limit; try again shortly.").response(),
                scope,
                receive,
                send,
                origin,
            )
            return
        if method == "POST" and not scope["path"].startswith(OLLAMA_PATHS) and self._takes(scope):
            # (a route that takes no POST is told 405 and the methods there are, whatever the
            # body: a monitor's bare "POST /health", a POST to /v1/models was 415 "must be JSON";
            # a path with no route is 404, or 401 without the key)
            media = headers.get("content-type", "").split(";", 1)[0].strip().lower()
            if media != "application/json":
                error = ApiError(
                    415,
                    "A POST body must be JSON sent with 'Content-Type: application/json'.",
                    code="unsupported_media_type",
                    headers={"Connection": "close"},
                )
                await self._answer(error.response(), scope, receive, send, origin)
                return
        if metered:
            self.in_flight += 1
        started = False

        async def send_cors(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                if origin is not None:
                    _add_cors(MutableHeaders(scope=message), origin)
            await send(message)

        try:
            await self.app(scope, receive, send_cors)
        except Exception as err:  # noqa: BLE001 - a bug answers 500 and logs one line, not a traceback
            log.warning("workstation: %s %s failed: %s: %s", method, logged_path(scope), type(err).__name__, err)
            log.debug("%s", traceback.format_exc())
            if not started:
                error = ApiError(500, "The server failed to handle this request.", type_="server_error")
                await error.response()(scope, receive, send)
        finally:
            if metered:
                self.in_flight -= 1

    def _takes(self, scope: Scope) -> bool:
        """Whether a route of the app takes this request's method at its path."""
        return any(route.matches(scope)[0] is Match.FULL for route in self.routes)

    def _refusal(self, scope: Scope, headers: Headers, origin: str | None) -> ApiError | None:
        if not host_allowed(headers.get("host"), self.options.allowed_hosts):
            return ApiError(
                403,
                f"This server does not answer for the host name {host_name(headers['host'])!r}; "
                "the operator can allow it with --allowed-hosts.",
                code="host_not_allowed",
                headers={"Connection": "close"},
            )
        if origin is not None and not origin_allowed(origin, self.options.allowed_origins):
            return ApiError(
                403,
                f"Requests from the web origin {origin!r} are not allowed; "
                "the operator can allow it with --allowed-origins.",
                code="origin_not_allowed",
                headers={"Connection": "close"},
            )
        return None

    def _preflight(self, origin: str, requested: str) -> Response:
        """The answer to an allowed origin's preflight: its methods, and the headers it asked to
        send beside ours (a fixed list refused the openai JS client's x-stainless-* headers, so
        the browser sent nothing; Ollama answered the same report so)."""
        response = Response(status_code=204)
        _add_cors(response.headers, origin)
        response.headers["Access-Control-Allow-Methods"] = CORS_METHODS
        ours = [h.strip() for h in CORS_HEADERS.split(",")]
        known = {h.lower() for h in ours}
        asked = [h for h in (x.strip() for x in requested.split(",")) if _HEADER_NAME.fullmatch(h)]
        extra = list(dict.fromkeys(h.lower() for h in asked if h.lower() not in known))[:MAX_REQUESTED_HEADERS]
        response.headers["Access-Control-Allow-Headers"] = ", ".join(ours + extra)
        response.headers.add_vary_header("Access-Control-Request-Headers")
        response.headers["Access-Control-Max-Age"] = "600"
        return response

    async def _answer(
        self, response: Response, scope: Scope, receive: Receive, send: Send, origin: str | None = None
    ) -> None:
        if origin is not None:
            _add_cors(response.headers, origin)
        await response(scope, receive, send)


def client_text(host: str | None) -> str:
    """A client's address as logs, usage and the audit trail keep it: an IP address as it is,
    anything else (an X-Forwarded-For a proxy passed on as the client wrote it) escaped and cut
    short: an escape sequence in it reached the operator's terminal."""
    if not host:
        return ""
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        return ascii(host[:64])[1:-1]


def logged_path(scope: Scope, most: int = 200) -> str:
    """A request's path as a log line may hold it: %-escaped as it came (uvicorn has decoded
    "%0a" into a line break, and a path of its choosing wrote a whole forged line), cut short."""
    raw: bytes = scope.get("raw_path") or scope["path"].encode("utf-8", "surrogateescape")
    text = quote(raw.split(b"?", 1)[0], safe="/:@!$&'()*+,;=-._~%")
    return text if len(text) <= most else text[: most - 1] + "…"


def _without_trailing_slash(scope: Scope) -> Scope:
    """``/v1/chat/completions/`` is served as ``/v1/chat/completions``: Starlette answered it
    with a 307 redirect, which the ``openai`` client and ``curl`` do not follow for a POST, so
    a base URL typed with a slash at its end got an empty reply."""
    path: str = scope["path"]
    if len(path) < 2 or not path.endswith("/"):
        return scope
    trimmed = path.rstrip("/") or "/"
    raw: bytes = scope.get("raw_path") or path.encode()
    return {**scope, "path": trimmed, "raw_path": raw.rstrip(b"/") or b"/"}


def _add_cors(headers: MutableHeaders, origin: str) -> None:
    headers["Access-Control-Allow-Origin"] = origin
    headers["Access-Control-Expose-Headers"] = "Retry-After"
    headers.add_vary_header("Origin")
