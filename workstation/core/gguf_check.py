"""Pre-flight check of a GGUF file before llama.cpp's C parser sees it.

Every load, inspect, pull and import goes through ``preflight(path)``. A file that fails is
never handed to llama.cpp; the error says what is wrong and at which byte offset.

The header is parsed here with ``struct`` in bounded time and memory: the file is read in
blocks (never whole), every length is checked against the bytes that are left and against a
cap before anything is read or allocated, numeric arrays are skipped by seeking, string arrays
(a 262k-token vocabulary) are walked in 1 MiB blocks. The ``gguf`` package's reader is not used
on untrusted input.

What is checked: magic and version (2 or 3); tensor and key counts within caps; every key,
string and array length inside the file and under a cap; value types known; no arrays of
arrays; no empty or duplicate keys; ``general.alignment`` a UINT32 power of two; every tensor:
a name of 1-63 bytes, unique, at most 4 dimensions, each positive, a bounded element count, a
ggml type the installed llama.cpp knows, a row length divisible by the type's block size, an
aligned offset, its bytes inside the data section, and no two tensors overlapping;
``general.architecture`` present and known to the installed llama.cpp; and the few
hyper-parameters that llama.cpp checks with an assertion that aborts the whole process instead
of returning an error (block count, expert counts, RoPE scaling type, layer-norm epsilon), or
that break every reply or the loader's own arithmetic (RoPE base, trained context length).

The header it returns keeps the small values, every tensor record, and where each text and
array value lies in the file (``spans``); the catalog builds its ``ModelInfo`` from it, so this
is the one reader of GGUF headers in the app.

The architectures llama.cpp knows are asked from the installed library itself: libllama.so
exports ``llm_arch_name(llm_arch)``, which is called through ctypes for each enum value (the
list is cached per process). Where that symbol cannot be found, the fallback accepts a name
that occurs as a NUL-terminated string in libllama.so.
"""

from __future__ import annotations

import ctypes
import functools
import importlib.util
import math
import os
import re
import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from workstation.core.errors import ModelFileError
from workstation.core.invocation import cli
from workstation.core.phrases import Phrase

GGUF_MAGIC = b"GGUF"
SUPPORTED_VERSIONS = (2, 3)

# Caps: far above any real model, far below what would take long or use much memory.
MAX_TENSORS = 100_000
MAX_KV = 65_536
MAX_KEY_BYTES = 65_536
MAX_STRING_BYTES = 64 * 1024 * 1024  # one string value (chat templates are tens of KB)
MAX_ARRAY_ELEMENTS = 1 << 24  # 16M elements in one array
MAX_TOTAL_STRING_ELEMENTS = 1 << 22  # 4M strings in all arrays together
MAX_TENSOR_NAME = 63  # llama.cpp's GGML_MAX_NAME is 64 including the NUL
MAX_DIMS = 4
MAX_ELEMENTS = 1 << 50
MAX_ALIGNMENT = 1 << 20
DEFAULT_ALIGNMENT = 32
KEPT_ARRAY_ELEMENTS = 1024  # numeric arrays up to this length are kept for the hparam checks
KEPT_STRING_BYTES = 4096  # string values up to this length are kept

# llama.cpp's limits behind GGML_ASSERTs in llama_model::load_hparams (llama-hparams.h).
LLAMA_MAX_LAYERS = 512
LLAMA_MAX_EXPERTS = 1024
MAX_CONTEXT_LENGTH = 2**31 - 1  # n_ctx_train is an int32
ROPE_SCALING_TYPES = ("none", "linear", "yarn", "longrope")

# GGUF value types -> (name, struct format or None for string/array).
_U8, _I8, _U16, _I16, _U32, _I32, _F32, _BOOL, _STR, _ARR, _U64, _I64, _F64 = range(13)
_SCALAR_FORMATS: dict[int, str] = {
    _U8: "<B", _I8: "<b", _U16: "<H", _I16: "<h", _U32: "<I", _I32: "<i", _F32: "<f",
    _BOOL: "<B", _U64: "<Q", _I64: "<q", _F64: "<d",
}
_TYPE_NAMES = (
    "UINT8", "INT8", "UINT16", "INT16", "UINT32", "INT32", "FLOAT32", "BOOL", "STRING", "ARRAY",
    "UINT64", "INT64", "FLOAT64",
)
_INT_TYPES = (_U8, _I8, _U16, _I16, _U32, _I32, _U64, _I64)

