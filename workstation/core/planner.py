"""The memory plan (``plan``): will this model fit on these GPUs and this much free RAM, how
many layers go to the GPU, roughly how fast, and why, in words to be translated.

Everything is computed from the GGUF's own tensor table (bytes per layer, not a guess from
the file size). Its parts: what llama.cpp allocates (the K/V cache per layer, compute buffers,
repacked CPU weights) in ``llama_allocation``; the layers and the GPUs they go to in
``gpu_layers``; the RAM free and the weights paged from the disk in ``ram_room``; the speed
estimate in ``speed_estimate``; the context hint in ``context_hint``; the plan's data in
``memory_plan``. A profile's plan (its draft counted in by ``draft_plan``) is in
``profile_plan``; what loading it says in ``load_notes``; whether it can run in
``profile_readiness``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from workstation.core.address_space import LOAD_ADDRESS_SPACE_BYTES, address_space_limited
from workstation.core.catalog import human_bytes
from workstation.core.context_hint import context_hint
from workstation.core.gpu_layers import gpu_usable, layers_per_gpu, offloadable_layers
from workstation.core.hardware import GpuInfo, cpu_bandwidth_gbps, gpu_bandwidth_gbps
from workstation.core.installed_models import installed_name
from workstation.core.llama_allocation import (
    compute_bytes,
    cpu_repack_bytes,
    kv_cache_per_layer,
    kv_cells,
)
from workstation.core.memory_plan import DevicePlan, MemoryPlan
from workstation.core.model_info import ModelInfo
from workstation.core.model_shapes import active_params
from workstation.core.phrases import Phrase, rounded_words, say
from workstation.core.ram_room import RAM_RESERVE_BYTES, paged_phrase, ram_free_now
from workstation.core.speed_estimate import (
    CPU_SLOWER_SAID,
    GBPS,
    device_speed,
    kv_speed,
    paged_speed_note,
)
from workstation.core.speed_model import SpeedConstants


def plan(
    info: ModelInfo,
    *,
    context: int,
    type_k: str = "f16",
    type_v: str = "f16",
    gpu_layers: int | str = "auto",
    gpus: list[GpuInfo] | None = None,
    ram_available: int | None = None,
    ram_limit: int | None = None,
    ram_total: int | None = None,
    flash_attn: bool = True,
    n_ubatch: int = 512,
    swa_full: bool = True,
    physical_cores: int | None = None,
    cpu_flags: list[str] | None = None,
    cpu_speed: SpeedConstants | None = None,
    hint: bool = True,
    ram_freed: int = 0,
) -> MemoryPlan:
    """The memory plan for ``info`` on these GPUs and this much free RAM. ``cpu_speed``: this
    machine's CPU as measured here (``calibration.measured_cpu``), else its decode speed is
    its memory speed's estimate. ``hint``: a context too large for the memory names the ones
    that fit (False: the plans that find them). ``ram_freed``: RAM that is in use now but free
    before this model loads (the loaded model's, which a switch closes first). ``ram_available``
    and ``ram_limit`` as ``ram_free_now`` gives them, read now where ``ram_available`` is not given."""
    import psutil

    gpus = list(gpus or [])
    if ram_available is None:
        ram_available, ram_limit = ram_free_now()
    if ram_total is None:
        ram_total = psutil.virtual_memory().total
    if ram_freed:  # (a memory limit counts the engine's process too: closed, it is room under it)
        ram_available += ram_freed
        ram_limit = None if ram_limit is None else ram_limit + ram_freed
    n_layer = info.n_layer
    total_layers = offloadable_layers(n_layer)
    kv = kv_cache_per_layer(info, context, type_k, type_v, n_ubatch=n_ubatch, swa_full=swa_full)
    full_cells, swa_cells = kv_cells(info, context, n_ubatch, swa_full)
    comp = compute_bytes(info, context, n_ubatch=n_ubatch, flash_attn=flash_attn)
    comp_small = 4 * min(n_ubatch, full_cells) * (4 * info.n_embd + 2 * info.n_ff)
    output_on_gpu_bytes = info.output_bytes + (info.input_bytes if info.tied_embeddings else 0)

    def split(n: int) -> tuple[list[DevicePlan], bool]:
        """Devices for n offloaded layers; True when every GPU has room."""
        n = max(0, min(n, total_layers))
        start = n_layer - min(n, n_layer)  # first layer on a GPU
        counts = layers_per_gpu(n, gpus)
        devices: list[DevicePlan] = []
        ok = True
        order = list(range(start, n_layer)) + (["out"] if n > n_layer else [])
        pos = 0
        for g, c in zip(gpus, counts, strict=True):
            mine = order[pos : pos + c]
            pos += c
            w = sum(info.layer_bytes[i] if i != "out" else output_on_gpu_bytes for i in mine)  # type: ignore[index]
            k = sum(kv[i] for i in mine if i != "out")  # type: ignore[index]
            cb = comp if c else 0
            d = DevicePlan("gpu", g.name, g.index, c, w, k, cb, g.vram_free, g.vram_total,
                           g.bandwidth_gbps or gpu_bandwidth_gbps(g.name), "out" in mine)
            if c and d.need_bytes > gpu_usable(g):
                ok = False
            devices.append(d)
        cpu_w = info.input_bytes + sum(info.layer_bytes[:start]) + (0 if n > n_layer else info.output_bytes)
        cpu_k = sum(kv[:start])
        cpu_c = comp if n <= n_layer else comp_small
        devices.append(
            DevicePlan("cpu", "CPU", None, start + (0 if n > n_layer else 1), cpu_w, cpu_k, cpu_c,
                       ram_said, ram_total, cpu_bandwidth_gbps(physical_cores), n <= n_layer)
        )
        return devices, ok

    ram_room = max(0, ram_available - RAM_RESERVE_BYTES)
    # what is free for it, as said: under a limit, the limit's room (the reserve added to it
    # above is not there: F3 said "needs 0.9 GB of the 3.2 GB free" under a 2.5 GB limit)
    ram_said = ram_limit if ram_limit is not None else ram_available

    def hint_room(ctx: int, k: str, v: str) -> int | None:
        """Whether ``ctx`` tokens with K/V ``k``/``v`` fit this same memory: None where not,
        else the bytes of weights read from the disk as it runs (0: it runs fast)."""
        if not hint:
            return None
        other = plan(info, context=ctx, type_k=k, type_v=v, gpu_layers=gpu_layers, gpus=gpus,
                     ram_available=ram_available, ram_limit=ram_limit, ram_total=ram_total, flash_attn=flash_attn,
                     n_ubatch=n_ubatch, swa_full=swa_full, physical_cores=physical_cores,
                     cpu_flags=cpu_flags, cpu_speed=cpu_speed, hint=False)
        return other.paged_bytes if other.fits else None
    requested = gpu_layers
    notes: list[Phrase] = []
    if not gpus:
        n = 0
        if isinstance(gpu_layers, int) and gpu_layers > 0 or gpu_layers == "all":
            notes.append(("fit.no_gpu_found", {}))
    elif gpu_layers == "auto":
        n = 0
        for cand in range(total_layers, -1, -1):
            if split(cand)[1]:
                n = cand
                break
    elif gpu_layers == "all":
        n = total_layers
    else:
        n = min(int(gpu_layers), total_layers)
    devices, gpu_ok = split(n)
    cpu = devices[-1]
    gpu_devs = [d for d in devices if d.kind == "gpu" and d.layers]
    gpu_bytes = sum(d.need_bytes for d in gpu_devs)
    repack = cpu_repack_bytes(info, (n_layer - min(n, n_layer)) / n_layer if n_layer else 0.0, cpu_flags)
    cpu_bytes = cpu.need_bytes + repack
    vram_free = sum(g.vram_free for g in gpus)
    vram_total = sum(g.vram_total for g in gpus)
    weights = info.weights_bytes
    kv_total = sum(kv)
    comp_total = sum(d.compute_bytes for d in devices)
    total = weights + kv_total + comp_total + repack
    resident = cpu.kv_cache_bytes + cpu.compute_bytes + repack
    # ulimit -v counts the file's mapping (it must fit) and what the load maps besides llama.cpp's buffers
    extra = LOAD_ADDRESS_SPACE_BYTES if ram_limit is not None and address_space_limited() else 0
    if extra:
        resident += weights + extra
    # mapped weights that do not fit page in from the file as it runs (llama.cpp's mmap): it
    # fits, slowly, and says so; what must sit in RAM not fitting is what does not fit. (fit
    # said "does not fit" of such a model, and loading it went ahead, slowly, with no word why)
    cpu_ok = resident <= ram_room
    paged = max(0, cpu_bytes - ram_room) if cpu_ok else 0
    fits = gpu_ok and cpu_ok
    where: Phrase = ("fit.where_one", {}) if len(gpus) == 1 else ("fit.where_many", {"n": len(gpus)})
    phrases: list[Phrase]
    if not fits:
        placement = "none"
        have = ram_room + sum(gpu_usable(g) for g in gpus)
        need = weights + kv_total + comp + extra
        if not gpu_ok:
            usable = sum(gpu_usable(g) for g in gpus)
            auto_n = next((c for c in range(total_layers, -1, -1) if split(c)[1]), 0)
            phrases = [("fit.gpu_too_small", {"layers": n, "where": where, "need": human_bytes(gpu_bytes),
                                              "usable": human_bytes(usable), "auto": auto_n})]
        else:
            phrases = [("fit.too_big", {"need": human_bytes(need), "have": human_bytes(have),
                                        "reserve": human_bytes(RAM_RESERVE_BYTES)})
                       if ram_limit is None else
                       ("fit.too_big_limit", {"need": human_bytes(need), "have": human_bytes(have)})]
            if kv_total > weights / 2:
                phrases.extend(context_hint(info, context, type_k, type_v, kv_total, hint_room))
            phrases.append(("fit.smaller_model", {}))
    elif n >= total_layers and gpus:
        placement = "gpu"
        phrases = [("fit.gpu", {"where": where, "used": human_bytes(gpu_bytes), "total": human_bytes(vram_total)})]
    elif n > 0:
        placement = "partial"
        # llama.cpp's count (the output layer one of them), as "GPU layers: 32 of 33" says it beside it
        phrases = [("fit.partial", {"layers": n, "n_layer": total_layers, "where": where,
                                    "used": human_bytes(gpu_bytes), "total": human_bytes(vram_total)})]
    else:
        placement = "cpu"
        why: Any = "" if not gpus else (
            ("fit.cpu_layers_zero", {}) if isinstance(gpu_layers, int) else ("fit.cpu_no_room", {}))
        phrases = [("fit.cpu", {"why": why, "need": human_bytes(cpu_bytes), "free": human_bytes(ram_said)})]
    if repack and placement != "none":  # (F4 said Q4_0's 87 MB file needs 423 MB, Q8_0's 138 MB 417, unexplained)
        phrases.append(("fit.repacked", {"size": human_bytes(repack)}))
    if fits and paged:  # (on the CPU alone its sentence replaces "runs on the CPU: needs …")
        said_paged = paged_phrase(paged, cpu_bytes, ram_room, ram_limit is not None, ram_total)
        phrases = [("fit.cpu_paged", {"why": why, "said": said_paged})] if placement == "cpu" \
            else [*phrases, ("fit.paged", {"said": said_paged})]

    # Decode: every token reads each used device's weights (the output matrix included, the
    # token embeddings only one row) and the KV cache filled so far.
    # (weights read, kv at full context, GB/s, layers, how the device is timed where known, its
    # speed's share: a quantized K/V cache on the CPU is slower to write and read, on a GPU not)
    per_dev: list[tuple[int, int, float, int, tuple[SpeedConstants, str] | None, float]] = []
    for d in devices:
        w = d.weights_bytes
        if d.kind == "cpu":
            w -= info.input_bytes
            if info.tied_embeddings and n <= n_layer:
                w += info.input_bytes  # the output reuses the embedding matrix
        if d.layers or w:
            slowed = kv_speed(d, type_k, type_v)
            per_dev.append((max(w, 0), d.kv_cache_bytes, d.bandwidth_gbps, min(d.layers, n_layer),
                            device_speed(d, cpu_speed, physical_cores), slowed))
    bytes_tok = sum(w for w, *_ in per_dev)
    active = active_params(info)

    def step_seconds(at_full: bool) -> float:
        """One token's decode over the devices, as ``size`` times it where the device's speed
        is known (a card of the table, this CPU measured here), else by its memory speed."""
        total = 0.0
        for w, k, bw, layers, timed, speed in per_dev:
            kv_read = k if at_full else 0
            if timed is not None:
                share = w / bytes_tok if bytes_tok else 0.0
                total += timed[0].step_seconds(w, layers, active * share, 1, kv_read) / speed
            elif bw:
                total += (w + kv_read) / (bw * GBPS) / speed
        return total

    t_empty, t_full = step_seconds(False), step_seconds(True)
    tps = round(1 / t_empty, 1) if t_empty > 0 else None
    tps_full = round(1 / t_full, 1) if t_full > 0 else None
    from workstation.core.invocation import cli

    basis = sorted({timed[1] for *_, timed, _ in per_dev if timed is not None})
    if basis and any(timed is None and bw for _, _, bw, _, timed, _ in per_dev):  # (a part timed by a guess: said)
        basis.append("the memory speed alone of a card the table does not list")
    # not "at most": the CPU's memory speed is a guess from its cores, and a small model read
    # partly from the CPU's caches ran faster (234 tok/s measured against "at most 222")
    if tps and basis:
        how = " and ".join(basis)
        speed_note = f"about {rounded_words(tps)} tokens/s (an estimate from {how}; {cli('bench -p PROFILE')} measures it)"
    elif tps:
        speed_note = (f"about {rounded_words(tps)} tokens/s (an estimate: {human_bytes(bytes_tok)} read per token at the memory "
                      f"speed assumed for this machine; {cli('bench -p PROFILE')} measures it)")
    else:
        speed_note = "no speed estimate"
    if tps and any(speed < 1 for *_, speed in per_dev):
        speed_note = speed_note.replace(" measures it)", f" measures it; {CPU_SLOWER_SAID})")
    speed_note = paged_speed_note(speed_note, paged if fits else 0)
    return MemoryPlan(
        model=installed_name(Path(info.path)) or info.name,  # as 'models list' and profiles name it
        path=info.path,
        architecture=info.architecture,
        file_type=info.file_type,
        context=context,
        type_k=type_k,
        type_v=type_v,
        kv_cells=full_cells,
        swa_cells=swa_cells,
        weights_bytes=weights,
        kv_cache_bytes=kv_total,
        compute_bytes=comp_total,
        total_bytes=total,
        gpu_layers=n,
        total_layers=total_layers,
        requested_gpu_layers=requested,
        fits=fits,
        placement=placement,
        verdict=say(phrases),
        verdict_phrases=phrases,
        gpu_bytes=gpu_bytes,
        cpu_bytes=cpu_bytes,
        vram_free=vram_free,
        ram_available=ram_available,
        decode_bytes_per_token=bytes_tok,
        decode_tps_bound=tps,
        decode_tps_bound_full=tps_full,
        speed_note=speed_note,
        devices=devices,
        note_phrases=notes,
        repack_bytes=repack,
        ram_limit=ram_limit,
        resident_bytes=resident,
        paged_bytes=paged if fits else 0,
    )


