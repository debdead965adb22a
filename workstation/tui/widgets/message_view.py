"""One chat message: who said it, the Markdown text, and under a reply its figures."""

from __future__ import annotations

import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, cast

from markdown_it import MarkdownIt
from markdown_it.rules_core import StateCore
from markdown_it.token import Token
from rich.cells import cell_len
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.geometry import Size
from textual.markup import escape
from textual.timer import Timer
from textual.widget import Widget
from textual.widgets import Collapsible, Markdown, Static
from textual.widgets._markdown import MarkdownBullet, MarkdownListItem, MarkdownOrderedList

from workstation.core.conversation_titles import match_span, profile_key
from workstation.core.document_changes import changes_lines, recorded_changes
from workstation.core.events import SERVER_STOPPING
from workstation.core.invocation import cli
from workstation.core.metrics import TurnMetrics, figures_line
from workstation.core.moments import BAD, local_text
from workstation.core.phrases import Lookup, about_words, rounded_words, say, words_in
from workstation.core.reply_check import unchecked_phrases
from workstation.core.summary_chunks import FACTS_LABEL, facts_said, without_counted
from workstation.core.table_facts import counted_phrases, recorded_facts, title_phrase
from workstation.tui.attachment import SEPARATOR, find_attached
from workstation.tui.glyphs import UNICODE
from workstation.tui.i18n import Texts
from workstation.tui.pacing import FREE_CPU
from workstation.tui.widgets.conversation_list import FOUND_STYLE
from workstation.tui.widgets.streaming_text import StreamingText

THINKING_TITLE_EVERY_S = 0.5
WAIT_TICK_S = 1.0  # the wait for a reply's first word is counted on screen every second
FOLD_LINES = 24  # a message of the user's longer than this (or FOLD_CHARS) shows its start, the rest folded
FOLD_CHARS = 3000
HEAD_LINES = 8  # what a folded paste shows of itself
wall_clock: Callable[[], float] = time.time  # when a new message is written (tests fix it: snapshots)


