"""``workstation size``: from a workload to a machine, a model, a quantization and settings.

For each candidate machine (the GPUs of the shipped table, this machine's CPU as measured, and
any GPU NVML reports here) x catalog model x weight quantization x K/V type x slots:

* **fits** - the planner (``planner.plan``) on that card's memory; a GPU option must hold the
  whole model (a partly offloaded model is no office server);
* **speed at load** - ``speed_model``: the busy hour's chats arrive at ``people x chats per
  hour``; each holds a slot for its prefill and its reply, so ``1 + arrival rate x reply time``
  sequences decode together (Little's law, solved as a fixed point, at most ``slots``); a
  person then reads ``1 / t_step(B)`` tokens/s, less the share of time spent reading other
  people's prompts. Waiting for a free slot is Erlang C over the slots;
* **TTFT at load** - the wait for a slot, the prompt read, one step;
* **documents per night** - each document's prompt read (map-reduce chunks) and its summaries
  decoded ``slots`` at a time over ``night_hours``;
* **quality** - the ``eval`` history's accuracy on the workload's task set for that model
  file, "not measured" otherwise.

Ranking, among the options that meet every target: the cheapest machine (this machine costs
nothing), then the largest model, the most bits per weight, the least quantized K/V, the
fastest per person, the fewest slots. Deterministic for the same inputs.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from workstation.core.calibration import SAID, for_json
from workstation.core.catalog import GB, QUANT_SUFFIX, human_bytes
from workstation.core.gpu_layers import GPU_RESERVE_BYTES, GPU_RESERVE_FRACTION
from workstation.core.gpu_table import GpuSpec, cards_named, find_spec, sizing_specs
from workstation.core.hardware import GpuInfo, table_gpu
from workstation.core.model_info import ModelInfo
from workstation.core.model_shapes import (
    QUANT_BPW,
    active_params,
    at_quantization,
    candidate_models,
    catalog_model,
    thinks_first,
)
from workstation.core.phrases import Phrase, say, speed_figure
from workstation.core.planner import plan
from workstation.core.profiles import SERVE_SLOTS, Profile
from workstation.core.speed_estimate import CPU_SLOWER, kv_speed, quantized_kv
from workstation.core.speed_model import SpeedConstants, gpu_constants
from workstation.core.workload import Workload

DEFAULT_QUANTS = ("Q4_K_M", "Q5_K_M", "Q8_0")
DEFAULT_KV = ("f16", "q8_0", "q4_0")
DEFAULT_SLOTS = (1, 2, 4, 8)
HOST_RAM = 64 * GB  # the PC a proposed GPU sits in (only the token embeddings stay in RAM)
KV_BITS = {"f32": 32, "f16": 16, "bf16": 16, "q8_0": 8.5, "q5_1": 6, "q5_0": 5.5, "q4_1": 5, "q4_0": 4.5, "iq4_nl": 4.5}
THIS_MACHINE = "this machine (CPU)"


@dataclass
class Machine:
    name: str
    kind: str  # gpu | cpu
    memory_bytes: int  # VRAM, or RAM available now
    bandwidth_gbps: float
    price_usd: float | None  # None: unknown; 0: already here
    speed: SpeedConstants
    here: bool = False  # this machine (measured), not a table row
    gpu: GpuInfo | None = None
    ram_total: int = 0


@dataclass
class SizingOption:
    machine: str
    machine_kind: str
    here: bool
    price_usd: float | None
    model: str
    quant: str
    kv_type: str
    slots: int
    context: int  # tokens per slot
    on_disk: bool
    fits: bool
    memory_verdict: str
    weights_bytes: int = 0  # these three: what goes in memory_bytes (a card's share, or all in RAM)
    kv_cache_bytes: int = 0
    compute_bytes: int = 0
    memory_bytes: int = 0  # what the card has
    tps_per_person: float = 0.0
    tps_single: float = 0.0  # one person alone
    tps_all_slots: float = 0.0  # each person with every slot decoding together
    ttft_queued_s: float = math.inf  # the first word of one who asks when every slot is taken (slots + 1 at once)
    aggregate_tps: float = 0.0
    ttft_s: float = math.inf
    busy_slots: float = 0.0  # sequences decoding together at the busy hour
    chats_per_hour: float = 0.0  # the most chats an hour it can take with every slot busy
    utilization: float = 0.0
    docs_per_night: int = 0
    quality: float | None = None
    quality_loss: float | None = None
    quality_note: str = "not measured"
    meets: bool = False
    misses: list[str] = field(default_factory=list)  # in English: say(miss_phrases) each
    params: int = 0
    miss_phrases: list[Phrase] = field(default_factory=list)  # the misses, to be translated
    quality_phrase: Phrase = ("size.not_measured", {})  # quality_note, to be translated

    def miss(self, key: str, **values: Any) -> None:
        """One more target this option misses (``miss.*`` in phrases.ENGLISH)."""
        self.miss_phrases.append((key, values))
        self.misses.append(say([(key, values)]))

    @property
    def need_bytes(self) -> int:
        return self.weights_bytes + self.kv_cache_bytes + self.compute_bytes

    def summary_phrase(self) -> Phrase:
        where: Phrase | str = ("headline.this_cpu", {}) if self.here else self.machine
        return ("headline.summary", {"where": where, "model": model_family(self.model), "quant": self.quant,
                                     "kv": self.kv_type, "slots": _slots(self.slots),
                                     "tps": speed_figure(self.tps_per_person, 1), "ttft": _secs(self.ttft_s)})

    def summary(self) -> str:
        return say([self.summary_phrase()])

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        del d["miss_phrases"], d["quality_phrase"]
        d["need_bytes"] = self.need_bytes
        d["ttft_s"] = None if math.isinf(self.ttft_s) else round(self.ttft_s, 3)
        d["ttft_queued_s"] = None if math.isinf(self.ttft_queued_s) else round(self.ttft_queued_s, 3)
        for k in ("tps_per_person", "tps_single", "tps_all_slots", "aggregate_tps", "busy_slots", "utilization", "chats_per_hour"):
            d[k] = round(d[k], 3)
        return d


def _slots(n: int) -> Phrase:
    return ("headline.slot" if n == 1 else "headline.slots", {"n": n})


def _people(n: int) -> Phrase:
    """"20 people", "1 person" (it said "1 people")."""
    return ("headline.n_person", {}) if n == 1 else ("headline.n_people", {"n": f"{n:,}"})


def crowd(o: SizingOption) -> Phrase:
    """What a person gets when every slot is taken: each one's speed with all of them decoding
    together (a CPU shares its speed among them), and the first word of one who asks then
    (12 people were said "about 69 tokens a second" where 4 at once got 12 each)."""
    wait = _secs(o.ttft_queued_s)
    if o.slots == 1:
        return ("headline.crowd_one", {"wait": wait})
    return ("headline.crowd", {"tps": speed_figure(o.tps_all_slots), "n": o.slots, "wait": wait})


def _secs(s: float) -> Phrase:
    """A wait in seconds as the table writes it, one decimal ("1.0 s"; more only under 0.1 s,
    as a speed: ``speed_figure``): the sentences said "954 ms" beside the table's "1.0 s"."""
    if math.isinf(s):
        return ("headline.never", {})
    return ("unit.s", {"n": speed_figure(s, 1)})


