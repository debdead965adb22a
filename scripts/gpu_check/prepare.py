"""`scripts/gpu-check prepare`: make the kit here, on the CPU machine, and prove its source builds.

1. llama-cpp-python's source at the pinned version (pip download, hash-pinned), trimmed to what
   a CUDA + CPU build of its libraries and three llama.cpp tools needs, packed as one archive;
2. wheels for Python 3.12 / manylinux x86-64 of every dependency the device image lacks;
3. the packaged models as one byte stream cut into per-call parts;
4. a CPU build of the trimmed archive here (cached), and, where nvcc is here, a CUDA configure.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

from . import build as builder
from .kit import (
    CALL_LIMIT,
    CORE,
    HEADROOM,
    KIT,
    MANIFEST,
    MIN_PART,
    PARTS,
    ROOT,
    Manifest,
    ModelSlice,
    Part,
    cut_parts,
    device_calls,
    folder_bytes,
    llama_version,
    part_folder,
    sha256_of,
    tree_bytes,
)

# sha256 of llama-cpp-python's source release on PyPI, per version (pip checks it)
SDIST_SHA256 = {"0.3.36": "832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e"}

# --- trimming ----------------------------------------------------------------------------------
# Paths under the source's top folder that are kept; everything else is dropped. A folder keeps
# everything below it except what DROP names.
KEEP = (
    "CMakeLists.txt", "pyproject.toml", "LICENSE.md", "README.md", "llama_cpp",
    "vendor/llama.cpp/CMakeLists.txt", "vendor/llama.cpp/LICENSE", "vendor/llama.cpp/licenses",
    "vendor/llama.cpp/cmake", "vendor/llama.cpp/include", "vendor/llama.cpp/src",
    "vendor/llama.cpp/common", "vendor/llama.cpp/ggml", "vendor/llama.cpp/vendor",
    "vendor/llama.cpp/tools/CMakeLists.txt", "vendor/llama.cpp/tools/llama-bench",
    "vendor/llama.cpp/tools/batched-bench",
    "vendor/llama.cpp/examples/CMakeLists.txt", "vendor/llama.cpp/examples/speculative-simple",
)
GGML_BACKENDS_KEPT = ("ggml-cpu", "ggml-cuda")
DROP = (
    "vendor/llama.cpp/vendor/miniaudio",  # audio for the multimodal tools
    "vendor/llama.cpp/vendor/stb",  # images for the multimodal tools
    "llama_cpp/lib",  # built libraries of whoever packed the source, if any
)
_SUBDIR = re.compile(r"^(\s*)add_subdirectory\(\s*([A-Za-z0-9_./-]+)\s*\)", re.M)


def _kept(rel: str) -> bool:
    if any(rel == d or rel.startswith(d + "/") for d in DROP):
        return False
    parts = rel.split("/")
    if len(parts) > 5 and parts[:4] == ["vendor", "llama.cpp", "ggml", "src"] and parts[4].startswith("ggml-"):
        return parts[4] in GGML_BACKENDS_KEPT  # a backend's folder: only the two we build
    return any(rel == k or rel.startswith(k + "/") for k in KEEP)


def trim(src: Path, dest: Path) -> dict[str, int]:
    """Copy the kept files of ``src`` to ``dest`` and comment out every ``add_subdirectory(X)``
    whose folder was dropped; returns counts."""
    kept = dropped = 0
    for path in sorted(src.rglob("*")):
        if not path.is_file() or path.is_symlink():
            continue
        rel = path.relative_to(src).as_posix()
        if _kept(rel):
            target = dest / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, target)
            kept += 1
        else:
            dropped += 1
    patched = 0
    for cml in dest.rglob("CMakeLists.txt"):
        text = cml.read_text(encoding="utf-8")

        def repl(m: re.Match[str], folder: Path = cml.parent) -> str:
            if (folder / m.group(2)).is_dir():
                return m.group(0)
            return f"{m.group(1)}# (trimmed by gpu-check) {m.group(0).strip()}"

        new = _SUBDIR.sub(repl, text)
        if new != text:
            cml.write_text(new, encoding="utf-8")
            patched += 1
    return {"kept_files": kept, "dropped_files": dropped, "patched_cmakelists": patched}


def fetch_source(version: str, dest: Path) -> Path:
    """llama-cpp-python's sdist, by pip with its hash pinned (pip's cache makes it fast)."""
    digest = SDIST_SHA256.get(version)
    if digest is None:
        raise SystemExit(f"No sha256 is pinned for llama-cpp-python {version}; add it to SDIST_SHA256.")
    dest.mkdir(parents=True, exist_ok=True)
    have = list(dest.glob(f"llama_cpp_python-{version}.tar.gz"))
    if have and sha256_of(have[0]) == digest:
        return have[0]
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as req:
        req.write(f"llama-cpp-python=={version} --hash=sha256:{digest}\n")
    try:
        _pip(["download", "-q", "--no-deps", "--no-binary", ":all:", "--require-hashes",
              "-r", req.name, "-d", str(dest)])
    finally:
        Path(req.name).unlink()
    return dest / f"llama_cpp_python-{version}.tar.gz"


def make_source_archive(sdist: Path, version: str, work: Path, out_dir: Path) -> tuple[Path, dict[str, int]]:
    unpacked = work / "sdist"
    if unpacked.exists():
        shutil.rmtree(unpacked)
    unpacked.mkdir(parents=True)
    with tarfile.open(sdist) as tar:
        tar.extractall(unpacked, filter="data")
    top = next(unpacked.iterdir())
    name = f"llama-cpp-python-{version}-trimmed"
    trimmed = work / name
    if trimmed.exists():
        shutil.rmtree(trimmed)
    counts = trim(top, trimmed)
    out_dir.mkdir(parents=True, exist_ok=True)
    archive = out_dir / f"{name}.tar.xz"
    tmp = archive.with_suffix(".tmp")
    with tarfile.open(tmp, "w:xz", preset=6) as tar:
        for path in sorted(trimmed.rglob("*")):
            if path.is_file():
                info = tar.gettarinfo(str(path), arcname=f"{name}/{path.relative_to(trimmed).as_posix()}")
                info.mtime, info.uid, info.gid, info.uname, info.gname = 0, 0, 0, "", ""
                with path.open("rb") as f:
                    tar.addfile(info, f)
    tmp.replace(archive)
    shutil.rmtree(unpacked)
    shutil.rmtree(trimmed)
    return archive, counts


# --- wheels ------------------------------------------------------------------------------------
# Compiled packages the device image has (KINDS.md, "Python packages already there"): used from
# the image, never carried; their version floors are checked there before the build starts.
# Every pure-Python dependency travels, so textual's floors (rich, pygments, ...) hold whatever
# versions the image has.
IMAGE_PROVIDED = {"numpy", "psutil", "pyyaml", "lxml", "markupsafe", "charset-normalizer",
                  # the sizing report's charts: 24 MiB of wheels that would take a call's room
                  "matplotlib", "pillow", "fonttools", "kiwisolver", "contourpy"}
PLATFORM_TAGS = ("manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_17_x86_64",
                 "manylinux2014_x86_64", "manylinux1_x86_64")


def _pip(args: list[str]) -> None:
    proc = subprocess.run([sys.executable, "-m", "pip", *args], capture_output=True, text=True)
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise SystemExit(f"pip {args[0]} failed: {last}")


def project_requirements() -> list[str]:
    """The workstation package's dependencies (pyproject.toml), without llama-cpp-python (built
    from source), plus llama-cpp-python's own pure-Python ones."""
    import tomllib

    data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    reqs = [r for r in data["project"]["dependencies"] if not r.startswith("llama-cpp-python")]
    return [*reqs, "diskcache>=5.6.1"]


