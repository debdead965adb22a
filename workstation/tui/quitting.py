"""Quitting: Ctrl+Q (asked first where something would be lost), Ctrl+C, SIGTERM, SIGHUP and
SIGCONT, and the terminal closed under the app."""

from __future__ import annotations

import asyncio
import os
import signal
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from textual.css.query import NoMatches

from workstation.tui.app_part import AppPart
from workstation.tui.screens.dialogs import ConfirmDialog

if TYPE_CHECKING:
    from workstation.tui.app import WorkstationApp

# quit as Ctrl+Q does (``quit_on_signals``); SIGINT comes from `kill -INT` only (Ctrl+C is read as a key);
# SIGQUIT (`kill -QUIT`; Ctrl+\\ is read as a key) left the terminal on the app's screen, the mouse
# reported and the cursor hidden
QUIT_SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT, signal.SIGQUIT)


class Quitting(AppPart):
    """How the app quits, and what it keeps on the way out."""

    def action_help_quit(self: WorkstationApp) -> None:
        """Ctrl+C, pressed to quit out of habit: how to quit, in the UI's language and keys
        (Textual's own said "Press [b]ctrl+q[/b] to quit the app", its markup shown as typed).
        During a reply in the chat it stops the reply, as Esc does (and ``ollama run``'s Ctrl+C):
        it only said how to quit, and the reply went on."""
        if self.generating and self.screen is self.chat_screen and self.summarizing is None:
            self.action_stop()
            return
        key = next((k for k, b in self.active_bindings.items() if b.binding.action in ("quit", "app.quit")), None)
        if key is not None:
            self.notify(self.texts("app.how_to_quit", keys=self.texts.key(key)), title=self.texts("app.how_to_quit_title"),
                        markup=False)

    def _take_quit_signals(self: WorkstationApp) -> None:
        """At mount (``quit_on_signals``): QUIT_SIGNALS quit as Ctrl+Q does, SIGCONT draws the
        screen again. By default SIGTERM and SIGHUP killed the app mid-reply: the reply on screen
        was lost, and the engine's process printed tracebacks into the terminal. A handler of
        Python's, not the loop's: with the terminal closed mid-reply the loop never ran again
        (``_watch_the_terminal``)."""
        loop = asyncio.get_running_loop()
        self._watch_the_terminal()
        for sig in QUIT_SIGNALS:
            if signal.getsignal(sig) is not signal.SIG_IGN:  # (under nohup a closed terminal is no reason)
                self._signals_before[sig] = signal.signal(
                    sig, lambda signum, _frame, loop=loop: self._on_quit_signal(signum, loop))
        self._signals_before[signal.SIGCONT] = signal.signal(
            signal.SIGCONT, lambda signum, frame, loop=loop: self._on_continue(signum, frame, loop))

    def _give_back_signals(self: WorkstationApp) -> None:
        """At unmount: the signals' handlers as they were before ``_take_quit_signals``."""
        for sig, before in self._signals_before.items():
            signal.signal(sig, before)
        self._signals_before.clear()

    def _on_quit_signal(self: WorkstationApp, signum: int, loop: asyncio.AbstractEventLoop) -> None:
        """SIGTERM, SIGHUP or SIGINT, in the main thread wherever it was (Python's handler, not
        the loop's: the loop may never run again, ``_watch_the_terminal``). Only what cannot
        block: the threads that act on it were started at mount (starting one here could wait
        on a lock the interrupted main thread holds)."""
        if not self._quit_signal:
            self._quit_signal.append(signum)
            self._quit_signalled_event.set()
        loop.call_soon_threadsafe(self._signalled)

    @property
    def quit_signal(self: WorkstationApp) -> int | None:
        """The signal the app quit on (``quit_on_signals``), or None."""
        return self._quit_signal[0] if self._quit_signal else None

    def _on_continue(self: WorkstationApp, signum: int, frame: Any, loop: asyncio.AbstractEventLoop) -> None:
        """SIGCONT: back from a suspend (Ctrl+Z or ``kill -TSTP``, then ``fg``; or a bare
        ``kill -CONT``). Textual's driver takes the terminal again (its handler, called first) but
        draws only what changes next: most of the screen stayed blank until a resize. The whole
        screen is drawn again (not after a quit signal: the terminal may be gone)."""
        before = self._signals_before.get(signal.SIGCONT)
        if callable(before):
            before(signum, frame)
        if not self._quit_signal:
            loop.call_soon_threadsafe(lambda: self.refresh(layout=True))

    def _watch_the_terminal(self: WorkstationApp) -> None:
        """Threads that wait for a quit signal. One: once Textual's output thread has died (it
        dies writing to a closed terminal; with the terminal still there it never does, and
        quitting puts the terminal back as Ctrl+Q does), the driver writes nothing and does not
        take the terminal again (a closed terminal's SIGCONT made it start a new output thread,
        which died as the first), and the queues of writes not written are emptied. Before, its
        queue of 30 writes filled mid-reply, and the app stopped for good inside a write, model
        and all, until killed with -9. Two (``exit_deadline_s``): the process ends that long
        after the signal, however far quitting came."""
        driver = self._driver
        event = self._quit_signalled_event
        if driver is not None and hasattr(driver, "_writer_thread"):  # (not a terminal's driver: tests)
            def watch() -> None:
                event.wait()
                seen: list[Any] = []
                while True:
                    writer = driver._writer_thread
                    if writer is not None and not writer.is_alive():
                        break
                    time.sleep(0.1)
                driver.write = lambda _data: None  # type: ignore[method-assign]
                driver.start_application_mode = lambda: None  # type: ignore[method-assign]
                for _ in range(40):
                    if driver._writer_thread is not None and driver._writer_thread not in seen:
                        seen.append(driver._writer_thread)
                    for writer in seen:
                        queue = writer._queue
                        with queue.mutex:
                            queue.queue.clear()
                            queue.not_full.notify_all()
                    time.sleep(0.05)

            threading.Thread(target=watch, name="terminal-watch", daemon=True).start()
        deadline = self.exit_deadline_s
        if deadline is not None:
            def end() -> None:
                event.wait()
                time.sleep(deadline)
                os._exit(128 + self._quit_signal[0])

            threading.Thread(target=end, name="exit-deadline", daemon=True).start()

    def _signalled(self: WorkstationApp) -> None:
        """SIGTERM or SIGHUP: quit as Ctrl+Q does, without asking; a second signal while the
        reply is being kept (a logout's SIGTERM, then the terminal's SIGHUP) does not cut it."""
        if not self._quit_signalled:
            self._quit_signalled = True
            self.call_next(self.action_quit, False)

    async def action_quit(self: WorkstationApp, ask: bool = True, typed_asked: bool = False) -> None:
        """Quit. A reply still streaming is stopped first and kept as far as it came, as Esc
        keeps it (the end of the cancelled turn saves it, then the app exits; 5 s at most).
        What is typed in the box is kept as its conversation's draft. A summary running asks
        first (``ask``; a signal does not): its parts done are not saved anywhere."""
        self.save_draft()
        if self.summarizing is not None:
            def quit_now(yes: bool | None = True) -> None:
                if yes and self.summarizing is not None:
                    self.summarize_screen().action_stop()
                    self.exit()
                elif yes:  # it ended while the question was up
                    self.exit()

            if not ask:
                quit_now()
                return
            self._ask_before_quitting(self.summarize_screen().quit_question(), quit_now)
            return
        if ask and not typed_asked and self.typed_in_dialog():
            # Ctrl+Q, the one app key a dialog does not hold back, closed Alt+I's instructions or
            # F2's new title typed there with the app, without a word (``typed_asked``: asked)
            self._ask_before_quitting(self.texts("dialog.quit_typed_q"),
                                      lambda: self.call_next(self.action_quit, True, True))
            return
        if ask and self._write_back_to is not None and not self._turn_begun() \
                and self._taken_back(self._write_back_to, at_the_end=True)[0]:
            self.exit()  # (the disk had room enough for this session, under 1 MiB: not asked "lose it?")
            return
        if ask and self.store.in_memory and self.store.holds_unsaved():
            # the data folder could not be used (said once, at the start, in a toast long gone):
            # quitting loses this session's conversations, so it is asked, and F7 can save them
            self._ask_before_quitting(self.texts("store.quit_unsaved_q"),
                                      lambda: self.call_next(self.action_quit, False))
            return
        if self.generating and self.engine is not None and not self._quit_after_turn:
            self._quit_after_turn = True
            self._cancel_turn()
            self.set_timer(5.0, self.exit)
            return
        self.exit()

    def typed_in_dialog(self: WorkstationApp) -> bool:
        """Whether an open dialog holds text typed in it that quitting would lose (its ``typed``)."""
        for screen in self.screen_stack:
            typed = getattr(screen, "typed", None)
            try:
                if callable(typed) and typed():
                    return True
            except NoMatches:  # (not drawn yet: nothing typed in it)
                pass
        return False

    def _ask_before_quitting(self: WorkstationApp, question: str, then: Callable[[], None]) -> None:
        """Quit (``then``) once the person says yes; Ctrl+Q again while asked: one question,
        not a stack of them."""
        if self._asking_quit:
            return
        self._asking_quit = True

        def answered(yes: bool | None) -> None:
            self._asking_quit = False
            if yes:
                then()

        t = self.texts
        self.push_screen(ConfirmDialog(question, t("dialog.quit"), t("dialog.cancel"), t.yes_no_keys()), answered)
