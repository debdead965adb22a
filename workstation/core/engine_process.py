"""The engine in a child process of its own, behind a small message protocol over a pipe.

Measured on a 2-core machine: a Textual app that decodes in a thread of its own process runs
at a third of bare speed (the GIL and llama.cpp's spinning threads fight the UI thread); the
same app with the engine in a child process runs at 0.95x. ``EngineProcess`` has the same
interface as ``Engine`` (``ChatEngine`` in ``core/engine_api.py``, plus ``stream_tokens``), so
callers do not care which side of the boundary the model is on.

Protocol (pickled tuples over a ``multiprocessing`` pipe):
  parent -> child  ("chat", messages, sampling|None, interval_s, constraints|None, tag|None, reading)
                   | ("tokens", ids, sampling|None, interval_s)
                   | ("many", conversations, sampling|None, tag|None, steps)
                   | ("tokenize_chat", messages) | ("forget", tag) | ("claim", tag, messages)
                   | ("reset",) | ("info",) | ("close",)
  child -> parent  ("progress", fraction) | ("ready", info) | ("delta", text, n_tokens, reasoning)
                   | ("read", read, total, cached, ms) | ("done", text, metrics, reasoning)
                   | ("item", index, text, metrics, reasoning)
                   | ("step", index, read, total, cached, ms) | ("step", index, n_tokens)  (steps asked)
                   | ("result", value) | ("error", message[, phrases])
Cancellation is a shared ``multiprocessing.Event`` the child checks per token and inside
llama.cpp (abort callback), so it does not wait behind the pipe.
"""

from __future__ import annotations

import dataclasses
import multiprocessing as mp
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from multiprocessing.connection import Connection
from typing import Any

from workstation.core.child_process import start_child
from workstation.core.errors import EngineError, WorkstationError
from workstation.core.events import (
    EngineInfo,
    Message,
    PromptRead,
    StepEvent,
    TokenDelta,
    TurnEvent,
    TurnFinished,
    finished_turn,
)
from workstation.core.metrics import TurnMetrics
from workstation.core.phrases import Phrase
from workstation.core.profile_check import profile_from_dict
from workstation.core.profiles import Constraints, Profile, Sampling

_CTX = mp.get_context("spawn")
_GPU_FAULTS = {11, 7, 6}  # (an illegal instruction is the build's, not the GPU's)
# signals a fault ends a process with (said by name: SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT)
_CRASHES = {11, 7, 4, 8, 6}


