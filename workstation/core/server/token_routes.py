"""llama-server's text routes: a text's tokens, tokens' text, and the prompt the chat template
makes of messages."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from workstation.core.chat_template import TemplateError, reply_to_continue
from workstation.core.server.accounts import Caller
from workstation.core.server.guard import REASON
from workstation.core.server.protocol import (
    ApiError,
    bad,
    flag,
    parse_messages,
    parse_template_variables,
    parse_text,
    parse_token_ids,
)
from workstation.core.server.tool_protocol import parse_tool_request
from workstation.core.structured_output import SchemaError
from workstation.core.tool_calls import tool_prompt

if TYPE_CHECKING:
    from workstation.core.server.app import OpenAIServer


def _piece(model: Any, token: int) -> str | list[int]:
    """One token's text, or its bytes when they are not valid UTF-8 on their own (llama-server's
    shape). Uses the model's raw piece when it has one; detokenized text otherwise."""
    raw = model.piece(token, True) if hasattr(model, "piece") else model.detokenize([token]).encode("utf-8")
    try:
        return bytes(raw).decode("utf-8")
    except UnicodeDecodeError:
        return list(raw)


class TokenRoutes:
    """llama-server's ``/tokenize``, ``/detokenize`` and ``/apply-template``: work for the
    server but no reply, so a key whose day is used up is refused there too (``_working_for``).
    A part of ``OpenAIServer``: ``scheduler``, ``options`` and ``accounts`` are the server's."""

    def _working_for(self: OpenAIServer, request: Request) -> Caller:
        """The caller of a route that costs the server work but no reply (/tokenize, /detokenize,
        /apply-template): a key whose day is used up is refused there too (it had the server
        tokenize 4 MB texts over its quota)."""
        caller = self._auth(request)
        try:
            self.accounts.check_quota(caller)
        except ApiError as over:  # ("day limit" on its log line)
            request.scope[REASON] = over.reason
            raise
        return caller

    async def tokenize(self: OpenAIServer, request: Request) -> Response:
        """llama-server's ``/tokenize``: ``content``, ``add_special`` (false), ``parse_special``
        (true), ``with_pieces`` (false) -> ``{"tokens": [id, ...]}`` or ``[{"id", "piece"}]``,
        a piece being text, or its bytes as a list when they are not valid UTF-8 alone."""
        model = self.scheduler.model
        try:
            self._working_for(request)
            async with self._json_body(request) as body:
                content = parse_text(body, "content")
                add_special = flag(body, "add_special", False)
                parse_special = flag(body, "parse_special", True)
                with_pieces = flag(body, "with_pieces", False)
                tokens = await run_in_threadpool(model.tokenize, content, add_special, parse_special)
        except ApiError as err:
            return err.response()
        if not with_pieces:
            return JSONResponse({"tokens": tokens})
        pieces = await run_in_threadpool(lambda: [_piece(model, t) for t in tokens])
        return JSONResponse({"tokens": [{"id": t, "piece": p} for t, p in zip(tokens, pieces, strict=True)]})

    async def detokenize(self: OpenAIServer, request: Request) -> Response:
        """llama-server's ``/detokenize``: ``tokens`` -> ``{"content": text}`` (special tokens
        included as their text)."""
        try:
            self._working_for(request)
            async with self._json_body(request) as body:
                tokens = parse_token_ids(body.get("tokens"), "tokens", self.scheduler.model.n_vocab)
        except ApiError as err:
            return err.response()
        # special tokens as their text, as llama-server's /detokenize gives them
        text = await run_in_threadpool(self.scheduler.model.detokenize, tokens, True)
        return JSONResponse({"content": text})

    async def apply_template(self: OpenAIServer, request: Request) -> Response:
        """llama-server's ``/apply-template``: ``messages`` (and ``tools``) -> ``{"prompt": text}``,
        the text the model's chat template makes of them (with the assistant's turn opened)."""
        try:
            self._working_for(request)
            async with self._json_body(request) as body:
                messages = self._with_system_prompt(parse_messages(body, self.options.max_messages))
                tools = parse_tool_request(body)
                variables = self.scheduler.template_variables(parse_template_variables(body))

                def render() -> str:
                    history, begun = reply_to_continue(messages)  # the reply begun, as a chat goes on from it
                    plan = tool_prompt(self.scheduler.template, history, tools)
                    return self.scheduler.template.render(plan.messages, True, plan.tools, variables) + begun

                try:
                    prompt = await run_in_threadpool(render)
                except SchemaError as err:
                    raise bad(f"The tools cannot be used together: {err}", "tools") from None
                except TemplateError as err:
                    raise bad(f"The model's chat template could not be used: {err}.", "messages") from None
        except ApiError as err:
            return err.response()
        return JSONResponse({"prompt": prompt})