# --- machines -----------------------------------------------------------------------------------
def table_machine(spec: GpuSpec) -> Machine:
    gpu = table_gpu(spec)
    return Machine(spec.name, "gpu", spec.vram_bytes, spec.bandwidth_gbps, spec.price_usd,
                   gpu_constants(spec), gpu=gpu)


def local_machines(cpu_speed: SpeedConstants, gpus: list[GpuInfo], ram_available: int, ram_total: int,
                   cpu_bandwidth: float) -> list[Machine]:
    """This machine: its CPU (calibrated here) and each GPU NVML reports, at its free memory now."""
    out = [Machine(THIS_MACHINE, "cpu", ram_available, cpu_bandwidth, 0.0, cpu_speed, here=True,
                   ram_total=ram_total)]
    for g in gpus:
        spec = find_spec(g.name) or GpuSpec(g.name, g.name, g.vram_total / GB, g.bandwidth_gbps or 250, 50)
        if g.bandwidth_gbps:  # the driver's memory speed: an RTX 3060 8 GB is no 12 GB's 360 GB/s
            spec = dataclasses.replace(spec, bandwidth_gbps=g.bandwidth_gbps)
        out.append(Machine(f"this machine's {g.name}", "gpu", g.vram_free, g.bandwidth_gbps or spec.bandwidth_gbps,
                           0.0, gpu_constants(spec), here=True, gpu=g))
    return out


def candidate_machines(workload: Workload, local: list[Machine]) -> list[Machine]:
    named = cards_named(workload.candidates.gpus)[0] if workload.candidates.gpus else sizing_specs()
    return [*local, *(table_machine(s) for s in named)]


# --- the load model -----------------------------------------------------------------------------
def erlang_c(servers: int, load: float) -> float:
    """Probability an arrival waits (M/M/c) with ``load`` erlangs offered to ``servers``."""
    if load <= 0:
        return 0.0
    if load >= servers:
        return 1.0
    term, total = 1.0, 1.0
    for k in range(1, servers):
        term *= load / k
        total += term
    last = term * load / servers * servers / (servers - load)
    return last / (total + last)


@dataclass
class ModelCost:
    """What one decode and one prompt cost for a model on a machine."""

    weights_read: float
    n_layer: int
    active: float
    kv_per_token: float  # K/V bytes of one cell, all layers
    speed: float = 1.0  # the share of its decode speed the machine keeps for the K/V type (kv_speed)

    def step_seconds(self, machine: SpeedConstants, sequences: float, cells: float) -> float:
        """One decode step of ``sequences`` with ``cells`` K/V cells filled each."""
        return machine.step_seconds(self.weights_read, self.n_layer, self.active, sequences,
                                    self.kv_per_token * cells) / self.speed


