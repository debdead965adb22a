"""Estimated against allocated memory, at every model load.

``runtime.LoadedModel`` calls ``record_load`` once its context exists: the planner's estimate
for exactly those settings (context, K/V types, GPU layers, flash attention, micro-batch) goes
into the history (``results``, kind ``load``) beside what llama.cpp reported allocating (its
model, KV and compute buffers) and, with a GPU, the VRAM NVML counts for this process. ``fit
--check`` prints one such check, the dashboard shows the latest, and ``size`` says how far the
estimates have been off on this machine.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workstation.core.installed_models import installed_name
from workstation.core.phrases import Lookup, Phrase, say
from workstation.core.results import ResultRow, history, save_run

if TYPE_CHECKING:
    from workstation.core.runtime import LoadedModel

COMPONENTS = ("weights", "kv_cache", "compute", "total")
_LLAMA_KIND = {"weights": "model", "kv_cache": "KV", "compute": "compute"}


@dataclass
class MemoryCheck:
    model: str  # file path
    settings: dict[str, Any]
    estimated: dict[str, int]
    allocated: dict[str, int]
    buffers: dict[str, dict[str, int]] = field(default_factory=dict)
    vram_estimated: int | None = None  # the plan's bytes on the GPUs
    vram_process: int | None = None  # NVML: this process's VRAM (CUDA context included)

    def diff(self, component: str) -> int:
        """Estimate minus allocation (positive: the planner over-estimated)."""
        return self.estimated[component] - self.allocated[component]

    def diff_pct(self, component: str) -> float | None:
        a = self.allocated[component]
        return None if not a else (self.estimated[component] - a) / a * 100

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["diff_pct"] = {c: (round(p, 2) if (p := self.diff_pct(c)) is not None else None) for c in COMPONENTS}
        return d


def _type_name(type_id: int) -> str:
    from workstation.core.profiles import KV_CACHE_TYPES

    return next((k for k, v in KV_CACHE_TYPES.items() if v == type_id), str(type_id))


def process_vram_bytes(pid: int | None = None) -> int | None:
    """VRAM NVML counts for this process on every GPU; None without NVML or a GPU."""
    try:
        import pynvml

        pynvml.nvmlInit()
    except Exception:  # noqa: BLE001 - no driver, no GPU: nothing to count
        return None
    pid = pid or os.getpid()
    total, seen = 0, False
    try:
        for i in range(pynvml.nvmlDeviceGetCount()):
            h = pynvml.nvmlDeviceGetHandleByIndex(i)
            for proc in pynvml.nvmlDeviceGetComputeRunningProcesses(h):
                if proc.pid == pid and proc.usedGpuMemory:
                    total += int(proc.usedGpuMemory)
                    seen = True
    except Exception:  # noqa: BLE001
        return None
    return total if seen else None


def check(model: LoadedModel) -> MemoryCheck:
    """The estimate for ``model``'s settings beside what llama.cpp allocated for it."""
    from workstation.core import hardware
    from workstation.core.model_info import read_model_info
    from workstation.core.planner import plan

    s = model.settings
    info = read_model_info(model.path, check=False)
    gpus = hardware.gpus() if s.n_gpu_layers else []
    p = plan(info, context=model.n_ctx, type_k=_type_name(s.type_k), type_v=_type_name(s.type_v),
             gpu_layers=s.n_gpu_layers, gpus=gpus, flash_attn=s.flash_attn, n_ubatch=model.n_batch)
    buffers = model.buffers
    allocated = {c: sum(buffers.get(k, {}).values()) for c, k in _LLAMA_KIND.items()}
    if not allocated["kv_cache"]:
        allocated["kv_cache"] = sum(model.kv_cache_bytes)
    allocated["total"] = sum(allocated.values()) + sum(buffers.get("output", {}).values())
    estimated = {"weights": p.weights_bytes + p.repack_bytes, "kv_cache": p.kv_cache_bytes, "compute": p.compute_bytes,
                 "total": p.total_bytes}
    settings = {"n_ctx": model.n_ctx, "n_gpu_layers": s.n_gpu_layers, "gpu_layers_planned": p.gpu_layers,
                "type_k": _type_name(s.type_k), "type_v": _type_name(s.type_v), "flash_attn": s.flash_attn,
                "n_seq_max": s.n_seq_max, "n_ubatch": model.n_batch}
    return MemoryCheck(str(model.path), settings, estimated, allocated, buffers,
                       vram_estimated=p.gpu_bytes if gpus else None,
                       vram_process=process_vram_bytes() if gpus else None)


