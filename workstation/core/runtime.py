"""One model and one llama.cpp context, driven through llama.cpp's batch API.

This is the thin layer every decode loop (chat, speculation, serve, bench, summarize) stands
on. It loads with llama-cpp-python's model and context wrappers so that we choose every
context parameter ourselves (flash attention, K/V types, several sequences), and it exposes
the low-level calls: batch decode with a logits flag per position, KV-cache sequence
operations, and an abort callback for long prefills.
"""

from __future__ import annotations

import collections
import ctypes
import os
import re
import signal
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import llama_cpp
import numpy as np
from llama_cpp import _internals as internals

from workstation.core.errors import EngineError, ModelFileError
from workstation.core.model_file import FileStamp
from workstation.core.model_info import check_gguf

# --- llama.cpp's log: kept in a ring buffer (errors and sizes are read from it), printed only
# when WORKSTATION_LLAMA_LOG is set.
LLAMA_LOG: collections.deque[str] = collections.deque(maxlen=1000)
_log_lock = threading.Lock()
_echo_log = bool(os.environ.get("WORKSTATION_LLAMA_LOG"))
_GGML_LOG_DEBUG, _GGML_LOG_CONT = 1, 5  # ggml_log_level: NONE, DEBUG, INFO, WARN, ERROR, CONT
_last_kept = [False]
_log_count = [0]  # lines ever appended (the deque drops old ones)


@llama_cpp.llama_log_callback
def _log_callback(level: int, text: bytes, user_data: ctypes.c_void_p) -> None:
    # debug lines (hundreds per context) are dropped; a continuation follows its first part
    keep = _last_kept[0] if level == _GGML_LOG_CONT else level != _GGML_LOG_DEBUG
    _last_kept[0] = keep
    if not keep:
        return
    line = text.decode("utf-8", errors="replace")
    with _log_lock:
        LLAMA_LOG.append(line)
        _log_count[0] += 1
    if _echo_log:
        os.write(2, text)


llama_cpp.llama_log_set(_log_callback, ctypes.c_void_p(0))


@contextmanager
def ctrl_c_after_the_call() -> Iterator[list[int]]:
    """Ctrl-C during a long llama.cpp call that logs (loading a model) is acted on once the
    call returns. Python raised it inside the log callback, where ctypes can only print it
    ("Exception ignored on calling ctypes callback function", a traceback) and drop it: the
    command then went on as if no key had been pressed. Yields the list a press is put in, so
    that the call can be told to stop early (a load's progress callback returns False). Main
    thread only (signals are delivered there); elsewhere a plain call."""
    pressed: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield pressed
        return
    ignored = signal.getsignal(signal.SIGINT) is signal.SIG_IGN  # (started with `&` by a script)

    def on_press(signum: int, _frame: object) -> None:
        # an ignored Ctrl-C stays ignored; a stop asked as Ctrl-C (serve's SIGTERM,
        # ``terminate_as_ctrl_c``, comes with its own number) is not one
        if signum != signal.SIGINT or not ignored:
            pressed.append(signum)

    try:
        previous = signal.signal(signal.SIGINT, on_press)
    except ValueError:  # not in the main interpreter
        yield pressed
        return
    try:
        yield pressed
    except BaseException:
        signal.signal(signal.SIGINT, previous)
        if pressed:  # the call stopped for the key (a load aborted): the key, not its failure
            _press(previous, pressed)
            raise KeyboardInterrupt from None
        raise
    signal.signal(signal.SIGINT, previous)
    if pressed:
        _press(previous, pressed)


def _press(handler: Any, pressed: list[int]) -> None:
    """Ctrl-C, delivered late to the handler that was in place (the default raises). A stop
    asked as Ctrl-C (SIGTERM in ``pressed``) raises where Ctrl-C is ignored: handed to the
    ignored Ctrl-C it was lost, and a server stopped while it made its context went on serving."""
    if callable(handler):
        handler(signal.SIGINT, None)
    elif handler == signal.SIG_DFL or any(signum != signal.SIGINT for signum in pressed):
        raise KeyboardInterrupt


