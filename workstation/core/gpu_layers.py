"""A model's layers and the GPUs they go to: ``n_gpu_layers = N`` puts the last N repeating
layers on the GPU, and N = n_layer + 1 the output layer as well (the token embeddings stay on
the CPU); several GPUs share the layers in proportion to their free memory, as llama.cpp's
default split does, and each keeps a reserve for the CUDA context and the driver."""

from __future__ import annotations

import bisect

from workstation.core.hardware import MIB, GpuInfo


def offloadable_layers(n_layer: int) -> int:
    """How many layers llama.cpp can put on a GPU (``n_gpu_layers`` at most): the repeating
    layers and the output layer, as its own load log counts them ("offloaded 31/31 layers").
    0 for a model that is not loaded here (``n_layer`` 0: a remote server)."""
    return n_layer + 1 if n_layer > 0 else 0


GPU_RESERVE_BYTES = 512 * MIB  # CUDA context, cuBLAS workspace, the driver
GPU_RESERVE_FRACTION = 0.03  # and a little more on big cards (fragmentation, display)


def gpu_usable(g: GpuInfo) -> int:
    """The VRAM a GPU has free for a model: what is free less the reserve (the CUDA context,
    the driver, and a little more on big cards)."""
    reserve = GPU_RESERVE_BYTES + int(GPU_RESERVE_FRACTION * g.vram_total)
    return max(0, g.vram_free - reserve)


def layers_per_gpu(n: int, gpus: list[GpuInfo]) -> list[int]:
    """How many of ``n`` offloaded layers each GPU gets (llama.cpp: in proportion to free VRAM)."""
    if not gpus or n <= 0:
        return [0] * len(gpus)
    if len(gpus) == 1:  # (``size`` asks thousands of times: each layer looked up one by one was a sixth of it)
        return [n]
    free = [max(g.vram_free, 1) for g in gpus]
    total = sum(free)
    cum, acc = [], 0.0
    for f in free:
        acc += f / total
        cum.append(acc)
    counts = [0] * len(gpus)
    for k in range(n):
        j = min(bisect.bisect_right(cum, k / n), len(gpus) - 1)  # the first GPU whose share reaches past layer k
        counts[j] += 1
    return counts
