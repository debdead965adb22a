"""Make the hostile-file corpus in tests/hostile/ (run: .venv/bin/python tests/hostile/make_corpus.py).

``tiny-valid.gguf`` is a complete, loadable llama-architecture model of a few KB written with
the ``gguf`` package's GGUFWriter (1 block, 32-wide, a 32-token SentencePiece vocabulary, one
Q8_0 tensor). Every hostile GGUF is that file with one thing broken, either byte-edited at an
offset found by walking our own (trusted) file, or written again with one bad value.

``EXPECTED`` maps each hostile file to a word that the pre-flight's message must contain.
Deterministic: running it twice writes the same bytes.
"""

from __future__ import annotations

import struct
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
VALID = "tiny-valid.gguf"

N_EMBD, N_FF, N_HEAD = 32, 32, 2
GOOD_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
# A template that reaches for Python internals (the sandbox must refuse it).
ESCAPE_TEMPLATE = "{{ ''.__class__.__mro__[1].__subclasses__() }}{% for m in messages %}{{ m['content'] }}{% endfor %}"


# a SentencePiece vocabulary: its controls, a token for each byte (llama.cpp spells a text's
# characters that it does not list in them, and aborts where one is missing), then words
BYTE_TOKENS = [f"<0x{b:02X}>" for b in range(256)]
TINY_TOKENS = ["<unk>", "<s>", "</s>", *BYTE_TOKENS, "\u2581", *(chr(ord("a") + i) for i in range(26)), "\u2581a"]
N_VOCAB = len(TINY_TOKENS)
TINY_TYPES = [2, 3, 3] + [6] * 256 + [1] * (N_VOCAB - 259)
WORD_B = TINY_TOKENS.index("b")


def write_tiny(
    path: Path,
    overrides: dict[str, Any] | None = None,
    template: str = GOOD_TEMPLATE,
    *,
    tokenizer: str = "llama",
    tokens: list[str] | None = None,
    types: list[int] | None = None,
) -> None:
    """A tiny llama model; ``overrides`` adds metadata (key -> (value, type name)); the
    vocabulary (tokenizer model, token texts, token types) can be replaced whole."""
    import gguf

    overrides = overrides or {}
    arch = "llama"
    w = gguf.GGUFWriter(path, arch)
    w.add_name("tiny hostile-corpus base")
    w.add_context_length(128)
    w.add_embedding_length(N_EMBD)
    w.add_block_count(1)
    w.add_feed_forward_length(N_FF)
    w.add_head_count(N_HEAD)
    w.add_head_count_kv(N_HEAD)
    w.add_rope_dimension_count(N_EMBD // N_HEAD)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_vocab_size(N_VOCAB)
    w.add_file_type(1)
    w.add_tokenizer_model(tokenizer)
    tokens = TINY_TOKENS if tokens is None else tokens
    types = TINY_TYPES if types is None else types
    assert len(tokens) == len(types) == N_VOCAB
    w.add_token_list(tokens)
    w.add_token_scores([0.0] * 259 + [-float(i) for i in range(N_VOCAB - 259)])
    w.add_token_types(types)
    w.add_unk_token_id(0)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_chat_template(template)
    for key, (value, vtype) in overrides.items():
        w.add_key_value(key, value, getattr(gguf.GGUFValueType, vtype))

    rng = np.random.default_rng(0)

    def mat(rows: int, cols: int) -> np.ndarray:
        return (rng.standard_normal((rows, cols)) * 0.02).astype(np.float16)

    w.add_tensor("token_embd.weight", mat(N_VOCAB, N_EMBD))
    w.add_tensor("output_norm.weight", np.ones(N_EMBD, dtype=np.float32))
    w.add_tensor("blk.0.attn_norm.weight", np.ones(N_EMBD, dtype=np.float32))
    q = gguf.quants.quantize(mat(N_EMBD, N_EMBD).astype(np.float32), gguf.GGMLQuantizationType.Q8_0)
    w.add_tensor("blk.0.attn_q.weight", q, raw_dtype=gguf.GGMLQuantizationType.Q8_0)
    w.add_tensor("blk.0.attn_k.weight", mat(N_EMBD, N_EMBD))
    w.add_tensor("blk.0.attn_v.weight", mat(N_EMBD, N_EMBD))
    w.add_tensor("blk.0.attn_output.weight", mat(N_EMBD, N_EMBD))
    w.add_tensor("blk.0.ffn_norm.weight", np.ones(N_EMBD, dtype=np.float32))
    w.add_tensor("blk.0.ffn_gate.weight", mat(N_FF, N_EMBD))
    w.add_tensor("blk.0.ffn_up.weight", mat(N_FF, N_EMBD))
    w.add_tensor("blk.0.ffn_down.weight", mat(N_EMBD, N_FF))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


# --- a walker over OUR OWN valid file, to find where each field is (never used on hostile input)


@dataclass
class Layout:
    kv_start: int = 24
    kv: dict[str, tuple[int, int, int]] = field(default_factory=dict)  # key -> (key off, type off, value off)
    tensors: dict[str, dict[str, int]] = field(default_factory=dict)  # name -> field offsets
    infos_end: int = 0
    data_start: int = 0


def walk(data: bytes) -> Layout:
    lay = Layout()
    n_tensors, n_kv = struct.unpack_from("<QQ", data, 8)
    pos = 24
    sizes = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}

    def skip_value(vtype: int, pos: int) -> int:
        if vtype in sizes:
            return pos + sizes[vtype]
        if vtype == 8:
            (n,) = struct.unpack_from("<Q", data, pos)
            return pos + 8 + n
        etype, count = struct.unpack_from("<IQ", data, pos)
        pos += 12
        for _ in range(count):
            pos = skip_value(etype, pos)
        return pos

    for _ in range(n_kv):
        key_off = pos
        (n,) = struct.unpack_from("<Q", data, pos)
        key = data[pos + 8 : pos + 8 + n].decode()
        pos += 8 + n
        (vtype,) = struct.unpack_from("<I", data, pos)
        lay.kv[key] = (key_off, pos, pos + 4)
        pos = skip_value(vtype, pos + 4)
    for _ in range(n_tensors):
        info: dict[str, int] = {"name": pos}
        (n,) = struct.unpack_from("<Q", data, pos)
        name = data[pos + 8 : pos + 8 + n].decode()
        pos += 8 + n
        info["n_dims"] = pos
        (nd,) = struct.unpack_from("<I", data, pos)
        pos += 4
        info["dims"] = pos
        pos += 8 * nd
        info["type"] = pos
        info["offset"] = pos + 4
        pos += 12
        lay.tensors[name] = info
    lay.infos_end = pos
    lay.data_start = pos + (-pos % 32)
    return lay


