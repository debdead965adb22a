"""Connections, before any request exists: a deadline for the request line and headers, and a
cap on open connections.

uvicorn's HTTP/1.1 protocol waits for headers without end, so thousands of half-sent requests
stay open until the process runs out of file descriptors and ``/health`` stops answering. This
subclass gives every connection ``header_timeout_s`` from connect (or from its last response,
on a kept-alive connection) to the end of its headers, then answers 408 and closes. At the cap,
a new connection takes the place of the one that has waited longest without sending a
request; when every connection is busy with a request, the new one gets 503.
"""

from __future__ import annotations

import asyncio
import http
import logging
import time
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from workstation.core.server.protocol import ApiError, json_bytes

TLS_HANDSHAKE = b"\x16\x03"  # a TLS record of type handshake, version 3.x: never the start of an HTTP request
log = logging.getLogger("uvicorn.error")


def _raw_error(error: ApiError) -> bytes:
    """A whole HTTP/1.1 response for ``error`` that closes the connection (written before h11
    has seen a request, so h11 cannot build it)."""
    body = json_bytes(error.body())
    head = [
        f"HTTP/1.1 {error.status} {http.HTTPStatus(error.status).phrase}",
        "content-type: application/json",
        f"content-length: {len(body)}",
        "connection: close",
    ]
    head += [f"{name.lower()}: {value}" for name, value in error.headers.items() if name.lower() != "connection"]
    return ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body


class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with a header deadline and a connection cap (class attributes;
    ``guarded_protocol`` makes a subclass with an operator's values)."""

    header_timeout_s: float = 10.0
    max_connections: int = 512

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.waiting_since = time.monotonic()
        self.header_deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._wait_for_headers()
        if len(self.connections) > self.max_connections:
            self._make_room()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_deadline()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        """A TLS handshake (a client given https:// for this plain-HTTP server) is said in one
        plain line (h11 logged "Invalid HTTP request received."), then answered as any request
        that is not HTTP is."""
        if self.waiting_for_headers and data[:2] == TLS_HANDSHAKE:
            host = self.client[0] if self.client else "a client"
            log.warning("workstation: %s asked for https://, but this server speaks plain HTTP: its address "
                        "starts with http://", host)
            self.send_400_response("")
            return
        super().data_received(data)

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing():
            self._wait_for_headers()  # the next request on a kept-alive connection

    # --- the header deadline ----------------------------------------------------------------------
    @property
    def waiting_for_headers(self) -> bool:
        return self.conn.their_state is h11.IDLE and not self.transport.is_closing()

    def _cancel_deadline(self) -> None:
        if self.header_deadline is not None:
            self.header_deadline.cancel()
            self.header_deadline = None

    def _wait_for_headers(self) -> None:
        self._cancel_deadline()
        self.waiting_since = time.monotonic()
        self.header_deadline = self.loop.call_later(self.header_timeout_s, self._headers_late)

    def _headers_late(self) -> None:
        self.header_deadline = None
        if self.waiting_for_headers:  # otherwise a request arrived in time and is being handled
            self.refuse(
                ApiError(
                    408,
                    f"The request headers did not arrive within {self.header_timeout_s:g} seconds.",
                    code="request_timeout",
                )
            )

    # --- the connection cap -----------------------------------------------------------------------
    def _make_room(self) -> None:
        waiting = [
            c for c in self.connections if isinstance(c, GuardedH11Protocol) and c.waiting_for_headers
        ]
        victim = min(waiting, key=lambda c: c.waiting_since, default=self)
        victim.refuse(
            ApiError(
                503,
                f"This server has {self.max_connections} connections open, its limit; try again shortly.",
                type_="server_error",
                code="server_busy",
                headers={"Retry-After": "1"},
            )
        )

    def send_400_response(self, msg: str) -> None:
        """Not HTTP (h11 refused it, or the headers passed its 16 KiB limit): an error object."""
        self.refuse(ApiError(400, "The request is not valid HTTP/1.1, or its headers are too long.", code="bad_http"))

    def refuse(self, error: ApiError) -> None:
        """Answer ``error`` and close; only while no request is being handled."""
        self._cancel_deadline()
        if self.transport.is_closing():
            return
        self.transport.write(_raw_error(error))
        self.transport.close()


def guarded_protocol(header_timeout_s: float, max_connections: int) -> type[GuardedH11Protocol]:
    return type(
        "GuardedH11Protocol",
        (GuardedH11Protocol,),
        {"header_timeout_s": header_timeout_s, "max_connections": max_connections},
    )
