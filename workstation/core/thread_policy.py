"""How many threads the engine uses, chosen from what else runs on the machine now.

llama.cpp's threads wait for each other at every step, so one core kept busy by another program
stalls them all. Measured on the 2-core machine (SmolLM2 Q4_1, 150 tokens, greedy): idle, 2
threads gave 75 tok/s and 1 thread 42; with ONE core kept busy by another process, 2 threads fell
to 23-25 tok/s while 1 thread gave 48-55. So with ``threads: auto`` the decode thread count is
the physical cores other programs leave free, chosen at the start of every turn and again every
``RECHECK_TOKENS`` generated tokens, and set on the live context (``llama_set_n_threads``). A
profile with a fixed number keeps it.

* ``choose_threads`` is the rule, a pure function of the measured load.
* ``LoadSampler`` measures, with psutil, how many cores the machine spent busy since its last
  sample, and how many of those were this process's own (the engine's threads).
* ``ThreadGovernor`` ties them to one engine and keeps the decision log.

Prompt processing (``n_threads_batch``) follows the same count: one might expect a long prefill
batch to want every core, but measured here (bench/threads.py, one core busy) a 2-thread
prefill ran at 141-147 tok/s and a 1-thread one at 197. With every layer on a GPU one decode
thread is enough (the CPU only feeds it).
"""

from __future__ import annotations

import contextlib
import math
import threading
import time
from collections import deque
from dataclasses import dataclass

import psutil

RECHECK_TOKENS = 256  # a long generation looks at the machine again after this many tokens
MIN_WINDOW_S = 0.2  # a load measured over less time than this is not trusted; the last one is
WINDOW_S = 1.0  # the load that decides is the last second's, not the average since the last turn
TICK_S = 0.25  # how often the sampler's own thread notes the counters (so a window is at hand)
BUSY_SLACK = 0.35  # other programs' load counts as a busy core from 0.35 of a core (2 from 1.35)


@dataclass(frozen=True)
class ThreadChoice:
    decode: int  # llama.cpp's n_threads (one token per step)
    batch: int  # n_threads_batch (prompt processing)
    reason: str  # fixed | idle | busy | gpu
    others: float  # cores other programs kept busy when it was chosen

    def describe(self) -> str:
        if self.reason == "fixed":
            return f"{self.decode} threads, as the profile says"
        if self.reason == "gpu":
            return "1 decode thread: every layer is on the GPU"
        if self.reason == "busy":
            return f"{self.decode} decode threads: other programs keep {self.others:.1f} cores busy"
        return f"{self.decode} threads: the machine is idle"


def choose_threads(physical: int, others: float, *, gpu_all_layers: bool = False) -> ThreadChoice:
    """Decode threads for ``physical`` cores when other programs keep ``others`` cores busy."""
    physical = max(1, physical)
    if gpu_all_layers:
        return ThreadChoice(1, physical, "gpu", others)
    busy = max(0, math.floor(others + 1 - BUSY_SLACK)) if others > 0 else 0
    decode = max(1, physical - busy)
    return ThreadChoice(decode, decode, "busy" if decode < physical else "idle", others)


@dataclass
class CpuLoad:
    busy: float  # cores busy on the whole machine over the window
    own: float  # cores this process used over the window
    seconds: float

    @property
    def others(self) -> float:
        return max(0.0, self.busy - self.own)


