"""Summarization throughput and the prefix cache at work.

Prints, for one document summarized with one profile:
  * document tokens processed per second (chunk text tokens / wall time of the whole run),
  * TTFT of chunks k > 1 over chunk 1: chunk 1 prefills the instruction prefix, the later
    ones find it in the KV cache (``cache_n``) and prefill only their own text,
  * the same ratio with the prefix cache defeated (engine.reset() before every chunk),
    measured side by side in the same run, so the difference is the cache's doing.

Usage: .venv/bin/python bench/summarize.py [-p PROFILE] [--context N] [--chunks N] [FILE] [--json]
Without FILE it summarizes CPython's LICENSE.txt (found at runtime).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from workstation.core.documents import read_document  # noqa: E402
from workstation.core.engine import Engine  # noqa: E402
from workstation.core.events import TurnFinished  # noqa: E402
from workstation.core.profile_check import profile_from_dict  # noqa: E402
from workstation.core.profile_lookup import load_profile  # noqa: E402
from workstation.core.summarize import summarize_document  # noqa: E402
from workstation.core.summary_chunks import MAP_INSTRUCTION, MAP_SUFFIX, neutralize, prompt_messages  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("file", nargs="?", help="document (default: CPython's LICENSE.txt)")
    ap.add_argument("-p", "--profile", help="profile (default: SmolLM2, greedy, 2 threads)")
    ap.add_argument("--context", type=int, default=1024, help="context for the default profile")
    ap.add_argument("--max-tokens", type=int, default=48, help="answer budget per chunk")
    ap.add_argument("--chunks", type=int, default=6, help="use only the first N chunks' worth of text")
    ap.add_argument("--threads", type=int, default=2, help="threads for the default profile")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    if args.profile:
        profile = load_profile(args.profile)
    else:
        profile = profile_from_dict(
            {
                "name": "bench-summarize",
                "model": "smollm2-135m-instruct-q4_1",
                "context": args.context,
                "threads": args.threads,
                "gpu_layers": 0,
                "sampling": {"temperature": 0.0, "max_tokens": args.max_tokens, "seed": 1},
            },
            "<bench>",
        )
    path = Path(args.file) if args.file else Path(os.__file__).parent / "LICENSE.txt"
    doc = read_document(path)
    engine = Engine(profile)
    try:
        # 1. the whole pipeline (map + reduce), cache on
        t0 = time.perf_counter()
        result = summarize_document(engine, doc, profile)
        wall = time.perf_counter() - t0
        chunks = result.chunks[: args.chunks] if args.chunks else result.chunks
        ttft_cached = [c.metrics.ttft_ms for c in chunks]
        # 2. the same chunks again, prefix cache defeated (reset before each), side by side
        sampling = profile.sampling
        ttft_cold: list[float] = []
        prefill_cold: list[int] = []
        for c in chunks:
            engine.reset()
            body = neutralize(doc.text[c.start : c.end])
            tokens = engine.chat_prompt(prompt_messages(MAP_INSTRUCTION, body, MAP_SUFFIX))
            for ev in engine.stream_tokens(tokens, sampling):
                if isinstance(ev, TurnFinished):
                    ttft_cold.append(ev.metrics.ttft_ms)
                    prefill_cold.append(ev.metrics.prompt_n)
    finally:
        engine.close()

    t = result.totals
    later_cached = statistics.fmean(ttft_cached[1:]) if len(ttft_cached) > 1 else float("nan")
    later_cold = statistics.fmean(ttft_cold[1:]) if len(ttft_cold) > 1 else float("nan")
    prefill_cached = [c.metrics.prompt_n for c in chunks]
    report = {
        "document": str(path),
        "profile": profile.key,
        "n_ctx": result.n_ctx,
        "chunks": len(result.chunks),
        "reduce_steps": len(result.reduce_steps),
        "prefix_tokens": result.prefix_tokens,
        "document_tokens": int(t["document_tokens"]),
        "wall_s": round(wall, 2),
        "document_tokens_per_second": round(t["document_tokens"] / wall, 1),
        "prompt_per_second": round(t["prompt_per_second"], 1),
        "cache_n_total": int(t["cache_n"]),
        "ttft_chunk1_ms": round(ttft_cached[0], 1),
        "ttft_later_chunks_ms": round(later_cached, 1),
        "ttft_later_over_first": round(later_cached / ttft_cached[0], 3),
        "ttft_later_no_cache_ms": round(later_cold, 1),
        "ttft_cached_over_uncached": round(later_cached / later_cold, 3),
        "prefill_tokens_later_cached": round(statistics.fmean(prefill_cached[1:]), 1) if len(chunks) > 1 else None,
        "prefill_tokens_later_uncached": round(statistics.fmean(prefill_cold[1:]), 1) if len(chunks) > 1 else None,
    }
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(f"document: {path.name}, {report['document_tokens']} tokens in {report['chunks']} chunks "
              f"(+{report['reduce_steps']} reduce), context {report['n_ctx']}, prefix {report['prefix_tokens']} tokens")
        print(f"document tokens per second: {report['document_tokens_per_second']} "
              f"(whole map-reduce, {report['wall_s']} s wall; prompt {report['prompt_per_second']} tok/s)")
        print(f"TTFT chunk 1: {report['ttft_chunk1_ms']} ms; chunks k>1: {report['ttft_later_chunks_ms']} ms "
              f"-> ratio {report['ttft_later_over_first']}")
        print(f"same chunks k>1 with the cache defeated: {report['ttft_later_no_cache_ms']} ms "
              f"-> cached/uncached {report['ttft_cached_over_uncached']}")
        print(f"prefilled tokens per chunk k>1: {report['prefill_tokens_later_cached']} with the cache, "
              f"{report['prefill_tokens_later_uncached']} without")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
