"""How fast a plan decodes, as an estimate: how each device is timed (a card of the table by
its published figures, this PC's CPU by its own measurements, else the memory speed alone),
and a plan that runs but writes slower than people read, said in words and a page's time."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from workstation.core.catalog import human_bytes
from workstation.core.memory_plan import DevicePlan, MemoryPlan
from workstation.core.phrases import PAGE_WORDS, Lookup, Phrase, about_words, say, words_per_token
from workstation.core.profiles import Profile
from workstation.core.speed_model import SpeedConstants

GBPS = 1e9  # bandwidth tables are in decimal GB/s


def device_speed(d: DevicePlan, cpu_speed: SpeedConstants | None,
                 physical_cores: int | None = None) -> tuple[SpeedConstants, str] | None:
    """How ``size`` times a decode step on the device, and those words: a card of the table by
    published figures scaled to it (at the memory speed its driver reports, where it does: an
    RTX 3060 8 GB reads 240 GB/s, the 12 GB of the table's row 360), this machine's CPU by its
    own measurements; None where neither is known (its memory speed alone then). fit said 41
    tok/s for Qwen 2.5 14B on an RTX 3060 where size said 32. A CPU not measured here: a
    reference PC's figures scaled to its cores and assumed memory speed, as ``size`` times it
    (by the memory speed alone, fit said 207 tok/s for SmolLM2 where bench measured 80)."""
    if d.kind == "cpu":
        if cpu_speed is not None:
            return cpu_speed, "this PC's own measurements"
        from workstation.core.hardware import count_physical_cores
        from workstation.core.speed_model import default_cpu

        return (default_cpu(physical_cores or count_physical_cores(), d.bandwidth_gbps),
                "a reference PC's figures scaled to this one's cores and memory speed")
    from workstation.core.gpu_table import find_spec
    from workstation.core.speed_model import gpu_constants

    spec = find_spec(d.name)
    if spec is None:
        return None
    if d.bandwidth_gbps:
        spec = dataclasses.replace(spec, bandwidth_gbps=d.bandwidth_gbps)
    return gpu_constants(spec), f"published llama-bench figures scaled to the {d.name}"


def weights_read_seconds(p: MemoryPlan, cpu_speed: SpeedConstants | None = None) -> float:
    """The seconds a token of a plan on the CPU alone spends reading its weights from memory
    (``decode_bytes_per_token`` at the CPU's memory speed, as ``device_speed`` times it): the part
    of its estimate that grows with the model's size (the bandwidth rule), apart from the rest
    (per layer, per multiply), which a tiny model's replies measure. 0 for a plan with no CPU."""
    d = next((d for d in p.devices if d.kind == "cpu"), None)
    timed = device_speed(d, cpu_speed) if d is not None else None
    return p.decode_bytes_per_token * timed[0].s_per_byte if timed is not None else 0.0


FULL_KV_TYPES = ("f32", "f16", "bf16")  # K/V types llama.cpp's CPU reads as they are: the others are (de)quantized
# A K/V cache smaller than full size (q8_0, q4_0...) is quantized as it is written and dequantized
# as it is read: on a GPU with flash attention close to free, on the CPU a cost that the bytes saved
# do not pay back. SmolLM2 135M Q4_1 on the 2-core development PC, office-cpu against the same with
# kv_cache=q8_0 on a 2,094-word document (bench --document): 0.79x the tokens a second, 2.97x the wait
# for the first word; llama-bench -ctk/-ctv f16,q8_0 agreed in direction (its figures in the report).
CPU_QUANTIZED_KV_SPEED = 0.79


def quantized_kv(type_k: str, type_v: str) -> bool:
    """Whether the K or the V cache is of a quantized type (slower on the CPU: ``CPU_QUANTIZED_KV_SPEED``)."""
    return type_k not in FULL_KV_TYPES or type_v not in FULL_KV_TYPES


# said wherever an estimate counts it (fit's speed note, size's note under its table)
CPU_SLOWER: Phrase = ("speed.cpu_kv_slower", {"speed": f"{CPU_QUANTIZED_KV_SPEED:.2f}"})
CPU_SLOWER_SAID = say([CPU_SLOWER])


def kv_speed(d: DevicePlan, type_k: str, type_v: str) -> float:
    """The share of its decode speed device ``d`` keeps with these K/V types: ``CPU_QUANTIZED_KV_SPEED``
    where the CPU runs layers of a quantized K/V cache, else 1 (on a GPU close to free). The one
    rule the planner (F3, fit) and ``size`` time it by: size had its own ("timed as f16 at best")."""
    # (its repeating layers: the output layer alone on the CPU holds no K/V, and 32 of 33 layers on a
    # GPU were "counted at 0.79x on the CPU for its K/V cache")
    return CPU_QUANTIZED_KV_SPEED if quantized_kv(type_k, type_v) and d.kind == "cpu" and d.layers > d.output else 1.0


def kv_slowed_on_cpu(p: MemoryPlan) -> bool:
    """Whether the plan's speed counts a quantized K/V cache on the CPU (``CPU_QUANTIZED_KV_SPEED``):
    some layers on the CPU with K or V smaller than full size. E said "nearly exact" of q8_0, and
    its estimate stayed where bench measured 0.79x the speed and 2.97x the wait for the first word."""
    return any(kv_speed(d, p.type_k, p.type_v) < 1 for d in p.devices)


def layers_on_cpu(p: MemoryPlan) -> bool:
    """Whether the plan runs some of the model's layers on the CPU (F3's "(slower on a CPU)" of a
    smaller K/V stood beside "fits entirely on the GPU")."""
    return any(d.kind == "cpu" and d.layers for d in p.devices)


PAGED_SPEED = "; with all of it in memory: "


def paged_speed_note(note: str, paged: int) -> str:
    """The speed note of a plan whose weights are ``paged`` bytes short of memory: the estimate
    holds with all of it in memory, and says so (a model with its draft kept the model's own
    "16 MB read from the disk" beside a verdict of 1.6 GB)."""
    note = note.split(PAGED_SPEED)[0]
    return f"{note}{PAGED_SPEED}{human_bytes(paged)} read from the disk for every token is far slower" if paged else note


SLOW_TPS = 5.0  # tokens/s (about 4 words) under which a reply falls behind its reader
# the words a second a person reads a reply at (README: "a person reads about 5 words a second"):
# F5 says a reply is faster or slower than people read by the words a second it says beside it
READING_WORDS_A_SECOND = 5


def falls_behind_readers(tps: float) -> bool:
    """Whether replies written at ``tps`` tokens a second come slower than people read: under
    SLOW_TPS, in any language (the words a second are only how it is said). The one rule F3's and
    fit's "Slow here" (``slow_phrase``), F4's column and its suggestion judge by: F4 marked
    llama-3.2-1b "fits" and suggested the smaller qwen3-0.6b as the one "at least as fast as people
    read" by the Turkish words a second, a 1B one in English (F9 moved the ★)."""
    return tps < SLOW_TPS


def keeps_pace(tps: float, lookup: Lookup | None = None, per_token: float | None = None) -> bool:
    """Whether replies written at ``tps`` tokens a second come at least as fast as people read,
    judged by the words a second said of them (``about_words``, in ``lookup``'s language or at
    ``per_token`` words a token): F5 said "about 4 words a second, faster than people read" by
    SLOW_TPS's 5 tokens, and a Turkish reply at 5 tokens ("about 2 words") fast too."""
    return float(about_words(tps, lookup, per_token).replace(",", "")) >= READING_WORDS_A_SECOND


def slow_phrase(p: MemoryPlan, measured: float | None = None, lookup: Lookup | None = None,
                per_token: float | None = None) -> Phrase | None:
    """A plan that runs, but writes slower than people read: said beside "runs on the CPU"
    (fit said only that of an 8B model at 2 tokens/s, F3 gave no speed at all). ``measured``:
    what bench measured of it here, or the estimate on this PC's replies' footing (F4's), gone
    by before the plan's own estimate. ``lookup``: the language it is said in, whose words a
    token is (``words_per_token``); ``per_token``: the words a token of the replies it was
    measured by, in its place (``about_words``), so the figure is the one said beside it."""
    tps = measured or p.decode_tps_bound
    if not p.fits or p.paged_bytes or not tps or not falls_behind_readers(tps):  # (paged: its verdict says it is slow)
        return None
    # in words and a page's time, which a person pictures ("about 1.8 tokens a second" said neither)
    words_a_second = tps * (per_token or words_per_token(lookup))
    return ("fit.slow", {"words": about_words(tps, lookup, per_token), "minutes": round(PAGE_WORDS / words_a_second / 60)})


def profile_decode_tps(profile: Profile, store: Path | None = None) -> float | None:
    """How fast ``profile`` writes here, in tokens a second: what bench measured of its model
    file as the profile runs it (``calibration.measured_decode``, as fit says it), else the
    plan's estimate; for an office server's profile (a desk PC's), the median of the speeds of
    its last replies kept in the conversations' file ``store`` (the data folder's by default:
    the speeds F5 shows; a desk PC's summary said "…" until its first part had ended); None
    where there are none, or a plan that cannot be made. A summary says its time left from it
    before its first part is written."""
    if profile.backend != "llama":
        return _replies_tps(profile, store)
    from workstation.core.calibration import measured_decode
    from workstation.core.errors import WorkstationError
    from workstation.core.profile_plan import plan_for_profile

    try:
        plan = plan_for_profile(profile)
        measured = measured_decode(plan.path, plan.gpu_layers, plan.type_k, plan.type_v, profile.speculative.mode)
    except (WorkstationError, OSError, ValueError):
        return None
    tps = measured.value if measured is not None and measured.value else plan.decode_tps_bound
    return tps if tps and tps > 0 else None  # (a plan with no bound: no speed, not a division by zero)


def _replies_tps(profile: Profile, store: Path | None = None) -> float | None:
    """The median writing speed of the last replies ``profile`` wrote (by its ``Profile.ref``, as
    ``turn_record`` keeps it) in the conversations' file ``store``; None with none."""
    import sqlite3
    import statistics

    from workstation.core.errors import WorkstationError
    from workstation.core.paths import data_dir
    from workstation.core.store import DB_NAME, ConversationStore

    path = store or data_dir() / DB_NAME
    if not path.is_file():
        return None
    try:
        conversations = ConversationStore(path, read_only=True)  # (its own: a store is for one thread)
        try:
            speeds = conversations.reply_speeds("", [profile.ref])
        finally:
            conversations.close()
    except (OSError, sqlite3.Error, WorkstationError):  # (a damaged file: no speed, as before)
        return None
    return statistics.median(speeds) if speeds else None
