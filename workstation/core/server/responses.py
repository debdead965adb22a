"""OpenAI's Responses API (``POST /v1/responses``), which newer tools call instead of chat
completions (the ``openai`` library's ``client.responses.create``, agents SDKs, Codex-style
tools). A thin dialect over ``OpenAIServer._handle``, as ``ollama.py`` is: the request is put
into the chat route's words (``ResponsesDialect.translate``) and checked there, so keys, limits,
accounting, tools and reply formats are the chat route's.

Served: ``input`` (a string, or a list of messages with text parts, ``function_call`` and
``function_call_output`` items), ``instructions``, ``max_output_tokens``, ``temperature``,
``top_p``, ``text.format`` (text, json_object, json_schema), function ``tools`` and
``tool_choice``, ``stream`` (the ``response.*`` events, each with its ``event:`` line), and
the chat route's samplers and extensions (``seed``, ``stop``, ``top_k``, ``logit_bias``, ``grammar``,
...). Refused by name: what needs responses kept on the server (``previous_response_id``,
``conversation``, ``background``, stored ``prompt``s), log probabilities, tools other than
functions, images or files in the input, the chat route's names for what this API names
otherwise (``max_tokens``: ``max_output_tokens``, ...), and llama-server's options this server
lacks (``refuse_unsupported``), as on the chat route: none is dropped without a word.
Nothing is stored: every answer says ``store: false``. A past reply's thinking (a ``reasoning``
item) is left out of the prompt, and a reasoning model's thinking is not answered as one.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
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
from workstation.core.server.protocol import (
    ApiError,
    bad,
    failed_response,
    field_names,
    flag,
    json_bytes,
    parse_max_tokens,
)
from workstation.core.server.replies import CUT_BY_SHUTDOWN, created_at
from workstation.core.server.sse import SSEResponse
from workstation.core.server.unsupported import NEVER, OFF, refuse_unknown, refuse_unsupported
from workstation.core.tool_calls import ReplyReader, ToolCall, read_reply

if TYPE_CHECKING:
    from workstation.core.metrics import TurnMetrics
    from workstation.core.server.accounts import Ticket
    from workstation.core.server.app import OpenAIServer
    from workstation.core.server.logprobs import ProbsAsked
    from workstation.core.server.protocol import GenParams
    from workstation.core.slots import Request as SchedRequest
    from workstation.core.tool_calls import ToolPrompt, ToolRequest

# fields that need what this server does not keep or do -> why, and what to send instead
REFUSED = {
    "previous_response_id": "'previous_response_id' is not supported: this server keeps no responses; send the "
                            "whole conversation in 'input'.",
    "conversation": "'conversation' is not supported: this server keeps no conversations; send the whole "
                    "conversation in 'input'.",
    "background": "'background' is not supported by this server; leave it out and wait for the answer.",
    "prompt": "'prompt' (a prompt stored at OpenAI) is not supported by this server; send 'instructions' and "
              "'input' instead.",
    **{name: f"'{name}' is not served on /v1/responses; ask /v1/chat/completions with 'logprobs' for them."
       for name in ("top_logprobs", "logprobs", "n_probs")},
}
# the chat route's names for what /v1/responses asks under its own: refused with the name to send (nothing
# read them here: a max_tokens of 10 let the reply run to the profile's limit, without a word)
CHAT_NAMES = {"messages": "input", "max_tokens": "max_output_tokens", "max_completion_tokens": "max_output_tokens",
              "n_predict": "max_output_tokens", "response_format": "text.format", "json_schema": "text.format"}
ROLES = ("user", "assistant", "system", "developer")  # an input message's
# /v1/responses/{name} routes that are no response's id (they were told "there is none to retrieve")
NOT_SERVED = {"input_tokens": "Counting a request's input tokens (/v1/responses/input_tokens)",
              "compact": "Compacting a conversation (/v1/responses/compact)"}
# the chat route's names for what this API names otherwise, as its errors say them
FIELDS = field_names(
    (r"response_format\.json_schema\b", "text.format"), (r"response_format\b", "text.format"),
    (r"tools\[(\d+)\]\.function\.", r"tools[\1]."), (r"max_tokens\b", "max_output_tokens"),
    # the messages made of 'input' (and 'instructions'): an item's own mistakes are said by _messages, as
    # input[i]; what the chat route says of them all (two replies at the end, a prompt too long) names 'input'
    (r"'messages'", "'input'"), (r"The messages end with", "The input ends with"),
    (r"The messages have", "The input has"), (r"\Amessages\Z", "input"),  # (the last: the error's param)
)
# fields passed to the chat route under the same name (OpenAI's, and the chat route's own samplers)
SAME = ("model", "temperature", "top_p", "tool_choice", "parallel_tool_calls", "user", "seed", "stop", "top_k",
        "min_p", "repeat_penalty", "presence_penalty", "frequency_penalty", "n", "logit_bias", "ignore_eos", "grammar",
        "chat_template_kwargs", "reasoning_budget")
# every field this route knows: OpenAI's (served, taken without effect, or refused with why), the chat route's
# passed on, and llama-server's options (refused unless off); any other is OpenAI's 400 "Unknown parameter"
RESPONSES_FIELDS = frozenset((
    "input", "instructions", "max_output_tokens", "metadata", "include", "max_tool_calls", "prompt_cache_key",
    "prompt_cache_retention", "reasoning", "safety_identifier", "service_tier", "store", "stream",
    "stream_options", "text", "tools", "truncation", *SAME, *REFUSED, *CHAT_NAMES, *OFF, *NEVER, "samplers",
))


def _text_part(part: Any, where: str) -> dict[str, Any]:
    """An input item's content part as a chat text part (input_text, output_text)."""
    kind = part.get("type") if isinstance(part, dict) else None
    if kind in ("input_text", "output_text", "text") and isinstance(part.get("text"), str):
        return {"type": "text", "text": part["text"]}
    if kind in ("input_image", "input_file", "input_audio"):
        raise bad(f"{where} is an {kind[6:]}: this server runs a text model; send text only.", "input")
    if kind == "refusal" and isinstance(part.get("refusal"), str):
        return {"type": "text", "text": part["refusal"]}
    raise bad(f"{where} must be a text part ({{\"type\": \"input_text\", \"text\": ...}}).", "input")


