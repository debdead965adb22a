"""An OpenAI-compatible HTTP API over the continuous-batching scheduler (Starlette + uvicorn).

One job per module: ``accounts`` (people's keys, profile limits, tokens per day, usage and the
audit trail), ``protocol`` (request bodies into typed parameters, the OpenAI error
object, response pieces), ``app`` (the routes, ``OpenAIServer``; its parts: ``request_body``
reads a body within the limits, ``request_prompt`` makes its prompt's tokens, ``replies``
writes a generation's answer, whole or streamed,
``sse`` streams it, ``status_routes`` are /health, /v1/models, /usage/today and /metrics,
``token_routes`` llama-server's /tokenize, /detokenize and /apply-template), ``native`` and
``ollama`` (llama-server's and Ollama's routes in their own shapes, over ``app``), ``guard``
(Host, Origin and CORS, content type, the request cap), ``connections`` (header deadline, connection cap),
``prometheus`` (``/metrics``), ``options`` (what the operator sets) and ``process`` (binding,
uvicorn, the server in a thread or a child process). SECURITY.md says what it promises.

The names below are imported on first use, so that ``workstation.core.server.options`` (read
by the command line at start-up) does not load Starlette and llama.cpp.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from workstation.core.server.accounts import Accounts
    from workstation.core.server.app import OpenAIServer
    from workstation.core.server.options import DEFAULT_MAX_BODY, ServerOptions
    from workstation.core.server.process import (
        BackgroundServer,
        ServeError,
        ServeProcess,
        bind_socket,
        check_host,
        is_loopback,
        make_uvicorn,
    )
    from workstation.core.server.prometheus import prometheus_text
    from workstation.core.server.protocol import (
        ApiError,
        GenParams,
        parse_messages,
        parse_params,
        parse_prompt,
    )
    from workstation.core.server.sse import SSEResponse

_WHERE = {
    "Accounts": "accounts",
    "OpenAIServer": "app",
    "SSEResponse": "sse",
    "DEFAULT_MAX_BODY": "options",
    "ServerOptions": "options",
    "BackgroundServer": "process",
    "ServeError": "process",
    "ServeProcess": "process",
    "bind_socket": "process",
    "check_host": "process",
    "is_loopback": "process",
    "make_uvicorn": "process",
    "prometheus_text": "prometheus",
    "ApiError": "protocol",
    "GenParams": "protocol",
    "parse_messages": "protocol",
    "parse_params": "protocol",
    "parse_prompt": "protocol",
}
__all__ = [
    "DEFAULT_MAX_BODY", "Accounts", "ApiError", "BackgroundServer", "GenParams", "OpenAIServer", "SSEResponse",
    "ServeError", "ServeProcess", "ServerOptions", "bind_socket", "check_host", "is_loopback",
    "make_uvicorn", "parse_messages", "parse_params", "parse_prompt", "prometheus_text",
]
assert sorted(__all__) == sorted(_WHERE)


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'workstation.core.server' has no attribute {name!r}")
    return getattr(importlib.import_module(f"workstation.core.server.{module}"), name)
