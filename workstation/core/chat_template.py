"""Chat templates rendered in a sandboxed Jinja environment.

A GGUF's chat template is a Jinja program from the internet that runs on every turn. It is
rendered in Jinja's immutable sandbox with nothing but the messages and a few harmless helpers;
a template that fails or reaches for what it should not falls back to a plain ChatML template
that the user can see (``ChatTemplate.fallback_reason`` says why).
"""

from __future__ import annotations

import ctypes
import datetime
import json
import re
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import jinja2
from jinja2 import nodes
from jinja2.compiler import CodeGenerator, Frame
from jinja2.exceptions import SecurityError
from jinja2.sandbox import ImmutableSandboxedEnvironment

if TYPE_CHECKING:
    from workstation.core.runtime import LoadedModel

# The plain template used when a model has none, or its own fails.
FALLBACK_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
FALLBACK_STOPS = ("<|im_end|>", "<|im_start|>")  # its markers, which a model without a template writes as text
MAX_RENDERED_CHARS = 4_000_000
# what render passes itself: a template variable from a request or a profile cannot replace it
RESERVED_VARIABLES = frozenset({"messages", "add_generation_prompt", "bos_token", "eos_token", "tools"})
RENDER_TIMEOUT_S = 2.0  # a real template renders in milliseconds


class TemplateError(Exception):
    pass


def _raise(message: str) -> None:
    raise TemplateError(message)


def _strftime_now(fmt: str) -> str:
    return datetime.datetime.now().strftime(fmt)


