"""The measurements of the GPU check, each through the product's public surface: `workstation
hw/fit/bench/serve/chat/models` as subprocesses, bench/load.py (which starts `workstation serve`),
the TUI through Textual's headless pilot (tui_turn.py), and llama.cpp's own tools built from the
same source for the same cases. One step failing is recorded and the next one runs."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .crash import build_shim, excerpt, signal_name
from .kit import ROOT

SMOLLM2 = "smollm2-135m-instruct-q4_1"
GEMMA = "gemma-3-270m-q4_k_m"
MIB = 2**20
_BUFFER = re.compile(r"(\S+) (model|KV|compute|output|RS) buffer size =\s*([\d.]+) MiB")
_SPEC = re.compile(r"decoded\s+(\d+) tokens in\s+([\d.]+) seconds, speed:\s+([\d.]+) t/s")
_ACCEPT = re.compile(r"accept\s*=\s*([\d.]+)%")


@dataclass
class Context:
    work: Path
    out: Path
    site: Path
    bin: Path
    models: dict[str, Path]
    cuda: bool
    quick: bool
    deadline: float
    lib_dirs: list[str] = field(default_factory=list)  # e.g. cuBLAS from the Python packages
    results: dict[str, Any] = field(default_factory=lambda: {"steps": {}})
    procs: list[subprocess.Popen] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.profiles = self.work / "profiles"
        self.profiles.mkdir(parents=True, exist_ok=True)
        (self.work / "data").mkdir(exist_ok=True)
        self.env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(self.site), str(ROOT)]),
            "WORKSTATION_MODELS": str(self.models[next(iter(self.models))].parent),
            "WORKSTATION_DATA": str(self.work / "data"),
            "XDG_CACHE_HOME": str(self.work / "cache"),
            "LLAMA_ANCHORS_BIN": str(self.bin),
            "PYTHONUNBUFFERED": "1",
        }
        if self.lib_dirs:
            self.env["LD_LIBRARY_PATH"] = os.pathsep.join([*self.lib_dirs, os.environ.get("LD_LIBRARY_PATH", "")])
        self.env.pop("WORKSTATION_API_KEY", None)
        # a crash says where: Python's stack (faulthandler) and the C stack (the preloaded shim)
        self.env["PYTHONFAULTHANDLER"] = "1"
        # a failed GGML_ASSERT prints its line and aborts: ggml's own backtrace would attach gdb
        # where there is one (a dry run here), and wait on it until the step's time ran out
        self.env["GGML_NO_BACKTRACE"] = "1"
        try:  # no core files in the working tree from a crash or a timeout's SIGABRT
            import resource

            resource.setrlimit(resource.RLIMIT_CORE, (0, resource.getrlimit(resource.RLIMIT_CORE)[1]))
        except (ImportError, ValueError, OSError):
            pass
        shim = build_shim(self.work)
        if shim is not None:
            self.env["LD_PRELOAD"] = f"{shim} {os.environ.get('LD_PRELOAD', '')}".strip()
        self.log = (self.work / "steps.log").open("a")

    def left(self) -> float:
        return self.deadline - time.monotonic()

    def run(self, cmd: list[str], timeout: float, input: str | None = None) -> subprocess.CompletedProcess[str]:
        """``cmd`` in a session of its own (its children too: `bench/load.py` starts `serve`, the
        commands an engine process), with output captured. Past its time the whole group gets
        SIGABRT first, so that faulthandler (PYTHONFAULTHANDLER) prints where its Python processes
        waited (those whose stderr it reads itself, as load.py reads serve's, are lost with it),
        then SIGKILL; what it said comes back in $OUT as timeout-N.txt."""
        limit = max(5.0, min(timeout, self.left()))
        print(f"$ {' '.join(cmd)}", file=self.log, flush=True)
        proc = subprocess.Popen(cmd, stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=self.env, cwd=ROOT,
                                start_new_session=True)
        try:
            out, err = proc.communicate(input, timeout=limit)
        except subprocess.TimeoutExpired:
            _signal_group(proc, signal.SIGABRT)
            out, err = _last_words(proc, 15)
            _signal_group(proc, signal.SIGKILL)  # (a child that outlived it: the pipes close)
            if proc.poll() is None:
                out, err = _last_words(proc, 10)  # (all it wrote: communicate keeps what it read)
            n = len(list(self.out.glob("timeout-*.txt"))) + 1
            saved = self.out / f"timeout-{n}.txt"
            saved.write_text(f"$ {' '.join(cmd)}\n--- stdout\n{out[-10000:]}\n--- stderr\n{err[-30000:]}",
                             encoding="utf-8")
            self.log.write(f"timed out after {limit:.0f} s; its output: {saved.name}\n{err[-4000:]}")
            self.log.flush()
            timed_out = subprocess.TimeoutExpired(cmd, limit, out, err)
            timed_out.saved = saved.name  # type: ignore[attr-defined]
            raise timed_out from None
        except BaseException:  # (Ctrl-C, a broken pipe): nothing of it left running
            _signal_group(proc, signal.SIGKILL)
            proc.wait()
            raise
        self.log.write(err[-4000:])
        self.log.flush()
        return subprocess.CompletedProcess(cmd, proc.returncode, out, err)

    def cli(self, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        return self.run([sys.executable, "-m", "workstation.cli", *args], timeout)

    def cli_json(self, *args: str, timeout: float = 300, ok: tuple[int, ...] = (0,)) -> Any:
        proc = self.cli(*args, timeout=timeout)
        if proc.returncode not in ok:
            raise self.failure(f"workstation {' '.join(args[:2])}", proc.returncode, proc.stderr)
        return json.loads(proc.stdout)

    def failure(self, what: str, returncode: int | None, stderr: str) -> StepError:
        """A process that failed, in one line; one a signal ended (a crash) with where it crashed,
        its whole stderr kept in $OUT as crash-N.txt."""
        signalled = returncode is not None and returncode < 0
        if signalled or "Fatal Python error" in stderr or "[C stack]" in stderr:
            # also a child's crash (the TUI's engine process) in a parent's stderr; kept first
            n = len(list(self.out.glob("crash-*.txt"))) + 1
            (self.out / f"crash-{n}.txt").write_text(stderr[-30000:], encoding="utf-8")
            crash = excerpt(stderr)
            how = signal_name(returncode) if signalled else f"exit code {returncode}, a process it started crashed"
            return StepError(f"{what} crashed ({how}; its stderr: crash-{n}.txt)", crash=crash)
        last = (stderr.strip().splitlines() or [""])[-1]
        return StepError(f"{what} exited {returncode}: {last[-300:]}")

    def profile(self, key: str, model: Path, **over: Any) -> Path:
        """A profile file for one case (JSON is YAML); ``over`` replaces top-level fields."""
        data: dict[str, Any] = {
            "name": key, "model": str(model), "context": 4096, "gpu_layers": "all", "threads": "auto",
            "flash_attn": "on", "kv_cache": {"k": "f16", "v": "f16"}, "speculative": {"mode": "off"},
            "sampling": {"temperature": 0.0, "top_p": 1.0, "top_k": 40, "min_p": 0.0,
                         "repeat_penalty": 1.0, "max_tokens": 256, "seed": 1},
            "system_prompt": "",
        }
        data.update(over)
        path = self.profiles / f"{key}.yaml"
        path.write_text(json.dumps(data, indent=1), encoding="utf-8")
        return path

    def resume(self, key: str, fresh: bool = False) -> None:
        """Take the results of an earlier call with the same build: its finished steps are not
        run again (a call cut short by its time limit is continued by the same command)."""
        path = self.work / "results.json"
        if path.exists() and not fresh:
            old = json.loads(path.read_text())
            if old.get("resume_key") == key:
                self.results["steps"] = old.get("steps", {})
        self.results["resume_key"] = key

    def save(self) -> None:
        tmp = self.work / ".results.json.tmp"
        tmp.write_text(json.dumps(self.results, default=str))
        tmp.replace(self.work / "results.json")

    def close(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()
        self.log.close()


def _signal_group(proc: subprocess.Popen[str], sig: int) -> None:
    try:
        os.killpg(proc.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _last_words(proc: subprocess.Popen[str], wait_s: float) -> tuple[str, str]:
    """What ``proc`` still writes within ``wait_s`` (all it wrote, where it ends by then)."""
    try:
        out, err = proc.communicate(timeout=wait_s)
    except subprocess.TimeoutExpired as again:
        out, err = again.output, again.stderr
    return tuple(x.decode(errors="replace") if isinstance(x, bytes) else x or "" for x in (out, err))  # type: ignore[return-value]


class StepError(Exception):
    """A step's own failure, said in one line; ``crash``: where a process crashed (crash.excerpt);
    ``partial``: what the step measured before it failed (kept in the report)."""

    def __init__(self, message: str, crash: str = "", partial: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.crash = crash
        self.partial = partial or {}


def step(ctx: Context, name: str, fn: Callable[[Context], dict[str, Any]], min_left: float = 20) -> None:
    from .report import write_report

    done = ctx.results["steps"].get(name)
    if done and done.get("ok"):
        print(f"[gpu-check] {name}: done in an earlier call", flush=True)
        return
    rec: dict[str, Any] = {"ok": False}
    t0 = time.monotonic()
    if ctx.left() < min_left:
        rec["skipped"] = f"no time left ({ctx.left():.0f} s)"
    else:
        print(f"[gpu-check] {name} ...", flush=True)
        try:
            rec.update(fn(ctx))
            rec["ok"] = True
        except subprocess.TimeoutExpired as err:
            rec["error"] = f"timed out after {err.timeout:.0f} s: {' '.join(map(str, err.cmd))[:200]}"
            if getattr(err, "saved", None):
                rec["error"] += f" (what it said until then: {err.saved})"  # type: ignore[attr-defined]
        except StepError as err:
            rec.update(err.partial)
            rec["error"] = str(err)
            if err.crash:
                rec["crash"] = err.crash
        except Exception as err:  # noqa: BLE001 - one step's bug must not lose the others
            rec["error"] = f"{type(err).__name__}: {err}"
            rec["traceback"] = traceback.format_exc()[-2000:]
    rec["seconds"] = round(time.monotonic() - t0, 1)
    ctx.results["steps"][name] = rec
    ctx.save()
    print(f"[gpu-check] {name}: {'ok' if rec['ok'] else rec.get('error') or rec.get('skipped')} "
          f"({rec['seconds']} s)", flush=True)
    write_report(ctx.results, ctx.out)


# --- steps ---------------------------------------------------------------------------------------
def environment(ctx: Context) -> dict[str, Any]:
    rec: dict[str, Any] = {"python": sys.version.split()[0], "cuda": ctx.cuda}
    if ctx.cuda:
        q = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total,compute_cap,"
                            "clocks.max.sm,power.limit", "--format=csv,noheader"],
                           capture_output=True, text=True, timeout=30)
        rec["nvidia_smi"] = q.stdout.strip()
        v = subprocess.run(["nvcc", "--version"], capture_output=True, text=True, timeout=30)
        rec["nvcc"] = (v.stdout.strip().splitlines() or [""])[-1]
    cuda_lib = next((ctx.site / "llama_cpp" / "lib").glob("libggml-cuda.so*"), None)
    if cuda_lib is not None:  # which CUDA runtime, cuBLAS and driver the build resolves to
        ldd = subprocess.run(["ldd", str(cuda_lib)], capture_output=True, text=True, timeout=30, env=ctx.env)
        rec["cuda_libraries"] = [ln.strip() for ln in ldd.stdout.splitlines() if re.search(r"libcu|nvidia", ln)]
    rec["native"] = native_libraries(ctx)
    rec["crash_backtrace"] = "LD_PRELOAD" in ctx.env
    rec["hw"] = ctx.cli_json("hw", "--json", timeout=60)
    rec["threads"] = int(rec["hw"]["cpu"]["physical_cores"])
    return rec


_RUNTIME_LOCALE = re.compile(r"std::(__cxx11::)?(locale|codecvt|collate|ctype|numpunct|num_get|num_put|"
                             r"moneypunct|money_get|money_put|time_get|time_put|messages)\b")


def native_libraries(ctx: Context) -> dict[str, Any]:
    """Which C++ runtime llama.cpp's libraries resolve to, the C++ runtime's locale symbols each of
    them defines (a library carrying its own copy would list some), and what Python's decimal
    module links: the H200's crash was a std::locale facet of the wrong kind."""
    import _decimal

    rec: dict[str, Any] = {}
    if not (shutil.which("ldd") and shutil.which("nm")):
        return {"missing": "ldd or nm is not installed"}
    libs = sorted((ctx.site / "llama_cpp" / "lib").glob("lib*.so"))
    for lib in [*libs, Path(_decimal.__file__)]:
        entry: dict[str, Any] = {}
        try:  # (what this says is a diagnosis: a failure here must not cost the step)
            ldd = subprocess.run(["ldd", str(lib)], capture_output=True, text=True, timeout=30, env=ctx.env)
            entry["links"] = [ln.strip().split(" (0x")[0] for ln in ldd.stdout.splitlines()
                              if re.search(r"libstdc|libgcc|libmpdec|libc\+\+", ln)]
            nm = subprocess.run(["nm", "-D", "--defined-only", "-C", str(lib)], capture_output=True, text=True,
                                timeout=60)
        except (OSError, subprocess.TimeoutExpired) as err:
            entry["error"] = f"{type(err).__name__}: {err}"
        else:
            if nm.returncode == 0:
                std = [ln.split(" ", 2)[-1] for ln in nm.stdout.splitlines() if "std::" in ln]
                entry["std_symbols"] = len(std)
                own = [x for x in std if _RUNTIME_LOCALE.match(x)]  # the runtime's, not regex's templates
                entry["locale_symbols"] = own[:8] + ([f"... {len(own) - 8} more"] if len(own) > 8 else [])
        rec[lib.name] = entry
    return rec


# Loading SmolLM2 with every layer on the GPU, one layer of the product at a time, each in its own
# process (argv: model, profile): the first device run crashed (SIGSEGV) inside llama.cpp's model
# load from `Engine`, while the product's own `LoadedModel` loaded and decoded there.
_PRELUDE = "import os, sys\nos.environ['WORKSTATION_LLAMA_LOG'] = '1'\nfrom pathlib import Path\n"
_OURS_LOAD = (
    "from workstation.core.runtime import Batch, LoadedModel, RuntimeSettings\n"
    "m = LoadedModel(Path(sys.argv[1]), RuntimeSettings(n_ctx=4096, n_gpu_layers=999))\n"
    "b = Batch(8)\n"
    "for i, t in enumerate(m.tokenize('Hello there')):\n"
    "    b.add(t, i, logits=True)\n"
    "m.decode(b)\n"
    "print('GPU buffers:', {k: v for k, v in m.buffers.get('model', {}).items() if 'CUDA' in k}, flush=True)\n"
    "m.close()\n"  # (a crash while closing then shows after the line above)
)
_PROFILE = "from workstation.core.profile_lookup import load_profile_file\np = load_profile_file(Path(sys.argv[2]))\n"
# the libraries (not our modules) the engine imported before llama.cpp until 2026-12-04, in order
_ENGINE_LIBRARIES = ["json", "jinja2", "decimal", "statistics", "numpy", "base64", "yaml", "platformdirs",
                     "unicodedata", "socket", "uuid", "multiprocessing", "sqlite3", "diskcache"]
OTHERS_FIRST = "LoadedModel after the engine's libraries (the old order, less our modules)"
LOAD_PROBES: dict[str, str] = {
    "llama_cpp alone": (
        "import llama_cpp\n"
        "llama_cpp.llama_backend_init()\n"
        "mp = llama_cpp.llama_model_default_params()\n"
        "mp.n_gpu_layers = 999\n"
        "m = llama_cpp.llama_model_load_from_file(sys.argv[1].encode(), mp)\n"
        "cp = llama_cpp.llama_context_default_params()\n"
        "cp.n_ctx = 4096\n"
        "c = llama_cpp.llama_init_from_model(m, cp)\n"
        "b = llama_cpp.llama_batch_get_one((llama_cpp.llama_token * 4)(1, 2, 3, 4), 4)\n"
        "print('offload:', llama_cpp.llama_supports_gpu_offload(), 'decode rc:', llama_cpp.llama_decode(c, b))\n"
    ),
    "LoadedModel": _OURS_LOAD,
    # since 2026-12-04 `import workstation` loads llama.cpp's libraries first: the product's order.
    # Before, this probe (the engine's modules, then llama.cpp) crashed on the H200 and loading
    # llama.cpp first loaded; Python's decimal alone before llama.cpp loaded too.
    "LoadedModel after the engine's imports": "import workstation.core.engine\n" + _OURS_LOAD,
    OTHERS_FIRST: "import " + ", ".join(_ENGINE_LIBRARIES) + "\n" + _OURS_LOAD,
    # the product loaded with this sampler's thread ticking until 2026-12-04 (Scheduler starts it after now)
    "LoadedModel, the CPU-load sampler ticking": (
        "from workstation.core.thread_policy import LoadSampler\nsampler = LoadSampler()\n" + _OURS_LOAD),
    "LoadedModel, a Python thread waiting": (
        "import threading\nstop = threading.Event()\n"
        "threading.Thread(target=lambda: [stop.wait(0.25) for _ in range(400)], daemon=True).start()\n"
        + _OURS_LOAD),
    # the product asks NVML for the GPUs (the memory plan) before each load
    "LoadedModel after NVML": "from workstation.core import hardware\nprint('NVML sees', len(hardware.gpus()), 'GPU;')\n"
    + _OURS_LOAD,
    "Scheduler, threads 8": _PROFILE + (
        "import dataclasses\n"
        "from workstation.core.scheduler import Scheduler\n"
        "s = Scheduler(dataclasses.replace(p, threads=8), threaded=False)\n"
        "print('loaded, GPU layers', s.gpu_layers)\n"
    ),
    "Scheduler, threads auto": _PROFILE + (
        "from workstation.core.scheduler import Scheduler\n"
        "s = Scheduler(p, threaded=False)\n"
        "print('loaded, GPU layers', s.gpu_layers)\n"
    ),
    "Engine": _PROFILE + (
        "from workstation.core.engine import Engine\n"
        "e = Engine(p)\n"
        "print('loaded:', e.info().gpu_layers, 'GPU layers')\n"
    ),
}


def engine_load(ctx: Context) -> dict[str, Any]:
    """Each of LOAD_PROBES in a fresh process: which layer of the product a crash on the GPU
    starts at, and where in llama.cpp (crash.excerpt)."""
    path = ctx.models[SMOLLM2]
    prof = ctx.profile("load-smollm2", path, gpu_layers="all")
    probes: dict[str, Any] = {}
    for name, code in LOAD_PROBES.items():
        t0 = time.monotonic()
        try:
            proc = ctx.run([sys.executable, "-c", _PRELUDE + code, str(path), str(prof)], timeout=120)
        except subprocess.TimeoutExpired as err:  # (a hang: the probes done so far stay)
            probes[name] = {"rc": None, "error": f"timed out after {err.timeout:.0f} s",
                            "seconds": round(time.monotonic() - t0, 1)}
            continue
        rec: dict[str, Any] = {"rc": proc.returncode, "said": proc.stdout.strip()[-300:],
                               "seconds": round(time.monotonic() - t0, 1)}
        if proc.returncode < 0:
            rec["crash"] = excerpt(proc.stderr)
        elif proc.returncode:
            rec["error"] = (proc.stderr.strip().splitlines() or [""])[-1][-300:]
        probes[name] = rec
    # (the control probe loads in the order that crashed on the H200: its crash is not the product's)
    failing = [n for n, r in probes.items() if r["rc"] != 0 and n != OTHERS_FIRST]
    rec: dict[str, Any] = {"probes": probes, "first_failing": failing[0] if failing else None, "control": OTHERS_FIRST}
    control = (probes.get(OTHERS_FIRST) or {}).get("rc")
    if isinstance(control, int) and control < 0 and ctx.left() > 60:
        rec["locale_bindings"] = locale_bindings(ctx, LOAD_PROBES[OTHERS_FIRST], [str(path), str(prof)])
    return rec


_LOCALE_SYMBOL = re.compile(r"St6locale|collate|codecvt|ctype|_Facet|facet")


def locale_bindings(ctx: Context, code: str, args: list[str]) -> list[str]:
    """The dynamic linker's bindings of std::locale's symbols in a probe that crashed (LD_DEBUG):
    which library each library's references to them went to (two copies of the C++ runtime's
    locale would show here)."""
    folder = ctx.work / "ld-bindings"
    folder.mkdir(exist_ok=True)
    for old in folder.iterdir():
        old.unlink()
    env = dict(ctx.env, LD_DEBUG="bindings", LD_DEBUG_OUTPUT=str(folder / "b"))
    try:
        subprocess.run([sys.executable, "-c", _PRELUDE + code, *args], capture_output=True, text=True,
                       timeout=max(5.0, min(60.0, ctx.left() - 20)), env=env, cwd=ROOT)
    except subprocess.TimeoutExpired:  # (LD_DEBUG slows it: what it bound by then is read below)
        pass
    seen: dict[str, None] = {}
    for f in sorted(folder.iterdir()):
        for line in f.read_text(errors="replace").splitlines():
            sym = re.search(r"symbol `([^']+)'", line)
            if sym and sym.group(1).startswith("_Z") and _LOCALE_SYMBOL.search(sym.group(1)) and (
                    "libllama" in line or "libggml" in line):
                # "  1234: binding file A [0] to B [0]: normal symbol `X' [GLIBCXX_3.4]"
                seen.setdefault(re.sub(r"^\s*\d+:\s*", "", line).strip(), None)
    lines = list(seen)
    return lines[:80] + ([f"... {len(lines) - 80} more"] if len(lines) > 80 else [])


def threads(ctx: Context) -> str:
    """The threads every run uses: the physical cores `workstation hw` counts (the profiles'
    `threads: auto`), so llama.cpp's tools run with the same number."""
    env = ctx.results["steps"].get("environment") or {}
    return str(env.get("threads") or os.cpu_count() or 2)


def nvml_used(pids: set[int]) -> dict[str, int | None]:
    """NVML: GPU memory of these processes, and of the whole first GPU (None without NVML)."""
    try:
        import pynvml as nv

        nv.nvmlInit()
    except Exception:  # noqa: BLE001 - no NVML: a CPU machine
        return {"process_bytes": None, "device_used_bytes": None}
    try:
        h = nv.nvmlDeviceGetHandleByIndex(0)
        used = int(nv.nvmlDeviceGetMemoryInfo(h).used)
        procs = nv.nvmlDeviceGetComputeRunningProcesses(h)
        mine = sum(int(p.usedGpuMemory or 0) for p in procs if p.pid in pids)
        return {"process_bytes": mine if procs else None, "device_used_bytes": used}
    finally:
        nv.nvmlShutdown()


def _children(pid: int) -> set[int]:
    try:
        import psutil

        return {pid, *(c.pid for c in psutil.Process(pid).children(recursive=True))}
    except Exception:  # noqa: BLE001
        return {pid}


def serve_once(ctx: Context, profile: Path, parallel: int = 1) -> tuple[dict[str, Any], str]:
    """Start `workstation serve` on a free port with llama.cpp's log on, wait until healthy,
    read NVML, stop it; returns (NVML figures, the server's stderr)."""
    import urllib.request

    env = {**ctx.env, "WORKSTATION_LLAMA_LOG": "1"}
    cmd = [sys.executable, "-m", "workstation.cli", "serve", "-p", str(profile), "--port", "0",
           "--parallel", str(parallel)]
    errf = (ctx.work / "serve.err").open("w+")
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=errf, text=True)
    ctx.procs.append(proc)
    try:
        url = None
        limit = time.monotonic() + min(180, ctx.left())
        while time.monotonic() < limit and proc.poll() is None:
            errf.seek(0)
            m = re.search(r"http://127\.0\.0\.1:(\d+)/v1", errf.read())
            if m:
                url = f"http://127.0.0.1:{m.group(1)}"
                try:
                    if urllib.request.urlopen(url + "/health", timeout=5).status == 200:
                        break
                except OSError:
                    pass
            time.sleep(0.3)
        else:
            errf.seek(0)
            if proc.poll() is not None:
                proc.wait()
                raise ctx.failure("workstation serve", proc.returncode, errf.read())
            raise StepError(f"serve did not come up in time: {errf.read().strip()[-300:]}")
        time.sleep(0.5)
        figures = nvml_used(_children(proc.pid))
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
        errf.seek(0)
        text = errf.read()
        errf.close()
    return figures, text


