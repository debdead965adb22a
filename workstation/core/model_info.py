"""A model file's header as the app reads it: ``ModelInfo`` (sizes, layers, vocabulary, sliding
window), and whether two models' vocabularies let one draft for the other.

``read_model_info(path)`` builds a ``ModelInfo`` from the header that the pre-flight
(``gguf_check.preflight``, bounded and safe on hostile files) returns: the app has one GGUF
reader and one ggml type table (``gguf_check.GGML_TYPES``; ``GGML_TYPES`` here is a view of
it with the names upper-cased, as ``ModelInfo.tensor_types`` and the planner spell them).
The ``gguf`` package's ``GGUFReader`` is not used: it builds a numpy view per vocabulary entry
and took 25 s on Gemma 3's 262k-token vocabulary here; the pre-flight reads that header in
about 0.1 s. The result is cached per version of the file, so the planner can ask for it on
every load, and ``check_gguf`` before llama.cpp opens the file costs a ``stat`` after that.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import math
import threading
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from workstation.core import gguf_check
from workstation.core.errors import ModelFileError
from workstation.core.gguf_check import GGUFHeader, ValueSpan
from workstation.core.phrases import Phrase

# Sliding-window attention as llama.cpp sets it up per architecture (src/models/<arch>.cpp:
# load_swa_pattern(ml, n_pattern, dense_first)); a GGUF key
# ``{arch}.attention.sliding_window_pattern`` overrides the default pattern.
# arch -> (default pattern, dense_first, default window or 0 = only when the key is present)
SWA_ARCHITECTURES: dict[str, tuple[int, bool, int]] = {
    "gemma2": (2, False, 4096),
    "gemma3": (6, False, 0),
    "gemma3n": (5, False, 0),
    "gemma-embedding": (6, False, 0),
    "cohere2": (4, False, 0),
    "cohere2moe": (4, True, 0),
    "llama4": (4, False, 0),
    "gpt-oss": (2, False, 0),
    "olmo2": (4, False, 0),
    "exaone4": (4, False, 0),
    "exaone-moe": (4, False, 0),
    "afmoe": (4, False, 0),
    "smallthinker": (4, True, 0),
    "mellum": (4, False, 0),
    "plamo3": (8, False, 0),
}

# ggml types, id -> (name as ModelInfo shows it: Q4_K, IQ2_XXS, BF16, block size, bytes per
# block): the pre-flight's table (checked against the installed ggml), names upper-cased.
GGML_TYPES: dict[int, tuple[str, int, int]] = {
    type_id: (name.upper(), block, size) for type_id, (name, block, size) in gguf_check.GGML_TYPES.items()
}


@dataclass
class ModelInfo:
    """What a GGUF file says about its model (no weights loaded)."""

    path: str
    name: str
    architecture: str
    parameter_count: int
    file_type: str  # Q4_K_M, Q8_0, F16, ...
    file_size: int
    context_length: int
    n_layer: int
    n_head: int
    n_head_kv: int  # the first layer's; see n_head_kv_per_layer
    head_dim: int  # key head dimension
    head_dim_v: int
    n_embd: int
    n_ff: int
    n_vocab: int
    tokenizer_model: str
    tokenizer_fingerprint: str
    sliding_window: int | None
    swa_layers: list[bool]
    has_chat_template: bool
    licence: str | None = None
    size_label: str | None = None
    n_head_kv_per_layer: list[int] = field(default_factory=list)
    layer_bytes: list[int] = field(default_factory=list)  # weights of blk.N, per layer
    input_bytes: int = 0  # token_embd (stays on the CPU in llama.cpp)
    output_bytes: int = 0  # output.weight, output_norm and the rest of the non-block tensors
    tied_embeddings: bool = False  # no output.weight: the output reuses token_embd
    weights_bytes: int = 0  # sum of all tensors (aligned), what llama.cpp maps
    tensor_types: dict[str, int] = field(default_factory=dict)  # ggml type -> bytes

    @property
    def n_swa_layers(self) -> int:
        return sum(self.swa_layers)

    def to_dict(self, with_layers: bool = False) -> dict[str, Any]:
        data = asdict(self)
        if not with_layers:
            data.pop("layer_bytes")
            data.pop("n_head_kv_per_layer")
            data.pop("swa_layers")
        data["n_swa_layers"] = self.n_swa_layers
        return data


def known_architectures() -> frozenset[str]:
    """The architectures the installed llama.cpp can run (asked of the library itself)."""
    return gguf_check.known_architectures()


def check_gguf(path: Path) -> None:
    """Refuse a file that is missing, damaged or hostile before llama.cpp sees it: the
    pre-flight, once per version of the file (it is what ``read_model_info`` reads)."""
    read_model_info(path)


# --- ModelInfo from the pre-flight's header ---------------------------------------------------
# general.file_type -> name (llama.h's llama_ftype)
FILE_TYPES: dict[int, str] = {
    0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 7: "Q8_0", 8: "Q5_0", 9: "Q5_1", 10: "Q2_K",
    11: "Q3_K_S", 12: "Q3_K_M", 13: "Q3_K_L", 14: "Q4_K_S", 15: "Q4_K_M", 16: "Q5_K_S",
    17: "Q5_K_M", 18: "Q6_K", 19: "IQ2_XXS", 20: "IQ2_XS", 21: "Q2_K_S", 22: "IQ3_XS",
    23: "IQ3_XXS", 24: "IQ1_S", 25: "IQ4_NL", 26: "IQ3_S", 27: "IQ3_M", 28: "IQ2_S",
    29: "IQ2_M", 30: "IQ4_XS", 31: "IQ1_M", 32: "BF16", 36: "TQ1_0", 37: "TQ2_0",
    38: "MXFP4_MOE", 39: "NVFP4", 40: "Q1_0",
}


def _file_type_name(code: int | None, tensor_types: dict[str, int]) -> str:
    if isinstance(code, int) and code in FILE_TYPES:
        return FILE_TYPES[code]
    # no or unknown general.file_type: the type holding most of the bytes
    if tensor_types:
        return max(tensor_types.items(), key=lambda kv: kv[1])[0]
    return "unknown"


# one ModelInfo per version of a file: (real path, device, inode, size, mtime, ctime) -> info
_cache: dict[tuple[Any, ...], ModelInfo] = {}
_cache_lock = threading.Lock()


def _file_version(path: Path) -> tuple[Any, ...]:
    """What tells one version of a file from another. The ctime is in it because a file
    rewritten in place gets a new one even when its old modification time is put back."""
    try:
        st = path.stat()
        real = str(path.resolve())
    except FileNotFoundError:
        from workstation.core.installed_models import missing_model_error

        raise missing_model_error(path) from None
    except (OSError, RuntimeError) as err:
        raise ModelFileError(said=[("gguf.unreadable", {"path": str(path),
                                                         "reason": getattr(err, "strerror", None) or str(err)})]) from None
    return (real, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def read_model_info(path: Path | str, *, check: bool = True) -> ModelInfo:
    """Read a GGUF's metadata and tensor table; ModelFileError for anything wrong with it.

    The header is read by the pre-flight (``gguf_check.preflight``), the app's one GGUF reader,
    so every file is checked; ``check`` is kept for the callers that pass it and changes
    nothing. The header is read once per version of the file (the result is cached), so the
    planner can ask on every load and ``check_gguf`` before it costs a ``stat``.
    """
    path = Path(path)
    version = _file_version(path)
    with _cache_lock:
        hit = _cache.get(version)
    if hit is not None:  # the same file, perhaps by another name (a link, a copy's hard link): named as asked
        return hit if hit.path == str(path) else dataclasses.replace(hit, path=str(path))
    header = gguf_check.preflight(path)
    info = _model_info(path, header)
    if _file_version(path) == version:  # not changed while it was read
        with _cache_lock:
            _cache[version] = info
    return info


def _whole(value: Any) -> int | None:
    """A metadata number as an int (a float truncated); None for anything else."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return int(value)