def log_mark() -> int:
    """A mark in llama.cpp's log: ``log_since(mark)`` returns the lines logged after it."""
    with _log_lock:
        return _log_count[0]


def log_since(mark: int) -> list[str]:
    """llama.cpp's log lines after ``mark`` (those the ring buffer still holds)."""
    with _log_lock:
        n = min(_log_count[0] - mark, len(LLAMA_LOG))
        return list(LLAMA_LOG)[len(LLAMA_LOG) - n :] if n > 0 else []


def last_log_error(since: int | None = None) -> str | None:
    """The most recent llama.cpp log line that reads like an error, without its prefix; with
    ``since`` (a ``log_mark``), among the lines logged after it only (another model's load
    error, earlier in the same process, is not this one's)."""
    if since is None:
        with _log_lock:
            lines = list(LLAMA_LOG)
    else:
        lines = log_since(since)
    for line in reversed(lines):  # the loader's own reason, not its "failed to load model" after it
        if "error loading model: " in line:
            return " ".join(line.split("error loading model: ", 1)[1].split())
    for line in reversed(lines):
        low = line.lower()
        if "error" in low or "failed" in low or "invalid" in low:
            return line.strip().split(": ", 1)[-1]
    return None


def _damaged(why: str | None) -> str:
    """What to do where the file's settings and its weights do not fit together."""
    if why and any(w in why for w in ("wrong shape", "tensor", "hparams", "key not found", "unknown model")):
        return (" The file's settings and its weights do not fit together: it is damaged, or made for another "
                "program; download it again, or use another model.")
    return ""


_KV_SIZE_RE = re.compile(r"llama_kv_cache: size =.*K \(\w+\):\s*([\d.]+) MiB, V \(\w+\):\s*([\d.]+) MiB")
# "load_tensors:   CPU_Mapped model buffer size =    98.45 MiB", "... CUDA0 compute buffer size = ..."
_BUFFER_RE = re.compile(r"(\S+)\s+(model|KV|compute|output) buffer size =\s*([\d.]+) MiB")


@dataclass
class RuntimeSettings:
    n_ctx: int = 4096
    n_gpu_layers: int = 0
    n_threads: int = 2
    flash_attn: bool = True
    type_k: int = 1
    type_v: int = 1
    n_seq_max: int = 1
    n_batch: int = 512
    use_mmap: bool = True


class Batch:
    """A reusable llama_batch filled from Python: token, position, sequences, logits flag."""

    def __init__(self, capacity: int, n_seq_max: int = 1) -> None:
        self.capacity = capacity
        self._batch = llama_cpp.llama_batch_init(capacity, 0, n_seq_max)
        self.n_tokens = 0

    def clear(self) -> None:
        self.n_tokens = 0

    def add(self, token: int, pos: int, seq_id: int = 0, logits: bool = False) -> int:
        """Append one token; returns its index in the batch (for ``logits_ith``)."""
        i = self.n_tokens
        if i >= self.capacity:
            raise EngineError("internal error: batch overflow")
        b = self._batch
        b.token[i] = token
        b.pos[i] = pos
        b.n_seq_id[i] = 1
        b.seq_id[i][0] = seq_id
        b.logits[i] = logits
        self.n_tokens = i + 1
        return i

    @property
    def raw(self) -> llama_cpp.llama_batch:
        self._batch.n_tokens = self.n_tokens
        return self._batch

    def close(self) -> None:
        if self._batch is not None:
            llama_cpp.llama_batch_free(self._batch)
            self._batch = None  # type: ignore[assignment]