def llama_buffers(log: str) -> dict[str, int]:
    """Bytes llama.cpp reported allocating, per device name (CUDA0, CUDA_Host, CPU, CPU_Mapped)."""
    out: dict[str, int] = {}
    for dev, _kind, mib in _BUFFER.findall(log):
        out[dev] = out.get(dev, 0) + round(float(mib) * MIB)
    return out


def fit_vs_vram(ctx: Context) -> dict[str, Any]:
    contexts = (2048,) if ctx.quick else (2048, 8192, 32768)
    cases = []
    for name, path in ctx.models.items():
        for n_ctx in contexts:
            for kv in ("f16", "q8_0"):
                key = f"vram-{name}-{n_ctx}-{kv}"
                prof = ctx.profile(key, path, context=n_ctx, kv_cache={"k": kv, "v": kv})
                plan = ctx.cli_json("fit", "-p", str(prof), "--json", timeout=60, ok=(0, 2))
                gpu_est = sum(d["need_bytes"] for d in plan["devices"] if d["kind"] == "gpu")
                cpu_est = sum(d["need_bytes"] for d in plan["devices"] if d["kind"] == "cpu")
                nvml, log = serve_once(ctx, prof)
                bufs = llama_buffers(log)
                gpu_llama = sum(v for k, v in bufs.items() if k.startswith("CUDA") and "Host" not in k)
                cases.append({
                    "model": name, "context": n_ctx, "kv": kv, "gpu_layers": plan["gpu_layers"],
                    "total_layers": plan["total_layers"], "fit_gpu_bytes": gpu_est,
                    "fit_cpu_bytes": cpu_est, "fit_kv_bytes": plan["kv_cache_bytes"],
                    "llama_buffers": bufs, "llama_gpu_bytes": gpu_llama, **nvml,
                })
    # the CUDA context and libraries: what NVML sees beyond llama.cpp's own buffers, at its least
    overheads = [c["process_bytes"] - c["llama_gpu_bytes"] for c in cases if c["process_bytes"]]
    floor = min(overheads) if overheads else None
    for c in cases:
        if c["llama_gpu_bytes"]:
            c["fit_over_llama"] = round(c["fit_gpu_bytes"] / c["llama_gpu_bytes"], 4)
        if c["process_bytes"] and floor is not None:
            c["fit_over_nvml_less_context"] = round(c["fit_gpu_bytes"] / max(1, c["process_bytes"] - floor), 4)
        cpu_llama = sum(v for k, v in c["llama_buffers"].items() if k.startswith("CPU"))
        if not ctx.cuda and cpu_llama:
            c["fit_cpu_over_llama"] = round(c["fit_cpu_bytes"] / cpu_llama, 4)
    return {"cases": cases, "context_overhead_bytes": floor}