# ggml types of the installed llama.cpp (ggml.h, GGML_TYPE_COUNT = 43): id -> (name, block
# size, bytes per block), the app's one table of them (the catalog shows the names upper-cased).
# Removed types (4, 5, 31-33, 36-38) are absent. A test checks this table against
# libggml-base's ggml_blck_size / ggml_type_size.
GGML_TYPES: dict[int, tuple[str, int, int]] = {
    0: ("f32", 1, 4), 1: ("f16", 1, 2), 2: ("q4_0", 32, 18), 3: ("q4_1", 32, 20),
    6: ("q5_0", 32, 22), 7: ("q5_1", 32, 24), 8: ("q8_0", 32, 34), 9: ("q8_1", 32, 36),
    10: ("q2_K", 256, 84), 11: ("q3_K", 256, 110), 12: ("q4_K", 256, 144),
    13: ("q5_K", 256, 176), 14: ("q6_K", 256, 210), 15: ("q8_K", 256, 292),
    16: ("iq2_xxs", 256, 66), 17: ("iq2_xs", 256, 74), 18: ("iq3_xxs", 256, 98),
    19: ("iq1_s", 256, 50), 20: ("iq4_nl", 32, 18), 21: ("iq3_s", 256, 110),
    22: ("iq2_s", 256, 82), 23: ("iq4_xs", 256, 136), 24: ("i8", 1, 1), 25: ("i16", 1, 2),
    26: ("i32", 1, 4), 27: ("i64", 1, 8), 28: ("f64", 1, 8), 29: ("iq1_m", 256, 56),
    30: ("bf16", 1, 2), 34: ("tq1_0", 256, 54), 35: ("tq2_0", 256, 66),
    39: ("mxfp4", 32, 17), 40: ("nvfp4", 64, 36), 41: ("q1_0", 128, 18), 42: ("q2_0", 64, 18),
}

_CHUNK = 1 << 20


@dataclass
class TensorEntry:
    name: str
    shape: tuple[int, ...]
    ggml_type: int
    offset: int  # relative to the data section
    nbytes: int
    info_offset: int  # where its record starts in the file


@dataclass(frozen=True)
class ValueSpan:
    """Where a text or array value lies in the file, checked to be inside it: ``start`` is the
    first byte of the text (after its length) or the first element of the array (after its
    element type and count), ``end`` one past the last byte."""

    value_type: int  # GGUF value type: 8 (STRING) or 9 (ARRAY)
    item_type: int  # an array's element type; 8 for a text
    count: int  # elements of an array, bytes of a text
    start: int
    end: int

    @property
    def is_array(self) -> bool:
        return self.value_type == _ARR


@dataclass
class GGUFHeader:
    """What the pre-flight read: enough to describe the file without trusting it further."""

    path: Path
    version: int
    architecture: str
    alignment: int
    data_offset: int
    file_size: int
    metadata: dict[str, Any] = field(default_factory=dict)  # small scalars and short arrays
    tensors: list[TensorEntry] = field(default_factory=list)
    spans: dict[str, ValueSpan] = field(default_factory=dict)  # every text and array value


class _Bad(Exception):
    def __init__(self, what: str | Phrase, offset: int, cut: bool = False) -> None:
        """``cut``: what is wrong is that the file ends too soon (an interrupted download).
        ``what`` is a phrase where a person meets it (not a GGUF file at all), else the
        technical detail in English."""
        super().__init__(what)
        self.what = what
        self.offset = offset
        self.cut = cut