class LoadedModel:
    """A GGUF model and a context over it. Not thread-safe: one caller at a time."""

    def __init__(
        self,
        path: Path,
        settings: RuntimeSettings,
        progress: Callable[[float], None] | None = None,
        *,
        weights_of: LoadedModel | None = None,
    ) -> None:
        """Load ``path`` and make a context over it; with ``weights_of`` (the same file, loaded
        with the same GPU layers and mmap), a context of these settings over that model's weights,
        not loaded again (size --measure's memory checks at 9 contexts and K/V types loaded each
        model 9 more times). ``weights_of`` owns the weights: close it last."""
        if weights_of is not None:
            self._share_weights(path, settings, weights_of)
        else:
            self._load_weights(path, settings, progress)
        self._make_context(settings)

    def _share_weights(self, path: Path, settings: RuntimeSettings, owner: LoadedModel) -> None:
        if (owner.path, owner.settings.n_gpu_layers, owner.settings.use_mmap) != (
                path, settings.n_gpu_layers, settings.use_mmap) or owner.closed:
            raise EngineError("internal error: a context over another load's weights needs the same file, "
                              "GPU layers and mmap, still loaded.")
        self.path, self.file, self.settings = path, owner.file, settings
        self.model, self.model_log, self._owns_weights = owner.model, owner.model_log, False

    def _load_weights(self, path: Path, settings: RuntimeSettings, progress: Callable[[float], None] | None) -> None:
        check_gguf(path)
        self.path = path
        self.file = FileStamp.of(path)  # the file mapped: each turn checks it is still this one
        self.settings = settings
        with _log_lock:
            load_mark = _log_count[0]
        mparams = llama_cpp.llama_model_default_params()
        mparams.n_gpu_layers = settings.n_gpu_layers
        mparams.use_mmap = settings.use_mmap
        stop: list[list[int]] = [[]]  # Ctrl-C pressed while loading: llama.cpp stops at its next step
        # said at each whole percent only: llama.cpp calls at every tensor (~270 for the 135M
        # model), and each went through the engine's pipe to the app, which redrew its status
        # bar every time: a fifth of the app's CPU in its tests went on load bars
        said_at = [-1]

        def _progress(value: float, _data: ctypes.c_void_p) -> bool:
            percent = int(value * 100)
            if progress is not None and (percent > said_at[0] or value >= 1.0):
                said_at[0] = percent
                progress(float(value))
            return not stop[0]

        self._progress_cb = llama_cpp.llama_progress_callback(_progress)
        mparams.progress_callback = self._progress_cb
        try:
            with ctrl_c_after_the_call() as pressed:
                stop[0] = pressed
                self.model = internals.LlamaModel(path_model=str(path), params=mparams, verbose=True)
        except ValueError:
            why = last_log_error(load_mark)
            raise ModelFileError(
                f"llama.cpp could not load {path.name}" + (f": {why}." if why else ".")
                + (_short_of_memory(why) or _damaged(why))
            ) from None
        self.model_log = log_since(load_mark)  # (its buffers: every context over it reports them)
        self._owns_weights = True

    def _make_context(self, settings: RuntimeSettings) -> None:
        self.vocab = self.model.vocab
        self.n_vocab = llama_cpp.llama_vocab_n_tokens(self.vocab)
        cparams = llama_cpp.llama_context_default_params()
        cparams.n_ctx = settings.n_ctx
        cparams.n_batch = min(settings.n_batch, settings.n_ctx)
        cparams.n_ubatch = min(settings.n_batch, settings.n_ctx)
        cparams.n_seq_max = settings.n_seq_max
        # one KV stream per sequence (not one unified pool): a sequence's attention then reads
        # only its own cells. In a unified pool every token attends over the used range of ALL
        # sequences (masked), so 4 slots made each token's attention ~4x dearer and a 4-slot
        # summary ran at 0.97x of 1 slot; llama-batched-bench's default is split streams too.
        cparams.kv_unified = False
        cparams.n_threads = settings.n_threads
        cparams.n_threads_batch = settings.n_threads
        cparams.flash_attn_type = (
            llama_cpp.LLAMA_FLASH_ATTN_TYPE_ENABLED
            if settings.flash_attn
            else llama_cpp.LLAMA_FLASH_ATTN_TYPE_DISABLED
        )
        cparams.type_k = settings.type_k
        cparams.type_v = settings.type_v
        cparams.no_perf = False  # llama.cpp's own counters: the reference our rates are tested against
        with _log_lock:
            log_mark = _log_count[0]
        ctx = None
        try:
            with ctrl_c_after_the_call():
                ctx = llama_cpp.llama_init_from_model(self.model.model, cparams)
        except BaseException:
            if ctx is not None:
                llama_cpp.llama_free(ctx)
            self._close_weights()
            raise
        self.context_log = log_since(log_mark)
        self.load_log = self.model_log + self.context_log  # model and context
        if ctx is None:
            why = last_log_error(log_mark)
            self._close_weights()
            raise EngineError(
                "llama.cpp could not create a context with these settings"
                + (f": {why}." if why else ".") + _short_of_memory(why)
            )
        self.ctx = ctx
        self.mem = llama_cpp.llama_get_memory(ctx)
        self.n_ctx = llama_cpp.llama_n_ctx(ctx)
        self.n_batch = cparams.n_batch
        self.metadata = self.model.metadata()
        self._logits_row = ctypes.POINTER(ctypes.c_float * self.n_vocab)
        self._abort_flag: Callable[[], bool] | None = None
        self._abort_cb = llama_cpp.ggml_abort_callback(self._abort_check)
        self._no_abort = llama_cpp.ggml_abort_callback()
        self.closed = False
        _record_load(self)

    @property
    def kv_cache_bytes(self) -> tuple[int, int]:
        """(K bytes, V bytes) of the KV cache as llama.cpp reported allocating it (MiB, 2 dp)."""
        k = v = 0.0
        for line in self.context_log:
            match = _KV_SIZE_RE.search(line)
            if match:
                k += float(match.group(1))
                v += float(match.group(2))
        return round(k * 2**20), round(v * 2**20)

    @property
    def buffers(self) -> dict[str, dict[str, int]]:
        """What llama.cpp reported allocating, by kind (model, KV, compute, output) and buffer
        (CPU_Mapped, CPU, CUDA0, CUDA_Host, ...), in bytes (its log has MiB with 2 decimals)."""
        out: dict[str, dict[str, int]] = {}
        for line in self.load_log:
            match = _BUFFER_RE.search(line)
            if match:
                kind = out.setdefault(match.group(2), {})
                kind[match.group(1)] = kind.get(match.group(1), 0) + round(float(match.group(3)) * 2**20)
        return out

    # --- tokens ------------------------------------------------------------------------------
    def tokenize(self, text: str, add_special: bool = True, parse_special: bool = True) -> list[int]:
        if self.closed:  # llama.cpp would read the freed vocabulary: a segmentation fault
            raise EngineError("The model is closed; load the profile again.")
        return self.model.tokenize(text.encode("utf-8"), add_special, parse_special)

    def piece(self, token: int, special: bool = False) -> bytes:
        # a buffer per call: serve's HTTP threads detokenize while the decode thread streams
        # (a shared buffer, filled with the GIL released, handed one caller another's bytes)
        buf = ctypes.create_string_buffer(256)
        n = llama_cpp.llama_token_to_piece(self.vocab, token, buf, 256, 0, special)
        if n < 0:
            buf = ctypes.create_string_buffer(-n)
            n = llama_cpp.llama_token_to_piece(self.vocab, token, buf, -n, 0, special)
        return buf.raw[:n]

    def detokenize(self, tokens: Sequence[int], special: bool = False) -> str:
        return b"".join(self.piece(t, special) for t in tokens).decode("utf-8", errors="replace")

    def is_eog(self, token: int) -> bool:
        return bool(llama_cpp.llama_vocab_is_eog(self.vocab, token))

    def token_text(self, token: int) -> str:
        return self.piece(token, special=True).decode("utf-8", errors="replace")

    @property
    def bos_token(self) -> int:
        return llama_cpp.llama_vocab_bos(self.vocab)

    @property
    def eos_token(self) -> int:
        return llama_cpp.llama_vocab_eos(self.vocab)

    @property
    def add_bos(self) -> bool:
        return bool(llama_cpp.llama_vocab_get_add_bos(self.vocab))

    @property
    def gpu_offload(self) -> bool:
        """This build of llama.cpp can put layers on a GPU (without one, gpu_layers is moot)."""
        return bool(llama_cpp.llama_supports_gpu_offload())

    @property
    def n_params(self) -> int:
        return int(llama_cpp.llama_model_n_params(self.model.model))

    @property
    def n_layer(self) -> int:
        return llama_cpp.llama_model_n_layer(self.model.model)

    # --- decoding ----------------------------------------------------------------------------
    def decode(self, batch: Batch) -> None:
        """Run one batch; raises EngineError on failure, TurnAborted-style rc 2 as EngineError."""
        if batch.n_tokens > self.n_batch:  # llama.cpp would abort the process (GGML_ASSERT), not return
            raise EngineError(
                f"internal error: a batch of {batch.n_tokens} tokens is more than the {self.n_batch} "
                "llama.cpp reads at once."
            )
        rc = llama_cpp.llama_decode(self.ctx, batch.raw)
        if rc == 2:
            raise DecodeAborted()
        if rc == 1:
            raise EngineError("The context is full: no room in the KV cache for these tokens.")
        if rc != 0:
            raise EngineError(f"llama.cpp failed to decode a batch (code {rc}).")

    def decode_stoppable(self, batch: Batch) -> None:
        """``decode``, which a Ctrl-C stops part-way: llama.cpp polls the key between the
        graph's nodes (the abort callback: a Python call per node, nothing beside a long batch,
        too much for one token). Ctrl-C in `eval --perplexity/--kld` waited for the batch of
        a whole window: seconds here, minutes for a 7B model on a CPU. Raises KeyboardInterrupt
        (from DecodeAborted when it stopped the batch)."""
        with ctrl_c_after_the_call() as pressed:
            self.set_abort(lambda: bool(pressed))
            try:
                self.decode(batch)
            finally:
                self.set_abort(None)

    def logits(self, i: int) -> np.ndarray:
        """A numpy view of the logits for batch output ``i`` (valid until the next decode)."""
        ptr = llama_cpp.llama_get_logits_ith(self.ctx, i)
        # a cast to a fixed-size row costs ~2 us; np.ctypeslib.as_array builds a type each call
        return np.frombuffer(ctypes.cast(ptr, self._logits_row).contents, dtype=np.float32)

    def set_threads(self, n_threads: int, n_threads_batch: int) -> None:
        """Threads for one-token steps and for prompt batches, on the live context."""
        llama_cpp.llama_set_n_threads(self.ctx, n_threads, n_threads_batch)

    @property
    def threads(self) -> tuple[int, int]:
        return int(llama_cpp.llama_n_threads(self.ctx)), int(llama_cpp.llama_n_threads_batch(self.ctx))

    # --- KV cache ----------------------------------------------------------------------------
    def seq_rm(self, seq_id: int, p0: int, p1: int = -1) -> bool:
        return bool(llama_cpp.llama_memory_seq_rm(self.mem, seq_id, p0, p1))

    def seq_cp(self, src: int, dst: int, p0: int = -1, p1: int = -1) -> None:
        llama_cpp.llama_memory_seq_cp(self.mem, src, dst, p0, p1)

    def seq_add(self, seq_id: int, p0: int, p1: int, delta: int) -> None:
        """Move the cells at positions [p0, p1) by ``delta`` (their keys are rotated again)."""
        llama_cpp.llama_memory_seq_add(self.mem, seq_id, p0, p1, delta)

    def move_cells(self, seq_id: int, tokens: list[int], keep: int, runs: list[tuple[int, int, int]]) -> list[int]:
        """Move ``runs`` (``slots.moved_runs``: where in the cells, where in the prompt, how many)
        of the sequence's cells, which hold ``tokens``, back to where the prompt has them, and drop
        every other cell past ``keep``: the tokens the cells hold now (the prompt's first ones)."""
        kept = tokens[:keep]
        for head_c, head_p, n in runs:
            if head_c > head_p:
                self.seq_rm(seq_id, head_p, head_c)
                self.seq_add(seq_id, head_c, head_c + n, head_p - head_c)
            kept += tokens[head_c : head_c + n]
        self.seq_rm(seq_id, len(kept), -1)
        return kept

    @property
    def can_shift(self) -> bool:
        """Whether cells can be moved to other positions (not for M-RoPE or recurrent models)."""
        return bool(llama_cpp.llama_memory_can_shift(self.mem))

    def seq_pos_max(self, seq_id: int) -> int:
        return int(llama_cpp.llama_memory_seq_pos_max(self.mem, seq_id))

    def clear_memory(self) -> None:
        llama_cpp.llama_memory_clear(self.mem, True)

    # --- abort -------------------------------------------------------------------------------
    def _abort_check(self, _data: ctypes.c_void_p) -> bool:
        flag = self._abort_flag
        return bool(flag and flag())

    def set_abort(self, should_abort: Callable[[], bool] | None) -> None:
        """Let llama.cpp poll ``should_abort`` inside a decode (only worth it for long prefills)."""
        self._abort_flag = should_abort
        cb = self._abort_cb if should_abort is not None else self._no_abort
        llama_cpp.llama_set_abort_callback(self.ctx, cb, None)

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        llama_cpp.llama_free(self.ctx)
        self._close_weights()

    def _close_weights(self) -> None:
        if self._owns_weights:
            self.model.close()


