"""A folder of cache files kept to a byte budget: the least recently used go first.

Used by the KV states on disk (``kv_state.py``) and the KL-divergence reference logits
(``kld.py``); a file's modification time is its last use (readers touch the files they use).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from workstation.core.errors import WorkstationError


def budget_from_env(name: str, default_mb: int) -> int:
    """Bytes from the environment variable ``name`` (in MiB), else ``default_mb``; a value that
    is not a whole number of 0 and up is refused in a sentence (it was ignored, or -5 was 0)."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default_mb * 2**20
    try:
        mb = int(raw)
    except ValueError:
        mb = -1
    if mb < 0:
        raise WorkstationError(said=[("budget.not_a_size", {"name": name, "raw": raw, "default": str(default_mb)})])
    return mb * 2**20


def evict_least_recent(folder: Path, pattern: str, budget: int, keep: Path | None = None,
                       first: Callable[[Path], bool] | None = None) -> list[Path]:
    """Remove the least recently used files matching ``pattern`` until those left fit in
    ``budget`` bytes; ``keep`` (the file just written) stays even alone over it; those ``first``
    says go before all others (least recently used first among them). The paths removed."""
    files = []
    for path in folder.glob(pattern):
        try:
            st = path.stat()
        except OSError:
            continue
        files.append((first is None or not first(path), st.st_mtime, st.st_size, path))
    total = sum(size for _, _, size, _ in files)
    removed = []
    for _, _, size, path in sorted(files):
        if total <= budget:
            break
        if path == keep:
            continue
        try:
            path.unlink()
        except FileNotFoundError:  # removed or renamed since the listing (a state restored meanwhile:
            continue  # ``*.reused.kv``): not freed, so the next one goes
        total -= size
        removed.append(path)
    return removed
