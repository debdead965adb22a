"""What llama.cpp allocates for a model, by the formulas the installed llama.cpp uses
(src/llama-context.cpp, llama-kv-cache.cpp and llama-kv-cache-iswa.cpp), from the GGUF's own
tensor table: the K/V cache of each layer, the compute buffers, and the CPU's repacked copies
of the weights.

- KV cache: the context is padded to a multiple of 256 cells; each layer holds
  ``cells * head_dim * n_head_kv(layer)`` elements for K and again for V, in the K/V cache
  type's bytes (q8_0: 34 bytes per 32 values, q4_0: 18 per 32). Sliding-window layers
  (Gemma 2/3, ...) keep ``min(cells, pad(window + n_ubatch, 256))`` cells when ``swa_full`` is
  off; llama.cpp's default context parameters (which the runtime keeps) have ``swa_full`` on,
  and then those layers keep the full context too.
- Compute buffers: an estimate, dominated by the logits of one micro-batch
  (``n_ubatch * n_vocab * 4`` bytes) plus, without flash attention, the attention scores.
"""

from __future__ import annotations

from workstation.core.model_info import GGML_TYPES, ModelInfo
from workstation.core.profiles import KV_CACHE_TYPES, KVCache

KV_PAD = 256  # llama.cpp pads the context (and the SWA cache) to 256 cells


def _pad(n: int, to: int) -> int:
    return (n + to - 1) // to * to


def row_bytes(type_name: str, n: int) -> int:
    """ggml_row_size: bytes of ``n`` values of a K/V cache type (f16, q8_0, ...)."""
    tid = KV_CACHE_TYPES[type_name]
    _, block, size = GGML_TYPES[tid]
    return n // block * size


def kv_share(kv: KVCache) -> float:
    """The memory a K/V cache of these types takes, against the usual f16/f16 (q8_0/q8_0: 0.53)."""
    return (row_bytes(kv.k, 256) + row_bytes(kv.v, 256)) / (2 * row_bytes("f16", 256))


def kv_cells(info: ModelInfo, context: int, n_ubatch: int = 512, swa_full: bool = True) -> tuple[int, int]:
    """(cells of a full-attention layer, cells of a sliding-window layer) for one sequence."""
    n_ctx = _pad(context or info.context_length or 4096, KV_PAD)
    swa = n_ctx
    if info.sliding_window and not swa_full:
        swa = min(n_ctx, _pad(info.sliding_window + min(n_ubatch, n_ctx), KV_PAD))
    return n_ctx, swa


def kv_cache_per_layer(
    info: ModelInfo,
    context: int,
    type_k: str = "f16",
    type_v: str = "f16",
    *,
    n_ubatch: int = 512,
    swa_full: bool = True,
) -> list[int]:
    """KV-cache bytes of each layer, as llama.cpp allocates them."""
    full, swa = kv_cells(info, context, n_ubatch, swa_full)
    result = []
    heads = info.n_head_kv_per_layer or [info.n_head_kv] * info.n_layer
    swa_layers = info.swa_layers or [False] * info.n_layer
    sizes: dict[tuple[int, int], int] = {}  # (layers alike are sized once: ``size`` plans thousands of times)
    for il in range(info.n_layer):
        n_kv = heads[il] if il < len(heads) else info.n_head_kv
        cells = swa if il < len(swa_layers) and swa_layers[il] else full
        if (n_kv, cells) not in sizes:
            sizes[n_kv, cells] = (row_bytes(type_k, info.head_dim * n_kv * cells)
                                  + row_bytes(type_v, info.head_dim_v * n_kv * cells))
        result.append(sizes[n_kv, cells])
    return result


def compute_bytes(info: ModelInfo, context: int, *, n_ubatch: int = 512, flash_attn: bool = True) -> int:
    """An estimate of llama.cpp's compute buffer (the graph's scratch memory) for one device:
    the logits of one micro-batch (``n_ubatch * n_vocab`` floats) and one hidden and one FFN
    activation per token; without flash attention, the attention scores too.

    Measured on the CPU here it came within 3% of llama.cpp's own figure at 1024-8192 tokens
    and f16/q8_0/q4_0 K/V (SmolLM2: 98.3-102.7 MiB reported, 100.1 estimated; Gemma 3 270M:
    514.5 reported, 517.3 estimated).
    """
    ub = min(n_ubatch, _pad(context or info.context_length or 4096, KV_PAD))
    n_ctx = _pad(context or info.context_length or 4096, KV_PAD)
    est = 4 * ub * (info.n_vocab + info.n_embd + info.n_ff)
    if not flash_attn:
        est += 4 * ub * n_ctx * max(info.n_head, 1)
        return est
    # with flash attention the attention step's peak is its mask (f16, a cell per token of the
    # context and of the micro-batch; a second one for sliding-window layers) and some
    # activations: past a few hundred thousand tokens it outgrows the logits. Measured here:
    # SmolLM2 at 131k-262k tokens 148-283 MiB (1024 bytes a token, the estimate said 100);
    # Gemma 3 270M at 786k-1M tokens 1.55-2.02 GiB (2048 bytes a token, two masks).
    masks = 2 if info.sliding_window else 1
    width = max(info.n_embd, info.n_head * info.head_dim)
    return max(est, masks * 2 * ub * n_ctx + 16 * 4 * ub * width)


# Weight types llama.cpp's CPU backend repacks into an interleaved copy for faster matrix
# products (ggml-cpu's repack buffer, "CPU_REPACK model buffer size" in its log), by the SIMD
# feature that enables it. The mapped file stays mapped, so these bytes come on top.
REPACK_TYPES: dict[str, tuple[str, ...]] = {
    "avx2": ("Q4_0", "Q4_K", "IQ4_NL"),
    "asimd": ("Q4_0", "Q4_K", "IQ4_NL"),
}


def cpu_repack_bytes(info: ModelInfo, cpu_share: float, cpu_flags: list[str] | None = None) -> int:
    """Bytes of the repacked copies of the weights on the CPU (``cpu_share``: the part of the
    repeating layers there, 0..1). The token embedding is only looked up, never repacked."""
    if cpu_share <= 0 or not info.tensor_types:
        return 0
    if cpu_flags is None:
        from workstation.core.hardware import cpu_info

        cpu_flags = cpu_info().flags
    types = {t for flag, ts in REPACK_TYPES.items() if flag in cpu_flags for t in ts}
    total = sum(b for t, b in info.tensor_types.items() if t in types)
    n_emb = info.n_vocab * info.n_embd
    if n_emb and info.input_bytes and abs(info.input_bytes / n_emb - 18 / 32) < 0.01:
        total -= info.input_bytes  # a Q4_0/Q4_K embedding (4.5 bits a weight) stays mapped
    return max(0, int(total * cpu_share))
