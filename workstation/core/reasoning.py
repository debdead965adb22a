"""A reasoning model's thinking, told apart from its answer.

Reasoning models (Qwen3, DeepSeek-R1 and its distills, SmallThinker, QwQ…) write their
thinking first, between ``<think>`` and ``</think>``, then the answer. The thinking is not the
answer: it is not shown as the reply, not saved as the message's content and not read back to
the model on the next turn (those models' own templates leave it out too). It streams beside
the answer, as llama-server's ``reasoning_format: deepseek`` gives it (``reasoning_content``).

A block counts only at the start of a reply, so an answer that talks about ``<think>`` tags
stays whole. Some templates open the block themselves (the prompt ends with ``<think>``): the
reply then starts inside it and only ``</think>`` comes (``opens_thinking``).
"""

from __future__ import annotations

from workstation.core.stop_strings import StopMatcher

OPEN, CLOSE = "<think>", "</think>"


def opens_thinking(prompt_tail: str) -> bool:
    """Whether a prompt ending with ``prompt_tail`` has opened the thinking block itself."""
    return prompt_tail.rstrip().endswith(OPEN)


class ThinkingSplitter:
    """Feed it a reply's text as it streams; it returns (thinking, answer) pieces. Text that
    could still be the start of a tag is held back until it is known, and so is blank space
    at the end of the thinking so far: the thinking streamed is exactly the thinking kept
    (no blank lines around it), and the answer after the block starts at its first word."""

    def __init__(self, opened: bool = False) -> None:
        self.phase = "thinking" if opened else "start"  # start -> thinking -> answer
        self._head = ""  # the reply so far, while it may still open a block
        self._close = StopMatcher([CLOSE])
        self._lead = True  # the thinking's leading blank space is dropped
        self._blank = ""  # blank space at the end of the thinking so far, held
        self._trim = False  # the answer's leading blank space after the block is dropped

    @property
    def thinking(self) -> bool:
        return self.phase == "thinking"

    def push(self, text: str) -> tuple[str, str]:
        if self.phase == "start":
            self._head += text
            head = self._head.lstrip()
            if not head:  # blank space before anything: an answer's, and a block may still come
                text, self._head = self._head, ""
                return "", text
            if OPEN.startswith(head):
                return "", ""  # may still become "<think>"
            if not head.startswith(OPEN):  # an answer, exactly as it came
                self.phase, text, self._head = "answer", self._head, ""
                return "", text
            self.phase, self._head = "thinking", ""
            text = head[len(OPEN) :]
        thought = ""
        if self.phase == "thinking":
            thought, closed = self._close.push(text)
            thought = self._thought(thought)
            if not closed:
                return thought, ""
            self.phase, self._trim, self._blank = "answer", True, ""
            text = self._close.after
        if self._trim:
            text = text.lstrip()
            self._trim = not text
        return thought, text

    def _thought(self, text: str) -> str:
        if self._lead:
            text = text.lstrip()
            self._lead = not text
        text = self._blank + text
        body = text.rstrip()
        self._blank = text[len(body) :]
        return body

    def flush(self) -> tuple[str, str]:
        """The end of the reply: what was held back (a reply cut off mid-thought keeps it)."""
        if self.phase == "start":
            head, self._head = self._head, ""
            return "", head
        if self.phase == "thinking":
            thought = self._thought(self._close.flush())
            self._blank = ""
            return thought, ""
        return "", ""
