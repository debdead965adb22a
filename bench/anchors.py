"""Our bench and perplexity figures beside llama.cpp's own tools, measured side by side.

Usage:
    .venv/bin/python bench/anchors.py [--bin DIR] [--rounds 3] [--reps 3] [--threads 2]
                                      [--text FILE] [--ctx 512] [--chunks 4] [--skip-bench|--skip-ppl]

DIR holds llama-bench and llama-perplexity built from the llama.cpp that llama-cpp-python
vendors (``/work/shared/tools/llama-anchors`` prints it; default: ~/.cache/llama-anchors/
<version>/src/vendor/llama.cpp/build/bin, or $LLAMA_ANCHORS_BIN). When the binaries are
missing, only our figures are printed.

* Speed: llama-bench -p N -n M -t T -fa 1 -r R -o json against workstation's bench (same
  model, threads, K/V f16, flash attention), interleaved round by round with the order
  alternating, so shared-machine noise hits both; per-round ratios and their spread are printed.
* Perplexity: llama-perplexity -f TEXT -c CTX --chunks K against evaluate.text_perplexity on
  the same text and window (both are deterministic; the ratio should be 1 within 1%).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import llama_cpp  # noqa: E402

from workstation.core.bench import BenchConfig, bench_engine  # noqa: E402
from workstation.core.catalog import resolve_model_path  # noqa: E402
from workstation.core.engine import Engine  # noqa: E402
from workstation.core.evaluate import read_text, text_perplexity  # noqa: E402
from workstation.core.profile_check import profile_from_dict  # noqa: E402
from workstation.core.runtime import LoadedModel, RuntimeSettings  # noqa: E402

MODEL = "smollm2-135m-instruct-q4_1"
DEFAULT_TEXTS = (Path("/usr/share/common-licenses/GPL-3"), Path("/usr/share/common-licenses/Apache-2.0"))


def default_bin() -> Path:
    env = os.environ.get("LLAMA_ANCHORS_BIN")
    if env:
        return Path(env)
    root = Path(os.environ.get("LLAMA_ANCHORS_HOME", Path.home() / ".cache" / "llama-anchors"))
    return root / llama_cpp.__version__ / "src" / "vendor" / "llama.cpp" / "build" / "bin"


def llama_bench(
    bin_dir: Path, model: Path, n_prompt: int, n_gen: int, threads: int, reps: int, depth: int = 0
) -> dict[str, float]:
    """llama-bench's pp/tg figures; ``depth``: tokens already in the context (its ``-d``)."""
    cmd = [str(bin_dir / "llama-bench"), "-m", str(model), "-p", str(n_prompt), "-n", str(n_gen),
           "-t", str(threads), "-fa", "1", "-r", str(reps), "-d", str(depth), "-o", "json"]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    figures = {}
    for rec in json.loads(out):
        name = f"pp{rec['n_prompt']}" if rec["n_prompt"] else f"tg{rec['n_gen']}"
        figures[name] = rec["avg_ts"]
        figures[name + "_sd"] = rec["stddev_ts"]
    return figures


def ours_bench(engine: Engine, n_prompt: int, n_gen: int, reps: int) -> dict[str, float]:
    res = bench_engine(engine, BenchConfig(n_prompt=n_prompt, n_gen=n_gen, repetitions=reps, ttft=False))
    assert res.pp is not None and res.tg is not None
    return {f"pp{n_prompt}": res.pp.avg_ts, f"pp{n_prompt}_sd": res.pp.stddev_ts,
            f"tg{n_gen}": res.tg.avg_ts, f"tg{n_gen}_sd": res.tg.stddev_ts}


