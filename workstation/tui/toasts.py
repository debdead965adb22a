"""The app's notices (toasts): how long each stays to be read, one of a kind at a time, and
those still shown said again in the new language after F9."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from textual.app import ScreenStackError
from textual.css.query import NoMatches
from textual.notifications import Notification, Notify, SeverityLevel
from textual.screen import Screen
from textual.widgets._toast import Toast, ToastHolder, ToastRack

from workstation.tui.app_part import AppPart
from workstation.tui.line_breaks import paths_broken_at
from workstation.tui.screens.app_screen import AppScreen

if TYPE_CHECKING:
    from workstation.tui.app import WorkstationApp

# how fast a notice is read, in characters: the same in every language the UI speaks (about 1,000 a
# minute, IReST's adults; an office reader's a little slower). In words (3 a second) a Turkish
# sentence of as many letters, in fewer longer words, went a third sooner than its English one
READING_CHARACTERS_PER_SECOND = 15.0
# a warning that asks for nothing stays no longer (one stayed over two screens): only those that ask
# the user to act (mend a file, delete a copy, wait for another window) give notify a longer timeout
WARNING_MOST_S = 8.0
# the kind (``notify``'s) of the chat's refusal of a message with a document too long for it ("Not sent: …
# F3 …"): put away as F3 opens, the profiles under it
NOT_SENT = "not-sent"
# the kind (``notify``'s) of a profile's load said: "Loading the profile …" as it begins, then how it
# ended ("Loaded: …", the API served or stopped, the load failed). The end takes the beginning's place:
# "Loaded" went after its 3 s while the older, longer "Loading the profile office-cpu…" stayed
LOAD_NOTICE = "load"


class Toasts(AppPart):
    """The app's toasts. First of the app's bases: ``notify`` is Textual's, made over."""

    def notify(self: WorkstationApp, message: str, *, title: str = "", severity: SeverityLevel = "information",
               timeout: float | None = None, markup: bool = False, kind: str = "") -> None:
        """A toast, as plain text unless ``markup``: messages name files and quote servers, and
        a '[/' in a path was read as markup; a markup error took the whole app down. ``kind``
        (from the app's thread only): the last toast of that kind, still shown, gives way to
        this one (Ctrl+Y pressed through five replies stacked five "Copied" toasts). An error or a
        warning says so in its title ("Problem", "Warning"): only the colour of its edge told it
        from a notice that all went well, red beside green to a colour-blind eye, and the same
        grey without colours (NO_COLOR); a screen reader reads the word first."""
        if not title and severity in ("error", "warning"):
            title = self.texts(f"toast.{severity}")
        if timeout is None:  # a warning: its reading time, between Textual's five seconds and WARNING_MOST_S
            timeout = self.reading_time(message) if severity == "information" else \
                self.reading_time(message, least=self.NOTIFICATION_TIMEOUT, most=WARNING_MOST_S) \
                if severity == "warning" else self.NOTIFICATION_TIMEOUT
        toast = Notification(message, title, severity, timeout, markup=markup)
        for identity, (shown, *_) in list(self._phrase_of_toast.items()):
            if shown.has_expired:
                self._phrase_of_toast.pop(identity, None)
        phrase = self.texts.phrase_of(message)
        if phrase is not None:  # (said again in the new language after F9; the others are put away then)
            self._phrase_of_toast[toast.identity] = (toast, phrase, self.texts.phrase_of(title) if title else None)
        if not kind:
            self.post_message(Notify(toast))
            return
        self.put_away(kind, refresh=False)  # (the new one's arrival redraws them)
        self._toast_of[kind] = toast
        self.post_message(Notify(toast))

    def put_away(self: WorkstationApp, kind: str, refresh: bool = True) -> None:
        """The last toast of ``kind`` (``notify``'s), if still shown, taken away."""
        last = self._toast_of.pop(kind, None)
        if last is not None and last in self._notifications:
            self._unnotify(last, refresh=refresh)

    def reading_time(self: WorkstationApp, message: str, least: float = 3.0, most: float | None = None) -> float:
        """How long a notice stays: the time to read it in characters, whatever the UI's language
        (READING_CHARACTERS_PER_SECOND, and a second to look), ``least`` at least and ``most`` at
        most (Textual's five for a notice that all went well: at 80x24 a short "Copied the last
        reply" covered the reply's lines as long as a long one did)."""
        most = self.NOTIFICATION_TIMEOUT if most is None else most
        return min(most, max(least, 1.0 + len(message) / READING_CHARACTERS_PER_SECOND))

    def _on_notify(self: WorkstationApp, event: Notify) -> None:
        """A toast the same as one still shown (title, words and kind of notice) takes its place,
        at the top of the stack with its time anew: F3 on a server that is down, chosen again,
        stacked two "Problem: The new profile could not be loaded…" toasts, read as two
        problems. (Textual's own handler, after this one, adds the toast and draws the stack.)"""
        new = event.notification
        for shown in list(self._notifications):
            if (shown.title, shown.message, shown.severity) == (new.title, new.message, new.severity):
                self._unnotify(shown, refresh=False)

    def _unnotify(self: WorkstationApp, notification: Notification, refresh: bool = True) -> None:
        """Textual's, and the toasts drawn again once the last notice is gone: a toast whose time
        is up forgets its notice without that (``Toast._expire``) and takes its own line away only,
        so the chat's rack of notices stayed shown with none in it, and the chat kept its last
        lines clear of it (``AppScreen.place_notices``): blank rows under the reply, a PgUp after,
        until a restart (resizing did not help)."""
        super()._unnotify(notification, refresh=refresh)  # type: ignore[misc]
        if not refresh and not self._notifications:
            self.call_later(self._refresh_notifications)  # (the rack hidden, the chat's lines back)

    def _refresh_notifications(self: WorkstationApp) -> None:
        """Textual's (the toasts shown on the screen), and the screen's toasts looked at after
        each of its layouts (``_toasts_laid_out``), once per screen. A toast put away before its
        time (``put_away``: one of a kind given way to the next) goes with its holder, as one whose
        time is up does (``Toast._expire``): Textual's rack took the toast out and left its empty
        holder, a row or two tall, and the chat kept them clear too (Up, Up: 6 rows for a notice of 3)."""
        try:
            screen = self.screen
        except ScreenStackError:  # (the app closing, its screens gone: a notice said then stopped the app)
            return
        for rack in screen.query_children(ToastRack):
            for toast in rack.query(Toast):
                if toast._notification not in self._notifications:
                    (toast.parent if isinstance(toast.parent, ToastHolder) else toast).remove()
        super()._refresh_notifications()  # type: ignore[misc]
        if screen not in self._toasts_looked_at:
            self._toasts_looked_at.add(screen)
            screen.screen_layout_refresh_signal.subscribe(self, self._toasts_laid_out)

    def _toasts_laid_out(self: WorkstationApp, screen: Screen[object]) -> None:
        """After a layout of ``screen``: a path in a toast broken after one of its slashes where
        the toast's line ends (``paths_broken_at``), not inside a name: "Wrote the conversation to …Mr-Bro" with "wn.md"
        on the next line. Once laid out (its width known); the toast's own words only: the notice
        (``_notifications``) keeps its message as it was said. Then the screen puts its toasts
        where they cover nothing read (``AppScreen.place_notices``: the chat's, above its message box)."""
        try:
            rack = screen.get_child_by_type(ToastRack)
        except NoMatches:
            return
        if isinstance(screen, AppScreen):
            screen.place_notices(rack)
        for toast in rack.query(Toast):
            shown = toast._notification
            broken = paths_broken_at(shown.message, toast.content_size.width)
            if broken != shown.message:
                toast._notification = dataclasses.replace(shown, message=broken)
                toast.refresh(layout=True)

    def _say_toasts_again(self: WorkstationApp) -> None:
        """After F9, the toasts still shown in the language before: each said again in the new
        one, in its place and with the time it had left, where it was one sentence of the
        locale's (``Texts.phrase_of``); the others put away (a Turkish warning stayed on the
        English screen, and one said of Turkish alone, "too small for Turkish", is untrue there)."""
        phrases, self._phrase_of_toast = self._phrase_of_toast, {}
        kinds = {toast.identity: kind for kind, toast in self._toast_of.items()}
        self._toast_of = {}
        for toast in list(self._notifications):
            self._unnotify(toast, refresh=False)
            _, phrase, title = phrases.get(toast.identity, (None, None, None))
            if phrase is None or toast.has_expired:
                continue
            again = Notification(self.texts(phrase[0], **phrase[1]),
                                 self.texts(title[0], **title[1]) if title else toast.title,
                                 toast.severity, toast.timeout, toast.markup, toast.raised_at)
            self._notifications.add(again)
            self._phrase_of_toast[again.identity] = (again, phrase, title)
            if toast.identity in kinds:
                self._toast_of[kinds[toast.identity]] = again
        self._refresh_notifications()