def _int(meta: dict[str, Any], key: str, default: int = 0) -> int:
    """A hyper-parameter; for a per-layer array (kept by the pre-flight as a list) its largest."""
    value = meta.get(key)
    if isinstance(value, list):
        numbers = [n for n in map(_whole, value) if n is not None]
        return max(numbers) if numbers else default
    number = _whole(value)
    return default if number is None else number


def _per_layer(meta: dict[str, Any], key: str, n_layer: int, default: int) -> list[int]:
    """A hyper-parameter for each layer: a list padded with its last value, or one number."""
    value = meta.get(key)
    if isinstance(value, list):
        vals = [default if n is None else n for n in map(_whole, value)]
        return (vals + [vals[-1] if vals else default] * n_layer)[:n_layer]
    if isinstance(value, int) and not isinstance(value, bool):
        return [value] * n_layer
    return [default] * n_layer


def _text(meta: dict[str, Any], key: str) -> str | None:
    value = meta.get(key)
    return value if isinstance(value, str) else None


def _vocabulary_fingerprint(path: Path, tokenizer_model: str, tokens: ValueSpan | None) -> str:
    """sha256 over the tokenizer model's name and the token texts as stored (each with its
    length), first 16 hex digits; "" without a vocabulary. Two models whose token ids mean the
    same text have the same fingerprint."""
    if tokens is None:
        return ""
    digest = hashlib.sha256(tokenizer_model.encode())
    try:
        with path.open("rb") as f:
            f.seek(tokens.start)
            left = tokens.end - tokens.start
            while left > 0:
                block = f.read(min(left, 1 << 20))
                if not block:
                    raise ModelFileError(f"The model file {path} changed while it was read; try again.")
                digest.update(block)
                left -= len(block)
    except OSError as err:
        raise ModelFileError(said=[("gguf.unreadable", {"path": str(path), "reason": err.strerror or str(err)})]) from None
    return digest.hexdigest()[:16]