# --- hostile variants


def _put(data: bytes, offset: int, fmt: str, value: Any) -> bytes:
    out = bytearray(data)
    struct.pack_into(fmt, out, offset, value)
    return bytes(out)


def byte_variants(data: bytes) -> dict[str, tuple[bytes, str]]:
    """name -> (file bytes, a word the pre-flight's error must contain)."""
    lay = walk(data)
    t = lay.tensors
    first_kv = min(off for off, _, _ in lay.kv.values())
    tpl_len_off = lay.kv["tokenizer.chat_template"][2]
    tokens_arr = lay.kv["tokenizer.ggml.tokens"][2]  # element type (u32) then count (u64)
    v: dict[str, tuple[bytes, str]] = {}
    # truncated at every section boundary (and inside each section)
    cuts = {
        "empty": 0,
        "magic-only": 4,
        "after-version": 8,
        "after-tensor-count": 16,
        "after-header": 24,
        "inside-first-key": first_kv + 10,
        "inside-vocab": tokens_arr + 200,
        "inside-template": tpl_len_off + 20,
        "end-of-metadata": t["token_embd.weight"]["name"],
        "inside-tensor-infos": t["blk.0.attn_q.weight"]["dims"] + 4,
        "end-of-tensor-infos": lay.infos_end,
        "start-of-data": lay.data_start,
        "inside-data": lay.data_start + (len(data) - lay.data_start) // 2,
        "last-byte-missing": len(data) - 1,
    }
    for name, cut in cuts.items():
        v[f"truncated-{name}"] = (data[:cut], "file")
    v["truncated-empty"] = (b"", "GGUF")
    v["truncated-magic-only"] = (data[:4], "end")
    v["bad-magic"] = (b"GGUG" + data[4:], "GGUF")
    v["version-1"] = (_put(data, 4, "<I", 1), "version")
    v["version-huge"] = (_put(data, 4, "<I", 0x03000000), "version")
    v["huge-tensor-count"] = (_put(data, 8, "<Q", 1 << 62), "tensors")
    v["tensor-count-past-eof"] = (_put(data, 8, "<Q", 90_000), "tensors")
    v["huge-kv-count"] = (_put(data, 16, "<Q", (1 << 64) - 1), "metadata")
    v["kv-count-one-more"] = (_put(data, 16, "<Q", len(lay.kv) + 1), "")
    v["key-length-past-eof"] = (_put(data, first_kv, "<Q", len(data)), "past the end")
    v["key-length-huge"] = (_put(data, first_kv, "<Q", 1 << 63), "limit")
    v["template-length-past-eof"] = (_put(data, tpl_len_off, "<Q", len(data) * 4), "past the end")
    v["template-length-overflow"] = (_put(data, tpl_len_off, "<Q", (1 << 64) - 8), "limit")
    v["vocab-count-huge"] = (_put(data, tokens_arr + 4, "<Q", 1 << 60), "elements")
    v["vocab-count-past-eof"] = (_put(data, tokens_arr + 4, "<Q", 1_000_000), "past the end")
    v["unknown-value-type"] = (_put(data, lay.kv["general.name"][1], "<I", 77), "unknown value type")
    v["unknown-array-type"] = (_put(data, tokens_arr, "<I", 13), "unknown element type")
    v["array-of-arrays"] = (_put(data, tokens_arr, "<I", 9), "array of arrays")
    q = t["blk.0.attn_q.weight"]
    k = t["blk.0.attn_k.weight"]
    v["n-dims-huge"] = (_put(data, q["n_dims"], "<I", 0xFFFFFFFF), "dimensions")
    v["n-dims-five"] = (_put(data, q["n_dims"], "<I", 5), "dimensions")
    v["dim-negative"] = (_put(data, k["dims"], "<q", -32), "dimension")
    v["dim-zero"] = (_put(data, k["dims"] + 8, "<q", 0), "dimension")
    v["dims-product-overflow"] = (
        _put(_put(data, k["dims"], "<q", 1 << 40), k["dims"] + 8, "<q", 1 << 40), "elements"
    )
    v["shape-not-block-multiple"] = (_put(data, q["dims"], "<q", 48), "block size")
    v["unknown-ggml-type"] = (_put(data, k["type"], "<I", 99), "ggml type")
    v["removed-ggml-type"] = (_put(data, k["type"], "<I", 4), "ggml type")
    v["misaligned-offset"] = (_put(data, k["offset"], "<Q", _read_u64(data, k["offset"]) + 1), "multiple of the alignment")
    v["overlapping-tensors"] = (_put(data, k["offset"], "<Q", _read_u64(data, q["offset"])), "overlap")
    v["offset-past-eof"] = (_put(data, k["offset"], "<Q", 1 << 40), "past the end")
    v["offset-wraps-around"] = (_put(data, k["offset"], "<Q", (1 << 64) - 32), "past the end")
    # duplicate tensor name: 'blk.0.attn_k.weight' renamed to 'blk.0.attn_q.weight' (same length)
    dup = bytearray(data)
    dup[k["name"] + 8 : k["name"] + 8 + 19] = b"blk.0.attn_q.weight"
    v["duplicate-tensor-name"] = (bytes(dup), "twice")
    v["tensor-name-length-huge"] = (_put(data, k["name"], "<Q", 1 << 33), "limit")
    # architecture: 'llama' -> 'lllma' (same length, so the file stays well formed)
    arch = bytearray(data)
    at = lay.kv["general.architecture"][2] + 8
    arch[at : at + 5] = b"lllma"
    v["unknown-architecture"] = (bytes(arch), "architecture")
    bc = lay.kv["llama.block_count"][2]
    v["block-count-huge"] = (_put(data, bc, "<I", 100_000), "block_count")
    v["block-count-zero"] = (_put(data, bc, "<I", 0), "block_count")
    # read into an int32 by llama-cpp-python: negative ("Array length must be >= 0, not -294967296")
    v["context-length-huge"] = (_put(data, lay.kv["llama.context_length"][2], "<I", 4_000_000_000), "context_length")
    # llama.cpp aborts at the first reply: GGML_ASSERT(eps >= 0.0f) failed
    v["rms-eps-nan"] = (_put(data, lay.kv["llama.attention.layer_norm_rms_epsilon"][2], "<f", float("nan")),
                        "layer_norm_rms_epsilon")
    return v


