"""Ollama's API (``/api/...``) in its request and response shapes, so that Ollama's clients (Open
WebUI, Continue, Obsidian and Raycast plugins, the ``ollama`` Python library) work unchanged. A
thin layer over ``OpenAIServer``, as ``native.py`` is for llama-server's routes: the same key
check, body limits, accounting, scheduler and disconnect handling; tools through
``tool_protocol``, ``format`` through ``structured``; a request is put into the OpenAI routes'
words (``OllamaGeneration.translate``) and checked there.

``POST /api/chat`` (``messages``, ``tools``, ``think``) and ``/api/generate`` (``prompt``,
``system``, ``raw``), both with ``format`` ("json" or a JSON schema), ``options`` and ``stream``
(default true: newline-delimited JSON objects, the last with ``done: true``, ``done_reason`` and
the durations in nanoseconds). ``GET /api/tags``, ``/api/ps`` and ``/api/version``, ``POST
/api/show``; ``GET /`` ("Ollama is running") and ``/api/version`` answer without a key (clients
probe them first; ``/api/tags`` names the model, so it needs the key). Embeddings and model management (``/api/embed``, ``/api/pull``, ...) are refused
with why (501). Every error on these paths is Ollama's ``{"error": "..."}`` (``OllamaErrors``). A
JSON body is read whatever its Content-Type says, as Ollama reads it (``guard.OLLAMA_PATHS``); the
replies and streamed lines are compact JSON, as Ollama (Go) writes them.

Model names: the served id and its ``--alias``es, each listed with Ollama's ``:latest`` tag and
accepted with or without it, in any case. Any other name is a 404 ``model "x" not found`` on
``/api/chat``, ``/api/generate`` and ``/api/show``, as Ollama answers it: clients read that 404
(to offer a pull, or to say the model is missing), and an answer from another model under the
name they asked for misled them. It says which name to choose, and how the operator adds a
name a tool insists on (``workstation serve --alias llama3``). The model's family is no name
for it: SmolLM2 is a "llama" as hundreds of other models are. (The OpenAI routes answer every
name, as llama-server does: their clients send the name of a model they never listed.)

Where this server does what Ollama does otherwise: ``keep_alive`` is accepted and the model stays
loaded (it serves every client; an empty request with ``keep_alive: 0`` is answered "unload"
all the same); ``options.num_ctx`` above a slot's context is accepted and the slot's context
used (Ollama would reload the model for it; clients send 8192 whatever the prompt, and the prompt
is checked against the context anyway, with the limit said); ``format`` with ``tools``: the
reply is a tool call or JSON in the format, as OpenAI answers the pair (Ollama's own server
holds the whole reply to the format, so its model never calls a tool: a bug to its users, ollama
issues 8095 and 13750). Errors name Ollama's fields (``format``, ``options.num_predict``), not the
OpenAI fields underneath (``FIELDS``).
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from workstation.core.events import (
    PromptRead,
    RequestFailed,
    SchedulerEvent,
    TokenDelta,
    TurnFinished,
)
from workstation.core.profile_check import MAX_PREDICT
from workstation.core.server.guard import OLLAMA_PATHS
from workstation.core.server.protocol import (
    FINISH,
    ApiError,
    bad,
    field_names,
    flag,
    json_bytes,
    parse_integer,
)
from workstation.core.server.replies import CUT_BY_SHUTDOWN, loop_stop
from workstation.core.server.sse import SSEResponse
from workstation.core.server.structured import schema_format
from workstation.core.server.unsupported import refuse_unsupported
from workstation.core.tool_calls import ReplyReader, ToolCall, read_reply

if TYPE_CHECKING:
    from workstation.core.server.accounts import Ticket
    from workstation.core.server.app import OpenAIServer
    from workstation.core.server.logprobs import ProbsAsked
    from workstation.core.server.protocol import GenParams
    from workstation.core.slots import Request as SchedRequest
    from workstation.core.tool_calls import ToolPrompt, ToolRequest

NDJSON = b"application/x-ndjson"
# The Ollama release whose API these routes follow (think, tools in streams, structured output):
# clients turn features on by it. The server's own version is beside it.
API_VERSION = "0.9.0"
TAG = ":latest"  # Ollama names every model name:tag; a bare name is name:latest
THINK_LEVELS = ("low", "medium", "high")  # Ollama's ``think`` levels (gpt-oss's reasoning effort)
FOREVER = "9999-12-31T23:59:59Z"  # /api/ps' expires_at: keep_alive is ignored, the model stays loaded

# the OpenAI routes' names for what Ollama names otherwise, as this server's errors say them
FIELDS = field_names(
    (r"response_format\b", "format"), (r"json_schema\b", "format"), (r"n_predict\b", "options.num_predict"),
    (r"chat_template_kwargs\b", "think"),
    (r"'(temperature|top_p|top_k|min_p|seed|stop|repeat_penalty|presence_penalty|frequency_penalty)'", r"'options.\1'"),
)
# Ollama's ``options`` by what this server does with them
SAMPLING_OPTIONS = frozenset({  # the OpenAI routes' fields of the same names (protocol.parse_params)
    "temperature", "top_p", "top_k", "min_p", "seed", "stop", "repeat_penalty", "presence_penalty",
    "frequency_penalty",
})
OFF_OPTIONS = frozenset({"mirostat", "mirostat_tau", "mirostat_eta", "typical_p", "repeat_last_n"})  # unsupported.py
# set where Ollama loads a model (the profile and ``serve`` set them here), or without effect on a
# reply here (num_keep: this server never shifts the context; penalize_newline: Ollama ignores it)
NO_EFFECT_OPTIONS = frozenset({
    "numa", "num_batch", "num_gpu", "main_gpu", "low_vram", "f16_kv", "logits_all", "vocab_only", "use_mmap",
    "use_mlock", "embedding_only", "num_thread", "num_keep", "penalize_newline",
})
# Ollama's routes this server does not serve -> why, and what to do instead
NOT_SERVED = {
    "/api/embed": "This server runs a chat model and makes no embeddings; run an embedding model's own server.",
    "/api/embeddings": "This server runs a chat model and makes no embeddings; run an embedding model's own server.",
    "/api/pull": "This server serves the model of its profile and pulls none; the operator adds models with "
                 "'workstation models pull'.",
    "/api/push": "This server pushes no models to a registry.",
    "/api/create": "This server creates no models; the operator writes a profile (profiles/*.yaml) and serves it.",
    "/api/copy": "This server copies no models; the operator names more with 'workstation serve --alias'.",
    "/api/delete": "This server deletes no models; the operator removes them with 'workstation models'.",
    "/api/blobs/{digest:path}": "This server takes no model files over its API.",
}


def ndjson(data: dict[str, Any]) -> bytes:
    return json_bytes(data) + b"\n"


def _now() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


def _ns(ms: float) -> int:
    return round(ms * 1_000_000)


def _tagged(name: str) -> str:
    return name if ":" in name else name + TAG


def parameter_size(n: int) -> str:
    """As Ollama writes a parameter count: 8.0B, 134.52M, 500K."""
    if n >= 1_000_000_000:
        b = n / 1_000_000_000
        return f"{b:.0f}B" if b == int(b) else f"{b:.1f}B"
    if n >= 1_000_000:
        m = n / 1_000_000
        return f"{m:.0f}M" if m == int(m) else f"{m:.2f}M"
    return f"{n / 1000:.0f}K" if n >= 1000 else str(n)


def ollama_call(call: ToolCall) -> dict[str, Any]:
    """A tool call as Ollama writes it: the arguments as an object, not JSON text."""
    try:
        arguments = json.loads(call.arguments)
    except ValueError:
        arguments = call.arguments
    return {"function": {"name": call.name, "arguments": arguments}}


class OllamaErrors:
    """ASGI: an error on Ollama's paths in Ollama's shape, ``{"error": "..."}``, whichever layer
    answered it (the guard's 403 or 503, a refused key, a body over the limit, a 429, a
    route's 400) in OpenAI's ``{"error": {"message": ...}}``; status and headers stay."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope["path"].startswith(OLLAMA_PATHS):
            await self.app(scope, receive, send)
            return
        start: Message | None = None
        held: list[bytes] = []

        async def reshaped(message: Message) -> None:
            nonlocal start
            if message["type"] == "http.response.start" and message["status"] >= 400:
                start = message  # sent with the body, whose length changes
                return
            if start is None or message["type"] != "http.response.body":
                await send(message)
                return
            held.append(message.get("body", b""))
            if message.get("more_body", False):
                return
            body = _ollama_error(b"".join(held))
            headers = [(k, v) for k, v in start["headers"] if k.lower() != b"content-length"]
            await send({**start, "headers": [*headers, (b"content-length", str(len(body)).encode())]})
            await send({"type": "http.response.body", "body": body})

        await self.app(scope, receive, reshaped)


def _ollama_error(body: bytes) -> bytes:
    try:
        data = json.loads(body)
    except ValueError:
        return body
    error = data.get("error") if isinstance(data, dict) else None
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        return json_bytes({"error": error["message"]})
    return body


@dataclass(frozen=True)
class ModelFacts:
    """What Ollama's model listings say of the served model, read once from its GGUF."""

    size: int
    modified_at: str
    digest: str
    details: dict[str, Any]
    model_info: dict[str, Any]
    licence: str | None
    vram: int  # bytes of weights on the GPU (0: none)


class OllamaRoutes:
    """The routes above over an ``OpenAIServer``; ``/api/chat`` and ``/api/generate`` go through
    ``OpenAIServer._handle`` as an ``OllamaGeneration``."""

    def __init__(self, server: OpenAIServer) -> None:
        self.server = server
        self.scheduler = server.scheduler
        self.chat = OllamaGeneration(self, generate=False)
        self.generate = OllamaGeneration(self, generate=True)
        self._facts: ModelFacts | None = None

    def routes(self) -> list[Route]:
        return [
            Route("/api/chat", self._chat, methods=["POST"]),
            Route("/api/generate", self._generate, methods=["POST"]),
            Route("/api/tags", self.tags, methods=["GET"]),
            Route("/api/ps", self.ps, methods=["GET"]),
            Route("/api/version", self.version, methods=["GET"]),
            Route("/", self.running, methods=["GET"]),  # (and HEAD)
            Route("/api/show", self.show, methods=["POST"]),
            *(Route(path, self.not_served, methods=["GET", "POST", "DELETE"]) for path in NOT_SERVED),
        ]

    async def _chat(self, request: Request) -> Response:
        return await self.server._handle(request, chat=True, native=self.chat, route="api/chat")

    async def _generate(self, request: Request) -> Response:
        return await self.server._handle(request, chat=True, native=self.generate, route="api/generate")

    # --- names ---------------------------------------------------------------------------------
    def names(self) -> list[str]:
        options = self.server.options
        return [options.model_id, *(a for a in options.aliases if a != options.model_id)]

    def served_name(self, asked: str) -> str | None:
        """The served model's name (its id or an alias, as ``names`` lists it) that ``asked`` is,
        tagged or not (Ollama's "office:latest"), in any case; None where it names no model
        served here. ``/api/chat`` and the OpenAI routes' ``/v1/models/{name}`` alike (that
        answered 404 for the name Ollama's clients are given)."""
        key = _tagged(asked).lower()
        # (and the model file's own name, which serve's start line shows in brackets: copied into a tool, a 404)
        for name, served in [*((n, n) for n in self.names()), (self.scheduler.model_name, self.server.options.model_id)]:
            if _tagged(name).lower() == key:
                return served
        return None

    def reply_name(self, asked: str) -> str:
        """The name a reply carries: the client's, where it names the served model (tagged or
        not, in any case); else ApiError 404 in Ollama's words, with the names to choose from."""
        if self.served_name(asked) is not None:
            return asked
        served, *others = [_tagged(n) for n in self.names()]
        also = f" (also named {', '.join(others)})" if others else ""
        raise ApiError(404, f"model {json.dumps(asked, ensure_ascii=False)[:80]} not found: this server serves "
                            f"{served}{also}; choose it in your tool, or ask the operator to add that name with "
                            f"'workstation serve --alias'.", param="model", code="model_not_found")

    # --- the model's facts ---------------------------------------------------------------------
    def _read_facts(self) -> ModelFacts:
        from workstation.core.catalog import catalog_entries
        from workstation.core.model_info import read_model_info

        s = self.scheduler
        path = Path(s.model.path)
        info = read_model_info(path)
        arch = info.architecture
        entry = next((e for e in catalog_entries() if e.get("file") == path.name), None)
        # the catalog's sha256 where it knows one (a pulled file is checked against it): hashing
        # gigabytes for a listing is not cheap
        digest = str(entry.get("sha256") or "") if entry else ""
        details = {
            "parent_model": "",
            "format": "gguf",
            "family": arch,
            "families": [arch],
            "parameter_size": info.size_label or parameter_size(info.parameter_count),
            "quantization_level": info.file_type,
        }
        model_info: dict[str, Any] = {
            "general.architecture": arch,
            "general.name": info.name,
            "general.parameter_count": info.parameter_count,
            f"{arch}.context_length": info.context_length,
            f"{arch}.embedding_length": info.n_embd,
            f"{arch}.block_count": info.n_layer,
            f"{arch}.attention.head_count": info.n_head,
            f"{arch}.attention.head_count_kv": info.n_head_kv,
            f"{arch}.vocab_size": info.n_vocab,
            "tokenizer.ggml.model": info.tokenizer_model,
        }
        vram = 0
        if s.model.gpu_offload and s.gpu_layers > 0:
            vram = sum(info.layer_bytes[: min(s.gpu_layers, info.n_layer)])
            vram += info.output_bytes if s.gpu_layers > info.n_layer else 0
        modified = datetime.fromtimestamp(path.stat().st_mtime, UTC).isoformat().replace("+00:00", "Z")
        return ModelFacts(info.file_size, modified, digest, details, model_info, info.licence, vram)

    async def facts(self) -> ModelFacts:
        if self._facts is None:
            self._facts = await run_in_threadpool(self._read_facts)
        return self._facts

    def capabilities(self) -> list[str]:
        """Ollama's words for what the served model does here: completion, tools (every chat
        template: core/tool_calls.py), thinking (a reasoning model's)."""
        from workstation.core.model_shapes import thinks_first

        template = self.scheduler.template.source
        thinks = "<think>" in template or "enable_thinking" in template or thinks_first(str(self.scheduler.model.path))
        return ["completion", "tools", *(["thinking"] if thinks else [])]

    # --- routes --------------------------------------------------------------------------------
    async def tags(self, request: Request) -> Response:
        """The models this server answers to: the served one under each of its names."""
        try:
            self.server._auth(request)
            self.server._refuse_while_stopping()
            facts = await self.facts()
        except ApiError as err:
            return err.response()
        return JSONResponse({"models": [
            {"name": _tagged(name), "model": _tagged(name), "modified_at": facts.modified_at, "size": facts.size,
             "digest": facts.digest, "details": facts.details}
            for name in self.names()
        ]})

    async def ps(self, request: Request) -> Response:
        """The model loaded: the served one, for as long as the server runs (keep_alive is
        ignored), with the context each request may fill."""
        try:
            self.server._auth(request)
            self.server._refuse_while_stopping()
            facts = await self.facts()
        except ApiError as err:
            return err.response()
        name = _tagged(self.server.options.model_id)
        return JSONResponse({"models": [{
            "name": name, "model": name, "size": facts.size, "digest": facts.digest, "details": facts.details,
            "expires_at": FOREVER, "size_vram": facts.vram, "context_length": self.scheduler.slot_ctx,
        }]})

    async def version(self, request: Request) -> Response:
        """Without a key, as ``/``: clients ask before they send one (it names no model)."""
        import workstation

        return JSONResponse({"version": API_VERSION, "workstation": workstation.__version__})

    async def running(self, request: Request) -> Response:
        """``GET /`` and ``HEAD /``, Ollama's probe: clients check that the server is up (and is
        Ollama) before they send a key; a 404 made them say none runs there."""
        return PlainTextResponse("Ollama is running")

    async def show(self, request: Request) -> Response:
        """``{"model"}`` -> its details, chat template (Jinja, as the GGUF holds it), system
        prompt and parameters (the profile's sampling and the context per request)."""
        try:
            self.server._auth(request)
            self.server._refuse_while_stopping()
            async with self.server._json_body(request) as body:
                asked = body.get("model", body.get("name"))
                if not isinstance(asked, str) or not asked:
                    raise bad("'model' is required: the name of the model to show.", "model")
                self.reply_name(asked)  # (a 404 for a model this server does not serve)
            facts = await self.facts()
        except ApiError as err:
            return err.response()
        s = self.scheduler
        sampling = s.profile.sampling
        params: list[tuple[str, Any]] = [
            ("num_ctx", s.slot_ctx), ("num_predict", sampling.max_tokens), ("temperature", sampling.temperature),
            ("top_k", sampling.top_k), ("top_p", sampling.top_p), ("min_p", sampling.min_p),
            ("repeat_penalty", sampling.repeat_penalty),
            *((name, getattr(sampling, name)) for name in ("presence_penalty", "frequency_penalty")
              if getattr(sampling, name)),
            *([("seed", sampling.seed)] if sampling.seed is not None else []),
            *(("stop", json.dumps(stop, ensure_ascii=False)) for stop in sampling.stop),
        ]
        parameters = "\n".join(f"{name:<30} {value}" for name, value in params)
        system = s.profile.system_prompt or ""
        modelfile = "\n".join([
            "# Modelfile of workstation's served profile (its chat template is Jinja, as the GGUF holds it)",
            f"FROM {Path(s.model.path).name}",
            *([f'SYSTEM """{system}"""'] if system else []),
            *(f"PARAMETER {name} {value}" for name, value in params),
        ])
        shown: dict[str, Any] = {
            "modelfile": modelfile,
            "parameters": parameters,
            "template": s.template.source,
            "system": system,
            "details": facts.details,
            "model_info": facts.model_info,
            "capabilities": self.capabilities(),
            "modified_at": facts.modified_at,
        }
        if facts.licence:
            shown["license"] = facts.licence
        return JSONResponse(shown)

    async def not_served(self, request: Request) -> Response:
        why = NOT_SERVED.get(request.url.path) or NOT_SERVED["/api/blobs/{digest:path}"]
        return self.server._after_key(request, ApiError(501, why, type_="not_supported_error"))


class OllamaGeneration:
    """``/api/chat`` or ``/api/generate`` (``generate``) as a dialect of ``OpenAIServer._handle``."""

    fields = FIELDS

    def __init__(self, routes: OllamaRoutes, generate: bool) -> None:
        self.routes = routes
        self.server = routes.server
        self.scheduler = routes.server.scheduler
        self.generate = generate

    # --- the request ---------------------------------------------------------------------------
    def translate(self, body: dict[str, Any], chat: bool) -> tuple[dict[str, Any], bool] | Response:
        """Ollama's fields as the OpenAI routes' (whose checks then apply); refused by name where
        this server does not do what they ask. An empty prompt or no messages: "load the
        model", answered at once (it is loaded)."""
        model = body.get("model", body.get("name"))
        if not isinstance(model, str) or not model:
            raise bad(f"'model' is required: the name of the model ({_tagged(self.server.options.model_id)} "
                      "here).", "model")
        self.routes.reply_name(model)  # (a 404 for a model this server does not serve)
        out: dict[str, Any] = {"model": model, "stream": flag(body, "stream", True)}
        if body.get("stop_on_loop") is not None:  # (ours, as the OpenAI routes take it: the loop watch on or off)
            out["stop_on_loop"] = body["stop_on_loop"]
        asked_nothing = (not body.get("prompt")) if self.generate else (not body.get("messages"))
        if asked_nothing and _no_time(body.get("keep_alive")):  # Ollama's "unload the model"
            return self._loaded(model, "unload")
        think = body.get("think")
        if think in THINK_LEVELS:  # gpt-oss's levels; any other thinking model takes them as true, as Ollama does
            think = True
        elif think is not None and not isinstance(think, bool):
            raise bad(f"invalid think value: {json.dumps(think, ensure_ascii=False)[:40]} (must be \"high\", "
                      "\"medium\", \"low\", true, or false)", "think")  # (Ollama's words)
        if think and "thinking" not in self.routes.capabilities():
            raise bad(f"{json.dumps(model, ensure_ascii=False)[:80]} does not support thinking; leave 'think' out "
                      "or send false.", "think")  # (Ollama's words first: clients look for them)
        if self.generate:
            for name in ("images", "context", "template", "suffix"):
                if body.get(name):
                    raise bad(_REFUSED[name], name)
            prompt = body.get("prompt")
            if prompt is not None and not isinstance(prompt, str):
                raise bad("'prompt' must be a string.", "prompt")
            if not prompt:
                return self._loaded(model)
            system = body.get("system")
            if system is not None and not isinstance(system, str):
                raise bad("'system' must be a string.", "system")
            chat = not flag(body, "raw", False)
            if chat:
                out["messages"] = [*([{"role": "system", "content": system}] if system else []),
                                   {"role": "user", "content": prompt}]
            elif system:
                raise bad("'system' is not used with 'raw': true (the prompt is the whole text the model reads); "
                          "put it in the prompt.", "system")
            else:
                out["prompt"] = prompt
        else:
            messages = body.get("messages")
            if not messages:
                return self._loaded(model)
            out["messages"] = _messages(messages)
            if body.get("tools") is not None:
                out["tools"] = body["tools"]
        if body.get("logprobs") or body.get("top_logprobs"):
            raise bad(_REFUSED["logprobs"], "logprobs")
        out |= self._format(body.get("format"))
        out |= self._options(body.get("options"))
        if think is not None and chat:  # the template's switch (Qwen3's enable_thinking); the thinking comes
            out["chat_template_kwargs"] = {"enable_thinking": think}  # apart as "thinking"
        return out, chat

    def _loaded(self, model: str, reason: str = "load") -> Response:
        """The answer to an empty request: "load" (the model is loaded), or with ``keep_alive: 0``
        "unload" (it stays loaded: it serves every client)."""
        done: dict[str, Any] = {"model": self.routes.reply_name(model), "created_at": _now()}
        done |= {"response": ""} if self.generate else {"message": {"role": "assistant", "content": ""}}
        return JSONResponse({**done, "done_reason": reason, "done": True})

    @staticmethod
    def _format(value: Any) -> dict[str, Any]:
        if value is None or value == "":
            return {}
        if value == "json":
            return {"response_format": {"type": "json_object"}}
        if isinstance(value, dict):
            schema_format(value, "format")  # (a 400 that names 'format')
            return {"json_schema": value}
        raise bad("'format' must be \"json\" or a JSON schema (an object).", "format")

    def _options(self, raw: Any) -> dict[str, Any]:
        """Ollama's ``options``: sampling as the OpenAI routes' fields, ``num_predict`` as
        llama-server's ``n_predict``; ``num_ctx`` read and left: a request gets a slot's context
        whatever it asks (its prompt is checked against that, the limit said)."""
        if raw is None:
            return {}
        if not isinstance(raw, dict):
            raise bad("'options' must be an object of model options (temperature, num_predict, ...).", "options")
        out: dict[str, Any] = {}
        for name, value in raw.items():
            if value is None or name in NO_EFFECT_OPTIONS:
                continue
            if name in SAMPLING_OPTIONS:
                out[name] = value
            elif name == "num_predict":
                n = parse_integer(raw, name, -2, MAX_PREDICT)
                if n:  # -1 and -2 (until the context is full) are llama-server's -1; 0 is Ollama's "unset"
                    out["n_predict"] = max(n, -1)
            elif name == "num_ctx":
                parse_integer(raw, name, 1, 2**31)
            elif name in OFF_OPTIONS:
                refuse_unsupported({name: value}, where="options.")
            elif name == "tfs_z":
                if value != 1:
                    raise bad("'options.tfs_z' is not supported by this server; leave it out or send 1.", "options")
            else:
                raise bad(f"'options.{name[:40]}' is not one of Ollama's options that this server knows.", "options")
        return out

    def parse(self, body: dict[str, Any], params: GenParams) -> str:
        """The name the reply carries (``respond``'s ``extra``)."""
        return self.routes.reply_name(body["model"])

    async def prompt_tokens(
        self, body: dict[str, Any], chat: bool, ticket: Ticket, tools: ToolRequest | None
    ) -> tuple[list[int], ToolPrompt | None]:
        """As the OpenAI routes make them (the profile's system prompt where none is sent, as
        Ollama's SYSTEM; ``raw``: the text itself)."""
        return await self.server.request_prompt_tokens(body, chat, ticket, tools)

    # --- the answer ----------------------------------------------------------------------------
    async def respond(
        self, request: Request, extra: Any, req: SchedRequest, q: asyncio.Queue[SchedulerEvent], params: GenParams,
        model: str, ticket: Ticket, probs: ProbsAsked | None, plan: ToolPrompt | None,
    ) -> Response:

        name = str(extra)
        reply_format = plan.format if plan is not None else ""
        if params.stream:
            first = await self.server._first_event(request, req, q, ticket)  # a 429 before a 200
            if isinstance(first, Response):
                return first
            return SSEResponse(self._stream(req, q, ticket, name, reply_format, first),
                               lambda: self.scheduler.cancel(req), media_type=NDJSON)
        event = await self.server._finished_event(request, req, q, ticket)
        if not isinstance(event, TurnFinished):
            return event
        text, calls = event.text, []
        if reply_format:
            piece = read_reply(reply_format, event.text)
            text, calls = piece.content, piece.calls
        done = self._piece(name, text, event.reasoning, calls)
        done |= self._done(event, req, ticket)
        return JSONResponse(done)

    def _piece(self, name: str, text: str, thinking: str, calls: list[ToolCall]) -> dict[str, Any]:
        """An object of the reply: ``message`` (chat) or ``response`` (generate), with its
        thinking and tool calls."""
        out: dict[str, Any] = {"model": name, "created_at": _now()}
        if self.generate:
            out["response"] = text
            if thinking:
                out["thinking"] = thinking
            return out
        message: dict[str, Any] = {"role": "assistant", "content": text}
        if thinking:
            message["thinking"] = thinking
        if any(c.whole for c in calls):  # (a call cut by the token limit has no arguments object to give)
            message["tool_calls"] = [ollama_call(c) for c in calls if c.whole]
        return out | {"message": message}

    def _done(self, event: TurnFinished, req: SchedRequest, ticket: Ticket) -> dict[str, Any]:
        """The last object's fields: why it stopped, the counts and durations (ns) of the
        turn's metrics. ``prompt_eval_count`` is the whole prompt (Ollama's "tokens in the
        prompt"), the cached part included; ``load_duration`` is 0: the model was loaded when
        the server started (a turn's ``load_ms`` is that load's, not this request's)."""
        m = event.metrics
        total_ms = m.total_ms or (time.perf_counter() - req.t_request) * 1000
        return {
            "done_reason": FINISH.get(m.stop_reason, "stop"),
            "done": True,
            "total_duration": _ns(total_ms),
            "load_duration": 0,
            "prompt_eval_count": m.asked_n,  # (as its text reads, as OpenAI's usage: ``asked_n``)
            "prompt_eval_duration": _ns(m.prompt_ms),
            "eval_count": m.predicted_n,
            "eval_duration": _ns(m.predicted_ms),
            **self.server._quota_reached(ticket, event),
            **loop_stop(event),
        }

    async def _stream(
        self, req: SchedRequest, q: asyncio.Queue[SchedulerEvent], ticket: Ticket, name: str, reply_format: str,
        first: SchedulerEvent | None,
    ) -> AsyncIterator[bytes]:

        reader = ReplyReader(reply_format) if reply_format else None  # text that may be a call is held

        def piece(text: str, thinking: str, calls: list[ToolCall]) -> bytes:
            calls = [c for c in calls if c.whole]
            if not (text or thinking or calls):
                return b""
            return ndjson(self._piece(name, text, thinking, calls) | {"done": False})

        async def render(event: SchedulerEvent) -> tuple[bytes, bool]:
            if isinstance(event, PromptRead):
                return b"", False
            if isinstance(event, TokenDelta):
                if reader is None:
                    return piece(event.text, event.reasoning, []), False
                read = reader.push(event.text)
                return piece(read.content, event.reasoning, read.calls), False
            if isinstance(event, TurnFinished):
                self.server._finished(ticket, event)
                if self.server._cut_by_shutdown(event):
                    return ndjson({"error": CUT_BY_SHUTDOWN}), True
                held = b""
                if reader is not None:
                    rest = reader.finish()
                    held = piece(rest.content, "", rest.calls)
                return held + ndjson(self._piece(name, "", "", []) | self._done(event, req, ticket)), True
            assert isinstance(event, RequestFailed)
            self.server.accounts.finish(ticket, event.status)
            return ndjson({"error": event.message}), True

        async for body in self.server._pump(req, q, ticket, render, first, sse_stream=False):  # (NDJSON)
            yield body


_REFUSED = {
    "images": "'images' are not supported: this server runs a text model; send the prompt without images.",
    "context": "'context' (the token memory of an earlier /api/generate) is not supported by this server; send "
               "the conversation to /api/chat instead.",
    "template": "'template' is not supported by this server: the model's own chat template is used; leave it out, "
                "or send 'raw': true with the whole prompt.",
    "suffix": "'suffix' (fill-in-the-middle) is not supported by this server; leave it out.",
    "logprobs": "'logprobs' is not supported on Ollama's routes of this server; ask /v1/chat/completions for them.",
}


def _no_time(keep_alive: Any) -> bool:
    """Whether ``keep_alive`` is zero: 0 (seconds) or a duration of none ("0", "0s", "0m")."""
    if isinstance(keep_alive, bool):
        return False
    if isinstance(keep_alive, int | float):
        return keep_alive == 0
    return isinstance(keep_alive, str) and re.fullmatch(r"\s*[+-]?(0+(\.0*)?(ns|us|µs|ms|s|m|h)?)+\s*", keep_alive) is not None


def _messages(raw: Any) -> list[Any]:
    """Ollama's messages as OpenAI's: a tool result's ``tool_name`` is its ``name``; a past
    reply's ``thinking`` is dropped (templates leave it out); images are refused."""
    if not isinstance(raw, list):
        raise bad("'messages' must be a list of {role, content} objects.", "messages")
    out: list[Any] = []
    for i, m in enumerate(raw):
        if not isinstance(m, dict):
            out.append(m)  # (parse_messages says what is wrong with it)
            continue
        if m.get("images"):
            raise bad(f"messages[{i}].images: {_REFUSED['images']}", "messages")
        message = {k: v for k, v in m.items() if k in ("role", "content", "tool_calls")}
        if m.get("tool_name") is not None:
            message["name"] = m["tool_name"]
        out.append(message)
    return out
