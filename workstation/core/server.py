"""An OpenAI-compatible HTTP API over the continuous-batching scheduler (Starlette + uvicorn).

Endpoints: ``GET /health``, ``GET /v1/models``, ``POST /v1/chat/completions``,
``POST /v1/completions`` (streamed as server-sent events or not; ``usage`` always, and in
streams as a last chunk when ``stream_options.include_usage`` is set), ``GET /metrics`` in
Prometheus text with llama-server's metric names. The same routes answer without the ``/v1``
prefix, as llama-server's do.

Safety: binds loopback unless an API key is set; with a key every route but ``/health`` needs
``Authorization: Bearer KEY``; bodies above ``max_body_bytes`` get 413 and prompts longer than a
slot's context 400; a full queue gets 429 with ``Retry-After``. A client that disconnects
cancels its generation and frees its slot. Errors are OpenAI-shaped JSON:
``{"error": {"message", "type", "param", "code"}}``.

Non-standard request fields, as llama-server has them: ``top_k``, ``min_p``,
``repeat_penalty``, ``ignore_eos`` (generate exactly ``max_tokens``, for benchmarks).
Responses carry llama-server's ``timings`` object (``cache_n``, ``prompt_n``,
``predicted_per_second`` ...).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import errno
import hmac
import ipaddress
import json
import socket
import time
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from workstation.core.engine import TokenDelta, TurnFinished
from workstation.core.errors import EngineError, WorkstationError
from workstation.core.metrics import TurnMetrics
from workstation.core.profiles import Sampling
from workstation.core.scheduler import (
    PromptTooLong,
    QueueFull,
    RequestFailed,
    Scheduler,
    SchedulerEvent,
)
from workstation.core.scheduler import Request as SchedRequest

DEFAULT_MAX_BODY = 4 * 1024 * 1024
ROLES = ("system", "developer", "user", "assistant", "tool")


class ServeError(WorkstationError):
    """The server cannot start (port in use, unsafe host)."""


class ApiError(Exception):
    """An error answered as OpenAI-style JSON."""

    def __init__(
        self,
        status: int,
        message: str,
        type_: str = "invalid_request_error",
        param: str | None = None,
        code: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.type = type_
        self.param = param
        self.code = code
        self.headers = headers or {}

    def response(self) -> JSONResponse:
        return JSONResponse(
            {"error": {"message": self.message, "type": self.type, "param": self.param, "code": self.code}},
            status_code=self.status,
            headers=self.headers,
        )


def _bad(message: str, param: str | None = None) -> ApiError:
    return ApiError(400, message, param=param)


# --- request parsing ---------------------------------------------------------------------------
@dataclass
class GenParams:
    sampling: Sampling
    max_tokens: int | None
    stop: list[str]
    ignore_eos: bool
    stream: bool
    include_usage: bool


def _number(body: dict[str, Any], name: str, lo: float, hi: float) -> float | None:
    value = body.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _bad(f"'{name}' must be a number.", name)
    if not lo <= value <= hi:
        raise _bad(f"'{name}' is {value}; allowed values are {lo:g} to {hi:g}.", name)
    return float(value)


def _integer(body: dict[str, Any], name: str, lo: int, hi: int) -> int | None:
    value = body.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise _bad(f"'{name}' must be a whole number.", name)
    if not lo <= value <= hi:
        raise _bad(f"'{name}' is {value}; allowed values are {lo} to {hi}.", name)
    return value


def parse_params(body: dict[str, Any], default: Sampling) -> GenParams:
    s = dataclasses.replace(default)
    if (v := _number(body, "temperature", 0.0, 5.0)) is not None:
        s.temperature = v
    if (v := _number(body, "top_p", 0.0, 1.0)) is not None:
        s.top_p = v if v > 0 else 1e-6
    if (v := _number(body, "min_p", 0.0, 1.0)) is not None:
        s.min_p = v
    if (k := _integer(body, "top_k", 0, 1_000_000)) is not None:
        s.top_k = k
    if (v := _number(body, "repeat_penalty", 0.01, 10.0)) is not None:
        s.repeat_penalty = v
    for name in ("frequency_penalty", "presence_penalty"):
        _number(body, name, -2.0, 2.0)  # accepted for compatibility, not applied
    seed = body.get("seed")
    if seed is not None:
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise _bad("'seed' must be a whole number.", "seed")
        s.seed = seed & 0xFFFFFFFF
    max_tokens = _integer(body, "max_completion_tokens", 1, 10_000_000)
    if max_tokens is None:
        max_tokens = _integer(body, "max_tokens", 1, 10_000_000)
    n = _integer(body, "n", 1, 128)
    if n not in (None, 1):
        raise _bad("Only n=1 is supported; send several requests instead.", "n")
    stop = body.get("stop")
    if stop is None:
        stops: list[str] = []
    elif isinstance(stop, str):
        stops = [stop]
    elif isinstance(stop, list) and all(isinstance(x, str) for x in stop) and len(stop) <= 16:
        stops = list(stop)
    else:
        raise _bad("'stop' must be a string or a list of up to 16 strings.", "stop")
    ignore_eos = body.get("ignore_eos", False)
    if not isinstance(ignore_eos, bool):
        raise _bad("'ignore_eos' must be true or false.", "ignore_eos")
    stream = body.get("stream", False)
    if stream is None:
        stream = False
    if not isinstance(stream, bool):
        raise _bad("'stream' must be true or false.", "stream")
    opts = body.get("stream_options") or {}
    if not isinstance(opts, dict):
        raise _bad("'stream_options' must be an object.", "stream_options")
    return GenParams(s, max_tokens, stops, ignore_eos, stream, bool(opts.get("include_usage")))


def _content_text(content: Any, i: int) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str):
                parts.append(part["text"])
            else:
                raise _bad(f"messages[{i}].content has a part this server cannot read (only text).", "messages")
        return "".join(parts)
    raise _bad(f"messages[{i}].content must be a string or a list of text parts.", "messages")


def parse_messages(body: dict[str, Any]) -> list[dict[str, str]]:
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise _bad("'messages' is required: a non-empty list of {role, content} objects.", "messages")
    out = []
    for i, m in enumerate(messages):
        if not isinstance(m, dict):
            raise _bad(f"messages[{i}] must be an object with 'role' and 'content'.", "messages")
        role = m.get("role")
        if role not in ROLES:
            raise _bad(f"messages[{i}].role is {role!r}; allowed roles are {', '.join(ROLES)}.", "messages")
        out.append({"role": "system" if role == "developer" else role, "content": _content_text(m.get("content"), i)})
    return out


def parse_prompt(body: dict[str, Any]) -> str | list[int]:
    prompt = body.get("prompt")
    if isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], str | list):
        prompt = prompt[0]
    if isinstance(prompt, str):
        if not prompt:
            raise _bad("'prompt' is empty.", "prompt")
        return prompt
    if isinstance(prompt, list) and prompt and all(isinstance(t, int) and not isinstance(t, bool) for t in prompt):
        return list(prompt)
    raise _bad("'prompt' is required: a string (or a list of token ids); one prompt per request.", "prompt")


def timings(m: TurnMetrics) -> dict[str, Any]:
    return {
        "cache_n": m.cache_n,
        "prompt_n": m.prompt_n,
        "prompt_ms": round(m.prompt_ms, 3),
        "prompt_per_token_ms": round(m.prompt_ms / m.prompt_n, 3) if m.prompt_n else 0.0,
        "prompt_per_second": round(m.prompt_per_second, 3),
        "predicted_n": m.predicted_n,
        "predicted_ms": round(m.predicted_ms, 3),
        "predicted_per_token_ms": round(m.predicted_per_token_ms, 3),
        "predicted_per_second": round(m.predicted_per_second, 3),
        "ttft_ms": round(m.ttft_ms, 3),
    }


def usage(m: TurnMetrics) -> dict[str, Any]:
    prompt = m.prompt_n + m.cache_n
    return {
        "prompt_tokens": prompt,
        "completion_tokens": m.predicted_n,
        "total_tokens": prompt + m.predicted_n,
        "prompt_tokens_details": {"cached_tokens": m.cache_n},
    }


FINISH = {"eos": "stop", "stop": "stop", "length": "length", "context": "length", "cancelled": "stop"}


# --- streaming response --------------------------------------------------------------------------
class SSEResponse(Response):
    """Server-sent events from an async iterator; a client disconnect calls ``on_disconnect``."""

    def __init__(self, events: AsyncIterator[bytes], on_disconnect: Callable[[], None]) -> None:
        self.status_code = 200
        self.background = None
        self.raw_headers = [
            (b"content-type", b"text/event-stream; charset=utf-8"),
            (b"cache-control", b"no-cache"),
            (b"x-accel-buffering", b"no"),
        ]
        self.events = events
        self.on_disconnect = on_disconnect

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        watch = asyncio.create_task(_watch_disconnect(receive, self.on_disconnect))
        try:
            await send({"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers})
            async for chunk in self.events:
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        except OSError:
            self.on_disconnect()
        finally:
            watch.cancel()
            with contextlib.suppress(BaseException):
                await self.events.aclose()  # type: ignore[attr-defined]


async def _watch_disconnect(receive: Receive, on_disconnect: Callable[[], None]) -> None:
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            on_disconnect()
            return


def _sse(data: Any) -> bytes:
    return b"data: " + json.dumps(data, ensure_ascii=False).encode("utf-8") + b"\n\n"


# --- the app -----------------------------------------------------------------------------------
@dataclass
class ServerOptions:
    model_id: str
    api_key: str | None = None
    max_body_bytes: int = DEFAULT_MAX_BODY
    max_prompt_tokens: int | None = None  # default: one slot's context - 1


class OpenAIServer:
    def __init__(self, scheduler: Scheduler, options: ServerOptions) -> None:
        self.scheduler = scheduler
        self.options = options
        self.created = int(time.time())
        self.t_start = time.time()
        routes = [Route("/health", self.health, methods=["GET"])]
        for prefix in ("/v1", ""):
            routes += [
                Route(f"{prefix}/models", self.models, methods=["GET"]),
                Route(f"{prefix}/chat/completions", self.chat, methods=["POST"]),
                Route(f"{prefix}/completions", self.completions, methods=["POST"]),
            ]
        routes.append(Route("/metrics", self.metrics, methods=["GET"]))
        self.app = Starlette(
            routes=routes,
            exception_handlers={404: self._not_found, 405: self._not_allowed},  # type: ignore[dict-item]
        )

    # --- helpers -------------------------------------------------------------------------------
    async def _not_found(self, request: Request, exc: Exception) -> Response:
        return ApiError(404, f"There is no route {request.url.path}.", code="not_found").response()

    async def _not_allowed(self, request: Request, exc: Exception) -> Response:
        return ApiError(405, f"{request.method} is not allowed on {request.url.path}.").response()

    def _auth(self, request: Request) -> None:
        key = self.options.api_key
        if not key:
            return
        header = request.headers.get("authorization", "")
        given = header[7:].strip() if header.lower().startswith("bearer ") else ""
        if not given or not hmac.compare_digest(given.encode(), key.encode()):
            raise ApiError(
                401,
                "Incorrect or missing API key; send 'Authorization: Bearer <key>'.",
                code="invalid_api_key",
            )

    async def _body(self, request: Request) -> dict[str, Any]:
        limit = self.options.max_body_bytes
        declared = request.headers.get("content-length")
        too_big = ApiError(413, f"The request body is larger than this server's limit of {limit} bytes.")
        if declared and declared.isdigit() and int(declared) > limit:
            raise too_big
        data = bytearray()
        try:
            async for chunk in request.stream():
                data += chunk
                if len(data) > limit:
                    raise too_big
        except ClientDisconnect:
            raise ApiError(400, "The client went away before sending the whole body.") from None
        try:
            body = json.loads(bytes(data))
        except (ValueError, UnicodeDecodeError):
            raise _bad("The request body is not valid JSON.") from None
        if not isinstance(body, dict):
            raise _bad("The request body must be a JSON object.")
        return body

    def _check_prompt(self, prompt: list[int]) -> None:
        limit = self.options.max_prompt_tokens or (self.scheduler.slot_ctx - 1)
        limit = min(limit, self.scheduler.slot_ctx - 1)
        if len(prompt) > limit:
            raise ApiError(
                400,
                f"The prompt is {len(prompt)} tokens but this server accepts at most {limit} "
                "prompt tokens per request.",
                param="messages",
                code="context_length_exceeded",
            )

    def _submit(
        self, prompt: list[int], params: GenParams, t_request: float
    ) -> tuple[SchedRequest, asyncio.Queue[SchedulerEvent]]:
        loop = asyncio.get_running_loop()
        q: asyncio.Queue[SchedulerEvent] = asyncio.Queue()

        def sink(event: SchedulerEvent) -> None:
            loop.call_soon_threadsafe(q.put_nowait, event)

        room = self.scheduler.slot_ctx - len(prompt)
        max_tokens = min(params.max_tokens or params.sampling.max_tokens, room)
        try:
            req = self.scheduler.submit(
                prompt,
                params.sampling,
                sink,
                max_tokens=max_tokens,
                ignore_eos=params.ignore_eos,
                stop=params.stop,
                t_request=t_request,
            )
        except QueueFull as err:
            raise ApiError(
                429,
                str(err),
                type_="rate_limit_error",
                code="server_busy",
                headers={"Retry-After": str(err.retry_after_s)},
            ) from None
        except PromptTooLong as err:
            raise ApiError(400, str(err), code="context_length_exceeded") from None
        except EngineError as err:
            raise ApiError(503, str(err), type_="server_error") from None
        return req, q

    async def _handle(self, request: Request, chat: bool) -> Response:
        t_request = time.perf_counter()
        try:
            self._auth(request)
            body = await self._body(request)
            params = parse_params(body, self.scheduler.profile.sampling)
            try:
                if chat:
                    messages = parse_messages(body)
                    prompt = await run_in_threadpool(self.scheduler.chat_tokens, messages)
                else:
                    raw = parse_prompt(body)
                    if isinstance(raw, str):
                        prompt = await run_in_threadpool(self.scheduler.text_tokens, raw)
                    else:
                        n_vocab = self.scheduler.model.n_vocab
                        if any(not 0 <= t < n_vocab for t in raw):
                            raise _bad(f"'prompt' has a token id outside 0..{n_vocab - 1}.", "prompt")
                        prompt = raw
            except EngineError as err:
                raise _bad(str(err)) from None
            self._check_prompt(prompt)
            req, q = self._submit(prompt, params, t_request)
        except ApiError as err:
            return err.response()
        rid = ("chatcmpl-" if chat else "cmpl-") + uuid.uuid4().hex[:24]
        model = str(body.get("model") or self.options.model_id)
        if params.stream:
            return SSEResponse(
                self._stream_events(req, q, rid, model, chat, params.include_usage),
                lambda: self.scheduler.cancel(req),
            )
        return await self._collect(request, req, q, rid, model, chat)

    async def _collect(
        self,
        request: Request,
        req: SchedRequest,
        q: asyncio.Queue[SchedulerEvent],
        rid: str,
        model: str,
        chat: bool,
    ) -> Response:
        watch = asyncio.create_task(_watch_disconnect(request.receive, lambda: self.scheduler.cancel(req)))
        try:
            while True:
                event = await q.get()
                if isinstance(event, RequestFailed):
                    return ApiError(500, event.message, type_="server_error").response()
                if isinstance(event, TurnFinished):
                    break
        except asyncio.CancelledError:
            self.scheduler.cancel(req)
            raise
        finally:
            watch.cancel()
        m = event.metrics
        choice: dict[str, Any] = {"index": 0, "finish_reason": FINISH.get(m.stop_reason, "stop"), "logprobs": None}
        if chat:
            choice["message"] = {"role": "assistant", "content": event.text}
        else:
            choice["text"] = event.text
        return JSONResponse(
            {
                "id": rid,
                "object": "chat.completion" if chat else "text_completion",
                "created": int(time.time()),
                "model": model,
                "choices": [choice],
                "usage": usage(m),
                "timings": timings(m),
                "system_fingerprint": "workstation",
            }
        )

    async def _stream_events(
        self,
        req: SchedRequest,
        q: asyncio.Queue[SchedulerEvent],
        rid: str,
        model: str,
        chat: bool,
        include_usage: bool,
    ) -> AsyncIterator[bytes]:
        created = int(time.time())
        obj = "chat.completion.chunk" if chat else "text_completion"

        def chunk(delta_text: str | None, finish: str | None, role: bool = False) -> dict[str, Any]:
            choice: dict[str, Any] = {"index": 0, "finish_reason": finish, "logprobs": None}
            if chat:
                delta: dict[str, Any] = {}
                if role:
                    delta["role"] = "assistant"
                    delta["content"] = ""
                if delta_text is not None:
                    delta["content"] = delta_text
                choice["delta"] = delta
            else:
                choice["text"] = delta_text or ""
            data: dict[str, Any] = {"id": rid, "object": obj, "created": created, "model": model, "choices": [choice]}
            if include_usage:
                data["usage"] = None
            return data

        def render(event: SchedulerEvent) -> tuple[bytes, bool]:
            if isinstance(event, TokenDelta):
                return _sse(chunk(event.text, None)), False
            if isinstance(event, TurnFinished):
                m = event.metrics
                last = chunk(None, FINISH.get(m.stop_reason, "stop"))
                last["timings"] = timings(m)
                out = _sse(last)
                if include_usage:
                    out += _sse({"id": rid, "object": obj, "created": created, "model": model, "choices": [], "usage": usage(m)})
                return out + b"data: [DONE]\n\n", True
            error = {"message": event.message, "type": "server_error", "param": None, "code": None}
            return _sse({"error": error}), True

        try:
            if chat:
                yield _sse(chunk(None, None, role=True))
            done = False
            while not done:
                body, done = render(await q.get())
                while not done and not q.empty():  # a slow reader gets what piled up in one write
                    more, done = render(q.get_nowait())
                    body += more
                yield body
        finally:
            self.scheduler.cancel(req)  # no-op when it finished; frees the slot otherwise

    # --- routes --------------------------------------------------------------------------------
    async def health(self, request: Request) -> Response:
        s = self.scheduler
        return JSONResponse(
            {
                "status": "ok",
                "slots_idle": s.n_parallel - s.requests_processing,
                "slots_processing": s.requests_processing,
                "requests_deferred": s.requests_deferred,
            }
        )

    async def models(self, request: Request) -> Response:
        try:
            self._auth(request)
        except ApiError as err:
            return err.response()
        s = self.scheduler
        return JSONResponse(
            {
                "object": "list",
                "data": [
                    {
                        "id": self.options.model_id,
                        "object": "model",
                        "created": self.created,
                        "owned_by": "workstation",
                        "meta": {
                            "model_name": s.model_name,
                            "model_path": str(s.model.path),
                            "n_ctx": s.slot_ctx,
                            "n_parallel": s.n_parallel,
                            "n_vocab": s.model.n_vocab,
                        },
                    }
                ],
            }
        )

    async def chat(self, request: Request) -> Response:
        return await self._handle(request, chat=True)

    async def completions(self, request: Request) -> Response:
        return await self._handle(request, chat=False)

    async def metrics(self, request: Request) -> Response:
        try:
            self._auth(request)
        except ApiError as err:
            return err.response()
        return PlainTextResponse(prometheus_text(self.scheduler), media_type="text/plain; version=0.0.4")


def prometheus_text(s: Scheduler) -> str:
    st = s.stats
    kv_size = s.slot_ctx * s.n_parallel
    rows: list[tuple[str, str, str, float]] = [
        ("prompt_tokens_total", "counter", "Number of prompt tokens processed.", st.prompt_tokens_total),
        ("prompt_seconds_total", "counter", "Prompt process time.", st.prompt_seconds_total),
        ("tokens_predicted_total", "counter", "Number of generation tokens processed.", st.tokens_predicted_total),
        ("tokens_predicted_seconds_total", "counter", "Predict process time.", st.tokens_predicted_seconds_total),
        ("n_decode_total", "counter", "Total number of llama_decode() calls.", st.n_decode_total),
        (
            "n_busy_slots_per_decode",
            "counter",
            "Average number of busy slots per llama_decode() call.",
            st.n_busy_slots_total / st.n_decode_total if st.n_decode_total else 0.0,
        ),
        (
            "prompt_tokens_seconds",
            "gauge",
            "Average prompt throughput in tokens/s.",
            st.prompt_tokens_total / st.prompt_seconds_total if st.prompt_seconds_total else 0.0,
        ),
        (
            "predicted_tokens_seconds",
            "gauge",
            "Average generation throughput in tokens/s.",
            st.tokens_predicted_total / st.tokens_predicted_seconds_total
            if st.tokens_predicted_seconds_total
            else 0.0,
        ),
        ("kv_cache_usage_ratio", "gauge", "KV-cache usage. 1 means 100 percent usage.", s.kv_tokens / kv_size),
        ("kv_cache_tokens", "gauge", "KV-cache tokens.", s.kv_tokens),
        ("requests_processing", "gauge", "Number of requests processing.", s.requests_processing),
        ("requests_deferred", "gauge", "Number of requests deferred.", s.requests_deferred),
    ]
    extra: list[tuple[str, str, str, float]] = [
        ("prompt_tokens_cached_total", "counter", "Prompt tokens reused from the KV cache.", st.cached_tokens_total),
        ("requests_total", "counter", "Requests accepted.", st.requests_total),
        ("requests_rejected_total", "counter", "Requests refused because the queue was full.", st.requests_rejected_total),
        ("requests_cancelled_total", "counter", "Requests cancelled (client went away).", st.requests_cancelled_total),
        ("n_parallel", "gauge", "Slots (sequences) decoded together.", s.n_parallel),
        ("decode_seconds_total", "counter", "Time inside llama_decode.", st.decode_seconds_total),
        ("busy_seconds_total", "counter",
         "Time from one decode to the next while requests are being processed.", st.busy_seconds_total),
    ]
    lines: list[str] = []
    for prefix, table in (("llamacpp", rows), ("workstation", extra)):
        for name, kind, help_, value in table:
            full = f"{prefix}:{name}"
            lines += [f"# HELP {full} {help_}", f"# TYPE {full} {kind}", f"{full} {_num(value)}"]
    return "\n".join(lines) + "\n"


def _num(value: float) -> str:
    if isinstance(value, int):
        return str(value)
    return repr(round(float(value), 6))


# --- binding and running --------------------------------------------------------------------------
def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_host(host: str, api_key: str | None) -> None:
    if not is_loopback(host) and not api_key:
        raise ServeError(
            f"Refusing to serve on {host} without an API key; set --api-key or WORKSTATION_API_KEY, "
            "or bind 127.0.0.1."
        )


def bind_socket(host: str, port: int) -> socket.socket:
    """A listening socket, or one clear sentence when the port is taken or the host is wrong."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror:
        raise ServeError(f"Cannot bind to {host}: no such address on this machine.") from None
    family, _, _, _, addr = infos[0]
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(addr)
        sock.listen(2048)
    except OSError as err:
        sock.close()
        if err.errno == errno.EADDRINUSE:
            raise ServeError(
                f"Port {port} on {host} is already in use; stop the other server or choose another with --port."
            ) from None
        if err.errno == errno.EACCES:
            raise ServeError(f"Not allowed to bind port {port} on {host}; choose a port above 1023.") from None
        raise ServeError(f"Cannot bind {host}:{port}: {err.strerror}.") from None
    sock.set_inheritable(True)
    return sock


