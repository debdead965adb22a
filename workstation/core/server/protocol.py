"""The wire format: request bodies parsed into typed parameters, the OpenAI error object, and
the pieces of a response (``usage``, llama-server's ``timings``, server-sent events).

Everything a client sends is checked here before anything is tokenized or submitted: a body
that is not JSON, nests too deeply, holds a lone UTF-16 surrogate anywhere, has too many
messages or a field of the wrong type gets a 400 with one sentence, never an exception.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from starlette.responses import JSONResponse

from workstation.core.events import SERVER_STOPPING, PromptRead, RequestFailed
from workstation.core.metrics import TurnMetrics
from workstation.core.profile_check import (
    MAX_PREDICT,
    MAX_REPEAT_PENALTY,
    MAX_STOPS,
    MAX_TOP_K,
    MIN_REPEAT_PENALTY,
)
from workstation.core.profiles import Constraints, Sampling

if TYPE_CHECKING:
    from workstation.core.server.structured import OutputFormat

ROLES = ("system", "developer", "user", "assistant", "tool")
FINISH = {"eos": "stop", "stop": "stop", "length": "length", "context": "length", "cancelled": "stop"}


class ApiError(Exception):
    """An error answered as OpenAI-style JSON: ``{"error": {"message", "type", "param", "code"}}``;
    ``fields``: more of what it means, machine-readable, beside them (a desk PC says the error in
    its own language from the code and these; OpenAI's clients read the four and keep the rest)."""

    def __init__(
        self,
        status: int,
        message: str,
        type_: str = "invalid_request_error",
        param: str | None = None,
        code: str | None = None,
        headers: dict[str, str] | None = None,
        fields: dict[str, Any] | None = None,
        reason: str = "",
    ) -> None:
        super().__init__(message)
        self.status = status
        # why, in a few words, for the server's log line ("day limit", "wrong key"): set where the
        # refusal is decided (a 429 is also "held by running requests"), never read off the status
        self.reason = reason
        self.message = message
        self.type = type_
        self.param = param
        self.code = code
        self.headers = headers or {}
        self.fields = fields or {}
        self.worded = False  # said in a dialect's own words already (``in_words`` leaves it)
        if status == 501:  # what this server never does: the openai library retried it twice (as any 5xx)
            self.headers.setdefault("x-should-retry", "false")

    def body(self) -> dict[str, Any]:
        return {"error": {"message": self.message, "type": self.type, "param": self.param, "code": self.code,
                          **self.fields}}

    def response(self) -> JSONResponse:
        return JSONResponse(self.body(), status_code=self.status, headers=self.headers)

    def in_words(self, fields: FieldNames) -> ApiError:
        """This error, reworded in place, as a dialect (Ollama's routes, the Responses API) says it: each of the chat
        route's field names that ``fields`` renames, in the message and ``param``, so a client
        is told the fields it sent ('format', 'text.format'), not ones it never saw."""
        if not fields or self.worded:
            return self
        message, param = self.message, self.param
        for pattern, name in fields:
            message = pattern.sub(name, message)
            param = pattern.sub(name, param) if param is not None else None
        self.message, self.param, self.args = message, param, (message,)  # (each error is raised once)
        return self


# a dialect's names for the chat route's fields: (pattern of the chat route's name, the dialect's)
FieldNames = tuple[tuple[re.Pattern[str], str], ...]


def field_names(*pairs: tuple[str, str]) -> FieldNames:
    """``(regex, replacement)`` pairs as ``FieldNames``; a regex matches where no name it would
    end (``x.response_format``, ``my_json_schema``) comes before it."""
    return tuple((re.compile(rf"(?<![\w.]){pattern}"), name) for pattern, name in pairs)


def bad(message: str, param: str | None = None) -> ApiError:
    return ApiError(400, message, param=param)


def busy(message: str) -> ApiError:
    """503 for a limit that frees itself soon; the client may retry after a second."""
    return ApiError(
        503, message, type_="server_error", code="server_busy", headers={"Retry-After": "1", "Connection": "close"}
    )


# --- the body as a whole -------------------------------------------------------------------------
# A lone surrogate can only arrive as a \uD800-\uDFFF escape (UTF-8 cannot encode one), so a body
# without such an escape needs no walk.
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


def decode_body(data: bytes) -> dict[str, Any]:
    """The JSON object in ``data``; ApiError(400) when it is not one, or holds text that is not
    valid Unicode (a lone surrogate would fail later, when the text is tokenized or echoed)."""
    try:
        body = json.loads(data)
    except RecursionError:
        raise bad("The request body nests JSON more deeply than this server reads.") from None
    except (ValueError, UnicodeDecodeError):
        raise bad("The request body is not valid JSON.") from None
    if not isinstance(body, dict):
        raise bad("The request body must be a JSON object.")
    if _SURROGATE_ESCAPE.search(data):
        where = lone_surrogate_path(body)
        if where is not None:
            raise bad(
                f"{where} holds a lone UTF-16 surrogate (an unpaired \\ud800-\\udfff escape); "
                "text must be valid Unicode.",
                None if " " in where else where.split("[", 1)[0].split(".", 1)[0],
            )
    return body


def _is_unicode(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def lone_surrogate_path(value: Any) -> str | None:
    """Where in ``value`` (parsed JSON) a string or key holds a lone surrogate, as
    ``messages[2].content``; None when nowhere. Iterative, so any depth is safe."""
    stack: list[tuple[Any, str]] = [(value, "")]
    while stack:
        item, path = stack.pop()
        if isinstance(item, str):
            if not _is_unicode(item):
                return path or "the body"
        elif isinstance(item, dict):
            for key, sub in item.items():
                if not _is_unicode(key):
                    return f"{path}.<key>" if path else "a key"
                stack.append((sub, f"{path}.{key}" if path else key))
        elif isinstance(item, list):
            stack.extend((sub, f"{path}[{i}]") for i, sub in enumerate(item) if isinstance(sub, str | list | dict))
    return None


# --- generation parameters -----------------------------------------------------------------------
@dataclass
class GenParams:
    sampling: Sampling
    max_tokens: int | None
    stop: list[str] | None  # None: the request has no ``stop`` field (the profile's apply)
    ignore_eos: bool
    stream: bool
    include_usage: bool
    output: OutputFormat | None = None  # response_format, json_schema, grammar (server/structured.py)
    id_slot: int = -1  # llama-server's: the slot to run in (-1: any free one)
    # logit bias and n_probs (server/logprobs.py); the grammar comes from ``output``
    constraints: Constraints = field(default_factory=Constraints)
    # a chat reply's thinking goes in ``reasoning_content`` (llama-server's reasoning_format
    # "auto"/"deepseek"); False ("none"): it stays in the content, tags and all
    reasoning: bool = True
    # ``conversation_tag`` (ours): whose conversation the prompt is, so its saved KV cells are
    # deleted with it (the TUI's chat through the server it started with Ctrl+G)
    tag: str | None = None
    # llama-server's cache_prompt: false reads the whole prompt again (a temperature-0 reply
    # then does not depend on what the server answered before: a reused prefix's cells were
    # computed in other batches, whose rounding can tip a close choice)
    cache_prompt: bool = True
    # llama-server's return_progress: a stream says how far the prompt has been read
    # (``prompt_progress`` chunks) before the first token
    return_progress: bool = False

    def all_constraints(self) -> Constraints:
        """What the request asks beyond sampling: the output format's grammar with the logit
        bias and probabilities asked for."""
        if self.output is None:
            return self.constraints
        shape = self.output.constraints()
        return dataclasses.replace(self.constraints, grammar=shape.grammar, json_schema=shape.json_schema)


def _number(body: dict[str, Any], name: str, lo: float, hi: float) -> float | None:
    value = body.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise bad(f"'{name}' must be a number.", name)
    if not lo <= value <= hi:  # also refuses NaN
        raise bad(f"'{name}' is {value}; allowed values are {lo:g} to {hi:g}.", name)
    return float(value)


def parse_integer(body: dict[str, Any], name: str, lo: int, hi: int) -> int | None:
    """The whole number ``body[name]`` from ``lo`` to ``hi`` (None: not given); a 400 otherwise."""
    value = body.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise bad(f"'{name}' must be a whole number.", name)
    if not lo <= value <= hi:
        raise bad(f"'{name}' is {value}; allowed values are {lo} to {hi}.", name)
    return value


def flag(body: dict[str, Any], name: str, default: bool) -> bool:
    value = body.get(name)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise bad(f"'{name}' must be true or false.", name)
    return value


def parse_model(body: dict[str, Any], default: str, names: Iterable[str] = ()) -> str:
    """The model the reply says answered: the one the client named when it is the server's id
    or one of its ``names`` (aliases), else the server's own id. Another name (a tool's
    hard-wired gpt-4) is answered, as llama-server does, but the reply no longer claims that
    model answered it."""
    model = body.get("model")
    if model is None or model == "":
        return default
    if not isinstance(model, str):
        raise bad("'model' must be a string.", "model")
    return model if model == default or model in names else default


def parse_max_tokens(body: dict[str, Any], name: str) -> int | None:
    """A reply's longest length: 1 to ``MAX_PREDICT``, or -1 until the slot is full (the room
    left caps every request), as llama-server takes it and LM Studio's examples send it (a
    client made for those had a 400 for every request); /v1/responses' ``max_output_tokens``
    too (it refused the -1 the chat route took)."""
    if type(body.get(name)) is int and body[name] == -1:  # (-1.0 is no whole number, as 5.0 is not)
        return MAX_PREDICT
    try:
        return parse_integer(body, name, 1, MAX_PREDICT)
    except ApiError as err:
        raise bad(f"{err.message[:-1]}, or -1 for as long as the context allows.", name) from None


def parse_params(body: dict[str, Any], default: Sampling) -> GenParams:
    s = dataclasses.replace(default)
    if (v := _number(body, "temperature", 0.0, 5.0)) is not None:
        s.temperature = v
    if (v := _number(body, "top_p", 0.0, 1.0)) is not None:
        s.top_p = v if v > 0 else 1e-6
    if (v := _number(body, "min_p", 0.0, 1.0)) is not None:
        s.min_p = v
    if (k := parse_integer(body, "top_k", 0, MAX_TOP_K)) is not None:
        s.top_k = k
    if (v := _number(body, "repeat_penalty", MIN_REPEAT_PENALTY, MAX_REPEAT_PENALTY)) is not None:
        s.repeat_penalty = v
    for name in ("frequency_penalty", "presence_penalty"):
        if (v := _number(body, name, -2.0, 2.0)) is not None:
            setattr(s, name, v)
    user = body.get("user")  # OpenAI's end-user id: a string, as OpenAI refuses anything else (not used here)
    if user is not None and not isinstance(user, str):
        raise bad("'user' must be a string.", "user")
    seed = body.get("seed")
    if seed is not None:
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise bad("'seed' must be a whole number.", "seed")
        s.seed = seed & 0xFFFFFFFF
    max_tokens = parse_max_tokens(body, "max_completion_tokens")
    if max_tokens is None:
        max_tokens = parse_max_tokens(body, "max_tokens")
    # llama-server's own name wins over max_tokens, on every endpoint (a chat completion ignored
    # it); -1: until the slot is full (the room left caps every request), 0 on /completion: the
    # prompt into the cache alone (native.parse), elsewhere a 400 (OpenAIServer._handle)
    n_predict = parse_integer(body, "n_predict", -1, MAX_PREDICT)
    if n_predict is not None:
        max_tokens = MAX_PREDICT if n_predict == -1 else max(1, n_predict)
    n = body.get("n")
    if n is not None and (isinstance(n, bool) or n != 1):  # (n=0 said "1 to 128", n=2 "only n=1")
        raise bad("Only n=1 is supported; send several requests instead.", "n")
    stop = body.get("stop")
    stops: list[str] | None
    if "stop" not in body:
        stops = None
    elif stop is None:  # null: no stop texts, as OpenAI reads it (the profile's are replaced too)
        stops = []
    elif isinstance(stop, str):
        stops = [stop]
    elif isinstance(stop, list) and all(isinstance(x, str) for x in stop) and len(stop) <= MAX_STOPS:
        stops = list(stop)
    else:
        raise bad(f"'stop' must be a string or a list of up to {MAX_STOPS} strings.", "stop")
    ignore_eos = flag(body, "ignore_eos", False)
    # ours: the loop watch (core/loops.py) on or off for this request; a chat reply's default is the
    # profile's ``sampling.stop_on_loop``, a text continued's is off (``OpenAIServer._handle``)
    s.stop_on_loop = flag(body, "stop_on_loop", s.stop_on_loop)
    stream = flag(body, "stream", False)
    opts = body.get("stream_options") or {}
    if not isinstance(opts, dict):
        raise bad("'stream_options' must be an object.", "stream_options")
    include_usage = flag(opts, "include_usage", False) if opts else False
    id_slot = parse_integer(body, "id_slot", -1, 63)
    reasoning = body.get("reasoning_format") or "auto"
    if reasoning not in REASONING_FORMATS:
        raise bad(
            f"'reasoning_format' is {json.dumps(reasoning)}; this server takes "
            + ", ".join(f"'{f}'" for f in REASONING_FORMATS) + ".",
            "reasoning_format",
        )
    return GenParams(s, max_tokens, stops, ignore_eos, stream, include_usage, _output_format(body),
                     id_slot=-1 if id_slot is None else id_slot, reasoning=reasoning != "none",
                     tag=parse_tag(body), cache_prompt=flag(body, "cache_prompt", True),
                     return_progress=flag(body, "return_progress", False))


MAX_TAG_CHARS = 8192  # a tag holds the conversation database's path


def parse_tag(body: dict[str, Any], name: str = "conversation_tag", required: bool = False) -> str | None:
    """A conversation's tag for its saved cells: a string without control characters (it
    holds a path, which may hold any other character)."""
    value = body.get(name)
    if value is None and not required:
        return None
    if (not isinstance(value, str) or not value or len(value) > MAX_TAG_CHARS
            or any(unicodedata.category(c) == "Cc" for c in value)):
        raise bad(f"'{name}' must be a string of 1 to {MAX_TAG_CHARS} characters, none of them control characters.", name)
    return value


# llama-server's names: "auto" and "deepseek" put the thinking in reasoning_content, "none"
# leaves it in the content
REASONING_FORMATS = ("auto", "deepseek", "none")
MAX_TEMPLATE_VARIABLES = 16


def parse_template_variables(body: dict[str, Any]) -> dict[str, Any]:
    """A request's own chat template inputs: ``chat_template_kwargs`` (names to true/false,
    numbers or short text; Qwen3's ``enable_thinking``), and llama-server's ``reasoning_budget``
    (-1: no limit; 0: no thinking, which is ``enable_thinking: false``)."""
    from workstation.core.chat_template import RESERVED_VARIABLES

    raw = body.get("chat_template_kwargs")
    out: dict[str, Any] = {}
    if raw is not None:
        if not isinstance(raw, dict) or len(raw) > MAX_TEMPLATE_VARIABLES:
            raise bad(
                f"'chat_template_kwargs' must be an object of at most {MAX_TEMPLATE_VARIABLES} names.",
                "chat_template_kwargs",
            )
        for name, value in raw.items():
            if not name.isidentifier() or name in RESERVED_VARIABLES:
                raise bad(f"'chat_template_kwargs' cannot set {json.dumps(name)[:60]}.", "chat_template_kwargs")
            if not isinstance(value, bool | int | float | str) or isinstance(value, str) and len(value) > 200:
                raise bad(
                    f"'chat_template_kwargs.{name}' must be true, false, a number or a short text.",
                    "chat_template_kwargs",
                )
            out[name] = value
    budget = body.get("reasoning_budget")
    if budget is not None:
        if budget not in (-1, 0) or isinstance(budget, bool):
            raise bad(
                f"'reasoning_budget' is {json.dumps(budget)[:60]}; this server takes -1 (no limit) or 0 (no thinking).",
                "reasoning_budget",
            )
        if budget == 0:
            out["enable_thinking"] = False
    return out


def _output_format(body: dict[str, Any]) -> OutputFormat:
    # imported here: it builds on ApiError above
    from workstation.core.server.structured import parse_output_format

    return parse_output_format(body)


# --- prompts -------------------------------------------------------------------------------------
def _content_text(content: Any, i: int, parts_left: list[int]) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts_left[0] -= len(content)
        if parts_left[0] < 0:
            raise bad("The messages have more content parts than this server accepts.", "messages")
        if not content:
            raise bad(f"messages[{i}].content is an empty list; give it the message's text.", "messages")
        texts = []
        for j, part in enumerate(content):
            if isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str):
                texts.append(part["text"])
            elif isinstance(part, dict) and part.get("type") == "text":  # (it was "cannot read (only text)")
                raise bad(f"messages[{i}].content[{j}] is a text part without its 'text' (a string).", "messages")
            else:
                raise bad(f"messages[{i}].content has a part this server cannot read (only text).", "messages")
        return "\n".join(texts)  # as llama-server joins text parts
    raise bad(f"messages[{i}].content must be a string or a list of text parts.", "messages")


def parse_messages(body: dict[str, Any], max_messages: int) -> list[dict[str, Any]]:
    """The chat turns as {role, content} with text content (and their tool fields, see
    ``tool_protocol.parse_tool_fields``); at most ``max_messages`` messages and as many text
    parts in all; no two assistant messages at the end (llama-server's rule: one trailing
    assistant message is a reply to continue)."""
    from workstation.core.server.tool_protocol import parse_tool_fields

    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise bad("'messages' is required: a non-empty list of {role, content} objects.", "messages")
    if len(messages) > max_messages:
        raise bad(
            f"'messages' has {len(messages)} messages; this server accepts at most {max_messages}.", "messages"
        )
    parts_left = [max_messages]
    out = []
    for i, m in enumerate(messages):
        if not isinstance(m, dict):
            raise bad(f"messages[{i}] must be an object with 'role' and 'content'.", "messages")
        role = m.get("role")
        if role not in ROLES:
            shown = role if isinstance(role, str | int | float | bool) or role is None else type(role).__name__
            raise bad(f"messages[{i}].role is {shown!r}; allowed roles are {', '.join(ROLES)}.", "messages")
        if m.get("content") is None and role != "assistant":  # only a reply may be all tool calls
            raise bad(f"messages[{i}].content is required: the text of the {role} message.", "messages")
        text = "" if role == "assistant" and m.get("content") == [] else _content_text(m.get("content"), i, parts_left)
        out.append({"role": "system" if role == "developer" else role, "content": text, **parse_tool_fields(m, i)})
    if len(out) >= 2 and out[-1]["role"] == out[-2]["role"] == "assistant":
        raise bad("The messages end with two assistant messages; at most one may come last.", "messages")
    _check_continuation(body, out[-1]["role"] == "assistant")
    return out


def _check_continuation(body: dict[str, Any], ends_with_reply: bool) -> None:
    """vLLM's and llama-server's ``continue_final_message`` and ``add_generation_prompt``: here
    a last assistant message is always the start of the reply to go on from, and otherwise the
    assistant's turn is opened, so the fields may only say so (they were dropped unread:
    ``false`` beside a last reply was continued anyway). vLLM's way to go on from a reply,
    ``continue_final_message: true`` with ``add_generation_prompt: false``, is this one."""
    opened = body.get("add_generation_prompt")
    if opened is not None:
        if not isinstance(opened, bool):
            raise bad("'add_generation_prompt' must be true or false.", "add_generation_prompt")
        if not opened and not ends_with_reply:
            raise bad("'add_generation_prompt' false (the prompt without the assistant's turn) is not supported by "
                      "this server; leave it out, or end the messages with the assistant's reply to go on from.",
                      "add_generation_prompt")
    value = body.get("continue_final_message")
    if value is None:
        return
    if not isinstance(value, bool):
        raise bad("'continue_final_message' must be true or false.", "continue_final_message")
    if value and not ends_with_reply:
        raise bad("'continue_final_message' is true but the last message is not the assistant's reply to go on "
                  "from.", "continue_final_message")
    if not value and ends_with_reply:
        raise bad("This server goes on from a last assistant message (its reply so far); 'continue_final_message' "
                  "false is not supported: leave it out, or end the messages with another role.",
                  "continue_final_message")


def parse_token_ids(value: Any, name: str, n_vocab: int) -> list[int]:
    """A list of token ids, each in 0..n_vocab-1."""
    if not isinstance(value, list) or not all(isinstance(t, int) and not isinstance(t, bool) for t in value):
        raise bad(f"'{name}' must be a list of token ids (whole numbers).", name)
    if any(not 0 <= t < n_vocab for t in value):
        raise bad(f"'{name}' has a token id outside 0..{n_vocab - 1}.", name)
    return list(value)


def parse_prompt(body: dict[str, Any], n_vocab: int) -> str | list[int]:
    prompt = body.get("prompt")
    if isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], str | list):
        prompt = prompt[0]
    if isinstance(prompt, str):
        if not prompt:
            raise bad("'prompt' is empty.", "prompt")
        return prompt
    if isinstance(prompt, list) and prompt and all(isinstance(t, int) and not isinstance(t, bool) for t in prompt):
        return parse_token_ids(prompt, "prompt", n_vocab)
    raise bad("'prompt' is required: a string (or a list of token ids); one prompt per request.", "prompt")