def _swa_layers(meta: dict[str, Any], arch: str, n_layer: int) -> tuple[int | None, list[bool]]:
    """(sliding window or None, which layers use it) as llama.cpp sets them up."""
    swa_layers = [False] * n_layer
    if arch not in SWA_ARCHITECTURES:
        return None, swa_layers
    pattern, dense_first, default_window = SWA_ARCHITECTURES[arch]
    window = _int(meta, f"{arch}.attention.sliding_window", default_window)
    if window <= 0:
        return None, swa_layers
    pat = meta.get(f"{arch}.attention.sliding_window_pattern")
    if isinstance(pat, list):
        vals = [bool(v) for v in pat]
        return window, (vals + [False] * n_layer)[:n_layer]
    if isinstance(pat, int) and not isinstance(pat, bool):
        pattern = pat
    for il in range(n_layer):
        if pattern == 0:
            swa_layers[il] = True
        elif dense_first:
            swa_layers[il] = il % pattern != 0
        else:
            swa_layers[il] = il % pattern < pattern - 1
    return window, swa_layers


def _model_info(path: Path, header: GGUFHeader) -> ModelInfo:
    meta = header.metadata
    a = header.architecture
    n_layer = _int(meta, f"{a}.block_count")
    n_embd = _int(meta, f"{a}.embedding_length")
    n_head = _int(meta, f"{a}.attention.head_count")
    n_head_kv_list = _per_layer(meta, f"{a}.attention.head_count_kv", n_layer, n_head)
    head_dim = _int(meta, f"{a}.attention.key_length", n_embd // n_head if n_head else 0)
    head_dim_v = _int(meta, f"{a}.attention.value_length", head_dim)
    tokens = header.spans.get("tokenizer.ggml.tokens")
    if tokens is not None and not tokens.is_array:
        tokens = None
    n_vocab = _int(meta, f"{a}.vocab_size", tokens.count if tokens is not None else 0)
    tok_model = str(meta.get("tokenizer.ggml.model", ""))
    template = header.spans.get("tokenizer.chat_template")
    swa_window, swa_layers = _swa_layers(meta, a, n_layer)

    alignment = header.alignment
    layer_bytes = [0] * n_layer
    input_bytes = output_bytes = 0
    tensor_types: dict[str, int] = {}
    has_output = False
    total = 0
    params = 0
    for t in header.tensors:
        type_name = GGML_TYPES[t.ggml_type][0]
        padded = (t.nbytes + alignment - 1) // alignment * alignment
        total += padded
        params += math.prod(t.shape)
        tensor_types[type_name] = tensor_types.get(type_name, 0) + t.nbytes
        if t.name.startswith("blk."):
            try:
                il = int(t.name.split(".", 2)[1])
            except ValueError:
                il = -1
            if 0 <= il < n_layer:
                layer_bytes[il] += padded
                continue
        if t.name.startswith("token_embd."):
            input_bytes += padded
        else:
            if t.name == "output.weight":
                has_output = True
            output_bytes += padded
    return ModelInfo(
        path=str(path),
        name=_text(meta, "general.name") or path.stem,
        architecture=a,
        parameter_count=params,
        file_type=_file_type_name(meta.get("general.file_type"), tensor_types),
        file_size=header.file_size,
        context_length=_int(meta, f"{a}.context_length"),
        n_layer=n_layer,
        n_head=n_head,
        n_head_kv=n_head_kv_list[0] if n_head_kv_list else n_head,
        head_dim=head_dim,
        head_dim_v=head_dim_v,
        n_embd=n_embd,
        n_ff=_int(meta, f"{a}.feed_forward_length"),
        n_vocab=n_vocab,
        tokenizer_model=tok_model,
        tokenizer_fingerprint=_vocabulary_fingerprint(path, tok_model, tokens),
        sliding_window=swa_window,
        swa_layers=swa_layers,
        has_chat_template=template is not None and not template.is_array and template.count > 0,
        licence=_text(meta, "general.license"),
        size_label=_text(meta, "general.size_label"),
        n_head_kv_per_layer=n_head_kv_list,
        layer_bytes=layer_bytes,
        input_bytes=input_bytes,
        output_bytes=output_bytes,
        tied_embeddings=not has_output,
        weights_bytes=total,
        tensor_types=tensor_types,
    )


def vocabulary_difference(a: ModelInfo, b: ModelInfo) -> str | None:
    """Why token ids of model ``a`` do not mean the same as those of ``b`` (completes "X uses
    ..."), or None when both read the same vocabulary (size and token texts)."""
    if int(a.n_vocab) != int(b.n_vocab):
        return f"a different vocabulary ({a.n_vocab} vs {b.n_vocab} tokens)"
    if a.tokenizer_fingerprint != b.tokenizer_fingerprint:
        return f"a different vocabulary (same size, {a.n_vocab} tokens, but other token texts)"
    return None


# llama.cpp's rule for a draft model (common/speculative.cpp, common_speculative_are_compatible):
# the vocabularies may differ in size by padding (Qwen2.5 0.5B has 151,936 tokens, 14B 152,064),
# and the token texts must agree from id 5 on (the first ids are special tokens)
DRAFT_VOCAB_MAX_SIZE_DIFFERENCE = 128
DRAFT_VOCAB_CHECK_START_TOKEN_ID = 5


def draft_token_difference(target: list[bytes], draft: list[bytes]) -> Phrase | None:
    """llama.cpp's draft rule over two vocabularies' token texts (completes "X uses ..."), or
    None when the draft's token ids mean the same text as the target's."""
    if abs(len(target) - len(draft)) > DRAFT_VOCAB_MAX_SIZE_DIFFERENCE:
        return _draft_sizes(len(draft), len(target))
    for i in range(DRAFT_VOCAB_CHECK_START_TOKEN_ID, min(len(target), len(draft))):
        if target[i] != draft[i]:
            return ("draft.token_text", {"n": str(i), "draft": repr(draft[i].decode("utf-8", "replace")[:20]),
                                         "target": repr(target[i].decode("utf-8", "replace")[:20])})
    return None


def draft_vocabulary_difference(target: ModelInfo, draft: ModelInfo) -> Phrase | None:
    """Why ``draft`` cannot draft for ``target`` (completes "the draft model uses ..."), or None:
    the same vocabulary, or one that differs only as llama.cpp allows (padding at the end)."""
    if vocabulary_difference(target, draft) is None:
        return None
    if abs(int(target.n_vocab) - int(draft.n_vocab)) > DRAFT_VOCAB_MAX_SIZE_DIFFERENCE:
        return _draft_sizes(int(draft.n_vocab), int(target.n_vocab))
    if target.tokenizer_model != draft.tokenizer_model:
        return ("draft.tokenizer", {"draft": draft.tokenizer_model, "target": target.tokenizer_model})
    from workstation.core.gguf_check import token_texts

    return draft_token_difference(token_texts(Path(target.path)), token_texts(Path(draft.path)))


def _draft_sizes(draft: int, target: int) -> Phrase:
    """(they were written target first, in a sentence about the draft: "gemma … uses a different
    vocabulary (49152 vs 262144 tokens)", where gemma has 262,144)"""
    return ("draft.vocabulary_size", {"draft": f"{draft:,}", "target": f"{target:,}"})


def draft_problem(target_path: Path, draft_path: Path, context: int) -> Phrase | None:
    """Why the model at ``draft_path`` cannot draft for the one at ``target_path`` at ``context``
    tokens per request, in one sentence (a phrase: ``say`` it); None where it can. Both GGUF headers are read, no
    weights: ``profiles check`` says it as loading would (it said "ready: yes"). Once per
    version of the two files: comparing two vocabularies took up to a second (262,144 tokens),
    for each profile ``profiles list`` showed."""
    return _draft_problem(_file_version(target_path), _file_version(draft_path), target_path, draft_path, context)


@functools.lru_cache(maxsize=64)
def _draft_problem(_target: tuple[Any, ...], _draft: tuple[Any, ...], target_path: Path, draft_path: Path,
                   context: int) -> Phrase | None:
    info_t, info_d = read_model_info(target_path), read_model_info(draft_path)
    why = draft_vocabulary_difference(info_t, info_d)
    if why:
        return ("draft.vocabulary", {"name": draft_path.name, "why": why, "model": target_path.name})
    if 0 < info_d.context_length < context:
        return ("draft.context", {"name": draft_path.name, "trained": f"{info_d.context_length:,}",
                                  "context": f"{context:,}"})
    return None