def _messages(raw: Any, instructions: Any) -> list[Any]:
    """``instructions`` and ``input`` as chat messages: a function call joins the assistant
    message before it (or begins one), its output is a tool message."""
    if instructions is not None and not isinstance(instructions, str):
        raise bad("'instructions' must be a string.", "instructions")
    out: list[Any] = [{"role": "system", "content": instructions}] if instructions else []
    if isinstance(raw, str):
        return [*out, {"role": "user", "content": raw}]
    if not isinstance(raw, list) or not raw:
        raise bad("'input' is required: a string, or a non-empty list of messages.", "input")
    for i, item in enumerate(raw):
        where = f"input[{i}]"
        if not isinstance(item, dict):
            raise bad(f"{where} must be an object: a message ({{role, content}}) or a function call item.", "input")
        kind = item.get("type", "message")
        if kind == "message":
            role, content = item.get("role"), item.get("content")
            if role not in ROLES:
                shown = role if isinstance(role, str | int | float | bool) or role is None else type(role).__name__
                raise bad(f"{where}.role is {shown!r}; allowed roles are {', '.join(ROLES)}.", "input")
            if isinstance(content, list):
                content = [_text_part(p, f"{where}.content[{j}]") for j, p in enumerate(content)] or ""
            elif not isinstance(content, str):
                raise bad(f"{where}.content must be a string or a list of text parts.", "input")
            out.append({"role": role, "content": content})
        elif kind == "function_call":
            if not isinstance(item.get("name"), str) or not isinstance(item.get("arguments", "{}"), str) \
                    or not isinstance(item.get("call_id", ""), str):
                raise bad(f"{where} must have the function's 'name', its 'arguments' as JSON text and its "
                          "'call_id' as a string.", "input")
            call = {"id": item.get("call_id", ""), "type": "function",
                    "function": {"name": item.get("name"), "arguments": item.get("arguments", "{}")}}
            if out and out[-1]["role"] == "assistant":  # the same reply's text, or its calls before
                out[-1].setdefault("tool_calls", []).append(call)
            else:
                out.append({"role": "assistant", "content": None, "tool_calls": [call]})
        elif kind == "function_call_output":
            output = item.get("output")
            if isinstance(output, list):
                output = "\n".join(p["text"] for p in (_text_part(p, f"{where}.output") for p in output))
            elif not isinstance(output, str):
                raise bad(f"{where}.output must be the function's result as a string.", "input")
            if not isinstance(item.get("call_id", ""), str):
                raise bad(f"{where}.call_id must be a string: the call_id of the function_call it answers.", "input")
            out.append({"role": "tool", "tool_call_id": item.get("call_id", ""), "content": output})
        elif kind == "reasoning":
            continue  # a past reply's thinking: templates leave it out
        else:
            raise bad(f"{where} is a {str(kind)[:40]!r} item; this server reads messages, function_call and "
                      "function_call_output items.", "input")
    if len(out) == bool(instructions):  # (reasoning items only: it said "'messages' is required")
        raise bad("'input' holds no message: send at least one message or function call item.", "input")
    return out


