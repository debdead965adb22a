"""SVG snapshots of the main screens at 80x24: a fixed conversation from the store, no engine,
no live sampling, a fixed fit verdict, so every pixel is deterministic.

Update after an intended change: pytest tests/test_tui_snapshots.py --snapshot-update
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

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


def make_app(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, language: str = "en") -> WorkstationApp:
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
    return WorkstationApp(
        profile, start_engine=False, sample_system=False, language=language,
        fit_check=lambda p: "runs on the CPU: needs 0.3 GB of memory",
    )


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
        await settle(pilot)

    assert snap_compare(app, run_before=open_menu, terminal_size=SIZE)


def test_chat_screen_turkish(snap_compare, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    app = make_app(tmp_path, monkeypatch, language="tr")
    assert snap_compare(app, run_before=settle, terminal_size=SIZE)
