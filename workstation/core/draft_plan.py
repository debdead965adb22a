"""A profile's model and its draft model planned as a pair: the draft loads as the engine
loads it (the target's context, f16 K/V, on the GPU where the target uses one), its GPU share
taken off the GPUs' free memory before the target's layers are chosen, and the verdict said
of the pair (the memory, or the draft's own GPU layers, where the pair does not fit)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from workstation.core.catalog import human_bytes, resolve_model_path
from workstation.core.hardware import GpuInfo
from workstation.core.installed_models import installed_name
from workstation.core.memory_plan import MemoryPlan
from workstation.core.model_info import ModelInfo, read_model_info
from workstation.core.phrases import say
from workstation.core.planner import plan
from workstation.core.profiles import Profile
from workstation.core.ram_room import RAM_RESERVE_BYTES, paged_phrase, ram_free_now
from workstation.core.speed_estimate import paged_speed_note


def plan_with_draft(profile: Profile, info: ModelInfo, gpus: list[GpuInfo], *,
                    not_downloaded: bool = False, ram_freed: int = 0,
                    ram_available: int | None = None, ram_limit: int | None = None) -> MemoryPlan:
    """The target's plan, with the profile's draft model (``speculative.mode: draft``) counted in.

    The draft loads as the engine loads it (speculative.load_draft_model): the target's context,
    f16 K/V, and with ``draft_gpu_layers: auto`` all of it on the GPU when the target uses one,
    else none. Its GPU share is taken off the GPUs' free memory before the target's layers are
    chosen, so ``gpu_layers: auto`` leaves it room; a draft file that is not there yet is only
    named in a note (with ``not_downloaded``, a catalog draft is counted from its published shape).
    ``ram_available``, ``ram_limit``: as ``plan`` takes them, read now where not given (once:
    the pair is held to the same memory as the target alone).
    """
    if ram_available is None:
        ram_available, ram_limit = ram_free_now()
    context = profile.context or info.context_length
    flash = profile.resolved_flash_attn()

    from workstation.core.calibration import measured_cpu

    cpu_speed = measured_cpu()

    def target(on: list[GpuInfo]) -> MemoryPlan:
        return plan(info, context=context, type_k=profile.kv_cache.k, type_v=profile.kv_cache.v,
                    gpu_layers=profile.gpu_layers, gpus=on, flash_attn=flash, cpu_speed=cpu_speed,
                    ram_available=ram_available, ram_limit=ram_limit, ram_freed=ram_freed)

    spec = profile.speculative
    if spec.mode != "draft" or not spec.draft_model:
        return target(gpus)
    draft_path = Path(resolve_model_path(spec.draft_model))
    shaped = None
    if not draft_path.exists() and not_downloaded:
        from workstation.core.model_shapes import catalog_model

        shaped = catalog_model(spec.draft_model)
    if not draft_path.exists() and shaped is None:
        result = target(gpus)
        result.note_phrases.append(("fit.draft_not_downloaded", {"model": spec.draft_model}))
        return result
    dinfo = shaped[0] if shaped is not None else read_model_info(draft_path, check=False)
    asked = spec.draft_gpu_layers

    def draft(on: list[GpuInfo], layers: int | str) -> MemoryPlan:
        return plan(dinfo, context=context, gpu_layers=layers, gpus=on, flash_attn=flash, cpu_speed=cpu_speed,
                    ram_available=ram_available, ram_limit=ram_limit, ram_freed=ram_freed)

    d = draft(gpus, "all" if asked == "auto" else asked)
    left = [dataclasses.replace(g) for g in gpus]
    for dev in d.devices:
        if dev.kind == "gpu" and dev.layers:
            g = next(x for x in left if x.index == dev.index)
            g.vram_free = max(0, g.vram_free - dev.need_bytes)
    result = target(left)
    alone = result.fits  # (not: its verdict says so already, the draft's prefix said it twice)
    if asked == "auto" and result.gpu_layers == 0 and d.gpu_layers:
        d = draft(gpus, 0)  # the engine keeps the draft off a GPU the target does not use
    for dev in result.devices:
        same = next((x for x in d.devices if x.kind == dev.kind and x.index == dev.index), None)
        if same is not None and (same.layers or same.kind == "cpu"):
            dev.weights_bytes += same.weights_bytes
            dev.kv_cache_bytes += same.kv_cache_bytes
            dev.compute_bytes += same.compute_bytes
        dev.free_bytes = next((g.vram_free for g in gpus if g.index == dev.index), dev.free_bytes)
    result.vram_free = sum(g.vram_free for g in gpus)
    result.weights_bytes += d.weights_bytes
    result.kv_cache_bytes += d.kv_cache_bytes
    result.compute_bytes += d.compute_bytes
    result.repack_bytes += d.repack_bytes  # (in its total: fit's lines came short of it by the draft's copy)
    result.total_bytes += d.total_bytes
    result.gpu_bytes += d.gpu_bytes
    result.cpu_bytes += d.cpu_bytes
    result.resident_bytes += d.resident_bytes
    room = max(0, result.ram_available - RAM_RESERVE_BYTES)
    beside = next((p for p in result.verdict_phrases if p[0] == "fit.gpu_too_small"), None)
    if not alone and d.fits and d.gpu_layers and beside is not None:  # the model has no room beside its draft on
        # the card: it said "… 40 MB is usable; set gpu_layers to auto", of a card it had more of, and not why
        said = beside[1]
        result.verdict_phrases = [("fit.beside_draft_gpu_too_small", {
            **{k: said[k] for k in ("layers", "where", "need", "usable", "auto")},
            "draft_layers": d.gpu_layers, "draft_need": human_bytes(d.gpu_bytes)})]
    if result.resident_bytes > room or not d.fits:
        result.fits, result.placement, result.paged_bytes = False, "none", 0
        if alone and result.resident_bytes > room:  # the memory, for the pair: the target's verdict said
            # "does not fit with its small helper model: runs on the CPU, but slowly: … 163 MB more
            # free memory makes it fast", which it did not
            key = "fit.draft_pair_too_big" if result.ram_limit is None else "fit.draft_pair_too_big_limit"
            result.verdict_phrases = [(key, {"need": human_bytes(result.cpu_bytes), "have": human_bytes(room)})]
        elif not d.fits:  # the draft's own GPU layers (draft_gpu_layers) have no room: it said "does not fit
            # with its small helper model: runs on the CPU: needs …", the target's sentence that it fits
            too_small = next((p for p in d.verdict_phrases if p[0] == "fit.gpu_too_small"), None)
            # the target against the whole card, not beside a draft that has no room there (it said
            # "0 B is usable" of the target alone, and nothing of the draft, fixed next)
            own = None if alone else target(gpus)
            own_small = next((p for p in own.verdict_phrases if p[0] == "fit.gpu_too_small"), None) if own else None
            if too_small is not None and (own is None or own.fits):
                said = too_small[1]
                result.verdict_phrases = [("fit.draft_gpu_too_small", {
                    **{k: said[k] for k in ("layers", "where", "need", "usable")},
                    "fewer": ("fit.draft_gpu_fewer", {"layers": said["auto"]}) if said["auto"] else ""})]
            elif too_small is not None and own_small is not None:  # neither has room: both, in one sentence
                said = own_small[1]
                result.verdict_phrases = [("fit.pair_gpu_too_small", {
                    **{k: said[k] for k in ("layers", "where", "need", "usable")},
                    "draft_layers": too_small[1]["layers"], "draft_need": too_small[1]["need"]})]
    elif result.fits and result.cpu_bytes > room and result.paged_bytes != result.cpu_bytes - room:  # (the pair's weights page)
        result.paged_bytes = result.cpu_bytes - room
        said = paged_phrase(result.paged_bytes, result.cpu_bytes, room, result.ram_limit is not None,
                            result.devices[-1].total_bytes)
        kept = [p for p in result.verdict_phrases if p[0] not in ("fit.cpu", "fit.cpu_paged", "fit.paged")]
        cpu_phrase = next((p for p in result.verdict_phrases if p[0] in ("fit.cpu", "fit.cpu_paged")), None)
        result.verdict_phrases = [("fit.cpu_paged", {"why": cpu_phrase[1]["why"], "said": said})] \
            if cpu_phrase is not None else [*kept, ("fit.paged", {"said": said})]
    elif result.fits:  # the target's verdict counted the target alone: say the pair's whole need
        on_gpu: Any = ("fit.draft_on_gpu", {"gpu": human_bytes(result.gpu_bytes)}) if result.gpu_bytes else ""
        result.verdict_phrases.append(("fit.draft_pair", {"on_gpu": on_gpu, "ram": human_bytes(result.cpu_bytes)}))
    result.speed_note = paged_speed_note(result.speed_note, result.paged_bytes if result.fits else 0)  # (the pair's)
    result.verdict = say(result.verdict_phrases)
    result.note_phrases.append(("fit.draft_counted", {
        "model": installed_name(draft_path), "weights": human_bytes(d.weights_bytes), "kv": human_bytes(d.kv_cache_bytes),
        "where": ("fit.draft_on_the_gpu" if d.gpu_layers else "fit.draft_on_the_cpu", {}),
        "shaped": ("fit.draft_shaped", {}) if shaped is not None else ""}))
    result.draft = {"model": spec.draft_model, "path": str(draft_path), "gpu_layers": d.gpu_layers,
                    "total_layers": d.total_layers, "weights_bytes": d.weights_bytes,
                    "kv_cache_bytes": d.kv_cache_bytes, "compute_bytes": d.compute_bytes,
                    "repack_bytes": d.repack_bytes, "gpu_bytes": d.gpu_bytes, "cpu_bytes": d.cpu_bytes}
    return result
