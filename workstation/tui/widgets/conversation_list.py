"""The sidebar: search box and the list of saved conversations."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import Input, Label, ListItem, ListView

from workstation.core.store import Conversation
from workstation.tui.i18n import Texts


class ConversationItem(ListItem):
    """A conversation in the list: its title and, found by a search in its messages, the
    words around the match (why it is listed)."""

    def __init__(self, conversation: Conversation) -> None:
        labels = [Label(conversation.title, markup=False)]
        if conversation.match:
            labels.append(Label(conversation.match, markup=False, classes="match"))
        super().__init__(*labels)
        self.conversation_id = conversation.id


class ConversationList(Vertical):
    """Posts ``Chosen`` when the user opens a conversation, ``SearchChanged`` as they type and
    ``SearchSubmitted`` on Enter in the search box."""

    class Chosen(Message):
        def __init__(self, conversation_id: int) -> None:
            super().__init__()
            self.conversation_id = conversation_id

    class SearchChanged(Message):
        def __init__(self, text: str) -> None:
            super().__init__()
            self.text = text

    class SearchSubmitted(Message):
        """Enter in the search box: open the first match."""

        def __init__(self, text: str) -> None:
            super().__init__()
            self.text = text

    def __init__(self, texts: Texts, id: str | None = None) -> None:  # noqa: A002
        super().__init__(id=id)
        self.texts = texts
        self._filling = False

    def compose(self) -> ComposeResult:
        yield Input(placeholder=self.texts("sidebar.search"), id="search")
        yield ListView(id="conversations")

    def relabel(self, texts: Texts) -> None:
        self.texts = texts
        self.query_one("#search", Input).placeholder = texts("sidebar.search")

    async def show(self, conversations: list[Conversation], current: int | None) -> None:
        view = self.query_one(ListView)
        self._filling = True
        await view.clear()
        items = [ConversationItem(c) for c in conversations]
        await view.extend(items)
        for i, item in enumerate(items):
            if item.conversation_id == current:
                view.index = i
                break
        self._filling = False

    @on(ListView.Selected)
    def _chosen(self, event: ListView.Selected) -> None:
        event.stop()
        if isinstance(event.item, ConversationItem) and not self._filling:
            self.post_message(self.Chosen(event.item.conversation_id))

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
