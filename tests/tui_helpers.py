"""Driving the TUI under Pilot: waiting for a state, typing as a person does, and the app the
snapshot tests draw (a fixed conversation, two profiles, no engine)."""

from __future__ import annotations

import asyncio
import datetime as dt
import inspect
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
import yaml
from conftest import as_shipped_profiles

from workstation.core.metrics import TurnMetrics
from workstation.core.profile_check import profile_from_dict
from workstation.core.profiles import Profile
from workstation.core.store import ConversationStore
from workstation.tui.app import WorkstationApp
from workstation.tui.widgets.message_view import MessageView

if TYPE_CHECKING:
    from workstation.tui.screens.file_picker import FilePicker
    from workstation.tui.screens.summarize import SummarizeScreen


def _waited_for(condition: Callable[[], object]) -> str:
    """What a wait was for, in the test's own words: the condition's source line."""
    try:
        return " ".join(inspect.getsource(condition).split())
    except (OSError, TypeError):
        return repr(condition)


async def until(pilot, condition: Callable[[], bool], steps: int = 3000, what: str | None = None) -> None:
    """Let the app run until ``condition`` holds (bounded; each step is a short pause).

    The first look follows Pilot's pause (what is queued now is handled first); the others come
    after 0.05 s of the app running on its own. Pilot's pause at each look had every widget on
    the screen handle a message of its own first: 8 ms of CPU a look on the chat screen, a sixth
    of a core taken from the engine's process beside it while a reply was waited for."""
    if condition():
        return
    await pilot.pause()
    for _ in range(steps):
        if condition():
            return
        await asyncio.sleep(0.05)
        try:
            screen = pilot.app.screen
        except Exception:  # (the app has ended: there is no screen to draw)
            continue
        screen._on_timer_update()  # (what Pilot's pause ends with: the screen drawn as it is now)
    raise AssertionError(f"the app did not reach the expected state in {steps} pauses of 0.05 s: "
                         f"{what or _waited_for(condition)}")


async def type_message(pilot, text: str) -> None:
    """Click the message box, type ``text`` and press Enter, as a person does. The layout is
    settled first: the pilot aims at where the box was drawn last, and a load bar that has
    just gone moves it down a row (the click then lands in the chat log, which takes the
    keys)."""
    await type_message_only(pilot, text)
    await pilot.press("enter")


async def type_message_only(pilot, text: str) -> None:
    """Click the message box and type ``text`` after what is there, without sending it."""
    await pilot.pause()
    assert await pilot.click("#prompt"), "the click did not land on the message box"
    await pilot.press("end", *text)


def message_views(app: WorkstationApp) -> list[MessageView]:
    """The chat's messages as drawn."""
    return list(app.chat_screen.query(MessageView))


async def send_message(pilot, app: WorkstationApp, text: str) -> None:
    """Type and send ``text``; returns once its turn has started (a short reply from cached
    cells can end between two looks, so a new exchange on screen counts too)."""
    before = len(message_views(app))
    await type_message(pilot, text)
    await until(pilot, lambda: app.generating or len(message_views(app)) >= before + 2)


async def send_text(pilot, app: WorkstationApp, text: str) -> None:
    """``text`` put in the box whole and sent with Enter; returns as ``send_message`` does. For
    a test that is not about typing: typing key by key costs about 60 ms a key."""
    await pilot.pause()  # (what came before it handled first, as a person's typing waits for it)
    before = len(message_views(app))
    app.chat_screen.set_input(text)
    await pilot.press("enter")
    await until(pilot, lambda: app.generating or len(message_views(app)) >= before + 2)


def notices(app: WorkstationApp, timeouts: dict[str, object] | None = None) -> list[str]:
    """Every notice the app shows from now on, in order: also one gone before it is looked for
    (a toast expires; on a busy machine it was gone before a test counted it). ``timeouts``: the
    time each notice was given (None: the app's reading time decides it)."""
    said: list[str] = []
    shown = app.notify

    def notify(message: str, *args: object, **kwargs: object) -> None:
        said.append(str(message))
        if timeouts is not None:
            timeouts[str(message)] = kwargs.get("timeout")
        shown(message, *args, **kwargs)  # type: ignore[arg-type]

    app.notify = notify  # type: ignore[method-assign]
    return said


async def workers_done(pilot) -> None:
    """Wait for the app's workers, where one was cancelled too (``wait_for_complete`` raises
    WorkerCancelled where a worker was superseded by a newer one of its group: F4's fit of a row
    moved past, F3's fit, a folder typed past; a test failed on that under load). A cancelled one
    may stay listed and never finish: it is not waited for again."""
    from textual.worker import WorkerCancelled

    try:
        await pilot.app.workers.wait_for_complete()
    except WorkerCancelled:  # (a cancelled one may stay listed, never finished: raised again each time)
        await pilot.pause()


async def press_at_once(pilot, *keys: str) -> None:
    """Press ``keys`` as a fast typist or tmux's send-keys does: every key is read before the
    first is handled (Pilot's ``press`` waits for the app after each key). A key of one
    character is that character ("," and "0"), others Textual's names ("end", "backspace")."""
    from textual import events
    from textual.keys import _character_to_key

    for key in keys:
        event = events.Key(_character_to_key(key), key) if len(key) == 1 else events.Key(key, None)
        event.set_sender(pilot.app)
        pilot.app._driver.send_message(event)
    await workers_done(pilot)  # (one the keys made superseded: the Open dialog's list of a folder typed past)
    for _ in range(len(keys) + 2):
        await pilot.pause()


