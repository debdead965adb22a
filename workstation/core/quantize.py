"""Make a copy of a model at another quantization with llama.cpp's own quantizer.

Requantizing an already-quantized model (Q4_1 -> F16, say) loses nothing the source still has,
but cannot bring back what the first quantization lost, so it needs ``allow_requantize``.
A same-vocabulary copy is also how we make a target/draft pair from one model.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import threading
from collections.abc import Callable
from pathlib import Path

import llama_cpp

from workstation.core.atomic import cannot_write
from workstation.core.catalog import QUANTIZE_TYPES, UNQUANTIZED, human_bytes
from workstation.core.errors import WorkstationError
from workstation.core.installed_models import held_part, own_part
from workstation.core.model_info import check_gguf, read_model_info
from workstation.core.model_shapes import QUANT_BPW

FTYPES: dict[str, int] = {  # the catalog's list, in its order: llama.cpp's ftype for each
    name: getattr(llama_cpp, f"LLAMA_FTYPE_MOSTLY_{name.upper()}") for name in QUANTIZE_TYPES
}


def quantize_model(
    src: Path,
    dest: Path,
    type_name: str,
    *,
    allow_requantize: bool = False,
    threads: int = 0,
) -> Path:
    """Write ``src`` quantized to ``type_name`` at ``dest`` (atomically); returns ``dest``."""
    key = type_name.lower()
    if key not in FTYPES:
        raise WorkstationError(
            f"Unknown quantization type '{type_name}'; allowed: {', '.join(FTYPES)}."
        )
    check_gguf(src)
    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = FTYPES[key]
    params.allow_requantize = allow_requantize
    params.nthread = threads
    tmp = own_part(dest)  # (its lock held while written: a part left by a kill is swept)
    with held_part(tmp, ("models.being_added", {"name": dest.name, "folder": str(dest.parent)})):
        try:
            _check_room(src, dest, tmp, key)
            rc = _waited_for(lambda: llama_cpp.llama_model_quantize(
                str(src).encode(), str(tmp).encode(), ctypes.byref(params)
            ))
            if rc != 0 or not tmp.exists():
                hint = "" if allow_requantize else " (a quantized source needs --allow-requantize)"
                raise WorkstationError(f"llama.cpp could not quantize {src.name} to {key}{hint}.")
            os.replace(tmp, dest)
        finally:
            tmp.unlink(missing_ok=True)
    return dest


def _check_room(src: Path, dest: Path, tmp: Path, key: str) -> None:
    """The copy's folder takes it (``tmp`` is made there) and its disk has room for about its
    size: a read-only models folder was said as "llama.cpp could not quantize X to q8_0."."""
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp.open("xb").close()  # (llama.cpp writes over it)
        free = shutil.disk_usage(dest.parent).free
    except OSError as err:
        raise WorkstationError(said=cannot_write(dest, err)) from None
    need = int(src.stat().st_size * _bits(key) / _bits(read_model_info(src).file_type))
    if free < need:
        raise WorkstationError(said=[("file.cannot_write", {"path": str(dest), "why": (
            "quantize.no_room", {"need": human_bytes(need), "free": human_bytes(free)})})])


def _bits(file_type: str) -> float:
    """About how many bits a weight takes in a file of ``file_type`` (Q8_0, F16, ...)."""
    name = file_type.upper()
    return QUANT_BPW.get(name, 32.0 if name == "F32" else 16.0 if name in UNQUANTIZED else 4.55)


def _waited_for(call: Callable[[], int]) -> int:
    """``call()`` (llama.cpp's quantizer, which has no way to be stopped) in a thread of its own,
    so that Ctrl-C is acted on at once. In the main thread the key waited for the whole
    quantization (minutes for a large model), was then raised inside llama.cpp's log callback,
    where ctypes printed a traceback and dropped it, and the copy was written as if no key had
    been pressed. The abandoned thread ends with the process; its file is removed by the caller."""
    done: list[int] = []
    worker = threading.Thread(target=lambda: done.append(call()), name="quantize", daemon=True)
    worker.start()
    while worker.is_alive():
        worker.join(0.1)
    return done[0] if done else -1