def result_rows(mc: MemoryCheck) -> list[ResultRow]:
    name = installed_name(Path(mc.model))
    rows = []
    for c in COMPONENTS:
        data = {"estimated": mc.estimated[c], "allocated": mc.allocated[c], "diff_pct": mc.diff_pct(c),
                "settings": mc.settings}
        if c == "total":
            data["buffers"] = mc.buffers
            data["vram_estimated"] = mc.vram_estimated
            data["vram_process"] = mc.vram_process
        rows.append(ResultRow(name, f"mem_{c}", mc.allocated[c], "bytes", mc.model, data))
    return rows


def record_load(model: LoadedModel) -> MemoryCheck:
    mc = check(model)
    save_run("load", result_rows(mc), f"load {Path(mc.model).name}")
    return mc


def latest(model_path: str | None = None) -> dict[str, Any] | None:
    """The newest load's check (of ``model_path`` if given): component -> (estimated, allocated,
    diff %), plus the settings, for the dashboard."""
    rows = [e for e in history(kind="load", limit=400) if model_path is None or e.model == model_path]
    if not rows:
        return None
    run = rows[0].run_id
    out: dict[str, Any] = {"model": rows[0].model, "created": rows[0].created, "components": {}}
    for e in rows:
        if e.run_id != run:
            continue
        comp = e.test.removeprefix("mem_")
        out["components"][comp] = {"estimated": e.data.get("estimated"), "allocated": e.data.get("allocated"),
                                   "diff_pct": e.data.get("diff_pct")}
        out["settings"] = e.data.get("settings", {})
        if comp == "total":
            out["vram_estimated"] = e.data.get("vram_estimated")
            out["vram_process"] = e.data.get("vram_process")
    return out


def history_summary(limit: int = 2000) -> dict[str, Any]:
    """How far the estimates have been off on this machine: per component, the loads counted,
    the mean and the largest difference (estimate against allocation, percent)."""
    by: dict[str, list[tuple[float, str]]] = {c: [] for c in COMPONENTS}
    runs = set()
    for e in history(kind="load", limit=limit):
        comp = e.test.removeprefix("mem_")
        pct = e.data.get("diff_pct")
        if comp in by and pct is not None:
            by[comp].append((float(pct), Path(e.model).name))
            runs.add(e.run_id)
    out: dict[str, Any] = {"loads": len(runs), "components": {}}
    for c, vals in by.items():
        if not vals:
            continue
        worst = max(vals, key=lambda v: abs(v[0]))
        out["components"][c] = {
            "n": len(vals),
            "mean_abs_pct": round(sum(abs(v) for v, _ in vals) / len(vals), 2),
            "worst_pct": round(worst[0], 2),
            "worst_model": worst[1],
        }
    return out


def describe_history(summary: dict[str, Any], lookup: Lookup | None = None) -> str:
    """One paragraph for reports: how far the planner has been off here, in ``lookup``'s
    language ("1 real model loads" was said, and "0.0% (at worst +0.0%)" of no difference)."""
    if not summary.get("loads"):
        return say([("memory_check.none", {})], lookup)

    def off(s: dict[str, Any], key: str, **more: Any) -> Phrase:
        if not s["mean_abs_pct"] and not s["worst_pct"]:
            return (f"{key}_exact", more)
        return (key, {"mean": f"{s['mean_abs_pct']:.1f}", "worst": f"{s['worst_pct']:+.1f}", **more})

    parts: list[Phrase] = []
    for c in COMPONENTS[:-1]:
        s = summary["components"].get(c)
        if s:
            parts += [("miss.and", {})] if parts else []
            parts.append(off(s, "memory_check.part", part=(f"memory_check.{c}", {}), model=s["worst_model"]))
    total = summary["components"].get("total")
    said: list[Phrase] = [("memory_check.lead", {"n": f"{summary['loads']:,}"})]
    said += [off(total, "memory_check.total")] if total else []
    said.append(("memory_check.by_part", {"parts": parts}) if parts else ("memory_check.end", {}))
    return say(said, lookup)
