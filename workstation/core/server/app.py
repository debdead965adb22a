"""The routes over the continuous-batching scheduler (Starlette), with server-sent events.

OpenAI's ``GET /v1/models``, ``POST /v1/chat/completions`` and ``POST /v1/completions``
(streamed or not; ``usage`` always, and in a stream as a last chunk with llama-server's
``timings`` when ``stream_options.include_usage`` is set; the same routes answer without
``/v1``), OpenAI's ``POST /v1/responses`` (``responses.py``), llama-server's ``POST /tokenize``, ``/detokenize`` and ``/apply-template``,
``GET /health`` (and ``/v1/health``, as llama-server) and ``GET /metrics`` (off with ``serve --no-metrics``); llama-server's
``/completion``, ``/props`` and ``/slots`` live in ``native.py``, Ollama's ``/api/...`` in
``ollama.py`` (both through ``_handle``, as a ``Dialect``). An option llama-server has
and this server does not implement is refused by name on every route (``unsupported.py``). With an API key, or once a person's key exists
(``workstation keys add``), every route but ``/health`` and Ollama's probes (``/``, ``/api/version``)
needs ``Authorization: Bearer KEY`` or ``X-Api-Key: KEY``; ``Accounts`` (``accounts.py``) checks the key, its profiles and its tokens
for today, and accounts for every generation request. A client that disconnects cancels its
generation and frees its slot (its tokens so far are still counted).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time
import uuid
from collections.abc import Callable
from typing import Any, Protocol

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp

from workstation.core.errors import EngineError
from workstation.core.events import RequestFailed, SchedulerEvent, TurnFinished
from workstation.core.grammar import GrammarError
from workstation.core.loops import watched
from workstation.core.model_file import model_file_changed
from workstation.core.scheduler import PromptTooLong, QueueFull, Scheduler
from workstation.core.server.accounts import NO_OPERATOR_KEY, Accounts, Caller, RevokedKey, Ticket
from workstation.core.server.guard import (
    ACCOUNTED,
    CLIENT_GONE,
    HEALTH,
    PERSON,
    REASON,
    WHO,
    InflightBodies,
    RequestGuard,
    client_text,
)
from workstation.core.server.logprobs import ProbsAsked, parse_token_fields
from workstation.core.server.native import NativeRoutes
from workstation.core.server.ollama import OllamaErrors, OllamaRoutes
from workstation.core.server.options import ServerOptions
from workstation.core.server.protocol import (
    ApiError,
    FieldNames,
    GenParams,
    bad,
    parse_model,
    parse_params,
    parse_tag,
    queue_full,
)
from workstation.core.server.replies import SHUTTING_DOWN, Replies
from workstation.core.server.request_body import RequestBodies
from workstation.core.server.request_prompt import RequestPrompts
from workstation.core.server.responses import ResponsesDialect
from workstation.core.server.sse import SSEResponse
from workstation.core.server.status_routes import STOPPING_HEADERS, StatusRoutes
from workstation.core.server.structured import grammar_refused
from workstation.core.server.token_routes import TokenRoutes
from workstation.core.server.tool_protocol import parse_tool_request
from workstation.core.server.unsupported import CHAT_FIELDS, refuse_unknown, refuse_unsupported
from workstation.core.slots import Owner
from workstation.core.slots import Request as SchedRequest
from workstation.core.tool_calls import (
    ToolPrompt,
    ToolRequest,
)
from workstation.core.usage import UNKNOWN

log = logging.getLogger("uvicorn.error")


# llama-server's routes for what a chat model's server does not do (501, as llama-server answers
# them when it was not started with --embeddings or --reranking): route -> (what, its flag)
NOT_SERVED = {
    **dict.fromkeys(("/v1/embeddings", "/embeddings", "/embedding"), ("makes no embeddings", "--embeddings")),
    **dict.fromkeys(("/v1/rerank", "/rerank", "/reranking", "/v1/reranking"), ("does no reranking", "--reranking")),
}


# the routes that need no key (a load balancer's probe, Ollama's clients' "is it up"): another
# method on them is told "not allowed" without one too, as llama-server exempts a public path
# from the key whatever its method
KEYLESS = HEALTH | {"/", "/api/version"}


class Dialect(Protocol):
    """Another server's request and response shapes over ``OpenAIServer._handle`` (its key
    check, limits, accounting, submission): llama-server's ``/completion`` (``native.py``) and
    Ollama's ``/api/chat`` and ``/api/generate`` (``ollama.py``), OpenAI's ``/v1/responses``
    (``responses.py``)."""

    fields: FieldNames  # its names for the chat route's fields, in the errors it answers

    def translate(self, body: dict[str, Any], chat: bool) -> tuple[dict[str, Any], bool] | Response:
        """The body in the OpenAI routes' words and whether its prompt is a chat; or the answer
        to a request that asks for no generation (accounted for as one of 0 tokens)."""
        ...

    def parse(self, body: dict[str, Any], params: GenParams) -> Any:
        """The dialect's own fields (``respond``'s ``extra``), applied to ``params``."""
        ...

    async def prompt_tokens(
        self, body: dict[str, Any], chat: bool, ticket: Ticket, tools: ToolRequest | None
    ) -> tuple[list[int], ToolPrompt | None]:
        ...

    async def respond(
        self, request: Request, extra: Any, req: SchedRequest, q: asyncio.Queue[SchedulerEvent], params: GenParams,
        model: str, ticket: Ticket, probs: ProbsAsked | None, plan: ToolPrompt | None,
    ) -> Response:
        """The answer to the submitted request, streamed or whole."""
        ...


# --- the app -----------------------------------------------------------------------------------
class OpenAIServer(RequestBodies, RequestPrompts, Replies, StatusRoutes, TokenRoutes):
    """``OpenAIServer(scheduler, options, accounts).app``: the ASGI app, its routes behind
    RequestGuard. Without ``accounts`` only ``options.api_key`` is checked and nothing is
    recorded. Its parts, each a module: ``RequestBodies`` (``request_body.py``),
    ``RequestPrompts`` (``request_prompt.py``), ``Replies`` (``replies.py``), ``StatusRoutes``
    (``status_routes.py``), ``TokenRoutes`` (``token_routes.py``)."""

    def __init__(self, scheduler: Scheduler, options: ServerOptions, accounts: Accounts | None = None) -> None:
        self.scheduler = scheduler
        self.options = options
        self.accounts = accounts or Accounts(scheduler.profile.key, shared_key=options.api_key)
        self._late: set[asyncio.Task[None]] = set()  # accounting of requests whose client left
        self._running: dict[asyncio.Queue[SchedulerEvent], SchedRequest] = {}  # submitted, not ended
        self.stopping = False  # the server is shutting down: nothing new is taken
        self.cut_at = 0.0  # (time.monotonic) when the stop's grace ends: the replies still being written are cut
        self.cutting = False  # the replies still being written at the stop are being cut off
        self._said_model_changed = False  # the log has said that the model file changed on disk
        self._health_said = "ok"  # /health's last status, its change logged once (not each poll)
        self.created = int(time.time())
        self.words_said: dict[str, float] | None = None  # its model's words a token by language (/models), once read
        self.bodies = InflightBodies(options.max_inflight_body_bytes, options.max_body_bytes)
        self.native = NativeRoutes(self)  # llama-server's /completion, /props, /slots
        self.ollama = OllamaRoutes(self)  # Ollama's /api/chat, /api/generate, /api/tags, ...
        self.responses = ResponsesDialect(self)  # OpenAI's /v1/responses, over the chat route
        routes = [
            *(Route(path, self.health, methods=["GET"]) for path in sorted(HEALTH)),
            Route("/metrics", self.metrics if options.metrics else self._metrics_off, methods=["GET"]),
            *self.native.routes(),
            *self.ollama.routes(),
            Route("/tokenize", self.tokenize, methods=["POST"]),
            Route("/detokenize", self.detokenize, methods=["POST"]),
            Route("/apply-template", self.apply_template, methods=["POST"]),
            Route("/cells/forget", self.forget_cells, methods=["POST"]),
            Route("/usage/today", self.usage_today, methods=["GET"]),
            # llama-server's, where it is not started for them: 501 and why, not "no route"
            *(Route(path, self._not_served, methods=["POST"]) for path in NOT_SERVED),
        ]
        for prefix in ("/v1", ""):
            routes += [
                Route(f"{prefix}/models", self.models, methods=["GET"]),
                Route(f"{prefix}/models/{{model:path}}", self.models, methods=["GET"]),
                Route(f"{prefix}/chat/completions", self.chat, methods=["POST"]),
                Route(f"{prefix}/completions", self.completions, methods=["POST"]),
                Route(f"{prefix}/responses", self.responses.handle, methods=["POST"]),
                Route(f"{prefix}/responses/{{rid:path}}", self.responses.kept, methods=["GET", "POST", "DELETE"]),
            ]
        starlette = Starlette(
            routes=routes,
            exception_handlers={  # type: ignore[dict-item]
                404: self._not_found,
                405: self._not_allowed,
                Exception: self._failed,
            },
        )
        self.guard = RequestGuard(starlette, options, routes)
        self.app: ASGIApp = OllamaErrors(self.guard)  # (errors on /api/... in Ollama's shape)

    # --- helpers -------------------------------------------------------------------------------
    def _after_key(self, request: Request, error: ApiError) -> Response:
        """``error``'s answer to a caller with a key of this server's, the 401 to any other: which
        routes there are and what this server does not do is said to no one without a key (a
        501 on /v1/embeddings or /metrics answered before the key was checked), as llama-server
        checks the key before it routes a request. Only whose key it is: what the key may use
        (its profiles, 403) is each route's to say, as OpenAI refuses a restricted key per
        endpoint, naming the scope that endpoint needs (a route not here was 403 "may use the
        profiles ...", as if it were there for another key)."""
        try:
            self._authenticated(request)
        except ApiError as refused:
            return refused.response()
        return error.response()

    async def _not_found(self, request: Request, exc: Exception) -> Response:
        return self._after_key(request, ApiError(404, f"There is no route {request.url.path}.", code="not_found"))

    async def _not_served(self, request: Request) -> Response:
        """``/v1/embeddings`` (a RAG script's first call) and reranking: 404 "There is no route"
        said nothing."""
        what, flag = NOT_SERVED[request.url.path]
        return self._after_key(request, ApiError(
            501, f"This server runs a chat model and {what}; run a model's own server for that "
                 f"(llama-server {flag} -m MODEL.gguf).", type_="not_supported_error"))

    async def _metrics_off(self, request: Request) -> Response:
        """``/metrics`` under ``serve --no-metrics``: 501 and why, as llama-server answers it
        when it was started without ``--metrics`` (a monitor's 404 "There is no route" said
        neither that the server turned it off nor how to turn it on)."""
        return self._after_key(request, ApiError(
            501, "This server's metrics are off (it was started with --no-metrics); "
                 "restart it without that option to read them.", type_="not_supported_error"))

    async def _not_allowed(self, request: Request, exc: Exception) -> Response:
        """405 with the methods the route takes (``Allow``, which a 405 must carry); on a route that
        needs no key, without one (``POST /health`` asked for the key ``GET /health`` does not)."""
        allow = (getattr(exc, "headers", None) or {}).get("Allow", "")  # (from a set: in no one order)
        error = ApiError(405, f"{request.method} is not allowed on {request.url.path}.",
                         headers={"Allow": ", ".join(sorted(m.strip() for m in allow.split(",")))} if allow else None)
        return error.response() if request.url.path in KEYLESS else self._after_key(request, error)

    async def _failed(self, request: Request, exc: Exception) -> Response:
        # the answer to a bug; RequestGuard logs it in one line
        return ApiError(500, "The server failed to handle this request.", type_="server_error").response()

    def _auth(self, request: Request, operator: bool = False) -> Caller:
        """The caller (ApiError 401 or 403 when the key is wrong or limited to other profiles;
        ``operator``: 403 for a person's key, the route being for whoever runs the server)."""
        caller = self._authenticated(request)
        if operator and caller.key is not None:
            # a person's key saved another's cells to a file of its naming, restored them at will
            # (a cached-tokens oracle on their prompt), erased them, and filled the disk
            how = "its --api-key" if self.accounts.shared_key else NO_OPERATOR_KEY
            raise ApiError(403, f"The slots and their files are for whoever runs the server, not a person's key "
                                f"({how}).", type_="permission_error", code="operator_only")
        self.accounts.check_profile(caller)
        return caller

    def _authenticated(self, request: Request) -> Caller:
        """The caller, marked on the request; a refusal's reason ("wrong key", "no key", "revoked
        key") kept for its log line (RequestGuard's: a 401 on /v1/models said none of them)."""
        try:
            caller = self.accounts.authenticate(request.headers, _client(request))
        except ApiError as refused:
            request.scope[REASON] = refused.reason
            if isinstance(refused, RevokedKey):  # (its owner named, as a generation's line names them)
                request.scope[WHO] = refused.who
                if not request.scope.get(ACCOUNTED):  # recorded, as a generation's attempt is: a desk PC's
                    # first call (GET /v1/models) with a revoked key left no usage row nor audit line
                    request.scope[ACCOUNTED] = True
                    ticket = self.accounts.begin(Caller(refused.who, _client(request)), _route_name(request))
                    self.accounts.finish(ticket, refused.status, reason=refused.reason)
            raise
        _mark(request, caller)
        return caller

    def _refuse_while_stopping(self) -> None:
        """503 with Retry-After while the server stops: a request for a reply, and the lists of
        the models served (``/v1/models``, ``/props``, Ollama's ``/api/tags``, ``/api/ps``,
        ``/api/show``), which answered 200 meanwhile, so a client that checks the model first
        (the openai client's ``models.list``, Ollama's clients) took the server for one that
        serves. Connection: close: a client's next try opens a connection to the server that is back."""
        if self.stopping:
            raise ApiError(SHUTTING_DOWN, "The server is shutting down; send the request again once it is back.",
                           type_="server_error", code="shutting_down", headers=dict(STOPPING_HEADERS))

    def _submit(
        self, prompt: list[int], params: GenParams, t_request: float, owner: Owner | None,
        plan: ToolPrompt | None = None, chat: bool = False,
    ) -> tuple[SchedRequest, asyncio.Queue[SchedulerEvent]]:
        """Queue the request (``chat``: a chat reply, whose thinking is told apart unless
        ``reasoning_format`` is "none"; a completion's text is the text)."""
        loop = asyncio.get_running_loop()
        q: asyncio.Queue[SchedulerEvent] = asyncio.Queue()
        # the field whose grammar the reply could not follow (a 400 with no param said none)
        shaped_by = "tools" if plan is not None and plan.grammar else params.output.param if params.output else None

        def sink(event: SchedulerEvent) -> None:
            if isinstance(event, RequestFailed) and event.status == 400 and event.param is None:
                event = dataclasses.replace(event, param=shaped_by)
            loop.call_soon_threadsafe(q.put_nowait, event)
            if isinstance(event, TurnFinished | RequestFailed):
                loop.call_soon_threadsafe(self._running.pop, q, None)

        room = self.scheduler.slot_ctx - len(prompt)
        max_tokens = min(params.max_tokens or params.sampling.max_tokens, room)
        if params.id_slot >= self.scheduler.n_parallel:
            raise bad(
                f"'id_slot' is {params.id_slot}; this server has slots 0 to {self.scheduler.n_parallel - 1} "
                "(-1: any).",
                "id_slot",
            )
        constraints = params.all_constraints()  # the reply format's grammar, the logit bias, probabilities
        stop = params.stop
        if plan is not None and (plan.tools or plan.grammar):
            if stop is None:
                stop = []  # a profile's stop text ("\n") would cut a tool call short
            if plan.grammar:  # a tool call's grammar (with the reply format's JSON beside the call, if asked),
                constraints = dataclasses.replace(params.constraints, grammar=plan.grammar)  # a client's stop or not
            # the tool-call format's markers stream as text, also where they are control tokens
            constraints = dataclasses.replace(constraints, preserved_tokens=self.scheduler.marker_tokens(plan.markers))
        try:
            req = self.scheduler.submit(
                prompt,
                params.sampling,
                sink,
                max_tokens=max_tokens,
                ignore_eos=params.ignore_eos,
                stop=stop,
                t_request=t_request,
                owner=owner,
                constraints=constraints,
                id_slot=params.id_slot,
                reasoning=chat and params.reasoning,
                chat=chat,
                tag=params.tag,
                cache_prompt=params.cache_prompt,
                reading=params.stream and params.return_progress,
            )
        except GrammarError as err:
            raise grammar_refused(params.output, str(err)) from None
        except QueueFull as err:
            raise queue_full(str(err), err.retry_after_s) from None
        except PromptTooLong as err:
            raise self.too_long(len(prompt), str(err)) from None
        except EngineError as err:
            if model_file_changed(err) and not self._said_model_changed:  # once: a line each refusal said nothing more
                self._said_model_changed = True
                log.warning(f"workstation: {err} Every request is refused (503) until then; /health says so.")
            raise ApiError(503, str(err), type_="server_error",
                           code="model_file_changed" if model_file_changed(err) else None) from None
        self._running[q] = req
        if self.cutting:  # it passed the door before the shutdown began, and was reading its body
            self.scheduler.cancel(req)
        return req, q

    async def stop_serving(
        self, wait_s: float, give_up: Callable[[], bool] = lambda: False, cut_now: Callable[[], bool] = lambda: False,
        why: str = "",
    ) -> None:
        """The server is shutting down: new requests are refused (503, /health "stopping"); the
        replies being written, and those waiting for a slot, finish for up to
        ``options.shutdown_grace_s`` (or until ``cut_now()``: a second SIGTERM or Ctrl+C), as a
        server stopped for an upgrade should (they ended mid-sentence at once); then those left
        end where they are, each told to its client and recorded with its tokens. This waits up
        to ``wait_s`` (or until ``give_up()``) for them to be, and for those whose client left
        to be recorded. ``why``: the stop's cause, for the log ("SIGTERM")."""
        grace = self.options.shutdown_grace_s
        self.cut_at = time.monotonic() + grace
        self.stopping = True
        if self._running and grace > 0 and not cut_now():
            n = len(self._running)
            replies, them = ("reply", "it") if n == 1 else (f"{n} replies", "them")
            log.warning(f"workstation: stopping{f' ({why})' if why else ''}: new requests are refused; waiting up "
                        f"to {grace:g} s for the {replies} being written to finish (a second SIGTERM or Ctrl+C ends {them} now).")
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(grace):
                    while self._running and not cut_now():
                        await asyncio.sleep(0.05)
            if left := len(self._running):
                cut = "1 reply still being written was" if left == 1 else f"{left} replies still being written were"
                log.warning(f"workstation: {cut} cut off ({'stopped again' if cut_now() else f'after {grace:g} s'}); "
                            f"{'its client is' if left == 1 else 'the client of each is'} told to send it again once the "
                            "server is back.")
        self.cutting = True
        for req in list(self._running.values()):
            self.scheduler.cancel(req)
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(wait_s):
                while (self._running or self._late) and not give_up():
                    await asyncio.sleep(0.02)

    async def _handle(
        self, request: Request, chat: bool, native: Dialect | None = None, route: str | None = None
    ) -> Response:
        """A generation request; ``native``: in another server's shapes; ``route``: its name in
        the usage records (default chat, completions, or llama-server's completion)."""
        t_request = time.perf_counter()
        route = route or ("chat" if chat else "completion" if native is not None else "completions")
        request.scope[ACCOUNTED] = True  # its log line is Accounts.finish's, with who and the tokens
        ticket: Ticket | None = None
        try:
            try:
                caller = self.accounts.authenticate(request.headers, _client(request))
            except ApiError as refused:  # recorded: a revoked key under its owner's name
                who = refused.who if isinstance(refused, RevokedKey) else UNKNOWN
                ticket = self.accounts.begin(Caller(who, _client(request)), route)
                raise
            ticket = self.accounts.begin(caller, route)
            _mark(request, caller)
            self._refuse_while_stopping()
            self.accounts.check_profile(caller)
            self.accounts.check_quota(caller)
            async with self._json_body(request) as body:  # every field is checked before submitting
                if native is not None:
                    read = native.translate(body, chat)
                    if isinstance(read, Response):  # a request that asks for no generation (Ollama's "load the model")
                        self.accounts.finish(ticket, read.status_code)
                        return read
                    body, chat = read
                elif chat:  # (OpenAI's: /v1/chat/completions; llama-server's and Ollama's routes take any)
                    refuse_unknown(body, CHAT_FIELDS)
                refuse_unsupported(body)
                params = parse_params(body, self.scheduler.profile.sampling)
                if not chat and body.get("stop_on_loop") is None:
                    # a text continued (/v1/completions, /completion, /api/generate's raw): its repeats are
                    # often what was asked (a list's pattern, a form's lines), and llama-server has no loop
                    # watch; it runs where the request asks for it ("stop_on_loop": true)
                    params.sampling.stop_on_loop = False
                if native is None and body.get("n_predict") == 0 and not isinstance(body["n_predict"], bool):
                    # (the prompt alone, read into the cache: /completion's; here it was one token)
                    raise bad("'n_predict' 0 (only reading the prompt) is served on /completion; here send -1 or a "
                              "number of tokens of 1 or more.", "n_predict")
                if params.tag is not None and caller.key is not None:
                    raise ApiError(403, "'conversation_tag' is for the server's own clients, not a person's key.",
                                   type_="permission_error", param="conversation_tag")
                probs = await run_in_threadpool(parse_token_fields, body, chat, self.scheduler.model, params)
                model = parse_model(body, self.options.model_id, self.options.aliases)
                if not chat and body.get("tools") is not None:
                    raise bad("'tools' are for /v1/chat/completions; a completion takes none.", "tools")
                tools = parse_tool_request(body, params.output) if chat else None
                if chat and isinstance(body.get("messages"), list):  # (a message that asks for copies: no loop stop)
                    params = dataclasses.replace(params, sampling=watched(body["messages"], params.sampling))
                extra = native.parse(body, params) if native is not None else None
                if native is not None:
                    prompt, plan = await native.prompt_tokens(body, chat, ticket, tools)
                else:
                    prompt, plan = await self.request_prompt_tokens(body, chat, ticket, tools)
                self._check_prompt(prompt, "messages" if chat else "prompt")
                wanted = min(params.max_tokens or params.sampling.max_tokens, self.scheduler.slot_ctx - len(prompt))
                held = self.accounts.hold_quota(ticket, len(prompt), wanted)  # within the key's day
                if held < wanted:
                    params = dataclasses.replace(params, max_tokens=held)
                req, q = self._submit(prompt, params, t_request, caller.owner, plan, chat=chat)
        except ApiError as err:
            if ticket is not None:
                self.accounts.finish(ticket, err.status, reason=err.reason)
            return (err.in_words(native.fields) if native is not None else err).response()
        except asyncio.CancelledError:
            if ticket is not None:
                self.accounts.finish(ticket, CLIENT_GONE)
            raise
        except Exception:
            if ticket is not None:
                self.accounts.finish(ticket, 500)
            raise
        if native is not None:
            return await native.respond(request, extra, req, q, params, model, ticket, probs, plan)
        rid = ("chatcmpl-" if chat else "cmpl-") + uuid.uuid4().hex[:24]
        reply_format = plan.format if plan else ""
        if params.stream:
            first = await self._first_event(request, req, q, ticket)
            if isinstance(first, Response):
                return first
            return SSEResponse(
                self._stream_events(req, q, rid, model, chat, params.include_usage, ticket, probs, reply_format,
                                    first),
                lambda: self.scheduler.cancel(req),
            )
        return await self._collect(request, req, q, rid, model, chat, ticket, probs, reply_format)

    # --- routes --------------------------------------------------------------------------------
    async def chat(self, request: Request) -> Response:
        return await self._handle(request, chat=True)

    async def completions(self, request: Request) -> Response:
        return await self._handle(request, chat=False)

    async def forget_cells(self, request: Request) -> Response:
        """Ours: ``{"tag": ...}`` -> ``{"forgotten": n}``. A conversation deleted in the TUI
        whose chat went through this server: its cells leave the slots (they would be saved
        at shutdown) and its saved states the disk. For the server's shared key (which the
        TUI's chat and office tools hold), or anyone on a server without keys; never for a
        person's key. It deletes cache files only: the worst a caller can do is make a prompt
        read again."""
        try:
            caller = self._auth(request)
            if caller.key is not None:
                raise ApiError(403, "Only the server's own key may forget saved cells.", type_="permission_error")
            async with self._json_body(request) as body:
                tag = parse_tag(body, "tag", required=True)
            assert tag is not None
            forgotten = await run_in_threadpool(self.scheduler.forget, tag)
        except ApiError as err:
            return err.response()
        return JSONResponse({"forgotten": forgotten})

def _route_name(request: Request) -> str:
    """A request's route as the usage records name routes ("models" for /v1/models and
    /v1/models/ID, "api/tags"), for an attempt refused before any route's own accounting."""
    parts = [p for p in request.url.path.split("/") if p]
    return (parts[1] if len(parts) > 1 else "v1") if parts[:1] == ["v1"] else "/".join(parts[:2]) or "/"


def _mark(request: Request, caller: Caller) -> None:
    """Whose request it is, for the log line (it said "-") and a person's share of the bodies
    read at once (InflightBodies)."""
    request.scope[WHO] = caller.name
    request.scope[PERSON] = caller.name if caller.key is not None else None


def _client(request: Request) -> str:
    return client_text(request.client.host) if request.client is not None else ""


