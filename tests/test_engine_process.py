"""The engine in its child process: the same turn as in-process, and gathered text pieces."""

from __future__ import annotations

import contextlib
import itertools
import multiprocessing as mp
import signal
from pathlib import Path

import pytest
from conftest import make_profile

from workstation.core.engine import Engine
from workstation.core.engine_api import open_engine
from workstation.core.engine_process import EngineProcess, send_events
from workstation.core.events import PromptRead, TokenDelta, TurnFinished
from workstation.core.metrics import TurnMetrics

MESSAGES = [{"role": "user", "content": "Name three colours of the rainbow and say why the sky is blue."}]


def _events(engine: object) -> tuple[list[TokenDelta], TurnFinished]:
    deltas: list[TokenDelta] = []
    done: TurnFinished | None = None
    for event in engine.stream_chat(MESSAGES):  # type: ignore[attr-defined]
        if isinstance(event, TokenDelta):
            deltas.append(event)
        else:
            done = event
    assert done is not None
    return deltas, done


def test_child_process_turn_equals_the_local_turn(smollm2_path: Path) -> None:
    profile = make_profile(sampling={"max_tokens": 64})
    with Engine(profile) as local:
        local_deltas, local_done = _events(local)
    with EngineProcess(profile) as proc:
        each_deltas, each_done = _events(proc)
        proc.reset()
        proc.stream_interval_s = 10.0  # gathered: fewer pieces, the same text and token counts
        few_deltas, few_done = _events(proc)
    assert each_done.text == few_done.text == local_done.text
    assert len(each_deltas) == len(local_deltas) == local_done.metrics.predicted_n
    assert all(d.tokens == 1 for d in each_deltas)
    assert few_deltas[0].tokens == 1  # the first piece goes out alone (time to first token)
    assert sum(d.tokens for d in few_deltas) == few_done.metrics.predicted_n
    assert "".join(d.text for d in few_deltas) == few_done.text


def test_pieces_are_gathered_by_the_clock_not_lost(smollm2_path: Path) -> None:
    """``send_events`` driven by a clock the test controls: one tick per token, a message every
    10 ticks, the first piece at once, the rest flushed with the end of the turn."""
    with Engine(make_profile(sampling={"max_tokens": 47})) as local:
        events = list(local.stream_chat(MESSAGES))
    deltas = [e for e in events if isinstance(e, TokenDelta)]
    assert len(deltas) > 21
    parent, child = mp.Pipe()
    send_events(child, iter(events), 10.0, clock=itertools.count(0).__next__)
    sent = []
    while parent.poll():
        sent.append(parent.recv())
    pieces = [m for m in sent if m[0] == "delta"]
    assert sent[-1][0] == "done" and sent[-1][1] == events[-1].text
    # the pieces group the deltas 1, 10, 10, ..., the rest; each says how many tokens it covers
    groups = [deltas[:1]] + [deltas[i : i + 10] for i in range(1, len(deltas), 10)]
    assert [m[2] for m in pieces] == [sum(d.tokens for d in g) for g in groups]
    assert sum(m[2] for m in pieces) == events[-1].metrics.predicted_n
    assert "".join(m[1] for m in pieces) == "".join(d.text for d in deltas)


def test_how_far_a_prompt_has_been_read_goes_to_the_app_at_once() -> None:
    """The engine's process tells the app each part of a long prompt read, as it comes (the app
    shows it: "reading the conversation… 42%"), and the text after it as before."""
    events = [PromptRead(512, 1300, 0, 900.0), PromptRead(1024, 1300, 0, 1800.0), TokenDelta("Hi"),
              TurnFinished("Hi", TurnMetrics(predicted_n=1))]
    parent, child = mp.Pipe()
    send_events(child, iter(events), 10.0, clock=itertools.count(0).__next__)
    sent = []
    while parent.poll():
        sent.append(parent.recv())
    assert sent[:2] == [("read", 512, 1300, 0, 900.0), ("read", 1024, 1300, 0, 1800.0)]
    assert [m[0] for m in sent[2:]] == ["delta", "done"]


