"""The wire side of tool calls: ``tools``, ``tool_choice`` and ``parallel_tool_calls`` checked
into a ``ToolRequest``; the tool fields of messages (an assistant's ``tool_calls``, a tool
result's ``tool_call_id``); and calls written back as OpenAI writes them, whole or as stream
deltas. What the tools do to the prompt and how calls are read is ``core/tool_calls.py``.
"""

from __future__ import annotations

import json
import re
from typing import Any

from workstation.core.server.protocol import bad, flag
from workstation.core.server.structured import OutputFormat
from workstation.core.structured_output import SchemaError, refuse_unbound, schema_grammar
from workstation.core.tool_calls import FunctionTool, ToolCall, ToolRequest

MAX_TOOLS = 128  # OpenAI's limit
_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
_CHOICES = ("auto", "none", "required")


def _tool(item: Any, i: int) -> FunctionTool:
    where = f"tools[{i}]"
    if not isinstance(item, dict) or item.get("type") != "function" or not isinstance(item.get("function"), dict):
        raise bad(f"{where} must be {{\"type\": \"function\", \"function\": {{name, description, parameters}}}}.", "tools")
    function = item["function"]
    name = function.get("name")
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise bad(f"{where}.function.name must be 1 to 64 letters, digits, '_' or '-'.", "tools")
    description = function.get("description")
    if description is not None and not isinstance(description, str):
        raise bad(f"{where}.function.description must be a string.", "tools")
    params = function.get("parameters", {"type": "object", "properties": {}})
    if not isinstance(params, dict) or params.get("type", "object") != "object":
        raise bad(f"{where}.function.parameters must be a JSON schema of type 'object'.", "tools")
    strict = function.get("strict")
    if strict is not None and not isinstance(strict, bool):
        raise bad(f"{where}.function.strict must be true or false.", "tools")
    try:
        schema_grammar(params)
        if strict:
            refuse_unbound(params)
    except SchemaError as err:
        raise bad(f"{where}.function.parameters: {err}", "tools") from None
    spec = {"type": "function", "function": {**function, "parameters": params}}
    return FunctionTool(name, params, spec)


def _choice(value: Any, names: list[str]) -> tuple[str, str | None]:
    if value is None:
        return ("auto", None) if names else ("none", None)
    if isinstance(value, str):
        if value not in _CHOICES:
            raise bad(f"'tool_choice' is {value!r}; allowed values are auto, none, required or a named function.", "tool_choice")
        if value == "required" and not names:
            raise bad("'tool_choice' is 'required' but no 'tools' were given.", "tool_choice")
        return value, None
    function = value.get("function") if isinstance(value, dict) and value.get("type") == "function" else None
    name = function.get("name") if isinstance(function, dict) else None
    if not isinstance(name, str):
        raise bad(
            "'tool_choice' must be auto, none, required or {\"type\": \"function\", \"function\": {\"name\": ...}}.",
            "tool_choice",
        )
    if name not in names:
        known = ", ".join(names) if names else "none were given"
        raise bad(f"'tool_choice' names the function {name!r}, which is not among the tools ({known}).", "tool_choice")
    return "function", name


def parse_tool_request(body: dict[str, Any], output: OutputFormat | None = None) -> ToolRequest | None:
    """The request's tools and how they may be used; None when it sends none (or an empty list).
    ``output`` (the reply format asked for, server/structured.py): JSON (a schema, any object)
    that a reply calling no tool must be, as OpenAI takes the pair; a GBNF ``grammar`` cannot
    be joined to a call's and is refused."""
    for old in ("functions", "function_call"):
        if old in body:
            raise bad(f"'{old}' is OpenAI's retired form of tools; send 'tools' and 'tool_choice' instead.", old)
    raw = body.get("tools")
    if raw is not None and not isinstance(raw, list):
        raise bad("'tools' must be a list of function tools.", "tools")
    if raw is not None and len(raw) > MAX_TOOLS:
        raise bad(f"'tools' has {len(raw)} tools; at most {MAX_TOOLS} are accepted.", "tools")
    tools = [_tool(item, i) for i, item in enumerate(raw or [])]
    names = [t.name for t in tools]
    if len(set(names)) != len(names):
        twice = next(n for n in names if names.count(n) > 1)
        raise bad(f"'tools' has two functions named {twice!r}; names must be unique.", "tools")
    choice, function = _choice(body.get("tool_choice"), names)
    parallel = flag(body, "parallel_tool_calls", False)
    if not tools:
        return None
    reply_schema = None
    if output is not None and output.grammar:
        reply_schema = output.schema if output.schema is not None else {"type": "object"}
    request = ToolRequest(tuple(tools), choice, function, parallel, reply_schema)
    if request.active and output is not None and output.kind == "grammar":
        raise bad(
            f"'{output.param}' cannot be combined with tools; send tool_choice 'none' or leave it out.", output.param
        )
    return request


def parse_tool_fields(message: dict[str, Any], i: int) -> dict[str, Any]:
    """The tool fields of ``messages[i]``: an assistant's ``tool_calls`` (arguments as JSON
    text), a tool result's ``tool_call_id`` and ``name``."""
    out: dict[str, Any] = {}
    role = message.get("role")
    calls = message.get("tool_calls")
    if calls is not None:
        if role != "assistant":
            raise bad(f"messages[{i}] has 'tool_calls' but only assistant messages may.", "messages")
        if not isinstance(calls, list):
            raise bad(f"messages[{i}].tool_calls must be a list of calls.", "messages")
        if calls:
            out["tool_calls"] = [_past_call(call, i, j) for j, call in enumerate(calls)]
    if role == "tool":
        for key in ("tool_call_id", "name"):
            value = message.get(key)
            if value is not None and not isinstance(value, str):
                raise bad(f"messages[{i}].{key} must be a string.", "messages")
            if value:
                out[key] = value
    return out


def _past_call(call: Any, i: int, j: int) -> dict[str, Any]:
    where = f"messages[{i}].tool_calls[{j}]"
    function = call.get("function") if isinstance(call, dict) else None
    if not isinstance(function, dict) or not isinstance(function.get("name"), str):
        raise bad(f"{where} must be {{id, type: function, function: {{name, arguments}}}}.", "messages")
    if call.get("type", "function") != "function":
        raise bad(f"{where}.type must be 'function'.", "messages")
    call_id = call.get("id", "")
    if not isinstance(call_id, str):
        raise bad(f"{where}.id must be a string.", "messages")
    arguments = function.get("arguments", "{}")
    if isinstance(arguments, dict):  # some clients send the object itself
        arguments = json.dumps(arguments, ensure_ascii=False)
    if not isinstance(arguments, str):
        raise bad(f"{where}.function.arguments must be a JSON string.", "messages")
    return {"id": call_id, "type": "function", "function": {"name": function["name"], "arguments": arguments}}


def call_deltas(calls: list[ToolCall], first_index: int) -> list[dict[str, Any]]:
    """Calls as a stream's ``delta.tool_calls``: each call whole, in one delta, with its index."""
    return [{"index": first_index + k, **call.as_openai()} for k, call in enumerate(calls)]