def load_figures(speed: SpeedConstants, cost: ModelCost, w: Workload, slots: int) -> dict[str, float]:
    """Per-person speed, TTFT, busy sequences and utilization at the busy hour; and, for the
    plain answer, the speed of each person with every slot decoding (``full``) and the first
    word of one who asks when more ask at once than there are slots (``queued``)."""
    lam = w.chats_per_second
    pp = speed.prefill_tps(cost.active)
    fill = w.prompt_tokens + w.reply_tokens / 2  # cells a reply reads on average
    read = w.prompt_tokens / pp  # one prompt read

    def step(b: float) -> float:
        # a step's time is linear in the sequences decoding: 1.7 on average is between 1 and 2
        # (rounded, the speed fell by a third from 60 people to 80)
        return cost.step_seconds(speed, max(1.0, b), fill)

    prefill_share = min(0.999, lam * read)  # time spent reading prompts
    busy = 1.0
    for _ in range(60):
        t_reply = w.reply_tokens * step(busy) / (1 - prefill_share)
        new = min(float(slots), 1.0 + lam * t_reply)
        if abs(new - busy) < 1e-4:
            break
        busy = 0.5 * (busy + new)
    tps = (1 - prefill_share) / step(busy)
    t_full = read + w.reply_tokens * step(slots) / (1 - prefill_share)
    offered = lam * t_full
    # every slot busy: each chat's prompt is read alone, its reply shares the steps
    capacity = 1 / (read + w.reply_tokens * step(slots) / slots)  # chats/s
    util = max(offered / slots, lam / capacity)
    if util >= 1:
        ttft = math.inf
    else:
        wait = erlang_c(slots, offered) * t_full / (slots - offered)
        # the CPU reads one prompt at a time: a prompt that arrives while another is read waits
        # for it (M/D/1), slots free or not
        read_wait = prefill_share * read / (2 * (1 - prefill_share))
        ttft = wait + read_wait + read + step(busy)
    # more ask at once than there are slots (slots + 1 together): the slots' prompts are read,
    # their replies decode together, and only then is the next one's prompt read
    queued = slots * read + w.reply_tokens * step(slots) + read + step(1)
    single = 1 / step(1)
    return {"tps": tps, "single": single, "busy": busy, "util": util, "ttft": ttft,
            "aggregate": slots / step(slots), "pp": pp, "step_slots": step(slots),
            "capacity": capacity * 3600, "full": 1 / step(slots), "queued": queued}


def docs_per_night(speed: SpeedConstants, cost: ModelCost, w: Workload, slots: int) -> int:
    usable = max(512, w.slot_context - w.summary_tokens - 256)
    chunks = max(1, math.ceil(w.document_tokens / usable))
    gen = chunks * w.summary_tokens + (w.summary_tokens if chunks > 1 else 0)
    read = w.document_tokens + (chunks * w.summary_tokens if chunks > 1 else 0)
    pp = speed.prefill_tps(cost.active)
    step = cost.step_seconds(speed, slots, min(w.document_tokens, usable))
    per_doc = read / pp + gen * step / slots
    return int(w.night_hours * 3600 / per_doc)


# --- quality from the eval history ----------------------------------------------------------------
def measured_quality(task_set: str | None) -> dict[str, float]:
    """Accuracy by model file name on ``task_set`` (newest run first wins)."""
    if not task_set:
        return {}
    from pathlib import Path

    from workstation.core.results import history

    out: dict[str, float] = {}
    for e in history(kind="eval", test="accuracy", limit=2000):
        if e.data.get("task_set") != task_set or e.value is None:
            continue
        out.setdefault(Path(e.model).name, float(e.value))
    return out


# --- options ----------------------------------------------------------------------------------------
def _quants(info: ModelInfo, wanted: list[str]) -> list[str]:
    quants = list(wanted or DEFAULT_QUANTS)
    if info.file_type and info.file_type.upper() in QUANT_BPW and info.file_type.upper() not in quants and not wanted:
        quants.append(info.file_type.upper())
    return quants


