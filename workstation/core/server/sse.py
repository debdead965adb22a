"""The streamed answer: server-sent events (or Ollama's newline-delimited JSON) from an async
iterator, a client that disconnects meanwhile told to ``on_disconnect`` (its request cancelled,
its slot freed)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable

from starlette.responses import Response
from starlette.types import Receive, Scope, Send


class SSEResponse(Response):
    """Server-sent events from an async iterator; a client disconnect calls ``on_disconnect``.
    ``media_type``: another streamed shape (Ollama's newline-delimited JSON)."""

    def __init__(
        self, events: AsyncIterator[bytes], on_disconnect: Callable[[], None],
        media_type: bytes = b"text/event-stream; charset=utf-8",
    ) -> None:
        self.status_code = 200
        self.background = None
        self.raw_headers = [
            (b"content-type", media_type),
            (b"cache-control", b"no-cache"),
            (b"x-accel-buffering", b"no"),
        ]
        self.events = events
        self.on_disconnect = on_disconnect

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        watch = asyncio.create_task(watch_disconnect(receive, self.on_disconnect))
        try:
            await send({"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers})
            async for chunk in self.events:
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        except OSError:
            self.on_disconnect()
        finally:
            watch.cancel()
            with contextlib.suppress(BaseException):
                await self.events.aclose()  # type: ignore[attr-defined]


async def watch_disconnect(receive: Receive, on_disconnect: Callable[[], None]) -> None:
    """Call ``on_disconnect`` when the client hangs up (ASGI's ``http.disconnect``); run as a task
    while its answer is made or streamed, and cancelled when it is sent."""
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            on_disconnect()
            return
