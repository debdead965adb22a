"""Finding conversations (``ConversationStore.list``): newest first, by the words of their
titles and messages, case aside in any language (SQLite's LIKE folds ASCII only), with the
words around where a message matched."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from workstation.core.conversation_records import Conversation
from workstation.core.conversation_titles import SNIPPET_CHARS, match_snippet, one_line
from workstation.core.letters import fold, shortened

if TYPE_CHECKING:
    from workstation.core.store import ConversationStore


def _ascii_cores(folded: str) -> list[str]:
    """The stretches of a folded needle that any text it is found in holds as they are, but for
    ASCII case (what LIKE sets aside): ASCII letters, digits and spaces, not i (İ, I, ı fold
    to it), c, g, o, s, u (ç, ğ, ö, ş, ü fold to them) nor f, k (ß, ſ, ﬁ and the Kelvin sign
    fold to f, s, k); those of 2 or more."""
    return [run for run in re.split(r"[^abdehjlmnpqrtv-z0-9 ]", folded) if len(run) >= 2]


class ConversationSearch:
    """``list``: the conversations, newest first, or those a search finds. A part of
    ``ConversationStore``: the database (``_db``, with its ``fold`` function) is the store's."""

    def list(self: ConversationStore, search: str = "") -> list[Conversation]:
        """Conversations, newest first; ``search`` matches titles and message text."""
        if search.strip():
            needle = one_line(search)
            folded = fold(needle)  # case aside in Turkish too: SQLite's LIKE folds ASCII only
            # LIKE first (in C) on a part of the needle any match must hold as it is, case aside:
            # fold() on every message took 0.7 s a keystroke over 40 MB of conversations
            cores = _ascii_cores(folded)
            found = self._db.execute(
                "SELECT f.*, h.content FROM (SELECT id, title, profile, created, updated, "
                "(SELECT id FROM messages m WHERE m.conversation_id = c.id "
                + "".join("AND m.content LIKE ? " for _ in cores)
                + "AND instr(fold(m.content), ?) ORDER BY m.id LIMIT 1) AS hit FROM conversations c) f "
                "LEFT JOIN messages h ON h.id = f.hit "
                "WHERE instr(fold(f.title), ?) OR f.hit IS NOT NULL ORDER BY f.updated DESC, f.id DESC",
                (*(f"%{core}%" for core in cores), folded, folded),
            ).fetchall()
            out = []
            for *row, hit_id, hit in found:
                conv = Conversation(*row)
                if hit and folded not in fold(conv.title):
                    # (a match the regular expression cannot see, Straße for "strasse": the
                    # message's first words, not an empty line under the title)
                    conv.match = match_snippet(hit, needle) or shortened(one_line(hit[: 4 * SNIPPET_CHARS]), SNIPPET_CHARS)
                    conv.match_id = int(hit_id)
                out.append(conv)
            return out
        else:
            rows = self._db.execute(
                "SELECT id, title, profile, created, updated FROM conversations "
                "ORDER BY updated DESC, id DESC"
            ).fetchall()
        return [Conversation(*row) for row in rows]