def evaluate(machine: Machine, model: str, info: ModelInfo, on_disk: bool, quant: str, kv: str,
             slots: int, w: Workload, quality: dict[str, float], best_quality: float | None) -> SizingOption:
    q_info = at_quantization(info, quant)
    ctx = w.slot_context
    opt = SizingOption(machine.name, machine.kind, machine.here, machine.price_usd, model, quant, kv,
                       slots, ctx, on_disk and q_info is info, False, "", memory_bytes=machine.memory_bytes,
                       params=q_info.parameter_count)
    if machine.kind == "gpu":
        assert machine.gpu is not None
        usable = machine.gpu.vram_free - GPU_RESERVE_BYTES - int(GPU_RESERVE_FRACTION * machine.gpu.vram_total)
        on_card = q_info.weights_bytes - q_info.input_bytes  # the token embeddings stay in RAM, at the least
        if on_card > usable:
            opt.weights_bytes = on_card
            opt.memory_verdict = f"does not fit: the weights alone take {human_bytes(on_card)} of {human_bytes(usable)} usable"
            opt.miss("miss.no_fit")
            return opt
        p = plan(q_info, context=ctx * slots, type_k=kv, type_v=kv, gpu_layers="all", gpus=[machine.gpu],
                 ram_available=HOST_RAM, ram_total=HOST_RAM, hint=False)
        opt.fits = p.fits and p.placement == "gpu"
    else:
        p = plan(q_info, context=ctx * slots, type_k=kv, type_v=kv, gpu_layers=0, gpus=[],
                 ram_available=machine.memory_bytes, ram_total=machine.ram_total or machine.memory_bytes, hint=False)
        opt.fits = p.fits and not p.paged_bytes  # (weights read from the disk as it runs: no machine to buy)
    opt.memory_verdict = p.verdict
    # what must fit in this machine's memory, as the verdict counts it: on a card, its share
    # (llama.cpp keeps the token embeddings in RAM); on a CPU, everything and the repacked weights
    on_it = [d for d in p.devices if d.kind == machine.kind]
    opt.weights_bytes = sum(d.weights_bytes for d in on_it)
    opt.kv_cache_bytes = sum(d.kv_cache_bytes for d in on_it)
    opt.compute_bytes = sum(d.compute_bytes for d in on_it) + (p.repack_bytes if machine.kind == "cpu" else 0)
    if not opt.fits:
        opt.miss("miss.no_fit")
        return opt
    kv_read = p.kv_cache_bytes / max(1, p.kv_cells)
    # a CPU writes and reads a q8_0 or q4_0 cache more slowly than f16's, not faster for its size:
    # by the planner's rule and figure (F3 and fit), not one of its own (kv_note says it)
    slowed = min((kv_speed(d, p.type_k, p.type_v) for d in on_it), default=1.0)
    cost = ModelCost(p.decode_bytes_per_token, q_info.n_layer, active_params(q_info), kv_read, slowed)
    f = load_figures(machine.speed, cost, w, slots)
    opt.tps_per_person, opt.tps_single, opt.busy_slots = f["tps"], f["single"], f["busy"]
    opt.utilization, opt.ttft_s, opt.aggregate_tps = f["util"], f["ttft"], f["aggregate"]
    opt.chats_per_hour = f["capacity"]
    opt.tps_all_slots, opt.ttft_queued_s = f["full"], f["queued"]
    opt.docs_per_night = docs_per_night(machine.speed, cost, w, slots)
    if w.quality.tasks:
        acc = quality.get(_file_name(model)) if opt.on_disk else None
        if acc is not None:
            opt.quality = acc
            opt.quality_loss = (best_quality - acc) if best_quality is not None else 0.0
            opt.quality_phrase = ("size.quality_on", {"percent": f"{acc:.0%}", "tasks": w.quality.tasks})
            if opt.quality_loss > w.quality.max_loss + 1e-9:
                opt.miss("miss.quality", points=f"{opt.quality_loss * 100:.0f}")
    else:
        opt.quality_phrase = ("size.no_floor", {})
    opt.quality_note = say([opt.quality_phrase])
    if opt.params < w.quality.min_params_b * 1e9:
        opt.miss("miss.params", billions=f"{w.quality.min_params_b:g}")
    if opt.utilization >= 1:  # speed and wait mean nothing when the queue grows without end
        opt.tps_per_person = 0.0
        opt.miss("miss.overloaded", most=f"{opt.chats_per_hour:,.0f}", busy=f"{w.chats_per_second * 3600:,.0f}")
    else:
        if opt.tps_per_person < w.latency.tokens_per_second:
            opt.miss("miss.tps", tps=speed_figure(opt.tps_per_person, 1), goal=f"{w.latency.tokens_per_second:g}")
        if opt.ttft_s > w.latency.ttft_s:
            opt.miss("miss.ttft", ttft=_secs(opt.ttft_s), goal=f"{w.latency.ttft_s:g}")
    if opt.docs_per_night < w.documents_per_day:
        opt.miss("miss.docs", docs=f"{opt.docs_per_night:,}", goal=f"{w.documents_per_day:,}")
    opt.meets = not opt.misses
    return opt


QUALITY_MISSES = ("miss.quality", "miss.params")  # the model's quality: no target a faster machine meets


def load_misses(o: SizingOption) -> list[Phrase]:
    """The targets ``o`` misses for the load (memory, speed, wait, documents), not the model's
    quality: "fast and failing at once" was a 135M model's size said as a miss of the speeds."""
    return [m for m in o.miss_phrases if m[0] not in QUALITY_MISSES]


def _file_name(model: str) -> str:
    from workstation.core.catalog import catalog_entry

    entry = catalog_entry(model) or {}
    return str(entry.get("file", model))


