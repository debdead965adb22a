"""Chat templates rendered in a sandboxed Jinja environment.

A GGUF's chat template is a Jinja program from the internet that runs on every turn. It is
rendered in Jinja's immutable sandbox with nothing but the messages and a few harmless helpers;
a template that fails or reaches for what it should not falls back to a plain ChatML template
that the user can see (``ChatTemplate.fallback_reason`` says why).
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import Any

import jinja2
from jinja2.sandbox import ImmutableSandboxedEnvironment

# The plain template used when a model has none, or its own fails.
FALLBACK_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
MAX_RENDERED_CHARS = 4_000_000


class TemplateError(Exception):
    pass


def _raise(message: str) -> None:
    raise TemplateError(message)


def _strftime_now(fmt: str) -> str:
    return datetime.datetime.now().strftime(fmt)


def _environment() -> ImmutableSandboxedEnvironment:
    env = ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, undefined=jinja2.ChainableUndefined
    )
    env.globals.update(raise_exception=_raise, strftime_now=_strftime_now)
    env.filters["tojson"] = _tojson
    return env


def _tojson(value: Any, indent: int | None = None, **_: Any) -> str:
    import json

    return json.dumps(value, ensure_ascii=False, indent=indent)


@dataclass
class ChatTemplate:
    source: str
    bos_token: str = ""
    eos_token: str = ""
    fallback_reason: str | None = None  # set when the model's own template is not used

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

    def render(self, messages: list[dict[str, str]], add_generation_prompt: bool = True) -> str:
        env = _environment()
        try:
            compiled = env.from_string(self.source)
            text = compiled.render(
                messages=[{"role": m["role"], "content": m["content"]} for m in messages],
                add_generation_prompt=add_generation_prompt,
                bos_token=self.bos_token,
                eos_token=self.eos_token,
            )
        except TemplateError:
            raise
        except jinja2.exceptions.SecurityError as err:
            raise TemplateError(f"the chat template tried something not allowed ({err})") from None
        except Exception as err:  # noqa: BLE001 - any template bug becomes one sentence
            raise TemplateError(f"the chat template failed ({type(err).__name__}: {err})") from None
        if len(text) > MAX_RENDERED_CHARS:
            raise TemplateError("the chat template produced an implausibly long prompt")
        return text
