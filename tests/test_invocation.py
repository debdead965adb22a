"""Which command advice names: the one the user typed (``./run.sh``, a path to the venv's
script) or ``workstation`` when that is what is on the PATH."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from workstation.core import invocation
from workstation.tui.i18n import Texts


def test_run_sh_as_typed_wins_and_is_quoted_for_the_shell(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORKSTATION_COMMAND", "./run.sh")
    assert invocation.cli("models list") == "./run.sh models list"
    monkeypatch.setenv("WORKSTATION_COMMAND", "python -m workstation")  # as given: it runs as it is
    assert invocation.cli("fit") == "python -m workstation fit"
    assert invocation.shell_word("/home/ayşe/my files/run.sh") == "/home/ayşe/my\\ files/run.sh"  # one word


def test_run_sh_names_itself_as_one_pasteable_word(tmp_path: Path) -> None:
    """What run.sh exports, for a checkout in a folder with a space, started as 'bash run.sh'."""
    import shutil
    import subprocess

    root = Path(__file__).resolve().parent.parent
    checkout = tmp_path / "my tools"
    (checkout / "scripts").mkdir(parents=True)
    (checkout / ".venv" / "bin").mkdir(parents=True)
    shutil.copy(root / "run.sh", checkout / "run.sh")
    (checkout / "scripts" / "setup.sh").write_text("#!/bin/sh\n", encoding="utf-8")
    (checkout / "scripts" / "setup.sh").chmod(0o755)
    shown = checkout / ".venv" / "bin" / "workstation"  # stands in for the app: says what it was given
    shown.write_text('#!/bin/sh\nprintf "%s|%s" "$WORKSTATION_COMMAND" "$PWD"\n', encoding="utf-8")
    shown.chmod(0o755)
    env = {"PATH": "/usr/bin:/bin", "CDPATH": str(tmp_path)}
    out = subprocess.run(["bash", "run.sh"], cwd=checkout, env=env, capture_output=True, text=True, check=True)
    assert out.stdout == f"./run.sh|{checkout}"
    out = subprocess.run(["bash", str(checkout / "run.sh")], cwd=tmp_path, env=env, capture_output=True,
                         text=True, check=True)
    assert out.stdout == f"{str(checkout).replace(' ', chr(92) + ' ')}/run.sh|{tmp_path}"


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


def test_setup_makes_a_half_made_venv_again(tmp_path: Path) -> None:
    """A Ctrl-C while set-up created .venv left a python without pip; the next set-up took the
    folder as made and stopped at "No module named pip". Run on a copy of setup.sh, with a
    Python that stands in for making the venv (it notes the call and stops the script)."""
    import shutil
    import subprocess

    root = Path(__file__).resolve().parent.parent
    checkout = tmp_path / "ws"
    (checkout / "scripts").mkdir(parents=True)
    shutil.copy(root / "scripts" / "setup.sh", checkout / "scripts" / "setup.sh")
    half = checkout / ".venv" / "bin"
    half.mkdir(parents=True)
    (half / "python").write_text(  # a python, but this venv's pip never came
        '#!/bin/sh\nif [ "$1" = "-m" ] && [ "$2" = "pip" ]; then echo "No module named pip" >&2; exit 1; fi\n'
        f'exec {sys.executable} "$@"\n', encoding="utf-8")
    (half / "python").chmod(0o755)
    (half / "pip-never-came").write_text("", encoding="utf-8")
    python = tmp_path / "python3"
    python.write_text(
        '#!/bin/sh\nif [ "$1" = "-m" ] && [ "$2" = "venv" ]; then echo made > "$MADE"; exit 3; fi\n'
        f'exec {sys.executable} "$@"\n', encoding="utf-8")
    python.chmod(0o755)
    made = tmp_path / "made"
    env = {"PATH": "/usr/bin:/bin", "PYTHON": str(python), "MADE": str(made), "HOME": str(tmp_path)}
    proc = subprocess.run(["bash", "scripts/setup.sh"], cwd=checkout, env=env, capture_output=True, text=True,
                          timeout=60)
    assert "left half made; making it again" in proc.stderr, proc.stderr
    assert made.read_text() == "made\n" and proc.returncode == 3
    assert not (half / "pip-never-came").exists()  # the old folder went first


def test_setup_runs_without_home(tmp_path: Path) -> None:
    """cron and systemd start it with no HOME: set-up stopped at "HOME: unbound variable" (exit 1)
    before anything. With neither HOME nor XDG_CACHE_HOME the built wheel is kept in the
    checkout. Run on a copy of setup.sh, with a venv whose pip notes the build it is asked for."""
    import shutil
    import subprocess

    root = Path(__file__).resolve().parent.parent
    checkout = tmp_path / "ws"
    (checkout / "scripts").mkdir(parents=True)
    shutil.copy(root / "scripts" / "setup.sh", checkout / "scripts" / "setup.sh")
    venv = checkout / ".venv" / "bin"
    venv.mkdir(parents=True)
    (checkout / ".venv" / ".made").write_text("", encoding="utf-8")
    (venv / "python").write_text(  # pip is there; a build it is asked for is noted, and stops the script
        '#!/bin/sh\nif [ "$1" = "-m" ] && [ "$2" = "pip" ]; then\n  [ "$3" = "--version" ] && exit 0\n'
        '  echo "$@" > "$ASKED"; exit 3\nfi\n'
        f'exec {sys.executable} "$@"\n', encoding="utf-8")
    (venv / "python").chmod(0o755)
    asked = tmp_path / "asked"
    env = {"PATH": "/usr/bin:/bin", "ASKED": str(asked), "CMAKE_ARGS": "-DGGML_NATIVE=off"}
    proc = subprocess.run(["bash", "scripts/setup.sh"], cwd=checkout, env=env, capture_output=True, text=True,
                          timeout=60)
    assert "unbound variable" not in proc.stderr and proc.returncode == 3, proc.stderr
    assert f"-w {checkout}/.cache/workstation/wheels/" in asked.read_text()


def test_python_m_workstation_runs_it_and_advice_names_it_so() -> None:
    """``python -m workstation`` said "No module named workstation.__main__"."""
    import subprocess

    env = {k: v for k, v in os.environ.items() if k != invocation.ENV}
    ran = subprocess.run([sys.executable, "-m", "workstation", "models", "lst"], capture_output=True, text=True,
                         env=env, timeout=120)
    assert ran.returncode != 0 and "did you mean 'models list'" in ran.stderr, ran.stderr
    assert f"('{invocation.shell_word(sys.executable)} -m workstation models --help'" in ran.stderr, ran.stderr