def rank_key(o: SizingOption) -> tuple[Any, ...]:
    price = 0.0 if o.here else (o.price_usd if o.price_usd is not None else 1e9)
    # at the same speed a shorter wait for the first word wins, then fewer slots: a 4090 was
    # advised with 1 slot where 2 began replies in 0.3 s instead of 1.3 s
    ttft = round(o.ttft_s, 2) if o.ttft_s is not None and math.isfinite(o.ttft_s) else math.inf
    return (not o.meets, price, -o.params, -QUANT_BPW.get(o.quant, 0), -KV_BITS.get(o.kv_type, 0),
            -round(o.tps_per_person, 3), ttft, o.slots, o.machine, o.model)


def closeness_key(o: SizingOption) -> tuple[Any, ...]:
    """For a workload nothing meets: the fitting options that take the most chats an hour
    first (a load problem is solved by capacity), then the fewest misses."""
    return (not o.fits, -round(o.chats_per_hour, 1), len(o.misses), -o.tps_per_person, o.machine, o.model,
            o.quant, o.kv_type, o.slots)


@dataclass
class SizingResult:
    workload: Workload
    options: list[SizingOption]  # ranked: meeting ones first
    calibration: dict[str, Any]
    memory_history: dict[str, Any]
    skipped_models: list[str]
    laptop: bool | None = False  # this PC is a laptop (hardware.is_laptop); None: not known; False: not one
    serve_slots: int = SERVE_SLOTS  # the slots 'serve' runs for the profile (its parallel, else serve's default)
    profile_model: str | None = None  # the profile's model (a catalog name), where it runs one here
    remote: str = ""  # the office server the profile asks (backend: openai): this sizing is this PC's, not its
    _machines: list[Machine] = field(default_factory=list)  # for "what if" re-evaluation
    _infos: dict[str, tuple[ModelInfo, bool]] = field(default_factory=dict)

    @property
    def meeting(self) -> list[SizingOption]:
        return [o for o in self.options if o.meets]

    @property
    def best(self) -> SizingOption | None:
        return self.meeting[0] if self.meeting else None

    def shown(self, top: int) -> list[SizingOption]:
        """The options a report lists: those meeting the workload, else the closest ones."""
        return self.meeting[:top] if self.meeting else sorted(self.options, key=closeness_key)[:top]

    def best_per_machine(self, n: int | None = None) -> list[SizingOption]:
        """The best option of each machine that meets the workload, cheapest first; every
        machine where ``n`` is None (8 left out the 24 GB cards: "what would a 4090 do?")."""
        return first_per_machine(self.options, n if n is not None else len(self.options), lambda o: o.meets)

    def headline(self) -> str:
        return say(self.headline_phrases())

    def headline_phrases(self) -> list[Phrase]:
        """The headline as phrases (core/phrases.py), for the TUI to say in its language."""
        b = self.best
        w = self.workload
        if b is None:
            return self.nothing_fits()
        where: Phrase = ("headline.here_cpu", {}) if b.here and b.machine_kind == "cpu" else (
            ("headline.use", {"machine": b.machine}) if b.here else self.buy_card(b))
        return [("headline.best", {
            "where": where, "model": model_family(b.model), "quant": b.quant, "kv": b.kv_type,
            "thinking": ("headline.thinking_off", {}) if thinks_first(b.model) else "",
            "slots": _slots(b.slots), "tps": speed_figure(b.tps_per_person),
            "who": ("headline.one_person", {}) if w.people == 1 else ("headline.everyone", {"people": f"{w.people:,}"}),
            "ttft": _secs(b.ttft_s), "docs": f"{b.docs_per_night:,}", "parallel": self.served_with(b)}),
            *self.get_it(b)]

    def served_with(self, o: SizingOption) -> Phrase | str:
        """'' where ``serve`` runs ``o``'s slots for the profile (its ``parallel``, else serve's
        default); else how to start it so (size planned 8 slots where serve ran 4)."""
        from workstation.core.invocation import cli

        if o.slots == self.serve_slots:
            return ""
        return ("headline.parallel", {"cmd": cli(f"serve --parallel {o.slots}")})

    def this_pc(self) -> SizingOption | None:
        """This PC's answer: of its own options that fit, one that serves the office at the load
        targets first, then the model files installed here, the profile's model, the ranking."""
        here = [o for o in self.options if o.here and o.fits]
        return min(here, key=lambda o: (bool(load_misses(o)), not o.on_disk, o.model != self.profile_model,
                                        rank_key(o)), default=None)

    def answer_phrases(self) -> list[Phrase]:
        """The first line: whether this PC serves the office's people, how many at once, the
        wait for a first word at the busy hour and the speed a person sees; then the model's
        quality in a sentence of its own (not a "miss" of the speed targets); on a desk PC
        whose profile asks the office server, that this is this PC's sizing, not the server's."""
        from workstation.core.invocation import cli

        out: list[Phrase] = []
        if self.remote:
            out.append(("headline.desk_pc", {"server": self.remote, "cmd": cli("size")}))
        pc: Phrase = ("headline.this_laptop", {}) if self.laptop else ("headline.this_pc", {})
        o = self.this_pc()
        if o is None:  # (this PC not sized at all: nothing to say of it)
            return [*out, ("headline.pc_nothing_fits", {"pc": pc})] if any(x.here for x in self.options) else out
        values: dict[str, Any] = {
            "pc": pc, "people": _people(self.workload.people), "model": model_family(o.model), "quant": o.quant,
            "at_once": ("serve_cmd.one_at_a_time", {}) if o.slots == 1 else ("serve_cmd.at_once", {"n": o.slots}),
            "parallel": self.served_with(o), "ttft": _secs(o.ttft_s), "tps": speed_figure(o.tps_per_person),
            "crowd": crowd(o)}
        load = load_misses(o)
        if not load:  # fast enough; a model under the size floor is not a "Yes" (its size said after)
            small = any(key == "miss.params" for key, _ in o.miss_phrases)
            out.append(("headline.pc_small" if small else "headline.pc_yes", values))
        else:
            people = self.people_served(o)
            values["served"] = ("headline.would_serve", {"people": _people(people)}) if people else (
                "headline.misses_one", {})
            values["misses"] = [part for i, m in enumerate(load) for part in ([("miss.and", {})] if i else []) + [m]]
            out.append(("headline.pc_overloaded" if o.utilization >= 1 else "headline.pc_no", values))
        return out + self.estimate_said(o) + self.quality_said(o)

    def estimate_said(self, o: SizingOption) -> list[Phrase]:
        """Where this PC's CPU speed is not measured (or its figures disagree too much to go by),
        that the first line is an estimate by the reference PC's figures: it said "this PC is fast
        enough for 12 people" as a fact, and only far below that the speed was not measured here."""
        said = self.calibration.get(SAID) or []
        if o.machine_kind != "cpu" or not said or said[0][0] not in ("speed.not_measured", "speed.too_noisy"):
            return []
        # (how to measure is said once, on the speed's own line below: "size --measure" twice read as two steps)
        noisy = said[0][0] == "speed.too_noisy"
        return [("headline.estimate_noisy" if noisy else "headline.estimate", {"where": said[0][1]["where"]})]

    def quality_said(self, o: SizingOption) -> list[Phrase]:
        """The model's quality, plainly: a model under the workload's floor is very small (its
        answers often wrong), and what a larger one needs; a score below the best measured."""
        out: list[Phrase] = []
        floor = self.workload.quality.min_params_b
        if any(key == "miss.params" for key, _ in o.miss_phrases):
            larger = [x for x in self.meeting if x.params >= floor * 1e9] or sorted(
                (x for x in self.options if x.fits and x.params >= floor * 1e9), key=lambda x: x.need_bytes)
            out.append(("headline.small_model", {"billions": f"{floor:g}"}))
            if larger:
                out.append(("headline.small_model_needs", {"memory": human_bytes(larger[0].need_bytes)}))
            out.append(("headline.small_model_end", {}))
        points = next((v["points"] for key, v in o.miss_phrases if key == "miss.quality"), None)
        if points is not None:
            out.append(("headline.quality_below", {"points": points, "tasks": self.workload.quality.tasks}))
        return out

    def answer(self) -> str:
        return say(self.answer_phrases())

    def buy_card(self, b: SizingOption) -> Phrase:
        """Buying ``b``'s card: it goes into a desktop PC, said so where this PC is a laptop or
        may be one ("Buy a GeForce RTX 4060" was advised on a laptop, which cannot take it)."""
        price = {"machine": b.machine, "price": f"{b.price_usd:,.0f}"}
        if self.laptop:
            return ("headline.buy_desktop_laptop_priced", price) if b.price_usd else \
                ("headline.buy_desktop_laptop", price)
        if self.laptop is None:
            return ("headline.buy_for_desktop_priced", price) if b.price_usd else ("headline.buy_for_desktop", price)
        return ("headline.buy_priced", price) if b.price_usd else ("headline.buy", price)

    def get_it(self, option: SizingOption) -> list[Phrase]:
        """How to get ``option``'s model file: pulled from the catalog where it has that
        quantization, else downloaded elsewhere and added; nothing when it is here. The names
        the table shows (gemma-2-9b-it Q5_K_M) were no names 'models pull' takes."""
        from workstation.core.catalog import catalog_entry
        from workstation.core.invocation import cli

        if option.on_disk:
            return []
        here = installed_at(self._infos[option.model][0], option.quant) if option.model in self._infos else None
        if here is not None:  # made here by 'models quantize', say: it was to be downloaded
            return [("headline.get_installed", {"name": here, "cmd": cli(f"profiles new {here}")})]
        found = QUANT_SUFFIX.search(option.model)
        if catalog_entry(option.model) is not None and found and found.group(1).upper() == option.quant.upper():
            return [("headline.get_pull", {"cmd": cli(f"models pull {option.model}")})]
        return [("headline.get_elsewhere", {"model": model_family(option.model), "quant": option.quant,
                                            "add": cli("models add"), "file": ("cli.file", {})})]

    def nothing_fits(self) -> list[Phrase]:
        w = self.workload
        close = sorted(self.options, key=closeness_key)
        fitting = [o for o in close if o.fits]
        if not fitting:
            return [("headline.nothing_fits", {"context": f"{w.slot_context:,}"})]
        c = fitting[0]
        people = self.people_served(c)
        served: Phrase = ("headline.misses_one", {}) if not people else ("headline.would_serve", {
            "people": _people(people)}) if len(load_misses(c)) == len(c.miss_phrases) else (
            "headline.fast_enough", {"people": _people(people)})  # (its quality is missed: no "would serve")
        what: Phrase | str = (
            ("headline.closest_what", {"machine": c.machine, "model": c.model, "quant": c.quant,
                                       "kv": c.kv_type, "slots": _slots(c.slots)})
            if c.utilization >= 1 else c.summary_phrase())
        misses = [part for i, m in enumerate(c.miss_phrases) for part in ([("miss.and", {})] if i else []) + [m]]
        return [("headline.closest", {"people": _people(w.people), "what": what, "misses": misses, "served": served})]

    def people_served(self, o: SizingOption) -> int:
        """The most people ``o`` serves at the workload's targets (0: not even one)."""
        lo, hi = 0, max(1, self.workload.people)
        while self._meets_with(o, hi) and hi < 100_000:
            lo, hi = hi, hi * 2
        while hi - lo > 1:
            mid = (lo + hi) // 2
            lo, hi = (mid, hi) if self._meets_with(o, mid) else (lo, mid)
        return lo

    def _meets_with(self, o: SizingOption, people: int) -> bool:
        machine = next((m for m in self._machines if m.name == o.machine), None)
        info = self._infos.get(o.model)
        if machine is None or info is None:
            return False
        w = self.workload.with_people(people)
        again = evaluate(machine, o.model, info[0], info[1], o.quant, o.kv_type, o.slots, w, {}, None)
        return not load_misses(again)

    def to_dict(self, top: int = 20) -> dict[str, Any]:
        return {
            "workload": self.workload.to_dict(),
            "headline": self.headline(),
            "answer": self.answer(),  # this PC's plain answer, its first line
            "serve_slots": self.serve_slots,
            "meets": bool(self.meeting),
            "best": self.best.to_dict() if self.best else None,
            "this_pc": (here.to_dict() if (here := self.this_pc()) else None),  # what the answer says of this PC
            "options": [o.to_dict() for o in self.shown(top)],
            "best_per_machine": [o.to_dict() for o in self.best_per_machine()],
            "n_options": len(self.options),
            "n_meeting": len(self.meeting),
            "calibration": for_json(self.calibration),
            "memory_estimates_here": self.memory_history,
            "skipped_models": self.skipped_models,
            "reasoning_models": self.reasoning_models(top),
        }

    def reasoning_models(self, top: int = 20) -> list[str]:
        """The reasoning models among the options shown: their figures are for thinking off."""
        return sorted({o.model for o in self.shown(top) + self.best_per_machine() if thinks_first(o.model)})

    def kv_note(self, top: int = 20) -> list[Phrase]:
        """One sentence where an option shown runs a quantized K/V cache on a CPU ([] where none does)."""
        if not any(o.machine_kind == "cpu" and quantized_kv(o.kv_type, o.kv_type)
                   for o in self.shown(top) + self.best_per_machine()):
            return []
        return [("size.cpu_kv", {"slower": CPU_SLOWER})]

    def reasoning_note(self, top: int = 20) -> list[Phrase]:
        """One sentence on the reasoning models shown ([] when none is)."""
        names = [model_family(m) for m in self.reasoning_models(top)]
        if not names:
            return []
        which: Phrase | str = names[0] if len(names) == 1 else ("size.names_and", {
            "names": ", ".join(names[:-1]), "last": names[-1]})
        return [("size.thinks" if len(names) == 1 else "size.think", {"which": which})]

    def notes(self, top: int = 20) -> list[list[Phrase]]:
        """The sentences under the table: the reasoning models', a CPU's quantized K/V cache's."""
        return [note for note in (self.reasoning_note(top), self.kv_note(top)) if note]


