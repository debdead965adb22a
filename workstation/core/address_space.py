"""A process under a memory limit on its address space (``ulimit -v``, RLIMIT_AS) spends it on
what it uses, not on room reserved and never touched.

Under ``ulimit -v`` every mapping counts, used or not, and three reservations filled a small
limit before any model did (the app's process measured 812 MB of address space for 100 MB in
use): glibc's malloc gives each thread that allocates an arena of its own, 64 MB reserved
(nine of them: 576 MB); every thread has a stack of the size ``ulimit -s`` says (8 MB); and
OpenBLAS (numpy's) starts a thread per core at numpy's import, with buffers, and takes a
32 MB buffer in every thread that first calls it. Under ``ulimit -v 600000`` numpy's OpenBLAS
then ended the whole app from a worker thread ("OpenBLAS error: Memory allocation still failed
after 10 retries, giving up.", printed over the screen, exit 1); under 450000 a new thread
could not start ("RuntimeError: can't start new thread").

``fit_to_address_space_limit`` (called by the package's ``__init__``, in every process of the
app: the command, the TUI, the engine's process) keeps these small where such a limit is set:
one malloc arena, 4 MB stacks for Python's threads, and OpenBLAS on one thread (it
reads its variable at numpy's import, which comes after). Without a limit nothing changes.
No import here but the standard library: it runs before numpy and llama.cpp load.
"""

from __future__ import annotations

import errno
import os
import resource
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from workstation.core.phrases import Phrase

_M_ARENA_MAX = -8  # glibc's mallopt parameter (malloc.h)
THREAD_STACK_BYTES = 4 * 2**20  # Python's threads' stacks under a limit (8 MB by default)
# numpy's OpenBLAS on one thread: the app's numpy work is small, and llama.cpp's threads own the cores
_BLAS_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS",)


def address_space_limited() -> bool:
    """Whether this process runs under ``ulimit -v`` (RLIMIT_AS): every mapping counts against
    it (a model file mapped takes its whole size of it, reserved memory too)."""
    return resource.getrlimit(resource.RLIMIT_AS)[0] != resource.RLIM_INFINITY


def _one_malloc_arena() -> None:
    """glibc's malloc: one arena for every thread (``MALLOC_ARENA_MAX=1``), not one of 64 MB
    reserved per thread. Elsewhere (musl, macOS) nothing to do. (ctypes imported here, under a
    limit only: the package's ``__init__`` loads llama.cpp's libraries before any other native one.)"""
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("c")
    if not name:
        return
    try:
        libc = ctypes.CDLL(name)
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt(_M_ARENA_MAX, 1)


def fit_to_address_space_limit() -> bool:
    """Under ``ulimit -v``: one malloc arena, small thread stacks and one BLAS thread (see the
    module's words); True where there is such a limit. A variable the user set is kept."""
    if not address_space_limited():
        return False
    for name in _BLAS_THREAD_VARIABLES:
        os.environ.setdefault(name, "1")
    _one_malloc_arena()
    try:
        threading.stack_size(THREAD_STACK_BYTES)
    except (ValueError, RuntimeError):  # (a platform that does not let it be set)
        pass
    return True


# A model's process under ``ulimit -v`` takes more address space than llama.cpp's buffers (the
# plan's weights, K/V cache and compute, which match llama.cpp's own figures within 1%): its
# vocabulary and the bindings' arrays, OpenBLAS's 32 MB buffer, its threads' stacks. Measured
# for SmolLM2 at a 4,096-token context: 62 MB more once loaded, 74 MB at the load's peak. The plan
# counts it under such a limit, or it said "fits" where llama.cpp then could not allocate its
# compute buffers ("failed to allocate compute pp buffers", under ulimit -v 450000).
LOAD_ADDRESS_SPACE_BYTES = 80 * 2**20

# The app's own process (the TUI; the model runs in a process of its own, with a limit of its
# own) under ``ulimit -v``, with the above: measured 240 MB at its peak (a reply streaming, F3,
# F4, F5 and F6 opened), and 32 MB more where a thread first calls numpy's OpenBLAS, which ends
# the whole process, with its own words over the screen, where it cannot have them.
APP_ADDRESS_SPACE_BYTES = 288 * 2**20


def app_room_problem() -> Phrase | None:
    """Why the app cannot run under this process's ``ulimit -v`` (None where it can, or there
    is none): it ended mid-start, with OpenBLAS's words over its screen or "can't start new
    thread"."""
    soft = resource.getrlimit(resource.RLIMIT_AS)[0]
    if soft == resource.RLIM_INFINITY or soft >= APP_ADDRESS_SPACE_BYTES:
        return None
    from workstation.core.catalog import human_bytes

    return ("app.does_not_fit", {"need": human_bytes(APP_ADDRESS_SPACE_BYTES), "have": human_bytes(soft)})


def ran_out_of_memory(err: BaseException) -> bool:
    """Whether ``err`` says this process's memory ran out: Python's MemoryError, a thread that
    could not start (its stack could not be had: "can't start new thread"), the system's ENOMEM."""
    if isinstance(err, MemoryError):
        return True
    if isinstance(err, RuntimeError) and "can't start new thread" in str(err):
        return True
    return isinstance(err, OSError) and err.errno == errno.ENOMEM


def ran_out_phrase() -> Phrase:
    """The sentence for a process that ran out of memory: under ``ulimit -v``, its size and
    what the app needs; otherwise this PC's memory."""
    soft = resource.getrlimit(resource.RLIMIT_AS)[0]
    if soft == resource.RLIM_INFINITY:
        return ("app.ran_out", {})
    from workstation.core.catalog import human_bytes

    return ("app.ran_out_limit", {"need": human_bytes(APP_ADDRESS_SPACE_BYTES), "have": human_bytes(soft)})
