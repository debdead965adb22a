"""Where our prompt processing loses to llama-bench's on the GPU (0.60-0.76x pp512 on the H200,
while decode was 0.96-0.98x): one model, several contexts over it in one process, each changing
one thing from ours towards llama-bench's, each timed as llama-bench times pp (an empty cache,
the prompt in n_batch pieces, then llama_synchronize). Prints one JSON line.

    python scripts/gpu_check/pp_probe.py MODEL.gguf [--n-prompt 512] [--reps 5] [--threads N] [--ngl 999]
                                         [--profile P.yaml]

With ``--profile`` the product's own ``Engine`` on that profile (the model loaded a second time)
is timed too, the same way, between the others: what `workstation bench` measured.

Per variant: tok/s (mean of the runs), and of one run's milliseconds how many went to filling the
batch in Python, inside llama_decode, and waiting in llama_synchronize (the GPU still working).
``log_calls``: llama.cpp's log callbacks (each a call into Python) during the timed runs.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import llama_cpp  # noqa: E402  (first, as `import workstation` does)
import numpy as np  # noqa: E402

from workstation.core.runtime import Batch, LoadedModel, RuntimeSettings  # noqa: E402


@dataclass(frozen=True)
class Variant:
    name: str
    n_ctx: int = 4096
    n_batch: int = 512
    n_ubatch: int = 512
    kv_unified: bool | None = False  # None: llama.cpp's default, as llama-bench leaves it
    no_perf: bool = False
    get_one: bool = False  # the tokens as one C array (llama_batch_get_one), not our Batch


VARIANTS = [
    Variant("ours (as LoadedModel makes it)"),
    Variant("ours, tokens by llama_batch_get_one", get_one=True),
    Variant("ours, n_ctx 640", n_ctx=640),
    Variant("ours, kv_unified default", kv_unified=None),
    Variant("ours, no_perf", no_perf=True),
    Variant("llama-bench's settings", n_ctx=640, n_batch=2048, kv_unified=None, no_perf=True, get_one=True),
    Variant("llama-bench's settings, n_ctx 4096", n_batch=2048, kv_unified=None, no_perf=True, get_one=True),
]


def context(model: LoadedModel, v: Variant, threads: int, n_prompt: int) -> Any:
    p = llama_cpp.llama_context_default_params()
    p.n_ctx = max(v.n_ctx, n_prompt)
    p.n_batch = min(v.n_batch, p.n_ctx)
    p.n_ubatch = min(v.n_ubatch, p.n_batch)
    p.n_seq_max = 1
    if v.kv_unified is not None:
        p.kv_unified = v.kv_unified
    p.n_threads = p.n_threads_batch = threads
    p.flash_attn_type = llama_cpp.LLAMA_FLASH_ATTN_TYPE_ENABLED
    p.type_k = p.type_v = 1  # f16
    p.no_perf = v.no_perf
    ctx = llama_cpp.llama_init_from_model(model.model.model, p)
    if not ctx:
        raise SystemExit(f"llama.cpp made no context for '{v.name}'")
    return ctx, int(p.n_batch)


def one_run(ctx: Any, n_batch: int, tokens: list[int], v: Variant, batch: Batch) -> tuple[int, int, int, int]:
    """(total, fill, decode, synchronize) nanoseconds of one pp run from an empty cache."""
    llama_cpp.llama_memory_clear(llama_cpp.llama_get_memory(ctx), True)
    fill = dec = 0
    t0 = time.perf_counter_ns()
    done = 0
    while done < len(tokens):
        n = min(len(tokens) - done, n_batch)
        a = time.perf_counter_ns()
        if v.get_one:
            arr = (llama_cpp.llama_token * n)(*tokens[done:done + n])
            raw = llama_cpp.llama_batch_get_one(arr, n)
        else:
            batch.clear()
            for k in range(n):
                batch.add(tokens[done + k], done + k, 0, k == n - 1)
            raw = batch.raw
        b = time.perf_counter_ns()
        rc = llama_cpp.llama_decode(ctx, raw)
        c = time.perf_counter_ns()
        if rc != 0:
            raise SystemExit(f"llama_decode returned {rc} in '{v.name}'")
        fill += b - a
        dec += c - b
        done += n
    s = time.perf_counter_ns()
    llama_cpp.llama_synchronize(ctx)
    end = time.perf_counter_ns()
    return end - t0, fill, dec, end - s


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("model", type=Path)
    ap.add_argument("--n-prompt", type=int, default=512)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--ngl", type=int, default=999)
    ap.add_argument("--profile", help="also time the Engine of this profile (its threads set to --threads)")
    args = ap.parse_args()
    engine = None
    if args.profile:
        from workstation.core.engine import Engine
        from workstation.core.profile_lookup import load_profile

        profile = load_profile(args.profile)
        profile.threads = args.threads
        engine = Engine(profile)
    model = LoadedModel(args.model, RuntimeSettings(n_ctx=max(512, args.n_prompt), n_threads=args.threads,
                                                    n_gpu_layers=args.ngl))
    calls = [0]

    @llama_cpp.llama_log_callback
    def counting(_level: int, _text: bytes, _data: ctypes.c_void_p) -> None:
        calls[0] += 1

    llama_cpp.llama_log_set(counting, ctypes.c_void_p(0))
    rng = np.random.default_rng(1)
    batch = Batch(max(args.n_prompt, 2048))
    out: dict[str, Any] = {"n_prompt": args.n_prompt, "reps": args.reps, "threads": args.threads,
                           "ngl": args.ngl, "variants": {}}
    logs = 0
    ours = VARIANTS[0]
    for _round in range(2):  # two interleaved rounds: a drift of the machine shows as a difference
        for v in [*VARIANTS, *([Variant("the Engine's own context")] if engine else [])]:
            own = v.name == "the Engine's own context"
            ctx, n_batch = ((engine.model.ctx, engine.model.n_batch) if own and engine
                            else context(model, v, args.threads, args.n_prompt))
            v = ours if own else v
            try:
                runs = []
                for i in range(args.reps + 1):  # the first is the warm-up
                    tokens = rng.integers(0, model.n_vocab, size=args.n_prompt).tolist()
                    tokens[0] = model.bos_token if model.bos_token >= 0 else tokens[0]
                    mark = calls[0]
                    r = one_run(ctx, n_batch, tokens, v, batch)
                    if i:
                        runs.append(r)
                        logs += calls[0] - mark
            finally:
                if not own:
                    llama_cpp.llama_free(ctx)
            name = "the Engine's own context" if own else v.name
            rec = out["variants"].setdefault(name, {"tps": [], "ms": []})
            rec["tps"].append(round(statistics.fmean(args.n_prompt / (r[0] / 1e9) for r in runs), 1))
            rec["ms"].append({k: round(statistics.fmean(r[j] for r in runs) / 1e6, 3)
                              for j, k in enumerate(("total", "fill", "decode", "synchronize"))})
    out["log_calls"] = logs
    batch.close()
    model.close()
    if engine is not None:
        engine.close()
    print(json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
