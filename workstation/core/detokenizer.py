"""Incremental, UTF-8-safe detokenization: text appears as soon as its bytes are complete."""

from __future__ import annotations

import codecs


class StreamDetokenizer:
    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def push(self, piece: bytes) -> str:
        """Feed one token's bytes; returns the text that became complete (maybe empty)."""
        return self._decoder.decode(piece)

    def flush(self) -> str:
        return self._decoder.decode(b"", final=True)