def llama_perplexity(bin_dir: Path, model: Path, text: Path, ctx: int, chunks: int, threads: int) -> float:
    cmd = [str(bin_dir / "llama-perplexity"), "-m", str(model), "-f", str(text), "-c", str(ctx),
           "--chunks", str(chunks), "-t", str(threads), "-fa", "on"]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    m = re.search(r"Final estimate: PPL = ([\d.]+)", proc.stdout + proc.stderr)
    if not m:
        raise SystemExit("llama-perplexity gave no estimate:\n" + (proc.stderr or proc.stdout)[-2000:])
    return float(m.group(1))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", type=Path, default=default_bin())
    ap.add_argument("--model", default=MODEL)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--n-prompt", type=int, default=512)
    ap.add_argument("--n-gen", type=int, default=128)
    ap.add_argument("--text", type=Path)
    ap.add_argument("--ctx", type=int, default=512)
    ap.add_argument("--chunks", type=int, default=4)
    ap.add_argument("--skip-bench", action="store_true")
    ap.add_argument("--skip-ppl", action="store_true")
    args = ap.parse_args()

    model = resolve_model_path(args.model)
    have_bin = (args.bin / "llama-bench").exists() and (args.bin / "llama-perplexity").exists()
    print(f"model {model.name}, {args.threads} threads, llama-cpp-python {llama_cpp.__version__}")
    print(f"llama.cpp tools: {args.bin if have_bin else 'not found (only our figures)'}")
    load = os.getloadavg()
    print(f"load average at start: {load[0]:.1f} {load[1]:.1f} {load[2]:.1f} on {os.cpu_count()} CPUs\n")

    if not args.skip_ppl:
        text_path = args.text or next((p for p in DEFAULT_TEXTS if p.exists()), None)
        if text_path is None:
            raise SystemExit("no text found; pass --text FILE")
        settings = RuntimeSettings(n_ctx=args.ctx, n_threads=args.threads, flash_attn=True, n_batch=512)
        lm = LoadedModel(model, settings)
        try:
            t0 = time.perf_counter()
            ours = text_perplexity(lm, read_text(text_path), args.ctx, args.chunks)
            t_ours = time.perf_counter() - t0
        finally:
            lm.close()
        line = f"perplexity  {text_path.name}, ctx {args.ctx}, {ours.n_chunks} chunks: ours {ours.ppl:.4f} ({t_ours:.1f} s)"
        if have_bin:
            t0 = time.perf_counter()
            theirs = llama_perplexity(args.bin, model, text_path, args.ctx, args.chunks, args.threads)
            t_theirs = time.perf_counter() - t0
            line += f", llama-perplexity {theirs:.4f} ({t_theirs:.1f} s), ratio {ours.ppl / theirs:.5f}"
        print(line + "\n")

    if not args.skip_bench:
        profile = profile_from_dict({
            "name": "anchor", "model": str(model), "context": max(args.n_prompt, args.n_gen, 256),
            "threads": args.threads, "gpu_layers": 0, "flash_attn": "on",
            "kv_cache": {"k": "f16", "v": "f16"}, "system_prompt": "",
        })
        engine = Engine(profile)
        tests = [f"pp{args.n_prompt}", f"tg{args.n_gen}"]
        rows: list[tuple[int, str, dict[str, float]]] = []
        try:
            for rnd in range(args.rounds):
                order = ["ours", "llama-bench"] if rnd % 2 == 0 else ["llama-bench", "ours"]
                for who in order:
                    if who == "ours":
                        rows.append((rnd, who, ours_bench(engine, args.n_prompt, args.n_gen, args.reps)))
                    elif have_bin:
                        rows.append((rnd, who, llama_bench(args.bin, model, args.n_prompt, args.n_gen,
                                                           args.threads, args.reps)))
                    print(f"round {rnd + 1} {who:<11} " + "  ".join(
                        f"{t} {rows[-1][2][t]:7.2f} ± {rows[-1][2][t + '_sd']:5.2f}" for t in tests),
                        flush=True)
        finally:
            engine.close()
        print()
        for t in tests:
            ours_v = [r[t] for _, who, r in rows if who == "ours"]
            line = f"{t}: ours median {statistics.median(ours_v):.2f} tok/s (range {min(ours_v):.2f}–{max(ours_v):.2f})"
            if have_bin:
                theirs_v = [r[t] for _, who, r in rows if who == "llama-bench"]
                ratios = [
                    o[t] / b[t]
                    for (ro, wo, o) in rows if wo == "ours"
                    for (rb, wb, b) in rows if wb == "llama-bench" and rb == ro
                ]
                line += (
                    f"; llama-bench median {statistics.median(theirs_v):.2f} "
                    f"(range {min(theirs_v):.2f}–{max(theirs_v):.2f}); ours/llama-bench per round "
                    + ", ".join(f"{x:.3f}" for x in ratios)
                    + f"; median {statistics.median(ratios):.3f}"
                )
            print(line)
    load = os.getloadavg()
    print(f"\nload average at end: {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
