"""Finding a clause again (Ctrl+F), through the real TUI and a real store: the result line
shows the words around the match that the sidebar holds, the words marked; opening it unfolds
the fold that holds them, scrolls to their line and marks them until the next key."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Collapsible, Label, Static
from tui_helpers import make_app, message_views, screen_lines, until

FOUND_STYLE = "bold underline"  # the words found, as drawn (conversation_list.FOUND_STYLE)

CONTRACT = "\n".join(
    "5. Termination Either party may end this agreement with thirty days' written notice." if n == 32
    else f"{n}. The supplier delivers the goods of schedule {n} on the agreed day."
    for n in range(1, 41)
)


def _marked(content: object) -> list[str]:
    """The pieces of ``content`` (a ``Content``) drawn as words a search found."""
    plain = str(content)
    return [plain[s.start:s.end] for s in getattr(content, "spans", []) if str(s.style) == FOUND_STYLE]


@pytest.mark.parametrize("size", [(80, 24), (110, 32)])
async def test_a_result_opens_at_the_clause_unfolded_and_marked_till_the_next_key(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, size: tuple[int, int]) -> None:
    app = make_app(tmp_path, monkeypatch)
    conv = app.store.new("Supplier contract")
    app.store.add_message(conv.id, "user", CONTRACT)
    app.store.add_message(conv.id, "assistant", "Noted: 40 clauses.")
    other = app.store.new("Lunch")  # opened at the start: the contract is not
    app.store.add_message(other.id, "user", "Soup today?")
    async with app.run_test(size=size) as pilot:
        await until(pilot, lambda: app.conversation_id == other.id)
        await pilot.press("ctrl+f", *"termination")
        await until(pilot, lambda: bool(app.chat_screen.sidebar.query(".match")))
        await pilot.pause()
        line = app.chat_screen.sidebar.query_one(".match", Label)
        shown = line.render()
        # the words around the match that the sidebar's width holds, cut at a word, the match whole and marked
        assert len(str(shown)) <= line.size.width, (str(shown), line.size.width)
        assert _marked(shown) == ["Termination"], str(shown)
        assert any("Termination" in row for row in screen_lines(app))

        await pilot.press("enter")
        await until(pilot, lambda: app.conversation_id == conv.id)
        view = next(v for v in message_views(app) if v.role == "user")
        block = view.query_one(".folded", Collapsible)
        await until(pilot, lambda: not block.collapsed, what="the fold holding the clause opened")
        text = view.query_one(".folded-text", Static)
        await until(pilot, lambda: _marked(text.content) == ["Termination"], what="the words found marked")
        for _ in range(3):
            await pilot.pause()
        assert any("5. Termination Either party" in row for row in screen_lines(app)), "\n".join(screen_lines(app))

        await pilot.press("x")  # the next key: the mark goes (the fold stays open)
        await until(pilot, lambda: _marked(text.content) == [], what="the mark gone at the next key")
        assert not block.collapsed
