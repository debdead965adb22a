"""The status line says what the loaded profile runs on, in words that fit its backend."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from test_tui import until

from workstation.tui.app import WorkstationApp


def _write(folder: Path, key: str, data: dict[str, object]) -> None:
    base: dict[str, object] = {"name": key, "context": 512, "threads": 1, "gpu_layers": 0,
                               "sampling": {"temperature": 0.0, "max_tokens": 4}, "system_prompt": ""}
    (folder / f"{key}.yaml").write_text(yaml.safe_dump({**base, **data}), encoding="utf-8")


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    profiles = tmp_path / "profiles"
    profiles.mkdir()
    monkeypatch.setenv("WORKSTATION_PROFILES", str(profiles))
    return profiles


async def test_a_long_model_name_keeps_its_quantization(folder: Path, tmp_path: Path, smollm2_path: Path) -> None:
    """Two copies of one model differ only at the end of their names (….Q4_1, ….Q8_0): a name
    too long for the line loses its middle, never its end."""
    long = tmp_path / "SmolLM2-135M-Instruct-office-edition.Q4_1.gguf"
    long.symlink_to(smollm2_path)
    _write(folder, "long", {"model": str(long)})
    app = WorkstationApp("long", sample_system=False, language="en")
    async with app.run_test(size=(120, 30)) as pilot:
        await until(pilot, lambda: app.engine is not None)
        text = app.status_text()
    assert "SmolLM2-13…" in text and "edition.Q4_1 ·" in text, text


async def test_a_remote_profile_names_its_server_not_local_settings(folder: Path) -> None:
    """A desk PC's profile runs on the office server: the line names the server, and shows no
    GPU layers or K/V types, which are the server's business."""
    _write(folder, "desk", {"backend": "openai",
                            "remote": {"base_url": "http://127.0.0.1:9/v1", "model": "office-model"}})
    app = WorkstationApp("desk", sample_system=False, language="en")
    async with app.run_test(size=(120, 30)) as pilot:
        await until(pilot, lambda: app.loading is None)
        text = app.status_text()
    assert "desk · office-model on 127.0.0.1:9" in text, text
    assert "GPU layers" not in text and "KV " not in text