class _Reader:
    """Sequential reads over a file in 1 MiB blocks, with the position and size checked."""

    def __init__(self, f: BinaryIO, size: int) -> None:
        self.f = f
        self.size = size
        self.pos = 0
        self.buf = b""
        self.buf_start = 0

    def _fill(self, n: int, what: str) -> int:
        """Make [pos, pos + n) readable; returns the index of pos in ``self.buf``."""
        if self.pos + n > self.size:
            raise _Bad(f"the file ends inside {what} ({n} bytes needed, {self.size - self.pos} left)", self.pos, cut=True)
        i = self.pos - self.buf_start
        if i < 0 or i + n > len(self.buf):
            self.f.seek(self.pos)
            self.buf = self.f.read(max(n, _CHUNK))
            self.buf_start = self.pos
            i = 0
            if len(self.buf) < n:
                raise _Bad(f"the file could not be read at {what}", self.pos)
        return i

    def unpack(self, fmt: str, n: int, what: str) -> Any:
        i = self._fill(n, what)
        self.pos += n
        return struct.unpack_from(fmt, self.buf, i)[0]

    def u32(self, what: str) -> int:
        return int(self.unpack("<I", 4, what))

    def u64(self, what: str) -> int:
        return int(self.unpack("<Q", 8, what))

    def raw(self, n: int, what: str) -> bytes:
        i = self._fill(n, what)
        self.pos += n
        return self.buf[i : i + n]

    def skip(self, n: int, what: str) -> None:
        if n < 0 or self.pos + n > self.size:
            raise _Bad(f"{what} runs past the end of the file", self.pos, cut=True)
        self.pos += n

    def string(self, cap: int, what: str) -> bytes:
        start = self.pos
        n = self.u64(f"the length of {what}")
        if n > cap:
            raise _Bad(f"{what} claims {n} bytes (the limit is {cap})", start)
        if self.pos + n > self.size:
            raise _Bad(f"{what} claims {n} bytes, past the end of the file", start, cut=True)
        return self.raw(n, what)

    def skip_string_array(self, count: int, what: str) -> None:
        """Walk ``count`` length-prefixed strings without keeping them, block by block."""
        unpack = _U64_STRUCT.unpack_from
        cap = MAX_STRING_BYTES
        remaining = count
        while remaining > 0:
            i = self._fill(8, f"an element of {what}")
            buf = self.buf
            base = self.buf_start
            limit = len(buf) - 8
            j = i
            for _ in range(remaining):
                (n,) = unpack(buf, i)
                if n > cap:
                    raise _Bad(f"an element of {what} claims {n} bytes (the limit is {cap})", base + i)
                j = i
                i += 8 + n
                remaining -= 1
                if i > limit:
                    break
            pos = base + i
            if pos > self.size:
                raise _Bad(f"an element of {what} runs past the end of the file", base + j, cut=True)
            self.pos = pos


_U64_STRUCT = struct.Struct("<Q")


def _fail(path: Path, bad: _Bad) -> ModelFileError:
    """The plain sentence first (incomplete: copy it again; damaged inside), the check's own
    detail after it: "tensor 'token_embd.weight' needs 30081024 bytes at data offset 2304"
    came before "The file is incomplete …", the one part an office user can act on. A detail in
    words (not a GGUF file at all) is the sentence itself."""
    if isinstance(bad.what, tuple) and not bad.cut:
        return ModelFileError(said=[("gguf.unusable", {"path": str(path), "what": bad.what, "offset": bad.offset})])
    what = bad.what if isinstance(bad.what, tuple) else ("gguf.technical", {"detail": bad.what})  # (English)
    return ModelFileError(said=[("gguf.unusable_cut" if bad.cut else "gguf.unusable_damaged",
                                 {"path": str(path), "what": what, "offset": bad.offset})])


def missing_model(path: Path) -> ModelFileError:
    """A model file that is not there; a link (``models add --link``) whose file was moved or
    deleted says so, and how to add it again (it said only "does not exist")."""
    if path.is_symlink():
        target = os.readlink(path)
        return ModelFileError(said=[("model.link_gone", {"path": str(path), "target": target,
                                                         "command": cli("models add NEW-PATH --link")})])
    return ModelFileError(said=[("model.missing", {"path": str(path), "command": cli("models list")})])


def folder_for_model(path: Path) -> ModelFileError:
    """A folder given where a model file goes: which .gguf files are in it."""
    names = sorted(p.name for p in path.glob("*.gguf"))
    listed: str | tuple[str, dict[str, str]] = (", ".join(names[:4]) + (", …" if len(names) > 4 else "")
                                                if names else ("gguf.no_models_in", {}))
    return ModelFileError(said=[("gguf.a_folder", {"path": str(path), "listed": listed})])


def preflight(path: Path) -> GGUFHeader:
    """Check a GGUF file; raise ModelFileError (what is wrong, at which byte) or return its header."""
    path = Path(path)
    if not path.exists():
        raise missing_model(path)
    if path.is_dir():
        raise folder_for_model(path)
    if not path.is_file():
        raise ModelFileError(said=[("gguf.not_a_file", {"path": str(path)})])
    try:
        with path.open("rb") as f:
            size = path.stat().st_size
            return _parse(path, f, size)
    except _Bad as bad:
        raise _fail(path, bad) from None
    except OSError as err:
        raise ModelFileError(said=[("gguf.unreadable", {"path": str(path), "reason": err.strerror or str(err)})]) from None


