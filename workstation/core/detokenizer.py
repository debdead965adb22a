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
        """The end of the reply: a character whose bytes did not all come (a reply cut by
        max_tokens between an emoji's two tokens) is left out; it ended the reply as "�"."""
        pending, _ = self._decoder.getstate()
        if pending:
            self._decoder.reset()
            return ""
        return self._decoder.decode(b"", final=True)