def _tools(raw: Any) -> list[Any]:
    """Responses' flat function tools as chat tools; any other kind refused by name."""
    if not isinstance(raw, list):
        raise bad("'tools' must be a list of function tools.", "tools")
    out: list[Any] = []
    for i, tool in enumerate(raw):
        kind = tool.get("type") if isinstance(tool, dict) else None
        if kind != "function":
            raise bad(f"tools[{i}] is a {str(kind)[:40]!r} tool; this server runs function tools only (the "
                      "client runs them), no built-in tools.", "tools")
        function = {k: tool[k] for k in ("name", "description", "parameters", "strict") if tool.get(k) is not None}
        out.append({"type": "function", "function": function})
    return out


def _tool_choice(value: Any) -> Any:
    if isinstance(value, dict) and value.get("type") == "function" and "function" not in value:
        return {"type": "function", "function": {"name": value.get("name")}}
    return value


def _format(text: Any) -> dict[str, Any]:
    """``text.format`` as the chat route's ``response_format``."""
    if text is None:
        return {}
    fmt = text.get("format") if isinstance(text, dict) else None
    if fmt is None:
        return {}
    kind = fmt.get("type") if isinstance(fmt, dict) else None
    if kind == "text":
        return {}
    if kind == "json_object":
        return {"response_format": {"type": "json_object"}}
    if kind == "json_schema":
        schema = {k: fmt[k] for k in ("name", "schema", "strict", "description") if k in fmt}
        return {"response_format": {"type": "json_schema", "json_schema": schema}}
    raise bad("'text.format' must be {\"type\": \"text\"}, {\"type\": \"json_object\"} or "
              "{\"type\": \"json_schema\", \"name\", \"schema\"}.", "text")


def _event(kind: str, data: dict[str, Any], seq: list[int]) -> bytes:
    """One server-sent event as OpenAI writes them: its ``event:`` line and ``data`` with the
    same ``type`` and the stream's ``sequence_number``."""
    body = {"type": kind, **data, "sequence_number": seq[0]}
    seq[0] += 1
    return f"event: {kind}\ndata: ".encode() + json_bytes(body) + b"\n\n"


def _message_item(item_id: str, text: str, status: str) -> dict[str, Any]:
    """``status``: in_progress (no content yet), completed, or incomplete (cut at the token limit)."""
    return {"type": "message", "id": item_id, "status": status, "role": "assistant",
            "content": [] if status == "in_progress" else [_text_content(text)]}


def _item_status(m: TurnMetrics) -> str:
    return "incomplete" if m.stop_reason in ("length", "context") else "completed"


