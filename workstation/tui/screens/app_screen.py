"""What every screen of the app shares."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, ClassVar, cast

if TYPE_CHECKING:
    from textual.screen import Screen
    from textual.widgets._toast import ToastRack

    from workstation.tui.app import WorkstationApp


class AppScreen:
    """Mixed into the app's screens (before Textual's ``Screen``): ``wapp`` is the running
    ``WorkstationApp``, typed."""

    # the app's action whose key opens this screen: its footer leaves that key out (F6's showed
    # "f6 Summarize" on F6 itself)
    OPENED_BY: ClassVar[str] = ""

    @property
    def wapp(self) -> WorkstationApp:
        return cast("WorkstationApp", self.app)  # type: ignore[attr-defined]

    def place_notices(self, rack: ToastRack) -> None:
        """Where this screen's toasts go, after each of its layouts (``Toasts._toasts_laid_out``):
        where its CSS puts them, on a screen whose layout does not say otherwise."""

    def close(self, result: Any = None) -> None:
        """Dismiss this screen with ``result``: at once where it is on top, else once it is on top
        again (a dialog opened over it while its work went on: Ctrl+Q's question, Ctrl+P's palette);
        nothing where it is closed already. Textual's ``dismiss`` pops the top screen, whichever
        it is: the Open dialog's file, read behind the palette, closed the palette, and the Open
        dialog stayed, its file taken."""
        screen = cast("Screen[Any]", self)
        app = screen.app
        if screen not in app.screen_stack:
            return
        if app.screen is screen:
            screen.dismiss(result)
            return

        def shown(top: Screen[Any]) -> None:
            if top is screen and app.screen is screen:  # (still: the call comes a moment after)
                app.screen_change_signal.unsubscribe(screen)
                screen.dismiss(result)

        app.screen_change_signal.subscribe(screen, shown)

    def translate_bindings(self) -> None:
        """The screen's keys, as the footer shows them, in the app's language (the locale's
        ``binding.<id>``; a binding without one keeps its English words)."""
        texts = self.wapp.texts
        bindings: Any = self._bindings  # type: ignore[attr-defined]

        def said(b: Any) -> Any:
            if not b.id:
                return b
            key = f"binding.{self.words_of(b.id)}"
            words = texts(key)
            return dataclasses.replace(b, description=words) if words != key else b

        for key, items in list(bindings.key_to_bindings.items()):
            bindings.key_to_bindings[key] = [said(b) for b in items]
        self.refresh_bindings()  # type: ignore[attr-defined]

    def words_of(self, binding_id: str) -> str:
        """The locale key (after ``binding.``) of the words a binding's key has in the footer now:
        its id; a screen whose key does another thing in a state says that state's."""
        return binding_id
