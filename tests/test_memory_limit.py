"""The app under a memory limit on its address space (``ulimit -v``: a small laptop stood in
for, a container's limit), in a real terminal (a pty): the model loads where it fits, and
where the app itself does not fit it says so in one sentence on a clean terminal.

Under ``ulimit -v 600000`` numpy's OpenBLAS ended the app while the model loaded ("OpenBLAS
error: Memory allocation still failed after 10 retries, giving up." over the screen, exit 1):
malloc's arenas (64 MB reserved per thread) and 8 MB thread stacks had filled the limit
(core/address_space.py). Under a smaller one, the app stopped on "can't start new thread"."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import app_in_a_terminal, read_terminal, tui_profile, wait_for_exit

from workstation.core.address_space import (
    APP_ADDRESS_SPACE_BYTES,
    app_room_problem,
    ran_out_of_memory,
    ran_out_phrase,
)
from workstation.core.phrases import say

KIB = 1024
NEVER = (b"OpenBLAS error", b"unexpected error", b"Traceback", b"can't start new thread")


@pytest.fixture
def office_profile(tmp_path: Path, smollm2_path: Path) -> Path:
    """The shipped office profile's settings (context 4,096, f16 K/V, threads auto) for SmolLM2."""
    folder = tmp_path / "profiles"
    folder.mkdir()
    tui_profile(folder / "office.yaml", str(smollm2_path), context=4096, threads="auto")
    return folder


def test_the_app_loads_its_model_under_a_memory_limit_it_fits(office_profile: Path, tmp_path: Path) -> None:
    """``ulimit -v 600000``: the model fits in it (the command line's `chat` loads it there),
    and the app loads it and stays open, with nothing of OpenBLAS's over its screen."""
    with app_in_a_terminal("-p", "office", "--lang", "en", memory_limit=600000 * KIB,
                           WORKSTATION_PROFILES=str(office_profile), WORKSTATION_DATA=str(tmp_path / "data"),
                           COLUMNS="110", LINES="32") as (pid, fd):
        seen = read_terminal(fd, lambda b: b"ready" in b or any(w in b for w in NEVER), 120, "loaded the model")
        seen += read_terminal(fd, lambda b: False, 2, "")  # (a moment more: an error after it shows too)
        assert not any(w in seen for w in NEVER), seen[-2000:]
        assert b"ready" in seen


def test_a_model_too_big_for_the_limit_is_refused_before_loading_and_the_app_stays_open(
        office_profile: Path, tmp_path: Path) -> None:
    """``ulimit -v 450000``: the plan counted llama.cpp's buffers alone and let the load go
    ahead, and llama.cpp then failed ("failed to allocate compute pp buffers"): what the load
    maps besides them is counted under such a limit, and the app says the plan's sentence (does
    not fit, what it needs, what the limit leaves) and stays open."""
    with app_in_a_terminal("-p", "office", "--lang", "en", memory_limit=450000 * KIB,
                           WORKSTATION_PROFILES=str(office_profile), WORKSTATION_DATA=str(tmp_path / "data"),
                           COLUMNS="110", LINES="32") as (pid, fd):
        seen = read_terminal(fd, lambda b: b"not loaded" in b or b"ready" in b or any(w in b for w in NEVER), 120,
                             "loaded the model or said why not")
        seen += read_terminal(fd, lambda b: False, 2, "")
        assert os.waitpid(pid, os.WNOHANG) == (0, 0)  # (it stays open)
    assert b"does not fit: needs" in seen and b"failed to allocate" not in seen, seen[-3000:]
    assert not any(w in seen for w in NEVER), seen[-2000:]


def test_the_app_too_big_for_its_memory_limit_says_so_on_a_clean_terminal(office_profile: Path, tmp_path: Path) -> None:
    """``ulimit -v 220000``: too little for the app itself. One sentence (what it needs, what the
    limit leaves, what to do) and exit code 1, before the app's screen is drawn; it was
    OpenBLAS's words over a half-drawn screen (or "the app stopped on an unexpected error
    (RuntimeError: can't start new thread)")."""
    with app_in_a_terminal("-p", "office", "--lang", "en", memory_limit=220000 * KIB,
                           WORKSTATION_PROFILES=str(office_profile), WORKSTATION_DATA=str(tmp_path / "data"),
                           COLUMNS="110", LINES="32") as (pid, fd):
        seen = read_terminal(fd, lambda b: b"raise it)." in b.replace(b"\r\n", b" "), 60, "said it does not fit")
        assert wait_for_exit(pid, 30, "exited") == 1
    said = seen.replace(b"\r\n", b" ").decode()
    assert "workstation: The app does not fit: it needs about 288 MB of memory, and the memory limit this " \
           "program runs under (ulimit -v) leaves 215 MB; start it with a larger limit (whoever looks after " \
           "this PC can raise it)." in said, said
    assert not any(w in seen for w in NEVER) and b"\x1b[?1049h" not in seen, seen  # (the screen was never taken)


