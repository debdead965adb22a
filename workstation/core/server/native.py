"""llama-server's native routes, in its request and response shapes, so its clients work unchanged.

``POST /completion``: ``prompt`` (text, token ids, or both mixed), ``n_predict`` (-1: until the
slot's context is full; 0: only read the prompt into the cache; absent: the profile's
``max_tokens``), ``stream``, ``return_tokens``,
``id_slot``, ``n_probs`` and every sampling field the OpenAI routes take (``protocol.parse_params``)
-> ``content``, ``tokens``, ``stop``, ``stop_type``, ``stopping_word``, ``tokens_predicted``,
``tokens_evaluated``, ``tokens_cached``, ``truncated``, ``generation_settings``, ``timings``,
``id_slot``, ``model``, ``prompt``, ``has_new_line``. Streamed, each event is a ``data:`` line
with ``content``, ``tokens`` and ``stop: false``; the last one is the whole final object with
``stop: true`` (and no ``[DONE]``, as llama-server ends this stream).

``GET /props`` (the defaults, slots, the model's file name and chat template), ``GET /slots``
(each slot read on the decoding thread between steps) and, with ``serve --slot-save-path DIR``,
``POST /slots/{id}?action=save|restore|erase`` (``core/slot_files.py``). Options llama-server
has and this server does not are refused by name (``unsupported.py``).
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

import workstation
from workstation.core.errors import EngineError
from workstation.core.events import (
    PromptRead,
    RequestFailed,
    SchedulerEvent,
    TokenDelta,
    TurnFinished,
)
from workstation.core.profile_check import MAX_PREDICT
from workstation.core.profiles import Constraints, Sampling
from workstation.core.server.logprobs import ProbsAsked, completion_probabilities
from workstation.core.server.protocol import (
    ApiError,
    FieldNames,
    GenParams,
    bad,
    failed_response,
    flag,
    parse_integer,
    prompt_progress,
    sse,
    timings,
)
from workstation.core.server.sse import SSEResponse
from workstation.core.slot_files import SlotBusy, SlotFileError, SlotFiles
from workstation.core.slots import Request as SchedRequest
from workstation.core.slots import Slot

if TYPE_CHECKING:
    from workstation.core.server.accounts import Ticket
    from workstation.core.server.app import OpenAIServer
    from workstation.core.tool_calls import ToolPrompt, ToolRequest

STOP_TYPE = {"eos": "eos", "stop": "word", "length": "limit", "context": "limit", "cancelled": "none"}
OUR_SAMPLERS = ["penalties", "top_k", "top_p", "min_p", "temperature"]


@dataclass
class NativeRequest:
    """What ``/completion`` asks beyond ``GenParams``."""

    prompt_only: bool  # n_predict 0: read the prompt into the cache, generate nothing
    return_tokens: bool


@dataclass
class Submitted:
    """A ``/completion`` handed to the scheduler: what its answer is made from."""

    native: NativeRequest
    req: SchedRequest
    q: asyncio.Queue[SchedulerEvent]
    params: GenParams
    model: str
    ticket: Ticket
    n_probs: int  # top tokens per reply token in completion_probabilities (0: none)


def generation_settings(
    sampling: Sampling,
    *,
    n_predict: int,
    stop: list[str],
    ignore_eos: bool,
    stream: bool,
    constraints: Constraints,
    speculative: str = "none",
    full: bool = True,
) -> dict[str, Any]:
    """llama-server's ``generation_settings`` (``full``; a slot's ``params`` and ``/props``
    leave out stop, logit bias and grammar, as it does): the settings used, with the options
    this server does not implement at the values that leave them off (``unsupported.py``)."""
    out: dict[str, Any] = {
        "seed": sampling.seed if sampling.seed is not None else 0xFFFFFFFF,
        "temperature": sampling.temperature,
        "dynatemp_range": 0.0,
        "dynatemp_exponent": 1.0,
        "top_k": sampling.top_k,
        "top_p": sampling.top_p,
        "min_p": sampling.min_p,
        "top_n_sigma": -1.0,
        "xtc_probability": 0.0,
        "xtc_threshold": 0.1,
        "typical_p": 1.0,
        "repeat_last_n": 64,
        "repeat_penalty": sampling.repeat_penalty,
        "presence_penalty": sampling.presence_penalty,
        "frequency_penalty": sampling.frequency_penalty,
        "dry_multiplier": 0.0,
        "dry_base": 1.75,
        "dry_allowed_length": 2,
        "dry_penalty_last_n": 64,
    }
    if full:
        out["dry_sequence_breakers"] = ["\n", ":", '"', "*"]
    out |= {"mirostat": 0, "mirostat_tau": 5.0, "mirostat_eta": 0.1, "adaptive_target": -1.0, "adaptive_decay": 0.9}
    if full:
        out["stop"] = list(stop)
    out |= {
        "max_tokens": n_predict,
        "n_predict": n_predict,
        "n_keep": 0,
        "n_discard": 0,
        "ignore_eos": ignore_eos,
        "stream": stream,
    }
    if full:
        out["logit_bias"] = [[t, b] for t, b in sorted(constraints.logit_bias.items())]
    out |= {"n_probs": constraints.n_probs, "min_keep": 0}
    if full:
        out |= {"grammar": constraints.grammar, "grammar_lazy": False, "grammar_triggers": [], "preserved_tokens": []}
    return out | {
        "chat_format": "Content-only",
        "reasoning_format": "none",
        "reasoning_in_content": False,
        "generation_prompt": "",
        "samplers": OUR_SAMPLERS,
        "speculative.types": speculative,
        "timings_per_token": False,
        "post_sampling_probs": False,
        "backend_sampling": False,
        "lora": [],
    }


def stopping_word(tokens_text: str, content: str, stops: list[str]) -> str:
    """The stop string that ended a reply: the one found where the reply's text stops."""
    rest = tokens_text[len(content) :] if tokens_text.startswith(content) else ""
    return next((s for s in sorted(stops, key=len, reverse=True) if rest.startswith(s)), "")


