"""Tool calls: OpenAI function tools rendered into the prompt, and calls read back from the reply.

What a template can do is found the way llama.cpp's chat templates find it (minja's
capability probe, ``common/chat.cpp``): render a few probe conversations and look for the
probe's text in the output. Three reply formats follow from it:

- ``hermes``: the template renders ``tools`` and past ``tool_calls`` and wraps calls in
  ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>`` (Hermes 2 Pro, Qwen 2.5/3, ...);
- ``llama3``: Llama 3.1+ templates: the reply is one JSON object ``{"name", "parameters"}``;
- ``mistral``: Mistral Nemo / Mistral 7B v0.3 templates (``[TOOL_CALLS]``): the reply is
  ``[TOOL_CALLS]`` and a JSON array of ``{"name", "arguments", "id"}``, with ids of 9 letters and
  digits (its template refuses others, so a client's ids are shortened in the history, the same
  way each time);
- ``generic``: every other template (SmolLM2's, the ChatML fallback, ...): llama-server's
  generic format. The system message asks for JSON, the tools are described in it when the
  template cannot render them, past calls and tool results are rendered as JSON text, and the
  reply is held by a grammar to ``{"tool_call": {"name", "arguments"}}`` (``{"tool_calls":
  [...]}`` with parallel calls) or ``{"response": "..."}``.

With ``tool_choice: required`` or a named function a grammar allows only a call (of that
function) whose arguments match the function's ``parameters`` schema; with ``none`` the tools
stay out of the prompt and the reply is text. A request that also asks for a reply format (a
JSON schema, or any JSON object) gets a grammar that allows a call or JSON in that format, as
OpenAI answers the pair (the generic format's ``response`` is then that JSON, not a string).
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from workstation.core.chat_template import ChatTemplate, TemplateError
from workstation.core.structured_output import SchemaError, schema_grammar

GENERIC, HERMES, LLAMA3, MISTRAL = "generic", "hermes", "llama3", "mistral"
MISTRAL_CALLS = "[TOOL_CALLS]"
# what a native format's reply is read by: streamed as text even where the model has them as
# control tokens (llama.cpp's ``preserved_tokens``)
MARKERS = {HERMES: ("<tool_call>", "</tool_call>"), MISTRAL: (MISTRAL_CALLS,)}
_MISTRAL_ID = re.compile(r"[a-zA-Z0-9]{9}")
# llama.cpp's words for the generic format's system message
GENERIC_INSTRUCTION = (
    "Respond in JSON format, either with `{key}` (a request to call tools) or with `response` reply to the "
    "user's request"
)
TOOLS_INTRO = "You can call any of the following tools to satisfy the user's requests: "


# --- what a request asks for ---------------------------------------------------------------------
@dataclass(frozen=True)
class FunctionTool:
    name: str
    parameters: dict[str, Any]
    spec: dict[str, Any]  # the tool as the client sent it ({type: function, function: {...}})


@dataclass(frozen=True)
class ToolRequest:
    """``tools``, ``tool_choice`` (auto | none | required | function) and ``parallel_tool_calls``."""

    tools: tuple[FunctionTool, ...]
    choice: str = "auto"
    function: str | None = None  # the named function when choice == "function"
    parallel: bool = False
    reply_schema: dict[str, Any] | None = None  # the JSON a reply that calls no tool must be (None: text)

    @property
    def active(self) -> bool:
        """Whether the reply may (or must) call a tool."""
        return bool(self.tools) and self.choice != "none"

    @property
    def forced(self) -> bool:
        return self.choice in ("required", "function")

    @property
    def callable(self) -> tuple[FunctionTool, ...]:
        """The tools the reply may call: the named one only when one is named."""
        if self.choice == "function":
            return tuple(t for t in self.tools if t.name == self.function)
        return self.tools


@dataclass
class ToolCall:
    name: str
    arguments: str  # JSON text, as OpenAI sends it
    id: str = field(default_factory=lambda: "call_" + uuid.uuid4().hex[:24])
    # False: cut by the token limit, ``arguments`` the JSON text written so far (OpenAI answers such a
    # call with finish_reason "length"; it is no call to run)
    whole: bool = True

    def as_openai(self) -> dict[str, Any]:
        return {"id": self.id, "type": "function", "function": {"name": self.name, "arguments": self.arguments}}


# --- what a template can do ----------------------------------------------------------------------
@dataclass(frozen=True)
class ToolSupport:
    tools: bool  # renders the ``tools`` it is given
    tool_calls: bool  # renders assistant messages' ``tool_calls``
    object_arguments: bool  # wants a call's arguments as an object, not JSON text
    format: str  # the reply format: hermes | llama3 | mistral | generic
    system_role: bool = True  # renders a system message (else its text joins the first user turn)


_PROBE_TOOL = "probe_tool_e1f7"
_PROBE_ARG = "argument_probe_e1f7"
_PROBE_USER = {"role": "user", "content": "Hello"}


def _probe_spec() -> dict[str, Any]:
    params = {"type": "object", "properties": {"arg": {"type": "string"}}, "required": ["arg"]}
    return {"type": "function", "function": {"name": _PROBE_TOOL, "description": "A tool.", "parameters": params}}


def _probe_call(arguments: Any) -> dict[str, Any]:
    call = {"id": "call_1___", "type": "function", "function": {"name": "probe", "arguments": arguments}}
    return {"role": "assistant", "content": "", "tool_calls": [call]}


def _try_render(template: ChatTemplate, messages: list[dict[str, Any]], **kwargs: Any) -> str:
    try:
        return template.render(messages, **kwargs)
    except TemplateError:
        return ""


def tool_support(template: ChatTemplate) -> ToolSupport:
    """What ``template`` does with tools (computed once per template text)."""
    return _tool_support(template.source, template.bos_token, template.eos_token)


@functools.lru_cache(maxsize=16)
def _tool_support(source: str, bos: str, eos: str) -> ToolSupport:
    template = ChatTemplate(source, bos, eos)
    tools = _PROBE_TOOL in _try_render(template, [_PROBE_USER], tools=[_probe_spec()])
    args = {_PROBE_ARG: "value"}
    needle = re.compile(f"[\"']{_PROBE_ARG}[\"']:")
    as_text = needle.search(_try_render(template, [_PROBE_USER, _probe_call(json.dumps(args))], add_generation_prompt=False))
    as_object = needle.search(_try_render(template, [_PROBE_USER, _probe_call(args)], add_generation_prompt=False))
    calls = bool(as_text or as_object)
    fmt = GENERIC
    if tools and calls:
        if "<tool_call>" in source:
            fmt = HERMES
        elif "<|start_header_id|>" in source and ("<|python_tag|>" in source or '"parameters"' in source):
            fmt = LLAMA3
        elif MISTRAL_CALLS in source:
            fmt = MISTRAL
    system = {"role": "system", "content": _PROBE_TOOL}
    system_role = _PROBE_TOOL in _try_render(template, [system, _PROBE_USER])
    return ToolSupport(tools, calls, bool(as_object and not as_text), fmt, system_role)


# --- grammars ------------------------------------------------------------------------------------
_DEF_REF = re.compile(r"^#/(\$defs|definitions)/")


def _moved_refs(value: Any, prefix: str) -> Any:
    """``value`` with its local ``#/$defs/X`` references pointing at ``#/$defs/{prefix}X``."""
    if isinstance(value, list):
        return [_moved_refs(v, prefix) for v in value]
    if not isinstance(value, dict):
        return value
    out = {k: _moved_refs(v, prefix) for k, v in value.items()}
    if isinstance(out.get("$ref"), str):
        out["$ref"] = _DEF_REF.sub(f"#/$defs/{prefix}", out["$ref"])
    return out


