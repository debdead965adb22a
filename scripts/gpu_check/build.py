"""Build llama-cpp-python from the kit's trimmed source: one CMake build that makes the Python
package's libraries and llama.cpp's own tools (llama-bench, llama-batched-bench,
llama-speculative-simple) from the same objects, so the CUDA kernels compile once.

It is llama-cpp-python's own CMake project (what `pip install` drives through scikit-build-core),
with its install step pointed at a site folder; the package's Python files are copied beside
the libraries with a small dist-info, so `import llama_cpp` and its version work from there.

Stdlib only (runs on the device before any wheel is installed).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tarfile
import time
from pathlib import Path
from typing import Any

TOOLS = ("llama-bench", "llama-batched-bench", "llama-speculative-simple")
NO_AMX = "-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"  # llama.cpp issue 20824 (see DESIGN.md)


def cuda_arch() -> str:
    """The first GPU's compute capability as CMake writes it (9.0 -> 90); 'native' if unknown."""
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=compute_cap", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=30).stdout
        cap = out.strip().splitlines()[0].strip()
        major, minor = cap.split(".")
        return f"{int(major)}{int(minor)}"
    except (OSError, IndexError, ValueError, subprocess.SubprocessError):
        return "native"


def cpu_has_amx() -> bool:
    try:
        return " amx_tile" in Path("/proc/cpuinfo").read_text()
    except OSError:
        return False


def _first(patterns: list[str], roots: list[Path]) -> Path | None:
    for root in roots:
        for pattern in patterns:
            hits = sorted(root.glob(pattern))
            if hits:
                return hits[0]
    return None