def parse_text(body: dict[str, Any], name: str) -> str:
    value = body.get(name)
    if not isinstance(value, str):
        raise bad(f"'{name}' is required: a string.", name)
    return value


# --- response pieces -----------------------------------------------------------------------------
def timings(m: TurnMetrics) -> dict[str, Any]:
    return {
        "cache_n": m.cache_n,
        "restored_n": m.restored_n,  # of cache_n: read back from the prompt cache on disk
        "prompt_n": m.prompt_n,
        "prompt_ms": round(m.prompt_ms, 3),
        "prompt_per_token_ms": round(m.prompt_ms / m.prompt_n, 3) if m.prompt_n else 0.0,
        "prompt_per_second": round(m.prompt_per_second, 3),
        "predicted_n": m.predicted_n,
        "predicted_ms": round(m.predicted_ms, 3),
        "predicted_per_token_ms": round(m.predicted_per_token_ms, 3),
        "predicted_per_second": round(m.predicted_per_second, 3),
        "ttft_ms": round(m.ttft_ms, 3),
        # speculative decoding (llama-server's names): tokens drafted and accepted for this reply
        "draft_n": m.draft_n,
        "draft_n_accepted": m.draft_n_accepted,
    }


def prompt_progress(event: PromptRead) -> dict[str, Any]:
    """llama-server's ``prompt_progress``: the prompt's tokens, those reused from the cache, those
    in the cells now (the cached included) and the milliseconds since the reading began."""
    return {"total": event.total, "cache": event.cached, "processed": event.read, "time_ms": round(event.ms, 3)}