def _half(total_layers: int) -> int:
    return max(1, total_layers // 2)


def bench(ctx: Context) -> dict[str, Any]:
    """`workstation bench` beside llama-bench, all layers and half of them on the GPU. llama-bench
    runs first and its figures are kept where ours fail (the first device run lost them all to
    a crash of ours)."""
    reps = "1" if ctx.quick else "5"
    n_prompt, n_gen = ("64", "16") if ctx.quick else ("512", "128")
    n_threads = threads(ctx)
    rows = []
    errors: list[StepError] = []
    for name, path in ctx.models.items():
        full = ctx.profile(f"bench-{name}-full", path, gpu_layers="all")
        plan = ctx.cli_json("fit", "-p", str(full), "--json", timeout=60, ok=(0, 2))
        total = int(plan["total_layers"])
        half = ctx.profile(f"bench-{name}-half", path, gpu_layers=_half(total))
        theirs: dict[int, dict[str, Any]] = {}
        for ngl in (total, _half(total)):
            lb = subprocess.run(
                [str(ctx.bin / "llama-bench"), "-m", str(path), "-p", n_prompt, "-n", n_gen, "-ngl", str(ngl),
                 "-fa", "1", "-ctk", "f16", "-ctv", "f16", "-t", n_threads, "-r", reps, "-o", "json"],
                capture_output=True, text=True, timeout=max(5, min(300, ctx.left())), env=ctx.env)
            if lb.returncode != 0:
                errors.append(ctx.failure("llama-bench", lb.returncode, lb.stderr))
                continue
            theirs[ngl] = {(f"pp{r['n_prompt']}" if r["n_prompt"] else f"tg{r['n_gen']}"): r
                           for r in json.loads(lb.stdout)}
        try:
            recs = ctx.cli_json("bench", "-p", str(full), "-p", str(half), "--json", "--no-save", "-r", reps,
                                "--n-prompt", n_prompt, "--n-gen", n_gen, "-t", n_threads, timeout=400)
        except StepError as err:
            errors.append(err)
            recs = []
        for ngl, prof in ((total, full), (_half(total), half)):
            ours = {r["test"]: r for r in recs if r["profile"] == prof.stem}
            row: dict[str, Any] = {"model": name, "n_gpu_layers": ngl, "total_layers": total}
            for test in (f"pp{n_prompt}", f"tg{n_gen}"):
                if test in theirs.get(ngl, {}):
                    row[f"{test}_llama_bench_ts"] = theirs[ngl][test]["avg_ts"]
                if test in ours:
                    row[f"{test}_ours_ts"] = ours[test]["avg_ts"]
                if test in ours and test in theirs.get(ngl, {}):
                    row[f"{test}_ratio"] = round(ours[test]["avg_ts"] / theirs[ngl][test]["avg_ts"], 4)
            tg = ours.get(f"tg{n_gen}", {})
            row["ttft_ms"] = tg.get("ttft_ms")
            row["chat_ts"] = tg.get("chat_ts")
            rows.append(row)
    result = {"rows": rows, "n_prompt": int(n_prompt), "n_gen": int(n_gen), "repetitions": int(reps),
              "threads": int(n_threads)}
    if errors:
        raise _all_of(errors, result)
    return result


def _all_of(errors: list[StepError], partial: dict[str, Any]) -> StepError:
    """One StepError for several failures of a step: every message, the first crash's place."""
    return StepError("; ".join(dict.fromkeys(str(e) for e in errors)),
                     crash=next((e.crash for e in errors if e.crash), ""), partial=partial)


def serve_scaling(ctx: Context) -> dict[str, Any]:
    path = ctx.models[SMOLLM2]
    prof = ctx.profile("serve-smollm2", path, gpu_layers="all")
    # (the dry run's 5 clients of ~128 tokens pass one 512-token batch, as 16 do: the plain-loop
    # reference aborted there on the first device run, and the dry run, without it, never knew)
    clients, tokens = ("1,5", "8") if ctx.quick else ("1,4,16", "128")
    cmd = [sys.executable, str(ROOT / "bench" / "load.py"), "-p", str(prof), "--clients", clients,
           "--max-tokens", tokens, "--json"]
    proc = ctx.run(cmd, timeout=300)
    if proc.returncode != 0:
        raise ctx.failure("bench/load.py", proc.returncode, proc.stderr)
    data = json.loads(proc.stdout)
    rows = data["rows"]
    by_n = {r["clients"]: r for r in rows}
    one, top = by_n.get(1), by_n.get(max(by_n))
    scaling = round(top["agg_tps"] / one["agg_tps"], 3) if one and top and one["agg_tps"] else None
    return {"rows": rows, "scaling_top_over_1": scaling, "top_clients": max(by_n)}


def quote_prompt(ctx: Context) -> str:
    """The quoting task of bench/speculative.py (one copy of the text, read from there)."""
    code = "import sys; sys.path.insert(0, 'bench'); from speculative import QUOTE; print(QUOTE, end='')"
    proc = ctx.run([sys.executable, "-c", code], timeout=120)
    if proc.returncode != 0:
        raise ctx.failure("reading the quoting prompt", proc.returncode, proc.stderr)
    return proc.stdout


def rendered_prompt(ctx: Context, model: Path, text: str) -> str:
    """The prompt as our chat template renders it, for llama.cpp's tools (same tokens)."""
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from workstation.core.runtime import LoadedModel, RuntimeSettings\n"
        "from workstation.core.chat_template import template_for, chat_prompt_tokens\n"
        "m = LoadedModel(Path(sys.argv[1]), RuntimeSettings(n_ctx=512, n_gpu_layers=0))\n"
        "toks = chat_prompt_tokens(m, template_for(m), [{'role': 'user', 'content': sys.stdin.read()}])\n"
        "if toks and toks[0] == m.bos_token: toks = toks[1:]\n"
        "sys.stdout.write(m.detokenize(toks, special=True))\n"
    )
    proc = ctx.run([sys.executable, "-c", code, str(model)], timeout=120, input=text)
    if proc.returncode != 0:
        raise ctx.failure("rendering the prompt", proc.returncode, proc.stderr)
    return proc.stdout