def _child_main(
    conn: Connection, cancel: Any, profile_data: dict[str, Any], source: str | None, keep_state: bool = False,
    cpu_only: bool = False,
) -> None:
    import os
    import signal
    from pathlib import Path

    if cpu_only:  # no GPU seen at all (a CUDA build starts CUDA even with 0 layers): read at its first call
        for var in ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "GGML_VK_VISIBLE_DEVICES"):
            os.environ[var] = ""

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C belongs to the parent
    # so does a closed terminal's hang-up: the app keeps the reply and closes this process
    # (killed by it, the engine's death read as a crash, and the app loaded the profile again)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    from workstation.core.engine import Engine

    try:
        profile = profile_from_dict(profile_data, source or "<profile>", Path(source) if source else None)
        engine = Engine(
            profile, cancel_flag=cancel, progress=lambda f: conn.send(("progress", f)), keep_state=keep_state
        )
    except (BrokenPipeError, ConnectionResetError):
        return  # the app went away while the model loaded
    except WorkstationError as err:
        _tell(conn, ("error", str(err), err.said))
        return
    except Exception as err:  # noqa: BLE001 - reported as one sentence, never a traceback
        _tell(conn, ("error", f"The engine could not start: {type(err).__name__}: {err}"))
        return
    if not _tell(conn, ("ready", engine.info().to_dict())):
        engine.close()
        return
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            break
        kind = msg[0]
        try:
            if kind == "close":
                break
            if kind == "info":
                conn.send(("result", engine.info().to_dict()))
            elif kind == "reset":
                engine.reset()
                conn.send(("result", None))
            elif kind == "forget":
                conn.send(("result", engine.forget(msg[1])))
            elif kind == "claim":
                conn.send(("result", engine.claim_cells(msg[1], msg[2])))
            elif kind == "tokenize_chat":
                conn.send(("result", engine.chat_prompt(msg[1])))
            elif kind == "many":
                engine.run_many(
                    msg[1],
                    Sampling(**msg[2]) if msg[2] else None,
                    lambda i, ev: conn.send(("item", i, ev.text, ev.metrics.to_dict(), ev.reasoning)),
                    tag=msg[3],
                    on_step=(lambda i, ev: conn.send(_step(i, ev))) if msg[4] else None,
                )
                conn.send(("result", None))
            elif kind in ("chat", "tokens"):
                sampling = Sampling(**msg[2]) if msg[2] else None
                events = (
                    engine.stream_chat(msg[1], sampling, constraints=Constraints(**msg[4]) if msg[4] else None,
                                       tag=msg[5], reading=msg[6])
                    if kind == "chat"
                    else engine.stream_tokens(msg[1], sampling)
                )
                send_events(conn, events, msg[3])
            else:
                conn.send(("error", f"unknown request {kind!r}"))
        except (BrokenPipeError, ConnectionResetError):
            break  # the app has gone (killed): no one to tell, and no traceback in its terminal
        except WorkstationError as err:
            _tell(conn, ("error", str(err), err.said))
        except Exception as err:  # noqa: BLE001
            _tell(conn, ("error", f"The turn failed: {type(err).__name__}: {err}"))
    engine.close()
    conn.close()


def _step(i: int, event: PromptRead | TokenDelta) -> tuple[Any, ...]:
    """A part of ``run_many``'s work, for the pipe: the prompt read so far, or reply tokens."""
    if isinstance(event, PromptRead):
        return ("step", i, event.read, event.total, event.cached, event.ms)
    return ("step", i, event.tokens)


def _tell(conn: Connection, msg: tuple[Any, ...]) -> bool:
    """Send the app a message, unless the app has gone meanwhile (then False)."""
    try:
        conn.send(msg)
    except OSError:
        return False
    return True


def send_events(
    conn: Connection,
    events: Iterator[TurnEvent],
    interval_s: float,
    clock: Callable[[], float] = time.perf_counter,
) -> None:
    """Send a turn's events to the parent. With ``interval_s`` > 0 the first piece of text goes
    out at once (time to first token) and later ones are gathered into at most one message per
    ``interval_s``: each message wakes the parent, and on a machine whose cores all run
    llama.cpp threads every wake-up costs decode speed."""
    pending: list[TokenDelta] = []
    last_sent = float("-inf")  # the first piece always goes out at once

    def send_pending() -> None:
        text = "".join(d.text for d in pending)
        thought = "".join(d.reasoning for d in pending)
        conn.send(("delta", text, sum(d.tokens for d in pending), thought))
        pending.clear()

    for event in events:
        if isinstance(event, PromptRead):  # one a part of the prompt (n_batch tokens): a few a second
            conn.send(("read", event.read, event.total, event.cached, event.ms))
        elif isinstance(event, TokenDelta):
            pending.append(event)
            now = clock()
            if now - last_sent >= interval_s:
                send_pending()
                last_sent = now
        else:
            if pending:
                send_pending()
            conn.send(("done", event.text, event.metrics.to_dict(), event.reasoning))


def _failed(reply: tuple[Any, ...]) -> EngineError:
    """The child's ("error", message[, phrases]) as the error to raise here, its phrases kept
    so that the TUI can say it in its language."""
    return EngineError(reply[1], said=reply[2] if len(reply) > 2 else None)


