"""threads: auto follows the machine's load; a fixed number never changes.

The rule is a pure function of the measured load (tested without a model); the engine is tested
for real with a busy-loop process keeping a core busy, and the dashboard shows the decision.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from conftest import make_profile, write_profile_file
from tui_helpers import type_message, until

from workstation.core.engine import Engine
from workstation.core.hardware import count_physical_cores
from workstation.core.profiles import Sampling
from workstation.core.thread_policy import CpuLoad, LoadSampler, ThreadGovernor, choose_threads

# they measure what other programs keep busy: run by test.sh after the others, with nothing beside
pytestmark = pytest.mark.alone

HELLO = [{"role": "user", "content": "Name three colours of the rainbow."}]
SHORT = Sampling(temperature=0.0, max_tokens=8, repeat_penalty=1.0)


def test_every_core_when_idle_one_fewer_for_each_busy_core() -> None:
    assert choose_threads(2, 0.2).decode == 2  # a light background is no busy core
    idle = choose_threads(2, 0.0)
    assert (idle.decode, idle.batch, idle.reason) == (2, 2, "idle")
    busy = choose_threads(2, 1.0)
    assert (busy.decode, busy.batch, busy.reason) == (1, 1, "busy")  # prefill too (measured)
    assert choose_threads(2, 3.7).decode == 1  # never below one
    assert choose_threads(8, 2.0).decode == 6
    assert choose_threads(8, 0.7).decode == 7  # most of a core is a busy core
    assert choose_threads(8, 0.3).decode == 8
    gpu = choose_threads(8, 0.0, gpu_all_layers=True)
    assert (gpu.decode, gpu.batch, gpu.reason) == (1, 8, "gpu")
    assert "other programs keep 1.0 cores busy" in busy.describe()


class ScriptedLoad(LoadSampler):
    """psutil's counters replaced by a script of loads (the governor's logic, no machine)."""

    def __init__(self, loads: list[CpuLoad | None]) -> None:
        self.loads = loads
        self.recent = None

    def sample(self, wait: bool = False) -> CpuLoad | None:
        return self.loads.pop(0)


def test_governor_changes_only_when_the_count_changes_and_logs_each_change() -> None:
    loads = [CpuLoad(2.0, 1.9, 1.0), CpuLoad(1.4, 0.4, 1.0), CpuLoad(1.5, 0.3, 1.0), None, CpuLoad(0.1, 0.0, 1.0)]
    gov = ThreadGovernor(2, sampler=ScriptedLoad(loads))
    assert gov.check() is None  # our own threads kept the cores busy: nobody else
    first = gov.check()
    assert first is not None and first.decode == 1 and first.others == pytest.approx(1.0)
    assert gov.check() is None  # still one busy core: no change, no log line
    assert gov.current.others == pytest.approx(1.2)
    assert gov.check() is None  # no trustworthy window yet
    back = gov.check()
    assert back is not None and back.decode == 2 and back.reason == "idle"
    assert [c.decode for _, c in gov.log] == [1, 2]


def test_load_sampler_sees_a_busy_loop_in_another_process() -> None:
    sampler = LoadSampler()
    family = LoadSampler(ticker=False, children=True)  # (the app's F5: its engine is a child process)
    time.sleep(0.3)
    sampler.sample()
    family.sample()
    with busy_loop():
        time.sleep(1.0)
        load, ours = sampler.sample(), family.sample()
    assert load is not None and load.others > 0.6  # most of a core, not ours
    assert load.own < 0.3
    # counting its children, the loop (a child of this process) is our own: F5 said other programs
    # kept 2 cores busy in the second after each reply, the engine's own decoding
    assert ours is not None and ours.own > 0.6 and ours.others < load.others - 0.4, (ours, load)
    time.sleep(0.3)
    after = family.sample()  # the child ended: its share is not taken back (others above the machine's busy)
    assert after is not None and after.own >= 0 and after.others <= after.busy, after


def test_the_load_is_the_last_seconds_not_the_average_since_the_last_turn() -> None:
    """A server that waited out another program's busy spell must start its next turn with every
    core: the sampler with its ticker sees the quiet second, one without sees the old average."""
    probe = LoadSampler(ticker=False)
    time.sleep(1.0)
    before = probe.sample()
    if before is not None and before.others > 0.5:
        pytest.skip(f"other programs keep {before.others:.1f} cores busy already: no quiet second to see")
    fresh, stale = LoadSampler(), LoadSampler(ticker=False)
    try:
        with busy_loop():
            time.sleep(2.0)
        time.sleep(1.5)
        now, then = fresh.sample(), stale.sample()
        assert now is not None and then is not None
        assert now.seconds < 1.6 and then.seconds > 3.0
        assert then.others - now.others > 0.3  # the busy spell is in the old average only
    finally:
        fresh.close()


class busy_loop:  # noqa: N801 - used as a context manager
    """A plain busy loop in another process, as another program keeping one core busy; with
    ``detached``, not a child of this process (the app counts its own children's use as its own)."""

    def __init__(self, detached: bool = False) -> None:
        self.detached = detached

    def __enter__(self) -> psutil.Process:
        loop = [sys.executable, "-c", "while True: pass"]
        if not self.detached:
            self.proc = psutil.Process(subprocess.Popen(loop).pid)
            return self.proc
        started = subprocess.run([sys.executable, "-c", "import subprocess, sys; print(subprocess.Popen("
                                  f"{loop!r}, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).pid)"], capture_output=True, text=True, check=True)
        self.proc = psutil.Process(int(started.stdout))  # (its parent has ended: no longer ours)
        return self.proc

    def __exit__(self, *exc: object) -> None:
        self.proc.kill()
        self.proc.wait()


@pytest.fixture
def auto_engine(smollm2_path: Path) -> Iterator[Engine]:
    with Engine(make_profile(threads="auto")) as eng:
        yield eng


@pytest.mark.skipif(count_physical_cores() < 2, reason="needs a core to spare")
def test_auto_threads_give_way_to_a_busy_core_and_come_back(auto_engine: Engine) -> None:
    physical = count_physical_cores()
    auto_engine.run_chat(HELLO, SHORT)  # a first turn: the sampler's window starts
    with busy_loop():
        time.sleep(1.0)
        final = auto_engine.run_chat(HELLO, SHORT)
    m = final.metrics
    assert m.threads_reason == "busy" and m.n_threads < physical
    assert m.cpu_others > 0.6
    assert auto_engine.model.threads == (m.n_threads, m.n_threads)  # set on the live context


@pytest.mark.skipif(count_physical_cores() < 2, reason="needs a core to spare")
def test_a_fresh_engine_sees_a_busy_core_at_its_first_turn(smollm2_path: Path) -> None:
    """A one-shot 'chat' loads and answers one turn: its first turn must already give way (the
    load is its window), not start on every core and never look again (short replies are under
    RECHECK_TOKENS)."""
    physical = count_physical_cores()
    with busy_loop():
        time.sleep(0.5)
        with Engine(make_profile(threads="auto")) as eng:
            final = eng.run_chat(HELLO, SHORT)
    m = final.metrics
    assert m.threads_reason == "busy" and m.n_threads <= physical - 1, m
    assert m.cpu_others > 0.6


def test_a_fixed_thread_count_is_never_changed(smollm2_path: Path) -> None:
    with Engine(make_profile(threads=2)) as eng, busy_loop():
        time.sleep(0.5)
        final = eng.run_chat(HELLO, SHORT)
        assert eng.core.governor is None
        assert eng.model.threads == (2, 2)
    assert (final.metrics.n_threads, final.metrics.threads_reason) == (2, "fixed")


@pytest.mark.skipif(count_physical_cores() < 2, reason="needs a core to spare")
async def test_dashboard_shows_the_thread_decision(tmp_path: Path, smollm2_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """F5 says how many threads the last turn had and why: a turn while another program keeps
    a core busy had fewer than the cores, and the line says how busy (it asserted only the
    count, which on an idle machine was every core whatever the line said)."""
    from textual.widgets import Static

    from workstation.tui.app import WorkstationApp
    from workstation.tui.screens.dashboard import DashboardScreen

    folder = tmp_path / "profiles"
    folder.mkdir()
    write_profile_file(folder / "auto.yaml", threads="auto", sampling={"max_tokens": 6})
    monkeypatch.setenv("WORKSTATION_PROFILES", str(folder))
    physical = count_physical_cores()
    app = WorkstationApp("auto", language="en")
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: app.engine is not None)
        with busy_loop():
            await pilot.pause(1.0)
            await type_message(pilot, "Hi")
            await until(pilot, lambda: bool(app.history.turns) and not app.generating)
        last = app.history.turns[-1]
        await pilot.press("f5")
        await until(pilot, lambda: isinstance(app.screen, DashboardScreen))
        line = lambda: str(app.screen.query_one("#cache-line", Static).content)  # noqa: E731
        await until(pilot, lambda: "(threads) in the last reply:" in line())
        text = line()
        assert last.threads_reason == "busy" and last.n_threads < physical and last.cpu_others > 0.6
        # in words first, the term after ("Threads: 3 of 4" alone was jargon to a first user)
        # said as measured, as the reply began: F5 said "keeps" minutes later, when it was no longer so
        assert (f"Cores at work (threads) in the last reply: {last.n_threads} of {physical}: other programs kept "
                f"{last.cpu_others:.1f} cores busy as it began") in text
        # a reply on every core, then another program busy: F5 says so now, from the app's own
        # second-by-second reading; the app's own busy thread is no other program (it was counted)
        await pilot.press("escape")
        await pilot.pause(1.5)
        await type_message(pilot, "Hi again")
        await until(pilot, lambda: len(app.history.turns) == 2 and not app.generating)
        if app.history.turns[-1].threads_reason != "idle":
            pytest.skip("other programs kept a core busy during the quiet reply: nothing to compare")
        await pilot.press("f5")
        await until(pilot, lambda: isinstance(app.screen, DashboardScreen))
        now = "Now other programs keep"
        with busy_loop(detached=True):  # (a child of the app's process would be the app's own)
            await until(pilot, lambda: now in line(), steps=200)
        await until(pilot, lambda: now not in line(), steps=200)
        with own_busy_thread():
            await pilot.pause(2.5)
            assert now not in line(), line()


class own_busy_thread:  # noqa: N801 - used as a context manager
    """A thread of this process keeping a core busy (hashing drops the GIL: the app still runs)."""

    def __enter__(self) -> None:
        import hashlib
        import threading

        self.stop = threading.Event()
        block = bytes(1 << 22)

        def spin() -> None:
            while not self.stop.is_set():
                hashlib.sha256(block).digest()

        self.thread = threading.Thread(target=spin, daemon=True)
        self.thread.start()

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join()


def test_auto_threads_count_only_the_cpus_this_process_may_use() -> None:
    """Under `taskset -c 0` (a container's cpuset) threads: auto took every core of the
    machine, and two threads on one CPU decoded 27% slower than one."""
    import os

    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("one CPU: nothing to leave out")
    code = ("from workstation.core.hardware import count_physical_cores\n"
            "from tests.conftest import make_profile\n"
            "print(count_physical_cores(), make_profile(threads='auto').resolved_threads())\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         cwd=Path(__file__).resolve().parent.parent,
                         preexec_fn=lambda: os.sched_setaffinity(0, {min(os.sched_getaffinity(0))}))
    assert out.stdout.split() == ["1", "1"], out.stderr


def test_the_load_sampler_outlives_running_out_of_files() -> None:
    """With too few open files (ulimit -n) reading /proc/stat failed in the sampler's thread,
    which died with a traceback and never read the load again."""
    code = """
import os, resource, threading, time
from workstation.core.thread_policy import TICK_S, LoadSampler
load = LoadSampler()
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (len(os.listdir('/proc/self/fd')) - 1, hard))
time.sleep(TICK_S * 4)
resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
deadline = time.monotonic() + 60  # (its ticks, not a second of them: a busy machine runs the thread late)
while len(load._readings) < 3 and time.monotonic() < deadline:
    time.sleep(TICK_S)
print(any(t.name == 'cpu-load' and t.is_alive() for t in threading.enumerate()), len(load._readings))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         cwd=Path(__file__).resolve().parent.parent)
    alive, readings = out.stdout.split()
    assert alive == "True" and int(readings) >= 3 and "Traceback" not in out.stderr, out.stderr


def test_the_load_sampler_ticks_once_the_model_is_loaded(smollm2_path: Path) -> None:
    """On the first GPU run (an H200) every load made with the sampler's thread ticking crashed
    inside llama.cpp and every load without it loaded: it starts after the models are loaded,
    its first reading still from before the load (the first turn's window spans the load)."""
    import threading

    def ticking() -> set[threading.Thread]:
        return {t for t in threading.enumerate() if t.name == "cpu-load"}

    before = ticking()  # other engines' samplers in this process
    during: list[tuple[float, bool]] = []
    engine = Engine(make_profile(threads="auto"),
                    progress=lambda _f: during.append((time.monotonic(), bool(ticking() - before))))
    try:
        assert during and not any(tick for _, tick in during)
        assert ticking() - before  # and after the load, it ticks
        assert engine.core.governor is not None and engine.core.governor.sampler._readings[0][0] < during[0][0]
    finally:
        engine.close()
