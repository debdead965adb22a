"""What the operator sets for one server: the key, who may call it, and its limits (SECURITY.md
lists each limit with its default and the test that proves it)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

DEFAULT_MAX_BODY = 4 * 1024 * 1024  # one request body
DEFAULT_MAX_INFLIGHT_BODY = 32 * 1024 * 1024  # all bodies being read or parsed at once
DEFAULT_MAX_MESSAGES = 2048  # messages per chat request, and text parts in all
DEFAULT_MAX_REQUESTS = 64  # requests being handled at once (/health aside)
DEFAULT_HEADER_TIMEOUT_S = 10.0  # from connect (or the last response) to the end of the headers
DEFAULT_BODY_TIMEOUT_S = 60.0  # to read a whole body once the headers are in
DEFAULT_SHUTDOWN_GRACE_S = 30.0  # at a stop, how long the replies being written may take to finish
MAX_CONNECTIONS_CEILING = 512


def default_max_connections() -> int:
    """Open connections allowed at once: 512, or half of the open-file limit less 64 when that
    is lower; the other half absorbs a burst of connections accepted before any is refused."""
    try:
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    except (ImportError, OSError, ValueError):
        return MAX_CONNECTIONS_CEILING
    if soft == resource.RLIM_INFINITY:
        return MAX_CONNECTIONS_CEILING
    return max(8, min(MAX_CONNECTIONS_CEILING, (soft - 64) // 2))


@dataclass
class ServerOptions:
    model_id: str
    api_key: str | None = None
    max_body_bytes: int = DEFAULT_MAX_BODY
    max_prompt_tokens: int | None = None  # default: one slot's context - 1
    max_inflight_body_bytes: int = DEFAULT_MAX_INFLIGHT_BODY
    max_messages: int = DEFAULT_MAX_MESSAGES
    max_requests: int = DEFAULT_MAX_REQUESTS
    max_connections: int = field(default_factory=default_max_connections)
    header_timeout_s: float = DEFAULT_HEADER_TIMEOUT_S
    body_timeout_s: float = DEFAULT_BODY_TIMEOUT_S
    # Host names accepted besides loopback names and IP literals ("*" accepts any; ".example.com"
    # accepts that domain and its sub-domains).
    allowed_hosts: tuple[str, ...] = ()
    # Browser origins accepted besides loopback ones ("*" accepts any), as "https://host[:port]".
    allowed_origins: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()  # more model ids /v1/models lists (serve --alias)
    metrics: bool = True  # GET /metrics (serve --no-metrics turns it off)
    slot_save_path: Path | None = None  # POST /slots/{id}?action=... files (serve --slot-save-path)
    # at a stop (SIGTERM, Ctrl+C), the replies being written finish for up to this long before
    # they are cut (serve --shutdown-grace; 0: cut at once)
    shutdown_grace_s: float = 0.0
