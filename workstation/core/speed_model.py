"""How fast a model decodes and reads prompts on a device: a bandwidth model, calibrated.

One decode step of ``B`` sequences reads every weight once (shared by the batch) and each
sequence's K/V cells, and spends a little compute per token:

    t_step(B) = weights_read * s_per_byte + n_layer * s_per_layer
                + B * (2 * active_params * s_per_flop + kv_read * s_per_byte)

so one person gets ``1 / t_step(B)`` tokens/s and the machine ``B / t_step(B)``. A prompt is
read at ``1 / (2 * active_params * pp_s_per_flop)`` tokens/s (compute-bound).

* **This machine (CPU)** is calibrated on its own figures: ``size --measure`` (or ``bench``)
  decodes both packaged models with 1, 2 and 4 sequences; ``fit_cpu`` solves the three
  constants by non-negative least squares on the relative error. Without measurements the
  constants come from the anchors of DESIGN.md (a 2-core machine), and the report says so.
* **GPUs** are calibrated on published llama-bench figures (``PUBLISHED``, cited there): the
  bandwidth efficiency and the per-layer overhead from two RTX 4090 decode figures, the
  compute efficiency from one RTX 4090 prompt figure; the other published figures are the
  check (``gpu_check``). Each card of the table then scales by its own bandwidth and FP16
  throughput.
"""

from __future__ import annotations

import itertools
from dataclasses import asdict, dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from workstation.core.gpu_table import GpuSpec, find_spec
from workstation.core.invocation import cli
from workstation.core.phrases import Phrase, say

GIB = 1024**3


@dataclass(frozen=True)
class SpeedConstants:
    s_per_byte: float  # seconds per byte read in a decode step (1 / effective bandwidth)
    s_per_layer: float  # fixed seconds per layer and step (kernel launches, graph, threads)
    s_per_flop: float  # seconds per FLOP of a batched decode token
    pp_s_per_flop: float  # seconds per FLOP of prompt processing
    source: str  # how these were calibrated, in words

    def step_seconds(self, weights_read: float, n_layer: int, active_params: float, batch: float,
                     kv_read: float = 0.0) -> float:
        return (weights_read * self.s_per_byte + n_layer * self.s_per_layer
                + batch * (2 * active_params * self.s_per_flop + kv_read * self.s_per_byte))

    def decode_tps(self, weights_read: float, n_layer: int, active_params: float, batch: int = 1,
                   kv_read: float = 0.0) -> float:
        """Tokens/s of one sequence when ``batch`` decode together."""
        return 1.0 / self.step_seconds(weights_read, n_layer, active_params, batch, kv_read)

    def prefill_tps(self, active_params: float) -> float:
        return 1.0 / (2 * active_params * self.pp_s_per_flop)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["effective_bandwidth_gbps"] = round(1 / self.s_per_byte / 1e9, 1) if self.s_per_byte else None
        return d


# --- fitting ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class DecodePoint:
    """One measured decode: a model (bytes read, layers, active weights) at ``batch`` sequences."""

    model: str
    weights_read: float
    n_layer: int
    active_params: float
    batch: int
    tps_per_seq: float  # measured tokens/s of one sequence (aggregate / batch)

    @property
    def seconds(self) -> float:
        return 1.0 / self.tps_per_seq