def _record_load(model: LoadedModel) -> None:
    """Every load puts the planner's estimate beside what llama.cpp allocated in the history
    (``core/memory_check.py``); a failure to record never fails the load."""
    if os.environ.get("WORKSTATION_NO_LOAD_RECORD"):
        return
    try:
        from workstation.core.memory_check import record_load

        record_load(model)
    except Exception as err:  # noqa: BLE001 - the history is a by-product of loading
        with _log_lock:
            LLAMA_LOG.append(f"workstation: the load was not recorded in the history ({err})\n")
            _log_count[0] += 1


# what llama.cpp (and the C++ runtime under it) say when memory ran out: under a limit (ulimit
# -v, a container's), or with other programs holding it, "failed to allocate buffer for kv
# cache" or "std::bad_alloc" were all a person read, never that memory was the matter
_MEMORY_WORDS = ("alloc", "out of memory", "cannot allocate", "mmap failed")
_GPU_WORDS = ("cuda", "gpu", "vram", "metal", "vulkan", "rocm", "hip")
OUT_OF_MEMORY = (" There was not enough memory for it (this PC's, or the limit this program runs under): "
                 "close other programs, lower Context (or set Context memory K and V to q8_0) in F3 → E, or choose "
                 "a smaller model in F4.")
OUT_OF_VRAM = (" There was not enough GPU memory for it: set gpu_layers lower (or auto), or use a smaller "
               "context, q8_0 K/V or a smaller model.")


def _short_of_memory(why: str | None) -> str:
    """What to add to llama.cpp's words where they say memory ran out ("" where they do not)."""
    low = (why or "").lower()
    if not any(w in low for w in _MEMORY_WORDS):
        return ""
    return OUT_OF_VRAM if any(w in low for w in _GPU_WORDS) else OUT_OF_MEMORY


class DecodeAborted(Exception):
    """llama_decode returned because the abort callback asked it to."""
