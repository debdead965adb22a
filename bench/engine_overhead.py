"""Decode speed of our engine over bare llama-cpp-python on the same model, threads and length.

Runs interleaved (bare, engine, engine-in-child-process, bare, ...) and prints medians and
ratios. Decode rate for all three is measured the same way: tokens after the first one over
the wall time from the first token to the last.

    .venv/bin/python bench/engine_overhead.py [--model PATH] [--tokens 300] [--runs 5] [--threads 2]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from llama_cpp import Llama  # noqa: E402

from workstation.core.engine import Engine, TokenDelta, TurnFinished  # noqa: E402
from workstation.core.engine_process import EngineProcess  # noqa: E402
from workstation.core.profiles import Sampling, profile_from_dict  # noqa: E402

PROMPT = "Count from 1 to 400, one number per line, and say nothing else."


def bare_rate(llm: Llama, prompt_tokens: list[int], n: int) -> tuple[float, int]:
    llm.reset()
    times: list[float] = []
    for _tok in llm.generate(prompt_tokens, top_k=1, top_p=1.0, min_p=0.0, temp=0.0, repeat_penalty=1.0):
        times.append(time.perf_counter())
        if len(times) >= n:
            break
    return (len(times) - 1) / (times[-1] - times[0]), len(times)


def engine_rate(engine: Engine | EngineProcess, n: int) -> tuple[float, int]:
    engine.reset()
    sampling = Sampling(temperature=0.0, max_tokens=n, repeat_penalty=1.0, ignore_eos=True)
    times: list[float] = []
    predicted = 0
    for event in engine.stream_chat([{"role": "user", "content": PROMPT}], sampling):
        if isinstance(event, TokenDelta):
            times.append(time.perf_counter())
        elif isinstance(event, TurnFinished):
            predicted = event.metrics.predicted_n
    # a delta can carry more than one token (UTF-8 pieces); use the engine's token count
    return (predicted - 1) / (times[-1] - times[0]), predicted


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="models/SmolLM2-135M-Instruct.Q4_1.gguf")
    ap.add_argument("--tokens", type=int, default=300)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--no-child", action="store_true", help="skip the child-process engine")
    args = ap.parse_args()
    profile = profile_from_dict(
        {"name": "bench", "model": args.model, "context": 2048, "threads": args.threads, "gpu_layers": 0,
         "flash_attn": "on", "system_prompt": ""},
        "<bench>",
    )
    engine = Engine(profile)
    child = None if args.no_child else EngineProcess(profile)
    llm = Llama(args.model, n_ctx=2048, n_threads=args.threads, n_threads_batch=args.threads,
                n_batch=512, flash_attn=True, verbose=False)
    prompt_tokens = engine.chat_prompt([{"role": "user", "content": PROMPT}])
    rates: dict[str, list[float]] = {"bare": [], "engine": [], "child": []}
    counts: dict[str, list[int]] = {"bare": [], "engine": [], "child": []}
    # warm-up
    bare_rate(llm, prompt_tokens, 32)
    engine_rate(engine, 32)
    for _ in range(args.runs):
        for name in ("bare", "engine", "child"):
            if name == "child" and child is None:
                continue
            if name == "bare":
                r, n = bare_rate(llm, prompt_tokens, args.tokens)
            else:
                r, n = engine_rate(engine if name == "engine" else child, args.tokens)  # type: ignore[arg-type]
            rates[name].append(r)
            counts[name].append(n)
    if child is not None:
        child.close()
    engine.close()
    med = {k: statistics.median(v) for k, v in rates.items() if v}
    print(f"model {Path(args.model).name}, {args.threads} threads, {args.tokens} tokens, {args.runs} interleaved runs")
    for name, label in (("bare", "bare llama-cpp-python Llama.generate"), ("engine", "workstation Engine (in process)"),
                        ("child", "workstation EngineProcess (child)")):
        if name in med:
            spread = f"{min(rates[name]):.1f}-{max(rates[name]):.1f}"
            print(f"  {label:<40} median {med[name]:6.1f} tok/s  (runs {spread}, tokens {statistics.median(counts[name]):.0f})")
    print(f"ratio engine / bare: {med['engine'] / med['bare']:.3f}")
    if "child" in med:
        print(f"ratio child-process engine / bare: {med['child'] / med['bare']:.3f}")


if __name__ == "__main__":
    main()