def screen_lines(app: WorkstationApp) -> list[str]:
    """The screen as the user sees it now, a line of text a row (what is cut off or scrolled
    away is not there)."""
    return [strip.text for strip in app.screen._compositor.render_strips()]


# --- the snapshot tests' app ---------------------------------------------------------------------
MODEL = "smollm2-135m-instruct-q4_1"


def _profile_data(name: str, **over: object) -> dict[str, object]:
    data: dict[str, object] = {"name": name, "model": MODEL, "context": 4096, "threads": 2}
    data.update(over)
    return data


def _metrics(ttft: float, tps: float, n: int, prompt: int, cached: int, kv: int) -> dict[str, object]:
    m = TurnMetrics(
        ttft_ms=ttft, prompt_n=prompt, cache_n=cached, prompt_ms=prompt / 0.28,
        predicted_n=n, predicted_ms=n / tps * 1000, kv_used=kv, kv_size=4096, stop_reason="eos",
    )
    m.finish_rates()
    return m.to_dict()


def make_app(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, language: str = "en", start_engine: bool = False
) -> WorkstationApp:
    folder = tmp_path / "profiles"
    folder.mkdir()
    for key, data in {
        "office-cpu": _profile_data("Office CPU — SmolLM2 135M"),
        "office-q8": _profile_data("Office CPU — KV q8_0", kv_cache={"k": "q8_0", "v": "q8_0"}),
    }.items():
        (folder / f"{key}.yaml").write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    as_shipped_profiles(monkeypatch, folder)
    store = ConversationStore()
    old = store.new("Travel policy")
    store.add_message(old.id, "user", "Where is the travel policy?")
    conv = store.new("Meeting notes")
    store.add_message(conv.id, "user", "Write three short tips for a good meeting.")
    store.add_message(
        conv.id, "assistant",
        "1. **Share an agenda** a day before.\n2. Start and end **on time**.\n"
        "3. Finish with owners and dates for each action.",
        _metrics(212, 78.4, 34, 41, 0, 75),
    )
    store.add_message(conv.id, "user", "And one more?")
    store.add_message(
        conv.id, "assistant", "Keep it small: invite only the people who decide.",
        _metrics(95, 80.1, 12, 14, 75, 101),
    )
    # written on a day of its own, a minute apart, at those times wherever the test runs (the
    # chat says the day and each message's time: the snapshots' pixels stay the same)
    with sqlite3.connect(store.path) as db:
        db.execute("UPDATE messages SET created = ? + 60 * id", (dt.datetime(2025, 3, 3, 9, 14).timestamp(),))
    store.close()
    profile: Profile = profile_from_dict(_profile_data("Office CPU — SmolLM2 135M"), "<test>",
                                         folder / "office-cpu.yaml")
    return WorkstationApp(profile, start_engine=start_engine, sample_system=False, language=language)


async def open_f6(pilot, app: WorkstationApp) -> SummarizeScreen:
    """F6's screen, once the app's model is up."""
    from workstation.tui.screens.summarize import SummarizeScreen

    await until(pilot, lambda: app.engine is not None)
    await pilot.press("f6")
    await until(pilot, lambda: isinstance(app.screen, SummarizeScreen))
    screen = app.screen
    assert isinstance(screen, SummarizeScreen)
    return screen


async def summarize_in_f6(pilot, app: WorkstationApp, path: Path) -> SummarizeScreen:
    """F6 on ``path`` once the app's model is up: the screen, its summary under way (Enter)."""
    from textual.widgets import Input

    screen = await open_f6(pilot, app)
    screen.query_one("#summarize-path", Input).value = str(path)
    await pilot.press("enter")
    return screen


async def open_dialog(pilot, app: WorkstationApp) -> FilePicker:
    """Ctrl+O's Open dialog, its folder listed."""
    from workstation.tui.screens.file_picker import FilePicker, FileTree

    await pilot.press("ctrl+o")
    await until(pilot, lambda: isinstance(app.screen, FilePicker) and bool(app.screen.query(FileTree)))
    screen = app.screen
    assert isinstance(screen, FilePicker)
    return screen



async def attach_file(pilot, app: WorkstationApp, path: Path) -> None:
    """``path`` attached through Ctrl+O's Open dialog, typed on its path line, as a person does."""
    from textual.widgets import Input

    screen = await open_dialog(pilot, app)
    line = screen.query_one("#picker-path", Input)
    line.value = str(path)
    line.focus()
    await pilot.press("enter")
    await until(pilot, lambda: app.pending_document is not None)

def f6_state(screen: SummarizeScreen) -> str:
    """F6's state line as shown ("Done.", "Cut short: …", "Cut off …")."""
    return str(screen.query_one("#summarize-state").render())


async def settle(pilot) -> None:
    """Wait for workers; no text cursor (its blink phase depends on timing)."""
    await workers_done(pilot)
    await pilot.pause()
    for widget in pilot.app.query("Input"):
        widget.cursor_blink = False
        widget.can_focus = False
    pilot.app.screen.set_focus(None)
    await pilot.pause()