def wheel_name(filename: str) -> str:
    return re.sub(r"[-_.]+", "-", filename.split("-")[0]).lower()


def fetch_wheels(dest: Path) -> list[str]:
    """Wheels for CPython 3.12 on manylinux x86-64 of the requirements and everything they need,
    minus what the device image has; returns the file names kept."""
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    args = ["download", "-q", "--only-binary=:all:", "--python-version", "3.12", "--implementation",
            "cp", "-d", str(dest)]
    for tag in PLATFORM_TAGS:
        args += ["--platform", tag]
    _pip([*args, *project_requirements()])
    kept = []
    for whl in sorted(dest.glob("*.whl")):
        if wheel_name(whl.name) in IMAGE_PROVIDED:
            whl.unlink()
        else:
            kept.append(whl.name)
    return kept


# --- models ------------------------------------------------------------------------------------
def model_stream(names: list[str]) -> list[tuple[str, Path]]:
    sys.path.insert(0, str(ROOT))
    from workstation.core.packaged_models import ensure

    return [(name, ensure(name)) for name in names]


def write_parts(models: list[tuple[str, Path]], first_budget: int, budget: int,
                parts_dir: Path = PARTS, min_part: int = MIN_PART) -> tuple[list[ModelSlice], list[Part]]:
    """Cut the models, one after the other, into ``parts_dir/NN/models.NN.bin``."""
    slices, offset = [], 0
    for name, path in models:
        size = path.stat().st_size
        slices.append(ModelSlice(name, path.name, offset, size, sha256_of(path)))
        offset += size
    if parts_dir.exists():
        shutil.rmtree(parts_dir)
    parts = []
    files = [open(p, "rb") for _, p in models]  # noqa: SIM115 - closed below
    try:
        idx = 0
        for call, off, size in cut_parts(offset, first_budget, budget, min_part):
            folder = parts_dir / part_folder(call)
            folder.mkdir(parents=True, exist_ok=True)
            fname = f"models.{call:02d}.bin"
            with (folder / fname).open("wb") as out:
                left = size
                while left:
                    chunk = files[idx].read(min(left, 1 << 20))
                    if not chunk:
                        idx += 1
                        continue
                    out.write(chunk)
                    left -= len(chunk)
            parts.append(Part(call, f"{part_folder(call)}/{fname}", off, size, sha256_of(folder / fname)))
    finally:
        for f in files:
            f.close()
    return slices, parts