def usage(m: TurnMetrics) -> dict[str, Any]:
    """OpenAI's usage of a reply: its prompt's tokens as its text reads (``aligned_n`` out: a
    prompt that took a kept reply's tokens as generated counted 276 of a reply its text reads as 151)."""
    prompt = m.asked_n
    return {
        "prompt_tokens": prompt,
        "completion_tokens": m.predicted_n,
        "total_tokens": prompt + m.predicted_n,
        "prompt_tokens_details": {"cached_tokens": m.asked_cached_n},
        "completion_tokens_details": {"reasoning_tokens": m.reasoning_n},
    }


def json_bytes(data: Any) -> bytes:
    """``data`` as JSON in UTF-8, compact, as OpenAI, llama-server and Ollama (Go) write it and
    Starlette's JSONResponse does: a stream's events and Ollama's lines had a space after each
    ':' and ',' (Python's default)."""
    return json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def sse(data: Any) -> bytes:
    return b"data: " + json_bytes(data) + b"\n\n"


def stopping_note(left_s: float) -> bytes:
    """What a stream being written says once the server begins to stop: an SSE comment line,
    which SSE clients skip (the openai library's reader, browsers' EventSource; a chunk with no
    ``choices`` broke a client's ``chunk.choices[0]``), and a desk PC reads (``SERVER_STOPPING``).
    ``left_s``: the seconds left of the stop's grace, in whole seconds up ("within 0 s" was said
    of a server stopped with no grace, and of one whose grace was over: "now")."""
    when = f"within {math.ceil(left_s)} s" if left_s > 0 else "now"
    return f": {SERVER_STOPPING}: the server is stopping; this reply may be cut off {when}\n\n".encode()


def queue_full(message: str, retry_after_s: int) -> ApiError:
    return ApiError(429, message, type_="rate_limit_error", code="server_busy",
                    headers={"Retry-After": str(max(1, retry_after_s))})


def failed_response(event: RequestFailed, body_only: bool = False) -> Any:
    """The error for a request the scheduler gave up on: 429 with Retry-After, as for a full
    queue, when it gave its queue place to another person's request; 400 when the request's own
    settings left nothing to generate (a grammar that its logit bias makes impossible); else 500."""
    if event.status == 429:
        error = queue_full(event.message, event.retry_after_s)
    elif event.status < 500:
        error = ApiError(event.status, event.message, param=event.param)
    else:
        error = ApiError(event.status, event.message, type_="server_error")
    return error.body() if body_only else error.response()