def speculative_simple(ctx: Context, model: Path, prompt: str, n: int, extra: list[str]) -> dict[str, Any]:
    cmd = [str(ctx.bin / "llama-speculative-simple"), "-m", str(model), "-p", prompt, "-n", str(n),
           "--temp", "0", "-c", "4096", "-ngl", "99", "-fa", "on", "-t", threads(ctx), *extra]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=max(5, min(240, ctx.left())), env=ctx.env)
    text = proc.stdout + proc.stderr
    m, a = _SPEC.search(text), _ACCEPT.search(text)
    if proc.returncode != 0 or not m:
        raise ctx.failure("llama-speculative-simple", proc.returncode, text)
    return {"decoded": int(m.group(1)), "seconds": float(m.group(2)), "tps": float(m.group(3)),
            "accept_percent": float(a.group(1)) if a else None}


def speculative(ctx: Context) -> dict[str, Any]:
    small = ctx.models[SMOLLM2]
    rounds = 1 if ctx.quick else 3
    max_tokens = 64 if ctx.quick else 512
    quote = quote_prompt(ctx)
    if ctx.quick:
        quote = quote[:600]  # a dry run on a busy CPU: the same path with a short text
    replay = ctx.work / "quote.jsonl"
    replay.write_text("".join(json.dumps({"messages": [{"role": "user", "content": f"({i + 1}) {quote}"}]}) + "\n"
                              for i in range(rounds)), encoding="utf-8")
    # the same-vocabulary pair: SmolLM2 F16 (made here by the product's quantizer) drafted by Q4_1
    f16 = small.with_name(small.stem.replace("Q4_1", "F16") + ".gguf")
    if not f16.exists():
        ctx.cli_json("models", "quantize", str(small), "--type", "f16", "--allow-requantize", "-o", str(f16),
                     "--json", timeout=180)
    sampling = {"temperature": 0.0, "top_p": 1.0, "top_k": 40, "min_p": 0.0, "repeat_penalty": 1.0,
                "max_tokens": max_tokens, "seed": 1}
    profs = {
        "off": ctx.profile("quote-off", small, sampling=sampling),
        "lookup": ctx.profile("quote-lookup", small, sampling=sampling,
                              speculative={"mode": "lookup", "draft_tokens": 16, "ngram": 3}),
        "pair-off": ctx.profile("pair-off", f16, sampling=sampling),
        "pair-draft": ctx.profile("pair-draft", f16, sampling=sampling,
                                  speculative={"mode": "draft", "draft_model": str(small), "draft_tokens": 6}),
    }
    # llama.cpp's own tool first: its figures are kept where ours fail, and ours where its fail
    rec: dict[str, Any] = {}
    errors: list[StepError] = []
    prompt = rendered_prompt(ctx, small, f"(1) {quote}")
    for key, model, extra in (
        ("llama_ngram_mod", small, ["--spec-type", "ngram-mod"]),
        ("llama_draft", f16, ["--spec-type", "draft-simple", "-md", str(small), "-ngld", "99",
                              "--spec-draft-n-max", "6"]),
    ):
        try:
            rec[key] = speculative_simple(ctx, model, prompt, max_tokens, extra)
        except StepError as err:
            errors.append(err)
    args = ["bench", "--replay", str(replay), "--max-tokens", str(max_tokens), "--json", "--no-save"]
    for p in profs.values():
        args += ["-p", str(p)]
    try:
        replays = ctx.cli_json(*args, timeout=400)
    except StepError as err:
        raise _all_of([*errors, err], rec) from None
    summary = {r["profile"]: r["summary"] for r in replays}
    tps = {k: summary.get(p.stem, {}).get("predicted_per_second") for k, p in profs.items()}
    rec.update({"replay": {k: summary.get(p.stem) for k, p in profs.items()}, "tps": tps})
    if tps["off"] and tps["lookup"]:
        rec["lookup_over_off"] = round(tps["lookup"] / tps["off"], 3)
    if tps["pair-off"] and tps["pair-draft"]:
        rec["draft_over_off"] = round(tps["pair-draft"] / tps["pair-off"], 3)
    if tps["lookup"] and "llama_ngram_mod" in rec:
        rec["lookup_over_llama_ngram_mod"] = round(tps["lookup"] / rec["llama_ngram_mod"]["tps"], 3)
    if tps["pair-draft"] and "llama_draft" in rec:
        rec["draft_over_llama_draft"] = round(tps["pair-draft"] / rec["llama_draft"]["tps"], 3)
    # the packaged pair: the larger packaged model drafted by the smaller, where vocabularies match
    if GEMMA in ctx.models:
        prof = ctx.profile("packaged-pair", ctx.models[GEMMA], sampling={**sampling, "max_tokens": 16},
                           speculative={"mode": "draft", "draft_model": str(small), "draft_tokens": 6})
        proc = ctx.cli("chat", "-p", str(prof), "--json", "Hello", timeout=120)
        said = (proc.stderr.strip().splitlines() or [""])[-1]
        rec["packaged_pair"] = {"target": GEMMA, "draft": SMOLLM2, "exit": proc.returncode,
                                "ran": proc.returncode == 0, "message": said[:400]}
    if errors:  # llama-speculative-simple failed: ours measured, its failure said
        raise _all_of(errors, rec)
    return rec