class LoadSampler:
    """Busy cores on the machine and in this process over the last second (psutil's counters).

    A small thread notes the counters every ``TICK_S``, so a turn that starts after minutes of
    quiet is judged by the last second, not by the average since the previous turn (which
    remembered a finished busy spell: a server that had waited out another program's burst
    started its next 4-client batch on 1 thread, measured 1.05x of one client instead of 1.7x).
    Without the thread (``ticker=False``, until ``start``) the window runs from the previous
    ``sample``. With ``children``, this process's own use counts its child processes' too (the
    app's engine runs in one: F5 said other programs kept 2 cores busy in the second after each
    reply, the engine's own decoding)."""

    def __init__(self, ticker: bool = True, children: bool = False) -> None:
        self._proc = psutil.Process()
        self._children: dict[int, float] | None = {} if children else None  # each child's CPU seconds, last read
        self._children_own = 0.0  # the children's CPU seconds counted so far (one that ended keeps its share)
        self._children_lock = threading.Lock()
        self._readings: deque[tuple[float, float, float]] = deque([self._read()], maxlen=8)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.recent: CpuLoad | None = None
        if ticker:
            self.start()

    def start(self) -> None:
        """The thread that notes the counters every ``TICK_S`` (started once)."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._tick, name="cpu-load", daemon=True)
            self._thread.start()

    def _read(self) -> tuple[float, float, float]:
        t = psutil.cpu_times()
        idle = t.idle + getattr(t, "iowait", 0.0)
        busy = sum(t) - idle
        own = sum(self._proc.cpu_times()[:2])
        if self._children is not None:
            own += self._read_children()
        return time.monotonic(), busy, own

    def _read_children(self) -> float:
        """The CPU seconds this process's children have used since the first reading, counted
        child by child: one that ended (a model switched) takes nothing back from the count."""
        assert self._children is not None
        seen: dict[int, float] = {}
        try:
            children = self._proc.children(recursive=True)
        except psutil.Error:  # (gone while listed, or not ours to read: the count as it was)
            return self._children_own
        for child in children:
            with contextlib.suppress(psutil.Error):
                seen[child.pid] = sum(child.cpu_times()[:2])
        with self._children_lock:
            for pid, used in seen.items():
                self._children_own += max(0.0, used - self._children.get(pid, 0.0))
            self._children = seen
            return self._children_own

    def _tick(self) -> None:
        while not self._stop.wait(TICK_S):
            try:
                reading = self._read()
            except OSError:  # no file to read /proc with (too many open): the next tick tries again
                continue  # (the thread died with a traceback, and the load was never read again)
            with self._lock:
                self._readings.append(reading)

    def sample(self, wait: bool = False) -> CpuLoad | None:
        """The load over the last ``WINDOW_S`` (or since the oldest reading, when younger); None
        until a window of MIN_WINDOW_S has passed: the last trusted one is kept in ``recent``.
        With ``wait``, a sampler that has no trusted reading yet waits out the rest of its first
        window (at most MIN_WINDOW_S) rather than answer None."""
        try:
            now = self._read()
        except OSError:
            return self.recent
        with self._lock:
            base = self._readings[0]
            for reading in self._readings:  # oldest first: the youngest at least WINDOW_S old
                if now[0] - reading[0] >= WINDOW_S:
                    base = reading
            dt = now[0] - base[0]
            if dt < MIN_WINDOW_S and not (wait and self.recent is None):
                return self.recent
        if dt < MIN_WINDOW_S:
            time.sleep(MIN_WINDOW_S - dt)
            return self.sample()
        with self._lock:
            self._readings.append(now)
        load = CpuLoad(busy=(now[1] - base[1]) / dt, own=(now[2] - base[2]) / dt, seconds=dt)
        self.recent = load
        return load

    def close(self) -> None:
        self._stop.set()


class ThreadGovernor:
    """The thread choice of one engine with ``threads: auto``; ``check`` says what to set."""

    def __init__(self, physical: int, gpu_all_layers: bool = False, sampler: LoadSampler | None = None) -> None:
        """``sampler``: one started before the model loaded, so that the load is the first
        turn's window (a one-shot ``chat`` decides at once, from the seconds it loaded in)."""
        self.physical = physical
        self.gpu_all_layers = gpu_all_layers
        self.sampler = sampler or LoadSampler()
        self.current = choose_threads(physical, 0.0, gpu_all_layers=gpu_all_layers)
        self.log: deque[tuple[float, ThreadChoice]] = deque(maxlen=100)

    def check(self) -> ThreadChoice | None:
        """A new choice when the load calls for another thread count, else None. The first
        check waits for a trusted window (the turn would otherwise start on every core)."""
        load = self.sampler.sample(wait=True)
        if load is None:
            return None
        choice = choose_threads(self.physical, load.others, gpu_all_layers=self.gpu_all_layers)
        if (choice.decode, choice.batch) == (self.current.decode, self.current.batch):
            self.current = choice  # the same counts; keep the latest reading for the dashboard
            return None
        self.current = choice
        self.log.append((time.time(), choice))
        return choice

    def close(self) -> None:
        self.sampler.close()
