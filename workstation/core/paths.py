"""Where things live: the checkout's models/ and profiles/, and the user's data directory."""

from __future__ import annotations

import os
from pathlib import Path

from platformdirs import user_data_dir

PACKAGE_DIR = Path(__file__).resolve().parent.parent
PROJECT_DIR = PACKAGE_DIR.parent


def models_dir() -> Path:
    """The folder GGUF models are kept in (``WORKSTATION_MODELS`` overrides it)."""
    return Path(os.environ.get("WORKSTATION_MODELS", PROJECT_DIR / "models"))


def profiles_dir() -> Path:
    """The folder of shipped profiles (``WORKSTATION_PROFILES`` overrides it)."""
    return Path(os.environ.get("WORKSTATION_PROFILES", PROJECT_DIR / "profiles"))


def data_dir() -> Path:
    """Per-user data: conversations, bench results (``WORKSTATION_DATA`` overrides it)."""
    path = Path(os.environ.get("WORKSTATION_DATA") or user_data_dir("workstation", appauthor=False))
    path.mkdir(parents=True, exist_ok=True)
    return path


def cache_dir() -> Path:
    """Downloads and build caches shared by checkouts (``XDG_CACHE_HOME``)."""
    base = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    path = base / "workstation"
    path.mkdir(parents=True, exist_ok=True)
    return path
