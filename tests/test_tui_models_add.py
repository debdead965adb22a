"""F4's A (add a GGUF file from a USB stick or a colleague's folder), through the real TUI and
the real models: what it says, where the cursor goes, and the Open dialog's list following a
folder typed fast."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from textual import events
from textual.widgets import DataTable
from tui_helpers import notices, until

from workstation.core.paths import models_dir


async def _add(pilot, app, path: Path) -> None:  # type: ignore[no-untyped-def]
    from workstation.tui.screens.file_picker import FilePicker
    from workstation.tui.screens.models import ModelsScreen

    await pilot.press("a")
    await until(pilot, lambda: isinstance(app.screen, FilePicker))
    await pilot.press(*str(path), "enter")
    await until(pilot, lambda: isinstance(app.screen, ModelsScreen))


async def test_a_file_added_or_installed_already_is_said_and_has_the_cursor(
        tmp_path: Path, models_home: Path, smollm2_path: Path, gemma_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same file as an installed model, added again from a USB stick: the app said another
    sentence than 'models add' (or, seen by a user, nothing at all) and left the list as it was;
    now it says what 'models add' says and puts the cursor on that model. A new file: said added,
    and where to, and the cursor on it (it was not highlighted)."""
    from workstation.tui.app import WorkstationApp
    from workstation.tui.screens.models import ModelsScreen

    shutil.copyfile(smollm2_path, models_home / "SmolLM2-135M-Instruct.Q4_0.gguf")
    (models_home / "zz-other.gguf").symlink_to(gemma_path)
    usb = tmp_path / "usb"
    usb.mkdir()
    shutil.copyfile(smollm2_path, usb / "colleague-model.gguf")
    (usb / "new-model.gguf").symlink_to(gemma_path)  # (another name; the same bytes as zz-other)
    monkeypatch.chdir(tmp_path)
    app = WorkstationApp("a", start_engine=False, sample_system=False, language="en")
    shown = notices(app)
    async with app.run_test(size=(110, 32)) as pilot:
        await pilot.press("f4")
        await until(pilot, lambda: isinstance(app.screen, ModelsScreen) and len(app.screen.installed) == 2)
        models = app.screen
        assert isinstance(models, ModelsScreen)
        table = models.query_one("#installed", DataTable)
        table.move_cursor(row=[r.name for r in models.installed].index("zz-other"))

        await _add(pilot, app, usb / "colleague-model.gguf")
        already = (f"colleague-model.gguf is installed already, as SmolLM2-135M-Instruct.Q4_0 in {models_dir()} "
                   "(the same file); nothing was copied")
        await until(pilot, lambda: already in shown, what=f"{shown}")
        await until(pilot, lambda: models._highlighted() is not None
                    and models._highlighted().name == "SmolLM2-135M-Instruct.Q4_0")  # type: ignore[union-attr]
        assert sorted(p.name for p in models_home.iterdir() if not p.name.startswith(".")) == [
            "SmolLM2-135M-Instruct.Q4_0.gguf", "zz-other.gguf"]

        (usb / "new-model.gguf").unlink()
        shutil.copyfile(smollm2_path, usb / "new-model.gguf")
        with (usb / "new-model.gguf").open("ab") as f:
            f.write(b"\0" * 32)  # (other bytes than the installed one: a new model)
        table.move_cursor(row=0)
        await _add(pilot, app, usb / "new-model.gguf")
        await until(pilot, lambda: any(n.startswith("Added new-model (llama, Q4_1, ") and n.endswith(f"to {models_dir()}")
                                       for n in shown), what=f"{shown}")
        await until(pilot, lambda: models._highlighted() is not None
                    and models._highlighted().name == "new-model")  # type: ignore[union-attr]
        assert app.focused is table


async def test_a_folder_typed_fast_is_followed_by_the_list(tmp_path: Path, models_home: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """F4, A, "/tmp/…/usb/" typed at once (keys faster than the focus moves, as tmux or a quick
    typist sends them): the list showed the start folder and "Nothing to open in this folder"
    until Enter, though the folder typed has two .gguf files."""
    from workstation.tui.app import WorkstationApp
    from workstation.tui.screens.file_picker import FilePicker, FileTree
    from workstation.tui.screens.models import ModelsScreen

    usb = tmp_path / "usb"
    usb.mkdir()
    for name in ("a.gguf", "b.gguf"):
        (usb / name).write_bytes(b"GGUF")
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.chdir(empty)
    monkeypatch.setenv("HOME", str(empty))
    app = WorkstationApp("a", start_engine=False, sample_system=False, language="en")
    async with app.run_test(size=(110, 32)) as pilot:
        await pilot.press("f4")
        await until(pilot, lambda: isinstance(app.screen, ModelsScreen))
        await pilot.press("a")
        await until(pilot, lambda: isinstance(app.screen, FilePicker))
        picker = app.screen
        problem = picker.query_one("#picker-problem")
        await until(pilot, lambda: "Nothing to open" in str(problem.render()))
        for char in f"{usb}/":  # one burst, as a terminal sends keys typed fast
            app.post_message(events.Key(char, char))
        tree = picker.query_one(FileTree)
        await until(pilot, lambda: Path(tree.path) == usb and not problem.display, what=f"{tree.path} {problem.render()}")
        await until(pilot, lambda: [n.label.plain for n in tree.root.children] == ["a.gguf", "b.gguf"])
