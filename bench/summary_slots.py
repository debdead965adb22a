"""A long document summarized with the map phase in N slots against 1 slot, side by side.

The map phase submits every chunk at once (``engine.run_many``): with ``parallel: N`` the
decode core decodes up to N chunks in one batch, and the chunks after the first copy the shared
instruction's cells instead of computing them. Rounds alternate which configuration goes first;
medians of the wall time of the whole summary are compared. llama.cpp's own
``llama-batched-bench`` (built by ../shared/tools/llama-anchors) runs in the same rounds with the
summary's shape (each sequence: a chunk's own prompt tokens + its answer; N sequences against 1,
total tokens over total time) as the reference for what batching can give this work here: a
summary is mostly prefill, which batching cannot speed up, so its gain is far below the 1.4x
llama-batched-bench shows for 128 + 128 tokens.

The chunk summaries of the two runs are compared too: at 1 thread they match up to near ties
(several sequences in one KV pool change llama.cpp's float rounding; see
tests/test_decode_core.py), so the count of chunks whose text differs is printed, not asserted.

    .venv/bin/python bench/summary_slots.py [--parallel 4] [--context 1024] [--doc-contexts 4]
                                            [--threads 2] [--rounds 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.anchors import default_bin  # noqa: E402
from bench.load import batched_bench_tps  # noqa: E402
from tests.docmaker import honeybee_text  # noqa: E402
from workstation.core.catalog import resolve_model_path  # noqa: E402
from workstation.core.documents import Document  # noqa: E402
from workstation.core.engine import Engine  # noqa: E402
from workstation.core.profile_check import profile_from_dict  # noqa: E402
from workstation.core.summarize import SummaryResult, summarize_document  # noqa: E402
from workstation.core.summary_options import SummarizeOptions  # noqa: E402

MODEL = "smollm2-135m-instruct-q4_1"


def profile(parallel: int, context: int, threads: int, max_tokens: int):  # noqa: ANN201
    return profile_from_dict(
        {"name": f"summary-{parallel}-slots", "model": MODEL, "context": context, "threads": threads,
         "parallel": parallel, "gpu_layers": 0, "system_prompt": "",
         "sampling": {"temperature": 0.0, "max_tokens": max_tokens, "repeat_penalty": 1.0, "seed": 1}},
        "<bench>",
    )


def document(engine: Engine, tokens: int) -> Document:
    """Honeybee paragraphs (real prose, a subject in every paragraph) cut to about ``tokens``."""
    text = honeybee_text(40)
    n = len(engine.model.tokenize(text, add_special=False, parse_special=False))
    text = text[: int(len(text) * min(1.0, tokens / n))]
    return Document(source="honeybees.txt", kind="text", text=text)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--parallel", type=int, default=4)
    ap.add_argument("--context", type=int, default=1024, help="context per slot")
    ap.add_argument("--doc-contexts", type=float, default=4.0, help="document length in contexts")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--max-tokens", type=int, default=128,
                    help="answer budget per chunk (128: the summarizer's default at context 1024)")
    ap.add_argument("--bin", type=Path, default=default_bin())
    args = ap.parse_args()

    engines = {n: Engine(profile(n, args.context, args.threads, args.max_tokens)) for n in (1, args.parallel)}
    doc = document(engines[1], int(args.context * args.doc_contexts))
    options = SummarizeOptions(map_tokens=args.max_tokens)
    have_bin = (args.bin / "llama-batched-bench").exists()
    walls: dict[str, list[float]] = {"1": [], str(args.parallel): [], "llama 1": [], f"llama {args.parallel}": []}
    last: dict[int, SummaryResult] = {}
    pp = 0
    for r in range(args.rounds):
        order = (1, args.parallel) if r % 2 == 0 else (args.parallel, 1)
        for n in order:
            eng = engines[n]
            eng.reset()
            t0 = time.perf_counter()
            last[n] = summarize_document(eng, doc, eng.profile, options=options)
            walls[str(n)].append(time.perf_counter() - t0)
        # a chunk's own prompt (what it prefills past the shared instruction)
        pp = int(statistics.median(c.prompt_tokens - last[1].prefix_tokens for c in last[1].chunks))
        if have_bin:
            model = resolve_model_path(MODEL)
            for n in (1, args.parallel):
                walls[f"llama {n}"].append(
                    batched_bench_tps(args.bin, model, n, args.threads, pp=pp, tg=args.max_tokens, column="S"))
    for eng in engines.values():
        eng.close()
    one, many = last[1], last[args.parallel]
    med = {k: statistics.median(v) for k, v in walls.items() if v}
    print(f"{doc.name}: {int(one.totals['document_tokens'])} document tokens, {len(one.chunks)} chunks, "
          f"context {args.context} per slot, {args.threads} threads, {args.rounds} rounds")
    for n in (1, args.parallel):
        print(f"  parallel {n}: median {med[str(n)]:.1f} s (runs "
              f"{', '.join(f'{w:.1f}' for w in walls[str(n)])})")
    print(f"wall-time ratio parallel {args.parallel} over parallel 1: {med['1'] / med[str(args.parallel)]:.2f}x")
    if have_bin:
        ratio = med[f"llama {args.parallel}"] / med["llama 1"]
        print(f"llama-batched-bench, {pp} + {args.max_tokens} tokens per sequence, {args.parallel} sequences "
              f"over 1 (S t/s): {ratio:.2f}x")
    differ = sum(a.summary != b.summary for a, b in zip(one.chunks, many.chunks, strict=True))
    print(f"chunk summaries that differ between 1 and {args.parallel} slots: {differ} of {len(one.chunks)}"
          + (" (1 thread: near ties only)" if args.threads == 1 else ""))
    cached = [c.metrics.cache_n for c in many.chunks if c.metrics]
    print(f"cache_n of the chunks with {args.parallel} slots: {cached} (shared prefix {many.prefix_tokens})")


if __name__ == "__main__":
    main()
