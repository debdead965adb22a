"""The model catalog (``models/catalog.yaml``), a model's name or path -> its file (in models/ or
the folders ``WORKSTATION_MODEL_DIRS`` adds), and sizes and parameter counts as every screen and
command says them. A model's header is read in ``model_info``, the installed models are listed
and added in ``installed_models``, and a model is downloaded in ``model_download``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from workstation.core.errors import WorkstationError
from workstation.core.paths import extra_model_dirs, models_dir, typed_path


# --- catalog.yaml ------------------------------------------------------------------------------
def catalog_entries(directory: Path | None = None) -> list[dict[str, Any]]:
    """The known models listed in ``models/catalog.yaml``."""
    return [dict(entry) for entry in catalog_as_read(directory)[1]]


def catalog_as_read(directory: Path | None = None) -> tuple[tuple[Any, ...] | None, list[dict[str, Any]]]:
    """The catalog's entries as parsed, never to be changed by the caller, with the key of the
    file's read they came from (the same key: the same entries; ``catalog_entries`` copies them)."""
    path = (directory or models_dir()) / "catalog.yaml"
    if not path.exists():
        from workstation.core.paths import PROJECT_DIR

        path = PROJECT_DIR / "models" / "catalog.yaml"
        if not path.exists():
            return None, []
    from workstation.core.settings_file import YamlError, load_yaml

    global _catalog_read
    try:
        stat = path.stat()
        key = (str(path), stat.st_ino, stat.st_mtime_ns, stat.st_ctime_ns, stat.st_size)
        read_key, entries = _catalog_read  # one tuple: a thread never pairs a key with other entries
        if read_key != key:  # parsed once per change of the file (``size`` asks 250 times)
            data = load_yaml(path.read_text(encoding="utf-8")) or {}
            if not isinstance(data, dict) or not isinstance(data.get("models") or [], list):
                raise WorkstationError(f"The model catalog {path} must be a mapping with a list under 'models'.")
            entries = [entry for entry in data.get("models") or [] if isinstance(entry, dict)]
            _catalog_read = (key, entries)
    except (OSError, UnicodeDecodeError) as err:
        raise WorkstationError(f"The model catalog {path} cannot be read ({err}).") from None
    except YamlError as err:
        raise WorkstationError(f"The model catalog {path} {err}") from None
    return key, entries


# the catalog file last parsed (path, inode, mtime, ctime, size) and its entries
_catalog_read: tuple[tuple[Any, ...] | None, list[dict[str, Any]]] = (None, [])


def catalog_entry(name: str) -> dict[str, Any] | None:
    for entry in catalog_entries():
        if entry.get("name") == name:
            return entry
    return None


def model_dirs() -> list[Path]:
    """``models/`` and any extra folders in ``WORKSTATION_MODEL_DIRS`` (os.pathsep-separated)."""
    return [models_dir(), *extra_model_dirs()]


def resolve_model_path(ref: str) -> Path:
    """A catalog name, a file name under models/, or a path -> the GGUF's path (may not exist)."""
    as_path = typed_path(ref)
    if as_path.suffix == ".gguf" and (as_path.is_absolute() or as_path.exists() or "/" in ref):
        return as_path
    if "/" in ref and as_path.exists():  # a file or folder named by its path: the GGUF check says what it is
        return as_path  # (a folder was looked for as FOLDER.gguf: "/tmp/p.gguf does not exist")
    for entry in catalog_entries():
        if entry.get("name") == ref:  # (a catalog model on the office's shared drive runs from there too:
            return _in_model_dirs(models_dir() / str(entry["file"]))  # 'models list' listed it, profiles did not)
    direct = models_dir() / ref
    if direct.suffix != ".gguf":
        direct = direct.with_name(direct.name + ".gguf")
    return _in_model_dirs(direct)


def _in_model_dirs(path: Path) -> Path:
    """``path`` in models/, else the same file in a ``WORKSTATION_MODEL_DIRS`` folder that has it
    (else ``path``: where a download puts it)."""
    if not path.exists():
        for extra in model_dirs()[1:]:
            if (extra / path.name).exists():
                return extra / path.name
    return path