def token_texts(path: Path) -> list[bytes]:
    """The vocabulary's token texts in id order (an empty one named as llama.cpp names it);
    [] for a file without one. The file is checked by ``preflight`` first."""
    header = preflight(path)
    span = header.spans.get("tokenizer.ggml.tokens")
    if span is None or not span.is_array:
        return []
    try:
        with Path(path).open("rb") as f:
            return [word for _, _, word in _vocab_words(_Reader(f, header.file_size), span.count, span.start)]
    except _Bad as bad:
        raise _fail(Path(path), bad) from None
    except OSError as err:
        raise ModelFileError(said=[("gguf.unreadable", {"path": str(path), "reason": err.strerror or str(err)})]) from None


def _read_value(
    r: _Reader, vtype: int, key: str, start: int, counter: list[int],
    spans: dict[str, ValueSpan] | None = None,
) -> Any:
    """Read (or skip) one value of ``vtype``; returns it when small enough to keep, else None.
    A text or array value also gets ``spans[key]``: where it lies in the file."""
    fmt = _SCALAR_FORMATS.get(vtype)
    if fmt is not None:
        size = struct.calcsize(fmt)
        value = r.unpack(fmt, size, f"the value of '{key}'")
        return bool(value) if vtype == _BOOL else value
    if vtype == _STR:
        raw = r.string(MAX_STRING_BYTES, f"the text value of '{key}'")
        if spans is not None:
            spans[key] = ValueSpan(_STR, _STR, len(raw), r.pos - len(raw), r.pos)
        return raw.decode("utf-8", errors="replace") if len(raw) <= KEPT_STRING_BYTES else None
    if vtype == _ARR:
        at = r.pos
        etype = r.u32(f"the element type of array '{key}'")
        count = r.u64(f"the length of array '{key}'")
        if etype == _ARR:
            raise _Bad(f"key '{key}' is an array of arrays, which llama.cpp does not accept", at)
        if etype not in _SCALAR_FORMATS and etype != _STR:
            raise _Bad(f"array '{key}' has an unknown element type {etype}", at)
        if count > MAX_ARRAY_ELEMENTS:
            raise _Bad(f"array '{key}' claims {count} elements (the limit is {MAX_ARRAY_ELEMENTS})", at)
        first = r.pos
        value = _read_array(r, etype, count, key, at, counter)
        if spans is not None:
            spans[key] = ValueSpan(_ARR, etype, count, first, r.pos)
        return value
    raise _Bad(f"key '{key}' has an unknown value type {vtype}", start)


def _read_array(r: _Reader, etype: int, count: int, key: str, at: int, counter: list[int]) -> list[Any] | None:
    """The elements of an array whose type and count were read and checked: a numeric array up
    to KEPT_ARRAY_ELEMENTS long is returned, anything else skipped (None)."""
    if etype == _STR:
        counter[0] += count
        if counter[0] > MAX_TOTAL_STRING_ELEMENTS:
            raise _Bad(f"array '{key}' brings the text elements to more than {MAX_TOTAL_STRING_ELEMENTS}", at)
        if count * 8 > r.size - r.pos:
            raise _Bad(f"array '{key}' claims {count} text elements, past the end of the file", at, cut=True)
        r.skip_string_array(count, f"array '{key}'")
        return None
    efmt = _SCALAR_FORMATS[etype]
    esize = struct.calcsize(efmt)
    nbytes = count * esize
    if r.pos + nbytes > r.size:
        raise _Bad(f"array '{key}' claims {count} elements, past the end of the file", at, cut=True)
    if count <= KEPT_ARRAY_ELEMENTS:
        data = r.raw(nbytes, f"array '{key}'")
        return list(struct.unpack(f"<{count}{efmt[1]}", data))
    r.skip(nbytes, f"array '{key}'")
    return None


