"""Reading a request's body within the server's limits, as a JSON object (``_json_body``)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from starlette.requests import ClientDisconnect, Request

from workstation.core.server.guard import PERSON
from workstation.core.server.protocol import ApiError, busy, decode_body

if TYPE_CHECKING:
    from workstation.core.server.app import OpenAIServer

# a body over the limit is read and dropped up to this much (or 4x the limit) and this long before
# the 413, so that the client, still sending, reads the answer (_drain)
DRAIN_BYTES = 16 * 2**20
DRAIN_S = 5.0


class RequestBodies:
    """The request's body, read before anything is parsed: within ``max_body_bytes`` (a 413,
    after the rest was drained), ``body_timeout_s`` (a 408) and the bodies the server holds at
    once (``InflightBodies``: a 503, a person's own share said). A part of ``OpenAIServer``:
    ``options`` and ``bodies`` are the server's."""

    @staticmethod
    def _drain_bytes(limit: int) -> int:
        """How much of a body over the limit is read (and dropped) before the 413: see _drain."""
        return max(DRAIN_BYTES, 4 * limit)

    async def _drain(self: OpenAIServer, request: Request, seen: int, limit: int) -> None:
        """Read and drop the rest of a body that is over the limit, up to ``_drain_bytes`` in all
        and DRAIN_S seconds, so that the 413 reaches the client (a "lingering close", as nginx
        does). Closed with its body unread, a kept-alive connection (the ``openai`` client's)
        was reset while the client still sent, and it saw "peer closed connection", not 413."""
        most = self._drain_bytes(limit)
        try:
            async with asyncio.timeout(DRAIN_S):
                async for chunk in request.stream():
                    seen += len(chunk)
                    if seen > most:
                        return
        except (TimeoutError, ClientDisconnect):
            return
        except RuntimeError:  # Starlette's "Stream consumed": the piece over the limit was the last
            return

    @contextlib.asynccontextmanager
    async def _json_body(self: OpenAIServer, request: Request) -> AsyncIterator[dict[str, Any]]:
        """The body as a JSON object, read within ``body_timeout_s``, its bytes counted against
        ``max_inflight_body_bytes`` until the block ends (the caller parses and tokenizes in it)."""
        limit = self.options.max_body_bytes
        too_big = ApiError(
            413,
            f"The request body is larger than this server's limit of {limit} bytes.",
            code="request_too_large",
            headers={"Connection": "close"},
            fields={"limit_bytes": limit},
        )
        full = busy("This server is reading as many request bodies as it can hold; try again shortly.")
        declared = request.headers.get("content-length", "")
        held = 0
        person = request.scope.get(PERSON)
        try:
            if declared.isdigit():
                if int(declared) > limit:
                    if int(declared) <= self._drain_bytes(limit):
                        await self._drain(request, 0, limit)
                    raise too_big
                if not self.bodies.take(int(declared), person):
                    raise self._body_refused(full, person, int(declared))
                held = int(declared)
            chunks: list[bytes] = []
            size = 0
            over = False
            try:
                async with asyncio.timeout(self.options.body_timeout_s):
                    async for chunk in request.stream():
                        size += len(chunk)
                        if size > limit:
                            over = True  # (drained below: within this timeout, a 408 came instead of the 413)
                            break
                        if size > held:
                            if not self.bodies.take(size - held, person):
                                raise self._body_refused(full, person, size - held)
                            held = size
                        chunks.append(chunk)
            except TimeoutError:
                raise ApiError(
                    408,
                    f"The request body did not arrive within {self.options.body_timeout_s:g} seconds.",
                    code="request_timeout",
                    headers={"Connection": "close"},
                ) from None
            except ClientDisconnect:
                raise ApiError(400, "The client went away before sending the whole body.") from None
            if over:
                del chunks
                await self._drain(request, size, limit)
                raise too_big
            data = b"".join(chunks)
            del chunks
            body = decode_body(data)
            del data
            yield body
        finally:
            self.bodies.give(held, person)

    def _body_refused(self: OpenAIServer, full: ApiError, person: str | None, n: int) -> ApiError:
        """The 503 for ``n`` bytes of body that cannot be held now: the key's own share said where
        the server had room (it said the whole server was full, to the one key filling it)."""
        if person is not None and self.bodies.used + n <= self.bodies.limit:
            return busy(f"The key '{person}' is sending as many request bodies at once as one person may (a quarter "
                        "of what this server reads at once); try again once they are in.")
        return full