def test_the_engines_process_outlives_a_hang_up_and_leaves_quietly_when_the_app_is_killed(
    smollm2_path: Path, tmp_path: Path
) -> None:
    """A closed terminal's hang-up killed the engine's process, and the app read it as a crash
    and loaded the profile again; an app killed mid-reply (SIGKILL, or SIGTERM before it
    handled it) left its engine's process printing BrokenPipeError tracebacks into the terminal."""
    import os
    import signal
    import subprocess
    import sys
    import textwrap

    profile = make_profile(sampling={"max_tokens": 8})
    with EngineProcess(profile) as proc:
        os.kill(proc.pid, signal.SIGHUP)  # type: ignore[arg-type]  # the terminal's hang-up reaches the whole process group
        _, done = _events(proc)
        assert proc.alive and done.metrics.predicted_n == 8
        if Path(f"/proc/{proc.pid}/status").exists():  # Ctrl-C never reached it, from its first instant
            status = Path(f"/proc/{proc.pid}/status").read_text()
            blocked = int(status.split("SigBlk:")[1].split()[0], 16)
            assert blocked & (1 << (signal.SIGINT - 1)), status
    script = textwrap.dedent("""
        import os
        from tests.conftest import make_profile
        from workstation.core.engine_process import EngineProcess
        proc = EngineProcess(make_profile(sampling={"max_tokens": 400}))
        events = proc.stream_chat([{"role": "user", "content": "Write a long story."}])
        for _ in range(3):
            next(events)
        print(proc.pid, flush=True)
        os._exit(0)  # killed in the middle of the reply: the engine's pipe breaks
    """)
    done_run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                              cwd=Path(__file__).parent.parent)
    # the engine's process shares the stderr pipe: run() returns once it, too, has left
    assert done_run.stdout.strip().isdigit(), done_run.stderr
    assert "Traceback" not in done_run.stderr and "BrokenPipe" not in done_run.stderr, done_run.stderr


def test_a_ctrl_c_while_a_helper_process_starts_does_not_reach_it() -> None:
    """Ctrl-C goes to the command's helper processes too; pressed in the second a new one took
    to start (before its own code ignored it), ``summarize`` printed the helper's
    KeyboardInterrupt traceback under "workstation: stopped."."""
    from workstation.core.child_process import start_child

    helper = mp.get_context("spawn").Process(target=signal.raise_signal, args=(signal.SIGINT,))
    start_child(helper)  # its very first act: a Ctrl-C
    helper.join(60)
    assert helper.exitcode == 0


def test_an_engine_killed_by_the_system_is_said_so(smollm2_path: Path) -> None:
    """Killed (the system does that when memory runs out) the app said only "exit code -9"."""
    import os

    from workstation.core.errors import EngineError

    with EngineProcess(make_profile(sampling={"max_tokens": 4})) as proc:
        os.kill(proc._proc.pid, signal.SIGKILL)
        proc._proc.join(timeout=30)
        with pytest.raises(EngineError, match=r"^The system stopped the model, most often because the computer ran "
                                              r"out of memory; close other programs, then load the profile again\.$"):
            list(proc.stream_chat([{"role": "user", "content": "Hi"}]))
    # killed while loading: "load the profile again" had it killed again; what to change is said
    import psutil

    def kill_the_engine(_fraction: float) -> None:
        for child in psutil.Process().children():  # the engine's (spawned), not the resource tracker
            with contextlib.suppress(psutil.Error):
                if "spawn_main" in " ".join(child.cmdline()):
                    child.kill()

    # in plain words (it said "... (exit code -9) ..."), and in the app's language (English only)
    from workstation.core.phrases import say
    from workstation.tui.i18n import Texts

    with pytest.raises(EngineError, match=r"^The computer ran out of memory while loading the model, so the system "
                                          r"stopped it; close other programs, lower Context \(or set Context memory K "
                                          r"and V to q8_0\) in F3 → E, or choose a smaller model in F4 \('fit' says "
                                          r"what fits\), then load it again\.$") as caught:
        EngineProcess(make_profile(sampling={"max_tokens": 4}), progress=kill_the_engine).close()
    assert Texts("tr").error(caught.value).startswith("Model yüklenirken bilgisayarın belleği yetmedi")
    assert "F3 shows whether a profile fits" in Texts("en").error(caught.value)
    assert "code" not in say(caught.value.said)


