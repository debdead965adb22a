"""A profile's memory plan on this machine: its model read from its file (or planned from the
catalog's published shape before a download), its draft model counted in, the loaded model's
memory counted as free where a switch closes it first, the settings that work against the
user, and ``gpu_layers`` as the number a load passes to llama.cpp (refused before anything
loads where what must sit in RAM does not fit)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workstation.core.catalog import human_bytes, resolve_model_path, stated_bytes
from workstation.core.draft_plan import plan_with_draft
from workstation.core.errors import WorkstationError
from workstation.core.hardware import GpuInfo
from workstation.core.installed_models import installed_name
from workstation.core.memory_plan import FreedMemory, MemoryPlan, counting_freed
from workstation.core.model_info import ModelInfo, read_model_info
from workstation.core.phrases import Phrase
from workstation.core.profiles import Profile
from workstation.core.ram_room import RAM_RESERVE_BYTES

if TYPE_CHECKING:
    from workstation.core.events import EngineInfo


def plan_for_profile(profile: Profile, gpus: list[GpuInfo] | None = None, *,
                     not_downloaded: bool = False, freed: FreedMemory | None = None,
                     ram_available: int | None = None, ram_limit: int | None = None) -> MemoryPlan:
    """The plan for a profile on this machine (NVML for the GPUs unless ``gpus`` is given).

    Fast (the GGUF header is cached) and never raises for a missing GPU; a missing or damaged
    model file raises ModelFileError. With ``not_downloaded``, a catalog model not downloaded
    yet (the target or the draft) is planned from its published shape, as ``size`` plans it,
    and a note says so: "will it fit" before a 5 GB download. ``freed``: what the loaded
    model holds, counted as free (``memory_held``: a switch closes it before this one loads).
    ``ram_available``, ``ram_limit``: as ``plan`` takes them (read now where not given).
    """
    from workstation.core import hardware

    info, note = profile_model_info(profile.model, not_downloaded)
    if gpus is None:
        gpus = hardware.gpus()
    gpus = counting_freed(gpus, freed)
    result = plan_with_draft(profile, info, gpus, not_downloaded=not_downloaded,
                             ram_freed=freed.ram_bytes if freed is not None else 0,
                             ram_available=ram_available, ram_limit=ram_limit)
    if note:
        result.note_phrases.insert(0, note)
    result.note_phrases += setting_phrases(profile, info)
    return result


def profile_model_info(ref: str, not_downloaded: bool) -> tuple[ModelInfo, Phrase | None]:
    """The model's info from its file, else (``not_downloaded``) from the catalog's published
    shape with a note that says how to download it; a missing file otherwise says how to get it."""
    path = Path(resolve_model_path(ref))
    if not_downloaded and not path.exists():
        from workstation.core.catalog import catalog_entry
        from workstation.core.invocation import cli
        from workstation.core.model_shapes import catalog_model

        shaped = catalog_model(ref)
        if shaped is not None:
            entry = catalog_entry(ref) or {}
            size: Any = ("fit.model_size", {"size": human_bytes(stated_bytes(entry["approx_size_gb"]))}) \
                if entry.get("approx_size_gb") else ""
            return shaped[0], ("fit.model_shaped", {"model": ref, "quant": shaped[0].file_type,
                                                    "command": cli("models pull " + ref), "size": size})
    return read_model_info(path, check=False), None


def memory_held(profile: Profile, loaded: EngineInfo) -> FreedMemory:
    """What the engine loaded for ``profile`` holds, as the plan counts it for the settings it
    was loaded with (``loaded``: its model file, its slots' context together, K/V types, GPU
    layers, flash attention; the profile's draft model with it). F3 counted it as taken, and
    a profile that fits once the switch has closed it was said not to fit. Nothing where its
    file cannot be read now."""
    sized = dataclasses.replace(
        profile, model=loaded.model_path, context=loaded.n_ctx * max(1, loaded.parallel),
        gpu_layers=loaded.gpu_layers, kv_cache=dataclasses.replace(profile.kv_cache, k=loaded.type_k, v=loaded.type_v),
        flash_attn="on" if loaded.flash_attn else "off")
    try:
        held = plan_for_profile(sized)
    except WorkstationError:
        return FreedMemory(model=loaded.model_name)
    cpu = next(d for d in held.devices if d.kind == "cpu")
    return FreedMemory(
        ram_bytes=cpu.kv_cache_bytes + cpu.compute_bytes + held.repack_bytes,
        vram_bytes={d.index: d.need_bytes for d in held.devices if d.kind == "gpu" and d.layers and d.index is not None},
        model=loaded.model_name)


def memory_held_by(profile: Profile | None, engine: Any) -> FreedMemory | None:
    """``memory_held`` of what ``engine`` (an engine, or serve's scheduler: anything with
    ``info()``) loaded for ``profile``; None with no local model loaded. A switch counts it as
    free before the chosen profile loads, and the notes said once a model has loaded count it
    as free (serve counted its own model as taken, and said a model that ran fast ran slowly)."""
    if profile is None or profile.backend != "llama" or engine is None or not hasattr(engine, "info"):
        return None
    return memory_held(profile, engine.info())


def setting_phrases(profile: Profile, info: ModelInfo) -> list[Phrase]:
    """Settings that load but work against the user: more threads than cores (llama.cpp's
    threads wait for each other at every step, so the extra ones only stall it), and a
    context past what the model was trained for (llama.cpp warns too: answers degrade there)."""
    from workstation.core.hardware import count_physical_cores

    out: list[Phrase] = []
    cores = count_physical_cores()
    if isinstance(profile.threads, int) and profile.threads > cores:
        out.append(("fit.threads_past_cores", {"threads": str(profile.threads), "cores": str(cores)}))
    if info.context_length and profile.context > info.context_length:
        out.append(("fit.context_past_trained", {"context": f"{profile.context:,}", "trained": f"{info.context_length:,}",
                                                 "model": installed_name(Path(info.path))}))
    if not info.has_chat_template:  # (its replies ran on, with raw <|im_end|> markers, and nothing said why)
        out.append(("fit.no_chat_template", {"model": installed_name(Path(info.path))}))
    return out


def resolve_gpu_layers(profile: Profile, result: MemoryPlan | None = None) -> int:
    """``gpu_layers`` as a number: explicit values pass, ``all`` is every layer, ``auto`` asks the
    plan (``result``, made where not given; 0 when there is no GPU)."""
    gl = profile.gpu_layers
    if isinstance(gl, int):
        return gl
    if gl == "all":
        return 999
    return (result or plan_for_profile(profile)).gpu_layers


def gpu_layers_for_load(profile: Profile, n_ctx: int | None = None, *, freed: FreedMemory | None = None) -> int:
    """``resolve_gpu_layers`` for loading the profile now with ``n_ctx`` tokens of context in
    all (its slots together; the profile's context where not given): EngineError, before
    anything is loaded, where what must sit in RAM (the CPU's share of the K/V cache, compute
    buffers, repacked weights) is more than the memory free for it, as the plan's verdict
    counts it (less its reserve for the system): ``profiles check`` and ``fit`` said "does not
    fit", and chat loaded it anyway: a 1M-token context took all of a 23 GB machine. The
    weights are not counted (mapped from their file, they page in and out: a model larger
    than the memory runs, slowly, and the verdict and ``load_notes`` say so and why); nor is
    anything where the profile asks for GPU layers and NVML sees no GPU (a
    Vulkan build, an AMD card: the plan cannot know where the layers go). Too many GPU layers
    are left to llama.cpp (a CUDA build says so itself). ``freed``: the loaded model's memory,
    to be freed before this one loads (``memory_held``: a switch asks before it closes it)."""
    import dataclasses

    from workstation.core.errors import EngineError

    sized = dataclasses.replace(profile, context=n_ctx) if n_ctx and n_ctx != profile.context else profile
    result = plan_for_profile(sized, freed=freed)
    gl = profile.gpu_layers
    unseen_gpu = (gl == "all" or isinstance(gl, int) and gl > 0) and not any(d.kind == "gpu" for d in result.devices)
    # the room the plan's verdict counts: what is free less the system's reserve, or under a
    # memory limit the limit's room (the reserve is not within it: a 3 GB context passed under
    # a 2.5 GB cgroup, and the kernel killed the load with no word). The load went ahead within
    # the reserve, where fit said "does not fit"
    room = max(0, result.ram_available - RAM_RESERVE_BYTES)
    if not result.fits and not unseen_gpu and result.resident_bytes > room:
        raise EngineError(said=[("fit.refused", {"profile": profile.name, "verdict": result.verdict_phrases})])
    return resolve_gpu_layers(sized, result)
