"""Models on disk: find a model by catalog name or path, and check a GGUF before loading it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from workstation.core.paths import models_dir


def catalog_entries(directory: Path | None = None) -> list[dict[str, Any]]:
    """The known models listed in ``models/catalog.yaml``."""
    path = (directory or models_dir()) / "catalog.yaml"
    if not path.exists():
        return []
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    return list(data.get("models") or [])


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
    return direct


def check_gguf(path: Path) -> None:
    """Refuse a file that is missing, damaged or hostile before llama.cpp sees it."""
    from workstation.core.gguf_check import preflight

    preflight(path)
