"""What K/V cache quantization buys and costs, measured side by side in one run.

For each model at a long context and each K/V pair (f16/f16, q8_0/q8_0, q8_0/q4_0, q4_0/q4_0):
KV bytes (as llama.cpp allocated them), prompt tok/s (prefill of a full window), decode tok/s
(generation after a long prefix, where attention reads the whole cache) and perplexity of a
fixed text, each also as a ratio to f16/f16.

    .venv/bin/python bench/kv_cache.py [--ctx 4096] [--threads 2] [--models smollm2,gemma]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.texts import stdlib_doc_text  # noqa: E402
from workstation.core.evaluate import perplexity  # noqa: E402
from workstation.core.profiles import KV_CACHE_TYPES  # noqa: E402
from workstation.core.runtime import Batch, LoadedModel, RuntimeSettings  # noqa: E402

MODELS = {
    "smollm2": "models/SmolLM2-135M-Instruct.Q4_1.gguf",
    "gemma": "models/gemma-3-270m-q4_k_m.gguf",
}
PAIRS = (("f16", "f16"), ("q8_0", "q8_0"), ("q8_0", "q4_0"), ("q4_0", "q4_0"))


def decode_rate(model: LoadedModel, tokens: list[int], prefix: int, n_gen: int) -> float:
    """Decode n_gen tokens (fed from the text, like llama-bench's tg) after a prefix of ``prefix``."""
    batch = Batch(model.n_batch)
    try:
        model.clear_memory()
        for b0 in range(0, prefix, model.n_batch):
            batch.clear()
            for p in range(b0, min(prefix, b0 + model.n_batch)):
                batch.add(tokens[p], p, 0, p == prefix - 1)
            model.decode(batch)
        t0 = time.perf_counter()
        for p in range(prefix, prefix + n_gen):
            batch.clear()
            batch.add(tokens[p], p, 0, True)
            model.decode(batch)
        return n_gen / (time.perf_counter() - t0)
    finally:
        batch.close()
        model.clear_memory()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ctx", type=int, default=4096)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--chunks", type=int, default=1, help="perplexity windows per run")
    ap.add_argument("--gen", type=int, default=64)
    ap.add_argument("--models", default="smollm2,gemma")
    args = ap.parse_args()
    text = stdlib_doc_text(min_chars=args.ctx * args.chunks * 5)
    print(f"K/V cache types at context {args.ctx}, {args.threads} threads; perplexity over "
          f"{args.chunks} windows of a fixed text (stdlib docstrings); decode after a {args.ctx * 3 // 4}-token prefix")
    for key in args.models.split(","):
        path = Path(MODELS[key])
        rows = []
        for k, v in PAIRS:
            model = LoadedModel(path, RuntimeSettings(n_ctx=args.ctx, n_threads=args.threads, flash_attn=True,
                                                      type_k=KV_CACHE_TYPES[k], type_v=KV_CACHE_TYPES[v]))
            try:
                tokens = model.tokenize(text, add_special=True, parse_special=False)
                ppl = perplexity(model, tokens, args.ctx, max_chunks=args.chunks)
                dec = decode_rate(model, tokens, args.ctx * 3 // 4, args.gen)
                rows.append({"k": k, "v": v, "kv_bytes": sum(model.kv_cache_bytes), "pp": ppl.tokens_per_second,
                             "tg": dec, "ppl": ppl.ppl})
                print(f"  measured {path.name} {k}/{v}", flush=True)
            finally:
                model.close()
        base = rows[0]
        print(f"\n{path.name}")
        print(f"  {'K/V':<11} {'KV MiB':>8} {'ratio':>6}  {'prompt t/s':>10} {'ratio':>6}  {'decode t/s':>10} {'ratio':>6}  {'PPL':>8} {'ratio':>7}")
        for r in rows:
            print(f"  {r['k'] + '/' + r['v']:<11} {r['kv_bytes'] / 2**20:8.2f} {r['kv_bytes'] / base['kv_bytes']:6.3f}"
                  f"  {r['pp']:10.1f} {r['pp'] / base['pp']:6.3f}  {r['tg']:10.1f} {r['tg'] / base['tg']:6.3f}"
                  f"  {r['ppl']:8.3f} {r['ppl'] / base['ppl']:7.4f}")


if __name__ == "__main__":
    main()
