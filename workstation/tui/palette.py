"""Textual's command palette (Ctrl+P) in the app's language: its "No matches found" said in it,
its search folding Turkish letters as conversation search does (KULLANIM found nothing in
"Kullanım", İNGİLİZCE nothing in "İngilizce", "disa" nothing in "Dışa aktar"), a command found
by its other words too ("save": Export, "e-mail" and "email": Attach) and by each word of
several ("bigger model": Models), a short word only by a word's start ("dil" found "Diğer
yanıt (Alt+V)" by its letters spread out), and its list in the alphabet's order (code points put
"Çık", "Özetle" and "İstem" after z)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from rich.align import Align
from rich.text import Text
from textual.command import CommandList, CommandPalette, DiscoveryHit, Hit, Hits
from textual.fuzzy import FuzzySearch, Matcher
from textual.system_commands import SystemCommandsProvider
from textual.widgets.option_list import Option

from workstation.core import letters


def fold(text: str) -> str:
    """``text`` folded as search folds it (``letters.fold``), one character for one, so that a
    match's places stay the text's (a rare letter that folds to two, ß: lower case only)."""
    folded = letters.fold(text)
    return folded if len(folded) == len(text) else text.lower()


FUZZY_FROM = 5  # a typed word this long may match letters spread out ("eposta": "e-posta"); a shorter one,
# a word's start only: "dil" (language) listed "Diğer yanıt (Alt+V)" and "Düzenleyici (Ctrl+E)"


def finds(typed: str, text: str) -> bool:
    """Whether the palette may find ``text`` by ``typed`` (or a word of it): a word of
    ``FUZZY_FROM`` letters or more by the fuzzy matcher, a shorter one only where it begins a
    word of ``text`` (folded as ``fold`` folds them)."""
    typed = fold(typed.strip())
    return len(typed) >= FUZZY_FROM or re.search(rf"(?<!\w){re.escape(typed)}", fold(text)) is not None


class FoldedSearch(FuzzySearch):
    def _match(self, query: str, candidate: str) -> Iterable[tuple[float, Sequence[int]]]:
        return super()._match(fold(query), fold(candidate))


class FoldedCommands(SystemCommandsProvider):
    """The app's commands (``App.get_system_commands``), listed in the alphabet's order
    (``letters.alphabetical``, as the file picker lists names) and searched with ``fold``."""

    async def discover(self) -> Hits:
        for name, help_text, callback, discover in sorted(self.app.get_system_commands(self.screen),
                                                          key=lambda command: letters.alphabetical(command[0])):
            if discover:
                yield DiscoveryHit(name, callback, help=help_text)

    async def search(self, query: str) -> Hits:
        """As Textual's (the name matched), and by the command's other words in the app's
        language too (``WorkstationApp.other_words``: "save" finds Export), with the same matcher;
        a query of several words by each of its words ("bigger model": Models, by its other word
        "bigger" and its name), as people type what they want rather than a command's name, less
        the words that say nothing of one (``WorkstationApp.filler_words``: "daha büyük model",
        "a bigger model" found nothing)."""
        matcher = self.matcher(query)
        filler = getattr(self.app, "filler_words", set)()
        typed = [word for word in query.split() if fold(word) not in filler] or query.split()
        words = [self.matcher(word) for word in typed]
        other_words = getattr(self.app, "other_words", lambda _callback: [])
        for name, help_text, callback, *_ in self.app.get_system_commands(self.screen):
            texts = [name, *other_words(callback)]
            score = max(matcher.match(text) if finds(query, text) else 0.0 for text in texts)
            if not score and len(query.split()) > 1:
                each = [max(word.match(text) if finds(said, text) else 0.0 for text in texts)
                        for said, word in zip(typed, words, strict=True)]
                score = sum(each) / len(each) if all(each) else 0.0
            if score > 0:
                yield Hit(score, matcher.highlight(name), callback, help=help_text)

    def matcher(self, user_input: str, case_sensitive: bool = False) -> Matcher:
        matcher = super().matcher(user_input, case_sensitive)
        matcher.fuzzy_search = FoldedSearch()
        return matcher


class LocalPalette(CommandPalette):
    """The palette with "No matches found" in ``no_matches``'s words."""

    def __init__(self, no_matches: str, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.no_matches = no_matches

    def _start_no_matches_countdown(self, search_value: str) -> None:  # Textual's, its words ours
        self._stop_no_matches_countdown()

        def show() -> None:
            lists = list(self.query(CommandList).results(CommandList))  # (none: closed meanwhile)
            if search_value and lists:
                lists[0].add_option(
                    Option(Align.center(Text(self.no_matches, style="not bold")), disabled=True, id=self._NO_MATCHES))
                self._list_visible = True
            else:
                self._list_visible = False

        self._no_matches_timer = self.set_timer(self._NO_MATCHES_COUNTDOWN, show)
