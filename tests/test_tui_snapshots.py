"""SVG snapshots of the main screens at 80x24: a fixed conversation from the store, no live
sampling, and the real planner over a fake NVML probe (an 8 GB RTX 4060: the one layer faked),
so every pixel is deterministic. The loaded-chat snapshot loads the real SmolLM2.

Update after an intended change: pytest tests/test_tui_snapshots.py --snapshot-update
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from workstation.core.hardware import FakeGpuProbe, set_probe
from workstation.core.metrics import TurnMetrics
from workstation.core.profiles import Profile, profile_from_dict
from workstation.core.store import ConversationStore
from workstation.tui.app import WorkstationApp

SIZE = (80, 24)
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
    monkeypatch.setenv("WORKSTATION_PROFILES", str(folder))
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
    store.close()
    profile: Profile = profile_from_dict(_profile_data("Office CPU — SmolLM2 135M"), "<test>",
                                         folder / "office-cpu.yaml")
    return WorkstationApp(profile, start_engine=start_engine, sample_system=False, language=language)


@pytest.fixture(autouse=True)
def rtx_4060(smollm2_path: Path) -> Iterator[None]:
    """The GPU the planner and the dashboard see: NVML faked, everything above it real."""
    set_probe(FakeGpuProbe.of(("NVIDIA GeForce RTX 4060", 8, 7.5)))
    yield
    set_probe(None)


@pytest.fixture
def app(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> WorkstationApp:
    return make_app(tmp_path, monkeypatch)


async def settle(pilot) -> None:
    """Wait for workers; no text cursor (its blink phase depends on timing)."""
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()
    for widget in pilot.app.query("Input"):
        widget.cursor_blink = False
        widget.can_focus = False
    pilot.app.screen.set_focus(None)
    await pilot.pause()


def test_chat_screen(snap_compare, app: WorkstationApp) -> None:
    assert snap_compare(app, run_before=settle, terminal_size=SIZE)


def test_dashboard_screen(snap_compare, app: WorkstationApp) -> None:
    async def open_dashboard(pilot) -> None:
        await pilot.press("f5")
        await settle(pilot)

    assert snap_compare(app, run_before=open_dashboard, terminal_size=SIZE)


def test_profile_menu(snap_compare, app: WorkstationApp) -> None:
    async def open_menu(pilot) -> None:
        await pilot.press("f3")
        menu = pilot.app.screen
        await until(pilot, lambda: len(menu.verdicts) == 2)
        # the planner's own verdicts for the fake card: SmolLM2 fits whole on 8 GB
        assert all(v.startswith("fits entirely on the GPU") for v in menu.verdicts.values()), menu.verdicts
        await settle(pilot)

    assert snap_compare(app, run_before=open_menu, terminal_size=SIZE)


async def until(pilot, condition, steps: int = 600) -> None:
    for _ in range(steps):
        if condition():
            return
        await pilot.pause(0.05)
    raise AssertionError("the app did not reach the expected state")


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


def test_reply_mid_stream(snap_compare, app: WorkstationApp) -> None:
    """A reply while it streams: a finished paragraph and the line being written (the engine's
    messages posted as its worker would; the model is faked in UI tests only)."""
    from workstation.tui.messages import TokenStreamed

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
        await until(pilot, lambda: pilot.app.engine is not None and pilot.app.loading is None, steps=3000)
        pilot.app.clear_notifications()
        await settle(pilot)

    assert snap_compare(app, run_before=loaded, terminal_size=SIZE)


def test_chat_screen_turkish(snap_compare, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    app = make_app(tmp_path, monkeypatch, language="tr")
    assert snap_compare(app, run_before=settle, terminal_size=SIZE)