def test_an_engine_that_crashes_loading_onto_a_gpu_says_so_and_the_app_loads_it_on_the_cpu(smollm2_path: Path) -> None:
    """The first GPU run: every load with layers on the GPU crashed inside llama.cpp, and the
    app said only "exit code -11". A crash is said in words; where the default ``auto`` puts
    layers on a GPU (NVML sees one: faked, none here), that gpu_layers 0 runs on the CPU."""
    import os

    from workstation.core import hardware
    from workstation.core.errors import EngineError

    def crash(_fraction: float) -> None:  # the engine's process, mid-load, as a fault ends it
        for child in mp.active_children():
            if child.name == "workstation-engine":
                os.kill(child.pid, signal.SIGSEGV)

    hardware.set_probe(hardware.FakeGpuProbe.of(("RTX 4060", 8, 7.5)))
    try:
        with pytest.raises(EngineError, match=r"^The model crashed inside llama.cpp \(SIGSEGV\); load the profile "
                                              r"again\. If it crashes again, set gpu_layers to 0 in the profile to "
                                              r"run it on the CPU\.$"):
            EngineProcess(make_profile(gpu_layers="auto"), progress=crash)
        # the app's engine (open_engine) loads it on the CPU then, and says so once loaded
        crashes = [crash]
        with open_engine(make_profile(gpu_layers="auto", sampling={"max_tokens": 4}),
                         progress=lambda f: crashes and crashes.pop()(f)) as engine:
            assert not crashes and engine.profile.gpu_layers == 0 and engine.info().gpu_layers == 0
            assert engine.load_notes == [("engine.gpu_crashed", {})]
            assert engine.run_chat([{"role": "user", "content": "Hi"}]).metrics.predicted_n > 0
        # crashed on the CPU too: said so, without the advice the retry has just followed
        with pytest.raises(EngineError, match=r"^The model crashed inside llama.cpp \(SIGSEGV\) on the GPU, then "
                                              r"again on the CPU: the model file or this build of llama.cpp, not the "
                                              r"GPU; load the profile again\.$"):
            open_engine(make_profile(gpu_layers="auto"), progress=crash)
    finally:
        hardware.set_probe(None)


def test_an_engine_the_system_gives_no_process_says_why(smollm2_path: Path) -> None:
    """Too few open files (``ulimit -n``) or a read-only /dev/shm: the app said only "OSError:
    [Errno 30] Read-only file system". Run where no file can be opened any more."""
    import subprocess
    import sys

    script = (
        "import os, resource\n"
        "from tests.conftest import make_profile\n"
        "from workstation.core.engine_process import EngineProcess\n"
        "from workstation.core.errors import EngineError\n"
        "profile = make_profile()\n"
        "top = max(int(fd) for fd in os.listdir('/proc/self/fd'))\n"
        "resource.setrlimit(resource.RLIMIT_NOFILE, (top + 1, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))\n"
        "try:\n"
        "    EngineProcess(profile)\n"
        "except EngineError as err:\n"
        "    print(err.said[0][1]['why'][0], err, sep='|')\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                          cwd=Path(__file__).parent.parent)
    assert done.returncode == 0, done.stderr
    key, sentence = done.stdout.strip().split("|")
    assert key == "engine.too_many_files"
    assert sentence.startswith("The model could not be started in a process of its own: this program may have "
                               "only ") and "(ulimit -n 4096)" in sentence, sentence