def _parse(path: Path, f: BinaryIO, size: int) -> GGUFHeader:
    r = _Reader(f, size)
    if size < 4:
        raise _Bad(("gguf.too_small", {"size": size}), 0, cut=True)
    if r.raw(4, "the magic") != GGUF_MAGIC:
        raise _Bad(("gguf.not_gguf", {}), 0)
    version = r.u32("the version")
    if version not in SUPPORTED_VERSIONS:
        raise _Bad(f"GGUF version {version} is not supported (only 2 and 3)", 4)
    n_tensors = r.u64("the tensor count")
    if n_tensors > MAX_TENSORS:
        raise _Bad(f"it claims {n_tensors} tensors (the limit is {MAX_TENSORS})", 8)
    n_kv = r.u64("the metadata count")
    if n_kv > MAX_KV:
        raise _Bad(f"it claims {n_kv} metadata entries (the limit is {MAX_KV})", 16)
    # each key-value pair needs at least 13 bytes, each tensor record at least 33
    if n_kv * 13 + n_tensors * 33 > size - r.pos:
        raise _Bad(f"it claims {n_kv} metadata entries and {n_tensors} tensors, more than the file can hold", 8, cut=True)

    metadata: dict[str, Any] = {}
    types: dict[str, tuple[int, int]] = {}  # key -> (value type, offset of the key)
    counter = [0]
    spans: dict[str, ValueSpan] = {}
    for _ in range(n_kv):
        start = r.pos
        raw_key = r.string(MAX_KEY_BYTES, "a metadata key")
        if not raw_key:
            raise _Bad("a metadata key is empty", start)
        try:
            key = raw_key.decode("utf-8")
        except UnicodeDecodeError:
            raise _Bad("a metadata key is not valid UTF-8", start) from None
        if key in types:
            raise _Bad(f"metadata key '{key}' appears twice", start)
        vstart = r.pos
        vtype = r.u32(f"the value type of '{key}'")
        types[key] = (vtype, start)
        value = _read_value(r, vtype, key, vstart, counter, spans)
        if value is not None:
            metadata[key] = value

    alignment = DEFAULT_ALIGNMENT
    if "general.alignment" in types:
        vtype, at = types["general.alignment"]
        if vtype != _U32:
            raise _Bad("general.alignment must be a UINT32", at)
        alignment = int(metadata["general.alignment"])
        if alignment <= 0 or alignment & (alignment - 1) or alignment > MAX_ALIGNMENT:
            raise _Bad(f"general.alignment {alignment} is not a power of two up to {MAX_ALIGNMENT}", at)

    tensors: list[TensorEntry] = []
    names: set[str] = set()
    for _ in range(n_tensors):
        start = r.pos
        raw_name = r.string(MAX_KEY_BYTES, "a tensor name")
        if not raw_name or len(raw_name) > MAX_TENSOR_NAME:
            raise _Bad(f"a tensor name is {len(raw_name)} bytes long (allowed: 1 to {MAX_TENSOR_NAME})", start)
        name = raw_name.decode("utf-8", errors="replace")
        if name in names:
            raise _Bad(f"tensor name '{name}' appears twice", start)
        names.add(name)
        at = r.pos
        n_dims = r.u32(f"the dimension count of tensor '{name}'")
        if not 1 <= n_dims <= MAX_DIMS:
            raise _Bad(f"tensor '{name}' has {n_dims} dimensions (allowed: 1 to {MAX_DIMS})", at)
        shape: list[int] = []
        elements = 1
        for d in range(n_dims):
            at = r.pos
            ne = int(r.unpack("<q", 8, f"dimension {d} of tensor '{name}'"))
            if ne <= 0:
                raise _Bad(f"tensor '{name}' has dimension {d} of {ne} elements", at)
            elements *= ne
            if elements > MAX_ELEMENTS:
                raise _Bad(f"tensor '{name}' claims more than {MAX_ELEMENTS} elements", at)
            shape.append(ne)
        at = r.pos
        gtype = r.u32(f"the type of tensor '{name}'")
        if gtype not in GGML_TYPES:
            raise _Bad(f"tensor '{name}' has ggml type {gtype}, which llama.cpp does not know", at)
        tname, block, type_size = GGML_TYPES[gtype]
        if shape[0] % block:
            raise _Bad(
                f"tensor '{name}' of type {tname} has rows of {shape[0]} elements, "
                f"not a multiple of the block size {block}",
                at,
            )
        at = r.pos
        offset = r.u64(f"the data offset of tensor '{name}'")
        if offset % alignment:
            raise _Bad(f"tensor '{name}' has data offset {offset}, not a multiple of the alignment {alignment}", at)
        nbytes = elements // block * type_size
        tensors.append(TensorEntry(name, tuple(shape), gtype, offset, nbytes, start))

    data_offset = r.pos
    if n_tensors:
        data_offset += -data_offset % alignment
        if data_offset > size:
            raise _Bad("the tensor data section starts past the end of the file", r.pos, cut=True)
    data_size = size - data_offset
    prev: TensorEntry | None = None
    for t in sorted(tensors, key=lambda t: (t.offset, t.info_offset)):
        if t.offset + t.nbytes > data_size:
            raise _Bad(
                f"tensor '{t.name}' needs {t.nbytes} bytes at data offset {t.offset}, "
                f"past the end of the file (the data section holds {data_size})",
                t.info_offset,
                cut=True,
            )
        if prev is not None and t.offset < prev.offset + prev.nbytes:
            raise _Bad(f"tensors '{prev.name}' and '{t.name}' overlap in the data section", t.info_offset)
        prev = t

    arch = _check_architecture(metadata, types)
    _check_hparams(arch, metadata, types)
    _check_vocab(r, metadata, types, spans)
    return GGUFHeader(path, version, arch, alignment, data_offset, size, metadata, tensors, spans)


