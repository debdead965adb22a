"""workstation: a terminal chat workstation for local LLMs."""

# llama.cpp's libraries load first, before any other native library of the process. On an H200
# with a CUDA build (the GPU check of 2026-12-04), a model load crashed inside the tokenizer's
# std::regex (a std::locale facet of the wrong kind) in every process that had imported the
# engine's modules before llama.cpp, and in none that loaded llama.cpp first; with this import,
# every load probe and the fit, bench and speculation steps passed there. That build carries copies of the C++
# runtime's locale inside libggml-base and libggml-cuda beside the shared libstdc++, so what a
# facet lookup finds can depend on what loaded first (Python's decimal alone did not do it; the
# exact trigger is not known). Importing the bindings here puts them first in every process: the
# command line, the app and the engine's own process. A broken install fails again where the
# commands import them, and the command line says so in one sentence (engine.library_broken).
import os

# A failed check inside llama.cpp (GGML_ASSERT) ends the process; before it does, ggml attaches
# gdb where there is one and prints its whole backtrace (30-odd frames of C into the terminal,
# over the app's screen from its engine process; where attaching hangs, the command waits on it,
# as the GPU check's dry run did). WORKSTATION_LLAMA_LOG, the developers' switch for llama.cpp's
# own log, brings it back. (ggml reads the variable when it fails, so setting it here suffices.)
if not os.environ.get("WORKSTATION_LLAMA_LOG"):
    os.environ.setdefault("GGML_NO_BACKTRACE", "1")

import sys  # noqa: E402

# under `ulimit -v`, room reserved and never used (malloc's arenas, thread stacks, OpenBLAS's
# threads) is not to fill the limit: set before numpy and llama.cpp load (core/address_space.py)
from workstation.core.address_space import fit_to_address_space_limit  # noqa: E402

fit_to_address_space_limit()

# The process that reads a document (``documents.read_document(isolate=True)``: every attached
# file, summary and batch document) never loads a model: without llama.cpp's bindings and numpy
# it starts in a third of the CPU (0.1 s, not 0.3) and maps less. multiprocessing names it
# before it imports this package (its name comes first in what a spawned child is given).
READER_PROCESS = "workstation-reader"


def _a_document_reader() -> bool:
    process = sys.modules.get("multiprocessing.process")
    return process is not None and process.current_process().name == READER_PROCESS


try:
    # `serve` stopped (SIGTERM) in its first second says so and exits 0: from here on (launch.py)
    from workstation.launch import take_sigterm_if_serving

    take_sigterm_if_serving()

    try:
        if not _a_document_reader():
            import llama_cpp  # noqa: F401
    except Exception as err:  # noqa: BLE001 - see above: reported where the engine imports it
        if isinstance(err.__cause__ or err.__context__, KeyboardInterrupt):
            raise KeyboardInterrupt from None  # (Ctrl-C in a class body arrives wrapped in a RuntimeError)
except KeyboardInterrupt as pressed:
    # `python -m workstation` imports this package before any code of its own (__main__.py),
    # so a Ctrl-C here, in its first ~0.3 s, printed a traceback: the installed command's one
    # sentence instead (launch.py; its launcher catches this KeyboardInterrupt itself)
    if sys.argv[:1] == ["-m"]:  # (Python's start with -m, while it imports the package)
        from workstation.launch import stop_if_interrupted

        stop_if_interrupted(pressed)
    raise

__version__ = "0.1.0"