def _head(text: str) -> str:
    """The first HEAD_LINES lines of ``text``, cut at a space where they are long."""
    head = "\n".join(text.split("\n")[:HEAD_LINES])
    if len(head) > FOLD_CHARS // 3:
        cut = head.rfind(" ", 0, FOLD_CHARS // 3)
        head = head[: cut if cut > 0 else FOLD_CHARS // 3]
    return head


# a workbook's sheet as its reader heads it in the document's text ("Sheet: Faturalar", a section's first
# line: at the text's start or after a blank line)
SHEET_HEADING = re.compile(r"(?:\A|(?<=\n\n))Sheet: [^\n]*$", re.MULTILINE)


def sheet_headings_said(text: str, lookup: Lookup) -> str:
    """``text`` with its sheets' headings in the UI's language ("Sayfa: Faturalar" under --lang tr:
    the expanded document began "Sheet: Faturalar"), as the facts name them (``title_phrase``). The
    model reads the reader's own heading, English, as the facts it is given name the sheet."""
    def heading(found: re.Match[str]) -> str:
        phrase = title_phrase(found[0])
        return say([phrase], lookup) if isinstance(phrase, tuple) else phrase

    return SHEET_HEADING.sub(heading, text)


def fold(content: str) -> tuple[str, str]:
    """(shown, folded) of a message of the user's: a long paste shows its first lines, a
    message with an attached document its question and the document's name; the rest is folded
    (an attached contract filled 15,000 characters of screens to scroll past). Short: (content, '')."""
    # (the program's counts of a table pasted in it, for the model: the user sees them under the reply)
    content = without_counted(content.replace("\r\n", "\n")).rstrip("\n")
    if content.count("\n") < FOLD_LINES and len(content) <= FOLD_CHARS:
        return content, ""
    attached = find_attached(content)
    if attached is not None:  # the question, the rule and the document's name; then the document
        shown = content[: attached.start].rstrip("\n")
        if shown.count("\n") < FOLD_LINES and len(shown) <= FOLD_CHARS:  # (a long question: as a paste)
            return shown, attached.document
    head = _head(content)
    return head + " …", content[len(head):].lstrip(" \n")


WAIT_SAID_AFTER_S = 3.0  # from this long on (a short wait stays "waiting for the first word…")


def waiting_key(prefix: str, own: bool, held: str) -> str:
    """The phrase for an office server that has sent nothing yet, in the chat (``prefix``
    "chat") or a summary ("summarize"): behind the person's own other request, every slot
    taken by other people's (``held`` ``server_busy``), starting (``loading``), stopping
    (``SERVER_STOPPING``: the reply may be cut off), else slow."""
    if held == SERVER_STOPPING:  # (whoever else it waited for before)
        return f"{prefix}.waiting_stopping"
    if own:
        return f"{prefix}.waiting_own"
    return {"server_busy": f"{prefix}.waiting_busy", "loading": f"{prefix}.waiting_loading"}.get(held, f"{prefix}.server_slow")


def metrics_line(metrics: TurnMetrics | dict[str, Any], texts: Texts, width: int | None = None,
                 ended: bool = True) -> str:
    """TTFT, tok/s, tokens, cache hits and draft acceptance of one reply, on one line, in the
    UI's language (F7's export writes the same line); in ``width`` columns where given, its
    least useful figures left out (``figures_line``); ``ended`` False: how it ended left out."""
    return figures_line(metrics, texts.get, width=width, ended=ended)


def chat_markdown() -> MarkdownIt:
    """The chat's Markdown, for a person's messages and the model's replies alike:
    - it breaks the line where the text does, each soft line break made a hard one
      (markdown-it's ``breaks`` option does that for HTML only; Textual reads the tokens): a
      reply's letter (Subject, Date, To, the address) showed as one run-on paragraph, and 60
      pasted lines of a message as one, where ChatGPT and LM Studio keep the lines;
    - HTML in the text is shown as the text it is: Textual draws no HTML, and a reply's
      ``<table>`` or ``<script>`` with all it held was left out without a trace;
    - a link whose text is not its address shows the address after it, "text (address)"
      (``shown_targets``): a reply's ``[https://cloud.example/forms](http://elsewhere.example)``
      showed only the first address, as a phishing mail does."""
    parser = MarkdownIt("gfm-like", {"html": False})

    def hard_breaks(state: StateCore) -> None:
        for token in state.tokens:
            for child in token.children or []:
                if child.type == "softbreak":
                    child.type = "hardbreak"

    parser.core.ruler.push("hard_breaks", hard_breaks)
    parser.core.ruler.push("shown_targets", shown_targets)
    return parser


class WrittenNumbers(MarkdownOrderedList):
    """A numbered list showing each item's number as written where the numbers are not all one:
    Textual (as Markdown's HTML) numbers a list on from its first number, and a lease's clauses
    1, 2, 4, 5 (clause 3 taken out) showed as 1, 2, 3, 4, a reply's "4. Late fee" after "2." as
    "3.": a paralegal read the wrong clause. A list numbered "1. 1. 1." (Markdown's way of not
    counting by hand) is still counted 1, 2, 3."""

    def compose(self) -> ComposeResult:
        items = [block for block in self._blocks if isinstance(block, MarkdownListItem)]
        written = [int(item.bullet) if item.bullet.isdigit() else None for item in items]
        if None in written or len(set(written)) < 2:
            yield from super().compose()
            return
        symbols = [f"{number}. " for number in written]
        width = max(len(symbol) for symbol in symbols) + 1
        for item, symbol in zip(items, symbols, strict=True):
            bullet = MarkdownBullet()
            bullet.symbol = symbol.rjust(width)
            yield Horizontal(bullet, Vertical(*item._blocks))
        self._blocks.clear()


class ChatMarkdown(Markdown):
    """Textual's ``Markdown`` with each numbered list's numbers as written (``WrittenNumbers``):
    the chat's messages and F6's summary."""

    BLOCKS = {**Markdown.BLOCKS, "ordered_list_open": WrittenNumbers}


def same_address(text: str, href: str) -> bool:
    """Whether a link's ``text`` says its address ``href``: the same, or as a found address or
    mail address is written without the scheme markdown-it adds (``www.example.org``,
    ``a@example.org``)."""
    text, href = text.strip().rstrip("/"), href.strip().rstrip("/")
    return href in (text, f"http://{text}", f"https://{text}", f"mailto:{text}")


def _target(words: str, href: str) -> list[Token]:
    """The address after a link's text, where the text is not it."""
    if not href or same_address(words, href):
        return []
    target = Token("text", "", 0)
    target.content = f" ({href})"
    return [target]


def shown_targets(state: StateCore) -> None:
    """After each link or image whose text is not its address, the address in brackets, as text."""
    for token in state.tokens:
        if not token.children:
            continue
        shown: list[Token] = []
        words: list[str] | None = None
        href = ""
        for child in token.children:
            shown.append(child)
            if child.type == "link_open":
                words, href = [], str(child.attrs.get("href", ""))
            elif child.type == "image":  # drawn as its alt text, a click opening its address
                shown += _target(child.content, str(child.attrs.get("src", "")))
            elif words is not None and child.type in ("text", "code_inline"):
                words.append(child.content)
            elif words is not None and child.type == "link_close":
                shown += _target("".join(words), href)
                words = None
        token.children = shown


_PLAIN_PARSER: MarkdownIt | None = None
_INLINE_PLAIN = frozenset({"text", "softbreak", "hardbreak"})
_PLAIN_TOKENS = frozenset({"paragraph_open", "inline", "paragraph_close"})
_SPACES = re.compile(r"\s+")


def plain_text(text: str) -> str | None:
    """``text`` as the chat's Markdown shows it, where that is paragraphs of plain text and
    nothing else (no emphasis, list, heading, table, code, link: most questions and many
    replies); None where it has any of those. Shown as one ``Static``, such a message costs the
    screen two widgets where a ``Markdown`` of it took one a paragraph and the document around
    them (each widget is styled and laid out again on every layout pass of the chat). The text
    is the paragraphs' as Textual's ``MarkdownBlock`` builds them: runs of spaces made one, a
    line break kept, a blank line between paragraphs (their margin)."""
    global _PLAIN_PARSER
    if _PLAIN_PARSER is None:
        _PLAIN_PARSER = chat_markdown()
    tokens = _PLAIN_PARSER.parse(text)
    if not tokens or any(t.type not in _PLAIN_TOKENS for t in tokens):
        return None
    paragraphs = []
    for token in tokens:
        if token.type != "inline":
            continue
        children = token.children or []
        if any(c.type not in _INLINE_PLAIN for c in children):
            return None
        paragraphs.append("".join(_SPACES.sub(" ", c.content) if c.type == "text" else "\n" if c.type == "hardbreak"
                                  else " " for c in children))
    return "\n\n".join(paragraphs)


class PlainBody(Static):
    """A saved message's text that has no Markdown in it (``plain_text``), drawn as its
    paragraphs would be; ``source`` is the text as written, as ``Markdown.source``."""

    def __init__(self, source: str, shown: str) -> None:
        super().__init__(Content(shown), classes="body plain", expand=True)
        self.source = source
        self.shown = shown
        self.found: tuple[int, int] | None = None  # where the words a search found are marked

    def mark(self, words: str) -> None:
        """``words`` marked where they are in the text ("": none)."""
        self.found = match_span(self.shown, words) if words else None
        self.update(Content(self.shown) if self.found is None else Content(self.shown).stylize(FOUND_STYLE, *self.found))


@dataclass(frozen=True)
class CodeBlock:
    language: str  # the fence's first word ("python"), "" where it names none
    code: str  # without its fences, as the reply wrote it


def code_blocks(text: str) -> list[CodeBlock]:
    """The code blocks of a message, in order, read as the chat draws them (fenced with ``` or
    ~~~, and indented ones): the code a reply gave, to copy without the fences around it."""
    return [CodeBlock((t.info or "").split()[0] if (t.info or "").split() else "", t.content)
            for t in chat_markdown().parse(text) if t.type in ("fence", "code_block") and t.content.strip()]


class MessageView(Vertical):
    """A message in the chat log; a reply can be streamed into it.

    While a reply streams, finished paragraphs (text up to the last blank line) go into the
    Markdown body and the paragraph still being written shows as plain text under it
    (``StreamingText``): Markdown is laid out again once a paragraph, not on every update,
    which keeps the screen's work small while the engine decodes (at most every
    ``markdown_every_s``, which the app sets from ``pacing``). At the end the whole reply is
    rendered as Markdown once.

    A reasoning model's thinking goes in a folded block above the answer ("Thinking… 120
    tokens" while it thinks, "Thought for 8.2 s · 340 tokens" after); Enter on it or a click
    unfolds it. Folded, its text is not drawn, so thinking costs the screen next to nothing.
    """

    DEFAULT_CLASSES = "message"

    def __init__(
        self,
        role: str,
        content: str,
        texts: Texts,
        metrics: dict[str, Any] | None = None,
        *,
        streaming: bool = False,
        reasoning: str = "",
        message_id: int | None = None,
        created: float | None = None,
        day: str = "",
        facts: list[dict[str, Any]] | None = None,
    ) -> None:
        """``streaming``: a reply is about to stream into this view; it holds lines for it.
        ``reasoning``: a saved reply's thinking; ``message_id``: its number in the store;
        ``created``: when it was written (None: now), its time said beside who wrote it; ``day``:
        the day's line over it (``show_day``), '' for none; ``facts``: those the store keeps of its
        attached document's tables (``StoredMessage.facts``)."""
        super().__init__(classes=f"message {role}")
        self.facts = recorded_facts(facts) if facts else []
        self.message_id = message_id
        self.created = wall_clock() if created is None else created
        self.day = day
        self.reasoning = reasoning
        self._thought_tokens = 0  # while thinking streams
        self._title_at = 0.0  # when the thinking block's title was last redrawn
        self._open_stream = streaming
        self.markdown_every_s = FREE_CPU.markdown_every_s
        self.role = role
        self.content = content
        self._before = ("", "")  # a reply gone on with (``reopen``): its text and thinking before
        self.metrics = metrics
        self.texts = texts
        self._streaming = False
        self._stalled = False  # the server stopped sending mid-reply: said until the next word
        self._tail = ""
        self._last_flush = 0.0
        self.clock: Callable[[], float] = time.perf_counter  # seconds; tests drive their own
        self._asked_at = 0.0  # when a reply about to stream was asked for
        self._wait_timer: Timer | None = None
        self._read: float | None = None  # of a long prompt, the part read (the engine says after each part)
        self._waiting: str | None = None  # the office server's silence, said (``server_waiting``)
        self._live: tuple[str, dict[str, str]] | None = None  # said under the text while it streams (``_say_live``)
        self._shown, self._folded = fold(content) if role == "user" else (content, "")
        self._found = ""  # the words a search found here, marked (``mark_found``)
        self.versions: tuple[int, int, str] | None = None  # the last reply's (2, 3, "Alt+V"): "reply 2 of 3 (Alt+V)"
        self.go_on = ""  # the last reply cut at its length limit: the key that goes on with it ("Alt+C")
        self.profile_named = ""  # its profile's title, said first (a conversation answered by several: ChatScreen.name_profiles)

    def compose(self) -> ComposeResult:
        if self.day:  # only then: a line in every message would add a widget to each
            yield Static(self.day, classes="day", markup=False)
        yield Static(self._role_label(), classes="role")
        if self.reasoning:  # only then: a block in every message would double the widgets
            yield self._thought_block()
        body = self._shown_body()
        shown = None if self._open_stream else plain_text(body)
        if shown is not None:
            plain = PlainBody(body, shown)
            plain.mark(self._found)
            yield plain
        else:
            yield self._markdown(body)
        if self._folded:  # its text drawn when unfolded (Enter or a click), as thinking's
            opened = self._folded_found() is not None  # (by a search that found words there)
            yield Collapsible(Static(self._folded_content() if opened else "", classes="folded-text", markup=False),
                              title=self._folded_title(shown=opened), collapsed=not opened,
                              classes="folded", **self._fold_marks())
        if self._open_stream:  # (else made when a reply goes on: ``tail``)
            yield StreamingText(classes="tail")
        if self.role == "user":  # (a person's message has no figures: no widget, hidden, in each)
            return
        figures = Static(self._metrics_text(), classes="metrics")
        if self.role == "assistant":  # what the figures mean, in words, under the mouse
            figures.tooltip = self.texts("metric.help", bench=cli("bench"))
        yield figures

    def on_mount(self) -> None:
        if self._open_stream:
            self.tail.open()
            self._say_live("chat.waiting")
            self._asked_at = self.clock()
            self._wait_timer = self.set_interval(WAIT_TICK_S, self._tick_wait)

    def reopen(self) -> None:
        """A finished reply is to go on (the app's "continue"): it streams again, after its text."""
        self.metrics = None
        self.go_on = ""  # (going on: said again where it is cut again)
        self._before = (self.content, self.reasoning)
        self._open_stream = True
        self._tail = ""
        self.tail.open()
        self.query_one(".metrics", Static).update(self._metrics_text(), layout=False)
        self._say_live("chat.waiting")
        self._asked_at = self.clock()
        self._read = None
        self._waiting = None
        if self._wait_timer is not None:
            self._wait_timer.stop()
        self._wait_timer = self.set_interval(WAIT_TICK_S, self._tick_wait)

    def written(self) -> tuple[str, str]:
        """The text and thinking written in this turn: of a reply gone on with, the new part only,
        as the turn's tokens count it (F5's live line counted the earlier part's words over the
        new part's tokens: words a token read too high until the reply ended)."""
        text, thought = self._before
        return (self.content[len(text):] if self.content.startswith(text) else self.content,
                self.reasoning[len(thought):] if self.reasoning.startswith(thought) else self.reasoning)

    def read_so_far(self, fraction: float) -> None:
        """The engine has read ``fraction`` of a long prompt: said with the seconds (LM Studio's
        "Processing prompt 42%"); the seconds alone did not tell a minute's wait from a hang."""
        self._read = fraction
        self._waiting = None
        self._tick_wait()

    def server_waiting(self, own: bool, held: str = "") -> None:
        """Nothing yet from the office server: it queues the request behind the person's own
        other one (``own``), it answered that every slot is taken or that it is loading its
        model (``held``: its code; "slow to answer" was said of those), or it is slow to answer;
        said in place of "reading the conversation…", which the chat said of both."""
        self._waiting = waiting_key("chat", own, held)
        self._tick_wait()

    def server_stalled(self, seconds: float) -> None:
        """The office server sent nothing more for ``seconds`` in the middle of the reply: said
        where "generating…" stands (the half-written reply looked frozen), until the next word."""
        self._stalled = True
        self._say_live("chat.server_slow", s=f"{seconds:.0f}")

    def _say_live(self, key: str, **values: str) -> None:
        """Say how the reply is coming (the wait for its first word, "generating…", a slow
        server) right under its text, where the streaming text draws it (``StreamingText.set_note``):
        said on the line under the message, it stood under the lines held for the text to grow
        into, eleven blank rows below the text at 110x32. The line under the message is empty
        until the reply ends (its figures then)."""
        self._live = (key, values)
        self.tail.set_note(self.texts(key, **values))

    def _tick_wait(self) -> None:
        """Until the first word, how long the model has been reading, each second: a long
        conversation read again (after F3, a restart) showed "waiting for the first token…" (now "word")
        for 103 s, unchanged, and looked frozen."""
        if self._streaming or self.metrics is not None or self.reasoning:
            if self._wait_timer is not None:
                self._wait_timer.stop()
            return
        waited = self.clock() - self._asked_at
        if waited >= WAIT_SAID_AFTER_S:
            if self._waiting is not None:
                self._say_live(self._waiting, s=f"{waited:.0f}")
            elif self._read is None:
                self._say_live("chat.reading", s=f"{waited:.0f}")
            else:
                self._say_live("chat.reading_part", s=f"{waited:.0f}", percent=f"{100 * self._read:.0f}")

    def _role_label(self) -> Content:
        """Who wrote it and, muted, at what time (a conversation over days did not say when
        anything was said; the day is the line over its first message that day)."""
        at = local_text(self.created, "%H:%M")
        return Content.assemble(self.texts(f"role.{self.role}"), *([] if at == BAD else [(f"  {at}", "not bold $text-muted")]))

    async def show_day(self, day: str) -> None:
        """The day's line over this message (``day``), or none ('')."""
        if day == self.day:
            return
        self.day = day
        shown = self.query(".day")
        if shown and day:
            shown.first(Static).update(day)
        elif shown:
            await shown.remove()
        elif self.is_mounted:
            await self.mount(Static(day, classes="day", markup=False), before=0)

    def _metrics_text(self) -> str:
        if self.role != "assistant":
            return ""
        if self.metrics is None:  # a reply about to stream (what it waits for is said under its text:
            # ``_say_live``); a saved message without figures shows none
            return "" if self._open_stream else self._versions_text()
        go_on = self.texts("chat.go_on_mark", press=self.go_on) if self.go_on else ""
        if self.metrics.get("stop_reason") == "loop":  # stopped where it began repeating itself: the way on is another reply
            key_for = getattr(self.app, "key_for", None)
            go_on = self.texts("chat.again_mark", press=key_for("chat.again") if callable(key_for) else "Alt+R")
        around = [p for p in (self.profile_named, go_on, self._versions_text()) if p]
        # (on one line in the width drawn: the figures least worth a look left out where it wraps)
        width = self._figures_width()
        room = width - sum(len(p) + 3 for p in around) if width else None
        line = " · ".join(filter(None, [self.profile_named, metrics_line(self.metrics, self.texts, room),
                                        go_on, self._versions_text()]))
        if self.metrics.get("stop_reason") == "loop" and width and len(self._one_line(go_on)) > width:
            # stopped for repeating itself, and Alt+R: their own line where all the figures would not
            # fit beside them (at 110 columns the count went, in Turkish the wait too; at 80 all of them)
            around = [p for p in (self.profile_named, self._versions_text()) if p]
            room = width - sum(len(p) + 3 for p in around)
            line = " · ".join(filter(None, [self.profile_named, metrics_line(self.metrics, self.texts, room, ended=False),
                                            self._versions_text()]))
            line += "\n" + " · ".join([self.texts("metric.loop"), go_on])
        counted = self.metrics.get("counted")
        if isinstance(counted, list) and counted:  # the figures the program counted for the question, under the model's
            line += "\n" + escape(say(counted_phrases(counted), self.texts.get))
        comparison = recorded_changes(self.metrics.get("changes"))
        if comparison is not None:  # what changed between two versions of the document, found by the program
            line += "".join("\n" + escape(say([said], self.texts.get)) for said in changes_lines(comparison))
        summarized = self.metrics.get("from_summary")
        if isinstance(summarized, str) and summarized:  # F6's summary went in the document's place: its figures
            line += "\n" + escape(say([("chat.from_summary", {"name": summarized})], self.texts.get))
        if unchecked := unchecked_phrases(self.metrics.get("unchecked")):  # a small model's figures its document lacks
            line += "\n" + escape(say(unchecked, self.texts.get))
        return line

    def _one_line(self, go_on: str) -> str:
        """The line under the reply with all of its figures, unfitted."""
        return " · ".join(filter(None, [self.profile_named, metrics_line(self.metrics or {}, self.texts), go_on,
                                        self._versions_text()]))

    def _figures_width(self) -> int | None:
        """The columns the line under the reply has, once it is laid out (None before)."""
        shown = self.query(".metrics")
        width = shown.first(Static).content_region.width if shown else 0
        return width or None

    def on_resize(self) -> None:
        """The line under a reply fitted to the width again (a terminal made narrower or wider)."""
        if self.role == "assistant" and self.metrics is not None:
            self.call_after_refresh(self._refit)

    def _refit(self) -> None:
        shown = self.query(".metrics")
        if shown and self.metrics is not None:
            shown.first(Static).update(self._metrics_text())

    def profile(self) -> str:
        """The profile the reply was written with, as people name it ("" where it was not kept)."""
        return profile_key(str((self.metrics or {}).get("profile") or "")) if self.role == "assistant" else ""

    def name_profile(self, named: str) -> None:
        """Say the reply's profile before its figures, by its title in the UI's language (``named``;
        F3's names), or not ("")."""
        if named != self.profile_named:
            self.profile_named = named
            if self.is_mounted:
                self.query_one(".metrics", Static).update(self._metrics_text())

    def _versions_text(self) -> str:
        if self.versions is None:
            return ""
        n, total, press = self.versions
        return self.texts("chat.versions_mark", n=f"{n:,}", total=f"{total:,}", press=press)

    def show_versions(self, versions: tuple[int, int, str] | None, go_on: str = "") -> None:
        """Which of its versions this reply is, and the key that goes through them (None: none
        said): Alt+V's were found only by pressing it. ``go_on``: the key that goes on with this
        reply, cut at its length limit ("": none said; "· length limit" named no way on). Said in
        the language of the moment."""
        if versions != self.versions or go_on != self.go_on:
            self.versions, self.go_on = versions, go_on
            if self.is_mounted:
                self.query_one(".metrics", Static).update(self._metrics_text())

    def _shown_body(self) -> str:
        """The reply's text; for a reply that was all thinking, cut by its limit, why."""
        m = TurnMetrics.from_dict(self.metrics) if self.metrics else None
        if m is not None and not self.content.strip() and not self.reasoning and m.stop_reason == "cancelled":
            return self.texts("chat.stopped_before")  # Esc or Ctrl+Q before the first token
        if m is not None and not self.content.strip() and self.reasoning:
            if m.stop_reason == "length":  # what to do in the app, not the profile's YAML (it said
                # "Raise sampling.max_tokens in the profile, or set thinking: false in it")
                key_for = getattr(self.app, "key_for", None)
                keys = {"press": key_for("chat.sampling") if callable(key_for) else "Ctrl+E",
                        "profiles": key_for("profile.menu") if callable(key_for) else "F3"}
                # the limit was the conversation's own longest reply (Ctrl+E), or the profile's
                own = "max_tokens" in ((self.metrics or {}).get("sampling") or {})
                # in words, as the reply cut at its limit says it ("all 8 tokens" meant nothing to office staff)
                return self.texts("chat.thought_only_own" if own else "chat.thought_only",
                                  n=about_words(m.predicted_n, self.texts.get), **keys)
            if m.stop_reason == "context":
                return self.texts("chat.thought_context")
        return self._said(self._shown) if self.role == "user" else self.content

    def _said(self, text: str) -> str:
        """A message of the user's ``text`` as shown: its attached document's line ("Document: x",
        stored in the language of the moment it was sent) and the facts the program counted of its
        tables in the UI's language (``facts_said``): those the store keeps with it (after a restart
        they were English), and those this run of the app counted (``counted_tables``); the message
        itself keeps the model's words, English."""
        tables = getattr(self.app, "counted_tables", None)
        said = facts_said(text, [*self.facts, *(tables() if tables is not None else [])], self.texts.get)
        return sheet_headings_said(said, self.texts.get)

    def _folded_title(self, shown: bool = False) -> str:
        """What the fold holds and how to open it (it said "Enter shows them", and Enter in the
        message box did nothing); once open, how to fold it again (it still said "shows")."""
        lines = self._folded.count("\n") + 1
        key = ("chat.unfolded" if shown else "chat.folded") + ("_one" if lines == 1 else "")
        # (a long line: "1 more lines" said nothing of its length; in words, as the line that attached
        # a document said its size: after F9 it said characters here, words there)
        return self.texts(key, n=f"{lines:,}", words=rounded_words(words_in(self._folded)))

    def _thought_title(self) -> str:
        """How long the thinking is, in its words ("Thinking… 412 words": its tokens, "412 tokens",
        meant nothing to the office staff who read it)."""
        words = f"{words_in(self.reasoning):,}"  # (by spaces, a Chinese thought of 300 characters was 2 words)
        if self.metrics is None:
            if self._thought_tokens:
                return self.texts("thought.live", n=words)
            return self.texts("thought.saved")
        m = TurnMetrics.from_dict(self.metrics)
        if m.reasoning_n:
            return self.texts("thought.done", s=f"{m.reasoning_ms / 1000:.1f}", n=words)
        return self.texts("thought.saved")

    def _thought_block(self) -> Collapsible:
        text = Static(self.reasoning, classes="thought-text", markup=False)
        return Collapsible(text, title=self._thought_title(), classes="thought", **self._fold_marks())

    def _fold_marks(self) -> dict[str, str]:
        """A block's open and closed marks as the terminal draws them (``app.glyphs``)."""
        shapes = getattr(self.app, "glyphs", UNICODE)
        return {"collapsed_symbol": shapes.folded, "expanded_symbol": shapes.unfolded}

    @property
    def thought(self) -> Collapsible | None:
        """The folded thinking block (None: no thinking)."""
        found = self.query(".thought")
        return found.first(Collapsible) if found else None

    async def _shown_thought(self) -> Collapsible:
        block = self.thought
        if block is None:
            block = self._thought_block()
            await self.mount(block, after=self.query_one(".role"))
        return block

    async def think(self, text: str, tokens: int) -> None:
        """More of the thinking streamed (``tokens``: about how many it took). Its count in the
        title is redrawn at most every ``THINKING_TITLE_EVERY_S`` (a title change is a layout)."""
        self.reasoning += text
        self._thought_tokens += tokens
        now = self.clock()
        first = self.thought is None
        block = await self._shown_thought()
        if first or self._stalled:
            self._title_at = now if first else self._title_at
            self._stalled = False
            self._say_live("chat.streaming")
        elif now - self._title_at >= THINKING_TITLE_EVERY_S:
            self._title_at = now
            block.title = self._thought_title()
        if not block.collapsed:
            self.query_one(".thought-text", Static).update(self.reasoning)

    def on_collapsible_collapsed(self, event: Collapsible.Collapsed) -> None:
        if event.collapsible.has_class("folded"):
            event.collapsible.title = self._folded_title()

    def mark_found(self, words: str) -> None:
        """Before it is drawn: the ``words`` a search found in it marked where they are, in its
        text or in its fold (then drawn open), until ``unmark_found`` (opened from Ctrl+F's
        results, the clause stayed in the folded document, unmarked). Where they are in no
        plain text of it (a reply's Markdown), nothing is (the message is marked whole)."""
        self._found = words

    def unmark_found(self) -> None:
        """The words found no longer marked (the next key after a search's result opened)."""
        if not self._found:
            return
        self._found = ""
        if self._folded and not self.query_one(".folded", Collapsible).collapsed:
            self._show_folded()
        body = self.body
        if isinstance(body, PlainBody):
            body.mark("")

    def _folded_found(self) -> tuple[int, int] | None:
        """Where the words a search found are in the folded text, as shown (None: not there)."""
        return match_span(self._said(self._folded), self._found) if self._folded and self._found else None

    def _folded_content(self) -> Content:
        """The folded text as drawn opened, the words a search found in it marked."""
        text, span = self._said(self._folded), self._folded_found()
        return Content(text) if span is None else Content(text).stylize(FOUND_STYLE, *span)

    def _show_folded(self) -> None:
        self.query_one(".folded-text", Static).update(self._folded_content())

    def scroll_to_found(self, tries: int = 5) -> bool:
        """The chat scrolled so that the line holding the words a search found is near the top;
        tried again after the next refresh while the chat is not laid out to it yet. False where
        no words are marked in it (scrolled to nothing)."""
        log, body = self.parent, self.body
        span = self._folded_found()
        widget: Static | None
        if span is not None:
            widget, text = self.query_one(".folded-text", Static), self._said(self._folded)
        elif isinstance(body, PlainBody) and body.found is not None:
            widget, text, span = body, body.shown, body.found
        else:
            return False
        if not isinstance(log, Widget):
            return False
        width = max(1, widget.content_region.width)
        line = sum(max(1, -(-cell_len(part) // width)) for part in text[:span[0]].split("\n")) - 1
        log.scroll_to_widget(self, top=True, animate=False, immediate=True)
        top = log.scroll_y
        log.scroll_to_widget(widget, top=True, animate=False, immediate=True)
        y = log.scroll_y + line  # the message's top where the line is seen from there, else the line, 2 above it
        y = top if y - top < log.scrollable_content_region.height - 1 else y - 2
        if y > log.max_scroll_y and tries:
            self.call_after_refresh(self.scroll_to_found, tries - 1)
        log.scroll_to(y=y, animate=False, immediate=True)
        return True

    def on_collapsible_expanded(self, event: Collapsible.Expanded) -> None:
        if event.collapsible.has_class("folded"):
            self._show_folded()
            event.collapsible.title = self._folded_title(shown=True)
        else:
            self.query_one(".thought-text", Static).update(self.reasoning)

    @property
    def body(self) -> Markdown | PlainBody:
        """The message's text: a ``Markdown``, or a ``PlainBody`` where it has no Markdown."""
        return cast("Markdown | PlainBody", self.query_one(".body"))

    def _markdown(self, text: str) -> Markdown:
        return ChatMarkdown(text, classes="body", parser_factory=chat_markdown)

    def _show_body(self, text: str) -> Awaitable[None] | None:
        """Show ``text`` as the message's text (as plain text only where it is plain)."""
        body = self.body
        if isinstance(body, Markdown):
            return body.update(text)
        shown = plain_text(text)
        if shown is not None:
            body.source = text
            body.update(Content(shown))
            return None
        self.mount(self._markdown(text), after=body)
        return body.remove()

    async def _markdown_body(self) -> Markdown:
        """The text as a ``Markdown`` a reply can stream into (a saved reply gone on with, Alt+C)."""
        body = self.body
        if isinstance(body, Markdown):
            return body
        markdown = self._markdown(body.source)
        with self.app.batch_update():
            await self.mount(markdown, after=body)
            await body.remove()
        return markdown

    def relabel(self, texts: Texts) -> None:
        self.texts = texts
        self.query_one(".role", Static).update(self._role_label())
        if self.role != "user":
            figures = self.query_one(".metrics", Static)
            figures.update(self._metrics_text())
            if self.role == "assistant":
                figures.tooltip = texts("metric.help", bench=cli("bench"))
            if self._live is not None:  # (a reply streaming: what is said of it, in the new language)
                self._say_live(self._live[0], **self._live[1])
        if (block := self.thought) is not None:
            block.title = self._thought_title()
        if self._folded:
            block = self.query_one(".folded", Collapsible)
            block.title = self._folded_title(shown=not block.collapsed)
            if not block.collapsed:
                self._show_folded()
        if self.role == "user" and (FACTS_LABEL in self._shown or SEPARATOR.lstrip("\n") in self._shown):
            # (an attached document's line and facts, in the new language)
            self._show_body(self._shown_body())
        if self.role == "assistant" and not self.content.strip() and self.metrics:  # the app's words, not the model's
            self._show_body(self._shown_body())  # ("Stopped before the reply began" stayed in the old language)

    def _size_updated(
        self, size: Size, virtual_size: Size, container_size: Size, layout: bool = True
    ) -> bool:
        # no second layout pass when a reply grows (see StreamingText._size_updated)
        return super()._size_updated(size, virtual_size, container_size, layout=False)

    @property
    def tail(self) -> StreamingText:
        """The text still being written, under the body (made the first time a saved reply
        goes on: a widget in every message drawn cost each layout pass of the chat)."""
        found = self.query_children(".tail")
        if found:
            return found.first(StreamingText)
        tail = StreamingText(classes="tail")
        self.mount(tail, before=self.query_one(".metrics") if self.role != "user" else None)
        return tail

    async def write(self, text: str) -> None:
        now = self.clock()
        if not self._streaming or self._stalled:
            if not self._streaming:
                self._last_flush = now  # the first move comes an interval after the first text
            self._streaming, self._stalled = True, False
            self._say_live("chat.streaming")
        self.content += text
        self._tail += text
        cut = self._tail.rfind("\n\n")
        if cut >= 0 and now - self._last_flush >= self.markdown_every_s:
            done, self._tail = self._tail[: cut + 2], self._tail[cut + 2 :]
            self._last_flush = now
            body = await self._markdown_body()
            with self.app.batch_update():  # the Markdown grows and the tail shrinks at once
                await body.append(done)
                self.tail.set_text(self._tail.lstrip("\n"), reflow=True)
            return
        self.tail.set_text(self._tail.lstrip("\n"))

    async def finish(self, text: str, metrics: TurnMetrics, reasoning: str = "",
                     record: dict[str, Any] | None = None) -> None:
        """End the stream, then render the whole reply once (closes any half-open fence). A
        reply that was all thinking, cut by its token limit, says so where the answer goes.
        ``record``: the turn as the conversation keeps it (its session sampling said too)."""
        self._streaming = self._stalled = False
        self._tail = ""
        self._live = None
        self.tail.clear()
        self.content = text
        self.metrics = record if record is not None else metrics.to_dict()
        self.reasoning = reasoning or self.reasoning
        if self.reasoning:
            block = await self._shown_thought()
            block.title = self._thought_title()
            self.query_one(".thought-text", Static).update(self.reasoning)
        await (await self._markdown_body()).update(self._shown_body())
        self.query_one(".metrics", Static).update(self._metrics_text())