def _calls_schema(
    tools: Sequence[FunctionTool], args_key: str = "arguments", extra: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """One call of any of ``tools``: ``{"name": const, args_key: parameters}`` (and the ``extra``
    properties, required too). The tools' ``$defs`` move to the root (a reference is resolved
    from the schema's root), renamed per tool."""
    calls, defs = [], {}
    for i, tool in enumerate(tools):
        params = _moved_refs(tool.parameters, f"t{i}-")
        for key in ("$defs", "definitions"):
            defs.update({f"t{i}-{name}": d for name, d in (params.pop(key, None) or {}).items()})
        calls.append({
            "type": "object",
            "properties": {"name": {"type": "string", "const": tool.name}, args_key: params, **(extra or {})},
            "required": ["name", args_key, *(extra or {})],
        })
    schema = calls[0] if len(calls) == 1 else {"anyOf": calls}
    return {**schema, "$defs": defs} if defs else schema


def _with_reply(calls: dict[str, Any], reply: dict[str, Any]) -> dict[str, Any]:
    """``{"anyOf": [calls, reply]}`` with the tools' and the reply's ``$defs`` at the root."""
    moved, defs = _reply_defs(reply)
    defs |= calls.pop("$defs", None) or {}
    schema = {"anyOf": [calls, moved]}
    return {**schema, "$defs": defs} if defs else schema


def _reply_defs(reply: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """A reply schema and its ``$defs`` apart, renamed (``r-``) to sit at the root of a schema
    beside the tools' (a reference is resolved from the root)."""
    moved = _moved_refs(reply, "r-")
    defs: dict[str, Any] = {}
    for key in ("$defs", "definitions"):
        defs.update({f"r-{name}": d for name, d in (moved.pop(key, None) or {}).items()})
    return moved, defs


def _call_or_reply(schema: dict[str, Any], call: str) -> str:
    """The grammar of ``schema`` (``_with_reply``'s) with its call (``alternative-0``) written as
    ``call`` writes it: ``call`` is a GBNF expression of ``@CALL@``."""
    body = schema_grammar(schema)
    # (the converter names anyOf's branches so, the reply's for its type where it is a bare one:
    # 'string', 'array'; a change there must not pass silently)
    body, found = re.subn(r"^root ::= alternative-0 \| ([\w-]+)$",
                          lambda m: f"root ::= {call.replace('@CALL@', 'alternative-0')} | {m.group(1)}", body,
                          count=1, flags=re.M)
    if not found:
        raise SchemaError("The tools and the reply format cannot be put in one grammar.")
    return body


def generic_schema(request: ToolRequest) -> dict[str, Any]:
    """llama-server's generic reply schema: a call (or calls) or, unless a call is forced, a
    response (text, or the JSON of ``reply_schema``)."""
    call = _calls_schema(request.callable)
    defs = call.pop("$defs", None)
    if request.parallel:
        calls: dict[str, Any] = {
            "type": "object",
            "properties": {"tool_calls": {"type": "array", "items": call, "minItems": 1}},
            "required": ["tool_calls"],
        }
    else:
        calls = {"type": "object", "properties": {"tool_call": call}, "required": ["tool_call"]}
    schema = calls
    if not request.forced:
        reply, reply_defs = _reply_defs({"type": "string"} if request.reply_schema is None else request.reply_schema)
        response = {"type": "object", "properties": {"response": reply}, "required": ["response"]}
        defs = {**(defs or {}), **reply_defs} or None
        schema = {"anyOf": [calls, response]}
    return {**schema, "$defs": defs} if defs else schema


def _reply_grammar(fmt: str, request: ToolRequest, reply: dict[str, Any]) -> str:
    """The grammar of a reply in a native format that calls a tool or is JSON in ``reply``."""
    if fmt == LLAMA3:
        return schema_grammar(_with_reply(_calls_schema(request.callable, "parameters"), reply))
    if fmt == MISTRAL:
        call = _calls_schema(request.callable, extra={"id": {"type": "string", "pattern": f"^{_MISTRAL_ID.pattern}$"}})
        defs = call.pop("$defs", None)
        array: dict[str, Any] = {"type": "array", "items": call, "minItems": 1}
        if not request.parallel:
            array["maxItems"] = 1
        return _call_or_reply(_with_reply({**array, "$defs": defs} if defs else array, reply),
                              f"{json.dumps(MISTRAL_CALLS)} @CALL@")
    block = '"<tool_call>" "\\n"? @CALL@ "\\n"? "</tool_call>"'
    call = f'{block} ("\\n" {block})*' if request.parallel else block
    return _call_or_reply(_with_reply(_calls_schema(request.callable), reply), f"({call})")


def _native_grammar(fmt: str, request: ToolRequest) -> str:
    """The grammar of a forced call in a native format."""
    if fmt == LLAMA3:
        return schema_grammar(_calls_schema(request.callable, "parameters"))
    if fmt == MISTRAL:  # llama.cpp's Mistral Nemo grammar: the calls as one JSON array
        call = _calls_schema(request.callable, extra={"id": {"type": "string", "pattern": f"^{_MISTRAL_ID.pattern}$"}})
        defs = call.pop("$defs", None)
        array: dict[str, Any] = {"type": "array", "items": call, "minItems": 1}
        if not request.parallel:
            array["maxItems"] = 1
        body = schema_grammar({**array, "$defs": defs} if defs else array)
        body = re.sub(r"^root ::=", "tool-calls ::=", body, count=1, flags=re.M)
        return f"root ::= {json.dumps(MISTRAL_CALLS)} tool-calls\n{body}"
    body = schema_grammar(_calls_schema(request.callable))
    body = re.sub(r"^root ::=", "tool-call-body ::=", body, count=1, flags=re.M)
    block = '"<tool_call>" "\\n"? tool-call-body "\\n"? "</tool_call>"'
    root = f"root ::= {block} (\"\\n\" {block})*" if request.parallel else f"root ::= {block}"
    return f"{root}\n{body}"


# --- the prompt ----------------------------------------------------------------------------------
@dataclass
class ToolPrompt:
    """What to render and how to read the reply."""

    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] | None  # for the template (None: the template gets none)
    grammar: str  # GBNF the reply must match ("" when free)
    format: str  # how to read the reply ("" when it is plain text)
    markers: tuple[str, ...] = ()  # the reply format's markers (to stream as text: ``MARKERS``)


def _add_system(messages: list[dict[str, Any]], text: str, system_role: bool) -> list[dict[str, Any]]:
    """``text`` added to the system message (llama.cpp's ``add_system``), or, when the template
    has no system role, put at the start of the first user message (minja's polyfill)."""
    if system_role:
        if messages and messages[0]["role"] == "system":
            first = messages[0]
            return [{**first, "content": f"{first['content']}\n\n{text}"}, *messages[1:]]
        return [{"role": "system", "content": text}, *messages]
    for i, m in enumerate(messages):
        if m["role"] == "user":
            return [*messages[:i], {**m, "content": f"{text}\n\n{m['content']}"}, *messages[i + 1 :]]
    return [{"role": "user", "content": text}, *messages]


def _arguments_object(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def _generic_calls_text(calls: list[dict[str, Any]], content: str, parallel: bool) -> str:
    """A past assistant turn's calls as the generic format writes them."""
    items = [{"name": c["function"]["name"], "arguments": _arguments_object(c["function"]["arguments"])} for c in calls]
    obj: dict[str, Any] = {"tool_call": items[0]} if len(items) == 1 and not parallel else {"tool_calls": items}
    if content:
        obj["content"] = content
    return json.dumps(obj, indent=2, ensure_ascii=False)


def mistral_id(call_id: str) -> str:
    """A call id as Mistral's templates take it (9 letters and digits): kept when it is one,
    else the same 9 characters of its hash each time (a call and its result stay paired)."""
    if _MISTRAL_ID.fullmatch(call_id):
        return call_id
    return hashlib.sha256(call_id.encode()).hexdigest()[:9]


def _history(messages: Sequence[Mapping[str, Any]], support: ToolSupport, parallel: bool) -> list[dict[str, Any]]:
    """The conversation as this template can take it: past calls and tool results written as
    JSON text when it cannot render them (minja's polyfill), arguments as objects when it wants
    them so, ids as Mistral's templates want them."""
    out: list[dict[str, Any]] = []
    unnamed: list[str] = []  # ids given to past calls that came without one, not yet answered
    for m in messages:
        msg = dict(m)
        if support.format == MISTRAL:
            if msg.get("tool_calls"):
                calls = []
                for c in msg["tool_calls"]:
                    call_id = str(c.get("id") or "")
                    if not call_id:  # a call sent back without its id: its result, in order, gets the same
                        call_id = f"{len(unnamed) + 1:09d}"
                        unnamed.append(call_id)
                    calls.append({**c, "id": mistral_id(call_id)})
                msg["tool_calls"] = calls
            if msg["role"] == "tool":
                result_of = str(msg.get("tool_call_id") or "") or (unnamed.pop(0) if unnamed else "")
                msg["tool_call_id"] = mistral_id(result_of)
        if msg.get("tool_calls"):
            if not support.tool_calls:
                msg["content"] = _generic_calls_text(msg.pop("tool_calls"), msg.get("content") or "", parallel)
            elif support.object_arguments:
                msg["tool_calls"] = [
                    {**c, "function": {**c["function"], "arguments": _arguments_object(c["function"]["arguments"])}}
                    for c in msg["tool_calls"]
                ]
        if msg["role"] == "tool" and not support.tool_calls:
            response: dict[str, Any] = {}
            if msg.get("name"):
                response["tool"] = msg["name"]
            response["content"] = msg.get("content") or ""
            if msg.get("tool_call_id"):
                response["tool_call_id"] = msg["tool_call_id"]
            msg = {"role": "user", "content": json.dumps({"tool_response": response}, indent=2, ensure_ascii=False)}
        out.append(msg)
    return out


def _example(parallel: bool) -> str:
    call = {"name": "tool_name", "arguments": {"arg1": "some_value"}}
    return json.dumps({"tool_calls": [call]} if parallel else {"tool_call": call}, indent=2)


def tool_prompt(template: ChatTemplate, messages: Sequence[Mapping[str, Any]], request: ToolRequest | None) -> ToolPrompt:
    """The messages and tools to render for ``request`` (None: no tools), the grammar for the
    reply and its format. SchemaError (structured_output) when the tools' schemas cannot make
    a grammar together."""
    support = tool_support(template)
    parallel = request.parallel if request is not None else False
    history = _history(messages, support, parallel)
    if request is None or not request.active:
        return ToolPrompt(history, None, "", "")
    specs = [t.spec for t in request.tools]
    if support.format != GENERIC:
        grammar = (_native_grammar(support.format, request) if request.forced
                   else _reply_grammar(support.format, request, request.reply_schema)
                   if request.reply_schema is not None else "")
        return ToolPrompt(history, specs, grammar, support.format, MARKERS.get(support.format, ()))
    system = GENERIC_INSTRUCTION.format(key="tool_calls" if request.parallel else "tool_call")
    if not support.tools:
        system += (
            f"\n\n{TOOLS_INTRO}{json.dumps(specs, indent=2, ensure_ascii=False)}"
            f"\n\nExample tool call syntax:\n\n{_example(request.parallel)}"
        )
    grammar = schema_grammar(generic_schema(request))
    return ToolPrompt(_add_system(history, system, support.system_role), specs if support.tools else None, grammar, GENERIC)


# --- reading the reply ---------------------------------------------------------------------------
def _call_from(obj: Any, args_keys: tuple[str, ...] = ("arguments",), mistral: bool = False) -> ToolCall | None:
    """A call from its JSON object; ``mistral``: with the id the model wrote (9 letters and
    digits; one of that shape is made up when it wrote none), which its template wants back."""
    if not isinstance(obj, dict) or not isinstance(obj.get("name"), str) or not obj["name"]:
        return None
    for key in args_keys:
        if key in obj:
            args = obj[key]
            text = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
            if not mistral:
                return ToolCall(obj["name"], text)
            given = obj.get("id")
            own = given if isinstance(given, str) and _MISTRAL_ID.fullmatch(given) else uuid.uuid4().hex[:9]
            return ToolCall(obj["name"], text, own)
    return None


_CUT_CALL = re.compile(r'\s*\{\s*"name"\s*:\s*("(?:[^"\\]|\\.)*")\s*(?:,\s*"(?:arguments|parameters)"\s*:\s*(.*))?', re.S)


def _cut_calls(text: str, args_keys: tuple[str, ...] = ("arguments",), mistral: bool = False) -> list[ToolCall]:
    """The calls in ``text``, a list's or one call's JSON cut by the token limit: those written
    whole, then the one cut (``whole`` False) once its name is whole; none when no name is.
    ``args_keys`` and ``mistral`` as ``_call_from``'s (a cut Mistral call gets an id of its shape)."""
    calls: list[ToolCall] = []
    decoder, i = json.JSONDecoder(), 0
    while i < len(text):
        i = len(text) - len(text[i:].lstrip(" \t\r\n,"))
        try:
            obj, i = decoder.raw_decode(text, i)
        except ValueError:
            break
        call = _call_from(obj, args_keys, mistral)
        if call is None:
            return []
        calls.append(call)
    head = _CUT_CALL.match(text, i)
    if head is not None:
        name, arguments = _json(head.group(1)), (head.group(2) or "").rstrip()
        if isinstance(name, str) and name:
            made = ToolCall(name, arguments, whole=False)
            if mistral:
                made.id = uuid.uuid4().hex[:9]
            calls.append(made)
    return calls


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None


@dataclass
class ReplyPiece:
    """What a reply reader has for the client now: text, and calls that are complete."""

    content: str = ""
    calls: list[ToolCall] = field(default_factory=list)

    def __iadd__(self, other: ReplyPiece) -> ReplyPiece:
        self.content += other.content
        self.calls += other.calls
        return self


class ReplyReader:
    """Reads a reply as it streams: ``push(text)`` returns what can be sent now (text that
    cannot be part of a call, calls once complete); ``finish()`` the rest. The text of what
    might still become a call is held back."""

    _GENERIC_HEAD = re.compile(r'\s*\{\s*"(response|tool_calls?)"\s*:\s*')
    _OPEN, _CLOSE = "<tool_call>", "</tool_call>"

    def __init__(self, fmt: str) -> None:
        self.format = fmt
        self.buffer = ""  # text not yet sent or read
        self.mode = ""  # generic, llama3: "" undecided | "response" | "text" | "call" | "done"
        self.calls = 0  # calls read so far
        self.sent_text = False  # mistral: text before any call was sent

    def push(self, text: str) -> ReplyPiece:
        self.buffer += text
        return self._read(final=False)

    def finish(self) -> ReplyPiece:
        return self._read(final=True)

    def _read(self, final: bool) -> ReplyPiece:
        if self.format == GENERIC:
            return self._generic(final)
        if self.format == HERMES:
            return self._hermes(final)
        if self.format == LLAMA3:
            return self._llama3(final)
        if self.format == MISTRAL:
            return self._mistral(final)
        return self._plain()

    def _plain(self) -> ReplyPiece:
        text, self.buffer = self.buffer, ""
        return ReplyPiece(text)

    # generic: {"response": "..."} streams its string as it comes; a call is read whole
    def _generic(self, final: bool) -> ReplyPiece:
        if not self.mode:
            head = self._GENERIC_HEAD.match(self.buffer)
            if head and head.group(1) == "response" and self.buffer[head.end() :][:1] == '"':
                self.mode, self.buffer = "response", self.buffer[head.end() + 1 :]
            elif head and head.group(1) != "response":
                self.mode = "call"
            elif not self._could_start_generic():
                self.mode = "text"
        if self.mode == "response":
            return ReplyPiece(self._response_text(final))
        if self.mode == "text":
            return self._plain()
        if self.mode == "done":
            self.buffer = ""  # what follows the response string: its closing brace
            return ReplyPiece()
        if not final:
            return ReplyPiece()
        # a call, or still undecided at the end: read the whole reply
        begun_call = self.mode == "call" or self._could_start_generic()
        self.mode = "done"
        obj = _json(self.buffer)
        if isinstance(obj, dict):
            if isinstance(obj.get("tool_calls"), list) and obj["tool_calls"]:
                calls = [_call_from(c) for c in obj["tool_calls"]]
                if all(c is not None for c in calls):
                    self.buffer = ""
                    return ReplyPiece("", [c for c in calls if c is not None])
            elif (call := _call_from(obj.get("tool_call"))) is not None:
                self.buffer = ""
                return ReplyPiece("", [call])
            elif isinstance(obj.get("response"), str):
                self.buffer = ""
                return ReplyPiece(obj["response"])
            elif "response" in obj:  # JSON in the reply format asked for beside the tools
                self.buffer = ""
                return ReplyPiece(json.dumps(obj["response"], ensure_ascii=False))
        if begun_call:  # a call cut short (max_tokens): the wrapper's JSON is no reply to show ('{ "tool_call'
            head = self._GENERIC_HEAD.match(self.buffer)  # was the content); the calls and the one cut, as OpenAI
            rest = self.buffer[head.end() :].lstrip() if head and head.group(1) != "response" else ""
            self.buffer = ""
            if head is not None and head.group(1) == "tool_calls":
                return ReplyPiece("", _cut_calls(rest[1:]) if rest.startswith("[") else [])
            return ReplyPiece("", _cut_calls(rest)[:1])
        return self._plain()  # not what the grammar allows (cut short): the text as it is

    def _could_start_generic(self) -> bool:
        text = self.buffer.lstrip()
        if not text:
            return True
        if not text.startswith("{"):
            return False
        rest = text[1:].lstrip()
        return any(key.startswith(rest) or rest.startswith(key) for key in ('"response"', '"tool_call'))

    def _response_text(self, final: bool) -> str:
        """The response string decoded as far as it is whole (an escape once it is complete);
        the buffer keeps what is not decoded yet."""
        raw, i, end = self.buffer, 0, len(self.buffer)
        while i < end and raw[i] != '"':
            if raw[i] != "\\":
                i += 1
                continue
            width = 6 if raw[i + 1 : i + 2] == "u" else 2
            if width == 6 and re.fullmatch(r"[dD][89abAB]", raw[i + 2 : i + 4]):
                width = 12  # a high surrogate waits for its low half
            if i + width > end:
                break
            i += width
        closed = i < end and raw[i] == '"'
        text, self.buffer = raw[:i], raw[i + 1 :] if closed else raw[i:]
        if closed or final:
            self.mode = "done"
            if not closed:
                text, self.buffer = raw, ""
        decoded = _json(f'"{text}"')
        return decoded if isinstance(decoded, str) else text

    # hermes: text streams; <tool_call>{...}</tool_call> blocks become calls
    def _hermes(self, final: bool) -> ReplyPiece:
        out = ReplyPiece()
        while True:
            start = self.buffer.find(self._OPEN)
            if start < 0:
                keep = 0 if final else _partial_suffix(self.buffer, self._OPEN)
                out.content += self._hermes_text(self.buffer[: len(self.buffer) - keep])
                self.buffer = self.buffer[len(self.buffer) - keep :]
                return out
            stop = self.buffer.find(self._CLOSE, start)
            if stop < 0 and not final:
                out.content += self._hermes_text(self.buffer[:start])
                self.buffer = self.buffer[start:]
                return out
            out.content += self._hermes_text(self.buffer[:start])
            end = stop if stop >= 0 else len(self.buffer)
            after = end + len(self._CLOSE) if stop >= 0 else end
            written = self.buffer[start + len(self._OPEN) : end].strip()
            call = _call_from(_json(written))
            if call is None and stop < 0:  # cut by the token limit
                call = next(iter(_cut_calls(written)[:1]), None)
            if call is None:  # not a call after all: its text is content
                out.content += self.buffer[start:after]
            else:
                out.calls.append(call)
                self.calls += 1
            self.buffer = self.buffer[after:]

    def _hermes_text(self, text: str) -> str:
        """Text between and after calls is dropped when it is only white space."""
        return "" if self.calls and not text.strip() else text

    # llama3: a reply that opens with "{" may be a call; it is read whole at the end
    def _llama3(self, final: bool) -> ReplyPiece:
        if self.mode == "text":
            return self._plain()
        stripped = self.buffer.lstrip()
        if stripped and not stripped.startswith("{"):
            self.mode = "text"
            return self._plain()
        if not final:
            return ReplyPiece()
        call = _call_from(_json(stripped), ("parameters", "arguments"))
        if call is None:  # cut by the token limit once its name is whole: as far as it was written, as Hermes's
            cut = _cut_calls(stripped, ("parameters", "arguments"))
            call = cut[0] if len(cut) == 1 and not cut[0].whole else None
        if call is not None:
            self.buffer = ""
            return ReplyPiece("", [call])
        return self._plain()


    # mistral: text streams; [TOOL_CALLS] and its JSON calls (an array, or one object) are read
    # whole at the end; white space alone before them is not content
    def _mistral(self, final: bool) -> ReplyPiece:
        if self.mode == "call":
            if not final:
                return ReplyPiece()
            self.mode = "done"
            rest = self.buffer[len(MISTRAL_CALLS) :].lstrip()
            try:
                items, end = json.JSONDecoder().raw_decode(rest)
            except ValueError:  # cut by the token limit: the calls written whole, then the one cut once its
                listed = rest.startswith("[")  # name is whole (as Hermes's); before that, the text as it is
                cut = _cut_calls(rest[1:] if listed else rest, mistral=True)
                if not cut or cut[-1].whole or not listed and len(cut) > 1:
                    return self._plain()
                self.buffer = ""
                return ReplyPiece("", cut)
            items = [items] if isinstance(items, dict) else items
            calls = [_call_from(c, mistral=True) for c in items] if isinstance(items, list) and items else [None]
            if any(c is None for c in calls):
                return self._plain()
            self.buffer = ""
            return ReplyPiece(rest[end:].strip(), [c for c in calls if c is not None])
        start = self.buffer.find(MISTRAL_CALLS)
        if start >= 0:
            before = self.buffer[:start]
            piece = ReplyPiece(before if before.strip() or self.sent_text else "")
            self.buffer, self.mode = self.buffer[start:], "call"
            piece += self._mistral(final)
            return piece
        keep = 0 if final else _partial_suffix(self.buffer, MISTRAL_CALLS)
        if not final and not self.sent_text and not self.buffer[: len(self.buffer) - keep].strip():
            keep = len(self.buffer)  # leading white space: content only if text follows
        text, self.buffer = self.buffer[: len(self.buffer) - keep], self.buffer[len(self.buffer) - keep :]
        self.sent_text = self.sent_text or bool(text)
        return ReplyPiece(text)


def _partial_suffix(text: str, marker: str) -> int:
    """How many characters at the end of ``text`` could begin ``marker``."""
    for n in range(min(len(marker) - 1, len(text)), 0, -1):
        if marker.startswith(text[-n:]):
            return n
    return 0


def read_reply(fmt: str, text: str) -> ReplyPiece:
    """A whole reply's text and calls."""
    reader = ReplyReader(fmt)
    piece = reader.push(text)
    piece += reader.finish()
    return piece
