"""Make a copy of a model at another quantization with llama.cpp's own quantizer.

Requantizing an already-quantized model (Q4_1 -> F16, say) loses nothing the source still has,
but cannot bring back what the first quantization lost, so it needs ``allow_requantize``.
A same-vocabulary copy is also how we make a target/draft pair from one model.
"""

from __future__ import annotations

import ctypes
import os
from pathlib import Path

import llama_cpp

from workstation.core.catalog import check_gguf
from workstation.core.errors import WorkstationError

FTYPES: dict[str, int] = {
    "f16": llama_cpp.LLAMA_FTYPE_MOSTLY_F16,
    "bf16": llama_cpp.LLAMA_FTYPE_MOSTLY_BF16,
    "q8_0": llama_cpp.LLAMA_FTYPE_MOSTLY_Q8_0,
    "q6_k": llama_cpp.LLAMA_FTYPE_MOSTLY_Q6_K,
    "q5_k_m": llama_cpp.LLAMA_FTYPE_MOSTLY_Q5_K_M,
    "q5_0": llama_cpp.LLAMA_FTYPE_MOSTLY_Q5_0,
    "q4_k_m": llama_cpp.LLAMA_FTYPE_MOSTLY_Q4_K_M,
    "q4_k_s": llama_cpp.LLAMA_FTYPE_MOSTLY_Q4_K_S,
    "q4_1": llama_cpp.LLAMA_FTYPE_MOSTLY_Q4_1,
    "q4_0": llama_cpp.LLAMA_FTYPE_MOSTLY_Q4_0,
    "iq4_nl": llama_cpp.LLAMA_FTYPE_MOSTLY_IQ4_NL,
    "q3_k_m": llama_cpp.LLAMA_FTYPE_MOSTLY_Q3_K_M,
    "q2_k": llama_cpp.LLAMA_FTYPE_MOSTLY_Q2_K,
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
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(f".{dest.name}.part")
    try:
        rc = llama_cpp.llama_model_quantize(
            str(src).encode(), str(tmp).encode(), ctypes.byref(params)
        )
        if rc != 0 or not tmp.exists():
            hint = "" if allow_requantize else " (a quantized source needs --allow-requantize)"
            raise WorkstationError(f"llama.cpp could not quantize {src.name} to {key}{hint}.")
        os.replace(tmp, dest)
    finally:
        tmp.unlink(missing_ok=True)
    return dest