def size(workload: Workload, machines: list[Machine], calibration: dict[str, Any] | None = None,
         memory_history: dict[str, Any] | None = None, laptop: bool | None = False,
         profile: Profile | None = None) -> SizingResult:
    """Every option for ``workload`` on ``machines``, ranked; ``laptop``: whether this PC is a
    laptop (``hardware.is_laptop``: None, not known), for the advice to buy a card; ``profile``:
    the one 'serve' would run here. This PC is planned as serve runs it: with the profile's slots
    (its ``parallel``, else serve's default: size planned 8 where serve ran 4) and each installed
    model at its file's quantization (Q4_1 was said Q4_K_M), where the workload names none."""
    c = workload.candidates
    serve_slots = profile.slots_to_serve() if profile is not None else SERVE_SLOTS
    remote = profile.remote.server_name if profile is not None and profile.backend == "openai" else ""
    quality = measured_quality(workload.quality.tasks)
    best_quality = max(quality.values()) if quality else None
    infos: dict[str, tuple[ModelInfo, bool]] = {}
    skipped = []
    for name in candidate_models(c.models):
        found = catalog_model(name)
        if found is None:
            skipped.append(name)
            continue
        infos[name] = found
    options = []
    for m in machines:
        for name, (info, on_disk) in infos.items():
            installed = m.here and on_disk and not c.quantizations and bool(info.file_type)
            for quant in [info.file_type.upper()] if installed else _quants(info, c.quantizations):
                for kv in c.kv_types or DEFAULT_KV:
                    for slots in c.slots or ([serve_slots] if m.here else DEFAULT_SLOTS):
                        options.append(evaluate(m, name, info, on_disk, quant, kv, slots, workload,
                                                quality, best_quality))
    options.sort(key=rank_key)
    result = SizingResult(workload, options, calibration or {}, memory_history or {}, skipped, laptop,
                          serve_slots, profile.model if profile is not None and not remote else None, remote)
    result._machines = machines
    result._infos = infos
    return result