# --- the whole step ----------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="scripts/gpu-check prepare", description=__doc__.split("\n")[0])
    ap.add_argument("--models", default="smollm2-135m-instruct-q4_1,gemma-3-270m-q4_k_m",
                    help="packaged models to carry, comma-separated, in the order they travel")
    ap.add_argument("--skip-build", action="store_true", help="do not build the trimmed source here")
    ap.add_argument("--jobs", type=int, help="build jobs (default: all cores)")
    args = ap.parse_args(argv)
    version = llama_version()
    t0 = time.monotonic()
    KIT.mkdir(exist_ok=True)
    scratch = KIT / "scratch"
    scratch.mkdir(exist_ok=True)
    if CORE.exists():
        shutil.rmtree(CORE)
    CORE.mkdir()
    say(f"llama-cpp-python {version}: source")
    sdist = fetch_source(version, KIT / "dl")
    archive, counts = make_source_archive(sdist, version, scratch, CORE)
    say(f"  trimmed: {counts['kept_files']} files kept, {counts['dropped_files']} dropped; "
        f"{archive.stat().st_size / 2**20:.1f} MiB packed")
    say("wheels for Python 3.12 on the device")
    wheels = fetch_wheels(CORE / "wheels")
    say(f"  {len(wheels)} wheels, {folder_bytes(CORE / 'wheels') / 2**20:.1f} MiB")
    names = [n.strip() for n in args.models.split(",") if n.strip()]
    models = model_stream(names)
    tree = tree_bytes()
    core = folder_bytes(CORE) + 64 * 1024  # the manifest
    budget = CALL_LIMIT - tree - HEADROOM
    slices, parts = write_parts(models, budget - core, budget)
    manifest = Manifest(version, archive.name, sha256_of(archive), wheels, slices, parts, tree, core)
    cpu = {}
    if not args.skip_build:
        cpu = cpu_build(archive, version, args.jobs)
    manifest.cpu_build = cpu
    (CORE / MANIFEST).write_text(manifest.to_json(), encoding="utf-8")
    for folder in {p.file.split("/")[0] for p in parts}:
        shutil.copy2(CORE / MANIFEST, PARTS / folder / MANIFEST)
    say(f"kit ready in {time.monotonic() - t0:.0f} s: {KIT}")
    print_plan(manifest)
    return 0 if not cpu or cpu.get("rc") == 0 else 1


H200_ARCH = "90"  # the lent GPUs are H200s (compute capability 9.0)
# one kernel file compiled here with the device's flags: proves nvcc, cuBLAS's headers and the
# trimmed CUDA sources work together without an hour of compiling
CUDA_PROBE = "vendor/llama.cpp/ggml/src/ggml-cuda/CMakeFiles/ggml-cuda.dir/acc.cu.o"


def cpu_build(archive: Path, version: str, jobs: int | None) -> dict[str, object]:
    """Build the trimmed archive for the CPU here (cached per archive), and configure it with
    CUDA where this machine has nvcc (configure only: compiling the kernels takes an hour on 2 cores)."""
    work = KIT / "cpu-work"
    work.mkdir(exist_ok=True)
    src = builder.unpack(archive, work / "src")
    say("CPU build of the trimmed source (cached; 5-10 minutes the first time on 2 cores)")
    with (work / "build.log").open("a") as log:
        res = builder.build(src, work, cuda=False, version=version, jobs=jobs, log=log)
    say(f"  rc {res['rc']} in {res['seconds']} s" + (" (cached)" if res.get("cached") else "")
        + (f"; failed at {res['failed_step']}, see {work / 'build.log'}" if res["rc"] else ""))
    out: dict[str, object] = {"rc": res["rc"], "seconds": res["seconds"], "tools": res.get("tools")}
    if shutil.which("nvcc") and res["rc"] == 0:
        cwork = KIT / "cuda-configure"
        cwork.mkdir(exist_ok=True)
        with (cwork / "build.log").open("a") as log:
            cres = builder.build(src, cwork, cuda=True, version=version, log=log, arch=H200_ARCH,
                                 targets=[CUDA_PROBE] if shutil.which("ninja") else None, configure_only=True)
        say(f"  CUDA for sm_{H200_ARCH} with nvcc here (configure and one kernel file): rc {cres['rc']}"
            + "".join(f"; {n}" for n in cres.get("notes") or [])
            + (f"; see {cwork / 'build.log'}" if cres["rc"] else ""))
        out["cuda_probe"] = {k: cres.get(k) for k in ("rc", "failed_step", "seconds", "notes")}
    return out


def print_plan(manifest: Manifest) -> None:
    import json

    say(f"device calls: {manifest.calls} (tree {manifest.tree_bytes / 2**20:.1f} MiB travels each time)")
    for call in device_calls(manifest):
        print(json.dumps(call))


def say(msg: str) -> None:
    print(f"[gpu-check] {msg}", file=sys.stderr, flush=True)
