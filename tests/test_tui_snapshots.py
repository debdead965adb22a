"""SVG snapshots of the main screens at 80x24: a fixed conversation from the store, no live
sampling, and the real planner over a fake NVML probe (an 8 GB RTX 4060: the one layer faked),
so every pixel is deterministic. The loaded-chat snapshot loads the real SmolLM2.

Update after an intended change: pytest tests/test_tui_snapshots.py --snapshot-update
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from tui_helpers import make_app, settle, until

from workstation.core.hardware import FakeGpuProbe, set_probe
from workstation.tui.app import WorkstationApp

SIZE = (80, 24)


@pytest.fixture(autouse=True)
def rtx_4060(smollm2_path: Path) -> Iterator[None]:
    """The GPU the planner and the dashboard see: NVML faked, everything above it real."""
    set_probe(FakeGpuProbe.of(("NVIDIA GeForce RTX 4060", 8, 7.5)))
    yield
    set_probe(None)


@pytest.fixture
def app(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> WorkstationApp:
    return make_app(tmp_path, monkeypatch)


def test_chat_screen(snap_compare, app: WorkstationApp) -> None:
    assert snap_compare(app, run_before=settle, terminal_size=SIZE)


def test_dashboard_screen(snap_compare, app: WorkstationApp) -> None:
    async def open_dashboard(pilot) -> None:
        await pilot.press("f5")
        await settle(pilot)

    assert snap_compare(app, run_before=open_dashboard, terminal_size=SIZE)


def test_profile_menu(snap_compare, app: WorkstationApp) -> None:
    async def open_menu(pilot) -> None:
        # the open conversation's replies first: F3 says a context in their words a token (a busy
        # run opened F3 before them and drew "3,100 words" by the language's figure)
        await until(pilot, lambda: bool(pilot.app.history.turns))
        await pilot.press("f3")
        menu = pilot.app.screen
        await until(pilot, lambda: len(menu.verdicts) == 2)
        # the planner's own verdicts for the fake card: SmolLM2 fits whole on 8 GB
        assert all(v.startswith("fits entirely on the GPU") for v in menu.verdicts.values()), menu.verdicts
        # so its half-size K/V is not "slower on a CPU" (close to free on a GPU): said beside "entirely on the GPU"
        assert not any("slower on a CPU" in str(menu._prompt(i, e)) for i, e in enumerate(menu.entries)), menu.entries
        await settle(pilot)

    assert snap_compare(app, run_before=open_menu, terminal_size=SIZE)


def test_dashboard_gpu_panel(snap_compare, app: WorkstationApp) -> None:
    """The GPU lines as NVML's readings reach them: through hardware.sample and the app's
    sampler message (CPU and RAM fixed so the picture does not move)."""
    from workstation.tui import integrations
    from workstation.tui.messages import SystemSampled

    async def open_dashboard(pilot) -> None:
        await pilot.press("f5")
        _cpu, _used, _total, gpus = integrations.system_sample()
        pilot.app.post_message(SystemSampled(23.0, 6 * 1024**3, 16 * 1024**3, gpus))
        await settle(pilot)

    assert snap_compare(app, run_before=open_dashboard, terminal_size=SIZE)


def test_reply_mid_stream(snap_compare, app: WorkstationApp, monkeypatch: pytest.MonkeyPatch) -> None:
    """A reply while it streams: a finished paragraph and the line being written (the engine's
    messages posted as its worker would; the model is faked in UI tests only). The question
    asked the day the conversation's others were (the time beside it fixed)."""
    import datetime as dt

    from workstation.tui.messages import TokenStreamed
    from workstation.tui.widgets import message_view

    monkeypatch.setattr(message_view, "wall_clock", lambda: dt.datetime(2025, 3, 3, 9, 30).timestamp())

    async def stream(pilot) -> None:
        await settle(pilot)
        a = pilot.app
        a.reply_view = await a.chat_screen.add_exchange("And a third tip?")
        a.reply_view.markdown_every_s = 0.0
        a.generating = True
        for piece in ["Send the **notes**", " within a day.\n\n", "Name one owner", " for each"]:
            a.post_message(TokenStreamed(piece, 3))
            await pilot.pause()
        await until(pilot, lambda: "notes" in a.reply_view.body.source)
        a.update_status()
        await settle(pilot)

    assert snap_compare(app, run_before=stream, terminal_size=SIZE)


def test_loaded_chat(snap_compare, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The chat with SmolLM2 loaded for real (its own process; no GPU there): the status bar's
    model name, GPU layers of llama.cpp's count and K/V types come from the loaded engine."""
    monkeypatch.setenv("WORKSTATION_FAKE_GPUS", "[]")
    app = make_app(tmp_path, monkeypatch, start_engine=True)

    async def loaded(pilot) -> None:
        await until(pilot, lambda: pilot.app.engine is not None and pilot.app.loading is None)
        pilot.app.clear_notifications()
        await settle(pilot)

    assert snap_compare(app, run_before=loaded, terminal_size=SIZE)


def test_chat_screen_turkish(snap_compare, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    app = make_app(tmp_path, monkeypatch, language="tr")
    assert snap_compare(app, run_before=settle, terminal_size=SIZE)
