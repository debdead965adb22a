"""A memory plan as ``planner.plan`` makes it: each device's share (``DevicePlan``) and the
whole (``MemoryPlan``: will it fit, where, how fast, in words to be translated), and the
memory a loaded model gives back when it is closed (``FreedMemory``), counted as free."""

from __future__ import annotations

import dataclasses
from dataclasses import asdict, dataclass, field
from typing import Any

from workstation.core.hardware import GpuInfo
from workstation.core.phrases import Phrase, say


@dataclass
class DevicePlan:
    kind: str  # gpu | cpu
    name: str
    index: int | None
    layers: int  # repeating layers (plus the output layer, counted as one) on this device
    weights_bytes: int
    kv_cache_bytes: int
    compute_bytes: int
    free_bytes: int  # what the device has free now (VRAM, or available RAM)
    total_bytes: int  # the device's size
    bandwidth_gbps: float
    output: bool = False  # the output layer is one of its ``layers`` (it holds no K/V cache)

    @property
    def need_bytes(self) -> int:
        return self.weights_bytes + self.kv_cache_bytes + self.compute_bytes

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["need_bytes"] = self.need_bytes
        return data


@dataclass
class MemoryPlan:
    model: str
    path: str
    architecture: str
    file_type: str
    context: int
    type_k: str
    type_v: str
    kv_cells: int
    swa_cells: int
    weights_bytes: int  # all of the model's tensors
    kv_cache_bytes: int
    compute_bytes: int  # compute buffers on every device used
    total_bytes: int
    gpu_layers: int
    total_layers: int  # n_layer + 1: llama.cpp counts the output layer
    requested_gpu_layers: int | str
    fits: bool
    placement: str  # gpu (all on GPUs) | partial | cpu | none (does not fit)
    verdict: str  # in English: say(verdict_phrases)
    gpu_bytes: int
    cpu_bytes: int
    vram_free: int
    ram_available: int
    decode_bytes_per_token: int
    decode_tps_bound: float | None  # tokens/s upper bound at an empty context (an estimate)
    decode_tps_bound_full: float | None  # the same with the whole context in the KV cache
    speed_note: str
    devices: list[DevicePlan] = field(default_factory=list)
    # what the plan counted, and how (a draft model, a model planned from its published shape),
    # and settings that work against the user: to be translated (``notes`` says them in English)
    note_phrases: list[Phrase] = field(default_factory=list)
    draft: dict[str, Any] | None = None  # the draft model's share (already in the totals above)
    repack_bytes: int = 0  # repacked copies of CPU-resident weights (in total_bytes, not weights_bytes)
    verdict_phrases: list[Phrase] = field(default_factory=list)  # the verdict, to be translated
    # what a memory limit (ulimit -v, a cgroup) leaves this process, where it is less than what
    # is free (``ram_available`` is then this plus the reserve, which is for other programs)
    ram_limit: int | None = None
    # what must sit in RAM (the CPU's K/V cache and compute buffers, repacked weights): the
    # weights beside it are mapped from their file, and page in and out where RAM is short
    resident_bytes: int = 0
    # the CPU's weights that do not fit in the memory free beside the rest: read from the disk
    # again for every token (it runs, slowly); 0 where all of it fits
    paged_bytes: int = 0

    @property
    def notes(self) -> list[str]:
        """The plan's notes in English (the command line's, JSON's): ``say`` of each note phrase."""
        return [say([p]) for p in self.note_phrases]

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        del data["verdict_phrases"], data["note_phrases"]
        data["devices"] = [d.to_dict() for d in self.devices]
        data["notes"] = self.notes
        return data


@dataclass
class FreedMemory:
    """What closing the loaded model gives back: RAM (its K/V cache, compute buffers and
    repacked weights; its weights, mapped from their file, are page cache that counts as free
    already) and VRAM per GPU index (all of its share there, weights included)."""

    ram_bytes: int = 0
    vram_bytes: dict[int, int] = field(default_factory=dict)
    model: str = ""  # the loaded model's name, as 'models list' says it

    @property
    def total_bytes(self) -> int:
        return self.ram_bytes + sum(self.vram_bytes.values())


def counting_freed(gpus: list[GpuInfo], freed: FreedMemory | None) -> list[GpuInfo]:
    """``gpus`` with what ``freed`` gives back on each counted as free (copies; as they are
    without it)."""
    if freed is None:
        return gpus
    return [dataclasses.replace(g, vram_free=min(g.vram_total, g.vram_free + freed.vram_bytes.get(g.index, 0)))
            for g in gpus]