def _nnls(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Least squares with every coefficient >= 0 (a handful of unknowns: try each subset)."""
    n = a.shape[1]
    best: tuple[float, np.ndarray] | None = None
    for k in range(1, n + 1):
        for cols in itertools.combinations(range(n), k):
            sol, *_ = np.linalg.lstsq(a[:, cols], b, rcond=None)
            if (sol < 0).any():
                continue
            x = np.zeros(n)
            x[list(cols)] = sol
            err = float(np.sum((a @ x - b) ** 2))
            if best is None or err < best[0]:
                best = (err, x)
    return best[1] if best is not None else np.zeros(n)


def fit_decode(points: list[DecodePoint]) -> tuple[float, float, float]:
    """(s_per_byte, s_per_layer, s_per_flop) that best explain ``points`` (relative error)."""
    a = np.array([[p.weights_read, p.n_layer, p.batch * 2 * p.active_params] for p in points], float)
    t = np.array([p.seconds for p in points], float)
    scale = np.array([1e-9, 1e-3, 1e-12])  # condition the columns
    x = _nnls(a * scale / t[:, None], np.ones(len(points)))
    s_byte, s_layer, s_flop = (x * scale).tolist()
    return s_byte, s_layer, s_flop


def fit_cpu(points: list[DecodePoint], pp: list[tuple[float, float]], source: str) -> SpeedConstants:
    """Constants for this machine's CPU from decode points and (active_params, pp tok/s) pairs."""
    s_byte, s_layer, s_flop = fit_decode(points)
    if pp:
        pp_s = float(np.mean([1.0 / (2 * p * tps) for p, tps in pp]))
    else:  # no prompt figure: prompts run about as fast per FLOP as batched decoding
        pp_s = s_flop or 1e-10
    return SpeedConstants(s_byte, s_layer, s_flop, pp_s, source)


def leave_one_out(points: list[DecodePoint]) -> list[tuple[DecodePoint, float]]:
    """Each point with the tokens/s predicted by a fit on all the others (an honest error)."""
    out = []
    for i, p in enumerate(points):
        rest = points[:i] + points[i + 1:]
        c = SpeedConstants(*fit_decode(rest), 1e-10, "")
        out.append((p, c.decode_tps(p.weights_read, p.n_layer, p.active_params, p.batch)))
    return out


# --- defaults for a CPU with no measurements: DESIGN.md's anchors -------------------------------
# SmolLM2-135M-Instruct Q4_1 on the 2-core development machine (2 threads): a plain loop over
# llama.cpp's batch API decoded 77 / 108 / 135 tok/s in total with 1 / 2 / 4 sequences, and
# llama-bench read pp512 at 279 tok/s. The model reads 98.4 MB per token (30 layers, its tied
# embedding as the output) and multiplies 134.5 M weights per token.
_SMOLLM2 = dict(model="SmolLM2-135M Q4_1 (DESIGN.md)", weights_read=98.4e6, n_layer=30, active_params=134.5e6)
DESIGN_ANCHORS = [DecodePoint(**_SMOLLM2, batch=b, tps_per_seq=agg / b) for b, agg in ((1, 77), (2, 108), (4, 135))]


REFERENCE_CORES = 2  # the PC of DESIGN_ANCHORS
REFERENCE_GBPS = 20.0  # its memory speed as hardware.cpu_bandwidth_gbps assumes it (10 GB/s a core)


@lru_cache(maxsize=8)
def default_cpu(cores: int = REFERENCE_CORES, bandwidth_gbps: float = REFERENCE_GBPS) -> SpeedConstants:
    """A CPU not measured here: the reference PC's figures, its weights read at its assumed
    memory speed and the rest (per layer, per multiply) fitted to its three decodes, then scaled
    to this CPU's assumed memory speed and cores. One model's figures cannot tell reading from
    computing: fitted freely, all the time went to computing, and fit (which timed by the memory
    speed alone) said 207 tok/s where bench measured 80."""
    ref_read = 1 / (REFERENCE_GBPS * 1e9)
    a = np.array([[p.n_layer, p.batch * 2 * p.active_params] for p in DESIGN_ANCHORS], float)
    rest = np.array([p.seconds - p.weights_read * ref_read for p in DESIGN_ANCHORS], float)
    scale = np.array([1e-3, 1e-12])
    s_layer, s_flop = (_nnls(a * scale / rest[:, None], np.ones(len(rest))) * scale).tolist()
    pp = fit_cpu(DESIGN_ANCHORS, [(134.5e6, 279.0)], "").pp_s_per_flop
    slower = REFERENCE_CORES / max(cores, 1)  # multiplying scales with the cores; a layer's fixed cost does not
    return SpeedConstants(1 / (bandwidth_gbps * 1e9), s_layer, s_flop * slower, pp * slower,
                          say([("speed.not_measured", {"where": reference_said(cores, bandwidth_gbps),
                                                       "cmd": cli("size --measure")})]))


def reference_said(cores: int = REFERENCE_CORES, bandwidth_gbps: float = REFERENCE_GBPS) -> Phrase:
    """The PC whose figures ``default_cpu`` goes by, as a phrase: the reference PC, or it scaled to this one."""
    if (cores, bandwidth_gbps) == (REFERENCE_CORES, REFERENCE_GBPS):
        return ("speed.reference", {})
    return ("speed.reference_scaled", {"cores": str(cores), "gbps": f"{bandwidth_gbps:.0f}"})


# --- GPUs: published llama-bench figures ---------------------------------------------------------
@dataclass(frozen=True)
class PublishedFigure:
    gpu: str
    model: str
    size_gib: float
    params: float
    n_layer: int
    n_vocab: int
    n_embd: int
    test: str  # pp512 | tg128
    tps: float
    where: str
    role: str  # fit | check

    @property
    def active_params(self) -> float:
        return self.params - self.n_vocab * self.n_embd  # the token embedding is only looked up

    @property
    def weights_read(self) -> float:
        return self.size_gib * GIB * self.active_params / self.params


_PR4766 = ("ggml-org/llama.cpp pull request #4766 (llama : ggml-backend integration), "
           "ggerganov's llama-bench table of 2024-01-10: RTX 4090, CUDA, -ngl 99")
_PR4812 = ("ggml-org/llama.cpp pull request #4812 (llama-bench : add no-kv-offload parameter), "
           "slaren's llama-bench table of 2024-01-07: RTX 3090 Ti, CUDA, -ngl 99, nkvo 0")
_L7 = dict(params=6.74e9, n_layer=32, n_vocab=32000, n_embd=4096)
PUBLISHED: tuple[PublishedFigure, ...] = (
    PublishedFigure("RTX 4090", "llama 7B F16", 12.55, **_L7, test="tg128", tps=61.03, where=_PR4766, role="fit"),
    PublishedFigure("RTX 4090", "llama 7B Q8_0", 6.67, **_L7, test="tg128", tps=98.13, where=_PR4766, role="fit"),
    PublishedFigure("RTX 4090", "llama 7B Q8_0", 6.67, **_L7, test="pp512", tps=7664.00, where=_PR4766, role="fit"),
    PublishedFigure("RTX 4090", "llama 7B F16", 12.55, **_L7, test="pp512", tps=11048.22, where=_PR4766, role="check"),
    PublishedFigure("RTX 4090", "llama 7B Q4_0", 3.56, **_L7, test="pp512", tps=7979.85, where=_PR4766, role="check"),
    PublishedFigure("RTX 3090 Ti", "llama 7B Q4_0", 3.56, **_L7, test="tg128", tps=127.43, where=_PR4812, role="check"),
    PublishedFigure("RTX 3090 Ti", "llama 7B Q4_0", 3.56, **_L7, test="pp512", tps=4035.47, where=_PR4812, role="check"),
)


@dataclass(frozen=True)
class GpuEfficiency:
    bandwidth: float  # share of the card's peak bandwidth a decode reaches
    s_per_layer: float
    flops: float  # share of the card's FP16 TFLOPS prompt processing reaches


def _spec(name: str) -> GpuSpec:
    spec = find_spec(name)
    assert spec is not None, name
    return spec


@lru_cache(maxsize=1)
def gpu_efficiency() -> GpuEfficiency:
    fit = [f for f in PUBLISHED if f.role == "fit"]
    tg = [f for f in fit if f.test.startswith("tg")]
    # t = W / (bw * eff) + L * s_layer: two decode figures, two unknowns
    a = np.array([[f.weights_read / (_spec(f.gpu).bandwidth_gbps * 1e9), f.n_layer] for f in tg])
    t = np.array([1.0 / f.tps for f in tg])
    inv_eff, s_layer = np.linalg.solve(a, t)
    pp = [f for f in fit if f.test.startswith("pp")]
    flops = float(np.mean([2 * f.active_params * f.tps / (_spec(f.gpu).fp16_tflops * 1e12) for f in pp]))
    return GpuEfficiency(float(1 / inv_eff), float(max(s_layer, 0.0)), flops)


def gpu_constants(spec: GpuSpec) -> SpeedConstants:
    eff = gpu_efficiency()
    flop_s = 1.0 / (spec.fp16_tflops * 1e12 * eff.flops)
    return SpeedConstants(
        s_per_byte=1.0 / (spec.bandwidth_gbps * 1e9 * eff.bandwidth),
        s_per_layer=eff.s_per_layer,
        s_per_flop=flop_s,
        pp_s_per_flop=flop_s,
        source=(f"published llama-bench figures (RTX 4090, llama 7B; {eff.bandwidth:.0%} of peak "
                f"bandwidth, {eff.s_per_layer * 1e6:.0f} µs per layer, {eff.flops:.0%} of FP16 TFLOPS), "
                f"scaled to the {spec.name}'s {spec.bandwidth_gbps:.0f} GB/s and {spec.fp16_tflops:.0f} TFLOPS"),
    )


def gpu_check() -> list[dict[str, Any]]:
    """Every published figure beside the model's prediction and the error (fit and check rows)."""
    rows = []
    for f in PUBLISHED:
        c = gpu_constants(_spec(f.gpu))
        pred = (c.decode_tps(f.weights_read, f.n_layer, f.active_params) if f.test.startswith("tg")
                else c.prefill_tps(f.active_params))
        rows.append({"gpu": f.gpu, "model": f.model, "test": f.test, "published": f.tps,
                     "predicted": round(pred, 2), "error_pct": round((pred / f.tps - 1) * 100, 1),
                     "role": f.role, "source": f.where})
    return rows