class NativeRoutes:
    """The routes above, over an ``OpenAIServer`` (its key check, body limits, accounting,
    submission and disconnect handling are used as they are)."""

    fields: FieldNames = ()  # llama-server's fields are the chat route's (n_predict, json_schema, grammar)

    def __init__(self, server: OpenAIServer) -> None:
        self.server = server
        self.scheduler = server.scheduler
        folder = server.options.slot_save_path
        self.slot_files = SlotFiles(server.scheduler, folder) if folder is not None else None
        mode = server.scheduler.profile.speculative.mode
        self.speculative = {"off": "none", "lookup": "ngram"}.get(mode, mode)

    def routes(self) -> list[Route]:
        return [
            Route("/completion", self.completion, methods=["POST"]),
            Route("/props", self.props, methods=["GET"]),
            Route("/slots", self.slots, methods=["GET"]),
            Route("/slots/{id_slot}", self.slot_action, methods=["POST"]),
        ]

    # --- /completion ------------------------------------------------------------------------
    async def completion(self, request: Request) -> Response:
        return await self.server._handle(request, chat=False, native=self)

    def translate(self, body: dict[str, Any], chat: bool) -> tuple[dict[str, Any], bool]:
        """llama-server's fields are this server's own (``protocol.parse_params``)."""
        return body, chat

    def parse(self, body: dict[str, Any], params: GenParams) -> NativeRequest:
        """The native fields, applied to ``params`` (called by ``OpenAIServer._handle``)."""
        n_predict = parse_integer(body, "n_predict", -1, MAX_PREDICT)  # as max_tokens: protocol.parse_params
        if body.get("logprobs") is not None:  # parse_token_fields reads it as the legacy completions field
            raise bad("'logprobs' is not a /completion field; ask for 'n_probs' instead.", "logprobs")
        return NativeRequest(prompt_only=n_predict == 0, return_tokens=flag(body, "return_tokens", False))

    async def prompt_tokens(
        self, body: dict[str, Any], chat: bool, ticket: Ticket, tools: ToolRequest | None
    ) -> tuple[list[int], ToolPrompt | None]:
        """``prompt`` as tokens: text (BOS added as the model wants), token ids, or a list of
        both (BOS only when it starts with text, as llama-server does); a completion has no tools."""
        raw = body.get("prompt")
        model = self.scheduler.model
        if isinstance(raw, list) and len(raw) > 1 and all(isinstance(p, str | list) for p in raw):
            # llama-server reads a list of texts as that many prompts (an array of results); they
            # were joined into one prompt here and answered as one
            raise bad(f"'prompt' holds {len(raw)} prompts; this server answers one prompt per request: send them "
                      "one at a time (or as many requests at once).", "prompt")
        if isinstance(raw, list) and len(raw) > 1 and any(isinstance(p, str) for p in raw):
            if not all(isinstance(p, str) or (isinstance(p, int) and not isinstance(p, bool)) for p in raw):
                raise bad("'prompt' mixes token ids and text, but holds something else too.", "prompt")
            self.server.accounts.keep_content(ticket, {"prompt": raw})

            def mixed() -> list[int]:
                out: list[int] = []
                for i, part in enumerate(raw):
                    if isinstance(part, str):
                        out += model.tokenize(part, add_special=i == 0 and model.add_bos, parse_special=True)
                    elif 0 <= part < model.n_vocab:
                        out.append(part)
                    else:
                        raise bad(f"'prompt' has a token id outside 0..{model.n_vocab - 1}.", "prompt")
                return out

            tokens = await run_in_threadpool(mixed)
            if not tokens:
                raise bad("'prompt' is empty.", "prompt")
            return tokens, None
        return await self.server.request_prompt_tokens(body, False, ticket)

    async def respond(
        self,
        request: Request,
        native: NativeRequest,
        req: SchedRequest,
        q: asyncio.Queue[SchedulerEvent],
        params: GenParams,
        model: str,
        ticket: Ticket,
        probs: ProbsAsked | None,
        plan: ToolPrompt | None = None,
    ) -> Response:
        """The answer to a submitted ``/completion``; ``probs``: what ``n_probs`` asked
        (``completion_probabilities``, rendered by ``logprobs.py``); a completion has no ``plan``."""

        sub = Submitted(native, req, q, params, model, ticket, probs.n_probs or 0 if probs is not None else 0)
        if params.stream:
            first = await self.server._first_event(request, req, q, ticket)  # a 429 before a 200
            if isinstance(first, Response):
                return first
            return SSEResponse(self._stream(sub, first), lambda: self.scheduler.cancel(req))
        event = await self.server._finished_event(request, req, q, ticket)
        if not isinstance(event, TurnFinished):
            return event
        final = await run_in_threadpool(self._final, sub, event, False)
        if sub.n_probs and not native.prompt_only:
            final["completion_probabilities"] = await run_in_threadpool(
                completion_probabilities, event.probs, self.scheduler.model, sub.n_probs
            )
        return JSONResponse(final)

    def _final(self, sub: Submitted, event: TurnFinished, streamed: bool) -> dict[str, Any]:
        native, req = sub.native, sub.req
        m = event.metrics
        lm = self.scheduler.model
        content = "" if native.prompt_only else event.text
        word = ""
        if m.stop_reason == "stop" and not native.prompt_only:
            word = stopping_word(lm.detokenize(event.tokens), event.text, req.stop)
        shown = m
        if native.prompt_only:
            shown = dataclasses.replace(m, predicted_n=0, predicted_ms=0.0)
            shown.finish_rates()
        return {
            "index": 0,
            "content": "" if streamed else content,
            "tokens": list(event.tokens) if native.return_tokens and not streamed and not native.prompt_only else [],
            "id_slot": req.id_slot,
            "stop": True,
            "model": sub.model,
            "tokens_predicted": shown.predicted_n,
            "tokens_evaluated": len(req.prompt),
            "generation_settings": generation_settings(
                sub.params.sampling,
                n_predict=0 if native.prompt_only else req.max_tokens,
                stop=req.stop,
                ignore_eos=req.ignore_eos,
                stream=sub.params.stream,
                constraints=req.constraints,
                speculative=self.speculative,
            ),
            "prompt": lm.detokenize(req.prompt, special=True),
            "has_new_line": "\n" in content,
            "truncated": m.stop_reason == "context",
            "stop_type": "limit" if native.prompt_only else STOP_TYPE.get(m.stop_reason, "none"),
            "stopping_word": word,
            "tokens_cached": m.kv_used,
            "timings": timings(shown),
        }

    async def _stream(self, sub: Submitted, first: SchedulerEvent | None = None) -> AsyncIterator[bytes]:
        req, ticket = sub.req, sub.ticket
        n_decoded = 0

        async def render(event: SchedulerEvent) -> tuple[bytes, bool]:
            nonlocal n_decoded
            if isinstance(event, PromptRead):
                return sse({"index": 0, "content": "", "tokens": [], "stop": False, "id_slot": req.id_slot,
                            "tokens_predicted": 0, "tokens_evaluated": len(req.prompt),
                            "prompt_progress": prompt_progress(event)}), False
            if isinstance(event, TokenDelta):
                n_decoded += event.tokens
                if sub.native.prompt_only:
                    return b"", False
                chunk = {
                    "index": 0, "content": event.text, "tokens": list(event.ids), "stop": False,
                    "id_slot": req.id_slot, "tokens_predicted": n_decoded, "tokens_evaluated": len(req.prompt),
                }
                if sub.n_probs and event.probs:
                    chunk["completion_probabilities"] = completion_probabilities(
                        event.probs, self.scheduler.model, sub.n_probs
                    )
                return sse(chunk), False
            if isinstance(event, TurnFinished):
                self.server._finished(ticket, event)
                if self.server._cut_by_shutdown(event):  # as /v1's streams say it
                    return sse(self.server._shutdown_error().body()), True
                return sse(await run_in_threadpool(self._final, sub, event, True)), True
            assert isinstance(event, RequestFailed)
            self.server.accounts.finish(ticket, event.status)
            return sse(failed_response(event, body_only=True)), True

        async for body in self.server._pump(req, sub.q, ticket, render, first):
            yield body

    # --- /props and /slots --------------------------------------------------------------------
    async def props(self, request: Request) -> Response:
        try:
            self.server._auth(request)
            self.server._refuse_while_stopping()
        except ApiError as err:
            return err.response()
        s = self.scheduler
        import llama_cpp

        sampling = s.profile.sampling
        return JSONResponse({
            "default_generation_settings": {
                "params": generation_settings(
                    sampling, n_predict=sampling.max_tokens, stop=sampling.stop, ignore_eos=sampling.ignore_eos,
                    stream=False, constraints=Constraints(), speculative=self.speculative, full=False,
                ),
                "n_ctx": s.slot_ctx,
            },
            "total_slots": s.n_parallel,
            "model_alias": self.server.options.model_id,
            "model_path": s.model.path.name,  # the file's name only: the folder tells about the machine
            "modalities": {"vision": False, "video": False, "audio": False},
            "endpoint_slots": True,
            "endpoint_props": False,
            "endpoint_metrics": self.server.options.metrics,
            "ui": False,
            "chat_template": s.template.source,
            "chat_template_caps": {},
            "bos_token": s.template.bos_token,
            "eos_token": s.template.eos_token,
            "build_info": f"workstation {workstation.__version__} (llama-cpp-python {llama_cpp.__version__})",
            "is_sleeping": False,
        })

    def _slot_rows(self) -> list[dict[str, Any]]:
        """Every slot as llama-server shows it; runs on the decoding thread between steps."""
        return [self._slot_row(slot) for slot in self.scheduler.slots]

    def _slot_row(self, slot: Slot) -> dict[str, Any]:
        s = self.scheduler
        req, run = slot.req, slot.run
        row: dict[str, Any] = {
            "id": slot.seq,
            "n_ctx": s.slot_ctx,
            "speculative": slot.spec is not None,
            "is_processing": req is not None,
            "id_task": req.id if req is not None else -1,
            "n_prompt_tokens": len(slot.tokens),  # the cells it holds, as llama-server counts them
            "n_prompt_tokens_processed": run.metrics.prompt_n if run is not None else 0,
            "n_prompt_tokens_cache": run.metrics.cache_n if run is not None else 0,
        }
        if req is None:  # llama-server shows the last task's; this server shows the defaults
            sampling, n_predict, ignore_eos, constraints = s.profile.sampling, -1, False, Constraints()
        else:
            sampling, n_predict, ignore_eos, constraints = req.sampling, req.max_tokens, req.ignore_eos, req.constraints
        row["params"] = generation_settings(
            sampling, n_predict=n_predict, stop=req.stop if req is not None else sampling.stop, ignore_eos=ignore_eos,
            stream=False, constraints=constraints,
            speculative=self.speculative, full=False,
        )
        n_decoded = len(run.reply) if run is not None else 0
        row["next_token"] = [{
            "has_next_token": req is not None,
            "has_new_line": run is not None and any("\n" in p for p in run.parts),
            "n_remain": (req.max_tokens - n_decoded) if req is not None else -1,
            "n_decoded": n_decoded,
        }]
        return row

    async def slots(self, request: Request) -> Response:
        try:
            self.server._auth(request, operator=True)  # (others' prompt lengths and settings)
            rows = await asyncio.wrap_future(self.scheduler.between_steps(self._slot_rows))
        except ApiError as err:
            return err.response()
        except EngineError as err:
            return ApiError(503, str(err), type_="server_error").response()
        if request.query_params.get("fail_on_no_slot") and all(r["is_processing"] for r in rows):
            return ApiError(503, "No slot is idle.", type_="server_error", code="no_slot_available").response()
        return JSONResponse(rows)

    async def slot_action(self, request: Request) -> Response:
        """``POST /slots/{id}?action=save|restore|erase`` with ``{"filename": ...}``."""
        try:
            self.server._auth(request, operator=True)
            files = self.slot_files
            if files is None:
                raise ApiError(
                    501,
                    "This server does not support slot actions; start it with --slot-save-path DIR.",
                    type_="not_supported_error",
                    code="not_supported",
                )
            raw_id = request.path_params["id_slot"]
            if not raw_id.isdigit():
                raise bad(f"The slot id {raw_id[:20]!r} is not a whole number.", "id_slot")
            id_slot = int(raw_id)
            action = request.query_params.get("action", "")
            if action not in ("save", "restore", "erase"):
                raise bad(f"'action' is {action[:20]!r}; allowed values are save, restore, erase.", "action")
            if action == "erase":
                n = await run_in_threadpool(files.erase, id_slot)
                return JSONResponse({"id_slot": id_slot, "n_erased": n})
            async with self.server._json_body(request) as body:
                name = body.get("filename")
            if action == "save":
                done = await run_in_threadpool(files.save, id_slot, name)
                return JSONResponse({
                    "id_slot": id_slot, "filename": done.filename, "n_saved": done.n_tokens,
                    "n_written": done.n_bytes, "timings": {"save_ms": round(done.ms, 3)},
                })
            done = await run_in_threadpool(files.restore, id_slot, name)
            return JSONResponse({
                "id_slot": id_slot, "filename": done.filename, "n_restored": done.n_tokens,
                "n_read": done.n_bytes, "timings": {"restore_ms": round(done.ms, 3)},
            })
        except ApiError as err:
            return err.response()
        except SlotBusy as err:
            return ApiError(409, str(err), code="slot_busy").response()
        except SlotFileError as err:
            return bad(str(err), err.param).response()
        except OSError as err:
            return ApiError(500, f"The slot file could not be written: {err.strerror}.", type_="server_error").response()
