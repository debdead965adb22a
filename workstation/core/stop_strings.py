"""Stop strings over streamed text (OpenAI's ``stop``): hold back what could start one."""

from __future__ import annotations


class StopMatcher:
    """Feed it text as it streams; it returns what is safe to show and whether a stop matched."""

    def __init__(self, stops: list[str]) -> None:
        self.stops = [s for s in stops if s]
        self.held = ""
        self.after = ""  # once a stop matched: the text that came after it in the same push

    def push(self, text: str) -> tuple[str, bool]:
        """Returns (text safe to emit, stopped)."""
        if not self.stops:
            return text, False
        buf = self.held + text
        found = [(i, s) for s, i in ((s, buf.find(s)) for s in self.stops) if i >= 0]
        if found:
            cut, stop = min(found)
            self.held, self.after = "", buf[cut + len(stop) :]
            return buf[:cut], True
        keep = 0
        for s in self.stops:
            for n in range(min(len(s) - 1, len(buf)), 0, -1):
                if buf.endswith(s[:n]):
                    keep = max(keep, n)
                    break
        self.held = buf[len(buf) - keep :] if keep else ""
        return buf[: len(buf) - keep], False

    def flush(self) -> str:
        out, self.held = self.held, ""
        return out