def _read_u64(data: bytes, offset: int) -> int:
    return int(struct.unpack_from("<Q", data, offset)[0])


# hostile variants written again with one bad value: name -> (overrides, expected word)
WRITER_VARIANTS: dict[str, tuple[dict[str, Any], str]] = {
    "alignment-not-power-of-two": ({"general.alignment": (48, "UINT32")}, "alignment"),
    "alignment-wrong-type": ({"general.alignment": (32, "UINT64")}, "UINT32"),
    "expert-count-huge": ({"llama.expert_count": (5000, "UINT32"), "llama.expert_used_count": (2, "UINT32")}, "expert_count"),
    "expert-used-above-count": ({"llama.expert_count": (4, "UINT32"), "llama.expert_used_count": (9, "UINT32")}, "expert_used_count"),
    "rope-scaling-unknown": ({"llama.rope.scaling.type": ("bogus", "STRING")}, "rope.scaling.type"),
    "rope-freq-base-zero": ({"llama.rope.freq_base": (0.0, "FLOAT32")}, "rope.freq_base"),  # every reply empty
}


def _vocab_with(changes: dict[int, str]) -> list[str]:
    tokens = list(TINY_TOKENS)
    for i, text in changes.items():
        tokens[i] = text
    return tokens


# vocabularies llama.cpp's loader (or its first tokenize) aborts on: name -> (write_tiny
# keyword arguments, expected word)
VOCAB_VARIANTS: dict[str, tuple[dict[str, Any], str]] = {
    "vocab-duplicate-token": ({"tokens": _vocab_with({N_VOCAB - 1: "a"})}, "repeats token"),
    "vocab-empty-token-collides": (
        {"tokens": _vocab_with({WORD_B: "", N_VOCAB - 1: f"[EMPTY_{WORD_B}]"})}, f"[EMPTY_{WORD_B}]"),
    # the bytes from 0x80 named otherwise: "é" in a prompt aborted the process
    "vocab-spm-without-byte-tokens": (
        {"tokens": _vocab_with({3 + b: f"x{b:02x}" for b in range(0x80, 0x100)}),
         "types": [2, 3, 3] + [6] * 128 + [1] * (N_VOCAB - 131)}, "byte 0x80"),
    # "<0x00>" as the byte itself: llama.cpp reads it as a C string (empty), so a NUL still aborts
    "vocab-spm-nul-byte-token": ({"tokens": _vocab_with({3: "\x00"}), "types": [2, 3, 3, 1] + [6] * 255
                                  + [1] * (N_VOCAB - 259)}, "byte 0x00"),
    "vocab-byte-token-in-wordpiece": ({"tokenizer": "bert"}, "byte token"),
    "vocab-none": ({"tokenizer": "no_vocab"}, "no vocabulary"),
}