def cuda_library_args() -> tuple[list[str], list[str], list[str]]:
    """(CMake arguments, library folders the programs need at run time, notes) for the CUDA
    libraries CMake's FindCUDAToolkit would miss. A toolkit assembled from pip wheels (as on this
    project's machines) has nvcc but neither cuBLAS nor the driver's stub; cuBLAS then comes from
    the Python packages (PyTorch's nvidia-cublas: nvidia/cu13/lib and include), libcuda from
    the driver's folder, and without one the build leaves out the VMM pool (GGML_CUDA_NO_VMM)."""
    toolkits = [Path(p) for p in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda") if p]
    args: list[str] = []
    lib_dirs = [str(t / "lib64") for t in toolkits if (t / "lib64").is_dir()]  # libcudart at run time
    notes: list[str] = []
    if _first(["lib64/libcublas.so*", "targets/*/lib/libcublas.so*"], toolkits) is None:
        import sys

        extra = [Path(p) for p in os.environ.get("GPU_CHECK_CUBLAS_ROOT", "").split(os.pathsep) if p]
        sites = extra + [Path(p) / "nvidia" for p in sys.path if p and (Path(p) / "nvidia").is_dir()]
        lib = _first(["lib/libcublas.so.*", "*/lib/libcublas.so.*"], sites)
        lt = _first(["lib/libcublasLt.so.*", "*/lib/libcublasLt.so.*"], sites)
        inc = _first(["include/cublas_v2.h", "*/include/cublas_v2.h"], sites)
        if lib and lt and inc:
            args += [f"-DCUDA_cublas_LIBRARY={lib}", f"-DCUDA_cublasLt_LIBRARY={lt}",
                     f"-DCMAKE_CUDA_FLAGS=-I{inc.parent}"]
            lib_dirs.append(str(lib.parent))
            notes.append(f"cuBLAS from the Python packages: {lib.parent}")
        else:
            notes.append("no cuBLAS found in the toolkit or the Python packages")
    drivers = [Path("/usr/local/nvidia/lib64"), Path("/usr/lib/x86_64-linux-gnu"), Path("/usr/lib64"),
               *(t / "lib64" / "stubs" for t in toolkits), *(t / "targets/x86_64-linux/lib/stubs" for t in toolkits)]
    if _first(["libcuda.so", "stubs/libcuda.so"], [t / "lib64" for t in toolkits]) is None:
        driver = _first(["libcuda.so", "libcuda.so.1"], drivers)
        if driver is not None:
            args.append(f"-DCUDA_cuda_driver_LIBRARY={driver}")
        else:
            args.append("-DGGML_CUDA_NO_VMM=ON")
            notes.append("no libcuda to link: built without the VMM memory pool (GGML_CUDA_NO_VMM)")
    return args, lib_dirs, notes


def cmake_args(site: Path, prefix: Path, cuda: bool, arch: str | None = None) -> list[str]:
    args = [
        "-DCMAKE_BUILD_TYPE=Release",
        "-DLLAVA_BUILD=OFF",  # the multimodal library: the product does not use it
        "-DLLAMA_BUILD_TOOLS=ON",  # only the tools the kit keeps are in the trimmed source
        "-DLLAMA_BUILD_EXAMPLES=ON",
        "-DLLAMA_BUILD_TESTS=OFF",
        "-DLLAMA_BUILD_SERVER=OFF",
        f"-DSKBUILD_PLATLIB_DIR={site}",
        f"-DCMAKE_INSTALL_PREFIX={prefix}",
        f"-DGGML_CUDA={'ON' if cuda else 'OFF'}",
    ]
    if cuda:
        args.append(f"-DCMAKE_CUDA_ARCHITECTURES={arch or cuda_arch()}")
        args += cuda_library_args()[0]
    if cpu_has_amx():
        args += [f"-DCMAKE_C_FLAGS={NO_AMX}", f"-DCMAKE_CXX_FLAGS={NO_AMX}"]
    if shutil.which("ninja"):
        args.insert(0, "-GNinja")
    return args


def unpack(archive: Path, dest: Path) -> Path:
    """The archive's single top folder under ``dest`` (unpacked once per archive)."""
    stamp = dest / ".unpacked"
    if stamp.exists() and stamp.read_text() == archive.name:
        return next(p for p in dest.iterdir() if p.is_dir())
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    with tarfile.open(archive) as tar:
        tar.extractall(dest, filter="data")
    stamp.write_text(archive.name)
    return next(p for p in dest.iterdir() if p.is_dir())


def build(src: Path, work: Path, *, cuda: bool, version: str, jobs: int | None = None,
          configure_only: bool = False, log: Any = None, arch: str | None = None,
          targets: list[str] | None = None) -> dict[str, Any]:
    """Configure, build (``targets``, default all) and install into ``work/site``; returns what
    was done and how long it took. A second call with the same source and flags is a no-op."""
    site, prefix, bdir = work / "site", work / "prefix", work / "build"
    args = cmake_args(site, prefix, cuda, arch)
    extra_libs, notes = cuda_library_args()[1:] if cuda else ([], [])
    what: dict[str, Any] = {"src": str(src), "args": args, "configure_only": configure_only}
    if targets:
        what["targets"] = targets
    key = json.dumps(what)
    done = work / "build.json"
    if done.exists():
        prev = json.loads(done.read_text())
        if prev.get("key") == key and prev.get("rc") == 0:
            return {**prev, "cached": True}
    jobs = jobs or os.cpu_count() or 2
    t0 = time.monotonic()
    steps: list[tuple[str, list[str]]] = [("configure", ["cmake", "-S", str(src), "-B", str(bdir), *args])]
    if targets:
        steps.append(("build", ["cmake", "--build", str(bdir), "-j", str(jobs), "--target", *targets]))
    elif not configure_only:
        steps += [("build", ["cmake", "--build", str(bdir), "-j", str(jobs)]),
                  ("install", ["cmake", "--install", str(bdir)])]
    timings: dict[str, float] = {}
    rc = 0
    for name, cmd in steps:
        t = time.monotonic()
        print(f"[gpu-check] {name}: {' '.join(cmd)}", file=log, flush=True)
        rc = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT).returncode
        timings[f"{name}_s"] = round(time.monotonic() - t, 1)
        if rc != 0:
            break
    result: dict[str, Any] = {
        "key": key, "rc": rc, "failed_step": None if rc == 0 else name, "cuda": cuda,
        "cmake_args": args, "jobs": jobs, "seconds": round(time.monotonic() - t0, 1), **timings,
        "configure_only": configure_only or bool(targets), "lib_dirs": extra_libs, "notes": notes,
    }
    if rc == 0 and not configure_only and not targets:
        _package(src, site, version)
        result["bin"] = str(tool_dir(bdir))
        result["tools"] = {t: (tool_dir(bdir) / t).exists() for t in TOOLS}
    done.write_text(json.dumps(result, indent=2))
    return result


def tool_dir(bdir: Path) -> Path:
    for cand in (bdir / "bin", bdir / "vendor" / "llama.cpp" / "bin"):
        if (cand / "llama-bench").exists():
            return cand
    return bdir / "bin"


def _package(src: Path, site: Path, version: str) -> None:
    """The Python files beside the installed libraries, and a dist-info naming the version."""
    pkg = site / "llama_cpp"
    for path in (src / "llama_cpp").rglob("*.py"):
        dest = pkg / path.relative_to(src / "llama_cpp")
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, dest)
    info = site / f"llama_cpp_python-{version}.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: llama_cpp_python\nVersion: {version}\n", encoding="utf-8")
    (info / "INSTALLER").write_text("gpu-check\n", encoding="utf-8")
    (info / "RECORD").write_text("", encoding="utf-8")