def _process_problem(err: OSError) -> Phrase:
    """Why the engine's process could not be made, in words a person (or their IT) can act on."""
    import errno
    import resource

    if err.errno == errno.EROFS:
        return ("engine.shm_read_only", {})
    if err.errno in (errno.ENOSPC, errno.EDQUOT):
        return ("engine.shm_full", {})
    if err.errno in (errno.EMFILE, errno.ENFILE):
        return ("engine.too_many_files", {"most": str(resource.getrlimit(resource.RLIMIT_NOFILE)[0])})
    if err.errno in (errno.EAGAIN, errno.ENOMEM):
        return ("engine.no_new_process", {})
    return ("file.os_says", {"reason": err.strerror or str(err)})


class EngineStopped(EngineError):
    """The engine's process ended while it was wanted (killed, a crash); ``how``: how it ended,
    a phrase (the app says "The model's process stopped (how)" and loads it again)."""

    def __init__(self, *, said: list[Phrase], how: Phrase = ("engine.ended_code", {"code": "?"})) -> None:
        super().__init__(said=said)
        self.how = how


class EngineCrashed(EngineStopped):
    """The engine's process ended by a fault (inside llama.cpp); ``on_gpu``: it had, or was
    loading, layers on a GPU (``open_engine`` then loads the profile on the CPU)."""

    def __init__(self, *, said: list[Phrase], on_gpu: bool, how: Phrase = ("engine.ended_code", {"code": "?"})) -> None:
        super().__init__(said=said, how=how)
        self.on_gpu = on_gpu


def killed_by_system(code: int | None, *, loading: bool) -> Phrase | None:
    """The sentence for a process that ended with ``code`` -9: killed, most often by the system
    when memory ran out ("exit code -9" said nothing, and in English only). ``loading``: it was
    loading the model, which loaded again as it is is killed again, so what to change is said.
    None for any other end. (The engine's process, and serve's: a server started beside the
    chat said "did not answer in time" of it.)"""
    if code != -9:
        return None
    return ("engine.stopped_killed_loading", {}) if loading else ("engine.stopped_killed", {})


def _signal_name(number: int) -> str:
    """SIGBUS for 7: the fault's name, which whoever looks after the PC can search for."""
    import signal

    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


