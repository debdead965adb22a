"""A catalog model at any weight quantization, as the planner's ``ModelInfo``.

A model on disk has its real tensor table (``model_info.read_model_info``); ``size`` also plans
models that are not downloaded and quantizations nobody has made yet. For those the shape
comes from ``workstation/data/model_shapes.yaml`` (or from the file on disk, re-quantized on
paper), and the bytes from the parameter count of each tensor at the quantization's average
bits per weight. The file's own quantization keeps its exact tensor table.
"""

from __future__ import annotations

import dataclasses
from functools import lru_cache
from pathlib import Path
from typing import Any

from workstation.core.catalog import catalog_entries, catalog_entry, resolve_model_path
from workstation.core.errors import ProfileError
from workstation.core.model_info import ModelInfo, read_model_info

SHAPES_PATH = Path(__file__).resolve().parent.parent / "data" / "model_shapes.yaml"

# Average bits per weight of llama.cpp's quantization mixes over a whole model: the block
# sizes of model_info.GGML_TYPES (Q4_0 18 bytes / 32 weights = 4.5, Q8_0 8.5, Q4_K 4.5, Q6_K
# 6.5625) weighted by the tensor mix llama-quant.cpp chooses (Q4_K_M puts half of attn_v and
# ffn_down in Q6_K). An estimate within a few percent of real files; a file on disk is exact.
QUANT_BPW: dict[str, float] = {
    "Q4_0": 4.55, "Q4_1": 5.05, "Q4_K_M": 4.89, "Q5_K_M": 5.69, "Q6_K": 6.56, "Q8_0": 8.5,
    "F16": 16.0,
}


@lru_cache(maxsize=1)
def _shapes() -> dict[str, dict[str, Any]]:
    from workstation.core.settings_file import YamlError, load_yaml

    try:
        data = load_yaml(SHAPES_PATH.read_text(encoding="utf-8")) or {}
    except (OSError, YamlError) as err:
        raise ProfileError(f"The model shapes file {SHAPES_PATH} cannot be read ({err}).") from None
    return dict(data.get("shapes", {}))


def layer_params(info: ModelInfo) -> int:
    """Weights of one repeating layer: Q, K, V, O projections, the three FFN matrices, norms."""
    q = info.n_embd * info.n_head * info.head_dim
    kv = info.n_embd * info.n_head_kv * (info.head_dim + info.head_dim_v)
    o = info.n_head * info.head_dim_v * info.n_embd
    return q + kv + o + 3 * info.n_embd * info.n_ff + 2 * info.n_embd


def active_params(info: ModelInfo) -> int:
    """Weights multiplied per token: every layer and the output matrix (not the embedding lookup)."""
    return info.n_layer * layer_params(info) + info.n_vocab * info.n_embd


def at_quantization(info: ModelInfo, quant: str) -> ModelInfo:
    """``info`` with its weights re-counted at ``quant``; the same ``info`` at its own type."""
    if quant.upper() == info.file_type.upper() and info.layer_bytes:
        return info
    bpw = QUANT_BPW[quant.upper()]
    per_layer = int(layer_params(info) * bpw / 8)
    # llama-quant.cpp keeps the output matrix at Q6_K or better, and a tied embedding (which
    # is the output too) at Q8_0 in the small files seen here
    n_emb = info.n_vocab * info.n_embd
    emb = int(n_emb * (max(bpw, QUANT_BPW["Q8_0"]) if info.tied_embeddings else bpw) / 8)
    out = 0 if info.tied_embeddings else int(n_emb * max(bpw, QUANT_BPW["Q6_K"]) / 8)
    weights = per_layer * info.n_layer + emb + out
    return dataclasses.replace(
        info,
        path="",
        file_type=quant.upper(),
        file_size=weights,
        layer_bytes=[per_layer] * info.n_layer,
        input_bytes=emb,
        output_bytes=out,
        weights_bytes=weights,
        tensor_types={},
    )


def _from_shape(name: str, shape: dict[str, Any]) -> ModelInfo:
    n_layer = int(shape["n_layer"])
    every = int(shape.get("swa_every") or 0)
    swa = [bool(every) and (il + 1) % every != 0 for il in range(n_layer)]
    info = ModelInfo(
        path="", name=name, architecture=str(shape["architecture"]), parameter_count=0,
        file_type="", file_size=0, context_length=int(shape["context"]), n_layer=n_layer,
        n_head=int(shape["n_head"]), n_head_kv=int(shape["n_head_kv"]),
        head_dim=int(shape["head_dim"]), head_dim_v=int(shape["head_dim"]),
        n_embd=int(shape["n_embd"]), n_ff=int(shape["n_ff"]), n_vocab=int(shape["n_vocab"]),
        tokenizer_model="", tokenizer_fingerprint="",
        sliding_window=int(shape["sliding_window"]) if shape.get("sliding_window") else None,
        swa_layers=swa, has_chat_template=True, n_head_kv_per_layer=[int(shape["n_head_kv"])] * n_layer,
        tied_embeddings=bool(shape.get("tied", False)),
    )
    emb = info.n_vocab * info.n_embd
    info.parameter_count = n_layer * layer_params(info) + emb * (1 if info.tied_embeddings else 2)
    return info


def catalog_model(name: str) -> tuple[ModelInfo, bool] | None:
    """(the model's info, whether the file is on disk), or None for a model with no known shape."""
    entry = catalog_entry(name)
    path = resolve_model_path(name)
    if path.exists():
        info = read_model_info(path, check=False)
        return dataclasses.replace(info, name=name), True
    shape = _shapes().get(name)
    if shape is None or entry is None:
        return None
    info = _from_shape(name, shape)
    own = str(entry.get("file", "")).upper()
    info.file_type = next((q for q in QUANT_BPW if q in own.replace("-", "_")), "Q4_K_M")
    return at_quantization(dataclasses.replace(info, file_type=""), info.file_type), False


def thinks_first(ref: str) -> bool:
    """A reasoning model (``reasoning: true`` in the catalog): it thinks before it answers.
    ``ref``: a catalog name, or a path to (or the name of) the catalog's file."""
    entry = catalog_entry(ref) or next((e for e in catalog_entries() if e.get("file") == Path(ref).name), None)
    return bool(entry and entry.get("reasoning"))


def candidate_models(names: list[str] | None = None) -> list[str]:
    """Catalog names ``size`` considers: the ones asked for, else every chat model but the
    draft models (too small to answer an office on their own; they speed up their family's)."""
    if names:
        return list(names)
    return [str(e["name"]) for e in catalog_entries() if e.get("chat") and not e.get("draft")]
