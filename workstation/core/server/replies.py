"""The answers to generation requests: a request's events waited for and written as one JSON
answer or as a stream (server-sent events), the reply a shutdown cut off, and the accounting
of each request when it ends."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from workstation.core.events import (
    PromptRead,
    RequestFailed,
    SchedulerEvent,
    TokenDelta,
    TurnFinished,
)
from workstation.core.server.accounts import Ticket, cut_reason
from workstation.core.server.guard import CLIENT_GONE
from workstation.core.server.logprobs import ProbsAsked
from workstation.core.server.protocol import (
    FINISH,
    ApiError,
    failed_response,
    prompt_progress,
    sse,
    stopping_note,
    timings,
    usage,
)
from workstation.core.server.sse import watch_disconnect
from workstation.core.server.tool_protocol import call_deltas
from workstation.core.slots import Request as SchedRequest
from workstation.core.token_probs import TokenProb
from workstation.core.tool_calls import ReplyReader, read_reply
from workstation.core.usage import CUT_BY_STOPPING

if TYPE_CHECKING:
    from workstation.core.server.app import OpenAIServer

SHUTTING_DOWN = CUT_BY_STOPPING  # the status recorded for a reply the server's shutdown cut off
CUT_BY_SHUTDOWN = "The server is shutting down, so the reply was cut off; send it again once the server is back."
FINGERPRINT = "workstation"  # OpenAI's system_fingerprint, on every answer and chunk


def created_at(req: SchedRequest) -> int:
    """When the request came (OpenAI's ``created``, every chunk's the same): it was when the
    reply ended, or when a stream began."""
    return int(time.time() - (time.perf_counter() - req.t_request))


def loop_stop(event: TurnFinished) -> dict[str, Any]:
    """What a reply the loop watch cut (core/loops.py) says of it, streamed or not, on every route:
    ``"workstation_stop": "loop"`` (OpenAI's finish_reason has only "stop" for it, Ollama's
    done_reason too) and ``loop_kept``, how many characters of the text are the reply: a stream
    has sent the repeats that showed the loop, which a desk PC leaves out (core/remote.py); a
    reply not streamed comes without them. Its tokens counted are all those generated."""
    if event.metrics.stop_reason != "loop":
        return {}
    return {"workstation_stop": "loop", "loop_kept": len(event.text)}


class Replies:
    """A submitted request's events (``_submit``'s queue) into its answer: waited for whole
    (``_collect``: a chat completion or a completion) or streamed (``_stream_events`` through
    ``_pump``, which the other routes' dialects stream through too), a client that leaves
    cancelling it, and each request accounted for however it ends (``_finished``,
    ``_account_later``). A part of ``OpenAIServer``: ``scheduler``, ``accounts`` and the
    shutdown's ``cutting`` are the server's."""

    def _quota_reached(self: OpenAIServer, ticket: Ticket, event: TurnFinished) -> dict[str, bool | int]:
        """``{"quota_reached": true}`` in the answer of a reply that stopped where the key's
        day ran out, not at max_tokens (OpenAI has no word for it; a desk PC reads it), and
        ``quota_resets_in``: the seconds until the day resets, as a refusal's Retry-After says
        them (a desk PC said "tomorrow" of the one, "at 00:00" of the other)."""
        if not ticket.cut_at_day_limit(event.metrics):
            return {}
        return {"quota_reached": True, "quota_resets_in": self.accounts.resets_in_s()}

    def _cut_by_shutdown(self: OpenAIServer, event: TurnFinished) -> bool:
        return self.cutting and event.metrics.stop_reason == "cancelled"

    @staticmethod
    def _shutdown_error() -> ApiError:
        """What the client of a reply cut by the shutdown is told (503; an error event in a stream)."""
        return ApiError(SHUTTING_DOWN, CUT_BY_SHUTDOWN, type_="server_error", code="shutting_down")

    def _account_later(self: OpenAIServer, ticket: Ticket, q: asyncio.Queue[SchedulerEvent]) -> None:
        """The client left before its answer: account for the request when the scheduler says
        how far it got (the tokens it generated still count)."""

        async def wait() -> None:
            try:
                async with asyncio.timeout(600):
                    while True:
                        event = await q.get()
                        if isinstance(event, TurnFinished):
                            self.accounts.finish(ticket, CLIENT_GONE, event.metrics, event.text)
                            return
                        if isinstance(event, RequestFailed):
                            self.accounts.finish(ticket, event.status)
                            return
            except TimeoutError:
                self.accounts.finish(ticket, CLIENT_GONE)

        task = asyncio.get_running_loop().create_task(wait())
        self._late.add(task)
        task.add_done_callback(self._late.discard)

    def _finished(self: OpenAIServer, ticket: Ticket, event: TurnFinished) -> None:
        cancelled = event.metrics.stop_reason == "cancelled"
        cut = self._cut_by_shutdown(event)
        status = SHUTTING_DOWN if cut else CLIENT_GONE if cancelled else 200
        self.accounts.finish(ticket, status, event.metrics, event.text, reason=cut_reason("server stopping") if cut else "")

    async def _first_event(
        self: OpenAIServer, request: Request, req: SchedRequest, q: asyncio.Queue[SchedulerEvent], ticket: Ticket
    ) -> SchedulerEvent | Response:
        """A stream's first event (its first token, or with ``return_progress`` the first part of
        its prompt read), waited for before its answer starts: a request that fails
        before its first token (the queue gave its place to another's, the server stops) is
        answered with its status, 429 and Retry-After, where a stream said 200 and then an error
        event, which the openai client raises as an APIError with no status, and does not retry."""
        return await self._wait(request, req, q, ticket, whole=False)

    async def _finished_event(
        self: OpenAIServer, request: Request, req: SchedRequest, q: asyncio.Queue[SchedulerEvent], ticket: Ticket
    ) -> TurnFinished | Response:
        """Wait for the request's end and account for it; the TurnFinished, or the error
        response when it failed."""
        event = await self._wait(request, req, q, ticket, whole=True)
        assert isinstance(event, TurnFinished | Response)
        return event

    async def _wait(
        self: OpenAIServer, request: Request, req: SchedRequest, q: asyncio.Queue[SchedulerEvent], ticket: Ticket, *, whole: bool
    ) -> SchedulerEvent | Response:
        """The request's next event (``whole``: its end, accounted for), a client that leaves
        meanwhile cancelling it; a failure, or the server stopping, as the error response."""
        watch = asyncio.create_task(watch_disconnect(request.receive, lambda: self.scheduler.cancel(req)))
        try:
            while True:
                event = await q.get()
                if isinstance(event, RequestFailed):
                    self.accounts.finish(ticket, event.status)
                    return failed_response(event)
                if not whole or isinstance(event, TurnFinished):
                    break
        except asyncio.CancelledError:
            self.scheduler.cancel(req)
            self._account_later(ticket, q)
            raise
        finally:
            watch.cancel()
        if isinstance(event, TurnFinished) and (whole or self._cut_by_shutdown(event)):
            self._finished(ticket, event)  # (a stream's first event otherwise: the stream accounts for it)
            if self._cut_by_shutdown(event):
                return self._shutdown_error().response()
        return event

    async def _collect(
        self: OpenAIServer,
        request: Request,
        req: SchedRequest,
        q: asyncio.Queue[SchedulerEvent],
        rid: str,
        model: str,
        chat: bool,
        ticket: Ticket,
        probs: ProbsAsked | None = None,
        reply_format: str = "",
    ) -> Response:
        event = await self._finished_event(request, req, q, ticket)
        if not isinstance(event, TurnFinished):
            return event
        m = event.metrics
        choice: dict[str, Any] = {"index": 0, "finish_reason": FINISH.get(m.stop_reason, "stop"), "logprobs": None}
        if chat:
            choice["message"] = {"role": "assistant", "content": event.text}
            if event.reasoning:  # llama-server's (and DeepSeek's) field for the thinking
                choice["message"]["reasoning_content"] = event.reasoning
            if reply_format:  # the reply may hold tool calls
                piece = read_reply(reply_format, event.text)
                choice["message"]["content"] = piece.content if piece.content or not piece.calls else None
                if piece.calls:
                    choice["message"]["tool_calls"] = [c.as_openai() for c in piece.calls]
                    if all(c.whole for c in piece.calls):  # (one cut by the token limit: "length", as OpenAI)
                        choice["finish_reason"] = "tool_calls"
        else:
            choice["text"] = event.text
        extra: dict[str, Any] = {}
        if probs is not None:
            probs.add_to(choice, extra, event.probs, self.scheduler.model)
        return JSONResponse(
            {
                "id": rid,
                "object": "chat.completion" if chat else "text_completion",
                "created": created_at(req),
                "model": model,
                "choices": [choice],
                "usage": usage(m),
                "timings": timings(m),
                "system_fingerprint": FINGERPRINT,
                **extra,
                **self._quota_reached(ticket, event),
                **loop_stop(event),
            }
        )

    async def _stream_events(
        self: OpenAIServer,
        req: SchedRequest,
        q: asyncio.Queue[SchedulerEvent],
        rid: str,
        model: str,
        chat: bool,
        include_usage: bool,
        ticket: Ticket,
        probs: ProbsAsked | None = None,
        reply_format: str = "",
        first: SchedulerEvent | None = None,
    ) -> AsyncIterator[bytes]:
        """``first``: the event ``_first_event`` took from ``q``, sent first."""
        created = created_at(req)
        obj = "chat.completion.chunk" if chat else "text_completion"
        sent = 0  # records sent with deltas; the final event's records past these go in the last chunk

        def chunk(
            delta_text: str | None, finish: str | None, role: bool = False, records: list[TokenProb] | None = None,
            thought: str = "",
        ) -> dict[str, Any]:
            choice: dict[str, Any] = {"index": 0, "finish_reason": finish, "logprobs": None}
            if chat:
                delta: dict[str, Any] = {}
                if role:
                    delta["role"] = "assistant"
                    delta["content"] = ""
                if delta_text is not None:
                    delta["content"] = delta_text
                if thought:
                    delta["reasoning_content"] = thought
                choice["delta"] = delta
            else:
                choice["text"] = delta_text or ""
            data: dict[str, Any] = {"id": rid, "object": obj, "created": created, "model": model,
                                    "system_fingerprint": FINGERPRINT, "choices": [choice]}
            if probs is not None and records:
                probs.add_to(choice, data, records, self.scheduler.model)
            if include_usage:
                data["usage"] = None
            return data

        reader = ReplyReader(reply_format) if reply_format else None
        calls_sent = 0
        cut = False  # a call cut by the token limit was sent: the stream ends with its reason ("length")

        def tool_chunks(text: str, final: bool) -> bytes:
            """Text and calls the reader lets out: text that cannot be a call, calls whole."""
            nonlocal calls_sent, cut
            assert reader is not None
            piece = reader.finish() if final else reader.push(text)
            out = sse(chunk(piece.content, None)) if piece.content else b""
            if piece.calls:
                calls = chunk(None, None)
                calls["choices"][0]["delta"]["tool_calls"] = call_deltas(piece.calls, calls_sent)
                calls_sent += len(piece.calls)
                cut = cut or not all(c.whole for c in piece.calls)
                out += sse(calls)
            return out

        async def render(event: SchedulerEvent) -> tuple[bytes, bool]:
            nonlocal sent
            if isinstance(event, PromptRead):  # as llama-server: an empty delta with the progress
                return sse({**chunk(None, None), "prompt_progress": prompt_progress(event)}), False
            if isinstance(event, TokenDelta):
                if reader is not None:  # tool calls: probabilities come with the last chunk
                    thinking = sse(chunk(None, None, thought=event.reasoning)) if event.reasoning else b""
                    return thinking + tool_chunks(event.text, final=False), False
                sent += len(event.probs)
                text = event.text if event.text or not event.reasoning else None
                return sse(chunk(text, None, records=event.probs, thought=event.reasoning)), False
            if isinstance(event, TurnFinished):
                self._finished(ticket, event)
                if self._cut_by_shutdown(event):  # in the words of an error event, as a failure is
                    return sse(self._shutdown_error().body()), True
                m = event.metrics
                held = tool_chunks("", final=True) if reader is not None else b""
                finish = "tool_calls" if calls_sent and not cut else FINISH.get(m.stop_reason, "stop")
                last = chunk(None, finish, records=event.probs[sent:])
                last["timings"] = timings(m)
                last.update(self._quota_reached(ticket, event))
                last.update(loop_stop(event))
                out = held + sse(last)
                if include_usage:  # llama-server's usage chunk carries the timings too
                    out += sse({
                        "id": rid, "object": obj, "created": created, "model": model,
                        "system_fingerprint": FINGERPRINT, "choices": [],
                        "usage": usage(m), "timings": timings(m),
                    })
                return out + b"data: [DONE]\n\n", True
            self.accounts.finish(ticket, event.status)
            return sse(failed_response(event, body_only=True)), True

        opening = sse(chunk(None, None, role=True)) if chat else b""
        async for body in self._pump(req, q, ticket, render, first, opening):
            yield body

    async def _pump(
        self: OpenAIServer,
        req: SchedRequest,
        q: asyncio.Queue[SchedulerEvent],
        ticket: Ticket,
        render: Callable[[SchedulerEvent], Awaitable[tuple[bytes, bool]]],
        first: SchedulerEvent | None = None,
        opening: bytes = b"",
        sse_stream: bool = True,
    ) -> AsyncIterator[bytes]:
        """A stream's bytes, in any route's shape: ``opening``, then each event as ``render``
        writes it (with whether it was the last), what piled up while a slow reader read sent
        in one write; ``first``: the event ``_first_event`` took from ``q``. However the stream
        ends, the request is cancelled (a no-op when it finished: a client gone frees its slot)
        and accounted for. An SSE stream (``sse_stream``; Ollama's lines are not) says once,
        with its next bytes, that the server has begun to stop (``stopping_note``): its reader
        saw the reply go on for the grace, then cut, without a word."""
        said_stopping = not sse_stream
        try:
            if opening:
                yield opening
            done = False
            while not done:
                event = first if first is not None else await q.get()
                body, done = await render(event)
                first = None
                while not done and not q.empty():  # a slow reader gets what piled up in one write
                    event = q.get_nowait()
                    more, done = await render(event)
                    body += more
                # the reply's whole end in this write: not said to be cut off (a reply cut by the
                # stop itself, with no grace, ends in this write too: said, before its error)
                whole = done and isinstance(event, TurnFinished) and not self._cut_by_shutdown(event)
                if body:  # (a reply that may be a tool call is held back)
                    if self.stopping and not said_stopping and not whole:
                        said_stopping = True
                        body = stopping_note(self.cut_at - time.monotonic()) + body
                    yield body
        finally:
            self.scheduler.cancel(req)  # no-op when it finished; frees the slot otherwise
            if not ticket.done:
                self._account_later(ticket, q)