def people_curve(result: SizingResult, option: SizingOption, people: list[int]) -> list[float]:
    """Tokens/s per person for ``option`` with each number of people (0 where overloaded)."""
    machine = next(m for m in result._machines if m.name == option.machine)
    info, on_disk = result._infos[option.model]
    out = []
    for n in people:
        o = evaluate(machine, option.model, info, on_disk, option.quant, option.kv_type, option.slots,
                     result.workload.with_people(n), {}, None)
        out.append(0.0 if o.utilization >= 1 else round(o.tps_per_person, 2))
    return out


def chart_options(result: SizingResult, n: int = 4) -> list[SizingOption]:
    """The options the charts show: the best on each machine (the closest when none meets)."""
    best = result.best_per_machine(n)
    if best:
        return best
    return first_per_machine(sorted(result.options, key=closeness_key), n, lambda o: o.fits)


def first_per_machine(options: list[SizingOption], n: int, keep: Callable[[SizingOption], bool]) -> list[SizingOption]:
    """The first option of each machine that ``keep`` accepts, in order, at most ``n``."""
    seen: set[str] = set()
    out = []
    for o in options:
        if keep(o) and o.machine not in seen:
            seen.add(o.machine)
            out.append(o)
            if len(out) >= n:
                break
    return out


def chart_data(result: SizingResult, n: int = 4) -> dict[str, Any]:
    """What the charts draw (PNG and terminal alike): tokens/s per person against the number
    of people for the best options, and each option's memory stack against its card."""
    opts = chart_options(result, n)
    top = max(2 * result.workload.people, 10)
    people = sorted({max(1, round(top * k / 16)) for k in range(1, 17)})
    series = [{"label": _label(o), "values": people_curve(result, o, people)} for o in opts]
    memory = [{"label": _label(o), "weights": o.weights_bytes / GB, "kv_cache": o.kv_cache_bytes / GB,
               "compute": o.compute_bytes / GB, "capacity": o.memory_bytes / GB} for o in opts]
    return {"people": people, "series": series, "memory": memory,
            "target_tps": result.workload.latency.tokens_per_second, "workload_people": result.workload.people}