def _text_content(text: str) -> dict[str, Any]:
    return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}


def _call_item(call: ToolCall) -> dict[str, Any]:
    """``incomplete``: a call cut by the token limit, its arguments as far as they were written."""
    return {"type": "function_call", "id": "fc_" + call.id.removeprefix("call_"), "call_id": call.id,
            "name": call.name, "arguments": call.arguments, "status": "completed" if call.whole else "incomplete"}


def _usage(m: TurnMetrics) -> dict[str, Any]:
    """As ``protocol.usage``: the prompt's tokens as its text reads (``TurnMetrics.asked_n``)."""
    prompt = m.asked_n
    return {"input_tokens": prompt, "input_tokens_details": {"cached_tokens": m.asked_cached_n},
            "output_tokens": m.predicted_n, "output_tokens_details": {"reasoning_tokens": m.reasoning_n},
            "total_tokens": prompt + m.predicted_n}


class ResponsesDialect:
    """``POST /v1/responses`` as a dialect of ``OpenAIServer._handle``."""

    fields = FIELDS

    def __init__(self, server: OpenAIServer) -> None:
        self.server = server
        self.scheduler = server.scheduler

    async def handle(self, request: Request) -> Response:
        return await self.server._handle(request, chat=True, native=self, route="responses")

    async def kept(self, request: Request) -> Response:
        """``/v1/responses/{id}`` (retrieve, delete, cancel, input_items): nothing is kept here,
        which a bare "There is no route" did not say."""
        rid = request.path_params.get("rid", "").strip("/")
        if rid in NOT_SERVED:  # the openai client's responses.input_tokens.count and responses.compact: no response's id
            return self.server._after_key(request, ApiError(
                501, f"{NOT_SERVED[rid]} is not served by this server; the 'usage' of an answer from "
                     "/v1/responses says how many tokens its input was.", type_="not_supported_error"))
        return self.server._after_key(request, ApiError(
            404, "This server keeps no responses (every answer says store: false), so there is none "
                 "to retrieve, cancel or delete.", code="not_found"))

    # --- the request ---------------------------------------------------------------------------
    def translate(self, body: dict[str, Any], chat: bool) -> tuple[dict[str, Any], bool]:
        refuse_unknown(body, RESPONSES_FIELDS)  # (they were dropped without a word)
        refuse_unsupported(body)  # llama-server's options this server lacks (mirostat, ...), as on the chat route
        for name, why in REFUSED.items():
            if body.get(name):
                raise bad(why, name)
        for name, ours in CHAT_NAMES.items():
            if body.get(name) is not None:
                refused = bad(f"'{name}' is a /v1/chat/completions field; /v1/responses takes '{ours}'.", name)
                refused.worded = True  # (the name the client sent: not renamed as the chat route's errors are)
                raise refused
        include = body.get("include")
        if isinstance(include, list) and "message.output_text.logprobs" in include:
            raise bad(REFUSED["logprobs"].replace("'logprobs'", "'message.output_text.logprobs'", 1), "include")
        out: dict[str, Any] = {k: body[k] for k in SAME if body.get(k) is not None}
        out["stream"] = flag(body, "stream", False)
        if out["stream"]:
            out["stream_options"] = {"include_usage": True}
        out["messages"] = _messages(body.get("input"), body.get("instructions"))
        if (most := parse_max_tokens(body, "max_output_tokens")) is not None:  # (-1 too, as the chat route's)
            out["max_tokens"] = most
        if body.get("tools") is not None:
            out["tools"] = _tools(body["tools"])
        if "tool_choice" in out:
            out["tool_choice"] = _tool_choice(out["tool_choice"])
        out |= _format(body.get("text"))
        # what the answer echoes (the chat route reads no field of this name)
        out["_responses"] = {"instructions": body.get("instructions"), "tools": body.get("tools") or [],
                             "tool_choice": body.get("tool_choice", "auto"), "text": body.get("text"),
                             "metadata": body.get("metadata") or {},
                             "max_output_tokens": body.get("max_output_tokens")}
        return out, True

    def parse(self, body: dict[str, Any], params: GenParams) -> dict[str, Any]:
        """What every answer of this request says of it (``respond``'s ``extra``)."""
        echo = body["_responses"]
        sampling = params.sampling
        return {
            "object": "response", "error": None, "incomplete_details": None,
            "instructions": echo["instructions"], "max_output_tokens": echo["max_output_tokens"],
            "metadata": echo["metadata"], "parallel_tool_calls": flag(body, "parallel_tool_calls", False),
            "previous_response_id": None, "reasoning": {"effort": None, "summary": None}, "store": False,
            "temperature": sampling.temperature, "text": echo["text"] or {"format": {"type": "text"}},
            "tool_choice": echo["tool_choice"], "tools": echo["tools"], "top_p": sampling.top_p,
            "truncation": "disabled", "user": body.get("user"),
        }

    async def prompt_tokens(
        self, body: dict[str, Any], chat: bool, ticket: Ticket, tools: ToolRequest | None
    ) -> tuple[list[int], ToolPrompt | None]:
        return await self.server.request_prompt_tokens(body, chat, ticket, tools)

    # --- the answer ----------------------------------------------------------------------------
    def _response(self, rid: str, created: int, model: str, extra: dict[str, Any], status: str,
                  output: list[dict[str, Any]], m: TurnMetrics | None) -> dict[str, Any]:
        out = {"id": rid, "created_at": created, "model": model, "status": status, "output": output,
               "usage": _usage(m) if m is not None else None, **extra}
        if m is not None and m.stop_reason in ("length", "context"):
            out["status"] = "incomplete"
            out["incomplete_details"] = {"reason": "max_output_tokens"}
        return out

    async def respond(
        self, request: Request, extra: Any, req: SchedRequest, q: asyncio.Queue[SchedulerEvent], params: GenParams,
        model: str, ticket: Ticket, probs: ProbsAsked | None, plan: ToolPrompt | None,
    ) -> Response:

        rid = "resp_" + uuid.uuid4().hex[:24]
        created = created_at(req)  # (whole seconds, OpenAI's type: it was a float)
        reply_format = plan.format if plan is not None else ""
        if params.stream:
            first = await self.server._first_event(request, req, q, ticket)  # a 429 before a 200
            if isinstance(first, Response):
                return first
            return SSEResponse(self._stream(req, q, ticket, rid, created, model, extra, reply_format, first),
                               lambda: self.scheduler.cancel(req))
        event = await self.server._finished_event(request, req, q, ticket)
        if not isinstance(event, TurnFinished):
            return event
        piece = read_reply(reply_format, event.text) if reply_format else None
        text, calls = (piece.content, piece.calls) if piece is not None else (event.text, [])
        status = _item_status(event.metrics)
        output = [_message_item("msg_" + uuid.uuid4().hex[:24], text, status)] if text or not calls else []
        output += [_call_item(c) for c in calls]
        answer = self._response(rid, created, model, extra, "completed", output, event.metrics)
        return JSONResponse({**answer, **self.server._quota_reached(ticket, event)})

    async def _stream(
        self, req: SchedRequest, q: asyncio.Queue[SchedulerEvent], ticket: Ticket, rid: str, created: int,
        model: str, extra: dict[str, Any], reply_format: str, first: SchedulerEvent | None,
    ) -> AsyncIterator[bytes]:
        """``response.created`` and ``in_progress``; the message item (added, its text part, the
        text's deltas, done) once there is text; each function call as an item whole; then
        ``response.completed`` (or ``incomplete``) with the whole response."""

        seq = [0]
        reader = ReplyReader(reply_format) if reply_format else None  # text that may be a call is held
        msg_id = "msg_" + uuid.uuid4().hex[:24]
        text_parts: list[str] = []
        output: list[dict[str, Any]] = []  # items done
        msg_index: int | None = None  # the message item's place among the items, once opened

        def text_out(text: str, opened: bool = False) -> bytes:
            """``opened``: the message item is opened even for no text (an empty reply)."""
            nonlocal msg_index
            if not text and not (opened and msg_index is None):
                return b""
            out = b""
            if msg_index is None:
                msg_index = len(output)
                where = {"item_id": msg_id, "output_index": msg_index, "content_index": 0}
                out += _event("response.output_item.added",
                              {"output_index": msg_index, "item": _message_item(msg_id, "", "in_progress")}, seq)
                out += _event("response.content_part.added", {**where, "part": _text_content("")}, seq)
            if not text:
                return out
            text_parts.append(text)
            return out + _event("response.output_text.delta", {"item_id": msg_id, "output_index": msg_index,
                                                               "content_index": 0, "delta": text, "logprobs": []}, seq)

        def text_done(status: str) -> bytes:
            if msg_index is None:
                return b""
            text = "".join(text_parts)
            where = {"item_id": msg_id, "output_index": msg_index, "content_index": 0}
            item = _message_item(msg_id, text, status)
            output.insert(msg_index, item)
            return (_event("response.output_text.done", {**where, "text": text, "logprobs": []}, seq)
                    + _event("response.content_part.done", {**where, "part": _text_content(text)}, seq)
                    + _event("response.output_item.done", {"output_index": msg_index, "item": item}, seq))

        def calls_out(calls: list[ToolCall]) -> bytes:
            out = b""
            for call in calls:
                item = _call_item(call)
                index = len(output) + (msg_index is not None)
                where = {"item_id": item["id"], "output_index": index}
                out += _event("response.output_item.added",
                              {"output_index": index, "item": {**item, "arguments": "", "status": "in_progress"}},
                              seq)
                out += _event("response.function_call_arguments.delta", {**where, "delta": call.arguments}, seq)
                out += _event("response.function_call_arguments.done",
                              {**where, "name": call.name, "arguments": call.arguments}, seq)
                out += _event("response.output_item.done", {"output_index": index, "item": item}, seq)
                output.append(item)
            return out

        def error(message: str, code: str | None, status: int) -> bytes:
            # OpenAI's error event; its "error" object makes the openai library raise with the message
            body = {"code": code, "message": message, "param": None}
            return _event("error", {**body, "error": {**body, "type": "server_error" if status >= 500
                                                       else "invalid_request_error"}}, seq)

        async def render(event: SchedulerEvent) -> tuple[bytes, bool]:
            if isinstance(event, PromptRead):
                return b"", False
            if isinstance(event, TokenDelta):
                if reader is None:
                    return text_out(event.text), False
                read = reader.push(event.text)
                return text_out(read.content) + calls_out(read.calls), False
            if isinstance(event, TurnFinished):
                self.server._finished(ticket, event)
                if self.server._cut_by_shutdown(event):
                    return error(CUT_BY_SHUTDOWN, "shutting_down", 503), True
                out = b""
                if reader is not None:
                    rest = reader.finish()
                    out += text_out(rest.content) + calls_out(rest.calls)
                if not output:  # an empty reply is an empty message, as when whole
                    out += text_out("", opened=True)
                out += text_done(_item_status(event.metrics))
                answer = self._response(rid, created, model, extra, "completed", output, event.metrics)
                answer |= self.server._quota_reached(ticket, event)
                return out + _event(f"response.{answer['status']}", {"response": answer}, seq), True
            assert isinstance(event, RequestFailed)
            self.server.accounts.finish(ticket, event.status)
            failed = failed_response(event, body_only=True)["error"]
            return error(failed["message"], failed.get("code"), event.status), True

        opening = _event("response.created", {"response": self._response(rid, created, model, extra, "in_progress",
                                                                          [], None)}, seq)
        opening += _event("response.in_progress", {"response": self._response(rid, created, model, extra,
                                                                              "in_progress", [], None)}, seq)
        async for body in self.server._pump(req, q, ticket, render, first, opening):
            yield body