def tui(ctx: Context) -> dict[str, Any]:
    prof = ctx.profile("tui-smollm2", ctx.models[SMOLLM2], gpu_layers="all",
                       sampling={"temperature": 0.0, "top_p": 1.0, "top_k": 40, "min_p": 0.0,
                                 "repeat_penalty": 1.0, "max_tokens": 64, "seed": 1})
    proc = ctx.run([sys.executable, str(Path(__file__).with_name("tui_turn.py")), str(prof)], timeout=180)
    if proc.returncode != 0:
        raise ctx.failure("the TUI turn", proc.returncode, proc.stderr)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def pp_gap(ctx: Context) -> dict[str, Any]:
    """Why our pp512 was 0.60-0.76x llama-bench's on the H200 (decode 0.96-0.98x): pp_probe.py
    times contexts that differ from ours one setting at a time, and the Engine's own, beside
    llama-bench's pp run right before in this step."""
    path = ctx.models[SMOLLM2]
    n_prompt, reps = ("64", "1") if ctx.quick else ("512", "5")
    n_threads = threads(ctx)
    prof = ctx.profile("pp-smollm2", path, gpu_layers="all")
    lb = ctx.run([str(ctx.bin / "llama-bench"), "-m", str(path), "-p", n_prompt, "-n", "0", "-ngl", "999",
                  "-fa", "1", "-ctk", "f16", "-ctv", "f16", "-t", n_threads, "-r", reps, "-o", "json"], timeout=120)
    if lb.returncode != 0:
        raise ctx.failure("llama-bench", lb.returncode, lb.stderr)
    theirs = float(json.loads(lb.stdout)[0]["avg_ts"])
    probe = ctx.run([sys.executable, str(Path(__file__).with_name("pp_probe.py")), str(path), "--n-prompt", n_prompt,
                     "--reps", reps, "--threads", n_threads, "--ngl", "999", "--profile", str(prof)], timeout=180)
    if probe.returncode != 0:
        raise ctx.failure("pp_probe.py", probe.returncode, probe.stderr)
    data = json.loads(probe.stdout.strip().splitlines()[-1])
    for rec in data["variants"].values():
        rec["over_llama_bench"] = round(max(rec["tps"]) / theirs, 3)  # the better of its two rounds
    return {**data, "llama_bench_tps": theirs}


STEPS: list[tuple[str, Callable[[Context], dict[str, Any]]]] = [
    ("environment", environment),
    ("engine_load", engine_load),
    ("fit_vs_vram", fit_vs_vram),
    ("bench", bench),
    ("speculative", speculative),
    ("serve_scaling", serve_scaling),
    ("tui", tui),
    ("pp_gap", pp_gap),  # a diagnosis, after every measurement the issue asks for
]


def run_all(ctx: Context, only: list[str] | None = None) -> None:
    """Every step in order (``only``: those named)."""
    for name, fn in STEPS:
        if only is None or name in only:
            step(ctx, name, fn)
