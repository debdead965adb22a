"""A generation request's prompt as tokens (``request_prompt_tokens``): a chat's messages through the
model's template (the served profile's system prompt first where they bring none, a last
assistant message a reply to go on from, the tools' prompt), or a completion's text or tokens;
and its length within the server's limit (``_check_prompt``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from starlette.concurrency import run_in_threadpool

from workstation.core.chat_template import reply_to_continue
from workstation.core.engine_api import with_system_prompt
from workstation.core.errors import EngineError
from workstation.core.server.accounts import Ticket
from workstation.core.server.protocol import (
    ApiError,
    bad,
    parse_messages,
    parse_prompt,
    parse_template_variables,
)
from workstation.core.structured_output import SchemaError
from workstation.core.tool_calls import ToolPrompt, ToolRequest, tool_prompt

if TYPE_CHECKING:
    from workstation.core.server.app import OpenAIServer


class RequestPrompts:
    """The prompt of a chat, a completion and the dialects' requests (``native.py``,
    ``ollama.py``, ``responses.py`` call ``request_prompt_tokens``) and its limit (``/props`` says it).
    A part of ``OpenAIServer``: the scheduler (its model and template), the options and the
    accounts are the server's."""

    def _prompt_limit(self: OpenAIServer) -> int:
        """The most tokens a request's prompt may have (``--max-prompt-tokens``, within a slot)."""
        return min(self.options.max_prompt_tokens or (self.scheduler.slot_ctx - 1), self.scheduler.slot_ctx - 1)

    def _check_prompt(self: OpenAIServer, prompt: list[int], field: str = "messages") -> None:
        """ApiError 400 where the prompt is longer than a request may be; ``field``: the request's
        field that holds it (a completion's ``prompt``)."""
        limit = self._prompt_limit()
        if len(prompt) > limit:
            raise self.too_long(len(prompt), f"The prompt is {len(prompt)} tokens but this server accepts at most "
                                f"{limit} prompt tokens per request.", field)

    def too_long(self: OpenAIServer, n: int, message: str, field: str | None = None) -> ApiError:
        """The 400 ``context_length_exceeded`` of a prompt of ``n`` tokens, its figures as fields beside
        the sentence: the request's tokens, the most a request may have, a slot's context (as ``/models``
        meta names them), for a desk PC to say in its own language (only the English sentence had them)."""
        return ApiError(400, message, param=field, code="context_length_exceeded",
                        fields={"prompt_tokens": n, "max_prompt_tokens": self._prompt_limit(),
                                "n_ctx": self.scheduler.slot_ctx})

    async def request_prompt_tokens(
        self, body: dict[str, Any], chat: bool, ticket: Ticket, tools: ToolRequest | None = None
    ) -> tuple[list[int], ToolPrompt | None]:
        """The prompt's tokens and, for a chat, what its tools made of it (core/tool_calls.py)."""
        try:
            if chat:
                messages = parse_messages(body, self.options.max_messages)
                variables = parse_template_variables(body)
                self.accounts.keep_content(ticket, {"messages": messages})  # as the person sent them
                return await run_in_threadpool(self._chat_prompt, self._with_system_prompt(messages), tools, variables)
            raw = parse_prompt(body, self.scheduler.model.n_vocab)
            self.accounts.keep_content(ticket, {"prompt": raw})
            if isinstance(raw, str):
                return await run_in_threadpool(self.scheduler.text_tokens, raw), None
            return raw, None
        except SchemaError as err:
            raise bad(f"The tools cannot be used together: {err}", "tools") from None
        except EngineError as err:
            raise bad(str(err)) from None

    def _with_system_prompt(self: OpenAIServer, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The served profile's system prompt first where the request brings none, as the chat
        and the app put it (Ollama's SYSTEM does the same): serve answered a bare question with
        the model's own default system prompt, and so otherwise than `chat -p` on its profile."""
        return with_system_prompt(self.scheduler.profile, messages)  # type: ignore[arg-type]

    def _chat_prompt(
        self, messages: list[dict[str, Any]], tools: ToolRequest | None, variables: dict[str, Any]
    ) -> tuple[list[int], ToolPrompt]:
        """The chat's tokens; a last assistant message is a reply begun, which the model goes on
        from (as llama-server: the turns before it with the assistant's turn opened, then its
        text, as text, never control tokens); it was closed and a new reply begun."""
        history, begun = reply_to_continue(messages)
        plan = tool_prompt(self.scheduler.template, history, tools)
        return self.scheduler.chat_tokens(plan.messages, plan.tools, variables, begun=begun), plan
