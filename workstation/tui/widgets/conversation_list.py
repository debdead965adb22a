"""The sidebar: search box and the list of saved conversations."""

from __future__ import annotations

import asyncio
import datetime as dt
import difflib
import functools
from collections.abc import Awaitable, Callable

from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.content import Content
from textual.message import Message
from textual.widgets import Input, Label, ListItem, ListView

from workstation.core.conversation_records import Conversation
from workstation.core.conversation_titles import match_span, one_line, title_change
from workstation.tui.i18n import Texts
from workstation.tui.widgets.line_input import LineInput

FOUND_STYLE = "bold underline"  # the words a search found, where they are shown (the sidebar, the message opened)


def found_words(text: str, needle: str, width: int) -> Content:
    """``text`` (the words around a match, "…" where they go on) cut to ``width`` columns
    around where ``needle`` is in it, a few words before it and the rest after, cut at a space,
    with the words found marked (cut by the label at a fixed length, the match was half cut
    or the words after it gone in a narrow sidebar)."""
    span = match_span(text, needle)
    if span is None:
        return Content(text)
    start, end = span
    if width > 0 and len(text) > width:
        lead, trail = text.startswith("…"), text.endswith("…")
        body_end = len(text) - 1 if trail else len(text)
        before = min(start - int(lead), max(0, (width - (end - start)) // 3))
        first = start - before
        if end < width:  # (the match seen from the start: the text from there)
            first = 0
        elif first > int(lead):  # from a word's start
            space = text.find(" ", first - 1, start)
            first = space + 1 if space >= 0 else first
        else:
            first = int(lead)
        prefix = "…" if first > 0 and not (lead and first == 1) else ""
        room = width - len(prefix)
        last = min(body_end, first + room)
        if last < body_end or trail:
            last = min(body_end, first + room - 1)
            space = text.rfind(" ", end, last + 1)
            last = space if space >= end and last < body_end else last
        suffix = "…" if last < len(text) else ""
        text, start, end = prefix + text[first:last].rstrip() + suffix, start - first + len(prefix), end - first + len(prefix)
    return Content(text).stylize(FOUND_STYLE, max(0, start), max(0, min(end, len(text))))


class FoundWords(Label):
    """Under a conversation a search found in its messages: the words around the match that
    the sidebar's width holds, the words found marked (``found_words``)."""

    def __init__(self, text: str, needle: str) -> None:
        super().__init__(text, markup=False, classes="match")
        self.text, self.needle = text, needle

    def render(self) -> Content:
        return found_words(self.text, self.needle, self.size.width)


class TitleLabel(Label):
    """A conversation's title in the list, on two lines where it needs them, the second ending
    with "…" where even two are too few: on one line, a new conversation's title (up to 48
    letters) showed its first 22 at 110 columns ("Write a short thank-yo…")."""

    LINES = 2

    def __init__(self, title: str) -> None:
        super().__init__(title, markup=False, classes="title")
        self.title_text = title

    def render(self) -> Content:
        width = self.content_region.width
        lines = Content(self.title_text).wrap(width) if width > 0 else []
        if len(lines) <= self.LINES:
            return Content(self.title_text)
        kept = [line.plain.strip() for line in lines[: self.LINES - 1]]
        rest = self.title_text
        for line in kept:  # (each line a part of the title, in turn)
            rest = rest[rest.index(line) + len(line):] if line in rest else rest
        return Content("\n".join([*kept, Content(rest.strip()).truncate(width, ellipsis=True).plain]))


class ConversationItem(ListItem):
    """A conversation in the list: its title and, found by a search in its messages, the
    words around the match (why it is listed)."""

    def __init__(self, conversation: Conversation | None, draft: str = "", texts: Texts | None = None,
                 search: str = "") -> None:
        """``conversation`` None: the new conversation not started yet, listed while it holds
        a draft; ``draft``: what is typed and not sent there; ``search``: what found it."""
        t = texts or Texts()
        title = conversation.title if conversation is not None else t("sidebar.new_draft")
        change = title_change(title) if conversation is not None else None
        if change is not None:  # a copy gone on from an earlier message: told apart from its original
            # at the line's start (cut, "Write a two-line note to staff…" was both), its title whole elsewhere
            rest, kind, n = change
            title = t("sidebar.changed_at" if kind == "changed" else "sidebar.again_from", n=n, title=rest)
        labels: list[Label] = [TitleLabel(title)]
        if conversation is not None and conversation.match:
            labels.append(FoundWords(conversation.match, search))
        if draft.strip():
            labels.append(Label(t("sidebar.draft", text=one_line(draft)), markup=False, classes="draft"))
        super().__init__(*labels)
        self.conversation_id = conversation.id if conversation is not None else None
        self.match_id = conversation.match_id if conversation is not None and conversation.match else None


class SearchBox(LineInput):
    """The search line: Esc clears the search and goes back to the message box, Down goes into
    the results (Esc did nothing, the filter and the focus stayed; Down did nothing either)."""

    BINDINGS = [Binding("escape", "leave", show=False), Binding("down", "to_list", show=False)]

    def action_leave(self) -> None:
        stop = getattr(self.app, "action_stop", None)
        if stop is not None and getattr(self.app, "generating", False):  # Esc stops a reply anywhere in the chat
            stop()
        self.value = ""  # (Changed: the whole list again)
        focus_prompt = getattr(self.screen, "focus_prompt", None)
        if focus_prompt is not None:
            focus_prompt()

    def action_to_list(self) -> None:
        """Into the results (Down did nothing)."""
        if self.parent is not None:
            self.parent.query_one(ListView).focus()


class ConversationsView(ListView):
    """The list: focused (Down from the search, Tab, a click) with no line highlighted (the open
    conversation not among the results, or just deleted), its first line is, so that Enter
    opens one (it did nothing, and Down was needed first)."""

    def on_focus(self, event: events.Focus) -> None:
        if self.index is None and self.children:  # (the first that is not a day's heading)
            self.index = next((i for i, item in enumerate(self.children) if not item.disabled), None)

    def watch_index(self, old_index: int | None, new_index: int | None) -> None:
        """As a list's, and the day's heading over the line the cursor comes to kept in sight
        with it: walked up, the list scrolled to the line alone, the heading just above the
        top (back at the first line, its 'Today' was not seen again)."""
        super().watch_index(old_index, new_index)
        if new_index is None or not 0 < new_index < len(self.children):
            return
        above = self.children[new_index - 1]
        if above.has_class("day"):
            self.call_after_refresh(self.scroll_to_widget, above, animate=False)


class ConversationList(Vertical):
    """Posts ``Chosen`` when the user opens a conversation, ``SearchChanged`` as they type and
    ``SearchSubmitted`` on Enter in the search box."""

    class Chosen(Message):
        """``message_id``: the message a search found in it (opened there), else None;
        ``words``: what the search was for (marked there)."""

        def __init__(self, conversation_id: int | None, message_id: int | None = None, words: str = "") -> None:
            super().__init__()
            self.conversation_id = conversation_id
            self.message_id = message_id
            self.words = words

    class SearchChanged(Message):
        def __init__(self, text: str) -> None:
            super().__init__()
            self.text = text

    class SearchSubmitted(Message):
        """Enter in the search box: open the first match."""

        def __init__(self, text: str) -> None:
            super().__init__()
            self.text = text

    PAGE = 100  # conversations listed at a time; a last line lists the next ones

    def __init__(self, texts: Texts, today: Callable[[], dt.date] = dt.date.today,
                 id: str | None = None) -> None:  # noqa: A002
        super().__init__(id=id)
        self.texts = texts
        self.today = today  # the app's (its clock), for the days' headings
        self._filling = False
        self._shown: list[tuple[object, ...]] = []  # what the list holds now, line by line
        self._all: tuple[list[Conversation], int | None, dict[int | None, str] | None, str] = ([], None, None, "")
        self._search = ""
        self._count = self.PAGE
        self._showing = asyncio.Lock()  # one show at a time: two at once (F9's and a refresh) listed items twice

    def compose(self) -> ComposeResult:
        yield SearchBox(placeholder=self.texts("sidebar.search"), id="search")
        yield ConversationsView(id="conversations")

    def relabel(self, texts: Texts) -> None:
        """In ``texts``' language (F9): the search box, and the lines ("Draft:", "New
        conversation", "N more"), which stayed in the other until the list changed."""
        self.texts = texts
        self.query_one("#search", Input).placeholder = texts("sidebar.search")
        conversations, current, drafts, search = self._all
        # (the call, not its coroutine: a second F9 cancelled the first one's worker before it began,
        # and its coroutine was never awaited, a RuntimeWarning)
        self.run_worker(functools.partial(self.show, conversations, current, drafts, search=search), exclusive=True,
                        group="relabel", exit_on_error=False)

    async def show(self, conversations: list[Conversation], current: int | None,
                   drafts: dict[int | None, str] | None = None, *, more: bool = False, search: str = "") -> None:
        """The list; a conversation not open that holds a draft says so under its title (the
        new conversation too, at the top, while it holds one and another is open). The first
        ``PAGE`` are listed, and a last line lists the next ones (``more``: one page more).
        Every line was made again at each call: with 500 conversations opening one, each
        key typed in the search and each message sent took 2 s; the same lines are kept."""
        async with self._showing:
            await self._show(conversations, current, drafts, more=more, search=search)

    async def _show(self, conversations: list[Conversation], current: int | None,
                    drafts: dict[int | None, str] | None, *, more: bool, search: str) -> None:
        self._all = (conversations, current, drafts, search)
        drafts = {k: v for k, v in (drafts or {}).items() if k != current and v.strip()}
        if more:
            self._count += self.PAGE
        elif search != self._search:  # pages listed stay listed (opening one on page 2 folded the list)
            self._count = self.PAGE
        self._search = search
        at = next((i for i, c in enumerate(conversations) if c.id == current), -1)
        self._count = max(self._count, at + 1)  # the open one is listed, wherever it is
        listed = conversations[:self._count]
        headings = self.day_headings(listed)
        lines: list[tuple[object, ...]] = [(self.texts.lang,)] + ([(None, drafts[None])] if None in drafts else [])
        for c in listed:
            if c.id in headings:
                lines.append(("day", headings[c.id]))
            lines.append((c.id, c.title, c.match, c.match_id, drafts.get(c.id, ""), search if c.match else ""))
        left = len(conversations) - len(listed)
        if left:
            lines.append(("more", left, self.texts.lang))
        none_found = bool(search.strip()) and not conversations  # (a blank list said nothing)
        if none_found:
            lines.append(("none", search, self.texts.lang))
        view = self.query_one(ListView)
        walked_to = view.highlighted_child if view.has_focus else None  # in the list: the line it is on stays
        wanted = [walked_to.conversation_id] if isinstance(walked_to, ConversationItem) else []  # (F2 there sent
        self._filling = True  # the cursor back to the open conversation)
        if lines != self._shown:
            await self._change(view, lines, {c.id: c for c in listed})
        for conversation_id in [*wanted, current]:
            at = next((i for i, item in enumerate(view.children)
                       if isinstance(item, ConversationItem) and item.conversation_id == conversation_id), None)
            if at is not None:
                view.index = at
                break
        self._filling = False

    def _item(self, line: tuple[object, ...], by_id: dict[int, Conversation]) -> ListItem:
        """The list's line for ``line`` (one of ``_show``'s ``lines`` but the first)."""
        kind = line[0]
        if kind is None:  # the new conversation, holding a draft
            return ConversationItem(None, str(line[1]), self.texts)
        if kind == "day":  # (not a line the cursor stops on, nor one Enter opens)
            return ListItem(Label(str(line[1]), markup=False), classes="day", disabled=True)
        if kind == "more":
            return ListItem(Label(self.texts("sidebar.more", n=line[1]), markup=False), classes="more")
        if kind == "none":
            return ListItem(Label(self.texts("sidebar.none_found", search=str(line[1]).strip()), markup=False),
                            classes="none-found", disabled=True)
        assert isinstance(kind, int)
        return ConversationItem(by_id[kind], str(line[4]), self.texts, search=str(line[5]))

    async def _change(self, view: ListView, lines: list[tuple[object, ...]], by_id: dict[int, Conversation]) -> None:
        """The list made ``lines``, changed where it differs from what it shows: the lines
        that stay are kept as they are (a deleted conversation made the whole list again: up
        to a second with 100 listed). In another language, or with most lines new, every line
        is made again."""
        changes = difflib.SequenceMatcher(None, self._shown[1:], lines[1:], autojunk=False).get_opcodes()
        kept = sum(i2 - i1 for tag, i1, i2, _, _ in changes if tag == "equal")
        if lines[:1] != self._shown[:1] or len(view.children) != len(self._shown) - 1 or 2 * kept < len(lines) - 1:
            await view.clear()  # (most lines new, a search's results cleared: as fast made whole)
            await view.extend([self._item(line, by_id) for line in lines[1:]])
            self._shown = lines
            return
        old = list(view.children)
        highlighted = view.highlighted_child
        gone = [item for tag, i1, i2, _, _ in changes if tag != "equal" for item in old[i1:i2]]
        done: list[Awaitable[object]] = [view.remove_children(gone)] if gone else []
        for tag, _, i2, j1, j2 in changes:  # (each new run before the kept line after it: all at once)
            if tag != "equal" and j2 > j1:
                items = [self._item(line, by_id) for line in lines[1 + j1:1 + j2]]
                done.append(view.mount_all(items, before=old[i2]) if i2 < len(old) else view.mount_all(items))
        for step in done:
            await step
        self._shown = lines
        kept = list(view.children)  # the line the cursor was on, where it is now (none: it went)
        view.index = kept.index(highlighted) if highlighted in kept else None

    def day_headings(self, listed: list[Conversation]) -> dict[int, str]:
        """The headings over the list's lines, by the conversation each stands above: its day
        where it differs from the line before's (Today, Yesterday, Tuesday, November 2026).
        None while every listed conversation is of one day: a week's "Draft a ticket: th…"
        lines were told apart by nothing, the list said no day and search found them alike."""
        today = self.today()
        days = [self.texts.day_heading(c.updated, today) for c in listed]
        if len(set(days)) < 2:
            return {}
        return {c.id: day for i, (c, day) in enumerate(zip(listed, days, strict=True)) if i == 0 or day != days[i - 1]}

    @on(ListView.Selected)
    async def _chosen(self, event: ListView.Selected) -> None:
        event.stop()
        if isinstance(event.item, ConversationItem) and not self._filling:
            self.post_message(self.Chosen(event.item.conversation_id, event.item.match_id,
                                          self._search if event.item.match_id is not None else ""))  # None: the new conversation
        elif event.item.has_class("more"):  # the next page, the cursor on its first line
            view = self.query_one(ListView)
            at = view.index
            conversations, current, drafts, search = self._all
            await self.show(conversations, current, drafts, more=True, search=search)
            view.index = at

    @on(Input.Changed, "#search")
    def _search(self, event: Input.Changed) -> None:
        event.stop()
        self.post_message(self.SearchChanged(event.value))

    @on(Input.Submitted, "#search")
    def _search_done(self, event: Input.Submitted) -> None:
        event.stop()
        if event.value.strip():
            self.post_message(self.SearchSubmitted(event.value))
        else:  # nothing typed: to the list, to walk it with the arrows
            self.query_one(ListView).focus()