def make_uvicorn(app: Any, log_level: str = "warning") -> Any:
    import uvicorn

    config = uvicorn.Config(
        app,
        log_level=log_level,
        access_log=False,
        lifespan="off",
        timeout_graceful_shutdown=3,
        server_header=False,
    )
    return uvicorn.Server(config)


class BackgroundServer:
    """The API served from a thread of this process (for an app that wants to serve alongside).

    ``BackgroundServer(scheduler, options, host, port).start()``; ``url``; ``stop()``.
    """

    def __init__(self, scheduler: Scheduler, options: ServerOptions, host: str = "127.0.0.1", port: int = 8088) -> None:
        import threading

        check_host(host, options.api_key)
        self.sock = bind_socket(host, port)
        self.host, self.port = host, self.sock.getsockname()[1]
        self.server = make_uvicorn(OpenAIServer(scheduler, options).app)
        self._thread = threading.Thread(target=self._run, name="workstation-serve", daemon=True)

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    def _run(self) -> None:
        asyncio.run(self.server.serve(sockets=[self.sock]))

    def start(self) -> BackgroundServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        self._thread.join(timeout=10)
        self.sock.close()


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

        import httpx

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
        if not match:
            self.proc.wait(timeout=30)
            reason = first.strip().removeprefix("workstation: ") or "it exited"
            raise ServeError(f"The API server did not start: {reason}")
        self.url = match.group(1)
        self.log: list[str] = []
        threading.Thread(target=self._drain, daemon=True).start()
        root = self.url.removesuffix("/v1")
        deadline = time.monotonic() + start_timeout_s
        while True:
            try:
                if httpx.get(f"{root}/health", timeout=5).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise ServeError("The API server did not answer in time.")
            time.sleep(0.2)

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