class EngineProcess:
    """An ``Engine`` in a child process. One turn at a time; ``cancel`` from any thread."""

    def __init__(
        self,
        profile: Profile,
        progress: Callable[[float], None] | None = None,
        start_timeout_s: float = 600.0,
        keep_state: bool = False,
        cpu_only: bool = False,
    ) -> None:
        """``cpu_only``: the engine's process sees no GPU (after a crash loading onto one)."""
        self.profile = profile
        self.load_notes: list[Phrase] = []  # said by the app once loaded (open_engine's CPU fallback)
        # > 0: the child gathers text into at most one message per this many seconds (the
        # first piece always goes at once); the TUI sets 1/STREAM_HZ, its screen's update rate
        self.stream_interval_s = 0.0
        self._lock = threading.Lock()
        data = profile.to_dict()
        data.pop("source", None)
        ends: list[Connection] = []
        try:  # a semaphore in /dev/shm, a pipe and a process: what a locked-down system may refuse
            self._cancel = _CTX.Event()
            parent, child = ends = list(_CTX.Pipe())
            self._proc = _CTX.Process(
                target=_child_main,
                args=(child, self._cancel, data, str(profile.source) if profile.source else None, keep_state,
                      cpu_only),
                daemon=True,
                name="workstation-engine",
            )
            start_child(self._proc)
        except OSError as err:  # "OSError: [Errno 30] Read-only file system" in the app before
            for end in ends:  # (each try in the app left two descriptors open)
                end.close()
            raise EngineError(said=[("engine.no_process", {"why": _process_problem(err)})]) from None
        child.close()
        self._conn = parent
        self._killed_here = False
        self._closing = False  # closed (or killed) from this side: ``watch`` says nothing
        self._info: EngineInfo | None = None
        while True:
            if not self._conn.poll(start_timeout_s):
                self._kill()
                raise EngineError("The engine did not start in time.")
            msg = self._recv()
            if msg[0] == "progress":
                if progress:
                    progress(msg[1])
            elif msg[0] == "ready":
                self._info = EngineInfo(**msg[1])
                break
            elif msg[0] == "error":
                self._kill()
                raise _failed(msg)

    def _recv(self) -> tuple[Any, ...]:
        try:
            return self._conn.recv()
        except (EOFError, OSError):
            raise self._stopped() from None

    def _post(self, msg: tuple[Any, ...]) -> None:
        """``msg`` to the engine; one that died while idle said so (a turn sent then ended in
        "BrokenPipeError: [Errno 32] Broken pipe")."""
        try:
            self._conn.send(msg)
        except OSError:
            raise self._stopped() from None

    def _reaped(self, limit_s: float = 5.0) -> int | None:
        """The process's exit code once it can be had (None: still running after ``limit_s``).
        Its pipe and sentinel close before the kernel lets it be reaped, and ``join`` returns at
        once on a closed sentinel: on a busy machine the sentence said "exit code None"."""
        deadline = time.monotonic() + limit_s
        while (code := self._proc.exitcode) is None and time.monotonic() < deadline:
            self._proc.join(timeout=min(0.05, max(0.0, deadline - time.monotonic())))
            time.sleep(0.005)
        return code

    def _stopped(self) -> EngineStopped:
        error = self._ended()
        self._kill()
        return error

    def _ended(self) -> EngineStopped:
        """How the process ended, as the error to raise (it has ended: nothing is closed here)."""
        code = self._reaped()
        # not when this side killed it (closing, a start that took too long)
        killed = None if self._killed_here else killed_by_system(code, loading=self._info is None)
        if code is not None and -code in _CRASHES:
            # a fault inside llama.cpp (the first GPU run: every load with layers on the GPU)
            on_gpu = self._on_gpu() and -code in _GPU_FAULTS
            said: list[Phrase] = [("engine.stopped_crash", {"signal": _signal_name(-code)})]
            if on_gpu:
                said.append(("engine.crash_gpu_hint", {}))
            return EngineCrashed(said=said, on_gpu=on_gpu, how=("engine.ended_crash", {"signal": _signal_name(-code)}))
        if killed is not None:
            return EngineStopped(said=[killed], how=("engine.ended_killed", {}))
        return EngineStopped(said=[("engine.stopped_unexpectedly", {})], how=("engine.ended_code", {"code": str(code)}))

    def _on_gpu(self) -> bool:
        """Whether the engine had (or was asked for) layers on a GPU: ``auto`` (the default) puts
        them there where NVML sees one."""
        if self._info is not None:
            return self._info.gpu_layers > 0
        gl = self.profile.gpu_layers
        if gl == "auto":
            from workstation.core import hardware

            return bool(hardware.gpus())
        return gl == "all" or isinstance(gl, int) and gl > 0

    def watch(self, on_end: Callable[[EngineStopped], None]) -> None:
        """``on_end(error)``, from a thread of its own, as soon as the process ends other than
        by ``close`` (killed while idle, by the system short of memory or by a person): the app
        found out only when the next message was sent, and that message stayed unanswered."""
        from multiprocessing.connection import wait

        sentinel = self._proc.sentinel

        def watching() -> None:
            wait([sentinel])
            if not self._closing:
                on_end(self._ended())

        threading.Thread(target=watching, name="engine-watch", daemon=True).start()

    def _kill(self) -> None:
        self._closing = True
        if self._proc.is_alive():
            self._killed_here = True
            self._proc.kill()
        self._proc.join(timeout=5)
        self._conn.close()

    @property
    def alive(self) -> bool:
        return self._proc.is_alive()

    @property
    def pid(self) -> int | None:
        return self._proc.pid

    def info(self) -> EngineInfo:
        assert self._info is not None
        return self._info

    def _request(self, *msg: Any) -> Any:
        with self._lock:
            self._post(msg)
            reply = self._recv()
        if reply[0] == "error":
            raise _failed(reply)
        return reply[1]

    def reset(self) -> None:
        self._request("reset")

    def chat_prompt(self, messages: list[Message]) -> list[int]:
        return list(self._request("tokenize_chat", messages))

    def count_prompt(self, messages: list[Message]) -> int:
        return len(self.chat_prompt(messages))

    def run_many(
        self,
        conversations: Sequence[list[Message]],
        sampling: Sampling | None = None,
        on_finished: Callable[[int, TurnFinished], None] | None = None,
        *,
        tag: str | None = None,
        on_step: Callable[[int, StepEvent], None] | None = None,
    ) -> list[TurnFinished]:
        results: dict[int, TurnFinished] = {}
        failure: BaseException | None = None
        with self._lock:  # the child clears the cancel flag when its turns start
            self._post(("many", list(conversations), dataclasses.asdict(sampling) if sampling else None, tag,
                        on_step is not None))
            while True:  # read to the end even if a callback fails: the pipe stays in step
                reply = self._recv()
                call: tuple[Callable[..., None] | None, Any] | None = None
                if reply[0] == "step":
                    call = (on_step, PromptRead(*reply[2:]) if len(reply) > 3 else TokenDelta("", tokens=reply[2]))
                elif reply[0] == "item":
                    final = TurnFinished(reply[2], TurnMetrics.from_dict(reply[3]), reasoning=reply[4])
                    results[reply[1]] = final
                    call = (on_finished, final)
                if call is not None:
                    if call[0] is not None and failure is None:
                        try:
                            call[0](reply[1], call[1])
                        except Exception as err:  # noqa: BLE001 - raised once the pipe is drained
                            failure = err
                            self.cancel()
                    continue
                if reply[0] == "result":
                    if failure is not None:
                        raise failure
                    return [results[i] for i in sorted(results)]
                elif reply[0] == "error":
                    raise _failed(reply)

    def cancel(self) -> None:
        self._cancel.set()

    def _stream(self, *msg: Any) -> Iterator[TurnEvent]:
        with self._lock:
            self._cancel.clear()
            self._post(msg)
            while True:
                reply = self._recv()
                kind = reply[0]
                if kind == "delta":
                    yield TokenDelta(reply[1], reply[2], reasoning=reply[3])
                elif kind == "read":
                    yield PromptRead(*reply[1:])
                elif kind == "done":
                    yield TurnFinished(reply[1], TurnMetrics.from_dict(reply[2]), reasoning=reply[3])
                    return
                elif kind == "error":
                    raise _failed(reply)

    def stream_chat(
        self, messages: list[Message], sampling: Sampling | None = None, *,
        constraints: Constraints | None = None, tag: str | None = None, reading: bool = False,
    ) -> Iterator[TurnEvent]:
        return self._stream(
            "chat",
            messages,
            dataclasses.asdict(sampling) if sampling else None,
            self.stream_interval_s,
            dataclasses.asdict(constraints) if constraints else None,
            tag,
            reading,
        )

    def forget(self, tag: str) -> int:
        """A saved conversation was deleted: its cells in the child and its states on disk."""
        return int(self._request("forget", tag))

    def claim_cells(self, tag: str, messages: list[Message]) -> int:
        return int(self._request("claim", tag, messages))

    def stream_tokens(self, prompt: list[int], sampling: Sampling | None = None) -> Iterator[TurnEvent]:
        return self._stream(
            "tokens", prompt, dataclasses.asdict(sampling) if sampling else None, self.stream_interval_s
        )

    def run_chat(
        self, messages: list[Message], sampling: Sampling | None = None, *, constraints: Constraints | None = None
    ) -> TurnFinished:
        return finished_turn(self.stream_chat(messages, sampling, constraints=constraints))

    def close(self) -> None:
        self._closing = True  # (its end is not news to a watch)
        if self._proc.is_alive():
            try:
                self._conn.send(("close",))
            except (OSError, BrokenPipeError):
                pass
            self._proc.join(timeout=10)
        self._kill()

    def __enter__(self) -> EngineProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
