"""Decode speed of our engine over bare llama-cpp-python on the same model, threads and length.

Runs interleaved (bare, engine, engine-in-child-process, llama-bench, bare, ...) and prints
medians and ratios. Decode rate for the first three is measured the same way: tokens after the
first one over the wall time from the first token to the last. The engine decodes through the
decode core (the slot scheduler) exactly as chat does.

llama.cpp's own ``llama-bench`` (when ``../shared/tools/llama-anchors`` has built it; see
bench/anchors.py) runs in the same rounds over the same window: ``-d`` the prompt's length and
``-n`` the tokens decoded (on this tiny model attention over the context dominates: tg128 from an
empty context runs at 115 tok/s, from 300 tokens deep at 66). The engine's cost per token over
it is printed in ms/token (on a GPU a 1 ms Python cost per token is 10% at 100 tok/s).

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

from bench.anchors import default_bin, llama_bench  # noqa: E402
from workstation.core.engine import Engine  # noqa: E402
from workstation.core.engine_process import EngineProcess  # noqa: E402
from workstation.core.events import TokenDelta, TurnFinished  # noqa: E402
from workstation.core.profile_check import profile_from_dict  # noqa: E402
from workstation.core.profiles import Sampling  # noqa: E402

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
    ap.add_argument("--bin", type=Path, default=default_bin(), help="folder with llama-bench")
    args = ap.parse_args()
    have_bench = (args.bin / "llama-bench").exists()
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
    rates: dict[str, list[float]] = {"bare": [], "engine": [], "child": [], "llama-bench": []}
    counts: dict[str, list[int]] = {"bare": [], "engine": [], "child": [], "llama-bench": []}
    # warm-up
    bare_rate(llm, prompt_tokens, 32)
    engine_rate(engine, 32)
    for _ in range(args.runs):
        for name in ("bare", "engine", "child", "llama-bench"):
            if name == "child" and child is None or name == "llama-bench" and not have_bench:
                continue
            if name == "llama-bench":
                # the same window: from the prompt's length, as many tokens as the engine decodes
                depth = len(prompt_tokens)
                r = llama_bench(args.bin, Path(args.model), 0, args.tokens, args.threads, 1, depth)[f"tg{args.tokens}"]
                n = args.tokens
            elif name == "bare":
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
                        ("child", "workstation EngineProcess (child)"), ("llama-bench", "llama.cpp llama-bench, same window")):
        if name in med:
            spread = f"{min(rates[name]):.1f}-{max(rates[name]):.1f}"
            print(f"  {label:<40} median {med[name]:6.1f} tok/s  (runs {spread}, tokens {statistics.median(counts[name]):.0f})")
    print(f"ratio engine / bare: {med['engine'] / med['bare']:.3f}")
    if "child" in med:
        print(f"ratio child-process engine / bare: {med['child'] / med['bare']:.3f}")
    if "llama-bench" in med:
        cost = 1000 / med["engine"] - 1000 / med["llama-bench"]
        print(f"ratio engine / llama-bench (same depth and length): {med['engine'] / med['llama-bench']:.3f}; "
              f"the engine's cost over llama-bench: {cost:+.2f} ms/token "
              f"({1000 / med['engine']:.2f} against {1000 / med['llama-bench']:.2f} ms/token)")
    else:
        print(f"(no llama-bench in {args.bin}: run ../shared/tools/llama-anchors to compare with llama.cpp)")


if __name__ == "__main__":
    main()