def _check_architecture(metadata: dict[str, Any], types: dict[str, tuple[int, int]]) -> str:
    if "general.architecture" not in types:
        raise _Bad("it has no general.architecture, so llama.cpp cannot tell what model it is", 24)
    vtype, at = types["general.architecture"]
    arch = metadata.get("general.architecture")
    if vtype != _STR or not isinstance(arch, str):
        raise _Bad("general.architecture is not a short text value", at)
    if not architecture_known(arch):
        shown = arch if len(arch) <= 40 and arch.isprintable() else repr(arch[:40])
        raise _Bad(f"architecture '{shown}' is not one the installed llama.cpp knows", at)
    return arch


def _int_or_max(value: Any) -> int | None:
    if isinstance(value, list):
        ints = [v for v in value if isinstance(v, int)]
        return max(ints) if ints else 0
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _check_hparams(arch: str, metadata: dict[str, Any], types: dict[str, tuple[int, int]]) -> None:
    """Values llama.cpp guards with GGML_ASSERT (an abort of the whole process) in load_hparams."""

    def get(name: str) -> tuple[int | None, int]:
        key = f"{arch}.{name}"
        if key not in types:
            return None, 0
        vtype, at = types[key]
        value = metadata.get(key)
        is_int_array = isinstance(value, list) and vtype == _ARR
        if vtype not in _INT_TYPES and not is_int_array:
            raise _Bad(f"{key} must be a whole number", at)
        number = _int_or_max(value)
        if number is None:
            raise _Bad(f"{key} must be a whole number", at)
        return number, at

    blocks, at = get("block_count")
    if blocks is not None and not 1 <= blocks <= LLAMA_MAX_LAYERS:
        raise _Bad(f"{arch}.block_count is {blocks} (llama.cpp allows 1 to {LLAMA_MAX_LAYERS})", at)
    nextn, at = get("nextn_predict_layers")
    if nextn is not None and blocks is not None and not 0 <= nextn <= blocks:
        raise _Bad(f"{arch}.nextn_predict_layers is {nextn}, more than the {blocks} blocks", at)
    experts, at_e = get("expert_count")
    used, at_u = get("expert_used_count")
    groups, at_g = get("expert_group_count")
    group_used, at_gu = get("expert_group_used_count")
    n_exp, n_used, n_groups, n_gused = experts or 0, used or 0, groups or 0, group_used or 0
    if not 0 <= n_exp <= LLAMA_MAX_EXPERTS:
        raise _Bad(f"{arch}.expert_count is {n_exp} (llama.cpp allows 0 to {LLAMA_MAX_EXPERTS})", at_e)
    if not 0 <= n_used <= n_exp or (n_exp > 0 and n_used == 0):
        raise _Bad(f"{arch}.expert_used_count is {n_used} with {n_exp} experts", at_u or at_e)
    if n_exp > 0:
        bad_groups = not 0 <= n_groups < n_exp or (
            n_groups > 1 and (n_exp % n_groups or not 0 < n_gused < n_groups)
        )
    else:
        bad_groups = n_groups != 0
    if bad_groups:
        raise _Bad(f"{arch}.expert_group_count {n_groups} (used {n_gused}) does not fit {n_exp} experts",
                   at_g or at_gu or at_e)
    key = f"{arch}.rope.scaling.type"
    if key in types:
        vtype, at = types[key]
        if vtype != _STR or metadata.get(key) not in ROPE_SCALING_TYPES:
            raise _Bad(f"{key} must be one of {', '.join(ROPE_SCALING_TYPES)}", at)
    # read into a 32-bit int: 4,000,000,000 came back negative ("Array length must be >= 0")
    key = f"{arch}.context_length"
    trained, at = get("context_length") if key in types and types[key][0] in _INT_TYPES else (None, 0)
    if trained is not None and not 0 < trained <= MAX_CONTEXT_LENGTH:  # (one written as a float: the catalog's to read)
        raise _Bad(f"{arch}.context_length is {trained:,} (llama.cpp allows 1 to {MAX_CONTEXT_LENGTH:,})", at)
    for name, least in (("attention.layer_norm_rms_epsilon", 0.0), ("attention.layer_norm_epsilon", 0.0),
                        ("rope.freq_base", None)):
        key = f"{arch}.{name}"
        if key not in types:
            continue
        vtype, at = types[key]
        value = metadata.get(key)
        # a NaN epsilon: "GGML_ASSERT(eps >= 0.0f) failed" aborted the process at the first
        # reply; a RoPE base of 0: every reply empty, said nowhere
        if vtype not in (_F32, _F64) or not isinstance(value, float) or not math.isfinite(value) or (
                value < least if least is not None else value <= 0):
            must = "a number of 0 or more" if least is not None else "a number above 0"
            raise _Bad(f"{key} is {value!r}; it must be {must}", at)