def test_memory_that_ran_out_is_said_plainly() -> None:
    """A thread that could not start and Python's MemoryError are memory that ran out, said
    as such (with the limit's size under one), not as an unexpected error."""
    import resource

    assert ran_out_of_memory(RuntimeError("can't start new thread")) and ran_out_of_memory(MemoryError())
    assert not ran_out_of_memory(RuntimeError("something else")) and not ran_out_of_memory(ValueError("x"))
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if soft == resource.RLIM_INFINITY:
        assert say([ran_out_phrase()]) == ("The program stopped because this PC ran out of memory; close other "
                                           "programs and start it again.")
        assert app_room_problem() is None
    assert APP_ADDRESS_SPACE_BYTES > 220000 * KIB


def test_the_does_not_fit_sentence_says_what_to_change_in_plain_words(office_profile: Path, tmp_path: Path) -> None:
    """`chat` under ``ulimit -v 450000``: the sentence said "the 4,096-token context alone takes
    90 MB: a context of 2,048 tokens fits here, or 4,096 with q8_0 K/V", words for engineers
    that named no place to change them. It names the settings as F3 → E shows them, and F4."""
    import resource
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "workstation", "chat", "-p", "office", "Hi"], capture_output=True, text=True,
        timeout=120, env={**os.environ, "WORKSTATION_PROFILES": str(office_profile),
                          "WORKSTATION_DATA": str(tmp_path / "data")},
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (450000 * KIB, resource.RLIM_INFINITY)))
    said = done.stderr
    assert done.returncode == 1 and said.count("\n") == 1 and "Traceback" not in said, said
    assert "does not fit: needs" in said and "and the memory limit this program runs under leaves" in said, said
    assert "its Context of 4,096 tokens (the chat and documents it reads at once) alone takes 90 MB: with Context " \
           "set to " in said and " in F3 → E it fits here" in said and said.endswith(
               "; or choose a smaller model in F4.\n"), said
    assert "q8_0 K/V" not in said and "-token context" not in said, said


async def test_a_thread_the_app_could_not_start_is_said_as_memory_that_ran_out(tmp_path: Path) -> None:
    """Under ``ulimit -v 450000`` the app ended on "the app stopped on an unexpected error
    (RuntimeError: can't start new thread)": a thread's stack is memory, and that is said."""
    from rich.text import Text

    from workstation.tui.app import WorkstationApp

    def boom() -> None:
        raise RuntimeError("can't start new thread")

    app = WorkstationApp(None, start_engine=False, sample_system=False, language="en")
    printed: list[object] = []
    app._print_error_renderables = lambda: printed.extend(app._exit_renderables)  # type: ignore[method-assign]
    with pytest.raises(RuntimeError, match="can't start new thread"):  # (run_test raises what ended the app)
        async with app.run_test(size=(80, 24)) as pilot:
            app.call_later(boom)
            await pilot.pause()
    said = " ".join(str(r) if isinstance(r, Text) else repr(r) for r in printed)
    assert app.return_code == 1 and "unexpected error" not in said, said
    assert said.startswith("workstation: The program stopped because this PC ran out of memory") or \
        said.startswith("workstation: The program stopped because it ran out of memory: the memory limit"), said


def test_memory_that_ran_out_in_a_command_is_not_an_unexpected_error(capsys: pytest.CaptureFixture[str],
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """A command under a tiny ``ulimit -v`` said "workstation: unexpected error: MemoryError:"."""
    from workstation import cli
    from workstation.commands.parser import CommandParser

    # an English command line (another test's `--lang tr` line, read in this process before, said it in Turkish)
    monkeypatch.setattr(CommandParser, "line", ("chat",))

    assert cli._unexpected(MemoryError()) == 1
    err = capsys.readouterr().err
    assert "unexpected error" not in err and err.startswith("workstation: The program stopped because"), err


def test_a_blas_thread_count_the_user_set_is_kept_under_a_limit() -> None:
    """Under ``ulimit -v`` numpy's OpenBLAS is put on one thread, unless the user set its variable
    (OPENBLAS_NUM_THREADS=4): that is kept."""
    import subprocess
    import sys

    script = ("import os, resource; resource.setrlimit(resource.RLIMIT_AS, (8 * 2**30, 8 * 2**30)); "
              "import workstation; print(os.environ.get('OPENBLAS_NUM_THREADS'))")
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    said = [subprocess.run([sys.executable, "-c", script], env={**env, **extra}, capture_output=True, text=True,
                           timeout=120, check=True).stdout.strip() for extra in ({}, {"OPENBLAS_NUM_THREADS": "4"})]
    assert said == ["1", "4"]