def installed_at(info: ModelInfo, quant: str) -> str | None:
    """The name of a model file on this PC that holds ``info``'s model (its architecture,
    layers, width and vocabulary, read from a file of it here) at ``quant``: one 'models
    quantize' made, or one added by hand."""
    from workstation.core.installed_models import list_installed

    for item in list_installed():
        other = item.info
        if other is not None and other.file_type.upper() == quant.upper() \
                and (other.architecture, other.n_layer, other.n_embd, other.n_vocab) \
                == (info.architecture, info.n_layer, info.n_embd, info.n_vocab) \
                and info.tokenizer_fingerprint and info.tokenizer_fingerprint == other.tokenizer_fingerprint:
            return item.name  # (a published shape has no vocabulary to compare: another fine-tune would pass)
    return None


def model_family(model: str) -> str:
    """A catalog name without its quantization ('llama-3.1-8b-instruct-q4_k_m' ->
    'llama-3.1-8b-instruct'): an option shows its own beside it."""
    return QUANT_SUFFIX.sub("", model) or model


def _label(o: SizingOption) -> str:
    where = "CPU here" if o.here and o.machine_kind == "cpu" else o.machine.replace("GeForce ", "")
    return f"{where}: {model_family(o.model).split('-instruct')[0].split('-it')[0]} {o.quant} {o.kv_type} x{o.slots}"