# --- the vocabulary, as llama_vocab::impl::load (llama-vocab.cpp) will read it

TOKEN_TYPE_BYTE = 6  # llama.h's LLAMA_TOKEN_TYPE_BYTE


def _vocab_words(r: _Reader, count: int, pos: int) -> Iterator[tuple[int, int, bytes]]:
    """(index, file offset, text) of each token as llama.cpp reads it: up to its first NUL (a
    C string), an empty one renamed ``[EMPTY_<index>]``."""
    r.pos = pos
    for i in range(count):
        at = r.pos
        word = r.string(MAX_STRING_BYTES, f"token {i} of the vocabulary").split(b"\0", 1)[0]
        yield i, at, word or b"[EMPTY_%d]" % i


_BYTE_TOKEN = re.compile(rb"<0x([0-9A-F]{2})>")


def _byte_token(word: bytes) -> int | None:
    """The byte a token spells in a SentencePiece vocabulary: ``<0x3C>`` (upper-case hex, as
    llama.cpp looks it up), or a one-byte text (its fallback)."""
    if len(word) == 1:
        return word[0]
    if len(word) == 6 and (m := _BYTE_TOKEN.fullmatch(word)):
        return int(m.group(1), 16)
    return None


def _check_vocab(
    r: _Reader, metadata: dict[str, Any], types: dict[str, tuple[int, int]],
    spans: dict[str, ValueSpan],
) -> None:
    """What llama.cpp's vocabulary loader (and the tokenizer built from it) would abort the
    whole process on, instead of returning an error:

    * two tokens with the same text (``GGML_ASSERT(id_to_token.size() == token_to_id.size())``;
      an empty token counts as ``[EMPTY_<index>]``, so it can collide with a token of that text);
    * a vocabulary of type ``no_vocab``/``none``: it loads, then the first tokenize aborts
      (``GGML_ASSERT(tokenizer && ...)``), and this app always tokenizes;
    * a byte token (type 6) in a WordPiece (``bert``) vocabulary: building the token-to-piece
      cache at load reaches ``token_to_byte``, which has ``GGML_ABORT`` for that type;
    * a SentencePiece (``llama``) vocabulary without a token for each of the 256 bytes
      (``<0x3C>``, or the byte itself): a text with a character it does not list is spelt in
      bytes, and ``byte_to_token``'s ``token_to_id.at`` throws through ``llama_tokenize``
      (``std::terminate``: the process aborts). A chat template's ``<|im_start|>`` is such a text.

    Everything else in that loader that file contents can reach throws a C++ exception, which
    llama.cpp turns into a load error (wrong key types, short score/type arrays, unknown
    tokenizer models, malformed byte tokens, bad merges, out-of-range special token ids, which
    it disables with a warning).
    """
    import numpy as np

    model = metadata.get("tokenizer.ggml.model")
    if model in ("no_vocab", "none"):
        raise _Bad(
            f"tokenizer.ggml.model is '{model}': the model has no vocabulary, so it cannot read or write text",
            types["tokenizer.ggml.model"][1],
        )
    found = spans.get("tokenizer.ggml.tokens")
    if found is not None and found.is_array and found.item_type == _STR and found.count > 1:
        count, pos = found.count, found.start
        hashes = np.empty(count, dtype=np.int64)
        spelt: set[int] = set()  # the bytes a SentencePiece vocabulary can spell a text in
        for i, _at, word in _vocab_words(r, count, pos):
            hashes[i] = hash(word)  # per-process salt: collisions cannot be crafted
            if model == "llama" and (byte := _byte_token(word)) is not None:
                spelt.add(byte)
        if model == "llama" and len(spelt) < 256:
            missing = min(set(range(256)) - spelt)
            raise _Bad(
                f"its vocabulary has no token for the byte 0x{missing:02X}, so a text with a character it does not "
                "list (an accent, an emoji) would stop the program (llama.cpp aborts); get another conversion of it",
                types["tokenizer.ggml.tokens"][1],
            )
        ordered = np.sort(hashes)
        same = np.flatnonzero(ordered[1:] == ordered[:-1])
        if same.size:
            seen: dict[bytes, int] = {}
            twins = set(ordered[same].tolist())
            for i, at, word in _vocab_words(r, count, pos):
                if hash(word) not in twins:
                    continue
                if word in seen:
                    text = word.decode("utf-8", "replace")
                    shown = text if len(text) <= 40 and text.isprintable() else repr(text[:40])
                    raise _Bad(
                        f"vocabulary token {i} ('{shown}') repeats token {seen[word]}, which makes llama.cpp abort",
                        at,
                    )
                seen[word] = i
    token_types = spans.get("tokenizer.ggml.token_type")
    if model == "bert" and token_types is not None and token_types.is_array and token_types.item_type == _I32:
        count, pos = token_types.count, token_types.start
        done = 0
        while done < count:
            n = min(count - done, _CHUNK // 4)
            r.pos = pos + 4 * done
            block = np.frombuffer(r.raw(4 * n, "the token types"), dtype="<i4")
            hits = np.flatnonzero(block == TOKEN_TYPE_BYTE)
            if hits.size:
                i = done + int(hits[0])
                raise _Bad(
                    f"vocabulary token {i} is a byte token, which a WordPiece ('bert') vocabulary "
                    "cannot have (llama.cpp aborts on it)",
                    pos + 4 * i,
                )
            done += n


# --- the architectures the installed llama.cpp knows


def llama_lib_path() -> Path | None:
    spec = importlib.util.find_spec("llama_cpp")
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        for name in ("libllama.so", "libllama.dylib", "llama.dll"):
            for candidate in (Path(folder) / "lib" / name, Path(folder) / name):
                if candidate.exists():
                    return candidate
    return None


@functools.lru_cache(maxsize=1)
def known_architectures() -> frozenset[str]:
    """Architecture names from the installed libllama's ``llm_arch_name`` (empty if unavailable)."""
    lib_path = llama_lib_path()
    if lib_path is None:
        return frozenset()
    try:
        lib = ctypes.CDLL(str(lib_path))
        fn = lib._Z13llm_arch_name8llm_arch  # const char * llm_arch_name(llm_arch)
    except (OSError, AttributeError):
        return frozenset()
    fn.restype = ctypes.c_char_p
    fn.argtypes = [ctypes.c_int]
    names: set[str] = set()
    for i in range(4096):  # the enum is dense; stop at its "(unknown)" end marker
        raw = fn(i)
        if raw is None or raw in (b"(unknown)", b"unknown"):
            break
        names.add(raw.decode("utf-8", errors="replace"))
    return frozenset(names)


@functools.lru_cache(maxsize=1)
def _library_strings() -> frozenset[bytes]:
    lib_path = llama_lib_path()
    if lib_path is None:
        return frozenset()
    data = lib_path.read_bytes()
    return frozenset(s for s in data.split(b"\0") if 0 < len(s) <= 64)


def architecture_known(arch: str) -> bool:
    names = known_architectures()
    if names:
        return arch in names
    return arch.encode("utf-8", errors="replace") in _library_strings()