class _Sandbox(ImmutableSandboxedEnvironment):
    """Jinja's immutable sandbox, made strict: reaching for an unsafe attribute raises at once
    (the stock sandbox returns an undefined value that renders as nothing), and operators and
    string methods that could build a huge value are checked before they run."""

    intercepted_binops = frozenset({"*", "**", "+", "%"})

    def unsafe_undefined(self, obj: Any, attribute: str) -> Any:
        raise SecurityError(f"access to attribute {attribute!r} of a {type(obj).__name__} value is not allowed")

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        if operator == "**":
            if isinstance(left, int | float) and isinstance(right, int | float) and (
                abs(right) > 64 or abs(left) > 2**64
            ):
                raise SecurityError("a power in the chat template is too large")
        elif operator == "*":
            for seq, times in ((left, right), (right, left)):
                if isinstance(seq, str | list | tuple) and isinstance(times, int):
                    if len(seq) * max(times, 0) > MAX_RENDERED_CHARS:
                        raise SecurityError("the chat template builds a value that is too large")
        elif operator == "%" and isinstance(left, str):
            _check_format_string(left)
        elif operator == "+" and isinstance(left, str | list | tuple) and isinstance(right, str | list | tuple):
            if len(left) + len(right) > MAX_RENDERED_CHARS:
                raise SecurityError("the chat template builds a value that is too large")
        return super().call_binop(context, operator, left, right)

    def wrap_str_format(self, value: Any) -> Callable[..., str] | None:
        owner = getattr(value, "__self__", None)
        if isinstance(owner, str) and getattr(value, "__name__", "") in ("format", "format_map"):
            _check_format_string(owner)
        return super().wrap_str_format(value)

    def call(self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:
        owner = getattr(__obj, "__self__", None)
        if isinstance(owner, str | bytes) and getattr(__obj, "__name__", "") in _WIDTH_METHODS:
            _check_sizes(args, kwargs)
            if __obj.__name__ == "replace" and len(args) >= 2:
                _check_replace(owner, args[0], args[1])
            elif __obj.__name__ == "join" and args:
                return __obj(_bounded_items(owner, args[0]))
        return super().call(__context, __obj, *args, **kwargs)


# str methods whose integer arguments set the size of the result
_WIDTH_METHODS = frozenset(
    {"center", "ljust", "rjust", "zfill", "expandtabs", "format", "format_map", "replace", "join", "split", "rsplit"}
)
_PERCENT_SPEC = re.compile(r"%(?:\([^)]*\))?[-+ #0]*(\*|\d+)?(?:\.(\*|\d+))?")
_BRACE_FIELD = re.compile(r"\{[^{}]*(\{)?")
_MAX_WIDTH = 10_000


def _check_format_string(text: str) -> None:
    """Refuse printf- and str.format-style widths that would build a huge string in C code."""
    for match in _PERCENT_SPEC.finditer(text):
        for width in match.groups():
            if width == "*" or (width is not None and int(width) > _MAX_WIDTH):
                raise SecurityError("the chat template formats with a width that is too large")
    for match in _BRACE_FIELD.finditer(text):
        field = match.group(0)
        if match.group(1) is not None and ":" in field:
            raise SecurityError("the chat template formats with a computed width, which is not allowed")
        spec = field.partition(":")[2]
        if any(int(n) > _MAX_WIDTH for n in re.findall(r"\d+", spec)):
            raise SecurityError("the chat template formats with a width that is too large")


def _check_sizes(args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    for value in (*args, *kwargs.values()):
        if isinstance(value, int) and not isinstance(value, bool) and value > MAX_RENDERED_CHARS:
            raise SecurityError(f"the chat template asks for a size of {value}, which is too large")


def _size(value: Any, budget: int = MAX_RENDERED_CHARS) -> int:
    """About how many characters ``str(value)`` makes; stops counting past ``budget``."""
    if isinstance(value, str | bytes):
        return len(value)
    if isinstance(value, list | tuple | set | frozenset | dict):
        total = 2
        items = value.items() if isinstance(value, dict) else value
        for item in items:
            total += 2 + _size(item, budget - total)
            if total > budget:
                return total
        return total
    return 24  # numbers, None, undefined, small objects


def _check_size(value: Any) -> Any:
    if _size(value) > MAX_RENDERED_CHARS:
        raise SecurityError("the chat template builds a value that is too large")
    return value


def _bounded_items(sep: str, items: Any) -> list[Any]:
    """The items of a join, refused if joining them would make a huge string."""
    listed = list(items) if not isinstance(items, list) else items
    total = 0
    for item in listed:
        total += len(sep) + _size(item, MAX_RENDERED_CHARS - total)
        if total > MAX_RENDERED_CHARS:
            raise SecurityError("the chat template builds a value that is too large")
    return listed


def _check_replace(text: Any, old: Any, new: Any) -> None:
    if isinstance(text, str) and isinstance(old, str) and isinstance(new, str):
        count = text.count(old) if old else len(text) + 1
        if len(text) + count * max(len(new) - len(old), 0) > MAX_RENDERED_CHARS:
            raise SecurityError("the chat template builds a value that is too large")


def _bounded_concat(items: Any) -> str:
    """``a ~ b`` in a template (Jinja's str_join), refused before building a huge string."""
    return "".join(map(str, _bounded_items("", items)))


class _CodeGenerator(CodeGenerator):
    def visit_Concat(self, node: nodes.Concat, frame: Frame) -> None:
        self.write("environment.bounded_concat((")
        for arg in node.nodes:
            self.visit(arg, frame)
            self.write(", ")
        self.write("))")


def _bounded_filter(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    lead = 1 if getattr(fn, "jinja_pass_arg", None) is not None else 0  # context/env first

    def checked(*args: Any, **kwargs: Any) -> Any:
        value = args[lead] if len(args) > lead else None
        params = args[lead + 1 :]
        _check_sizes(params, kwargs)
        if name == "format" and isinstance(value, str):
            _check_format_string(value)
        elif name == "replace" and len(params) >= 2:
            _check_replace(str(value), params[0], params[1])
        elif name == "indent":
            width = params[0] if params else kwargs.get("width", 4)
            if isinstance(width, str) and (str(value).count("\n") + 1) * len(width) > MAX_RENDERED_CHARS:
                raise SecurityError("the chat template builds a value that is too large")
        elif name == "join" and value is not None:
            sep = params[0] if params else kwargs.get("d", "")
            args = (*args[:lead], _bounded_items(str(sep), value), *params)
        elif name in ("string", "pprint", "list"):
            _check_size(value)
        return fn(*args, **kwargs)

    checked.__name__ = fn.__name__
    if hasattr(fn, "jinja_pass_arg"):
        checked.jinja_pass_arg = fn.jinja_pass_arg  # type: ignore[attr-defined]
    return checked


_BOUNDED_FILTERS = (
    "center", "indent", "format", "truncate", "wordwrap", "batch", "slice", "filesizeformat",
    "replace", "join", "string", "pprint", "list",
)


def _environment() -> ImmutableSandboxedEnvironment:
    env = _Sandbox(
        trim_blocks=True, lstrip_blocks=True, undefined=jinja2.ChainableUndefined, finalize=_check_size
    )
    env.globals.pop("lipsum", None)  # lipsum(n) makes n paragraphs: no use in a chat template
    env.globals.update(raise_exception=_raise, strftime_now=_strftime_now)
    env.code_generator_class = _CodeGenerator
    env.bounded_concat = _bounded_concat  # type: ignore[attr-defined]
    for name in _BOUNDED_FILTERS:
        if name in env.filters:
            env.filters[name] = _bounded_filter(name, env.filters[name])
    env.filters["tojson"] = _tojson
    return env


def _tojson(value: Any, indent: int | None = None, **_: Any) -> str:
    _check_size(value)
    return json.dumps(value, ensure_ascii=False, indent=indent)


@dataclass
class ChatTemplate:
    source: str
    bos_token: str = ""
    eos_token: str = ""
    fallback_reason: str | None = None  # set when the model's own template is not used
    _compiled: jinja2.Template | None = field(default=None, init=False, repr=False, compare=False)

    @classmethod
    def for_model(cls, template: str | None, bos_token: str, eos_token: str) -> ChatTemplate:
        if not template:
            return cls(FALLBACK_TEMPLATE, bos_token, eos_token, "the model has no chat template")
        chat = cls(template, bos_token, eos_token)
        try:
            chat.render([{"role": "user", "content": "test"}])
        except TemplateError as err:
            return cls(FALLBACK_TEMPLATE, bos_token, eos_token, f"its template failed: {err}")
        return chat

    def render(
        self,
        messages: Sequence[Mapping[str, Any]],
        add_generation_prompt: bool = True,
        tools: list[dict[str, Any]] | None = None,
        variables: Mapping[str, Any] | None = None,
    ) -> str:
        """The prompt text; TemplateError (one sentence) if the template fails, escapes, runs
        longer than RENDER_TIMEOUT_S or produces more than MAX_RENDERED_CHARS. ``tools`` (OpenAI
        function tools) and the messages' ``tool_calls``, ``tool_call_id`` and ``name`` reach
        the template as HF transformers' ``apply_chat_template`` passes them. ``variables``:
        more of its inputs (``chat_template_kwargs``: Qwen3's ``enable_thinking``)."""
        extra = {k: v for k, v in (variables or {}).items() if k not in RESERVED_VARIABLES}
        if tools is not None:
            extra["tools"] = tools
        try:
            if self._compiled is None:
                self._compiled = _environment().from_string(self.source)
            compiled = self._compiled
            with _Deadline(RENDER_TIMEOUT_S):
                parts: list[str] = []
                total = 0
                for chunk in compiled.generate(
                    messages=[_template_message(m) for m in messages],
                    add_generation_prompt=add_generation_prompt,
                    bos_token=self.bos_token,
                    eos_token=self.eos_token,
                    **extra,
                ):
                    total += len(chunk)
                    if total > MAX_RENDERED_CHARS:
                        raise TemplateError("the chat template produced an implausibly long prompt")
                    parts.append(chunk)
            text = "".join(parts)
        except TemplateError:
            raise
        except _RenderTimeout:
            raise TemplateError(
                f"the chat template ran longer than {RENDER_TIMEOUT_S:g} seconds and was stopped"
            ) from None
        except jinja2.exceptions.SecurityError as err:
            raise TemplateError(f"the chat template tried something not allowed ({err})") from None
        except Exception as err:  # noqa: BLE001 - any template bug becomes one sentence
            raise TemplateError(f"the chat template failed ({type(err).__name__}: {err})") from None
        return text


_MESSAGE_FIELDS = ("role", "content", "tool_calls", "tool_call_id", "name")


def _template_message(m: Mapping[str, Any]) -> dict[str, Any]:
    """What a template sees of one message: its role and content, and its tool fields when set."""
    return {k: m[k] for k in _MESSAGE_FIELDS if k in m}


class _RenderTimeout(BaseException):
    """Raised inside the rendering thread when the deadline passes (not an Exception, so that a
    template's own error handling cannot swallow it)."""


class _Deadline:
    """Interrupt pure-Python work in this thread after ``seconds`` (a Jinja template compiles to
    Python, so a runaway loop is stopped between two bytecodes)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.lock = threading.Lock()
        self.done = False
        self.fired = False
        self.thread_id = threading.get_ident()
        self.timer = threading.Timer(seconds, self._fire)
        self.timer.daemon = True

    def _fire(self) -> None:
        with self.lock:
            if self.done:
                return
            self.fired = True
            ctypes.pythonapi.PyThreadState_SetAsyncExc(
                ctypes.c_ulong(self.thread_id), ctypes.py_object(_RenderTimeout)
            )

    def __enter__(self) -> _Deadline:
        self.timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.timer.cancel()
        with self.lock:
            self.done = True
            fired = self.fired
        if fired:  # clear the exception if it has not been delivered yet
            ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(self.thread_id), None)


def template_for(model: LoadedModel) -> ChatTemplate:
    """The model's own chat template (or the visible fallback), with its BOS/EOS texts."""
    return ChatTemplate.for_model(
        model.metadata.get("tokenizer.chat_template"),
        model.token_text(model.bos_token) if model.bos_token >= 0 else "",
        model.token_text(model.eos_token) if model.eos_token >= 0 else "",
    )


# Private-use characters that mark where each message's content sits in a rendered prompt.
_OPEN, _CLOSE = "\ue000", "\ue001"
_MARKS = re.compile(f"[{_OPEN}{_CLOSE}]")


def reply_to_continue(messages: list[Any]) -> tuple[list[Any], str]:
    """(the messages before it, its text) where the last message is an assistant's text to go
    on from (llama-server's ``--prefill-assistant``, on by default: "Hel" comes back as "lo!…"),
    else (the messages, ""). One with tool calls, or no text, is a turn of the history."""
    last = messages[-1] if messages else None
    if last is None or last["role"] != "assistant" or not last.get("content") or last.get("tool_calls"):
        return messages, ""
    return messages[:-1], last["content"]


def chat_prompt_tokens(
    model: LoadedModel,
    template: ChatTemplate,
    messages: Sequence[Mapping[str, Any]],
    tools: list[dict[str, Any]] | None = None,
    variables: Mapping[str, Any] | None = None,
) -> list[int]:
    """The prompt tokens for ``messages`` (and ``tools``, rendered by the template, with its
    other inputs ``variables``), with BOS added only when the template did not.

    Message content is text, never control tokens: the template's own ``<|im_start|>`` and
    the like are parsed as special tokens, while the same strings typed by a user (or found
    in a document) stay ordinary text. When no content holds such a string, the rendered
    prompt is tokenized in one piece exactly as before; otherwise the prompt is rendered
    with each content marked and the marked spans are tokenized with special tokens off.
    """
    from workstation.core.errors import EngineError

    try:
        text = template.render(messages, add_generation_prompt=True, tools=tools, variables=variables)
    except TemplateError as err:
        raise EngineError(f"The model's chat template could not be used: {err}.") from None
    bos_text = template.bos_token
    add_bos = model.add_bos and not (bos_text and text.startswith(bos_text))
    # tool definitions and calls are rendered by the template itself, not as marked content:
    # control-token text in them is refused rather than parsed as the template's own tokens
    calls = [m["tool_calls"] for m in messages if m.get("tool_calls")]
    if (tools or calls) and _has_control_text(model, json.dumps([tools, calls], ensure_ascii=False)):
        raise EngineError(
            "A tool definition or tool call contains the text of the model's control tokens; remove those tokens."
        )
    if not any(_has_control_text(model, m["content"]) for m in messages):
        return model.tokenize(text, add_special=add_bos, parse_special=True)
    return _tokenize_marked(model, template, messages, add_bos, tools, variables)


def _has_control_text(model: LoadedModel, content: str) -> bool:
    """Whether ``content`` holds the text of a control token (it tokenizes differently when
    special tokens are parsed)."""
    if not content:
        return False
    return model.tokenize(content, add_special=False, parse_special=True) != model.tokenize(
        content, add_special=False, parse_special=False
    )


def _tokenize_marked(
    model: LoadedModel,
    template: ChatTemplate,
    messages: Sequence[Mapping[str, Any]],
    add_bos: bool,
    tools: list[dict[str, Any]] | None = None,
    variables: Mapping[str, Any] | None = None,
) -> list[int]:
    """Render with every content between _OPEN and _CLOSE; tokenize the template's text with
    special tokens parsed and the contents as plain text."""
    from workstation.core.errors import EngineError

    if any(_MARKS.search(m["content"]) for m in messages):
        # the marks themselves in content would confuse the split; they are private-use
        # characters no one types, so drop them from the content
        messages = [{**m, "content": _MARKS.sub("", m["content"])} for m in messages]
    marked = [{**m, "content": f"{_OPEN}{m['content']}{_CLOSE}"} for m in messages]
    try:
        text = template.render(marked, add_generation_prompt=True, tools=tools, variables=variables)
    except TemplateError as err:
        raise EngineError(f"The model's chat template could not be used: {err}.") from None
    pieces = _MARKS.split(text)
    kinds = _MARKS.findall(text)
    # a well-behaved template keeps each content whole: the marks alternate open, close
    if kinds != [_OPEN, _CLOSE] * (len(kinds) // 2):
        raise EngineError(
            "A message contains the text of the model's control tokens, and this model's chat "
            "template rewrites message content, so it cannot be sent safely; remove those tokens."
        )
    tokens: list[int] = []
    for i, piece in enumerate(pieces):
        if not piece:
            continue
        is_content = i % 2 == 1
        tokens += model.tokenize(piece, add_special=add_bos and not tokens, parse_special=not is_content)
    return tokens
