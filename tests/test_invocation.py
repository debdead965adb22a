"""Which command advice names: the one the user typed (``./run.sh``, a path to the venv's
script) or ``workstation`` when that is what is on the PATH."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from workstation.core import invocation
from workstation.tui.i18n import Texts


def test_run_sh_as_typed_wins_and_is_quoted_for_the_shell(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORKSTATION_COMMAND", "./run.sh")
    assert invocation.cli("models list") == "./run.sh models list"
    monkeypatch.setenv("WORKSTATION_COMMAND", "/home/ayşe/my files/run.sh")
    assert invocation.cli("fit") == "'/home/ayşe/my files/run.sh' fit"  # pasted back, one word


def test_the_venv_script_is_named_by_its_path_unless_it_is_on_the_path(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("WORKSTATION_COMMAND", raising=False)
    script = tmp_path / ".venv" / "bin" / "workstation"
    script.parent.mkdir(parents=True)
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    monkeypatch.setattr(sys, "argv", [str(script), "models", "list"])
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    assert invocation.command() == str(script)
    monkeypatch.setenv("PATH", f"{script.parent}:/usr/bin")
    assert invocation.command() == "workstation"
    monkeypatch.setattr(sys, "argv", ["/usr/lib/python3/pytest"])  # started from Python
    assert invocation.command() == "workstation"


def test_ui_texts_name_the_same_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORKSTATION_COMMAND", "./run.sh")
    for lang in ("en", "tr"):
        text = Texts(lang)("usage.none")
        assert "./run.sh serve" in text and "./run.sh keys add" in text and "{cmd}" not in text
    assert "'./run.sh tui --port N'" in Texts("en")("serve.failed", reason="Port 8088 is in use.", name="SmolLM2")