def build(out: Path = HERE) -> dict[str, str]:
    """Write the corpus; returns hostile file name -> expected word."""
    out.mkdir(parents=True, exist_ok=True)
    valid = out / VALID
    write_tiny(valid)
    data = valid.read_bytes()
    expected: dict[str, str] = {}
    for name, (blob, word) in byte_variants(data).items():
        (out / f"{name}.gguf").write_bytes(blob)
        expected[f"{name}.gguf"] = word
    tmp = out / "_tmp.gguf"
    for name, (overrides, word) in WRITER_VARIANTS.items():
        write_tiny(tmp, overrides)
        tmp.replace(out / f"{name}.gguf")
        expected[f"{name}.gguf"] = word
    for name, (kwargs, word) in VOCAB_VARIANTS.items():
        write_tiny(tmp, **kwargs)
        tmp.replace(out / f"{name}.gguf")
        expected[f"{name}.gguf"] = word
    # a structurally valid GGUF whose chat template reaches for Python internals
    write_tiny(out / "template-escape.gguf", template=ESCAPE_TEMPLATE)
    return expected


if __name__ == "__main__":
    result = build(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE)
    for file_name in sorted(result):
        size = (HERE / file_name).stat().st_size if len(sys.argv) == 1 else 0
        print(f"{file_name:45s} {size:7d}  expects '{result[file_name]}'")