# What the app says "GB", "MB" and "KB" are, everywhere a person reads a size (F4, downloads, the
# fit verdicts, a full disk): binary units, as Windows' Explorer and Task Manager count them and as
# memory and cards are sold (a "24 GB" card has 24 GiB). F4 said a model was "4.92 GB" (decimal)
# and the verdict beside it "needs 4.6 GB" (binary) of the same file.
GB = 1024**3
MB = 1024**2
KB = 1024


def gb(n: float) -> str:
    """A number of bytes as a figure of GB, one decimal under 10 (4.6, 0.3), none from 10 on (24):
    ``human_bytes``'s GB, and a table's column headed in GB. A sentence takes ``human_bytes``
    whole, its unit with it: the fit verdicts wrote "GB" after this and said "needs 0.3 GB" one
    line above "needs 282 MB"."""
    return f"{n / GB:.1f}" if round(n / GB, 1) < 10 else f"{n / GB:.0f}"


def stated_bytes(approx_gb: float) -> float:
    """catalog.yaml's ``approx_size_gb`` in bytes: decimal GB, as the Hugging Face pages say it."""
    return float(approx_gb) * 1e9


def human_bytes(n: float) -> str:
    """A number of bytes as every screen and command says it, in binary units as Windows counts a
    file and a card's memory is sold: 4.6 GB, 12 GB, 772 MB, 7 KB, 512 B (three figures at most:
    one decimal only for a GB under 10, as the fit verdicts write it)."""
    units = (("GB", GB), ("MB", MB), ("KB", KB), ("B", 1))
    at = next((i for i, (_, scale) in enumerate(units) if n >= scale), len(units) - 1)
    if at and round(n / units[at][1]) >= 1000:  # 1015 MB (F5's RAM used) is 1.0 GB, not four figures
        at -= 1
    unit, scale = units[at]
    return f"{gb(n)} GB" if unit == "GB" else f"{n / scale:.0f} {unit}"


def file_size_text(n: int | None, approx_gb: float | None = None) -> str:
    """A file's size as ``human_bytes`` says it (4.6 GB, 351 MB, 12 KB); a catalog model's
    approximate size ("~4.6 GB") where the exact one is not known; else "?"."""
    if n:
        return human_bytes(n)
    if not approx_gb:
        return "?"
    # in the units an exact size of it would take (~772 MB beside 94 MB, not ~0.75 GB and ~0.4 GB)
    return "~" + human_bytes(stated_bytes(approx_gb))


def params_text(n: int) -> str:
    """A parameter count as model names write it: 135M, 1.5B, 8.0B (the one way the app and the
    commands say it: F4, ``models list``, the small-model warnings, the bench table)."""
    return f"{n / 1e9:.1f}B" if round(n / 1e6) >= 1000 else f"{n / 1e6:.0f}M"  # (Gemma 3 1B's 999.9M: 1.0B)


# the types 'models quantize' makes, from the most bits to the fewest (llama.cpp's
# LLAMA_FTYPE_MOSTLY_<NAME>; quantize.py maps them), and a name's quantization suffix
QUANTIZE_TYPES = ("f16", "bf16", "q8_0", "q6_k", "q5_k_m", "q5_0", "q4_k_m", "q4_k_s", "q4_1", "q4_0",
                  "iq4_nl", "q3_k_m", "q2_k")
UNQUANTIZED = frozenset({"F32", "F16", "BF16"})  # file types that lost nothing to quantization
QUANT_SUFFIX = re.compile(r"[-_.](i?q\d\w*|b?f16|f32)$", re.IGNORECASE)


def quantized_copy_name(src: Path, file_type: str, type_name: str) -> str:
    """The file name ``models quantize`` gives a copy of ``src`` (whose type is ``file_type``)
    at ``type_name``: the source's name without its type, then ``.Q8_0.gguf`` (say)."""
    stem = src.stem
    for suffix in (f".{file_type}", f"-{file_type}", f"_{file_type}"):
        if stem.lower().endswith(suffix.lower()):
            stem = stem[: -len(suffix)]
            break
    return f"{stem}.{type_name.upper()}.gguf"
