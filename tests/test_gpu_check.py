"""The GPU check kit's pieces that run without a GPU and in seconds (scripts/gpu_check): the
source trimming, the models cut into per-call parts and put back together on the other side,
the call plan against the 64 MiB limit, the wheel selection, llama.cpp's buffer lines read from
a real load, and the report's verdicts. The build and the device run are not in the suite: the
build takes minutes (`scripts/gpu-check prepare` runs it, `run --local` is the dry run)."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

from scripts.gpu_check import kit, prepare
from scripts.gpu_check.checks import llama_buffers
from scripts.gpu_check.device import Stage
from scripts.gpu_check.report import headline, markdown

MIB = 2**20


def _tree(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_trim_keeps_the_cpu_and_cuda_build_and_drops_the_rest(tmp_path: Path) -> None:
    src, dest = tmp_path / "src", tmp_path / "out"
    lc = "vendor/llama.cpp"
    _tree(src, {
        "CMakeLists.txt": "add_subdirectory(vendor/llama.cpp)\n",
        "pyproject.toml": "", "llama_cpp/__init__.py": "", "llama_cpp/lib/libold.so": "x",
        "docs/index.md": "", "tests/test_x.py": "",
        f"{lc}/CMakeLists.txt": "add_subdirectory(ggml)\nadd_subdirectory(src)\nadd_subdirectory(pocs)\n",
        f"{lc}/ggml/src/ggml.c": "", f"{lc}/ggml/src/ggml-cuda/mmq.cu": "",
        f"{lc}/ggml/src/ggml-cpu/ggml-cpu.c": "", f"{lc}/ggml/src/ggml-vulkan/vk.cpp": "",
        f"{lc}/ggml/src/ggml-metal/m.metal": "", f"{lc}/src/llama.cpp": "",
        f"{lc}/pocs/CMakeLists.txt": "", f"{lc}/models/ggml-vocab.gguf": "",
        f"{lc}/tools/CMakeLists.txt": "  add_subdirectory(llama-bench)\n  add_subdirectory(server)\n"
                                      "  add_subdirectory(${X})\n",
        f"{lc}/tools/llama-bench/CMakeLists.txt": "", f"{lc}/tools/server/server.cpp": "",
        f"{lc}/tools/ui/index.html": "", f"{lc}/vendor/miniaudio/miniaudio.h": "",
        f"{lc}/vendor/nlohmann/json.hpp": "",
    })
    counts = prepare.trim(src, dest)
    kept = {p.relative_to(dest).as_posix() for p in dest.rglob("*") if p.is_file()}
    assert f"{lc}/ggml/src/ggml-cuda/mmq.cu" in kept and f"{lc}/ggml/src/ggml-cpu/ggml-cpu.c" in kept
    assert f"{lc}/ggml/src/ggml.c" in kept and f"{lc}/tools/llama-bench/CMakeLists.txt" in kept
    assert f"{lc}/vendor/nlohmann/json.hpp" in kept and "llama_cpp/__init__.py" in kept
    for gone in (f"{lc}/ggml/src/ggml-vulkan/vk.cpp", f"{lc}/ggml/src/ggml-metal/m.metal",
                 f"{lc}/tools/server/server.cpp", f"{lc}/models/ggml-vocab.gguf", "docs/index.md",
                 f"{lc}/vendor/miniaudio/miniaudio.h", "llama_cpp/lib/libold.so", f"{lc}/pocs/CMakeLists.txt"):
        assert gone not in kept, gone
    tools = (dest / lc / "tools" / "CMakeLists.txt").read_text()
    assert "  add_subdirectory(llama-bench)" in tools
    assert "# (trimmed by gpu-check) add_subdirectory(server)" in tools
    assert "  add_subdirectory(${X})" in tools  # a variable folder is left to CMake
    top = (dest / lc / "CMakeLists.txt").read_text()
    assert "\nadd_subdirectory(src)" in top and "# (trimmed by gpu-check) add_subdirectory(pocs)" in top
    assert counts["patched_cmakelists"] == 2 and counts["dropped_files"] == 10


def test_parts_fit_every_call_under_the_limit() -> None:
    tree, core = 3 * MIB, 9 * MIB
    budget = kit.CALL_LIMIT - tree - kit.HEADROOM
    total = 98_362_432 + 253_113_024  # the two packaged models
    slices = kit.cut_parts(total, budget - core, budget)
    assert sum(size for _, _, size in slices) == total
    assert [off for _, off, _ in slices] == sorted(off for _, off, _ in slices)
    for call, _off, size in slices:
        carried = size + (core if call == 1 else 0)
        assert tree + carried + kit.HEADROOM <= kit.CALL_LIMIT
    assert len(slices) == -(-(total + core) // budget)  # no call wasted
    with pytest.raises(SystemExit, match="working tree"):
        kit.cut_parts(total, 0, kit.MIN_PART - 1)


def test_models_cut_into_parts_come_back_whole_and_damage_is_named(tmp_path: Path) -> None:
    a, b = tmp_path / "a.gguf", tmp_path / "b.gguf"
    a.write_bytes(os.urandom(3 * MIB + 17))
    b.write_bytes(os.urandom(5 * MIB + 3))
    carried = tmp_path / "carried"
    slices, parts = prepare.write_parts([("model-a", a), ("model-b", b)], 2 * MIB, 4 * MIB,
                                         carried / "parts", min_part=MIB)
    assert [p.call for p in parts] == [1, 2, 3] and sum(p.size for p in parts) == a.stat().st_size + b.stat().st_size
    manifest = kit.Manifest("0.0", "src.tar.xz", "0" * 64, [], slices, parts, 0, 0)
    core = carried / "kit"
    core.mkdir(parents=True)
    (core / kit.MANIFEST).write_text(manifest.to_json())

    # call 1 brings the kit and part 1; a damaged part 2 arrives with call 2
    stage = Stage(tmp_path / "work", local=False, core=core, parts=carried / "parts")
    part2 = carried / "parts" / parts[1].file
    good2 = part2.read_bytes()
    part3 = carried / "parts" / parts[2].file
    good3 = part3.read_bytes()
    part2.write_bytes(b"\0" + good2[1:])
    part3.unlink()
    got = stage.stash()
    assert [m.name for m in got.models] == ["model-a", "model-b"]
    assert stage.missing_parts(got) == [2, 3]  # 2 was damaged and removed, 3 never came
    assert not (stage.parts / parts[1].file).exists()
    # the next calls bring them again
    # part 2 alone: model-a (calls 1-2) is whole and can be checked with --now; model-b is not
    part2.parent.mkdir(parents=True, exist_ok=True)
    part2.write_bytes(good2)
    stage.stash()
    assert stage.missing_parts(got) == [3]
    assert stage.whole_models(got, [3]) == ["model-a"] and stage.whole_models(got, [2, 3]) == []
    assert list(stage.assemble_models(got, ["model-a"])) == ["model-a"]
    part3.parent.mkdir(parents=True, exist_ok=True)
    part3.write_bytes(good3)
    stage.stash()
    assert stage.missing_parts(got) == []
    assert stage.whole_models(got, []) == ["model-a", "model-b"]
    models = stage.assemble_models(got)
    assert models["model-a"].read_bytes() == a.read_bytes()
    assert models["model-b"].read_bytes() == b.read_bytes()


def test_device_calls_repeat_one_command_and_the_first_carries_the_kit() -> None:
    parts = [kit.Part(c, f"{c:02d}/models.{c:02d}.bin", 0, 1, "") for c in (1, 2, 3)]
    manifest = kit.Manifest("0.0", "s", "", [], [], parts, 0, 0)
    calls = kit.device_calls(manifest)
    assert [c["carry"] for c in calls] == [[".gpu-check/kit", ".gpu-check/parts/01"],
                                           [".gpu-check/parts/02"], [".gpu-check/parts/03"]]
    assert len({c["command"] for c in calls}) == 1
    assert calls[-1]["timeout_s"] == 600 and all(c["timeout_s"] < 600 for c in calls[:-1])
    assert ".gpu-check/" in (kit.ROOT / ".gitignore").read_text()


def test_wheels_cover_the_project_less_what_the_image_has() -> None:
    reqs = prepare.project_requirements()
    names = {re.split(r"[<>=!~;\[ ]", r)[0].lower() for r in reqs}
    assert not any(r.startswith("llama-cpp-python") for r in reqs)
    assert {"textual", "gguf", "starlette", "uvicorn", "platformdirs", "diskcache"} <= names
    assert prepare.wheel_name("typing_extensions-4.12.2-py3-none-any.whl") == "typing-extensions"
    assert prepare.wheel_name("PyYAML-6.0.2-cp312-cp312-manylinux_2_17_x86_64.whl") in prepare.IMAGE_PROVIDED
    assert not {"textual", "rich", "jinja2", "h11"} & prepare.IMAGE_PROVIDED  # pure Python travels


def test_llama_cpp_buffer_lines_from_a_real_load(smollm2_path: Path) -> None:
    from workstation.core.runtime import LLAMA_LOG, LoadedModel, RuntimeSettings

    LLAMA_LOG.clear()
    LoadedModel(smollm2_path, RuntimeSettings(n_ctx=2048, n_threads=2)).close()
    bufs = llama_buffers("".join(LLAMA_LOG))
    assert bufs.get("CPU_Mapped", 0) > 80 * MIB  # the weights (98 MB file)
    assert bufs.get("CPU", 0) > 40 * MIB  # K/V (45 MiB at 2048 cells, f16) and compute


def test_report_says_which_goals_are_met(tmp_path: Path) -> None:
    results = {
        "build": {"seconds": 250.0, "cuda": True},
        "steps": {
            "bench": {"ok": True, "n_prompt": 512, "n_gen": 128, "repetitions": 5, "threads": 8, "rows": [
                {"model": "m", "n_gpu_layers": 31, "total_layers": 31, "tg128_ratio": 0.97},
                {"model": "m", "n_gpu_layers": 15, "total_layers": 31, "tg128_ratio": 0.5},
            ]},
            "fit_vs_vram": {"ok": True, "cases": [
                {"model": "m", "context": 2048, "kv": "f16", "gpu_layers": 31, "total_layers": 31,
                 "fit_gpu_bytes": 100, "llama_gpu_bytes": 98, "process_bytes": 600, "fit_cpu_bytes": 0,
                 "fit_over_llama": 1.02, "fit_over_nvml_less_context": 1.07},
            ]},
            "speculative": {"ok": True, "lookup_over_off": 1.6, "tps": {"off": 100.0, "lookup": 160.0}},
        },
    }
    head = headline(results)
    assert head["decode_meets_goal"] is True  # only full offload counts
    assert head["vram_meets_goal"] is False and head["lookup_meets_goal"] is True
    md = markdown(results)
    assert "| our decode / llama-bench tg, all layers on the GPU | m: 0.970 | ≥ 0.95 | meets the goal |" in md
    assert "1.070 to 1.070 | within 5% | misses the goal" in md


@pytest.mark.skipif(not (shutil.which("cc") or shutil.which("gcc")), reason="no C compiler for the crash handler")
def test_a_crash_in_a_checked_process_says_where_it_happened(tmp_path: Path) -> None:
    """The first device run had every product step end in "exited -11" and nothing else: a crash
    now brings Python's stack and the C stack (the preloaded handler, frames named), kept in
    $OUT, and the report shows it under the step."""
    import subprocess
    import sys
    import time

    from scripts.gpu_check.checks import SMOLLM2, Context

    out = tmp_path / "out"
    out.mkdir()
    ctx = Context(work=tmp_path / "work", out=out, site=tmp_path, bin=tmp_path, models={SMOLLM2: tmp_path / "m.gguf"},
                  cuda=False, quick=True, deadline=time.monotonic() + 60)
    assert "segv-backtrace.so" in ctx.env["LD_PRELOAD"] and ctx.env["PYTHONFAULTHANDLER"] == "1"
    proc = subprocess.run([sys.executable, "-c", "import ctypes\nctypes.string_at(0)\n"], env=ctx.env,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == -11
    err = ctx.failure("workstation bench", proc.returncode, proc.stderr)
    assert str(err) == "workstation bench crashed (SIGSEGV; its stderr: crash-1.txt)"
    assert (out / "crash-1.txt").read_text() == proc.stderr
    python_part, c_part = err.crash.split("C stack (innermost first):")
    assert "in string_at" in python_part  # faulthandler's frame
    frames = c_part.strip().splitlines()
    # the crash first: the handler's frames, the re-raise and the trampolines left out (by address)
    assert not any(x in frames[0] for x in ("segv", "restore_rt", "pthread_kill", "gsignal", "raise"))
    assert any("_ctypes" in f for f in frames[:3]) and len(frames) > 3
    # faulthandler's line shares its line with a log line's piece (no line break first)
    joined = ctx.failure("probe", -11, "load_tensors: ...." + proc.stderr)
    assert joined.crash.startswith("Last lines before it:\n  load_tensors: ....") and "in string_at" in joined.crash
    ok = ctx.failure("llama-bench", 1, "usage\nerror: unknown argument: -x\n")
    assert str(ok) == "llama-bench exited 1: error: unknown argument: -x" and not ok.crash
    md = markdown({"steps": {"bench": {"ok": False, "error": str(err), "crash": err.crash}}})
    assert "## bench: where it crashed" in md and "ctypes" in md
    ctx.close()


def test_the_pp_probe_times_every_context_and_the_report_lists_them(smollm2_path: Path, tmp_path: Path) -> None:
    """pp_probe.py (the device's pp_gap step) run for real on the CPU: every variant and the
    Engine's own context timed in both rounds, the report's table built from what it printed."""
    import json
    import subprocess
    import sys

    profile = tmp_path / "p.yaml"
    profile.write_text(json.dumps({"name": "p", "model": str(smollm2_path), "context": 512, "threads": 1}))
    proc = subprocess.run(
        [sys.executable, "scripts/gpu_check/pp_probe.py", str(smollm2_path), "--n-prompt", "16", "--reps", "1",
         "--threads", "1", "--ngl", "0", "--profile", str(profile)],  # (two threads spin on a shared machine)
        capture_output=True, text=True, timeout=300, cwd=Path(__file__).resolve().parents[1],
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    data = json.loads(proc.stdout.strip().splitlines()[-1])
    from scripts.gpu_check.pp_probe import VARIANTS

    assert list(data["variants"]) == [v.name for v in VARIANTS] + ["the Engine's own context"]
    for rec in data["variants"].values():
        assert len(rec["tps"]) == 2 and all(x > 0 for x in rec["tps"])
        ms = rec["ms"][0]
        assert ms["total"] >= ms["decode"] > 0 and ms["fill"] >= 0
        rec["over_llama_bench"] = round(max(rec["tps"]) / 100.0, 3)
    md = markdown({"steps": {"pp_gap": {"ok": True, **data, "llama_bench_tps": 100.0}}})
    assert "## Where pp16 goes (llama-bench: 100 tok/s; 1 threads;" in md
    assert "| the Engine's own context |" in md
